//! The VIA protocol engine of the HVIA-GE FPGA ([`Engine`]): the card's BAR0 target
//! (registers, ATT registration mailbox, doorbells), the VI protocol manager, the send
//! and receive paths with their Send/Recv FIFOs and TX/RX buffers, and completion.
//!
//! ```text
//!             system PCI bus (PciMsg)                      ATT manager (NicMsg)
//!  TargetWrite/TargetRead |  ^ TargetReadData,                 ^ AttTranslate / AttRegister
//!                         v  | TargetWriteRetry                | AttTranslated / AttRegistered
//!  +----------------------------------------------------------------------------------+
//!  | regs: ATT mailbox, VI_CMD --> connect (VI protocol manager, vi table)             |
//!  | doorbell windows --> doorbell FIFO (back-pressure) --> dispatch                   |
//!  |   send: tx (descriptor translate/read/decode, buffer translate; RDMA read: one   |
//!  |         request frame, readreq answers a peer's request with a response send)    |
//!  |         txdata/txmove: payload DMA -> Send FIFO -> (1 word/clk) -> TX slot -> GEC |
//!  |         complete: TxDone / Ack / Nak -> status write (in order per VI)            |
//!  |   recv: posted on the VI's receive queue                                          |
//!  | rx: GEC frame -> header check -> rxdata: RDMA translate | recvdesc: descriptor     |
//!  |     rxdrain: RX slot -> (1 word/clk) -> Recv FIFO -> DMA write -> status, Ack     |
//!  +----------------------------------------------------------------------------------+
//!    DmaStart |  ^ DmaDone (PciMsg)            GecTransmit, GecRxRelease | ^ GecTxDone,
//!             v  |                                          (MacMsg)     v | GecRxFrame
//!        DmaMaster (system bus)                                    GEC (buffer RAM shared)
//! ```
//!
//! **Component.** One component in the FPGA core clock domain (`card.core`), with three
//! handlers, [`Engine::on_pci`], [`Engine::on_nic`] and [`Engine::on_mac`], generic over
//! the system message type ([`EngineMsg`]). Each takes an [`Io`] outbox (one, kept between
//! messages), runs the
//! sans-IO core ([`Engine::handle_pci`] / [`Engine::handle_nic`] /
//! [`Engine::handle_mac`], which never touch the kernel) and applies the [`Action`]s it
//! wrote, in order. Every handler is given the card's buffer RAM
//! ([`gige_mac::BufferRam`], shared with the GEC). Its own wake-ups are
//! [`NicMsg::Engine`] variants ([`EngineWake`]). Ports ([`EnginePorts`]): system bus,
//! DMA master, ATT manager, GEC. Parameters: [`EngineParams`] (each processing time an
//! explicit, documented assumption). Statistics: [`EngineStats`], per VI [`ViInfo`].
//!
//! **Traces.** Spans under one trace id ([`sim_kernel::MsgId`]) per message: the
//! descriptor's id from its doorbell on the sending card (carried to the GEC in
//! `GecTransmit`), the id the GEC gives the frame on the receiving card (the sender's,
//! when the GEC passes it through). Stage names are stable (listed in each file's doc);
//! spans of one message are contiguous wherever the message waits in the engine.
//! State machines: `doorbell`, `tx` (one per send descriptor), `tx.mover`, `rx`,
//! `rx.mover`, `vi` (one per VI). `tracing` targets: `nic::doorbell`, `nic::vi`,
//! `nic::tx`, `nic::rx`.
//!
//! Files. Leaves (no engine imports but each other): `ids` (typed ids), `io` (the
//! [`Action`] vocabulary, the [`Io`] outbox, [`EngineWake`]), `params`, `stats`, `fifo`
//! (word movers, FIFO space), `frame` (frame formats). Units (`unit/`, own the state,
//! import leaves only):
//!
//! | unit | owns |
//! |---|---|
//! | `unit::outstanding` | translations and DMA jobs in flight and what each is for |
//! | `unit::regs` | BAR0 registers, the ATT registration mailbox |
//! | `unit::doorbell` | doorbell staging, the doorbell FIFO, the dispatcher state |
//! | `unit::vi` | the VI table, kept connect requests |
//! | `unit::send` | send contexts, TX slots, Send FIFO, TX mover, control frames |
//! | `unit::recv` | RX front end, Recv FIFO, RX mover, messages being received |
//! | `unit::completion` | status write-backs in flight |
//! | `unit::retx` | per-VI go-back-N window and Ack registers, the retransmission timer |
//!
//! Steps of the dispatcher (`impl Engine`; import units and leaves, never each other):
//! `regs`, `doorbell`, `connect` (VI commands, connection frames, VI state changes),
//! `tx`, `txcheck`, `txdata`, `txmove` (send), `complete` (completion order, status
//! writes, flushes), `rx`, `rxdata`, `recvdesc`, `rxdrain`, `rxerror` (receive), `retx`
//! (retransmission: go-back Naks, the timer, giving up, the receiver's Ack point),
//! `readreq` (RDMA read, responder: the request's checks and source translation, the
//! response sent through the send data path), `readresp` (RDMA read, requester: the
//! response placed through the receive path, the read's completion).
//! Unit tests of the paths through the sans-IO interface: `tests`.

// Leaves: no engine imports but each other.
mod fifo;
pub mod frame;
pub mod ids;
pub mod io;
mod params;
mod stats;
// Units: own the engine's state; import leaves only.
mod unit;
// Steps of the dispatcher (`impl Engine`): import units and leaves, never each other.
mod complete;
mod connect;
mod doorbell;
mod qlink;
mod readreq;
mod readresp;
mod recvcheck;
mod recvdesc;
mod regs;
mod retx;
mod rx;
mod rxdata;
mod rxdrain;
mod rxerror;
#[cfg(test)]
mod tests;
mod tx;
mod txcheck;
mod txdata;
mod txmove;

pub use fifo::MoverState;
pub use io::{Action, EngineMsg, EngineWake, Io};
pub use params::{EngineError, EngineParams, EnginePorts, WordStepping};
pub use stats::{EngineStats, ViCounters, ViInfo};
pub use unit::doorbell::DoorbellState;
pub use unit::recv::RxState;
pub use unit::send::SendPhase;
pub use unit::vi::ViState;

use crate::att::{DeregisterError, RegisterError};
use crate::msg::NicMsg;
use gige_mac::{BufferLayout, BufferRam, MacMsg};
use ids::DmaTag;
use pci_model::{DmaStatus, PciMsg};
use sim_kernel::{Ctx, MsgId};
use unit::completion::Completion;
use unit::doorbell::DoorbellUnit;
use unit::outstanding::{AttFor, DmaFor, Outstanding};
use unit::recv::RecvPath;
use unit::regs::Regs;
use unit::retx::RetxTimer;
use unit::send::SendPath;
use unit::vi::{Vi, ViTable};
use via_abi::bar::CmdResult;

/// The VIA protocol engine (see the module doc).
#[derive(Clone, Debug)]
pub struct Engine {
    params: EngineParams,
    ports: EnginePorts,
    layout: BufferLayout,
    stats: EngineStats,
    /// Trace ids handed out so far.
    next_msg: u64,
    /// Unit: outstanding ATT translations and DMA jobs.
    outstanding: Outstanding,
    /// Unit: BAR0 registers and the ATT registration mailbox.
    regs: Regs,
    /// Unit: doorbell staging, FIFO and dispatcher state.
    doorbells: DoorbellUnit,
    /// Unit: the VI table and kept connect requests.
    vis: ViTable,
    /// Unit: send contexts and the send data path.
    send: SendPath,
    /// Unit: status write-backs in flight.
    completion: Completion,
    /// Unit: the receive front end and the messages being received.
    recv: RecvPath,
    /// Unit (retransmission): the one timer of every reliable VI's deadline.
    retx: RetxTimer,
    /// The Send and Recv FIFO fills last recorded in the trace (levels, for waveforms).
    fifo_traced: (u64, u64),
    /// The outbox of the last message (applied, empty: its clock domains and action
    /// vector), reused by the next; boxed, so handing it out and back moves a pointer.
    io: Option<Box<Io>>,
    /// Whether its untraced `GecTransmit` and `GecRxRelease` go to the system with
    /// their places instead of being sent ([`Engine::set_gec_inputs_placed`]).
    gec_inputs_placed: bool,
    /// Those of the last message, for the system to hand the GEC.
    gec_inputs: Vec<(sim_kernel::EventKey, MacMsg)>,
}

impl Engine {
    /// A bookkeeping lookup that missed (a table the engine keeps lacks an entry its own
    /// state says is there): a bug. Debug builds stop here; release builds count it
    /// (`EngineStats::bookkeeping_misses`) and trace an error, and the step is skipped.
    pub(crate) fn bookkeeping_miss(&mut self, what: &'static str) {
        debug_assert!(false, "bookkeeping lookup missed: {what}");
        self.stats.bookkeeping_misses += 1;
        tracing::error!(target: "nic::engine", what, "bookkeeping lookup missed");
    }

    /// An engine with no VIs, wired to `ports`, using the TX/RX slots of `layout` (the
    /// card's buffer RAM).
    ///
    /// # Errors
    /// Invalid parameters or layout.
    pub fn new(
        params: EngineParams,
        ports: EnginePorts,
        layout: &BufferLayout,
    ) -> Result<Self, EngineError> {
        params.validate()?;
        layout.validate()?;
        Ok(Self {
            vis: ViTable::new(params.max_vis),
            send: SendPath::new(layout.tx_slots, params.send_fifo_bytes.0),
            recv: RecvPath::new(params.recv_fifo_bytes.0),
            params,
            ports,
            layout: layout.clone(),
            stats: EngineStats::default(),
            next_msg: 0,
            outstanding: Outstanding::default(),
            regs: Regs::default(),
            doorbells: DoorbellUnit::default(),
            completion: Completion::default(),
            retx: RetxTimer::default(),
            fifo_traced: (0, 0),
            io: None,
            gec_inputs_placed: false,
            gec_inputs: Vec::new(),
        })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &EngineParams {
        &self.params
    }

    /// Counters so far (FIFO high-water marks included).
    #[must_use]
    pub fn stats(&self) -> EngineStats {
        let mut s = self.stats.clone();
        s.send_fifo_max = s.send_fifo_max.max(self.send.tx.fifo.max);
        s.recv_fifo_max = s.recv_fifo_max.max(self.recv.front.fifo.max);
        s
    }

    /// A snapshot of VI `n`, if it exists.
    #[must_use]
    pub fn vi(&self, n: u16) -> Option<ViInfo> {
        self.vis.get(n).map(Vi::info)
    }

    /// A fresh trace id.
    pub(crate) fn new_msg(&mut self) -> MsgId {
        let id = MsgId(self.params.msg_id_base.0.saturating_add(self.next_msg));
        self.next_msg += 1;
        id
    }

    /// Doorbells waiting in the FIFO.
    #[must_use]
    pub fn doorbells_waiting(&self) -> usize {
        self.doorbells.fifo.len()
    }

    /// Whether nothing is in flight: no doorbell, descriptor, frame, DMA or translation,
    /// and no connect request or unacknowledged frame waiting for its retransmission
    /// deadline.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        let deadlines = self
            .vis
            .iter()
            .any(|v| v.connect_deadline.is_some() || v.tx.deadline.is_some());
        !deadlines
            && self.doorbells.fifo.is_empty()
            && self.send.ctxs.is_empty()
            && self.recv.front.cur.is_none()
            && self.recv.front.queue.is_empty()
            && self.outstanding.is_empty()
            && self.send.tx.slots.iter().all(Option::is_none)
            && self.send.tx.control.is_empty()
            && self.completion.jobs.is_empty()
    }

    /// Untraced, its `GecTransmit` and `GecRxRelease` (one GEC clock ahead) are not
    /// sent: each one's place is reserved where its push would have taken it, and the
    /// system hands it to the GEC right after the engine's event
    /// ([`Engine::gec_inputs`], `gige_mac::Gec::take_engine_input`), which takes it
    /// there and then if nothing can reach the GEC first, else queues it at its place.
    pub fn set_gec_inputs_placed(&mut self, on: bool) {
        self.gec_inputs_placed = on;
    }

    /// The GEC inputs of the last message with their places, in the order sent
    /// ([`Engine::set_gec_inputs_placed`]): the system drains them after each event.
    pub fn gec_inputs(&mut self) -> &mut Vec<(sim_kernel::EventKey, MacMsg)> {
        &mut self.gec_inputs
    }

    /// Handles a `pci-model` message: BAR accesses from the system bus, DMA completions.
    pub fn on_pci<M: EngineMsg>(&mut self, msg: PciMsg, ctx: &mut Ctx<'_, M>, ram: &mut BufferRam) {
        let mut io = self.begin(ctx);
        self.handle_pci(msg, &mut io, ram);
        self.finish(io, ctx);
    }

    /// Handles a `nic-model` message: ATT answers and the engine's own wake-ups.
    pub fn on_nic<M: EngineMsg>(&mut self, msg: NicMsg, ctx: &mut Ctx<'_, M>, ram: &mut BufferRam) {
        let mut io = self.begin(ctx);
        self.handle_nic(msg, &mut io, ram);
        self.finish(io, ctx);
    }

    /// Handles a `gige-mac` message from the GEC: transmit completions, received frames.
    pub fn on_mac<M: EngineMsg>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>, ram: &mut BufferRam) {
        let mut io = self.begin(ctx);
        self.handle_mac(msg, &mut io, ram);
        self.finish(io, ctx);
    }

    /// An outbox for the message being handled now (the last one's, restarted).
    fn begin<M>(&mut self, ctx: &Ctx<'_, M>) -> Box<Io> {
        match self.io.take() {
            Some(mut io) => {
                io.restart(ctx.now(), ctx.tracing());
                io
            }
            None => {
                let clocks = (
                    ctx.my_domain().clone(),
                    ctx.domain_of(self.ports.gec).clone(),
                );
                Box::new(Io::reusing(ctx.now(), clocks, Vec::new(), ctx.tracing()))
            }
        }
    }

    /// Applies the outbox to the kernel, in order.
    fn finish<M: EngineMsg>(&mut self, mut io: Box<Io>, ctx: &mut Ctx<'_, M>) {
        let placed = self.gec_inputs_placed.then_some(&mut self.gec_inputs);
        io.apply(&self.ports, ctx, placed);
        if ctx.tracing() {
            let now = (self.send.tx.fifo.used, self.recv.front.fifo.used);
            if now.0 != self.fifo_traced.0 {
                ctx.record_level("send_fifo", "bytes", now.0);
            }
            if now.1 != self.fifo_traced.1 {
                ctx.record_level("recv_fifo", "bytes", now.1);
            }
            self.fifo_traced = now;
        }
        self.io = Some(io);
    }

    /// Sans-IO form of [`Engine::on_pci`]: the effects go into `io`.
    pub fn handle_pci(&mut self, msg: PciMsg, io: &mut Io, ram: &mut BufferRam) {
        match msg {
            PciMsg::TargetWrite { addr, data } => self.target_write(addr, &data, io, ram),
            PciMsg::TargetRead { tag, addr, len, .. } => {
                self.connect_deadlines(io, ram);
                self.target_read(tag, addr, len, io);
            }
            PciMsg::DmaDone(mut done) => {
                let Some(purpose) = self.outstanding.take_dma(DmaTag(done.tag)) else {
                    return self.bookkeeping_miss("DMA job of a completion");
                };
                match purpose {
                    DmaFor::SendDesc { send, rest } => {
                        self.send_desc_read(send, rest, &done, io, ram);
                    }
                    DmaFor::Payload { slot, offset, len } => {
                        // Moved, not copied: the chunk's bytes go on to the TX mover.
                        let ok = done.status == DmaStatus::Ok && done.data.len() as u64 == len;
                        let data = ok.then(|| std::mem::take(&mut done.data));
                        self.payload_read(slot, offset, len, data, io);
                    }
                    DmaFor::RecvDesc { rx, rest } => self.recv_desc_read(rx, rest, &done, io, ram),
                    DmaFor::RxChunk { rx, len } => self.rx_chunk_written(rx, len, &done, io, ram),
                    DmaFor::Status { job } => self.status_written(job, &done, io),
                    DmaFor::RecvCheck { rest } => self.recv_check_read(rest, &done, io, ram),
                    DmaFor::DoorbellLink => self.doorbell_link_read(&done, io, ram),
                }
                // The bytes were read in place or moved on (a write's completion has
                // none): what is left of the buffer goes back to circulate.
                sim_kernel::spare::give_bytes(done.data);
            }
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "nic::doorbell", ?other, "not an engine input: dropped");
            }
        }
        self.settle(io, ram);
    }

    /// Sans-IO form of [`Engine::on_nic`]: the effects go into `io`.
    pub fn handle_nic(&mut self, msg: NicMsg, io: &mut Io, ram: &mut BufferRam) {
        match msg {
            NicMsg::AttTranslated { req, result } => {
                let Some(purpose) = self.outstanding.take_att(req) else {
                    return self.bookkeeping_miss("translation of an ATT answer");
                };
                match purpose {
                    AttFor::SendDesc { send, rest } => {
                        self.send_desc_translated(send, rest, result, io, ram)
                    }
                    AttFor::SendBuf { send, seg } => {
                        self.send_buf_translated(send, seg, result, io, ram)
                    }
                    AttFor::RecvDesc { rx, rest } => {
                        self.recv_desc_translated(rx, rest, result, io, ram)
                    }
                    AttFor::RecvBuf { rx, seg } => {
                        self.recv_buf_translated(rx, seg, result, io, ram)
                    }
                    AttFor::Remote => self.remote_translated(result, io, ram),
                    AttFor::ReadSource => self.read_source_translated(result, io, ram),
                    AttFor::StatusOnly { job } => self.status_translated(job, result, io),
                    AttFor::RecvCheck { rest } => self.recv_check_translated(rest, result, io, ram),
                    AttFor::RecvCheckBuf { seg } => {
                        self.recv_check_buf_translated(seg, result, io, ram)
                    }
                    AttFor::DoorbellLink => self.doorbell_link_translated(result, io, ram),
                }
            }
            NicMsg::AttRegistered { req, result } => {
                self.att_answer(req, result.map(Some).map_err(register_code));
            }
            NicMsg::AttDeregistered { req, result } => {
                self.att_answer(req, result.map(|()| None).map_err(deregister_code));
            }
            NicMsg::Engine(wake) => match wake {
                EngineWake::DoorbellDecoded => self.doorbell_decoded(io, ram),
                EngineWake::DescriptorDecoded { send } => self.send_decoded(send, io, ram),
                EngineWake::RecvDescriptorDecoded { rx } => self.recv_decoded(rx, io, ram),
                EngineWake::HeaderChecked => self.header_checked(io, ram),
                EngineWake::RecvCheckDecoded => self.recv_check_decoded(io, ram),
                EngineWake::TxMover { gen } => self.tx_mover_woken(gen, io, ram),
                EngineWake::RxMover { gen } => self.rx_mover_woken(gen, io, ram),
                EngineWake::Retx { gen } => self.retx_woken(gen, io, ram),
            },
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "nic::doorbell", ?other, "not an engine input: dropped");
            }
        }
        self.settle(io, ram);
    }

    /// Sans-IO form of [`Engine::on_mac`]: the effects go into `io`.
    pub fn handle_mac(&mut self, msg: MacMsg, io: &mut Io, ram: &mut BufferRam) {
        match msg {
            MacMsg::GecTxDone { slot, ok, .. } => self.tx_done(slot, ok, io, ram),
            MacMsg::GecRxFrame { slot, len, msg } => self.rx_frame(slot, len, msg, io),
            // The GEC queues transmits that come before it is ready: nothing to do.
            MacMsg::GecReady => tracing::debug!(target: "nic::tx", "GEC ready"),
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "nic::rx", msg = other.name(), "not an engine input: dropped");
            }
        }
        self.settle(io, ram);
    }

    /// After a message (every one the handlers do not drop as a bookkeeping miss): let
    /// every unit make the progress it now can.
    fn settle(&mut self, io: &mut Io, ram: &mut BufferRam) {
        self.tx_pump(io, ram);
        // What most messages leave behind (the dispatcher idle with no doorbell
        // waiting, the receive front end busy or idle with no frame waiting) is
        // answered by these two inline, without a call.
        self.kick_doorbells(io, ram);
        self.rx_next(io);
    }
}

/// `ATT_RESULT` of a refused registration.
fn register_code(e: RegisterError) -> CmdResult {
    match e {
        RegisterError::Layout(_) => CmdResult::InvalidParameter,
        RegisterError::InvalidPtag => CmdResult::InvalidPtag,
        RegisterError::NoFreeEntry
        | RegisterError::NoL2Space { .. }
        | RegisterError::TableWrite(_) => CmdResult::NoResources,
    }
}

/// `ATT_RESULT` of a refused deregistration.
fn deregister_code(e: DeregisterError) -> CmdResult {
    match e {
        DeregisterError::InvalidHandle(_) => CmdResult::InvalidState,
        DeregisterError::TableWrite(_) => CmdResult::NoResources,
    }
}
