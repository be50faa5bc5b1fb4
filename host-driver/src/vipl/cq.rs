//! VipCreateCQ, VipDestroyCQ, VipCQDone, VipCQWait.
//!
//! The HVIA-GE register map has no completion queue, so the library emulates one: a CQ
//! is the set of work queues tied to it at `VipCreateVi`; `VipCQDone` reads the status of
//! the oldest not-yet-reported descriptor of each of them (VIs in number order, send
//! before receive) and reports the first that has completed. As in VIPL, the descriptor
//! stays on its work queue until `VipSendDone` / `VipRecvDone` reaps it.

use super::complete::STATUS_OFFSET;
use super::{CqCompletion, CqHandle, NicHandle, Timeout, ViHandle, VipError, VipResult, Vipl};
use crate::ops::{PollCond, PollTarget};
use sim_kernel::Time;
use via_abi::{Status, WorkQueue};

impl Vipl {
    /// **VipCreateCQ**: a completion queue of `entries` entries.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC or zero entries.
    pub async fn vip_create_cq(&mut self, nic: NicHandle, entries: u32) -> VipResult<CqHandle> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = match self.check_nic(nic) {
            Ok(()) if entries > 0 => {
                self.compute(self.cfg.costs.syscall).await;
                let h = CqHandle(self.next_cq);
                self.next_cq = self.next_cq.wrapping_add(1).max(1);
                self.cqs.insert(h.0, entries);
                Ok(h)
            }
            Ok(()) => Err(VipError::InvalidParameter),
            Err(e) => Err(e),
        };
        self.end_call("VipCreateCQ", start, &r);
        r
    }

    /// **VipDestroyCQ**: destroys a completion queue no VI uses.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: unknown CQ; `VIP_ERROR_RESOURCE`: a VI still uses it.
    pub async fn vip_destroy_cq(&mut self, cq: CqHandle) -> VipResult<()> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let used = self
            .vis
            .values()
            .any(|v| v.send_cq == Some(cq) || v.recv_cq == Some(cq));
        let r = if !self.cqs.contains_key(&cq.0) {
            Err(VipError::InvalidParameter)
        } else if used {
            Err(VipError::ErrorResource)
        } else {
            self.compute(self.cfg.costs.syscall).await;
            self.cqs.remove(&cq.0);
            Ok(())
        };
        self.end_call("VipDestroyCQ", start, &r);
        r
    }

    /// **VipCQDone**: a work queue tied to `cq` whose oldest unreported descriptor has
    /// completed.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: unknown CQ; `VIP_NOT_DONE`: none.
    pub async fn vip_cq_done(&mut self, cq: CqHandle) -> VipResult<CqCompletion> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = self.cq_scan(cq).await;
        self.end_call("VipCQDone", start, &r);
        r
    }

    /// **VipCQWait**: waits until [`Vipl::vip_cq_done`] would report a completion.
    ///
    /// The loop of a C library: scan the candidates' status words as `VipCQDone` does,
    /// and if none is done and the timeout has not passed, `poll_iteration` cycles and
    /// scan again. Nothing else runs meanwhile, so the candidates stay the same; the
    /// CPU runs it as one poll over their words ([`Op::PollAny`](crate::ops::Op::PollAny)),
    /// each load at its own time as the separate loads of `VipCQDone`'s scan are.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: unknown CQ; `VIP_TIMEOUT`.
    pub async fn vip_cq_wait(&mut self, cq: CqHandle, timeout: Timeout) -> VipResult<CqCompletion> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let deadline = self.deadline(timeout);
        let r = self.cq_poll(cq, deadline).await;
        self.end_call("VipCQWait", start, &r);
        r
    }

    /// `VipCQWait`'s loop: one poll over the candidates' status words until one is done
    /// or `deadline` passes.
    async fn cq_poll(&mut self, cq: CqHandle, deadline: Option<Time>) -> VipResult<CqCompletion> {
        let candidates = self.cq_candidates(cq)?;
        let done = PollCond::AnyBits32(Status::DONE.bits());
        let targets = candidates
            .iter()
            .map(|c| PollTarget {
                va: c.va + STATUS_OFFSET,
                cond: done,
            })
            .collect();
        let s = self.poll_any(targets, deadline).await?;
        match s.found.and_then(|i| candidates.get(i)) {
            Some(&c) => Ok(self.notify(c)),
            None => Err(VipError::InvalidParameter),
        }
    }

    /// The oldest not-yet-reported descriptor of each work queue tied to `cq`, in scan
    /// order (VIs in number order, send before receive).
    fn cq_candidates(&self, cq: CqHandle) -> VipResult<Vec<Candidate>> {
        if !self.cqs.contains_key(&cq.0) {
            return Err(VipError::InvalidParameter);
        }
        let mut candidates = Vec::new();
        for (&n, e) in &self.vis {
            for (queue, tied, q) in [
                (WorkQueue::Send, e.send_cq, &e.send),
                (WorkQueue::Receive, e.recv_cq, &e.recv),
            ] {
                if tied == Some(cq) {
                    if let Some((index, p)) = q.iter().enumerate().find(|(_, p)| !p.notified) {
                        candidates.push(Candidate {
                            vi: n,
                            queue,
                            index,
                            va: p.va,
                        });
                    }
                }
            }
        }
        Ok(candidates)
    }

    /// Marks a candidate whose descriptor has completed as reported.
    fn notify(&mut self, c: Candidate) -> CqCompletion {
        if let Some(p) = self.vis.get_mut(&c.vi).and_then(|e| match c.queue {
            WorkQueue::Send => e.send.get_mut(c.index),
            WorkQueue::Receive => e.recv.get_mut(c.index),
        }) {
            p.notified = true;
        }
        CqCompletion {
            vi: ViHandle(c.vi),
            queue: c.queue,
        }
    }

    /// One pass over the work queues tied to `cq`.
    async fn cq_scan(&mut self, cq: CqHandle) -> VipResult<CqCompletion> {
        for c in self.cq_candidates(cq)? {
            if self.read_status(c.va).await?.is_done() {
                return Ok(self.notify(c));
            }
        }
        Err(VipError::NotDone)
    }
}

/// A descriptor a completion-queue scan reads the status of.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    vi: u16,
    queue: WorkQueue,
    /// Its place on the work queue.
    index: usize,
    /// Its address \[process VA\].
    va: u64,
}
