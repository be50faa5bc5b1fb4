//! [`Dp83820Params`]: the DP83820's fixed properties and its PCI master settings.
//!
//! What the FPGA *programs* (burst size, thresholds, padding, FCS stripping) is not here:
//! it reaches the model through real register writes (TXCFG, RXCFG), whose values come
//! from [`crate::GecParams`].
//!
//! | parameter | default | unit | source |
//! |---|---|---|---|
//! | `tx_fifo_bytes` | 8 192 | bytes | DP83820 datasheet |
//! | `rx_fifo_bytes` | 32 768 | bytes | DP83820 datasheet |
//! | `register_read_latency` | 2 | local-bus clocks | assumption (see field) |
//! | `latency_timer` | 64 | local-bus clocks | assumption (configs/hvia-ge.toml `mac.dma`) |
//! | `max_outstanding` | 2 | bursts per engine | assumption (`mac.dma`) |
//! | `cache_line_bytes` | 32 | bytes | assumption (`mac.dma`) |
//! | `supports_64bit` | true | - | DP83820 datasheet (32/64-bit PCI) |
//! | `flow.enabled` | true | - | DP83820 PCR.PSEN; assumption: programmed on (see [`FlowControl`]) |
//! | `flow.high_water` | 24 576 | bytes | assumption: FIFO - 8 KB, worst case needs 4 932 (see field) |
//! | `flow.low_water` | 16 384 | bytes | assumption: half the FIFO (see field) |
//! | `flow.pause_quanta` | 0xFFFE | quanta of 512 bit times | DP83820 PCR.PAUSE_CNT as the Linux ns83820 driver programs it |

use pci_model::{DevselSpeed, TargetProfile};
use sim_kernel::Cycles;

/// Parameters of one DP83820 (bus side and MAC side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dp83820Params {
    /// Transmit FIFO \[bytes\]. Source: DP83820 datasheet (8 KB).
    pub tx_fifo_bytes: u64,
    /// Receive FIFO \[bytes\]. Source: DP83820 datasheet (32 KB).
    pub rx_fifo_bytes: u64,
    /// From seeing a register read to driving its data [local-bus clocks]. Assumption 2:
    /// not published; registers sit behind the chip's internal bus interface.
    pub register_read_latency: Cycles,
    /// Latency Timer as a PCI master [local-bus clocks] (PCI 2.2 §3.5.4). Assumption 64:
    /// set like the card's; the GEC's configuration of the DP83820 is not published.
    pub latency_timer: Cycles,
    /// Bus requests each DMA engine (transmit, receive) keeps queued at the bus, so REQ#
    /// stays asserted between bursts \[bursts\]. Assumption 2 (its FIFOs hold more than
    /// one burst).
    pub max_outstanding: usize,
    /// Cache Line Size register: only picks the read command (Memory Read / Read Line /
    /// Read Multiple), which the buffer RAM ignores \[bytes\]. Assumption 32.
    pub cache_line_bytes: u64,
    /// Memory Write and Invalidate for whole aligned cache lines (the PCI Command
    /// register's MWI enable; the buffer RAM times it like Memory Write). Assumption:
    /// off.
    pub write_invalidate: bool,
    /// Whether it does 64-bit transfers on a 64-bit bus. Source: DP83820 datasheet (a
    /// 32/64-bit PCI interface).
    pub supports_64bit: bool,
    /// Its timing as a target of register accesses. Assumption: medium DEVSEL#, no write
    /// wait states (not published).
    pub target: TargetProfile,
    /// IEEE 802.3x flow control (PAUSE frames) at the RX FIFO.
    pub flow: FlowControl,
    /// Local-bus clocks its bus interface needs after each of its transactions before
    /// it requests the bus again (see `pci_model::MasterConfig::recovery`). Default 0.
    pub recovery: Cycles,
}

/// IEEE 802.3x flow control of the MAC side (see [`crate::dp83820::flow`]).
///
/// The DP83820 has it in its Pause Control/Status Register (PCR, offset 0x44): PSEN
/// (pause enable), PS_MCAST / PS_DA (act on PAUSE to the reserved multicast address / the
/// station address), receive data-FIFO thresholds FFHI/FFLO and status-FIFO thresholds
/// STHI/STLO (2, 4 or 8 KB / packets) and PAUSE_CNT, the `pause_time` it sends. Source:
/// the register definitions of the public DP83820 drivers written from its datasheet
/// (Linux `ns83820.c`, NetBSD `if_sip.c`); the Linux driver programs PSEN, PS_MCAST,
/// PS_DA, FFHI 8 KB, FFLO 4 KB, STHI 8, STLO 4 and PAUSE_CNT 0xFFFE. How the chip
/// compares FIFO occupancy with FFHI/FFLO is not in the material at hand, so the two
/// marks below are bytes of occupancy derived from the worst case (assumption), not
/// register encodings. The status-FIFO (packet count) thresholds are not modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowControl {
    /// Send PAUSE at the high-water mark and obey received PAUSE frames. Default on.
    /// Assumption: the DP83820 supports it (PCR.PSEN) and drivers of the time turned it
    /// on; the GEC's programming is not published. Off: received MAC Control frames are
    /// still consumed (never reach the host), counted, and not acted on.
    pub enabled: bool,
    /// RX FIFO occupancy above which a PAUSE with `pause_quanta` is sent \[bytes\].
    /// Default 24 576 (FIFO minus 8 KB). Assumption, from the worst case: the mark is
    /// checked when a good frame is admitted at its end, so up to one more maximum frame
    /// (1 518) can be admitted just below the mark, and after the decision still arrive:
    /// the frame in progress on its own transmitter ahead of the PAUSE (8 + 1 518 + 12 IFG
    /// byte times), the PAUSE (8 + 64), the link (594 ns, 75 clocks), the peer's
    /// reaction time allowed at 1000 Mb/s (2 quanta, 128 byte times, IEEE 802.3 Annex
    /// 31B.3.7), the peer's frame in progress (8 + 1 518) and the link back (75): 3 414
    /// byte times, 4 932 bytes with the extra frame, within the 8 KB left (the Linux
    /// driver's FFHI setting, 8 KB, read as room left).
    pub high_water: u64,
    /// RX FIFO occupancy below which, after a PAUSE, a PAUSE with `pause_time` 0 (resume)
    /// is sent \[bytes\]. Default 16 384 (half the FIFO). Assumption: any mark above the
    /// resume round trip (frame in progress 1 538 + PAUSE 72 + link 75 + preamble 8 +
    /// link 75 = 1 768 byte times, so at most 1 768 bytes drained meanwhile) keeps the
    /// receive DMA busy; 8 KB of hysteresis costs one PAUSE pair per 8 KB drained.
    pub low_water: u64,
    /// `pause_time` of the PAUSE frames sent \[quanta of 512 bit times\]. Default 0xFFFE
    /// (33.6 ms at 1 Gb/s): DP83820 PCR.PAUSE_CNT as the Linux ns83820 driver programs it.
    /// While the FIFO stays above the low-water mark the PAUSE is re-sent when half of
    /// this time has passed since the last one left (if the receiver made progress
    /// meanwhile: see [`crate::dp83820::flow`]), so the peer does not resume early.
    pub pause_quanta: u16,
}

impl Default for FlowControl {
    fn default() -> Self {
        Self {
            enabled: true,
            high_water: 24 * 1024,
            low_water: 16 * 1024,
            pause_quanta: 0xFFFE,
        }
    }
}

impl FlowControl {
    /// Flow control turned off (the DP83820 with PCR.PSEN clear).
    #[must_use]
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }
}

impl Default for Dp83820Params {
    fn default() -> Self {
        Self {
            tx_fifo_bytes: 8 * 1024,
            rx_fifo_bytes: 32 * 1024,
            register_read_latency: Cycles(2),
            latency_timer: Cycles(64),
            max_outstanding: 2,
            cache_line_bytes: 32,
            write_invalidate: false,
            supports_64bit: true,
            target: TargetProfile {
                devsel: DevselSpeed::Medium,
                write_wait_states: Cycles(0),
                max_write_burst_bytes: 0,
                supports_64bit: true,
            },
            flow: FlowControl::default(),
            recovery: Cycles(0),
        }
    }
}

impl Dp83820Params {
    /// The master registration for [`pci_model::PciBus::add_master`].
    #[must_use]
    pub fn master_config(
        &self,
        name: &str,
        component: sim_kernel::ComponentId,
    ) -> pci_model::MasterConfig {
        pci_model::MasterConfig {
            name: name.to_owned(),
            component,
            latency_timer: self.latency_timer,
            supports_64bit: self.supports_64bit,
            recovery: self.recovery,
        }
    }
}
