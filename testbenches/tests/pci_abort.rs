//! `faults.pci_abort*` through the whole system: the initiator's host bridge aborts
//! the card's DMA into one whole page of the RDMA write's source buffer (found in a
//! fault-free run: the frame of the second page of the initiator's one region of that
//! length without RDMA write enabled). The card's DMA master sees the Target-Abort or
//! Master-Abort, the system bus counts it, the engine counts a DMA failure and
//! completes the send descriptor with the error status it gives a failed local read
//! (`PROTECTION_ERROR`, VIA 1.0 has no bus-error bit), and the receiver never gets the
//! bad bytes as a good message. On the receiving side, a page of the responder's RDMA
//! target that its bridge does not claim fails the message being placed: its VI enters
//! the Error state and the reliable sender's descriptor completes with the transport
//! error the receiver's Nak carries.

use host_driver::program::ProgramError;
use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use host_driver::Timeout;
use sim_kernel::{Duration, RunLimit, Time};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{RunEnd, System};
use via_abi::bar::Reliability;
use via_abi::{MemAttributes, Status};

const SIZE: u32 = 8192;

fn config(sets: &[String]) -> SystemConfig {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets).expect("valid config")
}

/// An 8 KB RDMA-write ping-pong (1 warm-up, 1 measured), loaded and started.
fn pingpong(cfg: &SystemConfig, reliability: Reliability) -> System {
    let mut sys = System::build(cfg, false).expect("builds");
    let mut a = PingPongParams::new(SIZE, 1, sys.macs[1]);
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

/// In a fault-free run: the frame of the second page of the initiator's source buffer.
fn source_frame() -> u64 {
    second_frame(0, false)
}

/// In a fault-free run: the frame of the second page of node `n`'s region of `SIZE`
/// bytes with RDMA write enabled (`target`: the RDMA destination) or not (the source).
fn second_frame(n: usize, target: bool) -> u64 {
    let mut sys = pingpong(&config(&[]), Reliability::Unreliable);
    loop {
        let next = sys.kernel.next_event_time().expect("events left");
        let until = (sys.kernel.now() + Duration::from_ns(1_000)).max(next);
        sys.kernel.run(
            &mut sys.world,
            RunLimit {
                until,
                max_events: u64::MAX,
            },
        );
        let att = sys.att(n).unwrap();
        let src = (0..16).find_map(|i| {
            att.read_entry(i).filter(|(l1, l2)| {
                l1.attributes.contains(MemAttributes::VALID)
                    && l1.attributes.contains(MemAttributes::ENABLE_RDMA_WRITE) == target
                    && l1.region_len() == u64::from(SIZE)
                    && l2.len() >= 2
            })
        });
        if let Some((_, l2)) = src {
            return u64::from(l2[1].phys_addr) & !0xFFF;
        }
        assert!(
            sys.kernel.now() < Time(10_000_000_000),
            "no source in 10 ms"
        );
    }
}

fn abort(kind: &str, frame: u64) -> SystemConfig {
    abort_on(0, kind, frame)
}

fn abort_on(node: usize, kind: &str, frame: u64) -> SystemConfig {
    config(&[
        format!("faults.pci_abort={kind}"),
        format!("faults.pci_abort_node={node}"),
        format!("faults.pci_abort_start={frame}"),
        "faults.pci_abort_bytes=4096".into(),
    ])
}

#[test]
fn an_aborted_payload_read_completes_the_send_with_the_protection_error() {
    let frame = source_frame();
    for kind in ["target", "master"] {
        let mut sys = pingpong(&abort(kind, frame), Reliability::ReliableDelivery);
        let end = sys.run_programs();
        assert_eq!(end, RunEnd::ProgramFailed, "{kind}: {end:?}");
        let bus = sys.system_bus(0).unwrap().stats();
        let (hit, other) = match kind {
            "target" => (bus.target_aborts, bus.master_aborts),
            _ => (bus.master_aborts, bus.target_aborts),
        };
        assert!(hit >= 1 && other == 0, "{kind}: {bus:?}");
        let s1 = sys.system_bus(1).unwrap().stats();
        assert_eq!(
            s1.target_aborts + s1.master_aborts,
            0,
            "{kind}: node 1 untouched"
        );
        assert!(sys.engine(0).unwrap().stats().dma_failures >= 1, "{kind}");
        match sys.cpu(0).and_then(|c| c.outcome()) {
            Some(Err(ProgramError::Completion { call, status })) => {
                assert_eq!(*call, "VipSendWait", "{kind}");
                assert!(status.is_done(), "{kind}");
                assert_eq!(status.errors(), Status::PROTECTION_ERROR, "{kind}");
            }
            other => panic!("{kind}: the initiator ended with {other:?}"),
        }
    }
}

#[test]
fn an_aborted_rdma_placement_fails_the_message_and_the_send_with_a_transport_error() {
    // The responder's bridge does not claim the second page of its RDMA target.
    let frame = second_frame(1, true);
    let mut sys = pingpong(&abort_on(1, "master", frame), Reliability::ReliableDelivery);
    let end = sys.run_programs();
    assert_eq!(end, RunEnd::ProgramFailed, "{end:?}");
    let bus = sys.system_bus(1).unwrap().stats();
    assert!(bus.master_aborts >= 1 && bus.target_aborts == 0, "{bus:?}");
    let b0 = sys.system_bus(0).unwrap().stats();
    assert_eq!(b0.master_aborts + b0.target_aborts, 0);
    let rx = sys.engine(1).unwrap();
    assert!(rx.stats().dma_failures >= 1);
    // Only the bytes before the page landed: the first message is not complete.
    assert!(
        rx.stats().rdma_bytes_placed < u64::from(SIZE),
        "{:?}",
        rx.stats()
    );
    let vi = rx.vi(0).expect("the responder's VI");
    assert_eq!(vi.state, via_abi::bar::ViStateCode::Error);
    assert_eq!(vi.counters.last_rx_error, Status::TRANSPORT_ERROR);
    match sys.cpu(0).and_then(|c| c.outcome()) {
        Some(Err(ProgramError::Completion { call, status })) => {
            assert_eq!(*call, "VipSendWait");
            assert!(status.is_done());
            assert_eq!(status.errors(), Status::TRANSPORT_ERROR);
        }
        other => panic!("the initiator ended with {other:?}"),
    }
}
