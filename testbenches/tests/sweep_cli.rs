//! `--sweep KEY=V1,V2` as users see it: the grid of every combination, each point's
//! overrides beside its results (the same results as a run with those `--set`s), CSV
//! with a column per swept key, tables per point, a plot; run metadata in the JSON of
//! every report; bad sweeps name `--sweep` with exit status 2.

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

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("JSON")
}

#[test]
fn a_two_by_two_pingpong_grid_gives_four_points_with_their_overrides() {
    let v = json(&[
        "pingpong",
        "--sizes",
        "4,65536",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--sweep",
        "pci.system.clock_mhz=33,66",
        "--sweep",
        "card.att_location=card,host",
        "--format",
        "json",
    ]);
    assert_eq!(v["command"], "pingpong");
    assert_eq!(v["sweep"][0]["key"], "pci.system.clock_mhz");
    assert_eq!(v["sweep"][1]["values"], serde_json::json!(["card", "host"]));
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 4);
    let expected = [
        ["pci.system.clock_mhz=33", "card.att_location=card"],
        ["pci.system.clock_mhz=33", "card.att_location=host"],
        ["pci.system.clock_mhz=66", "card.att_location=card"],
        ["pci.system.clock_mhz=66", "card.att_location=host"],
    ];
    let mut digests = std::collections::BTreeSet::new();
    for (i, (p, want)) in points.iter().zip(expected).enumerate() {
        assert_eq!(p["overrides"], serde_json::json!(want));
        let r = &p["result"];
        assert_eq!(r["overrides"], serde_json::json!(want));
        assert_eq!(r["results"].as_array().expect("results").len(), 2);
        digests.insert(
            r["run"]["config_digest"]
                .as_str()
                .expect("digest")
                .to_owned(),
        );
        // The point's numbers are those of a run with the same --sets (two corners,
        // to keep the debug-build test short).
        if i == 1 || i == 2 {
            continue;
        }
        let single = json(&[
            "pingpong", "--sizes", "4,65536", "--iters", "2", "--warmup", "1", "--set", want[0],
            "--set", want[1], "--format", "json",
        ]);
        for (a, b) in r["results"]
            .as_array()
            .unwrap()
            .iter()
            .zip(single["results"].as_array().unwrap())
        {
            assert_eq!(a["one_way_latency_ns"], b["one_way_latency_ns"]);
        }
        assert_eq!(r["run"]["config_digest"], single["run"]["config_digest"]);
    }
    assert_eq!(digests.len(), 4, "every point has its own configuration");
    assert!(v["run"]["commit"].is_string());
    // The 4-byte latency moves with both keys.
    let lat = |i: usize| {
        points[i]["result"]["results"][0]["one_way_latency_ns"]
            .as_f64()
            .unwrap()
    };
    assert!(
        lat(1) > lat(0) && lat(2) < lat(0),
        "{} {} {}",
        lat(0),
        lat(1),
        lat(2)
    );
}

#[test]
fn sweeps_on_breakdown_dma_and_validate_in_every_format() {
    let v = json(&[
        "breakdown",
        "--size",
        "64",
        "--sweep",
        "pci.system.width_bits=32,64",
        "--format",
        "json",
    ]);
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 2);
    assert!(
        points[1]["result"]["one_way_latency_ns"].as_f64()
            < points[0]["result"]["one_way_latency_ns"].as_f64()
    );
    let csv = ok(&[
        "dma",
        "--bytes",
        "65536",
        "--sweep",
        "pci.system.clock_mhz=33,66",
        "--format",
        "csv",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("pci.system.clock_mhz,bus,"), "{csv}");
    assert!(
        lines[1].starts_with("33,system,") && lines[2].starts_with("66,system,"),
        "{csv}"
    );
    let table = ok(&["dma", "--bytes", "4096", "--sweep", "sim.seed=1,2"]);
    assert!(
        table.contains("== what-if point 1/2: --set sim.seed=1"),
        "{table}"
    );
    assert!(
        table.contains("== what-if point 2/2: --set sim.seed=2"),
        "{table}"
    );
    // validate takes --sweep (a whole validation per point is too slow for a debug
    // test: a bad point is refused before anything runs, naming it).
    let o = hvia(&["validate", "--sweep", "pci.system.clock_mhz=33,900"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--sweep pci.system.clock_mhz=900"), "{err}");
}

#[test]
fn sweep_plot_and_run_metadata() {
    let plot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep.svg");
    ok(&[
        "pingpong",
        "--sizes",
        "4,64",
        "--iters",
        "1",
        "--warmup",
        "1",
        "--sweep",
        "pci.system.clock_mhz=33,66",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&plot).expect("svg");
    assert!(svg.contains("pci.system.clock_mhz=33") && svg.contains("pci.system.clock_mhz=66"));
    for args in [
        &["dma", "--bytes", "4096", "--format", "json"][..],
        &["breakdown", "--format", "json"][..],
    ] {
        let v = json(args);
        assert_eq!(v["run"]["preset"], "hvia-ge", "{args:?}");
        assert_eq!(v["run"]["seed"], 1, "{args:?}");
    }
    let version = ok(&["--version"]);
    assert!(version.starts_with("hvia 0.1.0 (commit "), "{version}");
}

#[test]
fn bad_sweeps_name_the_option() {
    for (args, word) in [
        (
            &["pingpong", "--sweep", "pci.system.clock_mhz"][..],
            "--sweep",
        ),
        (
            &["pingpong", "--sweep", "pci.system.clock_mhz=33,,66"][..],
            "--sweep",
        ),
        (
            &["pingpong", "--sweep", "no.such.key=1,2"][..],
            "no.such.key",
        ),
        (
            &["pingpong", "--sweep", "pci.system.clock_mhz=33,900"][..],
            "--sweep",
        ),
        (&["presets", "--sweep", "sim.seed=1,2"][..], "--sweep"),
        (
            &["breakdown", "--sweep", "sim.seed=1,2", "--vcd", "x.vcd"][..],
            "--vcd",
        ),
        (
            &["a", "--sweep", "a=1", "--sweep", "a=2"][..],
            "unrecognized",
        ),
    ] {
        let o = hvia(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(word), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
    let o = hvia(&["pingpong", "--sweep", "sim.seed=1", "--sweep", "sim.seed=2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("swept twice"));
}
