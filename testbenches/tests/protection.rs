//! Protection end to end, through the whole two-node system (VIPL programs, PCI, the
//! engines, the ATT in card SDRAM, the GEC, the DP83820s and the wire): an RDMA write
//! past the end of its region, to an unregistered address, with a forged or a stale
//! handle, into a region of another protection tag or one without RDMA write enabled.
//! In every case not one byte of the receiving host's memory changes (its whole content
//! is compared from before the write reaches its card to the end of the run), the
//! receiving card counts the refusal, and under a reliable level the sender's
//! descriptor completes with the RDMA protection error and both VIs are in the Error
//! state, as VIA 1.0 says; unreliable delivery completes the send and reports nothing
//! back.

use host_driver::program::ProgramError;
use host_driver::programs::{
    protection_initiator, protection_responder, PingPongParams, ProtectionCase,
};
use host_driver::Timeout;
use sim_kernel::{Duration, RunLimit, RunOutcome};
use testbenches::config::SystemConfig;
use testbenches::system::{RunEnd, System};
use via_abi::bar::{Reliability, ViStateCode};
use via_abi::{CompletedOp, Status};

/// What one case shows.
struct Seen {
    end: RunEnd,
    initiator: Result<(), ProgramError>,
    responder_memory_changed: bool,
}

fn run_case(case: ProtectionCase, reliability: Reliability) -> (System, Seen) {
    let cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    let mut sys = System::build(&cfg, false).expect("system");
    let mut a = PingPongParams::new(64, 1, sys.macs[1]);
    a.reliability = reliability;
    a.wait_timeout = Timeout::Infinite;
    let b = PingPongParams {
        peer: sys.macs[0],
        ..a
    };
    sys.cpu_mut(0)
        .expect("cpu 0")
        .load(move |v| protection_initiator(v, a, case));
    sys.cpu_mut(1)
        .expect("cpu 1")
        .load(move |v| protection_responder(v, b, case));
    sys.start();
    // Run until the responder has returned: the initiator is then asleep, before its
    // write (see the programs' doc).
    while sys.cpu(1).and_then(|c| c.outcome()).is_none() {
        let until = sys.kernel.now() + Duration::from_ns(10_000);
        let outcome = sys.kernel.run(
            &mut sys.world,
            RunLimit {
                until,
                max_events: u64::MAX,
            },
        );
        // With no event left time cannot move: stop rather than loop.
        assert_ne!(
            outcome,
            RunOutcome::Idle,
            "{case:?}: nothing left to run before the responder finished"
        );
        assert!(
            sys.kernel.now() < sim_kernel::Time(50_000_000_000),
            "{case:?}: the responder did not finish in 50 ms"
        );
    }
    assert!(
        matches!(sys.cpu(1).and_then(|c| c.outcome()), Some(Ok(_))),
        "{case:?}: the responder failed: {:?}",
        sys.cpu(1).and_then(|c| c.outcome())
    );
    assert!(
        sys.cpu(0).and_then(|c| c.outcome()).is_none(),
        "{case:?}: the initiator finished before its write"
    );
    let before = sys.world.store[1].mem.content_digest();
    let end = sys.run_programs();
    let after = sys.world.store[1].mem.content_digest();
    let initiator = match sys.cpu(0).and_then(|c| c.outcome()) {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(e.clone()),
        None => panic!("{case:?}: the initiator did not finish: {end:?}"),
    };
    let seen = Seen {
        end,
        initiator,
        responder_memory_changed: before != after,
    };
    (sys, seen)
}

#[test]
fn every_refused_rdma_write_lands_nothing_and_reports_the_protection_error() {
    for case in ProtectionCase::REMOTE {
        let (sys, seen) = run_case(case, Reliability::ReliableDelivery);
        assert!(
            !seen.responder_memory_changed,
            "{case:?}: a byte of the receiving host's memory changed"
        );
        let rx = sys.engine(1).expect("engine 1");
        assert_eq!(rx.stats().rdma_bytes_placed, 0, "{case:?}");
        let rx_vi = rx.vi(0).expect("the responder's VI");
        assert_eq!(rx_vi.counters.rx_protection_errors, 1, "{case:?}");
        assert_eq!(rx_vi.state, ViStateCode::Error, "{case:?}");
        assert_eq!(
            sys.engine(0).expect("engine 0").vi(0).expect("VI").state,
            ViStateCode::Error,
            "{case:?}"
        );
        assert!(
            matches!(seen.end, RunEnd::Finished | RunEnd::ProgramFailed),
            "{case:?}: {:?}",
            seen.end
        );
        match seen.initiator {
            Err(ProgramError::Completion { call, status }) => {
                assert_eq!(call, "VipSendWait", "{case:?}");
                assert!(status.is_done(), "{case:?}");
                assert_eq!(status.errors(), Status::RDMA_PROTECTION_ERROR, "{case:?}");
                assert_eq!(status.completed_op(), CompletedOp::RdmaWrite, "{case:?}");
            }
            other => panic!("{case:?}: the initiator ended with {other:?}"),
        }
    }
}

#[test]
fn unreliable_delivery_completes_the_send_and_the_receiver_counts_the_refusal() {
    for case in [ProtectionCase::WrongPtag, ProtectionCase::StaleHandle] {
        let (sys, seen) = run_case(case, Reliability::Unreliable);
        assert!(!seen.responder_memory_changed, "{case:?}");
        assert_eq!(seen.end, RunEnd::Finished, "{case:?}");
        assert!(seen.initiator.is_ok(), "{case:?}: {:?}", seen.initiator);
        let rx = sys.engine(1).expect("engine 1");
        assert_eq!(rx.stats().rdma_bytes_placed, 0, "{case:?}");
        assert_eq!(
            rx.vi(0).expect("VI").counters.rx_protection_errors,
            1,
            "{case:?}"
        );
    }
}

#[test]
fn a_malformed_descriptor_is_refused_by_the_sending_card_and_sends_nothing() {
    for reliability in [Reliability::Unreliable, Reliability::ReliableDelivery] {
        let (sys, seen) = run_case(ProtectionCase::MalformedDescriptor, reliability);
        assert!(!seen.responder_memory_changed, "{reliability:?}");
        match seen.initiator {
            Err(ProgramError::Completion { call, status }) => {
                assert_eq!(call, "VipSendWait");
                assert!(status.is_done());
                assert_eq!(status.errors(), Status::FORMAT_ERROR, "{reliability:?}");
            }
            other => panic!("{reliability:?}: the initiator ended with {other:?}"),
        }
        let rx = sys.engine(1).expect("engine 1");
        assert_eq!(rx.stats().rdma_bytes_placed, 0);
        assert_eq!(rx.vi(0).expect("VI").counters.rx_protection_errors, 0);
        let sent = sys
            .engine(0)
            .expect("engine 0")
            .vi(0)
            .expect("VI")
            .counters
            .frames_sent;
        // The same run with a write the receiver refuses sends one frame more: the
        // malformed descriptor sent none.
        let (sys, _) = run_case(ProtectionCase::PastTheEnd, reliability);
        assert_eq!(
            sys.engine(0)
                .expect("engine 0")
                .vi(0)
                .expect("VI")
                .counters
                .frames_sent,
            sent + 1,
            "{reliability:?}: the malformed descriptor sent a frame"
        );
    }
}

/// A frame for a VI that does not exist on the receiving card, and one for an existing
/// VI but not from its peer, arrive in the middle of a ping-pong (put on node 1's wire
/// as if sent by a third party with node 0's or another MAC): the card drops both and
/// counts them, not one of their bytes lands, and the ping-pong on the connected VI goes
/// on and delivers every one of its own bytes.
#[test]
fn frames_for_no_vi_or_from_a_stranger_land_nothing_and_the_run_goes_on() {
    use gige_mac::{Frame, FrameId, FrameLimits, MacMsg, PortIndex};
    use testbenches::system::{run_pingpong_adjusted, Op, PingPongSpec, RecvPost};
    use via_abi::wire_header::{WireFlags, WireHeaderRepr, WireOp};
    let cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    let spec = PingPongSpec {
        op: Op::RdmaWrite,
        size: 64,
        iterations: 6,
        warmup: 1,
        trace: false,
        recv_post: RecvPost::Timed,
    };
    let rogue = |dst_vi: u16, src_mac: via_abi::MacAddr, k: u64| {
        let h = WireHeaderRepr {
            op: WireOp::RdmaWrite,
            flags: WireFlags::FIRST | WireFlags::LAST,
            dst_vi,
            src_vi: 0,
            seq: 0,
            msg_len: 64,
            frag_offset: 0,
            frag_len: 64,
            // Anywhere in the responder's first gigabyte of VA, with a made-up handle.
            remote_va: 0x4000_0000,
            remote_handle: via_abi::MemHandle(0x0000_0001),
            immediate: 0,
        };
        let mut b =
            nic_model::engine::frame::headers(src_mac, testbenches::system::node_mac(1), &h);
        b.extend(vec![0xEE; 64]);
        let bytes = gige_mac::frame::finish(b, FrameLimits::IEEE).expect("frame");
        Frame::new(FrameId(900 + k), sim_kernel::MsgId(900 + k), bytes)
    };
    let stranger = via_abi::MacAddr([0x02, 0, 0, 0, 0, 0x77]);
    let run = run_pingpong_adjusted(&cfg, spec, |sys| {
        let mac = sys.nodes[1].mac_side;
        for (k, frame) in [
            rogue(9, testbenches::system::node_mac(0), 0),
            rogue(0, stranger, 1),
        ]
        .into_iter()
        .enumerate()
        {
            let start = sim_kernel::Time(150_000_000 + 20_000_000 * k as u64);
            let byte = Duration::from_ns(8);
            let end = start + Duration(byte.0 * frame.len() as u64);
            let rx = gige_mac::rx::RxFrame::new(frame, start, end, byte);
            for (at, msg) in [
                (
                    start,
                    MacMsg::RxStart {
                        port: PortIndex(0),
                        frame: rx.clone(),
                    },
                ),
                (
                    end,
                    MacMsg::RxEnd {
                        port: PortIndex(0),
                        frame: rx,
                    },
                ),
            ] {
                sys.kernel.post(mac, at, testbenches::system::Msg::Mac(msg));
            }
        }
    })
    .expect("the ping-pong goes on");
    let e1 = run.system.engine(1).expect("engine 1").stats();
    // The same ping-pong without the two frames (its teardown's Disconnect may also
    // find the VI gone).
    let clean = testbenches::system::run_pingpong(&cfg, spec).expect("runs");
    let c1 = clean.system.engine(1).expect("engine 1").stats();
    assert_eq!(e1.rx_no_vi, c1.rx_no_vi + 1, "{e1:?}");
    assert_eq!(e1.rx_not_connected, c1.rx_not_connected + 1, "{e1:?}");
    assert_eq!(
        e1.rdma_bytes_placed,
        64 * 7,
        "only the ping-pong's own bytes were placed"
    );
    assert_eq!(run.delivery.lost + run.delivery.corrupted, 0);
    assert!(run
        .responder
        .iterations
        .iter()
        .all(|i| i.verified_bytes == 64));
}
