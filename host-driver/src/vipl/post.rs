//! VipPostSend and VipPostRecv: hand a descriptor the program built in registered memory
//! to the card.
//!
//! A post (i) checks the VI and the descriptor's place (64-byte aligned, inside the
//! region of its memory handle), (ii) writes the provider-owned fields of the control
//! segment: Next = 0 / null handle and Status = 0, (iii) links the queue's previous tail
//! (the last descriptor posted on that queue, done or not: the card keeps it as its place
//! in the list) to it through the tail's Next address and handle, and (iv) rings the VI's
//! doorbell: the 16-byte via-abi [`DoorbellRepr`] as four 32-bit memory-mapped writes to
//! `DOORBELL_BASE + 16 * vi`, the last of which (offset 12) rings it. The card finds the
//! descriptor through the tail's link; only a queue's first post (no tail) sets `HEAD`,
//! naming the descriptor in the record (or every post, with
//! `HostCpuParams::doorbell_names_descriptor`). The doorbell writes are traced as a
//! `doorbell` span.
//!
//! Two uncached reads of the VI's doorbell window on the card frame the post (each a
//! whole PCI read, switchable in `HostCpuParams`): before the stores, the VI's state as
//! the card knows it (`vi state read`; the card's VI protocol manager owns it, and a VI
//! the card has moved to Error refuses posts with `VIP_INVALID_STATE`), and after the
//! doorbell, a read-back that PCI ordering holds behind the posted doorbell writes
//! (`doorbell flush`), so the doorbell has reached the card when the call returns. With
//! `post_waits_for_card`, the library reads the window again until its `POSTS_PENDING`
//! bit clears (`card takes post`): the call returns once the card has taken the post,
//! which for a receive means the card has read and checked the descriptor.

use super::{Posted, ViHandle, ViState, VipError, VipResult, Vipl};
use via_abi::bar::{self, ViStateCode};
use via_abi::descriptor::is_descriptor_aligned;
use via_abi::{DoorbellRepr, MemHandle, Queue, WorkQueue};

impl Vipl {
    /// **VipPostSend**: posts the descriptor at `desc_va` (registered under
    /// `desc_handle`) on the send queue of `vi`.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI, or a descriptor that is misaligned or not in
    /// the (live) region of `desc_handle`; `VIP_INVALID_STATE`: the VI is not connected.
    pub async fn vip_post_send(
        &mut self,
        vi: ViHandle,
        desc_va: u64,
        desc_handle: MemHandle,
    ) -> VipResult<()> {
        let start = self.now();
        let r = self.post(WorkQueue::Send, vi, desc_va, desc_handle).await;
        self.end_call("VipPostSend", start, &r);
        r
    }

    /// **VipPostRecv**: posts the descriptor at `desc_va` on the receive queue of `vi`
    /// (allowed before the VI is connected).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: as for [`Vipl::vip_post_send`]; `VIP_INVALID_STATE`: the VI
    /// is in the error state.
    pub async fn vip_post_recv(
        &mut self,
        vi: ViHandle,
        desc_va: u64,
        desc_handle: MemHandle,
    ) -> VipResult<()> {
        let start = self.now();
        let r = self
            .post(WorkQueue::Receive, vi, desc_va, desc_handle)
            .await;
        self.end_call("VipPostRecv", start, &r);
        r
    }

    async fn post(
        &mut self,
        queue: WorkQueue,
        vi: ViHandle,
        desc_va: u64,
        desc_handle: MemHandle,
    ) -> VipResult<()> {
        self.compute(self.cfg.costs.vipl_call).await;
        let entry = self.vis.get(&vi.0).ok_or(VipError::InvalidParameter)?;
        let state_ok = match queue {
            WorkQueue::Send => entry.state == ViState::Connected,
            WorkQueue::Receive => entry.state != ViState::Error,
        };
        if !state_ok {
            return Err(VipError::InvalidState);
        }
        let window = bar::doorbell_offset(vi.0).ok_or(VipError::ErrorResource)?;
        if self.cfg.post_reads_vi_state {
            let start = self.now();
            let state =
                ViStateCode::from_raw(self.mmio_read(window).await? & bar::WINDOW_STATE_MASK);
            self.record_span("vi state read", start);
            let ok = match queue {
                WorkQueue::Send => state == ViStateCode::Connected,
                WorkQueue::Receive => !matches!(state, ViStateCode::Error | ViStateCode::Absent),
            };
            if !ok {
                return Err(VipError::InvalidState);
            }
        }
        if !is_descriptor_aligned(desc_va)
            || self
                .region_covering(
                    desc_handle,
                    desc_va,
                    via_abi::descriptor::CONTROL_SEGMENT_LEN as u64,
                )
                .is_none()
        {
            return Err(VipError::InvalidParameter);
        }
        // The card's tail of the queue: the last descriptor posted on it, done or not
        // (the engine remembers the last one it took and reads its Next link).
        let tail = match queue {
            WorkQueue::Send => entry.send_last,
            WorkQueue::Receive => entry.recv_last,
        };
        self.compute(self.cfg.costs.post_link).await;
        self.forget_other_tails(vi.0, queue, desc_va);
        self.write_mem(desc_va, &[0u8; 12]).await?;
        self.write_mem(desc_va + 28, &[0u8; 4]).await?;
        if let Some(t) = tail {
            let mut link = [0u8; 12];
            link[..8].copy_from_slice(&desc_va.to_le_bytes());
            link[8..].copy_from_slice(&desc_handle.raw().to_le_bytes());
            self.write_mem(t.va, &link).await?;
        }
        let posted = Posted {
            va: desc_va,
            handle: desc_handle,
            notified: false,
        };
        if let Some(e) = self.vis.get_mut(&vi.0) {
            match queue {
                WorkQueue::Send => {
                    e.send.push_back(posted);
                    e.send_last = Some(posted);
                }
                WorkQueue::Receive => {
                    e.recv.push_back(posted);
                    e.recv_last = Some(posted);
                }
            }
        }
        let head = tail.is_none() || self.cfg.doorbell_names_descriptor;
        self.ring_doorbell(vi.0, queue, desc_va, desc_handle, head)
            .await?;
        if self.cfg.post_flushes_doorbell || self.cfg.post_waits_for_card {
            let start = self.now();
            let mut word = self.mmio_read(window).await?;
            self.record_span("doorbell flush", start);
            if self.cfg.post_waits_for_card && word & bar::POSTS_PENDING != 0 {
                let start = self.now();
                self.declare_wait(Some(crate::ops::RegisterWait {
                    what: "the card to take the post (doorbell window POSTS_PENDING)",
                    deadline: None,
                    since: start,
                }));
                while word & bar::POSTS_PENDING != 0 {
                    word = match self.mmio_read(window).await {
                        Ok(w) => w,
                        Err(e) => {
                            self.declare_wait(None);
                            return Err(e);
                        }
                    };
                }
                self.declare_wait(None);
                self.record_span("card takes post", start);
            }
        }
        Ok(())
    }

    /// A completed descriptor the consumer posts again, here on VI `vi`'s `queue`, may
    /// still be the last one posted on another queue (a pool of descriptors shared by
    /// VIs, as vmpi's send slots are). That queue's next post would write its link into
    /// this descriptor, over this queue's, and the card could follow either queue's link
    /// from it; so that queue forgets it and its next post names its descriptor (`HEAD`).
    /// The same queue keeps it: posting its own tail again links the descriptor into
    /// itself, as before.
    fn forget_other_tails(&mut self, vi: u16, queue: WorkQueue, desc_va: u64) {
        for (&n, e) in &mut self.vis {
            let reused = |last: Option<Posted>| last.is_some_and(|p| p.va == desc_va);
            if (n, WorkQueue::Send) != (vi, queue) && reused(e.send_last) {
                e.send_last = None;
            }
            if (n, WorkQueue::Receive) != (vi, queue) && reused(e.recv_last) {
                e.recv_last = None;
            }
        }
    }

    /// Writes the doorbell record of a post, dword by dword.
    async fn ring_doorbell(
        &self,
        vi: u16,
        queue: WorkQueue,
        desc_va: u64,
        desc_handle: MemHandle,
        head: bool,
    ) -> VipResult<()> {
        let start = self.now();
        let base = bar::doorbell_offset(vi).ok_or(VipError::ErrorResource)?;
        let record = DoorbellRepr {
            desc_va,
            desc_handle,
            vi,
            queue: Queue::from(queue),
            flags: if head { via_abi::doorbell::HEAD } else { 0 },
        }
        .to_bytes();
        for (i, w) in record.chunks_exact(4).enumerate() {
            let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            self.mmio_write(base + 4 * i as u64, word).await;
        }
        self.record_span("doorbell", start);
        Ok(())
    }
}
