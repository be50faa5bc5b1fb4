//! The send data path's moving parts: payload DMA reads into the Send FIFO (one chunk of
//! at most `dma_chunk_bytes` at a time, never crossing a data segment, issued only when
//! the FIFO has room for it), the TX word mover (Send FIFO / header -> TX slot, one word
//! per core clock), the handoff of filled slots to the GEC in ring order, and the GEC's
//! transmit completions.

use super::fifo::{cycles_until, Run, TX_MOVER_PRIORITY};
use super::frame::{HEADERS_LEN, OP_OFFSET};
use super::ids::MoverGen;
use super::io::{span, span_to, Io};
use super::unit::outstanding::DmaFor;
use super::unit::send::{SlotKind, TxRun};
use super::{Engine, EngineWake};
use gige_mac::{BufferRam, MacMsg};
use sim_kernel::Cycles;
use via_abi::Status;

impl Engine {
    /// Issues the next payload DMA of the fragment being fetched, if the Send FIFO has
    /// room for it.
    pub(crate) fn pump_fetch(&mut self, io: &mut Io) -> bool {
        // Not a miss: no fragment is being fetched.
        let Some(f) = self.send.tx.fetch else {
            return false;
        };
        let chunk = self.params.tx_chunk();
        // A send is removed only after its status write, and it cannot complete while a
        // fragment of it is fetched (that fragment is not transmitted yet).
        let Some(s) = self.send.ctxs.get_mut(&f.send) else {
            self.bookkeeping_miss("send context of the fragment being fetched");
            self.send.tx.fetch = None;
            return true;
        };
        if f.next >= f.end {
            s.frag_mark = io.now();
            if let Some(slot) = self.send.tx.slots.get_mut(f.slot).and_then(Option::as_mut) {
                slot.issued_all = true;
            }
            self.send.tx.fetch = None;
            return true;
        }
        // The data segment holding byte `next` of the message.
        let mut seg_start = 0u64;
        let mut found = None;
        if let Some(d) = s.desc.as_ref() {
            for (i, seg) in d.data.iter().enumerate() {
                let l = u64::from(seg.length);
                if f.next < seg_start + l {
                    found = Some((i, f.next - seg_start, l - (f.next - seg_start)));
                    break;
                }
                seg_start += l;
            }
        }
        let want = match found {
            Some((_, _, left)) => chunk.min(f.end - f.next).min(left),
            None => chunk.min(f.end - f.next),
        };
        if !self.send.tx.fifo.reserve(want) {
            return false;
        }
        self.stats.send_fifo_max = self.stats.send_fifo_max.max(self.send.tx.fifo.used);
        let pages = found.and_then(|(i, off, _)| s.seg_pieces.get(i)?.pages(off, want));
        let offset = HEADERS_LEN as u64 + (f.next - f.start);
        if let Some(t) = self.send.tx.fetch.as_mut() {
            t.next += want;
        }
        if let Some(slot) = self.send.tx.slots.get_mut(f.slot).and_then(Option::as_mut) {
            slot.dmas += 1;
        }
        let purpose = DmaFor::Payload {
            slot: f.slot,
            offset,
            len: want,
        };
        match pages {
            Some(pages) => self.outstanding.dma_read(io, purpose, pages, want),
            // Cannot happen with a translated segment; fail the chunk, never panic.
            None => self.payload_read(f.slot, offset, want, None, io),
        }
        true
    }

    /// A payload DMA read ended: its bytes (`None` if the read failed) are in the Send
    /// FIFO, queue their move.
    pub(crate) fn payload_read(
        &mut self,
        slot: usize,
        offset: u64,
        len: u64,
        data: Option<Vec<u8>>,
        io: &mut Io,
    ) {
        let now = io.now();
        let dst = self.slot_addr(slot).saturating_add(offset);
        // A slot with a payload read outstanding (`dmas` > 0) is not filled, so it is
        // neither handed over nor freed.
        let Some(s) = self.send.tx.slots.get_mut(slot).and_then(Option::as_mut) else {
            self.bookkeeping_miss("TX slot of a payload read");
            self.send.tx.fifo.release(len);
            return;
        };
        s.dmas = s.dmas.saturating_sub(1);
        s.last_dma = Some(now);
        s.runs += 1;
        let ok = data.is_some();
        let data = data.unwrap_or_else(|| {
            s.poisoned = true;
            vec![0; usize::try_from(len).unwrap_or(0)]
        });
        if !ok {
            self.stats.dma_failures += 1;
            if let SlotKind::Data { send: id, .. } = s.kind {
                if let Some(c) = self.send.ctxs.get_mut(&id) {
                    c.status |= Status::PROTECTION_ERROR;
                    c.cut();
                }
            }
        }
        self.send.tx.mover.push(Run {
            bytes: len.max(1),
            ready: now,
            tag: TxRun {
                slot,
                dst,
                data,
                fifo: len,
            },
        });
    }

    /// Starts the next run of the TX mover and schedules its wake-up.
    pub(crate) fn kick_tx_mover(&mut self, io: &mut Io, _ram: &mut BufferRam) {
        let period = io.my_domain().period();
        self.send.tx.mover.start_next(io.now(), period);
        if let Some(t) = self.send.tx.mover.wake_needed(self.params.stepping, period) {
            let gen = self.send.tx.mover.gen;
            let n = cycles_until(io.now(), t, period);
            let wake = EngineWake::TxMover { gen };
            io.wake_after_with(n, TX_MOVER_PRIORITY, wake);
        }
        let st = self.send.tx.mover.state();
        self.send.tx.mover_fsm.set(st, io);
    }

    /// The TX mover's wake-up: move the words due, finish runs, start the next.
    pub(crate) fn tx_mover_woken(&mut self, gen: MoverGen, io: &mut Io, ram: &mut BufferRam) {
        if !self.send.tx.mover.woken(gen) {
            return;
        }
        let period = io.my_domain().period();
        let now = io.now();
        while let Some(p) = self.send.tx.mover.advance(now, period) {
            if let Some(a) = self.send.tx.mover.current() {
                let run = &a.run.tag;
                let from = usize::try_from(p.from * 4)
                    .unwrap_or(usize::MAX)
                    .min(run.data.len());
                let to = usize::try_from(p.to * 4)
                    .unwrap_or(usize::MAX)
                    .min(run.data.len());
                if let Some(bytes) = run.data.get(from..to) {
                    if ram.write(run.dst + from as u64, bytes).is_err() {
                        tracing::error!(target: "nic::tx", dst = run.dst, "TX run outside the buffer RAM");
                    }
                }
                self.stats.tx_words += p.to - p.from;
            }
            if !p.finished {
                break;
            }
            if let Some(run) = self.send.tx.mover.take_finished() {
                self.send.tx.fifo.release(run.tag.fifo);
                if let Some(s) = self
                    .send
                    .tx
                    .slots
                    .get_mut(run.tag.slot)
                    .and_then(Option::as_mut)
                {
                    s.runs = s.runs.saturating_sub(1);
                }
                self.send.tx.spare.keep(run.tag.data);
            }
            self.send.tx.mover.start_next(now, period);
        }
        // The send path goes on in `settle`, which runs after this handler.
    }

    /// Whether the next slot in ring order holds a filled fragment not handed over yet.
    #[inline]
    pub(crate) fn handoff_ready(&self) -> bool {
        self.send
            .tx
            .slots
            .get(self.send.tx.next_handoff)
            .and_then(Option::as_ref)
            .is_some_and(|s| !s.handed && s.filled())
    }

    /// Hands filled slots to the GEC, in ring order.
    pub(crate) fn try_handoff(&mut self, io: &mut Io, ram: &mut BufferRam) {
        let n = self.send.tx.slots.len();
        // Not a miss when it stops: the next slot in ring order holds no fragment to
        // hand over.
        while self.handoff_ready() {
            let i = self.send.tx.next_handoff;
            let Some(s) = self.send.tx.slots.get(i).and_then(Option::as_ref) else {
                return;
            };
            if s.poisoned
                && ram
                    .write(self.slot_addr(i) + OP_OFFSET as u64, &[0])
                    .is_err()
            {
                tracing::error!(target: "nic::tx", "TX slot outside the buffer RAM");
            }
            let Some(s) = self.send.tx.slots.get_mut(i).and_then(Option::as_mut) else {
                return self.bookkeeping_miss("TX slot being handed over");
            };
            let delay = self.params.handoff_cycles;
            let arrive = io.gec_domain().edge_after(io.now(), delay.max(Cycles(1)));
            s.handed = true;
            let (msg, len, kind) = (s.msg, s.frame_len, s.kind);
            let mut mark = s.mark;
            match kind {
                SlotKind::Data {
                    send: id,
                    resend: false,
                    ..
                } => {
                    if let Some(t) = s.last_dma {
                        span_to(io, msg, "payload DMA read", &mut mark, t);
                    }
                    span(io, msg, "tx buffer fill", &mut mark);
                    span_to(io, msg, "frame handoff", &mut mark, arrive);
                    if let Some(c) = self.send.ctxs.get_mut(&id) {
                        c.mark = arrive;
                    }
                }
                // A resend's spans have names of their own: they overlap the send's
                // wait for its Ack.
                SlotKind::Data { resend: true, .. } => {
                    if let Some(t) = s.last_dma {
                        span_to(io, msg, "resend DMA read", &mut mark, t);
                    }
                    span(io, msg, "resend buffer fill", &mut mark);
                    span_to(io, msg, "resend handoff", &mut mark, arrive);
                }
                SlotKind::Control => {
                    span(io, msg, "control frame build", &mut mark);
                    span_to(io, msg, "control frame handoff", &mut mark, arrive);
                    self.stats.control_frames_sent += 1;
                }
            }
            let slot = u16::try_from(i).unwrap_or(u16::MAX);
            tracing::trace!(target: "nic::tx", slot, len, "frame handoff");
            io.to_gec(delay, MacMsg::GecTransmit { slot, len, msg });
            self.send.tx.next_handoff = (i + 1) % n;
        }
    }

    /// The GEC reports a TX slot sent (`ok`) or failed; it is free again.
    pub(crate) fn tx_done(&mut self, slot: u16, ok: bool, io: &mut Io, ram: &mut BufferRam) {
        let i = usize::from(slot);
        let taken = match self.send.tx.slots.get_mut(i) {
            Some(s) if s.as_ref().is_some_and(|s| s.handed) => s.take(),
            _ => None,
        };
        // May miss: the GEC's input names a slot not handed over; counted and dropped.
        let Some(s) = taken else {
            self.stats.tx_done_unexpected += 1;
            tracing::warn!(target: "nic::tx", slot, "TX done for a slot not handed over");
            return;
        };
        if !ok {
            self.stats.tx_failures += 1;
        }
        if let SlotKind::Data {
            send: id,
            seq,
            resend,
        } = s.kind
        {
            let mut vi = None;
            if let Some(c) = self.send.ctxs.get_mut(&id) {
                vi = Some(c.vi);
                if resend {
                    c.resending = c.resending.saturating_sub(1);
                } else {
                    c.transmitted += 1;
                }
                if !ok {
                    c.status |= Status::TRANSPORT_ERROR;
                    c.cut();
                }
                if c.transmitted >= c.assigned && !resend {
                    c.mark = c.mark.max(io.now());
                }
            }
            if let (Some(vi), true) = (vi, ok) {
                self.frame_transmitted(vi, seq, io);
            }
            self.send_progress(id, io, ram);
        }
        // The free slot is given out in `settle`, which runs after this handler and
        // pumps the send path.
    }
}
