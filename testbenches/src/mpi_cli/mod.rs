//! `hvia mpi` and `hvia bsp`: the message-passing libraries (`vmpi`, `vbsp`) measured
//! on the simulated cluster, each program running as host code on every node.
//!
//! - `hvia mpi pingpong`: `MPI_Send` / `MPI_Recv` round trips per size between ranks 0
//!   and 1: one-way latency (half a round trip), bandwidth, the protocol of each size
//!   (`eager` up to `mpi.eager_limit_bytes`, else `synchronous`), and the raw VIPL
//!   ping-pongs (send/recv and RDMA write) at the smallest size, on VIs of the
//!   reliability MPI uses (reliable delivery), with MPI's overhead over each;
//! - `hvia mpi bcast --nodes N`: `MPI_Bcast` from rank 0 per size: from the moment all
//!   ranks left the barrier before it to the moment the last rank has the data;
//! - `hvia bsp probe --nodes 2,4,...`: the BSP cost parameters `g` and `L` per process
//!   count (`vbsp::programs::probe`);
//! - `hvia bsp lu --n 64,128,256`: LU decomposition on a 2 x 2 grid, checked against the
//!   host's, with its simulated time.
//!
//! Sizes, process counts and matrix orders run in parallel (rayon), each its own
//! deterministic simulation. More than 2 nodes with no switch configured get the
//! store-and-forward switch (a note on stderr says so).

mod out;

use clap::{Args, Subcommand};
use rayon::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use crate::cli::Outcome;
use crate::config::{SwitchKind, SystemConfig, ViaReliability};
use crate::pingpong_cli::{parse_iters, parse_sizes, parse_warmup, SizeList};
use crate::report::Format;
use crate::system::{run_pingpong, run_spmd, Op, PingPongSpec, RecvPost, RunError};
use host_driver::ProgramReport;
use sim_kernel::RunStats;
use vbsp::programs::{bsp_lu, bsp_probe, fit, lu_reference, BspCost, LuParams, ProbeParams};
use vmpi::programs::{mpi_bcast, mpi_pingpong, Bench};
use vmpi::MpiStats;

/// `hvia mpi` subcommands.
#[derive(Debug, Subcommand)]
pub enum MpiCommand {
    /// MPI ping-pong between ranks 0 and 1 per size: one-way latency, bandwidth, the
    /// protocol, and the overhead over the raw VIPL ping-pong.
    Pingpong(MpiPingPongArgs),
    /// MPI_Bcast from rank 0 to every rank per size.
    Bcast(MpiBcastArgs),
}

/// `hvia bsp` subcommands.
#[derive(Debug, Subcommand)]
pub enum BspCommand {
    /// The BSP cost parameters g and L per process count, measured as bspprobe does.
    Probe(BspProbeArgs),
    /// LU decomposition on a 2 x 2 grid of processes, checked against the host.
    Lu(BspLuArgs),
}

/// Options of `hvia mpi pingpong`.
#[derive(Debug, Args)]
pub struct MpiPingPongArgs {
    /// Message sizes in bytes (`4,64,1024`, `4..1048576`, or both).
    #[arg(long, value_name = "SIZES", default_value = "4..1048576", value_parser = parse_sizes)]
    pub sizes: SizeList,
    /// Measured round trips per size.
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_iters)]
    pub iters: u32,
    /// Warm-up round trips per size.
    #[arg(long, value_name = "N", default_value = "2", value_parser = parse_warmup)]
    pub warmup: u32,
}

/// Options of `hvia mpi bcast`.
#[derive(Debug, Args)]
pub struct MpiBcastArgs {
    /// Processes (2 .. 64), one per node: sets `topology.nodes`.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub nodes: u32,
    /// Message sizes in bytes.
    #[arg(long, value_name = "SIZES", default_value = "4..65536", value_parser = parse_sizes)]
    pub sizes: SizeList,
    /// Measured broadcasts per size.
    #[arg(long, value_name = "N", default_value = "4", value_parser = parse_iters)]
    pub iters: u32,
    /// Warm-up broadcasts per size.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_warmup)]
    pub warmup: u32,
}

/// Options of `hvia bsp probe`.
#[derive(Debug, Args)]
pub struct BspProbeArgs {
    /// Process counts, one run each (2 .. 64).
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16", value_parser = clap::value_parser!(u32).range(2..=64))]
    pub nodes: Vec<u32>,
    /// h-relations timed, bytes each process sends and receives per superstep.
    #[arg(long = "h", value_delimiter = ',', default_value = "4096,16384,65536", value_parser = clap::value_parser!(u32).range(8..=16_777_216))]
    pub hs: Vec<u32>,
    /// Supersteps timed per h.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: u32,
    /// Empty supersteps timed for L.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub empty: u32,
}

/// Options of `hvia bsp lu`.
#[derive(Debug, Args)]
pub struct BspLuArgs {
    /// Matrix orders, one run each (1 .. 1024).
    #[arg(long = "n", value_delimiter = ',', default_value = "64,128,256", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub orders: Vec<u32>,
}

/// The simulations' totals.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Totals {
    pub simulated_ps: u64,
    pub events: u64,
}

impl Totals {
    fn add(&mut self, s: &RunStats) {
        self.simulated_ps += s.simulated.as_ps();
        self.events += s.events;
    }
}

/// The results of parallel runs in order, their totals added; or the first failure as
/// the command's outcome (exit 1).
fn gather<T>(
    cmd: &str,
    runs: Vec<Result<(T, RunStats), RunError>>,
    totals: &mut Totals,
) -> Result<Vec<T>, Outcome> {
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        match r {
            Ok((v, st)) => {
                totals.add(&st);
                out.push(v);
            }
            Err(e) => return Err(failed(cmd, &e)),
        }
    }
    Ok(out)
}

fn failed(cmd: &str, e: &RunError) -> Outcome {
    Outcome {
        stdout: String::new(),
        stderr: format!("hvia {cmd}: the simulation failed: {e}\n"),
        status: 1,
    }
}

/// `cfg` with `nodes` nodes; a note when a switch had to be chosen.
fn with_nodes(cfg: &SystemConfig, nodes: u32) -> Result<(SystemConfig, String), String> {
    let mut c = cfg.clone();
    let mut note = String::new();
    c.topology.nodes = nodes;
    if nodes > 2 && c.topology.switch == SwitchKind::None {
        c.topology.switch = SwitchKind::StoreAndForward;
        note = format!("{nodes} nodes need a switch: using topology.switch=store-and-forward\n");
    }
    c.validate().map_err(|e| e.to_string())?;
    Ok((c, note))
}

/// One size of the MPI ping-pong.
pub(crate) struct MpiRow {
    pub size: u32,
    pub iterations: u32,
    pub one_way_ns: f64,
    pub bandwidth_mb_s: f64,
    pub protocol: &'static str,
    pub verified_bytes: u64,
    pub stats: MpiStats,
}

#[allow(clippy::cast_precision_loss)]
fn ns(ps: u64) -> f64 {
    ps as f64 / 1e3
}

fn one_size(
    cfg: &SystemConfig,
    size: u32,
    iters: u32,
    warmup: u32,
) -> Result<(MpiRow, RunStats), RunError> {
    let mpi = cfg.mpi_config();
    let bench = Bench {
        sizes: vec![size],
        iterations: iters,
        warmup,
    };
    let sink: Rc<RefCell<MpiStats>> = Rc::default();
    let s = sink.clone();
    let (reports, sys) = run_spmd(cfg, move |v, rank, macs| {
        let sk = if rank.0 == 0 {
            s.clone()
        } else {
            Rc::default()
        };
        mpi_pingpong(v, rank, macs, mpi, bench.clone(), sk)
    })?;
    let r0: &ProgramReport = &reports[0];
    let one_way = r0.mean_elapsed().0 / 2;
    let verified = r0.iterations.iter().map(|r| r.verified_bytes).sum();
    let one_way_ns = ns(one_way);
    let row = MpiRow {
        size,
        iterations: iters,
        one_way_ns,
        bandwidth_mb_s: if one_way_ns > 0.0 {
            f64::from(size) * 1e3 / one_way_ns
        } else {
            0.0
        },
        protocol: if size <= mpi.eager_limit {
            "eager"
        } else {
            "synchronous"
        },
        verified_bytes: verified,
        stats: *sink.borrow(),
    };
    Ok((row, sys.kernel.stats()))
}

/// Runs `hvia mpi ...`.
#[must_use]
pub fn run_mpi(cmd: &MpiCommand, format: Format, cfg: &SystemConfig) -> Outcome {
    let start = Instant::now();
    match cmd {
        MpiCommand::Pingpong(a) => {
            let (cfg, _) = match with_nodes(cfg, 2) {
                Ok(c) => c,
                Err(e) => return input_error("mpi pingpong", &e),
            };
            let rows: Vec<Result<(MpiRow, RunStats), RunError>> = a
                .sizes
                .0
                .par_iter()
                .with_max_len(1)
                .map(|&s| one_size(&cfg, s, a.iters, a.warmup))
                .collect();
            let smallest = a.sizes.0.first().copied().unwrap_or(4);
            // The raw ping-pongs on VIs of the reliability MPI runs on.
            let mut raw_cfg = cfg.clone();
            if raw_cfg.via.reliability == ViaReliability::Unreliable {
                raw_cfg.via.reliability = ViaReliability::ReliableDelivery;
            }
            let raw: Vec<Result<(f64, RunStats), RunError>> = [Op::SendRecv, Op::RdmaWrite]
                .par_iter()
                .map(|&op| {
                    let spec = PingPongSpec {
                        op,
                        size: smallest,
                        iterations: a.iters,
                        warmup: a.warmup,
                        trace: false,
                        recv_post: RecvPost::Timed,
                    };
                    run_pingpong(&raw_cfg, spec).map(|r| (ns(r.one_way.0), r.stats))
                })
                .collect();
            let mut totals = Totals::default();
            let ok_rows = match gather("mpi pingpong", rows, &mut totals) {
                Ok(v) => v,
                Err(o) => return o,
            };
            let raw_ns = match gather("mpi pingpong", raw, &mut totals) {
                Ok(v) => v,
                Err(o) => return o,
            };
            let wall = start.elapsed().as_secs_f64();
            Outcome::ok(out::mpi_pingpong(
                format,
                &cfg,
                &ok_rows,
                smallest,
                (raw_ns[0], raw_ns[1]),
                totals,
                wall,
            ))
        }
        MpiCommand::Bcast(a) => {
            let (cfg, note) = match with_nodes(cfg, a.nodes) {
                Ok(c) => c,
                Err(e) => return input_error("mpi bcast", &e),
            };
            let mpi = cfg.mpi_config();
            let bench = Bench {
                sizes: a.sizes.0.clone(),
                iterations: a.iters,
                warmup: a.warmup,
            };
            let run = run_spmd(&cfg, move |v, rank, macs| {
                mpi_bcast(v, rank, macs, mpi, bench.clone(), Rc::default())
            });
            let (reports, sys) = match run {
                Ok(r) => r,
                Err(e) => return failed("mpi bcast", &e),
            };
            let mut totals = Totals::default();
            totals.add(&sys.kernel.stats());
            let rows = out::bcast_rows(&reports, &a.sizes.0, mpi.eager_limit);
            let wall = start.elapsed().as_secs_f64();
            let mut o = Outcome::ok(out::mpi_bcast(format, a.nodes, &rows, totals, wall));
            o.stderr = note;
            o
        }
    }
}

fn input_error(cmd: &str, e: &str) -> Outcome {
    Outcome {
        stdout: String::new(),
        stderr: format!("hvia {cmd}: {e}\n"),
        status: 2,
    }
}

/// One process count of the probe.
pub(crate) struct ProbeRow {
    pub nodes: u32,
    pub cost: BspCost,
}

/// One matrix order of LU.
pub(crate) struct LuRow {
    pub n: u32,
    pub simulated_ns: f64,
    pub max_abs_error: f64,
}

/// Runs `hvia bsp ...`.
#[must_use]
pub fn run_bsp(cmd: &BspCommand, format: Format, cfg: &SystemConfig) -> Outcome {
    let start = Instant::now();
    match cmd {
        BspCommand::Probe(a) => {
            let p = ProbeParams {
                empty: a.empty,
                hs: a.hs.clone(),
                reps: a.reps,
            };
            let mut notes = String::new();
            let mut cfgs = Vec::new();
            for &n in &a.nodes {
                match with_nodes(cfg, n) {
                    Ok((c, note)) => {
                        if notes.is_empty() {
                            notes = note;
                        }
                        cfgs.push((n, c));
                    }
                    Err(e) => return input_error("bsp probe", &e),
                }
            }
            let runs: Vec<Result<(ProbeRow, RunStats), RunError>> = cfgs
                .par_iter()
                .with_max_len(1)
                .map(|(n, c)| {
                    let bsp = c.bsp_config();
                    let pp = p.clone();
                    let (reports, sys) = run_spmd(c, move |v, rank, macs| {
                        bsp_probe(v, rank, macs, bsp, pp.clone())
                    })?;
                    let cost = fit(&reports[0].iterations);
                    Ok((ProbeRow { nodes: *n, cost }, sys.kernel.stats()))
                })
                .collect();
            let mut totals = Totals::default();
            let rows = match gather("bsp probe", runs, &mut totals) {
                Ok(v) => v,
                Err(o) => return o,
            };
            let wall = start.elapsed().as_secs_f64();
            let mut o = Outcome::ok(out::bsp_probe(format, &rows, totals, wall));
            o.stderr = notes;
            o
        }
        BspCommand::Lu(a) => {
            let (c, note) = match with_nodes(cfg, 4) {
                Ok(c) => c,
                Err(e) => return input_error("bsp lu", &e),
            };
            let runs: Vec<Result<(LuRow, RunStats), RunError>> = a
                .orders
                .par_iter()
                .with_max_len(1)
                .map(|&n| {
                    let bsp = c.bsp_config();
                    let sink: Rc<RefCell<Vec<f64>>> = Rc::default();
                    let sk = sink.clone();
                    let (reports, sys) = run_spmd(&c, move |v, rank, macs| {
                        bsp_lu(v, rank, macs, bsp, LuParams { n, s: 2, t: 2 }, sk.clone())
                    })?;
                    let want = lu_reference(n);
                    let worst = sink
                        .borrow()
                        .iter()
                        .zip(&want)
                        .map(|(x, y)| (x - y).abs())
                        .fold(0.0f64, f64::max);
                    let span = reports
                        .iter()
                        .flat_map(|r| r.iterations.first())
                        .map(|r| r.end.as_ps())
                        .max()
                        .unwrap_or(0)
                        .saturating_sub(
                            reports
                                .iter()
                                .flat_map(|r| r.iterations.first())
                                .map(|r| r.start.as_ps())
                                .min()
                                .unwrap_or(0),
                        );
                    Ok((
                        LuRow {
                            n,
                            simulated_ns: ns(span),
                            max_abs_error: worst,
                        },
                        sys.kernel.stats(),
                    ))
                })
                .collect();
            let mut totals = Totals::default();
            let rows = match gather("bsp lu", runs, &mut totals) {
                Ok(v) => v,
                Err(o) => return o,
            };
            let wall = start.elapsed().as_secs_f64();
            let mut o = Outcome::ok(out::bsp_lu(format, &rows, totals, wall));
            o.stderr = note;
            o
        }
    }
}
