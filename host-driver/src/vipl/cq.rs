//! VipCreateCQ, VipDestroyCQ, VipCQDone, VipCQWait.
//!
//! The HVIA-GE register map has no completion queue, so the library emulates one: a CQ
//! is the set of work queues tied to it at `VipCreateVi`; `VipCQDone` reads the status of
//! the oldest not-yet-reported descriptor of each of them (VIs in number order, send
//! before receive) and reports the first that has completed. As in VIPL, the descriptor
//! stays on its work queue until `VipSendDone` / `VipRecvDone` reaps it.

use super::{CqCompletion, CqHandle, NicHandle, Timeout, ViHandle, VipError, VipResult, Vipl};
use via_abi::WorkQueue;

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
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: unknown CQ; `VIP_TIMEOUT`.
    pub async fn vip_cq_wait(&mut self, cq: CqHandle, timeout: Timeout) -> VipResult<CqCompletion> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let deadline = self.deadline(timeout);
        let r = loop {
            match self.cq_scan(cq).await {
                Err(VipError::NotDone) => {}
                other => break other,
            }
            if deadline.is_some_and(|d| self.now() >= d) {
                break Err(VipError::Timeout);
            }
            self.compute(self.cfg.costs.poll_iteration).await;
        };
        self.end_call("VipCQWait", start, &r);
        r
    }

    /// One pass over the work queues tied to `cq`.
    async fn cq_scan(&mut self, cq: CqHandle) -> VipResult<CqCompletion> {
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
                    if let Some((i, p)) = q.iter().enumerate().find(|(_, p)| !p.notified) {
                        candidates.push((n, queue, i, p.va));
                    }
                }
            }
        }
        for (n, queue, i, va) in candidates {
            if self.read_status(va).await?.is_done() {
                if let Some(p) = self.vis.get_mut(&n).and_then(|e| match queue {
                    WorkQueue::Send => e.send.get_mut(i),
                    WorkQueue::Receive => e.recv.get_mut(i),
                }) {
                    p.notified = true;
                }
                return Ok(CqCompletion {
                    vi: ViHandle(n),
                    queue,
                });
            }
        }
        Err(VipError::NotDone)
    }
}
