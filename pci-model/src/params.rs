//! Parameter structs of the PCI model: the bus, a device target's timing profile, the
//! host bridge and the card's DMA master.
//!
//! Every field says its meaning, unit and source: a section of the PCI Local Bus
//! Specification 2.2 (the revision of the HVIA-GE era; 2.3 does not change these rules),
//! a datasheet, or "assumption: why". `Default` is the published HVIA-GE system
//! (Pentium III / 440BX-class host, PC100 SDRAM, PCI 32-bit / 33 MHz, 512-byte DMA
//! bursts). [`param_docs`] lists (set, name, default, unit, source) for config comments.

use crate::error::PciError;
use sim_kernel::{ClockDomain, Cycles, Duration};

/// Width of the AD bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusWidth {
    /// 32-bit AD\[31:0\]: 4 bytes per data phase.
    W32,
    /// 64-bit AD\[63:0\] (REQ64#/ACK64#): 8 bytes per data phase when master and target
    /// are both 64-bit capable (PCI 2.2 §3.8).
    W64,
}

impl BusWidth {
    /// Bytes moved by one data phase.
    #[must_use]
    pub const fn bytes(self) -> u64 {
        match self {
            BusWidth::W32 => 4,
            BusWidth::W64 => 8,
        }
    }

    /// Width in bits.
    #[must_use]
    pub const fn bits(self) -> u32 {
        match self {
            BusWidth::W32 => 32,
            BusWidth::W64 => 64,
        }
    }

    /// The width of `bits` bits.
    ///
    /// # Errors
    /// Anything but 32 or 64.
    pub fn from_bits(bits: u32) -> Result<Self, PciError> {
        match bits {
            32 => Ok(BusWidth::W32),
            64 => Ok(BusWidth::W64),
            other => Err(PciError::BadWidth(other)),
        }
    }
}

/// What the arbiter does with GNT# when nobody requests (PCI 2.2 §3.4.3, "bus parking").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParkPolicy {
    /// GNT# stays on the last master that had it: that master can start its next
    /// transaction without arbitration (assumption: 440BX-class arbiters park on the last
    /// master).
    LastMaster,
    /// GNT# is removed once the bus is idle and its holder no longer requests.
    None,
}

/// How the bus is woken: both give identical results (a test proves it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stepping {
    /// One kernel event per PCI clock while anything is in flight (the reference).
    PerClock,
    /// One event at the end of each run of clocks in which nothing observable can happen
    /// (plain data phases of an uncontended burst, an idle bus): the same per-clock state
    /// machine is stepped for the skipped clocks when the event fires, except that a run
    /// of plain data phases is applied as a whole (`bus/bulk.rs`).
    FastForward,
}

/// Parameters of one PCI bus segment.
#[derive(Clone, Debug, PartialEq)]
pub struct BusParams {
    /// Data width [bits: 32 | 64]. Source: HVIA-GE paper (32-bit system PCI); 64 for what-ifs.
    pub width: BusWidth,
    /// PCI clock \[MHz\], 33 or 66 (anything in (0, 66.67] is accepted). Source: HVIA-GE
    /// paper (33 MHz); PCI 2.2 §4.2.3.1 (33 MHz) and ch. 7 (66 MHz).
    pub clock_mhz: f64,
    /// Bus parking policy. Source: PCI 2.2 §3.4.3; assumption: park on the last master.
    pub park: ParkPolicy,
    /// Simulation stepping (no effect on results). Default: fast-forward.
    pub stepping: Stepping,
}

impl Default for BusParams {
    fn default() -> Self {
        Self {
            width: BusWidth::W32,
            clock_mhz: 33.0,
            park: ParkPolicy::LastMaster,
            stepping: Stepping::FastForward,
        }
    }
}

impl BusParams {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A clock outside (0, 66.67] MHz.
    pub fn validate(&self) -> Result<(), PciError> {
        if !self.clock_mhz.is_finite() || self.clock_mhz <= 0.0 || self.clock_mhz > 66.67 {
            return Err(PciError::BadClock(self.clock_mhz));
        }
        Ok(())
    }

    /// The clock domain of this bus, called `name` (e.g. `pci.system`).
    ///
    /// # Errors
    /// A bad clock.
    pub fn clock_domain(&self, name: &str) -> Result<ClockDomain, PciError> {
        self.validate()?;
        Ok(ClockDomain::from_mhz(name, self.clock_mhz)?)
    }

    /// The theoretical ceiling width x clock [MB/s, 10^6 bytes], from the rounded period
    /// the simulation uses (132.0 MB/s for 32-bit / 33 MHz).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn ceiling_mb_s(&self) -> f64 {
        match self.clock_domain("ceiling") {
            Ok(d) => self.width.bytes() as f64 * 1e6 / d.period().as_ps() as f64,
            Err(_) => 0.0,
        }
    }
}

/// When a target asserts DEVSEL# after the address phase: fast, medium or slow decode
/// (PCI 2.2 §3.6.1, device selection). No DEVSEL# by the fifth clock is a master abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DevselSpeed {
    /// DEVSEL# in the clock after the address phase.
    Fast,
    /// DEVSEL# two clocks after the address phase.
    Medium,
    /// DEVSEL# three clocks after the address phase.
    Slow,
}

impl DevselSpeed {
    /// Clocks from the address phase to the clock DEVSEL# is first asserted (1, 2, 3).
    #[must_use]
    pub const fn clocks(self) -> u64 {
        match self {
            DevselSpeed::Fast => 1,
            DevselSpeed::Medium => 2,
            DevselSpeed::Slow => 3,
        }
    }
}

/// The PCI timing of a target that is another component (the card's BAR, the FPGA on the
/// local bus). Read data latency is not a parameter: it emerges from when the component
/// answers `TargetRead`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetProfile {
    /// DEVSEL# decode speed. Source: the device's configuration-space DEVSEL timing field
    /// (PCI 2.2 §6.2.3); assumption for the HVIA-GE FPGA: medium.
    pub devsel: DevselSpeed,
    /// Wait states (TRDY# deasserted) before the first write data phase, beyond DEVSEL#
    /// [PCI clocks]. Source: device design; assumption 0 (posted write buffer).
    pub write_wait_states: Cycles,
    /// The target disconnects (STOP# with the last TRDY#) after this many bytes of one
    /// write transaction \[bytes\]; 0 = never (only at its range end). Source: device's
    /// posted-write buffer size; assumption 0 (it streams into a FIFO).
    pub max_write_burst_bytes: u64,
    /// Whether the target answers REQ64# with ACK64# (PCI 2.2 §3.8). Assumption: true.
    pub supports_64bit: bool,
}

impl Default for TargetProfile {
    fn default() -> Self {
        Self {
            devsel: DevselSpeed::Medium,
            write_wait_states: Cycles(0),
            max_write_burst_bytes: 0,
            supports_64bit: true,
        }
    }
}

/// How the host bridge answers a DMA read whose data is not in its buffers yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// Delayed transaction (PCI 2.2 §3.3.3.3): latch the request, Retry the master at
    /// once, fetch from memory; the master's repeat of the same request gets the data.
    Delayed,
    /// Hold TRDY# deasserted until the first data is there; if that would pass the
    /// 16-clock target initial latency (PCI 2.2 §3.5.1.1), Retry and finish the fetch as
    /// a delayed completion.
    WaitStates,
}

/// Parameters of the host bridge (the target for host memory and the master for CPU
/// accesses to PCI devices). The timing of a 440BX-class chipset is not published in the
/// form needed here: each latency below is an assumption with its reasoning.
#[derive(Clone, Debug, PartialEq)]
pub struct BridgeParams {
    /// DEVSEL# speed of the bridge for PCI-to-memory accesses. Assumption: medium
    /// (typical of Intel host bridges of the 440BX generation).
    pub devsel: DevselSpeed,
    /// What a DMA read that misses the bridge's buffers sees. Assumption: delayed
    /// transactions (PCI 2.2 §3.3.3.3; as e.g. the AMD-761 system controller does).
    pub read_mode: ReadMode,
    /// From the bridge claiming a DMA read (DEVSEL#) to the first data in its prefetch
    /// buffer \[ns\]. Assumption 180 ns: FSB snoop (~4 clocks at 100 MHz = 40 ns) + PC100
    /// SDRAM page miss (tRP 20 + tRCD 20 + CL2 20 = 60 ns) + host/PCI clock crossing and
    /// queueing (~2 PCI clocks = 60 ns) + data return (~20 ns).
    pub memory_read_latency: Duration,
    /// Rate at which further prefetched bytes arrive once the first is there [MB/s].
    /// Source: PC100 SDRAM, 64 bits x 100 MHz = 800 MB/s peak.
    pub memory_stream_mb_s: u64,
    /// Host cache-line size: Memory Read and Memory Read Line fetch to the end of the
    /// line \[bytes\]. Source: Pentium III (P6) 32-byte lines.
    pub cache_line_bytes: u64,
    /// How far a Memory Read Multiple is prefetched from its start \[bytes\]; never past a
    /// 4 KB boundary, where the bridge disconnects. Assumption 4096: the bridge streams to
    /// the 4 KB boundary (as the Intel 21152 "flow-through" mode does).
    pub mrm_prefetch_bytes: u64,
    /// Delayed read requests the bridge can hold at once. Assumption 1 (single-level
    /// delayed transaction queue, as the AMD-761 documents).
    pub delayed_read_slots: usize,
    /// From the end of a DMA write transaction to its data being visible in host memory
    /// \[ns\]. Assumption 120 ns: FSB snoop/invalidate (~40 ns) + PC100 write with page miss
    /// (~60 ns) + clock crossing (~20 ns).
    pub posted_write_latency: Duration,
    /// Capacity of the PCI-to-memory posted-write buffer \[bytes\]; a write finding it full
    /// is retried, one filling it is disconnected. Assumption 8192: SDRAM drains faster
    /// (800 MB/s) than PCI fills (132 MB/s), so it only matters for what-ifs.
    pub posted_write_buffer_bytes: u64,
    /// CPU-to-PCI posted writes the bridge buffers before the CPU stalls \[entries\].
    /// Assumption 4 (440BX-class CPU-to-PCI posting buffer).
    pub cpu_write_buffer_entries: usize,
    /// Latency Timer of the bridge as a PCI master [PCI clocks]. Assumption 32 (only
    /// short CPU accesses use it).
    pub latency_timer: Cycles,
    /// Whether the bridge does 64-bit transfers on a 64-bit bus. Assumption: true.
    pub supports_64bit: bool,
    /// The host side of a CPU read of a PCI device \[ns\]: the load's front-side-bus
    /// request and the bridge's decode before the PCI transaction, and the clock crossing
    /// back and the FSB data phase after it. The model charges it between the read's last
    /// PCI data phase and the CPU getting the data (the read still takes its place on the
    /// bus in the order the CPU issued it). Assumption 0 in the defaults (pure PCI timing).
    pub cpu_read_latency: Duration,
    /// Fault injection: a range of host memory whose DMA the bridge answers with
    /// Target-Abort or does not claim (Master-Abort), see [`crate::abort`]. `None` (no
    /// fault) in the defaults and every preset.
    pub abort: Option<crate::abort::AbortRange>,
}

impl Default for BridgeParams {
    fn default() -> Self {
        Self {
            devsel: DevselSpeed::Medium,
            read_mode: ReadMode::Delayed,
            memory_read_latency: Duration::from_ns(180),
            memory_stream_mb_s: 800,
            cache_line_bytes: 32,
            mrm_prefetch_bytes: 4096,
            delayed_read_slots: 1,
            posted_write_latency: Duration::from_ns(120),
            posted_write_buffer_bytes: 8192,
            cpu_write_buffer_entries: 4,
            latency_timer: Cycles(32),
            supports_64bit: true,
            cpu_read_latency: Duration::ZERO,
            abort: None,
        }
    }
}

impl BridgeParams {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A zero stream rate, cache line or buffer, or a cache line that is not a power of two.
    pub fn validate(&self) -> Result<(), PciError> {
        if self.memory_stream_mb_s == 0 {
            return Err(bad("bridge.memory_stream_mb_s", "must be > 0"));
        }
        if !self.cache_line_bytes.is_power_of_two() || self.cache_line_bytes < 4 {
            return Err(bad(
                "bridge.cache_line_bytes",
                "must be a power of two >= 4",
            ));
        }
        if self.mrm_prefetch_bytes == 0 {
            return Err(bad("bridge.mrm_prefetch_bytes", "must be > 0"));
        }
        if self.delayed_read_slots == 0 {
            return Err(bad("bridge.delayed_read_slots", "must be >= 1"));
        }
        if self.posted_write_buffer_bytes < 8 {
            return Err(bad("bridge.posted_write_buffer_bytes", "must be >= 8"));
        }
        if self.cpu_write_buffer_entries == 0 {
            return Err(bad("bridge.cpu_write_buffer_entries", "must be >= 1"));
        }
        Ok(())
    }
}

/// Parameters of the card's DMA master (its PCI master interface and burst policy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaParams {
    /// Largest burst the master issues \[bytes\]. Source: HVIA-GE paper (512-byte bursts).
    pub burst_bytes: u64,
    /// Latency Timer register [PCI clocks]: once it has expired and GNT# is gone the
    /// master ends its burst (PCI 2.2 §3.5.4, §6.2.4). Source: Linux 2.4
    /// `pcibios_set_master()` programs 64 when the BIOS left less than 16; assumption 64.
    pub latency_timer: Cycles,
    /// Bursts handed to the bus ahead of the one in progress, so REQ# stays asserted and
    /// the next burst starts right after the idle clock \[bursts\]. Assumption 2 (one in
    /// progress + one queued: a double-buffered DMA engine).
    pub max_outstanding: usize,
    /// Cache Line Size register, used to choose read commands and Memory Write and
    /// Invalidate \[bytes\]. Source: Pentium III 32-byte lines, programmed by the BIOS.
    pub cache_line_bytes: u64,
    /// Use Memory Write and Invalidate for whole aligned cache lines (PCI 2.2 §3.1.1).
    /// Assumption: false (not published; the bridge times both alike).
    pub write_invalidate: bool,
    /// Whether the card's PCI core does 64-bit transfers on a 64-bit bus. Assumption
    /// true (what-if: the published card is 32-bit).
    pub supports_64bit: bool,
    /// Clocks the master's bus interface needs after each burst ends before it requests
    /// the bus for the next one (see [`crate::MasterConfig::recovery`]). Default 0.
    pub recovery: Cycles,
}

impl Default for DmaParams {
    fn default() -> Self {
        Self {
            burst_bytes: 512,
            latency_timer: Cycles(64),
            max_outstanding: 2,
            cache_line_bytes: 32,
            write_invalidate: false,
            supports_64bit: true,
            recovery: Cycles(0),
        }
    }
}

impl DmaParams {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A zero burst or outstanding count, or a bad cache-line size.
    pub fn validate(&self) -> Result<(), PciError> {
        if self.burst_bytes == 0 {
            return Err(bad("dma.burst_bytes", "must be > 0"));
        }
        if self.max_outstanding == 0 {
            return Err(bad("dma.max_outstanding", "must be >= 1"));
        }
        if !self.cache_line_bytes.is_power_of_two() || self.cache_line_bytes < 4 {
            return Err(bad("dma.cache_line_bytes", "must be a power of two >= 4"));
        }
        Ok(())
    }
}

fn bad(name: &'static str, why: &str) -> PciError {
    PciError::BadParam {
        name,
        why: why.to_owned(),
    }
}

/// One documented parameter: for config-file comments and reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamDoc {
    /// Parameter set (`bus`, `bridge`, `dma`, `target`).
    pub set: &'static str,
    /// Field name.
    pub name: &'static str,
    /// Default value, as text.
    pub default: String,
    /// Unit.
    pub unit: &'static str,
    /// Where the value comes from.
    pub source: &'static str,
}

/// Every parameter of this crate with its default, unit and source.
#[must_use]
pub fn param_docs() -> Vec<ParamDoc> {
    let b = BusParams::default();
    let h = BridgeParams::default();
    let d = DmaParams::default();
    let t = TargetProfile::default();
    let p = |set, name, default: String, unit, source| ParamDoc {
        set,
        name,
        default,
        unit,
        source,
    };
    vec![
        p(
            "bus",
            "width",
            b.width.bits().to_string(),
            "bits",
            "HVIA-GE paper: 32-bit system PCI; 64 for what-ifs (PCI 2.2 §3.8)",
        ),
        p(
            "bus",
            "clock_mhz",
            b.clock_mhz.to_string(),
            "MHz",
            "HVIA-GE paper: 33 MHz; PCI 2.2 §4.2.3.1, ch. 7 (66 MHz)",
        ),
        p(
            "bus",
            "park",
            "last-master".into(),
            "-",
            "PCI 2.2 §3.4.3; assumption: park on the last master",
        ),
        p(
            "bus",
            "stepping",
            "fast-forward".into(),
            "-",
            "simulation only; equal to per-clock (tested)",
        ),
        p(
            "target",
            "devsel",
            "medium".into(),
            "-",
            "PCI 2.2 §3.6.1/§6.2.3; assumption for the card FPGA",
        ),
        p(
            "target",
            "write_wait_states",
            t.write_wait_states.0.to_string(),
            "PCI clocks",
            "assumption: posted write FIFO",
        ),
        p(
            "target",
            "max_write_burst_bytes",
            t.max_write_burst_bytes.to_string(),
            "bytes (0 = none)",
            "assumption: streams into a FIFO",
        ),
        p(
            "target",
            "supports_64bit",
            t.supports_64bit.to_string(),
            "-",
            "PCI 2.2 §3.8; assumption",
        ),
        p(
            "bridge",
            "devsel",
            "medium".into(),
            "-",
            "assumption: Intel 440BX-class host bridge",
        ),
        p(
            "bridge",
            "read_mode",
            "delayed".into(),
            "-",
            "PCI 2.2 §3.3.3.3; assumption (AMD-761 style delayed reads)",
        ),
        p(
            "bridge",
            "memory_read_latency",
            format!("{}", h.memory_read_latency.as_ns_f64()),
            "ns",
            "assumption: FSB snoop 40 + PC100 page miss 60 + clock crossing 60 + return 20",
        ),
        p(
            "bridge",
            "memory_stream_mb_s",
            h.memory_stream_mb_s.to_string(),
            "MB/s",
            "PC100 SDRAM: 64 bit x 100 MHz",
        ),
        p(
            "bridge",
            "cache_line_bytes",
            h.cache_line_bytes.to_string(),
            "bytes",
            "Pentium III (P6) cache line",
        ),
        p(
            "bridge",
            "mrm_prefetch_bytes",
            h.mrm_prefetch_bytes.to_string(),
            "bytes",
            "assumption: streams to the 4 KB boundary (cf. Intel 21152 flow-through)",
        ),
        p(
            "bridge",
            "delayed_read_slots",
            h.delayed_read_slots.to_string(),
            "requests",
            "assumption: single-level delayed queue (cf. AMD-761)",
        ),
        p(
            "bridge",
            "posted_write_latency",
            format!("{}", h.posted_write_latency.as_ns_f64()),
            "ns",
            "assumption: snoop 40 + PC100 write 60 + crossing 20",
        ),
        p(
            "bridge",
            "posted_write_buffer_bytes",
            h.posted_write_buffer_bytes.to_string(),
            "bytes",
            "assumption: never limits at PCI rates",
        ),
        p(
            "bridge",
            "cpu_write_buffer_entries",
            h.cpu_write_buffer_entries.to_string(),
            "writes",
            "assumption: 440BX-class CPU-to-PCI posting",
        ),
        p(
            "bridge",
            "latency_timer",
            h.latency_timer.0.to_string(),
            "PCI clocks",
            "assumption (short CPU accesses only)",
        ),
        p(
            "bridge",
            "supports_64bit",
            h.supports_64bit.to_string(),
            "-",
            "assumption",
        ),
        p(
            "bridge",
            "abort",
            h.abort.map_or("none".into(), |r| format!("{:?} {:#x}..{:#x}", r.kind(), r.start(), r.end())),
            "4 KB pages",
            "setting: fault injection, off (PCI 2.2 §3.3.3.1 master abort, §3.3.3.2.1 target abort)",
        ),
        p(
            "dma",
            "burst_bytes",
            d.burst_bytes.to_string(),
            "bytes",
            "HVIA-GE paper: 512-byte DMA bursts",
        ),
        p(
            "dma",
            "latency_timer",
            d.latency_timer.0.to_string(),
            "PCI clocks",
            "PCI 2.2 §3.5.4/§6.2.4; Linux 2.4 pcibios_set_master() value",
        ),
        p(
            "dma",
            "max_outstanding",
            d.max_outstanding.to_string(),
            "bursts",
            "assumption: double-buffered DMA engine keeps REQ# asserted",
        ),
        p(
            "dma",
            "cache_line_bytes",
            d.cache_line_bytes.to_string(),
            "bytes",
            "Pentium III cache line (Cache Line Size register)",
        ),
        p(
            "dma",
            "write_invalidate",
            d.write_invalidate.to_string(),
            "-",
            "assumption: not published",
        ),
        p(
            "dma",
            "supports_64bit",
            d.supports_64bit.to_string(),
            "-",
            "assumption (the published card is 32-bit)",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_published_system() {
        let b = BusParams::default();
        assert_eq!(b.width, BusWidth::W32);
        assert!(
            (b.ceiling_mb_s() - 132.0).abs() < 0.01,
            "{}",
            b.ceiling_mb_s()
        );
        let fast = BusParams {
            width: BusWidth::W64,
            clock_mhz: 66.0,
            ..BusParams::default()
        };
        assert!(
            (fast.ceiling_mb_s() - 528.0).abs() < 0.1,
            "{}",
            fast.ceiling_mb_s()
        );
        assert_eq!(DmaParams::default().burst_bytes, 512);
        assert!(BridgeParams::default().validate().is_ok());
        assert!(DmaParams::default().validate().is_ok());
    }

    #[test]
    fn bad_values_are_errors() {
        assert_eq!(BusWidth::from_bits(16), Err(PciError::BadWidth(16)));
        for mhz in [0.0, -1.0, 100.0, f64::NAN] {
            let p = BusParams {
                clock_mhz: mhz,
                ..BusParams::default()
            };
            assert!(p.validate().is_err());
        }
        let d = DmaParams {
            burst_bytes: 0,
            ..DmaParams::default()
        };
        assert!(d.validate().is_err());
        let h = BridgeParams {
            cache_line_bytes: 24,
            ..BridgeParams::default()
        };
        assert!(h.validate().is_err());
    }

    #[test]
    fn every_parameter_is_documented() {
        let docs = param_docs();
        assert!(docs
            .iter()
            .all(|d| !d.source.is_empty() && !d.unit.is_empty()));
        assert_eq!(docs.iter().filter(|d| d.set == "bridge").count(), 13);
    }
}
