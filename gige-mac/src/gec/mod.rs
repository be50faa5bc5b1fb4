//! The GEC: the FPGA's gigabit Ethernet controller, between the VIA engine and the
//! DP83820, a component in the FPGA core clock domain (`card.core`).
//!
//! ```text
//!  engine --GecTransmit--> GEC: TX descriptor into its RAM (RAM port), CR.TXE --local bus--> DP83820
//!  engine <--GecTxDone---- GEC <--TargetWrite (TX cmdsts write-back, OWN clear)-- DP83820
//!  engine <--GecRxFrame--- GEC <--TargetWrite (RX cmdsts write-back, OWN set)---- DP83820
//!  engine --GecRxRelease-> GEC: RX cmdsts reset (RAM port), CR.RXE if the receiver may idle
//!          DP83820 --TargetRead (descriptors, TX data)--> GEC --TargetReadData (after ram_read_latency)-->
//! ```
//!
//! Roles:
//! - **local-bus target** of the buffer RAM window ([`crate::BufferRam`], passed `&mut` by
//!   the World): reads are answered `ram_read_latency` core clocks after the address is
//!   sampled, with the RAM's bytes at that edge; writes land in the RAM at the end of
//!   their transaction. A write that covers a descriptor's cmdsts is a DP83820
//!   write-back: on a TX descriptor with OWN clear it reports `GecTxDone`, on an RX
//!   descriptor with OWN set `GecRxFrame` ([`target`]). In untraced fast stepping the
//!   local bus answers the reads itself from the RAM, with the same timing and bytes,
//!   and stores the writes outside the descriptor rings itself, at the same place in
//!   the order ([`GecParams::ram_backing`], `pci_model::ram_fold`).
//! - **local-bus master** for DP83820 register writes (one dword each): TXDP, RXDP,
//!   TXCFG, RXCFG and CR.RXE at initialization; CR.TXE for every frame; CR.RXE after a
//!   released buffer is the one the receiver stopped at ([`port`]).
//! - **RAM write port**: its own descriptor writes take `ceil(16 / ram_port_bytes)` core
//!   clocks each, one at a time, and land in the RAM at their end ([`port`]).
//!
//! Rings ([`ring`]): TX descriptors are used in ring order, whatever slot the engine
//! picks (`bufptr` = that slot's buffer, `cmdsts` = OWN | length, `link` = the next
//! descriptor: the ring is closed); RX descriptor `i` always points at RX buffer `i`, with
//! `cmdsts` = slot size and OWN clear while the DP83820 owns it.
//!
//! Initialization: [`MacMsg::GecInit`] (posted by the testbench at the start of a run)
//! writes all descriptors, then programs the DP83820 over the local bus; when the last
//! write (CR.RXE) has ended, [`Gec::is_ready`] is true and the engine gets
//! [`MacMsg::GecReady`]. `GecTransmit`s that come earlier wait.
//!
//! In untraced fast stepping the engine's `GecTransmit` and `GecRxRelease` may be
//! taken in the engine's event, where nothing can reach the GEC before they would have
//! landed ([`inputs`], [`Gec::take_engine_input`]).
//!
//! Ports: `bus` (the local [`pci_model::PciBus`]; master `master`), `engine`, `mac_bus`
//! (the DP83820 bus side, for transmit [`MacMsg::TraceTag`]s). Parameters: [`GecParams`].
//! Statistics: [`GecStats`]. `tracing` target: `mac::gec`.

pub mod inputs;
pub mod params;
pub mod port;
pub mod ring;
pub mod target;

pub use params::GecParams;

use crate::buffer_ram::{BufferLayout, BufferRam};
use crate::msg::MacMsg;
use crate::tags::AddrTags;
use pci_model::{MasterId, PciMsg};
use sim_kernel::{ComponentId, Ctx, Fsm, MsgId, StateName, Time};
use std::collections::VecDeque;

/// Where the GEC is in bringing the DP83820 up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GecState {
    /// Nothing done yet (waiting for `GecInit`).
    Reset,
    /// Writing the descriptor rings into the buffer RAM.
    BuildingRings,
    /// Writing the DP83820's registers over the local bus.
    Programming,
    /// Frames can be sent and received.
    Ready,
}

impl StateName for GecState {
    fn name(self) -> &'static str {
        match self {
            GecState::Reset => "reset",
            GecState::BuildingRings => "building-rings",
            GecState::Programming => "programming",
            GecState::Ready => "ready",
        }
    }
}

/// What the GEC counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GecStats {
    /// Frames handed to the DP83820.
    pub tx_frames: u64,
    /// `GecTxDone`s with `ok` false (MAC error).
    pub tx_failed: u64,
    /// `GecTransmit`s refused (bad slot, busy slot, bad length): answered `ok: false`.
    pub tx_refused: u64,
    /// Good frames reported to the engine.
    pub rx_frames: u64,
    /// RX write-backs without OK (given straight back to the DP83820).
    pub rx_errors: u64,
    /// `GecRxRelease`s of a slot the engine did not hold.
    pub bad_releases: u64,
    /// Local-bus reads served.
    pub target_reads: u64,
    /// Local-bus writes received.
    pub target_writes: u64,
    /// Local-bus accesses outside the RAM (reads answered with target abort).
    pub target_errors: u64,
    /// Register writes to the DP83820 that did not complete normally.
    pub register_write_errors: u64,
    /// Messages it had no use for.
    pub unexpected: u64,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
}

/// A frame the engine handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxRequest {
    pub slot: u16,
    pub len: u32,
    pub msg: MsgId,
    pub arrived: Time,
}

/// Who holds an RX buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RxSlot {
    /// The DP83820 (descriptor OWN clear).
    Mac,
    /// The engine (after `GecRxFrame`).
    Engine,
    /// Released by the engine; the descriptor reset is being written.
    Releasing,
}

/// The GEC (see the module doc).
#[derive(Clone, Debug)]
pub struct Gec {
    pub(crate) params: GecParams,
    pub(crate) layout: BufferLayout,
    pub(crate) bus: ComponentId,
    pub(crate) master: MasterId,
    pub(crate) engine: ComponentId,
    pub(crate) mac_bus: Option<ComponentId>,
    pub(crate) fsm: Fsm<GecState>,
    pub(crate) ram_free_at: Time,
    pub(crate) ram_jobs: VecDeque<port::RamJob>,
    pub(crate) reg_writes: VecDeque<port::RegWrite>,
    pub(crate) tx_ring: Vec<Option<TxRequest>>,
    pub(crate) tx_next: u16,
    pub(crate) tx_busy: Vec<bool>,
    pub(crate) waiting: VecDeque<TxRequest>,
    pub(crate) rx_slots: Vec<RxSlot>,
    pub(crate) rx_mac_next: u16,
    pub(crate) rx_tags: AddrTags<MsgId>,
    pub(crate) next_untraced: u64,
    pub(crate) stats: GecStats,
    /// Engine inputs taken where they were sent, and queued at their place
    /// ([`Gec::take_engine_input`]).
    pub(crate) engine_inputs: (u64, u64),
    /// Test hook: such inputs taken this many core clocks late.
    pub(crate) input_skew_cycles: u64,
}

/// First id given to received frames that came without a trace tag.
pub const UNTRACED_MSG_BASE: u64 = 1 << 62;

impl Gec {
    /// A GEC for buffer RAM `layout`, master `master` on local bus component `bus`,
    /// reporting to `engine`; `mac_bus` (the DP83820 bus side) gets transmit trace tags.
    #[must_use]
    pub fn new(
        params: GecParams,
        layout: BufferLayout,
        bus: ComponentId,
        master: MasterId,
        engine: ComponentId,
        mac_bus: Option<ComponentId>,
    ) -> Self {
        let (ntx, nrx) = (usize::from(layout.tx_slots), usize::from(layout.rx_slots));
        Self {
            params,
            layout,
            bus,
            master,
            engine,
            mac_bus,
            fsm: Fsm::new("gec", GecState::Reset),
            ram_free_at: Time::ZERO,
            ram_jobs: VecDeque::new(),
            reg_writes: VecDeque::new(),
            tx_ring: vec![None; ntx],
            tx_next: 0,
            tx_busy: vec![false; ntx],
            waiting: VecDeque::new(),
            rx_slots: vec![RxSlot::Mac; nrx],
            rx_mac_next: 0,
            rx_tags: AddrTags::default(),
            next_untraced: UNTRACED_MSG_BASE,
            stats: GecStats::default(),
            engine_inputs: (0, 0),
            input_skew_cycles: 0,
        }
    }

    /// Whether the DP83820 is programmed and frames can flow.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.fsm.state() == GecState::Ready
    }

    /// Its initialization state.
    #[must_use]
    pub fn state(&self) -> GecState {
        self.fsm.state()
    }

    /// What it counted.
    #[must_use]
    pub fn stats(&self) -> &GecStats {
        &self.stats
    }

    /// Its parameters.
    #[must_use]
    pub fn params(&self) -> &GecParams {
        &self.params
    }

    /// Handles a message from the engine, the testbench, the DP83820 or itself.
    pub fn handle_mac<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        msg: MacMsg,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        match msg {
            MacMsg::GecInit => self.init(ctx),
            MacMsg::GecTransmit { slot, len, msg } => self.transmit(slot, len, msg, ctx),
            MacMsg::GecRxRelease { slot } => self.release(slot, ctx),
            MacMsg::GecWake => self.ram_wake(ctx, ram),
            MacMsg::TraceTag { descriptor, msg } => {
                self.rx_tags.insert(descriptor, msg);
            }
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "mac::gec", msg = other.name(), "GEC: message dropped");
            }
        }
    }

    /// Handles a local-bus message: target accesses to the RAM and its register writes'
    /// completions.
    pub fn handle_pci<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        match msg {
            PciMsg::TargetRead { tag, addr, len, .. } => self.target_read(tag, addr, len, ctx, ram),
            PciMsg::TargetWrite { addr, data } => {
                self.target_write(addr, &data, ctx, ram);
                // Stored: the bytes' buffer (a receive-data write's) goes back to circulate.
                sim_kernel::spare::give_bytes(data);
            }
            PciMsg::TransactionDone(done) => self.register_write_done(&done, ctx),
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "mac::gec", ?other, "GEC: PCI message dropped");
            }
        }
    }

    /// When a message sent now to `to` lands (one cycle of its domain).
    pub(crate) fn landing<M>(ctx: &Ctx<'_, M>, to: ComponentId) -> Time {
        ctx.domain_of(to)
            .edge_after(ctx.now(), sim_kernel::Cycles(1))
    }
}
