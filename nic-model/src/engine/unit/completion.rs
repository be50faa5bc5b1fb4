//! Unit **completion**: the status write-backs in flight ([`StatusJob`], keyed by
//! [`JobId`]). The order rules (per VI, posting order) and the writes themselves are the
//! engine's `complete` step file.

use crate::engine::ids::{JobId, RxId, SendId};
use sim_kernel::{MsgId, Time};
use std::collections::BTreeMap;
use via_abi::{CompletedOp, MemHandle, Op};

/// What a status write completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// Send context `io`.
    Send { send: SendId },
    /// Received message `id`.
    Recv { rx: RxId },
    /// A flushed receive descriptor.
    Flush,
}

/// A status write in flight.
#[derive(Clone, Debug)]
pub(crate) struct StatusJob {
    pub msg: MsgId,
    pub vi: u16,
    pub kind: JobKind,
    pub mark: Time,
    /// VA and handle of the first status byte (flushes translate it first).
    pub va: u64,
    pub handle: MemHandle,
    pub bytes: Vec<u8>,
}

/// The completed-operation code of a send descriptor's operation.
pub(crate) fn completed_op(op: Op) -> CompletedOp {
    match op {
        Op::RdmaWrite => CompletedOp::RdmaWrite,
        Op::RdmaRead => CompletedOp::RdmaRead,
        Op::SendRecv | Op::Reserved => CompletedOp::Send,
    }
}

/// The status writes in flight.
#[derive(Clone, Debug, Default)]
pub(crate) struct Completion {
    /// Jobs by id.
    pub jobs: BTreeMap<JobId, StatusJob>,
    /// The last id handed out.
    pub next: JobId,
}

impl Completion {
    /// Keeps `job` until its write ends; its id.
    pub fn insert(&mut self, job: StatusJob) -> JobId {
        self.next = self.next.next();
        self.jobs.insert(self.next, job);
        self.next
    }
}
