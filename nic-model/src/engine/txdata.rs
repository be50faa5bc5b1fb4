//! The send path's data part: TX buffer slots, fragment fetch into the Send FIFO, the
//! word mover into the TX buffer, and the handoff to the GEC.
//!
//! (DMA, mover, handoff and completions of slots: `txmove`.)
//!
//! ```text
//!  send io (data) --assign slot--> header run (header_build_cycles, 14 words)
//!                   fetch: DMA read chunks (<= dma_chunk_bytes, <= free Send FIFO)
//!                   DmaDone --> Send FIFO --one word/clock--> TX buffer slot
//!  slot filled (header + payload) --ring order--> GecTransmit (handoff_cycles)
//!  GecTxDone --> slot free; the descriptor's last one --> completion (complete.rs)
//! ```
//!
//! TX slots are given out and handed to the GEC in ring order (0, 1, .., n-1, 0, ..), so
//! a GEC that maps slot `i` to DP83820 TX descriptor `i` sees its ring filled in order.
//! Control frames (connect, disconnect, ack, nak) take the next free slot before data.
//! An RDMA read descriptor sends one request frame without payload (op 9, sequenced
//! like a data fragment); an RDMA read response (`readreq`) is sent like an RDMA write
//! whose source is the translated region and whose frames carry op 10.
//! One fragment is fetched at a time; the next fragment gets its slot as soon as every
//! DMA of the current one is issued, so fragment `k + 1` is fetched while `k` moves into
//! its slot or is transmitted (as TX slots allow). Fragments of the send contexts in
//! their data phase are served round robin (one fragment each), so several VIs' messages
//! interleave on the wire.
//!
//! Spans per data fragment (trace id of its descriptor): `tx slot wait` (from the
//! previous fragment's last DMA issue, or the buffer translation, to getting a slot),
//! `payload DMA read` (slot given to the last payload DmaDone, including the wait for
//! the DMA master), `tx buffer fill` (to the last word in the slot), `frame handoff` (to
//! the GEC seeing the handoff). Control frames: `control frame build`, `control frame
//! handoff`.

use super::fifo::Run;
use super::frame::headers_into;
use super::ids::SendId;
use super::io::{span, Io};
use super::unit::retx::TxWindow;
use super::unit::send::{Fetch, SendCtx, SlotKind, TxRun, TxSlot};
use super::unit::vi::ViState;
use super::Engine;
use gige_mac::BufferRam;
use sim_kernel::Time;
use via_abi::wire_header::{WireFlags, WireHeaderRepr, WireOp};
use via_abi::{Control, MemHandle, Op};

impl Engine {
    /// Makes whatever progress the send data path can: issue fetches, give out slots.
    pub(crate) fn tx_pump(&mut self, io: &mut Io, ram: &mut BufferRam) {
        while self.pump_fetch(io) || self.assign_slot(io) {}
        self.kick_tx_mover(io, ram);
        // Most calls find the next slot in ring order empty, handed over already or not
        // filled yet: nothing to hand over (checked here instead of in a call).
        if self.handoff_ready() {
            self.try_handoff(io, ram);
        }
    }

    pub(crate) fn slot_addr(&self, slot: usize) -> u64 {
        u16::try_from(slot)
            .ok()
            .and_then(|s| self.layout.tx_buffer(s).ok())
            .unwrap_or(0)
    }

    /// Gives the next TX slot to a control frame or a data fragment.
    fn assign_slot(&mut self, io: &mut Io) -> bool {
        let i = self.send.tx.next_assign;
        if self.send.tx.slots.get(i).is_none_or(Option::is_some) {
            return false;
        }
        let ready = |io: &Io| io.now() + io.my_domain().cycles(self.params.header_build_cycles);
        let n = self.send.tx.slots.len();
        if let Some(c) = self.send.tx.control.pop_front() {
            let (ready, dst) = (ready(io), self.slot_addr(i));
            let mut data = self.send.tx.spare.take();
            headers_into(&mut data, self.params.mac, c.dst, &c.hdr);
            data.extend_from_slice(&c.payload);
            let frame_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
            self.send.tx.mover.push(Run {
                bytes: data.len() as u64,
                ready,
                tag: TxRun {
                    slot: i,
                    dst,
                    data,
                    fifo: 0,
                },
            });
            self.send.tx.slots[i] = Some(TxSlot {
                msg: c.msg,
                kind: SlotKind::Control,
                frame_len,
                runs: 1,
                dmas: 0,
                issued_all: true,
                poisoned: false,
                mark: c.at,
                last_dma: None,
                handed: false,
            });
            self.send.tx.next_assign = (i + 1) % n;
            return true;
        }
        if self.send.tx.fetch.is_some() {
            return false;
        }
        if let Some((vi, seq)) = self.next_resend() {
            self.assign_resend(vi, seq, i, ready(io), io);
            return true;
        }
        let window = self.params.retx_window_frames;
        let retransmit = self.params.retransmit;
        let vis = &self.vis;
        // A reliable VI with retransmission sends a new frame only inside its window.
        // A read response waits for its turn as its VI's active send (`readreq`).
        let eligible = |s: &SendCtx| {
            s.wants_slot()
                && (s.response_to.is_none()
                    || vis.get(s.vi).is_some_and(|v| v.tx_active == Some(s.id)))
                && (!retransmit
                    || !s.reliable
                    || vis.get(s.vi).is_none_or(|v| v.tx.open(v.tx_seq, window)))
        };
        // Round robin: the first eligible send after the last one served, else the
        // first eligible one (one pass over the sends, in id order).
        let rr = self.send.tx.rr;
        let mut first = None;
        let mut pick = None;
        for (&id, s) in &self.send.ctxs {
            if !eligible(s) {
                continue;
            }
            if id > rr {
                pick = Some(id);
                break;
            }
            first = first.or(Some(id));
        }
        let pick = pick.or(first);
        // Not a miss: no send wants a TX slot now.
        let Some(id) = pick else {
            return false;
        };
        self.send.tx.rr = id;
        let ready = ready(io);
        self.assign_fragment(id, i, ready, io);
        true
    }

    /// The first VI (lowest number) with a go-back under way, and the frame it resends
    /// next.
    fn next_resend(&self) -> Option<(u16, u32)> {
        if !self.params.retransmit {
            return None;
        }
        self.vis
            .iter()
            .filter(|v| v.state() == ViState::Connected)
            .find_map(|v| v.tx.next_resend().map(|seq| (v.num, seq)))
    }

    /// Gives TX slot `i` to the resend of frame `seq` of VI `vi` (the send holding it is
    /// fetched again from host memory). A frame no send holds any more (its send failed
    /// and completed) is skipped and counted.
    fn assign_resend(&mut self, vi: u16, seq: u32, i: usize, ready: Time, io: &mut Io) {
        let Some(v) = self.vis.get_mut(vi) else {
            return self.bookkeeping_miss("VI of a resend");
        };
        let end = v.tx.resend.map_or(seq, |r| r.end);
        v.tx.resent();
        let found = v
            .send_order
            .iter()
            .copied()
            .find(|id| self.send.ctxs.get(id).is_some_and(|s| s.holds_sent(seq)));
        // May miss: the send that held the frame failed and completed (its frames are
        // not recoverable); counted, the receiver's gap ends the connection by timeout.
        let Some(id) = found else {
            self.stats.resends_unavailable += 1;
            tracing::warn!(target: "nic::tx", vi, seq, "frame to resend belongs to no send");
            return;
        };
        if let Some(v) = self.vis.get_mut(vi) {
            v.counters.frames_resent += 1;
        }
        self.stats.frames_resent += 1;
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context of a resend");
        };
        s.resend_started(io);
        let frag = seq.wrapping_sub(s.first_seq);
        // The last frame of the go-back asks for an Ack, so a receiver that has it
        // already answers at once.
        let ask = seq.wrapping_add(1) == end;
        tracing::debug!(target: "nic::tx", id = %id, frag, seq, slot = i, "fragment resent");
        self.fill_slot(id, frag, seq, Some(ask), i, ready, io);
    }

    fn assign_fragment(&mut self, id: SendId, i: usize, ready: Time, io: &mut Io) {
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context given a TX slot");
        };
        // May miss: the send's VI was destroyed meanwhile.
        let Some(vi) = self.vis.get_mut(s.vi) else {
            return;
        };
        let frag = s.assigned;
        let last = frag + 1 >= s.frags;
        let seq = vi.tx_seq;
        vi.tx_seq = vi.tx_seq.wrapping_add(1);
        vi.counters.frames_sent += 1;
        let vi_num = vi.num;
        if last && vi.tx_active == Some(id) {
            vi.tx_active = None;
        }
        if frag == 0 {
            s.first_seq = seq;
        }
        if last {
            s.last_seq = Some(seq);
        }
        s.assigned += 1;
        self.stats.data_frames_sent += 1;
        if s.response_to.is_some() {
            self.stats.read_response_frames_sent += 1;
        } else if s.is_read_request() {
            self.stats.read_requests_sent += 1;
        }
        if last {
            self.next_read_response(vi_num);
        }
        self.fill_slot(id, frag, seq, None, i, ready, io);
    }

    /// Fills TX slot `i` with fragment `frag` (number `seq`) of send `id`: its headers,
    /// then its payload fetched from host memory. `resend`: `Some(ask)` for a resend
    /// (`ask`: set `ACK_REQ`), `None` for the first sending.
    #[allow(clippy::too_many_arguments)]
    fn fill_slot(
        &mut self,
        id: SendId,
        frag: u32,
        seq: u32,
        resend: Option<bool>,
        i: usize,
        ready: Time,
        io: &mut Io,
    ) {
        let (mac, dst) = (self.params.mac, self.slot_addr(i));
        let n = self.send.tx.slots.len();
        let ask_every = (self.params.retx_window_frames / 4).max(1);
        let retransmit = self.params.retransmit;
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context of a TX slot being filled");
        };
        let per = u64::from(self.params.fragment_payload);
        let off = u64::from(frag) * per;
        // An RDMA read request carries no payload (`msg_len` says how much to read).
        let request = s.is_read_request();
        let len = if request {
            0
        } else {
            (s.len - off.min(s.len)).min(per)
        };
        let last = frag + 1 >= s.frags;
        let mut mark = match resend {
            None => s.frag_mark,
            Some(_) => io.now(),
        };
        if resend.is_none() {
            span(io, s.msg, "tx slot wait", &mut mark);
        }
        let desc = s.desc.as_ref();
        let control = desc.map_or(Control::empty(), |d| d.control);
        let mut flags = WireFlags::empty();
        flags.set(WireFlags::FIRST, off == 0);
        flags.set(WireFlags::LAST, last);
        flags.set(WireFlags::IMMEDIATE, control.contains(Control::IMMEDIATE));
        let ack_req = match resend {
            Some(ask) => ask,
            None => retransmit && s.reliable && TxWindow::asks_ack(seq, ask_every),
        };
        flags.set(WireFlags::ACK_REQ, ack_req && !last);
        let address = desc.and_then(|d| d.address);
        let hdr = WireHeaderRepr {
            op: if s.response_to.is_some() {
                WireOp::RdmaReadResponse
            } else if request {
                WireOp::RdmaReadRequest
            } else if s.op == Op::RdmaWrite {
                WireOp::RdmaWrite
            } else {
                WireOp::Send
            },
            flags,
            dst_vi: s.peer_vi,
            src_vi: s.vi,
            seq,
            msg_len: u32::try_from(s.len).unwrap_or(u32::MAX),
            frag_offset: u32::try_from(off).unwrap_or(u32::MAX),
            frag_len: u16::try_from(len).unwrap_or(u16::MAX),
            remote_va: address.map_or(0, |a| a.remote_va),
            remote_handle: address.map_or(MemHandle::NULL, |a| a.remote_handle),
            immediate: desc.map_or(0, |d| d.immediate),
        };
        let mut data = self.send.tx.spare.take();
        headers_into(&mut data, mac, s.peer_mac, &hdr);
        let frame_len = u32::try_from(data.len() as u64 + len).unwrap_or(u32::MAX);
        self.send.tx.mover.push(Run {
            bytes: data.len() as u64,
            ready,
            tag: TxRun {
                slot: i,
                dst,
                data,
                fifo: 0,
            },
        });
        self.send.tx.slots[i] = Some(TxSlot {
            msg: s.msg,
            kind: SlotKind::Data {
                send: id,
                seq,
                resend: resend.is_some(),
            },
            frame_len,
            runs: 1,
            dmas: 0,
            issued_all: len == 0,
            poisoned: false,
            mark,
            last_dma: None,
            handed: false,
        });
        if len > 0 {
            self.send.tx.fetch = Some(Fetch {
                send: id,
                slot: i,
                next: off,
                start: off,
                end: off + len,
            });
        } else if resend.is_none() {
            if let Some(s) = self.send.ctxs.get_mut(&id) {
                s.frag_mark = io.now();
            }
        }
        self.send.tx.next_assign = (i + 1) % n;
        if resend.is_none() {
            self.stats.payload_bytes_sent += len;
        }
        tracing::trace!(target: "nic::tx", id = %id, frag, slot = i, len, seq, "fragment gets a TX slot");
    }
}
