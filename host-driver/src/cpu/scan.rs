//! The poll loop over several words ([`Op::PollAny`](crate::ops::Op::PollAny):
//! `VipCQWait`'s scan of the head status of every work queue tied to its completion
//! queue), stepped load by load, and its fast path.
//!
//! One scan loads the targets in order, each load at its own time and costed like an
//! [`Op::Read`](crate::ops::Op::Read) of the target's width (its line's hit or miss
//! plus the copy cost), and ends the poll at the first whose condition holds; a scan
//! that found none gives up if the deadline has passed, else pays `iteration` cycles
//! and the next scan starts:
//!
//! ```text
//!  scan k:  load 0 | load 1 | ... | load n-1 | deadline? | iteration | scan k+1 ...
//!           ^ next + (k * P + off_j) cycles: P = sum of the hit loads + iteration,
//!             off_j = the hit loads before target j
//! ```
//!
//! Stepped (`sim.stepping = "exact"`, or while a fast scan cannot park), each load is
//! one event at its own time, so it sees host memory as the bridge has committed it
//! then. Fast (`HostCpuParams::fast_poll`): after a scan that found nothing, if every
//! target lies in one cache line and each of those lines is cached with the bytes
//! memory holds now, every later load hits until a DMA write changes one of them, so
//! the CPU parks: it watches the lines in `HostMemory` (`watch_all`) and, if the poll
//! has a deadline, asks for one wake-up at the end of the scan whose deadline check
//! gives up. A `PciMsg::WatchedWrite { at }` (the bridge commits at LATE priority, so
//! a load at `at` itself does not see the write) makes it account the scans and loads
//! before the first load strictly after `at` as the hits they would have been (a
//! cache touch for the loads of the scan in progress, so the lines' LRU order is the
//! one stepping leaves; whole scans leave it as it was) and step on from that load at
//! its own time; a write landing after the scan that gives up changes nothing. Stepping
//! from any load on is exact, so the fast path only has to find the first load that
//! can see the write: `testbenches/tests/lockstep.rs` compares both modes on MPI runs
//! and shows a wake-up one scan late is caught.

use super::{CpuState, HostCpu, Wait, POLL_LINE_MAX};
use crate::msg::HostMsg;
use crate::ops::{OpResult, PollTarget, ScanOutcome};
use pci_model::{HostMemory, MemError, PciMsg};
use sim_kernel::{Ctx, Cycles, EventToken, Priority, Time};

/// A poll over several words in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScanRun {
    /// The polled words, in scan order.
    pub targets: Vec<PollTarget>,
    /// The instant after which a scan that found nothing gives up.
    pub deadline: Option<Time>,
    /// Loop cost per scan, besides the loads.
    pub iteration: Cycles,
    /// Scans ended without success.
    pub iterations: u64,
    /// When the poll started.
    pub start: Time,
    /// The target the next load reads; `targets.len()`: the scan is complete.
    pub pos: usize,
    /// When that load happens (or the complete scan's deadline check).
    pub at: Time,
    /// Per target, its physical address and the base of its cache line once a load has
    /// translated it (`None`: not yet, or it straddles a line or page and every load
    /// takes the general path; such a poll never parks).
    pub places: Vec<Option<(u64, u64)>>,
}

/// A scan that stopped stepping (see the module doc): `run.pos` is 0 and `run.at` the
/// start of the next scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScanPark {
    pub run: ScanRun,
    /// The watched lines, one per target.
    pub lines: Vec<u64>,
    /// Per target, the hit loads before it in a scan \[cycles\].
    pub offsets: Vec<u64>,
    /// The hit loads of one scan \[cycles\].
    pub loads: u64,
    /// One hit scan with its iteration cost \[cycles\], at least 1.
    pub period: u64,
    /// The deadline's wake-up: how many scans after `run.at` the one that gives up is
    /// (0: the first), when its check is, and the wake-up's token.
    pub expiry: Option<(u64, Time, EventToken)>,
}

impl HostCpu {
    /// Starts an `Op::PollAny` now.
    pub(super) fn scan_start<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        targets: Vec<PollTarget>,
        deadline: Option<Time>,
        iteration: Cycles,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) -> Option<OpResult> {
        let run = ScanRun {
            places: vec![None; targets.len()],
            targets,
            deadline,
            iteration,
            iterations: 0,
            start: ctx.now(),
            pos: 0,
            at: ctx.now(),
        };
        self.scan_steps(run, ctx, mem)
    }

    /// Steps the scan from `run.at` (not later than now: its loads read memory as it is
    /// now, which no commit can have changed since `run.at`) until it ends (the result)
    /// or waits (a wake-up for its next load, or parked: `None`).
    pub(super) fn scan_steps<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        mut run: ScanRun,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) -> Option<OpResult> {
        loop {
            if run.at > ctx.now() {
                self.fsm.set(CpuState::Poll, ctx);
                self.wake_at(run.at, ctx);
                self.wait = Wait::Scan(run);
                return None;
            }
            if run.pos < run.targets.len() {
                let (cost, holds) = match self.scan_load(mem, &mut run) {
                    Ok(x) => x,
                    Err(e) => return Some(OpResult::Fault(e)),
                };
                self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(cost.0);
                let end = ctx.my_domain().edge_after(run.at, cost);
                if holds {
                    run.iterations += 1;
                    self.stats.poll_iterations += 1;
                    let found = ScanOutcome {
                        found: Some(run.pos),
                        iterations: run.iterations,
                    };
                    return self.scan_end(end, OpResult::Scanned(found), ctx);
                }
                run.pos += 1;
                run.at = end;
                continue;
            }
            run.iterations += 1;
            self.stats.poll_iterations += 1;
            if run.deadline.is_some_and(|d| run.at >= d) {
                let gave_up = ScanOutcome {
                    found: None,
                    iterations: run.iterations,
                };
                return self.scan_end(run.at, OpResult::Scanned(gave_up), ctx);
            }
            self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(run.iteration.0);
            run.pos = 0;
            run.at = ctx.my_domain().edge_after(run.at, run.iteration);
            if self.params.fast_poll {
                match self.scan_park(run, ctx, mem) {
                    Ok(()) => return None,
                    Err(r) => run = r,
                }
            }
        }
    }

    /// The result of a scan, handed to the program at `end` (now or later).
    fn scan_end<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        end: Time,
        result: OpResult,
        ctx: &mut Ctx<'_, M>,
    ) -> Option<OpResult> {
        debug_assert!(end >= ctx.now(), "a scan ended in the past");
        if end <= ctx.now() {
            return Some(result);
        }
        self.fsm.set(CpuState::Poll, ctx);
        self.wake_at(end, ctx);
        self.wait = Wait::Timer { result };
        None
    }

    /// The load of target `run.pos`: its cost (line and copy) and whether its
    /// condition holds.
    fn scan_load(
        &mut self,
        mem: &mut HostMemory,
        run: &mut ScanRun,
    ) -> Result<(Cycles, bool), MemError> {
        let t = run
            .targets
            .get(run.pos)
            .copied()
            .ok_or(MemError::Unmapped { va: 0 })?;
        let place = run
            .places
            .get_mut(run.pos)
            .ok_or(MemError::Unmapped { va: t.va })?;
        let mut buf = [0u8; POLL_LINE_MAX];
        let (cost, bytes) = self.poll_load(mem, t.va, t.cond, place, &mut buf)?;
        let copy = self.params.costs.copy.cost(t.cond.width());
        Ok((cost + copy, t.cond.holds(&bytes)))
    }

    /// Parks `run` (at the start of a scan, after one that found nothing) if every later
    /// load is certain to hit until a write into one of its lines; gives it back if not.
    fn scan_park<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        run: ScanRun,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) -> Result<(), ScanRun> {
        let c = self.params.costs;
        let line_len = self.cache.line_bytes();
        let n = usize::try_from(line_len).unwrap_or(POLL_LINE_MAX);
        let mut buf = [0u8; POLL_LINE_MAX];
        let Some(now_bytes) = buf.get_mut(..n) else {
            return Err(run);
        };
        let mut lines = Vec::with_capacity(run.targets.len());
        let mut offsets = Vec::with_capacity(run.targets.len());
        let mut loads = 0u64;
        for (t, place) in run.targets.iter().zip(&run.places) {
            let Some((_, line)) = *place else {
                return Err(run);
            };
            let copy = c.copy.cost(t.cond.width()).0;
            let hit = c.cache_hit.0.saturating_add(copy);
            // Every load must take time, so that the loads after the one a write wakes
            // are never before the wake-up (whether it hits or misses).
            if hit == 0 || c.cache_miss.0.saturating_add(copy) == 0 {
                return Err(run);
            }
            if mem.read(line, now_bytes).is_err() || !self.cache.would_hit(line, now_bytes) {
                return Err(run);
            }
            // No wake-up would come for a lazily committed DMA write into the line.
            if mem.pending_into(line, line_len) {
                return Err(run);
            }
            lines.push(line);
            offsets.push(loads);
            loads = loads.saturating_add(hit);
        }
        let period = loads.saturating_add(run.iteration.0);
        if period == 0 {
            return Err(run);
        }
        self.generation += 1;
        let expiry = match run.deadline {
            Some(d) => {
                let p = ctx.my_domain().period();
                let first = run.at + p * loads; // the first scan's deadline check
                let scans = if first >= d {
                    0
                } else {
                    (d - first).0.div_ceil((p * period).0.max(1))
                };
                let at = first + p * scans.saturating_mul(period);
                let cycles = (at - ctx.now()).0 / p.0.max(1);
                let wake = HostMsg::Wake {
                    generation: self.generation,
                };
                let token =
                    ctx.wake_after_cancellable(Cycles(cycles), Priority::NORMAL, wake.into());
                Some((scans, at, token))
            }
            None => None,
        };
        mem.watch_all(lines.iter().map(|&l| (l, line_len)), ctx.me());
        self.fsm.set(CpuState::Poll, ctx);
        self.wait = Wait::ScanParked(ScanPark {
            run,
            lines,
            offsets,
            loads,
            period,
            expiry,
        });
        Ok(())
    }

    /// A write into a parked scan's lines, visible from `written` on: account the loads
    /// that could not see it and step on from the first that can (see the module doc).
    pub(super) fn scan_unpark<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        park: ScanPark,
        written: Time,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        let p = ctx.my_domain().period();
        let next = park.run.at;
        // The first load strictly after `written`: scan `k`, target `j`.
        let (mut k, j) = if written < next {
            (0, 0)
        } else {
            let span = (p * park.period).0.max(1);
            let since = (written - next).0;
            let (k, rem) = (since / span, since % span);
            match park.offsets.iter().position(|&o| (p * o).0 > rem) {
                Some(j) => (k, j),
                None => (k + 1, 0),
            }
        };
        k = k.saturating_add(self.params.fast_scan_skew_iterations);
        if let Some((scans, _, token)) = park.expiry {
            if k > scans {
                // The scan that gives up comes first: the write changes nothing.
                self.wait = Wait::ScanParked(park);
                return;
            }
            ctx.cancel(token);
        }
        self.generation += 1; // the deadline's wake-up, should it still come, is stale
        mem.unwatch(ctx.me());
        let ScanPark {
            mut run,
            lines,
            offsets,
            period,
            ..
        } = park;
        let before = offsets.get(j).copied().unwrap_or(0);
        let n = lines.len() as u64;
        run.iterations += k;
        self.stats.poll_iterations += k;
        self.stats.line_hits += k.saturating_mul(n) + j as u64;
        self.stats.busy_cycles = self
            .stats
            .busy_cycles
            .saturating_add(k.saturating_mul(period).saturating_add(before));
        // The hits of the scan in progress make its lines the most recently used, as
        // stepping would (whole scans leave the order as it was when it parked).
        for &l in lines.iter().take(j) {
            self.cache.touch(l);
        }
        run.pos = j;
        run.at = next + p * k.saturating_mul(period).saturating_add(before);
        if let Some(result) = self.scan_steps(run, ctx, mem) {
            self.resume(result, ctx, mem);
        }
    }

    /// The deadline's wake-up of a parked scan: every scan up to the one that gives up
    /// hit (no write came), and the poll ends now.
    pub(super) fn scan_expire<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        park: ScanPark,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        mem.unwatch(ctx.me());
        let scans = park.expiry.map_or(0, |(s, _, _)| s);
        let mut run = park.run;
        let n = park.lines.len() as u64;
        let done = scans + 1;
        run.iterations += done;
        self.stats.poll_iterations += done;
        self.stats.line_hits += done.saturating_mul(n);
        let busy = done
            .saturating_mul(park.loads)
            .saturating_add(scans.saturating_mul(run.iteration.0));
        self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(busy);
        let gave_up = ScanOutcome {
            found: None,
            iterations: run.iterations,
        };
        self.resume(OpResult::Scanned(gave_up), ctx, mem);
    }
}
