//! The World of a whole simulated system: every component of every node, the message
//! type `Msg` they exchange, and the routing of each delivered message to its handler
//! with the node's physical storage (host memory, card buffer RAM) passed in. The local
//! bus gets the buffer RAM too: it answers the DP83820's reads of it itself in untraced
//! fast stepping (`pci_model::ram_fold`); there it is also lent the DP83820's bus side,
//! kept in the node's storage, whose completions it runs where nothing reaches it first
//! (`pci_model::FoldedMaster`).
//!
//! The World is a [`sim_kernel::Wiring`]: this file only says which message kinds each
//! component takes, with which storage. A message of the wrong kind for its target is a
//! wiring bug, not an input: the wiring counts it (`misrouted()`, the first ones in full)
//! and traces an error, and the run fails; it is never silently lost.

use gige_mac::dp83820::{Dp83820Bus, Dp83820Mac};
use gige_mac::gec::Gec;
use gige_mac::switch::Switch;
use gige_mac::{BufferRam, MacMsg};
use host_driver::{HostCpu, HostMsg};
use nic_model::att::{AttManager, HostTablePort};
use nic_model::engine::Engine;
use nic_model::NicMsg;
use pci_model::{DmaMaster, FoldedMaster, HostMemory, PciBus, PciMsg};
use sim_kernel::{ComponentId, Ctx, Part, Wiring};

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
    /// The DMA master's place when it runs inside the system bus (untraced fast
    /// stepping, `PciBus::fold_dma_master`): it takes no message.
    FoldedDma(usize),
    /// The VIA protocol engine (doorbells, VI manager, TX/RX paths, BAR0 target).
    Engine(usize, Box<Engine>),
    /// The ATT manager and card SDRAM.
    Att(usize, Box<AttManager>),
    /// The GEC (FPGA side of the local bus); it lives in its node's storage
    /// ([`NodeStore::gec`]), where the engine's event may hand it an input
    /// (`Gec::take_engine_input`).
    Gec(usize),
    /// The card's local PCI bus.
    LocalBus(usize, Box<PciBus>),
    /// The DP83820, bus side.
    MacBus(usize, Box<Dp83820Bus>),
    /// The DP83820 bus side's place when it lives in its node's storage, lent to the
    /// local bus that runs its completions (untraced fast stepping,
    /// `PciBus::fold_master_completions`); its messages go to it there.
    FoldedMacBus(usize),
    /// The DP83820, MAC (GMII) side.
    MacSide(usize, Box<Dp83820Mac>),
    /// The host-memory ATT's table port.
    AttPort(usize, Box<HostTablePort>),
    /// The gigabit switch every node's DP83820 is cabled to (`topology.switch`).
    Switch(Box<Switch>),
}

/// The physical storage of one node.
pub struct NodeStore {
    /// Host DRAM.
    pub mem: HostMemory,
    /// The card's buffer RAM.
    pub ram: BufferRam,
    /// The DP83820's bus side, when the local bus runs its completions
    /// ([`Comp::FoldedMacBus`]).
    pub mac_bus: Option<Box<Dp83820Bus>>,
    /// The GEC ([`Comp::Gec`]).
    pub gec: Box<Gec>,
    /// The GEC's component id.
    pub gec_id: ComponentId,
}

impl NodeStore {
    /// The buffer RAM for the handler of the event `ctx` delivers: told that event's key,
    /// so that the writes the local bus stored for earlier places are in (the GEC write
    /// fold) and its writes keep the bytes of the bus's pending samples (the GEC read
    /// fold, `pci_model::ram_fold`).
    fn ram_in<M>(&mut self, ctx: &Ctx<'_, M>) -> &mut BufferRam {
        self.ram.set_event(ctx.event_key());
        &mut self.ram
    }

    /// The GEC and the buffer RAM for the handler of the GEC's event `ctx` delivers (the
    /// RAM told that event's key, as in [`NodeStore::ram_in`]).
    fn gec_in<M>(&mut self, ctx: &Ctx<'_, M>) -> (&mut Gec, &mut BufferRam) {
        self.ram.set_event(ctx.event_key());
        (&mut self.gec, &mut self.ram)
    }

    /// Hands the GEC the inputs the engine's event placed instead of sending them
    /// (`Engine::set_gec_inputs_placed`, `Gec::take_engine_input`), in the order sent.
    #[inline]
    fn hand_gec_inputs<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        e: &mut Engine,
        ctx: &mut Ctx<'_, M>,
    ) {
        let inputs = e.gec_inputs();
        if inputs.is_empty() {
            return;
        }
        for (place, msg) in inputs.drain(..) {
            self.gec.take_engine_input(self.gec_id, place, msg, ctx);
        }
    }
}

/// All components and storage, by [`ComponentId`]: the system's [`Wiring`] (counting
/// misroutes: a run fails on any, `RunError::Misrouted`).
pub type SystemWorld = Wiring<Comp, Vec<NodeStore>>;

impl Part<Msg, Vec<NodeStore>> for Comp {
    #[inline(always)]
    fn take(
        &mut self,
        msg: Msg,
        ctx: &mut Ctx<'_, Msg>,
        nodes: &mut Vec<NodeStore>,
    ) -> Option<Msg> {
        match (self, msg) {
            (Comp::Cpu(n, c), Msg::Pci(m)) => c.on_pci(m, ctx, &mut nodes[*n].mem),
            (Comp::Cpu(n, c), Msg::Host(m)) => c.on_host(m, ctx, &mut nodes[*n].mem),
            (Comp::SystemBus(n, b), Msg::Pci(m)) => b.handle(m, ctx, Some(&mut nodes[*n].mem)),
            (Comp::LocalBus(n, b), Msg::Pci(m)) => {
                let node = &mut nodes[*n];
                let master = node
                    .mac_bus
                    .as_deref_mut()
                    .map(|d| d as &mut dyn FoldedMaster<Msg>);
                b.handle_local(m, ctx, &mut node.ram, master);
            }
            (Comp::Dma(_, d), Msg::Pci(m)) => d.handle(m, ctx),
            (Comp::Att(_, a), Msg::Nic(m)) => a.handle(m, ctx),
            (Comp::Engine(n, e), m) => {
                let node = &mut nodes[*n];
                match m {
                    Msg::Pci(m) => e.on_pci(m, ctx, node.ram_in(ctx)),
                    Msg::Nic(m) => e.on_nic(m, ctx, node.ram_in(ctx)),
                    Msg::Mac(m) => e.on_mac(m, ctx, node.ram_in(ctx)),
                    m @ Msg::Host(_) => return Some(m),
                }
                node.hand_gec_inputs(e, ctx);
            }
            (Comp::Gec(n), Msg::Mac(m)) => {
                let (gec, ram) = nodes[*n].gec_in(ctx);
                gec.handle_mac(m, ctx, ram);
            }
            (Comp::Gec(n), Msg::Pci(m)) => {
                let (gec, ram) = nodes[*n].gec_in(ctx);
                gec.handle_pci(m, ctx, ram);
            }
            (Comp::MacBus(_, d), Msg::Pci(m)) => d.handle_pci(m, ctx),
            (Comp::MacBus(_, d), Msg::Mac(m)) => d.handle_mac(m, ctx),
            (Comp::FoldedMacBus(n), Msg::Pci(m)) => match nodes[*n].mac_bus.as_deref_mut() {
                Some(d) => d.handle_pci(m, ctx),
                None => return Some(Msg::Pci(m)),
            },
            (Comp::FoldedMacBus(n), Msg::Mac(m)) => match nodes[*n].mac_bus.as_deref_mut() {
                Some(d) => d.handle_mac(m, ctx),
                None => return Some(Msg::Mac(m)),
            },
            (Comp::AttPort(_, p), Msg::Nic(m)) => p.on_nic(m, ctx),
            (Comp::AttPort(_, p), Msg::Pci(m)) => p.on_pci(m, ctx),
            (Comp::MacSide(_, d), Msg::Mac(m)) => d.handle(m, ctx),
            (Comp::Switch(s), Msg::Mac(m)) => s.handle(m, ctx),
            (_, m) => return Some(m),
        }
        None
    }
}
