//! Fetching the receive descriptor a message consumes (unless the post check kept it,
//! when only the decode and the length check are left): translate its first 64 bytes
//! (`LocalRead`, the VI's tag), read them by DMA (more if `seg_count` needs), check the
//! format for the receive queue, check the buffers can hold the message, translate its
//! data segments (`LocalWrite`). Spans (frame's trace id): `recv descriptor translate`,
//! `recv descriptor DMA read`, `recv descriptor decode`, `recv buffer translate`.
//!
//! Failures complete the descriptor with the local VIA status (when its status can be
//! written) and fail the message with `REMOTE_DESCRIPTOR_ERROR` for the sender:
//! unreachable descriptor (no local status), format error `FORMAT_ERROR`, buffers too
//! small `LENGTH_ERROR`, a buffer that does not translate `PROTECTION_ERROR`.

use super::ids::RxId;
use super::io::{span, Io};
use super::unit::outstanding::{pages_for, AttFor, DmaFor};
use super::unit::pieces::SegPieces;
use super::unit::send::DESC_HEAD;
use super::{Engine, EngineWake};
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use pci_model::{DmaDone, DmaStatus};
use via_abi::descriptor::{descriptor_len, ControlSegment};
use via_abi::wire_header::{WireFlags, WireOp};
use via_abi::{DescriptorRepr, Status, WorkQueue};

impl Engine {
    /// Whether message `id` is gone or failed meanwhile (e.g. the host disconnected its
    /// VI): then the frame waiting for it in the front end is dropped.
    pub(crate) fn rx_abandoned(&mut self, id: RxId, io: &mut Io) -> bool {
        if self.recv.msgs.get(&id).is_some_and(|m| !m.is_failed()) {
            return false;
        }
        if self
            .recv
            .front
            .cur
            .as_ref()
            .is_some_and(|w| w.target == Some(id))
        {
            self.rx_release(io);
        }
        true
    }

    fn recv_span(&mut self, stage: &'static str, io: &mut Io) {
        if let Some(w) = self.recv.front.cur.as_mut() {
            span(io, w.frame.msg, stage, &mut w.mark);
        }
    }

    /// The receive descriptor of the frame in the front end failed.
    fn recv_desc_failed(&mut self, local: Option<Status>, io: &mut Io, ram: &mut BufferRam) {
        // May miss: the frame in the front end was released meanwhile (its message abandoned).
        let Some(h) = self.recv.front.cur.as_ref().and_then(|w| w.hdr) else {
            return;
        };
        if let Some(v) = self.vis.get_mut(h.dst_vi) {
            v.counters.rx_descriptor_errors += 1;
        }
        let last = h.flags.contains(WireFlags::LAST);
        self.rx_error(
            h.dst_vi,
            h.seq,
            Status::REMOTE_DESCRIPTOR_ERROR,
            local,
            last,
            io,
            ram,
        );
        self.rx_release(io);
    }

    /// The ATT answered for the receive descriptor of message `id`.
    pub(crate) fn recv_desc_translated(
        &mut self,
        id: RxId,
        rest: bool,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, io) {
            return;
        }
        self.recv_span("recv descriptor translate", io);
        let pieces = match result {
            Ok(p) => p,
            Err(_) if rest => {
                return self.recv_desc_failed(Some(Status::PROTECTION_ERROR), io, ram)
            }
            Err(_) => {
                self.stats.descriptors_unreachable += 1;
                return self.recv_desc_failed(None, io, ram);
            }
        };
        let Some(d) = self.recv.msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return self.bookkeeping_miss("receive descriptor of a translation");
        };
        let len = if rest {
            descriptor_len(ControlSegment::new_unchecked(&d.bytes[..]).seg_count()) as u64
                - DESC_HEAD
        } else {
            d.pieces.clone_from(&pieces);
            DESC_HEAD
        };
        match pages_for(&pieces, 0, len) {
            Some(pages) => {
                self.outstanding
                    .dma_read(io, DmaFor::RecvDesc { rx: id, rest }, pages, len)
            }
            None => self.recv_desc_failed(None, io, ram),
        }
    }

    /// A DMA read of the receive descriptor of message `id` ended.
    pub(crate) fn recv_desc_read(
        &mut self,
        id: RxId,
        rest: bool,
        done: &DmaDone,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, io) {
            return;
        }
        self.recv_span("recv descriptor DMA read", io);
        if done.status != DmaStatus::Ok {
            self.stats.dma_failures += 1;
            if !rest {
                self.stats.descriptors_unreachable += 1;
                if let Some(d) = self.recv.msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) {
                    d.pieces.clear();
                }
            }
            let local = rest.then_some(Status::PROTECTION_ERROR);
            return self.recv_desc_failed(local, io, ram);
        }
        let (msg, n) = match self.recv.msgs.get(&id) {
            Some(m) => (m.msg, m.vi),
            None => return self.bookkeeping_miss("receive message of a descriptor read"),
        };
        let ptag = self.vis.ptag(n);
        let Some(d) = self.recv.msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return self.bookkeeping_miss("receive descriptor of a read");
        };
        d.bytes.extend_from_slice(&done.data);
        let need = descriptor_len(ControlSegment::new_unchecked(&d.bytes[..]).seg_count()) as u64;
        let (handle, va) = (d.handle, d.va);
        if !rest {
            let follow = self.params.follow_read_links;
            self.doorbells
                .descriptor_read(follow, (n, true), va, handle, &done.data);
        }
        if !rest && need > DESC_HEAD {
            let va = va.saturating_add(DESC_HEAD);
            self.outstanding.translate(
                io,
                AttFor::RecvDesc { rx: id, rest: true },
                msg,
                handle,
                va,
                need - DESC_HEAD,
                AccessKind::LocalRead,
                ptag,
            );
            return;
        }
        io.wake_after(
            self.params
                .descriptor_decode_cycles
                .max(sim_kernel::Cycles(1)),
            EngineWake::RecvDescriptorDecoded { rx: id },
        );
    }

    /// The decode time of the receive descriptor of message `id` is over.
    pub(crate) fn recv_decoded(&mut self, id: RxId, io: &mut Io, ram: &mut BufferRam) {
        if self.rx_abandoned(id, io) {
            return;
        }
        self.recv_span("recv descriptor decode", io);
        let Some(m) = self.recv.msgs.get_mut(&id) else {
            return self.bookkeeping_miss("receive message of a descriptor decode");
        };
        let (n, msg, op, len) = (m.vi, m.msg, m.op, m.len);
        let Some(d) = m.desc.as_mut() else {
            return self.bookkeeping_miss("receive descriptor of a decode");
        };
        let repr = match DescriptorRepr::parse(&d.bytes[..]) {
            Ok(r) if r.validate(WorkQueue::Receive).is_ok() => r,
            _ => return self.recv_desc_failed(Some(Status::FORMAT_ERROR), io, ram),
        };
        let segs: Vec<_> = repr
            .data
            .iter()
            .enumerate()
            .filter(|(_, s)| s.length > 0)
            .map(|(i, s)| (i, s.local_va, s.local_handle, s.length))
            .collect();
        let room = repr.data_length_sum();
        if !d.translated {
            d.seg_pieces = vec![SegPieces::default(); repr.data.len()];
        }
        d.repr = Some(repr);
        if op == WireOp::RdmaWrite {
            d.ready = true;
            return self.rx_continue(io, ram);
        }
        if room < u64::from(len) {
            if let Some(v) = self.vis.get_mut(n) {
                v.counters.rx_length_errors += 1;
            }
            return self.recv_desc_failed(Some(Status::LENGTH_ERROR), io, ram);
        }
        if d.translated {
            // Kept from the post check: its buffers are translated already.
            d.ready = true;
            return self.rx_continue(io, ram);
        }
        d.translating = segs.len();
        if segs.is_empty() {
            return self.recv_buffers_ready(id, io, ram);
        }
        let ptag = self.vis.ptag(n);
        for (i, va, handle, l) in segs {
            self.outstanding.translate(
                io,
                AttFor::RecvBuf { rx: id, seg: i },
                msg,
                handle,
                va,
                u64::from(l),
                AccessKind::LocalWrite,
                ptag,
            );
        }
    }

    /// The ATT answered for data segment `seg` of the receive descriptor of message `id`.
    pub(crate) fn recv_buf_translated(
        &mut self,
        id: RxId,
        seg: usize,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, io) {
            return;
        }
        let Some(d) = self.recv.msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return self.bookkeeping_miss("receive descriptor of a buffer translation");
        };
        match result {
            Ok(p) => {
                if let Some(slot) = d.seg_pieces.get_mut(seg) {
                    *slot = SegPieces::new(p);
                }
            }
            Err(e) => d.status |= e.status(AccessKind::LocalWrite),
        }
        d.translating = d.translating.saturating_sub(1);
        if d.translating == 0 {
            self.recv_buffers_ready(id, io, ram);
        }
    }

    fn recv_buffers_ready(&mut self, id: RxId, io: &mut Io, ram: &mut BufferRam) {
        self.recv_span("recv buffer translate", io);
        let Some(d) = self.recv.msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return self.bookkeeping_miss("receive descriptor whose buffers were translated");
        };
        if d.status.is_error() {
            let local = d.status;
            return self.recv_desc_failed(Some(local), io, ram);
        }
        d.ready = true;
        self.rx_continue(io, ram);
    }
}
