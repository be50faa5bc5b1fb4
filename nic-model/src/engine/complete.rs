//! Completion: when a send descriptor is done, the order in which descriptors complete,
//! the status writes into host descriptors, acknowledgements received, and flushing.
//!
//! **When a send completes.** Unreliable VI: when the GEC reports its last frame sent
//! (`GecTxDone`). Reliable delivery (and reliable reception): when a peer's Ack covers
//! the message's last fragment, or at once with the error bits a Nak carries (e.g.
//! `RDMA_PROTECTION_ERROR`). Acks are cumulative: Ack(k) acknowledges every data frame up
//! to `k`, so it completes every waiting send of the VI whose last fragment is at or
//! before `k`, in posting order (a lost Ack is made up by the next); the VI's window base
//! (`TxWindow::una`) moves to `k + 1`, and an older Ack is a repeat (`acks_duplicate`).
//! Lost frames are recovered by retransmission (`retx`). An error Nak (or a failed
//! transmission) moves a reliable VI to `error`.
//!
//! **Order.** Descriptors of one work queue complete in posting order (VIA 1.0): a send
//! that is ready waits for the earlier ones of its VI before its status is written.
//!
//! **Status write.** One DMA write into the host descriptor (VIA 1.0 control segment):
//! a send writes its status word (offset 28: done, error bits, completed operation); a
//! receive writes length and status (offsets 24..32), and the immediate data before them
//! (offset 20) when the message carried it. The write goes through the translation made
//! when the descriptor was fetched; a descriptor flushed without being fetched has its
//! status word translated first. Span `status write`.

use super::ids::{JobId, SendId};
use super::io::{span, span_to, Io};
use super::unit::completion::{completed_op, JobKind, StatusJob};
use super::unit::outstanding::{pages_for, AttFor, DmaFor};
use super::unit::retx::AckVerdict;
use super::unit::send::{SendStage, STATUS_OFFSET};
use super::unit::vi::ViState;
use super::Engine;
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use pci_model::{DmaDone, DmaStatus};
use sim_kernel::Time;
use via_abi::{CompletedOp, Status};

impl Engine {
    /// Checks whether send context `id` has finished sending (and, reliable, has its
    /// acknowledgement); if so it becomes ready to complete.
    pub(crate) fn send_progress(&mut self, id: SendId, io: &mut Io, ram: &mut BufferRam) {
        // May miss: the send was flushed and removed (its VI left `connected`) while this event was under way.
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return;
        };
        match s.stage() {
            SendStage::Sending { cut, acked } => {
                let all_out = s.transmitted >= s.assigned
                    && (s.assigned >= s.frags || cut)
                    && s.resending == 0;
                if !all_out {
                    return;
                }
                if s.reliable && !cut && !acked && !s.status.is_error() {
                    s.set_stage(SendStage::AwaitAck, io);
                    return;
                }
            }
            // A Nak or a flush (an error bit) ends the wait; the Ack of the last
            // fragment ends it in `ack_received`, an RDMA read's landed data in
            // `read_landed`.
            SendStage::AwaitAck | SendStage::AwaitData => {
                if !s.status.is_error() {
                    return;
                }
            }
            // Not there yet (the front end finishes on its own) or already done.
            SendStage::Front { .. } | SendStage::AwaitTurn { .. } | SendStage::StatusWrite => {
                return
            }
        }
        self.send_ready(id, io, ram);
    }

    /// Send context `id` may complete once the earlier ones of its VI have (an RDMA read
    /// once its data has also landed).
    pub(crate) fn send_ready(&mut self, id: SendId, io: &mut Io, ram: &mut BufferRam) {
        if let Some(s) = self.send.ctxs.get_mut(&id) {
            if s.awaits_read_data() {
                s.set_stage(SendStage::AwaitData, io);
                return;
            }
        }
        self.send_done(id, true, io, ram);
    }

    /// Send context `id` is done (`reachable`: its status can be written) and waits for
    /// the earlier ones of its VI.
    fn send_done(&mut self, id: SendId, reachable: bool, io: &mut Io, ram: &mut BufferRam) {
        self.send_finished(id, reachable, io);
        self.kick_doorbells(io, ram);
    }

    /// [`Engine::send_done`] without the doorbell kick (which every handler's settle
    /// does anyway).
    pub(crate) fn send_finished(&mut self, id: SendId, reachable: bool, io: &mut Io) {
        // May miss: as in `send_progress`, a send flushed and removed meanwhile.
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return;
        };
        s.set_stage(SendStage::AwaitTurn { reachable }, io);
        let vi = s.vi;
        if let Some(v) = self.vis.get_mut(vi) {
            if v.tx_active == Some(id) {
                v.tx_active = None;
            }
        }
        self.next_read_response(vi);
        self.complete_in_order(vi, io);
    }

    /// Send context `id` cannot be completed: its descriptor is unreachable.
    pub(crate) fn send_unreachable(&mut self, id: SendId, io: &mut Io, ram: &mut BufferRam) {
        self.stats.descriptors_unreachable += 1;
        self.send_done(id, false, io, ram);
    }

    /// Writes the status of the ready sends at the head of VI `vi`'s order.
    fn complete_in_order(&mut self, vi: u16, io: &mut Io) {
        loop {
            // Not a miss: the VI's completion order is empty (or the VI is gone): nothing more to complete.
            let Some(&id) = self.vis.get(vi).and_then(|v| v.send_order.front()) else {
                return;
            };
            // A send context is removed only after it left its VI's order (below, and
            // at its status write).
            let Some(s) = self.send.ctxs.get_mut(&id) else {
                self.bookkeeping_miss("send context in a VI's completion order");
                if let Some(v) = self.vis.get_mut(vi) {
                    v.send_order.pop_front();
                }
                continue;
            };
            // Not a miss: the send at the head of the VI's order is not done yet; the
            // later ones wait for it.
            let SendStage::AwaitTurn { reachable } = s.stage() else {
                return;
            };
            if let Some(v) = self.vis.get_mut(vi) {
                v.send_order.pop_front();
            }
            if !reachable {
                self.send.ctxs.remove(&id);
                continue;
            }
            if let Some(request) = s.response_to {
                // An RDMA read response has no host descriptor: nothing to write. One
                // that failed (its source could not be read, its VI broke) tells the
                // requester, whose read completes with the error bits.
                let (err, msg) = (s.status.errors(), s.msg);
                self.stats.read_responses_completed += 1;
                self.send.ctxs.remove(&id);
                let connected = self
                    .vis
                    .get(vi)
                    .is_some_and(|v| v.state() == ViState::Connected);
                if err.is_error() && connected {
                    self.send_ack(vi, request, err, msg, io);
                }
                continue;
            }
            span(io, s.msg, "completion order wait", &mut s.mark);
            s.set_stage(SendStage::StatusWrite, io);
            let status = (Status::DONE | s.status).with_completed_op(completed_op(s.op));
            let job = StatusJob {
                msg: s.msg,
                vi,
                kind: JobKind::Send { send: id },
                mark: s.mark,
                va: s.desc_va.wrapping_add(STATUS_OFFSET),
                handle: s.desc_handle,
                bytes: status.bits().to_le_bytes().to_vec(),
            };
            let pieces = s.desc_pieces.clone();
            self.write_status(job, &pieces, STATUS_OFFSET, io);
        }
    }

    /// Issues the DMA write of `job` through `pieces`, the translation of the descriptor
    /// from its start (`offset`: of the first status byte in it).
    pub(crate) fn write_status(
        &mut self,
        job: StatusJob,
        pieces: &[Piece],
        offset: u64,
        io: &mut Io,
    ) {
        let Some(pages) = pages_for(pieces, offset, job.bytes.len() as u64) else {
            self.stats.descriptors_unreachable += 1;
            self.status_done(job, false, io);
            return;
        };
        let bytes = job.bytes.clone();
        let jid = self.completion.insert(job);
        self.outstanding
            .dma_write(io, DmaFor::Status { job: jid }, pages, bytes);
    }

    /// Completes a receive descriptor that was never fetched (flush): translate its
    /// status word, then write it.
    pub(crate) fn flush_unfetched(&mut self, job: StatusJob, io: &mut Io) {
        let (msg, handle, va, len) = (job.msg, job.handle, job.va, job.bytes.len() as u64);
        let ptag = self.vis.ptag(job.vi);
        let jid = self.completion.insert(job);
        self.outstanding.translate(
            io,
            AttFor::StatusOnly { job: jid },
            msg,
            handle,
            va,
            len,
            AccessKind::LocalWrite,
            ptag,
        );
    }

    /// The status word of a flushed descriptor was translated.
    pub(crate) fn status_translated(
        &mut self,
        jid: JobId,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
    ) {
        let Some(job) = self.completion.take(jid) else {
            return self.bookkeeping_miss("status job of a translation");
        };
        match result {
            Ok(pieces) => self.write_status(job, &pieces, 0, io),
            Err(_) => {
                self.stats.descriptors_unreachable += 1;
                self.status_done(job, false, io);
            }
        }
    }

    /// A status DMA write ended.
    pub(crate) fn status_written(&mut self, jid: JobId, done: &DmaDone, io: &mut Io) {
        let Some(job) = self.completion.take(jid) else {
            return self.bookkeeping_miss("status job of a write");
        };
        let ok = done.status == DmaStatus::Ok;
        if !ok {
            self.stats.dma_failures += 1;
            self.stats.descriptors_unreachable += 1;
        }
        self.status_done(job, ok, io);
    }

    fn status_done(&mut self, mut job: StatusJob, written: bool, io: &mut Io) {
        span(io, job.msg, "status write", &mut job.mark);
        if written {
            self.stats.status_writes += 1;
        }
        match job.kind {
            JobKind::Send { send: id } => {
                let Some(s) = self.send.ctxs.remove(&id) else {
                    return self.bookkeeping_miss("send context of a status write");
                };
                let err = s.status.errors();
                if err.is_error() {
                    self.stats.send_errors += 1;
                }
                tracing::debug!(target: "nic::tx", id = %s.id, status = ?s.status, "send complete");
                if let Some(v) = self.vis.get_mut(job.vi) {
                    v.counters.sends_completed += 1;
                    if err.is_error() {
                        v.counters.send_errors += 1;
                        v.counters.last_tx_error = err;
                    }
                }
            }
            JobKind::Recv { rx: id } => {
                self.recv.msgs.remove(&id);
                if let Some(v) = self.vis.get_mut(job.vi) {
                    v.counters.recvs_completed += 1;
                }
            }
            JobKind::Flush => {
                if let Some(v) = self.vis.get_mut(job.vi) {
                    v.counters.recvs_completed += 1;
                }
            }
        }
    }

    /// An Ack (`status` empty) or error Nak for fragment `seq` arrived on VI `vi`.
    pub(crate) fn ack_received(
        &mut self,
        vi: u16,
        seq: u32,
        status: Status,
        arrived: Time,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        if status.errors().is_error() {
            self.nak_error_received(vi, seq, status, arrived, io, ram);
        } else {
            self.cumulative_ack_received(vi, seq, arrived, io, ram);
        }
    }

    /// A positive Ack of every data frame up to `k` arrived on VI `vi` (cumulative): every
    /// send whose last fragment it covers is acknowledged, in posting order.
    fn cumulative_ack_received(
        &mut self,
        vi: u16,
        k: u32,
        arrived: Time,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // The header check found the VI connected to the Ack's sender before calling this.
        let Some(v) = self.vis.get_mut(vi) else {
            return self.bookkeeping_miss("VI of an Ack");
        };
        match v.tx.ack(k, v.tx_seq) {
            AckVerdict::Advanced => {}
            // The peer's input: a repeat of what an earlier Ack covered.
            AckVerdict::Stale => {
                v.counters.acks_duplicate += 1;
                self.stats.acks_duplicate += 1;
                tracing::debug!(target: "nic::tx", vi, seq = k, "ack older than the window");
                return;
            }
            // The peer's input: an Ack of a frame never sent; counted and dropped.
            AckVerdict::Unmatched => {
                self.stats.acks_unmatched += 1;
                tracing::warn!(target: "nic::tx", vi, seq = k, "ack for no message in flight");
                return;
            }
        }
        let mut covered = Vec::new();
        for id in &v.send_order {
            // Not a miss: a send context is removed only after it left its VI's order.
            let Some(s) = self.send.ctxs.get(id) else {
                break;
            };
            if s.is_ready() {
                continue;
            }
            if !s.acked_by(k) {
                break;
            }
            covered.push(*id);
        }
        self.window_moved(vi, io);
        for id in covered {
            let mut wait_over = false;
            if let Some(s) = self.send.ctxs.get_mut(&id) {
                // The wait ends when the ack frame arrives; its header check follows
                // under the same trace id (recorded by the receive front end).
                span_to(io, s.msg, "ack wait", &mut s.mark, arrived);
                s.mark = s.mark.max(io.now());
                wait_over = s.ack_last();
            }
            if wait_over {
                self.send_ready(id, io, ram);
            } else {
                self.send_progress(id, io, ram);
            }
        }
    }

    /// An error Nak (error bits in `status`) for fragment `seq` arrived on VI `vi`: the
    /// send it names completes with them and the VI breaks.
    fn nak_error_received(
        &mut self,
        vi: u16,
        seq: u32,
        status: Status,
        arrived: Time,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // The header check found the VI connected to the Nak's sender before calling this.
        let Some(v) = self.vis.get(vi) else {
            return self.bookkeeping_miss("VI of an Ack");
        };
        let found = v.send_order.iter().copied().find(|id| {
            self.send
                .ctxs
                .get(id)
                .is_some_and(|s| s.awaits_ack_for(seq))
        });
        // May miss: the peer's Nak is its input (a repeat, or one for a send flushed
        // meanwhile); counted and dropped.
        let Some(id) = found else {
            self.stats.acks_unmatched += 1;
            tracing::warn!(target: "nic::tx", vi, seq, "nak for no message in flight");
            return;
        };
        if let Some(s) = self.send.ctxs.get_mut(&id) {
            // The wait ends when the nak frame arrives; its header check follows under
            // the same trace id (recorded by the receive front end).
            span_to(io, s.msg, "ack wait", &mut s.mark, arrived);
            s.mark = s.mark.max(io.now());
            s.status |= status.errors();
            s.cut();
        }
        if let Some(v) = self.vis.get_mut(vi) {
            v.counters.naks_received += 1;
        }
        self.send_progress(id, io, ram);
        self.set_vi_state(vi, ViState::Error, io, ram);
    }

    /// VI `n` left `connected` or broke: everything pending on it completes with
    /// `DESCRIPTOR_FLUSHED`.
    pub(crate) fn flush_vi(&mut self, n: u16, io: &mut Io, ram: &mut BufferRam) {
        self.flush_recvs(n, io);
        self.abandon_rx(n, Status::FLUSHED, io);
        let ids: Vec<SendId> = self
            .vis
            .get(n)
            .map(|v| v.send_order.iter().copied().collect())
            .unwrap_or_default();
        for id in ids {
            // A send context is removed only after it left its VI's order.
            let Some(s) = self.send.ctxs.get_mut(&id) else {
                self.bookkeeping_miss("send context of a flushed VI");
                continue;
            };
            if s.is_ready() {
                continue;
            }
            if !s.status.is_error() {
                s.status |= Status::FLUSHED;
            }
            s.flush();
        }
        let ids: Vec<SendId> = self
            .vis
            .get(n)
            .map(|v| v.send_order.iter().copied().collect())
            .unwrap_or_default();
        for id in ids {
            self.send_progress(id, io, ram);
        }
    }

    /// Posted receive descriptors of VI `n` complete with `DESCRIPTOR_FLUSHED`.
    pub(crate) fn flush_recvs(&mut self, n: u16, io: &mut Io) {
        let posted: Vec<_> = self
            .vis
            .get_mut(n)
            .map(|v| v.recv_queue.drain(..).collect())
            .unwrap_or_default();
        for p in posted {
            let status = (Status::DONE | Status::FLUSHED).with_completed_op(CompletedOp::Receive);
            let job = StatusJob {
                msg: p.msg,
                vi: n,
                kind: JobKind::Flush,
                mark: io.now(),
                va: p.va.wrapping_add(STATUS_OFFSET),
                handle: p.handle,
                bytes: status.bits().to_le_bytes().to_vec(),
            };
            self.flush_unfetched(job, io);
        }
    }
}
