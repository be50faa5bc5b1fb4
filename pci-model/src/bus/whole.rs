//! A transaction applied whole (untraced `Stepping::FastForward`): when the bus steps
//! late through a transaction that has moved no word yet, whose master holds GNT# and
//! is the only one with requests queued, and whose target takes every word as it comes,
//! the clocks up to the last one stepped are applied at once instead of clock by clock:
//! the clocks before DEVSEL# and the wait states (or, for a read, the clocks before its
//! data is seen), then one data phase a clock up to the last word, whose clock ends the
//! transaction (`finish`). Where the stepping stops earlier (an input landed, or a
//! posted write commits: `step` commits it and tells a watcher of host memory first),
//! the clocks up to there are applied.
//!
//! What makes the outcome fixed: no other master's REQ# line is on (nothing else is
//! queued), so the arbiter keeps GNT# on the master through the transaction (its own
//! line, on for its next request or not, changes nothing while it owns the bus:
//! `Arbiter::step_one`) and its latency timer never releases FRAME#; every input up to
//! the clock stepped is already accepted (the bus only steps late, inside `run_to`). A
//! device write meets no write-retry window and the target takes all its words (its
//! burst limit and the end of its range) from its first data clock (DEVSEL# and its
//! write wait states); a device read's answer is known (landed, or a folded read's
//! sample, seen from `visible_from`) and covers every word, before the initial-latency
//! Retry. A write through the bridge fits its posting room, without a target abort; a
//! read through it finds its delayed-read data in the prefetch buffer by DEVSEL# and
//! streamed at least a word a clock, so a word moves every clock. Anything else is
//! stepped clock by clock as before. The counters, the tenure's fields and the bus
//! phase end as the per-clock function leaves them: debug builds check every
//! application against a copy of the bus stepped clock by clock (and the outputs of a
//! device transaction's last clock against the copy's), `pci-model/tests/whole_run.rs`
//! and the PCI fast-path tests compare with per-clock stepping, and the lockstep harness
//! compares runs with exact stepping ([`PciBus::set_whole_skew_clocks`] breaks it by a
//! clock for the tests that show both catch that).

use super::fsm::req_line;
use super::tenure::INITIAL_LATENCY_LIMIT;
use super::words::{words, words_within};
use super::{BusPhase, DeviceReply, PciBus, TargetKind};
use crate::bridge::ReadClaim;
use crate::memory::HostMemory;
use crate::msg::PciMsg;
use crate::params::Stepping;
use sim_kernel::Ctx;

impl PciBus {
    /// Test hook: a transaction applied whole ends `clocks` clocks late, a deliberately
    /// broken fast path that the lockstep harness must catch. 0 (the default) in every
    /// real run.
    pub fn set_whole_skew_clocks(&mut self, clocks: u64) {
        self.whole_skew = clocks;
    }

    /// With clock `c` the next to step (a transaction in progress): if the rest of it can
    /// be applied whole (see the module doc), its first data clock, the clock of its
    /// last word, the words the target takes and the bridge's delayed-read slot it
    /// takes its data from (a read of host memory).
    #[inline]
    fn whole_plan(&self, c: u64, tracing: bool) -> Option<(u64, u64, u64, Option<u64>)> {
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
        let entry = self.targets.get(ti)?;
        let devsel = t.a_clk + t.devsel;
        let mut slot = None;
        let (first, limit) = match &entry.kind {
            TargetKind::HostBridge => {
                let b = self.bridge.as_ref()?;
                if b.target_aborts(t.addr) {
                    return None;
                }
                if t.command.is_read() {
                    // Data in the prefetch buffer by DEVSEL#, streamed at least a word a
                    // clock: a word every clock from there.
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
                    slot = Some(s.id);
                    (devsel, words_within(t.addr, t.end, t.w, s.limit))
                } else {
                    if t.limit_words.is_some() {
                        return None;
                    }
                    (
                        devsel,
                        words_within(t.addr, t.end, t.w, b.write_limit(t.addr)),
                    )
                }
            }
            TargetKind::Device { .. } if t.command.is_read() => {
                let read = self
                    .device_reads
                    .iter()
                    .find(|r| Some(r.tag) == t.read_tag)?;
                let len = match read.reply.as_ref()? {
                    DeviceReply::Data(d) => d.len() as u64,
                    DeviceReply::Sampled { len, .. } => *len,
                    DeviceReply::Abort => return None,
                };
                let covered = t.addr.saturating_add(len).min(entry.end);
                (
                    devsel.max(read.visible_from),
                    words_within(t.addr, t.end, t.w, covered),
                )
            }
            TargetKind::Device { profile, .. } => {
                if !self.write_retry.is_empty() || t.limit_words.is_some() {
                    return None;
                }
                let mut lim = entry.end;
                if profile.max_write_burst_bytes > 0 {
                    lim = lim.min(t.addr.saturating_add(profile.max_write_burst_bytes));
                }
                (
                    devsel.max(t.a_clk + 1 + profile.write_wait_states.0),
                    words_within(t.addr, t.end, t.w, lim).max(1),
                )
            }
        };
        let n = t.words;
        if n == 0 || limit < n || first < c || first > t.a_clk + INITIAL_LATENCY_LIMIT {
            return None;
        }
        debug_assert_eq!(n, words(t.addr, t.end, t.w));
        let first = first + self.whole_skew;
        Some((first, first + n - 1, limit, slot))
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
        let Some((first, end_clock, limit, slot)) = self.whole_plan(c, ctx.tracing()) else {
            return 0;
        };
        // A posted write that commits in one of the clocks, or a watcher of host memory
        // to tell, needs that clock stepped (`step` commits and tells first).
        let mut target = target;
        if self.bridge.is_some() {
            if mem.as_deref().is_some_and(HostMemory::has_hits) {
                return 0;
            }
            if let Some(k) = self.next_commit_clock() {
                if k <= c {
                    return 0;
                }
                target = target.min(k - 1);
            }
        }
        let last = end_clock.min(target);
        let ends = last == end_clock;
        if ends && self.bridge.is_some() {
            // Through the host bridge the last word's `finish` reads host memory or posts
            // the data, which a debug check's copy of the bus must not do a second time:
            // the copy is compared before that clock, which is then applied as `step`
            // applies it.
            if last > c {
                #[cfg(debug_assertions)]
                let reference = (self.whole_skew == 0).then(|| self.stepped_copy(c, last - 1, ctx));
                self.apply_span(c, last - 1, (first, limit, slot), false, ctx);
                #[cfg(debug_assertions)]
                if let Some(reference) = reference {
                    self.clk_next = last;
                    self.check_whole(&reference, &[], c, last - 1);
                }
            }
            self.apply_span(last, last, (first, limit, slot), true, ctx);
            self.clk_next = last;
            self.finish(last, last, None, ctx, mem);
            return last + 1 - c;
        }
        #[cfg(debug_assertions)]
        let reference = (self.whole_skew == 0).then(|| self.stepped_copy(c, last, ctx));
        self.apply_span(c, last, (first, limit, slot), ends, ctx);
        if !ends {
            #[cfg(debug_assertions)]
            if let Some(reference) = reference {
                self.clk_next = last + 1;
                self.check_whole(&reference, &[], c, last);
            }
            return last + 1 - c;
        }
        // The last word's clock ends the transaction, as `step` does it.
        self.clk_next = last;
        #[cfg(debug_assertions)]
        if let Some(reference) = reference {
            // The outputs are collected, compared with the copy's, then sent as `emit`
            // sends them, in the same order.
            self.capture = Some(Vec::new());
            self.finish(last, last, None, ctx, mem);
            let out = self.capture.take().unwrap_or_default();
            self.check_whole(&reference, &out, c, last);
            for (to, at, msg) in out {
                ctx.send_at(to, at, msg.into());
            }
            return last + 1 - c;
        }
        self.finish(last, last, None, ctx, mem);
        last + 1 - c
    }

    /// Applies clocks `c ..= upto` of the transaction in progress: wait clocks before
    /// `first`, a data phase a clock from `first` on (the target takes `limit` words; a
    /// bridge read's data comes from `slot`); `ends`: the last word moves in `upto`,
    /// with FRAME# released.
    fn apply_span<M: From<PciMsg>>(
        &mut self,
        c: u64,
        upto: u64,
        (first, limit, slot): (u64, u64, Option<u64>),
        ends: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        let waits = first.min(upto + 1).saturating_sub(c);
        let data = (upto + 1).saturating_sub(first.max(c));
        if let Some(t) = self.active.as_mut() {
            // FRAME# is released with the last word (and was off from the first clock
            // for a one-word transaction).
            t.frame = !ends && t.words > 1;
            if data > 0 {
                if slot.is_some() {
                    t.slot = slot; // claimed in its first data clock
                }
                t.done_words += data;
                t.first_data.get_or_insert(first);
                t.last_data = Some(upto);
                t.limit_words = Some(limit);
            }
        }
        self.stats.wait_cycles += waits;
        self.stats.data_phases += data;
        self.stats.cycles += waits + data;
        self.stats.busy_cycles += waits + data;
        self.phase.set(
            if data > 0 {
                BusPhase::Data
            } else {
                BusPhase::Wait
            },
            ctx,
        );
    }

    /// Steps clock `c` of an idle bus in which the master holding GNT#, the only one with
    /// requests queued, starts its transaction (its REQ# line is on): `begin`, the
    /// address phase, the counters and the arbiter as `step` moves them, without the
    /// per-clock function's general paths. Whether it did (else step as before).
    pub(super) fn whole_start<M: From<PciMsg>>(
        &mut self,
        c: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) -> bool {
        if ctx.tracing()
            || self.params.stepping != Stepping::FastForward
            || self.active.is_some()
            || self.phase.state() != BusPhase::Idle
        {
            return false;
        }
        let Some(m) = self.arb.gnt() else {
            return false;
        };
        if self.others_queued(m)
            || !self
                .masters
                .get(m)
                .is_some_and(|port| req_line(port, false, c))
        {
            return false;
        }
        if self.bridge.is_some()
            && (mem.as_deref().is_some_and(HostMemory::has_hits)
                || self.next_commit_clock().is_some_and(|k| k <= c))
        {
            return false; // `step` commits and tells first
        }
        #[cfg(debug_assertions)]
        let reference = self.stepped_copy(c, c, ctx);
        #[cfg(debug_assertions)]
        {
            self.capture = Some(Vec::new());
        }
        self.begin(m, c, ctx);
        self.phase.set(BusPhase::Address, ctx);
        self.stats.cycles += 1;
        self.stats.busy_cycles += 1;
        self.arb.step_one(m, true, Some(m), false);
        #[cfg(debug_assertions)]
        {
            let out = self.capture.take().unwrap_or_default();
            self.clk_next = c + 1;
            self.check_whole(&reference, &out, c, c);
            self.clk_next = c;
            for (to, at, msg) in out {
                ctx.send_at(to, at, msg.into());
            }
        }
        true
    }

    /// Debug builds: a copy of the bus stepped clock by clock from `c` to `last`, its
    /// outputs collected instead of sent.
    #[cfg(debug_assertions)]
    fn stepped_copy<M: From<PciMsg>>(
        &self,
        c: u64,
        last: u64,
        ctx: &mut Ctx<'_, M>,
    ) -> (PciBus, Vec<super::Captured>) {
        let mut copy = self.clone();
        copy.capture = Some(Vec::new());
        let mut k = c;
        while k <= last {
            copy.step(k, ctx, &mut None);
            k += 1;
            copy.clk_next = k;
        }
        let out = copy.capture.take().unwrap_or_default();
        (copy, out)
    }

    /// Debug builds: the bus after a whole application is the copy stepped clock by
    /// clock (what the check can compare: counters, phase, arbiter, queues, reads).
    #[cfg(debug_assertions)]
    fn check_whole(
        &self,
        reference: &(PciBus, Vec<super::Captured>),
        out: &[super::Captured],
        c: u64,
        last: u64,
    ) {
        let (copy, want) = reference;
        let at = format!("clocks {c}..={last}");
        assert_eq!(out, &want[..], "whole run {at}: outputs");
        assert_eq!(self.stats, copy.stats, "whole run {at}: counters");
        assert_eq!(
            self.phase.state(),
            copy.phase.state(),
            "whole run {at}: phase"
        );
        assert_eq!(self.arb, copy.arb, "whole run {at}: arbiter");
        assert_eq!(self.queued, copy.queued, "whole run {at}: queued");
        assert_eq!(
            self.clk_next + u64::from(self.active.is_none()),
            copy.clk_next,
            "whole run {at}: clock"
        );
        let tenure = |b: &PciBus| {
            b.active.as_deref().map(|t| {
                (
                    t.frame,
                    t.done_words,
                    t.first_data,
                    t.last_data,
                    t.limit_words,
                    t.lt_cut,
                    t.stop_prev,
                    t.stop_end,
                )
            })
        };
        assert_eq!(
            tenure(self),
            tenure(copy),
            "whole run {at}: the transaction"
        );
        assert_eq!(
            self.device_reads.len(),
            copy.device_reads.len(),
            "whole run {at}: device reads"
        );
        let ports = |b: &PciBus| -> Vec<(u64, u64, usize)> {
            b.masters
                .iter()
                .map(|p| (p.hold_until, p.lt, p.queue.len()))
                .collect()
        };
        assert_eq!(ports(self), ports(copy), "whole run {at}: masters");
    }
}
