//! The read and write folds of a RAM-backed device target (see [`crate::ram_fold`]):
//! untraced and in `Stepping::FastForward`, a read of such a target is answered by the
//! bus from the target's RAM, which the World passes in ([`PciBus::handle_ram`]),
//! instead of with `TargetRead` and `TargetReadData`, and a write outside the target's
//! watched window is stored in it at the place its `TargetWrite` would have had
//! (`fold_write`, see [`crate::ram_fold`]). Results are those of the messages,
//! clock for clock and byte for byte; for reads:
//!
//! - **When the RAM is read.** At the address phase (clock `c`, stepped at its own edge:
//!   a device read's address clock is an output clock of the untraced look-ahead) the
//!   bus computes where `TargetRead` would land, `t_s`: the target's first edge at or
//!   after edge `c + 1`, at least one of its cycles after now (`ClockDomain::landing`,
//!   the kernel's rule for `send_at`), and its place in the run's order: normal priority
//!   and the sequence number the queue holds now (`Ctx::next_sequence`), the one the
//!   message would have taken. It registers a sample of the bytes the target would read
//!   (`[addr, addr + min(len, end - addr))`) at that place with the RAM, which keeps it
//!   copy-on-write ([`crate::ReadSamples`]): the bytes the RAM holds at `t_s` in the
//!   order of events, whatever is written later.
//! - **When the data is seen.** `TargetReadData` would be sent at `t_s` to land
//!   `read_latency` target clocks later, on the bus's first edge at or after that and at
//!   least one bus clock after `t_s`: clock `k_d`. The answer is seen by the clocks from
//!   `k_d` on, as the landed message is (a message landing at edge `k` is seen by clock
//!   `k`, which the bus steps after it), in `target_ready` and in the look-ahead
//!   (`device_output_bound`), so the bus has no wake-up for the answer: it is woken
//!   where the transaction first has an output, as for a read whose data has landed.
//! - **When the bytes are taken.** At the first event of the bus after `t_s` (its key
//!   above the sample's), before any clock is stepped: clock `k_d` and later are only
//!   stepped at or after edge `k_d`, which is after `t_s`.
//! - **Abort.** A read starting outside the RAM is answered with target abort from
//!   clock `k_d`, as `Gec::target_read` does.
//! - **Counters.** The target does not see folded reads or writes: the bus counts them
//!   ([`PciBus::fold_stats`]), taking back at a settled stop those whose place (where
//!   the target would have counted the message) is after it, and the system's reports
//!   add them to the target's own.
//!
//! A sample's place and its data clock are computed from the same clock arithmetic as the
//! messages', so a traced run (messages) and an untraced one (fold) agree; the lockstep
//! harness compares exact stepping with both, and [`PciBus::set_fold_skew_clocks`]
//! breaks the fold by a clock for the test that shows the harness catches it.

use super::{DeviceRead, DeviceReply, PciBus, TargetId, TargetKind};
use crate::error::PciError;
use crate::msg::PciMsg;
use crate::params::Stepping;
use crate::ram_fold::{FoldRam, RamBacking};
use sim_kernel::{ComponentId, Ctx, Cycles, EventKey, Priority, Time};

/// Reads the bus answered from a target's RAM, and writes it stored there (they never
/// reached the target): as the target counts them, where the run passes the place its
/// message would have been delivered at, once the bus is settled (a run cut while one is
/// on its way does not count it, as the messages' run does not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FoldStats {
    /// Reads answered (the target's `TargetRead`s that were not sent).
    pub reads: u64,
    /// Of them, reads starting outside the RAM, answered with target abort.
    pub aborts: u64,
    /// Writes stored (the target's `TargetWrite`s that were not sent).
    pub writes: u64,
}

/// The places of the bus's last folded messages it keeps, to take back from the counts
/// those a run stops before (see [`PciBus::settle_ram`]): a folded message's place is a
/// target clock or two after the bus clock that folds it, and a transaction takes at
/// least two bus clocks, so a stop can fall before the places of a few at most.
pub(crate) const RECENT_FOLDS: usize = 64;

/// What a folded message would have been, for [`FoldStats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Folded {
    Read,
    Abort,
    Write,
}

impl FoldStats {
    pub(crate) fn count(&mut self, what: Folded) {
        match what {
            Folded::Read => self.reads += 1,
            Folded::Abort => {
                self.reads += 1;
                self.aborts += 1;
            }
            Folded::Write => self.writes += 1,
        }
    }
}

/// A sample decided in an address phase, registered with the RAM when the handler ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewSample {
    pub tag: u64,
    pub at: EventKey,
    pub addr: u64,
    pub len: u64,
}

impl PciBus {
    /// Declares device target `target` RAM-backed: untraced and in
    /// `Stepping::FastForward`, while the bus is handled with [`PciBus::handle_ram`], its
    /// reads are answered from that RAM and its writes outside `ram.watch` stored in it
    /// (see the module doc).
    ///
    /// # Errors
    /// An unknown target or the host bridge.
    pub fn set_ram_backed(&mut self, target: TargetId, ram: RamBacking) -> Result<(), PciError> {
        let ti = usize::from(target.0);
        if !matches!(
            self.targets.get(ti).map(|t| &t.kind),
            Some(TargetKind::Device { .. })
        ) {
            return Err(PciError::BadParam {
                name: "ram-backed target",
                why: format!("target {ti} is not a device target"),
            });
        }
        self.ram_targets.retain(|(i, _)| *i != ti);
        self.ram_targets.push((ti, ram));
        Ok(())
    }

    /// [`PciBus::handle_ram`] with the master whose completions the bus may run
    /// (`master_fold.rs`, [`PciBus::fold_master_completions`]) lent for this event.
    pub fn handle_local<M: From<PciMsg>, R: FoldRam + ?Sized>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        ram: &mut R,
        master: Option<&mut dyn super::master_fold::FoldedMaster<M>>,
    ) {
        let Some(m) = master else {
            self.handle_ram_with(msg, ctx, ram, None);
            return;
        };
        self.local_on = self.local_master.is_some();
        self.handle_ram_with(msg, ctx, ram, Some(&mut *m));
        self.local_on = false;
        // The bus emits a master's completion or register write only while it steps a
        // wake-up's clocks, which runs what it kept: none is left. Were one left, it is
        // run here rather than lost.
        debug_assert!(self.local_done.is_empty(), "a kept completion not run");
        if !self.local_done.is_empty() {
            self.run_completions(ctx, m);
        }
    }

    /// [`PciBus::handle`] for a bus with a RAM-backed target, with that target's RAM
    /// (and no host memory).
    pub fn handle_ram<M: From<PciMsg>, R: FoldRam + ?Sized>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        ram: &mut R,
    ) {
        self.handle_ram_with(msg, ctx, ram, None);
    }

    /// [`PciBus::handle_ram`] with the master whose completions the bus may run, if lent.
    #[inline(always)]
    fn handle_ram_with<M: From<PciMsg>, R: FoldRam + ?Sized>(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, M>,
        ram: &mut R,
        master: Option<&mut dyn super::master_fold::FoldedMaster<M>>,
    ) {
        // The run goes on after a settled stop: what it took back counts again.
        self.fold_stop = None;
        if self.samples_out > 0 {
            // The writes stored for places before this event first: a sample sees those
            // before its own place.
            ram.pass(ctx.event_key());
            self.take_samples(ctx.event_key(), ram);
        }
        self.fold_on = true;
        self.handle_with(msg, ctx, None, master);
        self.fold_on = false;
        if !self.fold_writes.is_empty() {
            self.store_writes(ram);
        }
        if self.fold_new.is_empty() {
            return;
        }
        // The vector keeps its room for the next samples.
        let mut new = std::mem::take(&mut self.fold_new);
        for s in new.drain(..) {
            let id = ram.sample(s.at, s.addr, s.len);
            if let Some(DeviceReply::Sampled { sample, .. }) = self
                .device_reads
                .iter_mut()
                .find(|r| r.tag == s.tag)
                .and_then(|r| r.reply.as_mut())
            {
                *sample = Some(id);
                self.samples_out += 1;
            }
        }
        self.fold_new = new;
    }

    /// Hands the writes stored in this handler to the RAM (the write fold). Out of line:
    /// inlined, it kept `handle` from being inlined into `handle_ram`.
    #[inline(never)]
    fn store_writes<R: FoldRam + ?Sized>(&mut self, ram: &mut R) {
        for (at, addr, data) in self.fold_writes.drain(..) {
            ram.write_at(at, addr, data);
        }
    }

    /// Reads answered from a target's RAM and writes stored there so far (see
    /// [`FoldStats`]): exact at a settled stop ([`PciBus::settle_ram`]), whose key it
    /// takes back those whose place is after; between stops, those on their way are
    /// counted too.
    #[must_use]
    pub fn fold_stats(&self) -> FoldStats {
        let Some(stop) = self.fold_stop else {
            return self.fold;
        };
        // Every kept place is looked at (the ring's order does not matter here).
        let kept =
            usize::try_from(self.fold_recent_n).map_or(RECENT_FOLDS, |n| n.min(RECENT_FOLDS));
        let mut after = FoldStats::default();
        for &(at, what) in self.fold_recent.iter().take(kept) {
            if at > stop {
                after.count(what);
            }
        }
        FoldStats {
            reads: self.fold.reads - after.reads,
            aborts: self.fold.aborts - after.aborts,
            writes: self.fold.writes - after.writes,
        }
    }

    /// A stop after the events at or before `end`: the folded messages whose place is
    /// after it are not counted (see [`PciBus::fold_stats`]) until the bus's next event.
    pub(super) fn uncount_after(&mut self, end: EventKey) {
        self.fold_stop = Some(end);
        // The oldest place kept (the next the ring overwrites) must be passed, else
        // older ones on their way were not kept.
        let oldest = usize::try_from(self.fold_recent_n % RECENT_FOLDS as u64).unwrap_or(0);
        if self.fold_recent_n > RECENT_FOLDS as u64 && self.fold_recent[oldest].0 > end {
            tracing::error!(target: "pci::bus", "more folded messages on their way than kept: counts too high");
            debug_assert!(
                false,
                "more than {RECENT_FOLDS} folded messages on their way"
            );
        }
    }

    /// Counts a folded message whose place is `at`, keeping the place (see
    /// [`PciBus::uncount_after`]).
    fn fold_place(&mut self, at: EventKey, what: Folded) {
        self.fold.count(what);
        let i = (self.fold_recent_n % RECENT_FOLDS as u64) as usize;
        self.fold_recent[i] = (at, what);
        self.fold_recent_n += 1;
    }

    /// Test hook: a folded read's data is seen `clocks` late, a deliberately broken
    /// fold that the lockstep harness must catch. 0 (the default) in every real run.
    pub fn set_fold_skew_clocks(&mut self, clocks: u64) {
        self.fold_skew = clocks;
    }

    /// The bytes of every sample whose place comes before `now` (the event being
    /// handled), taken from the RAM.
    pub(super) fn take_samples<R: FoldRam + ?Sized>(&mut self, now: EventKey, ram: &mut R) {
        for r in &mut self.device_reads {
            let Some(DeviceReply::Sampled {
                at,
                sample: Some(id),
                ..
            }) = r.reply
            else {
                continue;
            };
            if at >= now {
                continue;
            }
            self.samples_out = self.samples_out.saturating_sub(1);
            r.reply = Some(match ram.take_sample(id) {
                Some(d) => DeviceReply::Data(d),
                None => {
                    tracing::error!(target: "pci::bus", id, "a folded read's sample is gone: target abort");
                    DeviceReply::Abort
                }
            });
        }
    }

    /// The device read of `[addr, addr + len)` by target `ti` (component `component`)
    /// with its address phase in clock `c`, answered from the target's RAM if it is
    /// RAM-backed and the fold applies (see the module doc): the read, with its answer
    /// seen from the clock `TargetReadData` would land in. `None`: send `TargetRead`.
    pub(super) fn fold_read<M: From<PciMsg>>(
        &mut self,
        ti: usize,
        component: ComponentId,
        (tag, addr, len): (u64, u64, u64),
        command: crate::msg::Command,
        c: u64,
        ctx: &Ctx<'_, M>,
    ) -> Option<DeviceRead> {
        if !self.fold_on || ctx.tracing() || self.params.stepping != Stepping::FastForward {
            return None;
        }
        let ram = self
            .ram_targets
            .iter()
            .find(|(i, _)| *i == ti)
            .map(|(_, r)| *r)?;
        let target = ctx.domain_of(component);
        let t_s = target.landing(ctx.now(), self.edge(c + 1));
        let sent = target.edge_after(t_s, Cycles(ram.read_latency.0.max(1)));
        let t_d = ctx.my_domain().landing(t_s, sent);
        let k_d = self.clock_floor(t_d);
        let at = EventKey {
            time: t_s,
            priority: Priority::NORMAL,
            sequence: ctx.next_sequence(),
        };
        let n = if (ram.start..ram.end).contains(&addr) {
            len.min(ram.end - addr)
        } else {
            0
        };
        let reply = if n == 0 {
            self.fold_place(at, Folded::Abort);
            tracing::warn!(target: "pci::bus", addr, len, "read outside the target's RAM: target abort");
            DeviceReply::Abort
        } else {
            self.fold_place(at, Folded::Read);
            self.fold_new.push(NewSample {
                tag,
                at,
                addr,
                len: n,
            });
            DeviceReply::Sampled {
                len: n,
                at,
                sample: None,
            }
        };
        Some(DeviceRead {
            tag,
            target: ti,
            addr,
            command,
            reply: Some(reply),
            visible_from: k_d.saturating_add(self.fold_skew),
        })
    }

    /// Test hook: a folded write's place lies `clocks` of the target's clocks late, a
    /// deliberately broken fold that the tests must catch. 0 (the default) in every real
    /// run.
    pub fn set_fold_write_skew_clocks(&mut self, clocks: u64) {
        self.fold_write_skew = clocks;
    }

    /// The write fold (see [`crate::ram_fold`]): `msg`, a `TargetWrite` for component
    /// `to` to land at `at`, stored for the RAM of a RAM-backed target at the place the
    /// message would have taken, instead of sent; sent when it must be: another target,
    /// a write the target watches, one outside the RAM, a traced run or per-clock
    /// stepping. Out of line: `emit`, which every output passes, stays small.
    #[inline(never)]
    pub(super) fn fold_write<M: From<PciMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        to: ComponentId,
        at: Time,
        msg: PciMsg,
    ) {
        let PciMsg::TargetWrite { addr, data } = msg else {
            ctx.send_at(to, at, msg.into());
            return;
        };
        let folds = !ctx.tracing()
            && self.params.stepping == Stepping::FastForward
            && self.ram_targets.iter().any(|(ti, ram)| {
                matches!(self.targets[*ti].kind, TargetKind::Device { component, .. } if component == to)
                    && ram.folds_write(addr, data.len() as u64)
            });
        if !folds {
            ctx.send_at(to, at, PciMsg::TargetWrite { addr, data }.into());
            return;
        }
        // Where `send_at` would land it, and the sequence number its push would take.
        let target = ctx.domain_of(to);
        let mut time = target.landing(ctx.now(), at);
        if self.fold_write_skew > 0 {
            time = target.edge_after(time, Cycles(self.fold_write_skew));
        }
        let place = EventKey {
            time,
            priority: Priority::NORMAL,
            sequence: ctx.reserve_sequence(),
        };
        self.fold_place(place, Folded::Write);
        self.fold_writes.push((place, addr, data));
    }

    /// The bus clock whose edge is `t` (or the last one before it).
    fn clock_floor(&self, t: Time) -> u64 {
        t.as_ps().saturating_sub(self.phase_ps) / self.period_ps.max(1)
    }
}
