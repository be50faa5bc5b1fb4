//! The one mapping from the configuration onto `pci-model`'s parameter structs: every
//! testbench and the system assembly build their buses, host bridge, DMA masters and
//! device targets through these methods, so a config key means the same thing
//! everywhere.
//!
//! The methods do not validate: call them on a validated [`SystemConfig`] (what
//! [`SystemConfig::load`] returns); the model's own checks still reject what it cannot
//! simulate.

use pci_model::{
    BridgeParams, BusParams, BusWidth, DevselSpeed, DmaParams, ParkPolicy, PciError, Stepping,
    TargetProfile,
};
use sim_kernel::{Cycles, Duration};

use super::schema::{PciBusConfig, SystemConfig};
use super::schema_pci::{BridgeConfig, Devsel, DmaMasterConfig, Park, ReadMode, TargetConfig};

/// Which of the node's two PCI buses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciBusKind {
    /// Host bridge <-> card (`[pci.system]`); the card's DMA master, host memory behind
    /// the bridge.
    System,
    /// FPGA <-> DP83820 on the card (`[pci.local]`); the DP83820 is the DMA master, the
    /// FPGA's buffer RAM the target.
    Local,
}

impl PciBusKind {
    /// `system` or `local`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            PciBusKind::System => "system",
            PciBusKind::Local => "local",
        }
    }

    /// The clock domain (and config table) of the bus: `pci.system` or `pci.local`.
    #[must_use]
    pub const fn domain(self) -> &'static str {
        match self {
            PciBusKind::System => "pci.system",
            PciBusKind::Local => "pci.local",
        }
    }
}

impl SystemConfig {
    /// The config table of bus `kind`.
    #[must_use]
    pub fn pci_bus(&self, kind: PciBusKind) -> &PciBusConfig {
        match kind {
            PciBusKind::System => &self.pci.system,
            PciBusKind::Local => &self.pci.local,
        }
    }

    /// The bus parameters of bus `kind` (fast-forward stepping with `sim.stepping =
    /// "fast"`, per-clock with `"exact"`; the two give the same results).
    ///
    /// # Errors
    /// A width other than 32 or 64 bits (validation rejects it first).
    pub fn pci_bus_params(&self, kind: PciBusKind) -> Result<BusParams, PciError> {
        let bus = self.pci_bus(kind);
        Ok(BusParams {
            width: BusWidth::from_bits(bus.width_bits)?,
            clock_mhz: bus.clock_mhz,
            park: park(bus.park),
            stepping: match self.sim.stepping {
                super::schema::SimStepping::Fast => Stepping::FastForward,
                super::schema::SimStepping::Exact => Stepping::PerClock,
            },
        })
    }

    /// The host bridge on the system bus (`[pci.bridge]`).
    #[must_use]
    pub fn host_bridge_params(&self) -> BridgeParams {
        bridge(&self.pci.bridge)
    }

    /// The DMA master of bus `kind`: the card's (`[card.dma]`) on the system bus, the
    /// DP83820's (`[mac.dma]`) on the local bus, bursting `pci.<bus>.burst_bytes`.
    #[must_use]
    pub fn dma_params(&self, kind: PciBusKind) -> DmaParams {
        let master = match kind {
            PciBusKind::System => self.card.dma.clone(),
            PciBusKind::Local => self.mac.dma.master(),
        };
        dma(&master, self.pci_bus(kind).burst_bytes)
    }

    /// The card's BAR as a target on the system bus (`[card.pci_target]`).
    #[must_use]
    pub fn card_target_profile(&self) -> TargetProfile {
        target(&self.card.pci_target.target())
    }

    /// The FPGA's buffer RAM as a target on the local bus (`[card.local_target]`): its
    /// profile and its read latency in local-bus clocks, `read_latency_core_clocks`
    /// core clocks rounded up to whole local-bus clocks.
    #[must_use]
    pub fn local_target(&self) -> (TargetProfile, Cycles) {
        let t = &self.card.local_target;
        let core = self.clock_period_ps("card.core").unwrap_or(0);
        let local = self.clock_period_ps("pci.local").unwrap_or(1).max(1);
        let ps = u64::from(t.read_latency_core_clocks).saturating_mul(core);
        (target(&t.target()), Cycles(ps.div_ceil(local)))
    }

    /// The GEC of `[card.local_target]` and `pci.local.burst_bytes`: its buffer RAM's PCI
    /// target timing and read latency (core clocks), and the MXDMA burst it programs
    /// into the DP83820.
    #[must_use]
    pub fn gec_params(&self) -> gige_mac::gec::GecParams {
        let t = &self.card.local_target;
        gige_mac::gec::GecParams {
            mxdma_bytes: u64::from(self.pci.local.burst_bytes),
            ram_read_latency: Cycles(u64::from(t.read_latency_core_clocks)),
            target: target(&t.target()),
            ..gige_mac::gec::GecParams::default()
        }
    }

    /// The DP83820 of `[mac]` and `[mac.dma]`.
    #[must_use]
    pub fn mac_params(&self) -> gige_mac::dp83820::Dp83820Params {
        let d = self.dma_params(PciBusKind::Local);
        gige_mac::dp83820::Dp83820Params {
            tx_fifo_bytes: u64::from(self.mac.tx_fifo_bytes),
            rx_fifo_bytes: u64::from(self.mac.rx_fifo_bytes),
            latency_timer: d.latency_timer,
            max_outstanding: d.max_outstanding,
            cache_line_bytes: d.cache_line_bytes,
            supports_64bit: d.supports_64bit,
            recovery: d.recovery,
            write_invalidate: d.write_invalidate,
            ..gige_mac::dp83820::Dp83820Params::default()
        }
    }

    /// The period of clock domain `domain` \[ps\], if it exists and is valid.
    #[must_use]
    pub fn clock_period_ps(&self, domain: &str) -> Option<u64> {
        self.clocks()
            .iter()
            .find(|c| c.domain == domain)
            .and_then(|c| c.period_ps().ok())
    }

    /// Host memory of one node \[bytes\].
    #[must_use]
    pub fn host_memory_bytes(&self) -> u64 {
        u64::from(self.host.memory_mb) << 20
    }
}

fn park(p: Park) -> ParkPolicy {
    match p {
        Park::LastMaster => ParkPolicy::LastMaster,
        Park::None => ParkPolicy::None,
    }
}

fn devsel(d: Devsel) -> DevselSpeed {
    match d {
        Devsel::Fast => DevselSpeed::Fast,
        Devsel::Medium => DevselSpeed::Medium,
        Devsel::Slow => DevselSpeed::Slow,
    }
}

/// A `u32` count as `usize` (every supported target has at least 32-bit `usize`).
fn count(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn bridge(b: &BridgeConfig) -> BridgeParams {
    BridgeParams {
        devsel: devsel(b.devsel),
        read_mode: match b.read_mode {
            ReadMode::Delayed => pci_model::ReadMode::Delayed,
            ReadMode::WaitStates => pci_model::ReadMode::WaitStates,
        },
        memory_read_latency: Duration::from_ns(u64::from(b.memory_read_latency_ns)),
        memory_stream_mb_s: u64::from(b.memory_stream_mb_s),
        cache_line_bytes: u64::from(b.cache_line_bytes),
        mrm_prefetch_bytes: u64::from(b.mrm_prefetch_bytes),
        delayed_read_slots: BridgeParams::default().delayed_read_slots,
        posted_write_latency: Duration::from_ns(u64::from(b.posted_write_latency_ns)),
        posted_write_buffer_bytes: u64::from(b.posted_write_buffer_bytes),
        cpu_write_buffer_entries: count(b.cpu_write_buffer_entries),
        latency_timer: BridgeParams::default().latency_timer,
        supports_64bit: b.supports_64bit,
        cpu_read_latency: Duration::from_ns(u64::from(b.cpu_read_latency_ns)),
        abort: None, // `faults.pci_abort*`, set per node by the system
    }
}

fn dma(m: &DmaMasterConfig, burst_bytes: u32) -> DmaParams {
    DmaParams {
        burst_bytes: u64::from(burst_bytes),
        latency_timer: Cycles(u64::from(m.latency_timer_cycles)),
        max_outstanding: count(m.max_outstanding),
        cache_line_bytes: u64::from(m.cache_line_bytes),
        write_invalidate: m.write_invalidate,
        supports_64bit: m.supports_64bit,
        recovery: Cycles(u64::from(m.recovery_cycles)),
    }
}

fn target(t: &TargetConfig) -> TargetProfile {
    TargetProfile {
        devsel: devsel(t.devsel),
        write_wait_states: Cycles(u64::from(t.write_wait_states)),
        max_write_burst_bytes: u64::from(t.max_write_burst_bytes),
        supports_64bit: t.supports_64bit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_PRESET;

    fn published() -> SystemConfig {
        SystemConfig::from_preset(DEFAULT_PRESET).expect("the default preset is valid")
    }

    /// The preset is the published system, which is what pci-model's defaults describe,
    /// except the values the preset calibrates where pci-model keeps its bottom-up or
    /// pure-PCI values: the bridge's DMA read latency (500 ns, fitted to the paper's peak
    /// bandwidth), its CPU-read host side (150 ns) and the masters' recovery clocks.
    #[test]
    fn the_preset_maps_onto_the_model_defaults() {
        let c = published();
        for kind in [PciBusKind::System, PciBusKind::Local] {
            assert_eq!(c.pci_bus_params(kind).unwrap(), BusParams::default());
            let dma = c.dma_params(kind);
            assert_eq!(
                DmaParams {
                    recovery: DmaParams::default().recovery,
                    ..dma
                },
                DmaParams::default()
            );
        }
        assert_eq!(c.dma_params(PciBusKind::System).recovery, Cycles(10));
        assert_eq!(c.dma_params(PciBusKind::Local).recovery, Cycles(19));
        let bridge = c.host_bridge_params();
        assert_eq!(
            bridge.memory_read_latency,
            sim_kernel::Duration::from_ns(455)
        );
        assert_eq!(bridge.cpu_read_latency, sim_kernel::Duration::from_ns(229));
        assert_eq!(
            BridgeParams {
                memory_read_latency: BridgeParams::default().memory_read_latency,
                cpu_read_latency: BridgeParams::default().cpu_read_latency,
                ..bridge
            },
            BridgeParams::default()
        );
        assert_eq!(c.card_target_profile(), TargetProfile::default());
        assert_eq!(c.local_target(), (TargetProfile::default(), Cycles(2)));
        assert_eq!(c.host_memory_bytes(), 256 << 20);
        for kind in [PciBusKind::System, PciBusKind::Local] {
            c.dma_params(kind).validate().unwrap();
        }
        c.host_bridge_params().validate().unwrap();
    }

    #[test]
    fn overrides_reach_the_model() {
        let sets = [
            "pci.system.width_bits=64",
            "pci.system.clock_mhz=66",
            "pci.system.park=none",
            "pci.local.burst_bytes=256",
            "pci.bridge.read_mode=wait-states",
            "pci.bridge.memory_read_latency_ns=90",
            "card.dma.max_outstanding=1",
            "mac.dma.write_invalidate=true",
            "card.pci_target.devsel=fast",
            "card.local_target.read_latency_core_clocks=3",
            "card.core_clock_mhz=66",
        ];
        let c = SystemConfig::load(&crate::config::ConfigSource::default(), &sets).unwrap();
        let sys = c.pci_bus_params(PciBusKind::System).unwrap();
        assert_eq!(
            (sys.width, sys.clock_mhz, sys.park),
            (BusWidth::W64, 66.0, ParkPolicy::None)
        );
        assert!((sys.ceiling_mb_s() - 528.0).abs() < 0.1);
        assert_eq!(c.dma_params(PciBusKind::Local).burst_bytes, 256);
        assert_eq!(c.dma_params(PciBusKind::System).max_outstanding, 1);
        assert!(c.dma_params(PciBusKind::Local).write_invalidate);
        let b = c.host_bridge_params();
        assert_eq!(b.read_mode, pci_model::ReadMode::WaitStates);
        assert_eq!(b.memory_read_latency, Duration::from_ns(90));
        assert_eq!(c.card_target_profile().devsel, DevselSpeed::Fast);
        // 3 core clocks at 66 MHz (15152 ps) = 45456 ps: 2 local clocks of 30303 ps.
        assert_eq!(c.local_target().1, Cycles(2));
    }
}
