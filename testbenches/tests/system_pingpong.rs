//! End-to-end ping-pong through the whole system model (host CPUs running the VIPL
//! programs, host bridges, PCI buses, cards with engine, ATT, DMA, GEC, DP83820, wire):
//! every iteration's data is verified byte for byte by the programs themselves, and the
//! run is deterministic.

use testbenches::config::{SimStepping, SystemConfig};
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn run(op: Op, size: u32, trace: bool) -> testbenches::system::PingPongRun {
    run_stepped(op, size, trace, SimStepping::Fast)
}

fn run_stepped(
    op: Op,
    size: u32,
    trace: bool,
    stepping: SimStepping,
) -> testbenches::system::PingPongRun {
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    cfg.sim.stepping = stepping;
    let spec = PingPongSpec {
        op,
        size,
        iterations: 3,
        warmup: 1,
        trace,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    run_pingpong(&cfg, spec).unwrap_or_else(|e| panic!("{} {size} B: {e}", op.name()))
}

fn check_verified(r: &testbenches::system::PingPongRun) {
    let size = u64::from(r.spec.size);
    assert_eq!(r.initiator.iterations.len(), 4);
    assert_eq!(r.responder.iterations.len(), 4);
    for it in r.initiator.iterations.iter().chain(&r.responder.iterations) {
        assert_eq!(
            it.verified_bytes, size,
            "iteration {} not verified",
            it.index
        );
        assert!(it.end > it.start);
    }
    assert!(
        r.one_way_ns() > 1_000.0,
        "a one-way trip cannot take under 1 us here"
    );
}

#[test]
fn rdma_write_pingpong_verifies_every_iteration() {
    // 4 B (one frame), 1461 B (two frames: 1460 + 1), 5000 B (four frames, two pages).
    for size in [4, 1461, 5000] {
        check_verified(&run(Op::RdmaWrite, size, false));
    }
}

#[test]
fn send_recv_pingpong_verifies_every_iteration() {
    for size in [4, 1461, 5000] {
        check_verified(&run(Op::SendRecv, size, false));
    }
}

#[test]
fn runs_are_deterministic() {
    let a = run(Op::RdmaWrite, 100, true);
    let b = run(Op::RdmaWrite, 100, true);
    assert_eq!(a.one_way, b.one_way);
    assert_eq!(a.stats.events, b.stats.events);
    assert_eq!(
        a.system.kernel.trace().digest(),
        b.system.kernel.trace().digest()
    );
    assert!(!a.system.kernel.trace().spans().is_empty());
}

#[test]
fn bigger_messages_take_longer() {
    let small = run(Op::RdmaWrite, 4, false).one_way;
    let big = run(Op::RdmaWrite, 4096, false).one_way;
    assert!(
        big > small,
        "4096 B ({big}) should take longer than 4 B ({small})"
    );
}

#[test]
fn every_preset_runs_both_operations() {
    for preset in [
        "hvia-ge",
        "hvia-ge-64-66",
        "att-in-host",
        "burst-128",
        "rdma-read",
    ] {
        let cfg = SystemConfig::from_preset(preset).expect("preset");
        for op in [Op::RdmaWrite, Op::SendRecv] {
            let spec = PingPongSpec {
                op,
                size: 3000,
                iterations: 2,
                warmup: 1,
                trace: false,
                recv_post: testbenches::system::RecvPost::Timed,
            };
            let r =
                run_pingpong(&cfg, spec).unwrap_or_else(|e| panic!("{preset} {}: {e}", op.name()));
            check_verified_n(&r, 3);
        }
    }
}

fn check_verified_n(r: &testbenches::system::PingPongRun, n: usize) {
    let size = u64::from(r.spec.size);
    assert_eq!(r.initiator.iterations.len(), n);
    for it in r.initiator.iterations.iter().chain(&r.responder.iterations) {
        assert_eq!(
            it.verified_bytes, size,
            "iteration {} not verified",
            it.index
        );
    }
}

/// The what-ifs move the numbers the way the hardware says they must.
#[test]
fn what_ifs_change_latency_in_the_expected_direction() {
    let one_way = |preset: &str| {
        let cfg = SystemConfig::from_preset(preset).expect("preset");
        let spec = PingPongSpec {
            op: Op::RdmaWrite,
            size: 4,
            iterations: 2,
            warmup: 1,
            trace: false,
            recv_post: testbenches::system::RecvPost::Timed,
        };
        run_pingpong(&cfg, spec).expect("run").one_way
    };
    let base = one_way("hvia-ge");
    assert!(
        one_way("hvia-ge-64-66") < base,
        "faster buses must cut latency"
    );
    assert!(
        one_way("att-in-host") > base,
        "ATT reads over PCI must add latency"
    );
}

/// The thread's spare buffers (`sim_kernel::spare`) change allocations, never a result:
/// each run below gives the same latencies, program reports, deliveries, events,
/// component counters and (traced) trace digest on a fresh thread (no spare buffer
/// yet), again on the same thread (the first run's buffers kept), and on a thread whose
/// cache holds buffers of other capacities. The runs cover where the buffers circulate:
/// untraced fast stepping (the buses' folds) for both operations, a traced run and
/// exact stepping (the GEC stores the receive-data writes itself).
#[test]
fn spare_buffers_change_no_result() {
    let cases = [
        (Op::RdmaWrite, 8192, false, SimStepping::Fast),
        (Op::SendRecv, 4096, false, SimStepping::Fast),
        (Op::RdmaWrite, 2000, true, SimStepping::Fast),
        (Op::RdmaWrite, 2000, false, SimStepping::Exact),
    ];
    let once = move || {
        cases.map(|(op, size, trace, stepping)| {
            let r = run_stepped(op, size, trace, stepping);
            check_verified(&r);
            (
                r.one_way,
                r.initiator.clone(),
                r.responder.clone(),
                r.delivery.clone(),
                r.stats.events,
                testbenches::stats::of_system(&r.system),
                trace.then(|| r.system.kernel.trace().digest()),
            )
        })
    };
    let cold = std::thread::spawn(once).join().expect("cold runs");
    let (first, warm) = std::thread::spawn(move || (once(), once()))
        .join()
        .expect("warm runs");
    let odd = std::thread::spawn(move || {
        for cap in [2048, 3000, 9000, 16 * 1024] {
            for _ in 0..40 {
                sim_kernel::spare::give_bytes(Vec::with_capacity(cap));
                sim_kernel::spare::give_words(Vec::with_capacity(cap / 8));
            }
        }
        once()
    })
    .join()
    .expect("runs with odd spare buffers");
    assert!(cold[0].4 > 0 && !cold[0].5.is_empty() && cold[2].6.is_some());
    assert_eq!(cold, first, "a fresh thread, twice");
    assert_eq!(cold, warm, "with the first runs' buffers kept");
    assert_eq!(cold, odd, "with buffers of other capacities kept");
}
