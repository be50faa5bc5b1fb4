//! Duplication and reordering on the wire (`gige_mac::fault::order`) between two MAC
//! ports: a duplicated frame arrives twice, the copy one inter-frame gap and a preamble
//! after the original, and frames behind it wait; a held frame arrives after the next
//! one if it comes within the hold, or late but in order when nothing follows; every frame arrives good (the far
//! line never carries two frames at once); the counters say what happened; the same
//! seed gives the same order.

mod common;

use common::{frame, mac, send, two_nodes, NetParts};
use gige_mac::{GigeParams, Received, WireFaultParams, WireFaultStats, WireFaults};
use sim_kernel::{Duration, Time};

/// One GMII byte time.
const BYTE: Duration = Duration(8_000);

fn order(duplicate: f64, reorder: f64) -> WireFaultParams {
    WireFaultParams {
        duplicate,
        reorder,
        ..WireFaultParams::default()
    }
}

/// Sends `n` 200-byte frames (ids 0..n) from a to b, all queued at time 0 (back to back
/// on the wire), with `params` on a's wire; returns what b accepted, in order, and a's
/// fault counters. Asserts b refused none.
fn run(params: WireFaultParams, seed: u64, n: u64) -> (Vec<Received>, WireFaultStats) {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    net.port_mut(a)
        .tx_mut()
        .set_faults(WireFaults::new(params, seed));
    for i in 0..n {
        send(
            &mut k,
            a,
            Time::ZERO,
            frame(i, mac(2), mac(1), &[i as u8; 182]),
        );
    }
    k.run_to_idle(&mut net);
    assert_eq!(
        net.port(a).sent().len() as u64,
        n,
        "the transmitter does not know"
    );
    assert!(
        net.port(b).failures().is_empty(),
        "{:?}",
        net.port(b).failures()
    );
    let got = net.port(b).inbox().to_vec();
    let stats = net
        .port(a)
        .tx()
        .faults()
        .map(|f| *f.stats())
        .unwrap_or_default();
    (got, stats)
}

fn ids(got: &[Received]) -> Vec<u64> {
    got.iter().map(|r| r.frame.id.0).collect()
}

/// The far line carries one frame at a time, a gap and a preamble between frames.
fn serial(got: &[Received]) {
    for w in got.windows(2) {
        assert!(
            w[1].first_byte_at >= w[0].last_byte_at + BYTE * (12 + 9),
            "frames overlap or crowd on the far line: {:?} then {:?}",
            (w[0].first_byte_at, w[0].last_byte_at),
            (w[1].first_byte_at, w[1].last_byte_at)
        );
    }
}

#[test]
fn every_frame_duplicated_arrives_twice_its_copy_a_gap_later() {
    let (got, s) = run(order(1.0, 0.0), 1, 4);
    assert_eq!(ids(&got), vec![0, 0, 1, 1, 2, 2, 3, 3]);
    for pair in got.chunks(2) {
        assert_eq!(
            pair[0].frame, pair[1].frame,
            "the copy is byte for byte the same"
        );
        assert_eq!(
            pair[1].first_byte_at,
            pair[0].last_byte_at + BYTE * (12 + 9),
            "copy starts one gap and a preamble after the original"
        );
    }
    serial(&got);
    assert_eq!((s.frames, s.frames_duplicated), (4, 4));
    // Frames 1..3 wait for the copies ahead of them.
    assert_eq!(s.frames_delayed, 3);
    assert_eq!((s.frames_held, s.frames_reordered, s.spoiled()), (0, 0, 0));
}

#[test]
fn a_held_frame_arrives_after_the_next_one() {
    // Every frame that may be held is: 0 is held, 1 overtakes it; 2 is held, 3 overtakes
    // it; 4 is held and nothing follows, so it goes when the line is idle.
    let (got, s) = run(order(0.0, 1.0), 1, 5);
    assert_eq!(ids(&got), vec![1, 0, 3, 2, 4]);
    serial(&got);
    assert_eq!((s.frames_held, s.frames_reordered), (3, 2));
    assert_eq!(s.frames_duplicated, 0);
    // Frame 0 follows frame 1 one gap and a preamble later.
    assert_eq!(got[1].first_byte_at, got[0].last_byte_at + BYTE * (12 + 9));
    // Frame 0 takes the far line's slot that frame 2, held in its turn, leaves free:
    // nothing has to wait.
    assert_eq!(s.frames_delayed, 0);
}

#[test]
fn a_lone_held_frame_arrives_late_but_arrives() {
    let (held, s) = run(order(0.0, 1.0), 1, 1);
    let (clean, _) = run(order(0.0, 0.0), 1, 1);
    assert_eq!(ids(&held), vec![0]);
    assert_eq!((s.frames_held, s.frames_reordered), (1, 0));
    // Released at the end of the transmitter's gap after it: one frame time and a gap
    // (plus the preamble again) later than without the fault.
    let late = held[0].first_byte_at - clean[0].first_byte_at;
    assert_eq!(late, BYTE * (200 + 12 + 8));
}

#[test]
fn duplicated_and_held_at_once_and_the_same_seed_gives_the_same_order() {
    let p = order(0.3, 0.3);
    let (a, sa) = run(p, 7, 40);
    let (b, sb) = run(p, 7, 40);
    let (c, _) = run(p, 8, 40);
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(sa, sb);
    assert_ne!(ids(&a), ids(&c));
    serial(&a);
    // Every frame arrives, once more for each duplicate.
    assert_eq!(a.len() as u64, 40 + sa.frames_duplicated);
    let mut sorted = ids(&a);
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, (0..40).collect::<Vec<_>>());
    assert!(
        sa.frames_duplicated > 3 && sa.frames_reordered > 3,
        "{sa:?}"
    );
    // A frame is out of order exactly where a held one was overtaken.
    let inversions = ids(&a).windows(2).filter(|w| w[1] < w[0]).count() as u64;
    assert_eq!(inversions, sa.frames_reordered);
}

/// Two 200-byte frames, the second queued `apart` after the first, with every frame
/// that may be held held for at most `hold`; what b accepted, and a's counters.
fn spaced(hold: Duration, apart: Duration) -> (Vec<Received>, WireFaultStats) {
    let p = GigeParams::default();
    let (mut k, mut net, a, b) = two_nodes(&p, false);
    let params = WireFaultParams {
        reorder: 1.0,
        reorder_hold: hold,
        ..WireFaultParams::default()
    };
    net.port_mut(a)
        .tx_mut()
        .set_faults(WireFaults::new(params, 1));
    send(&mut k, a, Time::ZERO, frame(0, mac(2), mac(1), &[0; 182]));
    send(
        &mut k,
        a,
        Time::ZERO + apart,
        frame(1, mac(2), mac(1), &[1; 182]),
    );
    k.run_to_idle(&mut net);
    assert!(net.port(b).failures().is_empty());
    let stats = *net.port(a).tx().faults().unwrap().stats();
    (net.port(b).inbox().to_vec(), stats)
}

#[test]
fn a_held_frame_waits_its_hold_for_the_next_one_then_goes_alone() {
    let apart = Duration::from_ns(20_000);
    // Held up to 30 us: the frame sent 20 us later overtakes it.
    let (got, s) = spaced(Duration::from_ns(30_000), apart);
    assert_eq!(ids(&got), vec![1, 0]);
    assert_eq!((s.frames_held, s.frames_reordered), (1, 1));
    serial(&got);
    // Held up to 10 us: it goes alone, 10 us after its end, before the next one.
    let (got, s) = spaced(Duration::from_ns(10_000), apart);
    assert_eq!(ids(&got), vec![0, 1]);
    assert_eq!((s.frames_held, s.frames_reordered), (2, 0));
    let (clean, _) = run(order(0.0, 0.0), 1, 1);
    // Late by the hold, plus the rest of its own bytes and a preamble.
    assert_eq!(
        got[0].first_byte_at - clean[0].first_byte_at,
        Duration::from_ns(10_000) + BYTE * (200 + 8)
    );
}

#[test]
fn off_is_not_installed() {
    let p = GigeParams::default();
    let (_k, mut net, a, _b) = two_nodes(&p, false);
    net.port_mut(a)
        .tx_mut()
        .set_faults(WireFaults::new(order(0.0, 0.0), 1));
    assert!(net.port(a).tx().faults().is_none());
}
