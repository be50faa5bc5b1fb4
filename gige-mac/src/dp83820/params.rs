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
    /// Whether it does 64-bit transfers on a 64-bit bus. Source: DP83820 datasheet (a
    /// 32/64-bit PCI interface).
    pub supports_64bit: bool,
    /// Its timing as a target of register accesses. Assumption: medium DEVSEL#, no write
    /// wait states (not published).
    pub target: TargetProfile,
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
            supports_64bit: true,
            target: TargetProfile {
                devsel: DevselSpeed::Medium,
                write_wait_states: Cycles(0),
                max_write_burst_bytes: 0,
                supports_64bit: true,
            },
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
        }
    }
}
