//! The end of a run: a lazily stepped bus brought to the clock per-clock stepping (the
//! reference) has reached.
//!
//! A run stops after the last event at or before some instant `until` (a slice's end).
//! Per-clock stepping has then stepped every clock it had a wake-up for by `until`: clock
//! `j` at edge `j` while the bus was busy after clock `j - 1` (or a posted write commits
//! in `j`), and at edge `j + 1` after an input landed in clock `j` on a quiet bus. Fast
//! stepping steps the clocks without an output late, when the bus next wakes, so its
//! counters can lag at such a stop (a transaction's wait clocks, say). [`PciBus::settle`]
//! steps those clocks, by the same rules, and no others: every clock with an output has
//! its own wake-up, run by `until`, so none is stepped here (`emit`'s debug assertion
//! would say so; a lazily committed posted write may be, which sends nothing). One clock
//! the other way: untraced fast stepping steps the turnaround
//! after a transaction with nothing queued behind it together with the transaction's
//! last clock (no input can change it), so where that last clock is the stop's, every
//! mode steps the turnaround too ([`PciBus::turnaround_edge`]).

use super::fsm::BusPhase;
use super::PciBus;
use crate::memory::HostMemory;
use crate::msg::PciMsg;
use crate::params::Stepping;
use crate::ram_fold::FoldRam;
use sim_kernel::{Ctx, Time};

impl PciBus {
    /// Steps the clocks per-clock stepping has stepped by the end of a run whose last
    /// events were those at or before `until` (see the module doc). A bus stepped clock
    /// by clock has nothing to do. `mem`: host memory, for the host bridge.
    pub fn settle<M: From<PciMsg>>(
        &mut self,
        until: Time,
        ctx: &mut Ctx<'_, M>,
        mem: Option<&mut HostMemory>,
    ) {
        let Some(since) = until.as_ps().checked_sub(self.phase_ps) else {
            return;
        };
        let k = since / self.period_ps.max(1);
        let mut mem = mem;
        // Any output stepped here would be late: the assertions in `emit` and `step`
        // compare with this clock.
        self.now_clk = k + 1;
        self.catch_up(k, ctx, &mut mem);
    }

    /// After [`PciBus::settle`] at `until`: the edge of the turnaround clock that
    /// belongs to the end state, if any. A transaction that ended in the stop's clock
    /// with nothing queued behind it and no commit due has a turnaround no input can
    /// change; untraced fast stepping steps it with the last clock, at the same
    /// wake-up, so every mode has it stepped ([`PciBus::settle_turnaround`], as at that
    /// edge, so that a trace records it there).
    #[must_use]
    pub fn turnaround_edge(&self, until: Time) -> Option<Time> {
        let since = until.as_ps().checked_sub(self.phase_ps)?;
        let k = since / self.period_ps.max(1);
        (self.clk_next == k + 1 && self.turnaround_follows(k)).then(|| self.edge(k + 1))
    }

    /// Steps the turnaround clock [`PciBus::turnaround_edge`] found, at that edge (`ctx`
    /// as at it: `Kernel::call_at`).
    pub fn settle_turnaround<M: From<PciMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        mem: Option<&mut HostMemory>,
    ) {
        let mut mem = mem;
        let c = self.clk_next;
        self.now_clk = c;
        self.run_to(c, ctx, &mut mem);
    }

    /// [`PciBus::settle`] for a bus with RAM-backed targets (`handle_ram`): the samples
    /// of its folded reads are taken from `ram` first.
    pub fn settle_ram<M: From<PciMsg>, R: FoldRam + ?Sized>(
        &mut self,
        until: Time,
        ctx: &mut Ctx<'_, M>,
        ram: &mut R,
    ) {
        if self.samples_out > 0 {
            self.take_samples(ctx.event_key(), ram);
        }
        self.settle(until, ctx, None);
    }

    /// Fast stepping: steps the clocks up to `k` that per-clock stepping has stepped
    /// once every event at or before edge `k` has run (see the module doc), and no
    /// others: a quiet bus's idle clocks are counted where the reference counts them, at
    /// its next input.
    pub(super) fn catch_up<M: From<PciMsg>>(
        &mut self,
        k: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        while self.params.stepping == Stepping::FastForward && self.clk_next <= k {
            let j = self.clk_next;
            // An input landing in clock `k` is stepped at edge `k + 1`, after these
            // (in clock 0: nothing is seen yet).
            let quiet = match if j < k { Some(j) } else { k.checked_sub(1) } {
                Some(seen) => self.quiet_by(seen),
                None => self.quiet_by_none(),
            };
            if quiet {
                // A quiet bus is woken only for a commit (or an input: all have landed
                // by now, and stepped the clocks before them).
                match self.next_commit_clock() {
                    Some(c) if c >= j && c <= k => self.run_to(c, ctx, mem),
                    _ => break,
                }
            } else {
                self.run_to(j, ctx, mem);
            }
        }
    }

    /// Whether the bus is idle with nothing to do before any request lands.
    fn quiet_by_none(&self) -> bool {
        self.active.is_none() && self.phase.state() == BusPhase::Idle && self.arb.stable_when_idle()
    }

    /// Whether the bus is idle with nothing to do but requests landing after clock
    /// `seen`: per-clock stepping has no wake-up for the clock after it then.
    fn quiet_by(&self, seen: u64) -> bool {
        self.active.is_none()
            && self.phase.state() == BusPhase::Idle
            && self.arb.stable_when_idle()
            && self
                .masters
                .iter()
                .all(|p| p.queue.iter().all(|q| q.arrival > seen))
    }
}
