//! A tiny World for the integration tests: MAC ports and at most one switch, all in one
//! 125 MHz `wire.gmii` domain, behind a system message type that wraps `MacMsg` (as the
//! real system's will).

#![allow(dead_code)]

use gige_mac::frame::build;
use gige_mac::{
    Frame, FrameId, GigeParams, Link, MacMsg, MacPort, PortIndex, Switch, GMII_CLOCK_MHZ,
};
use sim_kernel::{ClockDomain, ComponentId, Ctx, Kernel, MsgId, OnMisroute, Part, Time, Wiring};
use via_abi::{EtherType, MacAddr};

/// The system message type: gige-mac's enum wrapped, as the system assembly will.
#[derive(Debug)]
pub enum Sys {
    Mac(MacMsg),
}

impl From<MacMsg> for Sys {
    fn from(m: MacMsg) -> Self {
        Sys::Mac(m)
    }
}

/// A component of the test network (a handful per test: size does not matter).
#[allow(clippy::large_enum_variant)]
pub enum Node {
    Port(MacPort),
    Switch(Switch),
}

/// One receive-side event seen by a port: (delivery time, start?, frame id, first, last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxEvent {
    pub at: Time,
    pub start: bool,
    pub id: FrameId,
    pub first: Time,
    pub last: Time,
}

impl Part<Sys, Vec<Vec<RxEvent>>> for Node {
    /// Logs every RxStart / RxEnd (checking it lands on an edge) in the store, per
    /// component, then hands the message to the port or switch.
    fn take(
        &mut self,
        msg: Sys,
        ctx: &mut Ctx<'_, Sys>,
        rx_log: &mut Vec<Vec<RxEvent>>,
    ) -> Option<Sys> {
        let Sys::Mac(m) = msg;
        if let MacMsg::RxStart { frame, .. } | MacMsg::RxEnd { frame, .. } = &m {
            assert!(ctx.my_domain().is_edge(ctx.now()));
            rx_log[ctx.me().0 as usize].push(RxEvent {
                at: ctx.now(),
                start: matches!(m, MacMsg::RxStart { .. }),
                id: frame.id(),
                first: frame.first_byte_at(),
                last: frame.last_byte_at(),
            });
        }
        match self {
            Node::Port(p) => p.handle(m, ctx),
            Node::Switch(s) => s.handle(m, ctx),
        }
        None
    }
}

/// The network: ports and switch by id; the store is every RxStart / RxEnd delivered,
/// per component (strict wiring).
pub type Net = Wiring<Node, Vec<Vec<RxEvent>>>;

/// The components of a [`Net`] by kind.
pub trait NetParts {
    fn port(&self, id: ComponentId) -> &MacPort;
    fn port_mut(&mut self, id: ComponentId) -> &mut MacPort;
    fn switch(&self, id: ComponentId) -> &Switch;
    /// The RxStart / RxEnd events delivered to `id`.
    fn rx_log(&self, id: ComponentId) -> &[RxEvent];
}

impl NetParts for Net {
    fn port(&self, id: ComponentId) -> &MacPort {
        match self.get(id) {
            Some(Node::Port(p)) => p,
            _ => panic!("{id} is not a port"),
        }
    }

    fn port_mut(&mut self, id: ComponentId) -> &mut MacPort {
        match self.get_mut(id) {
            Some(Node::Port(p)) => p,
            _ => panic!("{id} is not a port"),
        }
    }

    fn switch(&self, id: ComponentId) -> &Switch {
        match self.get(id) {
            Some(Node::Switch(s)) => s,
            _ => panic!("{id} is not the switch"),
        }
    }

    fn rx_log(&self, id: ComponentId) -> &[RxEvent] {
        &self.store[id.0 as usize]
    }
}

fn kernel(trace: bool) -> Kernel<Sys> {
    let mut k = Kernel::new(trace);
    k.add_domain(ClockDomain::from_mhz("wire.gmii", GMII_CLOCK_MHZ).unwrap());
    k
}

/// Two MAC ports back to back (the published system). Returns (kernel, net, a, b).
pub fn two_nodes(p: &GigeParams, trace: bool) -> (Kernel<Sys>, Net, ComponentId, ComponentId) {
    let mut k = kernel(trace);
    let d = k.domain_by_name("wire.gmii").unwrap();
    let a = k.add_component("a.mac", d);
    let b = k.add_component("b.mac", d);
    let link = Link::new(p.link);
    let net = Net::of(
        vec![
            Node::Port(MacPort::new(
                link.attachment(b, PortIndex(0)),
                &p.wire,
                &p.port,
            )),
            Node::Port(MacPort::new(
                link.attachment(a, PortIndex(0)),
                &p.wire,
                &p.port,
            )),
        ],
        vec![Vec::new(); 2],
        OnMisroute::Panic,
    );
    (k, net, a, b)
}

/// `n` MAC ports, node i on switch port i. Returns (kernel, net, ports, switch).
pub fn star(n: usize, p: &GigeParams) -> (Kernel<Sys>, Net, Vec<ComponentId>, ComponentId) {
    let mut k = kernel(false);
    let d = k.domain_by_name("wire.gmii").unwrap();
    let ports: Vec<_> = (0..n)
        .map(|i| k.add_component(format!("n{i}.mac"), d))
        .collect();
    let sw = k.add_component("switch", d);
    let link = Link::new(p.link);
    // Node i's port sends into switch port i; switch port i sends to node i.
    let mut nodes: Vec<Node> = (0..n)
        .map(|i| {
            let port = PortIndex(u16::try_from(i).unwrap());
            Node::Port(MacPort::new(link.attachment(sw, port), &p.wire, &p.port))
        })
        .collect();
    let to_nodes: Vec<_> = ports
        .iter()
        .map(|&c| link.attachment(c, PortIndex(0)))
        .collect();
    let switch = Switch::new(&to_nodes, &p.wire, &p.switch).unwrap();
    nodes.push(Node::Switch(switch));
    let net = Net::of(nodes, vec![Vec::new(); n + 1], OnMisroute::Panic);
    (k, net, ports, sw)
}

/// The MAC address of node `i` (locally administered).
pub fn mac(i: u8) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0, i])
}

/// A good frame from `src` to `dst` carrying `payload`.
pub fn frame(id: u64, dst: MacAddr, src: MacAddr, payload: &[u8]) -> Frame {
    Frame::new(
        FrameId(id),
        MsgId(id),
        build(dst, src, EtherType::Via, payload).unwrap(),
    )
}

/// Posts a transmit request to `port` at `at`.
pub fn send(k: &mut Kernel<Sys>, port: ComponentId, at: Time, f: Frame) {
    k.post(port, at, Sys::Mac(MacMsg::Transmit { frame: f }));
}

/// Rounds `t` up to the next 8 ns edge.
pub fn ceil8(t: u64) -> u64 {
    t.div_ceil(8_000) * 8_000
}
