//! Untraced fast-forward over whole Retry attempts of a delayed read: where the retry
//! loop's look-ahead (`retry.rs`) predicts attempts that end in Retry, `run_to` applies
//! each such attempt, with the idle clocks up to the next, as a whole instead of
//! stepping its clocks one by one.
//!
//! It applies where the look-ahead's periodic loop does: the only queued work is one
//! master's read of host memory through the bridge (delayed reads), GNT# is parked on
//! that master, the bus is idle and the master's REQ# line is on, so it starts an
//! attempt in this clock. The attempt's course is then fixed by the per-clock rules of
//! `fsm.rs`, `tenure.rs` and `complete.rs`: its address phase, the clocks before
//! DEVSEL#, the DEVSEL# clock in which the bridge latches the read (or finds it
//! latched) and, its data not there yet, signals Retry, the clock after with FRAME#
//! released (a read of more than one word), then the turnaround and the idle clocks of
//! the master's REQ# hold-off (PCI 2.2 §3.4.1, and its recovery time) up to the next
//! attempt's address phase. No REQ# line but the master's is ever on, so the arbiter
//! keeps GNT# on it; no input lands inside `run_to`, and no posted write commits in the
//! attempt's clocks (a commit moves the bridge's fetch start: the run stops before it).
//!
//! What the attempt does is applied as the clocks would: the counters (transactions,
//! Retries, the bridge's delayed reads and read Retries, busy, idle and wait clocks),
//! the request's counts and start, the master's hold-off, the arbiter's record of the
//! master that started, the bridge's latch, the transaction log's record. With a trace
//! or `Stepping::PerClock` every clock is stepped. The PCI lockstep tests and the
//! system's lockstep harness compare both ways, and [`PciBus::set_retry_run_skew_clocks`]
//! breaks it by a clock for the test that shows the harness catches it.

use super::retry::retried;
use super::words::words_within;
use super::PciBus;
use crate::bridge::ReadClaim;
use crate::msg::Command;
use crate::params::{ParkPolicy, ReadMode, Stepping};
use crate::stats::{TenureEnd, TenureRecord};

impl PciBus {
    /// Test hook: each Retry attempt applied as a whole leaves the master's REQ#
    /// deasserted `clocks` longer, a deliberately broken fast path that the lockstep
    /// harness must catch. 0 (the default) in every real run.
    pub fn set_retry_run_skew_clocks(&mut self, clocks: u64) {
        self.retry_run_skew = clocks;
    }

    /// With clock `c` the next to step and `target` the last: applies every whole Retry
    /// attempt of a delayed read from `c` on that ends, with its idle clocks, by
    /// `target` (see the module doc). Returns the clocks applied (0: step clock `c`).
    #[inline(always)]
    pub(super) fn retry_run(&mut self, c: u64, target: u64, tracing: bool) -> u64 {
        // The cheap refusals first, in line: this is asked at every clock `run_to` would
        // step with no transaction in progress, on every bus (a local bus has no
        // bridge; a turnaround clock is not idle yet; an idle bus mostly has nothing
        // queued), and a call of the whole function costs more than the refusal.
        if self.bridge.is_none()
            || tracing
            || self.active.is_some()
            || self.queued == 0
            || self.phase.state() != super::BusPhase::Idle
        {
            return 0;
        }
        // Attempts are applied only for the master GNT# is parked on, whose next request
        // reads (`retry_run_idle` asks for that and more): a bus whose parked master
        // writes (a DMA write burst's, nearly half the calls) is refused here.
        let Some(head) = self
            .arb
            .gnt()
            .and_then(|g| self.masters.get(g))
            .and_then(|p| p.queue.front())
            .filter(|q| q.req.command.is_read())
        else {
            return 0;
        };
        // Nor is a read whose data the bridge has by the attempt's DEVSEL# edge (about
        // half the calls that get this far): the attempt moves data and is stepped.
        // `retry_run_idle`, which goes on only for this master's request as the sole
        // read, counts on this refusal (checked there in debug builds).
        if self.data_by_devsel(head, c) {
            return 0;
        }
        self.retry_run_idle(c, target)
    }

    /// Whether the bridge has the data of `head`'s read, latched, by the DEVSEL# edge
    /// of an attempt whose address phase is clock `c`.
    #[inline(always)]
    pub(super) fn data_by_devsel(&self, head: &super::Queued, c: u64) -> bool {
        self.bridge.as_ref().is_some_and(|b| {
            let devsel = b.params().devsel.clocks();
            b.slot_for(head.req.addr + head.done, head.req.command)
                .is_some_and(|slot| slot.first_data <= self.edge(c + devsel))
        })
    }

    /// [`PciBus::retry_run`] on an idle bus with a bridge and work queued, untraced.
    #[inline(never)]
    fn retry_run_idle(&mut self, c: u64, target: u64) -> u64 {
        let Some(bridge) = self.bridge.as_ref() else {
            return 0;
        };
        if self.params.stepping != Stepping::FastForward
            || self.params.park != ParkPolicy::LastMaster
            || bridge.params().read_mode != ReadMode::Delayed
        {
            return 0;
        }
        let Some(sole @ (m, port, head, _)) = self.sole_bridge_read() else {
            return 0;
        };
        // The master starts in clock `c`: GNT# parked on it and its REQ# line on.
        if self.arb.gnt() != Some(m) || c < port.req_on_from(head) {
            return 0;
        }
        // An attempt that finds its read latched and the data there by its DEVSEL#
        // edge was refused in line (`retry_run`: this master is the parked one, `head`
        // its request); the loop below would decide the same at its first attempt
        // (`read_claim` answers `Latched` exactly when `slot_for` finds the slot).
        debug_assert!(!self.data_by_devsel(head, c), "refused in line");
        let tag = head.req.tag;
        let Some(r) = self.read_of(sole) else {
            return 0; // target-aborted: stepped
        };
        let (addr, end, command, w, devsel) = (r.addr, r.end, r.command, r.w, r.devsel);
        let frame = u64::from(r.all > 1);
        let commit = self.next_commit_clock().unwrap_or(u64::MAX);
        let mut s = c;
        let mut attempts = 0u64;
        loop {
            // The attempt's last clock and its master's REQ# hold-off after it: the next
            // attempt starts in the clock after the hold-off.
            let last = s + devsel + frame;
            let hold = retried(last, r.recovery).saturating_add(self.retry_run_skew);
            // The whole attempt and its idle clocks by `target`, no commit among them.
            if hold > target || commit <= hold {
                break;
            }
            let Some(bridge) = self.bridge.as_ref() else {
                break;
            };
            let dev = s + devsel;
            let at = self.edge(dev);
            let (first_data, limit) = match bridge.read_claim(addr, command, at) {
                ReadClaim::Latched(slot) => (slot.first_data, slot.limit),
                ReadClaim::New { first_data, limit } => (first_data, limit),
                ReadClaim::Full => break,
            };
            // It moves data (or the bridge can never supply the read): stepped.
            if first_data <= at || words_within(addr, end, w, limit) == 0 {
                break;
            }
            self.apply_retry_attempt(m, (s, dev, last, hold), (addr, end, command, tag), w);
            attempts += 1;
            s = hold + 1;
        }
        if attempts == 0 {
            return 0;
        }
        let n = s - c;
        // The idle clocks after the last attempt's turnaround up to `s`.
        tracing::trace!(target: "pci::bus", master = m, attempts, clocks = n, "retry attempts applied");
        n
    }

    /// One Retry attempt of master `m`'s read from its address clock `s` (DEVSEL# in
    /// clock `dev`) to its last clock `last`, with its idle clocks up to the master's
    /// hold-off `hold` (see the module doc).
    fn apply_retry_attempt(
        &mut self,
        m: usize,
        (s, dev, last, hold): (u64, u64, u64, u64),
        (addr, end, command, tag): (u64, u64, Command, u64),
        w: u64,
    ) {
        let t_s = self.edge(s);
        let at = self.edge(dev);
        // Address phase: the arbiter records the start, the request its transaction.
        self.arb.record_start(m);
        if let Some(head) = self.masters.get_mut(m).and_then(|p| p.queue.front_mut()) {
            head.transactions += 1;
            head.start.get_or_insert(t_s);
            head.retries += 1;
        }
        tracing::trace!(target: "pci::bus", master = m, cmd = command.name(), addr, bytes = end - addr, clock = s, "address phase");
        // DEVSEL#: the bridge latches the read (or finds it latched) and Retries.
        if let Some(b) = self.bridge.as_mut() {
            let _ = b.claim_read(addr, command, at);
            b.stats.read_retries += 1;
        }
        // Hold-off after a target termination, and the master's recovery.
        if let Some(p) = self.masters.get_mut(m) {
            p.hold_until = hold;
        }
        tracing::trace!(target: "pci::bus", master = m, addr, bytes = 0u64, last, end = TenureEnd::Retry.name(), "transaction end");
        if self.log.is_some() && self.log_keeps(tag) {
            if let Some(log) = self.log.as_mut() {
                log.push(TenureRecord {
                    master: u16::try_from(m).unwrap_or(u16::MAX),
                    tag,
                    command,
                    addr,
                    bytes: 0,
                    data_phases: 0,
                    address_clock: s,
                    first_data_clock: None,
                    last_data_clock: None,
                    last_clock: last,
                    end: TenureEnd::Retry,
                    devsel_clock: Some(dev),
                    phase_bytes: w,
                    data: Vec::new(),
                });
            }
        }
        let busy = last + 1 - s;
        // The turnaround and the idle clocks up to the next attempt's address phase.
        let idle = hold - last;
        self.stats.transactions += 1;
        self.stats.retries += 1;
        self.stats.cycles += busy + idle;
        self.stats.busy_cycles += busy;
        self.stats.idle_cycles += idle;
        // The clocks after the address phase: before DEVSEL#, STOP#, and the one after.
        self.stats.wait_cycles += last - s;
        if let Some(st) = self.stats.per_master.get_mut(m) {
            st.transactions += 1;
            st.retries += 1;
        }
    }
}
