//! Test systems for host-driver: two nodes, each a [`HostCpu`], a PCI bus with host
//! bridge and host memory, and a FAKE card (`fake_card`) that decodes the via-abi BAR0
//! map well enough to run VIPL programs end to end. The two fake cards talk to each other
//! directly (no MAC, no wire model): the real card is nic-model's business.

#![allow(dead_code)]

pub mod fake_card;
mod fake_engine;
mod fake_types;

use fake_card::{CardMsg, FakeCard, FakeCardParams};
#[allow(unused_imports)]
pub use fake_engine::Frame as FrameOut;
use host_driver::{HostCpu, HostCpuParams, HostMsg, ProgramResult, Vipl};
use pci_model::{BridgeParams, BusParams, HostMemory, MasterConfig, PciBus, PciMsg, TargetProfile};
use sim_kernel::{
    Bytes, ClockDomain, ComponentId, Ctx, Cycles, DomainId, Kernel, OnMisroute, RunLimit, Time,
    Wiring,
};
use std::future::Future;
use via_abi::bar::BAR0_SIZE;
use via_abi::MacAddr;

/// BAR0 of every fake card [bus address].
pub const BAR0: u64 = 0xE000_0000;
/// Host memory per node \[bytes\].
pub const MEM: u64 = 64 << 20;

/// The test system's message type.
#[derive(Clone, Debug)]
pub enum TMsg {
    /// PCI.
    Pci(PciMsg),
    /// Host.
    Host(HostMsg),
    /// Between fake cards.
    Card(CardMsg),
}

impl From<PciMsg> for TMsg {
    fn from(m: PciMsg) -> Self {
        TMsg::Pci(m)
    }
}
impl From<HostMsg> for TMsg {
    fn from(m: HostMsg) -> Self {
        TMsg::Host(m)
    }
}
impl From<CardMsg> for TMsg {
    fn from(m: CardMsg) -> Self {
        TMsg::Card(m)
    }
}

/// One component of the test system, with the node it belongs to.
pub enum Part {
    Bus(usize, Box<PciBus>),
    Cpu(usize, Box<HostCpu>),
    Card(usize, Box<FakeCard>),
}

impl sim_kernel::Part<TMsg, Vec<HostMemory>> for Part {
    fn take(
        &mut self,
        msg: TMsg,
        ctx: &mut Ctx<'_, TMsg>,
        mems: &mut Vec<HostMemory>,
    ) -> Option<TMsg> {
        match (self, msg) {
            (Part::Bus(n, b), TMsg::Pci(m)) => b.handle(m, ctx, Some(&mut mems[*n])),
            (Part::Cpu(n, c), TMsg::Pci(m)) => c.on_pci(m, ctx, &mut mems[*n]),
            (Part::Cpu(n, c), TMsg::Host(m)) => c.on_host(m, ctx, &mut mems[*n]),
            (Part::Card(n, c), m) => c.handle(m, ctx, &mems[*n]),
            (_, m) => return Some(m),
        }
        None
    }
}

/// Component ids of one node.
#[derive(Clone, Copy, Debug)]
pub struct NodeIds {
    pub bus: ComponentId,
    pub cpu: ComponentId,
    pub card: ComponentId,
}

/// The test system's components and host memories (a strict wiring: a message of the
/// wrong kind fails the test).
pub type TWorld = Wiring<Part, Vec<HostMemory>>;

pub struct Sys {
    pub k: Kernel<TMsg>,
    pub w: TWorld,
    pub nodes: Vec<NodeIds>,
    pub cpu_domain: DomainId,
    pub pci_domain: DomainId,
    pub loaded: Vec<bool>,
}

/// The MAC of fake card `n`.
pub fn mac(n: usize) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0, 0x10 + n as u8])
}

impl Sys {
    /// Two nodes (`n` = 2) or one, with default parameters.
    pub fn new(n: usize, trace: bool) -> Self {
        Self::with(
            n,
            trace,
            HostCpuParams::default(),
            FakeCardParams::default(),
        )
    }

    pub fn with(
        n: usize,
        trace: bool,
        cpu_params: HostCpuParams,
        card_params: FakeCardParams,
    ) -> Self {
        let mut k = Kernel::new(trace);
        let bus_params = BusParams::default();
        let pci_domain = k.add_domain(bus_params.clock_domain("pci.system").unwrap());
        let cpu_domain = k.add_domain(ClockDomain::from_mhz("host.cpu", 800.0).unwrap());
        let mut w = TWorld::new(Vec::new(), OnMisroute::Panic);
        let mut nodes: Vec<NodeIds> = Vec::new();
        for i in 0..n {
            let bus = k.add_component(format!("host{i}.pci"), pci_domain);
            let cpu = k.add_component(format!("host{i}.cpu"), cpu_domain);
            let card = k.add_component(format!("host{i}.card"), pci_domain);
            let mut b = PciBus::new(bus_params.clone()).unwrap();
            b.attach_host_bridge(BridgeParams::default(), MEM).unwrap();
            b.add_device_target(BAR0, BAR0_SIZE, card, TargetProfile::default())
                .unwrap();
            let master = b
                .add_master(MasterConfig {
                    name: "fake-card".into(),
                    component: card,
                    latency_timer: Cycles(64),
                    supports_64bit: false,
                    recovery: Cycles(0),
                })
                .unwrap();
            w.place(bus, Part::Bus(i, Box::new(b)));
            w.place(
                cpu,
                Part::Cpu(i, Box::new(HostCpu::new(cpu_params.clone(), bus))),
            );
            w.store
                .push(HostMemory::new(Bytes(MEM), 100 + i as u64).unwrap());
            let mut p = card_params.clone();
            p.mac = mac(i);
            w.place(
                card,
                Part::Card(i, Box::new(FakeCard::new(p, bus, master, BAR0))),
            );
            nodes.push(NodeIds { bus, cpu, card });
        }
        let mut s = Self {
            k,
            w,
            nodes,
            cpu_domain,
            pci_domain,
            loaded: vec![false; n],
        };
        if n == 2 {
            let (c0, c1) = (s.nodes[0].card, s.nodes[1].card);
            s.card_mut(0).connect_peer(c1, mac(1));
            s.card_mut(1).connect_peer(c0, mac(0));
        }
        s
    }

    /// Node `n`'s CPU.
    pub fn cpu(&self, n: usize) -> &HostCpu {
        match self.w.get(self.nodes[n].cpu) {
            Some(Part::Cpu(_, c)) => c,
            _ => panic!("node {n} has no CPU"),
        }
    }

    /// Node `n`'s CPU, mutably.
    pub fn cpu_mut(&mut self, n: usize) -> &mut HostCpu {
        match self.w.get_mut(self.nodes[n].cpu) {
            Some(Part::Cpu(_, c)) => c,
            _ => panic!("node {n} has no CPU"),
        }
    }

    /// Node `n`'s bus.
    pub fn bus(&self, n: usize) -> &PciBus {
        match self.w.get(self.nodes[n].bus) {
            Some(Part::Bus(_, b)) => b,
            _ => panic!("node {n} has no bus"),
        }
    }

    /// Node `n`'s fake card.
    pub fn card(&self, n: usize) -> &FakeCard {
        match self.w.get(self.nodes[n].card) {
            Some(Part::Card(_, c)) => c,
            _ => panic!("node {n} has no card"),
        }
    }

    /// Node `n`'s fake card, mutably.
    pub fn card_mut(&mut self, n: usize) -> &mut FakeCard {
        match self.w.get_mut(self.nodes[n].card) {
            Some(Part::Card(_, c)) => c,
            _ => panic!("node {n} has no card"),
        }
    }

    /// Node `n`'s host memory.
    pub fn mem(&self, n: usize) -> &HostMemory {
        &self.w.store[n]
    }

    /// Loads a program into node `n`'s CPU and posts its start at `at`.
    pub fn load<F, Fut>(&mut self, n: usize, at: Time, make: F)
    where
        F: FnOnce(Vipl) -> Fut,
        Fut: Future<Output = ProgramResult> + 'static,
    {
        self.cpu_mut(n).load(make);
        self.loaded[n] = true;
        self.k.post(self.nodes[n].cpu, at, HostMsg::Start.into());
    }

    /// Runs until every loaded program has finished (or `limit` of simulated time).
    pub fn run(&mut self, limit: Time) {
        let mut until = self.k.now();
        loop {
            until = (until + sim_kernel::Duration::from_ns(100_000)).min(limit);
            let out = self.k.run(
                &mut self.w,
                RunLimit {
                    until,
                    max_events: u64::MAX,
                },
            );
            let done = (0..self.nodes.len()).all(|n| !self.loaded[n] || self.cpu(n).is_finished());
            if done || until >= limit || out == sim_kernel::RunOutcome::Idle {
                return;
            }
        }
    }

    /// The outcome of node `n`'s program.
    pub fn outcome(&self, n: usize) -> &ProgramResult {
        self.cpu(n).outcome().expect("program finished")
    }
}

/// What a test program records: call name and result.
pub type Log =
    std::rc::Rc<std::cell::RefCell<Vec<(&'static str, Result<(), host_driver::VipError>)>>>;

/// Records `r` (its value dropped) under `name`.
pub fn note<T>(log: &Log, name: &'static str, r: &Result<T, host_driver::VipError>) {
    log.borrow_mut()
        .push((name, r.as_ref().map(|_| ()).map_err(|e| *e)));
}

/// The recorded result of `name` (the first one).
pub fn result_of(log: &Log, name: &str) -> Result<(), host_driver::VipError> {
    log.borrow()
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name} not recorded"))
        .1
}

/// An empty report stamped now.
pub fn done(vipl: &Vipl, program: &'static str) -> ProgramResult {
    Ok(host_driver::ProgramReport {
        program,
        finished: vipl.now(),
        ..host_driver::ProgramReport::default()
    })
}

/// A page-sized buffer (64-byte aligned) registered under `ptag` with neither RDMA
/// enabled: its address and memory handle.
pub async fn registered_page(
    vipl: &mut Vipl,
    nic: host_driver::NicHandle,
    ptag: via_abi::ProtectionTag,
) -> (u64, via_abi::MemHandle) {
    let buf = vipl.malloc(4096, 64).await.unwrap();
    let a = host_driver::VipMemAttributes {
        ptag,
        enable_rdma_write: false,
        enable_rdma_read: false,
    };
    let mh = vipl.vip_register_mem(nic, buf, 4096, &a).await.unwrap();
    (buf, mh)
}

/// Opens the NIC, creates a tag and a VI (RDMA write enabled), and connects it: as the
/// responder (`wait`) or the initiator.
pub async fn connected_vi(
    vipl: &mut Vipl,
    wait: bool,
    peer: MacAddr,
) -> Result<
    (
        host_driver::NicHandle,
        via_abi::ProtectionTag,
        host_driver::ViHandle,
    ),
    host_driver::VipError,
> {
    use host_driver::{NetAddress, Timeout, ViAttributes, VipError};
    let nic = vipl.vip_open_nic("/dev/hvia0").await?;
    let mac = vipl.vip_query_nic(nic).await?.local_nic_address;
    let ptag = vipl.vip_create_ptag(nic).await?;
    let vi = vipl
        .vip_create_vi(nic, &ViAttributes::reliable(ptag), None, None)
        .await?;
    let local = NetAddress {
        host: mac,
        discriminator: 7,
    };
    let remote = NetAddress {
        host: peer,
        discriminator: 7,
    };
    let t = Timeout::After(sim_kernel::Duration::from_ns(5_000_000));
    if wait {
        let req = vipl.vip_connect_wait(nic, &local, t, vi).await?;
        vipl.vip_connect_accept(req.conn, vi).await?;
    } else {
        let mut tries = 0;
        loop {
            match vipl.vip_connect_request(vi, &local, &remote, t).await {
                Ok(_) => break,
                Err(VipError::Reject) if tries < 50 => {
                    tries += 1;
                    vipl.sleep(sim_kernel::Duration::from_ns(10_000)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok((nic, ptag, vi))
}

/// A peer that connects (waiting) and then stays connected for `linger`.
pub async fn passive_peer(
    mut vipl: Vipl,
    peer: MacAddr,
    linger: sim_kernel::Duration,
) -> ProgramResult {
    connected_vi(&mut vipl, true, peer)
        .await
        .map_err(|error| host_driver::ProgramError::Vipl {
            call: "connect",
            error,
        })?;
    vipl.sleep(linger).await;
    done(&vipl, "passive-peer")
}
