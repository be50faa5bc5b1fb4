//! A two-node system for the engine tests: per node a system PCI bus with its host
//! bridge and host memory, the card's DMA master, ATT manager (card SDRAM), VIA engine,
//! buffer RAM and a CPU probe; between the two cards a fake GEC that copies each frame
//! from one engine's TX buffer into the other engine's RX buffer after a wire time (the
//! real GEC and DP83820 are built elsewhere). The host is driven through the card's BAR
//! registers with `CpuWrite` / `CpuRead` posted to the bus.

#![allow(dead_code)]

mod host;

pub use host::*;

use gige_mac::{BufferLayout, BufferRam, MacMsg};
use nic_model::att::{AttManager, AttParams};
use nic_model::engine::{EngineParams, EnginePorts};
use nic_model::{Engine, NicMsg};
use pci_model::{
    BridgeParams, BusParams, DmaMaster, DmaParams, HostMemory, PageTable, PciBus, PciMsg,
    TargetProfile, TxnStatus,
};
use sim_kernel::{
    Bytes, ClockDomain, ComponentId, Ctx, Duration, Kernel, MsgId, OnMisroute, Part, Time, Wiring,
};
use std::collections::{BTreeSet, VecDeque};
use via_abi::bar;
use via_abi::MacAddr;

/// The test system's message type.
#[derive(Clone, Debug)]
pub enum Msg {
    Pci(PciMsg),
    Nic(NicMsg),
    Mac(MacMsg),
    /// Fake GEC: a frame reaches the receiving GEC.
    Deliver {
        bytes: Vec<u8>,
        msg: MsgId,
    },
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

pub const BAR: u64 = 0xE000_0000;
pub const MEM: u64 = 64 << 20;

/// Component ids of one node.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    pub bus: ComponentId,
    pub dma: ComponentId,
    pub engine: ComponentId,
    pub att: ComponentId,
    pub cpu: ComponentId,
    pub gec: ComponentId,
}

pub struct Node {
    pub bus: PciBus,
    pub dma: DmaMaster,
    pub engine: Engine,
    pub att: AttManager,
    pub mem: HostMemory,
    pub ram: BufferRam,
    pub cpu: Vec<(Time, PciMsg)>,
    pub pt: PageTable,
    pub ids: Ids,
    pub gec: FakeGec,
}

/// The fake GEC of one card: it serialises that card's frames on the wire and delivers
/// them into the other card's RX buffers in ring order.
pub struct FakeGec {
    pub peer_gec: ComponentId,
    pub tx_free_at: Time,
    pub rx_busy: Vec<bool>,
    pub rx_next: usize,
    pub waiting: VecDeque<(Vec<u8>, MsgId)>,
    /// Every frame sent by this card: (handoff time, bytes).
    pub sent: Vec<(Time, Vec<u8>)>,
    /// Extra latency from the end of a frame on the wire to its delivery.
    pub latency: Duration,
    /// Frames to lose on the wire, by their index in `sent` (the transmit still
    /// completes well: the sender never knows).
    pub lose: BTreeSet<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Bus,
    Dma,
    Engine,
    Att,
    Cpu,
    Gec,
}

/// Which component of which node an id is: the parts of the wiring (the components
/// themselves live in their [`Node`], the wiring's store, because the handlers of one
/// node share its memories).
#[derive(Clone, Copy, Debug)]
pub struct At(usize, Role);

impl Part<Msg, Vec<Node>> for At {
    fn take(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>, nodes: &mut Vec<Node>) -> Option<Msg> {
        let n = &mut nodes[self.0];
        match (self.1, msg) {
            (Role::Bus, Msg::Pci(m)) => n.bus.handle(m, ctx, Some(&mut n.mem)),
            (Role::Dma, Msg::Pci(m)) => n.dma.handle(m, ctx),
            (Role::Engine, Msg::Pci(m)) => n.engine.on_pci(m, ctx, &mut n.ram),
            (Role::Engine, Msg::Nic(m)) => n.engine.on_nic(m, ctx, &mut n.ram),
            (Role::Engine, Msg::Mac(m)) => n.engine.on_mac(m, ctx, &mut n.ram),
            (Role::Att, Msg::Nic(m)) => n.att.handle(m, ctx),
            (Role::Cpu, Msg::Pci(m)) => n.cpu.push((ctx.now(), m)),
            (Role::Gec, m) => gec_handle(n, m, ctx),
            (_, m) => return Some(m),
        }
        None
    }
}

/// The two nodes (strict wiring: a message of the wrong kind fails the test).
pub type Two = Wiring<At, Vec<Node>>;

fn gec_handle(n: &mut Node, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
    let engine = n.ids.engine;
    match msg {
        Msg::Mac(MacMsg::GecTransmit { slot, len, msg }) => {
            let addr = n.ram.layout().tx_buffer(slot).expect("slot");
            let mut bytes = n.ram.read_vec(addr, u64::from(len)).expect("frame");
            let lost = n.gec.lose.contains(&n.gec.sent.len());
            n.gec.sent.push((ctx.now(), bytes.clone()));
            if bytes.len() < 60 {
                bytes.resize(60, 0);
            }
            // Preamble + SFD + frame + FCS + inter-frame gap, 8 ns per byte.
            let wire = Duration::from_ns(8 * (8 + bytes.len() as u64 + 4 + 12));
            let start = n.gec.tx_free_at.max(ctx.now());
            let end = start + wire;
            n.gec.tx_free_at = end;
            ctx.send_at(
                engine,
                end,
                MacMsg::GecTxDone {
                    slot,
                    ok: true,
                    msg,
                }
                .into(),
            );
            if !lost {
                let peer = n.gec.peer_gec;
                ctx.send_at(peer, end + n.gec.latency, Msg::Deliver { bytes, msg });
            }
        }
        Msg::Deliver { bytes, msg } => {
            n.gec.waiting.push_back((bytes, msg));
            gec_deliver(n, ctx);
        }
        Msg::Mac(MacMsg::GecRxRelease { slot }) => {
            if let Some(b) = n.gec.rx_busy.get_mut(usize::from(slot)) {
                assert!(*b, "release of a free RX slot {slot}");
                *b = false;
            }
            gec_deliver(n, ctx);
        }
        other => panic!("fake GEC got {other:?}"),
    }
}

fn gec_deliver(n: &mut Node, ctx: &mut Ctx<'_, Msg>) {
    while !n.gec.rx_busy[n.gec.rx_next] {
        let Some((bytes, msg)) = n.gec.waiting.pop_front() else {
            return;
        };
        let slot = n.gec.rx_next;
        let s = u16::try_from(slot).unwrap();
        let addr = n.ram.layout().rx_buffer(s).unwrap();
        n.ram.write(addr, &bytes).unwrap();
        n.gec.rx_busy[slot] = true;
        n.gec.rx_next = (slot + 1) % n.gec.rx_busy.len();
        ctx.send(
            n.ids.engine,
            MacMsg::GecRxFrame {
                slot: s,
                len: bytes.len() as u32,
                msg,
            }
            .into(),
        );
    }
}

/// Knobs of the test system.
#[derive(Clone, Debug)]
pub struct Config {
    pub engine: EngineParams,
    pub layout: BufferLayout,
    pub trace: bool,
    pub gec_latency: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            engine: EngineParams::default(),
            layout: BufferLayout::default(),
            trace: false,
            gec_latency: Duration::from_ns(1000),
        }
    }
}

pub fn mac(i: usize) -> MacAddr {
    MacAddr([0x02, 0x48, 0x56, 0x49, 0x41, 1 + i as u8])
}

pub struct Sys {
    pub k: Kernel<Msg>,
    pub w: Two,
    tag: u64,
}

impl Sys {
    pub fn new(cfg: Config) -> Self {
        let mut k: Kernel<Msg> = Kernel::new(cfg.trace);
        let busp = BusParams::default();
        let pci = k.add_domain(busp.clock_domain("pci.system").unwrap());
        let core = k.add_domain(ClockDomain::from_mhz("card.core", 33.0).unwrap());
        let sdram = k.add_domain(ClockDomain::from_mhz("card.sdram", 100.0).unwrap());
        let cpu = k.add_domain(ClockDomain::from_mhz("host.cpu", 800.0).unwrap());
        let mut w = Two::new(Vec::new(), OnMisroute::Panic);
        let mut all_ids = Vec::new();
        for i in 0..2 {
            let mut add = |name: &str, d, r| w.add(&mut k, format!("n{i}.{name}"), d, At(i, r));
            all_ids.push(Ids {
                bus: add("bus", pci, Role::Bus),
                dma: add("dma", pci, Role::Dma),
                engine: add("engine", core, Role::Engine),
                att: add("att", sdram, Role::Att),
                cpu: add("cpu", cpu, Role::Cpu),
                gec: add("gec", core, Role::Gec),
            });
        }
        let mut nodes = Vec::new();
        for (i, ids) in all_ids.iter().copied().enumerate() {
            let mut bus = PciBus::new(busp.clone()).unwrap();
            bus.attach_host_bridge(BridgeParams::default(), MEM)
                .unwrap();
            let dmap = DmaParams::default();
            let m = bus
                .add_master(DmaMaster::master_config("card.dma", ids.dma, &dmap))
                .unwrap();
            bus.add_device_target(BAR, bar::BAR0_SIZE, ids.engine, TargetProfile::default())
                .unwrap();
            let dma = DmaMaster::new(dmap, ids.bus, m, busp.width);
            let mut ep = cfg.engine.clone();
            ep.bar0_base = BAR;
            ep.mac = mac(i);
            ep.msg_id_base = sim_kernel::MsgId(1 + (i as u64) * (1 << 40));
            let ports = EnginePorts {
                bus: ids.bus,
                dma: ids.dma,
                att: ids.att,
                gec: ids.gec,
            };
            let engine = Engine::new(ep, ports, &cfg.layout).unwrap();
            let att = AttManager::new(AttParams::default(), None).unwrap();
            nodes.push(Node {
                bus,
                dma,
                engine,
                att,
                mem: HostMemory::new(Bytes(MEM), 11 + i as u64).unwrap(),
                ram: BufferRam::new(cfg.layout.clone()).unwrap(),
                cpu: Vec::new(),
                pt: PageTable::new(),
                ids,
                gec: FakeGec {
                    peer_gec: all_ids[1 - i].gec,
                    tx_free_at: Time::ZERO,
                    rx_busy: vec![false; usize::from(cfg.layout.rx_slots)],
                    rx_next: 0,
                    waiting: VecDeque::new(),
                    sent: Vec::new(),
                    latency: cfg.gec_latency,
                    lose: BTreeSet::new(),
                },
            });
        }
        Self {
            k,
            w: {
                w.store = nodes;
                w
            },
            tag: 0,
        }
    }

    pub fn node(&self, i: usize) -> &Node {
        &self.w.store[i]
    }

    pub fn engine(&self, i: usize) -> &Engine {
        &self.w.store[i].engine
    }

    pub fn run(&mut self) {
        self.k.run_to_idle(&mut self.w);
    }

    /// Posts a CPU write of `data` at BAR offset `off` of node `i` (not run).
    pub fn post_write(&mut self, i: usize, off: u64, data: &[u8]) {
        self.tag += 1;
        let ids = self.w.store[i].ids;
        let now = self.k.now();
        self.k.post(
            ids.bus,
            now,
            PciMsg::CpuWrite {
                tag: self.tag,
                addr: BAR + off,
                data: data.to_vec(),
                reply_to: ids.cpu,
            }
            .into(),
        );
    }

    pub fn write_reg(&mut self, i: usize, off: u64, v: u32) {
        self.post_write(i, off, &v.to_le_bytes());
        self.run();
    }

    pub fn read_reg(&mut self, i: usize, off: u64) -> u32 {
        self.tag += 1;
        let tag = self.tag;
        let ids = self.w.store[i].ids;
        let now = self.k.now();
        self.k.post(
            ids.bus,
            now,
            PciMsg::CpuRead {
                tag,
                addr: BAR + off,
                len: 4,
                reply_to: ids.cpu,
            }
            .into(),
        );
        self.run();
        let got = self.w.store[i].cpu.iter().rev().find_map(|(_, m)| match m {
            PciMsg::CpuReadData {
                tag: t,
                data,
                status,
            } if *t == tag => {
                assert_eq!(*status, TxnStatus::Ok);
                Some(u32::from_le_bytes(data[..4].try_into().unwrap()))
            }
            _ => None,
        });
        got.expect("read answered")
    }
}
