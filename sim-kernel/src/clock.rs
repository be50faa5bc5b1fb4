//! Clock domains: a period and a phase in whole picoseconds, and the edge arithmetic
//! every clocked component uses to stay on its own edges.
//!
//! Edges of a domain are at `phase + k * period` for `k >= 0`. A domain given in MHz is
//! converted once to the nearest whole picosecond ([`ClockDomain::from_mhz`]); from then
//! on all arithmetic is exact integer arithmetic, so edges of different domains compare
//! exactly (a 33 MHz edge and a 125 MHz edge coincide only where the integers say so).

use crate::time::{Cycles, Duration, Time};
use core::fmt;
use std::sync::Arc;

/// Why a clock domain could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum ClockError {
    /// The frequency was zero, negative, not finite, or so high the period rounds to 0 ps.
    BadFrequency(f64),
    /// The period was zero.
    ZeroPeriod,
    /// The phase was not smaller than the period.
    PhaseNotBelowPeriod {
        /// Phase \[ps\].
        phase_ps: u64,
        /// Period \[ps\].
        period_ps: u64,
    },
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockError::BadFrequency(mhz) => write!(
                f,
                "clock frequency {mhz} MHz is not usable (must be finite, > 0 and <= 1e6 MHz)"
            ),
            ClockError::ZeroPeriod => write!(f, "clock period must be at least 1 ps"),
            ClockError::PhaseNotBelowPeriod {
                phase_ps,
                period_ps,
            } => write!(
                f,
                "clock phase {phase_ps} ps must be smaller than the period {period_ps} ps"
            ),
        }
    }
}

impl std::error::Error for ClockError {}

/// A clock domain: a name, a period and a phase (offset of edge 0), in picoseconds.
/// The name is shared, so a clone (components take their domain's as they go) does not
/// allocate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClockDomain {
    name: Arc<str>,
    period: Duration,
    phase: Duration,
}

impl ClockDomain {
    /// A domain with the given period and phase.
    ///
    /// # Errors
    /// A zero period, or a phase not below the period.
    pub fn new(
        name: impl Into<String>,
        period: Duration,
        phase: Duration,
    ) -> Result<Self, ClockError> {
        if period.0 == 0 {
            return Err(ClockError::ZeroPeriod);
        }
        if phase.0 >= period.0 {
            return Err(ClockError::PhaseNotBelowPeriod {
                phase_ps: phase.0,
                period_ps: period.0,
            });
        }
        Ok(Self {
            name: Arc::from(name.into()),
            period,
            phase,
        })
    }

    /// A domain of `mhz` megahertz, phase 0; the period is `1e6 / mhz` ps rounded to the
    /// nearest whole picosecond, once (33 MHz -> 30 303 ps, 66 MHz -> 15 152 ps,
    /// 125 MHz -> 8 000 ps, 800 MHz -> 1 250 ps, 100 MHz -> 10 000 ps).
    ///
    /// # Errors
    /// A frequency that is not finite and positive, or above 1 THz.
    pub fn from_mhz(name: impl Into<String>, mhz: f64) -> Result<Self, ClockError> {
        let period = period_ps_from_mhz(mhz)?;
        Self::new(name, Duration(period), Duration::ZERO)
    }

    /// The domain's name (e.g. `pci.system`).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The clock period \[ps\].
    #[must_use]
    pub const fn period(&self) -> Duration {
        self.period
    }

    /// The offset of edge 0 from time 0 \[ps\].
    #[must_use]
    pub const fn phase(&self) -> Duration {
        self.phase
    }

    /// The frequency this period stands for \[MHz\] (for reports only).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn mhz(&self) -> f64 {
        1e6 / self.period.0 as f64
    }

    /// The first edge at or after `t`.
    #[must_use]
    pub fn edge_at_or_after(&self, t: Time) -> Time {
        first_edge_at_or_after(self.period, self.phase, t)
    }

    /// The edge `n` cycles after the first edge at or after `t`: `edge_after(t, 0)` is
    /// `edge_at_or_after(t)`, and when `t` is itself an edge, `edge_after(t, 1)` is the
    /// next one. A registered input sent at `t` is seen at `edge_after(t, 1)`.
    #[must_use]
    pub fn edge_after(&self, t: Time, n: Cycles) -> Time {
        self.edge_at_or_after(t) + self.period * n.0
    }

    /// Where a message sent at `now` to a component of this domain, to arrive no sooner
    /// than `earliest`, lands: its first edge at or after `earliest`, but at least one
    /// cycle after its first edge at or after `now` (the kernel's rule for
    /// [`crate::Ctx::send_at`]; `earliest` = 0 is [`crate::Ctx::send`]).
    #[must_use]
    pub fn landing(&self, now: Time, earliest: Time) -> Time {
        self.landing_after(now, Cycles(1), earliest)
    }

    /// [`ClockDomain::landing`] at least `min_cycles` (at least one) cycles after the
    /// first edge at or after `now` (the kernel's rule for [`crate::Ctx::send_after`]
    /// with `earliest` = 0).
    #[must_use]
    pub fn landing_after(&self, now: Time, min_cycles: Cycles, earliest: Time) -> Time {
        let floor = self.edge_after(now, Cycles(min_cycles.0.max(1)));
        if earliest <= floor {
            floor
        } else {
            self.edge_at_or_after(earliest)
        }
    }

    /// Whether `t` is an edge of this domain.
    #[must_use]
    pub fn is_edge(&self, t: Time) -> bool {
        t.0 >= self.phase.0 && (t.0 - self.phase.0) % self.period.0 == 0
    }

    /// How many edges of this domain lie in the half-open interval `[start, end)`: the
    /// number of cycles a stage spanning that interval occupies in this domain.
    #[must_use]
    pub fn edges_in(&self, start: Time, end: Time) -> Cycles {
        if end <= start {
            return Cycles(0);
        }
        let first = self.edge_at_or_after(start);
        if first >= end {
            return Cycles(0);
        }
        Cycles((end.0 - 1 - first.0) / self.period.0 + 1)
    }

    /// The duration of `n` whole cycles.
    #[must_use]
    pub fn cycles(&self, n: Cycles) -> Duration {
        self.period * n.0
    }
}

/// The first edge at or after `t` of the edges `phase + k * period` (`period` > 0): the
/// arithmetic of [`ClockDomain::edge_at_or_after`], for the kernel's copy of each
/// domain's period and phase.
#[inline]
#[must_use]
pub(crate) fn first_edge_at_or_after(period: Duration, phase: Duration, t: Time) -> Time {
    if t.0 <= phase.0 {
        return Time(phase.0);
    }
    let since = t.0 - phase.0;
    let k = since.div_ceil(period.0);
    Time(phase.0.saturating_add(k.saturating_mul(period.0)))
}

/// Converts a frequency \[MHz\] to the nearest whole period \[ps\].
///
/// # Errors
/// A frequency that is not finite and positive, or so high the period rounds to 0.
pub fn period_ps_from_mhz(mhz: f64) -> Result<u64, ClockError> {
    if !mhz.is_finite() || mhz <= 0.0 || mhz > 1e6 {
        return Err(ClockError::BadFrequency(mhz));
    }
    let ps = (1e6 / mhz).round();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ps = ps as u64;
    if ps == 0 {
        return Err(ClockError::BadFrequency(mhz));
    }
    Ok(ps)
}

impl fmt::Display for ClockDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} ps period, {} ps phase)",
            self.name, self.period.0, self.phase.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_of_the_domains_we_use() {
        let cases = [
            (33.0, 30_303),
            (33.333_333_3, 30_000),
            (66.0, 15_152),
            (66.666_666_6, 15_000),
            (125.0, 8_000),
            (800.0, 1_250),
            (100.0, 10_000),
        ];
        for (mhz, ps) in cases {
            let d = ClockDomain::from_mhz("d", mhz).unwrap();
            assert_eq!(d.period(), Duration(ps), "{mhz} MHz");
        }
    }

    #[test]
    fn bad_frequencies_are_errors() {
        for mhz in [0.0, -3.0, f64::NAN, f64::INFINITY, 1e7] {
            assert!(ClockDomain::from_mhz("d", mhz).is_err(), "{mhz}");
        }
        assert_eq!(
            ClockDomain::new("d", Duration(10), Duration(10)),
            Err(ClockError::PhaseNotBelowPeriod {
                phase_ps: 10,
                period_ps: 10
            })
        );
        assert_eq!(
            ClockDomain::new("d", Duration(0), Duration(0)),
            Err(ClockError::ZeroPeriod)
        );
    }

    #[test]
    fn edge_arithmetic_is_exact() {
        let pci = ClockDomain::from_mhz("pci", 33.0).unwrap(); // 30 303 ps
        assert_eq!(pci.edge_at_or_after(Time(0)), Time(0));
        assert_eq!(pci.edge_at_or_after(Time(1)), Time(30_303));
        assert_eq!(pci.edge_at_or_after(Time(30_303)), Time(30_303));
        assert_eq!(pci.edge_after(Time(30_303), Cycles(1)), Time(60_606));
        assert_eq!(pci.edge_after(Time(30_304), Cycles(1)), Time(90_909));
        assert!(pci.is_edge(Time(30_303 * 7)));
        assert!(!pci.is_edge(Time(30_303 * 7 + 1)));
    }

    #[test]
    fn phase_shifts_every_edge() {
        let d = ClockDomain::new("core", Duration(10_000), Duration(2_500)).unwrap();
        assert_eq!(d.edge_at_or_after(Time(0)), Time(2_500));
        assert_eq!(d.edge_at_or_after(Time(2_501)), Time(12_500));
        assert_eq!(d.edge_after(Time(12_500), Cycles(3)), Time(42_500));
        assert!(!d.is_edge(Time(0)));
    }

    #[test]
    fn cross_domain_edges_meet_where_integers_say() {
        // 125 MHz (8 ns) and 100 MHz (10 ns) share an edge every 40 ns.
        let gmii = ClockDomain::from_mhz("gmii", 125.0).unwrap();
        let core = ClockDomain::from_mhz("core", 100.0).unwrap();
        let mut common = Vec::new();
        let mut t = Time(1);
        while common.len() < 4 && t < Time(1_000_000) {
            let a = gmii.edge_at_or_after(t);
            let b = core.edge_at_or_after(t);
            if a == b {
                common.push(a);
                t = a + Duration(1);
            } else {
                t = a.max(b);
            }
        }
        assert_eq!(
            common,
            vec![Time(40_000), Time(80_000), Time(120_000), Time(160_000)]
        );
        // 800 MHz CPU edges fall on every 33.33 MHz (30 000 ps) PCI edge: 30 000 / 1 250 = 24.
        let cpu = ClockDomain::from_mhz("cpu", 800.0).unwrap();
        let pci = ClockDomain::from_mhz("pci", 33.333_333_3).unwrap();
        for k in 0..50 {
            assert!(cpu.is_edge(pci.edge_after(Time(0), Cycles(k))));
        }
        // 66 MHz (15 152 ps) and 33 MHz (30 303 ps) are not exactly 2:1 after rounding.
        let p66 = ClockDomain::from_mhz("p66", 66.0).unwrap();
        let p33 = ClockDomain::from_mhz("p33", 33.0).unwrap();
        assert_eq!(p66.edge_after(Time(0), Cycles(2)), Time(30_304));
        assert_ne!(
            p66.edge_after(Time(0), Cycles(2)),
            p33.edge_after(Time(0), Cycles(1))
        );
    }

    #[test]
    fn edges_in_counts_cycles_of_a_span() {
        let d = ClockDomain::from_mhz("d", 100.0).unwrap(); // 10 ns
        assert_eq!(d.edges_in(Time(0), Time(30_000)), Cycles(3));
        assert_eq!(d.edges_in(Time(0), Time(30_001)), Cycles(4));
        assert_eq!(d.edges_in(Time(1), Time(30_000)), Cycles(2));
        assert_eq!(d.edges_in(Time(5), Time(5)), Cycles(0));
        assert_eq!(d.edges_in(Time(9), Time(5)), Cycles(0));
    }
}
