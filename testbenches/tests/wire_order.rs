//! `faults.duplicate` and `faults.reorder` through the whole system (4-byte RDMA-write
//! ping-pong, unreliable VIs, 2 warm-up and 3 measured round trips): the wire delivers
//! every frame of node 0 twice, every copy reaches the receiving card, which places
//! the bytes once (a copy is out of sequence); a frame held back arrives late but whole,
//! nothing is lost, and the one-way latency grows by the hold; a fragment of an 8 KB
//! message held back is overtaken by the next one: a reliable VI drops the frame after
//! the gap and recovers by going back, an unreliable one fails the message. Counters are read from `System::wire_faults`.

use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{run_pingpong, Op, PingPongSpec, RecvPost, RunEnd, System};
use via_abi::bar::Reliability;

fn config(sets: &[&str]) -> SystemConfig {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets).expect("valid config")
}

const ROUND_TRIPS: u64 = 5;

fn spec() -> PingPongSpec {
    PingPongSpec {
        op: Op::RdmaWrite,
        size: 4,
        iterations: 3,
        warmup: 2,
        trace: false,
        recv_post: RecvPost::Timed,
    }
}

#[test]
fn duplicated_frames_are_placed_once_and_the_copies_counted() {
    let base = run_pingpong(&config(&[]), spec()).expect("runs");
    let cfg = config(&["faults.duplicate=1.0", "faults.direction=0-to-1"]);
    let r = run_pingpong(&cfg, spec()).expect("a 4-byte ping-pong survives copies");
    let w = r.system.wire_faults(0);
    assert_eq!(w.frames_duplicated, w.frames, "{w:?}");
    assert!(w.frames >= ROUND_TRIPS, "{w:?}");
    assert_eq!(
        r.system.wire_faults(1),
        Default::default(),
        "1-to-0 untouched"
    );
    let rx = r.system.engine(1).expect("engine 1");
    // Each RDMA write's 4 bytes are placed once, as without the fault.
    assert_eq!(
        rx.stats().rdma_bytes_placed,
        base.system.engine(1).unwrap().stats().rdma_bytes_placed
    );
    // Every copy reached the card as a good frame (and was refused there as out of
    // sequence: nothing more was placed).
    assert_eq!(
        rx.stats().rx_frames,
        base.system.engine(1).unwrap().stats().rx_frames + w.frames_duplicated
    );
    // Copies follow their frames: the pings arrive about as early as without the fault
    // (the set-up's extra frames shift later timing a little, either way).
    let (got, want) = (r.one_way.0 as f64, base.one_way.0 as f64);
    assert!((got - want).abs() < want * 0.01, "{got} vs {want}");
}

#[test]
fn held_frames_arrive_late_but_all_arrive() {
    let base = run_pingpong(&config(&[]), spec()).expect("runs");
    // Released when the line is idle (hold 0): with the preset's 20 us hold, frames of
    // the connection set-up overtake one another and the card refuses them.
    let cfg = config(&["faults.reorder=1.0", "faults.reorder_hold_us=0"]);
    let r = run_pingpong(&cfg, spec()).expect("a held frame is released, never lost");
    let (a, b) = (r.system.wire_faults(0), r.system.wire_faults(1));
    assert!(
        a.frames_held >= ROUND_TRIPS && b.frames_held >= ROUND_TRIPS,
        "{a:?} {b:?}"
    );
    assert_eq!(a.spoiled() + b.spoiled(), 0);
    // A 4-byte message is one frame and the next frame of its direction comes much
    // later: each held one goes alone when the line is idle, late and in order.
    assert!(
        r.one_way > base.one_way,
        "{:?} vs {:?}",
        r.one_way,
        base.one_way
    );
    let rx = r.system.engine(1).expect("engine 1");
    assert_eq!(
        rx.stats().rx_frames,
        base.system.engine(1).unwrap().stats().rx_frames
    );
    assert_eq!(
        rx.stats().rdma_bytes_placed,
        base.system.engine(1).unwrap().stats().rdma_bytes_placed
    );
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let cfg = config(&["faults.duplicate=0.5", "faults.reorder=0.5"]);
    let a = run_pingpong(&cfg, spec());
    let b = run_pingpong(&cfg, spec());
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.one_way, b.one_way);
            assert_eq!(a.stats.events, b.stats.events);
            assert_eq!(a.system.wire_faults(0), b.system.wire_faults(0));
            assert_eq!(a.system.wire_faults(1), b.system.wire_faults(1));
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("different ends: {:?} / {:?}", a.is_ok(), b.is_ok()),
    }
}

/// An 8 KB RDMA-write ping-pong (six frames a message), whatever its end.
fn eight_kb(cfg: &SystemConfig, reliability: Reliability) -> (RunEnd, System) {
    let mut sys = System::build(cfg, false).expect("builds");
    let mut a = PingPongParams::new(8192, 1, sys.macs[1]);
    a.warmup = 1;
    a.reliability = reliability;
    a.wait_timeout = host_driver::Timeout::Infinite;
    let b = PingPongParams {
        peer: sys.macs[0],
        ..a
    };
    sys.cpu_mut(0)
        .unwrap()
        .load(move |v| rdma_pingpong_initiator(v, a));
    sys.cpu_mut(1)
        .unwrap()
        .load(move |v| rdma_pingpong_responder(v, b));
    sys.start();
    (sys.run_programs(), sys)
}

/// Every frame of node 0 that may be held is held up to 20 us (the preset's hold): the
/// next fragment of an 8 KB message, 12 to 15 us behind, overtakes it.
fn overtaking() -> SystemConfig {
    config(&["faults.reorder=1.0", "faults.direction=0-to-1"])
}

#[test]
fn an_overtaken_fragment_is_recovered_by_a_reliable_vi() {
    // The receiving card drops the fragment after the gap, asks the sender to go back,
    // and the resent fragments complete the message: the run finishes, bytes checked
    // by the programs.
    let (end, sys) = eight_kb(&overtaking(), Reliability::ReliableDelivery);
    assert_eq!(end, RunEnd::Finished, "{end:?}");
    let w = sys.wire_faults(0);
    assert!(w.frames_reordered >= 1, "{w:?}");
    assert_eq!(w.spoiled(), 0);
    assert!(sys.engine(1).unwrap().stats().rx_out_of_order >= 1);
    assert!(sys.engine(0).unwrap().stats().frames_resent >= 1);
}

#[test]
fn an_overtaken_fragment_fails_its_message_on_an_unreliable_vi() {
    // Nothing is resent: the receiving card takes the frame after the gap as out of
    // sequence and fails the message; the responder never sees its last byte.
    let (end, sys) = eight_kb(&overtaking(), Reliability::Unreliable);
    assert!(
        matches!(end, RunEnd::Stalled(_) | RunEnd::ProgramFailed),
        "{end:?}"
    );
    assert!(sys.wire_faults(0).frames_reordered >= 1);
    assert!(sys.engine(1).unwrap().stats().rx_sequence_errors >= 1);
    assert_eq!(sys.engine(0).unwrap().stats().frames_resent, 0);
}

#[test]
fn duplicated_frames_are_dropped_by_a_reliable_vi() {
    let cfg = config(&["faults.duplicate=1.0", "faults.direction=0-to-1"]);
    let (end, sys) = eight_kb(&cfg, Reliability::ReliableDelivery);
    assert_eq!(end, RunEnd::Finished, "{end:?}");
    let w = sys.wire_faults(0);
    assert_eq!(w.frames_duplicated, w.frames, "{w:?}");
    let rx = sys.engine(1).unwrap().stats();
    assert!(rx.rx_duplicates >= 1, "{rx:?}");
    assert_eq!(rx.rdma_bytes_placed, 2 * 8192, "each message placed once");
}
