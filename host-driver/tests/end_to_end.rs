//! Two-node programs end to end against the fake cards: RDMA-write and send/receive
//! ping-pong with the data verified at every iteration, deterministic runs, connection
//! retries, completion queues.

mod common;

use common::{connected_vi, done, mac, note, registered_page, result_of, Log, Sys};
use host_driver::programs::{
    rdma_pingpong_initiator, rdma_pingpong_responder, sendrecv_pingpong_initiator,
    sendrecv_pingpong_responder, PingPongParams,
};
use host_driver::vipl::descriptor::{data_segment, recv_descriptor, send_descriptor};
use host_driver::{ProgramReport, Timeout};
use proptest::prelude::*;
use sim_kernel::{Duration, Time};
use via_abi::WorkQueue;

const LIMIT: Time = Time(200_000_000_000);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Rdma,
    SendRecv,
}

fn pingpong(kind: Kind, p0: PingPongParams, p1: PingPongParams, late: Time) -> Sys {
    let mut s = Sys::new(2, true);
    match kind {
        Kind::Rdma => {
            s.load(1, late, move |v| rdma_pingpong_responder(v, p1));
            s.load(0, Time::ZERO, move |v| rdma_pingpong_initiator(v, p0));
        }
        Kind::SendRecv => {
            s.load(1, late, move |v| sendrecv_pingpong_responder(v, p1));
            s.load(0, Time::ZERO, move |v| sendrecv_pingpong_initiator(v, p0));
        }
    }
    s.run(LIMIT);
    s
}

fn params(len: u32, iters: u32) -> (PingPongParams, PingPongParams) {
    (
        PingPongParams::new(len, iters, mac(1)),
        PingPongParams::new(len, iters, mac(0)),
    )
}

fn reports(s: &Sys) -> (ProgramReport, ProgramReport) {
    let a = s.outcome(0).clone().expect("initiator ok");
    let b = s.outcome(1).clone().expect("responder ok");
    (a, b)
}

fn check(kind: Kind, len: u32, iters: u32, touch: bool) {
    let (mut p0, mut p1) = params(len, iters);
    p0.touch_data = touch;
    p1.touch_data = touch;
    let s = pingpong(kind, p0, p1, Time::ZERO);
    let (a, b) = reports(&s);
    assert_eq!(a.iterations.len(), iters as usize);
    assert_eq!(b.iterations.len(), iters as usize);
    for r in a.iterations.iter().chain(&b.iterations) {
        assert_eq!(r.verified_bytes, u64::from(len), "every byte checked");
        assert!(r.end > r.start);
    }
    // round trips come one after the other
    for w in a.iterations.windows(2) {
        assert!(w[1].start >= w[0].end);
    }
}

#[test]
fn rdma_pingpong_4_bytes() {
    check(Kind::Rdma, 4, 20, false);
}

#[test]
fn rdma_pingpong_across_pages_touching_data() {
    check(Kind::Rdma, 9_000, 4, true);
}

#[test]
fn sendrecv_pingpong_4_bytes() {
    check(Kind::SendRecv, 4, 20, false);
}

#[test]
fn sendrecv_pingpong_across_pages_touching_data() {
    check(Kind::SendRecv, 5_000, 4, true);
}

#[test]
fn touching_data_costs_cpu_time() {
    let run = |touch| {
        let (mut p0, mut p1) = params(8_192, 3);
        p0.touch_data = touch;
        p1.touch_data = touch;
        let s = pingpong(Kind::Rdma, p0, p1, Time::ZERO);
        reports(&s).0.mean_elapsed()
    };
    let (free, paid) = (run(false), run(true));
    assert!(paid > free, "{paid:?} vs {free:?}");
}

#[test]
fn runs_are_deterministic() {
    let run = |kind| {
        let (p0, p1) = params(64, 10);
        let s = pingpong(kind, p0, p1, Time::ZERO);
        (s.k.trace().digest(), reports(&s), s.cpu(0).stats().clone())
    };
    for kind in [Kind::Rdma, Kind::SendRecv] {
        let (d1, r1, s1) = run(kind);
        let (d2, r2, s2) = run(kind);
        assert_eq!(d1, d2, "{kind:?} trace digest");
        assert_eq!(r1, r2);
        assert_eq!(s1, s2);
    }
}

#[test]
fn initiator_retries_until_the_responder_waits() {
    let (p0, p1) = params(16, 3);
    let s = pingpong(Kind::Rdma, p0, p1, Time(300_000_000)); // responder starts at 300 us
    let (a, _) = reports(&s);
    assert_eq!(a.iterations.len(), 3);
    assert!(a.setup_done > Time(300_000_000));
    let rejects =
        s.k.trace()
            .spans()
            .iter()
            .filter(|sp| sp.stage == "VipConnectRequest" && sp.component == s.nodes[0].cpu)
            .count();
    assert!(rejects > 2, "{rejects} connect requests");
}

#[test]
fn completion_queue_reports_a_receive() {
    let mut s = Sys::new(2, false);
    let log = Log::default();
    let (l0, l1) = (log.clone(), log.clone());
    s.load(1, Time::ZERO, move |mut v| async move {
        let (nic, ptag, vi) = connected_vi(&mut v, true, mac(0)).await.unwrap();
        let (buf, mh) = registered_page(&mut v, nic, ptag).await;
        v.sleep(Duration::from_ns(50_000)).await;
        v.poke(buf + 512, b"hello").await.unwrap();
        v.build_descriptor(
            buf,
            &send_descriptor(vec![data_segment(buf + 512, mh, 5)], Some(42)),
        )
        .await
        .unwrap();
        note(&l1, "send", &v.vip_post_send(vi, buf, mh).await);
        note(
            &l1,
            "send wait",
            &v.vip_send_wait(vi, Timeout::INFINITE).await,
        );
        done(&v, "sender")
    });
    s.load(0, Time::ZERO, move |mut v| async move {
        let nic = v.vip_open_nic("/dev/hvia0").await.unwrap();
        let cq = v.vip_create_cq(nic, 16).await.unwrap();
        let ptag = v.vip_create_ptag(nic).await.unwrap();
        let vi = v
            .vip_create_vi(
                nic,
                &host_driver::ViAttributes::reliable(ptag),
                None,
                Some(cq),
            )
            .await
            .unwrap();
        let (buf, mh) = registered_page(&mut v, nic, ptag).await;
        v.build_descriptor(buf, &recv_descriptor(vec![data_segment(buf + 512, mh, 64)]))
            .await
            .unwrap();
        v.vip_post_recv(vi, buf, mh).await.unwrap();
        note(&l0, "cq done early", &v.vip_cq_done(cq).await);
        let mac1 = common::mac(1);
        let local = host_driver::NetAddress {
            host: common::mac(0),
            discriminator: 7,
        };
        let remote = host_driver::NetAddress {
            host: mac1,
            discriminator: 7,
        };
        loop {
            match v
                .vip_connect_request(vi, &local, &remote, Timeout::INFINITE)
                .await
            {
                Ok(_) => break,
                Err(_) => v.sleep(Duration::from_ns(10_000)).await,
            }
        }
        let e = v
            .vip_cq_wait(cq, Timeout::After(Duration::from_ns(1_000_000)))
            .await;
        note(&l0, "cq wait", &e);
        let e = e.unwrap();
        assert_eq!((e.vi, e.queue), (vi, WorkQueue::Receive));
        note(&l0, "cq done again", &v.vip_cq_done(cq).await);
        note(&l0, "destroy cq in use", &v.vip_destroy_cq(cq).await);
        let c = v.vip_recv_done(vi).await.unwrap();
        assert_eq!(c.length, 5);
        assert_eq!(c.immediate, Some(42));
        assert_eq!(v.peek(buf + 512, 5).await.unwrap(), b"hello");
        done(&v, "receiver")
    });
    s.run(Time(50_000_000_000));
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    assert!(s.outcome(1).is_ok(), "{:?}", s.outcome(1));
    use host_driver::VipError;
    assert_eq!(result_of(&log, "cq done early"), Err(VipError::NotDone));
    assert_eq!(result_of(&log, "cq wait"), Ok(()));
    assert_eq!(result_of(&log, "cq done again"), Err(VipError::NotDone));
    assert_eq!(
        result_of(&log, "destroy cq in use"),
        Err(VipError::ErrorResource)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Every byte arrives, at every size (page crossings included), both ways.
    #[test]
    fn any_size_round_trips(len in 1u32..12_000, sendrecv in any::<bool>()) {
        let (p0, p1) = params(len, 2);
        let kind = if sendrecv { Kind::SendRecv } else { Kind::Rdma };
        let s = pingpong(kind, p0, p1, Time::ZERO);
        let (a, b) = reports(&s);
        prop_assert!(a.iterations.iter().chain(&b.iterations).all(|r| r.verified_bytes == u64::from(len)));
    }
}
