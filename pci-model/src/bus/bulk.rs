//! Fast-forward over clocks whose outcome is fixed, applied as a whole instead of clock
//! by clock: a run of plain data phases (the transaction in progress moves one word per
//! clock: no wait state, no STOP#, FRAME# asserted, no commit, no output), and a run of
//! idle clocks in which no master can assert REQ# yet (every queued request is held off
//! by its master's recovery or a target termination, or has not arrived).
//!
//! Without a trace, the bus is also not woken between transactions until a master can
//! start one (the clock after a transaction's last, in which FRAME# and IRDY# are
//! released, changes only the phase), nor inside a delayed read's retry loop: while
//! the only queued work is one master's read of host memory whose delayed-read data
//! has not arrived in the bridge, every attempt ends in Retry (or waits) with no output,
//! so the clocks up to the data's arrival are stepped late, through the same per-clock
//! function, when the bus is next woken (their phase changes are recorded nowhere).
//! Where the attempt that moves the data moves a word a clock, `retry.rs` steps the
//! loop ahead to that attempt's end instead, the attempt that latches the read
//! included.
//!
//! Only the arbiter and the counters can differ between the clocks of such a run. The
//! REQ# lines are constant between the clocks where a master's hold-off ends or its
//! queued request becomes visible (no message lands inside a run: the bus only fast
//! forwards inside `run_to`, before a new input is accepted), so the arbiter is stepped
//! only until its state stops changing in each stretch of constant REQ# lines, and the
//! grant-wait counters grow by the stretch's length. [`Stepping::PerClock`] never takes
//! this path; the PCI lockstep tests and the system's lockstep harness compare the two.

use super::words::{words, words_within};
use super::{MasterPort, PciBus, Queued, TargetKind};
use crate::params::Stepping;

/// The only queued work when it is one master's read of host memory through the bridge:
/// the master, its port, its request and the bridge's target index.
pub(super) type SoleRead<'a> = (usize, &'a MasterPort, &'a Queued, usize);

impl PciBus {
    /// How many clocks from `c` on (at most `max`) are plain data phases of the
    /// transaction in progress, given the state after clock `c - 1`; 0 when stepping is
    /// per clock.
    #[inline]
    pub(super) fn plain_run(&self, c: u64, max: u64) -> u64 {
        if self.params.stepping != Stepping::FastForward || c == 0 || max == 0 {
            return 0;
        }
        let mut n = self.quiet_clocks(c - 1).min(max);
        if n == 0 {
            return 0;
        }
        if let Some(k) = self.next_commit_clock() {
            n = n.min(k.saturating_sub(c));
        }
        n
    }

    /// Applies `n` plain data phases in clocks `c .. c + n` (see the module doc); the
    /// caller has checked them with [`PciBus::plain_run`].
    pub(super) fn advance_plain(&mut self, c: u64, n: u64) {
        let Some(owner) = self.active.as_ref().map(|t| t.master) else {
            return;
        };
        let end = c + n;
        // With no request queued but the one in progress, every REQ# line is off: in
        // busy clocks the arbiter keeps its state then and nobody waits for GNT# (as in
        // `step`'s path for that case), so only the counters below move.
        let lines_off = self.queued <= 1;
        let mut reqs = std::mem::take(&mut self.reqs_buf);
        let mut k = if lines_off { end } else { c };
        while k < end {
            self.req_lines(k, &mut reqs);
            let stretch_end = self.next_req_change(k, end);
            let mut j = k;
            while j < stretch_end {
                let before = self.arb.clone();
                self.arb.step(&reqs, None, false);
                j += 1;
                if self.arb == before {
                    break;
                }
            }
            let clocks = stretch_end - k;
            for (m, &r) in reqs.iter().enumerate() {
                if r && m != owner {
                    if let Some(s) = self.stats.per_master.get_mut(m) {
                        s.wait_for_grant_cycles += clocks;
                    }
                }
            }
            k = stretch_end;
        }
        self.reqs_buf = reqs;
        if let Some(t) = self.active.as_mut() {
            t.done_words += n;
            t.first_data.get_or_insert(c);
            t.last_data = Some(end - 1);
        }
        self.stats.data_phases += n;
        self.stats.cycles += n;
        self.stats.busy_cycles += n;
    }

    /// The first clock at or after `c` in which some master's REQ# line (sampled from
    /// the clock before) may be asserted, on an idle bus with no transaction in
    /// progress; `None` when no request is queued at all.
    #[inline]
    pub(super) fn first_req_clock(&self, c: u64) -> Option<u64> {
        if self.active.is_some() || self.phase.state() != super::BusPhase::Idle {
            return Some(c);
        }
        self.masters
            .iter()
            .filter_map(|p| {
                let q = p.queue.front()?;
                Some(p.req_on_from(q).max(c))
            })
            .min()
    }

    /// How many clocks from `c` on (at most `max`) are idle clocks with every REQ#
    /// deasserted while some request waits for its hold-off (see the module doc); 0
    /// when stepping is per clock.
    #[inline]
    pub(super) fn held_idle_run(&self, c: u64, max: u64) -> u64 {
        if self.params.stepping != Stepping::FastForward || max == 0 {
            return 0;
        }
        let Some(first) = self.first_req_clock(c) else {
            return 0; // nothing queued: the idle path of `run_to` covers it
        };
        let mut n = first.saturating_sub(c).min(max);
        if n == 0 {
            return 0;
        }
        if let Some(k) = self.next_commit_clock() {
            n = n.min(k.saturating_sub(c));
        }
        n
    }

    /// Applies `n` idle clocks `c .. c + n` with every REQ# line deasserted: the arbiter
    /// sees no request (with [`ParkPolicy::None`](crate::ParkPolicy::None) it removes
    /// GNT# in the first of them, then nothing changes), the bus stays idle.
    pub(super) fn advance_held_idle(&mut self, n: u64) {
        self.arb.step_no_requests(true);
        self.stats.cycles += n;
        self.stats.idle_cycles += n;
    }

    /// The first clock in `(k, end)` whose REQ# lines may differ from clock `k`'s, else
    /// `end`. A master's line (REQ# of the clock before) turns on once its hold-off has
    /// passed and its next request has arrived, and nothing turns it off inside a run.
    fn next_req_change(&self, k: u64, end: u64) -> u64 {
        let busy = self.active.as_ref().map(|t| t.master);
        let mut next = end;
        for (m, port) in self.masters.iter().enumerate() {
            let skip = usize::from(busy == Some(m));
            let Some(q) = port.queue.get(skip) else {
                continue;
            };
            // REQ# in clock x is sampled from clock x - 1.
            let on_from = port.req_on_from(q);
            if on_from > k && on_from < next {
                next = on_from;
            }
        }
        next
    }

    /// The only queued work, when it is one master's read of host memory through the
    /// bridge: the master, its port, its request and the bridge's target index (what
    /// the delayed-read bounds, here and in `retry.rs`, start from).
    pub(super) fn sole_bridge_read(&self) -> Option<SoleRead<'_>> {
        // The bridge's target is attached with the bridge: none on a bus without one.
        self.bridge.as_ref()?;
        let mut queued = self
            .masters
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.queue.is_empty());
        let (Some((m, port)), None) = (queued.next(), queued.next()) else {
            return None;
        };
        let head = port.queue.front()?;
        if !head.req.command.is_read() {
            return None;
        }
        let ti = self.decode(head.req.addr + head.done, m)?;
        matches!(self.targets.get(ti)?.kind, TargetKind::HostBridge).then_some((m, port, head, ti))
    }

    /// Clocks after `c` in which no output can happen because the only queued work is
    /// one master's read of host memory that waits for its delayed-read data (see the
    /// module doc); 0 in any other state. The bus must then be woken at the clock the
    /// data is in the bridge at the latest.
    /// `sole` is [`PciBus::sole_bridge_read`] in this state.
    pub(super) fn delayed_read_wait(&self, c: u64, sole: Option<SoleRead<'_>>) -> u64 {
        let Some((_, _, head, _)) = sole else {
            return 0;
        };
        let command = head.req.command;
        let addr = head.req.addr + head.done;
        if self
            .active
            .as_ref()
            .is_some_and(|t| t.addr != addr || t.command != command)
        {
            return 0;
        }
        let Some(slot) = self.bridge.as_ref().and_then(|b| b.slot_for(addr, command)) else {
            return 0; // not latched yet: the attempt that latches it is stepped on time
        };
        let since = slot.first_data.as_ps().saturating_sub(self.phase_ps);
        let ready = since / self.period_ps.max(1);
        ready.saturating_sub(c + 1)
    }

    /// Without a trace and with no transaction in progress, the clocks after `c` before
    /// the first one that can have an output: no transaction can start before the
    /// arbitration stepped ahead gives its master the bus (or, past the look-ahead,
    /// before its REQ# line is asserted), and one that starts has no output before its
    /// target's DEVSEL# clock (a burst the target takes at once: its last word), except
    /// a read of a device target, which announces itself to the device in its address
    /// phase. 0 while a transaction is in progress or
    /// nothing is queued (the bus then steps to idle on time, so its counters are
    /// complete when a run ends).
    pub(super) fn untraced_idle_wait(&self, c: u64) -> u64 {
        if self.active.is_some() {
            return 0;
        }
        // The master that starts first does so where the arbitration stepped ahead
        // says; another may start as soon as its REQ# line is on (the first one's
        // transaction can end early, in a Retry, without an output).
        let first_start = self.first_start_after(c);
        // The master that starts first is the only one with work (the common case): no
        // other's line to consider.
        if let Some((k, s)) = first_start.filter(|&(_, s)| !self.others_queued(s)) {
            if let Some(q) = self.masters.get(s).and_then(|p| p.queue.front()) {
                return k
                    .saturating_add(self.silent_clocks_after_start(s, q))
                    .saturating_sub(c + 1);
            }
        }
        self.masters
            .iter()
            .enumerate()
            .filter_map(|(m, p)| {
                let q = p.queue.front()?;
                let first = match first_start {
                    Some((k, s)) if s == m => k,
                    _ => p.req_on_from(q),
                };
                Some(first.saturating_add(self.silent_clocks_after_start(m, q)))
            })
            .min()
            .map_or(0, |first| first.saturating_sub(c + 1))
    }

    /// Clocks after its address phase before a transaction of master `m` for the
    /// request `q` can have an output (see [`PciBus::untraced_idle_wait`]).
    fn silent_clocks_after_start(&self, m: usize, q: &super::Queued) -> u64 {
        let addr = q.req.addr + q.done;
        let ti = self.decode(addr, m);
        match ti.map(|ti| &self.targets[ti].kind) {
            Some(TargetKind::HostBridge) => self.bridge.as_ref().map_or(0, |b| {
                // DEVSEL#, then at most one word per clock up to what the bridge can
                // take or give in one transaction (never less than it can now: its
                // posting room only grows while no other master posts, and a read's
                // prefetch limit is fixed by its address), or the latency timer.
                let devsel = b.params().devsel.clocks();
                let end = q.req.addr + q.total;
                let w = self.params.width.bytes();
                let others_queued = self.others_queued(m);
                let limit = if q.req.command.is_read() {
                    b.fetch_limit(addr, q.req.command)
                } else if others_queued {
                    addr // another master may post first and take the room
                } else {
                    b.write_limit(addr)
                };
                let n = words_within(addr, end, w, limit).min(words(addr, end, w));
                // The latency timer cuts it only if GNT# is taken away (another
                // master requests; one that does later is an input).
                let last = devsel + n.max(1) - 1;
                match self.masters.get(m).map(|p| p.lt) {
                    Some(lt) if others_queued => last.min(lt).max(devsel),
                    Some(_) => last,
                    None => devsel,
                }
            }),
            Some(TargetKind::Device { profile, .. }) if !q.req.command.is_read() => ti
                .and_then(|ti| {
                    let w = self.width_for(m, ti);
                    let others = self.others_queued(m);
                    let lt = self.masters.get(m).map(|p| p.lt).filter(|_| others);
                    self.device_write_output(ti, (addr, q.req.addr + q.total, w), 0, lt)
                })
                .unwrap_or(profile.devsel.clocks()),
            Some(TargetKind::Device { .. }) | None => 0,
        }
    }
}
