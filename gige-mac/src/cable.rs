//! The cable between two PHYs: a length and a propagation delay, nothing else (loss, bit
//! errors and a link going down are [`crate::fault`], applied by the transmitter). Owns [`Millimetres`] (lengths stay integers so times stay exact) and
//! [`propagation`].

use crate::params::CableParams;
use core::fmt;
use sim_kernel::Duration;

/// A length \[mm\]. Integer millimetres keep delay arithmetic exact in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millimetres(pub u64);

impl Millimetres {
    /// `m` metres, rounded to the nearest millimetre; `None` for a negative, non-finite or
    /// absurd (above 1 000 km) length.
    #[must_use]
    pub fn from_metres(m: f64) -> Option<Self> {
        if !m.is_finite() || !(0.0..=1e6).contains(&m) {
            return None;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let mm = (m * 1_000.0).round() as u64;
        Some(Self(mm))
    }
}

impl fmt::Display for Millimetres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} m", self.0 / 1_000, self.0 % 1_000)
    }
}

/// One-way propagation delay of the cable \[ps\]: length x delay per metre, rounded to the
/// nearest picosecond (exact for the default 5 ns/m: 5 ps per mm).
#[must_use]
pub fn propagation(cable: &CableParams) -> Duration {
    let ps = u128::from(cable.length.0) * u128::from(cable.delay_per_metre.as_ps());
    let rounded = (ps + 500) / 1_000;
    Duration::from_ps(u64::try_from(rounded).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_ns_per_metre() {
        let mut c = CableParams::default();
        assert_eq!(propagation(&c), Duration::from_ns(10)); // 2 m
        c.length = Millimetres(5_000);
        assert_eq!(propagation(&c), Duration::from_ns(25));
        c.length = Millimetres(100_000);
        assert_eq!(propagation(&c), Duration::from_ns(500));
        c.length = Millimetres(1);
        assert_eq!(propagation(&c), Duration::from_ps(5));
        c.length = Millimetres(u64::MAX);
        c.delay_per_metre = Duration::from_ps(u64::MAX);
        assert_eq!(propagation(&c), Duration::from_ps(u64::MAX));
    }

    #[test]
    fn metres_convert_or_refuse() {
        assert_eq!(Millimetres::from_metres(2.0), Some(Millimetres(2_000)));
        assert_eq!(Millimetres::from_metres(0.5), Some(Millimetres(500)));
        assert_eq!(Millimetres::from_metres(-1.0), None);
        assert_eq!(Millimetres::from_metres(f64::NAN), None);
        assert_eq!(Millimetres(2_500).to_string(), "2.500 m");
    }
}
