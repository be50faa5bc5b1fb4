//! The PCI bus component: arbiter, bus-phase state machine, target decode, the PCI
//! interfaces of its masters, and (on the system bus) the host bridge.
//!
//! ```text
//!            Request / CpuRead / CpuWrite             TargetRead / TargetWrite
//!  masters ----------------------------> +---------+ ------------------------> device
//!          <---------------------------- | PciBus  | <------------------------ targets
//!            TransactionDone / Cpu*      | arbiter |   TargetReadData / Abort
//!                                        | phases  |
//!                                        | bridge  | <--&mut HostMemory-- World
//!                                        +---------+
//! ```
//!
//! **Clocking.** The bus is clocked by its PCI domain; clock `k` is the period that begins
//! at edge `k`. A message that lands at edge `e` is a signal driven in clock `e`: a
//! request is REQ# in clock `e` (the arbiter samples it at edge `e+1`), device read data
//! can be driven with TRDY# in clock `e`. The bus evaluates clock `e` in a `Tick` at edge
//! `e` with late priority, after every message landing at that edge.
//!
//! **Stepping.** [`Stepping::PerClock`] ticks every clock while anything is pending.
//! [`Stepping::FastForward`] ticks only at clocks where something observable can happen
//! (an output message, a state change, a host-memory commit) and steps the quiet clocks
//! in between when it wakes, through the same per-clock function (a run of plain data
//! phases as a whole, see `bulk.rs`); a test proves both give identical results.
//!
//! **Masters.** A master hands the bus whole [`BusRequest`]s; the bus plays the master's
//! PCI interface: REQ# while a request is queued, repeats a retried transaction,
//! continues a disconnected or latency-timer-cut one at the next address (REQ# off for
//! two clocks after a target termination, PCI 2.2 §3.4.1), and reports once with
//! [`TransactionDone`](crate::TransactionDone). Masters never insert wait states (IRDY# is asserted every data
//! phase: their data is in a FIFO).
//!
//! **Targets.** A device target is another component with a [`TargetProfile`]; the host
//! bridge is built in (see [`crate::bridge`]). Timing rules are in [`fsm`] and
//! [`tenure`]. A device target applies back-pressure to posted writes with
//! [`PciMsg::TargetWriteRetry`]: writes into a window it has turned on are Retried at
//! their first data phase until it turns the window off.
//!
//! **Folds** (untraced fast stepping): the card's DMA master run inside its bus
//! (`dma_fold.rs`), a RAM-backed target's reads and writes answered and stored by the bus
//! (`fold.rs`), a lent master's completions and register writes run by the bus where
//! nothing can reach it first (`master_fold.rs`, [`FoldedMaster`]).
//!
//! Not modelled: fast back-to-back transactions, dual-address cycles, I/O and
//! configuration commands, parity, LOCK#, a master that inserts wait states.

pub(crate) mod arbiter;
mod bulk;
mod complete;
mod master_fold;
pub use master_fold::{FoldPort, FoldedMaster};
mod dma_fold;
mod fold;
pub mod fsm;
mod inputs;
mod lookahead;
mod retry;
mod retry_run;
mod settle;
mod start;
pub mod tenure;
mod whole;
pub(crate) mod words;

pub use fold::FoldStats;
pub use fsm::BusPhase;

use crate::bridge::HostBridge;
use crate::error::PciError;
use crate::memory::HostMemory;
use crate::msg::{BusRequest, Command, MasterId, PciMsg};
use crate::params::{BridgeParams, BusParams, Stepping, TargetProfile};
use crate::ram_fold::RamBacking;
use crate::stats::{BusStats, MasterStats, TenureRecord};
use arbiter::Arbiter;
use sim_kernel::{ComponentId, Ctx, Cycles, EventKey, EventToken, Fsm, Priority, Time};
use std::cell::Cell;
use std::collections::VecDeque;
use tenure::Tenure;

/// How a master is registered with a bus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MasterConfig {
    /// Name for statistics (e.g. `nic.dma`).
    pub name: String,
    /// The component that receives its `TransactionDone`s.
    pub component: ComponentId,
    /// Its Latency Timer register [PCI clocks] (PCI 2.2 §3.5.4).
    pub latency_timer: Cycles,
    /// Whether it does 64-bit transfers on a 64-bit bus.
    pub supports_64bit: bool,
    /// Clocks its bus interface needs after each of its transactions ends before it
    /// asserts REQ# again for the next (re-arming its address and count registers);
    /// 0 keeps REQ# asserted for a request queued behind the one in progress.
    pub recovery: Cycles,
}

/// A target's index on one bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetId(pub u16);

#[derive(Clone, Debug)]
pub(crate) enum TargetKind {
    HostBridge,
    Device {
        component: ComponentId,
        profile: TargetProfile,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct TargetEntry {
    pub start: u64,
    pub end: u64,
    pub kind: TargetKind,
}

/// Who hears about a finished request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Master(ComponentId),
    CpuRead(ComponentId),
    CpuWrite,
}

/// A request in a master's queue, with its progress.
#[derive(Clone, Debug)]
pub(crate) struct Queued {
    pub req: BusRequest,
    pub total: u64,
    pub arrival: u64,
    pub done: u64,
    pub data: Vec<u8>,
    pub reply: Reply,
    pub transactions: u32,
    pub retries: u32,
    pub disconnects: u32,
    pub lt_cuts: u32,
    pub start: Option<Time>,
}

#[derive(Clone, Debug)]
pub(crate) struct MasterPort {
    pub lt: u64,
    pub is64: bool,
    pub queue: VecDeque<Queued>,
    /// REQ# stays deasserted in clocks before this one (after a target termination, or
    /// while the master recovers from its last transaction).
    pub hold_until: u64,
    /// Clocks of recovery after each of its transactions (see [`MasterConfig::recovery`]).
    pub recovery: u64,
}

impl MasterPort {
    /// The first clock whose REQ# line (sampled from the clock before) can be asserted
    /// for the queued request `q`: after the port's hold-off and `q`'s arrival.
    #[inline]
    pub(crate) fn req_on_from(&self, q: &Queued) -> u64 {
        self.hold_until.max(q.arrival).saturating_add(1)
    }
}

/// A read forwarded to a device target, and its answer once it arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceRead {
    pub tag: u64,
    pub target: usize,
    pub addr: u64,
    pub command: Command,
    pub reply: Option<DeviceReply>,
    /// The first clock that sees `reply` (a folded read's answer is known before the
    /// clock its message would have landed in; 0 for a landed message).
    pub visible_from: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeviceReply {
    Data(Vec<u8>),
    Abort,
    /// A folded read's `len` bytes, sampled in the target's RAM at the place `at` of
    /// the run's order (registered there as `sample`), not taken yet (`fold.rs`).
    Sampled {
        len: u64,
        at: EventKey,
        sample: Option<u64>,
    },
}

impl DeviceReply {
    /// Bytes of data the answer carries (`None`: target abort).
    pub(crate) fn data_len(&self) -> Option<u64> {
        match self {
            DeviceReply::Data(d) => Some(d.len() as u64),
            DeviceReply::Sampled { len, .. } => Some(*len),
            DeviceReply::Abort => None,
        }
    }
}

/// The stretch of a run the per-transaction log keeps (see
/// [`PciBus::set_tenure_log_window`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LogWindow {
    from: u64,
    to: u64,
    open: bool,
    closed: bool,
}

/// An output collected instead of sent (debug checks): target, instant, message, and the
/// place it is deferred to (`emit_deferred`), if any.
#[cfg(debug_assertions)]
pub(crate) type Captured = (ComponentId, Time, PciMsg, Option<EventKey>);

/// A commit instant, the clock grid (period and phase, in ps) it was converted on, and
/// its clock (see `PciBus::next_commit_clock`); a grid of period 0 marks none.
type CommitClock = (Time, (u64, u64), u64);

/// One PCI bus segment (see the module doc).
#[derive(Clone, Debug)]
pub struct PciBus {
    params: BusParams,
    period_ps: u64,
    phase_ps: u64,
    /// The last commit instant `next_commit_clock` converted, with the clock period and
    /// phase it used and its clock (see there).
    commit_clock: Cell<CommitClock>,
    domain_checked: bool,
    now_clk: u64,
    clk_next: u64,
    tick: Option<u64>,
    /// The queued wake-up of `tick`, moved (`Ctx::move_wake`) when superseded.
    tick_token: Option<EventToken>,
    generation: u64,
    phase: Fsm<BusPhase>,
    arb: Arbiter,
    masters: Vec<MasterPort>,
    master_components: Vec<Option<ComponentId>>,
    targets: Vec<TargetEntry>,
    bridge: Option<HostBridge>,
    bridge_master: Option<usize>,
    /// The transaction in progress (boxed: each clock takes it out and puts it back).
    active: Option<Box<Tenure>>,
    /// The box of the last transaction, reused by the next one.
    spare_tenure: Option<Box<Tenure>>,
    device_reads: Vec<DeviceRead>,
    /// Device write-retry windows `[start, end)` that are on (back-pressure).
    write_retry: Vec<(u64, u64)>,
    next_read_tag: u64,
    /// Scratch for the REQ# lines of the clock being stepped (reused every clock).
    reqs_buf: Vec<bool>,
    /// Requests queued at all masters together (the one in progress included).
    queued: usize,
    /// Test hook: clocks each Retry attempt applied as a whole holds REQ# off longer
    /// (see [`PciBus::set_retry_run_skew_clocks`]); 0 in every real run.
    retry_run_skew: u64,
    /// Test hook: clocks added to the untraced wake-up bound of a device transaction
    /// (see [`PciBus::set_untraced_skew_clocks`]); 0 in every real run.
    untraced_skew: u64,
    /// RAM-backed device targets, by index (`fold.rs`).
    ram_targets: Vec<(usize, RamBacking)>,
    /// The handler was given the RAM of the RAM-backed targets (`PciBus::handle_ram`).
    fold_on: bool,
    /// Samples decided in this handler, registered with the RAM at its end.
    fold_new: Vec<fold::NewSample>,
    /// Samples registered with the RAM and not taken yet.
    samples_out: u64,
    /// Writes stored for the RAM in this handler (the write fold), handed to it at its
    /// end: place, address, bytes.
    fold_writes: Vec<(sim_kernel::EventKey, u64, Vec<u8>)>,
    /// Test hook: target clocks a folded write's place lies late (see
    /// [`PciBus::set_fold_write_skew_clocks`]); 0 in every real run.
    fold_write_skew: u64,
    /// Reads answered from a target's RAM and writes stored there.
    fold: FoldStats,
    /// The places of the last folded messages, a ring (`fold.rs`).
    fold_recent: [(sim_kernel::EventKey, fold::Folded); fold::RECENT_FOLDS],
    /// Folded messages so far (the ring's next index, modulo its size).
    fold_recent_n: u64,
    /// The key of a settled stop, until the bus's next event: the folded messages whose
    /// place is after it are not counted (`fold.rs`).
    fold_stop: Option<sim_kernel::EventKey>,
    /// Test hook: clocks a folded read's data is seen late (0 in every real run).
    fold_skew: u64,
    /// Test hook: clocks added to the untraced wake-up bound of a delayed read's retry
    /// loop (see [`PciBus::set_untraced_read_skew_clocks`]); 0 in every real run.
    untraced_read_skew: u64,
    /// Posted DMA writes commit lazily (see [`PciBus::set_lazy_commits`]).
    lazy_commits: bool,
    /// Test hook: clocks a lazily committed write becomes visible late (see
    /// [`PciBus::set_lazy_commit_skew_clocks`]); 0 in every real run.
    lazy_commit_skew: u64,
    /// Test hook: clocks a transaction applied whole ends late (see
    /// [`PciBus::set_whole_skew_clocks`]); 0 in every real run.
    whole_skew: u64,
    /// Test hook: clocks a start applied at once comes late (see
    /// [`PciBus::set_start_skew_clocks`]); 0 in every real run.
    start_skew: u64,
    /// Which requests are queued without stepping up to them (see
    /// [`PciBus::set_deferral`]); [`Deferral::Behind`] in every real run.
    deferral: Deferral,
    /// The DMA master folded into the bus (`dma_fold.rs`), if any.
    folded_dma: Option<Box<dma_fold::FoldedDma>>,
    /// Test hook: clocks a folded DMA master's requests land late (see
    /// [`PciBus::set_dma_fold_skew_clocks`]); 0 in every real run.
    dma_fold_skew: u64,
    /// The component of the master whose completions the bus may run
    /// (`master_fold.rs`), if any.
    local_master: Option<ComponentId>,
    /// Whether the handler being run was lent that master (`PciBus::handle_local`).
    local_on: bool,
    /// Test hook: clocks that master takes its completions late (see
    /// [`PciBus::set_local_fold_skew_clocks`]); 0 in every real run.
    local_fold_skew: u64,
    /// Completions kept to run once the handler is done, with their places.
    local_done: Vec<(PciMsg, sim_kernel::EventKey)>,
    /// Completions of that master run by the bus, and sent because something could
    /// reach it first.
    local_folded: u64,
    local_sent: u64,
    /// Debug checks' copies of the bus: their outputs, collected instead of sent.
    #[cfg(debug_assertions)]
    capture: Option<Vec<Captured>>,
    stats: BusStats,
    log: Option<Vec<TenureRecord>>,
    log_window: Option<LogWindow>,
}

/// Which requests the bus queues without stepping up to them (see
/// [`PciBus::set_deferral`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Deferral {
    /// None: the bus steps up to every input.
    Never,
    /// Requests behind another of their master's (the default).
    #[default]
    Behind,
    /// Every request: a deliberately broken fast path, for the tests that catch it.
    Any,
}

impl PciBus {
    /// A bus with no masters and no targets. Register it with the kernel in the domain
    /// `params.clock_domain(name)`: its clock is that domain's.
    ///
    /// # Errors
    /// Bad parameters.
    pub fn new(params: BusParams) -> Result<Self, PciError> {
        let period = params.clock_domain("pci")?.period().as_ps();
        Ok(Self {
            arb: Arbiter::new(params.park),
            params,
            period_ps: period,
            // No commit is converted yet: no grid has period 0.
            commit_clock: Cell::new((Time::ZERO, (0, 0), 0)),
            phase_ps: 0,
            domain_checked: false,
            now_clk: 0,
            clk_next: 0,
            tick: None,
            tick_token: None,
            generation: 0,
            phase: Fsm::new("pci.bus", BusPhase::Idle),
            masters: Vec::new(),
            master_components: Vec::new(),
            targets: Vec::new(),
            bridge: None,
            bridge_master: None,
            active: None,
            spare_tenure: None,
            device_reads: Vec::new(),
            write_retry: Vec::new(),
            next_read_tag: 1,
            reqs_buf: Vec::new(),
            queued: 0,
            retry_run_skew: 0,
            untraced_skew: 0,
            ram_targets: Vec::new(),
            fold_on: false,
            fold_new: Vec::new(),
            samples_out: 0,
            fold_writes: Vec::new(),
            fold_write_skew: 0,
            fold: FoldStats::default(),
            fold_recent: [(sim_kernel::EventKey::default(), fold::Folded::Read);
                fold::RECENT_FOLDS],
            fold_recent_n: 0,
            fold_stop: None,
            fold_skew: 0,
            untraced_read_skew: 0,
            lazy_commits: false,
            lazy_commit_skew: 0,
            whole_skew: 0,
            start_skew: 0,
            deferral: Deferral::Behind,
            folded_dma: None,
            dma_fold_skew: 0,
            local_master: None,
            local_on: false,
            local_fold_skew: 0,
            local_done: Vec::new(),
            local_folded: 0,
            local_sent: 0,
            #[cfg(debug_assertions)]
            capture: None,
            stats: BusStats::default(),
            log: None,
            log_window: None,
        })
    }

    /// Test hook: which requests landing while a wake-up is queued are queued without
    /// stepping the bus up to them (untraced fast stepping). [`Deferral::Behind`], the
    /// default and every real run's, takes those behind another of their master's;
    /// [`Deferral::Never`] steps up to every input as exact stepping does (the same
    /// results, more work); [`Deferral::Any`] takes every request, a deliberately
    /// broken fast path (a request that is not behind another can start before the
    /// queued wake-up) that the lockstep harness must catch.
    pub fn set_deferral(&mut self, d: Deferral) {
        self.deferral = d;
    }

    /// The bus parameters.
    #[must_use]
    pub fn params(&self) -> &BusParams {
        &self.params
    }

    /// Registers a master; its index is its arbitration order.
    ///
    /// # Errors
    /// More than 65 536 masters.
    pub fn add_master(&mut self, cfg: MasterConfig) -> Result<MasterId, PciError> {
        let id = self.push_master(
            cfg.name,
            cfg.latency_timer,
            cfg.supports_64bit,
            Some(cfg.component),
        )?;
        if let Some(p) = self.masters.get_mut(usize::from(id.0)) {
            p.recovery = cfg.recovery.0;
        }
        Ok(id)
    }

    /// Adds a master port, its statistics and its reply component (`None`: the bridge).
    fn push_master(
        &mut self,
        name: String,
        latency_timer: Cycles,
        supports_64bit: bool,
        component: Option<ComponentId>,
    ) -> Result<MasterId, PciError> {
        let id = u16::try_from(self.masters.len()).map_err(|_| PciError::BadParam {
            name: "masters",
            why: "at most 65536 masters per bus".into(),
        })?;
        self.masters.push(MasterPort {
            lt: latency_timer.0,
            is64: supports_64bit,
            queue: VecDeque::new(),
            hold_until: 0,
            recovery: 0,
        });
        self.stats.per_master.push(MasterStats {
            name,
            ..MasterStats::default()
        });
        self.master_components.push(component);
        Ok(MasterId(id))
    }

    /// Registers a device target for `[start, start + len)`.
    ///
    /// # Errors
    /// An empty or overflowing range, one that overlaps another target, or more write
    /// wait states than the 16-clock initial latency allows (14: a first TRDY# in the
    /// 16th clock at the latest, PCI 2.2 §3.5.1.1).
    pub fn add_device_target(
        &mut self,
        start: u64,
        len: u64,
        component: ComponentId,
        profile: TargetProfile,
    ) -> Result<TargetId, PciError> {
        if profile.write_wait_states.0 > 14 {
            return Err(PciError::BadParam {
                name: "target.write_wait_states",
                why: format!(
                    "{} wait states exceed the 16-clock target initial latency (at most 14)",
                    profile.write_wait_states.0
                ),
            });
        }
        self.add_target(start, len, TargetKind::Device { component, profile })
    }

    /// Attaches the host bridge: the target for host memory `[0, memory_bytes)` and a
    /// master for CPU accesses. Returns the bridge's master id.
    ///
    /// # Errors
    /// Bad bridge parameters, a bridge already attached, or an overlapping range.
    pub fn attach_host_bridge(
        &mut self,
        params: BridgeParams,
        memory_bytes: u64,
    ) -> Result<MasterId, PciError> {
        params.validate()?;
        if self.bridge.is_some() {
            return Err(PciError::BadParam {
                name: "bridge",
                why: "a bus has at most one host bridge".into(),
            });
        }
        self.add_target(0, memory_bytes, TargetKind::HostBridge)?;
        let id = self.push_master(
            "host-bridge".into(),
            params.latency_timer,
            params.supports_64bit,
            None,
        )?;
        self.bridge_master = Some(usize::from(id.0));
        self.bridge = Some(HostBridge::new(params, memory_bytes));
        Ok(id)
    }

    fn add_target(&mut self, start: u64, len: u64, kind: TargetKind) -> Result<TargetId, PciError> {
        let end = start
            .checked_add(len)
            .filter(|_| len > 0)
            .ok_or(PciError::BadParam {
                name: "target range",
                why: format!("{start:#x}+{len} is empty or overflows"),
            })?;
        if self.targets.iter().any(|t| start < t.end && t.start < end) {
            return Err(PciError::Overlap { start, end });
        }
        let id = u16::try_from(self.targets.len()).map_err(|_| PciError::BadParam {
            name: "targets",
            why: "at most 65536 targets per bus".into(),
        })?;
        self.targets.push(TargetEntry { start, end, kind });
        Ok(TargetId(id))
    }

    /// The host bridge, if attached.
    #[must_use]
    pub fn bridge(&self) -> Option<&HostBridge> {
        self.bridge.as_ref()
    }

    /// Statistics up to the last clock the bus has simulated.
    #[must_use]
    pub fn stats(&self) -> &BusStats {
        &self.stats
    }

    /// The bus phase of the last simulated clock.
    #[must_use]
    pub fn phase(&self) -> BusPhase {
        self.phase.state()
    }

    /// Clocks simulated so far (the next clock to simulate).
    #[must_use]
    pub fn clocks_simulated(&self) -> u64 {
        self.clk_next
    }

    /// Whether nothing is queued, in flight or waiting to commit.
    #[must_use]
    pub fn is_quiescent(&self) -> bool {
        self.idle_quiescent() && self.bridge.as_ref().is_none_or(|b| b.pending_writes() == 0)
    }

    /// The device write-retry windows `[start, end)` that are on, in the order they were
    /// turned on (see [`PciMsg::TargetWriteRetry`]).
    #[must_use]
    pub fn write_retry_windows(&self) -> &[(u64, u64)] {
        &self.write_retry
    }

    /// Test hook: wakes the bus `clocks` late for the end of a device transaction in the
    /// untraced fast path, a deliberately broken fast path that the lockstep harness
    /// must catch (a late output). 0 (the default) in every real run.
    pub fn set_untraced_skew_clocks(&mut self, clocks: u64) {
        self.untraced_skew = clocks;
    }

    /// Test hook: wakes the bus `clocks` late for the end of the first attempt of a
    /// delayed read that moves data, as the untraced retry-loop look-ahead predicts it
    /// (`retry.rs`): a deliberately broken fast path that the lockstep harness must
    /// catch. 0 (the default) in every real run.
    pub fn set_untraced_read_skew_clocks(&mut self, clocks: u64) {
        self.untraced_read_skew = clocks;
    }

    /// Lets the host bridge commit posted DMA writes lazily in `Stepping::FastForward`
    /// without a trace: the data waits in host memory with its commit instant
    /// ([`HostMemory::settle_before`]) and the bus needs no wake-up at the commit's
    /// clock while it has other work that wakes it later (a commit into a watched range
    /// keeps its wake-up, so its watcher is told on time). Only for a system whose every
    /// reader of host memory besides the bus settles it before each of its events (the
    /// host CPU does); off by default.
    pub fn set_lazy_commits(&mut self, on: bool) {
        self.lazy_commits = on;
    }

    /// Test hook: a lazily committed write becomes visible `clocks` bus clocks after its
    /// commit (a deliberately broken fast path that the lockstep harness must catch). 0
    /// (the default) in every real run.
    pub fn set_lazy_commit_skew_clocks(&mut self, clocks: u64) {
        self.lazy_commit_skew = clocks;
    }

    /// Whether a posted write of this run commits lazily (see
    /// [`PciBus::set_lazy_commits`]).
    fn commits_lazily(&self, tracing: bool) -> bool {
        self.lazy_commits && self.params.stepping == Stepping::FastForward && !tracing
    }

    /// Turns the per-transaction log on (clearing it) or off.
    pub fn set_tenure_log(&mut self, on: bool) {
        self.log = on.then(Vec::new);
        self.log_window = None;
    }

    /// Turns the per-transaction log on (clearing it) for a window of the run only: it
    /// starts with the first transaction whose tag is at least `from` and stops before
    /// the first whose tag is above `to`. Every record in between is kept, of any tag,
    /// so the window is the same stretch of the whole log; its memory does not grow
    /// with the length of the run.
    pub fn set_tenure_log_window(&mut self, from: u64, to: u64) {
        self.log = Some(Vec::new());
        self.log_window = Some(LogWindow {
            from,
            to,
            open: false,
            closed: false,
        });
    }

    /// Whether the log keeps a record of a transaction tagged `tag` (and moves the
    /// window).
    fn log_keeps(&mut self, tag: u64) -> bool {
        let Some(w) = self.log_window.as_mut() else {
            return true;
        };
        if w.closed {
            return false;
        }
        if tag > w.to && w.open {
            w.closed = true;
            return false;
        }
        if tag >= w.from {
            w.open = true;
        }
        w.open
    }

    /// The per-transaction log (empty unless turned on).
    #[must_use]
    pub fn tenure_log(&self) -> &[TenureRecord] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// The start of clock `k` (edge `k` of the bus domain).
    #[must_use]
    pub fn edge(&self, k: u64) -> Time {
        Time(
            self.phase_ps
                .saturating_add(k.saturating_mul(self.period_ps)),
        )
    }

    /// Handles one message at `ctx.now()`. `mem` is the node's host memory (needed when a
    /// host bridge is attached; `None` for a bus without one).
    pub fn handle<M: From<PciMsg>>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        mem: Option<&mut HostMemory>,
    ) {
        self.handle_with(msg, ctx, mem, None);
    }

    /// [`PciBus::handle`] with the master whose completions the bus may run, if lent
    /// (`master_fold.rs`): they are run once the clocks of a wake-up are stepped, before
    /// the next wake-up is computed.
    #[inline(always)]
    fn handle_with<M: From<PciMsg>>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        mem: Option<&mut HostMemory>,
        master: Option<&mut dyn FoldedMaster<M>>,
    ) {
        let mut mem = mem;
        let (phase, period) = {
            let d = ctx.my_domain();
            (d.phase().as_ps(), d.period().as_ps())
        };
        if period != self.period_ps && !self.domain_checked {
            tracing::warn!(
                target: "pci::bus",
                period_ps = period,
                params_ps = self.period_ps,
                "bus registered in a clock domain that is not params.clock_domain(): its clock rules"
            );
        }
        self.domain_checked = true;
        self.phase_ps = phase;
        self.period_ps = period;
        let now = ctx.now().as_ps().saturating_sub(phase) / period.max(1);
        self.now_clk = now;
        match msg {
            PciMsg::Tick { generation } => {
                if generation != self.generation || self.tick != Some(now) {
                    return; // a superseded wake-up
                }
                self.tick = None;
                self.tick_token = None;
                self.run_to(now, ctx, &mut mem);
                let mut last = now;
                if self.turnaround_is_fixed(now, ctx.tracing()) {
                    if mem.as_deref().is_some_and(HostMemory::has_hits) {
                        self.step(now + 1, ctx, &mut mem);
                    } else {
                        self.apply_turnaround(now + 1, ctx);
                    }
                    self.clk_next = now + 2;
                    last = now + 1;
                }
                if let (false, Some(m)) = (self.local_done.is_empty(), master) {
                    self.run_completions(ctx, m);
                }
                if let Some(next) = self.next_tick(last, ctx.tracing()) {
                    self.ensure_tick(next, ctx);
                }
            }
            PciMsg::DmaStart(job) if self.folded_dma.is_some() => {
                // The folded DMA master takes the job (`dma_fold.rs`); the bus is
                // stepped, and its wake-up computed again, only when a burst goes out.
                if let Some(behind) = self.dma_start(job, now, ctx, &mut mem) {
                    self.fold_wake(now, behind, ctx);
                }
            }
            other => {
                // A request behind another of its master's, with a wake-up queued
                // (untraced fast stepping): queued without stepping up to it. The clocks
                // before it are stepped at the next wake-up, with it in the queue, as
                // they would have been without it:
                // - its REQ# line is on only from the clock after it lands (`req_line`
                //   compares its arrival, for the master's first and second request);
                // - the rules that ask whether another master has a request
                //   (`others_queued`, `sole_bridge_read`, the whole plan) answer as
                //   before, since its master had one already;
                // - the two that count the master's own requests (`lines_off` in
                //   `step`, `plain_run`'s) may now take the one-line path instead of
                //   "no line on", which decides the same (`Arbiter::step_one` with the
                //   line off as `step_no_requests`: unit tests compare both with
                //   `Arbiter::step`);
                // - the master's queue shrinks only when a request completes, an
                //   output, which the queued wake-up precedes.
                // `lands_behind` is asked before the stepping: if the request ahead
                // starts in the clocks not yet stepped, its master then owns the bus
                // with this one behind it, whose line decides nothing while it does
                // (GNT# leaves an owner only on an idle clock or for another master
                // whose line is on). The lockstep harness compares it with exact
                // stepping, which never takes this path; moving a deferred request's
                // arrival back to the first clock not yet stepped changes no result of
                // `tools/exact-vs-fast.sh` either (measured, 28 November 2026).
                if matches!(&other, PciMsg::Request(r) if self.defers(r.master, ctx.tracing())) {
                    self.accept(other, now, ctx);
                    return;
                }
                if now > 0 {
                    self.run_to(now - 1, ctx, &mut mem);
                }
                let behind = matches!(&other, PciMsg::Request(r) if self.lands_behind(r.master));
                self.accept(other, now, ctx);
                self.input_wake(now, behind, ctx);
            }
        }
    }

    /// The wake-up after an input that landed in clock `now` (the bus stepped up to
    /// `now - 1` or further); `behind`: it only queued requests behind another of their
    /// master's (`lands_behind`).
    fn input_wake<M: From<PciMsg>>(&mut self, now: u64, behind: bool, ctx: &mut Ctx<'_, M>) {
        // Clock `now` sees the input: the bus is woken at `now + 1` to step it,
        // or (fast, untraced) where the first clock it can change has an output
        // (clock `now` may have been stepped already: a fixed turnaround).
        // Untraced, that bound takes every input so far into account, so it
        // replaces the wake-up queued before, also when it is later, unless
        // that one is at this edge (still to come: it steps clock `now` on
        // time, which can have an output of this very input). When clock `now`
        // was stepped already (a fixed turnaround) and the input leaves the bus
        // nothing to do, no wake-up is needed: per-clock stepping steps clock
        // `now` in the turnaround's own wake-up at this edge and stops there.
        let stepped = self.clk_next.checked_sub(1);
        match (stepped, self.params.stepping, ctx.tracing()) {
            (Some(last), Stepping::FastForward, false) => {
                // A request behind another of its master's changes nothing the
                // bus does up to its first output (`lands_behind`): the wake-up
                // queued before is still a lower bound on that clock (the
                // look-ahead computed now may give an earlier, looser one).
                if behind && self.tick.is_some() {
                    return;
                }
                let next = match self.next_tick(last, false) {
                    Some(k) => k.max(now + 1),
                    None if last >= now && self.tick.is_none() => return,
                    None => now + 1,
                };
                if self.tick == Some(now) {
                    self.ensure_tick(next, ctx);
                } else {
                    self.set_tick(next, ctx);
                }
            }
            _ => self.ensure_tick(now + 1, ctx),
        }
    }

    /// Steps every clock up to and including `target`.
    fn run_to<M: From<PciMsg>>(
        &mut self,
        target: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        while self.clk_next <= target {
            if self.idle_quiescent() {
                let stop = match self.next_commit_clock() {
                    Some(k) if k <= target => k,
                    _ => target + 1,
                };
                if stop > self.clk_next {
                    let n = stop - self.clk_next;
                    self.stats.cycles += n;
                    self.stats.idle_cycles += n;
                    self.clk_next = stop;
                    continue;
                }
                // A commit due in this clock of a quiet bus: what the per-clock function
                // does then, without it.
                if self.params.stepping == Stepping::FastForward {
                    let c = self.clk_next;
                    self.quiet_commit(c, ctx, mem);
                    self.clk_next = c + 1;
                    continue;
                }
            }
            let c = self.clk_next;
            // Plain data phases need a transaction in progress, held-off idle clocks
            // none (each check is 0 otherwise): only the one that can apply is made.
            if self.active.is_some() {
                let whole = self.whole_run(c, target, ctx, mem);
                if whole > 0 {
                    self.clk_next = c + whole;
                    continue;
                }
                let plain = self.plain_run(c, target + 1 - c);
                if plain > 0 {
                    self.advance_plain(c, plain);
                    self.clk_next = c + plain;
                    continue;
                }
            } else {
                let started = self.start_run(c, target, ctx, mem);
                if started > 0 {
                    self.clk_next = c + started;
                    continue;
                }
                let held = self.held_idle_run(c, target + 1 - c);
                if held > 0 {
                    self.advance_held_idle(held);
                    self.clk_next = c + held;
                    continue;
                }
                let retried = self.retry_run(c, target, ctx.tracing());
                if retried > 0 {
                    self.clk_next = c + retried;
                    continue;
                }
            }
            self.step(c, ctx, mem);
            self.clk_next = c + 1;
        }
    }

    /// Whether a request of master `m` landing now queues behind another of its requests
    /// (behind its first, or behind its second while it owns the bus): then it changes
    /// nothing the bus does up to the first clock that has an output, so the wake-up
    /// queued before is still a lower bound on that clock. Every other master's REQ#
    /// line, `others_queued` for every master and every bound that depends on the count
    /// of queued requests are as before (this master had work already); this master's
    /// own line follows the request behind the one it moves only while it owns the bus,
    /// where it decides nothing (GNT# moves only to another master whose line is on, and
    /// parks only on an idle clock); and the new request can matter only once the one
    /// ahead of it completes, which a master's `TransactionDone` (an output) reports. The
    /// bridge's CPU master, whose writes can complete without an output, sends no
    /// `Request` (a master without a component is refused in `queue_request`), and is
    /// excluded here all the same. Guarded as every untraced bound is: `emit`'s debug
    /// assertion that no output is stepped late, the PCI proptests, lockstep.
    pub(super) fn lands_behind(&self, m: MasterId) -> bool {
        let m = usize::from(m.0);
        if self.master_components.get(m).copied().flatten().is_none() {
            return false;
        }
        let owner = self.active.as_ref().is_some_and(|t| t.master == m);
        self.masters
            .get(m)
            .is_some_and(|p| p.queue.len() >= if owner { 2 } else { 1 })
    }

    /// Whether a request of master `m` landing now is queued without stepping the bus
    /// up to it (see [`PciBus::set_deferral`]): in untraced fast stepping, with a
    /// wake-up queued.
    fn defers(&self, m: MasterId, tracing: bool) -> bool {
        self.tick.is_some()
            && self.params.stepping == Stepping::FastForward
            && !tracing
            && match self.deferral {
                Deferral::Never => false,
                Deferral::Behind => self.lands_behind(m),
                Deferral::Any => true,
            }
    }

    /// Idle bus, nothing queued, GNT# stable: stepping changes nothing but idle counts.
    #[inline]
    fn idle_quiescent(&self) -> bool {
        self.active.is_none()
            && self.phase.state() == BusPhase::Idle
            && self.queued == 0
            && self.arb.stable_when_idle()
    }

    /// Whether a master other than `m` has a request queued.
    #[inline]
    pub(super) fn others_queued(&self, m: usize) -> bool {
        let own = self.masters.get(m).map_or(0, |p| p.queue.len());
        self.queued > own
    }

    fn next_commit_clock(&self) -> Option<u64> {
        let t = self.bridge.as_ref()?.next_commit()?;
        // Asked several times a clock while a write is posted: its clock is kept, so
        // only a new commit instant costs a division.
        let grid = (self.period_ps, self.phase_ps);
        let (at, g, k) = self.commit_clock.get();
        if at == t && g == grid {
            return Some(k);
        }
        let k = self.clock_at(t);
        self.commit_clock.set((t, grid, k));
        Some(k)
    }

    /// The first clock whose edge is at or after `t`.
    pub(super) fn clock_at(&self, t: Time) -> u64 {
        let since = t.as_ps().saturating_sub(self.phase_ps);
        since.div_ceil(self.period_ps.max(1))
    }

    /// The next commit clock the bus must be woken for: with lazy commits and other
    /// work that wakes it later, only one into a watched range (the clocks of the others
    /// are stepped late, and host memory's readers apply them themselves).
    fn next_commit_wake(&self, tracing: bool) -> Option<u64> {
        if self.commits_lazily(tracing) && !self.idle_quiescent() {
            let t = self.bridge.as_ref()?.next_eager_commit()?;
            Some(self.clock_at(t))
        } else {
            self.next_commit_clock()
        }
    }

    /// The next clock that must be stepped at its own edge, after clock `c`.
    /// `tracing`: state transitions are being recorded, so every clock that changes
    /// the bus phase is stepped at its own edge; without a trace only clocks that can
    /// have an output must be.
    fn next_tick(&self, c: u64, tracing: bool) -> Option<u64> {
        let mut next = self.next_commit_wake(tracing).filter(|&k| k > c);
        if !self.idle_quiescent() {
            let skip = match self.params.stepping {
                Stepping::PerClock => 0,
                Stepping::FastForward => {
                    // The wake-up is the latest of the lower bounds, capped by the next
                    // commit: a bound that is 0 in this state (the ones of a transaction
                    // in progress without one, those of an idle bus with one) is not
                    // computed, nor is the costly one once the others reach the commit.
                    let cap = next.map_or(u64::MAX, |n| n.saturating_sub(c + 1));
                    let busy = self.active.is_some();
                    // An idle bus's held-off clocks bound the wake-up only with a trace:
                    // without one, the idle bounds below (the retry loop's, or the first
                    // start's) are never earlier than the first clock a REQ# line can be
                    // on, where that run ends (a start needs its line), and the delayed
                    // read's wait is taken alone only at or past the commit cap, which
                    // caps that run too (checked in debug builds below).
                    let quiet = if busy {
                        self.quiet_clocks(c)
                    } else if tracing {
                        self.held_idle_run(c + 1, u64::MAX)
                    } else {
                        0
                    };
                    // Both delayed-read bounds start from the same sole read.
                    let sole = if tracing {
                        None
                    } else {
                        self.sole_bridge_read()
                    };
                    if tracing {
                        quiet
                    } else if let Some(k) = self.retry_loop_output(c, sole) {
                        // A delayed read's retry loop stepped ahead (`retry.rs`): no
                        // other bound is later.
                        let k = k.saturating_add(self.untraced_read_skew);
                        quiet.max(k.saturating_sub(c + 1))
                    } else {
                        let quiet = quiet.max(self.delayed_read_wait(c, sole));
                        if quiet >= cap {
                            quiet
                        } else if busy {
                            quiet.max(self.untraced_tenure_wait(c))
                        } else {
                            quiet.max(self.untraced_idle_wait(c))
                        }
                    }
                }
            };
            debug_assert!(
                self.active.is_some()
                    || tracing
                    || self.params.stepping != Stepping::FastForward
                    || skip >= self.held_idle_run(c + 1, u64::MAX),
                "an untraced idle bound before the held-off idle clocks end, after clock {c}"
            );
            let k = c.saturating_add(1).saturating_add(skip);
            next = Some(next.map_or(k, |n| n.min(k)));
        }
        next
    }

    /// Makes sure the bus is woken at clock `k` (> now) or earlier.
    fn ensure_tick<M: From<PciMsg>>(&mut self, k: u64, ctx: &mut Ctx<'_, M>) {
        if self.tick.is_some_and(|t| t <= k) {
            return;
        }
        self.set_tick(k, ctx);
    }

    /// Makes clock `k` (> now) the bus's next wake-up, moving the one queued before
    /// (cancelled and queued anew, in one step: `Ctx::move_wake`).
    fn set_tick<M: From<PciMsg>>(&mut self, k: u64, ctx: &mut Ctx<'_, M>) {
        if self.tick == Some(k) {
            return;
        }
        self.generation += 1;
        self.tick = Some(k);
        let n = Cycles(k.saturating_sub(self.now_clk).max(1));
        let msg = PciMsg::Tick {
            generation: self.generation,
        }
        .into();
        self.tick_token = Some(match self.tick_token.take() {
            Some(old) => ctx.move_wake(old, n, Priority::LATE, msg),
            None => ctx.wake_after_cancellable(n, Priority::LATE, msg),
        });
    }
}
