//! [`GecParams`]: the GEC's timing and the values it programs into the DP83820.
//!
//! | parameter | default | unit | source |
//! |---|---|---|---|
//! | `ram_read_latency` | 2 | core clocks | assumption (configs/hvia-ge.toml `card.local_target`) |
//! | `ram_port_bytes` | 4 | bytes per core clock | assumption (see field) |
//! | `mac_regs_base` | 0x2000_0000 | local-bus address | assumption |
//! | `mxdma_bytes` | 512 | bytes | paper (512-byte bursts on the local bus) |
//! | `tx_fill_threshold` | 512 | bytes | assumption (see field) |
//! | `tx_drain_threshold` | 1536 | bytes | assumption (see field) |
//! | `rx_drain_threshold` | 64 | bytes | assumption (see field) |
//! | `auto_pad`, `strip_crc` | true | - | assumption (see fields) |
//! | `latency_timer` | 64 | local-bus clocks | assumption |
//! | `target` | medium DEVSEL#, no wait states | - | assumption (`card.local_target`) |

use crate::dp83820::regs::{RxCfg, TxCfg};
use pci_model::{DevselSpeed, TargetProfile};
use sim_kernel::Cycles;

/// Parameters of the GEC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GecParams {
    /// From the edge the GEC samples a read address on the local bus to the edge its data
    /// is driven [core clocks, >= 1]. Assumption 2: FPGA block RAM with a registered
    /// output (`card.local_target.read_latency_core_clocks`).
    pub ram_read_latency: Cycles,
    /// Bytes the GEC writes into its buffer RAM per core clock (descriptors, status
    /// resets) \[bytes\]. Assumption 4: a 32-bit block-RAM port (a 16-byte descriptor takes
    /// 4 core clocks). The DP83820's accesses use the RAM's other port.
    pub ram_port_bytes: u64,
    /// Local-bus address of the DP83820's register BAR. Assumption: 0x2000_0000, away
    /// from the buffer RAM (not published).
    pub mac_regs_base: u64,
    /// Largest DP83820 DMA burst, programmed into TXCFG/RXCFG MXDMA \[bytes\]. Source:
    /// paper (512-byte bursts on the local bus).
    pub mxdma_bytes: u64,
    /// TXCFG FLTH: free transmit-FIFO bytes before the DP83820 fetches more data \[bytes,
    /// multiple of 32\]. Assumption 512: room for one whole burst.
    pub tx_fill_threshold: u64,
    /// TXCFG DRTH: bytes of a frame in the transmit FIFO before the MAC starts sending it
    /// (or the whole frame) \[bytes, multiple of 32\]. Assumption 1536, not published: at
    /// least the largest frame, so every frame starts whole (store and forward) and can
    /// never underrun. The local bus moves a 512-byte burst in 132 clocks (4.0 us) and the
    /// wire sends it in 4.1 us, so cut-through after one burst survives an idle bus by
    /// 160 ns only, and even 1024 bytes underruns when receive DMA shares the bus
    /// (`tests/card_traffic.rs`); cut-through would save up to 4 us per 1514-byte frame.
    pub tx_drain_threshold: u64,
    /// RXCFG DRTH: bytes of a frame in the receive FIFO before the DP83820 starts moving
    /// it (or the end of the frame) \[bytes, multiple of 8, at most 248\]. Assumption 64
    /// (the minimum frame): not published.
    pub rx_drain_threshold: u64,
    /// TXCFG ATP: the MAC pads short frames to 60 bytes. Assumption: on (the engine hands
    /// over frames without pad; frame::finish does the same).
    pub auto_pad: bool,
    /// RXCFG STRIPCRC: the FCS is not written to the RX buffer and not counted in the
    /// size. Assumption: on (the engine-GEC interface reports lengths without FCS).
    pub strip_crc: bool,
    /// Latency Timer of the GEC as a local-bus master [local-bus clocks]. Assumption 64
    /// (its register writes are single data phases: it never matters).
    pub latency_timer: Cycles,
    /// Its timing as the local-bus target of the buffer RAM. Assumption: medium DEVSEL#,
    /// no write wait states, never disconnects (`card.local_target`).
    pub target: TargetProfile,
}

impl Default for GecParams {
    fn default() -> Self {
        Self {
            ram_read_latency: Cycles(2),
            ram_port_bytes: 4,
            mac_regs_base: 0x2000_0000,
            mxdma_bytes: 512,
            tx_fill_threshold: 512,
            tx_drain_threshold: 1536,
            rx_drain_threshold: 64,
            auto_pad: true,
            strip_crc: true,
            latency_timer: Cycles(64),
            target: TargetProfile {
                devsel: DevselSpeed::Medium,
                write_wait_states: Cycles(0),
                max_write_burst_bytes: 0,
                supports_64bit: true,
            },
        }
    }
}

impl GecParams {
    /// The TXCFG value the GEC programs.
    #[must_use]
    pub fn txcfg(&self) -> u32 {
        TxCfg {
            mxdma: self.mxdma_bytes,
            fill: self.tx_fill_threshold,
            drain: self.tx_drain_threshold,
            auto_pad: self.auto_pad,
        }
        .encode()
    }

    /// The RXCFG value the GEC programs.
    #[must_use]
    pub fn rxcfg(&self) -> u32 {
        RxCfg {
            mxdma: self.mxdma_bytes,
            drain: self.rx_drain_threshold,
            strip_crc: self.strip_crc,
        }
        .encode()
    }

    /// The GEC's buffer RAM `layout` as a RAM-backed local-bus target
    /// ([`pci_model::PciBus::set_ram_backed`]): the bus answers the DP83820's reads from
    /// it as the GEC's `target_read` does (the RAM's window, a target abort for a read
    /// starting outside it, the data `ram_read_latency` core clocks after the sampling
    /// edge), and stores the DP83820's writes outside the descriptor rings in it as the
    /// GEC's `target_write` does (it reacts only to writes of a descriptor's status,
    /// which stay messages).
    #[must_use]
    pub fn ram_backing(&self, layout: &crate::BufferLayout) -> pci_model::RamBacking {
        pci_model::RamBacking {
            start: layout.base,
            end: layout.base + layout.size(),
            read_latency: self.ram_read_latency,
            watch: (layout.base, layout.base + layout.slots_offset()),
        }
    }

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
            supports_64bit: false,
            recovery: sim_kernel::Cycles(0),
        }
    }
}
