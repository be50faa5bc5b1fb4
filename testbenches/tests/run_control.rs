//! Run control of the whole system (`System::run_programs`): a run advances however far
//! away its next event is, finishes when the programs return, stops at once when one
//! fails, and ends with a diagnosis naming the waiting CPU when it can never finish.

use host_driver::{PollCond, ProgramError, ProgramReport, Timeout};
use sim_kernel::{Cycles, Duration};
use testbenches::config::SystemConfig;
use testbenches::system::{RunEnd, StallReason, System};

fn system(sets: &[&str]) -> System {
    let mut cfg = SystemConfig::from_preset("hvia-ge").unwrap();
    for s in sets {
        cfg.apply_set(s).unwrap(); // no validation: some tests need refused values
    }
    System::build(&cfg, false).unwrap()
}

fn report() -> ProgramReport {
    ProgramReport::default()
}

#[test]
fn an_op_longer_than_a_slice_does_not_stop_the_run() {
    // One op of 40 ms of CPU time: the next event lies 40 slices ahead.
    let mut sys = system(&[]);
    sys.cpu_mut(0).unwrap().load(|v| async move {
        v.compute(Cycles(32_000_000)).await;
        Ok(report())
    });
    sys.cpu_mut(1)
        .unwrap()
        .load(|_| async move { Ok(report()) });
    sys.start();
    assert_eq!(sys.run_programs(), RunEnd::Finished);
    let (_, end) = sys.cpu(0).unwrap().run_times();
    assert!(end.unwrap().0 >= 40_000_000_000, "{end:?}");
}

#[test]
fn a_poll_nobody_can_end_is_a_stall_naming_the_cpu() {
    let mut sys = system(&[]);
    sys.cpu_mut(0).unwrap().load(|mut v| async move {
        let va = v.malloc(64, 64).await.map_err(|e| ProgramError::Vipl {
            call: "malloc",
            error: e,
        })?;
        v.poll_mem(va, PollCond::ByteEquals(7), Timeout::Infinite)
            .await
            .map_err(|e| ProgramError::Vipl {
                call: "poll",
                error: e,
            })?;
        Ok(report())
    });
    sys.cpu_mut(1)
        .unwrap()
        .load(|_| async move { Ok(report()) });
    sys.start();
    let RunEnd::Stalled(stall) = sys.run_programs() else {
        panic!("the run must stall");
    };
    assert_eq!(stall.reason, StallReason::OnlyPolls);
    assert_eq!(stall.waiting.len(), 1, "{stall}");
    assert_eq!(stall.waiting[0].0, "n0.host.cpu");
    let text = stall.to_string();
    assert!(text.contains("the byte to become 0x07"), "{text}");
    assert!(text.contains("with no deadline"), "{text}");
    // Detected within the first slices, not after a budget.
    assert!(stall.at.0 < 3_000_000_000, "{text}");
}

#[test]
fn a_poll_with_a_deadline_is_not_a_stall() {
    let mut sys = system(&[]);
    sys.cpu_mut(0).unwrap().load(|mut v| async move {
        let va = v.malloc(64, 64).await.map_err(|e| ProgramError::Vipl {
            call: "malloc",
            error: e,
        })?;
        let r = v
            .poll_mem(
                va,
                PollCond::ByteEquals(7),
                Timeout::After(Duration::from_ns(5_000_000)),
            )
            .await;
        assert!(r.is_err(), "nothing writes the byte");
        Ok(report())
    });
    sys.cpu_mut(1)
        .unwrap()
        .load(|_| async move { Ok(report()) });
    sys.start();
    assert_eq!(sys.run_programs(), RunEnd::Finished);
}

#[test]
fn a_failed_program_ends_the_run_at_once() {
    let mut sys = system(&[]);
    sys.cpu_mut(0)
        .unwrap()
        .load(|_| async move { Err(ProgramError::Protocol("gives up")) });
    sys.cpu_mut(1).unwrap().load(|mut v| async move {
        let va = v.malloc(64, 64).await.map_err(|e| ProgramError::Vipl {
            call: "malloc",
            error: e,
        })?;
        let _ = v
            .poll_mem(va, PollCond::ByteEquals(1), Timeout::Infinite)
            .await;
        Ok(report())
    });
    sys.start();
    assert_eq!(sys.run_programs(), RunEnd::ProgramFailed);
}

#[test]
fn no_program_and_no_event_is_a_stall() {
    let mut sys = system(&[]);
    sys.cpu_mut(0)
        .unwrap()
        .load(|_| async move { Ok(report()) });
    // Node 1 has no program: it never finishes, and the system goes idle.
    sys.start();
    let RunEnd::Stalled(stall) = sys.run_programs() else {
        panic!("the run must stall");
    };
    assert_eq!(stall.reason, StallReason::NoEvent);
    assert!(
        stall.to_string().contains("n1.host.cpu no program started"),
        "{stall}"
    );
}

#[test]
fn a_connection_that_never_comes_fails_the_connect_with_the_losses_counted() {
    // Frames longer than this MTU are dropped by the receiving MAC: the connection
    // request never arrives; the card resends it `retx_limit` times and gives up
    // (VI_RESULT TimedOut), and the initiator's connect attempts fail with VIP_TIMEOUT
    // while the responder still waits: the run ends, never hangs.
    let mut sys = system(&["wire.mtu_bytes=60"]);
    let mut p = host_driver::programs::PingPongParams::new(4, 1, sys.macs[1]);
    p.wait_timeout = Timeout::Infinite;
    let q = host_driver::programs::PingPongParams {
        peer: sys.macs[0],
        ..p
    };
    sys.cpu_mut(0)
        .unwrap()
        .load(move |v| host_driver::programs::rdma_pingpong_initiator(v, p));
    sys.cpu_mut(1)
        .unwrap()
        .load(move |v| host_driver::programs::rdma_pingpong_responder(v, q));
    sys.start();
    let end = sys.run_programs();
    assert!(matches!(end, RunEnd::ProgramFailed), "{end:?}");
    match sys.cpu_mut(0).and_then(host_driver::HostCpu::take_outcome) {
        Some(Err(e)) => assert!(e.to_string().contains("VIP_TIMEOUT"), "{e}"),
        other => panic!("the initiator must fail: {other:?}"),
    }
    let m1 = sys.mac_side(1).unwrap().stats();
    assert!(m1.rx_bad > 0, "the requests arrived too long: {m1:?}");
    assert!(sys.engine(0).unwrap().stats().connect_timeouts >= 1);
}

/// A message of a kind its component does not take is a wiring bug: the component
/// counts it, and the run fails naming the component.
#[test]
fn a_message_of_the_wrong_kind_fails_the_run() {
    use testbenches::system::world::Msg;
    use testbenches::system::{run_pingpong_adjusted, Op, PingPongSpec, RecvPost, RunError};
    let cfg = SystemConfig::from_preset("hvia-ge").unwrap();
    let spec = PingPongSpec {
        op: Op::RdmaWrite,
        size: 4,
        iterations: 1,
        warmup: 0,
        trace: false,
        recv_post: RecvPost::Timed,
    };
    let r = run_pingpong_adjusted(&cfg, spec, |sys| {
        let engine = sys.nodes[0].engine;
        sys.kernel.post(
            engine,
            sim_kernel::Time(1_000_000),
            Msg::Pci(pci_model::PciMsg::Tick { generation: 0 }),
        );
    });
    match r {
        Err(RunError::WrongInputs(w)) => {
            assert_eq!(w, vec![("n0.card.engine".to_owned(), 1)]);
        }
        Err(e) => panic!("another failure: {e}"),
        Ok(_) => panic!("the run must fail"),
    }
}
