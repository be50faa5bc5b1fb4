//! `--stats FILE` and `hvia stats --list` as users see them: the file lists every counter
//! of the catalogue with a unit and a description, its numbers agree with the command's
//! JSON where both report one (events, simulated time, DMA retries and bursts), CSV by
//! extension, and bad input names `--stats` with exit status 2.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs")
}

fn ok(args: &[&str]) -> String {
    let o = hvia(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn read_json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("stats file")).expect("JSON")
}

/// name -> value of a `counters` array.
fn values(counters: &Value) -> BTreeMap<String, u64> {
    counters
        .as_array()
        .expect("counters array")
        .iter()
        .map(|c| {
            assert!(
                !c["unit"].as_str().unwrap_or_default().is_empty()
                    && !c["description"].as_str().unwrap_or_default().is_empty(),
                "{c}"
            );
            (
                c["name"].as_str().expect("name").to_owned(),
                c["value"].as_u64().expect("value"),
            )
        })
        .collect()
}

#[test]
fn breakdown_stats_cover_the_catalogue() {
    let list: Value =
        serde_json::from_str(&ok(&["stats", "--list", "--format", "json"])).expect("JSON list");
    let listed: Vec<&str> = list["counters"]
        .as_array()
        .expect("counters")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert!(listed.len() > 300, "{}", listed.len());
    let file = scratch("stats-breakdown.json");
    let out: Value = serde_json::from_str(&ok(&[
        "breakdown",
        "--size",
        "64",
        "--format",
        "json",
        "--stats",
        file.to_str().expect("utf-8"),
    ]))
    .expect("JSON");
    let stats = values(&read_json(&file)["counters"]);
    let names: Vec<&str> = stats.keys().map(String::as_str).collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(
        names, sorted,
        "the file has exactly the catalogue's counters"
    );
    // Work the run did shows in the counters of both nodes.
    assert!(out["one_way_latency_ns"].as_f64().expect("latency") > 0.0);
    for n in ["n0", "n1"] {
        assert!(stats[&format!("{n}.card.engine.doorbells")] > 0);
        assert!(stats[&format!("{n}.pci.system.data_phases")] > 0);
        assert!(stats[&format!("{n}.mac.gmii.tx.frames")] > 0);
    }
    // Every frame the engine hands over, the GEC passes to the DP83820.
    for n in ["n0", "n1"] {
        assert_eq!(
            stats[&format!("{n}.card.gec.tx_frames")],
            stats[&format!("{n}.card.engine.data_frames_sent")]
                + stats[&format!("{n}.card.engine.control_frames_sent")]
        );
    }
    // Every byte placed by RDMA write on node 1 came from node 0's payload.
    assert_eq!(
        stats["n1.card.engine.rdma_bytes_placed"],
        stats["n0.card.engine.rdma_bytes_placed"]
    );
}

#[test]
fn pingpong_stats_agree_with_the_json_per_size() {
    let file = scratch("stats-pingpong.json");
    let out: Value = serde_json::from_str(&ok(&[
        "pingpong",
        "--sizes",
        "4,2000",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--format",
        "json",
        "--stats",
        file.to_str().expect("utf-8"),
    ]))
    .expect("JSON");
    let doc = read_json(&file);
    let runs = doc["runs"].as_array().expect("runs");
    let results = out["results"].as_array().expect("results");
    assert_eq!(runs.len(), results.len());
    assert_eq!(
        doc["counters"], runs[0]["counters"],
        "counters: the first size"
    );
    for (run, res) in runs.iter().zip(results) {
        assert_eq!(run["size_bytes"], res["size_bytes"]);
        let s = values(&run["counters"]);
        assert_eq!(Some(s["sim.events"]), res["events"].as_u64());
        assert_eq!(Some(s["sim.simulated_ps"]), res["simulated_ps"].as_u64());
        // Three round trips, each one message each way: the RDMA bytes placed.
        let size = res["size_bytes"].as_u64().expect("size");
        assert_eq!(s["n1.card.engine.rdma_bytes_placed"], 3 * size);
        assert_eq!(s["n0.card.engine.rdma_bytes_placed"], 3 * size);
    }
    let sum: u64 = results.iter().map(|r| r["events"].as_u64().unwrap()).sum();
    assert_eq!(Some(sum), out["simulation"]["events"].as_u64());
}

#[test]
fn dma_stats_agree_with_the_json_and_csv_works() {
    let file = scratch("stats-dma.json");
    let out: Value = serde_json::from_str(&ok(&[
        "dma",
        "--bytes",
        "65536",
        "--format",
        "json",
        "--stats",
        file.to_str().expect("utf-8"),
    ]))
    .expect("JSON");
    let s = values(&read_json(&file)["counters"]);
    assert_eq!(Some(s["pci.system.retries"]), out["retries"].as_u64());
    assert_eq!(
        Some(s["pci.system.disconnects"]),
        out["disconnects"].as_u64()
    );
    assert_eq!(Some(s["pci.system.bytes"]), out["bytes"].as_u64());
    assert_eq!(
        Some(s["sim.simulated_ps"]),
        out["simulation"]["simulated_ps"].as_u64()
    );
    assert_eq!(Some(s["sim.events"]), out["simulation"]["events"].as_u64());
    assert!(s["pci.system.bridge.delayed_reads"] > 0);

    let csv = scratch("stats-dma.csv");
    ok(&[
        "dma",
        "--bus",
        "local",
        "--bytes",
        "4096",
        "--stats",
        csv.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&csv).expect("csv");
    assert!(text.starts_with("name,value,unit,description\n"), "{text}");
    assert!(text.contains("\npci.local.dp83820.bytes,"), "{text}");
}

#[test]
fn bad_stats_paths_name_the_option() {
    for args in [
        &["breakdown", "--stats", "x.txt"][..],
        &[
            "pingpong",
            "--sizes",
            "4",
            "--stats",
            "/nonexistent-dir/s.json",
        ][..],
        &["dma", "--stats", "s.yaml"][..],
        &["traffic", "--pattern", "stream", "--stats", "s.txt"][..],
        &["dma", "--stats", "/nonexistent-dir/s.csv"][..],
    ] {
        let o = hvia(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--stats"), "{args:?}: {err}");
    }
}

/// `hvia traffic --stats`: the counters of the whole run, with the JSON's events. A
/// stream whose window (24) is above the doorbell FIFO's depth (16) has doorbell writes
/// Retried by the back-pressure, counted for the card's engine as the bus counts them;
/// a window of 16 fills the FIFO (back-pressure turns on) but no write is Retried.
#[test]
fn traffic_stats_count_the_doorbell_writes_retried() {
    let run = |window: &str| {
        let path = scratch(&format!("traffic-stream-{window}.json"));
        let out = ok(&[
            "traffic",
            "--pattern",
            "stream",
            "--window",
            window,
            "--messages",
            "40",
            "--format",
            "json",
            "--stats",
            path.to_str().unwrap(),
        ]);
        let json: Value = serde_json::from_str(&out).expect("JSON");
        let v = values(&read_json(&path)["counters"]);
        assert_eq!(
            v["sim.events"],
            json["simulation"]["events"].as_u64().unwrap()
        );
        v
    };
    let full = run("24");
    assert!(
        full["n0.card.engine.doorbell_writes_retried"] > 0,
        "{full:?}"
    );
    assert_eq!(
        full["n0.card.engine.doorbell_writes_retried"],
        full["n0.pci.system.write_retry_refusals"]
    );
    let fits = run("16");
    assert!(fits["n0.card.engine.doorbell_backpressure"] > 0);
    assert_eq!(fits["n0.card.engine.doorbell_writes_retried"], 0);
}
