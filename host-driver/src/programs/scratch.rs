//! The instrumentation of a ping-pong program: the message it writes and the message it
//! checks, every iteration (not part of the modelled program: its memory is the host
//! memory).
//!
//! With `touch_data` off the payload is written and checked by instrumentation at no
//! simulated cost, through the CPU's message ops (`Vipl::poke_message`,
//! `Vipl::check_message`: `cpu/instrument.rs`), which go through host memory a piece at
//! a time without the whole message being made: the same bytes, errors and op counts as
//! a whole-message `poke` and `peek` and a comparison. With `touch_data` on, the costed
//! loads and stores take the whole message, made in a buffer kept from one iteration to
//! the next.

use super::{compare, fill, flag, pattern_into, Direction, Message};
use crate::program::ProgramError;
use crate::vipl::Vipl;
use crate::VipResult;

/// The buffer a ping-pong program reuses every iteration for a whole message, when its
/// data is touched by costed loads and stores.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    whole: Vec<u8>,
}

impl Scratch {
    /// Writes the message `pattern(i, dir, len)` at `va`: costed stores if `touch`,
    /// else instrumentation for all but the last byte and a costed store of the flag.
    pub(crate) async fn fill(
        &mut self,
        vipl: &Vipl,
        va: u64,
        (i, dir, len): (u32, Direction, u32),
        touch: bool,
    ) -> VipResult<()> {
        if touch || len == 0 {
            let mut whole = std::mem::take(&mut self.whole);
            pattern_into(&mut whole, i, dir, len);
            self.whole = fill(vipl, va, whole, touch).await?;
            return Ok(());
        }
        let msg = Message {
            iteration: i,
            dir,
            len,
        };
        let body = u64::from(len - 1);
        vipl.poke_message(va, msg, body).await?;
        vipl.write_mem(va + body, &[flag(i)]).await
    }

    /// Compares the buffer at `va` with `pattern(i, dir, len)` (costed loads if
    /// `touch`, else instrumentation); returns the bytes verified.
    pub(crate) async fn verify(
        &mut self,
        vipl: &Vipl,
        va: u64,
        (i, dir, len): (u32, Direction, u32),
        touch: bool,
    ) -> Result<u64, ProgramError> {
        let failed = |error| ProgramError::Vipl {
            call: "verify",
            error,
        };
        if touch {
            pattern_into(&mut self.whole, i, dir, len);
            let got = vipl.read_mem(va, u64::from(len)).await.map_err(failed)?;
            return compare(&got, &self.whole, i);
        }
        let msg = Message {
            iteration: i,
            dir,
            len,
        };
        match vipl.check_message(va, msg).await.map_err(failed)? {
            None => Ok(u64::from(len)),
            Some((offset, expected, found)) => Err(ProgramError::DataMismatch {
                iteration: i,
                offset,
                expected,
                found,
            }),
        }
    }
}
