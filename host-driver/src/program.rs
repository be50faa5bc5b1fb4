//! What a host program returns to its testbench: a [`ProgramReport`] with one
//! [`IterationRecord`] per timed iteration, or a [`ProgramError`] saying which VIPL call
//! failed with which VIPL return code, or which byte did not match.

use crate::vipl::VipError;
use sim_kernel::{Duration, Time};
use via_abi::Status;

/// The result of a host program.
pub type ProgramResult = Result<ProgramReport, ProgramError>;

/// One timed iteration of a program (one ping-pong round trip, one transfer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IterationRecord {
    /// Iteration number, from 0 (warm-up iterations included).
    pub index: u32,
    /// Message size \[bytes\].
    pub bytes: u32,
    /// When the iteration started (before the first VIPL call of the iteration).
    pub start: Time,
    /// When it ended (the reply or completion was seen).
    pub end: Time,
    /// Bytes compared with what the peer sent and found equal \[bytes\].
    pub verified_bytes: u64,
    /// Whether it is a warm-up iteration (not meant for statistics).
    pub warmup: bool,
}

impl IterationRecord {
    /// `end - start`.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.end - self.start
    }
}

/// What a program reports when it returns successfully.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramReport {
    /// The program's name (e.g. `rdma-pingpong-initiator`).
    pub program: &'static str,
    /// Timed iterations, in order.
    pub iterations: Vec<IterationRecord>,
    /// When set-up (open, register, connect, exchange) was done.
    pub setup_done: Time,
    /// When the program returned.
    pub finished: Time,
}

impl ProgramReport {
    /// The iterations that are not warm-up.
    pub fn measured(&self) -> impl Iterator<Item = &IterationRecord> {
        self.iterations.iter().filter(|r| !r.warmup)
    }

    /// Mean elapsed time of the measured iterations (zero if none).
    #[must_use]
    pub fn mean_elapsed(&self) -> Duration {
        let (n, sum) = self.measured().fold((0u64, 0u64), |(n, s), r| {
            (n + 1, s.saturating_add(r.elapsed().0))
        });
        Duration(sum.checked_div(n).unwrap_or(0))
    }
}

/// Why a program failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// A VIPL call returned an error code.
    #[error("{call} returned {error}")]
    Vipl {
        /// The VIPL call (e.g. `VipPostSend`).
        call: &'static str,
        /// Its return code.
        error: VipError,
    },
    /// A descriptor completed with error bits in its status.
    #[error("{call}: descriptor completed with status {status:?}")]
    Completion {
        /// The call that reaped it.
        call: &'static str,
        /// The status word.
        status: Status,
    },
    /// Received data differ from what the peer sent.
    #[error("iteration {iteration}: byte {offset} is {found:#04x}, expected {expected:#04x}")]
    DataMismatch {
        /// Iteration number.
        iteration: u32,
        /// Offset in the buffer \[bytes\].
        offset: u64,
        /// The byte expected.
        expected: u8,
        /// The byte found.
        found: u8,
    },
    /// The peer's set-up message was malformed or a parameter was out of range.
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    /// The program awaited a future that is not a CPU op: it can never resume.
    #[error("the program awaited something the CPU does not provide")]
    Stuck,
}

/// Names the VIPL call of a failed result, for `?` in programs.
pub trait CallExt<T> {
    /// Maps a [`VipError`] to [`ProgramError::Vipl`] for `call`.
    ///
    /// # Errors
    /// The error of `self`, named.
    fn call(self, call: &'static str) -> Result<T, ProgramError>;
}

impl<T> CallExt<T> for Result<T, VipError> {
    fn call(self, call: &'static str) -> Result<T, ProgramError> {
        self.map_err(|error| ProgramError::Vipl { call, error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_skips_warmup() {
        let rec = |i, s, e, w| IterationRecord {
            index: i,
            bytes: 4,
            start: Time(s),
            end: Time(e),
            verified_bytes: 4,
            warmup: w,
        };
        let r = ProgramReport {
            program: "t",
            iterations: vec![
                rec(0, 0, 100, true),
                rec(1, 100, 120, false),
                rec(2, 120, 160, false),
            ],
            ..ProgramReport::default()
        };
        assert_eq!(r.mean_elapsed(), Duration(30));
        assert_eq!(ProgramReport::default().mean_elapsed(), Duration(0));
        let e: Result<(), VipError> = Err(VipError::InvalidState);
        assert_eq!(
            e.call("VipPostSend").unwrap_err().to_string(),
            "VipPostSend returned VIP_INVALID_STATE"
        );
    }
}
