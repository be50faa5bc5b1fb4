//! The many-node traffic patterns through the store-and-forward switch: incast (nodes
//! 1 .. N-1 to node 0) and all-to-all, every byte of every message checked at its
//! receiver, every message received or counted lost, and a lost message ending the
//! run instead of hanging it.

use host_driver::programs::{mesh_peer_message, StreamParams};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::mesh::{plan, run_mesh, MeshPattern, MeshRun, QUIET};

fn config(nodes: u32, sets: &[&str]) -> SystemConfig {
    let mut all = vec![
        format!("topology.nodes={nodes}"),
        "topology.switch=store-and-forward".to_owned(),
    ];
    all.extend(sets.iter().map(|s| (*s).to_owned()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), &refs).expect("valid config")
}

fn stream(size: u32, messages: u32, window: u32) -> StreamParams {
    StreamParams {
        size,
        messages,
        window,
    }
}

/// Every received record is a message of the plan, with every byte checked, none twice.
fn check_records(run: &MeshRun, n: u32) {
    let s = run.params;
    for (rank, r) in (0..n).zip(&run.reports) {
        let (sends_to, receives_from) = plan(run.pattern, rank, n);
        let mut seen = std::collections::BTreeSet::new();
        for rec in &r.iterations {
            let (peer, i) = mesh_peer_message(rec.index);
            assert!(i < s.messages, "node {rank}: message {i}");
            if rec.verified_bytes == 0 {
                assert!(sends_to.contains(&peer), "node {rank} sent to {peer}");
                assert!(rec.end >= rec.start);
            } else {
                assert!(receives_from.contains(&peer), "node {rank} got from {peer}");
                assert_eq!(rec.verified_bytes, u64::from(s.size), "every byte checked");
                assert!(seen.insert((peer, i)), "node {rank}: ({peer}, {i}) twice");
            }
        }
        let f = &run.per_node[rank as usize];
        assert_eq!(
            f.received_messages + f.lost_messages,
            receives_from.len() as u64 * u64::from(s.messages),
            "node {rank}: received + lost = sent to it"
        );
        assert_eq!(
            f.sent_messages,
            sends_to.len() as u64 * u64::from(s.messages)
        );
    }
    assert_eq!(
        run.received_messages() + run.lost_messages(),
        run.expected_messages
    );
    assert_eq!(run.latencies_ps.len() as u64, run.received_messages());
}

#[test]
fn incast_of_four_nodes_delivers_every_byte_within_one_link() {
    let s = stream(4096, 4, 1);
    let run = run_mesh(&config(4, &[]), MeshPattern::Incast, s, QUIET).expect("incast");
    check_records(&run, 4);
    assert_eq!(run.expected_messages, 12);
    assert_eq!(run.lost_messages(), 0, "{:?}", run.delivery);
    assert_eq!(run.delivery.lost, 0);
    // Node 0 receives everything through its one gigabit port.
    assert_eq!(run.per_node[0].received_messages, 12);
    assert!(run.per_node[1..].iter().all(|n| n.received_messages == 0));
    assert!(
        run.aggregate_mb_s > 10.0 && run.aggregate_mb_s < 125.0,
        "{}",
        run.aggregate_mb_s
    );
    // Three senders share one link: messages queue behind each other.
    let p50 = testbenches::system::traffic::percentile(&run.latencies_ps, 0.5);
    let max = testbenches::system::traffic::percentile(&run.latencies_ps, 1.0);
    assert!(max > p50, "p50 {p50} max {max}");
}

#[test]
fn all_to_all_of_three_nodes_delivers_every_byte_both_ways() {
    let s = stream(4096, 3, 2);
    let cfg = config(3, &[]);
    let run = run_mesh(&cfg, MeshPattern::AllToAll, s, QUIET).expect("all-to-all");
    check_records(&run, 3);
    assert_eq!(run.expected_messages, 18);
    assert_eq!(run.lost_messages(), 0, "{:?}", run.delivery);
    for n in &run.per_node {
        assert_eq!(n.received_messages, 6);
        assert_eq!(n.sent_messages, 6);
        assert!(n.receive_mb_s > 0.0 && n.send_mb_s > 0.0);
    }
    // The cards saw the same: every data message plus the set-up and barrier ones.
    assert_eq!(run.delivery.lost, 0);
    assert_eq!(run.delivery.messages, 18 + 3 * 2 + 2 * 2);
    // Deterministic.
    let again = run_mesh(&cfg, MeshPattern::AllToAll, s, QUIET).expect("again");
    assert_eq!(again.latencies_ps, run.latencies_ps);
    assert_eq!(again.stats.events, run.stats.events);
}

#[test]
fn a_lost_message_is_counted_and_the_run_ends() {
    let s = stream(4096, 8, 1);
    let cfg = config(3, &["faults.frame_loss=0.02", "via.reliability=unreliable"]);
    let run = run_mesh(&cfg, MeshPattern::Incast, s, QUIET).expect("ends despite losses");
    check_records(&run, 3);
    assert!(
        run.delivery.frames_dropped["wire_loss"] > 0,
        "{:?}",
        run.delivery
    );
    assert!(run.lost_messages() > 0);
    // The program's count of lost messages is the cards' count.
    assert_eq!(run.lost_messages(), run.delivery.lost);
    assert!(run.received_messages() > 0);
}

#[test]
fn the_quiet_time_covers_what_can_be_in_flight_to_one_receiver() {
    use testbenches::system::mesh::quiet_time;
    // 16 nodes: 15 senders, min(8, 4) = 4 messages of 64 KiB each, 8 ns a byte.
    let q = quiet_time(16, stream(65536, 4, 8));
    assert_eq!(q.as_ps(), QUIET.as_ps() + 15 * 4 * 65536 * 8_000);
    assert_eq!(
        quiet_time(2, stream(1, 1, 1)).as_ps(),
        QUIET.as_ps() + 8_000
    );
}
