//! Units of simulated time: [`Time`] (an instant), [`Duration`] (a span), both in
//! picoseconds, and [`Cycles`] (a count of clock edges of some domain).
//!
//! `Time` and `Cycles` never convert into each other directly: only a
//! [`ClockDomain`](crate::ClockDomain) knows how long its cycle is. 2^64 ps is about
//! 213 days of simulated time, far beyond any run here.

use core::fmt;
use core::ops::{Add, AddAssign, Mul, Sub};

/// Picoseconds in one nanosecond.
pub const PS_PER_NS: u64 = 1_000;
/// Picoseconds in one microsecond.
pub const PS_PER_US: u64 = 1_000_000;

/// An instant of simulated time [ps since the start of the run].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of simulated time \[ps\].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

/// A number of clock cycles of one (unnamed here) clock domain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cycles(pub u64);

/// A number of bytes (of data, a buffer, a transfer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// The latest representable instant.
    pub const MAX: Time = Time(u64::MAX);

    /// Picoseconds since the start of the run.
    #[must_use]
    pub const fn as_ps(self) -> u64 {
        self.0
    }

    /// Nanoseconds since the start of the run (for reports only).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }

    /// `self - earlier`, or zero if `earlier` is later.
    #[must_use]
    pub const fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self - earlier`, or `None` if `earlier` is later.
    #[must_use]
    pub const fn checked_since(self, earlier: Time) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(d) => Some(Duration(d)),
            None => None,
        }
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// A duration of `ps` picoseconds.
    #[must_use]
    pub const fn from_ps(ps: u64) -> Self {
        Duration(ps)
    }

    /// A duration of `ns` nanoseconds.
    #[must_use]
    pub const fn from_ns(ns: u64) -> Self {
        Duration(ns * PS_PER_NS)
    }

    /// Picoseconds in this duration.
    #[must_use]
    pub const fn as_ps(self) -> u64 {
        self.0
    }

    /// Nanoseconds in this duration (for reports only).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, rhs: Duration) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    /// The span from `rhs` to `self`. `rhs` later than `self` is a bug (debug builds
    /// assert); release builds give zero. Where a later `rhs` is expected, say so with
    /// [`Time::saturating_since`] or [`Time::checked_since`].
    fn sub(self, rhs: Time) -> Duration {
        debug_assert!(
            rhs <= self,
            "time went backwards: {} - {} (use saturating_since where that is expected)",
            self.0,
            rhs.0
        );
        self.saturating_since(rhs)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
}

impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, rhs: u64) -> Duration {
        Duration(self.0.saturating_mul(rhs))
    }
}

impl Add for Cycles {
    type Output = Cycles;
    fn add(self, rhs: Cycles) -> Cycles {
        Cycles(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Cycles {
    fn add_assign(&mut self, rhs: Cycles) {
        *self = *self + rhs;
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} ns", self.0 / PS_PER_NS, self.0 % PS_PER_NS)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} ns", self.0 / PS_PER_NS, self.0 % PS_PER_NS)
    }
}

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cycles", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_display() {
        let t = Time(1_500) + Duration::from_ns(2);
        assert_eq!(t, Time(3_500));
        assert_eq!(t - Time(500), Duration(3_000));
        assert_eq!(Time(5).saturating_since(Time(9)), Duration::ZERO);
        assert_eq!(Time(5).checked_since(Time(9)), None);
        assert_eq!(Time(9).checked_since(Time(5)), Some(Duration(4)));
        assert_eq!(format!("{t}"), "3.500 ns");
        assert_eq!(Duration::from_ns(3) * 4, Duration(12_000));
        assert_eq!(Time::MAX + Duration(1), Time::MAX);
    }

    /// Subtracting a later time is a bug, caught in debug builds.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "time went backwards")]
    fn a_later_time_subtracted_is_caught() {
        let _ = Time(5) - Time(9);
    }
}
