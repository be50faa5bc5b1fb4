//! What `hvia mpi` and `hvia bsp` print: a table, the JSON of the contract (`cli.md`:
//! `mpi pingpong` / `mpi bcast` as `pingpong` plus `protocol` per size; `bsp probe`
//! `{ "rows": [ { "nodes", "g_ns_per_byte", "L_us" } ] }`), or CSV (one row per size,
//! process count or matrix order).

use serde::Serialize;

use super::{LuRow, MpiRow, ProbeRow, Totals};
use crate::config::{MpiRegistration, SystemConfig};
use crate::report::{columns, csv, Format};
use host_driver::ProgramReport;

#[derive(Serialize)]
struct Simulation {
    simulated_ps: u64,
    wall_seconds: f64,
    events: u64,
}

fn sim(t: Totals, wall: f64) -> Simulation {
    Simulation {
        simulated_ps: t.simulated_ps,
        wall_seconds: wall,
        events: t.events,
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v)
        .map_or_else(|e| format!("{{\"error\":\"{e}\"}}\n"), |s| s + "\n")
}

fn footer(t: Totals, wall: f64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let ms = t.simulated_ps as f64 / 1e9;
    format!(
        "Simulated {ms:.3} ms ({} events) in {wall:.2} s of host time.\n",
        t.events
    )
}

/// A table for people: `title`, a blank line, the columns (`right`: right-aligned),
/// `note` (a line or empty), a blank line, the simulation footer.
fn table(
    title: &str,
    header: &[&str],
    right: &[bool],
    body: &[Vec<String>],
    note: &str,
    t: Totals,
    wall: f64,
) -> String {
    format!(
        "{title}\n\n{}\n{note}{}",
        columns(header, body, right),
        footer(t, wall)
    )
}

#[derive(Serialize)]
struct PingRow {
    size_bytes: u32,
    iterations: u32,
    one_way_latency_ns: f64,
    bandwidth_mb_s: f64,
    protocol: &'static str,
    verified_bytes: u64,
    copies: u64,
    registrations: u64,
    control_messages: u64,
}

#[derive(Serialize)]
struct Raw {
    size_bytes: u32,
    send_recv_one_way_ns: f64,
    rdma_write_one_way_ns: f64,
}

#[derive(Serialize)]
struct Overhead {
    size_bytes: u32,
    over_send_recv_ns: f64,
    over_rdma_write_ns: f64,
}

#[derive(Serialize)]
struct PingJson {
    op: &'static str,
    eager_limit_bytes: u32,
    registration: &'static str,
    results: Vec<PingRow>,
    raw_vipl: Raw,
    overhead: Overhead,
    simulation: Simulation,
}

/// `hvia mpi pingpong`.
pub(super) fn mpi_pingpong(
    format: Format,
    cfg: &SystemConfig,
    rows: &[MpiRow],
    smallest: u32,
    raw: (f64, f64),
    totals: Totals,
    wall: f64,
) -> String {
    let first = rows.first().map_or(0.0, |r| r.one_way_ns);
    let registration = match cfg.mpi.registration {
        MpiRegistration::PerCall => "per-call",
        MpiRegistration::Cache => "cache",
    };
    match format {
        Format::Json => json(&PingJson {
            op: "mpi",
            eager_limit_bytes: cfg.mpi.eager_limit_bytes,
            registration,
            results: rows
                .iter()
                .map(|r| PingRow {
                    size_bytes: r.size,
                    iterations: r.iterations,
                    one_way_latency_ns: r.one_way_ns,
                    bandwidth_mb_s: r.bandwidth_mb_s,
                    protocol: r.protocol,
                    verified_bytes: r.verified_bytes,
                    copies: r.stats.copies,
                    registrations: r.stats.registrations,
                    control_messages: r.stats.control_messages,
                })
                .collect(),
            raw_vipl: Raw {
                size_bytes: smallest,
                send_recv_one_way_ns: raw.0,
                rdma_write_one_way_ns: raw.1,
            },
            overhead: Overhead {
                size_bytes: smallest,
                over_send_recv_ns: first - raw.0,
                over_rdma_write_ns: first - raw.1,
            },
            simulation: sim(totals, wall),
        }),
        Format::Csv => csv(
            &[
                "size_bytes",
                "one_way_latency_ns",
                "bandwidth_mb_s",
                "protocol",
            ],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.size.to_string(),
                        format!("{:.3}", r.one_way_ns),
                        format!("{:.6}", r.bandwidth_mb_s),
                        r.protocol.to_owned(),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
        Format::Table => table(
            &format!(
                "MPI ping-pong (vmpi over VIPL, eager up to {} bytes, registration {registration}), ranks 0 and 1",
                cfg.mpi.eager_limit_bytes
            ),
            &["SIZE (B)", "ONE-WAY (us)", "BANDWIDTH (MB/s)", "PROTOCOL"],
            &[true, true, true, false],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.size.to_string(),
                        format!("{:.2}", r.one_way_ns / 1e3),
                        format!("{:.2}", r.bandwidth_mb_s),
                        r.protocol.to_owned(),
                    ]
                })
                .collect::<Vec<_>>(),
            &format!(
                "At {smallest} B: raw VIPL send/recv {:.2} us, RDMA write {:.2} us; MPI adds {:.2} us over send/recv, {:.2} us over RDMA write.\n",
                raw.0 / 1e3,
                raw.1 / 1e3,
                (first - raw.0) / 1e3,
                (first - raw.1) / 1e3
            ),
            totals,
            wall,
        ),
    }
}

/// One size of a broadcast run.
pub(super) struct BcastRow {
    size: u32,
    iterations: u32,
    latency_ns: f64,
    protocol: &'static str,
    verified_bytes: u64,
}

/// Per size: the mean over measured broadcasts of the latest end over the ranks minus
/// the earliest start.
pub(super) fn bcast_rows(reports: &[ProgramReport], sizes: &[u32], eager: u32) -> Vec<BcastRow> {
    let Some(first) = reports.first() else {
        return Vec::new();
    };
    sizes
        .iter()
        .map(|&size| {
            let idx: Vec<u32> = first
                .iterations
                .iter()
                .filter(|r| r.bytes == size && !r.warmup)
                .map(|r| r.index)
                .collect();
            let mut sum = 0u64;
            let mut verified = 0u64;
            for &i in &idx {
                let recs: Vec<_> = reports
                    .iter()
                    .flat_map(|r| r.iterations.iter().find(|x| x.index == i))
                    .collect();
                let s = recs.iter().map(|r| r.start.as_ps()).min().unwrap_or(0);
                let e = recs.iter().map(|r| r.end.as_ps()).max().unwrap_or(0);
                sum += e.saturating_sub(s);
                verified += recs.iter().map(|r| r.verified_bytes).sum::<u64>();
            }
            #[allow(clippy::cast_precision_loss)]
            let latency_ns = if idx.is_empty() {
                0.0
            } else {
                sum as f64 / idx.len() as f64 / 1e3
            };
            BcastRow {
                size,
                iterations: u32::try_from(idx.len()).unwrap_or(u32::MAX),
                latency_ns,
                protocol: if size <= eager {
                    "eager"
                } else {
                    "synchronous"
                },
                verified_bytes: verified,
            }
        })
        .collect()
}

#[derive(Serialize)]
struct BcastJsonRow {
    size_bytes: u32,
    iterations: u32,
    /// The broadcast's latency: all ranks out of the barrier to the last rank done.
    one_way_latency_ns: f64,
    bandwidth_mb_s: f64,
    protocol: &'static str,
    verified_bytes: u64,
}

#[derive(Serialize)]
struct BcastJson {
    op: &'static str,
    nodes: u32,
    results: Vec<BcastJsonRow>,
    simulation: Simulation,
}

/// `hvia mpi bcast`.
pub(super) fn mpi_bcast(
    format: Format,
    nodes: u32,
    rows: &[BcastRow],
    t: Totals,
    wall: f64,
) -> String {
    let bw = |r: &BcastRow| {
        if r.latency_ns > 0.0 {
            f64::from(r.size) * 1e3 / r.latency_ns
        } else {
            0.0
        }
    };
    match format {
        Format::Json => json(&BcastJson {
            op: "mpi-bcast",
            nodes,
            results: rows
                .iter()
                .map(|r| BcastJsonRow {
                    size_bytes: r.size,
                    iterations: r.iterations,
                    one_way_latency_ns: r.latency_ns,
                    bandwidth_mb_s: bw(r),
                    protocol: r.protocol,
                    verified_bytes: r.verified_bytes,
                })
                .collect(),
            simulation: sim(t, wall),
        }),
        Format::Csv => csv(
            &["size_bytes", "latency_ns", "protocol"],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.size.to_string(),
                        format!("{:.3}", r.latency_ns),
                        r.protocol.to_owned(),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
        Format::Table => table(
            &format!(
                "MPI_Bcast from rank 0 to {nodes} ranks (binomial tree), barrier to last rank done"
            ),
            &["SIZE (B)", "BCAST (us)", "PROTOCOL"],
            &[true, true, false],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.size.to_string(),
                        format!("{:.2}", r.latency_ns / 1e3),
                        r.protocol.to_owned(),
                    ]
                })
                .collect::<Vec<_>>(),
            "",
            t,
            wall,
        ),
    }
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct ProbeJsonRow {
    nodes: u32,
    g_ns_per_byte: f64,
    g_us_per_word: f64,
    L_us: f64,
    intercept_us: f64,
}

#[derive(Serialize)]
struct ProbeJson {
    word_bytes: u32,
    rows: Vec<ProbeJsonRow>,
    simulation: Simulation,
}

/// `hvia bsp probe`.
pub(super) fn bsp_probe(format: Format, rows: &[ProbeRow], t: Totals, wall: f64) -> String {
    let r = |p: &ProbeRow| ProbeJsonRow {
        nodes: p.nodes,
        g_ns_per_byte: p.cost.g_ns_per_byte,
        g_us_per_word: p.cost.g_ns_per_byte * 8.0 / 1e3,
        L_us: p.cost.l_ns / 1e3,
        intercept_us: p.cost.intercept_ns / 1e3,
    };
    match format {
        Format::Json => json(&ProbeJson {
            word_bytes: 8,
            rows: rows.iter().map(r).collect(),
            simulation: sim(t, wall),
        }),
        Format::Csv => csv(
            &["nodes", "g_ns_per_byte", "L_us"],
            &rows
                .iter()
                .map(|p| {
                    vec![
                        p.nodes.to_string(),
                        format!("{:.6}", p.cost.g_ns_per_byte),
                        format!("{:.6}", p.cost.l_ns / 1e3),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
        Format::Table => table(
            "BSP cost parameters (vbsp over VIPL): L from empty supersteps, g from total exchanges (8-byte words)",
            &["P", "g (ns/B)", "g (us/word)", "L (us)"],
            &[true, true, true, true],
            &rows
                .iter()
                .map(|p| {
                    vec![
                        p.nodes.to_string(),
                        format!("{:.2}", p.cost.g_ns_per_byte),
                        format!("{:.3}", p.cost.g_ns_per_byte * 8.0 / 1e3),
                        format!("{:.2}", p.cost.l_ns / 1e3),
                    ]
                })
                .collect::<Vec<_>>(),
            "",
            t,
            wall,
        ),
    }
}

#[derive(Serialize)]
struct LuJsonRow {
    n: u32,
    simulated_us: f64,
    mflops: f64,
    max_abs_error: f64,
}

#[derive(Serialize)]
struct LuJson {
    grid: &'static str,
    rows: Vec<LuJsonRow>,
    simulation: Simulation,
}

fn mflops(r: &LuRow) -> f64 {
    let n = f64::from(r.n);
    if r.simulated_ns > 0.0 {
        2.0 / 3.0 * n * n * n / (r.simulated_ns / 1e3)
    } else {
        0.0
    }
}

/// `hvia bsp lu`.
pub(super) fn bsp_lu(format: Format, rows: &[LuRow], t: Totals, wall: f64) -> String {
    match format {
        Format::Json => json(&LuJson {
            grid: "2x2",
            rows: rows
                .iter()
                .map(|r| LuJsonRow {
                    n: r.n,
                    simulated_us: r.simulated_ns / 1e3,
                    mflops: mflops(r),
                    max_abs_error: r.max_abs_error,
                })
                .collect(),
            simulation: sim(t, wall),
        }),
        Format::Csv => csv(
            &["n", "simulated_us", "max_abs_error"],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.n.to_string(),
                        format!("{:.3}", r.simulated_ns / 1e3),
                        format!("{:e}", r.max_abs_error),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
        Format::Table => table(
            "LU decomposition on a 2 x 2 grid (vbsp, 2D cyclic, no pivoting), checked against the host",
            &["N", "TIME (us)", "MFLOP/S", "MAX |ERROR|"],
            &[true, true, true, true],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.n.to_string(),
                        format!("{:.1}", r.simulated_ns / 1e3),
                        format!("{:.1}", mflops(r)),
                        format!("{:.1e}", r.max_abs_error),
                    ]
                })
                .collect::<Vec<_>>(),
            "",
            t,
            wall,
        ),
    }
}
