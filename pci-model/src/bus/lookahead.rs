//! Without a trace, how far the bus can look ahead to its next output, assuming no input
//! lands before it (an input wakes the bus and the bound is computed again): the
//! arbitration of an idle bus stepped ahead to the clock of the next address phase, and
//! the data phases of a transaction to a device target (a read whose data has not landed
//! yet, or has; a write the device takes at once). Also the turnaround clock after the
//! last queued transaction, which no input can change, stepped at once instead of at a
//! wake-up of its own.
//!
//! Every bound here is a lower bound on the first clock that can have an output
//! (a message, a host-memory commit): the clocks before it are stepped late, through the
//! same per-clock function, when the bus is next woken. `Stepping::PerClock` and traced
//! runs never use them; the PCI lockstep tests and the system's lockstep harness compare
//! both ways, and the debug assertion in `emit` catches an output stepped late.

use super::fsm::req_line;
use super::tenure::{device_write_end, device_write_first, Tenure, INITIAL_LATENCY_LIMIT};
use super::words::{words, words_within};
use super::{BusPhase, DeviceReply, PciBus, TargetKind};
use crate::params::Stepping;

/// Masters the arbitration look-ahead handles (more: the bound falls back to REQ#).
pub(super) const LOOKAHEAD_MASTERS: usize = 16;
/// Clocks after the last queued request's first REQ# clock the look-ahead steps at
/// most: the arbiter grants a requesting master within two idle clocks (one without
/// GNT# when it moves, §3.4.1), and it starts in the clock after.
const LOOKAHEAD_SLACK: u64 = 4;

impl PciBus {
    /// Without a trace, with clock `c` just stepped: whether clock `c + 1` is the
    /// turnaround after a transaction with nothing queued behind it and no commit due,
    /// so that no input can change it (a request landing at its edge is REQ# in it,
    /// sampled only in the clock after; a device's late answer or a write-retry window
    /// concerns no transaction in it) and it may be stepped now: it only releases FRAME#
    /// and IRDY#, steps the arbiter with every REQ# line off and counts one idle clock.
    pub(super) fn turnaround_is_fixed(&self, c: u64, tracing: bool) -> bool {
        self.params.stepping == Stepping::FastForward
            && !tracing
            && self.clk_next == c + 1
            && self.turnaround_follows(c)
    }

    /// Applies the turnaround clock `k` that [`PciBus::turnaround_is_fixed`] found, as
    /// the per-clock function steps it when no watcher of host memory waits to be told:
    /// FRAME# and IRDY# released (the bus idle in it), every REQ# line off (the arbiter
    /// sees no request: a grant that is not parked goes), one idle clock. Debug builds
    /// compare it with a copy of the bus stepped through the clock (`whole.rs`).
    pub(super) fn apply_turnaround<M: From<crate::msg::PciMsg>>(
        &mut self,
        k: u64,
        ctx: &mut sim_kernel::Ctx<'_, M>,
    ) {
        debug_assert_eq!(self.clk_next, k, "a turnaround applied out of turn");
        #[cfg(debug_assertions)]
        let reference = self.stepped_copy(k, k, ctx);
        self.phase.set(BusPhase::Idle, ctx);
        self.stats.cycles += 1;
        self.stats.idle_cycles += 1;
        self.arb.step_no_requests(true);
        #[cfg(debug_assertions)]
        self.check_whole(reference, &[], k, k);
    }

    /// With clock `c` stepped: the clock after it is a turnaround after a transaction
    /// with nothing queued behind it and no commit due, which no input can change. A
    /// request queued to land later (a folded DMA master's, `dma_fold.rs`, or a folded
    /// master's, `master_fold.rs`) is REQ# from
    /// its landing clock on, sampled in the clock after: one landing in `c + 1` or later
    /// changes nothing in `c + 1`, as the `Request` the reference gets there would not.
    pub(super) fn turnaround_follows(&self, c: u64) -> bool {
        self.active.is_none()
            && self.phase.state() != BusPhase::Idle
            && (self.queued == 0
                || self
                    .masters
                    .iter()
                    .all(|p| p.queue.iter().all(|q| q.arrival > c)))
            && self.next_commit_clock().is_none_or(|k| k > c + 1)
    }

    /// With no transaction in progress and no input landing: the first clock after `c`
    /// in which a master starts an address phase, and which master. The REQ# lines of
    /// each clock follow from the queues and hold-offs alone, so the arbiter is stepped
    /// ahead exactly as the per-clock function steps it. `None` when nothing is queued
    /// (or too many masters, or no start within the look-ahead).
    pub(super) fn first_start_after(&self, c: u64) -> Option<(u64, usize)> {
        let n = self.masters.len();
        if self.active.is_some() || n > LOOKAHEAD_MASTERS {
            return None;
        }
        // The common case without stepping: GNT# parked on the only master with work.
        // No other line is ever on, so no clock changes the arbiter (`parked_on`), and
        // the master starts in the first idle clock (after the turnaround, if this is
        // one) in which its own line is on.
        if let Some(g) = self.arb.parked_on() {
            if let Some(p) = self.masters.get(g).filter(|_| !self.others_queued(g)) {
                let first_idle = if self.phase.state() == BusPhase::Idle {
                    c + 1
                } else {
                    c + 2
                };
                let first = p
                    .queue
                    .front()
                    .map(|q| (first_idle.max(p.req_on_from(q)), g));
                debug_assert_eq!(first, self.first_start_stepped(c), "parked start at {c}");
                return first;
            }
        }
        self.first_start_stepped(c)
    }

    /// [`PciBus::first_start_after`] by stepping a copy of the arbiter clock by clock
    /// (jumping over clocks in which nothing can change).
    fn first_start_stepped(&self, c: u64) -> Option<(u64, usize)> {
        let n = self.masters.len();
        let last_on = self
            .masters
            .iter()
            .filter_map(|p| p.queue.front().map(|q| p.req_on_from(q)))
            .max()?;
        let mut arb = self.arb.clone();
        let mut idle = self.phase.state() == BusPhase::Idle;
        let mut reqs = [false; LOOKAHEAD_MASTERS];
        let horizon = last_on.max(c + 1).saturating_add(LOOKAHEAD_SLACK);
        let mut k = c + 1;
        while k <= horizon {
            // REQ# of clock k - 1, as `req_lines` samples it (no transaction in progress).
            for (line, port) in reqs.iter_mut().zip(&self.masters) {
                *line = req_line(port, false, k);
            }
            let lines = &reqs[..n];
            if idle {
                if let Some(g) = arb
                    .gnt()
                    .filter(|&g| lines.get(g).copied().unwrap_or(false))
                {
                    return Some((k, g));
                }
            }
            // The clock is idle (or the turnaround after a transaction, idle too).
            let before = arb.clone();
            arb.step(lines, None, true);
            if idle && arb == before {
                // A fixed point: nothing changes before a REQ# line turns on.
                k = self
                    .masters
                    .iter()
                    .filter_map(|p| p.queue.front().map(|q| p.req_on_from(q)))
                    .filter(|&on| on > k)
                    .min()?;
                continue;
            }
            idle = true;
            k += 1;
        }
        None
    }

    /// Bytes per data phase of master `m`'s transaction to target `ti` (as `begin`
    /// decides it).
    pub(super) fn width_for(&self, m: usize, ti: usize) -> u64 {
        let is64 = self.masters.get(m).is_some_and(|p| p.is64);
        let t64 = match self.targets.get(ti).map(|t| &t.kind) {
            Some(TargetKind::HostBridge) => self
                .bridge
                .as_ref()
                .is_some_and(|b| b.params().supports_64bit),
            Some(TargetKind::Device { profile, .. }) => profile.supports_64bit,
            None => false,
        };
        if self.params.width.bytes() == 8 && is64 && t64 {
            8
        } else {
            4
        }
    }

    /// For a write of `[addr, end)` to device target `ti` starting in clock `a` with the
    /// latency timer `lt` (`None`: GNT# cannot be taken away, no other master
    /// requests): the first clock after `a` in which it can have an output. No
    /// write-retry window is on (else `None`: the first data phase may be Retried), so the
    /// device takes a word per clock from its first data phase (DEVSEL#, after its write
    /// wait states) up to its burst limit; the transaction ends in the clock of its last
    /// word (or the clock after, on a disconnect), or earlier where the latency timer
    /// cuts it.
    pub(super) fn device_write_output(
        &self,
        ti: usize,
        (addr, end, w): (u64, u64, u64),
        a: u64,
        lt: Option<u64>,
    ) -> Option<u64> {
        if !self.write_retry.is_empty() {
            return None;
        }
        let target = self.targets.get(ti)?;
        let TargetKind::Device { profile, .. } = &target.kind else {
            return None;
        };
        let first = device_write_first(profile, a);
        let lim = device_write_end(profile, target.end, addr);
        let n = words_within(addr, end, w, lim)
            .max(1)
            .min(words(addr, end, w).max(1));
        Some(cut_by_timer(first + n - 1, first, a, lt))
    }

    /// Whether GNT# may be taken from the owner of transaction `t` before it ends: it is
    /// not granted, or another master has a request queued (a request landing later is
    /// an input, and the bound is computed again).
    pub(super) fn others_want(&self, t: &Tenure) -> bool {
        self.arb.gnt() != Some(t.master) || self.others_queued(t.master)
    }

    /// For a transaction `t` to device target `ti` that has moved no word yet, with
    /// clock `c` stepped: the first clock after `c` in which it can have an output, or
    /// `None` where the bus must be woken every clock from DEVSEL# on.
    ///
    /// A read whose data has not landed waits (an input wakes the bus when it lands) until
    /// its initial-latency Retry at the latest; the clock the data lands in has an output
    /// only for a one-word read (or with FRAME# released by a latency timer shorter than
    /// the initial latency limit), which keeps per-clock wake-ups. A read whose data has
    /// landed moves a word per clock from DEVSEL# up to what the data covers.
    pub(super) fn device_output_clock(&self, t: &Tenure, ti: usize, c: u64) -> Option<u64> {
        self.device_output_bound(t, ti, c)
            .map(|k| k.saturating_add(self.untraced_skew))
    }

    /// [`PciBus::device_output_clock`] without the test hook's skew.
    fn device_output_bound(&self, t: &Tenure, ti: usize, c: u64) -> Option<u64> {
        if !t.frame || t.stop_prev || t.done_words > 0 {
            return None;
        }
        let lt = self.others_want(t).then_some(t.lt);
        if !t.command.is_read() {
            return self
                .device_write_output(ti, (t.addr, t.end, t.w), t.a_clk, lt)
                .map(|k| k.max(c + 1));
        }
        let target = self.targets.get(ti)?;
        if !matches!(target.kind, TargetKind::Device { .. }) {
            return None;
        }
        let read = self
            .device_reads
            .iter()
            .find(|r| Some(r.tag) == t.read_tag)?;
        // A folded read's answer is known, and seen from its clock on (`fold.rs`);
        // its first data phase past the initial latency limit is a Retry there.
        let from = (c + 1).max(t.a_clk + t.devsel).max(read.visible_from);
        match &read.reply {
            None => (t.words > 1 && t.lt >= INITIAL_LATENCY_LIMIT)
                .then_some((t.a_clk + INITIAL_LATENCY_LIMIT).max(c + 1)),
            Some(_) if from > t.a_clk + INITIAL_LATENCY_LIMIT => {
                Some((t.a_clk + INITIAL_LATENCY_LIMIT).max(c + 1))
            }
            Some(DeviceReply::Abort) => Some(from),
            Some(reply) => {
                let len = reply.data_len().unwrap_or(0);
                let n = t.words_answered(len, target.end).min(t.words);
                if n == 0 {
                    return Some(from); // target abort in its first data phase
                }
                Some(cut_by_timer(from + n - 1, from, t.a_clk, lt))
            }
        }
    }
}

/// The clock a transaction whose last word moves in clock `last` (its first in `first`,
/// its address phase in `a`) ends at the earliest, when its latency timer `lt` may cut
/// it (FRAME# released in the first clock with `c - a >= lt` and GNT# removed, §3.5.4).
fn cut_by_timer(last: u64, first: u64, a: u64, lt: Option<u64>) -> u64 {
    match lt {
        Some(lt) => last.min((a + lt).max(first)),
        None => last,
    }
}
