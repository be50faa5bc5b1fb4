//! `faults.att_flip_*` through the whole system: one bit of the L1 entry of the
//! responder's RDMA target region (in its card's SDRAM) inverts after the set-up
//! registered it. A flip in the generation makes every RDMA write into the region stale:
//! the receiving card refuses it and places no byte; under reliable delivery the
//! initiator's descriptor completes with the RDMA protection error; unreliable VIs leave
//! the responder waiting, and the stall names the flip. A flip in a reserved attribute
//! bit changes nothing. The flip is counted (`System::att_bit_flips`).

use host_driver::program::ProgramError;
use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use host_driver::Timeout;
use sim_kernel::{Duration, RunLimit, Time};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{RunEnd, System};
use via_abi::bar::Reliability;
use via_abi::{MemAttributes, Status};

fn config(sets: &[String]) -> SystemConfig {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets).expect("valid config")
}

/// A 4-byte RDMA-write ping-pong (1 warm-up, 2 measured), loaded and started.
fn pingpong(cfg: &SystemConfig, reliability: Reliability) -> System {
    let mut sys = System::build(cfg, false).expect("builds");
    let mut a = PingPongParams::new(4, 2, sys.macs[1]);
    a.warmup = 1;
    a.reliability = reliability;
    a.wait_timeout = Timeout::Infinite;
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
    sys
}

/// In a fault-free run: the L1 index of the responder's RDMA target (its one region
/// with RDMA write enabled) and the first microsecond after the responder's card
/// registered it.
fn target_and_time(reliability: Reliability) -> (u32, u64) {
    let mut sys = pingpong(&config(&[]), reliability);
    loop {
        // At least to the next event: time moves only with events.
        let next = sys.kernel.next_event_time().expect("events left");
        let until = (sys.kernel.now() + Duration::from_ns(1_000)).max(next);
        sys.kernel.run(
            &mut sys.world,
            RunLimit {
                until,
                max_events: u64::MAX,
            },
        );
        let att = sys.att(1).unwrap();
        let target = (0..16).find(|&i| {
            att.read_entry(i).is_some_and(|(l1, _)| {
                l1.attributes.contains(MemAttributes::VALID)
                    && l1.attributes.contains(MemAttributes::ENABLE_RDMA_WRITE)
            })
        });
        if let Some(i) = target {
            return (i, sys.kernel.now().0.div_ceil(1_000_000) + 1);
        }
        assert!(
            sys.kernel.now() < Time(10_000_000_000),
            "no target in 10 ms"
        );
    }
}

fn flip(entry: u32, at_us: u64, bit: u32) -> SystemConfig {
    config(&[
        format!("faults.att_flip_at_us={at_us}"),
        "faults.att_flip_node=1".into(),
        format!("faults.att_flip_entry={entry}"),
        format!("faults.att_flip_bit={bit}"),
    ])
}

#[test]
fn a_flipped_generation_refuses_every_write_with_the_rdma_protection_error() {
    let rel = Reliability::ReliableDelivery;
    let (entry, at_us) = target_and_time(rel);
    let mut sys = pingpong(&flip(entry, at_us, 176), rel);
    let end = sys.run_programs();
    assert_eq!(end, RunEnd::ProgramFailed, "{end:?}");
    assert_eq!(sys.att_bit_flips(1), 1);
    assert_eq!(sys.att_bit_flips(0), 0);
    let rx = sys.engine(1).unwrap();
    assert_eq!(rx.stats().rdma_bytes_placed, 0, "not one byte placed");
    assert_eq!(rx.vi(0).unwrap().counters.rx_protection_errors, 1);
    match sys.cpu(0).and_then(|c| c.outcome()) {
        Some(Err(ProgramError::Completion { call, status })) => {
            assert_eq!(*call, "VipSendWait");
            assert!(status.is_done());
            assert_eq!(status.errors(), Status::RDMA_PROTECTION_ERROR);
        }
        other => panic!("the initiator ended with {other:?}"),
    }
}

#[test]
fn unreliable_vis_stall_naming_the_flip() {
    let rel = Reliability::Unreliable;
    let (entry, at_us) = target_and_time(rel);
    let mut sys = pingpong(&flip(entry, at_us, 176), rel);
    let end = sys.run_programs();
    let RunEnd::Stalled(stall) = end else {
        panic!("the responder waits for data that never lands: {end:?}");
    };
    let text = stall.to_string();
    assert!(text.contains("bits flipped in the ATT"), "{text}");
    assert_eq!(
        sys.engine(1).unwrap().stats().rdma_bytes_placed,
        0,
        "{text}"
    );
    assert_eq!(
        sys.engine(1)
            .unwrap()
            .vi(0)
            .unwrap()
            .counters
            .rx_protection_errors,
        1
    );
}

#[test]
fn a_flipped_reserved_bit_changes_nothing() {
    let rel = Reliability::Unreliable;
    let (entry, at_us) = target_and_time(rel);
    let mut clean = pingpong(&config(&[]), rel);
    assert_eq!(clean.run_programs(), RunEnd::Finished);
    let mut sys = pingpong(&flip(entry, at_us, 150), rel);
    assert_eq!(sys.run_programs(), RunEnd::Finished);
    assert_eq!(sys.att_bit_flips(1), 1);
    assert_eq!(
        sys.engine(1).unwrap().stats().rdma_bytes_placed,
        clean.engine(1).unwrap().stats().rdma_bytes_placed
    );
    assert_eq!(sys.kernel.now(), clean.kernel.now());
}
