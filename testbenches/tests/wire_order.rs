//! `faults.duplicate` and `faults.reorder` through the whole system (4-byte RDMA-write
//! ping-pong, unreliable VIs, 2 warm-up and 3 measured round trips): the wire delivers
//! every frame of node 0 twice, every copy reaches the receiving card, which places
//! the bytes once (a copy is out of sequence); a frame held back arrives late but whole,
//! nothing is lost, and the one-way latency grows by the hold. Counters are read from
//! `System::wire_faults`.

use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{run_pingpong, Op, PingPongSpec, RecvPost};

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
    let cfg = config(&["faults.reorder=1.0"]);
    let r = run_pingpong(&cfg, spec()).expect("a held frame is released, never lost");
    let (a, b) = (r.system.wire_faults(0), r.system.wire_faults(1));
    assert!(
        a.frames_held >= ROUND_TRIPS && b.frames_held >= ROUND_TRIPS,
        "{a:?} {b:?}"
    );
    assert_eq!(a.spoiled() + b.spoiled(), 0);
    // The ping-pong's frames never travel back to back: each held one goes when the
    // line is idle, one frame time and a gap later, in order.
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
