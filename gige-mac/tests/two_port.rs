//! Two MAC ports back to back (the published system): frames arrive byte-exact, with a
//! correct FCS, in order, at hand-computed times; the inter-frame gap holds; both
//! directions run independently; spans and pcap capture follow.

mod common;

use common::{ceil8, frame, mac, send, two_nodes, NetParts};
use gige_mac::frame::check_fcs;
use gige_mac::pcap::{parse, FcsMode, PcapWriter};
use gige_mac::{GigeParams, Link, Millimetres};
use proptest::prelude::*;
use sim_kernel::{Duration, Time};

const NS: u64 = 1_000; // ps

/// One 64-byte frame (payload 46 bytes: 14 + 46 + 4 = 64), default parameters.
///
/// | event | computation | time |
/// |---|---|---|
/// | first preamble byte at A | posted at 0 | 0 ns |
/// | end of preamble + SFD | 8 bytes x 8 ns | 64 ns |
/// | end of last FCS byte at A | (8 + 64) x 8 ns = 576 ns | 576 ns |
/// | link latency | PHY tx 200 + cable 2 m x 5 = 10 + PHY rx 384 | 594 ns |
/// | first byte complete at B | 64 + 8 + 594 = 666, next 8 ns edge | 672 ns |
/// | last byte complete at B (end of frame) | 576 + 594 = 1170, next edge | 1176 ns |
/// | end of IFG at A | 576 + 12 x 8 | 672 ns |
#[test]
fn a_64_byte_frame_hand_timed() {
    let p = GigeParams::default();
    assert_eq!(Link::new(p.link).latency(), Duration::from_ns(594));
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    let f = frame(1, mac(2), mac(1), &[0xA5; 46]);
    assert_eq!(f.len(), 64);
    send(&mut k, a, Time::ZERO, f.clone());
    k.run_to_idle(&mut net);
    let sent = &net.port(a).sent()[0];
    assert_eq!((sent.start, sent.end), (Time(0), Time(576 * NS)));
    let got = &net.port(b).inbox()[0];
    assert_eq!(got.first_byte_at, Time(672 * NS));
    assert_eq!(got.last_byte_at, Time(1_176 * NS));
    assert_eq!(got.frame.bytes(), f.bytes());
    assert!(check_fcs(got.frame.bytes()).is_ok());
    let s = net.port(a).tx().stats();
    assert_eq!((s.frames, s.bytes.0, s.busy.0, s.ifg.0), (1, 64, 72, 12));
    assert_eq!(k.now(), Time(1_176 * NS), "last event: B's end of frame");
}

/// One maximum frame, 1518 bytes with FCS (MTU 1514).
///
/// | event | computation | time |
/// |---|---|---|
/// | end of last FCS byte at A | (8 + 1518) x 8 ns | 12 208 ns |
/// | first byte complete at B | 64 + 8 + 594 = 666, next edge | 672 ns |
/// | end of frame at B | 12 208 + 594 = 12 802, next edge | 12 808 ns |
#[test]
fn a_1518_byte_frame_hand_timed() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    let f = frame(1, mac(2), mac(1), &[0x3C; 1500]);
    assert_eq!(f.len(), 1518);
    send(&mut k, a, Time::ZERO, f.clone());
    k.run_to_idle(&mut net);
    assert_eq!(net.port(a).sent()[0].end, Time(12_208 * NS));
    let got = &net.port(b).inbox()[0];
    assert_eq!(
        (got.first_byte_at, got.last_byte_at),
        (Time(672 * NS), Time(12_808 * NS))
    );
    assert_eq!(got.frame.bytes(), f.bytes());
}

/// Two 64-byte frames queued together leave exactly 12 byte times apart.
///
/// | event | computation | time |
/// |---|---|---|
/// | frame 1 end at A | 72 x 8 | 576 ns |
/// | frame 2 first preamble byte at A | 576 + 12 x 8 | 672 ns |
/// | frame 2 end at A | 672 + 576 | 1 248 ns |
/// | frame 1 end at B | 576 + 594, next edge | 1 176 ns |
/// | frame 2 first byte at B | 672 + 72 + 594 = 1 338, next edge | 1 344 ns |
/// | frame 2 end at B | 1 248 + 594 = 1 842, next edge | 1 848 ns |
#[test]
fn back_to_back_frames_keep_the_gap() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    send(&mut k, a, Time::ZERO, frame(1, mac(2), mac(1), &[1; 46]));
    send(&mut k, a, Time::ZERO, frame(2, mac(2), mac(1), &[2; 46]));
    k.run_to_idle(&mut net);
    let sent = net.port(a).sent();
    assert_eq!(sent[1].start - sent[0].end, Duration::from_ns(96)); // 12 bytes
    assert_eq!(
        (sent[1].start, sent[1].end),
        (Time(672 * NS), Time(1_248 * NS))
    );
    let inbox = net.port(b).inbox();
    assert_eq!(inbox[0].last_byte_at, Time(1_176 * NS));
    assert_eq!(
        (inbox[1].first_byte_at, inbox[1].last_byte_at),
        (Time(1_344 * NS), Time(1_848 * NS))
    );
    // At the receiver the gap between frames is also 12 bytes + preamble + SFD:
    // 1 344 - 1 176 = 168 ns = (12 + 8 + 1) x 8 (the +1: byte 0 is complete one clock in).
    assert_eq!(
        inbox[1].first_byte_at - inbox[0].last_byte_at,
        Duration::from_ns(168)
    );
}

/// Full duplex: A->B and B->A at the same time do not disturb each other.
#[test]
fn both_directions_are_independent() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    send(&mut k, a, Time::ZERO, frame(1, mac(2), mac(1), &[1; 46]));
    send(&mut k, b, Time::ZERO, frame(2, mac(1), mac(2), &[2; 46]));
    k.run_to_idle(&mut net);
    for port in [a, b] {
        let got = &net.port(port).inbox()[0];
        assert_eq!(
            (got.first_byte_at, got.last_byte_at),
            (Time(672 * NS), Time(1_176 * NS))
        );
    }
}

/// Trace spans of one frame tile its one-way time: serialization, then the link.
#[test]
fn spans_tile_the_one_way_time() {
    let p = GigeParams::default();
    let (mut k, mut net, a, _) = two_nodes(&p, true);
    send(&mut k, a, Time::ZERO, frame(7, mac(2), mac(1), &[0; 46]));
    k.run_to_idle(&mut net);
    let spans: Vec<_> = k
        .trace()
        .spans()
        .iter()
        .map(|s| (s.msg.0, s.stage, s.start, s.end))
        .collect();
    assert_eq!(
        spans,
        vec![
            (7, "gmii tx", Time(0), Time(576 * NS)),
            (7, "phy+cable+phy", Time(576 * NS), Time(1_176 * NS)),
        ]
    );
}

/// The transmitter's tap written as pcap and read back: timestamps are the preamble
/// starts, data the frames without FCS.
#[test]
fn capture_to_pcap() {
    let p = GigeParams::default();
    let (mut k, mut net, a, _) = two_nodes(&p, false);
    net.port_mut(a).tx_mut().enable_capture();
    let f1 = frame(1, mac(2), mac(1), &[1; 100]);
    let f2 = frame(2, mac(2), mac(1), &[2; 10]);
    send(&mut k, a, Time::ZERO, f1.clone());
    send(&mut k, a, Time::ZERO, f2.clone());
    k.run_to_idle(&mut net);
    let cap = net.port_mut(a).tx_mut().take_capture();
    let mut w = PcapWriter::new(Vec::new(), FcsMode::Strip).unwrap();
    for c in &cap {
        w.write_frame(c.at, c.frame.bytes()).unwrap();
    }
    let recs = parse(&w.finish().unwrap()).unwrap();
    assert_eq!(recs.len(), 2);
    // Frame 2 starts after 8 + 118 + 12 = 138 byte times = 1 104 ns.
    assert_eq!((recs[0].ts_sec, recs[0].ts_nsec), (0, 0));
    assert_eq!((recs[1].ts_sec, recs[1].ts_nsec), (0, 1_104));
    assert_eq!(recs[0].data, &f1.bytes()[..114]);
    assert_eq!(recs[1].data, &f2.bytes()[..60]);
    assert!(net.port_mut(a).tx_mut().take_capture().is_empty());
}

/// A frame with a broken FCS arrives but is reported, not accepted.
#[test]
fn corrupted_frame_is_reported() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    let good = frame(1, mac(2), mac(1), &[9; 46]);
    let mut bytes = good.bytes().to_vec();
    bytes[30] ^= 0x10;
    send(
        &mut k,
        a,
        Time::ZERO,
        gige_mac::Frame::new(good.id, good.msg, bytes),
    );
    k.run_to_idle(&mut net);
    assert!(net.port(b).inbox().is_empty());
    assert_eq!(net.port(b).failures().len(), 1);
    assert_eq!(net.port(b).rx().stats().fcs_errors, 1);
}

/// A wake-up the transmitter never asked for (while idle) is counted and ignored: no
/// frame goes out, the port stays idle.
#[test]
fn a_stray_wake_up_is_counted_and_ignored() {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    let wake = gige_mac::MacMsg::TxWake {
        port: gige_mac::PortIndex(0),
    };
    k.post(a, Time::ZERO, common::Sys::Mac(wake));
    k.run_to_idle(&mut net);
    let s = net.port(a).tx().stats();
    assert_eq!((s.unexpected_wakes, s.frames), (1, 0));
    assert!(net.port(b).inbox().is_empty());
    // A frame sent afterwards goes out as usual and adds no stray wake-up.
    send(
        &mut k,
        a,
        Time(1_000 * NS),
        frame(1, mac(2), mac(1), &[1; 46]),
    );
    k.run_to_idle(&mut net);
    let s = net.port(a).tx().stats();
    assert_eq!((s.unexpected_wakes, s.frames), (1, 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random payloads and lengths, random request times and cable lengths: every frame
    /// arrives once, in order, byte-exact, with a good FCS, at the times the wire rules
    /// give: start S_k = max(request_k, S_{k-1} + (8 + L_{k-1} + 12) x 8 ns); first byte
    /// at B = S_k + 72 ns + latency, end = S_k + (8 + L_k) x 8 ns + latency, each rounded
    /// up to B's next 8 ns edge.
    #[test]
    fn every_frame_arrives_exact_and_on_time(
        frames in prop::collection::vec(
            (prop::collection::vec(any::<u8>(), 0..=1500), 0u64..4_000),
            1..10,
        ),
        cable_mm in 0u64..100_000,
    ) {
        let mut p = GigeParams::default();
        p.link.cable.length = Millimetres(cable_mm);
        let d = Link::new(p.link).latency().as_ps();
        let (mut k, mut net, a, b) = two_nodes(&p, false);
        let mut at = 0u64;
        let mut sent = Vec::new();
        for (i, (payload, gap_ns)) in frames.iter().enumerate() {
            at += gap_ns * NS;
            let f = frame(i as u64, mac(2), mac(1), payload);
            send(&mut k, a, Time(at), f.clone());
            sent.push((ceil8(at), f));
        }
        k.run_to_idle(&mut net);
        let inbox = net.port(b).inbox();
        prop_assert_eq!(inbox.len(), sent.len());
        prop_assert!(net.port(b).failures().is_empty());
        let mut free = 0u64; // earliest next preamble at A
        for (got, (req, f)) in inbox.iter().zip(&sent) {
            let len = f.len() as u64;
            let start = (*req).max(free);
            free = start + (8 + len + 12) * 8 * NS;
            prop_assert_eq!(got.frame.bytes(), f.bytes());
            prop_assert_eq!(got.frame.id, f.id);
            prop_assert!(check_fcs(got.frame.bytes()).is_ok());
            prop_assert_eq!(got.first_byte_at, Time(ceil8(start + 72 * NS + d)));
            prop_assert_eq!(got.last_byte_at, Time(ceil8(start + (8 + len) * 8 * NS + d)));
        }
    }
}
