//! The send front end's second half: the descriptor's decode and format check
//! (`descriptor decode`, `descriptor_decode_cycles`), then the translation of its data
//! segments (`buffer translate`, `LocalRead` with the VI's tag), after which the
//! descriptor's fragments can be fetched (`txdata`). Errors found here complete the
//! descriptor at once (see `tx`).

use super::ids::SendId;
use super::io::{span, Io};
use super::unit::outstanding::AttFor;
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
        if desc.control.op() == Op::RdmaRead {
            s.status |= Status::FORMAT_ERROR;
        }
        if s.flushed_in_front() {
            s.status |= Status::FLUSHED;
        }
        s.op = desc.control.op();
        s.len = u64::from(desc.length);
        s.frags = fragment_count_of(desc.length, self.params.fragment_payload);
        let segs: Vec<(usize, u64, MemHandle, u32)> = desc
            .data
            .iter()
            .enumerate()
            .filter(|(_, d)| d.length > 0)
            .map(|(i, d)| (i, d.local_va, d.local_handle, d.length))
            .collect();
        s.seg_pieces = vec![Vec::new(); desc.data.len()];
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
        for (i, va, handle, len) in segs {
            self.outstanding.translate(
                io,
                AttFor::SendBuf { send: id, seg: i },
                msg,
                handle,
                va,
                u64::from(len),
                AccessKind::LocalRead,
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
                    *slot = p;
                }
            }
            Err(e) => s.status |= e.status(AccessKind::LocalRead),
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
