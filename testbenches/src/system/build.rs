//! Builds a [`System`] from a [`SystemConfig`]: clock domains, every component of every
//! node with its ports, the buses' masters and targets, the links between the nodes.
//!
//! Component ids are handed out in a fixed order per node (see [`NodeIds`]), so every
//! component can be given its peers' ids before any of them exists. Parameters the config
//! does not carry yet come from each crate's `Default`, whose doc comments give their
//! sources.

use super::world::{Comp, Msg, NodeStore, SystemWorld};
use crate::config::{feasible, AttLocation, PciBusKind, SwitchKind, SystemConfig};
use gige_mac::dp83820::{regs, Dp83820Bus, Dp83820Mac};
use gige_mac::gec::Gec;
use gige_mac::{
    BufferLayout, BufferRam, GigeParams, Link, MacMsg, PortIndex, WireFaultStats, WireFaults,
};
use host_driver::{HostCpu, HostCpuParams, HostMsg};
use nic_model::att::{AttManager, HostTablePort};
use nic_model::engine::{Engine, EngineParams, EnginePorts};
use pci_model::{DmaMaster, HostMemory, PciBus};
use sim_kernel::{Bytes, ClockDomain, ComponentId, Cycles, Kernel, OnMisroute, Time};
use via_abi::bar::BAR0_SIZE;
use via_abi::MacAddr;

/// Why a system could not be built (a config the models refuse).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A model refused its parameters.
    #[error("{part}: {reason}")]
    Model {
        /// Which part (e.g. `pci.system`).
        part: &'static str,
        /// The model's words.
        reason: String,
    },
}

fn model<E: std::fmt::Display>(part: &'static str) -> impl FnOnce(E) -> BuildError {
    move |e| BuildError::Model {
        part,
        reason: e.to_string(),
    }
}

/// The component ids of one node, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeIds {
    /// Host CPU (`host.cpu`).
    pub cpu: ComponentId,
    /// System PCI bus with the host bridge (`pci.system`).
    pub system_bus: ComponentId,
    /// The card's DMA master (`pci.system`).
    pub dma: ComponentId,
    /// The VIA engine (`card.core`).
    pub engine: ComponentId,
    /// The ATT manager (`card.sdram`).
    pub att: ComponentId,
    /// The GEC (`card.core`).
    pub gec: ComponentId,
    /// The local PCI bus (`pci.local`).
    pub local_bus: ComponentId,
    /// DP83820 bus side (`pci.local`).
    pub mac_bus: ComponentId,
    /// DP83820 MAC side (`gmii`).
    pub mac_side: ComponentId,
    /// The host-memory ATT's table port (`pci.system`; idle when the ATT is on the card).
    pub att_port: ComponentId,
}

impl NodeIds {
    /// Every component of the node.
    #[must_use]
    pub fn components(&self) -> [ComponentId; 10] {
        [
            self.cpu,
            self.system_bus,
            self.dma,
            self.engine,
            self.att,
            self.gec,
            self.local_bus,
            self.mac_bus,
            self.mac_side,
            self.att_port,
        ]
    }
}

/// A built system: the kernel and the world it runs.
pub struct System {
    /// The event kernel.
    pub kernel: Kernel<Msg>,
    /// Components and storage.
    pub world: SystemWorld,
    /// Ids per node.
    pub nodes: Vec<NodeIds>,
    /// MAC address per node.
    pub macs: Vec<MacAddr>,
}

/// The MAC address of node `n`: locally administered `02:48:56:49:41:nn` ("HVIA").
#[must_use]
pub fn node_mac(n: usize) -> MacAddr {
    #[allow(clippy::cast_possible_truncation)]
    MacAddr([0x02, 0x48, 0x56, 0x49, 0x41, (n as u8).wrapping_add(1)])
}

fn domain(name: &str, mhz: f64) -> Result<ClockDomain, BuildError> {
    ClockDomain::from_mhz(name, mhz).map_err(model("clock"))
}

impl System {
    /// Builds the two-node back-to-back system `cfg` describes, tracing if `trace`.
    ///
    /// # Errors
    /// Parameters a model refuses.
    pub fn build(cfg: &SystemConfig, trace: bool) -> Result<Self, BuildError> {
        let mut k: Kernel<Msg> = Kernel::new(trace);
        let cpu_d = k.add_domain(domain("host.cpu", cfg.host.cpu_clock_mhz)?);
        let sys_params = cfg
            .pci_bus_params(PciBusKind::System)
            .map_err(model("pci.system"))?;
        let local_params = cfg
            .pci_bus_params(PciBusKind::Local)
            .map_err(model("pci.local"))?;
        let pci_d = k.add_domain(
            sys_params
                .clock_domain("pci.system")
                .map_err(model("pci.system"))?,
        );
        let core_d = k.add_domain(domain("card.core", cfg.card.core_clock_mhz)?);
        let sdram_d = k.add_domain(domain("card.sdram", cfg.card.sdram_clock_mhz)?);
        let local_d = k.add_domain(
            local_params
                .clock_domain("pci.local")
                .map_err(model("pci.local"))?,
        );
        let gmii_d = k.add_domain(domain("gmii", cfg.wire.gmii_clock_mhz)?);

        let count = usize::try_from(cfg.topology.nodes).map_err(model("topology.nodes"))?;
        let switched = cfg.topology.switch != SwitchKind::None;
        let mut ids = Vec::new();
        for n in 0..count {
            ids.push(NodeIds {
                cpu: k.add_component(format!("n{n}.host.cpu"), cpu_d),
                system_bus: k.add_component(format!("n{n}.pci.system"), pci_d),
                dma: k.add_component(format!("n{n}.card.dma"), pci_d),
                engine: k.add_component(format!("n{n}.card.engine"), core_d),
                att: k.add_component(format!("n{n}.card.att"), sdram_d),
                gec: k.add_component(format!("n{n}.card.gec"), core_d),
                local_bus: k.add_component(format!("n{n}.pci.local"), local_d),
                mac_bus: k.add_component(format!("n{n}.dp83820.bus"), local_d),
                mac_side: k.add_component(format!("n{n}.dp83820.mac"), gmii_d),
                att_port: k.add_component(format!("n{n}.card.att_port"), pci_d),
            });
        }

        // The switch, after every node's components (their ids are the nodes' order).
        let switch_id = switched.then(|| k.add_component("switch", gmii_d));

        let layout = BufferLayout {
            tx_slots: u16::try_from(cfg.card.buffers.tx_slots)
                .map_err(model("card.buffers.tx_slots"))?,
            rx_slots: u16::try_from(cfg.card.buffers.rx_slots)
                .map_err(model("card.buffers.rx_slots"))?,
            slot_bytes: u64::from(feasible::slot_bytes(cfg)),
            ..BufferLayout::default()
        };
        let ec = &cfg.card.engine;
        let mut gige = GigeParams::default();
        gige.link.cable.length = gige_mac::Millimetres::from_metres(cfg.wire.cable_m)
            .ok_or_else(|| model::<&str>("wire.cable_m")("not a usable length"))?;
        gige.wire.max_frame_len_no_fcs = cfg.wire.mtu_bytes as usize;
        gige.wire.min_ifg_bytes = cfg.wire.min_ifg_bytes;
        let link = Link::new(gige.link);
        let gec_params = cfg.gec_params();
        let mac_params = cfg.mac_params();
        let mut world = SystemWorld::new(Vec::with_capacity(count), OnMisroute::Count);
        let mut macs = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            let far = ids[(n + 1) % count];
            let mac = node_mac(n);
            macs.push(mac);

            // System bus: host bridge, the card's DMA master, the card's BAR0 target.
            let engine_params = EngineParams {
                mac,
                msg_id_base: sim_kernel::MsgId((n as u64) << 40),
                doorbell_decode_cycles: Cycles(u64::from(ec.doorbell_decode_cycles)),
                descriptor_decode_cycles: Cycles(u64::from(ec.descriptor_decode_cycles)),
                check_recv_on_post: ec.check_recv_on_post,
                follow_read_links: ec.follow_read_links,
                fragment_payload: feasible::fragment_payload(cfg),
                recv_descriptor_per_frame: ec.recv_descriptor_per_frame,
                header_build_cycles: Cycles(u64::from(ec.header_build_cycles)),
                handoff_cycles: Cycles(u64::from(ec.handoff_cycles)),
                header_check_cycles: Cycles(u64::from(ec.header_check_cycles)),
                send_fifo_bytes: Bytes(u64::from(ec.send_fifo_bytes)),
                dma_chunk_bytes: Bytes(u64::from(cfg.pci.system.burst_bytes)),
                recv_fifo_bytes: Bytes(u64::from(ec.recv_fifo_bytes)),
                retx_timeout_cycles: Cycles(u64::from(ec.retx_timeout_cycles)),
                retx_limit: ec.retx_limit,
                retx_window_frames: ec.retx_window_frames,
                rdma_read: ec.rdma_read,
                stepping: match cfg.sim.stepping {
                    crate::config::SimStepping::Fast => nic_model::engine::WordStepping::Batched,
                    crate::config::SimStepping::Exact => nic_model::engine::WordStepping::PerWord,
                },
                ..EngineParams::default()
            };
            let mut sys = PciBus::new(sys_params.clone()).map_err(model("pci.system"))?;
            let mut bridge_params = cfg.host_bridge_params();
            // `faults.pci_abort*`: DMA into the range is aborted (off: `None`).
            bridge_params.abort = cfg.pci_abort_range(n);
            sys.attach_host_bridge(bridge_params, cfg.host_memory_bytes())
                .map_err(model("pci.bridge"))?;
            // The host CPU, host memory's only other reader, settles lazily committed
            // DMA writes before each of its events (fast stepping, untraced only).
            sys.set_lazy_commits(true);
            let dma_params = cfg.dma_params(PciBusKind::System);
            let dma_master = sys
                .add_master(DmaMaster::master_config("card.dma", id.dma, &dma_params))
                .map_err(model("card.dma"))?;
            sys.add_device_target(
                engine_params.bar0_base,
                BAR0_SIZE,
                id.engine,
                cfg.card_target_profile(),
            )
            .map_err(model("card.pci_target"))?;
            let dma = DmaMaster::new(dma_params, id.system_bus, dma_master, sys_params.width);
            // Untraced fast stepping runs the DMA master inside its bus (`PciBus::
            // fold_dma_master`): no Request and TransactionDone messages between them;
            // `DmaStart` goes to the bus.
            let dma_fold = !trace && cfg.sim.stepping == crate::config::SimStepping::Fast;
            let (dma, dma_port) = if dma_fold {
                sys.fold_dma_master(dma).map_err(model("card.dma"))?;
                (None, id.system_bus)
            } else {
                (Some(dma), id.dma)
            };

            // Local bus: the GEC (master + buffer RAM target), the DP83820 (master + registers).
            let mut local = PciBus::new(local_params.clone()).map_err(model("pci.local"))?;
            let gec_master = local
                .add_master(gec_params.master_config("gec", id.gec))
                .map_err(model("card.gec"))?;
            let mac_master = local
                .add_master(mac_params.master_config("dp83820", id.mac_bus))
                .map_err(model("mac.dma"))?;
            let ram_target = local
                .add_device_target(
                    layout.base,
                    layout.size(),
                    id.gec,
                    gec_params.target.clone(),
                )
                .map_err(model("card.local_target"))?;
            // The bus answers the DP83820's reads of the buffer RAM itself when it may
            // (untraced fast stepping, `pci_model::ram_fold`).
            local
                .set_ram_backed(ram_target, gec_params.ram_backing(&layout))
                .map_err(model("card.local_target"))?;
            local
                .add_device_target(
                    gec_params.mac_regs_base,
                    regs::WINDOW_BYTES,
                    id.mac_bus,
                    mac_params.target.clone(),
                )
                .map_err(model("mac"))?;

            let cpu_params = HostCpuParams {
                bar0: engine_params.bar0_base,
                costs: cfg.cpu_costs(),
                post_reads_vi_state: cfg.host.vipl.post_reads_vi_state,
                post_flushes_doorbell: cfg.host.vipl.post_flushes_doorbell,
                post_waits_for_card: cfg.host.vipl.post_waits_for_card,
                doorbell_names_descriptor: cfg.host.vipl.doorbell_names_descriptor,
                fast_poll: cfg.sim.stepping == crate::config::SimStepping::Fast,
                ..HostCpuParams::default()
            };
            let cpu = HostCpu::new(cpu_params, id.system_bus);
            let att_params = feasible::att_params(cfg);
            let table_port = match cfg.card.att_location {
                AttLocation::Card => None,
                AttLocation::Host => Some(id.att_port),
            };
            let mut att =
                AttManager::new(att_params.clone(), table_port).map_err(model("card.att"))?;
            if let Some(flip) = cfg.att_bit_flip(n) {
                // `faults.att_flip_*` (validated: a card-SDRAM table, an entry and bit in it).
                att.schedule_bit_flip(flip)
                    .map_err(model("faults.att_flip_at_us"))?;
            }
            let ports = EnginePorts {
                bus: id.system_bus,
                dma: dma_port,
                att: id.att,
                gec: id.gec,
            };
            let mut engine =
                Engine::new(engine_params, ports, &layout).map_err(model("card.engine"))?;
            // Untraced fast stepping: the engine's transmit and release requests reach
            // the GEC in the engine's event where nothing can reach the GEC first
            // (`Gec::take_engine_input`), the same events in the same order.
            engine.set_gec_inputs_placed(dma_fold);
            let gec = Gec::new(
                gec_params.clone(),
                layout.clone(),
                id.local_bus,
                gec_master,
                id.engine,
                Some(id.mac_bus),
            );
            let mac_bus = Dp83820Bus::new(
                mac_params.clone(),
                id.local_bus,
                mac_master,
                gec_params.mac_regs_base,
                id.mac_side,
                Some(id.gec),
            );
            let mut mac_side = Dp83820Mac::new(
                &mac_params,
                &gige.wire,
                id.mac_bus,
                match switch_id {
                    #[allow(clippy::cast_possible_truncation)]
                    Some(sw) => link.attachment(sw, PortIndex(n as u16)),
                    None => link.attachment(far.mac_side, PortIndex(0)),
                },
                (n as u64) << 32,
            );
            if trace {
                // Keep the frames each MAC puts on the wire, for `--pcap`.
                mac_side.tx_mut().enable_capture();
            }
            // `[faults]` on the wire this node sends into (not installed when all off:
            // the published link takes no fault decision and no random draw).
            mac_side.tx_mut().set_faults(WireFaults::new(
                cfg.wire_fault_params(n),
                cfg.wire_fault_seed(n),
            ));

            // Registration order must match `NodeIds`.
            world.place(id.cpu, Comp::Cpu(n, Box::new(cpu)));
            world.place(id.system_bus, Comp::SystemBus(n, Box::new(sys)));
            world.place(
                id.dma,
                match dma {
                    Some(dma) => Comp::Dma(n, Box::new(dma)),
                    None => Comp::FoldedDma(n),
                },
            );
            world.place(id.engine, Comp::Engine(n, Box::new(engine)));
            // Untraced fast stepping: a translation whose SDRAM reads nothing else can
            // reach is answered without its two wake-ups (`AttManager::set_ahead`), the
            // same answers at the same instants in the same order.
            att.set_ahead(dma_fold);
            world.place(id.att, Comp::Att(n, Box::new(att)));
            world.place(id.gec, Comp::Gec(n));
            if dma_fold {
                local
                    .fold_master_completions(mac_master)
                    .map_err(model("mac.dma"))?;
            }
            world.place(id.local_bus, Comp::LocalBus(n, Box::new(local)));
            // Untraced fast stepping lets the local bus run the DP83820's completions
            // where nothing can reach it first (`pci_model::FoldedMaster`): the bus side
            // then lives in the node's storage, lent to the local bus for its events.
            let mac_bus = if dma_fold {
                world.place(id.mac_bus, Comp::FoldedMacBus(n));
                Some(Box::new(mac_bus))
            } else {
                world.place(id.mac_bus, Comp::MacBus(n, Box::new(mac_bus)));
                None
            };
            // Untraced fast stepping: a gap with nothing queued behind it ends without
            // a wake-up (`GmiiTx::set_lazy_gap`), the same events in the same order.
            mac_side.set_lazy_gap(dma_fold);
            world.place(id.mac_side, Comp::MacSide(n, Box::new(mac_side)));
            world.place(
                id.att_port,
                Comp::AttPort(n, Box::new(HostTablePort::new(dma_port))),
            );

            let seed = cfg.sim.seed ^ ((n as u64 + 1) << 48);
            let mut mem = HostMemory::new(Bytes(cfg.host_memory_bytes()), seed)
                .map_err(model("host.memory_mb"))?;
            if table_port.is_some() {
                // The kernel agent's block for the ATT: no process page may land there.
                let t = att_params.table;
                let (from, to) = (
                    u64::from(t.l1_base.min(t.l2_base)),
                    t.l1_end().max(t.l2_end()),
                );
                for pa in (from..to).step_by(4096) {
                    mem.reserve_frame(pa).map_err(model("host.memory_mb"))?;
                }
            }
            world.store.push(NodeStore {
                mem,
                ram: BufferRam::new(layout.clone()).map_err(model("card buffers"))?,
                mac_bus,
                gec: Box::new(gec),
                gec_id: id.gec,
            });
        }
        if let Some(sw) = switch_id {
            let links: Vec<_> = ids
                .iter()
                .map(|id| link.attachment(id.mac_side, PortIndex(0)))
                .collect();
            let t = &cfg.topology;
            let params = gige_mac::SwitchParams {
                forwarding_latency: sim_kernel::Duration::from_ns(u64::from(t.switch_latency_ns)),
                buffer_bytes: u64::from(t.switch_buffer_bytes),
                mode: match t.switch {
                    SwitchKind::CutThrough => gige_mac::ForwardingMode::CutThrough,
                    SwitchKind::StoreAndForward | SwitchKind::None => {
                        gige_mac::ForwardingMode::StoreAndForward
                    }
                },
                flow: gige_mac::SwitchFlowControl {
                    enabled: t.switch_flow_control,
                    high_water: u64::from(t.switch_pause_high_bytes),
                    low_water: u64::from(t.switch_pause_low_bytes),
                    pause_quanta: u16::try_from(t.switch_pause_quanta)
                        .map_err(model("topology.switch_pause_quanta"))?,
                },
                ..gige_mac::SwitchParams::default()
            };
            let switch = gige_mac::switch::Switch::new(&links, &gige.wire, &params)
                .map_err(model("topology.nodes"))?;
            world.place(sw, Comp::Switch(Box::new(switch)));
        }
        Ok(Self {
            kernel: k,
            world,
            nodes: ids,
            macs,
        })
    }

    /// The host CPU of node `n`.
    pub fn cpu_mut(&mut self, n: usize) -> Option<&mut HostCpu> {
        let id = self.nodes.get(n)?.cpu;
        match self.world.get_mut(id) {
            Some(Comp::Cpu(_, c)) => Some(c),
            _ => None,
        }
    }

    /// The host CPU of node `n`.
    #[must_use]
    pub fn cpu(&self, n: usize) -> Option<&HostCpu> {
        let id = self.nodes.get(n)?.cpu;
        match self.world.get(id) {
            Some(Comp::Cpu(_, c)) => Some(c),
            _ => None,
        }
    }

    /// The engine of node `n`.
    #[must_use]
    pub fn engine(&self, n: usize) -> Option<&Engine> {
        let id = self.nodes.get(n)?.engine;
        match self.world.get(id) {
            Some(Comp::Engine(_, e)) => Some(e),
            _ => None,
        }
    }

    /// The switch between the nodes, if `topology.switch` wires one (its port counters,
    /// transmitters, learning table).
    #[must_use]
    pub fn switch(&self) -> Option<&gige_mac::Switch> {
        self.world.iter().find_map(|(_, c)| match c {
            Comp::Switch(s) => Some(&**s),
            _ => None,
        })
    }

    /// PAUSE frames the switch sent out of its ports (pauses and resumes; 0 without a
    /// switch).
    #[must_use]
    pub fn switch_pause_frames(&self) -> u64 {
        self.switch().map_or(0, |sw| {
            (0..sw.port_count())
                .filter_map(|p| sw.port_stats(gige_mac::PortIndex(u16::try_from(p).ok()?)))
                .map(|st| st.pause_sent + st.resume_sent)
                .sum()
        })
    }

    /// The DP83820 MAC side of node `n` (its wire statistics: `stats()`, `rx()`,
    /// `tx()`).
    #[must_use]
    pub fn mac_side(&self, n: usize) -> Option<&Dp83820Mac> {
        let id = self.nodes.get(n)?.mac_side;
        match self.world.get(id) {
            Some(Comp::MacSide(_, m)) => Some(m),
            _ => None,
        }
    }

    /// What the faults did on the wire node `n` sends into (direction `n` to the other
    /// node); zeros when `[faults]` leaves that direction without faults.
    #[must_use]
    pub fn wire_faults(&self, n: usize) -> WireFaultStats {
        self.mac_side(n)
            .and_then(|m| m.tx().faults())
            .map(|f| *f.stats())
            .unwrap_or_default()
    }

    /// Starts the system: programs the DP83820s (GEC init) and starts every CPU's program.
    pub fn start(&mut self) {
        for id in self.nodes.clone() {
            self.kernel
                .post(id.gec, Time::ZERO, Msg::Mac(MacMsg::GecInit));
            self.kernel
                .post(id.cpu, Time::ZERO, Msg::Host(HostMsg::Start));
        }
    }

    /// The components that received messages of a kind they do not take, with counts
    /// (each is a wiring bug; a ping-pong run fails on any).
    #[must_use]
    pub fn wrong_inputs(&self) -> Vec<(String, u64)> {
        use super::world::Comp;
        self.world
            .iter()
            .filter_map(|(id, c)| {
                let n = match c {
                    Comp::Cpu(_, c) => c.stats().wrong_inputs,
                    Comp::SystemBus(_, b) | Comp::LocalBus(_, b) => b.stats().wrong_inputs,
                    Comp::Dma(n, _) | Comp::FoldedDma(n) => {
                        self.dma(*n).map_or(0, |d| d.stats().wrong_inputs)
                    }
                    Comp::Engine(_, e) => e.stats().wrong_inputs,
                    Comp::Att(_, a) => a.stats().wrong_inputs,
                    Comp::Gec(n) => self.gec(*n).map_or(0, |g| g.stats().wrong_inputs),
                    Comp::MacBus(_, m) => m.stats().wrong_inputs,
                    Comp::FoldedMacBus(n) => self.mac_bus(*n).map_or(0, |m| m.stats().wrong_inputs),
                    Comp::MacSide(_, m) => m.stats().wrong_inputs,
                    Comp::AttPort(..) => 0,
                    Comp::Switch(s) => s.unexpected(),
                };
                (n > 0).then(|| (self.kernel.component_name(id).to_owned(), n))
            })
            .collect()
    }
}
