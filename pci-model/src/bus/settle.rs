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
//! would say so; a lazily committed posted write may be, which sends nothing).
//!
//! Not settled: a folded DMA master (`dma_fold.rs`) takes a burst's completion when the
//! bus steps the burst's last clock, a clock before the reference's master gets its
//! `TransactionDone`, so where a stop falls in that clock the folded master's counters
//! are one completion ahead (its next burst queued, its job counted); its reports wait
//! in the queue, deferred to the completion's place, as the reference's are not sent
//! yet. One clock the other way: untraced fast stepping steps the turnaround
//! after a transaction with nothing queued behind it together with the transaction's
//! last clock (no input can change it), so where that last clock is the stop's, every
//! mode steps the turnaround too, as at its edge (`Kernel::call_at`, so that a trace
//! records it there).

use super::fsm::BusPhase;
use super::PciBus;
use crate::memory::HostMemory;
use crate::msg::PciMsg;
use crate::params::Stepping;
use crate::ram_fold::FoldRam;
use sim_kernel::{ComponentId, Ctx, Kernel, Time};

impl PciBus {
    /// Brings the bus, component `me` of `kernel`, to where per-clock stepping stands
    /// at the end of a run whose last events were those at or before `until` (see the
    /// module doc), outside any event. A bus stepped clock by clock only steps the
    /// turnaround that belongs to the end state. `mem`: host memory, for the host
    /// bridge. Nothing is sent (a debug assertion).
    pub fn settle<M: From<PciMsg>>(
        &mut self,
        kernel: &mut Kernel<M>,
        me: ComponentId,
        until: Time,
        mut mem: Option<&mut HostMemory>,
    ) {
        let Some(k) = until
            .as_ps()
            .checked_sub(self.phase_ps)
            .map(|since| since / self.period_ps.max(1))
        else {
            return;
        };
        let pending = kernel.pending();
        kernel.call(me, |ctx| {
            // Any output stepped here would be late: the assertions in `emit` and
            // `step` compare with this clock.
            self.now_clk = k + 1;
            self.catch_up(k, ctx, &mut mem);
        });
        // A transaction that ended in the stop's clock with nothing queued behind it and
        // no commit due has a turnaround no input can change, which untraced fast
        // stepping steps with the last clock: every mode has it stepped, at its edge.
        if self.clk_next == k + 1 && self.turnaround_follows(k) {
            kernel.call_at(me, self.edge(k + 1), |ctx| {
                self.now_clk = k + 1;
                self.run_to(k + 1, ctx, &mut mem);
            });
        }
        debug_assert_eq!(kernel.pending(), pending, "a bus sent a message settling");
    }

    /// [`PciBus::settle`] for a bus with RAM-backed targets (`handle_ram`): first the
    /// writes it stored for places up to `until` are applied to `ram`, the folded
    /// messages whose place is after it taken back from its counts, and the samples of
    /// its folded reads taken from `ram`.
    pub fn settle_ram<M: From<PciMsg>, R: FoldRam + ?Sized>(
        &mut self,
        kernel: &mut Kernel<M>,
        me: ComponentId,
        until: Time,
        ram: &mut R,
    ) {
        // The messages folded for places up to `until` have landed (the reference's
        // `TargetWrite`s and `TargetRead`s there have run): the writes are in; those
        // after it are not counted.
        let end = crate::ram_fold::PendingWrites::after_instant(until);
        ram.pass(end);
        self.uncount_after(end);
        if self.samples_out > 0 {
            kernel.call(me, |ctx| self.take_samples(ctx.event_key(), ram));
        }
        self.settle(kernel, me, until, None);
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
        if self.params.stepping != Stepping::FastForward {
            return;
        }
        while self.clk_next <= k {
            let j = self.clk_next;
            // An input landing in clock `k` is stepped at edge `k + 1`, after these
            // (in clock 0: nothing is seen yet).
            let seen = if j < k { Some(j) } else { k.checked_sub(1) };
            if self.quiet_by(seen) {
                // A quiet bus does something next at a commit (stepped at its own
                // wake-up) or where a request lands (its idle clocks counted up to the
                // clock before): the requests of a folded DMA master (`dma_fold.rs`)
                // and of a master whose completions the bus runs (`master_fold.rs`)
                // are queued before they land; every other input has landed by now,
                // and stepped the clocks before it.
                let landing = self
                    .masters
                    .iter()
                    .flat_map(|p| p.queue.iter().map(|q| q.arrival))
                    .filter(|&a| a > j && a <= k)
                    .min();
                let commit = self.next_commit_clock().filter(|&c| c >= j && c <= k);
                let next = match (commit, landing) {
                    (Some(c), Some(a)) if c < a => c,
                    (Some(c), None) => c,
                    (_, Some(a)) => a - 1,
                    (None, None) => break,
                };
                self.run_to(next, ctx, mem);
            } else {
                self.run_to(j, ctx, mem);
            }
        }
    }

    /// Whether the bus is idle with nothing to do but requests landing after clock
    /// `seen` (`None`: any request): per-clock stepping has no wake-up for the clock
    /// after it then.
    fn quiet_by(&self, seen: Option<u64>) -> bool {
        self.active.is_none()
            && self.phase.state() == BusPhase::Idle
            && self.arb.stable_when_idle()
            && self
                .masters
                .iter()
                .all(|p| p.queue.iter().all(|q| seen.is_none_or(|s| q.arrival > s)))
    }
}
