//! The receive path's front end: frames from the GEC are taken one at a time, their
//! headers read out of the RX buffer and checked, and then handed to the VI protocol
//! manager (control frames), the completion logic (acks), or the data placement
//! (`rxdata`).
//!
//! ```text
//!  GecRxFrame --queue--> header check (14 words read + header_check_cycles)
//!     --> Ethernet dst = this card, EtherType VIA, VIA version 1, fragment fields
//!     --> op: Send / RdmaWrite / RDMA read request and response -> rxdata (a request
//!         then goes to readreq, a response is placed by readresp); Ack -> complete;
//!         Connect*/Disconnect -> connect
//!  the slot is released (GecRxRelease) as soon as the frame has left the RX buffer
//! ```
//!
//! The `rx` state machine: `idle`, `header-check`, `descriptor` (fetching a receive
//! descriptor), `translate` (remote RDMA range), `drain` (RX buffer -> Recv FIFO, one
//! word per clock). Spans (trace id the GEC gave the frame): `rx queue wait` (if the
//! front end was busy), `header check`, then the data placement's.

use super::frame::{self, RxDrop, HEADERS_LEN};
use super::io::{span, Io};
use super::unit::recv::{RxIn, RxState, RxWork};
use super::{Engine, EngineWake};
use gige_mac::{BufferRam, MacMsg};
use sim_kernel::{Cycles, MsgId};
use std::collections::VecDeque;
use via_abi::wire_header::WireOp;
use via_abi::{MacAddr, Status};

impl Engine {
    /// The GEC delivered a frame into RX buffer `slot`.
    pub(crate) fn rx_frame(&mut self, slot: u16, len: u32, msg: MsgId, io: &mut Io) {
        self.stats.rx_frames += 1;
        self.recv.front.queue.push_back(RxIn {
            slot,
            len,
            msg,
            at: io.now(),
        });
        self.rx_next(io);
    }

    /// Starts the header check of the next frame if the front end is free. The usual
    /// cases, a frame in progress or the front end idle with none waiting, are answered
    /// inline: [`Engine::start_rx_next`] would return at once or only set the state it
    /// is already in.
    #[inline]
    pub(crate) fn rx_next(&mut self, io: &mut Io) {
        let front = &self.recv.front;
        if front.cur.is_some() || (front.queue.is_empty() && front.fsm.state() == RxState::Idle) {
            return;
        }
        self.start_rx_next(io);
    }

    /// [`Engine::rx_next`] past its inline check.
    fn start_rx_next(&mut self, io: &mut Io) {
        if self.recv.front.cur.is_some() {
            return;
        }
        // Not a miss: no frame waits; the front end goes idle.
        let Some(frame) = self.recv.front.queue.pop_front() else {
            self.recv.front.fsm.set(RxState::Idle, io);
            return;
        };
        let mut mark = frame.at;
        span(io, frame.msg, "rx queue wait", &mut mark);
        self.recv.front.cur = Some(RxWork {
            frame,
            mark,
            hdr: None,
            src: MacAddr::default(),
            target: None,
            plan: VecDeque::new(),
            moving: 0,
        });
        self.recv.front.fsm.set(RxState::HeaderCheck, io);
        let words = super::fifo::words(HEADERS_LEN as u64);
        let wait = Cycles(words.saturating_add(self.params.header_check_cycles.0));
        io.wake_after(wait, EngineWake::HeaderChecked);
    }

    /// The frame in the front end is done: release its slot, take the next.
    pub(crate) fn rx_release(&mut self, io: &mut Io) {
        if let Some(w) = self.recv.front.cur.take() {
            io.to_gec(Cycles(1), MacMsg::GecRxRelease { slot: w.frame.slot });
        }
        self.rx_next(io);
    }

    /// The header of the frame in the front end has been read and compared.
    pub(crate) fn header_checked(&mut self, io: &mut Io, ram: &mut BufferRam) {
        // May miss: the frame in the front end was released meanwhile (its message abandoned).
        let Some(w) = self.recv.front.cur.as_mut() else {
            return;
        };
        span(io, w.frame.msg, "header check", &mut w.mark);
        let slot_len = self.layout.slot_bytes;
        let len = u64::from(w.frame.len).min(slot_len);
        // The frame's bytes (none if the slot is not in the RAM), in the kept buffer.
        let mut bytes = std::mem::take(&mut self.recv.front.frame_buf);
        bytes.resize(usize::try_from(len).unwrap_or(0), 0);
        let read = self.layout.rx_buffer(w.frame.slot).ok();
        if read.and_then(|a| ram.read(a, &mut bytes).ok()).is_none() {
            bytes.clear();
        }
        let parsed = match frame::parse(&bytes, self.params.mac) {
            Ok(p) => p,
            Err(e) => {
                match e {
                    RxDrop::NotForUs => self.stats.rx_not_for_us += 1,
                    RxDrop::EtherType => self.stats.rx_bad_ethertype += 1,
                    RxDrop::Malformed => self.stats.rx_malformed += 1,
                }
                tracing::debug!(target: "nic::rx", ?e, "frame dropped");
                self.recv.front.frame_buf = bytes;
                self.rx_release(io);
                return;
            }
        };
        w.hdr = Some(parsed.hdr);
        w.src = parsed.eth.src;
        let payload = bytes.get(parsed.payload_offset..).unwrap_or_default();
        let h = parsed.hdr;
        let src = parsed.eth.src;
        match h.op {
            WireOp::Send | WireOp::RdmaWrite => self.rx_data(io, ram),
            WireOp::RdmaReadRequest | WireOp::RdmaReadResponse if self.params.rdma_read => {
                self.rx_data(io, ram)
            }
            WireOp::Ack => {
                if self.vis.is_peer(h.dst_vi, src, h.src_vi) {
                    let status = Status::from_bits_retain(h.immediate);
                    let arrived = self
                        .recv
                        .front
                        .cur
                        .as_ref()
                        .map_or(io.now(), |w| w.frame.at);
                    self.ack_received(h.dst_vi, h.seq, status, arrived, io, ram);
                } else {
                    self.stats.rx_not_connected += 1;
                }
                self.rx_release(io);
            }
            WireOp::ConnectRequest
            | WireOp::ConnectAccept
            | WireOp::ConnectReject
            | WireOp::Disconnect => {
                let payload = payload.to_vec();
                self.control_received(h, src, &payload, io, ram);
                self.rx_release(io);
            }
            WireOp::Nak if self.params.retransmit => {
                if self.vis.is_peer(h.dst_vi, src, h.src_vi)
                    && self.vis.get(h.dst_vi).is_some_and(|v| v.reliable())
                {
                    self.goback_nak_received(h.dst_vi, h.seq, io, ram);
                } else {
                    self.stats.rx_not_connected += 1;
                }
                self.rx_release(io);
            }
            // Without retransmission a go-back Nak means nothing, and an engine without
            // RDMA read knows no read frames: dropped like an unknown op.
            WireOp::Nak
            | WireOp::RdmaReadRequest
            | WireOp::RdmaReadResponse
            | WireOp::Unknown(_) => {
                self.stats.rx_bad_op += 1;
                self.rx_release(io);
            }
        }
        self.recv.front.frame_buf = bytes;
    }
}
