//! The send front end's second half: the descriptor's decode and format check
//! (`descriptor decode`, `descriptor_decode_cycles`), then the translation of its data
//! segments (`buffer translate`, `LocalRead` with the VI's tag; `LocalWrite` for an RDMA
//! read, whose data lands there), after which the descriptor's fragments can be fetched
//! (`txdata`; an RDMA read sends one request frame). Errors found here complete the
//! descriptor at once (see `tx`): an RDMA read on an engine without RDMA read
//! (`EngineParams::rdma_read` false) or on an unreliable VI is a `FORMAT_ERROR`.

use super::ids::SendId;
use super::io::{span, Io};
use super::unit::outstanding::AttFor;
use super::unit::pieces::SegPieces;
use super::unit::send::{FrontStep, SendStage};
use super::Engine;
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use via_abi::wire_header::fragment_count_of;
use via_abi::{DescriptorRepr, MemHandle, Op, Status, WorkQueue};

impl Engine {
    /// The decode time of a send descriptor is over: check it and translate its buffers.
    pub(crate) fn send_decoded(&mut self, id: SendId, io: &mut Io, ram: &mut BufferRam) {
        let ptag = match self.send.ctxs.get(&id) {
            Some(s) => self.vis.ptag(s.vi),
            None => return self.bookkeeping_miss("send context of a descriptor decode"),
        };
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context of a descriptor decode");
        };
        span(io, s.msg, "descriptor decode", &mut s.mark);
        let desc = match DescriptorRepr::parse(&s.desc_bytes[..]) {
            Ok(d) => d,
            Err(_) => {
                s.status |= Status::FORMAT_ERROR;
                self.send_ready(id, io, ram);
                return;
            }
        };
        if let Err(f) = desc.validate(WorkQueue::Send) {
            s.status |= f.status();
        }
        let read = desc.control.op() == Op::RdmaRead;
        // RDMA read: only on an engine that implements it, and (VIA 1.0) only on
        // reliable VIs; otherwise the descriptor is malformed for this VI.
        if read && !(self.params.rdma_read && s.reliable) {
            s.status |= Status::FORMAT_ERROR;
        }
        if s.flushed_in_front() {
            s.status |= Status::FLUSHED;
        }
        s.op = desc.control.op();
        s.len = u64::from(desc.length);
        // An RDMA read sends one request frame; its data comes back in the response.
        s.frags = if read {
            1
        } else {
            fragment_count_of(desc.length, self.params.fragment_payload)
        };
        let segs: Vec<(usize, u64, MemHandle, u32)> = desc
            .data
            .iter()
            .enumerate()
            .filter(|(_, d)| d.length > 0)
            .map(|(i, d)| (i, d.local_va, d.local_handle, d.length))
            .collect();
        s.seg_pieces = vec![SegPieces::default(); desc.data.len()];
        s.desc = Some(desc);
        if s.status.is_error() {
            self.send_ready(id, io, ram);
            return;
        }
        s.set_front(FrontStep::BufTranslate, io);
        s.translating = segs.len();
        let msg = s.msg;
        if segs.is_empty() {
            self.send_buffers_translated(id, io, ram);
            return;
        }
        // An RDMA read's data segments are where its data lands: written, not read.
        let access = local_access(read);
        for (i, va, handle, len) in segs {
            self.outstanding.translate(
                io,
                AttFor::SendBuf { send: id, seg: i },
                msg,
                handle,
                va,
                u64::from(len),
                access,
                ptag,
            );
        }
    }

    /// The ATT answered for data segment `seg` of a send descriptor.
    pub(crate) fn send_buf_translated(
        &mut self,
        id: SendId,
        seg: usize,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context of a buffer translation");
        };
        match result {
            Ok(p) => {
                if let Some(slot) = s.seg_pieces.get_mut(seg) {
                    *slot = SegPieces::new(p);
                }
            }
            Err(e) => s.status |= e.status(local_access(s.op == Op::RdmaRead)),
        }
        s.translating = s.translating.saturating_sub(1);
        if s.translating == 0 {
            self.send_buffers_translated(id, io, ram);
        }
    }

    fn send_buffers_translated(&mut self, id: SendId, io: &mut Io, ram: &mut BufferRam) {
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context whose buffers were translated");
        };
        span(io, s.msg, "buffer translate", &mut s.mark);
        if s.status.is_error() {
            self.send_ready(id, io, ram);
            return;
        }
        // A flushed send carries DESCRIPTOR_FLUSHED, an error: it never gets here.
        debug_assert!(!s.flushed_in_front(), "a flushed send reached its data");
        s.set_stage(
            SendStage::Sending {
                cut: false,
                acked: false,
            },
            io,
        );
        s.frag_mark = s.mark;
        self.tx_pump(io, ram);
    }
}

/// The ATT access of a send descriptor's data segments: `LocalWrite` for an RDMA read
/// (its data lands there), `LocalRead` otherwise.
fn local_access(read: bool) -> AccessKind {
    if read {
        AccessKind::LocalWrite
    } else {
        AccessKind::LocalRead
    }
}
