//! Unit **doorbell FIFO**: the partly written doorbell records (by VI), the bounded FIFO
//! of rung doorbells, the write back-pressure flag and the dispatcher's state machine.
//! The dispatch rules are in the engine's `doorbell` step file.

use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::{BTreeMap, VecDeque};
use via_abi::doorbell::{DoorbellRepr, DOORBELL_LEN};

/// States of the doorbell dispatcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DoorbellState {
    /// Nothing to dispatch.
    Idle,
    /// Decoding the next doorbell.
    Decoding,
    /// Doorbells wait, none can go yet.
    Blocked,
}

impl StateName for DoorbellState {
    fn name(self) -> &'static str {
        match self {
            DoorbellState::Idle => "idle",
            DoorbellState::Decoding => "decoding",
            DoorbellState::Blocked => "blocked",
        }
    }
}

/// A rung doorbell.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// The VI of the window it was written to.
    pub vi: u16,
    pub rec: DoorbellRepr,
    pub msg: MsgId,
    pub at: Time,
}

/// The doorbell unit's state.
#[derive(Clone, Debug)]
pub(crate) struct DoorbellUnit {
    /// Partly written records, by VI.
    pub stage: BTreeMap<u16, [u8; DOORBELL_LEN]>,
    pub fifo: VecDeque<Entry>,
    pub retry_on: bool,
    pub fsm: Fsm<DoorbellState>,
}

impl Default for DoorbellUnit {
    fn default() -> Self {
        Self {
            stage: BTreeMap::new(),
            fifo: VecDeque::new(),
            retry_on: false,
            fsm: Fsm::new("doorbell", DoorbellState::Idle),
        }
    }
}
