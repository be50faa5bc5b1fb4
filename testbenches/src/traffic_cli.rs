//! `hvia traffic`: traffic patterns beyond the ping-pong: `--pattern stream` (one-way
//! bandwidth from node 0 to node 1 with `--window` descriptors outstanding, `--messages`
//! of `--size` bytes; see [`crate::system::traffic`]), `--pattern bidirectional` (the
//! same both ways at once), `--pattern incast` (nodes 1 .. N-1 each stream to node 0)
//! and `--pattern all-to-all` (every node to every other; see
//! [`crate::system::mesh`]). `--nodes N` sets `topology.nodes`; more than 2 nodes with
//! no switch configured get the store-and-forward switch (a note on stderr says so).
//! Output: a table, the contract's JSON (`pattern`, `nodes`, `size_bytes`,
//! `aggregate_bandwidth_mb_s`, `per_node`, `latency_ns` {`p50`, `p99`, `max`},
//! `pause_frames`, `drops`, `simulation`, plus `delivery`, and for incast and
//! all-to-all the message accounting `expected_messages`, `received_messages`,
//! `lost_messages`), or CSV (one row per node); `--plot FILE.svg|.png` draws each
//! node's bandwidth and the latency distribution ([`crate::traffic_plot`]); `--stats
//! FILE.json|.csv` writes every component's counters at the end of the run.

use clap::{Args, ValueEnum};
use serde::Serialize;
use std::time::Instant;

use crate::cli::Outcome;
use crate::config::SystemConfig;
use crate::report::{columns, csv, Format};
use crate::system::mesh::{quiet_time, run_mesh, MeshPattern, MeshRun};
use crate::system::traffic::{run_bidirectional, run_stream, StreamRun};
use crate::system::Delivery;
use host_driver::programs::StreamParams;
use std::path::PathBuf;

/// The traffic patterns of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Pattern {
    /// One-way bandwidth from node 0 to node 1, `--window` descriptors outstanding.
    Stream,
    /// Both directions at once between nodes 0 and 1.
    Bidirectional,
    /// Nodes 1 .. N-1 each stream to node 0.
    Incast,
    /// Every node streams to every other.
    AllToAll,
}

/// Options of `hvia traffic`.
#[derive(Debug, Args)]
pub struct TrafficArgs {
    /// The pattern.
    #[arg(long, value_enum)]
    pub pattern: Pattern,
    /// Nodes (2 .. 64): sets `topology.nodes`; with more than 2 and no switch
    /// configured, `topology.switch=store-and-forward` is used.
    #[arg(long, default_value_t = 2)]
    pub nodes: u32,
    /// Bytes of each message (1 .. 16777216).
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub size: u32,
    /// Messages to send, per sender and receiver pair (1 .. 100000; default 100 for
    /// stream and bidirectional, 20 for incast, 4 for all-to-all).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub messages: Option<u32>,
    /// Descriptors outstanding at most (1 .. 64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub window: u32,
    /// Draw each node's bandwidth and the latency distribution (FILE.svg or FILE.png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Write every component's counters at the end of the run (name, value, unit,
    /// description) as JSON or CSV, by FILE's extension; `hvia stats --list` lists them.
    #[arg(long, value_name = "FILE.json|.csv")]
    pub stats: Option<PathBuf>,
}

impl TrafficArgs {
    /// Messages per pair: `--messages`, or the pattern's default.
    #[must_use]
    pub fn messages(&self) -> u32 {
        self.messages.unwrap_or(match self.pattern {
            Pattern::Stream | Pattern::Bidirectional => 100,
            Pattern::Incast => 20,
            Pattern::AllToAll => 4,
        })
    }
}

/// Bad input to `hvia traffic` (exit 2).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum TrafficError {
    /// An option value that does not fit.
    #[error("{option}: {message}")]
    #[diagnostic(code(hvia::traffic::input))]
    Input {
        /// The option.
        option: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

#[derive(Clone, Serialize)]
struct PerNode {
    node: usize,
    sent_messages: usize,
    sent_bytes: u64,
    received_messages: usize,
    received_bytes: u64,
    bandwidth_mb_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    send_bandwidth_mb_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost_messages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pause_frames: Option<u64>,
}

#[derive(Serialize)]
struct Latency {
    p50: f64,
    p99: f64,
    max: f64,
}

#[derive(Serialize)]
struct Simulation {
    simulated_ps: u64,
    wall_seconds: f64,
    events: u64,
}

#[derive(Serialize)]
struct Json<'a> {
    pattern: &'static str,
    nodes: u32,
    size_bytes: u32,
    messages: u32,
    window: u32,
    aggregate_bandwidth_mb_s: f64,
    per_node: Vec<PerNode>,
    latency_ns: Latency,
    pause_frames: u64,
    drops: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_messages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    received_messages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost_messages: Option<u64>,
    delivery: &'a Delivery,
    simulation: Simulation,
}

/// Runs `hvia traffic`.
///
/// # Errors
/// Options that do not fit the configuration.
pub fn run(
    args: &TrafficArgs,
    format: Format,
    cfg: &SystemConfig,
) -> Result<Outcome, TrafficError> {
    if let Some(p) = &args.plot {
        crate::traffic_plot::kind_of(p).map_err(|message| TrafficError::Input {
            option: "--plot",
            message,
        })?;
    }
    if let Some(p) = &args.stats {
        crate::stats::check_path(p).map_err(|message| TrafficError::Input {
            option: "--stats",
            message,
        })?;
    }
    let mut cfg = cfg.clone();
    cfg.apply_set(&format!("topology.nodes={}", args.nodes))
        .map_err(|e| TrafficError::Input {
            option: "--nodes",
            message: e.to_string(),
        })?;
    let mut note = String::new();
    if args.nodes > 2 && cfg.topology.switch == crate::config::SwitchKind::None {
        cfg.topology.switch = crate::config::SwitchKind::StoreAndForward;
        note = format!(
            "hvia traffic: {} nodes need a switch: using topology.switch=store-and-forward\n",
            args.nodes
        );
    }
    cfg.validate().map_err(|e| TrafficError::Input {
        option: "--nodes",
        message: e.to_string(),
    })?;
    let s = StreamParams {
        size: args.size,
        messages: args.messages(),
        window: args.window,
    };
    let start = Instant::now();
    let result = match args.pattern {
        Pattern::Bidirectional => run_bidirectional(&cfg, s).map(|(a, b)| Figures::both(&a, &b)),
        Pattern::Stream => run_stream(&cfg, s).map(|r| Figures::one(&r)),
        Pattern::Incast | Pattern::AllToAll => {
            let m = if args.pattern == Pattern::Incast {
                MeshPattern::Incast
            } else {
                MeshPattern::AllToAll
            };
            let quiet = quiet_time(args.nodes, s);
            run_mesh(&cfg, m, s, quiet).map(|r| Figures::mesh(&r))
        }
    };
    let figures = match result {
        Ok(f) => f,
        Err(e) => {
            return Ok(Outcome {
                stdout: String::new(),
                stderr: format!("{note}hvia traffic: the simulation failed: {e}\n"),
                status: 1,
            })
        }
    };
    let wall = start.elapsed().as_secs_f64();
    if let Some(path) = &args.plot {
        let plot = crate::traffic_plot::TrafficPlot {
            title: format!(
                "hvia traffic {}: {} nodes, {} messages of {} bytes, window {}{}",
                pattern_name(args.pattern),
                args.nodes,
                args.messages(),
                args.size,
                args.window,
                figures
                    .accounting
                    .map_or(String::new(), |(sent, _, lost)| format!(
                        "; {lost} of {sent} lost"
                    ))
            ),
            nodes: figures
                .per_node
                .iter()
                .map(|n| {
                    (
                        n.node,
                        n.bandwidth_mb_s,
                        n.send_bandwidth_mb_s.unwrap_or(0.0),
                    )
                })
                .collect(),
            latencies_ps: &figures.latencies_ps,
        };
        if let Err(e) = crate::traffic_plot::draw(path, &plot) {
            return Ok(Outcome {
                stdout: String::new(),
                stderr: format!(
                    "{note}hvia traffic: --plot: {}: cannot be written: {e}\n",
                    path.display()
                ),
                status: 2,
            });
        }
    }
    if let Some(path) = &args.stats {
        if let Err(e) = crate::stats::write_file(path, &figures.counters, None) {
            return Ok(Outcome {
                stdout: String::new(),
                stderr: format!("{note}hvia traffic: --stats: {e}\n"),
                status: 2,
            });
        }
    }
    let stdout = match format {
        Format::Json => json(args, &figures, wall),
        Format::Csv => csv_doc(&figures),
        Format::Table => table(args, &figures, wall),
    };
    Ok(Outcome {
        stdout,
        stderr: note,
        status: 0,
    })
}

/// What a pattern's run gives: per node, in all, and the run's own figures.
struct Figures {
    per_node: Vec<PerNode>,
    aggregate_mb_s: f64,
    /// Every message's latency under load, sorted \[ps\].
    latencies_ps: Vec<u64>,
    pause_frames: u64,
    delivery: Delivery,
    stats: sim_kernel::RunStats,
    /// Incast and all-to-all: messages sent, seen, and counted lost.
    accounting: Option<(u64, u64, u64)>,
    /// Every component's counters at the end.
    counters: Vec<crate::stats::Counter>,
}

impl Figures {
    fn mesh(r: &MeshRun) -> Self {
        Self {
            per_node: r
                .per_node
                .iter()
                .map(|n| PerNode {
                    node: n.node,
                    sent_messages: usize::try_from(n.sent_messages).unwrap_or(usize::MAX),
                    sent_bytes: n.sent_bytes,
                    received_messages: usize::try_from(n.received_messages).unwrap_or(usize::MAX),
                    received_bytes: n.received_bytes,
                    bandwidth_mb_s: n.receive_mb_s,
                    send_bandwidth_mb_s: Some(n.send_mb_s),
                    lost_messages: Some(n.lost_messages),
                    pause_frames: Some(n.pause_frames),
                })
                .collect(),
            aggregate_mb_s: r.aggregate_mb_s,
            latencies_ps: r.latencies_ps.clone(),
            pause_frames: r.pause_frames,
            delivery: r.delivery.clone(),
            stats: r.stats,
            counters: r.counters.clone(),
            accounting: Some((
                r.expected_messages,
                r.received_messages(),
                r.lost_messages(),
            )),
        }
    }

    fn one(r: &StreamRun) -> Self {
        Self {
            per_node: per_node(r),
            aggregate_mb_s: r.aggregate_mb_s,
            latencies_ps: r.latencies_ps.clone(),
            pause_frames: r.pause_frames,
            delivery: r.delivery.clone(),
            stats: r.stats,
            counters: r.counters.clone(),
            accounting: None,
        }
    }

    /// Both directions (`a`: 0 to 1, `b`: 1 to 0).
    fn both(a: &StreamRun, b: &StreamRun) -> Self {
        let bytes = |r: &host_driver::ProgramReport| -> u64 {
            r.iterations.iter().map(|i| u64::from(i.bytes)).sum()
        };
        let node = |n: usize, out: &StreamRun, inc: &StreamRun| PerNode {
            node: n,
            sent_messages: out.sender.iterations.len(),
            sent_bytes: bytes(&out.sender),
            received_messages: inc.receiver.iterations.len(),
            received_bytes: bytes(&inc.receiver),
            bandwidth_mb_s: inc.aggregate_mb_s,
            send_bandwidth_mb_s: None,
            lost_messages: None,
            pause_frames: None,
        };
        let mut latencies_ps: Vec<u64> = a
            .latencies_ps
            .iter()
            .chain(&b.latencies_ps)
            .copied()
            .collect();
        latencies_ps.sort_unstable();
        Self {
            per_node: vec![node(0, a, b), node(1, b, a)],
            aggregate_mb_s: a.aggregate_mb_s + b.aggregate_mb_s,
            latencies_ps,
            pause_frames: a.pause_frames,
            delivery: a.delivery.clone(),
            stats: a.stats,
            counters: a.counters.clone(),
            accounting: None,
        }
    }

    fn percentile(&self, q: f64) -> u64 {
        crate::system::traffic::percentile(&self.latencies_ps, q)
    }
}

fn per_node(run: &StreamRun) -> Vec<PerNode> {
    let sent: u64 = run
        .sender
        .iterations
        .iter()
        .map(|r| u64::from(r.bytes))
        .sum();
    let received: u64 = run
        .receiver
        .iterations
        .iter()
        .map(|r| u64::from(r.bytes))
        .sum();
    vec![
        PerNode {
            node: 0,
            sent_messages: run.sender.iterations.len(),
            sent_bytes: sent,
            received_messages: 0,
            received_bytes: 0,
            bandwidth_mb_s: 0.0,
            send_bandwidth_mb_s: None,
            lost_messages: None,
            pause_frames: None,
        },
        PerNode {
            node: 1,
            sent_messages: 0,
            sent_bytes: 0,
            received_messages: run.receiver.iterations.len(),
            received_bytes: received,
            bandwidth_mb_s: run.aggregate_mb_s,
            send_bandwidth_mb_s: None,
            lost_messages: None,
            pause_frames: None,
        },
    ]
}

fn pattern_name(p: Pattern) -> &'static str {
    match p {
        Pattern::Stream => "stream",
        Pattern::Bidirectional => "bidirectional",
        Pattern::Incast => "incast",
        Pattern::AllToAll => "all-to-all",
    }
}

#[allow(clippy::cast_precision_loss)]
fn ns(ps: u64) -> f64 {
    ps as f64 / 1e3
}

fn json(args: &TrafficArgs, run: &Figures, wall: f64) -> String {
    let j = Json {
        pattern: pattern_name(args.pattern),
        nodes: args.nodes,
        size_bytes: args.size,
        messages: args.messages(),
        window: args.window,
        aggregate_bandwidth_mb_s: run.aggregate_mb_s,
        per_node: run.per_node.clone(),
        latency_ns: Latency {
            p50: ns(run.percentile(0.5)),
            p99: ns(run.percentile(0.99)),
            max: ns(run.percentile(1.0)),
        },
        pause_frames: run.pause_frames,
        drops: run.delivery.frames_dropped.values().sum(),
        expected_messages: run.accounting.map(|a| a.0),
        received_messages: run.accounting.map(|a| a.1),
        lost_messages: run.accounting.map(|a| a.2),
        delivery: &run.delivery,
        simulation: Simulation {
            simulated_ps: run.stats.simulated.as_ps(),
            wall_seconds: wall,
            events: run.stats.events,
        },
    };
    serde_json::to_string_pretty(&j)
        .map_or_else(|e| format!("{{\"error\":\"{e}\"}}\n"), |s| s + "\n")
}

/// CSV columns, one row per node.
pub const CSV_HEADER: [&str; 6] = [
    "node",
    "sent_messages",
    "sent_bytes",
    "received_messages",
    "received_bytes",
    "bandwidth_mb_s",
];

fn csv_doc(run: &Figures) -> String {
    let rows: Vec<Vec<String>> = run
        .per_node
        .iter()
        .map(|n| {
            vec![
                n.node.to_string(),
                n.sent_messages.to_string(),
                n.sent_bytes.to_string(),
                n.received_messages.to_string(),
                n.received_bytes.to_string(),
                format!("{:.6}", n.bandwidth_mb_s),
            ]
        })
        .collect();
    csv(&CSV_HEADER, &rows)
}

fn table(args: &TrafficArgs, run: &Figures, wall: f64) -> String {
    let what = match args.pattern {
        Pattern::Bidirectional => "Streams both ways between nodes 0 and 1",
        Pattern::Stream => "Stream from node 0 to node 1",
        Pattern::Incast => "Incast, nodes 1 .. N-1 each to node 0,",
        Pattern::AllToAll => "All-to-all, every node to every other,",
    };
    let each = match args.pattern {
        Pattern::Stream | Pattern::Bidirectional => "each way",
        Pattern::Incast | Pattern::AllToAll => "per pair",
    };
    let mut out = format!(
        "{what} over RDMA write: {} messages of {} bytes {each}, {} descriptors outstanding ({} nodes)\n\n",
        args.messages(), args.size, args.window, args.nodes
    );
    let mesh = run.accounting.is_some();
    let rows: Vec<Vec<String>> = run
        .per_node
        .iter()
        .map(|n| {
            let mut row = vec![
                n.node.to_string(),
                n.sent_messages.to_string(),
                n.received_messages.to_string(),
            ];
            if mesh {
                row.push(n.lost_messages.unwrap_or(0).to_string());
            }
            row.push(format!("{:.2}", n.bandwidth_mb_s));
            if mesh {
                row.push(format!("{:.2}", n.send_bandwidth_mb_s.unwrap_or(0.0)));
                row.push(n.pause_frames.unwrap_or(0).to_string());
            }
            row
        })
        .collect();
    if mesh {
        out.push_str(&columns(
            &[
                "NODE",
                "SENT",
                "RECEIVED",
                "LOST",
                "RECEIVED (MB/s)",
                "SENT (MB/s)",
                "PAUSE",
            ],
            &rows,
            &[true; 7],
        ));
    } else {
        out.push_str(&columns(
            &["NODE", "SENT", "RECEIVED", "BANDWIDTH (MB/s)"],
            &rows,
            &[true, true, true, true],
        ));
    }
    out.push_str(&format!(
        "\nAggregate {:.2} MB/s; latency per message p50 {:.3} us, p99 {:.3} us, max {:.3} us; {} PAUSE frames; {} frames dropped\n",
        run.aggregate_mb_s,
        ns(run.percentile(0.5)) / 1e3,
        ns(run.percentile(0.99)) / 1e3,
        ns(run.percentile(1.0)) / 1e3,
        run.pause_frames,
        run.delivery.frames_dropped.values().sum::<u64>()
    ));
    if let Some((expected, received, lost)) = run.accounting {
        out.push_str(&format!(
            "Messages: {expected} sent, {received} received with every byte checked, {lost} lost\n"
        ));
    }
    if run.delivery.eventful() {
        out.push_str(&format!("Delivery: {}\n", run.delivery.summary()));
    }
    #[allow(clippy::cast_precision_loss)]
    let ms = run.stats.simulated.as_ps() as f64 / 1e9;
    out.push_str(&format!(
        "Simulated {ms:.3} ms ({} events) in {wall:.2} s of host time.\n",
        run.stats.events
    ));
    out
}
