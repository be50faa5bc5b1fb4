//! Cut-through of a frame its sender streams (its MAC starts it before all its bytes are
//! in, as the DP83820 does below its transmit drain threshold): the switch starts the
//! frame on its output from the known prefix and passes on each `RxData` extension;
//! the node behind it gets every byte, good, before the sender even knew the last ones.

use gige_mac::frame::build;
use gige_mac::{
    ForwardingMode, Frame, FrameId, GigeParams, GmiiTx, Link, MacMsg, MacPort, PortIndex, Switch,
    GMII_CLOCK_MHZ,
};
use sim_kernel::{ClockDomain, Ctx, Kernel, MsgId, OnMisroute, Part, Time, Wiring};
use via_abi::{EtherType, MacAddr};

const NS: u64 = 1_000;
const CHUNK: usize = 128;

#[derive(Debug)]
enum Sys {
    Mac(MacMsg),
    /// The streamer queues the first `CHUNK` bytes of its frame.
    Start,
    /// The streamer has the bytes up to this count now.
    More(usize),
}

impl From<MacMsg> for Sys {
    fn from(m: MacMsg) -> Self {
        Sys::Mac(m)
    }
}

#[allow(clippy::large_enum_variant)]
enum Node {
    /// A MAC that streams `frame` into its transmitter, `CHUNK` bytes at a time.
    Streamer {
        tx: GmiiTx,
        frame: Frame,
        given: usize,
        underruns: u64,
    },
    Port(MacPort),
    Switch(Switch),
}

impl Part<Sys, ()> for Node {
    fn take(&mut self, msg: Sys, ctx: &mut Ctx<'_, Sys>, _: &mut ()) -> Option<Sys> {
        match (self, msg) {
            (
                Node::Streamer {
                    tx, frame, given, ..
                },
                Sys::Start,
            ) => {
                let prefix = Frame::new(frame.id, frame.msg, frame.bytes()[..CHUNK].to_vec());
                tx.enqueue_partial(prefix, frame.len(), ctx)
                    .expect("queued");
                *given = CHUNK;
            }
            (
                Node::Streamer {
                    tx,
                    frame,
                    given,
                    underruns,
                },
                Sys::More(upto),
            ) => {
                let upto = upto.min(frame.len());
                if tx.extend(frame.id, &frame.bytes()[*given..upto], ctx)
                    != gige_mac::Extended::Accepted
                {
                    *underruns += 1;
                }
                *given = upto;
            }
            (Node::Streamer { tx, .. }, Sys::Mac(MacMsg::TxWake { .. })) => {
                let _ = tx.wake(ctx);
            }
            // The streamer ignores what it receives (flooded frames).
            (Node::Streamer { .. }, Sys::Mac(_)) => {}
            (Node::Port(p), Sys::Mac(m)) => p.handle(m, ctx),
            (Node::Switch(s), Sys::Mac(m)) => s.handle(m, ctx),
            (_, m) => return Some(m),
        }
        None
    }
}

fn mac(i: u8) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0, i])
}

#[test]
fn a_streamed_frame_is_cut_through_byte_for_byte() {
    let mut p = GigeParams::default();
    p.switch.mode = ForwardingMode::CutThrough;
    let mut k: Kernel<Sys> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("gmii", GMII_CLOCK_MHZ).unwrap());
    let a = k.add_component("a.mac", d);
    let b = k.add_component("b.mac", d);
    let sw = k.add_component("switch", d);
    let link = Link::new(p.link);
    let bytes = build(
        mac(2),
        mac(1),
        EtherType::Via,
        &(0..1500).map(|i| i as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    let frame = Frame::new(FrameId(7), MsgId(7), bytes);
    assert_eq!(frame.len(), 1518);
    let streamer = Node::Streamer {
        tx: GmiiTx::new(
            "a.tx",
            PortIndex(0),
            link.attachment(sw, PortIndex(0)),
            &p.wire,
            8,
        ),
        frame: frame.clone(),
        given: 0,
        underruns: 0,
    };
    let port_b = Node::Port(MacPort::new(
        link.attachment(sw, PortIndex(1)),
        &p.wire,
        &p.port,
    ));
    let switch = Switch::new(
        &[
            link.attachment(a, PortIndex(0)),
            link.attachment(b, PortIndex(0)),
        ],
        &p.wire,
        &p.switch,
    )
    .unwrap();
    let mut net = Wiring::of(
        vec![streamer, port_b, Node::Switch(switch)],
        (),
        OnMisroute::Panic,
    );
    // B announces itself, so the switch knows where mac(2) is.
    let hello = build(MacAddr::BROADCAST, mac(2), EtherType::Via, &[0; 46]).unwrap();
    k.post(
        b,
        Time::ZERO,
        Sys::Mac(MacMsg::Transmit {
            frame: Frame::new(FrameId(1), MsgId(1), hello),
        }),
    );
    k.run_to_idle(&mut net);
    // A starts its frame with 128 bytes known and learns 128 more every 1024 ns: always
    // ahead of its own wire (byte k is due 64 + 8k ns after the start).
    let t0 = Time(100_000 * NS);
    k.post(a, t0, Sys::Start);
    let mut i = 1;
    while i * CHUNK < frame.len() {
        let at = t0 + sim_kernel::Duration::from_ns((i * CHUNK * 8) as u64);
        k.post(a, at, Sys::More((i + 1) * CHUNK));
        i += 1;
    }
    let last_known = t0 + sim_kernel::Duration::from_ns(((i - 1) * CHUNK * 8) as u64);
    k.run_to_idle(&mut net);
    let Some(Node::Streamer { underruns, tx, .. }) = net.get(a) else {
        panic!()
    };
    assert_eq!((*underruns, tx.stats().underruns), (0, 0));
    let Some(Node::Port(pb)) = net.get(b) else {
        panic!()
    };
    let got = pb
        .inbox()
        .iter()
        .find(|r| r.frame.id == FrameId(7))
        .expect("delivered");
    assert_eq!(got.frame.bytes(), frame.bytes(), "every byte, FCS included");
    assert!(pb.failures().is_empty());
    assert!(
        got.first_byte_at < last_known,
        "B had the first byte {} before A knew the last ({last_known})",
        got.first_byte_at
    );
    let Some(Node::Switch(s)) = net.get(sw) else {
        panic!()
    };
    let out = *s.port_stats(PortIndex(1)).unwrap();
    assert_eq!((out.cut_through, out.queued_out), (1, 1));
    assert_eq!(s.tx(PortIndex(1)).unwrap().stats().underruns, 0);
    assert_eq!(s.port_stats(PortIndex(0)).unwrap().cut_through_bad, 0);
}
