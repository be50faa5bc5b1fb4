//! The receive data path: a frame's payload moves RX buffer -> Recv FIFO one word per
//! core clock (the RX word mover) in chunks of at most `dma_chunk_bytes` that never cross
//! a data segment (span `rx buffer drain`; a chunk starts only when the Recv FIFO has
//! room for it), each chunk is then DMA-written to host memory (span `payload DMA
//! write`, to the last write's completion; its FIFO space is freed then). The RX slot is
//! released as soon as its last chunk is in the FIFO.
//!
//! A message is complete when its last fragment is drained and every write has
//! completed: a send (or an RDMA write with immediate data) then gets its receive
//! descriptor's length, status and immediate data written (`status write`), an RDMA
//! read response completes its read (`readresp`); on a reliable VI the sender gets an
//! Ack.

use super::fifo::{cycles_until, Run, RX_MOVER_PRIORITY};
use super::frame::HEADERS_LEN;
use super::ids::{MoverGen, RxId};
use super::io::{span, Io};
use super::unit::completion::{JobKind, StatusJob};
use super::unit::outstanding::DmaFor;
use super::unit::recv::{Chunk, RxRun, RxStage, RxState};
use super::{Engine, EngineWake};
use gige_mac::BufferRam;
use pci_model::{DmaDone, DmaStatus};
use std::collections::VecDeque;
use via_abi::descriptor::control_segment;
use via_abi::wire_header::WireOp;
use via_abi::{CompletedOp, Status};

impl Engine {
    pub(crate) fn rx_start_drain(
        &mut self,
        plan: VecDeque<Chunk>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        if let Some(w) = self.recv.front.cur.as_mut() {
            w.plan = plan;
        }
        self.recv.front.fsm.set(RxState::Drain, io);
        self.rx_drain(io, ram);
    }

    /// Starts moving the planned chunks that fit in the Recv FIFO.
    pub(crate) fn rx_drain(&mut self, io: &mut Io, ram: &mut BufferRam) {
        if self.recv.front.fsm.state() != RxState::Drain {
            return;
        }
        // May miss: the frame in the front end was released meanwhile.
        let Some(w) = self.recv.front.cur.as_mut() else {
            return;
        };
        // Not a miss: the frame was not given a message (yet): nothing to drain.
        let Some(id) = w.target else {
            return;
        };
        // The slot was read at the header check (a bad one drops the frame there).
        let Ok(base) = self.layout.rx_buffer(w.frame.slot) else {
            return self.bookkeeping_miss("RX buffer slot of the frame being drained");
        };
        let now = io.now();
        while let Some(c) = w.plan.front() {
            if !self.recv.front.fifo.reserve(c.len) {
                break;
            }
            // Not a miss: `front` has just seen this chunk.
            let Some(c) = w.plan.pop_front() else {
                break;
            };
            self.stats.recv_fifo_max = self.stats.recv_fifo_max.max(self.recv.front.fifo.used);
            w.moving += 1;
            self.recv.front.mover.push(Run {
                bytes: c.len,
                ready: now,
                tag: RxRun {
                    src: base + HEADERS_LEN as u64 + c.off,
                    len: c.len,
                    // Given back once committed to host memory (by the host bridge, or by
                    // host memory for a lazy commit; a job of several bursts by the DMA
                    // master when the job is done).
                    data: sim_kernel::spare::take_bytes(usize::try_from(c.len).unwrap_or(0)),
                    pages: c.pages,
                    msg: id,
                    read_failed: false,
                },
            });
        }
        let done = w.plan.is_empty() && w.moving == 0;
        self.kick_rx_mover(io);
        if done {
            self.rx_frame_done(io, ram);
        }
    }

    fn kick_rx_mover(&mut self, io: &mut Io) {
        let period = io.my_domain().period();
        self.recv.front.mover.start_next(io.now(), period);
        if let Some(t) = self
            .recv
            .front
            .mover
            .wake_needed(self.params.stepping, period)
        {
            let gen = self.recv.front.mover.gen;
            let n = cycles_until(io.now(), t, period);
            let wake = EngineWake::RxMover { gen };
            io.wake_after_with(n, RX_MOVER_PRIORITY, wake);
        }
        let st = self.recv.front.mover.state();
        self.recv.front.mover_fsm.set(st, io);
    }

    /// The RX mover's wake-up: read the words due, hand finished chunks to the DMA.
    pub(crate) fn rx_mover_woken(&mut self, gen: MoverGen, io: &mut Io, ram: &mut BufferRam) {
        if !self.recv.front.mover.woken(gen) {
            return;
        }
        let period = io.my_domain().period();
        let now = io.now();
        while let Some(p) = self.recv.front.mover.advance(now, period) {
            self.stats.rx_words += p.to - p.from;
            if let Some(a) = self.recv.front.mover.current_mut() {
                a.run.tag.read_words(ram, p.from, p.to);
            }
            if !p.finished {
                break;
            }
            if let Some(run) = self.recv.front.mover.take_finished() {
                let r = run.tag;
                if let Some(w) = self.recv.front.cur.as_mut() {
                    w.moving = w.moving.saturating_sub(1);
                }
                if r.read_failed {
                    // Never place bytes that could not be read: the chunk is dropped
                    // and its message fails (its receiver sees an error, not data).
                    self.stats.buffer_ram_read_failures += 1;
                    tracing::error!(target: "nic::rx", src = r.src, len = r.len, "buffer RAM read failed: chunk dropped, message failed");
                    self.recv.front.fifo.release(r.len);
                    if let Some(m) = self.recv.msgs.get_mut(&r.msg) {
                        m.fail();
                    }
                    self.rx_check_complete(r.msg, io);
                    self.recv.front.mover.start_next(now, period);
                    continue;
                }
                if let Some(m) = self.recv.msgs.get_mut(&r.msg) {
                    m.outstanding += 1;
                }
                self.outstanding.dma_write(
                    io,
                    DmaFor::RxChunk {
                        rx: r.msg,
                        len: r.len,
                    },
                    r.pages,
                    r.data,
                );
            }
            self.recv.front.mover.start_next(now, period);
        }
        self.rx_drain(io, ram);
        self.kick_rx_mover(io);
    }

    /// Every chunk of the frame in the front end is in the Recv FIFO: release its slot.
    pub(crate) fn rx_frame_done(&mut self, io: &mut Io, _ram: &mut BufferRam) {
        // May miss: the frame in the front end was released meanwhile.
        let Some(w) = self.recv.front.cur.as_mut() else {
            return;
        };
        span(io, w.frame.msg, "rx buffer drain", &mut w.mark);
        if let Some(id) = w.target {
            let now = io.now();
            if let Some(m) = self.recv.msgs.get_mut(&id) {
                if m.last_seen() {
                    m.drained();
                    m.mark = now;
                    let n = m.vi;
                    if let Some(v) = self.vis.get_mut(n) {
                        if v.rx_cur == Some(id) {
                            v.rx_cur = None;
                        }
                    }
                }
            }
            self.rx_check_complete(id, io);
        }
        self.rx_release(io);
    }

    /// A chunk's DMA write ended.
    pub(crate) fn rx_chunk_written(
        &mut self,
        id: RxId,
        len: u64,
        done: &DmaDone,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        self.recv.front.fifo.release(len);
        let ok = done.status == DmaStatus::Ok;
        if let Some(m) = self.recv.msgs.get_mut(&id) {
            m.outstanding = m.outstanding.saturating_sub(1);
            if ok {
                if m.op == WireOp::RdmaWrite {
                    self.stats.rdma_bytes_placed += len;
                } else if m.op == WireOp::RdmaReadResponse {
                    self.stats.read_bytes_placed += len;
                } else {
                    self.stats.recv_bytes_placed += len;
                }
            } else {
                self.stats.dma_failures += 1;
                m.fail();
                // A read's own buffer refused the write: a local protection error.
                if let Some(s) = m.read.and_then(|r| self.send.ctxs.get_mut(&r)) {
                    if !s.status.is_error() {
                        s.status |= Status::PROTECTION_ERROR;
                    }
                }
            }
        }
        self.rx_check_complete(id, io);
        self.rx_drain(io, ram);
    }

    /// Completes message `id` once it is drained and its writes are done.
    pub(crate) fn rx_check_complete(&mut self, id: RxId, io: &mut Io) {
        // May miss: the message completed or failed and was removed; a later call is a no-op.
        let Some(m) = self.recv.msgs.get_mut(&id) else {
            return;
        };
        if m.outstanding > 0 || m.is_settled() {
            return;
        }
        if m.is_failed() {
            let (n, last, reliable, msg) = (m.vi, m.last_seq, m.reliable, m.msg);
            if let Some(read) = m.read {
                self.read_landed(read, Status::TRANSPORT_ERROR, io);
            }
            let current = self.vis.get(n).is_some_and(|v| v.rx_cur == Some(id));
            if !current {
                self.recv.msgs.remove(&id);
            }
            if reliable {
                self.message_settled(n, last, false, msg, io);
            }
            return;
        }
        if m.stage != RxStage::Drained {
            return;
        }
        m.stage = RxStage::Completed;
        span(io, m.msg, "payload DMA write", &mut m.mark);
        let (n, msg, seq, reliable, mark) = (m.vi, m.msg, m.last_seq, m.reliable, m.mark);
        let read = m.read.is_some();
        if let Some(v) = self.vis.get_mut(n) {
            v.counters.messages_received += 1;
            self.stats.messages_received += 1;
        }
        if reliable {
            // A read response's Ack goes beside the read's completion, not on its path:
            // traced under an id of its own.
            let ack_msg = if read { self.new_msg() } else { msg };
            self.message_settled(n, seq, true, ack_msg, io);
        }
        // May miss: the message was removed meanwhile (failed, its VI gone).
        let Some(m) = self.recv.msgs.get(&id) else {
            return;
        };
        if let Some(read) = m.read {
            self.recv.msgs.remove(&id);
            self.read_landed(read, Status::empty(), io);
            return;
        }
        // May miss: an RDMA write has no receive descriptor; the message is done.
        let Some(d) = m.desc.as_ref() else {
            self.recv.msgs.remove(&id);
            return;
        };
        let op = if m.op == WireOp::RdmaWrite {
            CompletedOp::RemoteRdmaWrite
        } else {
            CompletedOp::Receive
        };
        let mut status = Status::DONE.with_completed_op(op);
        let mut bytes = Vec::with_capacity(12);
        let offset = match m.immediate {
            Some(imm) => {
                status |= Status::IMMEDIATE;
                bytes.extend_from_slice(&imm.to_le_bytes());
                control_segment::field::IMMEDIATE.start as u64
            }
            None => control_segment::field::LENGTH.start as u64,
        };
        bytes.extend_from_slice(&m.len.to_le_bytes());
        bytes.extend_from_slice(&status.bits().to_le_bytes());
        let job = StatusJob {
            msg,
            vi: n,
            kind: JobKind::Recv { rx: id },
            mark,
            va: d.va.wrapping_add(offset),
            handle: d.handle,
            bytes,
        };
        let pieces = d.pieces.clone();
        self.write_status(job, &pieces, offset, io);
    }
}
