//! VipSendDone, VipSendWait, VipRecvDone, VipRecvWait: reap the descriptor at the head
//! of a work queue once the card has written its status.
//!
//! Done reads the head descriptor's status word once; Wait polls it (`poll_iteration`
//! cycles per turn plus the load: a cache hit until the card's DMA write of the status
//! invalidates the line, then one miss) until the done bit appears or the timeout
//! passes. Both then read the control segment (length, immediate data) and remove the
//! descriptor from the queue. Error bits do not fail the call (VIPL returns
//! `VIP_SUCCESS` and the descriptor): see [`Completion::ok`].
//!
//! Deviation: waiting on an empty queue would block for ever in VIPL; here it returns
//! `VIP_NOT_DONE` at once rather than hang the simulated node.

use super::{Completion, Posted, Timeout, ViHandle, VipError, VipResult, Vipl};
use crate::ops::PollCond;
use via_abi::descriptor::CONTROL_SEGMENT_LEN;
use via_abi::{ControlSegment, ControlSegmentRepr, Status, WorkQueue};

/// Offset of the status word in a descriptor \[bytes\] (VIA 1.0 control segment).
pub(crate) const STATUS_OFFSET: u64 = 28;

impl Vipl {
    /// **VipSendDone**: the head send descriptor of `vi` if it has completed.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_NOT_DONE`: nothing completed.
    pub async fn vip_send_done(&mut self, vi: ViHandle) -> VipResult<Completion> {
        let start = self.now();
        let r = self.done(WorkQueue::Send, vi).await;
        self.end_call("VipSendDone", start, &r);
        r
    }

    /// **VipSendWait**: waits until the head send descriptor of `vi` completes.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_TIMEOUT`; `VIP_NOT_DONE`: empty queue.
    pub async fn vip_send_wait(&mut self, vi: ViHandle, timeout: Timeout) -> VipResult<Completion> {
        let start = self.now();
        let r = self.wait(WorkQueue::Send, vi, timeout).await;
        self.end_call("VipSendWait", start, &r);
        r
    }

    /// **VipRecvDone**: the head receive descriptor of `vi` if it has completed.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_NOT_DONE`: nothing completed.
    pub async fn vip_recv_done(&mut self, vi: ViHandle) -> VipResult<Completion> {
        let start = self.now();
        let r = self.done(WorkQueue::Receive, vi).await;
        self.end_call("VipRecvDone", start, &r);
        r
    }

    /// **VipRecvWait**: waits until the head receive descriptor of `vi` completes.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_TIMEOUT`; `VIP_NOT_DONE`: empty queue.
    pub async fn vip_recv_wait(&mut self, vi: ViHandle, timeout: Timeout) -> VipResult<Completion> {
        let start = self.now();
        let r = self.wait(WorkQueue::Receive, vi, timeout).await;
        self.end_call("VipRecvWait", start, &r);
        r
    }

    /// The head descriptor of a queue.
    pub(crate) fn head(&self, queue: WorkQueue, vi: ViHandle) -> VipResult<Option<Posted>> {
        let e = self.vis.get(&vi.0).ok_or(VipError::InvalidParameter)?;
        Ok(match queue {
            WorkQueue::Send => e.send.front().copied(),
            WorkQueue::Receive => e.recv.front().copied(),
        })
    }

    /// Reads the status word of the descriptor at `va` (one costed load).
    pub(crate) async fn read_status(&self, va: u64) -> VipResult<Status> {
        let b = self.read_mem(va + STATUS_OFFSET, 4).await?;
        let mut w = [0u8; 4];
        for (d, s) in w.iter_mut().zip(&b) {
            *d = *s;
        }
        Ok(Status::from_bits_retain(u32::from_le_bytes(w)))
    }

    async fn done(&mut self, queue: WorkQueue, vi: ViHandle) -> VipResult<Completion> {
        self.compute(self.cfg.costs.vipl_call).await;
        let head = self.head(queue, vi)?.ok_or(VipError::NotDone)?;
        if !self.read_status(head.va).await?.is_done() {
            return Err(VipError::NotDone);
        }
        self.reap(queue, vi, head).await
    }

    async fn wait(
        &mut self,
        queue: WorkQueue,
        vi: ViHandle,
        timeout: Timeout,
    ) -> VipResult<Completion> {
        self.compute(self.cfg.costs.vipl_call).await;
        let head = self.head(queue, vi)?.ok_or(VipError::NotDone)?;
        let cond = PollCond::AnyBits32(Status::DONE.bits());
        self.poll_mem(head.va + STATUS_OFFSET, cond, timeout)
            .await?;
        self.reap(queue, vi, head).await
    }

    /// Reads the completed head descriptor's control segment and dequeues it.
    async fn reap(
        &mut self,
        queue: WorkQueue,
        vi: ViHandle,
        head: Posted,
    ) -> VipResult<Completion> {
        let bytes = self.read_mem(head.va, CONTROL_SEGMENT_LEN as u64).await?;
        let cs = ControlSegmentRepr::parse(&ControlSegment::new_unchecked(&bytes[..]))
            .map_err(|_| VipError::InvalidParameter)?;
        if let Some(e) = self.vis.get_mut(&vi.0) {
            match queue {
                WorkQueue::Send => e.send.pop_front(),
                WorkQueue::Receive => e.recv.pop_front(),
            };
        }
        let completion = Completion {
            desc_va: head.va,
            desc_handle: head.handle,
            queue,
            status: cs.status,
            length: cs.length,
            immediate: cs
                .status
                .contains(Status::IMMEDIATE)
                .then_some(cs.immediate),
        };
        if completion.is_error() {
            tracing::debug!(target: "host::vipl", va = head.va, status = ?cs.status, "descriptor completed in error");
        }
        Ok(completion)
    }
}
