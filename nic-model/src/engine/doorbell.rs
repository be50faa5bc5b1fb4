//! The doorbell unit: per-VI doorbell windows in BAR0 (a 16-byte
//! [`Doorbell`](via_abi::Doorbell) record each; writing its last dword rings it), the
//! bounded doorbell FIFO, and the dispatcher that hands each doorbell to the VI's
//! receive queue or starts a send context.
//!
//! **Back-pressure.** A posted PCI write cannot be refused once its data phase is over,
//! so the card refuses doorbell writes *before* they happen: when the FIFO holds
//! `depth - skid` doorbells it asks the bus to Retry every write into the doorbell
//! windows (`PciMsg::TargetWriteRetry`, on), and lets them in again (off) once it has
//! room. The `skid` entries hold the writes that may complete before the Retry takes
//! effect. A doorbell that still finds the FIFO full is kept (never dropped) and counted
//! in `doorbell_overruns`, which the tests require to stay 0.
//!
//! **Dispatch** (`doorbell` state machine: `idle` / `decoding` / `blocked`): one doorbell
//! every `doorbell_decode_cycles`. The dispatcher takes the first doorbell that can go:
//! a receive while its VI's receive queue has room, a send while its VI has no send
//! context in its front end and fewer than `max_send_contexts` are active. Doorbells of
//! one VI and queue therefore keep their order. A send doorbell blocked only because its
//! VI's previous send is still in the front end is *parked*: the card has recorded it,
//! so its window's `POSTS_PENDING` clears (a library waiting for the card to take a post
//! returns) and it is dispatched in order once that send is out; a send that finds its
//! VI free is taken at its dispatch, as before. Span `doorbell`: from the ring to the end
//! of its decode. A doorbell without `HEAD` then has its descriptor found through the
//! queue's link (`qlink`) before it is dispatched, unless a read of the queue's tail
//! already found that link (`follow_read_links`); the dispatch makes the descriptor the
//! queue's tail.

use super::io::{span, Io};
use super::params::EngineParams;
use super::unit::doorbell::{tail_key, DoorbellState, Entry, RecvCheck, Tail};
use super::unit::send::SendPath;
use super::unit::vi::{PostedRecv, ViState, ViTable};
use super::{Engine, EngineWake};
use gige_mac::BufferRam;
use pci_model::PciMsg;
use sim_kernel::{Cycles, Time};
use via_abi::bar;
use via_abi::doorbell::{Doorbell, DoorbellRepr};
use via_abi::Queue;

impl Engine {
    /// A dword of VI `vi`'s doorbell window was written (`within`: its offset in the
    /// 16-byte record).
    pub(crate) fn doorbell_write(
        &mut self,
        vi: u16,
        within: u64,
        bytes: [Option<u8>; 4],
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // Not a miss: the record is rung only by its last dword.
        let Some(raw) = self.doorbells.stage(vi, within, bytes) else {
            return;
        };
        // Not a lookup: the staged record is always 16 bytes, so the parse cannot fail.
        let Ok(repr) = DoorbellRepr::parse(&Doorbell::new_unchecked(&raw[..])) else {
            return;
        };
        self.stats.doorbells += 1;
        self.doorbells.rung(vi);
        if repr.vi != vi {
            self.stats.doorbell_vi_mismatch += 1;
        }
        let msg = self.new_msg();
        let entry = Entry {
            vi,
            rec: repr,
            msg,
            at: io.now(),
            parked: false,
        };
        if self.doorbells.push(entry, self.params.doorbell_fifo_depth) {
            self.stats.doorbell_overruns += 1;
            tracing::error!(target: "nic::doorbell", vi, "doorbell FIFO overrun: kept, but the skid is too small");
        }
        let len = self.doorbells.fifo.len();
        self.stats.doorbell_fifo_max = self.stats.doorbell_fifo_max.max(len);
        tracing::debug!(target: "nic::doorbell", vi, queue = ?repr.queue, va = repr.desc_va, "doorbell");
        self.backpressure(io);
        self.kick_doorbells(io, ram);
    }

    /// Turns write Retry on the doorbell windows on or off to match the FIFO fill.
    fn backpressure(&mut self, io: &mut Io) {
        let len = self.doorbells.fifo.len();
        let on = len + self.params.doorbell_skid >= self.params.doorbell_fifo_depth;
        if on == self.doorbells.retry_on {
            return;
        }
        self.doorbells.retry_on = on;
        if on {
            self.stats.doorbell_backpressure += 1;
        }
        let start = self.params.bar0_base + bar::DOORBELL_BASE;
        let end = self.params.bar0_base + bar::BAR0_SIZE;
        tracing::debug!(target: "nic::doorbell", on, len, "doorbell back-pressure");
        io.to_bus(Cycles(1), PciMsg::TargetWriteRetry { start, end, on });
    }

    /// Starts decoding the next doorbell that can go, if the dispatcher is free. The
    /// usual case, the dispatcher idle with no doorbell waiting, is answered inline:
    /// [`Engine::dispatch_doorbells`] would only set the state it is already in.
    #[inline]
    pub(crate) fn kick_doorbells(&mut self, io: &mut Io, ram: &mut BufferRam) {
        if self.doorbells.fifo.is_empty() && self.doorbells.fsm.state() == DoorbellState::Idle {
            return;
        }
        self.dispatch_doorbells(io, ram);
    }

    /// [`Engine::kick_doorbells`] past its inline check.
    fn dispatch_doorbells(&mut self, io: &mut Io, _ram: &mut BufferRam) {
        if matches!(
            self.doorbells.fsm.state(),
            DoorbellState::Decoding | DoorbellState::Checking | DoorbellState::Linking
        ) {
            return;
        }
        // Nothing to park or dispatch: the dispatcher is idle.
        if self.doorbells.fifo.is_empty() {
            self.doorbells.fsm.set(DoorbellState::Idle, io);
            return;
        }
        let (vis, send, params) = (&self.vis, &self.send, &self.params);
        self.doorbells
            .park_sends(|vi| vis.get(vi).is_some_and(|v| v.tx_active.is_some()));
        let ready = self
            .doorbells
            .fifo
            .iter()
            .any(|e| can_dispatch(vis, send, params, e));
        let to = match (ready, self.doorbells.fifo.is_empty()) {
            (true, _) => {
                io.wake_after(
                    self.params
                        .doorbell_decode_cycles
                        .max(sim_kernel::Cycles(1)),
                    EngineWake::DoorbellDecoded,
                );
                DoorbellState::Decoding
            }
            (false, true) => DoorbellState::Idle,
            (false, false) => DoorbellState::Blocked,
        };
        self.doorbells.fsm.set(to, io);
    }

    /// The decode time of a doorbell is over: dispatch the first one that can go.
    pub(crate) fn doorbell_decoded(&mut self, io: &mut Io, ram: &mut BufferRam) {
        self.doorbells.fsm.set(DoorbellState::Idle, io);
        let (vis, send, params) = (&self.vis, &self.send, &self.params);
        let next = self
            .doorbells
            .take_first(|e| can_dispatch(vis, send, params, e));
        if let Some(e) = next {
            self.backpressure(io);
            let mut mark = e.at;
            span(io, e.msg, "doorbell", &mut mark);
            if e.rec.is_head() || tail_key(&e).is_none() {
                self.dispatch(e, mark, io, ram);
            } else {
                self.start_link_read(e, mark, io, ram);
            }
        }
        self.kick_doorbells(io, ram);
    }

    /// Hands doorbell `e`, whose descriptor is now known, to its queue (its spans end at
    /// `mark`), and makes that descriptor the queue's tail.
    pub(crate) fn dispatch(&mut self, e: Entry, mark: Time, io: &mut Io, ram: &mut BufferRam) {
        if let Some(key) = tail_key(&e) {
            self.doorbells
                .tails
                .insert(key, Tail::new(e.rec.desc_va, e.rec.desc_handle));
        }
        let check = self.params.check_recv_on_post && e.rec.queue == Queue::Receive;
        if !check && !e.parked {
            self.doorbells.taken(e.vi);
        }
        let Some(vi) = self.vis.get_mut(e.vi) else {
            if check {
                self.doorbells.taken(e.vi);
            }
            self.stats.doorbell_no_vi += 1;
            tracing::warn!(target: "nic::doorbell", vi = e.vi, "doorbell for a VI that does not exist dropped");
            return;
        };
        match e.rec.queue {
            Queue::Receive if check && vi.state() != ViState::Error => {
                self.start_recv_check(RecvCheck::new(e, mark), io);
            }
            Queue::Receive => {
                if check {
                    self.doorbells.taken(e.vi);
                }
                let flushed = vi.state() == ViState::Error;
                vi.recv_queue.push_back(PostedRecv {
                    va: e.rec.desc_va,
                    handle: e.rec.desc_handle,
                    msg: e.msg,
                    kept: None,
                });
                if flushed {
                    self.flush_recvs(e.vi, io);
                }
            }
            Queue::Send => self.start_send(e, mark, false, io, ram),
            Queue::Unknown(_) => {
                self.stats.doorbell_bad_queue += 1;
                self.start_send(e, mark, true, io, ram);
            }
        }
    }
}

/// Whether doorbell `e` can be dispatched now.
fn can_dispatch(vis: &ViTable, send: &SendPath, params: &EngineParams, e: &Entry) -> bool {
    // May miss: the window's VI does not exist (host input); it goes at once and
    // `dispatch` drops it (`doorbell_no_vi`).
    let Some(vi) = vis.get(e.vi) else {
        return true;
    };
    match e.rec.queue {
        Queue::Receive => vi.recv_queue.len() < params.recv_queue_depth,
        Queue::Send | Queue::Unknown(_) => {
            vi.tx_active.is_none() && send.active() < params.max_send_contexts
        }
    }
}
