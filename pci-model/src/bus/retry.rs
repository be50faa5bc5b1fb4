//! Without a trace, a delayed read's retry loop stepped ahead: while the only queued
//! work is one master's read of host memory whose data is not in the bridge yet, the
//! attempt that latches the read, the Retries after it and the idle clocks between them
//! have no output, and what they do follows from the state alone (no input lands
//! before the bus is next woken; one that does wakes it and the bound is computed
//! again). The look-ahead below steps them in a shadow of the bus (the arbiter, the
//! master's REQ# hold-off, the attempt's FRAME#) with the per-clock rules of
//! `fsm.rs`, `tenure.rs` and `complete.rs`, and the latch with the bridge's own rule
//! ([`HostBridge::read_claim`](crate::bridge::HostBridge::read_claim): the fetch starts
//! at the later of the DEVSEL# edge and the last commit, plus the memory latency), up
//! to the first attempt that moves data: the bus is woken for that attempt's last
//! clock, its first output. The clocks before are stepped late, through the same
//! per-clock function, when it wakes.
//!
//! `Stepping::PerClock` and traced runs never use it; the PCI lockstep tests and the
//! system's lockstep harness compare both ways, and the debug assertion in `emit`
//! catches an output stepped late (the test hook
//! [`PciBus::set_untraced_read_skew_clocks`] shows that a bound one clock late is caught).

use super::bulk::SoleRead;
use super::lookahead::LOOKAHEAD_MASTERS;
use super::tenure::INITIAL_LATENCY_LIMIT;
use super::words::{words, words_within};
use super::{BusPhase, PciBus};
use crate::bridge::ReadClaim;
use crate::msg::Command;
use crate::params::{ParkPolicy, ReadMode};
use sim_kernel::Time;

/// Clocks the look-ahead steps at most (past them the older bounds wake the bus).
const HORIZON: u64 = 4096;

/// The shadow of the bus in one clock of the retry loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shadow {
    /// No transaction; `release`: the clock is the turnaround after one.
    Idle { release: bool },
    /// An attempt whose address phase was clock `a`, with its FRAME#.
    Attempt { a: u64, frame: bool },
    /// The clock after STOP# with FRAME# asserted: the attempt's last.
    Hold,
}

/// The read the look-ahead follows: what stays fixed through its retry loop.
#[derive(Clone, Copy, Debug)]
pub(super) struct Read {
    pub(super) addr: u64,
    pub(super) end: u64,
    pub(super) command: Command,
    /// Bytes per data phase, and the data phases the master wants.
    pub(super) w: u64,
    pub(super) all: u64,
    pub(super) devsel: u64,
    /// Memory streams a word per clock once the first is there.
    pub(super) stream_ok: bool,
    pub(super) recovery: u64,
}

impl Read {
    /// Whether an attempt that moves data with FRAME# `frame` at its first data phase
    /// moves a word a clock up to its last: it is one word, or memory keeps up and no
    /// latency timer has released FRAME#.
    fn full_speed(&self, frame: bool) -> bool {
        self.all == 1 || (self.stream_ok && frame)
    }
}

impl PciBus {
    /// What stays fixed through the retry loop of the sole read `sole` (see
    /// [`PciBus::sole_bridge_read`]); `None` where the bridge target-aborts it.
    pub(super) fn read_of(&self, (m, port, head, ti): SoleRead<'_>) -> Option<Read> {
        let addr = head.req.addr + head.done;
        let end = head.req.addr + head.total;
        let bridge = self.bridge.as_ref()?;
        if bridge.target_aborts(addr) {
            return None;
        }
        let w = self.width_for(m, ti);
        Some(Read {
            addr,
            end,
            command: head.req.command,
            w,
            all: words(addr, end, w),
            devsel: bridge.params().devsel.clocks(),
            stream_ok: bridge.stream_keeps_up(w, self.period_ps),
            recovery: port.recovery,
        })
    }

    /// With clock `c` stepped, no trace, and the only queued work one master's read of
    /// host memory through the bridge that has moved no data in its current
    /// transaction: the last clock of the first attempt that moves data, found by
    /// stepping the retry loop ahead (see the module doc). That is the first clock that
    /// can have an output, and no later than any other bound the look-ahead finds in
    /// this state (each is at most the end of the first attempt that can move data).
    /// `None` in any other state, where that attempt does not move a word a clock,
    /// or past the look-ahead's horizon.
    /// `sole` is [`PciBus::sole_bridge_read`] in this state.
    pub(super) fn retry_loop_output(&self, c: u64, sole: Option<SoleRead<'_>>) -> Option<u64> {
        if self.masters.len() > LOOKAHEAD_MASTERS {
            return None;
        }
        let sole @ (m, port, head, ti) = sole?;
        let r = self.read_of(sole)?;
        let (command, addr, end, w) = (r.command, r.addr, r.end, r.w);
        let bridge = self.bridge.as_ref()?;
        if !r.full_speed(r.all > 1) {
            return None; // the older bounds wake the bus where the data moves
        }
        let (all, devsel) = (r.all, r.devsel);
        // GNT# parked on the only requesting master stays there: each Retry is then
        // followed by the next attempt at a fixed period (`periodic_retries`).
        let parked = self.params.park == ParkPolicy::LastMaster
            && bridge.params().read_mode == ReadMode::Delayed;
        let mut state = match self.active.as_deref() {
            None if self.phase.state() == BusPhase::Idle => Shadow::Idle { release: false },
            None => Shadow::Idle { release: true },
            Some(t) => {
                let same = t.master == m
                    && t.addr == addr
                    && t.command == command
                    && t.w == w
                    && t.target == Some(ti);
                // After its DEVSEL# clock without a slot the bridge had none free.
                let refused = t.slot.is_none() && c >= t.a_clk + devsel;
                if !same || t.done_words > 0 || refused {
                    return None;
                }
                if t.stop_prev {
                    Shadow::Hold
                } else {
                    Shadow::Attempt {
                        a: t.a_clk,
                        frame: t.frame,
                    }
                }
            }
        };
        let mut lines = [false; LOOKAHEAD_MASTERS];
        let lines = &mut lines[..self.masters.len()];
        let mut arb = self.arb.clone();
        let mut hold = port.hold_until;
        // The slot's first data and prefetch limit, once the shadow has decided it.
        let mut slot: Option<(Time, u64)> = None;
        let mut k = c + 1;
        while k <= c.saturating_add(HORIZON) {
            // REQ# of clock k - 1, as `req_lines` samples it: the owner of a transaction
            // requests for the request queued behind the one in progress.
            let prev = k - 1;
            let busy = matches!(state, Shadow::Attempt { .. } | Shadow::Hold);
            let q = port.queue.get(usize::from(busy));
            lines[m] = prev >= hold && q.is_some_and(|q| q.arrival <= prev);
            let gnt_prev = arb.gnt();
            match state {
                Shadow::Idle { release: true } => {
                    arb.step(lines, None, true);
                    state = Shadow::Idle { release: false };
                }
                Shadow::Idle { release: false } => {
                    if gnt_prev == Some(m) && lines[m] {
                        if parked {
                            return self.periodic_retries(&r, k, slot);
                        }
                        arb.step(lines, Some(m), false);
                        state = Shadow::Attempt { a: k, frame: true };
                    } else {
                        let before = arb.clone();
                        arb.step(lines, None, true);
                        if arb == before && !lines[m] {
                            // A fixed point: nothing changes before REQ# turns on.
                            k = hold.max(head.arrival).saturating_add(1);
                            continue;
                        }
                    }
                }
                Shadow::Attempt { a, frame } => {
                    let lt_cut = frame && all > 1 && k - a >= port.lt && gnt_prev != Some(m);
                    let frame = frame && all > 1 && !lt_cut;
                    arb.step(lines, None, false);
                    state = Shadow::Attempt { a, frame };
                    if k >= a + devsel {
                        let (first_data, limit) = match slot {
                            Some(s) => s,
                            None => {
                                let s = self.claim_at(&r, k)?;
                                slot = Some(s);
                                s
                            }
                        };
                        let n = words_within(addr, end, w, limit).min(all);
                        if first_data <= self.edge(k) {
                            // This attempt moves data: its last word ends it (GNT# stays
                            // with the only requesting master: no latency-timer cut).
                            return r.full_speed(frame).then_some(k + n - 1);
                        }
                        let retry = match bridge.params().read_mode {
                            ReadMode::Delayed => true,
                            ReadMode::WaitStates => k >= a + INITIAL_LATENCY_LIMIT,
                        };
                        if retry && frame {
                            state = Shadow::Hold;
                        } else if retry {
                            hold = retried(k, port.recovery);
                            state = Shadow::Idle { release: true };
                        }
                    }
                }
                Shadow::Hold => {
                    arb.step(lines, None, false);
                    hold = retried(k, port.recovery);
                    state = Shadow::Idle { release: true };
                }
            }
            k += 1;
        }
        None
    }

    /// The slot a read attempt of `r` whose DEVSEL# clock is `k` finds or latches, as
    /// (first data, prefetch limit); `None` when the bridge has no slot free or the
    /// slot holds none of the read's words (Retried for ever: the older bounds apply).
    fn claim_at(&self, r: &Read, k: u64) -> Option<(Time, u64)> {
        let slot = match self
            .bridge
            .as_ref()?
            .read_claim(r.addr, r.command, self.edge(k))
        {
            ReadClaim::Latched(s) => (s.first_data, s.limit),
            ReadClaim::New { first_data, limit } => (first_data, limit),
            ReadClaim::Full => return None,
        };
        (words_within(r.addr, r.end, r.w, slot.1) > 0).then_some(slot)
    }

    /// The retry loop of `r` from an attempt whose address phase is clock `s`, with
    /// GNT# parked on its master (the only one requesting, so it keeps GNT#: no latency
    /// timer cuts an attempt) and delayed reads: each attempt ends in Retry at DEVSEL#
    /// (the clock after, with FRAME# asserted), and the next starts the clock after the
    /// master's hold-off, a fixed period later; the first whose DEVSEL# edge finds the
    /// data moves it. `slot`: the read's slot, if an earlier attempt latched it (else
    /// this one does).
    /// Its caller has checked that the attempt that moves data does so at full speed.
    fn periodic_retries(&self, r: &Read, s: u64, slot: Option<(Time, u64)>) -> Option<u64> {
        let frame = r.all > 1;
        let (first_data, limit) = match slot {
            Some(slot) => slot,
            None => self.claim_at(r, s + r.devsel)?,
        };
        let n = words_within(r.addr, r.end, r.w, limit).min(r.all);
        let period = retried(s + r.devsel + u64::from(frame), r.recovery) + 1 - s;
        // The first clock whose edge is at or after the first data.
        let ready = self.clock_at(first_data);
        let mut d = s + r.devsel;
        if d < ready {
            d += (ready - d).div_ceil(period) * period;
        }
        Some(d + n - 1)
    }
}

/// A master's REQ# hold-off after a Retry whose last clock is `last` (PCI 2.2 §3.4.1:
/// off in the last clock and the idle one after; longer with a recovery time), as
/// `complete.rs` sets it.
pub(super) fn retried(last: u64, recovery: u64) -> u64 {
    let hold = last + 2;
    if recovery > 0 {
        hold.max(last + 1 + recovery)
    } else {
        hold
    }
}
