//! The receive path's data placement: per-VI message reassembly, RDMA-write placement,
//! and the plan of where a frame's payload goes (chunks and host pages).
//!
//! Checks of a data frame, in order (after the header check): the destination VI exists
//! (`rx_no_vi`) and is connected to the frame's source MAC and VI (`rx_not_connected`);
//! its sequence number is the next expected (`rx_sequence_errors`); it continues its
//! message: FIRST starts one, any other fragment must have the message's op and length
//! and start where the previous one ended (`rx_fragment_errors`). A mismatch is counted
//! and reported, never placed: the frame is dropped and its message fails. A reliable VI
//! with `EngineParams::retransmit` instead drops a duplicate (`rx_duplicates`; a LAST or
//! ACK_REQ one repeats the last Ack) and a frame after a gap (`rx_out_of_order`; one
//! go-back Nak naming the expected frame per gap), and its message goes on.
//!
//! * **RDMA write**: the VI must accept RDMA writes, then the ATT translates
//!   `remote_va + frag_offset` for `frag_len` bytes with access `RdmaWrite` and the VI's
//!   protection tag (bounds, RDMA-write enable, tag: span `remote translate`). A refusal
//!   writes no byte (`rx_protection_errors`, `RDMA_PROTECTION_ERROR`). No receive
//!   descriptor, no status write, unless the message carries immediate data: then it
//!   consumes a receive descriptor whose status reports `RemoteRdmaWrite`.
//! * **Send**: the first fragment takes the head receive descriptor of the VI (posted by
//!   receive doorbells; none: `rx_no_descriptor`), which is translated, read (64 bytes,
//!   more if `seg_count` needs), checked, and whose data segments are translated
//!   (`LocalWrite`; spans `recv descriptor translate`, `recv descriptor DMA read`, `recv
//!   descriptor decode`, `recv buffer translate`). A message longer than its buffers is a
//!   `LENGTH_ERROR`. Fragments are scattered over the data segments in order. With
//!   `recv_descriptor_per_frame`, every later fragment reads and translates the
//!   descriptor again before its bytes are placed (the receive path keeps no copy).
//!
//! * **RDMA read response**: placed like a send, scattered over the data segments of
//!   the requester's read descriptor (translated `LocalWrite` when it was decoded),
//!   which the first fragment finds by the request's sequence number (`readresp`).
//! * **RDMA read request**: after the sequence check it goes to `readreq`.
//!
//! The payload's way into host memory is in `rxdrain`, the receiver's errors in
//! `rxerror`, receive descriptors in `recvdesc`.

use super::io::{span, Io};
use super::unit::outstanding::{pages_for, AttFor};
use super::unit::pieces::SegPieces;
use super::unit::recv::{Chunk, RecvDesc, RxMessage, RxStage, RxState};
use super::unit::retx::{arrival, Arrival};
use super::unit::send::DESC_HEAD;
use super::unit::vi::PostedRecv;
use super::{Engine, EngineWake};
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use std::collections::VecDeque;
use via_abi::wire_header::{WireFlags, WireHeaderRepr, WireOp};
use via_abi::{DataSegmentRepr, Status};

impl Engine {
    /// A data frame passed the header check.
    pub(crate) fn rx_data(&mut self, io: &mut Io, ram: &mut BufferRam) {
        // The header check stored the frame's header just before calling this.
        let Some((h, src, msg)) = self
            .recv
            .front
            .cur
            .as_ref()
            .and_then(|w| Some((w.hdr?, w.src, w.frame.msg)))
        else {
            return self.bookkeeping_miss("header of a data frame in the front end");
        };
        let n = h.dst_vi;
        if self.vis.get(n).is_none() {
            self.stats.rx_no_vi += 1;
            self.rx_release(io);
            return;
        }
        if !self.vis.is_peer(n, src, h.src_vi) {
            self.stats.rx_not_connected += 1;
            self.rx_release(io);
            return;
        }
        // Checked just above (`rx_no_vi`).
        let Some(vi) = self.vis.get_mut(n) else {
            return self.bookkeeping_miss("VI of a data frame");
        };
        if self.params.retransmit && vi.reliable() {
            match arrival(h.seq, vi.rx_seq) {
                Arrival::InOrder => vi.rxa.in_order(),
                Arrival::Duplicate => {
                    // Already received: place nothing; a resend of a LAST or ACK_REQ
                    // frame means the sender lacks an Ack, so repeat the last one.
                    vi.counters.rx_duplicates += 1;
                    self.stats.rx_duplicates += 1;
                    let again = h.flags.intersects(WireFlags::LAST | WireFlags::ACK_REQ);
                    let acked = vi.rxa.acked;
                    if again {
                        self.send_ack(n, acked, Status::empty(), msg, io);
                    }
                    self.rx_release(io);
                    return;
                }
                Arrival::Gap => {
                    // Frames before it were lost: drop it, ask once for a go-back; the
                    // message being received waits for the resent fragment.
                    vi.counters.rx_out_of_order += 1;
                    self.stats.rx_out_of_order += 1;
                    let expected = vi.rx_seq;
                    if vi.rxa.gap(expected) {
                        self.send_goback_nak(n, expected, msg, io);
                    }
                    self.rx_release(io);
                    return;
                }
            }
        }
        if h.seq != vi.rx_seq {
            tracing::warn!(target: "nic::rx", vi = n, expected = vi.rx_seq, got = h.seq, frag_offset = h.frag_offset, "frame out of sequence: its message fails");
            vi.counters.rx_sequence_errors += 1;
            self.stats.rx_sequence_errors += 1;
            vi.rx_seq = h.seq.wrapping_add(1);
            self.rx_error(
                n,
                h.seq,
                Status::TRANSPORT_ERROR,
                Some(Status::TRANSPORT_ERROR),
                true,
                io,
                ram,
            );
            self.rx_release(io);
            return;
        }
        vi.rx_seq = vi.rx_seq.wrapping_add(1);
        vi.counters.frames_received += 1;
        if h.op == WireOp::RdmaReadRequest {
            self.read_request(h, msg, io, ram);
            return;
        }
        let (reliable, cur) = (vi.reliable(), vi.rx_cur);
        let last = h.flags.contains(WireFlags::LAST);
        let id = if h.flags.contains(WireFlags::FIRST) {
            if cur.is_some() {
                if let Some(v) = self.vis.get_mut(n) {
                    v.counters.rx_fragment_errors += 1;
                }
                self.abandon_rx(n, Status::TRANSPORT_ERROR, io);
            }
            let id = self.recv.new_id();
            self.recv.msgs.insert(
                id,
                RxMessage {
                    vi: n,
                    msg,
                    op: h.op,
                    len: h.msg_len,
                    next_off: 0,
                    immediate: h
                        .flags
                        .contains(WireFlags::IMMEDIATE)
                        .then_some(h.immediate),
                    desc: None,
                    stage: RxStage::Receiving { last_seen: false },
                    outstanding: 0,
                    last_seq: h.seq,
                    reliable,
                    mark: io.now(),
                    read: None,
                },
            );
            if h.op == WireOp::RdmaReadResponse {
                self.stats.read_response_frames_received += 1;
                let read = self.read_waiting(n, h.immediate, h.msg_len);
                if let Some(m) = self.recv.msgs.get_mut(&id) {
                    m.read = read;
                }
            }
            if let Some(vi) = self.vis.get_mut(n) {
                vi.rx_cur = Some(id);
            }
            id
        } else {
            let cont = cur.filter(|id| {
                self.recv.msgs.get(id).is_some_and(|m| {
                    m.op == h.op && m.len == h.msg_len && m.next_off == u64::from(h.frag_offset)
                })
            });
            if h.op == WireOp::RdmaReadResponse {
                self.stats.read_response_frames_received += 1;
            }
            match cont {
                Some(id) => id,
                None => {
                    if let Some(v) = self.vis.get_mut(n) {
                        v.counters.rx_fragment_errors += 1;
                    }
                    self.rx_error(
                        n,
                        h.seq,
                        Status::TRANSPORT_ERROR,
                        Some(Status::TRANSPORT_ERROR),
                        last,
                        io,
                        ram,
                    );
                    self.rx_release(io);
                    return;
                }
            }
        };
        // Inserted or found just above.
        let Some(m) = self.recv.msgs.get_mut(&id) else {
            return self.bookkeeping_miss("message of a data frame");
        };
        if m.is_failed() {
            if let Some(vi) = self.vis.get_mut(n) {
                vi.counters.rx_dropped_after_error += 1;
                if last {
                    vi.rx_cur = None;
                }
            }
            self.rx_check_complete(id, io);
            self.rx_release(io);
            return;
        }
        m.next_off += u64::from(h.frag_len);
        m.last_seq = h.seq;
        m.frame_taken(last);
        if self.params.retransmit && reliable {
            self.frame_accepted(n, h.seq, h.flags, msg, io);
        }
        if let Some(w) = self.recv.front.cur.as_mut() {
            w.target = Some(id);
        }
        self.rx_continue(io, ram);
    }

    /// Takes the frame in the front end to its next step.
    pub(crate) fn rx_continue(&mut self, io: &mut Io, ram: &mut BufferRam) {
        // The front end waits on its frame's message (from `rx_data`, or a descriptor
        // answer `rx_abandoned` let through): the frame's header and target are set.
        let Some((h, id)) = self
            .recv
            .front
            .cur
            .as_ref()
            .and_then(|w| Some((w.hdr?, w.target?)))
        else {
            return self.bookkeeping_miss("frame of a message the front end continues");
        };
        // `rx_data` or `rx_abandoned` has just found the message. (A miss still releases
        // the frame, so the front end goes on.)
        let Some(m) = self.recv.msgs.get(&id) else {
            self.bookkeeping_miss("message of the frame in the front end");
            self.rx_release(io);
            return;
        };
        if m.is_failed() {
            self.rx_release(io);
            return;
        }
        let (n, msg) = (m.vi, m.msg);
        let needs_desc = m.op == WireOp::Send || m.immediate.is_some();
        // Per-frame reading: a later frame of a send reads the descriptor again.
        let again = (needs_desc && self.params.recv_descriptor_per_frame && m.op == WireOp::Send)
            .then_some(m.desc.as_ref())
            .flatten()
            .filter(|d| d.ready && d.frame_seq != Some(h.seq))
            .map(|d| PostedRecv {
                va: d.va,
                handle: d.handle,
                msg,
                kept: None,
            });
        if needs_desc && (m.desc.is_none() || again.is_some()) {
            let posted = match again {
                Some(p) => Some(p),
                None => self.vis.get_mut(n).and_then(|v| v.recv_queue.pop_front()),
            };
            let Some(p) = posted else {
                if let Some(v) = self.vis.get_mut(n) {
                    v.counters.rx_no_descriptor += 1;
                }
                self.rx_error(
                    n,
                    h.seq,
                    Status::REMOTE_DESCRIPTOR_ERROR,
                    None,
                    h.flags.contains(WireFlags::LAST),
                    io,
                    ram,
                );
                self.rx_release(io);
                return;
            };
            self.recv.front.fsm.set(RxState::Descriptor, io);
            if let Some(mut kept) = p.kept {
                // Checked at post and kept on the card: decode the copy, no fetch.
                kept.frame_seq = Some(h.seq);
                if let Some(m) = self.recv.msgs.get_mut(&id) {
                    m.desc = Some(*kept);
                }
                io.wake_after(
                    self.params
                        .descriptor_decode_cycles
                        .max(sim_kernel::Cycles(1)),
                    EngineWake::RecvDescriptorDecoded { rx: id },
                );
                return;
            }
            if let Some(m) = self.recv.msgs.get_mut(&id) {
                m.desc = Some(RecvDesc {
                    va: p.va,
                    handle: p.handle,
                    frame_seq: Some(h.seq),
                    ..RecvDesc::default()
                });
            }
            let ptag = self.vis.ptag(n);
            self.outstanding.translate(
                io,
                AttFor::RecvDesc {
                    rx: id,
                    rest: false,
                },
                msg,
                p.handle,
                p.va,
                DESC_HEAD,
                AccessKind::LocalRead,
                ptag,
            );
            return;
        }
        if h.frag_len == 0 {
            self.rx_frame_done(io, ram);
            return;
        }
        if m.op == WireOp::RdmaWrite {
            let allowed = self.vis.get(n).is_some_and(|v| v.rdma_write);
            let va = h.remote_va.checked_add(u64::from(h.frag_offset));
            match (allowed, va) {
                (true, Some(va)) => {
                    self.recv.front.fsm.set(RxState::Translate, io);
                    let ptag = self.vis.ptag(n);
                    self.outstanding.translate(
                        io,
                        AttFor::Remote,
                        msg,
                        h.remote_handle,
                        va,
                        u64::from(h.frag_len),
                        AccessKind::RdmaWrite,
                        ptag,
                    );
                }
                _ => self.remote_refused(io, ram),
            }
            return;
        }
        if m.op == WireOp::RdmaReadResponse {
            let read = m.read;
            self.read_response_frame(read, h, io, ram);
            return;
        }
        // Send: scatter over the receive descriptor's data segments.
        let chunk = self.params.rx_chunk();
        let plan = m
            .desc
            .as_ref()
            .and_then(|d| Some((d.repr.as_ref()?, &d.seg_pieces)))
            .map(|(repr, pieces)| scatter_plan(&repr.data, pieces, &h, chunk))
            .unwrap_or_default();
        self.rx_start_drain(plan, io, ram);
    }

    /// The remote range of an RDMA write was translated (or refused).
    pub(crate) fn remote_translated(
        &mut self,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // May miss: the frame in the front end was released meanwhile.
        let Some(id) = self.recv.front.cur.as_ref().and_then(|w| w.target) else {
            return;
        };
        if self.rx_abandoned(id, io) {
            return;
        }
        // May miss: the frame in the front end was released meanwhile.
        let Some(w) = self.recv.front.cur.as_mut() else {
            return;
        };
        span(io, w.frame.msg, "remote translate", &mut w.mark);
        // Not a lookup: the ATT refused the range (counted in `remote_refused`).
        let Ok(pieces) = result else {
            self.remote_refused(io, ram);
            return;
        };
        let len = w.hdr.map_or(0, |h| u64::from(h.frag_len));
        let chunk = self.params.rx_chunk();
        let mut plan = std::collections::VecDeque::new();
        let mut o = 0;
        while o < len {
            let n = chunk.min(len - o);
            plan.push_back(Chunk {
                off: o,
                len: n,
                pages: pages_for(&pieces, o, n).unwrap_or_default(),
            });
            o += n;
        }
        self.rx_start_drain(plan, io, ram);
    }

    /// An RDMA write was refused (by the VI or the ATT): no byte is written.
    fn remote_refused(&mut self, io: &mut Io, ram: &mut BufferRam) {
        // May miss: the frame in the front end was released meanwhile.
        let Some(h) = self.recv.front.cur.as_ref().and_then(|w| w.hdr) else {
            return;
        };
        if let Some(v) = self.vis.get_mut(h.dst_vi) {
            v.counters.rx_protection_errors += 1;
        }
        tracing::debug!(target: "nic::rx", vi = h.dst_vi, va = h.remote_va, "RDMA write refused");
        let last = h.flags.contains(WireFlags::LAST);
        self.rx_error(
            h.dst_vi,
            h.seq,
            Status::RDMA_PROTECTION_ERROR,
            Some(Status::RDMA_PROTECTION_ERROR),
            last,
            io,
            ram,
        );
        self.rx_release(io);
    }
}

/// Where the payload of fragment `h` goes when its message is scattered over data
/// segments `segs` (translated as `pieces`, one list per segment) in order: chunks of at
/// most `chunk` bytes that never cross a segment.
pub(crate) fn scatter_plan(
    segs: &[DataSegmentRepr],
    pieces: &[SegPieces],
    h: &WireHeaderRepr,
    chunk: u64,
) -> VecDeque<Chunk> {
    let mut plan = VecDeque::new();
    let mut o = u64::from(h.frag_offset);
    let end = o + u64::from(h.frag_len);
    let mut seg_start = 0u64;
    for (i, seg) in segs.iter().enumerate() {
        let seg_end = seg_start + u64::from(seg.length);
        while o < end && o < seg_end {
            let n = chunk.min(end - o).min(seg_end - o);
            let pages = pieces
                .get(i)
                .and_then(|p| p.pages(o - seg_start, n))
                .unwrap_or_default();
            plan.push_back(Chunk {
                off: o - u64::from(h.frag_offset),
                len: n,
                pages,
            });
            o += n;
        }
        seg_start = seg_end;
    }
    plan
}
