//! The PCI timing tables of the schema: the host bridge (`[pci.bridge]`), a DMA master
//! (`[card.dma]`, `[mac.dma]`), a device target (`[card.pci_target]`,
//! `[card.local_target]`) and the enumerations they use.
//!
//! The fields mirror `pci_model::{BridgeParams, DmaParams, TargetProfile}` with units in
//! their names; [`super::pci`] maps them onto those structs. Ranges are checked by
//! [`super::validate`].

use serde::{Deserialize, Serialize};

/// When a target asserts DEVSEL# after the address phase (PCI 2.2 §3.6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Devsel {
    /// In the clock after the address phase.
    Fast,
    /// Two clocks after the address phase.
    Medium,
    /// Three clocks after the address phase.
    Slow,
}

/// How the host bridge answers a DMA read whose data it does not hold yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadMode {
    /// Delayed transaction: Retry at once, fetch, give the data to the repeated request
    /// (PCI 2.2 §3.3.3.3).
    Delayed,
    /// Wait states until the data is there, Retry if that passes the 16-clock initial
    /// latency (PCI 2.2 §3.5.1.1).
    WaitStates,
}

/// What a bus arbiter does with GNT# when nobody requests (PCI 2.2 §3.4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Park {
    /// GNT# stays on the last master.
    LastMaster,
    /// GNT# is removed once the bus is idle.
    None,
}

/// `[pci.bridge]`: the host bridge as the target of DMA into host memory (and the
/// master of CPU accesses to the card).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeConfig {
    /// DEVSEL# speed for PCI-to-memory accesses.
    pub devsel: Devsel,
    /// How a DMA read that misses the bridge's buffers is answered.
    pub read_mode: ReadMode,
    /// From claiming a DMA read to the first data in the prefetch buffer \[ns\].
    pub memory_read_latency_ns: u32,
    /// Rate of further prefetched bytes once the first is there \[MB/s, 10^6 bytes\].
    pub memory_stream_mb_s: u32,
    /// Host cache-line size: Memory Read and Read Line fetch to its end \[bytes\].
    pub cache_line_bytes: u32,
    /// How far a Memory Read Multiple is prefetched, never past 4 KB \[bytes\].
    pub mrm_prefetch_bytes: u32,
    /// From the end of a DMA write to its data being visible in memory \[ns\].
    pub posted_write_latency_ns: u32,
    /// Capacity of the PCI-to-memory posted-write buffer \[bytes\].
    pub posted_write_buffer_bytes: u32,
    /// CPU-to-PCI posted writes buffered before the CPU stalls \[entries\].
    pub cpu_write_buffer_entries: u32,
    /// Whether it answers REQ64# with ACK64# on a 64-bit bus.
    pub supports_64bit: bool,
    /// The host side of a CPU read of a PCI device (FSB request, decode, crossing back)
    /// \[ns\].
    pub cpu_read_latency_ns: u32,
}

/// `[mac.dma]`: the DP83820 as the local bus's DMA master. Its Latency Timer is not
/// configurable: no other master competes with its bursts on the local bus (the GEC's
/// register writes come between them), so the model keeps 64.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacDmaConfig {
    /// Bursts handed to the bus ahead of the one in progress \[bursts\].
    pub max_outstanding: u32,
    /// Cache Line Size register: chooses the read command and Memory Write and
    /// Invalidate \[bytes\].
    pub cache_line_bytes: u32,
    /// Use Memory Write and Invalidate for whole aligned cache lines.
    pub write_invalidate: bool,
    /// Whether it does 64-bit transfers on a 64-bit bus.
    pub supports_64bit: bool,
    /// Clocks its bus interface needs after each burst ends before it requests the bus
    /// for the next burst \[PCI clocks\].
    pub recovery_cycles: u32,
}

impl MacDmaConfig {
    /// As a full master table, the Latency Timer at 64.
    #[must_use]
    pub fn master(&self) -> DmaMasterConfig {
        DmaMasterConfig {
            latency_timer_cycles: 64,
            max_outstanding: self.max_outstanding,
            cache_line_bytes: self.cache_line_bytes,
            write_invalidate: self.write_invalidate,
            supports_64bit: self.supports_64bit,
            recovery_cycles: self.recovery_cycles,
        }
    }
}

/// `[card.dma]` (the card on the system bus): a DMA master's PCI interface. Its burst
/// size is the bus's `burst_bytes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaMasterConfig {
    /// Latency Timer register: the burst ends once it has expired and GNT# is gone
    /// \[PCI clocks\].
    pub latency_timer_cycles: u32,
    /// Bursts handed to the bus ahead of the one in progress \[bursts\].
    pub max_outstanding: u32,
    /// Cache Line Size register: chooses the read command and Memory Write and
    /// Invalidate \[bytes\].
    pub cache_line_bytes: u32,
    /// Use Memory Write and Invalidate for whole aligned cache lines.
    pub write_invalidate: bool,
    /// Whether it does 64-bit transfers on a 64-bit bus.
    pub supports_64bit: bool,
    /// Clocks its bus interface needs after each burst ends before it requests the bus
    /// for the next burst \[PCI clocks\].
    pub recovery_cycles: u32,
}

/// `[card.pci_target]`: the PCI timing of the card's BAR on the system bus. The host
/// reaches it only with single-dword accesses, so write bursts and 64-bit transfers are
/// not configurable here (the model's defaults: never disconnect, ACK64#).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardTargetConfig {
    /// DEVSEL# decode speed.
    pub devsel: Devsel,
    /// Wait states before the first write data phase, beyond DEVSEL# \[PCI clocks\].
    pub write_wait_states: u32,
}

impl CardTargetConfig {
    /// As a full target table, the rest at the model's defaults.
    #[must_use]
    pub fn target(&self) -> TargetConfig {
        TargetConfig {
            devsel: self.devsel,
            write_wait_states: self.write_wait_states,
            max_write_burst_bytes: 0,
            supports_64bit: true,
        }
    }
}

/// The PCI timing of a device target (the profile behind `[card.pci_target]` and
/// `[card.local_target]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// DEVSEL# decode speed.
    pub devsel: Devsel,
    /// Wait states before the first write data phase, beyond DEVSEL# \[PCI clocks\].
    pub write_wait_states: u32,
    /// Disconnect a write after this many bytes; 0 = never \[bytes\].
    pub max_write_burst_bytes: u32,
    /// Whether it answers REQ64# with ACK64#.
    pub supports_64bit: bool,
}

/// `[card.local_target]`: the FPGA on the local bus, a device target whose memory is the
/// card's buffer RAM (what the DP83820 reads and writes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalTargetConfig {
    /// DEVSEL# decode speed.
    pub devsel: Devsel,
    /// Wait states before the first write data phase, beyond DEVSEL# \[PCI clocks\].
    pub write_wait_states: u32,
    /// Disconnect a write after this many bytes; 0 = never \[bytes\].
    pub max_write_burst_bytes: u32,
    /// Whether it answers REQ64# with ACK64#.
    pub supports_64bit: bool,
    /// From seeing a read to having its data \[FPGA core clocks\]; turned into local-bus
    /// clocks (rounded up) for the model.
    pub read_latency_core_clocks: u32,
}

impl LocalTargetConfig {
    /// Its PCI timing without the read latency.
    #[must_use]
    pub fn target(&self) -> TargetConfig {
        TargetConfig {
            devsel: self.devsel,
            write_wait_states: self.write_wait_states,
            max_write_burst_bytes: self.max_write_burst_bytes,
            supports_64bit: self.supports_64bit,
        }
    }
}
