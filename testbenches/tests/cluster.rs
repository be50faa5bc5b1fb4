//! More than two nodes behind the store-and-forward switch (`[topology]`): every node is
//! the same full model, wired by the same assembly code; the ping-pong between nodes 0
//! and 1 runs through the switch with every byte checked, slower than back to back by
//! the switch's store-and-forward time, and the other nodes only see flooded frames.
//! A cut-through switch sits between a cable and store and forward, and passes frames
//! with bit errors on to the DP83820, which drops them.

use gige_mac::PortIndex;
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{run_pingpong, Comp, Op, PingPongSpec, RecvPost};

fn config(sets: &[&str]) -> SystemConfig {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets).expect("valid config")
}

fn spec(size: u32) -> PingPongSpec {
    PingPongSpec {
        op: Op::RdmaWrite,
        size,
        iterations: 3,
        warmup: 1,
        trace: false,
        recv_post: RecvPost::Timed,
    }
}

#[test]
fn a_ping_pong_through_the_switch_among_four_nodes() {
    let direct = run_pingpong(&config(&[]), spec(1460)).expect("back to back");
    let cfg = config(&["topology.nodes=4", "topology.switch=store-and-forward"]);
    let run = run_pingpong(&cfg, spec(1460)).expect("through the switch");
    assert_eq!(run.system.nodes.len(), 4);
    for r in [&run.initiator, &run.responder] {
        assert!(r.iterations.iter().all(|i| i.verified_bytes == 1460));
    }
    // Each one-way message crosses the switch once: at least one whole frame's time on
    // its input (1460 payload + headers, 8 ns a byte) plus the forwarding latency more.
    let extra = run.one_way.0 - direct.one_way.0;
    assert!(
        extra > 1_000_000 + 1460 * 8_000,
        "one-way {} ps against {} ps back to back",
        run.one_way.0,
        direct.one_way.0
    );
    let switch = run
        .system
        .world
        .iter()
        .find_map(|(_, c)| match c {
            Comp::Switch(s) => Some(s),
            _ => None,
        })
        .expect("the switch is in the world");
    assert_eq!(switch.port_count(), 4);
    let stats = |p: u16| *switch.port_stats(PortIndex(p)).unwrap();
    assert!(stats(0).received > 0 && stats(1).received > 0);
    // Nodes 2 and 3 send nothing; what reaches them was flooded before the switch learned.
    for p in [2, 3] {
        assert_eq!(stats(p).received, 0, "port {p}");
        assert_eq!(stats(p).queued_out, stats(p).flooded_out, "port {p}");
    }
    assert_eq!(
        run.system.engine(2).unwrap().stats().rdma_bytes_placed,
        0,
        "an idle node places nothing"
    );
    // Deterministic with more nodes too.
    let again = run_pingpong(&cfg, spec(1460)).expect("again");
    assert_eq!(again.one_way, run.one_way);
    assert_eq!(again.stats.events, run.stats.events);
}

/// Two nodes through a cut-through switch: every byte checked, faster than through the
/// store-and-forward switch by about one frame's wire time after its destination address
/// ((1518 - 6) x 8 ns for the one 1518-byte frame of a 1460-byte message: the frame no
/// longer waits to be whole), slower than back to back by the forwarding latency and the
/// second link. Every frame after the first flooded ones is cut through, none bad.
#[test]
fn a_cut_through_switch_sits_between_a_cable_and_store_and_forward() {
    let one_way = |sets: &[&str]| {
        let run = run_pingpong(&config(sets), spec(1460)).expect("ping-pong");
        for r in [&run.initiator, &run.responder] {
            assert!(r.iterations.iter().all(|i| i.verified_bytes == 1460));
        }
        run
    };
    let cable = one_way(&[]).one_way.0;
    let saf = one_way(&["topology.switch=store-and-forward"]).one_way.0;
    let ct_run = one_way(&["topology.switch=cut-through"]);
    let ct = ct_run.one_way.0;
    assert!(
        cable < ct && ct < saf,
        "cable {cable} < cut-through {ct} < store-and-forward {saf} ps"
    );
    // The saving is the frame's time after its DA, to within a few clocks of the
    // receiving side's clock domains.
    let saving = saf - ct;
    let want = (1518 - 6) * 8_000;
    assert!(
        saving.abs_diff(want) < 100_000,
        "saved {saving} ps, frame time after the DA {want} ps"
    );
    // Through the switch: at least the forwarding latency (1 us) more than a cable.
    assert!(ct - cable > 1_000_000, "cut-through adds {} ps", ct - cable);
    let switch = ct_run.system.switch().expect("the switch");
    for p in 0..2 {
        let s = *switch.port_stats(PortIndex(p)).unwrap();
        assert!(s.cut_through > 0, "port {p}: {s:?}");
        assert_eq!((s.cut_through_bad, s.fcs_drops, s.buffer_drops), (0, 0, 0));
    }
}

/// Bit errors on the nodes' wires through a cut-through switch: a corrupted frame is on
/// its way before its FCS is in, so the switch passes it on (counted as
/// `cut_through_bad` at its input) and the receiving DP83820 drops it on its FCS; with
/// reliable delivery the lost frames are resent and every byte still arrives.
#[test]
fn cut_through_passes_bad_frames_to_the_dp83820_which_drops_them() {
    let cfg = config(&[
        "topology.switch=cut-through",
        "faults.bit_error_rate=1e-6",
        "via.reliability=reliable-delivery",
    ]);
    let run = run_pingpong(&cfg, spec(65_536)).expect("reliable delivery completes");
    for r in [&run.initiator, &run.responder] {
        assert!(r.iterations.iter().all(|i| i.verified_bytes == 65_536));
    }
    let switch = run.system.switch().expect("the switch");
    let bad = |p: u16| switch.port_stats(PortIndex(p)).unwrap().cut_through_bad;
    let crc = |n: usize| run.system.mac_side(n).unwrap().stats().rx_crc_errors;
    // Faults are on what the nodes send: port 0's bad frames reach node 1 and back.
    assert!(bad(0) + bad(1) > 0, "some frames were hit");
    assert_eq!((bad(0), bad(1)), (crc(1), crc(0)));
    assert_eq!(
        switch.port_stats(PortIndex(0)).unwrap().fcs_drops
            + switch.port_stats(PortIndex(1)).unwrap().fcs_drops,
        0
    );
}

/// The one-way stream with a window of descriptors outstanding keeps the card busy: its
/// aggregate bandwidth is above the ping-pong's at the same size (no reply to wait
/// for), every byte of every message is checked at the receiver, and the latency of
/// each message grows with the window (it queues behind the ones posted before it).
#[test]
fn a_stream_with_a_window_beats_the_ping_pong_and_checks_every_byte() {
    use host_driver::programs::StreamParams;
    use testbenches::system::traffic::run_stream;
    let cfg = config(&[]);
    let size = 16_384;
    let ping = run_pingpong(&cfg, spec(size)).expect("ping-pong");
    let one_way_mb_s = f64::from(size) * 1e6 / ping.one_way.0 as f64;
    let mut p50 = Vec::new();
    for window in [1, 4] {
        let run = run_stream(
            &cfg,
            StreamParams {
                size,
                messages: 12,
                window,
            },
        )
        .expect("stream");
        assert_eq!(run.receiver.iterations.len(), 12);
        assert!(run
            .receiver
            .iterations
            .iter()
            .all(|r| r.verified_bytes == u64::from(size)));
        assert_eq!(run.delivery.lost, 0);
        if window == 4 {
            assert!(
                run.aggregate_mb_s > one_way_mb_s,
                "stream {:.2} MB/s against ping-pong {one_way_mb_s:.2}",
                run.aggregate_mb_s
            );
        }
        assert!(run.percentile(0.99) >= run.percentile(0.5));
        p50.push(run.percentile(0.5));
    }
    assert!(p50[1] > p50[0], "queueing behind the window: {p50:?}");
}

/// Both directions at once: every message of each direction arrives with every byte
/// checked, and the two directions share each node's one PCI bus (DMA reads of what it
/// sends, writes of what it receives), so together they carry more than one stream but
/// each carries less than a stream alone.
#[test]
fn both_directions_at_once_share_each_nodes_bus() {
    use host_driver::programs::StreamParams;
    use testbenches::system::traffic::{run_bidirectional, run_stream};
    let cfg = config(&[]);
    let s = StreamParams {
        size: 16_384,
        messages: 10,
        window: 4,
    };
    let alone = run_stream(&cfg, s).expect("one way");
    let (a, b) = run_bidirectional(&cfg, s).expect("both ways");
    for (dir, r) in [("0 to 1", &a), ("1 to 0", &b)] {
        assert_eq!(r.sender.iterations.len(), 10, "{dir}");
        assert_eq!(r.receiver.iterations.len(), 10, "{dir}");
        assert!(
            r.receiver
                .iterations
                .iter()
                .all(|i| i.verified_bytes == 16_384),
            "{dir}"
        );
        assert!(r.aggregate_mb_s < alone.aggregate_mb_s, "{dir}");
    }
    assert!(a.aggregate_mb_s + b.aggregate_mb_s > alone.aggregate_mb_s);
    assert_eq!(a.delivery.lost, 0);
}

/// A lost message on unreliable VIs ends a bidirectional run with an error (the loop
/// waits for the peer with an untimed poll once it has nothing of its own left), never a
/// run that goes on for ever.
#[test]
fn a_lost_message_ends_a_bidirectional_run() {
    use host_driver::programs::StreamParams;
    use testbenches::system::traffic::run_bidirectional;
    let cfg = config(&["faults.frame_loss=0.05"]);
    let s = StreamParams {
        size: 4096,
        messages: 200,
        window: 4,
    };
    assert!(run_bidirectional(&cfg, s).is_err());
}
