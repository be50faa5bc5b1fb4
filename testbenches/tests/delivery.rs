//! Faults and VIA reliability levels through the whole two-node system: reliable VIs
//! deliver every message exactly once with its bytes intact under frame loss, bit errors
//! and a link outage (the cards resend); unreliable VIs lose messages, and the run says
//! so (`RunError::Lost`) without delivering corrupted bytes; a fault that outlasts the
//! retry limit breaks the VI with the VIA transport error, and later posts fail.

use host_driver::programs::setup::{setup, Role, RDMA_DESC};
use host_driver::programs::PingPongParams;
use host_driver::vipl::descriptor::{data_segment, rdma_write_descriptor};
use host_driver::vipl::ViState;
use host_driver::{ProgramError, ProgramReport, Timeout};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{
    run_pingpong, Delivery, Op, PingPongRun, PingPongSpec, RecvPost, RunError, System,
};
use via_abi::bar::Reliability;
use via_abi::Status;

fn config(sets: &[&str]) -> SystemConfig {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets).expect("valid config")
}

fn spec(op: Op, size: u32, iterations: u32) -> PingPongSpec {
    PingPongSpec {
        op,
        size,
        iterations,
        warmup: 1,
        trace: false,
        recv_post: RecvPost::Timed,
    }
}

/// Every message delivered once, every byte checked by the programs.
fn assert_clean(run: &PingPongRun, what: &str) {
    let d = &run.delivery;
    assert_eq!(
        (d.lost, d.duplicated, d.corrupted),
        (0, 0, 0),
        "{what}: {d:?}"
    );
    assert_eq!(d.delivered, d.messages, "{what}: {d:?}");
    let total = run.spec.iterations + run.spec.warmup;
    // Data messages both ways and the set-up exchange (one each way).
    assert_eq!(d.messages, 2 * u64::from(total) + 2, "{what}: {d:?}");
    for r in [&run.initiator, &run.responder] {
        assert_eq!(r.iterations.len(), total as usize, "{what}");
        assert!(
            r.iterations
                .iter()
                .all(|i| i.verified_bytes == u64::from(run.spec.size)),
            "{what}: every byte of every message compared"
        );
    }
}

/// Reliable delivery under each kind of wire fault: the same clean outcome, with frames
/// resent; and deterministic.
#[test]
fn reliable_vis_deliver_every_message_once_under_wire_faults() {
    let faults: [&[&str]; 3] = [
        &["faults.frame_loss=0.03"],
        &["faults.bit_error_rate=2e-5"],
        &["faults.link_down_at_us=150", "faults.link_down_for_us=100"],
    ];
    for (level, op) in [
        ("reliable-delivery", Op::RdmaWrite),
        ("reliable-reception", Op::SendRecv),
    ] {
        for f in faults {
            let mut sets = vec![format!("via.reliability={level}")];
            sets.extend(f.iter().map(|s| (*s).to_string()));
            let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
            let cfg = config(&sets);
            let what = format!("{level} {op:?} {f:?}");
            let mut resent = 0;
            for size in [4, 3000] {
                let run = run_pingpong(&cfg, spec(op, size, 12)).expect(&what);
                assert_clean(&run, &what);
                resent += run.delivery.retransmissions;
                let again = run_pingpong(&cfg, spec(op, size, 12)).expect(&what);
                assert_eq!(again.delivery, run.delivery, "{what}: deterministic");
                assert_eq!(again.one_way, run.one_way, "{what}: deterministic");
            }
            assert!(
                resent > 0,
                "{what}: the fault struck and frames were resent"
            );
        }
    }
}

/// Fault-free, the delivery is clean and nothing is resent or dropped.
#[test]
fn without_faults_nothing_is_resent_or_dropped() {
    for level in ["unreliable", "reliable-delivery"] {
        let cfg = config(&[&format!("via.reliability={level}")]);
        let run = run_pingpong(&cfg, spec(Op::RdmaWrite, 3000, 3)).unwrap();
        assert_clean(&run, level);
        assert_eq!(run.delivery, {
            let mut d = Delivery {
                messages: run.delivery.messages,
                delivered: run.delivery.messages,
                ..run.delivery.clone()
            };
            d.frames_dropped.values_mut().for_each(|n| *n = 0);
            d.retransmissions = 0;
            d
        });
        assert!(!run.delivery.eventful(), "{level}");
    }
}

/// Unreliable VIs under loss: the lost message is counted and the run ends with it,
/// never a hang; bit errors drop frames (bad FCS) and never deliver corrupted bytes.
#[test]
fn unreliable_vis_report_lost_messages_and_never_deliver_corrupted_bytes() {
    for (fault, cause) in [
        ("faults.frame_loss=0.2", "wire_loss"),
        ("faults.bit_error_rate=1e-4", "crc_error"),
    ] {
        let cfg = config(&[fault]);
        let err = run_pingpong(&cfg, spec(Op::RdmaWrite, 3000, 40))
            .err()
            .expect("a message is lost");
        let RunError::Lost {
            delivery,
            unreliable,
            ..
        } = &err
        else {
            panic!("{fault}: expected a lost message, got {err}");
        };
        assert!(unreliable, "{fault}");
        assert!(delivery.lost >= 1, "{fault}: {delivery:?}");
        assert_eq!(
            (
                delivery.corrupted,
                delivery.duplicated,
                delivery.retransmissions
            ),
            (0, 0, 0),
            "{fault}: {delivery:?}"
        );
        assert!(delivery.frames_dropped[cause] >= 1, "{fault}: {delivery:?}");
        let text = err.to_string();
        assert!(
            text.contains("lost") && text.contains("reliable-delivery"),
            "{text}"
        );
    }
}

/// Sets up a reliable-delivery connection, waits until the link is down for good, then
/// posts an RDMA write: it must complete with `TRANSPORT_ERROR`, the VI must be in the
/// Error state, and a later post must complete in error too. Any other outcome is a
/// program error naming it.
async fn broken_link_initiator(
    mut vipl: host_driver::Vipl,
    p: PingPongParams,
) -> Result<ProgramReport, ProgramError> {
    let ep = setup(&mut vipl, &p, Role::Initiator, false).await?;
    vipl.sleep(sim_kernel::Duration::from_ns(400_000)).await;
    let desc = rdma_write_descriptor(
        vec![data_segment(ep.src.0, ep.src.1, ep.len)],
        ep.peer_dst.0,
        ep.peer_dst.1,
        None,
    );
    let at = ep.ctl.0 + RDMA_DESC;
    let fail = ProgramError::Protocol;
    vipl.build_descriptor(at, &desc)
        .await
        .map_err(|_| fail("build"))?;
    vipl.vip_post_send(ep.vi, at, ep.ctl.1)
        .await
        .map_err(|_| fail("post"))?;
    let c = vipl
        .vip_send_wait(ep.vi, Timeout::Infinite)
        .await
        .map_err(|_| fail("wait"))?;
    if !c.status.is_done() || !c.status.contains(Status::TRANSPORT_ERROR) {
        return Err(fail("the send did not complete with TRANSPORT_ERROR"));
    }
    let q = vipl.vip_query_vi(ep.vi).await.map_err(|_| fail("query"))?;
    if q.state != ViState::Error {
        return Err(fail("the VI is not in the Error state"));
    }
    // VIA 1.0: a VI in the Error state takes no more sends.
    match vipl.vip_post_send(ep.vi, at, ep.ctl.1).await {
        Err(host_driver::VipError::InvalidState) => {}
        _ => return Err(fail("a later post did not fail with VIP_INVALID_STATE")),
    }
    Ok(ProgramReport::default())
}

#[test]
fn past_the_retry_limit_the_vi_breaks_with_the_transport_error() {
    let cfg = config(&[
        "via.reliability=reliable-delivery",
        "faults.link_down_at_us=300",
        "faults.link_down_for_us=1000000",
    ]);
    let mut sys = System::build(&cfg, false).expect("builds");
    let mut a = PingPongParams::new(3000, 1, sys.macs[1]);
    a.reliability = Reliability::ReliableDelivery;
    a.wait_timeout = Timeout::Infinite;
    let b = PingPongParams {
        peer: sys.macs[0],
        ..a
    };
    sys.cpu_mut(0)
        .unwrap()
        .load(move |v| broken_link_initiator(v, a));
    // The responder sets up, then waits for a message that never comes.
    sys.cpu_mut(1).unwrap().load(move |mut v| async move {
        setup(&mut v, &b, Role::Responder, false).await?;
        v.sleep(sim_kernel::Duration::from_ns(50_000_000)).await;
        Ok(ProgramReport::default())
    });
    sys.start();
    let _ = sys.run_programs();
    match sys.cpu_mut(0).and_then(host_driver::HostCpu::take_outcome) {
        Some(Ok(_)) => {}
        other => panic!("initiator: {other:?}"),
    }
    let e = sys.engine(0).unwrap().stats();
    assert_eq!(e.retx_give_ups, 1);
    assert_eq!(
        e.retx_timeouts,
        u64::from(cfg.card.engine.retx_limit),
        "the limit's timeouts, then the give-up"
    );
    let d = Delivery::of(&sys, 0);
    assert!(d.frames_dropped["link_down"] > 0, "{d:?}");
}
