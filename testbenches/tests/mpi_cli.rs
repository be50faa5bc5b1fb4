//! `hvia mpi` and `hvia bsp` as scripts see them: the JSON keys of the contract
//! (`pingpong`'s plus `protocol` per size; the probe's `rows` of `nodes`,
//! `g_ns_per_byte`, `L_us`), every byte checked, LU equal to the host's, and exit
//! status 2 naming the option for bad input. Small runs: the tests use the debug build.

use serde_json::Value;
use std::process::{Command, Output};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs")
}

fn json(args: &[&str]) -> Value {
    let o = hvia(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    serde_json::from_slice(&o.stdout).expect("valid JSON")
}

#[test]
fn mpi_pingpong_reports_protocol_per_size_and_the_overhead() {
    let v = json(&[
        "mpi", "pingpong", "--sizes", "4,9000", "--iters", "1", "--warmup", "0", "--format", "json",
    ]);
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["protocol"], "eager");
    assert_eq!(rows[1]["protocol"], "synchronous");
    for r in rows {
        assert!(r["one_way_latency_ns"].as_f64().expect("number") > 0.0);
        assert!(r["bandwidth_mb_s"].as_f64().expect("number") > 0.0);
        assert_eq!(r["verified_bytes"], r["size_bytes"], "every byte checked");
    }
    let mpi = rows[0]["one_way_latency_ns"].as_f64().expect("number");
    let raw = v["raw_vipl"]["send_recv_one_way_ns"]
        .as_f64()
        .expect("number");
    let over = v["overhead"]["over_send_recv_ns"].as_f64().expect("number");
    assert!(
        (mpi - raw - over).abs() < 1e-6 && over > 0.0,
        "MPI costs more: {v}"
    );
    assert!(v["simulation"]["events"].as_u64().expect("events") > 0);
    assert!(v["run"].is_object(), "run metadata");
}

#[test]
fn mpi_bcast_on_three_nodes_checks_every_rank() {
    let o = hvia(&[
        "mpi", "bcast", "--nodes", "3", "--sizes", "4,10000", "--iters", "1", "--warmup", "0",
        "--format", "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("store-and-forward"));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows[1]["protocol"], "synchronous");
    for r in rows {
        assert_eq!(
            r["verified_bytes"].as_u64(),
            r["size_bytes"].as_u64().map(|s| 3 * s),
            "every rank checked every byte"
        );
    }
}

#[test]
fn bsp_probe_and_lu() {
    let v = json(&[
        "bsp",
        "probe",
        "--nodes",
        "2,3",
        "--h",
        "1024,4096",
        "--reps",
        "1",
        "--empty",
        "2",
        "--format",
        "json",
    ]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert!(r["g_ns_per_byte"].as_f64().expect("g") > 0.0);
        assert!(r["L_us"].as_f64().expect("L") > 0.0);
    }
    assert_eq!(rows[1]["nodes"], 3);
    let v = json(&["bsp", "lu", "--n", "6", "--format", "json"]);
    assert_eq!(v["grid"], "2x2");
    assert_eq!(v["rows"][0]["max_abs_error"].as_f64(), Some(0.0));
    assert!(v["rows"][0]["simulated_us"].as_f64().expect("time") > 0.0);
}

#[test]
fn bad_input_names_the_option() {
    for (args, what) in [
        (&["mpi", "bcast", "--nodes", "1"][..], "--nodes"),
        (&["mpi", "pingpong", "--sizes", "0"][..], "--sizes"),
        (&["bsp", "lu", "--n", "0"][..], "--n"),
        (&["bsp", "probe", "--nodes", "2,65"][..], "--nodes"),
        (
            &["mpi", "pingpong", "--set", "mpi.credit_threshold=9"][..],
            "mpi.credit_threshold",
        ),
    ] {
        let o = hvia(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(what) && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}
