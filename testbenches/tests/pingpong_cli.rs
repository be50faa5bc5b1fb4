//! `hvia pingpong` and `hvia breakdown` as users and scripts see them: the JSON keys of
//! the contract, breakdown stages that tile the one-way latency, CSV headers, plot and
//! trace files, exit status 2 naming the option for bad input, and snapshots of the
//! default breakdown and a short sweep (any change in timing shows up in review).
//!
//! Sizes stay small and iterations few: the tests run the debug build.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// Runs `args`, expects success, returns stdout.
fn ok(args: &[&str]) -> String {
    let o = hvia(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("valid JSON")
}

/// Runs `args`, expects exit status 2 without a panic, returns stderr.
fn bad(args: &[&str]) -> String {
    let o = hvia(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    err
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number in {v}"))
}

/// A fresh scratch directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pingpong_cli-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn pingpong_json_has_the_contract_keys() {
    for op in ["rdma-write", "send-recv"] {
        let v = json(&[
            "pingpong",
            "--op",
            op,
            "--sizes",
            "4,64,1500",
            "--iters",
            "2",
            "--format",
            "json",
        ]);
        assert_eq!(v["preset"], "hvia-ge");
        assert_eq!(v["op"], op);
        let results = v["results"].as_array().expect("results");
        let sizes: Vec<u64> = results
            .iter()
            .map(|r| r["size_bytes"].as_u64().unwrap())
            .collect();
        assert_eq!(sizes, [4, 64, 1500]);
        for r in results {
            assert_eq!(r["iterations"], 2, "{r}");
            let ns = num(r, "one_way_latency_ns");
            assert!(ns > 1_000.0, "{r}");
            // Bandwidth is size / one-way latency (MB = 10^6 bytes).
            let expect = num(r, "size_bytes") * 1e3 / ns;
            assert!(
                (num(r, "bandwidth_mb_s") - expect).abs() <= 1e-9 * expect,
                "{r}"
            );
            assert!((num(r, "round_trip_ns") - 2.0 * ns).abs() < 0.01, "{r}");
        }
        // Larger messages take longer.
        assert!(num(&results[0], "one_way_latency_ns") < num(&results[2], "one_way_latency_ns"));
        for key in ["simulated_ps", "wall_seconds", "events"] {
            assert!(v["simulation"][key].is_number(), "{key} missing in {v}");
        }
        let events: u64 = results.iter().map(|r| r["events"].as_u64().unwrap()).sum();
        assert_eq!(v["simulation"]["events"].as_u64(), Some(events));
    }
}

#[test]
fn pingpong_csv_and_table() {
    let csv = ok(&[
        "pingpong", "--sizes", "4,64", "--iters", "1", "--format", "csv",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "size_bytes,iterations,one_way_latency_ns,bandwidth_mb_s,warmup,round_trip_ns,events,simulated_ps"
    );
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[1].starts_with("4,1,") && lines[2].starts_with("64,1,"),
        "{csv}"
    );

    let table = ok(&[
        "pingpong", "--sizes", "4,64", "--iters", "1", "--warmup", "0",
    ]);
    assert!(
        table.contains("SIZE (bytes)") && table.contains("ONE-WAY (us)"),
        "{table}"
    );
    assert!(
        table.contains("BANDWIDTH (MB/s)") && table.contains("Simulated"),
        "{table}"
    );
    assert!(table.contains("preset hvia-ge"), "{table}");
}

#[test]
fn the_configuration_is_reported() {
    let dir = scratch("config");
    let file = dir.join("cfg.toml");
    std::fs::write(&file, ok(&["config", "--show"])).expect("config written");
    let v = json(&[
        "--config",
        path(&file),
        "pingpong",
        "--sizes",
        "4",
        "--iters",
        "1",
        "--set",
        "sim.seed=7",
        "--format",
        "json",
    ]);
    assert!(v["preset"].is_null(), "{v}");
    assert_eq!(v["config_file"], path(&file));
    assert_eq!(v["overrides"], serde_json::json!(["sim.seed=7"]));
}

/// Checks a breakdown's JSON: the contract keys, and stages that tile the latency.
fn check_tiling(v: &Value, op: &str, size: u64) {
    assert_eq!(v["op"], op);
    assert_eq!(v["size_bytes"].as_u64(), Some(size));
    let total = num(v, "one_way_latency_ns");
    assert!(total > 1_000.0, "{v}");
    let stages = v["stages"].as_array().expect("stages");
    assert!(stages.len() > 5, "{v}");
    let mut prev_end = 0.0;
    let mut sum = 0.0;
    for s in stages {
        for key in ["name", "component", "domain"] {
            assert!(s[key].is_string(), "{key} in {s}");
        }
        assert!(s["cycles"].is_u64(), "{s}");
        let (start, end) = (num(s, "start_ns"), num(s, "end_ns"));
        assert!(
            (start - prev_end).abs() <= 1e-9 * total,
            "not contiguous at {s}"
        );
        assert!(end > start, "{s}");
        assert!((num(s, "duration_ns") - (end - start)).abs() <= 1e-6, "{s}");
        sum += num(s, "duration_ns");
        prev_end = end;
    }
    assert_eq!(num(&stages[0], "start_ns"), 0.0);
    assert!(
        (prev_end - total).abs() <= 1e-9 * total,
        "{prev_end} vs {total}"
    );
    assert!((sum - total).abs() <= 1e-6 * total, "{sum} vs {total}");
}

#[test]
fn breakdown_stages_tile_the_one_way_latency() {
    let v = json(&["breakdown", "--size", "4", "--format", "json"]);
    check_tiling(&v, "rdma-write", 4);
    let v = json(&[
        "breakdown",
        "--op",
        "send-recv",
        "--size",
        "64",
        "--format",
        "json",
    ]);
    check_tiling(&v, "send-recv", 64);
}

#[test]
fn rdma_read_runs_on_its_preset_and_is_refused_elsewhere() {
    let v = json(&[
        "--preset",
        "rdma-read",
        "pingpong",
        "--op",
        "rdma-read",
        "--sizes",
        "4,3000",
        "--iters",
        "1",
        "--warmup",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(v["op"], "rdma-read");
    assert_eq!(v["preset"], "rdma-read");
    assert!(v["one_way"].as_str().unwrap().contains("whole"), "{v}");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        let one_way = num(r, "one_way_latency_ns");
        assert!(one_way > 10_000.0, "{r}");
        assert_eq!(
            one_way,
            num(r, "round_trip_ns"),
            "a read is its own round trip"
        );
        let mb_s = num(r, "size_bytes") * 1e3 / one_way;
        assert!((num(r, "bandwidth_mb_s") - mb_s).abs() < 1e-6, "{r}");
    }
    let v = json(&[
        "--preset",
        "rdma-read",
        "breakdown",
        "--op",
        "rdma-read",
        "--size",
        "64",
        "--format",
        "json",
    ]);
    check_tiling(&v, "rdma-read", 64);
    // The published card has no RDMA read; VIA 1.0 has none on unreliable VIs.
    let err = bad(&["pingpong", "--op", "rdma-read", "--sizes", "4"]);
    assert!(
        err.contains("--op") && err.contains("--preset rdma-read"),
        "{err}"
    );
    let err = bad(&[
        "--preset",
        "rdma-read",
        "--set",
        "via.reliability=unreliable",
        "breakdown",
        "--op",
        "rdma-read",
    ]);
    assert!(err.contains("--op") && err.contains("reliable"), "{err}");
    // The contract's other operations do not carry the key.
    let v = json(&[
        "pingpong", "--sizes", "4", "--iters", "1", "--format", "json",
    ]);
    assert!(v.get("one_way").is_none(), "{v}");
}

#[test]
fn breakdown_csv_and_table() {
    let csv = ok(&["breakdown", "--size", "4", "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "name,component,domain,start_ns,end_ns,duration_ns,cycles"
    );
    assert!(lines.len() > 5, "{csv}");
    assert!(lines[1].contains(",0.000,"), "{csv}");

    let table = ok(&["breakdown", "--size", "4"]);
    for word in [
        "STAGE",
        "COMPONENT",
        "DOMAIN",
        "START_NS",
        "END_NS",
        "DURATION_NS",
        "CYCLES",
    ] {
        assert!(table.contains(word), "{word}: {table}");
    }
    assert!(table.lines().any(|l| l.starts_with("total ")), "{table}");
    assert!(table.contains("Time per component"), "{table}");
}

#[test]
fn plots_are_drawn_as_svg_and_png() {
    let dir = scratch("plots");
    let svg = dir.join("sweep.svg");
    let png = dir.join("sweep.png");
    let bd = dir.join("breakdown.png");
    ok(&[
        "pingpong",
        "--sizes",
        "4,64",
        "--iters",
        "1",
        "--plot",
        path(&svg),
    ]);
    ok(&[
        "pingpong",
        "--sizes",
        "4,64",
        "--iters",
        "1",
        "--plot",
        path(&png),
    ]);
    ok(&["breakdown", "--size", "4", "--plot", path(&bd)]);
    let text = std::fs::read_to_string(&svg).expect("svg written");
    assert!(
        text.contains("<svg") && text.contains("latency"),
        "{}",
        &text[..200]
    );
    for p in [&png, &bd] {
        let bytes = std::fs::read(p).expect("png written");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", p.display());
        assert!(bytes.len() > 1_000, "{}", p.display());
    }
}

#[test]
fn trace_files_are_written() {
    let dir = scratch("traces");
    let (pf, vcd, pcap) = (dir.join("t.json"), dir.join("t.vcd"), dir.join("t.pcap"));
    for command in [
        &["pingpong", "--sizes", "4,64", "--iters", "1"][..],
        &["breakdown"][..],
    ] {
        let mut args = command.to_vec();
        args.extend([
            "--perfetto",
            path(&pf),
            "--vcd",
            path(&vcd),
            "--pcap",
            path(&pcap),
        ]);
        let o = hvia(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&pf).expect("perfetto")).expect("JSON");
        let events = v["traceEvents"].as_array().expect("traceEvents");
        let spans: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert!(spans.len() > 100, "{} spans", spans.len());
        for e in &spans {
            assert!(
                e["name"].is_string() && e["pid"].is_u64() && e["tid"].is_u64(),
                "{e}"
            );
            assert!(num(e, "ts") >= 0.0 && num(e, "dur") >= 0.0, "{e}");
        }
        assert!(events
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "n0.card.engine"));
        let wave = std::fs::read_to_string(&vcd).expect("vcd");
        assert!(wave.contains("$timescale 1 ps $end"), "{wave}");
        assert!(wave.contains("$enddefinitions $end") && wave.contains("$var string 1 "));
        assert!(wave.contains("$scope module engine $end"), "{wave}");
        let frames = std::fs::read(&pcap).expect("pcap");
        assert!(frames.starts_with(&[0x4D, 0x3C, 0xB2, 0xA1]), "pcap magic");
        // Frames when the system assembly captures them; otherwise a warning says so.
        let records = gige_mac::pcap::parse(&frames).expect("a pcap file");
        if records.is_empty() {
            assert!(text(&o.stderr).contains("no frames were captured"));
        } else {
            // Ethernet frames of the VIA EtherType (0x88B5), both ways.
            assert!(records
                .iter()
                .all(|r| r.data.get(12..14) == Some(&[0x88, 0xB5][..])));
            let senders: std::collections::BTreeSet<&[u8]> =
                records.iter().map(|r| &r.data[6..12]).collect();
            assert_eq!(senders.len(), 2, "frames of both nodes");
        }
    }
}

#[test]
fn bad_input_names_the_option_and_exits_2() {
    for (args, word) in [
        (&["pingpong", "--sizes", "0"][..], "--sizes"),
        (&["pingpong", "--sizes", "abc"][..], "--sizes"),
        (&["pingpong", "--sizes", "8..4"][..], "--sizes"),
        (&["pingpong", "--sizes", "4..100"][..], "--sizes"),
        (&["pingpong", "--iters", "0"][..], "--iters"),
        (&["pingpong", "--warmup", "x"][..], "--warmup"),
        (&["pingpong", "--op", "rdma-read"][..], "--op"),
        (&["breakdown", "--size", "0"][..], "--size"),
        (&["breakdown", "--size", "99999999999"][..], "--size"),
        (&["breakdown", "--op", "nope"][..], "--op"),
        (
            &[
                "pingpong",
                "--sizes",
                "4",
                "--plot",
                "/nonexistent-dir/p.svg",
            ][..],
            "--plot",
        ),
        (
            &["pingpong", "--sizes", "4", "--plot", "p.pdf"][..],
            "--plot",
        ),
        (
            &["breakdown", "--perfetto", "/nonexistent-dir/t.json"][..],
            "--perfetto",
        ),
        (&["breakdown", "--vcd", "/"][..], "--vcd"),
        (
            &["breakdown", "--pcap", "/nonexistent-dir/t.pcap"][..],
            "--pcap",
        ),
        (&["pingpong", "--set", "no.such.key=1"][..], "no.such.key"),
    ] {
        let err = bad(args);
        assert!(err.contains(word), "{args:?}: {err}");
    }
}

/// Takes the `run` metadata out of a report (commit, start time: not results), after
/// checking its shape.
fn without_run(v: &mut Value) {
    let run = v
        .as_object_mut()
        .expect("an object")
        .remove("run")
        .expect("every report has its run metadata");
    assert_eq!(run["tool"], "hvia");
    assert!(run["commit"].is_string() && run["version"].is_string());
    assert!(run["seed"].is_u64());
    assert!(run["config_digest"]
        .as_str()
        .is_some_and(|d| d.starts_with("fnv1a64:") && d.len() == 24));
    assert!(run["started_at"]
        .as_str()
        .is_some_and(|t| t.len() == 20 && t.ends_with('Z')));
}

/// The default breakdown, exactly (re-accept after a deliberate timing change).
#[test]
fn snapshot_default_breakdown() {
    let mut v = json(&["breakdown", "--size", "4", "--format", "json"]);
    without_run(&mut v);
    insta::assert_json_snapshot!("breakdown_default", v);
}

/// A short default sweep, exactly, without the host time it took and without the event
/// counts (how the simulation steps, not what it computes: a faster stepping that is
/// proved exact moves them; the benchmark tracks them).
#[test]
fn snapshot_short_sweep() {
    let mut v = json(&[
        "pingpong", "--sizes", "4,64", "--iters", "2", "--format", "json",
    ]);
    without_run(&mut v);
    let sim = v["simulation"].as_object_mut().expect("simulation");
    assert!(sim.remove("wall_seconds").is_some_and(|w| w.is_number()));
    assert!(sim.remove("events").is_some_and(|e| e.as_u64() > Some(0)));
    for r in v["results"].as_array_mut().expect("results") {
        let r = r.as_object_mut().expect("a result");
        assert!(r.remove("events").is_some_and(|e| e.as_u64() > Some(0)));
    }
    insta::assert_json_snapshot!("pingpong_short_sweep", v);
}
