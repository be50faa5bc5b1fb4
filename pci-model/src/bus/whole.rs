//! A transaction applied whole (untraced `Stepping::FastForward`): when `run_to` steps
//! through a transaction that has moved no word yet (late, or up to the clock of its own
//! wake-up), whose master holds GNT# and is the only one with requests queued, and whose
//! target takes every word as it comes, the clocks up to the last one stepped are
//! applied at once instead of clock by clock: the clocks before DEVSEL# and the wait
//! states (or, for a read, the clocks before its data is seen), then one data phase a
//! clock up to the last word, whose clock ends the transaction (`finish`). Where the
//! stepping stops earlier (an input landed, or a posted write commits: `step` commits
//! it and tells a watcher of host memory first), the clocks up to there are applied.
//!
//! What makes the outcome fixed: no other master's REQ# line is on (nothing else is
//! queued), so the arbiter keeps GNT# on the master through the transaction (its own
//! line, on for its next request or not, changes nothing while it owns the bus:
//! `Arbiter::step_one`) and its latency timer never releases FRAME#; every input up to
//! the clock stepped is already accepted (the bus steps a clock only once every input
//! landing at or before its edge has been). A device write meets no write-retry window
//! and the target takes all its words (its burst limit and range) from its first data
//! clock (DEVSEL#, then its write wait states); a device read's answer is known (landed,
//! or a folded read's sample, seen from `visible_from`) and covers every word, before
//! the initial-latency Retry. A write through the host bridge fits its posting room,
//! without a target abort; a read through it finds its delayed-read data in the
//! prefetch buffer by DEVSEL# and streamed at least a word a clock, so a word moves
//! every clock. Anything else is stepped clock by clock as before.
//!
//! The counters, the tenure's fields, the bus phase and the arbiter end as the per-clock
//! function leaves them. Debug builds check every application against a copy of the bus
//! stepped clock by clock, with a device transaction's outputs; a transaction through the
//! bridge is compared before its last clock, whose `finish` the copy cannot run (it has
//! no host memory to read, and a lazily committed write must not be posted twice); `pci-model/tests/whole_run.rs`
//! and the PCI fast-path tests compare with per-clock stepping, and the lockstep harness
//! compares runs with exact stepping ([`PciBus::set_whole_skew_clocks`] breaks it by a
//! clock for the tests that show both catch that).

use super::tenure::{device_write_end, device_write_first, INITIAL_LATENCY_LIMIT};
use super::words::{words, words_within};
use super::{BusPhase, PciBus, TargetKind};
use crate::bridge::ReadClaim;
use crate::memory::HostMemory;
use crate::msg::PciMsg;
use crate::params::Stepping;
use sim_kernel::Ctx;

/// The rest of a transaction that can be applied whole.
#[derive(Clone, Copy, Debug)]
struct Whole {
    /// Its first data clock.
    first: u64,
    /// The clock of its last word.
    end: u64,
    /// The words the target takes.
    limit: u64,
    /// The bridge's delayed-read slot a read of host memory takes its data from.
    slot: Option<u64>,
    /// Its target is the host bridge.
    bridge: bool,
}

impl PciBus {
    /// Test hook: a transaction applied whole ends `clocks` clocks late, a deliberately
    /// broken fast path that the lockstep harness must catch. 0 (the default) in every
    /// real run.
    pub fn set_whole_skew_clocks(&mut self, clocks: u64) {
        self.whole_skew = clocks;
    }

    /// With clock `c` the next to step (a transaction in progress): the rest of the
    /// transaction, if it can be applied whole (see the module doc).
    #[inline]
    fn whole_plan(&self, c: u64, tracing: bool) -> Option<Whole> {
        if tracing || self.params.stepping != Stepping::FastForward {
            return None;
        }
        let t = self.active.as_deref()?;
        if t.done_words > 0 || t.stop_prev || t.stop_end.is_some() || t.lt_cut {
            return None;
        }
        if self.arb.gnt() != Some(t.master) || self.others_queued(t.master) {
            return None;
        }
        let ti = t.target?;
        let target = self.targets.get(ti)?;
        let (range_end, bridge) = (target.end, matches!(target.kind, TargetKind::HostBridge));
        let (first, limit, slot) = match &target.kind {
            TargetKind::HostBridge => self.bridge_plan(c)?,
            TargetKind::Device { profile, .. } if !t.command.is_read() => {
                if !self.write_retry.is_empty() || t.limit_words.is_some() {
                    return None;
                }
                let lim = device_write_end(profile, range_end, t.addr);
                let first = device_write_first(profile, t.a_clk);
                (first, words_within(t.addr, t.end, t.w, lim).max(1), None)
            }
            TargetKind::Device { .. } => {
                let read = self
                    .device_reads
                    .iter()
                    .find(|r| Some(r.tag) == t.read_tag)?;
                let len = read.reply.as_ref()?.data_len()?; // `None`: a target abort
                                                            // Data seen before clock `c` would have moved in the clock it was seen.
                let first = (t.a_clk + t.devsel).max(read.visible_from).max(c);
                (first, t.words_answered(len, range_end), None)
            }
        };
        let n = t.words;
        if n == 0 || limit < n || first < c || first > t.a_clk + INITIAL_LATENCY_LIMIT {
            return None;
        }
        debug_assert_eq!(n, words(t.addr, t.end, t.w));
        let first = first + self.whole_skew;
        Some(Whole {
            first,
            end: first + n - 1,
            limit,
            slot,
            bridge,
        })
    }

    /// [`PciBus::whole_plan`] through the host bridge: the first data clock, the words
    /// it takes and a read's delayed-read slot.
    fn bridge_plan(&self, c: u64) -> Option<(u64, u64, Option<u64>)> {
        let t = self.active.as_deref()?;
        let b = self.bridge.as_ref()?;
        let devsel = t.a_clk + t.devsel;
        if b.target_aborts(t.addr) || devsel < c {
            return None;
        }
        if !t.command.is_read() {
            if t.limit_words.is_some() {
                return None;
            }
            return Some((
                devsel,
                words_within(t.addr, t.end, t.w, b.write_limit(t.addr)),
                None,
            ));
        }
        // Data in the prefetch buffer by DEVSEL#, streamed at least a word a clock: a
        // word every clock from there.
        let s = match t.slot {
            Some(id) => b.slot(id)?,
            None => match b.read_claim(t.addr, t.command, self.edge(devsel)) {
                ReadClaim::Latched(s) => s,
                ReadClaim::New { .. } | ReadClaim::Full => return None,
            },
        };
        if !t.stream_ok || s.first_data > self.edge(devsel) {
            return None;
        }
        Some((
            devsel,
            words_within(t.addr, t.end, t.w, s.limit),
            Some(s.id),
        ))
    }

    /// Whether clock `c` (or a later one in which the bus applies clocks, up to the
    /// returned bound) commits a posted write or must tell a watcher of host memory
    /// first: `None` when clock `c` must be stepped, else the last clock that may be
    /// applied (`u64::MAX`: no bound).
    fn commit_bound(&self, c: u64, mem: &Option<&mut HostMemory>) -> Option<u64> {
        if self.bridge.is_none() {
            return Some(u64::MAX);
        }
        if mem.as_deref().is_some_and(HostMemory::has_hits) {
            return None;
        }
        match self.next_commit_clock() {
            Some(k) if k <= c => None,
            Some(k) => Some(k - 1),
            None => Some(u64::MAX),
        }
    }

    /// Applies the transaction in progress whole from clock `c` (the next to step) to its
    /// last word's clock or to clock `target`, whichever comes first, if it can be (see
    /// the module doc); returns the clocks applied (0: none, step as before).
    pub(super) fn whole_run<M: From<PciMsg>>(
        &mut self,
        c: u64,
        target: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) -> u64 {
        let Some(w) = self.whole_plan(c, ctx.tracing()) else {
            return 0;
        };
        let Some(bound) = self.commit_bound(c, mem) else {
            return 0;
        };
        let last = w.end.min(target).min(bound);
        let ends = last == w.end;
        if ends && w.bridge {
            // The last word's `finish` reads host memory or posts the data, which a debug
            // check's copy of the bus cannot do (it has no host memory, and a lazy post
            // must not happen twice): the copy is compared before that clock, which is
            // then applied as `step` applies it.
            if last > c {
                #[cfg(debug_assertions)]
                let reference = self.stepped_copy(c, last - 1, ctx);
                self.apply_span(c, last - 1, w, false, ctx);
                #[cfg(debug_assertions)]
                self.check_whole(reference, &[], c, last - 1);
            }
            self.apply_span(last, last, w, true, ctx);
            self.clk_next = last;
            self.finish(last, last, None, ctx, mem);
            return last + 1 - c;
        }
        #[cfg(debug_assertions)]
        let reference = self.stepped_copy(c, last, ctx);
        self.apply_span(c, last, w, ends, ctx);
        if !ends {
            #[cfg(debug_assertions)]
            self.check_whole(reference, &[], c, last);
            return last + 1 - c;
        }
        // The last word's clock ends the transaction, as `step` does it (`emit` checks
        // that its outputs are not late: it is the clock being stepped).
        self.clk_next = last;
        #[cfg(debug_assertions)]
        {
            // The outputs are collected, compared with the copy's, then sent as `emit`
            // sends them, in the same order.
            self.capture = Some(Vec::new());
            self.finish(last, last, None, ctx, mem);
            self.check_and_send(reference, (c, last), ctx);
        }
        #[cfg(not(debug_assertions))]
        self.finish(last, last, None, ctx, mem);
        last + 1 - c
    }

    /// Applies clocks `c ..= upto` of the transaction in progress (see [`Whole`]): wait
    /// clocks before its first data clock, then a data phase a clock; `ends`: the last
    /// word moves in clock `upto`, with FRAME# released.
    fn apply_span<M: From<PciMsg>>(
        &mut self,
        c: u64,
        upto: u64,
        w: Whole,
        ends: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        let waits = w.first.min(upto + 1).saturating_sub(c);
        let data = (upto + 1).saturating_sub(w.first.max(c));
        if let Some(t) = self.active.as_mut() {
            // FRAME# is released with the last word (and was off from the first clock
            // for a one-word transaction).
            t.frame = !ends && t.words > 1;
            if data > 0 {
                if w.slot.is_some() {
                    t.slot = w.slot; // claimed in its DEVSEL# clock
                }
                t.done_words += data;
                t.first_data.get_or_insert(w.first);
                t.last_data = Some(upto);
                t.limit_words = Some(w.limit);
            }
        }
        self.stats.wait_cycles += waits;
        self.stats.data_phases += data;
        self.stats.cycles += waits + data;
        self.stats.busy_cycles += waits + data;
        let phase = if data > 0 {
            BusPhase::Data
        } else {
            BusPhase::Wait
        };
        self.phase.set(phase, ctx);
    }

    /// Debug builds: a copy of the bus stepped clock by clock from `c` to `last`, its
    /// outputs collected instead of sent (`None` with a skew hook on, this file's or
    /// `start.rs`'s: nothing to compare then).
    #[cfg(debug_assertions)]
    pub(super) fn stepped_copy<M: From<PciMsg>>(
        &mut self,
        c: u64,
        last: u64,
        ctx: &mut Ctx<'_, M>,
    ) -> Option<(PciBus, Vec<super::Captured>)> {
        if self.whole_skew > 0 || self.start_skew > 0 {
            return None;
        }
        // The transaction log is not copied (it only grows with the run); `finish`
        // alone writes it.
        let log = self.log.take();
        let mut copy = self.clone();
        self.log = log;
        copy.capture = Some(Vec::new());
        for k in c..=last {
            copy.step(k, ctx, &mut None);
            copy.clk_next = k + 1;
        }
        let out = copy.capture.take().unwrap_or_default();
        Some((copy, out))
    }

    /// Debug builds: the outputs collected while clocks `c ..= last` were applied whole
    /// (`capture`, turned off here) are compared with those of the copy stepped clock by
    /// clock, with the rest of the bus (`check_whole`), then sent as `emit` sends them,
    /// in the same order.
    #[cfg(debug_assertions)]
    pub(super) fn check_and_send<M: From<PciMsg>>(
        &mut self,
        reference: Option<(PciBus, Vec<super::Captured>)>,
        (c, last): (u64, u64),
        ctx: &mut Ctx<'_, M>,
    ) {
        let out = self.capture.take().unwrap_or_default();
        self.check_whole(reference, &out, c, last);
        for (to, at, msg, pass) in out {
            match pass {
                Some(p) => self.emit_deferred(ctx, to, at, msg, p),
                None => self.emit(ctx, to, at, msg),
            }
        }
    }

    /// Debug builds: the bus after clocks `c ..= last` were applied whole is the copy
    /// stepped clock by clock: counters, phase, arbiter, queues, device reads, bridge,
    /// the transaction, and `out`, the outputs of the last clock.
    #[cfg(debug_assertions)]
    pub(super) fn check_whole(
        &self,
        reference: Option<(PciBus, Vec<super::Captured>)>,
        out: &[super::Captured],
        c: u64,
        last: u64,
    ) {
        let Some((copy, want)) = reference else {
            return;
        };
        let at = format!("clocks {c}..={last}");
        // The places outputs are deferred to are not compared: the copy took its own
        // sequence numbers.
        let sent = |o: &[super::Captured]| -> Vec<(sim_kernel::ComponentId, sim_kernel::Time, PciMsg, bool)> {
            o.iter()
                .map(|(to, t, m, p)| (*to, *t, m.clone(), p.is_some()))
                .collect()
        };
        assert_eq!(sent(out), sent(&want), "whole run {at}: outputs");
        assert_eq!(self.stats, copy.stats, "whole run {at}: counters");
        assert_eq!(
            self.phase.state(),
            copy.phase.state(),
            "whole run {at}: phase"
        );
        assert_eq!(self.arb, copy.arb, "whole run {at}: arbiter");
        assert_eq!(self.queued, copy.queued, "whole run {at}: queued");
        assert_eq!(
            self.device_reads, copy.device_reads,
            "whole run {at}: reads"
        );
        assert_eq!(self.bridge, copy.bridge, "whole run {at}: bridge");
        let tenure = |b: &PciBus| {
            b.active.as_deref().map(|t| {
                (
                    (t.frame, t.done_words, t.first_data, t.last_data),
                    (t.limit_words, t.lt_cut, t.stop_prev, t.stop_end),
                    (t.slot, t.read_tag, t.retry_window),
                )
            })
        };
        assert_eq!(
            tenure(self),
            tenure(&copy),
            "whole run {at}: the transaction"
        );
        let ports = |b: &PciBus| -> Vec<(u64, usize)> {
            b.masters
                .iter()
                .map(|p| (p.hold_until, p.queue.len()))
                .collect()
        };
        assert_eq!(ports(self), ports(&copy), "whole run {at}: masters");
    }
}
