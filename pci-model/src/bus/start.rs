//! A transaction's start applied at once (untraced `Stepping::FastForward`): when
//! `run_to` reaches the clocks before an address phase with GNT# parked on the only
//! master that has requests queued, the turnaround clock after the last transaction (if
//! that is where the bus is), the idle clocks up to the first one in which that master's
//! REQ# line is on, and the address phase in that clock are applied in one step instead
//! of clock by clock. Where the start itself cannot be (it lies past the clock `run_to`
//! steps to, or a read of host memory waits for its data), the turnaround clock and the
//! idle clocks after it up to there are.
//!
//! What makes the outcome fixed: no other master has a request, so every other REQ#
//! line is off; GNT# parked on the master (`ParkPolicy::LastMaster`) stays there in
//! every one of these clocks (`Arbiter::step_one` changes nothing but the record of who
//! started); the master's own line turns on once its hold-off has passed and its request
//! has arrived (`MasterPort::req_on_from`), and it starts in the first idle clock that
//! sees it on. A turnaround clock in which the line is on already is a clock the master
//! waits for the bus with GNT#. On a bus with the host bridge, no watcher of host memory
//! is waiting to be told and every posted write that commits in these clocks is a lazy
//! one (`step` commits each in its clock, which writes nothing and tells nobody: they
//! are committed together by the start's edge), and a read of host memory is taken only
//! where its data is latched by its DEVSEL# edge (else the Retry runs of `retry_run.rs`
//! take it, and the attempt that latches it is stepped). Every input up to the start
//! clock has been accepted (the bus steps a clock only once every input landing at or
//! before its edge has been), so none can change them.
//!
//! The counters, the bus phase, the arbiter and the transaction begun end as the
//! per-clock function leaves them. Debug builds check every application against a copy
//! of the bus stepped clock by clock, its outputs collected (`whole.rs`); the PCI
//! fast-path tests and the lockstep harness compare with exact stepping.

use super::{BusPhase, PciBus, TargetKind};
use crate::memory::HostMemory;
use crate::msg::PciMsg;
use crate::params::Stepping;
use sim_kernel::Ctx;

impl PciBus {
    /// Test hook: a start applied at once comes `clocks` clocks late, a deliberately
    /// broken fast path that the tests must catch. 0 (the default) in every real run.
    pub fn set_start_skew_clocks(&mut self, clocks: u64) {
        self.start_skew = clocks;
    }

    /// With no transaction in progress and clock `c` the next to step: applies the
    /// clocks up to and including the next address phase at once, if it comes by clock
    /// `target` and can be (see the module doc); returns the clocks applied (0: none,
    /// step as before).
    pub(super) fn start_run<M: From<PciMsg>>(
        &mut self,
        c: u64,
        target: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) -> u64 {
        if self.queued == 0 || self.params.stepping != Stepping::FastForward || ctx.tracing() {
            return 0;
        }
        let Some(g) = self.arb.parked_on() else {
            return 0;
        };
        if self.active.is_some() || self.others_queued(g) {
            return 0;
        }
        let Some((start, waits)) = self.parked_start(g, c) else {
            return 0;
        };
        if start > target || !self.bridge_allows_start(g, start, mem) {
            return self.turnaround_run(g, c, start.saturating_sub(1).min(target), waits, ctx, mem);
        }
        #[cfg(debug_assertions)]
        let reference = self.stepped_copy(c, start, ctx);
        #[cfg(debug_assertions)]
        {
            self.capture = Some(Vec::new());
        }
        self.apply_start(g, c, start, waits, ctx, mem);
        #[cfg(debug_assertions)]
        self.check_and_send(reference, (c, start), ctx);
        start + 1 - c
    }

    /// The clock master `g` (GNT# parked on it, the only master with requests, no
    /// transaction in progress) starts its next transaction in, with clock `c` the next
    /// to step, and whether it waits for the bus in clock `c` (a turnaround clock that
    /// sees its REQ# line on); `None` if nothing is queued.
    fn parked_start(&self, g: usize, c: u64) -> Option<(u64, bool)> {
        let port = self.masters.get(g)?;
        let q = port.queue.front()?;
        let on_from = port.req_on_from(q);
        let turnaround = self.phase.state() != BusPhase::Idle;
        let first_idle = if turnaround { c + 1 } else { c };
        let start = first_idle.max(on_from) + self.start_skew;
        Some((start, turnaround && on_from <= c))
    }

    /// On a bus with the host bridge, whether master `g`'s start in clock `start` may be
    /// applied at once: no watcher of host memory waits to be told, a read of host
    /// memory finds its data latched by its DEVSEL# edge (else the Retry runs of
    /// `retry_run.rs` take it, and the attempt that latches it is stepped), and every
    /// posted write that commits by then is a lazy one (its commit tells nobody: it is
    /// applied with the start).
    fn bridge_allows_start(&self, g: usize, start: u64, mem: &Option<&mut HostMemory>) -> bool {
        if self.bridge.is_none() {
            return true;
        }
        let Some(q) = self.masters.get(g).and_then(|p| p.queue.front()) else {
            return false;
        };
        let waits_for_data = q.req.command.is_read()
            && self
                .decode(q.req.addr + q.done, g)
                .is_some_and(|ti| matches!(self.targets[ti].kind, TargetKind::HostBridge))
            && !self.data_by_devsel(q, start);
        !waits_for_data && self.quiet_commits_through(start, mem)
    }

    /// Whether the clocks up to clock `k` can be applied without the per-clock
    /// function's first step (`step` commits and tells watchers in each clock): no
    /// watcher of host memory waits to be told, and every posted write that commits by
    /// then is a lazy one. Always on a bus without the host bridge.
    fn quiet_commits_through(&self, k: u64, mem: &Option<&mut HostMemory>) -> bool {
        let Some(b) = self.bridge.as_ref() else {
            return true;
        };
        if mem.as_deref().is_some_and(HostMemory::has_hits) {
            return false;
        }
        match self.next_commit_clock() {
            Some(due) if due <= k => b.commits_lazy_through(self.edge(k)),
            _ => true,
        }
    }

    /// Where the start cannot be applied at once (it comes after clock `target`, or a
    /// read of host memory waits for its data) but clock `c` is the turnaround after a
    /// transaction: applies it and the idle clocks after it up to clock `upto` (before
    /// the start), as [`PciBus::start_run`] would, if no watcher of host memory waits to
    /// be told and every posted write committing by then is a lazy one; returns the
    /// clocks applied (0: none).
    fn turnaround_run<M: From<PciMsg>>(
        &mut self,
        g: usize,
        c: u64,
        upto: u64,
        waits: bool,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) -> u64 {
        if self.phase.state() == BusPhase::Idle || upto < c {
            return 0; // an idle clock: the held-off run of `bulk.rs` takes it
        }
        if !self.quiet_commits_through(upto, mem) {
            return 0;
        }
        #[cfg(debug_assertions)]
        let reference = self.stepped_copy(c, upto, ctx);
        self.apply_idle(g, c, upto, waits, ctx, mem);
        #[cfg(debug_assertions)]
        self.check_whole(reference, &[], c, upto);
        upto + 1 - c
    }

    /// Applies clocks `c ..= upto` before master `g`'s start as the per-clock function
    /// steps them: the lazy commits due by then, a turnaround clock (in which `g` waits
    /// for the bus, if `waits`) and idle ones.
    fn apply_idle<M: From<PciMsg>>(
        &mut self,
        g: usize,
        c: u64,
        upto: u64,
        waits: bool,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        self.commit_lazy_by(upto, mem);
        self.count_idle(g, upto + 1 - c, waits);
        self.phase.set(BusPhase::Idle, ctx);
    }

    /// Applies clocks `c ..= start` as the per-clock function steps them (see
    /// [`PciBus::start_run`]): a turnaround clock and idle ones, then master `g`'s
    /// address phase; `waits`: `g` waits for the bus in clock `c`.
    fn apply_start<M: From<PciMsg>>(
        &mut self,
        g: usize,
        c: u64,
        start: u64,
        waits: bool,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        self.commit_lazy_by(start, mem);
        self.count_idle(g, start - c, waits);
        self.stats.cycles += 1;
        self.stats.busy_cycles += 1;
        // `begin` runs in the clock being stepped (its outputs are that clock's).
        self.clk_next = start;
        self.begin(g, start, ctx);
        self.arb.record_start(g);
        self.phase.set(BusPhase::Address, ctx);
    }

    /// The lazy commits due by clock `k`'s edge (the callers checked that every one due
    /// is lazy), each applied in its clock by the per-clock function, in order: they
    /// write nothing and tell nobody, so applying them together leaves host memory and
    /// the bridge as that does.
    fn commit_lazy_by(&mut self, k: u64, mem: &mut Option<&mut HostMemory>) {
        let t = self.edge(k);
        if let Some(b) = self.bridge.as_mut() {
            b.commit_due(t, mem);
        }
    }

    /// `n` idle clocks (a turnaround and the ones after it) before master `g`'s start;
    /// `waits`: `g` waits for the bus in the first (its REQ# line is on in the
    /// turnaround).
    fn count_idle(&mut self, g: usize, n: u64, waits: bool) {
        self.stats.cycles += n;
        self.stats.idle_cycles += n;
        if waits {
            if let Some(s) = self.stats.per_master.get_mut(g) {
                s.wait_for_grant_cycles += 1;
            }
        }
    }
}
