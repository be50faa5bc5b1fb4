//! The engine's inputs taken by the GEC in the engine's event
//! (`Gec::take_engine_input`) against the same inputs sent as messages: two cards send
//! frames of random lengths both ways at random instants, the engine stand-ins give
//! received buffers back after random delays (one clock: placed; longer: sent), and
//! runs are cut at random instants. Every frame is sent, completed and received at the
//! same instants with the same bytes, and the GECs, DP83820s and buses count the same.
//! Inputs are taken both ways (in the engine's event, and queued at their place when an
//! event for the GEC comes first); one taken a clock late is caught.

mod card;

use card::{frame_bytes, run_until_ready, two_cards, Cards, Setup, Sys};
use proptest::prelude::*;
use sim_kernel::{Cycles, Duration, MsgId};

/// A run's plan: per card, frames (length, the instant after ready in ns its `Kick`
/// comes); the release delay; the instants (ns after ready) the run is cut at.
#[derive(Clone, Debug)]
struct Plan {
    frames: [Vec<(usize, u64)>; 2],
    release: u64,
    stops: Vec<u64>,
}

/// What a run shows: every engine record with its instant, the counters of both
/// cards; and the GEC inputs taken and queued.
fn run(placed: bool, skew: u64, plan: &Plan) -> (String, (u64, u64)) {
    let s = Setup {
        release: Some(Cycles(plan.release)),
        gec_inputs_placed: placed,
        ..Setup::default()
    };
    let (mut k, mut w) = two_cards(&s);
    for c in 0..2 {
        w.gec_mut(c).set_input_skew_cycles(skew);
    }
    let ready = run_until_ready(&mut k, &mut w);
    for (c, frames) in plan.frames.iter().enumerate() {
        for (i, &(len, at)) in frames.iter().enumerate() {
            let msg = MsgId(c as u64 * 1000 + i as u64);
            let f = frame_bytes(len, u8::try_from(c).unwrap(), msg.0 + 5);
            w.engine(c).to_send.push_back((f, msg));
            let e = w.ids[c].engine;
            k.post(e, ready + Duration::from_ns(at), Sys::Kick);
        }
    }
    for &t in &plan.stops {
        k.run_until(&mut w, ready + Duration::from_ns(t));
    }
    k.run_to_idle(&mut w);
    (observe(&mut w), totals(&w))
}

fn observe(w: &mut Cards) -> String {
    let mut out = String::new();
    for c in 0..2 {
        let e = w.engine(c);
        let rx: Vec<_> =
            e.rx.iter()
                .map(|g| (g.at, g.slot, g.len, g.bytes.clone()))
                .collect();
        out += &format!("{:?} {:?} {:?} {}\n", e.sent, e.tx_done, rx, e.max_held);
        out += &format!(
            "{:?} {:?} {:?} {:?}\n",
            w.gec(c).stats(),
            w.dpb(c).stats(),
            w.dpm(c).stats(),
            w.bus(c).stats()
        );
    }
    out
}

fn totals(w: &Cards) -> (u64, u64) {
    (0..2).fold((0, 0), |(a, b), c| {
        let (x, y) = w.gec(c).engine_inputs();
        (a + x, b + y)
    })
}

fn plan_strategy() -> impl Strategy<Value = Plan> {
    let frames = || prop::collection::vec((60usize..=1514, 0u64..40_000), 1..8);
    (
        frames(),
        frames(),
        prop_oneof![Just(1u64), 2u64..40],
        prop::collection::vec(0u64..60_000, 0..3),
    )
        .prop_map(|(a, b, release, mut stops)| {
            stops.sort_unstable();
            Plan {
                frames: [a, b],
                release,
                stops,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Taken in the engine's event or sent, the inputs give the same run.
    #[test]
    fn inputs_taken_in_the_engines_event_run_as_sent(plan in plan_strategy()) {
        let (reference, none) = run(false, 0, &plan);
        prop_assert_eq!(none, (0, 0));
        let (placed, _) = run(true, 0, &plan);
        prop_assert_eq!(reference, placed);
    }
}

/// A fixed plan: frames both ways, some at once, buffers given back a clock later.
fn busy_plan() -> Plan {
    let a: Vec<_> = (0..12)
        .map(|i| (60 + 113 * i, 700 * (i as u64 % 4)))
        .collect();
    let b: Vec<_> = (0..12)
        .map(|i| (1514 - 97 * i, 900 * (i as u64 % 3)))
        .collect();
    Plan {
        frames: [a, b],
        release: 1,
        stops: vec![5_000, 20_000],
    }
}

/// Inputs are taken in the engine's event and queued at their place in such runs.
#[test]
fn inputs_are_taken_and_queued() {
    let (reference, _) = run(false, 0, &busy_plan());
    let (placed, (taken, queued)) = run(true, 0, &busy_plan());
    assert_eq!(reference, placed);
    assert!(taken > 0, "taken {taken}");
    assert!(queued > 0, "queued {queued}");
}

/// Inputs taken a clock late are caught.
#[test]
fn an_input_taken_one_clock_late_is_caught() {
    let (reference, _) = run(false, 0, &busy_plan());
    let (skewed, _) = run(true, 1, &busy_plan());
    assert_ne!(reference, skewed);
}
