//! The event-driven GMII transmitter against a per-byte stepping reference: same state
//! transitions at the same edges, same receive-side start/end times, same statistics.

mod common;

use common::{two_nodes, NetParts, Sys};
use gige_mac::{Frame, FrameId, GigeParams, MacMsg, Millimetres};
use proptest::prelude::*;
use sim_kernel::{Kernel, MsgId, Time};
use std::collections::VecDeque;

const P: u64 = 8_000; // GMII clock [ps]

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum S {
    Idle,
    Preamble,
    Data,
    Ifg,
}

fn name(s: S) -> &'static str {
    match s {
        S::Idle => "idle",
        S::Preamble => "preamble",
        S::Data => "data",
        S::Ifg => "ifg",
    }
}

#[derive(Default, Debug)]
struct RefOut {
    /// (time, from, to)
    transitions: Vec<(u64, &'static str, &'static str)>,
    /// (frame id, first byte complete at receiver, last byte complete at receiver)
    rx: Vec<(u64, u64, u64)>,
    busy: u64,
    ifg: u64,
}

/// Per-byte stepping model of a GMII transmitter: on every 8 ns edge, first the requests
/// of that edge join the queue, then the state machine decides (repeatedly while a
/// decision changes the state), then one byte goes out. `reqs`: (edge number, id, len).
fn reference(reqs: &[(u64, u64, u64)], ifg: u64, latency_ps: u64) -> RefOut {
    let mut out = RefOut::default();
    let mut state = S::Idle;
    let mut count = 0u64;
    let mut queue: VecDeque<(u64, u64)> = VecDeque::new();
    let mut cur = (0u64, 0u64);
    let mut first_at = 0u64;
    let last_req = reqs.iter().map(|r| r.0).max().unwrap_or(0);
    let mut c = 0u64;
    loop {
        let t = c * P;
        for r in reqs.iter().filter(|r| r.0 == c) {
            queue.push_back((r.1, r.2));
        }
        let set =
            |out: &mut RefOut, from: S, to: S| out.transitions.push((t, name(from), name(to)));
        loop {
            let before = state;
            match state {
                S::Idle => {
                    if let Some(f) = queue.pop_front() {
                        cur = f;
                        state = S::Preamble;
                    }
                }
                S::Preamble if count == 8 => state = S::Data,
                S::Data if count == cur.1 => state = S::Ifg,
                S::Ifg if count == ifg => {
                    if let Some(f) = queue.pop_front() {
                        cur = f;
                        state = S::Preamble;
                    } else {
                        state = S::Idle;
                    }
                }
                _ => {}
            }
            if state == before {
                break;
            }
            set(&mut out, before, state);
            count = 0;
        }
        // One byte this clock.
        match state {
            S::Idle => {}
            S::Preamble => {
                out.busy += 1;
                count += 1;
            }
            S::Data => {
                out.busy += 1;
                // Byte `count` goes out in [t, t + P) and is complete on the far RXD
                // `latency` after t + P, on the receiver's next edge.
                let at = common::ceil8(t + P + latency_ps);
                if count == 0 {
                    first_at = at;
                }
                if count + 1 == cur.1 {
                    out.rx.push((cur.0, first_at, at));
                }
                count += 1;
            }
            S::Ifg => {
                out.ifg += 1;
                count += 1;
            }
        }
        if state == S::Idle && queue.is_empty() && c > last_req {
            return out;
        }
        c += 1;
    }
}

fn event_driven(reqs: &[(u64, u64, u64)], params: &GigeParams) -> (RefOut, Kernel<Sys>) {
    let (mut k, mut net, a, b) = two_nodes(params, true);
    for &(edge, id, len) in reqs {
        let bytes: Vec<u8> = (0..len).map(|i| (i as u8) ^ (id as u8)).collect();
        let f = Frame::new(FrameId(id), MsgId(id), bytes);
        k.post(a, Time(edge * P), Sys::Mac(MacMsg::Transmit { frame: f }));
    }
    k.run_to_idle(&mut net);
    let mut out = RefOut::default();
    for t in k.trace().transitions() {
        if t.component == a && t.machine == "gmii.tx" {
            out.transitions.push((t.time.as_ps(), t.from, t.to));
        }
    }
    let log = net.rx_log(b);
    for e in log.iter().filter(|e| !e.start) {
        // The RxEnd landed exactly at the frame's last byte, and its RxStart at the first.
        assert_eq!(e.at, e.last);
        assert!(log
            .iter()
            .any(|s| s.start && s.id == e.id && s.at == e.first));
        out.rx.push((e.id.0, e.first.as_ps(), e.last.as_ps()));
    }
    let s = net.port(a).tx().stats();
    out.busy = s.busy.0;
    out.ifg = s.ifg.0;
    assert_eq!(s.frames, reqs.len() as u64);
    assert_eq!(s.bytes.0, reqs.iter().map(|r| r.2).sum::<u64>());
    (out, k)
}

fn check(reqs: &[(u64, u64, u64)], ifg: u32, cable_mm: u64) {
    let mut p = GigeParams::default();
    p.wire.min_ifg_bytes = ifg;
    p.link.cable.length = Millimetres(cable_mm);
    let latency = gige_mac::Link::new(p.link).latency().as_ps();
    let want = reference(reqs, u64::from(ifg), latency);
    let (got, _) = event_driven(reqs, &p);
    assert_eq!(got.transitions, want.transitions, "transitions");
    assert_eq!(got.rx, want.rx, "receive times");
    assert_eq!(
        (got.busy, got.ifg),
        (want.busy, want.ifg),
        "busy/ifg cycles"
    );
}

#[test]
fn hand_picked_sequences() {
    // One frame; two back to back; a request exactly at the end of a gap; one just after;
    // one-byte frames; a zero gap.
    check(&[(0, 1, 64)], 12, 2_000);
    check(&[(0, 1, 64), (0, 2, 64)], 12, 2_000);
    check(&[(0, 1, 64), (84, 2, 100)], 12, 2_000); // 8 + 64 + 12 = 84: gap ends on edge 84
    check(&[(0, 1, 64), (85, 2, 100)], 12, 2_000);
    check(&[(3, 1, 1), (3, 2, 1), (40, 3, 1)], 12, 0);
    check(&[(0, 1, 64), (0, 2, 64), (5, 3, 70)], 0, 1_234);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn event_driven_equals_per_byte_stepping(
        gaps_lens in prop::collection::vec((0u64..200, 1u64..300), 1..12),
        ifg in prop_oneof![Just(12u32), 0u32..30],
        cable_mm in 0u64..100_000,
    ) {
        let mut edge = 0;
        let reqs: Vec<_> = gaps_lens
            .iter()
            .zip(1u64..)
            .map(|(&(gap, len), id)| {
                edge += gap;
                (edge, id, len)
            })
            .collect();
        check(&reqs, ifg, cable_mm);
    }
}

/// A frame requested on the very edge a gap ends, by a message queued *after* the
/// transmitter's own wake-up for that edge, is still taken by that edge's decision
/// (Ifg -> Preamble, as per-byte hardware does), not Ifg -> Idle -> Preamble.
#[test]
fn request_queued_after_the_gap_wake_is_seen_on_that_edge() {
    let p = GigeParams::default();
    let latency = gige_mac::Link::new(p.link).latency().as_ps();
    let reqs = [(0, 1, 64), (84, 2, 64)];
    let want = reference(&reqs, 12, latency);
    let (mut k, mut net, a, _) = two_nodes(&p, true);
    let f = |id, len| Frame::new(FrameId(id), MsgId(id), vec![0x5A; len]);
    k.post(a, Time(0), Sys::Mac(MacMsg::Transmit { frame: f(1, 64) }));
    // Past the end of frame 1 (576 ns): the gap's wake-up for 672 ns is queued now.
    k.run_until(&mut net, Time(600_000));
    k.post(
        a,
        Time(84 * P),
        Sys::Mac(MacMsg::Transmit { frame: f(2, 64) }),
    );
    k.run_to_idle(&mut net);
    let got: Vec<_> = k
        .trace()
        .transitions()
        .iter()
        .filter(|t| t.component == a)
        .map(|t| (t.time.as_ps(), t.from, t.to))
        .collect();
    assert_eq!(got, want.transitions);
    assert!(got.contains(&(672_000, "ifg", "preamble")));
}
