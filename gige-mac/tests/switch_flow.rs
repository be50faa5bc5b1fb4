//! The switch's port buffers, IEEE 802.3x PAUSE on its ports and cut-through forwarding,
//! with MAC ports as nodes (`common::star`): a node's PAUSE stops the switch's output to
//! it for exactly the pause; the switch pauses the node whose frames fill an output
//! buffer and lets it go below the low-water mark; frames that do not fit the buffer are
//! dropped and counted; cut-through starts a frame before its end, (length - 6) x 8 ns
//! sooner than store and forward, and passes a bad FCS on to the node, which drops it.

mod common;

use common::{frame, mac, send, star, NetParts};
use gige_mac::frame::FcsError;
use gige_mac::pause::{build_pause, parse, MacControl};
use gige_mac::switch::flow::port_address;
use gige_mac::{ForwardingMode, Frame, FrameId, GigeParams, PortIndex, RxError};
use sim_kernel::{ComponentId, Kernel, MsgId, Time};
use via_abi::MacAddr;

const NS: u64 = 1_000; // ps

/// Posts a PAUSE of `quanta` from node `from` (address `src`) at `at`.
fn pause(
    k: &mut Kernel<common::Sys>,
    from: ComponentId,
    src: MacAddr,
    quanta: u16,
    id: u64,
    at: Time,
) {
    let bytes = build_pause(src, quanta).unwrap();
    send(k, from, at, Frame::new(FrameId(id), MsgId(id), bytes));
}

/// Two nodes on a switch that has learned B (B broadcast first). Returns the parts and
/// the time the network went quiet.
fn learned(
    p: &GigeParams,
) -> (
    Kernel<common::Sys>,
    common::Net,
    Vec<ComponentId>,
    ComponentId,
) {
    let (mut k, mut net, n, sw) = star(2, p);
    send(
        &mut k,
        n[1],
        Time::ZERO,
        frame(999, MacAddr::BROADCAST, mac(2), &[0; 46]),
    );
    k.run_to_idle(&mut net);
    (k, net, n, sw)
}

/// The PAUSE control frames a node received, in order: (pause_time, source).
fn pauses_at(net: &common::Net, node: ComponentId) -> Vec<(u16, MacAddr)> {
    net.port(node)
        .inbox()
        .iter()
        .filter_map(|r| match parse(r.frame.bytes()) {
            Some(MacControl::Pause { quanta }) => Some((quanta, r.frame.src().unwrap())),
            _ => None,
        })
        .collect()
}

/// B sends a PAUSE of 100 quanta (51.2 us) while A streams to B: the switch finishes the
/// frame in progress, then nothing starts towards B until the pause is over; with flow
/// control off the PAUSE is consumed and ignored.
/// The scene of the buffer tests: B pauses its switch port (at `t0`, 1 us from now),
/// A sends `count` 1018-byte frames to B from `t0 + 2 us` (ids 0 ..), B resumes `resume_after`
/// later. Returns the instant of the resume.
fn paused_burst(
    k: &mut Kernel<common::Sys>,
    a: ComponentId,
    b: ComponentId,
    count: u64,
    resume_after: sim_kernel::Duration,
) -> Time {
    let t0 = k.now() + sim_kernel::Duration::from_ns(1_000);
    pause(k, b, mac(2), 0xFFFF, 500, t0);
    let t1 = t0 + sim_kernel::Duration::from_ns(2_000);
    for i in 0..count {
        send(k, a, t1, frame(i, mac(2), mac(1), &[i as u8; 1000]));
    }
    let resume = t1 + resume_after;
    pause(k, b, mac(2), 0, 501, resume);
    resume
}

#[test]
fn a_nodes_pause_is_honoured_by_its_switch_port() {
    for enabled in [true, false] {
        let mut p = GigeParams::default();
        p.switch.flow.enabled = enabled;
        let (mut k, mut net, n, sw) = learned(&p);
        let (a, b) = (n[0], n[1]);
        let t0 = k.now() + sim_kernel::Duration::from_ns(1_000);
        for i in 0..6 {
            send(&mut k, a, t0, frame(i, mac(2), mac(1), &[i as u8; 1000]));
        }
        // B's PAUSE leaves while A's second frame is on its way.
        pause(
            &mut k,
            b,
            mac(2),
            100,
            500,
            t0 + sim_kernel::Duration::from_ns(10_000),
        );
        k.run_to_idle(&mut net);
        let r = net
            .rx_log(sw)
            .iter()
            .find(|e| !e.start && e.id == FrameId(500))
            .expect("the PAUSE reached the switch")
            .at;
        let gate_end = r + sim_kernel::Duration::from_ns(100 * 512);
        let data: Vec<_> = net
            .port(b)
            .inbox()
            .iter()
            .filter(|x| x.frame.id.0 < 6)
            .map(|x| x.first_byte_at)
            .collect();
        assert_eq!(data.len(), 6, "every frame arrives in the end");
        // A frame that started before R may still arrive (it completes); one started
        // after R waits for the gate: first byte no sooner than gate end + preamble + link.
        let frame_time = sim_kernel::Duration::from_ns((8 + 1018 + 12) * 8 + 594);
        let during: Vec<_> = data
            .iter()
            .filter(|&&t| t > r + frame_time && t < gate_end)
            .collect();
        let s = *net.switch(sw).port_stats(PortIndex(1)).unwrap();
        assert_eq!(s.control_consumed, 1);
        if enabled {
            assert!(
                during.is_empty(),
                "sent during the pause: {during:?} (R {r})"
            );
            assert_eq!(s.pause_received, 1);
            let paused = net.switch(sw).tx(PortIndex(1)).unwrap().stats().paused.0;
            assert!(paused > 5_000, "paused {paused} clocks");
            assert!(data.iter().any(|&t| t >= gate_end));
        } else {
            assert!(!during.is_empty(), "without flow control it keeps sending");
            assert_eq!(s.pause_received, 0);
        }
        assert!(net.port(b).failures().is_empty());
    }
}

/// B pauses its switch port; A's frames to B pile up in port 1's buffer, charged to input
/// 0: above the high-water mark (8 KB) the switch sends A a PAUSE (once), and when B
/// resumes and the buffer drains below the low-water mark (4 KB), a PAUSE of 0. Every
/// frame is delivered (12 x 1018 bytes fit the 16 KB buffer).
#[test]
fn the_switch_pauses_the_input_that_fills_a_buffer_and_resumes_it() {
    let p = GigeParams::default();
    let (mut k, mut net, n, sw) = learned(&p);
    let (a, b) = (n[0], n[1]);
    // Resume B's port after A has sent them all (12 x 8.3 us).
    paused_burst(&mut k, a, b, 12, sim_kernel::Duration::from_ns(150_000));
    k.run_to_idle(&mut net);
    let sw_ = net.switch(sw);
    let s0 = *sw_.port_stats(PortIndex(0)).unwrap();
    let s1 = *sw_.port_stats(PortIndex(1)).unwrap();
    assert_eq!((s0.pause_sent, s0.resume_sent), (1, 1));
    assert_eq!(
        pauses_at(&net, a),
        vec![
            (0xFFFF, port_address(PortIndex(0))),
            (0, port_address(PortIndex(0)))
        ]
    );
    assert_eq!(s1.pause_received, 2);
    assert!(s1.max_buffered_bytes > 8_192 && s1.max_buffered_bytes <= 16_384);
    assert_eq!(s1.buffer_drops, 0);
    assert_eq!(sw_.buffered(PortIndex(1)), Some(0), "all sent");
    let got: Vec<_> = net
        .port(b)
        .inbox()
        .iter()
        .map(|r| r.frame.id.0)
        .filter(|&i| i < 12)
        .collect();
    assert_eq!(got, (0..12).collect::<Vec<_>>());
    for r in net.port(b).inbox().iter().filter(|r| r.frame.id.0 < 12) {
        assert_eq!(
            r.frame.bytes(),
            frame(r.frame.id.0, mac(2), mac(1), &[r.frame.id.0 as u8; 1000]).bytes()
        );
    }
    // The PAUSE is a MAC Control frame: nobody else gets it, B never sees A's PAUSE.
    assert!(pauses_at(&net, b).is_empty());
}

/// With a 4 KB port buffer and B paused, only four 1018-byte frames fit: the other six
/// are dropped and counted; nothing goes missing.
#[test]
fn frames_that_do_not_fit_the_port_buffer_are_dropped_and_counted() {
    let mut p = GigeParams::default();
    p.switch.buffer_bytes = 4_096;
    p.switch.flow.high_water = 1 << 20; // obey PAUSE, never send one
    p.switch.flow.low_water = 1 << 19;
    let (mut k, mut net, n, sw) = learned(&p);
    let (a, b) = (n[0], n[1]);
    paused_burst(&mut k, a, b, 10, sim_kernel::Duration::from_ns(150_000));
    k.run_to_idle(&mut net);
    let s = *net.switch(sw).port_stats(PortIndex(1)).unwrap();
    let delivered = net
        .port(b)
        .inbox()
        .iter()
        .filter(|r| r.frame.id.0 < 10)
        .count() as u64;
    assert_eq!((delivered, s.buffer_drops), (4, 6));
    assert_eq!(s.queue_drops, 0, "the frame count was never the limit");
    assert_eq!(s.max_buffered_bytes, 4 * 1018);
    assert_eq!(
        net.switch(sw).port_stats(PortIndex(0)).unwrap().received,
        10
    );
}

/// One 1518-byte frame A -> B, store and forward against cut-through: cut-through's first
/// byte reaches B before the switch has the frame's end, and its last byte arrives
/// exactly (1518 - 6) x 8 ns sooner. The bytes are the same.
#[test]
fn cut_through_starts_before_the_end_and_saves_the_frame_time_after_the_da() {
    let mut arrivals = Vec::new();
    for mode in [ForwardingMode::StoreAndForward, ForwardingMode::CutThrough] {
        let mut p = GigeParams::default();
        p.switch.mode = mode;
        let (mut k, mut net, n, sw) = learned(&p);
        let (a, b) = (n[0], n[1]);
        let t0 = Time(100_000 * NS);
        let f = frame(7, mac(2), mac(1), &[0x5A; 1500]);
        assert_eq!(f.len(), 1518);
        send(&mut k, a, t0, f.clone());
        k.run_to_idle(&mut net);
        let got = net
            .port(b)
            .inbox()
            .iter()
            .find(|r| r.frame.id.0 == 7)
            .expect("delivered")
            .clone();
        assert_eq!(got.frame.bytes(), f.bytes());
        let end_at_switch = net
            .rx_log(sw)
            .iter()
            .find(|e| !e.start && e.id == FrameId(7))
            .unwrap()
            .at;
        let s = *net.switch(sw).port_stats(PortIndex(1)).unwrap();
        if mode == ForwardingMode::CutThrough {
            assert!(
                got.first_byte_at < end_at_switch,
                "{} vs {end_at_switch}",
                got.first_byte_at
            );
            assert_eq!(s.cut_through, 1);
        } else {
            assert!(got.first_byte_at > end_at_switch);
            assert_eq!(s.cut_through, 0);
        }
        arrivals.push(got.last_byte_at);
    }
    assert_eq!(arrivals[0].0 - arrivals[1].0, (1518 - 6) * 8 * NS);
}

/// Cut-through of a frame whose FCS is bad: it is on its way before the switch knows, so
/// B receives it with the bad FCS and drops it; the switch counts it. Store and forward
/// drops it at the switch instead.
#[test]
fn cut_through_passes_a_bad_fcs_on_and_the_node_drops_it() {
    for mode in [ForwardingMode::CutThrough, ForwardingMode::StoreAndForward] {
        let mut p = GigeParams::default();
        p.switch.mode = mode;
        let (mut k, mut net, n, sw) = learned(&p);
        let (a, b) = (n[0], n[1]);
        let good = frame(8, mac(2), mac(1), &[3; 500]);
        let mut bytes = good.bytes().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        send(
            &mut k,
            a,
            Time(100_000 * NS),
            Frame::new(good.id, good.msg, bytes),
        );
        k.run_to_idle(&mut net);
        let s0 = *net.switch(sw).port_stats(PortIndex(0)).unwrap();
        assert!(
            net.port(b).inbox().iter().all(|r| r.frame.id.0 != 8),
            "never accepted"
        );
        if mode == ForwardingMode::CutThrough {
            assert_eq!((s0.cut_through_bad, s0.fcs_drops), (1, 0));
            let f = net.port(b).failures();
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].id, FrameId(8));
            assert!(
                matches!(f[0].error, RxError::Fcs(FcsError::Mismatch { .. })),
                "{:?}",
                f[0].error
            );
        } else {
            assert_eq!((s0.cut_through_bad, s0.fcs_drops), (0, 1));
            assert!(net.port(b).failures().is_empty());
        }
    }
}

/// Cut-through needs an idle output: while B's port is busy with C's frame, A's frame to
/// B is stored and forwarded; unknown destinations are flooded after their end.
#[test]
fn cut_through_falls_back_when_the_output_is_busy() {
    let mut p = GigeParams::default();
    p.switch.mode = ForwardingMode::CutThrough;
    let (mut k, mut net, n, sw) = star(3, &p);
    let (a, b, c) = (n[0], n[1], n[2]);
    // Unknown B: flooded (stored and forwarded), B learned from its broadcast.
    send(&mut k, a, Time::ZERO, frame(1, mac(2), mac(1), &[1; 46]));
    send(
        &mut k,
        b,
        Time::ZERO,
        frame(2, MacAddr::BROADCAST, mac(2), &[2; 46]),
    );
    k.run_to_idle(&mut net);
    let t = k.now() + sim_kernel::Duration::from_ns(1_000);
    send(&mut k, c, t, frame(3, mac(2), mac(3), &[3; 1500]));
    send(
        &mut k,
        a,
        t + sim_kernel::Duration::from_ns(100),
        frame(4, mac(2), mac(1), &[4; 1500]),
    );
    k.run_to_idle(&mut net);
    let s1 = *net.switch(sw).port_stats(PortIndex(1)).unwrap();
    assert_eq!(s1.cut_through, 1, "only C's frame found port 1 idle");
    let ids: Vec<_> = net.port(b).inbox().iter().map(|r| r.frame.id.0).collect();
    assert_eq!(ids, vec![1, 3, 4]);
    assert_eq!(net.switch(sw).unexpected(), 0);
}

/// A short pause (100 quanta, 51.2 us) is re-sent every half of it while the node's
/// frames still fill the buffer, but only once the buffer makes progress: while B keeps
/// the output stuck, A gets one PAUSE; once B resumes, the re-sends follow the drain and
/// a PAUSE of 0 ends it.
#[test]
fn the_pause_is_re_sent_while_the_buffer_drains_and_not_while_it_is_stuck() {
    let mut p = GigeParams::default();
    p.switch.flow.pause_quanta = 100;
    let (mut k, mut net, n, sw) = learned(&p);
    let (a, b) = (n[0], n[1]);
    let resume = paused_burst(&mut k, a, b, 12, sim_kernel::Duration::from_ns(400_000));
    k.run_to_idle(&mut net);
    let at_a: Vec<_> = net
        .port(a)
        .inbox()
        .iter()
        .filter_map(|r| match parse(r.frame.bytes()) {
            Some(MacControl::Pause { quanta }) => Some((r.first_byte_at, quanta)),
            _ => None,
        })
        .collect();
    let before: Vec<_> = at_a.iter().filter(|(t, _)| *t < resume).collect();
    assert_eq!(before.len(), 1, "stuck output: no re-send ({at_a:?})");
    assert_eq!(at_a.last().map(|x| x.1), Some(0), "ends with a resume");
    let s0 = *net.switch(sw).port_stats(PortIndex(0)).unwrap();
    assert!(s0.pause_sent >= 2, "re-sent once the buffer drains: {s0:?}");
    assert_eq!(s0.resume_sent, 1);
    assert_eq!(
        net.port(b)
            .inbox()
            .iter()
            .filter(|r| r.frame.id.0 < 12)
            .count(),
        12
    );
}

/// Incast: A, C and D send to B at once. No input alone holds 8 KB, but B's output buffer
/// passes the high-water mark, so every input whose frame joins it then is paused
/// (the output-queue trigger); each is let go once the buffer has drained below the
/// low-water mark. These MAC ports do not obey, so the 16 KB buffer still overflows:
/// every frame is delivered or counted as dropped.
#[test]
fn incast_pauses_every_sender_into_the_congested_port() {
    let p = GigeParams::default();
    let (mut k, mut net, n, sw) = star(4, &p);
    let (a, b, c, d) = (n[0], n[1], n[2], n[3]);
    send(
        &mut k,
        b,
        Time::ZERO,
        frame(999, MacAddr::BROADCAST, mac(2), &[0; 46]),
    );
    k.run_to_idle(&mut net);
    let t0 = k.now() + sim_kernel::Duration::from_ns(1_000);
    for (node, src) in [(a, 1u8), (c, 3), (d, 4)] {
        for i in 0..8u64 {
            let id = u64::from(src) * 100 + i;
            send(&mut k, node, t0, frame(id, mac(2), mac(src), &[src; 1000]));
        }
    }
    k.run_to_idle(&mut net);
    let s = net.switch(sw);
    for (node, port) in [(a, 0u16), (c, 2), (d, 3)] {
        let st = *s.port_stats(PortIndex(port)).unwrap();
        assert!(
            st.pause_sent >= 1 && st.resume_sent == 1,
            "port {port}: {st:?}"
        );
        let got = pauses_at(&net, node);
        assert_eq!(got.first().map(|x| x.0), Some(0xFFFF), "port {port}");
        assert_eq!(got.last().map(|x| x.0), Some(0), "port {port}");
    }
    let out = *s.port_stats(PortIndex(1)).unwrap();
    let delivered = net
        .port(b)
        .inbox()
        .iter()
        .filter(|r| r.frame.id.0 < 999)
        .count() as u64;
    assert_eq!(delivered + out.buffer_drops + out.queue_drops, 24);
    assert!(out.max_buffered_bytes <= 16_384);
    assert_eq!(s.buffered(PortIndex(1)), Some(0));
}
