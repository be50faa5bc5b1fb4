//! Unit **doorbell FIFO**: the partly written doorbell records (by VI), the bounded FIFO
//! of rung doorbells, the write back-pressure flag, the dispatcher's state machine and
//! each work queue's tail (the last descriptor taken, whose Next link leads to the next).
//! The dispatch rules are in the engine's `doorbell` step file.

use crate::att::Piece;
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::{BTreeMap, VecDeque};
use via_abi::doorbell::{DoorbellRepr, DOORBELL_LEN};
use via_abi::{MemHandle, Status};

/// States of the doorbell dispatcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DoorbellState {
    /// Nothing to dispatch.
    Idle,
    /// Decoding the next doorbell.
    Decoding,
    /// Doorbells wait, none can go yet.
    Blocked,
    /// Checking a posted receive descriptor before taking it (`recvcheck`).
    Checking,
    /// Reading the queue's link to the posted descriptor (the previous descriptor's
    /// Next fields).
    Linking,
}

impl StateName for DoorbellState {
    fn name(self) -> &'static str {
        match self {
            DoorbellState::Idle => "idle",
            DoorbellState::Decoding => "decoding",
            DoorbellState::Blocked => "blocked",
            DoorbellState::Checking => "checking",
            DoorbellState::Linking => "linking",
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

/// The receive descriptor being checked before its doorbell is taken.
#[derive(Clone, Debug)]
pub(crate) struct RecvCheck {
    pub entry: Entry,
    /// End of the last span.
    pub mark: Time,
    /// The descriptor bytes read so far.
    pub bytes: Vec<u8>,
    /// Where its first 64 bytes are.
    pub pieces: Vec<Piece>,
    /// Data-segment translations outstanding.
    pub translating: usize,
    /// Errors found so far.
    pub status: Status,
    /// The descriptor, once decoded.
    pub repr: Option<via_abi::DescriptorRepr>,
    /// Each data segment's translation (by segment index).
    pub seg_pieces: Vec<Vec<Piece>>,
}

impl RecvCheck {
    /// A check of doorbell `entry`'s descriptor, starting at `now`.
    pub fn new(entry: Entry, now: Time) -> Self {
        Self {
            entry,
            mark: now,
            bytes: Vec::new(),
            pieces: Vec::new(),
            translating: 0,
            status: Status::empty(),
            repr: None,
            seg_pieces: Vec::new(),
        }
    }

    /// The descriptor's memory handle.
    pub fn handle(&self) -> MemHandle {
        self.entry.rec.desc_handle
    }

    /// The descriptor's virtual address.
    pub fn va(&self) -> u64 {
        self.entry.rec.desc_va
    }
}

/// A doorbell whose descriptor is being found through its queue's link.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkRead {
    pub entry: Entry,
    /// End of the last span.
    pub mark: Time,
}

/// Bytes of a descriptor's Next link (Next VA, 8, and Next handle, 4: control segment
/// bytes 0..12).
pub(crate) const LINK_LEN: u64 = 12;

/// The work queue of a tail: the send queue or the receive queue of a VI window.
pub(crate) type TailKey = (u16, bool);

/// The tail key of doorbell `e` (`None`: an unknown queue byte, which has no list).
pub(crate) fn tail_key(e: &Entry) -> Option<TailKey> {
    match e.rec.queue {
        via_abi::Queue::Send => Some((e.vi, false)),
        via_abi::Queue::Receive => Some((e.vi, true)),
        via_abi::Queue::Unknown(_) => None,
    }
}

/// The doorbell unit's state.
#[derive(Clone, Debug)]
pub(crate) struct DoorbellUnit {
    /// Partly written records, by VI.
    pub stage: BTreeMap<u16, [u8; DOORBELL_LEN]>,
    pub fifo: VecDeque<Entry>,
    pub retry_on: bool,
    pub fsm: Fsm<DoorbellState>,
    /// The receive check running, if any.
    pub check: Option<RecvCheck>,
    /// Doorbells rung and not yet taken, by the VI of their window (what the window's
    /// `POSTS_PENDING` bit reads).
    pub pending: BTreeMap<u16, u32>,
    /// The last descriptor taken from each work queue (VA, handle): where the next
    /// post's link is.
    pub tails: BTreeMap<TailKey, (u64, MemHandle)>,
    /// The queue link being read, if any.
    pub link: Option<LinkRead>,
}

impl Default for DoorbellUnit {
    fn default() -> Self {
        Self {
            stage: BTreeMap::new(),
            fifo: VecDeque::new(),
            retry_on: false,
            fsm: Fsm::new("doorbell", DoorbellState::Idle),
            check: None,
            pending: BTreeMap::new(),
            tails: BTreeMap::new(),
            link: None,
        }
    }
}

impl DoorbellUnit {
    /// A doorbell of VI window `vi` was rung.
    pub fn rung(&mut self, vi: u16) {
        *self.pending.entry(vi).or_insert(0) += 1;
    }

    /// A doorbell of VI window `vi` was taken (dispatched, or its check ended).
    pub fn taken(&mut self, vi: u16) {
        if let Some(n) = self.pending.get_mut(&vi) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.pending.remove(&vi);
            }
        }
    }

    /// Whether VI window `vi` has doorbells not yet taken.
    pub fn is_pending(&self, vi: u16) -> bool {
        self.pending.contains_key(&vi)
    }
}
