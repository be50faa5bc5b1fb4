//! Three (and more) nodes through the store-and-forward switch: flooding of unknown and
//! broadcast destinations, learning, filtering, bad frames dropped and counted, output
//! queue overflow counted, hand-computed timing.

mod common;

use common::{frame, mac, send, star, NetParts};
use gige_mac::{Frame, GigeParams, PortIndex};
use sim_kernel::{ComponentId, Time};
use via_abi::MacAddr;

const NS: u64 = 1_000; // ps

fn ids(net: &common::Net, port: ComponentId) -> Vec<u64> {
    net.port(port)
        .inbox()
        .iter()
        .map(|r| r.frame.id.0)
        .collect()
}

/// A -> B while the switch knows nobody: flooded to B and C.
///
/// | event | computation | time |
/// |---|---|---|
/// | A: first preamble byte / end of FCS | (8 + 64) x 8 | 0 / 576 ns |
/// | switch port 0: end of frame | 576 + 594, next edge | 1 176 ns |
/// | switch: forwarding latency over, queued on ports 1 and 2 | 1 176 + 1 000 | 2 176 ns |
/// | switch ports 1, 2: end of FCS | 2 176 + 576 | 2 752 ns |
/// | B and C: first byte | 2 176 + 72 + 594 = 2 842, next edge | 2 848 ns |
/// | B and C: end of frame | 2 752 + 594 = 3 346, next edge | 3 352 ns |
#[test]
fn unknown_destination_is_flooded_then_learned() {
    let p = GigeParams::default();
    let (mut k, mut net, n, sw) = star(3, &p);
    let (a, b, c) = (n[0], n[1], n[2]);
    let f1 = frame(1, mac(2), mac(1), &[1; 46]);
    send(&mut k, a, Time::ZERO, f1.clone());
    k.run_to_idle(&mut net);
    for port in [b, c] {
        let got = &net.port(port).inbox()[0];
        assert_eq!(got.frame.bytes(), f1.bytes());
        assert_eq!(
            (got.first_byte_at, got.last_byte_at),
            (Time(2_848 * NS), Time(3_352 * NS))
        );
    }
    assert!(
        net.port(a).inbox().is_empty(),
        "never sent back to its input port"
    );
    let s = net.switch(sw);
    assert_eq!(s.port_stats(PortIndex(1)).unwrap().flooded_out, 1);
    assert_eq!(s.port_stats(PortIndex(2)).unwrap().flooded_out, 1);
    assert_eq!(s.table().lookup(mac(1)), Some(PortIndex(0)));

    // B answers A: A is known now, so only A gets it; B is learned on the way.
    send(
        &mut k,
        b,
        Time(10_000 * NS),
        frame(2, mac(1), mac(2), &[2; 46]),
    );
    k.run_to_idle(&mut net);
    // A -> B again: B is known, C does not see it.
    send(
        &mut k,
        a,
        Time(20_000 * NS),
        frame(3, mac(2), mac(1), &[3; 46]),
    );
    k.run_to_idle(&mut net);
    // C broadcasts: everyone else gets it.
    send(
        &mut k,
        c,
        Time(30_000 * NS),
        frame(4, MacAddr::BROADCAST, mac(3), &[4; 46]),
    );
    k.run_to_idle(&mut net);
    assert_eq!(ids(&net, a), vec![2, 4]);
    assert_eq!(ids(&net, b), vec![1, 3, 4]);
    assert_eq!(ids(&net, c), vec![1]);
    let s = net.switch(sw);
    let entries: Vec<_> = s.table().entries().collect();
    assert_eq!(
        entries,
        vec![
            (mac(1), PortIndex(0)),
            (mac(2), PortIndex(1)),
            (mac(3), PortIndex(2))
        ]
    );
    assert_eq!(s.table().stats().learned, 3);
    assert_eq!(s.unexpected(), 0);
}

/// Bad FCS and runts are dropped and counted; a frame to a station on its own input port
/// is filtered and counted.
#[test]
fn bad_frames_dropped_and_counted() {
    let p = GigeParams::default();
    let (mut k, mut net, n, sw) = star(3, &p);
    let good = frame(1, mac(2), mac(1), &[1; 46]);
    let mut bytes = good.bytes().to_vec();
    bytes[63] ^= 0x80; // FCS byte
    send(
        &mut k,
        n[0],
        Time::ZERO,
        Frame::new(good.id, good.msg, bytes),
    );
    send(
        &mut k,
        n[0],
        Time::ZERO,
        Frame::new(good.id, good.msg, vec![0u8; 20]),
    );
    // mac(1) sends to itself: learned on port 0 first, then filtered there.
    send(&mut k, n[0], Time::ZERO, frame(3, mac(1), mac(1), &[3; 46]));
    k.run_to_idle(&mut net);
    let s = net.switch(sw).port_stats(PortIndex(0)).unwrap();
    assert_eq!(
        (s.fcs_drops, s.malformed_drops, s.filtered, s.received),
        (1, 1, 1, 1)
    );
    for port in &n {
        assert!(net.port(*port).inbox().is_empty());
    }
}

/// A and C both stream to B: B's output port gets two frames per frame time and can send
/// one, so its queue (2 frames) overflows; every frame is either delivered or counted.
#[test]
fn output_queue_overflow_is_counted() {
    let mut p = GigeParams::default();
    p.switch.queue_frames = 2;
    let (mut k, mut net, n, sw) = star(3, &p);
    let (a, b, c) = (n[0], n[1], n[2]);
    // Let the switch learn B first (flooded to A and C, harmless).
    send(
        &mut k,
        b,
        Time::ZERO,
        frame(1000, MacAddr::BROADCAST, mac(2), &[0; 46]),
    );
    k.run_to_idle(&mut net);
    let t0 = k.now() + sim_kernel::Duration::from_ns(1_000);
    for i in 0..10 {
        send(&mut k, a, t0, frame(i, mac(2), mac(1), &[1; 500]));
        send(&mut k, c, t0, frame(100 + i, mac(2), mac(3), &[3; 500]));
    }
    k.run_to_idle(&mut net);
    let s = net.switch(sw);
    let out = s.port_stats(PortIndex(1)).unwrap();
    let delivered = net.port(b).inbox().len() as u64;
    assert!(out.queue_drops > 0, "the queue must overflow");
    assert_eq!(delivered + out.queue_drops, 20, "no frame lost silently");
    assert_eq!(out.queued_out, delivered);
    assert_eq!(
        s.tx(PortIndex(1)).unwrap().stats().queue_drops,
        out.queue_drops
    );
    assert_eq!(s.tx(PortIndex(1)).unwrap().stats().max_queued, 2);
    assert_eq!(s.port_stats(PortIndex(0)).unwrap().received, 10);
    assert_eq!(s.port_stats(PortIndex(2)).unwrap().received, 10);
    // Delivered frames are good and in per-source order.
    let got = ids(&net, b);
    let from_a: Vec<_> = got.iter().filter(|&&i| i < 100).collect();
    assert!(from_a.windows(2).all(|w| w[0] < w[1]));
    assert!(net.port(b).failures().is_empty());
}

/// Eight nodes, everyone sends to everyone once the table is full: each frame arrives
/// exactly once at its destination only.
#[test]
fn eight_nodes_all_to_all() {
    let p = GigeParams::default();
    let (mut k, mut net, n, _) = star(8, &p);
    // Announce everyone.
    for (i, &port) in n.iter().enumerate() {
        let id = 1_000 + i as u64;
        send(
            &mut k,
            port,
            Time::ZERO,
            frame(id, MacAddr::BROADCAST, mac(i as u8), &[]),
        );
    }
    k.run_to_idle(&mut net);
    let announced: Vec<usize> = n.iter().map(|&p| net.port(p).inbox().len()).collect();
    assert_eq!(announced, vec![7; 8]);
    let t = k.now();
    for (i, &port) in n.iter().enumerate() {
        for j in 0..8u64 {
            if j as usize != i {
                let id = (i as u64) * 10 + j;
                send(
                    &mut k,
                    port,
                    t,
                    frame(id, mac(j as u8), mac(i as u8), &[j as u8; 80]),
                );
            }
        }
    }
    k.run_to_idle(&mut net);
    for (j, &port) in n.iter().enumerate() {
        let mut got: Vec<_> = ids(&net, port)
            .into_iter()
            .filter(|&id| id < 1_000)
            .collect();
        got.sort_unstable();
        let want: Vec<_> = (0..8u64)
            .filter(|&i| i as usize != j)
            .map(|i| i * 10 + j as u64)
            .collect();
        assert_eq!(got, want, "node {j}");
    }
}

/// A PAUSE (MAC Control, 0x8808, to 01-80-C2-00-00-01) ends at the switch port's MAC:
/// never forwarded, even though its destination is a group address; counted.
#[test]
fn mac_control_frames_are_consumed_not_forwarded() {
    let p = GigeParams::default();
    let (mut k, mut net, n, sw) = star(3, &p);
    let pause = gige_mac::pause::build_pause(mac(1), 0xFFFE).unwrap();
    send(
        &mut k,
        n[0],
        Time::ZERO,
        Frame::new(gige_mac::FrameId(9), sim_kernel::MsgId(9), pause),
    );
    k.run_to_idle(&mut net);
    assert!(net.port(n[1]).inbox().is_empty() && net.port(n[2]).inbox().is_empty());
    let s = net.switch(sw).port_stats(PortIndex(0)).copied().unwrap();
    assert_eq!((s.control_consumed, s.received), (1, 0));
    assert_eq!(
        net.switch(sw).table().lookup(mac(1)),
        None,
        "not learned either"
    );
}
