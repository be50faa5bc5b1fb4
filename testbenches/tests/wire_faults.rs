//! `[faults]` through the whole system: a 4-byte RDMA-write ping-pong whose frames are
//! lost on the wire cannot finish (unreliable VIs, nothing retransmits; a connect request
//! is resent and then given up); the run ends with a stall naming the waiting CPUs and
//! the wire's loss counters, or with the program's error, never a hang.
//! Faults that are installed but never strike change no result, and every counter is
//! reachable from the `System` after the run.

use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{
    run_pingpong, Op, PingPongSpec, RecvPost, RunEnd, RunError, Stall, StallReason, System,
};

fn config(sets: &[&str]) -> SystemConfig {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets).expect("valid config")
}

fn spec() -> PingPongSpec {
    PingPongSpec {
        op: Op::RdmaWrite,
        size: 4,
        iterations: 1,
        warmup: 1,
        trace: false,
        recv_post: RecvPost::Timed,
    }
}

/// A 4-byte RDMA-write ping-pong on `cfg`, as `run_pingpong` makes it, keeping the
/// system whatever the end.
fn pingpong(cfg: &SystemConfig) -> (RunEnd, System) {
    let mut sys = System::build(cfg, false).expect("builds");
    let mut a = PingPongParams::new(4, 1, sys.macs[1]);
    a.warmup = 1;
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
    let end = sys.run_programs();
    (end, sys)
}

fn stalled(end: RunEnd) -> Stall {
    match end {
        RunEnd::Stalled(s) => s,
        other => panic!("the run must stall, it ended {other:?}"),
    }
}

/// The losses the stall names for component `name`.
fn losses_of<'a>(stall: &'a Stall, name: &str) -> &'a str {
    stall
        .losses
        .iter()
        .find(|(n, _)| n == name)
        .map_or("", |(_, what)| what.as_str())
}

/// The initiator's program failed: its error.
fn initiator_failed(end: RunEnd, sys: &mut System) -> String {
    assert!(matches!(end, RunEnd::ProgramFailed), "{end:?}");
    match sys.cpu_mut(0).and_then(host_driver::HostCpu::take_outcome) {
        Some(Err(e)) => e.to_string(),
        other => panic!("node 0 must fail, it ended {other:?}"),
    }
}

#[test]
fn total_loss_from_node_0_fails_the_connect_after_its_resends() {
    let cfg = config(&["faults.frame_loss=1.0", "faults.direction=0-to-1"]);
    let (end, mut sys) = pingpong(&cfg);
    // The connect request never arrives: the card resends it `retx_limit` times, then
    // answers VI_RESULT TimedOut; the program's connect attempts all time out.
    let err = initiator_failed(end, &mut sys);
    assert!(
        err.contains("VipConnectRequest returned VIP_TIMEOUT"),
        "{err}"
    );
    let e0 = sys.engine(0).unwrap().stats();
    let limit = u64::from(cfg.card.engine.retx_limit);
    assert!(e0.connect_timeouts >= 1, "{e0:?}");
    assert_eq!(e0.connect_requests_resent, limit * e0.connect_timeouts);
    // The counters, from the system after the run.
    let w0 = sys.wire_faults(0);
    assert!(w0.frames_lost >= 1 && w0.frames_lost == w0.frames, "{w0:?}");
    assert_eq!(
        sys.wire_faults(1),
        Default::default(),
        "1-to-0 has no faults"
    );
    let m1 = sys.mac_side(1).unwrap();
    assert_eq!(
        m1.stats().rx_good + m1.stats().rx_bad,
        0,
        "node 1 heard nothing"
    );
    // The same through run_pingpong: a run error, not a hang.
    let err = run_pingpong(&cfg, spec()).err().expect("the run must fail");
    assert!(
        matches!(&err, RunError::Program { node: 0, reason } if reason.contains("VIP_TIMEOUT")),
        "{err}"
    );
}

#[test]
fn total_loss_from_node_1_loses_every_accept() {
    let cfg = config(&["faults.frame_loss=1.0", "faults.direction=1-to-0"]);
    let (end, mut sys) = pingpong(&cfg);
    let err = initiator_failed(end, &mut sys);
    assert!(err.contains("VIP_TIMEOUT"), "{err}");
    assert_eq!(
        sys.wire_faults(0),
        Default::default(),
        "0-to-1 has no faults"
    );
    let m1 = sys.mac_side(1).unwrap().stats();
    assert!(m1.rx_good > 0, "node 0's connect requests arrived");
    assert!(sys.wire_faults(1).frames_lost > 0);
    let e1 = sys.engine(1).unwrap().stats();
    assert!(
        e1.connect_accepts_repeated > 0,
        "node 1 accepted the repeated requests again: {e1:?}"
    );
}

#[test]
fn a_link_down_in_the_ping_pong_leaves_the_cpus_polling_and_is_named() {
    // Set-up done (open, register, connect, exchange) on a perfect link, then the link
    // goes down for good before the first ping.
    let clean = run_pingpong(&config(&[]), spec()).expect("runs");
    let setup_us = clean.initiator.setup_done.0 / 1_000_000;
    let at = format!("faults.link_down_at_us={}", setup_us + 1);
    let cfg = config(&[at.as_str(), "faults.link_down_for_us=100000"]);
    let (end, sys) = pingpong(&cfg);
    let stall = stalled(end);
    let text = stall.to_string();
    // Both CPUs wait for memory only a DMA write could change: only polls are left.
    assert_eq!(stall.reason, StallReason::OnlyPolls, "{text}");
    assert!(text.contains("with no deadline"), "{text}");
    assert!(
        losses_of(&stall, "n0.dp83820.mac").contains("to the link going down"),
        "{text}"
    );
    assert!(sys.wire_faults(0).link_down_lost >= 1);
}

#[test]
fn bit_errors_are_dropped_as_crc_errors_and_named() {
    let cfg = config(&["faults.bit_error_rate=1e-3"]);
    let (end, sys) = pingpong(&cfg);
    let stall = stalled(end);
    let text = stall.to_string();
    let corrupted = sys.wire_faults(0).frames_corrupted + sys.wire_faults(1).frames_corrupted;
    let crc: u64 = (0..2)
        .map(|n| sys.mac_side(n).unwrap().stats().rx_crc_errors)
        .sum();
    assert!(corrupted >= 1, "{text}");
    assert_eq!(
        crc, corrupted,
        "every corrupted frame is a CRC error: {text}"
    );
    assert!(text.contains("with CRC errors"), "{text}");
    assert!(text.contains("frames corrupted on its wire"), "{text}");
}

#[test]
fn faults_that_never_strike_change_no_result() {
    let base = run_pingpong(&config(&[]), spec()).expect("runs");
    assert_eq!(base.system.wire_faults(0), Default::default());
    assert!(base.system.mac_side(0).unwrap().tx().faults().is_none());
    // A window long after the run: the faults are installed and see every frame.
    let later = config(&[
        "faults.link_down_at_us=500000000",
        "faults.link_down_for_us=1",
    ]);
    let r = run_pingpong(&later, spec()).expect("runs");
    assert_eq!(r.one_way, base.one_way);
    assert_eq!(r.stats.events, base.stats.events);
    assert_eq!(r.initiator, base.initiator);
    let w = r.system.wire_faults(0);
    assert!(w.frames > 0 && w.spoiled() == 0, "{w:?}");
}
