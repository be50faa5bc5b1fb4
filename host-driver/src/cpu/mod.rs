//! [`HostCpu`]: the Pentium III of one node, running one process's VIPL program in
//! simulated time.
//!
//! ```text
//!   testbench --Start--> HostCpu --poll--> program (async fn, VIPL calls)
//!                          ^   |             | awaits an Op (compute, load/store, MMIO, poll)
//!                          |   +<--Op slot---+
//!     Wake (after cost) ---+   +--CpuWrite / CpuRead--> PciBus (host bridge) --> card BAR0
//!     CpuWritePosted / CpuReadData <------------------+
//! ```
//!
//! # Ports and wiring
//!
//! - `bus`: the system [`PciBus`](pci_model::PciBus) component (its host bridge takes the
//!   CPU's memory-mapped accesses). Register the CPU in the `host.cpu` domain (800 MHz):
//!   every cost is counted in cycles of the CPU's own domain.
//! - The World passes the node's [`HostMemory`] into [`HostCpu::on_pci`] /
//!   [`HostCpu::on_host`] (or [`HostCpu::handle`]); the CPU touches it only at the instant
//!   an operation executes (a poll sees a DMA write only once the bridge has committed it:
//!   each event first applies the lazily committed writes due before it,
//!   `HostMemory::settle_before`, and a poll does not park on a line one will change).
//! - The testbench loads a program with [`HostCpu::load`] and posts [`HostMsg::Start`].
//!
//! # Executor
//!
//! A single future, polled with a no-op waker only when the CPU handles a message (see
//! [`crate::ops`]). Ops of zero cost run within the same instant; any other op ends with
//! one self wake-up after its cost, a PCI completion, or (polls) one wake-up per loop
//! iteration (per load for a poll over several words, `scan`), none while a fast poll
//! is parked on its cached lines. Nothing depends on wall time or hash order: a run is
//! deterministic.
//!
//! # Statistics
//!
//! [`CpuStats`]: busy and idle cycles, memory-mapped accesses and their waits, poll
//! iterations, cache hits and misses.

mod exec;
mod instrument;
mod scan;
mod types;

pub use types::{CpuState, CpuStats, CpuWait, HostCpuParams};

use crate::cache::CacheModel;
use crate::msg::{HostIncoming, HostMsg};
use crate::ops::{OpResult, PollCond, Slot};
use crate::program::{ProgramError, ProgramResult};
use crate::vipl::Vipl;
use pci_model::{HostMemory, PageTable, PciMsg};
use sim_kernel::{ComponentId, Ctx, Cycles, Fsm, Time};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Largest cache line the poll fast paths handle (larger lines take the general path).
const POLL_LINE_MAX: usize = 128;

/// A loaded host program.
pub type ProgramFuture = Pin<Box<dyn Future<Output = ProgramResult>>>;

/// A poll loop in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PollRun {
    pub va: u64,
    pub cond: PollCond,
    pub deadline: Option<Time>,
    pub iteration: Cycles,
    pub iterations: u64,
    pub start: Time,
    /// Where the polled bytes are (physical address, and the base of their cache line),
    /// once the first iteration has translated them: the page table cannot change while
    /// the CPU polls, so later iterations skip the walk (`None`: not yet, or the polled
    /// bytes straddle a line or page and every iteration takes the general path).
    pub place: Option<(u64, u64)>,
}

/// What the CPU waits for before it can resume the program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Nothing (not running, or running right now).
    #[default]
    None,
    /// The wake-up at the end of an op's cost; then the program gets `result`.
    Timer { result: OpResult },
    /// `CpuWritePosted` for this tag.
    Write { tag: u64, since: Time },
    /// `CpuReadData` for this tag.
    Read { tag: u64, since: Time },
    /// The wake-up for the next poll iteration.
    Poll(PollRun),
    /// A poll that stopped stepping (fast polls): iterations from `next` on are cache
    /// hits of `hit` cycles each until host memory reports a write into the polled
    /// line (`PciMsg::WatchedWrite`).
    Parked {
        run: PollRun,
        /// When the next iteration (not yet done) starts.
        next: Time,
        /// The cost of one hit iteration.
        hit: Cycles,
    },
    /// The wake-up for the next load of a poll over several words (`Op::PollAny`).
    Scan(scan::ScanRun),
    /// A poll over several words that stopped stepping (fast polls) until a write into
    /// one of its lines or its deadline's wake-up.
    ScanParked(scan::ScanPark),
}

/// The host CPU component (see the module doc).
pub struct HostCpu {
    params: HostCpuParams,
    bus: ComponentId,
    slot: Slot,
    program: Option<ProgramFuture>,
    fsm: Fsm<CpuState>,
    wait: Wait,
    generation: u64,
    next_tag: u64,
    page_table: PageTable,
    cache: CacheModel,
    outcome: Option<ProgramResult>,
    stats: CpuStats,
    started: Option<Time>,
    finished: Option<Time>,
    /// A piece of a test message, made for an instrumentation op (`instrument.rs`).
    piece: Vec<u8>,
    /// The bytes of memory such an op read back.
    got: Vec<u8>,
    /// The lines of a costed access (`exec.rs`), kept for the next one (as large as the
    /// largest access so far: an entry for each cache line it touched).
    scratch_lines: Vec<u64>,
    /// The bytes of those lines before the access, kept for the next one (as large as
    /// the largest access so far, plus a line).
    scratch_bytes: Vec<u8>,
}

impl HostCpu {
    /// A CPU whose memory-mapped accesses go to the bus component `bus`.
    #[must_use]
    pub fn new(params: HostCpuParams, bus: ComponentId) -> Self {
        Self {
            cache: CacheModel::new(params.cache),
            params,
            bus,
            slot: Rc::default(),
            program: None,
            fsm: Fsm::new("host.cpu", CpuState::Idle),
            wait: Wait::None,
            generation: 0,
            next_tag: 1,
            page_table: PageTable::new(),
            outcome: None,
            stats: CpuStats::default(),
            started: None,
            finished: None,
            piece: Vec::new(),
            got: Vec::new(),
            scratch_lines: Vec::new(),
            scratch_bytes: Vec::new(),
        }
    }

    /// Loads the program `make` builds from the process's [`Vipl`] handle, e.g.
    /// `cpu.load(|vipl| programs::rdma_pingpong_initiator(vipl, params))`. It starts
    /// when the CPU receives [`HostMsg::Start`]. Loading again replaces the program
    /// (and forgets the outcome of the previous one); the page table stays.
    pub fn load<F, Fut>(&mut self, make: F)
    where
        F: FnOnce(Vipl) -> Fut,
        Fut: Future<Output = ProgramResult> + 'static,
    {
        self.slot = Rc::default();
        let vipl = Vipl::new(self.slot.clone(), &self.params);
        self.program = Some(Box::pin(make(vipl)));
        self.outcome = None;
        self.wait = Wait::None;
        self.generation += 1; // a wake-up of the previous program is stale now
        self.started = None;
        self.finished = None;
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &HostCpuParams {
        &self.params
    }

    /// Test hook: see [`HostCpuParams::fast_poll`].
    #[doc(hidden)]
    pub fn set_fast_poll(&mut self, on: bool) {
        self.params.fast_poll = on;
    }

    /// Test hook: see [`HostCpuParams::fast_poll_skew_cycles`].
    #[doc(hidden)]
    pub fn set_fast_poll_skew_cycles(&mut self, cycles: u64) {
        self.params.fast_poll_skew_cycles = cycles;
    }

    /// Test hook: see [`HostCpuParams::fast_scan_skew_iterations`].
    #[doc(hidden)]
    pub fn set_fast_scan_skew_iterations(&mut self, scans: u64) {
        self.params.fast_scan_skew_iterations = scans;
    }

    /// The process page table (to read or check process memory from a testbench).
    #[must_use]
    pub fn page_table(&self) -> &PageTable {
        &self.page_table
    }

    /// Reads `len` bytes of process memory at `va` (testbench use; no simulated cost).
    ///
    /// # Errors
    /// An unmapped page or a range outside host memory.
    pub fn read_va(
        &self,
        mem: &HostMemory,
        va: u64,
        len: usize,
    ) -> Result<Vec<u8>, pci_model::MemError> {
        let mut v = Vec::new();
        self.read_va_into(mem, va, len, &mut v)?;
        Ok(v)
    }

    /// [`HostCpu::read_va`] into `buf` (its `len` bytes replace what it held; its memory
    /// is reused, and not zeroed before the bytes are copied in).
    ///
    /// # Errors
    /// An unmapped page (`buf` is left as it was) or a range outside host memory.
    pub fn read_va_into(
        &self,
        mem: &HostMemory,
        va: u64,
        len: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), pci_model::MemError> {
        // Unmapped or overflowing: `buf` untouched.
        let segs = self.page_table.pieces(va, len as u64)?;
        buf.clear();
        for seg in segs {
            let n = usize::try_from(seg.len).unwrap_or(usize::MAX);
            mem.read_append(seg.addr, n, buf)?;
        }
        Ok(())
    }

    /// The state the CPU is in.
    #[must_use]
    pub fn state(&self) -> CpuState {
        self.fsm.state()
    }

    /// Whether the program has returned (or is stuck for good).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.outcome.is_some()
    }

    /// The program's result, once it has returned.
    #[must_use]
    pub fn outcome(&self) -> Option<&ProgramResult> {
        self.outcome.as_ref()
    }

    /// What the program waits for right now.
    #[must_use]
    pub fn wait(&self) -> CpuWait {
        if self.outcome.is_some() || self.finished.is_some() {
            return CpuWait::Finished;
        }
        if self.started.is_none() {
            return CpuWait::NotStarted;
        }
        if let Some(w) = self.slot.borrow().register_wait {
            return CpuWait::RegisterPoll {
                what: w.what,
                deadline: w.deadline,
                since: w.since,
            };
        }
        match &self.wait {
            Wait::None | Wait::Timer { .. } => CpuWait::Busy,
            Wait::Write { since, .. } => CpuWait::MmioWrite { since: *since },
            Wait::Read { since, .. } => CpuWait::MmioRead { since: *since },
            Wait::Poll(run) | Wait::Parked { run, .. } => CpuWait::Poll {
                va: run.va,
                cond: run.cond,
                deadline: run.deadline,
                since: run.start,
                iterations: run.iterations,
            },
            Wait::Scan(run) | Wait::ScanParked(scan::ScanPark { run, .. }) => CpuWait::PollAny {
                vas: run.targets.iter().map(|t| t.va).collect(),
                deadline: run.deadline,
                since: run.start,
                iterations: run.iterations,
            },
        }
    }

    /// The last span the program recorded (a VIPL call such as `VipPostSend`, or a
    /// poll) and when it ended.
    #[must_use]
    pub fn last_call(&self) -> Option<(&'static str, Time)> {
        self.slot.borrow().last_span
    }

    /// Takes the program's result out of the CPU.
    pub fn take_outcome(&mut self) -> Option<ProgramResult> {
        self.outcome.take()
    }

    /// When the program started and when it returned.
    #[must_use]
    pub fn run_times(&self) -> (Option<Time>, Option<Time>) {
        (self.started, self.finished)
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> &CpuStats {
        &self.stats
    }

    /// Handles one message of either kind.
    pub fn handle<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        msg: HostIncoming,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        match msg {
            HostIncoming::Pci(m) => self.on_pci(m, ctx, mem),
            HostIncoming::Host(m) => self.on_host(m, ctx, mem),
        }
    }

    /// Handles a host message (start, own wake-up).
    pub fn on_host<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        msg: HostMsg,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        mem.settle_before(ctx.now());
        match msg {
            HostMsg::Start => {
                if self.program.is_none() || self.started.is_some() {
                    self.stats.unexpected += 1;
                    tracing::warn!(target: "host::cpu", "start ignored: no program loaded or already started");
                    return;
                }
                self.started = Some(ctx.now());
                tracing::debug!(target: "host::cpu", at = %ctx.now(), "program started");
                self.run(ctx, mem);
            }
            HostMsg::Wake { generation } => {
                if generation != self.generation {
                    return; // superseded
                }
                match std::mem::take(&mut self.wait) {
                    Wait::Timer { result } => self.resume(result, ctx, mem),
                    Wait::Poll(run) => self.poll_step(run, ctx, mem),
                    Wait::Scan(run) => {
                        if let Some(result) = self.scan_steps(run, ctx, mem) {
                            self.resume(result, ctx, mem);
                        }
                    }
                    Wait::ScanParked(park) => self.scan_expire(park, ctx, mem),
                    other => {
                        self.stats.unexpected += 1;
                        tracing::warn!(target: "host::cpu", ?other, "wake-up while waiting for the bus");
                        self.wait = other;
                    }
                }
            }
        }
    }

    /// Handles a completion from the host bridge.
    pub fn on_pci<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        mem.settle_before(ctx.now());
        match (msg, std::mem::take(&mut self.wait)) {
            (PciMsg::CpuWritePosted { tag }, Wait::Write { tag: t, since }) if tag == t => {
                self.stats.mmio_write_wait = self.stats.mmio_write_wait + (ctx.now() - since);
                self.resume(OpResult::Done, ctx, mem);
            }
            (PciMsg::CpuReadData { tag, data, status }, Wait::Read { tag: t, since })
                if tag == t =>
            {
                self.stats.mmio_read_wait = self.stats.mmio_read_wait + (ctx.now() - since);
                let mut w = [0u8; 4];
                for (d, s) in w.iter_mut().zip(&data) {
                    *d = *s;
                }
                self.resume(OpResult::Word(u32::from_le_bytes(w), status), ctx, mem);
            }
            (PciMsg::WatchedWrite { at }, Wait::Parked { run, next, hit }) => {
                self.unpark(run, next, hit, at, ctx, mem);
            }
            (PciMsg::WatchedWrite { at }, Wait::ScanParked(park)) => {
                self.scan_unpark(park, at, ctx, mem);
            }
            (PciMsg::WatchedWrite { .. }, wait) => {
                // A write noted before the poll it was for ended or re-parked: the
                // iterations since have seen it.
                self.wait = wait;
            }
            (msg, wait) => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "host::cpu", ?msg, "unexpected PCI message dropped");
                self.wait = wait;
            }
        }
    }

    /// Hands `result` to the program and runs it on.
    fn resume<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        result: OpResult,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        self.slot.borrow_mut().result = Some(result);
        self.run(ctx, mem);
    }

    /// Polls the program until it waits for something that takes time, or returns.
    fn run<M: From<PciMsg> + From<HostMsg>>(&mut self, ctx: &mut Ctx<'_, M>, mem: &mut HostMemory) {
        let Some(mut program) = self.program.take() else {
            return;
        };
        loop {
            self.slot.borrow_mut().now = ctx.now();
            let mut cx = Context::from_waker(Waker::noop());
            let polled = program.as_mut().poll(&mut cx);
            self.flush_spans(ctx);
            let no_card = std::mem::take(&mut self.slot.borrow_mut().open_no_card);
            self.stats.open_no_card += no_card;
            if let Poll::Ready(out) = polled {
                self.finish(out, ctx);
                return;
            }
            let request = self.slot.borrow_mut().request.take();
            let Some(op) = request else {
                tracing::error!(target: "host::cpu", "program awaits something that is not a CPU op: stuck");
                self.fsm.set(CpuState::Stuck, ctx);
                self.outcome = Some(Err(ProgramError::Stuck));
                self.finished = Some(ctx.now());
                return;
            };
            self.stats.ops = self.stats.ops.saturating_add(1);
            match self.execute(op, ctx, mem) {
                Some(result) => self.slot.borrow_mut().result = Some(result),
                None => {
                    self.program = Some(program);
                    return;
                }
            }
        }
    }

    fn finish<M>(&mut self, out: ProgramResult, ctx: &mut Ctx<'_, M>) {
        match &out {
            Ok(_) => tracing::info!(target: "host::cpu", at = %ctx.now(), "program finished"),
            Err(e) => tracing::warn!(target: "host::cpu", at = %ctx.now(), %e, "program failed"),
        }
        self.fsm.set(CpuState::Finished, ctx);
        self.outcome = Some(out);
        self.finished = Some(ctx.now());
        self.wait = Wait::None;
    }

    /// Records the spans the program's VIPL calls noted (drained: the list keeps its
    /// memory for the next calls).
    fn flush_spans<M>(&mut self, ctx: &mut Ctx<'_, M>) {
        let mut slot = self.slot.borrow_mut();
        for s in slot.spans.drain(..) {
            ctx.span(s.msg, s.stage, s.start, s.end);
        }
    }

    /// Asks for a wake-up after `cycles` (at least one) and returns the generation.
    fn wake_after<M: From<HostMsg>>(&mut self, cycles: Cycles, ctx: &mut Ctx<'_, M>) {
        self.generation += 1;
        let generation = self.generation;
        ctx.wake_after(Cycles(cycles.0.max(1)), HostMsg::Wake { generation }.into());
    }

    /// Wakes the CPU at `at`, an edge of its clock after now.
    fn wake_at<M: From<HostMsg>>(&mut self, at: Time, ctx: &mut Ctx<'_, M>) {
        self.generation += 1;
        let generation = self.generation;
        ctx.wake_at(at, HostMsg::Wake { generation }.into());
    }
}
