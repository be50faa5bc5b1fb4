//! Fetching the receive descriptor a message consumes: translate its first 64 bytes
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
use super::pending::{pages_for, span, AttFor, DmaFor};
use super::tx::DESC_HEAD;
use super::{Engine, EngineMsg, EngineWake};
use crate::att::{AccessKind, Piece, TranslateError};
use crate::msg::NicMsg;
use gige_mac::BufferRam;
use pci_model::{DmaDone, DmaStatus};
use sim_kernel::Ctx;
use via_abi::descriptor::{descriptor_len, ControlSegment};
use via_abi::wire_header::{WireFlags, WireOp};
use via_abi::{DescriptorRepr, Status, WorkQueue};

impl Engine {
    /// Whether message `id` is gone or failed meanwhile (e.g. the host disconnected its
    /// VI): then the frame waiting for it in the front end is dropped.
    pub(crate) fn rx_abandoned<M: EngineMsg>(&mut self, id: RxId, ctx: &mut Ctx<'_, M>) -> bool {
        if self.rx_msgs.get(&id).is_some_and(|m| !m.failed) {
            return false;
        }
        if self.rx.cur.as_ref().is_some_and(|w| w.target == Some(id)) {
            self.rx_release(ctx);
        }
        true
    }

    fn recv_span<M: EngineMsg>(&mut self, stage: &'static str, ctx: &mut Ctx<'_, M>) {
        if let Some(w) = self.rx.cur.as_mut() {
            span(ctx, w.frame.msg, stage, &mut w.mark);
        }
    }

    /// The receive descriptor of the frame in the front end failed.
    fn recv_desc_failed<M: EngineMsg>(
        &mut self,
        local: Option<Status>,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        let Some(h) = self.rx.cur.as_ref().and_then(|w| w.hdr) else {
            return;
        };
        if let Some(v) = self.vi_mut(h.dst_vi) {
            v.counters.rx_descriptor_errors += 1;
        }
        let last = h.flags.contains(WireFlags::LAST);
        self.rx_error(
            h.dst_vi,
            h.seq,
            Status::REMOTE_DESCRIPTOR_ERROR,
            local,
            last,
            ctx,
            ram,
        );
        self.rx_release(ctx);
    }

    /// The ATT answered for the receive descriptor of message `id`.
    pub(crate) fn recv_desc_translated<M: EngineMsg>(
        &mut self,
        id: RxId,
        rest: bool,
        result: Result<Vec<Piece>, TranslateError>,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, ctx) {
            return;
        }
        self.recv_span("recv descriptor translate", ctx);
        let pieces = match result {
            Ok(p) => p,
            Err(_) if rest => {
                return self.recv_desc_failed(Some(Status::PROTECTION_ERROR), ctx, ram)
            }
            Err(_) => {
                self.stats.descriptors_unreachable += 1;
                return self.recv_desc_failed(None, ctx, ram);
            }
        };
        let Some(d) = self.rx_msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return;
        };
        let len = if rest {
            descriptor_len(ControlSegment::new_unchecked(&d.bytes[..]).seg_count()) as u64
                - DESC_HEAD
        } else {
            d.pieces.clone_from(&pieces);
            DESC_HEAD
        };
        match pages_for(&pieces, 0, len) {
            Some(pages) => self.dma_read(ctx, DmaFor::RecvDesc { rx: id, rest }, pages, len),
            None => self.recv_desc_failed(None, ctx, ram),
        }
    }

    /// A DMA read of the receive descriptor of message `id` ended.
    pub(crate) fn recv_desc_read<M: EngineMsg>(
        &mut self,
        id: RxId,
        rest: bool,
        done: &DmaDone,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, ctx) {
            return;
        }
        self.recv_span("recv descriptor DMA read", ctx);
        if done.status != DmaStatus::Ok {
            self.stats.dma_failures += 1;
            if !rest {
                self.stats.descriptors_unreachable += 1;
                if let Some(d) = self.rx_msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) {
                    d.pieces.clear();
                }
            }
            let local = rest.then_some(Status::PROTECTION_ERROR);
            return self.recv_desc_failed(local, ctx, ram);
        }
        let (msg, n) = match self.rx_msgs.get(&id) {
            Some(m) => (m.msg, m.vi),
            None => return,
        };
        let ptag = self.vi_ptag(n);
        let Some(d) = self.rx_msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return;
        };
        d.bytes.extend_from_slice(&done.data);
        let need = descriptor_len(ControlSegment::new_unchecked(&d.bytes[..]).seg_count()) as u64;
        if !rest && need > DESC_HEAD {
            let (handle, va) = (d.handle, d.va.saturating_add(DESC_HEAD));
            self.translate(
                ctx,
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
        ctx.wake_after(
            self.params
                .descriptor_decode_cycles
                .max(sim_kernel::Cycles(1)),
            NicMsg::Engine(EngineWake::RecvDescriptorDecoded { rx: id }).into(),
        );
    }

    /// The decode time of the receive descriptor of message `id` is over.
    pub(crate) fn recv_decoded<M: EngineMsg>(
        &mut self,
        id: RxId,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, ctx) {
            return;
        }
        self.recv_span("recv descriptor decode", ctx);
        let Some(m) = self.rx_msgs.get_mut(&id) else {
            return;
        };
        let (n, msg, op, len) = (m.vi, m.msg, m.op, m.len);
        let Some(d) = m.desc.as_mut() else {
            return;
        };
        let repr = match DescriptorRepr::parse(&d.bytes[..]) {
            Ok(r) if r.validate(WorkQueue::Receive).is_ok() => r,
            _ => return self.recv_desc_failed(Some(Status::FORMAT_ERROR), ctx, ram),
        };
        let segs: Vec<_> = repr
            .data
            .iter()
            .enumerate()
            .filter(|(_, s)| s.length > 0)
            .map(|(i, s)| (i, s.local_va, s.local_handle, s.length))
            .collect();
        let room = repr.data_length_sum();
        d.seg_pieces = vec![Vec::new(); repr.data.len()];
        d.repr = Some(repr);
        if op == WireOp::RdmaWrite {
            d.ready = true;
            return self.rx_continue(ctx, ram);
        }
        if room < u64::from(len) {
            if let Some(v) = self.vi_mut(n) {
                v.counters.rx_length_errors += 1;
            }
            return self.recv_desc_failed(Some(Status::LENGTH_ERROR), ctx, ram);
        }
        d.translating = segs.len();
        if segs.is_empty() {
            return self.recv_buffers_ready(id, ctx, ram);
        }
        let ptag = self.vi_ptag(n);
        for (i, va, handle, l) in segs {
            self.translate(
                ctx,
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
    pub(crate) fn recv_buf_translated<M: EngineMsg>(
        &mut self,
        id: RxId,
        seg: usize,
        result: Result<Vec<Piece>, TranslateError>,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        if self.rx_abandoned(id, ctx) {
            return;
        }
        let Some(d) = self.rx_msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return;
        };
        match result {
            Ok(p) => {
                if let Some(slot) = d.seg_pieces.get_mut(seg) {
                    *slot = p;
                }
            }
            Err(e) => d.status |= e.status(AccessKind::LocalWrite),
        }
        d.translating = d.translating.saturating_sub(1);
        if d.translating == 0 {
            self.recv_buffers_ready(id, ctx, ram);
        }
    }

    fn recv_buffers_ready<M: EngineMsg>(
        &mut self,
        id: RxId,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        self.recv_span("recv buffer translate", ctx);
        let Some(d) = self.rx_msgs.get_mut(&id).and_then(|m| m.desc.as_mut()) else {
            return;
        };
        if d.status.is_error() {
            let local = d.status;
            return self.recv_desc_failed(Some(local), ctx, ram);
        }
        d.ready = true;
        self.rx_continue(ctx, ram);
    }
}
