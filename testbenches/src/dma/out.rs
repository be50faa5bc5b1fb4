//! What `hvia dma` prints: a table for people (the numbers, then the clock-by-clock
//! accounting of one burst), the JSON of the CLI contract (`bus`, `direction`, `bytes`,
//! `burst_bytes`, `throughput_mb_s`, plus additive keys), or CSV (a header and one row).

use pci_model::BenchDirection;
use serde::Serialize;

use super::DmaRun;
use crate::config::PciBusKind;
use crate::report::{aligned, csv};

/// The JSON object (contract keys first, then the additive ones).
#[derive(Serialize)]
struct Json<'a> {
    bus: &'a str,
    direction: &'a str,
    bytes: u64,
    burst_bytes: u64,
    throughput_mb_s: f64,
    ceiling_mb_s: f64,
    elapsed_ns: f64,
    cycles: u64,
    bursts: u32,
    retries: u64,
    disconnects: u64,
    simulation: Simulation,
}

/// The `simulation` object shared with the other commands' JSON.
#[derive(Serialize)]
struct Simulation {
    simulated_ps: u64,
    wall_seconds: f64,
    events: u64,
}

fn to_json(run: &DmaRun) -> Json<'static> {
    let r = &run.report;
    Json {
        bus: run.bus.name(),
        direction: r.direction.name(),
        bytes: r.bytes,
        burst_bytes: r.burst_bytes,
        throughput_mb_s: r.throughput_mb_s,
        ceiling_mb_s: r.ceiling_mb_s,
        elapsed_ns: r.elapsed.as_ns_f64(),
        cycles: r.cycles,
        bursts: r.bursts,
        retries: r.stats.retries,
        disconnects: r.stats.disconnects,
        simulation: Simulation {
            simulated_ps: run.simulated_ps,
            wall_seconds: run.wall_seconds,
            events: r.events,
        },
    }
}

/// `--format json`.
pub(super) fn json(run: &DmaRun) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(&to_json(run)).map(|s| s + "\n")
}

/// `--format csv`: the JSON's keys as columns (`simulation.*` flattened), one row.
pub(super) fn csv_doc(run: &DmaRun) -> String {
    let j = to_json(run);
    let row = vec![
        j.bus.to_owned(),
        j.direction.to_owned(),
        j.bytes.to_string(),
        j.burst_bytes.to_string(),
        format!("{:.3}", j.throughput_mb_s),
        format!("{:.3}", j.ceiling_mb_s),
        format!("{:.3}", j.elapsed_ns),
        j.cycles.to_string(),
        j.bursts.to_string(),
        j.retries.to_string(),
        j.disconnects.to_string(),
        j.simulation.simulated_ps.to_string(),
        format!("{:.6}", j.simulation.wall_seconds),
        j.simulation.events.to_string(),
    ];
    csv(
        &[
            "bus",
            "direction",
            "bytes",
            "burst_bytes",
            "throughput_mb_s",
            "ceiling_mb_s",
            "elapsed_ns",
            "cycles",
            "bursts",
            "retries",
            "disconnects",
            "simulated_ps",
            "wall_seconds",
            "events",
        ],
        &[row],
    )
}

/// Who moves data between what, in words.
fn path(bus: PciBusKind, dir: BenchDirection) -> &'static str {
    match (bus, dir) {
        (PciBusKind::System, BenchDirection::Read) => {
            "host memory -> host bridge -> card DMA master"
        }
        (PciBusKind::System, BenchDirection::Write) => {
            "card DMA master -> host bridge -> host memory"
        }
        (PciBusKind::Local, BenchDirection::Read) => "FPGA buffer RAM -> DP83820 (master)",
        (PciBusKind::Local, BenchDirection::Write) => "DP83820 (master) -> FPGA buffer RAM",
    }
}

/// `--format table`.
pub(super) fn table(run: &DmaRun) -> String {
    let r = &run.report;
    let b = &run.bus_params;
    let mut out = format!(
        "DMA {} on the {} bus ({}-bit, {} MHz): {}\n\n",
        r.direction.name(),
        run.bus.name(),
        b.width.bits(),
        b.clock_mhz,
        path(run.bus, r.direction)
    );
    let efficiency = if r.ceiling_mb_s > 0.0 {
        100.0 * r.throughput_mb_s / r.ceiling_mb_s
    } else {
        0.0
    };
    let rows: Vec<Vec<String>> = [
        ("bytes", r.bytes.to_string()),
        ("burst", format!("{} bytes", r.burst_bytes)),
        (
            "offset",
            format!("{} bytes into the first page", run.offset),
        ),
        ("elapsed", format!("{:.1} ns", r.elapsed.as_ns_f64())),
        ("cycles", format!("{} PCI clocks", r.cycles)),
        ("throughput", format!("{:.2} MB/s", r.throughput_mb_s)),
        (
            "ceiling",
            format!(
                "{:.2} MB/s (width x clock; {efficiency:.1} % reached)",
                r.ceiling_mb_s
            ),
        ),
        ("bursts", r.bursts.to_string()),
        ("transactions", r.stats.transactions.to_string()),
        ("retries", r.stats.retries.to_string()),
        ("disconnects", r.stats.disconnects.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| vec![k.to_owned(), v])
    .collect();
    out.push_str(&aligned(&[], &rows));
    if let Some(a) = &r.accounting {
        out.push_str(&format!(
            "\nOne burst in steady state (burst {} of {}, {} bytes): {} PCI clocks\n",
            a.tag + 1,
            r.bursts,
            a.bytes,
            a.clocks
        ));
        let rows: Vec<Vec<String>> = a
            .rows
            .iter()
            .map(|row| {
                vec![
                    format!("{}..{}", row.from, row.from + row.clocks.saturating_sub(1)),
                    row.clocks.to_string(),
                    row.what.clone(),
                ]
            })
            .collect();
        out.push_str(&aligned(&["CLOCKS", "COUNT", "WHAT"], &rows));
    }
    out
}
