//! The progress engine: reaping completions from the completion queue and carrying out
//! the protocol core's actions with VIPL calls, each at its CPU cost.
//!
//! - An arrival (receive completion): load the 40-byte header from the slot, hand it to
//!   the core, copy the payload where the core says (the receive's buffer, or a stash),
//!   rebuild the slot's descriptor and post it again. A completion with immediate data
//!   and no bytes is the RDMA write of a synchronous message: its receive is done.
//! - A send completion: the slot is free again; for an RDMA write the synchronous send
//!   is complete and its buffer released.
//! - Actions: a message is a header store (and for an eager one a `memcpy` of the user
//!   data) into a free send slot, a descriptor build and `VipPostSend`; registration
//!   goes through `VipRegisterMem`, or the cache.

use super::{Call, Comm, MpiError, Posted};
use crate::p2p::{Action, Payload, RecvId};
use crate::types::Rank;
use crate::wire::{Header, HEADER_LEN};
use host_driver::vipl::descriptor::{
    data_segment, rdma_read_descriptor, rdma_write_descriptor, recv_descriptor, send_descriptor,
};
use host_driver::vipl::{CqCompletion, Timeout, VipError, VipMemAttributes};
use via_abi::{CompletedOp, MemHandle, Status, WorkQueue};

impl Comm {
    /// Reaps one completion if there is one; returns whether it did.
    pub(crate) async fn progress_once(&mut self) -> Result<bool, MpiError> {
        match self.vipl.vip_cq_done(self.cq).await {
            Ok(c) => {
                self.handle(c).await?;
                Ok(true)
            }
            Err(VipError::NotDone) => Ok(false),
            Err(error) => Err(MpiError::Vipl {
                call: "VipCQDone",
                error,
            }),
        }
    }

    /// Blocks in `VipCQWait` until a completion, and reaps it.
    pub(crate) async fn progress_block(&mut self, call: &'static str) -> Result<(), MpiError> {
        self.stats.blocking_waits += 1;
        let budget = self.progress_budget();
        let t = Timeout::After(budget);
        match self.vipl.vip_cq_wait(self.cq, t).await {
            Ok(c) => self.handle(c).await,
            Err(VipError::Timeout) => Err(MpiError::Stalled {
                call,
                waited: budget,
            }),
            Err(error) => Err(MpiError::Vipl {
                call: "VipCQWait",
                error,
            }),
        }
    }

    /// How long a wait may see no completion: the base budget, plus the byte time of
    /// every synchronous byte under way, times the processes sharing the links (a
    /// 16 MiB transfer completes once, at its end).
    fn progress_budget(&self) -> sim_kernel::Duration {
        let bytes = self.p2p.pending_synchronous_bytes();
        let per = self.cfg.byte_time.0.saturating_mul(u64::from(self.size));
        sim_kernel::Duration(
            self.cfg
                .progress_timeout
                .0
                .saturating_add(bytes.saturating_mul(per)),
        )
    }

    /// Makes progress until `done` holds: reaps what has completed, then blocks.
    pub(crate) async fn progress_until(
        &mut self,
        call: &'static str,
        done: impl Fn(&Comm) -> bool,
    ) -> Result<(), MpiError> {
        while !done(self) {
            if !self.progress_once().await? {
                self.progress_block(call).await?;
            }
        }
        Ok(())
    }

    /// Waits until every send-queue post of this process has completed.
    pub(crate) async fn drain_sends(&mut self, call: &'static str) -> Result<(), MpiError> {
        self.progress_until(call, |c| {
            c.peers.iter().flatten().all(|p| p.in_flight.is_empty())
        })
        .await
    }

    async fn handle(&mut self, c: CqCompletion) -> Result<(), MpiError> {
        let peer = *self
            .vi_peer
            .get(&c.vi.0)
            .ok_or(MpiError::Argument("a completion on a VI of no peer"))?;
        match c.queue {
            WorkQueue::Send => self.send_completed(peer).await,
            WorkQueue::Receive => self.arrived(peer).await,
        }
    }

    async fn send_completed(&mut self, peer: Rank) -> Result<(), MpiError> {
        let vi = self
            .peer(peer)
            .map(|p| p.vi)
            .ok_or(MpiError::Argument("no VI"))?;
        let comp = self.vipl.vip_send_done(vi).await.call("VipSendDone")?;
        // In MPI_Finalize a peer that is through may disconnect before this process's
        // last messages to it (its barrier messages' acks, credits) complete.
        let gone = self.finalizing && comp.status.contains(Status::FLUSHED);
        if comp.is_error() && !gone {
            return Err(MpiError::Completion {
                call: "VipSendDone",
                status: comp.status,
            });
        }
        let posted = self.peer_mut(peer).and_then(|p| p.in_flight.pop_front());
        match posted {
            Some(Posted::Message { slot }) => self.send_free.push(slot),
            Some(Posted::Write { slot, send, handle }) => {
                self.send_free.push(slot);
                self.p2p.write_done(send);
                if let Some((va, _)) = self.user_sends.get(&send).copied() {
                    self.release(va, handle).await?;
                }
            }
            None => return Err(MpiError::Argument("a send completion with nothing posted")),
        }
        self.run_actions().await
    }

    async fn arrived(&mut self, peer: Rank) -> Result<(), MpiError> {
        let vi = self
            .peer(peer)
            .map(|p| p.vi)
            .ok_or(MpiError::Argument("no VI"))?;
        let comp = self.vipl.vip_recv_done(vi).await.call("VipRecvDone")?;
        if comp.status.contains(Status::FLUSHED) {
            // The peer disconnected (it finalized first): its slots are gone with it.
            self.peer_mut(peer).map(|p| p.posted.pop_front());
            return Ok(());
        }
        if comp.is_error() {
            return Err(MpiError::Completion {
                call: "VipRecvDone",
                status: comp.status,
            });
        }
        let slot = self
            .peer_mut(peer)
            .and_then(|p| p.posted.pop_front())
            .ok_or(MpiError::Argument(
                "a receive completion with nothing posted",
            ))?;
        let slot_va = self.bounce.slot_va(slot);
        let rdma = comp.status.completed_op() == CompletedOp::RemoteRdmaWrite;
        let r = match comp.immediate {
            Some(imm) if rdma => self.p2p.write_landed(peer, imm).map(|_| ()),
            _ => {
                let head = self
                    .vipl
                    .read_mem(slot_va, HEADER_LEN as u64)
                    .await
                    .call("load")?;
                let h = Header::parse_prefix(&head, comp.length as usize)
                    .map_err(|error| MpiError::Wire { peer, error })?;
                match self.p2p.arrived(peer, &h) {
                    Ok(pl) => {
                        self.place(pl, slot_va + HEADER_LEN as u64, h.len).await?;
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        };
        self.repost(peer, slot).await?;
        r?;
        self.run_actions().await
    }

    /// Copies an eager payload at `from` where the core said.
    async fn place(&mut self, pl: Payload, from: u64, len: u32) -> Result<(), MpiError> {
        match pl {
            Payload::ToRecv(recv, n) => {
                if let Some(&(va, _)) = self.user_recvs.get(&recv) {
                    self.copy(va, from, n).await?;
                }
            }
            Payload::Stash(id) => {
                self.stats.unexpected += 1;
                let buf = match self.stash_free.pop() {
                    Some(b) => b,
                    None => {
                        let n = u64::from(self.cfg.eager_limit.max(1));
                        self.vipl.malloc(n, 64).await.call("malloc")?
                    }
                };
                self.copy(buf, from, len).await?;
                self.stashes.insert(id, buf);
            }
            Payload::None => {}
        }
        Ok(())
    }

    async fn copy(&mut self, dst: u64, src: u64, len: u32) -> Result<(), MpiError> {
        if len == 0 {
            return Ok(());
        }
        self.stats.copies += 1;
        self.stats.copy_bytes += u64::from(len);
        self.vipl
            .memcpy(dst, src, u64::from(len))
            .await
            .call("memcpy")
    }

    async fn repost(&mut self, peer: Rank, slot: usize) -> Result<(), MpiError> {
        let vi = self
            .peer(peer)
            .map(|p| p.vi)
            .ok_or(MpiError::Argument("no VI"))?;
        let len = u32::try_from(self.bounce.slot_bytes).unwrap_or(u32::MAX);
        let d = recv_descriptor(vec![data_segment(
            self.bounce.slot_va(slot),
            self.bounce.handle,
            len,
        )]);
        let dva = self.bounce.desc_va(slot);
        self.vipl.build_descriptor(dva, &d).await.call("build")?;
        self.vipl
            .vip_post_recv(vi, dva, self.bounce.handle)
            .await
            .call("VipPostRecv")?;
        if let Some(p) = self.peer_mut(peer) {
            p.posted.push_back(slot);
        }
        Ok(())
    }

    /// A free send slot, reaping completions until one is. Actions the reaped
    /// completions cause wait in the core's queue behind the one being carried out, so
    /// messages to a peer leave in the order the core made them.
    async fn send_slot(&mut self) -> Result<usize, MpiError> {
        loop {
            if let Some(s) = self.send_free.pop() {
                return Ok(s);
            }
            if !self.progress_once().await? {
                self.progress_block("send slot").await?;
            }
        }
    }

    /// Carries out the core's actions, in order (at once a no-op when called from
    /// within: the outer loop goes on with what was queued).
    pub(crate) fn run_actions(
        &mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), MpiError>> + '_>> {
        Box::pin(async move {
            if self.in_actions {
                return Ok(());
            }
            self.in_actions = true;
            let mut r = Ok(());
            while let Some(a) = self.p2p.poll_action() {
                r = self.act(a).await;
                if r.is_err() {
                    break;
                }
            }
            self.in_actions = false;
            r
        })
    }

    async fn act(&mut self, a: Action) -> Result<(), MpiError> {
        match a {
            Action::Send { peer, header, data } => {
                let slot = self.send_slot().await?;
                let sva = self.bounce.slot_va(slot);
                self.vipl
                    .write_mem(sva, &header.emit())
                    .await
                    .call("store")?;
                let mut len = HEADER_LEN as u32;
                if let Some(send) = data {
                    self.stats.eager_sends += 1;
                    if let Some(&(va, n)) = self.user_sends.get(&send) {
                        self.copy(sva + HEADER_LEN as u64, va, n).await?;
                        len += n;
                    }
                } else {
                    self.stats.control_messages += 1;
                }
                let d = send_descriptor(vec![data_segment(sva, self.bounce.handle, len)], None);
                self.post_send(peer, slot, d, Posted::Message { slot })
                    .await
            }
            Action::RegisterRecv { recv } => {
                let (va, cap) = self
                    .user_recvs
                    .get(&recv)
                    .copied()
                    .ok_or(MpiError::Argument("an unknown receive"))?;
                let h = self.register(va, cap).await?;
                self.recv_handles.insert(recv, h);
                self.p2p.recv_registered(recv, va, h.raw());
                Ok(())
            }
            Action::RdmaWrite {
                peer,
                send,
                va,
                handle,
                len,
                immediate,
            } => {
                self.stats.synchronous_sends += 1;
                let (sva, n) = self
                    .user_sends
                    .get(&send)
                    .copied()
                    .ok_or(MpiError::Argument("an unknown send"))?;
                let h = self.register(sva, n).await?;
                let slot = self.send_slot().await?;
                let d = rdma_write_descriptor(
                    vec![data_segment(sva, h, len)],
                    va,
                    MemHandle::from_raw(handle),
                    Some(immediate),
                );
                self.post_send(
                    peer,
                    slot,
                    d,
                    Posted::Write {
                        slot,
                        send,
                        handle: h,
                    },
                )
                .await
            }
            Action::Unstash { stash, recv, len } => {
                let buf = self
                    .stashes
                    .remove(&stash)
                    .ok_or(MpiError::Argument("an unknown stash"))?;
                if let Some(&(va, _)) = self.user_recvs.get(&recv) {
                    self.copy(va, buf, len).await?;
                }
                self.stash_free.push(buf);
                Ok(())
            }
            Action::ReleaseRecv { recv } => self.release_recv(recv).await,
        }
    }

    async fn post_send(
        &mut self,
        peer: Rank,
        slot: usize,
        d: via_abi::DescriptorRepr,
        posted: Posted,
    ) -> Result<(), MpiError> {
        let vi = self
            .peer(peer)
            .map(|p| p.vi)
            .ok_or(MpiError::Argument("no VI"))?;
        let dva = self.bounce.desc_va(slot);
        self.vipl.build_descriptor(dva, &d).await.call("build")?;
        match self.vipl.vip_post_send(vi, dva, self.bounce.handle).await {
            Ok(()) => {}
            // In MPI_Finalize a peer through its barrier may have disconnected: what is
            // left for it can only be a credit return, which it no longer needs.
            Err(VipError::InvalidState) if self.finalizing => {
                self.send_free.push(slot);
                return Ok(());
            }
            Err(error) => {
                return Err(MpiError::Vipl {
                    call: "VipPostSend",
                    error,
                })
            }
        }
        if let Some(p) = self.peer_mut(peer) {
            p.in_flight.push_back(posted);
        }
        Ok(())
    }

    /// RDMA-writes `len` bytes at `va` (registered under `h`) to `remote_va` at `peer`
    /// (registered there under `remote_h`), without immediate data: no receive
    /// descriptor is consumed, so no credit is spent. [`Comm::flush`] waits for it.
    ///
    /// # Errors
    /// A rank with no VI; what the progress met while a send slot freed.
    pub async fn rdma_write(
        &mut self,
        peer: Rank,
        va: u64,
        h: MemHandle,
        len: u32,
        remote_va: u64,
        remote_h: MemHandle,
    ) -> Result<(), MpiError> {
        let d = rdma_write_descriptor(vec![data_segment(va, h, len)], remote_va, remote_h, None);
        self.post_rdma(peer, d).await
    }

    /// Posts an RDMA descriptor on `peer`'s VI from a free send slot.
    async fn post_rdma(&mut self, peer: Rank, d: via_abi::DescriptorRepr) -> Result<(), MpiError> {
        if self.peer(peer).is_none() {
            return Err(MpiError::Argument("RDMA to a rank with no VI"));
        }
        let slot = self.send_slot().await?;
        self.post_send(peer, slot, d, Posted::Message { slot })
            .await
    }

    /// RDMA-reads `len` bytes at `remote_va` of `peer` (registered there under
    /// `remote_h` with RDMA read enabled) into `va` (registered under `h`); only on a
    /// card with RDMA read ([`Comm::has_rdma_read`]). [`Comm::flush`] waits for it: the
    /// bytes have landed when it returns.
    ///
    /// # Errors
    /// No RDMA read on this card, a rank with no VI; what the progress met.
    pub async fn rdma_read(
        &mut self,
        peer: Rank,
        va: u64,
        h: MemHandle,
        len: u32,
        remote_va: u64,
        remote_h: MemHandle,
    ) -> Result<(), MpiError> {
        if !self.rdma_read {
            return Err(MpiError::Argument("RDMA read on a card without it"));
        }
        let d = rdma_read_descriptor(vec![data_segment(va, h, len)], remote_va, remote_h);
        self.post_rdma(peer, d).await
    }

    /// Waits until every send and RDMA write this process posted has completed on the
    /// card (under a reliable level: acknowledged by the peer, its bytes placed).
    ///
    /// # Errors
    /// [`MpiError::Stalled`]; what the progress met.
    pub async fn flush(&mut self) -> Result<(), MpiError> {
        self.drain_sends("flush").await
    }

    /// Registers `[va, va + len)` for RDMA writes from peers, and RDMA reads when the
    /// card has them (`VipRegisterMem` with the process's tag).
    ///
    /// # Errors
    /// What `VipRegisterMem` returns.
    pub async fn register_rdma(&mut self, va: u64, len: u64) -> Result<MemHandle, MpiError> {
        let attrs = VipMemAttributes {
            ptag: self.ptag,
            enable_rdma_write: true,
            enable_rdma_read: self.rdma_read,
        };
        self.vipl
            .vip_register_mem(self.nic, va, len.max(1), &attrs)
            .await
            .call("VipRegisterMem")
    }

    /// Deregisters what [`Comm::register_rdma`] registered.
    ///
    /// # Errors
    /// What `VipDeregisterMem` returns.
    pub async fn deregister_rdma(&mut self, va: u64, h: MemHandle) -> Result<(), MpiError> {
        self.vipl
            .vip_deregister_mem(self.nic, va, h)
            .await
            .call("VipDeregisterMem")
    }

    async fn release_recv(&mut self, recv: RecvId) -> Result<(), MpiError> {
        let Some(h) = self.recv_handles.remove(&recv) else {
            return Ok(());
        };
        match self.user_recvs.get(&recv).copied() {
            Some((va, _)) => self.release(va, h).await,
            None => Ok(()),
        }
    }

    /// Registers `[va, va + len)` (RDMA write enabled, so one registration serves both
    /// directions), or finds it in the cache.
    async fn register(&mut self, va: u64, len: u32) -> Result<MemHandle, MpiError> {
        let len = u64::from(len.max(1));
        if self.cfg.registration == super::Registration::Cache {
            if let Some(&(n, h)) = self.reg_cache.get(&va) {
                if n >= len {
                    self.stats.cache_hits += 1;
                    return Ok(h);
                }
            }
        }
        let attrs = VipMemAttributes {
            ptag: self.ptag,
            enable_rdma_write: true,
            enable_rdma_read: false,
        };
        self.stats.registrations += 1;
        let h = self
            .vipl
            .vip_register_mem(self.nic, va, len, &attrs)
            .await
            .call("VipRegisterMem")?;
        if self.cfg.registration == super::Registration::Cache {
            if let Some((_, old)) = self.reg_cache.insert(va, (len, h)) {
                self.stats.deregistrations += 1;
                self.vipl
                    .vip_deregister_mem(self.nic, va, old)
                    .await
                    .call("VipDeregisterMem")?;
            }
        }
        Ok(h)
    }

    /// The transfer through `h` is over: deregister, unless cached.
    async fn release(&mut self, va: u64, h: MemHandle) -> Result<(), MpiError> {
        if self.cfg.registration == super::Registration::Cache {
            return Ok(());
        }
        self.stats.deregistrations += 1;
        self.vipl
            .vip_deregister_mem(self.nic, va, h)
            .await
            .call("VipDeregisterMem")
    }
}
