//! `bsp_sync`: the end of a superstep, in up to three rounds of one message to every
//! peer each (all in [`BSP_CONTEXT`], tagged with the superstep and round).
//!
//! 1. **Requests.** Each process sends every peer one message: its registrations of
//!    this superstep (to all), then its combined puts, gets and messages for that peer,
//!    and the number of RDMA puts it will make there. Receiving all `p - 1` is a
//!    barrier, and since every process sees every other's flag "needs rounds 2 and 3"
//!    (set by gets or RDMA puts), all decide the same way whether more rounds follow.
//! 2. **Gets** (when needed). On a card with RDMA read each process reads what it gets
//!    straight from the owners' areas and waits for the reads; otherwise it answers the
//!    gets it was sent. Either way no put of this superstep has landed yet. Then it
//!    sends every peer a message (the replies for it, or none). Once every peer's
//!    round-2 message is in, nobody reads any area any more, so this process RDMA-writes
//!    its large puts.
//! 3. **Puts done** (when needed). When its RDMA writes have completed (acknowledged
//!    after placement), a process tells each peer it wrote to; each waits for those
//!    that announced writes in round 1.
//!
//! Then combined puts are copied into place (source rank order, then record order),
//! local puts too, messages are queued for `bsp_move`, and registrations and pops take
//! effect. An empty superstep costs one round: `p - 1` messages each way.

use super::{Bsp, BspError, ReadGet, BSP_CONTEXT};
use crate::records::{MsgHeader, RecError, RecHeader, RecKind, MSG_HEADER, REC_HEADER};
use crate::staging::Staging;
use via_abi::MemHandle;
use vmpi::{MpiError, Rank, Request, Source, Tag, TagSel};

fn vipl_err(call: &'static str) -> impl FnOnce(host_driver::VipError) -> MpiError {
    move |error| MpiError::Vipl { call, error }
}

/// A received sync message: its buffer and the peer.
struct Inbound {
    peer: u16,
    buf: (u64, u64),
    len: u64,
    header: MsgHeader,
}

impl Bsp {
    fn round_tag(&self, round: u64) -> Tag {
        Tag(i32::try_from((self.superstep * 4 + round) % (i32::MAX as u64)).unwrap_or(0))
    }

    /// `bsp_sync`.
    ///
    /// # Errors
    /// The transport's; a malformed message from a peer; a put or get naming an area
    /// the peer does not have.
    pub async fn sync(&mut self) -> Result<(), BspError> {
        self.call_cost().await;
        let me = self.pid();
        let n = self.nprocs();
        let needs_me = !self.gets.is_empty()
            || self.rdma.iter().any(|r| !r.is_empty())
            || self.reads.iter().any(|r| !r.is_empty());
        let announced: Vec<bool> = self.rdma.iter().map(|r| !r.is_empty()).collect();
        // Round 1: registrations to everyone, then the records built during the step.
        let pushed: Vec<usize> = self.pushed.clone();
        let mut sends = Vec::new();
        for p in (0..n).filter(|&p| p != me) {
            let mut regs = Vec::new();
            for &i in &pushed {
                if let Some(a) = self.regs[i] {
                    let h = RecHeader {
                        kind: RecKind::Registration,
                        tag_len: 0,
                        a: a.handle.raw(),
                        b: 0,
                        len: u32::try_from(a.len).unwrap_or(u32::MAX),
                    };
                    let mut b = h.emit().to_vec();
                    b.extend_from_slice(&a.va.to_le_bytes());
                    regs.push(b);
                }
            }
            let pu = usize::from(p);
            let rdma_puts = u32::try_from(self.rdma[pu].len()).unwrap_or(u32::MAX);
            let tag = self.round_tag(1);
            let req = self
                .send_round(pu, 1, needs_me, rdma_puts, &regs, tag)
                .await?;
            sends.push(req);
        }
        let mut inbound = self.receive_round(1).await?;
        self.own_messages(&mut inbound).await?;
        self.comm.waitall(&sends).await?;
        let more = needs_me || inbound.iter().any(|m| m.header.needs_more);
        if more {
            self.stats.long_syncs += 1;
            self.rounds_two_and_three(&inbound, &announced).await?;
        } else {
            self.local_gets_now().await?;
        }
        // Combined puts, then local puts, then messages, then registrations.
        let mut inbox = std::collections::VecDeque::new();
        for m in &mut inbound {
            self.apply_round_one(m, &mut inbox).await?;
        }
        for (at, dst, len) in std::mem::take(&mut self.local_puts) {
            self.copy(dst, self.local_stage.va + at, u64::from(len))
                .await?;
        }
        for b in self.held.drain(..) {
            self.pool.give(b);
        }
        self.held = inbound.iter().map(|m| m.buf).collect();
        self.inbox = inbox;
        for i in std::mem::take(&mut self.popped) {
            if let Some(a) = self.regs.get_mut(i).and_then(Option::take) {
                self.comm.deregister_rdma(a.va, a.handle).await?;
            }
            for r in &mut self.remote {
                if let Some(e) = r.get_mut(i) {
                    *e = None;
                }
            }
        }
        self.pushed.clear();
        self.tagsize = self.next_tagsize;
        self.gets.clear();
        self.local_stage.len = 0;
        self.put_buf.0.len = 0;
        self.get_buf.0.len = 0;
        for r in &mut self.rdma {
            r.clear();
        }
        self.superstep += 1;
        self.stats.supersteps += 1;
        Ok(())
    }

    /// Sends pid `p` its message of `round`: header, `extra` records first (the
    /// registrations), then what was built during the superstep.
    async fn send_round(
        &mut self,
        p: usize,
        round: u8,
        needs_more: bool,
        rdma_puts: u32,
        extra: &[Vec<u8>],
        tag: Tag,
    ) -> Result<Request, BspError> {
        let out = std::mem::take(&mut self.out[p]);
        let mut buf = Staging::default();
        let records = out.records + u32::try_from(extra.len()).unwrap_or(u32::MAX);
        let header = MsgHeader {
            round,
            needs_more,
            records,
            rdma_puts,
        };
        buf.push(&mut self.comm, &mut self.pool, &header.emit())
            .await?;
        for e in extra {
            buf.push(&mut self.comm, &mut self.pool, e).await?;
        }
        if out.buf.len > MSG_HEADER as u64 {
            let body = out.buf.len - MSG_HEADER as u64;
            buf.push_copy(
                &mut self.comm,
                &mut self.pool,
                out.buf.va + MSG_HEADER as u64,
                body,
                1,
            )
            .await?;
        }
        self.pool.give((out.buf.va, out.buf.cap));
        let len =
            u32::try_from(buf.len).map_err(|_| MpiError::Argument("sync message too large"))?;
        let peer = Rank(u16::try_from(p).unwrap_or(u16::MAX));
        let r = self
            .comm
            .isend_in(buf.va, len, peer, tag, BSP_CONTEXT)
            .await?;
        self.stats.sync_messages += 1;
        // The send buffer returns to the pool once the send completed (at the wait).
        self.held.push((buf.va, buf.cap));
        Ok(r)
    }

    /// Receives one message of `round` from every peer, in rank order.
    async fn receive_round(&mut self, round: u64) -> Result<Vec<Inbound>, BspError> {
        let me = self.pid();
        let tag = self.round_tag(round);
        let mut inbound = Vec::new();
        for p in (0..self.nprocs()).filter(|&p| p != me) {
            inbound.push(self.receive_from(p, tag).await?);
        }
        Ok(inbound)
    }

    async fn receive_from(&mut self, p: u16, tag: Tag) -> Result<Inbound, BspError> {
        let env = self
            .comm
            .probe_in(Source::Rank(Rank(p)), TagSel::Tag(tag), BSP_CONTEXT)
            .await?;
        let buf = self.pool.take(&mut self.comm, u64::from(env.len)).await?;
        let r = self
            .comm
            .irecv_in(
                buf.0,
                env.len,
                Source::Rank(Rank(p)),
                TagSel::Tag(tag),
                BSP_CONTEXT,
            )
            .await?;
        self.comm.wait(r).await?;
        let head = self
            .comm
            .vipl()
            .read_mem(buf.0, MSG_HEADER as u64)
            .await
            .map_err(vipl_err("load"))?;
        let header =
            MsgHeader::parse(&head).map_err(|error| BspError::Malformed { peer: p, error })?;
        Ok(Inbound {
            peer: p,
            buf,
            len: u64::from(env.len),
            header,
        })
    }

    /// Walks the records of `m`, handing each header and its payload's address to `f`.
    async fn records(&mut self, m: &Inbound) -> Result<Vec<(RecHeader, u64)>, BspError> {
        let mut at = MSG_HEADER as u64;
        let mut out = Vec::new();
        for _ in 0..m.header.records {
            let bad = |error| BspError::Malformed {
                peer: m.peer,
                error,
            };
            if at + REC_HEADER as u64 > m.len {
                return Err(bad(RecError::Truncated(at as usize)));
            }
            let hb = self
                .comm
                .vipl()
                .read_mem(m.buf.0 + at, REC_HEADER as u64)
                .await
                .map_err(vipl_err("load"))?;
            let h = RecHeader::parse(&hb, at as usize).map_err(bad)?;
            if at + h.total_len() > m.len {
                return Err(bad(RecError::Truncated(at as usize)));
            }
            out.push((h, m.buf.0 + at + REC_HEADER as u64));
            at += h.total_len();
        }
        Ok(out)
    }

    async fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), BspError> {
        if len > 0 {
            self.comm
                .vipl()
                .memcpy(dst, src, len)
                .await
                .map_err(vipl_err("memcpy"))?;
        }
        Ok(())
    }

    async fn local_gets_now(&mut self) -> Result<(), BspError> {
        for (src, dst, len) in std::mem::take(&mut self.local_gets) {
            self.copy(dst, src, u64::from(len)).await?;
        }
        Ok(())
    }

    /// This process's area `i` as a peer named it, checked against `[off, off + len)`.
    fn my_area(&self, peer: u16, i: u32, off: u32, len: u32) -> Result<u64, BspError> {
        let a = self
            .regs
            .get(i as usize)
            .copied()
            .flatten()
            .ok_or(BspError::Malformed {
                peer,
                error: RecError::Malformed(0),
            })?;
        super::check_range("a peer's put or get", u64::from(off), len, a.len)?;
        Ok(a.va + u64::from(off))
    }

    async fn rounds_two_and_three(
        &mut self,
        inbound: &[Inbound],
        announced: &[bool],
    ) -> Result<(), BspError> {
        let me = self.pid();
        // Round 2: gets (areas as they are before any put lands): RDMA reads, waited
        // for, then copied into place; then the gets this process must answer.
        self.local_gets_now().await?;
        let reads: Vec<(u16, ReadGet)> = (0..self.nprocs())
            .flat_map(|p| {
                std::mem::take(&mut self.reads[usize::from(p)])
                    .into_iter()
                    .map(move |r| (p, r))
            })
            .collect();
        for &(p, r) in &reads {
            let (va, h) = (self.get_buf.0.va + r.at, self.get_buf.1);
            self.comm
                .rdma_read(Rank(p), va, h, r.len, r.remote_va, r.remote_handle)
                .await?;
        }
        if !reads.is_empty() {
            self.comm.flush().await?;
        }
        for (_, r) in reads {
            self.copy(r.dst, self.get_buf.0.va + r.at, u64::from(r.len))
                .await?;
            self.stats.rdma_gets += 1;
        }
        let mut sends = Vec::new();
        for m in inbound.iter().filter(|m| m.peer != me) {
            let recs = self.records(m).await?;
            let p = usize::from(m.peer);
            for (h, payload) in recs.into_iter().filter(|(h, _)| h.kind == RecKind::Get) {
                let src = self.my_area(m.peer, h.a, h.b, h.len)?;
                let idb = self
                    .comm
                    .vipl()
                    .read_mem(payload, 4)
                    .await
                    .map_err(vipl_err("load"))?;
                let req = u32::from_le_bytes([idb[0], idb[1], idb[2], idb[3]]);
                let reply = RecHeader {
                    kind: RecKind::GetReply,
                    tag_len: 0,
                    a: req,
                    b: 0,
                    len: h.len,
                };
                self.record(p, reply, Some((src, u64::from(h.len)))).await?;
                self.stats.gets_served += 1;
            }
        }
        let tag2 = self.round_tag(2);
        for p in (0..self.nprocs()).filter(|&p| p != me) {
            sends.push(
                self.send_round(usize::from(p), 2, false, 0, &[], tag2)
                    .await?,
            );
        }
        // Every peer's round 2 (its get replies; its RDMA reads are done), then our RDMA
        // puts: a put may land only once nobody reads the area any more.
        for p in (0..self.nprocs()).filter(|&p| p != me) {
            let m = self.receive_from(p, tag2).await?;
            for (h, payload) in self.records(&m).await? {
                if h.kind != RecKind::GetReply {
                    continue;
                }
                let (dst, len) =
                    self.gets
                        .get(h.a as usize)
                        .copied()
                        .ok_or(BspError::Malformed {
                            peer: p,
                            error: RecError::Malformed(0),
                        })?;
                self.copy(dst, payload, u64::from(len.min(h.len))).await?;
            }
            self.pool.give(m.buf);
        }
        for p in (0..self.nprocs()).filter(|&p| p != me) {
            for put in std::mem::take(&mut self.rdma[usize::from(p)]) {
                self.comm
                    .rdma_write(
                        Rank(p),
                        self.put_buf.0.va + put.at,
                        self.put_buf.1,
                        put.len,
                        put.remote_va,
                        put.remote_handle,
                    )
                    .await?;
                self.stats.rdma_puts += 1;
                // Keep the count for round 3: it was announced in round 1.
            }
        }
        self.comm.waitall(&sends).await?;
        self.comm.flush().await?;
        // Round 3: tell those we wrote to; hear from those that wrote to us.
        let tag3 = self.round_tag(3);
        let mut sends = Vec::new();
        for p in (0..self.nprocs()).filter(|&p| p != me) {
            if announced.get(usize::from(p)).copied().unwrap_or(false) {
                sends.push(
                    self.send_round(usize::from(p), 3, false, 0, &[], tag3)
                        .await?,
                );
            }
        }
        for m in inbound
            .iter()
            .filter(|m| m.peer != me && m.header.rdma_puts > 0)
        {
            let done = self.receive_from(m.peer, tag3).await?;
            self.pool.give(done.buf);
        }
        self.comm.waitall(&sends).await?;
        Ok(())
    }

    /// Messages this process sent itself: its own outgoing buffer, read like a peer's
    /// round-1 message, in its rank's place.
    async fn own_messages(&mut self, inbound: &mut Vec<Inbound>) -> Result<(), BspError> {
        let me = self.pid();
        let out = std::mem::take(&mut self.out[usize::from(me)]);
        if out.records == 0 {
            self.pool.give((out.buf.va, out.buf.cap));
            return Ok(());
        }
        let header = MsgHeader {
            round: 1,
            needs_more: false,
            records: out.records,
            rdma_puts: 0,
        };
        let mut buf = out.buf;
        buf.patch(&mut self.comm, 0, &header.emit()).await?;
        let at = inbound
            .iter()
            .position(|m| m.peer > me)
            .unwrap_or(inbound.len());
        inbound.insert(
            at,
            Inbound {
                peer: me,
                buf: (buf.va, buf.cap),
                len: buf.len,
                header,
            },
        );
        Ok(())
    }

    /// Copies the combined puts of a round-1 message into place and queues its
    /// messages; records the peer's registrations.
    async fn apply_round_one(
        &mut self,
        m: &Inbound,
        inbox: &mut std::collections::VecDeque<(Vec<u8>, u64, u32)>,
    ) -> Result<(), BspError> {
        let p = usize::from(m.peer);
        for (h, payload) in self.records(m).await? {
            match h.kind {
                RecKind::Registration => {
                    let vb = self
                        .comm
                        .vipl()
                        .read_mem(payload, 8)
                        .await
                        .map_err(vipl_err("load"))?;
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&vb);
                    self.remote[p].push(Some((
                        u64::from_le_bytes(w),
                        MemHandle::from_raw(h.a),
                        u64::from(h.len),
                    )));
                }
                RecKind::Put => {
                    let dst = self.my_area(m.peer, h.a, h.b, h.len)?;
                    self.copy(dst, payload, u64::from(h.len)).await?;
                }
                RecKind::Message => {
                    let tag = self
                        .comm
                        .vipl()
                        .read_mem(payload, u64::from(h.tag_len))
                        .await
                        .map_err(vipl_err("load"))?;
                    inbox.push_back((tag, payload + u64::from(h.tag_len), h.len));
                }
                RecKind::Get | RecKind::GetReply => {}
            }
        }
        Ok(())
    }
}
