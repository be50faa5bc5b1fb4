//! The send path's front end: one [`SendCtx`] per posted send descriptor, from its
//! doorbell to the point where its fragments can be fetched (`txdata`) and, later, its
//! completion (`complete`).
//!
//! ```text
//!  doorbell -> desc-translate -> desc-read [-> desc-translate/desc-read of the rest]
//!           -> decode -> buf-translate -> data (fragments, txdata) -> completing
//!           -> status-write (complete)
//! ```
//!
//! | phase (`tx` state machine) | span | what happens |
//! |---|---|---|
//! | `desc-translate` | `descriptor translate` | ATT: descriptor VA, 64 bytes, `LocalRead`, the VI's tag |
//! | `desc-read` | `descriptor DMA read` | DMA read of 64 bytes; more (translate + read) if `seg_count` needs |
//! | `decode` | `descriptor decode` | `descriptor_decode_cycles`; format check (`DescriptorRepr::validate`) |
//! | `buf-translate` | `buffer translate` | ATT: each non-empty data segment, `LocalRead` |
//! | `data` | (per fragment, see `txdata`) | fragments fetched and handed to the GEC |
//! | `completing` | `ack wait` (reliable) | waiting for the last `GecTxDone`, or the peer's Ack |
//! | `status-write` | `status write` | DMA write of the status word (descriptor offset 28) |
//!
//! Decode and buffer translation are in `txcheck`. Errors found in the front end complete the descriptor at once with their VIA status
//! bit: a malformed descriptor `FORMAT_ERROR` (also: not 64-byte aligned, RDMA read
//! when the engine does not implement it (the published card) or on an unreliable VI,
//! an unknown doorbell queue), a data segment that does
//! not translate `PROTECTION_ERROR`, a VI that is not connected `DESCRIPTOR_FLUSHED`.
//! A descriptor whose own first 64 bytes do not translate or read cannot be completed
//! (no status can be written): it is counted in `descriptors_unreachable`.

use super::ids::SendId;
use super::io::{span, Io};
use super::unit::doorbell::Entry;
use super::unit::outstanding::{pages_for, AttFor, DmaFor};
use super::unit::send::{FrontStep, SendCtx, SendStart, DESC_HEAD};
use super::unit::vi::ViState;
use super::{Engine, EngineWake};
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use pci_model::DmaDone;
use sim_kernel::Time;
use via_abi::descriptor::{descriptor_len, is_descriptor_aligned};
use via_abi::Status;

impl Engine {
    /// A send doorbell was dispatched: take the descriptor into processing.
    pub(crate) fn start_send(
        &mut self,
        e: Entry,
        mark: Time,
        bad_queue: bool,
        io: &mut Io,
        _ram: &mut BufferRam,
    ) {
        let id = self.send.new_id();
        // `dispatch` found the window's VI before calling this (a missing one is dropped
        // there, `doorbell_no_vi`).
        let Some(vi) = self.vis.get_mut(e.vi) else {
            return self.bookkeeping_miss("VI of a send doorbell");
        };
        vi.tx_active = Some(id);
        vi.send_order.push_back(id);
        let flush = vi.state() != ViState::Connected;
        let (ptag, reliable, peer_mac, peer_vi) = (vi.ptag, vi.reliable(), vi.peer_mac, vi.peer_vi);
        let mut status = Status::empty();
        if bad_queue || !is_descriptor_aligned(e.rec.desc_va) {
            status |= Status::FORMAT_ERROR;
        }
        self.stats.sends_started += 1;
        let ctx = SendCtx::new(
            SendStart {
                id,
                msg: e.msg,
                vi: e.vi,
                desc_va: e.rec.desc_va,
                desc_handle: e.rec.desc_handle,
                mark,
                status,
                flushed: flush,
                reliable,
                peer_mac,
                peer_vi,
            },
            io,
        );
        self.send.ctxs.insert(id, ctx);
        tracing::debug!(target: "nic::tx", id = %id, vi = e.vi, va = e.rec.desc_va, "send descriptor");
        self.outstanding.translate(
            io,
            AttFor::SendDesc {
                send: id,
                rest: false,
            },
            e.msg,
            e.rec.desc_handle,
            e.rec.desc_va,
            DESC_HEAD,
            AccessKind::LocalRead,
            ptag,
        );
    }

    /// The ATT answered for a send descriptor (`rest`: its bytes after the first 64).
    pub(crate) fn send_desc_translated(
        &mut self,
        id: SendId,
        rest: bool,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context of a descriptor translation");
        };
        span(io, s.msg, "descriptor translate", &mut s.mark);
        let pieces = match result {
            Ok(p) => p,
            Err(e) if rest => {
                s.status |= e.status(AccessKind::LocalRead);
                self.send_ready(id, io, ram);
                return;
            }
            Err(e) => {
                tracing::warn!(target: "nic::tx", id = %id, %e, "descriptor address does not translate");
                self.send_unreachable(id, io, ram);
                return;
            }
        };
        let len = if rest {
            let total = descriptor_len(s.seg_count());
            total as u64 - DESC_HEAD
        } else {
            s.desc_pieces.clone_from(&pieces);
            DESC_HEAD
        };
        s.set_front(FrontStep::DescRead, io);
        match pages_for(&pieces, 0, len) {
            Some(pages) => {
                self.outstanding
                    .dma_read(io, DmaFor::SendDesc { send: id, rest }, pages, len)
            }
            None => self.send_unreachable(id, io, ram),
        }
    }

    /// A DMA read of a send descriptor ended.
    pub(crate) fn send_desc_read(
        &mut self,
        id: SendId,
        rest: bool,
        done: &DmaDone,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return self.bookkeeping_miss("send context of a descriptor read");
        };
        span(io, s.msg, "descriptor DMA read", &mut s.mark);
        if done.status != pci_model::DmaStatus::Ok {
            self.stats.dma_failures += 1;
            if rest {
                s.status |= Status::PROTECTION_ERROR;
                self.send_ready(id, io, ram);
            } else {
                self.send_unreachable(id, io, ram);
            }
            return;
        }
        s.desc_bytes.extend_from_slice(&done.data);
        let need = descriptor_len(s.seg_count()) as u64;
        if !rest {
            let follow = self.params.follow_read_links;
            let key = (s.vi, false);
            self.doorbells
                .descriptor_read(follow, key, s.desc_va, s.desc_handle, &done.data);
        }
        if !rest && need > DESC_HEAD {
            s.set_front(FrontStep::DescTranslate, io);
            let (msg, handle, va, vi) = (s.msg, s.desc_handle, s.desc_va, s.vi);
            let ptag = self.vis.ptag(vi);
            self.outstanding.translate(
                io,
                AttFor::SendDesc {
                    send: id,
                    rest: true,
                },
                msg,
                handle,
                va.saturating_add(DESC_HEAD),
                need - DESC_HEAD,
                AccessKind::LocalRead,
                ptag,
            );
            return;
        }
        s.set_front(FrontStep::Decode, io);
        io.wake_after(
            self.params
                .descriptor_decode_cycles
                .max(sim_kernel::Cycles(1)),
            EngineWake::DescriptorDecoded { send: id },
        );
    }
}
