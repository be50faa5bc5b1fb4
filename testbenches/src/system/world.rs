//! The World of a whole simulated system: every component of every node, the message
//! type `Msg` they exchange, and the routing of each delivered message to its handler
//! with the node's physical storage (host memory, card buffer RAM) passed in.
//!
//! A message of the wrong kind for its target is a wiring bug, not an input: it is
//! counted in [`SystemWorld::misrouted`] and logged, never silently lost.

use gige_mac::dp83820::{Dp83820Bus, Dp83820Mac};
use gige_mac::gec::Gec;
use gige_mac::{BufferRam, MacMsg};
use host_driver::{HostCpu, HostMsg};
use nic_model::att::{AttManager, HostTablePort};
use nic_model::engine::Engine;
use nic_model::NicMsg;
use pci_model::{DmaMaster, HostMemory, PciBus, PciMsg};
use sim_kernel::{ComponentId, Ctx, World};

/// Every message of the system: one variant per model crate.
#[derive(Clone, Debug)]
pub enum Msg {
    /// PCI buses, host bridge, DMA masters, device targets.
    Pci(PciMsg),
    /// The card: ATT manager, engine wake-ups.
    Nic(NicMsg),
    /// GEC, DP83820, wire.
    Mac(MacMsg),
    /// The host CPU's own wake-ups.
    Host(HostMsg),
}

impl From<PciMsg> for Msg {
    fn from(m: PciMsg) -> Self {
        Msg::Pci(m)
    }
}
impl From<NicMsg> for Msg {
    fn from(m: NicMsg) -> Self {
        Msg::Nic(m)
    }
}
impl From<MacMsg> for Msg {
    fn from(m: MacMsg) -> Self {
        Msg::Mac(m)
    }
}
impl From<HostMsg> for Msg {
    fn from(m: HostMsg) -> Self {
        Msg::Host(m)
    }
}

/// One component, and the node it belongs to (its storage).
#[allow(clippy::large_enum_variant)]
pub enum Comp {
    /// The host CPU running the node's VIPL program.
    Cpu(usize, Box<HostCpu>),
    /// The system PCI bus with the host bridge.
    SystemBus(usize, Box<PciBus>),
    /// The card's DMA master on the system bus.
    Dma(usize, Box<DmaMaster>),
    /// The VIA protocol engine (doorbells, VI manager, TX/RX paths, BAR0 target).
    Engine(usize, Box<Engine>),
    /// The ATT manager and card SDRAM.
    Att(usize, Box<AttManager>),
    /// The GEC (FPGA side of the local bus).
    Gec(usize, Box<Gec>),
    /// The card's local PCI bus.
    LocalBus(usize, Box<PciBus>),
    /// The DP83820, bus side.
    MacBus(usize, Box<Dp83820Bus>),
    /// The DP83820, MAC (GMII) side.
    MacSide(usize, Box<Dp83820Mac>),
    /// The host-memory ATT's table port.
    AttPort(usize, Box<HostTablePort>),
}

/// The physical storage of one node.
pub struct NodeStore {
    /// Host DRAM.
    pub mem: HostMemory,
    /// The card's buffer RAM.
    pub ram: BufferRam,
}

/// All components and storage, indexed by [`ComponentId`].
pub struct SystemWorld {
    /// Components in registration order (index = component id).
    pub comps: Vec<Comp>,
    /// Storage of each node.
    pub nodes: Vec<NodeStore>,
    /// Messages that reached a component that does not take their kind (wiring bugs).
    pub misrouted: u64,
}

impl SystemWorld {
    fn misroute(&mut self, to: ComponentId, what: &'static str) {
        self.misrouted += 1;
        tracing::error!(target: "system", %to, what, "message of the wrong kind for its target");
    }
}

impl World<Msg> for SystemWorld {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Some(comp) = self.comps.get_mut(to.0 as usize) else {
            self.misroute(to, "no such component");
            return;
        };
        let nodes = &mut self.nodes;
        let ok = match (comp, msg) {
            (Comp::Cpu(n, c), Msg::Pci(m)) => {
                c.on_pci(m, ctx, &mut nodes[*n].mem);
                true
            }
            (Comp::Cpu(n, c), Msg::Host(m)) => {
                c.on_host(m, ctx, &mut nodes[*n].mem);
                true
            }
            (Comp::SystemBus(n, b), Msg::Pci(m)) => {
                b.handle(m, ctx, Some(&mut nodes[*n].mem));
                true
            }
            (Comp::LocalBus(_, b), Msg::Pci(m)) => {
                b.handle(m, ctx, None);
                true
            }
            (Comp::Dma(_, d), Msg::Pci(m)) => {
                d.handle(m, ctx);
                true
            }
            (Comp::Att(_, a), Msg::Nic(m)) => {
                a.handle(m, ctx);
                true
            }
            (Comp::Engine(n, e), Msg::Pci(m)) => {
                e.on_pci(m, ctx, &mut nodes[*n].ram);
                true
            }
            (Comp::Engine(n, e), Msg::Nic(m)) => {
                e.on_nic(m, ctx, &mut nodes[*n].ram);
                true
            }
            (Comp::Engine(n, e), Msg::Mac(m)) => {
                e.on_mac(m, ctx, &mut nodes[*n].ram);
                true
            }
            (Comp::Gec(n, g), Msg::Mac(m)) => {
                g.handle_mac(m, ctx, &mut nodes[*n].ram);
                true
            }
            (Comp::Gec(n, g), Msg::Pci(m)) => {
                g.handle_pci(m, ctx, &mut nodes[*n].ram);
                true
            }
            (Comp::MacBus(_, d), Msg::Pci(m)) => {
                d.handle_pci(m, ctx);
                true
            }
            (Comp::MacBus(_, d), Msg::Mac(m)) => {
                d.handle_mac(m, ctx);
                true
            }
            (Comp::AttPort(_, p), Msg::Nic(m)) => {
                p.on_nic(m, ctx);
                true
            }
            (Comp::AttPort(_, p), Msg::Pci(m)) => {
                p.on_pci(m, ctx);
                true
            }
            (Comp::MacSide(_, d), Msg::Mac(m)) => {
                d.handle(m, ctx);
                true
            }
            _ => false,
        };
        if !ok {
            self.misroute(to, "kind");
        }
    }
}
