//! RDMA read, responder side: a read request (wire op 9) accepted in sequence on a VI
//! is checked and its source translated, then answered by a **response**: a send
//! context without a host descriptor ([`SendCtx::response_to`]) whose one data segment
//! is the translated source, sent through the ordinary send data path (TX slots,
//! payload DMA reads into the Send FIFO, the GEC) as frames of op 10, numbered in this
//! VI's own sequence and so covered by its go-back-N window: a lost response frame is
//! fetched from host memory again and resent, as an RDMA write's would be.
//!
//! ```text
//!  request (in sequence) --> VI reliable and RDMA-read enabled? --no--> refused
//!    --> ATT: remote_va, msg_len, RdmaRead, the VI's tag  --refused--> refused
//!    --> Ack of the request; response context queued on the VI (one VI sends one
//!        message at a time: it waits while another send of the VI is being sent)
//!  refused: no byte read; Nak with RDMA_PROTECTION_ERROR, the VI enters `error`
//!  response done (its last frame acknowledged): removed, no status write; one that
//!  failed (its source DMA failed) sends the requester a Nak with its error bits
//! ```
//!
//! Span (trace id of the request frame, which is the requester's descriptor's):
//! `read translate` (the request's source translation, after `header check`); the
//! response's frames then record the send path's spans (`tx slot wait`, `payload DMA
//! read`, `tx buffer fill`, `frame handoff`) under the same id. The request's Ack,
//! which goes out beside the response, is traced under a fresh id of this card.

use super::io::{span, Io};
use super::unit::outstanding::AttFor;
use super::unit::pieces::SegPieces;
use super::unit::recv::RxState;
use super::unit::send::{SendCtx, SendStage, SendStart};
use super::unit::vi::ViState;
use super::Engine;
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use sim_kernel::MsgId;
use via_abi::wire_header::{fragment_count_of, WireHeaderRepr};
use via_abi::{Control, DataSegmentRepr, DescriptorRepr, MemHandle, Op, Status};

impl Engine {
    /// The frame in the front end is an RDMA read request `h` accepted in sequence on VI
    /// `h.dst_vi` (its sequence number is taken).
    pub(crate) fn read_request(
        &mut self,
        h: WireHeaderRepr,
        msg: MsgId,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let n = h.dst_vi;
        self.stats.read_requests_received += 1;
        // A request never arrives inside a message of its VI (the peer sends one at a
        // time): one that does ends that message.
        if let Some(v) = self.vis.get_mut(n).filter(|v| v.rx_cur.is_some()) {
            v.counters.rx_fragment_errors += 1;
        }
        self.abandon_rx(n, Status::TRANSPORT_ERROR, io);
        // The caller found the VI connected to the frame's sender.
        let Some(v) = self.vis.get(n) else {
            return self.bookkeeping_miss("VI of a read request");
        };
        let (reliable, allowed, ptag) = (v.reliable(), v.rdma_read, v.ptag);
        if self.params.retransmit && reliable {
            self.frame_accepted(n, h.seq, h.flags, msg, io);
        }
        if !reliable || !allowed {
            self.read_refused(io, ram);
            return;
        }
        self.recv.front.fsm.set(RxState::Translate, io);
        self.outstanding.translate(
            io,
            AttFor::ReadSource,
            msg,
            h.remote_handle,
            h.remote_va,
            u64::from(h.msg_len),
            AccessKind::RdmaRead,
            ptag,
        );
    }

    /// The ATT answered for the source of the read request in the front end.
    pub(crate) fn read_source_translated(
        &mut self,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // May miss: the frame in the front end was released meanwhile (its VI left
        // `connected`).
        let Some(w) = self.recv.front.cur.as_mut() else {
            return;
        };
        span(io, w.frame.msg, "read translate", &mut w.mark);
        let (Some(h), msg) = (w.hdr, w.frame.msg) else {
            return self.bookkeeping_miss("header of a read request being translated");
        };
        // Not a lookup: the ATT refused the range (bounds, RDMA-read enable, tag).
        let Ok(pieces) = result else {
            self.read_refused(io, ram);
            return;
        };
        let n = h.dst_vi;
        // May miss: the VI was destroyed or left `connected` while the ATT worked: the
        // request is dropped (its requester's read is flushed with its VI).
        let Some(v) = self.vis.get(n).filter(|v| v.state() == ViState::Connected) else {
            self.rx_release(io);
            return;
        };
        let (reliable, peer_mac, peer_vi) = (v.reliable(), v.peer_mac, v.peer_vi);
        // The request's Ack goes beside the response, not on the read's path: it is
        // traced under an id of its own.
        let ack_msg = self.new_msg();
        self.message_settled(n, h.seq, true, ack_msg, io);
        let id = self.send.new_id();
        let mut s = SendCtx::new(
            SendStart {
                id,
                msg,
                vi: n,
                desc_va: 0,
                desc_handle: MemHandle::NULL,
                mark: io.now(),
                status: Status::empty(),
                flushed: false,
                reliable,
                peer_mac,
                peer_vi,
            },
            io,
        );
        s.op = Op::RdmaRead;
        s.response_to = Some(h.seq);
        s.len = u64::from(h.msg_len);
        s.frags = fragment_count_of(h.msg_len, self.params.fragment_payload);
        // The source as the one data segment of a descriptor the card makes up; its
        // immediate field names the request in every response frame (IMMEDIATE clear).
        s.desc = Some(DescriptorRepr {
            control: Control::from_op(Op::RdmaRead),
            immediate: h.seq,
            length: h.msg_len,
            data: vec![DataSegmentRepr {
                local_va: h.remote_va,
                local_handle: h.remote_handle,
                length: h.msg_len,
            }],
            ..DescriptorRepr::default()
        });
        s.seg_pieces = vec![SegPieces::new(pieces)];
        s.set_stage(
            SendStage::Sending {
                cut: false,
                acked: false,
            },
            io,
        );
        self.send.ctxs.insert(id, s);
        if let Some(v) = self.vis.get_mut(n) {
            v.send_order.push_back(id);
        }
        tracing::debug!(target: "nic::tx", id = %id, vi = n, len = h.msg_len, "read response");
        self.next_read_response(n);
        self.rx_release(io);
    }

    /// The read request in the front end is refused: no byte is read; on a reliable VI
    /// the requester gets a Nak with `RDMA_PROTECTION_ERROR` and the VI enters `error`.
    fn read_refused(&mut self, io: &mut Io, ram: &mut BufferRam) {
        // May miss: the frame in the front end was released meanwhile.
        let Some((h, msg)) = self
            .recv
            .front
            .cur
            .as_ref()
            .and_then(|w| Some((w.hdr?, w.frame.msg)))
        else {
            return;
        };
        self.stats.read_requests_refused += 1;
        if let Some(v) = self.vis.get_mut(h.dst_vi) {
            v.counters.rx_protection_errors += 1;
        }
        tracing::debug!(target: "nic::rx", vi = h.dst_vi, va = h.remote_va, "RDMA read refused");
        self.message_settled(h.dst_vi, h.seq, false, msg, io);
        self.rx_error(
            h.dst_vi,
            h.seq,
            Status::RDMA_PROTECTION_ERROR,
            None,
            true,
            io,
            ram,
        );
        self.rx_release(io);
    }

    /// VI `n` sends no message now: its oldest read response waiting to be sent becomes
    /// the VI's active send (its doorbells wait meanwhile).
    pub(crate) fn next_read_response(&mut self, n: u16) {
        let Some(v) = self.vis.get(n) else {
            return;
        };
        if v.tx_active.is_some() {
            return;
        }
        let next = v.send_order.iter().copied().find(|id| {
            self.send
                .ctxs
                .get(id)
                .is_some_and(|s| s.response_to.is_some() && s.wants_slot())
        });
        if let (Some(id), Some(v)) = (next, self.vis.get_mut(n)) {
            v.tx_active = Some(id);
        }
    }
}
