//! `hvia traffic` for the many-node patterns: the JSON contract's keys and the message
//! accounting, the switch picked for more than two nodes (and said so), the same JSON
//! for any rayon thread count, the plot file, and the errors for bad input.

use std::process::{Command, Output};

fn hvia(args: &[&str], threads: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hvia"));
    c.args(args).env("RUST_LOG", "error");
    if let Some(t) = threads {
        c.env("RAYON_NUM_THREADS", t);
    }
    c.output().expect("hvia runs")
}

const INCAST: [&str; 12] = [
    "traffic",
    "--pattern",
    "incast",
    "--nodes",
    "3",
    "--size",
    "1460",
    "--messages",
    "2",
    "--window",
    "1",
    "--format",
];

fn json(args: &[&str], threads: Option<&str>) -> (serde_json::Value, String) {
    let o = hvia(args, threads);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    (
        serde_json::from_slice(&o.stdout).expect("the output is JSON"),
        err,
    )
}

#[test]
fn incast_json_has_the_contract_and_every_message_accounted_for() {
    let mut args = INCAST.to_vec();
    args.push("json");
    let (j, err) = json(&args, None);
    assert!(
        err.contains("using topology.switch=store-and-forward"),
        "the switch choice is said: {err}"
    );
    for key in [
        "pattern",
        "nodes",
        "size_bytes",
        "aggregate_bandwidth_mb_s",
        "per_node",
        "latency_ns",
        "pause_frames",
        "drops",
        "simulation",
        "delivery",
        "expected_messages",
        "received_messages",
        "lost_messages",
    ] {
        assert!(j.get(key).is_some(), "{key} missing: {j}");
    }
    assert_eq!(j["pattern"], "incast");
    assert_eq!(j["nodes"], 3);
    assert_eq!(j["expected_messages"], 4);
    let got = j["received_messages"].as_u64().unwrap() + j["lost_messages"].as_u64().unwrap();
    assert_eq!(got, 4);
    let nodes = j["per_node"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["sent_messages"], 0);
    assert_eq!(nodes[1]["sent_messages"], 2);
    assert!(j["aggregate_bandwidth_mb_s"].as_f64().unwrap() < 125.0);
    assert!(j["latency_ns"]["p99"].as_f64().unwrap() >= j["latency_ns"]["p50"].as_f64().unwrap());
}

#[test]
fn same_json_for_one_and_two_threads_but_the_wall_time_and_run_metadata() {
    let mut args = INCAST.to_vec();
    args[2] = "all-to-all";
    args.push("json");
    let strip = |mut j: serde_json::Value| {
        j["simulation"]["wall_seconds"] = serde_json::Value::Null;
        j["run"] = serde_json::Value::Null; // the start instant
        j
    };
    let (one, _) = json(&args, Some("1"));
    let (two, _) = json(&args, Some("2"));
    assert_eq!(strip(one), strip(two));
}

#[test]
fn csv_has_a_row_per_node_and_the_plot_is_written() {
    let dir = std::env::temp_dir().join(format!("hvia-traffic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plot = dir.join("incast.svg");
    let mut args = INCAST.to_vec();
    args.push("csv");
    let plot_s = plot.to_string_lossy().into_owned();
    args.extend(["--plot", &plot_s]);
    let o = hvia(&args, None);
    assert_eq!(o.status.code(), Some(0));
    let csv = String::from_utf8(o.stdout).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(svg.contains("<svg") && svg.contains("bandwidth per node"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_refused_naming_the_option() {
    for (args, option) in [
        (
            vec!["traffic", "--pattern", "incast", "--nodes", "65"],
            "--nodes",
        ),
        (
            vec!["traffic", "--pattern", "incast", "--nodes", "1"],
            "--nodes",
        ),
        (
            vec!["traffic", "--pattern", "all-to-all", "--plot", "x.pdf"],
            "--plot",
        ),
        (
            vec!["traffic", "--pattern", "incast", "--messages", "0"],
            "--messages",
        ),
    ] {
        let o = hvia(&args, None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(option), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn an_explicit_switch_gets_no_note() {
    // Three nodes and an explicit switch kind: the explicit one is used, no note.
    let mut args = INCAST.to_vec();
    args.push("json");
    args.extend(["--set", "topology.switch=store-and-forward"]);
    let (_, err) = json(&args, None);
    assert!(!err.contains("using topology.switch"), "{err}");
}
