//! Faults on the wire (`gige_mac::fault`) between two MAC ports and between two cards:
//! a lost frame never arrives and is counted; a frame with bit errors arrives changed in
//! exactly the inverted bits and fails its FCS check; the DP83820 drops it, counts a CRC
//! error and hands the GEC none of its bytes as a good frame; a link-down window takes
//! the frames that overlap it and no other; the same seed gives the same faults, another
//! seed others; faults that are off change nothing.

mod card;
mod common;

use common::{frame, mac, send, two_nodes, NetParts, Sys};
use gige_mac::frame::check_fcs;
use gige_mac::{
    FcsError, Frame, GigeParams, Link, LinkDown, MacMsg, MacPort, PortIndex, RxError, RxFrame,
    WireFaultParams, WireFaults, GMII_CLOCK_MHZ,
};
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Duration, Kernel, MsgId, OnMisroute, Part, Time, Wiring,
};

/// One GMII byte time.
const BYTE: Duration = Duration(8_000);

fn faults(frame_loss: f64, bit_error_rate: f64) -> WireFaultParams {
    WireFaultParams {
        frame_loss,
        bit_error_rate,
        ..WireFaultParams::default()
    }
}

/// `n` maximum frames (1518 bytes with FCS) from node 1 to node 2, ids 0..n.
fn big_frames(n: u64) -> Vec<Frame> {
    (0..n)
        .map(|i| {
            let payload: Vec<u8> = (0..1500u64).map(|j| (i * 31 + j * 7) as u8).collect();
            frame(i, mac(2), mac(1), &payload)
        })
        .collect()
}

/// Sends `frames` from a to b, all queued at time 0, with `f` on a's wire; returns the
/// ids b accepted, the ids b refused (with why) and a's fault counters.
fn run_ports(
    f: Option<WireFaults>,
    frames: &[Frame],
) -> (Vec<u64>, Vec<(u64, RxError)>, gige_mac::WireFaultStats) {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    if let Some(f) = f {
        net.port_mut(a).tx_mut().set_faults(f);
    }
    for fr in frames {
        send(&mut k, a, Time::ZERO, fr.clone());
    }
    k.run_to_idle(&mut net);
    assert_eq!(net.port(a).sent().len(), frames.len(), "a sent every frame");
    let ok = net.port(b).inbox().iter().map(|r| r.frame.id.0).collect();
    let bad = net
        .port(b)
        .failures()
        .iter()
        .map(|x| (x.id.0, x.error.clone()))
        .collect();
    let stats = net
        .port(a)
        .tx()
        .faults()
        .map(|f| *f.stats())
        .unwrap_or_default();
    (ok, bad, stats)
}

#[test]
fn a_lost_frame_never_arrives_and_is_counted() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    net.port_mut(a)
        .tx_mut()
        .set_faults(WireFaults::new(faults(1.0, 0.0), 1));
    for i in 0..5 {
        send(
            &mut k,
            a,
            Time::ZERO,
            frame(i, mac(2), mac(1), &[i as u8; 46]),
        );
    }
    // The other direction has no faults.
    send(&mut k, b, Time::ZERO, frame(9, mac(1), mac(2), &[9; 46]));
    k.run_to_idle(&mut net);
    assert_eq!(net.port(a).sent().len(), 5, "the transmitter does not know");
    assert!(net.rx_log(b).is_empty(), "nothing reached b's RXD");
    assert!(net.port(b).inbox().is_empty());
    assert!(net.port(b).failures().is_empty());
    let s = net.port(a).tx().faults().unwrap().stats();
    assert_eq!((s.frames, s.frames_lost, s.spoiled()), (5, 5, 5));
    assert_eq!(net.port(a).inbox().len(), 1, "b -> a is untouched");
    assert!(net.port(b).tx().faults().is_none());
}

/// A probe at the far end that keeps every frame whole as it arrived at its end of
/// frame, good or bad: a receiver that accepts errored frames.
enum Node {
    Port(Box<MacPort>),
    Probe(Vec<RxFrame>),
}

impl Part<Sys, ()> for Node {
    fn take(&mut self, msg: Sys, ctx: &mut Ctx<'_, Sys>, (): &mut ()) -> Option<Sys> {
        let Sys::Mac(m) = msg;
        match self {
            Node::Port(p) => p.handle(m, ctx),
            Node::Probe(got) => {
                if let MacMsg::RxEnd { frame, .. } = m {
                    got.push(frame);
                }
            }
        }
        None
    }
}

#[test]
fn bit_errors_change_exactly_the_drawn_bits_and_break_the_fcs() {
    let p = GigeParams::default();
    let mut k: Kernel<Sys> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("wire.gmii", GMII_CLOCK_MHZ).unwrap());
    let a = k.add_component("a.mac", d);
    let b = k.add_component("b.probe", d);
    let link = Link::new(p.link);
    let mut port = MacPort::new(link.attachment(b, PortIndex(0)), &p.wire, &p.port);
    let params = faults(0.0, 1e-4);
    port.tx_mut().set_faults(WireFaults::new(params, 77));
    let mut w = Wiring::of(
        vec![Node::Port(Box::new(port)), Node::Probe(Vec::new())],
        (),
        OnMisroute::Panic,
    );
    let frames = big_frames(200);
    for f in &frames {
        send(&mut k, a, Time::ZERO, f.clone());
    }
    k.run_to_idle(&mut w);
    let Some(Node::Probe(got)) = w.get(ComponentId(1)) else {
        panic!("no probe");
    };
    assert_eq!(
        got.len(),
        frames.len(),
        "every frame arrives, changed or not"
    );
    // The same faults replayed give the bits that must differ (no link-down window, so
    // the times do not matter).
    let mut replay = WireFaults::new(params, 77);
    let (mut corrupted, mut flipped) = (0, 0);
    for (sent, rx) in frames.iter().zip(got) {
        let fate = replay.fate(Time::ZERO, Time::ZERO, BYTE, sent.len());
        let want = fate.map(|f| f.flips).unwrap_or_default();
        let bytes = rx.complete(rx.last_byte_at()).unwrap().bytes().to_vec();
        assert_eq!(bytes.len(), sent.len());
        let diff: Vec<u64> = sent
            .bytes()
            .iter()
            .zip(&bytes)
            .enumerate()
            .flat_map(|(i, (x, y))| {
                (0..8u64)
                    .filter(move |bit| (x ^ y) >> bit & 1 == 1)
                    .map(move |bit| i as u64 * 8 + bit)
            })
            .collect();
        assert_eq!(diff, want, "frame {}", sent.id.0);
        assert_eq!(check_fcs(&bytes).is_err(), !want.is_empty());
        corrupted += u64::from(!want.is_empty());
        flipped += want.len() as u64;
    }
    let Some(Node::Port(port)) = w.get(ComponentId(0)) else {
        panic!("no port");
    };
    let s = port.tx().faults().unwrap().stats();
    assert_eq!((s.frames_corrupted, s.bits_flipped), (corrupted, flipped));
    // 200 x 12 144 bits at 1e-4: about 243 errors; some frames intact, most not.
    assert!((150..350).contains(&flipped), "{flipped}");
    assert!(corrupted > 50 && corrupted < 200, "{corrupted}");

    // A MAC that does not accept errored frames drops exactly the corrupted ones.
    let (ok, bad, s2) = run_ports(Some(WireFaults::new(params, 77)), &frames);
    assert_eq!(s2, *s, "same seed, same faults");
    assert_eq!(ok.len() as u64 + corrupted, 200);
    assert_eq!(bad.len() as u64, corrupted);
    assert!(bad
        .iter()
        .all(|(_, e)| matches!(e, RxError::Fcs(FcsError::Mismatch { .. }))));
}

#[test]
fn link_down_takes_the_frames_of_its_window_only() {
    // Maximum frames back to back leave every (8 + 1518 + 12) byte times.
    let start = |i: u64| Time(i * 1_538 * 8_000);
    let down_at = start(2) + BYTE * (8 + 100); // frame 2's 101st byte
    let up_at = start(5) + BYTE * 3; // in frame 5's preamble
    let params = WireFaultParams {
        link_down: Some(LinkDown {
            at: down_at,
            duration: up_at - down_at,
        }),
        ..WireFaultParams::default()
    };
    let frames = big_frames(8);
    let (ok, bad, s) = run_ports(Some(WireFaults::new(params, 1)), &frames);
    assert_eq!(ok, vec![0, 1, 6, 7]);
    // Frame 2 arrives cut after 100 bytes: an FCS error at the receiver.
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].0, 2);
    assert!(matches!(bad[0].1, RxError::Fcs(FcsError::Mismatch { .. })));
    assert_eq!((s.link_down_lost, s.link_down_truncated), (4, 1));
    assert_eq!((s.frames_lost, s.frames_corrupted), (0, 0));

    // A window after the last frame takes nothing.
    let quiet = WireFaultParams {
        link_down: Some(LinkDown {
            at: Time(1_000_000_000),
            duration: Duration::from_ns(1_000),
        }),
        ..WireFaultParams::default()
    };
    let (ok, bad, s) = run_ports(Some(WireFaults::new(quiet, 1)), &frames);
    assert_eq!(ok, (0..8).collect::<Vec<_>>());
    assert!(bad.is_empty());
    assert_eq!((s.frames, s.link_down_lost), (8, 0));
}

#[test]
fn a_truncated_frame_ends_early_at_the_far_end() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    // Data starts at 64 ns; the link goes down after 70 bytes have gone out.
    let params = WireFaultParams {
        link_down: Some(LinkDown {
            at: Time(64_000) + BYTE * 70,
            duration: Duration::from_ns(100_000),
        }),
        ..WireFaultParams::default()
    };
    net.port_mut(a)
        .tx_mut()
        .set_faults(WireFaults::new(params, 1));
    send(&mut k, a, Time::ZERO, big_frames(1)[0].clone());
    k.run_to_idle(&mut net);
    // First byte complete at b at 672 ns (see two_port.rs); byte 69 8 x 69 ns later.
    let log = net.rx_log(b);
    assert_eq!(log.len(), 2);
    assert_eq!(
        (log[0].first, log[1].at),
        (Time(672_000), Time(672_000 + 69 * 8_000))
    );
    assert!(net.port(b).inbox().is_empty());
    assert_eq!(net.port(b).rx().stats().fcs_errors, 1);
    // The transmitter sent the whole frame.
    assert_eq!(net.port(a).sent()[0].end, Time((8 + 1518) * 8_000));
}

#[test]
fn the_same_seed_gives_the_same_faults_another_seed_others() {
    let params = faults(0.3, 3e-5);
    let frames = big_frames(60);
    let one = run_ports(Some(WireFaults::new(params, 5)), &frames);
    let again = run_ports(Some(WireFaults::new(params, 5)), &frames);
    let other = run_ports(Some(WireFaults::new(params, 6)), &frames);
    assert_eq!(one, again);
    assert_ne!((&one.0, &one.1), (&other.0, &other.1));
    let s = one.2;
    assert!(s.frames_lost > 5 && s.frames_corrupted > 5, "{s:?}");
    assert_eq!(one.0.len() + one.1.len() + s.frames_lost as usize, 60);
}

/// One frame's arrival: id, first byte, last byte, bytes.
type Arrival = (u64, Time, Time, Vec<u8>);

/// Every frame's arrival at b, the trace digest, and whether the faults were installed.
fn observe(f: Option<WireFaults>) -> (Vec<Arrival>, u64, bool) {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, true);
    if let Some(f) = f {
        net.port_mut(a).tx_mut().set_faults(f);
    }
    for fr in big_frames(5) {
        send(&mut k, a, Time::ZERO, fr);
    }
    for i in 0..3 {
        send(
            &mut k,
            a,
            Time(100_000_000),
            frame(10 + i, mac(2), mac(1), &[1; 46]),
        );
    }
    k.run_to_idle(&mut net);
    let got = net
        .port(b)
        .inbox()
        .iter()
        .map(|r| {
            (
                r.frame.id.0,
                r.first_byte_at,
                r.last_byte_at,
                r.frame.bytes().to_vec(),
            )
        })
        .collect();
    let installed = net.port(a).tx().faults().is_some();
    (got, k.trace().digest(), installed)
}

#[test]
fn faults_that_are_off_change_nothing() {
    let (base, digest, _) = observe(None);
    assert_eq!(base.len(), 8);
    // All zero: not even installed.
    let (got, d, installed) = observe(Some(WireFaults::new(WireFaultParams::default(), 3)));
    assert!(!installed);
    assert_eq!((&got, d), (&base, digest));
    // Installed, but its window lies after the traffic: the same arrivals and trace.
    let later = WireFaultParams {
        link_down: Some(LinkDown {
            at: Time(1_000_000_000),
            duration: Duration::from_ns(1),
        }),
        ..WireFaultParams::default()
    };
    let (got, d, installed) = observe(Some(WireFaults::new(later, 3)));
    assert!(installed);
    assert_eq!((&got, d), (&base, digest));
    // And a fault that is on does change them (the observation can fail).
    let (got, _, _) = observe(Some(WireFaults::new(faults(0.5, 0.0), 3)));
    assert_ne!(got, base);
}

/// Two cards: bit errors on card 0's wire. Card 1's DP83820 drops every corrupted frame
/// with a CRC error (its receive DMA may have begun: the descriptor is reused), and its
/// GEC hands the engine only the frames that arrived intact, byte-exact.
#[test]
fn the_dp83820_drops_a_bad_fcs_frame_and_counts_it() {
    use card::{frame_bytes, frame_seed, run_until_ready, two_cards, Setup};
    let s = Setup::default();
    let (mut k, mut w) = two_cards(&s);
    w.dpm_mut(0)
        .tx_mut()
        .set_faults(WireFaults::new(faults(0.0, 1e-4), 11));
    let ready = run_until_ready(&mut k, &mut w);
    let n = 40u64;
    for i in 0..n {
        let f = frame_bytes(1514, 0, i + 77);
        w.engine(0).to_send.push_back((f, MsgId(i)));
    }
    let e = w.ids[0].engine;
    k.post(e, ready, card::Sys::Kick);
    k.run_to_idle(&mut w);
    let st = *w.dpm(0).tx().faults().unwrap().stats();
    assert_eq!(st.frames, n);
    assert!(
        st.frames_corrupted > 10 && st.frames_corrupted < n,
        "{st:?}"
    );
    // The sender does not know.
    let done = w.engine(0).tx_done.clone();
    assert_eq!(done.len() as u64, n);
    assert!(done.iter().all(|d| d.2));
    // The receiver: a CRC error per corrupted frame, the rest delivered byte-exact.
    let m = w.dpm(1).stats().clone();
    assert_eq!(
        (m.rx_crc_errors, m.rx_bad),
        (st.frames_corrupted, st.frames_corrupted)
    );
    assert_eq!(m.rx_good, n - st.frames_corrupted);
    assert!(
        w.dpb(1).stats().rx_rewinds > 0,
        "early DMA of a bad frame began"
    );
    let got = w.engine(1).rx.clone();
    assert_eq!(got.len() as u64, n - st.frames_corrupted);
    let mut last = None;
    for g in &got {
        let seed = frame_seed(&g.bytes);
        assert_eq!(
            Some(&g.bytes),
            seed.map(|s| frame_bytes(1514, 0, s)).as_ref(),
            "frame {seed:?}"
        );
        assert!(last < seed, "in order");
        last = seed;
    }
    assert_eq!(w.gec(1).stats().rx_frames, n - st.frames_corrupted);
    // The receive ring still works: a frame sent after the errors arrives.
    w.dpm_mut(0)
        .tx_mut()
        .set_faults(WireFaults::new(WireFaultParams::default(), 0));
    assert!(w.dpm(0).tx().faults().is_none());
    w.engine(0)
        .to_send
        .push_back((frame_bytes(100, 0, 5), MsgId(999)));
    let now = k.now();
    k.post(e, now, card::Sys::Kick);
    k.run_to_idle(&mut w);
    assert_eq!(
        w.engine(1).rx.last().map(|g| &g.bytes),
        Some(&frame_bytes(100, 0, 5))
    );
}
