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

    /// Job `id`, whose translation or write has ended, taken out (`None`: no such job).
    pub fn take(&mut self, id: JobId) -> Option<StatusJob> {
        self.jobs.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(vi: u16, msg: u64, kind: JobKind) -> StatusJob {
        StatusJob {
            msg: MsgId(msg),
            vi,
            kind,
            mark: Time::ZERO,
            va: 0x1000 * msg,
            handle: MemHandle(1),
            bytes: vec![msg as u8; 4],
        }
    }

    /// The messages of VI `vi`'s jobs, in the order the unit holds them.
    fn msgs_of(c: &Completion, vi: u16) -> Vec<u64> {
        c.jobs
            .values()
            .filter(|j| j.vi == vi)
            .map(|j| j.msg.0)
            .collect()
    }

    #[test]
    fn ids_count_up_from_one_and_jobs_stay_in_per_vi_order() {
        let mut c = Completion::default();
        let ids: Vec<JobId> = [
            job(0, 1, JobKind::Send { send: SendId(1) }),
            job(1, 2, JobKind::Recv { rx: RxId(1) }),
            job(0, 3, JobKind::Send { send: SendId(2) }),
            job(0, 4, JobKind::Flush),
        ]
        .into_iter()
        .map(|j| c.insert(j))
        .collect();
        assert_eq!(ids, vec![JobId(1), JobId(2), JobId(3), JobId(4)]);
        assert_eq!(
            msgs_of(&c, 0),
            vec![1, 3, 4],
            "VI 0's jobs in posting order"
        );
        assert_eq!(msgs_of(&c, 1), vec![2]);
    }

    #[test]
    fn a_finished_job_is_taken_out_once_and_its_id_is_not_reused() {
        let mut c = Completion::default();
        let a = c.insert(job(0, 1, JobKind::Send { send: SendId(7) }));
        let b = c.insert(job(2, 2, JobKind::Recv { rx: RxId(3) }));
        let got = c.take(a).expect("job a");
        assert_eq!(
            (got.vi, got.kind, got.va, got.bytes),
            (0, JobKind::Send { send: SendId(7) }, 0x1000, vec![1; 4])
        );
        assert!(c.take(a).is_none(), "taken once");
        assert_eq!(c.jobs.len(), 1);
        assert_eq!(c.jobs.get(&b).map(|j| j.vi), Some(2), "the other job stays");
        let next = c.insert(job(0, 3, JobKind::Flush));
        assert_eq!(next, JobId(3), "ids never go back");
        assert!(c.take(JobId(99)).is_none());
    }

    #[test]
    fn a_send_completes_as_its_operation() {
        assert_eq!(completed_op(Op::SendRecv), CompletedOp::Send);
        assert_eq!(completed_op(Op::RdmaWrite), CompletedOp::RdmaWrite);
        assert_eq!(completed_op(Op::RdmaRead), CompletedOp::RdmaRead);
        assert_eq!(completed_op(Op::Reserved), CompletedOp::Send);
    }
}
