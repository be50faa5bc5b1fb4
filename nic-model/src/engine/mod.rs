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
//!  |   send: tx (descriptor translate/read/decode, buffer translate)                   |
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
//! the system message type ([`EngineMsg`]), each given the card's buffer RAM
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
//! Files:
//!
//! | file | owns |
//! |---|---|
//! | `params`, `stats` | [`EngineParams`], [`EnginePorts`]; [`EngineStats`], [`ViInfo`] |
//! | `regs` | BAR0 registers, the ATT registration mailbox |
//! | `doorbell` | doorbell windows, the doorbell FIFO and its back-pressure, dispatch |
//! | `vi`, `connect` | the VI table; VI commands and connection frames |
//! | `tx`, `txcheck` | send front end: descriptor fetch; decode, buffer translation |
//! | `txdata`, `txmove` | TX slots and fragments; payload DMA, TX mover, handoff, TX done |
//! | `complete` | send completion (TxDone / Ack / Nak), status writes, flushes |
//! | `rx`, `rxdata` | receive front end, header check; reassembly, placement plan |
//! | `recvdesc` | receive descriptors |
//! | `rxdrain`, `rxerror` | RX buffer -> host memory, message completion; receive errors, Ack/Nak |
//! | `fifo`, `frame`, `pending` | word movers and FIFO space; frame formats; ATT/DMA bookkeeping |

mod complete;
mod connect;
mod doorbell;
mod fifo;
pub mod frame;
pub mod ids;
pub mod io;
mod params;
mod pending;
mod recvdesc;
mod regs;
mod rx;
mod rxdata;
mod rxdrain;
mod rxerror;
mod stats;
mod tx;
mod txcheck;
mod txdata;
mod txmove;
mod vi;

pub use doorbell::DoorbellState;
pub use fifo::MoverState;
pub use params::{EngineParams, EnginePorts, WordStepping};
pub use rx::RxState;
pub use stats::{EngineStats, ViCounters, ViInfo};
pub use tx::SendPhase;
pub use vi::ViState;

use crate::att::{DeregisterError, RegisterError};
use crate::msg::{NicMsg, ReqId};
use gige_mac::{BufferError, BufferLayout, BufferRam, MacMsg};
use ids::{DmaTag, JobId, MoverGen, RxId, SendId};
use io::Io;
use pci_model::{DmaStatus, PciMsg};
use pending::{AttFor, DmaFor};
use sim_kernel::{ClockDomain, Ctx};
use std::collections::{BTreeMap, VecDeque};
use via_abi::bar::CmdResult;

/// The message bounds of the engine's handlers: a system message type that wraps the
/// three crates' enums.
pub trait EngineMsg: From<PciMsg> + From<NicMsg> + From<MacMsg> {}

impl<T: From<PciMsg> + From<NicMsg> + From<MacMsg>> EngineMsg for T {}

/// The engine's wake-ups to itself (carried as [`NicMsg::Engine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineWake {
    /// A doorbell's decode time is over.
    DoorbellDecoded,
    /// Send context `ctx`'s descriptor decode time is over.
    DescriptorDecoded {
        /// The send context.
        send: SendId,
    },
    /// The receive descriptor of received message `id` is decoded.
    RecvDescriptorDecoded {
        /// The received message.
        rx: RxId,
    },
    /// The header of the frame in the receive front end has been read and checked.
    HeaderChecked,
    /// The TX word mover's scheduled edge (stale generations are ignored).
    TxMover {
        /// Generation of the wake-up.
        gen: MoverGen,
    },
    /// The RX word mover's scheduled edge.
    RxMover {
        /// Generation of the wake-up.
        gen: MoverGen,
    },
}

/// Why an engine cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A parameter is out of range.
    #[error("engine parameter {name}: {why}")]
    BadParam {
        /// The parameter.
        name: &'static str,
        /// What is wrong.
        why: &'static str,
    },
    /// The buffer RAM layout is invalid.
    #[error("buffer RAM: {0}")]
    Layout(#[from] BufferError),
}

/// The VIA protocol engine (see the module doc).
#[derive(Clone, Debug)]
pub struct Engine {
    params: EngineParams,
    ports: EnginePorts,
    layout: BufferLayout,
    stats: EngineStats,
    next_msg: u64,
    next_req: u64,
    next_dma: DmaTag,
    next_send: SendId,
    next_rx: RxId,
    next_job: JobId,
    att_wait: BTreeMap<ReqId, AttFor>,
    dma_wait: BTreeMap<DmaTag, DmaFor>,
    regs: regs::Regs,
    doorbells: doorbell::DoorbellUnit,
    vis: Vec<Option<vi::Vi>>,
    pending_connects: VecDeque<connect::PendingConnect>,
    sends: BTreeMap<SendId, tx::SendCtx>,
    tx: txdata::TxPath,
    status_jobs: BTreeMap<JobId, complete::StatusJob>,
    rx: rx::RxPath,
    rx_msgs: BTreeMap<RxId, rxdata::RxMessage>,
    /// The clock domains of the engine and the GEC, kept between messages for [`Io`].
    clocks: Option<(ClockDomain, ClockDomain)>,
}

impl Engine {
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
            vis: vec![None; usize::from(params.max_vis)],
            tx: txdata::TxPath::new(layout.tx_slots, params.send_fifo_bytes),
            rx: rx::RxPath::new(params.recv_fifo_bytes),
            params,
            ports,
            layout: layout.clone(),
            stats: EngineStats::default(),
            next_msg: 0,
            next_req: 0,
            next_dma: DmaTag::default(),
            next_send: SendId::default(),
            next_rx: RxId::default(),
            next_job: JobId::default(),
            att_wait: BTreeMap::new(),
            dma_wait: BTreeMap::new(),
            regs: regs::Regs::default(),
            doorbells: doorbell::DoorbellUnit::default(),
            pending_connects: VecDeque::new(),
            sends: BTreeMap::new(),
            status_jobs: BTreeMap::new(),
            rx_msgs: BTreeMap::new(),
            clocks: None,
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
        s.send_fifo_max = s.send_fifo_max.max(self.tx.fifo.max);
        s.recv_fifo_max = s.recv_fifo_max.max(self.rx.fifo.max);
        s
    }

    /// A snapshot of VI `n`, if it exists.
    #[must_use]
    pub fn vi(&self, n: u16) -> Option<ViInfo> {
        self.vi_ref(n).map(vi::Vi::info)
    }

    /// Doorbells waiting in the FIFO.
    #[must_use]
    pub fn doorbells_waiting(&self) -> usize {
        self.doorbells.fifo.len()
    }

    /// Whether nothing is in flight: no doorbell, descriptor, frame, DMA or translation.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.doorbells.fifo.is_empty()
            && self.sends.is_empty()
            && self.rx.cur.is_none()
            && self.rx.queue.is_empty()
            && self.att_wait.is_empty()
            && self.dma_wait.is_empty()
            && self.tx.slots.iter().all(Option::is_none)
            && self.tx.control.is_empty()
            && self.status_jobs.is_empty()
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

    /// An outbox for the message being handled now.
    fn begin<M>(&mut self, ctx: &Ctx<'_, M>) -> Io {
        let (core, gec) = self.clocks.take().unwrap_or_else(|| {
            (
                ctx.my_domain().clone(),
                ctx.domain_of(self.ports.gec).clone(),
            )
        });
        Io::new(ctx.now(), core, gec)
    }

    /// Applies the outbox to the kernel, in order.
    fn finish<M: EngineMsg>(&mut self, mut io: Io, ctx: &mut Ctx<'_, M>) {
        io.apply(&self.ports, ctx);
        self.clocks = Some(io.into_clocks());
    }

    /// Sans-IO form of [`Engine::on_pci`]: the effects go into `io`.
    pub fn handle_pci(&mut self, msg: PciMsg, io: &mut Io, ram: &mut BufferRam) {
        match msg {
            PciMsg::TargetWrite { addr, data } => self.target_write(addr, &data, io, ram),
            PciMsg::TargetRead { tag, addr, len, .. } => self.target_read(tag, addr, len, io),
            PciMsg::DmaDone(done) => {
                let Some(purpose) = self.dma_wait.remove(&DmaTag(done.tag)) else {
                    tracing::warn!(target: "nic::tx", tag = done.tag, "completion of an unknown DMA job");
                    return;
                };
                match purpose {
                    DmaFor::SendDesc { send, rest } => {
                        self.send_desc_read(send, rest, done, io, ram)
                    }
                    DmaFor::Payload { slot, offset, len } => {
                        // Moved, not copied: the chunk's bytes go on to the TX mover.
                        let ok = done.status == DmaStatus::Ok && done.data.len() as u64 == len;
                        let data = ok.then_some(done.data);
                        self.payload_read(slot, offset, len, data, io);
                    }
                    DmaFor::RecvDesc { rx, rest } => self.recv_desc_read(rx, rest, &done, io, ram),
                    DmaFor::RxChunk { rx, len } => self.rx_chunk_written(rx, len, &done, io, ram),
                    DmaFor::Status { job } => self.status_written(job, &done, io),
                }
            }
            other => {
                tracing::warn!(target: "nic::doorbell", ?other, "not an engine input: dropped");
            }
        }
        self.settle(io, ram);
    }

    /// Sans-IO form of [`Engine::on_nic`]: the effects go into `io`.
    pub fn handle_nic(&mut self, msg: NicMsg, io: &mut Io, ram: &mut BufferRam) {
        match msg {
            NicMsg::AttTranslated { req, result } => {
                let Some(purpose) = self.att_wait.remove(&req) else {
                    tracing::warn!(target: "nic::tx", ?req, "answer to an unknown translation");
                    return;
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
                    AttFor::StatusOnly { job } => self.status_translated(job, result, io),
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
                EngineWake::TxMover { gen } => self.tx_mover_woken(gen, io, ram),
                EngineWake::RxMover { gen } => self.rx_mover_woken(gen, io, ram),
            },
            other => {
                tracing::warn!(target: "nic::doorbell", ?other, "not an engine input: dropped");
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
                tracing::warn!(target: "nic::rx", msg = other.name(), "not an engine input: dropped");
            }
        }
        self.settle(io, ram);
    }

    /// After every message: let every unit make the progress it now can.
    fn settle(&mut self, io: &mut Io, ram: &mut BufferRam) {
        self.tx_pump(io, ram);
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
