//! The post mechanism through the whole system: a VipPostRecv (as the paper timed it,
//! between two `gettimeofday` calls) returns only once the card has read and checked the
//! receive descriptor, so it contains the card's check; without the wait it does not.

use host_driver::programs::POST_RECV_TIMED;
use testbenches::config::SystemConfig;
use testbenches::system::{run_pingpong, Op, PingPongSpec};

/// The responder's timed VipPostRecv spans and its `card takes post` spans \[ns\].
fn post_recv(sets: &[&str]) -> (Vec<f64>, Vec<f64>) {
    let mut cfg = SystemConfig::from_preset("hvia-ge").unwrap();
    for s in sets {
        cfg.apply_set(s).unwrap();
    }
    let r = run_pingpong(
        &cfg,
        PingPongSpec {
            op: Op::SendRecv,
            size: 4,
            iterations: 2,
            warmup: 1,
            trace: true,
            recv_post: testbenches::system::RecvPost::Timed,
        },
    )
    .unwrap();
    let responder = r.system.nodes[1].cpu;
    let spans = r.system.kernel.trace().spans();
    let of = |stage: &str| -> Vec<f64> {
        spans
            .iter()
            .filter(|s| s.component == responder && s.stage == stage)
            .map(|s| (s.end - s.start).as_ns_f64())
            .collect()
    };
    (of(POST_RECV_TIMED), of("card takes post"))
}

#[test]
fn vip_post_recv_waits_for_the_cards_check() {
    let (timed, waits) = post_recv(&[]);
    // warm-up + 2 measured round trips: a timed post after each but the last.
    assert_eq!(timed.len(), 2, "{timed:?}");
    assert!(!waits.is_empty(), "the library waited for the card");
    let (no_wait, none) = post_recv(&["host.vipl.post_waits_for_card=false"]);
    assert!(none.is_empty(), "{none:?}");
    // The wait covers at least the check's descriptor read through the host bridge.
    for (w, n) in timed.iter().zip(&no_wait) {
        assert!(w - n > 1_000.0, "with wait {w} ns, without {n} ns");
    }
    // Without the card's check, the wait is only the dispatch of the doorbell.
    let (unchecked, _) = post_recv(&["card.engine.check_recv_on_post=false"]);
    for (w, u) in timed.iter().zip(&unchecked) {
        assert!(w > u, "checked {w} ns, unchecked {u} ns");
    }
}

/// The initiator's VipPostRecv for the pong is on the timed round trip by default
/// (`RecvPost::Timed`, a loop timed as a whole): the one-way figure holds half of it;
/// posted ahead of the clock it holds none, and the difference is half the initiator's
/// own VipPostRecv span.
#[test]
fn the_timed_receive_post_puts_half_a_vip_post_recv_in_each_one_way_figure() {
    use testbenches::system::RecvPost;
    let cfg = SystemConfig::from_preset("hvia-ge").unwrap();
    let run = |recv_post| {
        run_pingpong(
            &cfg,
            PingPongSpec {
                op: Op::SendRecv,
                size: 4,
                iterations: 2,
                warmup: 1,
                trace: true,
                recv_post,
            },
        )
        .unwrap()
    };
    let timed = run(RecvPost::Timed);
    let ahead = run(RecvPost::Ahead);
    let initiator = timed.system.nodes[0].cpu;
    let posts: Vec<f64> = timed
        .system
        .kernel
        .trace()
        .spans()
        .iter()
        .filter(|s| s.component == initiator && s.stage == "VipPostRecv")
        .map(|s| (s.end - s.start).as_ns_f64())
        .collect();
    let post = posts.last().copied().expect("the initiator posts receives");
    let diff = timed.one_way_ns() - ahead.one_way_ns();
    assert!(
        (diff - post / 2.0).abs() < 50.0,
        "timed - ahead = {diff} ns, half a VipPostRecv = {} ns",
        post / 2.0
    );
}
