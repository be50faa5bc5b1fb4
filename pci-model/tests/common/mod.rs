//! A small system builder for the integration tests: one bus (with or without the host
//! bridge), host memory, and whatever masters, targets and probes a test needs.

#![allow(dead_code)]

use pci_model::{
    BridgeParams, BusParams, DmaMaster, DmaParams, DmaStats, HostMemory, MasterConfig, MasterId,
    Node, PciBus, PciMsg, PciParts, PciWorld, Probe, SimpleTarget, TargetProfile, TenureEnd,
    TransactionDone,
};
use sim_kernel::{Bytes, ClockDomain, ComponentId, Cycles, DomainId, Kernel, OnMisroute, Time};

/// One 33 MHz PCI clock [ps].
pub const T: u64 = 30_303;

/// Edge `k` of the 33 MHz PCI domain.
pub fn edge(k: u64) -> Time {
    Time(k * T)
}

pub struct Sys {
    pub k: Kernel<PciMsg>,
    pub w: PciWorld,
    pub bus: ComponentId,
    pub pci: DomainId,
    pub cpu: DomainId,
    pub bridge_master: Option<MasterId>,
}

impl Sys {
    /// A bus (id 0) in domain `pci`, plus an 800 MHz CPU domain; the host bridge is
    /// attached when `bridge` is given.
    pub fn new(bus: BusParams, bridge: Option<BridgeParams>, mem_bytes: u64, trace: bool) -> Self {
        let mut k = Kernel::new(trace);
        let pci = k.add_domain(bus.clock_domain("pci").unwrap());
        let cpu = k.add_domain(ClockDomain::from_mhz("cpu", 800.0).unwrap());
        let bus_id = k.add_component("pci.bus", pci);
        let mut b = PciBus::new(bus).unwrap();
        b.set_tenure_log(true);
        let bridge_master = bridge.map(|p| b.attach_host_bridge(p, mem_bytes).unwrap());
        let w = PciWorld::of(
            vec![Node::Bus(Box::new(b))],
            HostMemory::new(Bytes(mem_bytes), 7).unwrap(),
            OnMisroute::Panic,
        );
        Self {
            k,
            w,
            bus: bus_id,
            pci,
            cpu,
            bridge_master,
        }
    }

    /// The default 32-bit 33 MHz bus with the default host bridge, 1 MiB of host memory,
    /// tracing on.
    pub fn with_bridge() -> Self {
        Self::new(
            BusParams::default(),
            Some(BridgeParams::default()),
            1 << 20,
            true,
        )
    }

    pub fn bus(&self) -> &PciBus {
        self.w.bus(self.bus).unwrap()
    }

    fn add(&mut self, name: &str, domain: DomainId, node: Node) -> ComponentId {
        self.w.add(&mut self.k, name, domain, node)
    }

    /// A recorder in the PCI domain (`cpu`: in the CPU domain).
    pub fn probe(&mut self, name: &str, cpu: bool) -> ComponentId {
        let d = if cpu { self.cpu } else { self.pci };
        self.add(name, d, Node::Probe(Probe::default()))
    }

    /// A recorder registered as a bus master with latency timer `lt`.
    pub fn master(&mut self, name: &str, lt: u64) -> (ComponentId, MasterId) {
        let id = self.probe(name, false);
        let m = self
            .w
            .bus_mut(self.bus)
            .unwrap()
            .add_master(MasterConfig {
                name: name.into(),
                component: id,
                latency_timer: Cycles(lt),
                supports_64bit: true,
                recovery: Cycles(0),
            })
            .unwrap();
        (id, m)
    }

    /// A simple target for `[base, base + size)` in the PCI domain.
    pub fn device(
        &mut self,
        base: u64,
        size: usize,
        read_latency: u64,
        profile: TargetProfile,
    ) -> ComponentId {
        let bus = self.bus;
        let id = self.add(
            "device",
            self.pci,
            Node::Device(SimpleTarget::new(bus, base, size, Cycles(read_latency), 0)),
        );
        self.w
            .bus_mut(bus)
            .unwrap()
            .add_device_target(base, size as u64, id, profile)
            .unwrap();
        id
    }

    /// A DMA master in the PCI domain.
    pub fn dma(&mut self, params: DmaParams) -> (ComponentId, MasterId) {
        let bus = self.bus;
        let next = ComponentId(u32::try_from(self.w.len()).unwrap());
        let width = self.bus().params().width;
        let m = self
            .w
            .bus_mut(bus)
            .unwrap()
            .add_master(DmaMaster::master_config("dma", next, &params))
            .unwrap();
        let id = self.add(
            "dma",
            self.pci,
            Node::Dma(DmaMaster::new(params, bus, m, width)),
        );
        (id, m)
    }

    /// The counters of the DMA master at `id` (made by [`Sys::dma`]).
    pub fn dma_stats(&self, id: ComponentId) -> &DmaStats {
        match self.w.get(id) {
            Some(Node::Dma(d)) => d.stats(),
            _ => panic!("no DMA master at {id:?}"),
        }
    }

    /// A DMA master folded into the bus (`PciBus::fold_dma_master`): its `DmaStart`s go
    /// to the bus. Returns the id of a probe in its place (registered as the master's
    /// component; it must receive nothing) and its master id.
    pub fn dma_folded(&mut self, params: DmaParams) -> (ComponentId, MasterId) {
        let bus = self.bus;
        let width = self.bus().params().width;
        let id = self.probe("dma", false);
        let b = self.w.bus_mut(bus).unwrap();
        let m = b
            .add_master(DmaMaster::master_config("dma", id, &params))
            .unwrap();
        b.fold_dma_master(DmaMaster::new(params, bus, m, width))
            .unwrap();
        (id, m)
    }

    /// Settles the bus where per-clock stepping stands after a run stopped at `until`
    /// (`PciBus::settle`), as a system's run end does.
    pub fn settle(&mut self, until: Time) {
        let bus = self.bus;
        let (mut parts, mem) = self.w.parts_and_store_mut();
        if let Some((_, Node::Bus(b))) = parts.find(|(id, _)| *id == bus) {
            b.settle(&mut self.k, bus, until, Some(mem));
        }
    }

    pub fn received(&self, id: ComponentId) -> &[(Time, PciMsg)] {
        &self.w.probe(id).unwrap().received
    }

    /// (time, completion) of every `TransactionDone` probe `id` received.
    pub fn dones(&self, id: ComponentId) -> Vec<(Time, TransactionDone)> {
        self.received(id)
            .iter()
            .filter_map(|(t, m)| match m {
                PciMsg::TransactionDone(d) => Some((*t, d.clone())),
                _ => None,
            })
            .collect()
    }

    /// (address clock, first data clock, last clock, end) of every logged transaction.
    pub fn ends(&self) -> Vec<(u64, Option<u64>, u64, TenureEnd)> {
        self.bus()
            .tenure_log()
            .iter()
            .map(|r| (r.address_clock, r.first_data_clock, r.last_clock, r.end))
            .collect()
    }

    /// What every probe received, in the order of registration.
    pub fn probe_messages(&self) -> Vec<Vec<(Time, PciMsg)>> {
        self.w
            .iter()
            .filter_map(|(_, n)| match n {
                Node::Probe(p) => Some(p.received.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn run(&mut self) {
        self.k.run_to_idle(&mut self.w);
    }

    /// (time, new phase) of every bus phase change.
    pub fn phases(&self) -> Vec<(Time, &'static str)> {
        self.k
            .trace()
            .transitions()
            .iter()
            .filter(|t| t.component == self.bus)
            .map(|t| (t.time, t.to))
            .collect()
    }
}

/// A kernel for a test's own message type with a bus's PCI domain (`BusParams` with
/// `stepping`, returned) and a core domain of `core_mhz`, and the components `parts`
/// (name, whether in the core domain) added in order as components 0, 1, ...
pub fn pci_and_core<M>(
    stepping: pci_model::Stepping,
    core_mhz: f64,
    parts: &[(&str, bool)],
) -> (Kernel<M>, BusParams) {
    let params = BusParams {
        stepping,
        ..BusParams::default()
    };
    let mut k = Kernel::new(false);
    let pci = k.add_domain(params.clock_domain("pci").unwrap());
    let core = k.add_domain(ClockDomain::from_mhz("core", core_mhz).unwrap());
    for (i, &(name, in_core)) in parts.iter().enumerate() {
        let id = k.add_component(name, if in_core { core } else { pci });
        assert_eq!(id, ComponentId(u32::try_from(i).unwrap()));
    }
    (k, params)
}
