//! `GmiiTx::set_lazy_gap`: a gap with no frame queued behind it ends without a wake-up.
//! Untraced runs of frames requested at random edges (around the ends of gaps, on
//! them, long after), with the lazy gap and without, cut into runs at random instants:
//! the far end sees every frame start and end at the same instants, the transmitter
//! counts the same (its gaps once settled where the run ends), and the lazy runs take
//! fewer events. A wake-up queued a clock late is caught.

mod common;

use common::{two_nodes, NetParts, Sys};
use gige_mac::{Frame, FrameId, GigeParams, MacMsg, Millimetres};
use proptest::prelude::*;
use sim_kernel::{Kernel, MsgId, Time};

const P: u64 = 8_000; // GMII clock [ps]

#[derive(Debug, PartialEq, Eq)]
struct Seen {
    /// (frame, first byte at the far end, last byte, start?, delivered at)
    rx: Vec<(u64, u64, u64, bool, u64)>,
    /// (frames, bytes, busy, ifg) of the transmitter.
    stats: (u64, u64, u64, u64),
}

/// `reqs`: (edge, id, len); `cuts`: edges at which a run ends and the next begins.
fn run(reqs: &[(u64, u64, u64)], ifg: u32, cuts: &[u64], lazy: bool, skew: u64) -> (Seen, u64) {
    let mut p = GigeParams::default();
    p.wire.min_ifg_bytes = ifg;
    p.link.cable.length = Millimetres(1_500);
    let (mut k, mut net, a, b): (Kernel<Sys>, _, _, _) = two_nodes(&p, false);
    net.port_mut(a).tx_mut().set_lazy_gap(lazy);
    net.port_mut(a).tx_mut().set_lazy_gap_skew_clocks(skew);
    for &(edge, id, len) in reqs {
        let bytes: Vec<u8> = (0..len).map(|i| (i as u8) ^ (id as u8)).collect();
        let f = Frame::new(FrameId(id), MsgId(id), bytes);
        k.post(a, Time(edge * P), Sys::Mac(MacMsg::Transmit { frame: f }));
    }
    for &c in cuts {
        k.run_until(&mut net, Time(c * P));
    }
    k.run_to_idle(&mut net);
    net.port_mut(a).tx_mut().settle(Time::MAX);
    let rx = net
        .rx_log(b)
        .iter()
        .map(|e| {
            (
                e.id.0,
                e.first.as_ps(),
                e.last.as_ps(),
                e.start,
                e.at.as_ps(),
            )
        })
        .collect();
    let s = net.port(a).tx().stats();
    let seen = Seen {
        rx,
        stats: (s.frames, s.bytes.0, s.busy.0, s.ifg.0),
    };
    (seen, k.stats().events)
}

fn requests(gaps_lens: &[(u64, u64)]) -> Vec<(u64, u64, u64)> {
    let mut edge = 0;
    gaps_lens
        .iter()
        .zip(1u64..)
        .map(|(&(gap, len), id)| {
            edge += gap;
            (edge, id, len)
        })
        .collect()
}

#[test]
fn frames_on_and_around_the_end_of_a_gap() {
    // 8 + 64 + 12 = 84: the gap after frame 1 ends on edge 84.
    for second in [70, 83, 84, 85, 100, 400] {
        let reqs = [(0, 1, 64), (second, 2, 100), (second, 3, 60)];
        let (want, events) = run(&reqs, 12, &[], false, 0);
        let (got, lazy_events) = run(&reqs, 12, &[], true, 0);
        assert_eq!(got, want, "second frame at edge {second}");
        assert!(lazy_events < events, "no wake-up saved at edge {second}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_lazy_gap_changes_nothing_the_far_end_or_the_counters_see(
        gaps_lens in prop::collection::vec((0u64..200, 1u64..300), 1..12),
        ifg in prop_oneof![Just(12u32), 0u32..30],
        mut cuts in prop::collection::vec(0u64..3_000, 0..4),
    ) {
        cuts.sort_unstable();
        let reqs = requests(&gaps_lens);
        let (want, events) = run(&reqs, ifg, &cuts, false, 0);
        let (got, lazy_events) = run(&reqs, ifg, &cuts, true, 0);
        prop_assert_eq!(got, want);
        prop_assert!(lazy_events <= events);
    }
}

/// The comparison compares something: an end-of-gap wake-up queued a clock late moves
/// a frame.
#[test]
fn a_gap_wake_up_a_clock_late_is_caught() {
    let reqs = [(0, 1, 64), (80, 2, 100)];
    let (want, _) = run(&reqs, 12, &[], false, 0);
    let (late, _) = run(&reqs, 12, &[], true, 1);
    assert_ne!(late, want);
}
