//! `hvia pingpong` and `hvia breakdown`: the ping-pong between two nodes, swept over
//! message sizes, and the per-clock breakdown of one one-way message.
//!
//! Both run the whole-system testbench of [`crate::system`]. A sweep runs its sizes in
//! parallel (rayon): each size is an independent, deterministic simulation, so the result
//! is the same as a serial run, and it is printed in size order. The trace options write
//! files from one traced run (the first size of a sweep, or the broken-down message's
//! run): `--perfetto` (Chrome trace-event JSON), `--vcd` (state machines and PCI / GMII
//! signals, `vcd_signals`), `--pcap` (the
//! frames on the wire); `--plot` draws the sweep (or the breakdown) as SVG or PNG.
//!
//! Files: this one (options, the two commands), `parse` (option values), `sweep` (the
//! parallel sweep), `out` and `bd_out` (table, JSON, CSV), `files` (output paths),
//! `plot`, `perfetto`, `vcd_out`, `pcap_out` (the files).

mod bd_out;
mod files;
mod out;
mod parse;
mod pcap_out;
mod perfetto;
mod perfetto_flow;
mod plot;
pub(crate) use plot::fonts;
pub mod shard;
mod sweep;
mod vcd_out;
mod vcd_signals;

use clap::{Args, ValueEnum};
use std::path::PathBuf;

use crate::cli::{GlobalArgs, Outcome};
use crate::config::{ConfigSource, SystemConfig};
use crate::report::Format;
use crate::system::{self, breakdown, Op, PingPongSpec, RunError};

pub use parse::{
    parse_iters, parse_size, parse_sizes, parse_warmup, SizeList, DEFAULT_SIZES, MAX_ITERS,
    MAX_SIZE,
};
pub use sweep::{run as sweep_run, SizeResult, Sweep};

/// The VIA operation that carries the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OpArg {
    /// RDMA write; the receiver polls the last byte of its buffer.
    RdmaWrite,
    /// Send / receive; the receiver waits on its receive descriptor.
    SendRecv,
    /// RDMA read: the initiator reads the responder's buffer; needs the card's RDMA
    /// read (`card.engine.rdma_read`, the `rdma-read` preset) and reliable VIs.
    RdmaRead,
}

impl From<OpArg> for Op {
    fn from(op: OpArg) -> Self {
        match op {
            OpArg::RdmaWrite => Op::RdmaWrite,
            OpArg::SendRecv => Op::SendRecv,
            OpArg::RdmaRead => Op::RdmaRead,
        }
    }
}

/// Checks that the configured system can run `op` (bad input naming `--op` if not): an
/// RDMA read needs a card that implements it and reliable VIs (VIA 1.0).
///
/// # Errors
/// `--op rdma-read` on a card without RDMA read or with unreliable VIs.
pub fn check_op(cfg: &SystemConfig, op: Op) -> Result<(), PingPongError> {
    if op != Op::RdmaRead {
        return Ok(());
    }
    let message = if !cfg.card.engine.rdma_read {
        "rdma-read needs a card with RDMA read, which the published HVIA-GE does not \
         implement: use --preset rdma-read (or --set card.engine.rdma_read=true with \
         --set via.reliability=reliable-delivery)"
    } else if cfg.via.reliability == crate::config::ViaReliability::Unreliable {
        "rdma-read needs reliable VIs (VIA 1.0 allows RDMA read on reliable delivery and \
         reliable reception only): --set via.reliability=reliable-delivery"
    } else {
        return Ok(());
    };
    Err(PingPongError::Input {
        option: "--op",
        message: message.to_owned(),
    })
}

/// The trace and plot files of `pingpong` and `breakdown`.
#[derive(Clone, Debug, Default, Args)]
pub struct TraceArgs {
    /// Write a traced run as a VCD waveform, times in ps: each component state machine
    /// (a string wire) and the signals of both PCI buses of each node (CLK, FRAME#,
    /// IRDY#, TRDY#, DEVSEL#, STOP#, AD, C/BE#, PAR, REQ#/GNT# per master) and of each
    /// GMII (TX_EN, TXD, RX_DV, RXD).
    #[arg(long, value_name = "FILE")]
    pub vcd: Option<PathBuf>,
    /// Keep only these scopes in the --vcd file, a comma-separated list of dotted
    /// prefixes (e.g. `n0.pci.system,n1.gmii`, `n1.card`).
    #[arg(long, value_name = "SCOPES", requires = "vcd", value_delimiter = ',')]
    pub vcd_scope: Vec<String>,
    /// Write the Ethernet frames of a traced run as they left each DP83820 (pcap,
    /// nanosecond timestamps).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Keep each frame's 4-byte FCS in the --pcap file (its link type says so, and
    /// Wireshark shows the FCS as `eth.fcs`); without it the FCS is stripped.
    #[arg(long, requires = "pcap")]
    pub pcap_fcs: bool,
    /// Write every trace span of a traced run as Chrome trace-event JSON (open it in
    /// ui.perfetto.dev or chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Draw the results: latency and bandwidth against size (pingpong), or the stages
    /// on a time line (breakdown); FILE ends in .svg or .png.
    #[arg(long, value_name = "FILE.svg|.png")]
    pub plot: Option<PathBuf>,
    /// Write every component's counters (name, value, unit, description) as JSON or
    /// CSV, by FILE's extension; `hvia stats --list` lists them.
    #[arg(long, value_name = "FILE.json|.csv")]
    pub stats: Option<PathBuf>,
}

impl TraceArgs {
    /// Whether a traced run is needed (any of `--vcd`, `--pcap`, `--perfetto`).
    #[must_use]
    pub fn wants_trace(&self) -> bool {
        self.vcd.is_some() || self.pcap.is_some() || self.perfetto.is_some()
    }
}

/// Options of `hvia pingpong`.
#[derive(Clone, Debug, Args)]
pub struct PingPongArgs {
    /// The operation: `rdma-write`, `send-recv` or `rdma-read` (the latter needs the
    /// `rdma-read` preset: a card with RDMA read, reliable VIs).
    #[arg(long, value_enum, default_value_t = OpArg::RdmaWrite)]
    pub op: OpArg,
    /// Message sizes in bytes: a list (`4,64,1024`), a range of powers of two
    /// (`4..1048576`), or both (`4..64,1500`).
    #[arg(long, value_name = "SIZES", default_value = DEFAULT_SIZES, value_parser = parse_sizes)]
    pub sizes: SizeList,
    /// Measured round trips per size.
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_iters)]
    pub iters: u32,
    /// Warm-up round trips per size, before the measured ones.
    #[arg(long, value_name = "N", default_value = "2", value_parser = parse_warmup)]
    pub warmup: u32,
    /// Send/recv: where the initiator posts the receive for each pong: `timed` (inside
    /// the round trip, right before the ping, as a loop timed as a whole does; half a
    /// VipPostRecv is in each one-way figure) or `ahead` (before the clock starts).
    #[arg(long, value_enum, default_value_t = RecvPostArg::Timed)]
    pub recv_post: RecvPostArg,
    /// Run only shard K of N of the size sweep (every N-th size from the K-th; for
    /// batch schedulers); `hvia merge` joins the shards' JSON.
    #[arg(long, value_name = "K/N", value_parser = shard::parse_shard)]
    pub shard: Option<shard::Shard>,
    /// Trace and plot files.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Where a send/recv initiator posts the receive for each pong (`--recv-post`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RecvPostArg {
    /// Inside the timed round trip, right before the ping.
    Timed,
    /// Before the round trip's clock starts.
    Ahead,
}

impl From<RecvPostArg> for crate::system::RecvPost {
    fn from(r: RecvPostArg) -> Self {
        match r {
            RecvPostArg::Timed => crate::system::RecvPost::Timed,
            RecvPostArg::Ahead => crate::system::RecvPost::Ahead,
        }
    }
}

impl Default for PingPongArgs {
    /// What `hvia pingpong` without options runs (and `hvia` alone).
    fn default() -> Self {
        Self {
            op: OpArg::RdmaWrite,
            sizes: parse_sizes(DEFAULT_SIZES).unwrap_or_else(|_| SizeList(vec![4])),
            iters: 10,
            warmup: 2,
            recv_post: RecvPostArg::Timed,
            shard: None,
            trace: TraceArgs::default(),
        }
    }
}

/// Options of `hvia breakdown`.
#[derive(Clone, Debug, Args)]
pub struct BreakdownArgs {
    /// The operation: `rdma-write`, `send-recv` or `rdma-read` (the latter needs the
    /// `rdma-read` preset: a card with RDMA read, reliable VIs).
    #[arg(long, value_enum, default_value_t = OpArg::RdmaWrite)]
    pub op: OpArg,
    /// Message size in bytes.
    #[arg(long, value_name = "N", default_value = "4", value_parser = parse_size)]
    pub size: u32,
    /// Trace and plot files.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Warm-up round trips before the broken-down message (as [`breakdown::measure`] runs).
pub const BREAKDOWN_WARMUP: u32 = 2;

/// Bad input to `hvia pingpong` or `hvia breakdown` that the option parsers cannot see
/// alone: an output file that cannot be written, a plot that is neither SVG nor PNG.
/// The binary exits with 2.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PingPongError {
    /// An option's value.
    #[error("{option}: {message}")]
    #[diagnostic(code(hvia::pingpong::input))]
    Input {
        /// The option, e.g. `--plot`.
        option: &'static str,
        /// What is wrong with its value.
        message: String,
    },
}

/// Where the configuration came from, for the reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    /// The preset's name (none for `--config FILE`).
    pub preset: Option<String>,
    /// The config file (for `--config FILE`).
    pub config_file: Option<String>,
    /// Every `--set`, in order.
    pub overrides: Vec<String>,
}

impl Provenance {
    /// What `global` says.
    #[must_use]
    pub fn of(global: &GlobalArgs) -> Self {
        let (preset, config_file) = match global.source() {
            ConfigSource::Preset(name) => (Some(name), None),
            ConfigSource::File(path) => (None, Some(path.display().to_string())),
        };
        Self {
            preset,
            config_file,
            overrides: global.sets.clone(),
        }
    }

    /// One phrase for a table's title, e.g. `preset hvia-ge` or `config what-if.toml`.
    #[must_use]
    pub fn label(&self) -> String {
        let base = match (&self.preset, &self.config_file) {
            (Some(p), _) => format!("preset {p}"),
            (None, Some(f)) => format!("config {f}"),
            (None, None) => "config".to_owned(),
        };
        if self.overrides.is_empty() {
            base
        } else {
            format!("{base} with --set {}", self.overrides.join(" --set "))
        }
    }
}

/// Checks each `--vcd-scope` against the scopes the file can have (the components'
/// dotted names, each node's buses and GMII) before anything runs.
fn check_vcd_scopes(cfg: &SystemConfig, trace: &TraceArgs) -> Result<(), PingPongError> {
    if trace.vcd_scope.is_empty() {
        return Ok(());
    }
    let sys = system::System::build(cfg, false).map_err(|e| PingPongError::Input {
        option: "--vcd-scope",
        message: format!("the system cannot be built: {e}"),
    })?;
    let mut known: Vec<String> = sys
        .world
        .iter()
        .map(|(id, _)| sys.kernel.component_name(id).to_owned())
        .collect();
    for n in 0..sys.nodes.len() {
        known.push(format!("n{n}.gmii"));
        known.push(format!("n{n}.card.sdram"));
    }
    for scope in &trace.vcd_scope {
        let scope = scope.trim();
        if scope.is_empty()
            || !known
                .iter()
                .any(|k| vcd_out::in_scopes(k, &[scope.to_owned()]))
        {
            return Err(PingPongError::Input {
                option: "--vcd-scope",
                message: format!(
                    "{scope:?} is not a scope of the waveform (e.g. n0.pci.system, n1.pci.local, n0.gmii, n1.card.engine)"
                ),
            });
        }
    }
    Ok(())
}

/// Checks that a ping-pong of `size` bytes fits the configured system (bad input if not).
fn fits(cfg: &SystemConfig, size: u32, option: &'static str) -> Result<(), PingPongError> {
    crate::config::feasible::ping_pong_fits(cfg, size).map_err(|p| PingPongError::Input {
        option,
        message: format!(
            "{size} bytes does not fit the configured system: {}: {}",
            p.key, p.reason
        ),
    })
}

/// A run that failed: not bad input, so the binary exits with 1.
fn failed(command: &str, what: &str, e: &RunError) -> Outcome {
    tracing::error!(target: "hvia", command, what, error = %e, "simulation failed");
    Outcome {
        stdout: String::new(),
        stderr: format!("hvia {command}: the simulation of {what} failed: {e}\n"),
        status: 1,
    }
}

/// An output file that was checked before the run but could not be written after it
/// (a full disk, a removed directory): not bad input, so the binary exits with 1.
fn write_failed(command: &str, e: &PingPongError) -> Outcome {
    tracing::error!(target: "hvia", command, error = %e, "output not written");
    Outcome {
        stdout: String::new(),
        stderr: format!("hvia {command}: {e}\n"),
        status: 1,
    }
}

/// Writes the trace files `trace` asks for from a traced run of `spec`. Returns the
/// warnings to print, or the outcome of a failed run; an error is a file that could
/// not be written.
fn write_traces(
    cfg: &SystemConfig,
    spec: PingPongSpec,
    trace: &TraceArgs,
    command: &str,
) -> Result<Result<String, Outcome>, PingPongError> {
    if !trace.wants_trace() {
        return Ok(Ok(String::new()));
    }
    let what = format!("the traced run ({} bytes)", spec.size);
    let signals = trace.vcd.is_some();
    let run = system::pingpong::run_pingpong_adjusted(cfg, spec, |sys| {
        if signals {
            vcd_signals::enable(sys);
        }
    });
    let mut run = match run {
        Ok(run) => run,
        Err(e) => return Ok(Err(failed(command, &what, &e))),
    };
    let mut warnings = String::new();
    if let Some(path) = &trace.perfetto {
        let mut w = files::create("--perfetto", path)?;
        let n = perfetto::write(&mut w, &run.system)
            .and_then(|n| w.finish().map(|()| n))
            .map_err(|e| files::write_error("--perfetto", path, &e))?;
        tracing::info!(target: "hvia", path = %path.display(), events = n, "perfetto trace written");
    }
    let frames = pcap_out::captured(&mut run.system);
    if let Some(path) = &trace.vcd {
        let mut w = files::create("--vcd", path)?;
        let sig = vcd_signals::collect(&run.system, &frames);
        let n = vcd_out::write(&mut w, &run.system, &sig, &trace.vcd_scope)
            .and_then(|n| w.finish().map(|()| n))
            .map_err(|e| files::write_error("--vcd", path, &e))?;
        tracing::info!(target: "hvia", path = %path.display(), wires = n, "vcd written");
    }
    if let Some(path) = &trace.pcap {
        let w = files::create("--pcap", path)?;
        let fcs = if trace.pcap_fcs {
            gige_mac::pcap::FcsMode::Keep
        } else {
            gige_mac::pcap::FcsMode::Strip
        };
        let n =
            pcap_out::write(w, &frames, fcs).map_err(|e| files::write_error("--pcap", path, &e))?;
        tracing::info!(target: "hvia", path = %path.display(), frames = n, "pcap written");
        if n == 0 {
            warnings.push_str(pcap_out::NO_FRAMES_WARNING);
        }
    }
    Ok(Ok(warnings))
}

/// Runs `hvia pingpong` (and `hvia` alone) and returns what to print.
///
/// # Errors
/// A [`PingPongError`] for bad input. A run that fails is an [`Outcome`] with status 1.
pub fn run_pingpong(
    args: &PingPongArgs,
    format: Format,
    cfg: &SystemConfig,
    provenance: &Provenance,
) -> Result<Outcome, PingPongError> {
    if let Some(sh) = args.shard {
        let t = &args.trace;
        if t.vcd.is_some()
            || t.pcap.is_some()
            || t.perfetto.is_some()
            || t.plot.is_some()
            || t.stats.is_some()
        {
            return Err(PingPongError::Input {
                option: "--shard",
                message: "a shard runs part of a sweep: trace, plot and stats files belong to an unsharded run".into(),
            });
        }
        let mut part = args.clone();
        part.shard = None;
        part.sizes = SizeList(shard::select(&args.sizes.0, sh));
        let mut out = run_pingpong(&part, format, cfg, provenance)?;
        if format == Format::Json && out.status == 0 {
            out.stdout = shard::annotate(&out.stdout, sh, &args.sizes.0);
        }
        return Ok(out);
    }
    let plot = files::check_outputs(&args.trace)?;
    check_vcd_scopes(cfg, &args.trace)?;
    let op = Op::from(args.op);
    let sizes = &args.sizes.0;
    let recv_post = crate::system::RecvPost::from(args.recv_post);
    let sweep = match compute(args, cfg)? {
        Ok(s) => s,
        Err(outcome) => return Ok(outcome),
    };
    let first = sizes.first().copied().unwrap_or(4);
    let spec = PingPongSpec {
        op,
        size: first,
        iterations: args.iters,
        warmup: args.warmup,
        trace: true,
        recv_post,
    };
    let warnings = match write_traces(cfg, spec, &args.trace, "pingpong") {
        Ok(Ok(w)) => w,
        Ok(Err(outcome)) => return Ok(outcome),
        Err(e) => return Ok(write_failed("pingpong", &e)),
    };
    if let Some(path) = &args.trace.stats {
        let runs: Vec<(u32, Vec<crate::stats::Counter>)> = sweep
            .results
            .iter()
            .map(|r| (r.size, r.counters.clone()))
            .collect();
        let first = runs.first().map(|(_, c)| c.clone()).unwrap_or_default();
        if let Err(e) = files::write_stats(path, &first, Some(&runs)) {
            return Ok(write_failed("pingpong", &e));
        }
    }
    if let (Some(path), Some(kind)) = (&args.trace.plot, plot) {
        if let Err(e) = plot::sweep(path, kind, &sweep, provenance) {
            return Ok(write_failed(
                "pingpong",
                &files::write_error("--plot", path, &e),
            ));
        }
    }
    Ok(Outcome {
        stdout: render(&sweep, format, provenance)?,
        stderr: warnings,
        status: 0,
    })
}

/// The size sweep of `hvia pingpong` on `cfg`, without its files: the sweep, or the
/// outcome of a run that failed (status 1).
///
/// # Errors
/// A size that does not fit the configured system (`--sizes`).
pub fn compute(
    args: &PingPongArgs,
    cfg: &SystemConfig,
) -> Result<Result<Sweep, Outcome>, PingPongError> {
    let sizes = &args.sizes.0;
    let op = Op::from(args.op);
    check_op(cfg, op)?;
    for &size in sizes {
        fits(cfg, size, "--sizes")?;
    }
    let recv_post = crate::system::RecvPost::from(args.recv_post);
    Ok(
        match sweep::run(
            cfg,
            op,
            sizes,
            args.iters,
            args.warmup,
            recv_post,
            args.trace.stats.is_some(),
        ) {
            Ok(s) => Ok(s),
            Err((size, e)) => Err(failed("pingpong", &format!("{size} bytes"), &e)),
        },
    )
}

/// What `hvia pingpong` prints for `sweep` in `format`.
///
/// # Errors
/// JSON serialisation failed (named as `--format`).
pub fn render(
    sweep: &Sweep,
    format: Format,
    provenance: &Provenance,
) -> Result<String, PingPongError> {
    Ok(match format {
        Format::Table => out::table(sweep, provenance),
        Format::Csv => out::csv_doc(sweep),
        Format::Json => out::json(sweep, provenance).map_err(|e| PingPongError::Input {
            option: "--format",
            message: e.to_string(),
        })?,
    })
}

/// Checks the files `trace` names before a run (bad input names the option).
///
/// # Errors
/// A file that cannot be written, two options naming one file, a bad plot or stats
/// file name.
pub fn check_files(trace: &TraceArgs) -> Result<(), PingPongError> {
    files::check_outputs(trace).map(drop)
}

/// Draws the ping-pong sweeps of several what-if points into one plot (`--plot` with
/// `--sweep`): one line per point, labelled with its overrides.
///
/// # Errors
/// A bad file name (`--plot`), or the plot could not be written.
pub fn plot_points(
    path: &std::path::Path,
    points: &[(String, Sweep)],
    provenance: &Provenance,
) -> Result<(), PingPongError> {
    let kind = files::check_outputs(&TraceArgs {
        plot: Some(path.to_path_buf()),
        ..TraceArgs::default()
    })?
    .unwrap_or(files::PlotKind::Svg);
    plot::points(path, kind, points, provenance).map_err(|e| files::write_error("--plot", path, &e))
}

/// Runs `hvia breakdown` and returns what to print.
///
/// # Errors
/// A [`PingPongError`] for bad input. A run that fails is an [`Outcome`] with status 1.
pub fn run_breakdown(
    args: &BreakdownArgs,
    format: Format,
    cfg: &SystemConfig,
    provenance: &Provenance,
) -> Result<Outcome, PingPongError> {
    let plot = files::check_outputs(&args.trace)?;
    check_vcd_scopes(cfg, &args.trace)?;
    let op = Op::from(args.op);
    check_op(cfg, op)?;
    fits(cfg, args.size, "--size")?;
    let bd = match breakdown::measure_run(cfg, op, args.size) {
        Ok((b, run)) => {
            if let Some(path) = &args.trace.stats {
                let counters = crate::stats::of_system(&run.system);
                if let Err(e) = files::write_stats(path, &counters, None) {
                    return Ok(write_failed("breakdown", &e));
                }
            }
            b
        }
        Err(e) => return Ok(failed("breakdown", &format!("{} bytes", args.size), &e)),
    };
    let spec = PingPongSpec {
        op,
        size: args.size,
        iterations: 1,
        warmup: BREAKDOWN_WARMUP,
        trace: true,
        recv_post: crate::system::RecvPost::Timed,
    };
    let warnings = match write_traces(cfg, spec, &args.trace, "breakdown") {
        Ok(Ok(w)) => w,
        Ok(Err(outcome)) => return Ok(outcome),
        Err(e) => return Ok(write_failed("breakdown", &e)),
    };
    if let (Some(path), Some(kind)) = (&args.trace.plot, plot) {
        if let Err(e) = plot::breakdown(path, kind, &bd, provenance) {
            return Ok(write_failed(
                "breakdown",
                &files::write_error("--plot", path, &e),
            ));
        }
    }
    let stdout = match format {
        Format::Table => bd_out::table(&bd, provenance),
        Format::Csv => bd_out::csv_doc(&bd),
        Format::Json => bd_out::json(&bd).map_err(|e| PingPongError::Input {
            option: "--format",
            message: e.to_string(),
        })?,
    };
    Ok(Outcome {
        stdout,
        stderr: warnings,
        status: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_exits_with_1_and_says_why() {
        let out = failed("pingpong", "64 bytes", &RunError::Misrouted(3));
        assert_eq!(out.status, 1);
        assert!(out.stdout.is_empty());
        assert_eq!(
            out.stderr,
            "hvia pingpong: the simulation of 64 bytes failed: 3 messages were misrouted\n"
        );
    }

    #[test]
    fn provenance_labels() {
        let p = Provenance {
            preset: Some("hvia-ge".into()),
            config_file: None,
            overrides: vec!["a=1".into(), "b=2".into()],
        };
        assert_eq!(p.label(), "preset hvia-ge with --set a=1 --set b=2");
        let p = Provenance {
            preset: None,
            config_file: Some("x.toml".into()),
            overrides: Vec::new(),
        };
        assert_eq!(p.label(), "config x.toml");
    }
}
