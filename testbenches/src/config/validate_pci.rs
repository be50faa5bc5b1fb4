//! Range checks of the PCI timing tables (`[pci.bridge]`, `[card.dma]`, `[mac.dma]`,
//! `[card.pci_target]`, `[card.local_target]`), each naming the key and the limit.

use super::schema_pci::{BridgeConfig, DmaMasterConfig, LocalTargetConfig, TargetConfig};
use super::validate::{in_range, power_of_two, Problem};

/// A sane bound on a latency \[ns\]: 10 us, far beyond any DRAM or chipset.
const MAX_LATENCY_NS: u32 = 10_000;
/// The Latency Timer register is 8 bits (PCI 2.2 §6.2.4).
const LATENCY_TIMER: &str = " (the Latency Timer register is 8 bits, PCI 2.2 §6.2.4)";
/// The Cache Line Size register counts 32-bit words in 8 bits (PCI 2.2 §6.2.4).
const MAX_CACHE_LINE: u32 = 512;

/// Checks `[pci.bridge]`.
///
/// # Errors
/// The first value out of range.
pub(super) fn bridge(prefix: &str, b: &BridgeConfig) -> Result<(), Problem> {
    let key = |name: &str| format!("{prefix}.{name}");
    let ns = " [ns] (a sane bound: 10 us)";
    in_range(
        &key("memory_read_latency_ns"),
        b.memory_read_latency_ns,
        0,
        MAX_LATENCY_NS,
        ns,
    )?;
    in_range(
        &key("memory_stream_mb_s"),
        b.memory_stream_mb_s,
        1,
        100_000,
        " [MB/s]",
    )?;
    power_of_two(
        &key("cache_line_bytes"),
        b.cache_line_bytes,
        4,
        MAX_CACHE_LINE,
    )?;
    in_range(
        &key("mrm_prefetch_bytes"),
        b.mrm_prefetch_bytes,
        4,
        4096,
        " (the bridge never prefetches past a 4 KB boundary)",
    )?;
    in_range(
        &key("posted_write_latency_ns"),
        b.posted_write_latency_ns,
        0,
        MAX_LATENCY_NS,
        ns,
    )?;
    in_range(
        &key("posted_write_buffer_bytes"),
        b.posted_write_buffer_bytes,
        8,
        1 << 20,
        " (at least one 64-bit data phase)",
    )?;
    in_range(
        &key("cpu_write_buffer_entries"),
        b.cpu_write_buffer_entries,
        1,
        64,
        "",
    )
}

/// Checks a DMA master table (`[card.dma]`, `[mac.dma]`).
///
/// # Errors
/// The first value out of range.
pub(super) fn dma_master(prefix: &str, m: &DmaMasterConfig) -> Result<(), Problem> {
    let key = |name: &str| format!("{prefix}.{name}");
    in_range(
        &key("latency_timer_cycles"),
        m.latency_timer_cycles,
        0,
        255,
        LATENCY_TIMER,
    )?;
    in_range(
        &key("max_outstanding"),
        m.max_outstanding,
        1,
        16,
        " [bursts]",
    )?;
    power_of_two(
        &key("cache_line_bytes"),
        m.cache_line_bytes,
        4,
        MAX_CACHE_LINE,
    )?;
    in_range(
        &key("recovery_cycles"),
        m.recovery_cycles,
        0,
        255,
        " [PCI clocks]",
    )
}

/// Checks a device target table (`[card.pci_target]`).
///
/// # Errors
/// The first value out of range.
pub(super) fn target(prefix: &str, t: &TargetConfig) -> Result<(), Problem> {
    in_range(
        &format!("{prefix}.write_wait_states"),
        t.write_wait_states,
        0,
        14,
        " (the first TRDY# must come by the 16th clock, PCI 2.2 §3.5.1.1)",
    )?;
    let key = format!("{prefix}.max_write_burst_bytes");
    let n = t.max_write_burst_bytes;
    if n != 0 && (n % 8 != 0 || n > 1 << 20) {
        return Err(Problem {
            key,
            reason: format!(
                "{n} is not allowed: must be 0 (never disconnect) or a multiple of 8 (one 64-bit data phase) up to {}",
                1 << 20
            ),
        });
    }
    Ok(())
}

/// Checks `[card.local_target]`.
///
/// # Errors
/// The first value out of range.
pub(super) fn local_target(prefix: &str, t: &LocalTargetConfig) -> Result<(), Problem> {
    target(prefix, &t.target())?;
    in_range(
        &format!("{prefix}.read_latency_core_clocks"),
        t.read_latency_core_clocks,
        0,
        64,
        " [core clocks]",
    )
}
