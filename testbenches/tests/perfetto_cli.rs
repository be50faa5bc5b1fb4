//! `--perfetto` flows and counters: in the trace of a 4-byte breakdown, every measured
//! message has a flow from the sender's VipPostSend through both cards to the
//! receiver's detection (each step inside a slice it binds to, in time order), and the
//! counter tracks (bus utilisation, descriptors in flight) are there for both nodes.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn flows_lead_from_the_post_to_the_remote_detection_and_counters_are_present() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("flows.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(["breakdown", "--size", "4", "--perfetto"])
        .arg(&path)
        .output()
        .expect("hvia runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("file")).expect("JSON");
    let events = doc["traceEvents"].as_array().expect("events");
    let mut threads = BTreeMap::new();
    for e in events {
        if e["ph"] == "M" && e["name"] == "thread_name" {
            threads.insert(
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap().to_owned(),
            );
        }
    }
    let thread =
        |e: &Value| threads[&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())].clone();
    // The innermost slice of a thread that holds instant `ts` (where a flow binds).
    let slice_at = |e: &Value| -> Option<String> {
        let ts = e["ts"].as_f64().unwrap();
        events
            .iter()
            .filter(|s| {
                s["ph"] == "X"
                    && s["pid"] == e["pid"]
                    && s["tid"] == e["tid"]
                    && s["ts"].as_f64().unwrap() <= ts
                    && ts <= s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap()
            })
            .min_by(|a, b| {
                a["dur"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["dur"].as_f64().unwrap())
            })
            .map(|s| s["name"].as_str().unwrap().to_owned())
    };
    let mut flows: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for e in events {
        if ["s", "t", "f"].contains(&e["ph"].as_str().unwrap_or_default()) {
            flows.entry(e["id"].as_u64().unwrap()).or_default().push(e);
        }
    }
    let mut rdma = 0;
    for steps in flows.values() {
        assert_eq!(steps[0]["ph"], "s");
        assert_eq!(steps.last().unwrap()["ph"], "f");
        let ts: Vec<f64> = steps.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "in time order: {ts:?}");
        for e in steps {
            assert!(slice_at(e).is_some(), "every step binds to a slice: {e}");
        }
        let (first, last) = (steps[0], *steps.last().unwrap());
        assert_eq!(slice_at(first).as_deref(), Some("VipPostSend"));
        let detect = slice_at(last).unwrap();
        assert!(detect == "poll" || detect == "VipRecvWait", "{detect}");
        let from = thread(first);
        let to = thread(last);
        assert!(from.ends_with(".host.cpu") && to.ends_with(".host.cpu"));
        assert_ne!(from[..2], to[..2], "the flow crosses the nodes");
        let through: Vec<String> = steps.iter().map(|e| thread(e)).collect();
        let (tx, rx) = (&from[..2], &to[..2]);
        for card in [
            format!("{tx}.card.engine"),
            format!("{tx}.dp83820.mac"),
            format!("{rx}.dp83820.bus"),
            format!("{rx}.card.engine"),
        ] {
            assert!(
                through.iter().any(|t| t.starts_with(&card)),
                "{card} in {through:?}"
            );
        }
        if steps
            .iter()
            .any(|e| slice_at(e).as_deref() == Some("payload DMA write"))
        {
            rdma += 1;
        }
    }
    assert!(rdma >= 6, "three round trips of RDMA writes: {rdma}");
    let counters: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for n in ["n0", "n1"] {
        for track in [
            "pci.system utilisation (%)",
            "pci.local utilisation (%)",
            "card.engine descriptors in flight",
            "card.engine send_fifo (bytes)",
            "card.engine recv_fifo (bytes)",
            "dp83820.mac rx_fifo (bytes)",
        ] {
            let name = format!("{n}.{track}");
            assert!(counters.contains(&name.as_str()), "{name}");
        }
    }
    assert!(events
        .iter()
        .filter(|e| e["ph"] == "C" && e["args"]["busy"].is_number())
        .any(|e| e["args"]["busy"].as_f64().unwrap() > 0.0));
    // A 4-byte message passes through each FIFO: every fill rises to 4 bytes (the
    // DP83820 holds the whole 64-byte minimum frame) and falls back to 0.
    for (track, peak) in [
        ("n0.card.engine send_fifo (bytes)", 4),
        ("n1.card.engine recv_fifo (bytes)", 4),
        ("n1.dp83820.mac rx_fifo (bytes)", 60),
    ] {
        let fills: Vec<u64> = events
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == track)
            .map(|e| e["args"]["fill"].as_u64().unwrap())
            .collect();
        assert!(fills.iter().any(|&f| f >= peak), "{track}: {fills:?}");
        assert_eq!(fills.last(), Some(&0), "{track} drains: {fills:?}");
    }
}
