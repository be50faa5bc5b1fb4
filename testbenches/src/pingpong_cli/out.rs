//! What `hvia pingpong` prints: a table for people, the JSON of the CLI contract
//! (`preset`, `op`, `results[]` with `size_bytes`, `iterations`, `one_way_latency_ns`,
//! `bandwidth_mb_s`, and `simulation`, plus additive keys), or CSV (one row per size).

use serde::Serialize;

use super::{Provenance, Sweep};
use crate::report::{columns, csv};
use crate::system::Delivery;

/// The JSON object (contract keys first, then the additive ones).
#[derive(Serialize)]
struct Json<'a> {
    preset: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config_file: Option<&'a str>,
    overrides: &'a [String],
    op: &'static str,
    /// RDMA read only: what its `one_way_latency_ns` is (the whole read, not half).
    #[serde(skip_serializing_if = "Option::is_none")]
    one_way: Option<&'static str>,
    results: Vec<ResultJson>,
    simulation: Simulation,
}

/// One size.
#[derive(Serialize)]
struct ResultJson {
    size_bytes: u32,
    iterations: u32,
    one_way_latency_ns: f64,
    bandwidth_mb_s: f64,
    warmup: u32,
    round_trip_ns: f64,
    events: u64,
    simulated_ps: u64,
    /// What became of the messages (when the sweep shows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    delivery: Option<Delivery>,
}

/// The `simulation` object shared with the other commands' JSON.
#[derive(Serialize)]
struct Simulation {
    simulated_ps: u64,
    wall_seconds: f64,
    events: u64,
}

/// `--format json`.
pub(super) fn json(sweep: &Sweep, prov: &Provenance) -> Result<String, serde_json::Error> {
    let j = Json {
        preset: prov.preset.as_deref(),
        config_file: prov.config_file.as_deref(),
        overrides: &prov.overrides,
        op: sweep.op.name(),
        one_way: (sweep.op == crate::system::Op::RdmaRead).then(|| sweep.op.one_way_meaning()),
        results: sweep
            .results
            .iter()
            .map(|r| ResultJson {
                size_bytes: r.size,
                iterations: r.iterations,
                one_way_latency_ns: r.one_way_ns,
                bandwidth_mb_s: r.bandwidth_mb_s,
                warmup: r.warmup,
                round_trip_ns: r.round_trip_ns,
                events: r.events,
                simulated_ps: r.simulated_ps,
                delivery: sweep.show_delivery.then(|| r.delivery.clone()),
            })
            .collect(),
        simulation: Simulation {
            simulated_ps: sweep.simulated_ps,
            wall_seconds: sweep.wall_seconds,
            events: sweep.events,
        },
    };
    serde_json::to_string_pretty(&j).map(|s| s + "\n")
}

/// The CSV columns, one row per size.
pub const CSV_HEADER: [&str; 8] = [
    "size_bytes",
    "iterations",
    "one_way_latency_ns",
    "bandwidth_mb_s",
    "warmup",
    "round_trip_ns",
    "events",
    "simulated_ps",
];

/// `--format csv`.
pub(super) fn csv_doc(sweep: &Sweep) -> String {
    let rows: Vec<Vec<String>> = sweep
        .results
        .iter()
        .map(|r| {
            vec![
                r.size.to_string(),
                r.iterations.to_string(),
                format!("{:.3}", r.one_way_ns),
                format!("{:.6}", r.bandwidth_mb_s),
                r.warmup.to_string(),
                format!("{:.3}", r.round_trip_ns),
                r.events.to_string(),
                r.simulated_ps.to_string(),
            ]
        })
        .collect();
    csv(&CSV_HEADER, &rows)
}

/// A size for people: bytes, or KiB / MiB when exact.
pub(super) fn size_words(size: u32) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// `--format table`.
pub(super) fn table(sweep: &Sweep, prov: &Provenance) -> String {
    let what = if sweep.op == crate::system::Op::RdmaRead {
        "the mean of {} measured RDMA reads (each a round trip: VipPostSend to its completion)"
    } else {
        "half the mean of {} measured round trips"
    };
    let mut out = format!(
        "Ping-pong over {} between two nodes ({})\none-way latency = {} (after {} warm-up); \
         bandwidth = size / one-way latency (MB = 10^6 bytes)\n\n",
        sweep.op.name(),
        prov.label(),
        what.replace("{}", &sweep.iterations.to_string()),
        sweep.warmup
    );
    let rows: Vec<Vec<String>> = sweep
        .results
        .iter()
        .map(|r| {
            vec![
                r.size.to_string(),
                size_words(r.size),
                format!("{:.3}", r.one_way_ns / 1e3),
                format!("{:.2}", r.bandwidth_mb_s),
            ]
        })
        .collect();
    out.push_str(&columns(
        &["SIZE (bytes)", "", "ONE-WAY (us)", "BANDWIDTH (MB/s)"],
        &rows,
        &[true, true, true, true],
    ));
    #[allow(clippy::cast_precision_loss)]
    let simulated_ms = sweep.simulated_ps as f64 / 1e9;
    if sweep.show_delivery && sweep.results.iter().any(|r| r.delivery.eventful()) {
        out.push_str("\nDelivery (both directions, the set-up exchange included):\n");
        for r in sweep.results.iter().filter(|r| r.delivery.eventful()) {
            out.push_str(&format!(
                "{:>12}: {}\n",
                size_words(r.size),
                r.delivery.summary()
            ));
        }
    }
    out.push_str(&format!(
        "\nSimulated {simulated_ms:.3} ms ({} events) in {:.2} s of host time.\n",
        sweep.events, sweep.wall_seconds
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_words() {
        assert_eq!(size_words(4), "4 B");
        assert_eq!(size_words(1500), "1500 B");
        assert_eq!(size_words(2048), "2 KiB");
        assert_eq!(size_words(1 << 20), "1 MiB");
        assert_eq!(size_words(3 << 19), "1536 KiB");
    }
}
