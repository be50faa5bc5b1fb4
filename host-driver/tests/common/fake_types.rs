//! Parameters, tables and counters of the fake card.

use super::fake_engine::Frame;
use sim_kernel::{Cycles, Duration};
use std::collections::VecDeque;
use via_abi::bar::ViStateCode;
use via_abi::{MacAddr, MemHandle};

#[derive(Clone, Debug)]
pub struct FakeCardParams {
    pub mac: MacAddr,
    /// Time from a command write until its result reads as done.
    pub cmd_latency: Duration,
    /// Latency of a message to the peer card [PCI clocks].
    pub link_clocks: Cycles,
    /// Refuse connect requests that find no listener (else keep them until one comes).
    pub reject_unmatched: bool,
    /// Largest segment count the fake accepts (more: format error).
    pub max_segments: u16,
}

impl Default for FakeCardParams {
    fn default() -> Self {
        Self {
            mac: MacAddr([2, 0, 0, 0, 0, 1]),
            cmd_latency: Duration::from_ns(2_000),
            link_clocks: Cycles(100),
            reject_unmatched: true,
            max_segments: 16,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FakeRegion {
    pub va: u64,
    pub len: u64,
    pub pages: Vec<u64>,
    pub attrs: u16,
    pub ptag: u16,
    pub generation: u16,
}

#[derive(Clone, Debug)]
pub struct FakeVi {
    pub state: ViStateCode,
    pub ptag: u16,
    pub attr: u32,
    pub peer: Option<u16>,
    pub listening: Option<u32>,
    pub recv_q: VecDeque<(u64, MemHandle)>,
    pub waiting: VecDeque<Frame>,
}

/// Counters a test can check.
#[derive(Clone, Debug, Default)]
pub struct FakeStats {
    pub doorbells: u64,
    pub format_errors: u64,
    pub protection_errors: u64,
    pub frames_in: u64,
    pub dropped: u64,
    pub bus_writes: u64,
    pub reg_reads: u64,
    pub reg_writes: u64,
}
