//! A full-duplex link between two ports: PHY, cable, PHY ([`Link`]), and what a
//! transmitting port needs to know about its far end ([`Attachment`]).
//!
//! ```text
//!  port A.tx --[PHY A tx]--cable--[PHY B rx]--> port B.rx     (Attachment of A: B, latency)
//!  port A.rx <--[PHY A rx]--cable--[PHY B tx]-- port B.tx     (Attachment of B: A, latency)
//! ```
//!
//! The two directions are independent (full duplex: no collisions, no carrier sense, IEEE
//! 802.3 clause 4.1.2.2 half-duplex rules do not apply). Each byte's arrival at the far
//! GMII is its transmit time plus [`Link::latency`], rounded up to the receiver's next
//! clock edge (the receiving PHY's RX_CLK is taken to be the receiver's `gmii` domain).

use crate::cable::propagation;
use crate::msg::PortIndex;
use crate::params::LinkParams;
use crate::phy::Phy;
use sim_kernel::{ComponentId, Duration};

/// One link's timing: PHY transmit + cable + PHY receive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    params: LinkParams,
}

impl Link {
    /// A link with these PHYs and this cable.
    #[must_use]
    pub const fn new(params: LinkParams) -> Self {
        Self { params }
    }

    /// The link's parameters.
    #[must_use]
    pub const fn params(&self) -> &LinkParams {
        &self.params
    }

    /// One-way latency of a byte from the sender's GMII TXD to the receiver's GMII RXD
    /// \[ps\]: PHY tx + cable + PHY rx (594 ns by default: 200 + 10 + 384).
    #[must_use]
    pub fn latency(&self) -> Duration {
        let phy = Phy::new(self.params.phy);
        phy.tx_latency() + propagation(&self.params.cable) + phy.rx_latency()
    }

    /// What a port that transmits into this link must know: the component and port index
    /// at the far end, and the one-way latency.
    #[must_use]
    pub fn attachment(&self, peer: ComponentId, peer_port: PortIndex) -> Attachment {
        tracing::debug!(target: "mac::phy", %peer, port = peer_port.0, latency = %self.latency(), "link attached");
        Attachment {
            peer,
            peer_port,
            latency: self.latency(),
        }
    }
}

/// The far end of one direction of a link, as its transmitter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// The component that receives (a MAC port or the switch).
    pub peer: ComponentId,
    /// Which of its ports (0 for a single-port MAC; the switch port number otherwise).
    pub peer_port: PortIndex,
    /// GMII TXD to far GMII RXD latency \[ps\].
    pub latency: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cable::Millimetres;

    #[test]
    fn latency_adds_phy_cable_phy() {
        let mut p = LinkParams::default();
        assert_eq!(Link::new(p).latency(), Duration::from_ns(594));
        p.cable.length = Millimetres(5_000);
        let a = Link::new(p).attachment(ComponentId(3), PortIndex(1));
        assert_eq!(a.latency, Duration::from_ns(609));
        assert_eq!((a.peer, a.peer_port), (ComponentId(3), PortIndex(1)));
    }
}
