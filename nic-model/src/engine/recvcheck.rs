//! The receive post check: what the doorbell unit does with a receive doorbell before it
//! takes it (when `EngineParams::check_recv_on_post` is on). It translates the posted
//! descriptor's first 64 bytes (`LocalRead`, the VI's tag), reads them by DMA (more if
//! `seg_count` needs), checks the format for the receive queue after
//! `descriptor_decode_cycles`, and translates every data segment (`LocalWrite`). A good
//! descriptor joins the VI's receive queue; a bad one completes at once with its VIA
//! status (format or protection error, done, operation Receive) written into it, and
//! never receives a message. Spans (the doorbell's trace id): `recv post translate`,
//! `recv post DMA read`, `recv post decode`, `recv post buffer translate`.
//!
//! A good descriptor is kept as checked (its bytes, its place, its buffers'
//! translations) with its place on the receive queue, as the card's on-chip copy: the
//! message that takes it only decodes it again and checks its length (`recv descriptor
//! decode`), with no second DMA read or translation. One check runs at a time; the
//! dispatcher stays busy (`checking`) meanwhile, so doorbells are taken in order, and
//! the VI's doorbell window reports the post as pending until the check ends.

use super::io::{span, Io};
use super::unit::completion::{JobKind, StatusJob};
use super::unit::doorbell::{DoorbellState, RecvCheck};
use super::unit::outstanding::{pages_for, AttFor, DmaFor};
use super::unit::pieces::SegPieces;
use super::unit::recv::RecvDesc;
use super::unit::send::{DESC_HEAD, STATUS_OFFSET};
use super::unit::vi::PostedRecv;
use super::{Engine, EngineWake};
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use pci_model::{DmaDone, DmaStatus};
use via_abi::descriptor::{descriptor_len, ControlSegment};
use via_abi::{CompletedOp, DescriptorRepr, Status, WorkQueue};

impl Engine {
    /// Starts checking the receive descriptor of doorbell `check`.
    pub(crate) fn start_recv_check(&mut self, check: RecvCheck, io: &mut Io) {
        let (msg, vi, handle, va) = (check.entry.msg, check.entry.vi, check.handle(), check.va());
        let ptag = self.vis.ptag(vi);
        self.doorbells.check = Some(check);
        self.doorbells.fsm.set(DoorbellState::Checking, io);
        self.outstanding.translate(
            io,
            AttFor::RecvCheck { rest: false },
            msg,
            handle,
            va,
            DESC_HEAD,
            AccessKind::LocalRead,
            ptag,
        );
    }

    fn check_span(&mut self, stage: &'static str, io: &mut Io) {
        if let Some(c) = self.doorbells.check.as_mut() {
            span(io, c.entry.msg, stage, &mut c.mark);
        }
    }

    /// The ATT answered for the checked descriptor.
    pub(crate) fn recv_check_translated(
        &mut self,
        rest: bool,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        self.check_span("recv post translate", io);
        let Some(c) = self.doorbells.check.as_mut() else {
            debug_assert!(false, "ATT answer for a receive check that is not running");
            self.stats.bookkeeping_misses += 1;
            return;
        };
        let pieces = match result {
            Ok(p) => p,
            // The descriptor itself cannot be read: nothing to write a status into.
            Err(_) if !rest => return self.recv_check_done(None, io, ram),
            Err(_) => return self.recv_check_done(Some(Status::PROTECTION_ERROR), io, ram),
        };
        let len = if rest {
            descriptor_len(ControlSegment::new_unchecked(&c.bytes[..]).seg_count()) as u64
                - DESC_HEAD
        } else {
            c.pieces.clone_from(&pieces);
            DESC_HEAD
        };
        match pages_for(&pieces, 0, len) {
            Some(pages) => self
                .outstanding
                .dma_read(io, DmaFor::RecvCheck { rest }, pages, len),
            None => self.recv_check_done(None, io, ram),
        }
    }

    /// A DMA read of the checked descriptor ended.
    pub(crate) fn recv_check_read(
        &mut self,
        rest: bool,
        done: &DmaDone,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        self.check_span("recv post DMA read", io);
        if done.status != DmaStatus::Ok {
            self.stats.dma_failures += 1;
            let status = rest.then_some(Status::PROTECTION_ERROR);
            return self.recv_check_done(status, io, ram);
        }
        let Some(c) = self.doorbells.check.as_mut() else {
            debug_assert!(false, "DMA data for a receive check that is not running");
            self.stats.bookkeeping_misses += 1;
            return;
        };
        c.bytes.extend_from_slice(&done.data);
        let need = descriptor_len(ControlSegment::new_unchecked(&c.bytes[..]).seg_count()) as u64;
        let (msg, vi, handle, va) = (c.entry.msg, c.entry.vi, c.handle(), c.va());
        if !rest {
            let follow = self.params.follow_read_links;
            self.doorbells
                .descriptor_read(follow, (vi, true), va, handle, &done.data);
        }
        if !rest && need > DESC_HEAD {
            let ptag = self.vis.ptag(vi);
            self.outstanding.translate(
                io,
                AttFor::RecvCheck { rest: true },
                msg,
                handle,
                va.saturating_add(DESC_HEAD),
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
            EngineWake::RecvCheckDecoded,
        );
    }

    /// The checked descriptor's decode time is over: check it, translate its buffers.
    pub(crate) fn recv_check_decoded(&mut self, io: &mut Io, ram: &mut BufferRam) {
        self.check_span("recv post decode", io);
        let Some(c) = self.doorbells.check.as_mut() else {
            debug_assert!(false, "decode of a receive check that is not running");
            self.stats.bookkeeping_misses += 1;
            return;
        };
        let repr = match DescriptorRepr::parse(&c.bytes[..]) {
            Ok(r) if r.validate(WorkQueue::Receive).is_ok() => r,
            _ => return self.recv_check_done(Some(Status::FORMAT_ERROR), io, ram),
        };
        let segs: Vec<_> = repr
            .data
            .iter()
            .enumerate()
            .filter(|(_, s)| s.length > 0)
            .map(|(i, s)| (i, s.local_va, s.local_handle, s.length))
            .collect();
        c.translating = segs.len();
        c.seg_pieces = vec![SegPieces::default(); repr.data.len()];
        c.repr = Some(repr);
        let (msg, vi) = (c.entry.msg, c.entry.vi);
        if segs.is_empty() {
            return self.recv_check_done(Some(Status::empty()), io, ram);
        }
        let ptag = self.vis.ptag(vi);
        for (seg, va, handle, len) in segs {
            self.outstanding.translate(
                io,
                AttFor::RecvCheckBuf { seg },
                msg,
                handle,
                va,
                u64::from(len),
                AccessKind::LocalWrite,
                ptag,
            );
        }
    }

    /// The ATT answered for a data segment of the checked descriptor.
    pub(crate) fn recv_check_buf_translated(
        &mut self,
        seg: usize,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let Some(c) = self.doorbells.check.as_mut() else {
            debug_assert!(
                false,
                "buffer translation for a receive check that is not running"
            );
            self.stats.bookkeeping_misses += 1;
            return;
        };
        match result {
            Ok(p) => {
                if let Some(slot) = c.seg_pieces.get_mut(seg) {
                    *slot = SegPieces::new(p);
                }
            }
            Err(e) => c.status |= e.status(AccessKind::LocalWrite),
        }
        c.translating = c.translating.saturating_sub(1);
        if c.translating == 0 {
            let status = c.status;
            self.check_span("recv post buffer translate", io);
            self.recv_check_done(Some(status), io, ram);
        }
    }

    /// The check ended: `Some(empty)` good, `Some(error)` bad (completed with that
    /// status), `None` unreadable (dropped, counted). The dispatcher is free again.
    fn recv_check_done(&mut self, verdict: Option<Status>, io: &mut Io, ram: &mut BufferRam) {
        let Some(c) = self.doorbells.check.take() else {
            return self.bookkeeping_miss("receive check that ended");
        };
        self.doorbells.taken(c.entry.vi);
        self.doorbells.fsm.set(DoorbellState::Idle, io);
        let e = c.entry;
        match verdict {
            Some(s) if !s.is_error() => {
                // The card keeps what it read and translated: the message that takes
                // this descriptor needs no second fetch.
                let kept = Box::new(RecvDesc {
                    va: e.rec.desc_va,
                    handle: e.rec.desc_handle,
                    pieces: c.pieces,
                    bytes: c.bytes,
                    repr: c.repr,
                    seg_pieces: c.seg_pieces,
                    translated: true,
                    ..RecvDesc::default()
                });
                if let Some(vi) = self.vis.get_mut(e.vi) {
                    vi.recv_queue.push_back(PostedRecv {
                        va: e.rec.desc_va,
                        handle: e.rec.desc_handle,
                        msg: e.msg,
                        kept: Some(kept),
                    });
                }
            }
            Some(err) => {
                self.stats.recv_post_refused += 1;
                if let Some(v) = self.vis.get_mut(e.vi) {
                    v.counters.rx_descriptor_errors += 1;
                }
                let status = (Status::DONE | err).with_completed_op(CompletedOp::Receive);
                let job = StatusJob {
                    msg: e.msg,
                    vi: e.vi,
                    kind: JobKind::Flush,
                    mark: io.now(),
                    va: e.rec.desc_va.wrapping_add(STATUS_OFFSET),
                    handle: e.rec.desc_handle,
                    bytes: status.bits().to_le_bytes().to_vec(),
                };
                self.flush_unfetched(job, io);
            }
            None => {
                self.stats.descriptors_unreachable += 1;
                self.stats.recv_post_refused += 1;
            }
        }
        self.kick_doorbells(io, ram);
    }
}
