//! The central arbiter: REQ#/GNT# per master, bus parking, round-robin fairness.
//!
//! Evaluated once per PCI clock (hidden arbitration: it runs while another master owns
//! the bus). Rules (PCI 2.2 §3.4.1, §3.4.3):
//!
//! - GNT# for clock `c` is computed from the REQ# lines of clock `c-1` (sampled at edge
//!   `c`); a master starts a transaction in clock `c` if it had REQ# and GNT# in `c-1` and
//!   the bus was idle in `c-1`.
//! - **Fairness: rotating round robin.** A granted master keeps GNT# until it has started
//!   a transaction (or stops requesting); then, if any other master requests, GNT# goes
//!   to the next requesting master after the one that last started, in index order. A
//!   master that keeps requesting therefore gets one transaction per rotation, and its
//!   latency timer bounds how long that transaction holds the bus.
//! - One GNT# may be removed and another asserted in the same clock only while the bus
//!   is busy; on an idle bus one clock without any GNT# separates them (§3.4.1).
//! - Parking: with nobody requesting, GNT# stays where it is ([`ParkPolicy::LastMaster`])
//!   or is removed once the bus is idle ([`ParkPolicy::None`]). After reset no GNT# is
//!   asserted.

use crate::params::ParkPolicy;

/// The arbiter state: who holds GNT# and whether it has used it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Arbiter {
    gnt: Option<usize>,
    used: bool,
    last: Option<usize>,
    park: ParkPolicy,
}

impl Arbiter {
    /// An arbiter after reset (no GNT#).
    pub(crate) fn new(park: ParkPolicy) -> Self {
        Self {
            gnt: None,
            used: false,
            last: None,
            park,
        }
    }

    /// The master whose GNT# is asserted in the current clock.
    pub(crate) fn gnt(&self) -> Option<usize> {
        self.gnt
    }

    /// The master GNT# is parked on, when the policy keeps it there (`LastMaster`): a
    /// clock in which no other master's REQ# line is on leaves GNT# where it is then,
    /// whether its own line is on or not, and whether the bus is idle or not.
    pub(crate) fn parked_on(&self) -> Option<usize> {
        self.gnt.filter(|_| self.park == ParkPolicy::LastMaster)
    }

    /// Whether a clock with no REQ# on an idle bus leaves GNT# unchanged.
    pub(crate) fn stable_when_idle(&self) -> bool {
        self.gnt.is_none() || self.park == ParkPolicy::LastMaster
    }

    /// Computes GNT# for clock `c` from `reqs` (REQ# of clock `c-1`); `started` is the
    /// master that began an address phase in `c`, `bus_idle` whether the bus is idle in `c`.
    #[inline]
    pub(crate) fn step(&mut self, reqs: &[bool], started: Option<usize>, bus_idle: bool) {
        if let Some(s) = started {
            self.used = true;
            self.last = Some(s);
        }
        match self.gnt {
            None => {
                if let Some(next) = self.next_after(reqs, None) {
                    self.gnt = Some(next);
                    self.used = false;
                }
            }
            Some(g) => {
                let mine = reqs.get(g).copied().unwrap_or(false);
                let others = reqs.iter().enumerate().any(|(i, &r)| r && i != g);
                if others {
                    if mine && !self.used {
                        // g has not had its transaction yet: it keeps its turn.
                    } else if bus_idle {
                        // §3.4.1: an idle clock with no GNT# between two grants.
                        self.gnt = None;
                    } else {
                        self.gnt = self.next_after(reqs, Some(g));
                        self.used = false;
                    }
                } else if !mine && bus_idle && self.park == ParkPolicy::None {
                    self.gnt = None;
                }
            }
        }
    }

    /// [`Arbiter::step`] when no REQ# line but master `m`'s can be on (`on`: whether
    /// it is): the same decisions without a slice of lines to scan.
    #[inline]
    pub(crate) fn step_one(&mut self, m: usize, on: bool, started: Option<usize>, bus_idle: bool) {
        if let Some(s) = started {
            self.used = true;
            self.last = Some(s);
        }
        match self.gnt {
            // The round-robin order has only `m` to choose.
            None => {
                if on {
                    self.gnt = Some(m);
                    self.used = false;
                }
            }
            // Another master's line is on only if `m` is not the one granted: then the
            // granted one's line is off, so it has no turn to keep.
            Some(g) if on && g != m => {
                if bus_idle {
                    self.gnt = None;
                } else {
                    self.gnt = Some(m);
                    self.used = false;
                }
            }
            Some(g) => {
                let mine = on && g == m;
                if !mine && bus_idle && self.park == ParkPolicy::None {
                    self.gnt = None;
                }
            }
        }
    }

    /// [`Arbiter::step`] in the clock master `m` starts a transaction with GNT#, when
    /// no other master's REQ# line is on: only the record of who started changes.
    pub(crate) fn record_start(&mut self, m: usize) {
        self.used = true;
        self.last = Some(m);
    }

    /// [`Arbiter::step`] with every REQ# line off and no master starting: only a
    /// grant that is not parked goes, on an idle bus.
    pub(crate) fn step_no_requests(&mut self, bus_idle: bool) {
        if self.gnt.is_some() && bus_idle && self.park == ParkPolicy::None {
            self.gnt = None;
        }
    }

    /// The first requesting master after the one that last started, skipping `skip`.
    fn next_after(&self, reqs: &[bool], skip: Option<usize>) -> Option<usize> {
        let n = reqs.len();
        if n == 0 {
            return None;
        }
        let from = self.last.map_or(0, |l| l + 1);
        (0..n)
            .map(|i| (from + i) % n)
            .find(|&i| reqs[i] && Some(i) != skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `step_one` decides as `step` does with only one line that can be on, in every
    /// arbiter state, for up to four masters.
    #[test]
    fn step_one_is_step_with_one_line() {
        let opt = |n: usize| (0..=n).map(move |i| (i < n).then_some(i));
        for n in 1..=4 {
            for park in [ParkPolicy::LastMaster, ParkPolicy::None] {
                for gnt in opt(n) {
                    for last in opt(n) {
                        for used in [false, true] {
                            for m in 0..n {
                                for on in [false, true] {
                                    for started in opt(n) {
                                        for bus_idle in [false, true] {
                                            let a = Arbiter {
                                                gnt,
                                                used,
                                                last,
                                                park,
                                            };
                                            let mut reqs = vec![false; n];
                                            reqs[m] = on;
                                            let (mut x, mut y) = (a.clone(), a);
                                            x.step(&reqs, started, bus_idle);
                                            y.step_one(m, on, started, bus_idle);
                                            assert_eq!(x, y, "{n} {m} {on} {started:?} {bus_idle}");
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn round_robin_and_idle_gap() {
        let mut a = Arbiter::new(ParkPolicy::LastMaster);
        // clk 0: masters 0 and 1 request; clk 1: GNT# to 0 (first in order).
        a.step(&[true, true], None, true);
        assert_eq!(a.gnt(), Some(0));
        // clk 2: 0 starts (bus busy); 1 still requests -> GNT# moves to 1 at once.
        a.step(&[true, true], Some(0), false);
        assert_eq!(a.gnt(), Some(1));
        // 1 keeps GNT# until it has started, even if 0 requests again.
        a.step(&[true, true], None, false);
        assert_eq!(a.gnt(), Some(1));
        a.step(&[true, true], Some(1), false);
        assert_eq!(a.gnt(), Some(0));
        // Nobody requests: parked on 0.
        a.step(&[false, false], None, true);
        assert_eq!(a.gnt(), Some(0));
        // Bus idle, parked on 0, 1 requests: one clock without GNT#, then 1.
        a.step(&[false, true], None, true);
        assert_eq!(a.gnt(), None);
        a.step(&[false, true], None, true);
        assert_eq!(a.gnt(), Some(1));
    }

    #[test]
    fn no_requests_step_equals_step_with_lines_off() {
        for park in [ParkPolicy::LastMaster, ParkPolicy::None] {
            for gnt in [None, Some(0), Some(2)] {
                for idle in [false, true] {
                    let mut a = Arbiter::new(park);
                    a.gnt = gnt;
                    a.last = Some(1);
                    let mut b = a.clone();
                    a.step(&[false; 3], None, idle);
                    b.step_no_requests(idle);
                    assert_eq!(a, b, "{park:?} {gnt:?} idle={idle}");
                }
            }
        }
    }

    #[test]
    fn no_parking_drops_grant_when_idle() {
        let mut a = Arbiter::new(ParkPolicy::None);
        a.step(&[true], None, true);
        assert_eq!(a.gnt(), Some(0));
        a.step(&[false], Some(0), false);
        assert_eq!(a.gnt(), Some(0), "kept while its transaction runs");
        a.step(&[false], None, true);
        assert_eq!(a.gnt(), None);
        assert!(a.stable_when_idle());
    }
}
