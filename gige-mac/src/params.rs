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
//! | [`SwitchParams::buffer_bytes`] | 16 384 | bytes per output port | BCM5396: 256 KB for 16 ports (see field) |
//! | [`SwitchParams::mode`] | store-and-forward | - | what commodity switches of 2004 did (see [`ForwardingMode`]) |
//! | [`SwitchFlowControl::enabled`] | true | - | IEEE 802.3x on full-duplex ports, as the chips of the time (see field) |
//! | [`SwitchFlowControl::high_water`] | 8 192 | bytes (an input's, or its output buffer) | assumption: half a port buffer, above the 4 932-byte worst case (see field) |
//! | [`SwitchFlowControl::low_water`] | 4 096 | bytes (an input's, and its buffers) | assumption (see field) |
//! | [`SwitchFlowControl::pause_quanta`] | 0xFFFF | quanta of 512 bit times | assumption: longest pause, ended by PAUSE 0 (see field) |
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

/// An Ethernet switch (only needed for more than two nodes; the published system has
/// none): a commodity unmanaged gigabit switch of about 2004.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchParams {
    /// From the last byte of a frame received on an input port (FCS checked) to the frame
    /// joining its output queue(s) \[ps\]; in cut-through mode, from the last byte of the
    /// destination address to the forwarding decision. Default 1 us. Assumption: the
    /// published system has no switch; store-and-forward gigabit switch ASICs of the early
    /// 2000s add a lookup and fabric delay of the order of a microsecond on top of
    /// receiving the whole frame (GarrettCom's store-and-forward switches of the time
    /// quote "5 us plus the packet time" at 100 Mb/s). The same lookup pipeline runs in
    /// both modes; only its start differs. At least one switch clock is always taken
    /// (registered interfaces).
    pub forwarding_latency: Duration,
    /// Frames each output port can hold waiting for the wire, not counting the one being
    /// sent \[frames\]. A frame that finds its output queue full is dropped and counted.
    /// Default 64. Assumption: the descriptor (frame pointer) queue of an output port;
    /// with the default [`SwitchParams::buffer_bytes`] the byte bound is reached first.
    pub queue_frames: usize,
    /// Entries of the address-learning table \[MAC addresses\]. When it is full, new
    /// source addresses are not learned (counted) and frames to them are flooded.
    /// Default 8 192. Assumption: the "8K MAC addresses" of typical small switches.
    pub table_capacity: usize,
    /// Packet buffer of each output port, the frame being sent included \[bytes, frame
    /// bytes after the SFD with FCS\]. A frame that does not fit in its output port's
    /// buffer is dropped and counted (`buffer_drops`). Default 16 384: the Broadcom
    /// BCM5396 data sheet (16-port GbE desktop switch chip, IEEE 802.3x) gives an
    /// embedded 256 KB packet buffer, 16 KB a port; Realtek's single-chip switches of
    /// 2002 had 128 KB (RTL8305S, 5 ports) and 256 KB (RTL8308B, 8 ports) of embedded
    /// buffer. Those chips share the memory; the model splits it evenly and statically
    /// (assumption: a port cannot borrow another's share).
    pub buffer_bytes: u64,
    /// When a frame is forwarded: after its end (store and forward) or once its
    /// destination address is in (cut-through). Default store and forward.
    pub mode: ForwardingMode,
    /// IEEE 802.3x PAUSE on the switch's ports (see [`crate::switch`]).
    pub flow: SwitchFlowControl,
}

/// When a switch forwards a frame ([`SwitchParams::mode`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForwardingMode {
    /// The whole frame is received and its FCS checked before it is looked up and queued
    /// (IEEE 802.1D: frames with FCS errors are discarded). What the commodity gigabit
    /// switches of 2004 did (HP ProCurve reviewer's guide: store and forward "filters out
    /// bad packets" and is the only way to mix port speeds).
    #[default]
    StoreAndForward,
    /// Forwarding starts once the destination address (6 bytes) is in and the
    /// forwarding latency has passed, if the output port is idle; otherwise the frame
    /// is stored and forwarded. A frame whose FCS turns out bad has already gone out:
    /// it reaches the far end with its bad FCS (cut-through "permits bad frames to
    /// propagate", GarrettCom S14 guide) and is dropped there.
    CutThrough,
}

/// IEEE 802.3x flow control on the switch's ports (IEEE 802.3 Annex 31B): PAUSE frames
/// received from a node are obeyed; PAUSE frames are sent to a node whose frames fill
/// the output buffers (per-input accounting; see [`crate::switch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchFlowControl {
    /// Obey received PAUSE frames and send them. Default on. Source: the switch chips of
    /// the time implement the MAC Control PAUSE of 802.3x on full-duplex ports (BCM5396
    /// data sheet; Realtek RTL8305S: "802.3x flow control ... if no flow control
    /// algorithms are activated, packets are dropped"; Micrel KSZ8895; Cabletron
    /// ELS100-24TXG), and the nodes' DP83820s have theirs on (PCR.PSEN, as the Linux
    /// ns83820 driver programs it). Off: MAC Control frames are consumed, counted and not
    /// acted on; overflow is dropped.
    pub enabled: bool,
    /// When a frame is admitted to an output buffer and its input's frames waiting in
    /// output buffers, or that output buffer, hold more than this, a PAUSE with
    /// [`SwitchFlowControl::pause_quanta`] is sent out of its input port \[bytes\]
    /// (see [`crate::switch::flow`]: the output-queue trigger of the Cabletron
    /// ELS100-24TXG and Micrel KSZ8895, with per-input accounting on top). Default 8 192.
    /// Assumption: half of the default port
    /// buffer; the worst case of what still arrives after the decision (a maximum frame
    /// admitted on the mark, the switch's frame in progress to that node, the PAUSE, the
    /// links and the node's frame in progress: 4 932 bytes, as derived for the DP83820's
    /// own mark) fits in the other half when one input fills one output.
    pub high_water: u64,
    /// A paused input is let go with a PAUSE of `pause_time` 0 (resume) once its frames
    /// waiting in output buffers hold less than this and none of them is in an output
    /// buffer holding this much or more \[bytes\]. Default 4 096. Assumption: a quarter
    /// of the port buffer; the Broadcom BCM5722 programmer's guide describes the switch
    /// ending a pause with `pause_time` 0 once its buffers drain (or letting it expire).
    pub low_water: u64,
    /// `pause_time` of the PAUSE frames sent \[quanta of 512 bit times\]. Default 0xFFFF
    /// (33.6 ms at 1000 Mb/s). Assumption: the longest pause, ended explicitly at the
    /// low-water mark and re-sent every half of it until then, so the node never resumes
    /// on its own while its frames still fill the buffers.
    pub pause_quanta: u16,
}

impl Default for SwitchFlowControl {
    fn default() -> Self {
        Self {
            enabled: true,
            high_water: 8_192,
            low_water: 4_096,
            pause_quanta: 0xFFFF,
        }
    }
}

impl Default for SwitchParams {
    fn default() -> Self {
        Self {
            forwarding_latency: Duration::from_ns(1_000),
            queue_frames: 64,
            table_capacity: 8_192,
            buffer_bytes: 16_384,
            mode: ForwardingMode::StoreAndForward,
            flow: SwitchFlowControl::default(),
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
