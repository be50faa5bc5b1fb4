//! Plain parameter structs of the wire side: frame sizes and inter-frame gap, the PHY's
//! pipeline latencies, the cable, the switch and the test MAC's queue.
//!
//! Every field says its meaning, unit and source: an IEEE 802.3 clause, a datasheet, the
//! HVIA-GE paper, or "assumption" followed by why. `Default` is the published system:
//! gigabit Ethernet (GMII at 125 MHz), MTU 1514 bytes without FCS, two nodes back to back
//! over a short patch cable. The serde config schema (`testbenches::config`) maps onto these
//! structs; this crate does not parse configuration.
//!
//! | parameter | default | unit | source |
//! |---|---|---|---|
//! | [`WireParams::max_frame_len_no_fcs`] | 1514 | bytes | paper (MTU 1514); IEEE 802.3 clause 3.2.7 |
//! | [`WireParams::min_ifg_bytes`] | 12 | bytes (GMII clocks) | IEEE 802.3 clause 4.4.2 (96 bit times) |
//! | [`PhyParams::tx_latency`] | 200 | ns | assumption (see field) |
//! | [`PhyParams::rx_latency`] | 384 | ns | National DP83865 datasheet T18, same PHY family |
//! | [`CableParams::length`] | 2 000 | mm | assumption: short patch cable (configs/hvia-ge.toml) |
//! | [`CableParams::delay_per_metre`] | 5 | ns/m | Cat-5 NVP about 0.65 c; IEEE 802.3 clause 40.7.4.1 bound 5.7 |
//! | [`SwitchParams::forwarding_latency`] | 1 000 | ns | assumption (see field) |
//! | [`SwitchParams::queue_frames`] | 64 | frames per output port | assumption (see field) |
//! | [`SwitchParams::table_capacity`] | 8 192 | addresses | assumption (see field) |
//! | [`MacPortParams::queue_frames`] | 1 024 | frames | setting: test MAC, not hardware |
//!
//! The GEC's and the DP83820's parameters sit with their components:
//! [`crate::GecParams`] (what the FPGA programs: bursts, thresholds) and
//! [`crate::Dp83820Params`] (FIFO sizes, master settings), each with its own table.

use crate::cable::Millimetres;
use sim_kernel::Duration;
use via_abi::ethernet::{FCS_LEN, MAX_FRAME_LEN_NO_FCS, MIN_IFG};

/// GMII clock \[MHz\]: one byte per clock, 8 ns per byte (IEEE 802.3 clause 35). The
/// system assembly builds the `gmii` clock domain from it; every component of this crate
/// that serializes or receives bytes is clocked by that domain.
pub const GMII_CLOCK_MHZ: f64 = 125.0;

/// Frame-format numbers of one gigabit Ethernet segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireParams {
    /// Largest frame a port sends or accepts, header through payload and pad, without the
    /// FCS \[bytes\]. Default 1514: the paper's "MTU 1514"; IEEE 802.3 clause 3.2.7 (untagged
    /// frame at most 1518 bytes with FCS).
    pub max_frame_len_no_fcs: usize,
    /// Minimum inter-frame gap after the last FCS byte before the next preamble may start
    /// \[bytes of wire time = GMII clocks\]. Default 12: IEEE 802.3 clause 4.4.2,
    /// interFrameGap = 96 bit times.
    pub min_ifg_bytes: u32,
}

impl Default for WireParams {
    fn default() -> Self {
        Self {
            max_frame_len_no_fcs: MAX_FRAME_LEN_NO_FCS,
            min_ifg_bytes: MIN_IFG as u32,
        }
    }
}

impl WireParams {
    /// Largest frame including its FCS \[bytes\] (1518 by default).
    #[must_use]
    pub const fn max_frame_len(&self) -> usize {
        self.max_frame_len_no_fcs.saturating_add(FCS_LEN)
    }
}

/// The DP83861 1000BASE-T PHY as two fixed pipeline latencies.
///
/// A PHY is a pipeline: every byte it is given comes out a fixed time later, and the
/// pipeline does not limit throughput (one byte per GMII clock in both directions), so two
/// numbers model it completely for the purposes of this simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhyParams {
    /// Transmit latency: a byte sampled on TXD at the GMII to its symbol on the MDI
    /// (twisted pair) \[ps\]. Default 200 ns. Assumption: the DP83861 datasheet at hand gives
    /// no GMII-to-MDI figure, nor does the DP83865 (its successor in the same National
    /// "Gig PHYTER" family). The transmit path (PCS 8B1Q4 coding, scrambler, 4D-PAM5
    /// trellis encoder, transmit filter, DAC) has none of the adaptive DSP of the receive
    /// path, so it is taken as about half the 384 ns receive latency: 25 GMII clocks.
    pub tx_latency: Duration,
    /// Receive latency: a symbol at the MDI to its byte on RXD at the GMII \[ps\].
    /// Default 384 ns: National DP83865 datasheet, GMII receive timing, T18 "MDI to GMII
    /// latency" (the DP83861's own figure was not at hand; the DP83865 is the same family
    /// and 1000BASE-T DSP architecture: echo and NEXT cancellers, equaliser, Viterbi
    /// decoder, elastic buffer).
    pub rx_latency: Duration,
}

impl Default for PhyParams {
    fn default() -> Self {
        Self {
            tx_latency: Duration::from_ns(200),
            rx_latency: Duration::from_ns(384),
        }
    }
}

/// The Category-5 cable between two PHYs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CableParams {
    /// Cable length \[mm\]. Default 2 m. Assumption: a short back-to-back patch cable; the
    /// paper gives no length (same value as `wire.cable_m` in `configs/hvia-ge.toml`).
    /// IEEE 802.3 clause 40 allows at most 100 m per 1000BASE-T segment.
    pub length: Millimetres,
    /// Propagation delay per metre of cable \[ps per m\]. Default 5 ns/m: Cat-5 twisted
    /// pair has a nominal velocity of propagation of about 0.65 c (5.1 ns/m); IEEE 802.3
    /// clause 40.7.4.1 bounds a 100 m link segment at 570 ns, i.e. at most 5.7 ns/m.
    pub delay_per_metre: Duration,
}

impl Default for CableParams {
    fn default() -> Self {
        Self {
            length: Millimetres(2_000),
            delay_per_metre: Duration::from_ns(5),
        }
    }
}

/// One full-duplex link: PHY, cable, PHY. Both directions are independent and have the
/// same latency; both ends use the same PHY model (in the published system both are
/// DP83861s; a switch port's PHY is assumed to behave the same).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkParams {
    /// The PHY at each end.
    pub phy: PhyParams,
    /// The cable between them.
    pub cable: CableParams,
}

/// A store-and-forward Ethernet switch (only needed for more than two nodes; the
/// published system has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchParams {
    /// From the last byte of a frame received on an input port (FCS checked) to the frame
    /// joining its output queue(s) \[ps\]. Default 1 us. Assumption: the published system
    /// has no switch; store-and-forward gigabit switch ASICs of the early 2000s add a
    /// lookup and fabric delay of the order of a microsecond on top of receiving the whole
    /// frame. At least one switch clock is always taken (registered interfaces).
    pub forwarding_latency: Duration,
    /// Frames each output port can hold waiting for the wire, not counting the one being
    /// sent \[frames\]. A frame that finds its output queue full is dropped and counted.
    /// Default 64. Assumption: 64 maximum-size frames are about 97 KB per port, the order
    /// of the packet buffer of small unmanaged gigabit switches of that time.
    pub queue_frames: usize,
    /// Entries of the address-learning table \[MAC addresses\]. When it is full, new
    /// source addresses are not learned (counted) and frames to them are flooded.
    /// Default 8 192. Assumption: the "8K MAC addresses" of typical small switches.
    pub table_capacity: usize,
}

impl Default for SwitchParams {
    fn default() -> Self {
        Self {
            forwarding_latency: Duration::from_ns(1_000),
            queue_frames: 64,
            table_capacity: 8_192,
        }
    }
}

/// The test MAC endpoint ([`crate::port::MacPort`]) that stands in for the DP83820 until
/// the PCI model exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacPortParams {
    /// Frames the port holds waiting for the wire, not counting the one being sent
    /// \[frames\]; more are refused and counted. Default 1 024. Setting: a test MAC, not
    /// hardware (the DP83820's own 8 KB transmit FIFO will bound it instead).
    pub queue_frames: usize,
}

impl Default for MacPortParams {
    fn default() -> Self {
        Self {
            queue_frames: 1_024,
        }
    }
}

/// Everything the wire side of one simulated network needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GigeParams {
    /// Frame sizes and inter-frame gap.
    pub wire: WireParams,
    /// Every link (all links of a network are alike).
    pub link: LinkParams,
    /// The switch, when there are more than two nodes.
    pub switch: SwitchParams,
    /// The test MAC endpoints.
    pub port: MacPortParams,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_published_system() {
        let p = GigeParams::default();
        assert_eq!(p.wire.max_frame_len_no_fcs, 1514);
        assert_eq!(p.wire.max_frame_len(), 1518);
        assert_eq!(p.wire.min_ifg_bytes, 12);
        assert_eq!(p.link.phy.tx_latency, Duration::from_ns(200));
        assert_eq!(p.link.phy.rx_latency, Duration::from_ns(384));
        assert_eq!(p.link.cable.length, Millimetres(2_000));
        assert_eq!(p.link.cable.delay_per_metre, Duration::from_ns(5));
        assert!((GMII_CLOCK_MHZ - 125.0).abs() < f64::EPSILON);
    }
}
