//! `hvia dma` as users and scripts see it: the JSON keys of the contract, throughput that
//! rises with the burst and stays under the bus ceiling, a 64-bit/66 MHz bus through
//! `--set`, every output format, and exit status 2 naming the option for bad input.

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

/// Runs `hvia dma ARGS --format json`, expects success, returns the JSON.
fn dma_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["dma", "--format", "json"];
    all.extend_from_slice(args);
    let o = hvia(&all);
    assert_eq!(o.status.code(), Some(0), "{all:?}: {}", text(&o.stderr));
    serde_json::from_str(&text(&o.stdout)).expect("valid JSON")
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number in {v}"))
}

/// Runs `hvia dma ARGS`, expects exit status 2 without a panic, returns stderr.
fn bad(args: &[&str]) -> String {
    let mut all = vec!["dma"];
    all.extend_from_slice(args);
    let o = hvia(&all);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
    assert!(!err.contains("panicked"), "{all:?}: {err}");
    assert!(o.stdout.is_empty(), "{all:?} printed to stdout");
    err
}

#[test]
fn json_has_the_contract_keys_and_the_extras() {
    let v = dma_json(&["--bytes", "65536"]);
    assert_eq!(v["bus"], "system");
    assert_eq!(v["direction"], "read");
    assert_eq!(v["bytes"], 65536);
    assert_eq!(v["burst_bytes"], 512);
    let mb_s = num(&v, "throughput_mb_s");
    assert!(mb_s > 0.0 && mb_s < 132.0, "{v}");
    for key in [
        "ceiling_mb_s",
        "elapsed_ns",
        "cycles",
        "bursts",
        "retries",
        "disconnects",
    ] {
        assert!(v[key].is_number(), "{key} missing in {v}");
    }
    for key in ["simulated_ps", "wall_seconds", "events"] {
        assert!(v["simulation"][key].is_number(), "{key} missing in {v}");
    }
    assert_eq!(v["bursts"], 128);
    assert!((num(&v, "ceiling_mb_s") - 132.0).abs() < 0.01, "{v}");
    // Throughput is bytes over elapsed time (MB = 10^6 bytes).
    let expect = 65536.0 * 1e3 / num(&v, "elapsed_ns");
    assert!((mb_s - expect).abs() < 1e-6, "{mb_s} vs {expect}");

    let v = dma_json(&[
        "--bus",
        "local",
        "--direction",
        "write",
        "--bytes",
        "4096",
        "--burst",
        "256",
    ]);
    assert_eq!(
        (&v["bus"], &v["direction"], &v["bytes"], &v["burst_bytes"]),
        (
            &serde_json::json!("local"),
            &serde_json::json!("write"),
            &serde_json::json!(4096),
            &serde_json::json!(256)
        )
    );
}

#[test]
fn reads_rise_with_the_burst_and_stay_under_the_ceiling() {
    let mut last = 0.0;
    for burst in ["64", "128", "256", "512", "1024", "4096"] {
        let v = dma_json(&["--bytes", "1048576", "--burst", burst]);
        let mb_s = num(&v, "throughput_mb_s");
        assert!(mb_s > last, "burst {burst}: {mb_s} MB/s not above {last}");
        assert!(mb_s < 132.0, "burst {burst}: {mb_s} MB/s");
        last = mb_s;
    }
}

#[test]
fn a_64_bit_66_mhz_bus_raises_ceiling_and_throughput() {
    for dir in ["read", "write"] {
        let slow = dma_json(&["--direction", dir]);
        let fast = dma_json(&[
            "--direction",
            dir,
            "--set",
            "pci.system.width_bits=64",
            "--set",
            "pci.system.clock_mhz=66",
        ]);
        let ceiling = num(&fast, "ceiling_mb_s");
        assert!((ceiling - 528.0).abs() < 0.1, "{fast}");
        let (s, f) = (num(&slow, "throughput_mb_s"), num(&fast, "throughput_mb_s"));
        assert!(f > s && f < ceiling, "{dir}: {s} -> {f}");
    }
    // The local bus has its own width and clock.
    let v = dma_json(&[
        "--bus",
        "local",
        "--set",
        "pci.system.width_bits=64",
        "--set",
        "pci.system.clock_mhz=66",
    ]);
    assert!((num(&v, "ceiling_mb_s") - 132.0).abs() < 0.01, "{v}");
}

#[test]
fn the_burst_defaults_to_the_config() {
    let v = dma_json(&["--bytes", "8192", "--set", "pci.system.burst_bytes=128"]);
    assert_eq!(v["burst_bytes"], 128);
    assert_eq!(v["bursts"], 64);
    let v = dma_json(&[
        "--bus",
        "local",
        "--bytes",
        "8192",
        "--set",
        "pci.local.burst_bytes=1024",
    ]);
    assert_eq!(v["burst_bytes"], 1024);
}

#[test]
fn table_and_csv() {
    let o = hvia(&["dma", "--bytes", "16384", "--offset", "100"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    for word in [
        "DMA read on the system bus (32-bit, 33 MHz)",
        "bytes         16384",
        "burst         512 bytes",
        "offset        100 bytes",
        "throughput",
        "ceiling       132.00 MB/s",
        "retries",
        "disconnects",
        "One burst in steady state",
        "data phases",
    ] {
        assert!(t.contains(word), "{word}: {t}");
    }
    let o = hvia(&[
        "dma", "--bus", "local", "--bytes", "4096", "--format", "csv",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let csv = text(&o.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[0].starts_with("bus,direction,bytes,burst_bytes,throughput_mb_s,ceiling_mb_s,"),
        "{csv}"
    );
    assert!(lines[1].starts_with("local,read,4096,512,"), "{csv}");
    assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
}

#[test]
fn bad_input_exits_with_2_and_names_the_option() {
    for (args, option) in [
        (&["--bytes", "0"][..], "--bytes"),
        (&["--bytes", "abc"][..], "--bytes"),
        (&["--bytes=-5"][..], "--bytes"),
        (&["--bytes", "999999999999"][..], "--bytes"),
        (&["--burst", "3"][..], "--burst"),
        (&["--burst", "8192"][..], "--burst"),
        (&["--burst", "x"][..], "--burst"),
        (&["--bus", "nowhere"][..], "--bus"),
        (&["--direction", "sideways"][..], "--direction"),
        (&["--offset", "4096"][..], "--offset"),
        (
            &["--burst", "4", "--set", "pci.system.width_bits=64"][..],
            "--burst",
        ),
        (
            &["--set", "host.memory_mb=1", "--bytes", "2000000"][..],
            "--bytes",
        ),
        (
            &["--set", "pci.system.clock_mhz=100"][..],
            "pci.system.clock_mhz",
        ),
        (
            &["--set", "pci.bridge.read_mode=eager"][..],
            "pci.bridge.read_mode",
        ),
    ] {
        let err = bad(args);
        assert!(err.contains(option), "{args:?}: {err}");
    }
}

#[test]
fn help_says_who_is_master_on_each_bus() {
    let o = hvia(&["dma", "--help"]);
    let help = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    for word in [
        "--bus",
        "--direction",
        "--bytes",
        "--burst",
        "--offset",
        "DP83820",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
}
