//! A two-card World for the integration tests: per card a local PCI bus, the GEC with its
//! buffer RAM, the DP83820 (bus side + MAC side) and a stand-in for the VIA engine; the
//! two MAC sides linked back to back.
//!
//! Clock domains: `card.core` and `pci.local` at 33 MHz, `gmii` at 125 MHz (shared by
//! both cards: the published system's nominal clocks).
//!
//! Each card's GEC lives in its card's storage with the buffer RAM, so that the engine
//! stand-in's event can hand it its inputs (`Setup::gec_inputs_placed`,
//! `Gec::take_engine_input`).

#![allow(dead_code)]

use gige_mac::dp83820::regs;
use gige_mac::frame::build;
use gige_mac::{
    BufferLayout, BufferRam, Dp83820Bus, Dp83820Mac, Dp83820Params, Gec, GecParams, GigeParams,
    Link, MacMsg, PortIndex, GMII_CLOCK_MHZ,
};
use pci_model::{BusParams, PciBus, PciMsg};
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, EventKey, Kernel, MsgId, OnMisroute, Part, Priority,
    Time, Wiring, World,
};
use std::collections::VecDeque;
use via_abi::{EtherType, MacAddr};

/// The system message type.
#[derive(Debug)]
pub enum Sys {
    Pci(PciMsg),
    Mac(MacMsg),
    /// Testbench -> engine stand-in: send what is queued.
    Kick,
    /// Testbench -> engine stand-in: give every held RX slot back, and from now on
    /// release after `Cycles(1)`.
    ReleaseAll,
}

impl From<PciMsg> for Sys {
    fn from(m: PciMsg) -> Self {
        Sys::Pci(m)
    }
}

impl From<MacMsg> for Sys {
    fn from(m: MacMsg) -> Self {
        Sys::Mac(m)
    }
}

/// A frame the engine stand-in received: (when, slot, len, msg, bytes).
#[derive(Clone, Debug)]
pub struct Got {
    pub at: Time,
    pub slot: u16,
    pub len: u32,
    pub msg: MsgId,
    pub bytes: Vec<u8>,
}

/// The VIA engine stand-in: writes frames into TX slots, sends `GecTransmit`, records
/// `GecTxDone`/`GecRxFrame`, and releases RX slots after `release` core cycles (never if
/// `None`).
pub struct Engine {
    pub card: usize,
    pub gec: ComponentId,
    pub layout: BufferLayout,
    pub ready: Option<Time>,
    pub to_send: VecDeque<(Vec<u8>, MsgId)>,
    pub free: VecDeque<u16>,
    pub sent: Vec<(Time, u16, MsgId)>,
    pub tx_done: Vec<(Time, u16, bool, MsgId)>,
    pub rx: Vec<Got>,
    pub release: Option<Cycles>,
    pub held: Vec<u16>,
    /// When the automatic releases of slots still held land at the GEC.
    pub releasing: Vec<Time>,
    pub max_held: usize,
    pub max_tx_busy: usize,
    /// With `Setup::gec_inputs_placed`: inputs to the GEC one clock ahead, placed
    /// instead of sent, for the card to hand the GEC after this event.
    pub placed: Option<Vec<(EventKey, MacMsg)>>,
}

impl Engine {
    /// Sends `msg` to the GEC `after` of its cycles, or places it (see `placed`).
    fn send_gec(&mut self, after: Cycles, msg: MacMsg, ctx: &mut Ctx<'_, Sys>) {
        match self.placed.as_mut() {
            Some(out) if after == Cycles(1) => {
                let place = EventKey {
                    time: ctx.domain_of(self.gec).edge_after(ctx.now(), Cycles(1)),
                    priority: Priority::NORMAL,
                    sequence: ctx.reserve_sequence(),
                };
                out.push((place, msg));
            }
            _ => ctx.send_after(self.gec, after, msg.into()),
        }
    }

    fn handle(&mut self, msg: Sys, ctx: &mut Ctx<'_, Sys>, ram: &mut BufferRam) {
        match msg {
            Sys::Kick => self.pump(ctx, ram),
            Sys::ReleaseAll => {
                self.release = Some(Cycles(1));
                self.release_all(ctx);
            }
            Sys::Mac(MacMsg::GecReady) => {
                self.ready = Some(ctx.now());
                self.pump(ctx, ram);
            }
            Sys::Mac(MacMsg::GecTxDone { slot, ok, msg }) => {
                self.tx_done.push((ctx.now(), slot, ok, msg));
                if usize::from(slot) < usize::from(self.layout.tx_slots) {
                    self.free.push_back(slot);
                }
                self.pump(ctx, ram);
            }
            Sys::Mac(MacMsg::GecRxFrame { slot, len, msg }) => {
                let at = self.layout.rx_buffer(slot).unwrap();
                let bytes = ram.read_vec(at, u64::from(len)).unwrap();
                self.rx.push(Got {
                    at: ctx.now(),
                    slot,
                    len,
                    msg,
                    bytes,
                });
                let now = ctx.now();
                self.releasing.retain(|&t| t > now);
                if let Some(d) = self.release {
                    let at = ctx.domain_of(self.gec).edge_after(now, d);
                    self.releasing.push(at);
                    self.send_gec(d, MacMsg::GecRxRelease { slot }, ctx);
                } else {
                    self.held.push(slot);
                }
                self.max_held = self.max_held.max(self.held.len() + self.releasing.len());
            }
            other => panic!("engine {}: unexpected {other:?}", self.card),
        }
    }

    /// Sends queued frames while TX slots are free.
    pub fn pump(&mut self, ctx: &mut Ctx<'_, Sys>, ram: &mut BufferRam) {
        if self.ready.is_none() {
            return;
        }
        while !self.to_send.is_empty() {
            let Some(slot) = self.free.pop_front() else {
                break;
            };
            let Some((bytes, msg)) = self.to_send.pop_front() else {
                break;
            };
            ram.write(self.layout.tx_buffer(slot).unwrap(), &bytes)
                .unwrap();
            self.sent.push((ctx.now(), slot, msg));
            let busy = usize::from(self.layout.tx_slots) - self.free.len();
            self.max_tx_busy = self.max_tx_busy.max(busy);
            let len = u32::try_from(bytes.len()).unwrap();
            self.send_gec(Cycles(1), MacMsg::GecTransmit { slot, len, msg }, ctx);
        }
    }

    /// Gives every held slot back now (for tests that release late).
    pub fn release_all(&mut self, ctx: &mut Ctx<'_, Sys>) {
        for slot in std::mem::take(&mut self.held) {
            self.send_gec(Cycles(1), MacMsg::GecRxRelease { slot }, ctx);
        }
    }
}

#[allow(clippy::large_enum_variant)]
pub enum Node {
    Bus(Box<PciBus>),
    /// The GEC of card `.0` (kept in its [`CardStore`]).
    Gec(usize),
    DpBus(Box<Dp83820Bus>),
    DpMac(Box<Dp83820Mac>),
    Engine(Engine, usize),
}

/// The component ids of one card.
#[derive(Clone, Copy, Debug)]
pub struct CardIds {
    pub bus: ComponentId,
    pub gec: ComponentId,
    pub dpb: ComponentId,
    pub dpm: ComponentId,
    pub engine: ComponentId,
}

/// A card's storage: its buffer RAM and its GEC.
pub struct CardStore {
    pub ram: BufferRam,
    pub gec: Box<Gec>,
    pub gec_id: ComponentId,
}

impl Part<Sys, Vec<CardStore>> for Node {
    fn take(
        &mut self,
        msg: Sys,
        ctx: &mut Ctx<'_, Sys>,
        cards: &mut Vec<CardStore>,
    ) -> Option<Sys> {
        match (self, msg) {
            (Node::Bus(b), Sys::Pci(m)) => b.handle(m, ctx, None),
            (Node::Gec(c), Sys::Pci(m)) => {
                let s = &mut cards[*c];
                s.gec.handle_pci(m, ctx, &mut s.ram);
            }
            (Node::Gec(c), Sys::Mac(m)) => {
                let s = &mut cards[*c];
                s.gec.handle_mac(m, ctx, &mut s.ram);
            }
            (Node::DpBus(d), Sys::Pci(m)) => d.handle_pci(m, ctx),
            (Node::DpBus(d), Sys::Mac(m)) => d.handle_mac(m, ctx),
            (Node::DpMac(d), Sys::Mac(m)) => d.handle(m, ctx),
            (Node::Engine(e, c), m) => {
                let s = &mut cards[*c];
                e.handle(m, ctx, &mut s.ram);
                if let Some(placed) = e.placed.as_mut() {
                    for (place, msg) in placed.drain(..) {
                        s.gec.take_engine_input(s.gec_id, place, msg, ctx);
                    }
                }
            }
            (_, m) => return Some(m),
        }
        None
    }
}

/// The two cards: their components wired by id (strict: a message of the wrong kind
/// fails the test; the store is each card's buffer RAM) and each card's ids.
pub struct Cards {
    pub wiring: Wiring<Node, Vec<CardStore>>,
    pub ids: Vec<CardIds>,
}

impl World<Sys> for Cards {
    fn deliver(&mut self, to: ComponentId, msg: Sys, ctx: &mut Ctx<'_, Sys>) {
        self.wiring.deliver(to, msg, ctx);
    }
}

impl Cards {
    pub fn engine(&mut self, card: usize) -> &mut Engine {
        match self.wiring.get_mut(self.ids[card].engine) {
            Some(Node::Engine(e, _)) => e,
            _ => unreachable!(),
        }
    }
    pub fn gec(&self, card: usize) -> &Gec {
        &self.wiring.store[card].gec
    }
    pub fn gec_mut(&mut self, card: usize) -> &mut Gec {
        &mut self.wiring.store[card].gec
    }
    pub fn dpb(&self, card: usize) -> &Dp83820Bus {
        match self.wiring.get(self.ids[card].dpb) {
            Some(Node::DpBus(d)) => d,
            _ => unreachable!(),
        }
    }
    pub fn dpm(&self, card: usize) -> &Dp83820Mac {
        match self.wiring.get(self.ids[card].dpm) {
            Some(Node::DpMac(d)) => d,
            _ => unreachable!(),
        }
    }
    pub fn dpm_mut(&mut self, card: usize) -> &mut Dp83820Mac {
        match self.wiring.get_mut(self.ids[card].dpm) {
            Some(Node::DpMac(d)) => d,
            _ => unreachable!(),
        }
    }
    pub fn bus(&self, card: usize) -> &PciBus {
        match self.wiring.get(self.ids[card].bus) {
            Some(Node::Bus(b)) => b,
            _ => unreachable!(),
        }
    }
    pub fn bus_mut(&mut self, card: usize) -> &mut PciBus {
        match self.wiring.get_mut(self.ids[card].bus) {
            Some(Node::Bus(b)) => b,
            _ => unreachable!(),
        }
    }
}

/// Everything a two-card run is built from.
#[derive(Clone, Debug)]
pub struct Setup {
    pub bus: BusParams,
    pub gec: GecParams,
    pub mac: Dp83820Params,
    pub layout: BufferLayout,
    pub gige: GigeParams,
    /// RX release delay of both engines [core cycles]; `None`: never.
    pub release: Option<Cycles>,
    pub trace: bool,
    /// The engine stand-ins place their inputs to the GEC one clock ahead instead of
    /// sending them, and the card hands them to the GEC (`Gec::take_engine_input`).
    pub gec_inputs_placed: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            bus: BusParams::default(),
            gec: GecParams::default(),
            mac: Dp83820Params::default(),
            layout: BufferLayout::default(),
            gige: GigeParams::default(),
            release: Some(Cycles(1)),
            trace: false,
            gec_inputs_placed: false,
        }
    }
}

/// Two cards back to back, `GecInit` posted to both at time 0.
pub fn two_cards(s: &Setup) -> (Kernel<Sys>, Cards) {
    let mut k: Kernel<Sys> = Kernel::new(s.trace);
    let core = k.add_domain(ClockDomain::from_mhz("card.core", 33.0).unwrap());
    let local = k.add_domain(s.bus.clock_domain("pci.local").unwrap());
    let gmii = k.add_domain(ClockDomain::from_mhz("gmii", GMII_CLOCK_MHZ).unwrap());
    let mut ids = Vec::new();
    for c in 0..2 {
        ids.push(CardIds {
            bus: k.add_component(format!("c{c}.local-bus"), local),
            gec: k.add_component(format!("c{c}.gec"), core),
            dpb: k.add_component(format!("c{c}.dp83820.bus"), local),
            dpm: k.add_component(format!("c{c}.dp83820.mac"), gmii),
            engine: k.add_component(format!("c{c}.engine"), core),
        });
    }
    let link = Link::new(s.gige.link);
    let mut wiring = Wiring::new(Vec::new(), OnMisroute::Panic);
    for c in 0..2 {
        let id = ids[c];
        let far = ids[1 - c];
        let mut bus = PciBus::new(s.bus.clone()).unwrap();
        let gm = bus.add_master(s.gec.master_config("gec", id.gec)).unwrap();
        let dm = bus
            .add_master(s.mac.master_config("dp83820", id.dpb))
            .unwrap();
        bus.add_device_target(s.layout.base, s.layout.size(), id.gec, s.gec.target.clone())
            .unwrap();
        bus.add_device_target(
            s.gec.mac_regs_base,
            regs::WINDOW_BYTES,
            id.dpb,
            s.mac.target.clone(),
        )
        .unwrap();
        let gec = Gec::new(
            s.gec.clone(),
            s.layout.clone(),
            id.bus,
            gm,
            id.engine,
            Some(id.dpb),
        );
        let dpb = Dp83820Bus::new(
            s.mac.clone(),
            id.bus,
            dm,
            s.gec.mac_regs_base,
            id.dpm,
            Some(id.gec),
        );
        let dpm = Dp83820Mac::new(
            &s.mac,
            &s.gige.wire,
            id.dpb,
            link.attachment(far.dpm, PortIndex(0)),
            (c as u64) << 32,
        );
        let engine = Engine {
            card: c,
            gec: id.gec,
            layout: s.layout.clone(),
            ready: None,
            to_send: VecDeque::new(),
            free: (0..s.layout.tx_slots).collect(),
            sent: Vec::new(),
            tx_done: Vec::new(),
            rx: Vec::new(),
            release: s.release,
            held: Vec::new(),
            releasing: Vec::new(),
            max_held: 0,
            max_tx_busy: 0,
            placed: s.gec_inputs_placed.then(Vec::new),
        };
        // Registration order: bus, gec, dpb, dpm, engine (as the ids above).
        wiring.place(id.bus, Node::Bus(Box::new(bus)));
        wiring.place(id.gec, Node::Gec(c));
        wiring.place(id.dpb, Node::DpBus(Box::new(dpb)));
        wiring.place(id.dpm, Node::DpMac(Box::new(dpm)));
        wiring.place(id.engine, Node::Engine(engine, c));
        wiring.store.push(CardStore {
            ram: BufferRam::new(s.layout.clone()).unwrap(),
            gec: Box::new(gec),
            gec_id: id.gec,
        });
        k.post(id.gec, Time::ZERO, Sys::Mac(MacMsg::GecInit));
    }
    (k, Cards { wiring, ids })
}

/// A frame of `len` bytes without FCS (>= 14): header from card `from` to the other,
/// payload from `seed`, which its first 8 bytes hold (little-endian; [`frame_seed`]
/// reads it back): a frame names itself by its bytes, as untraced runs carry no
/// message ids (the cards' trace tags are sent only while tracing).
pub fn frame_bytes(len: usize, from: u8, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut payload: Vec<u8> = (0..len.saturating_sub(14))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for (b, s) in payload.iter_mut().zip(seed.to_le_bytes()) {
        *b = s;
    }
    let src = MacAddr([2, 0, 0, 0, 0, from]);
    let dst = MacAddr([2, 0, 0, 0, 0, 1 - from]);
    let mut f = build(dst, src, EtherType::Via, &payload).unwrap();
    f.truncate(f.len() - 4); // the DP83820 appends the FCS
    f.truncate(len.max(60)); // built frames are padded to 60
    f
}

/// The seed a frame of [`frame_bytes`] of at least 22 bytes was made from (`None`: a
/// frame too short to hold it; a shorter `frame_bytes` length holds only part of it).
pub fn frame_seed(f: &[u8]) -> Option<u64> {
    let b: [u8; 8] = f.get(14..22)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Runs until both GECs are ready; returns that time.
pub fn run_until_ready(k: &mut Kernel<Sys>, w: &mut Cards) -> Time {
    let mut horizon = k.now();
    while !(w.gec(0).is_ready() && w.gec(1).is_ready()) {
        horizon += sim_kernel::Duration::from_ns(100);
        k.run_until(w, horizon);
        assert!(k.pending() > 0, "GECs never became ready");
        assert!(k.now() < Time(1_000_000_000), "GECs never became ready");
    }
    k.run_to_idle(w);
    k.now()
}
