//! The DP83861 1000BASE-T PHY as a fixed pipeline latency in each direction.
//!
//! ```text
//!   MAC --GMII TXD--> [ PHY tx: tx_latency ] --MDI--> cable --MDI--> [ PHY rx: rx_latency ] --GMII RXD--> MAC
//! ```
//!
//! A PHY neither stores frames nor limits throughput (one byte per GMII clock each way),
//! so each byte leaves it a fixed time after it entered: the model is two durations
//! ([`PhyParams`]; see there for the sources, one of them an assumption). The PHY is not a
//! component: the transmitting port computes the arrival time through [`crate::link::Link`]
//! and the kernel delivers the frame's arrival to the receiving port at that time.

use crate::params::PhyParams;
use sim_kernel::{Duration, Time};

/// One PHY's two pipelines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phy {
    params: PhyParams,
}

impl Phy {
    /// A PHY with these latencies.
    #[must_use]
    pub const fn new(params: PhyParams) -> Self {
        Self { params }
    }

    /// GMII-to-MDI latency \[ps\].
    #[must_use]
    pub const fn tx_latency(&self) -> Duration {
        self.params.tx_latency
    }

    /// MDI-to-GMII latency \[ps\].
    #[must_use]
    pub const fn rx_latency(&self) -> Duration {
        self.params.rx_latency
    }

    /// When a byte presented on TXD at `at` is on the wire.
    #[must_use]
    pub fn tx_out(&self, at: Time) -> Time {
        at + self.params.tx_latency
    }

    /// When a symbol arriving at the MDI at `at` is on RXD.
    #[must_use]
    pub fn rx_out(&self, at: Time) -> Time {
        at + self.params.rx_latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_add_their_latency() {
        let phy = Phy::new(PhyParams::default());
        assert_eq!(phy.tx_out(Time(1_000)), Time(201_000));
        assert_eq!(phy.rx_out(Time(1_000)), Time(385_000));
        assert_eq!(phy.tx_latency() + phy.rx_latency(), Duration::from_ns(584));
    }
}
