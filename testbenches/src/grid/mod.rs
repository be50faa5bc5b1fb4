//! `--sweep KEY=V1,V2,...` (repeatable) on `pingpong`, `breakdown`, `dma` and
//! `validate`: the command runs once per point of the grid of every combination of the
//! values (each point is the configuration with the point's overrides applied after
//! every `--set`), the points in parallel (rayon), and the output holds each point's
//! overrides beside its results:
//!
//! - JSON: `{ "command", "sweep": [ { "key", "values" } ], "points": [ { "overrides",
//!   "result" } ], "run" }`, `result` being the command's own JSON for that point (with
//!   its own `run` object: the point's configuration digest);
//! - CSV: one column per swept key, then the command's columns;
//! - table: the command's table per point, under a line naming the point.
//!
//! `pingpong --plot` draws one line per point. Trace files (`--vcd`, `--pcap`,
//! `--perfetto`) and `--stats` trace one run, so they are refused with `--sweep` (run
//! the point of interest with `--set`). Files: this one (the run), `parse` (options,
//! grid).

mod parse;

use rayon::prelude::*;
use std::time::SystemTime;

use crate::cli::{Cli, CliError, Command, Outcome};
use crate::config::SystemConfig;
use crate::pingpong_cli::{PingPongArgs, Provenance, Sweep, TraceArgs};
use crate::report::{csv_field, Format};
use crate::runinfo::RunInfo;

pub use parse::{axis, grid, Axis, MAX_POINTS};

/// Bad `--sweep` input (exit 2).
fn bad(message: impl Into<String>) -> CliError {
    CliError::Sweep {
        message: message.into(),
    }
}

/// The commands `--sweep` applies to.
enum Which<'a> {
    Pingpong(PingPongArgs),
    Breakdown(&'a crate::pingpong_cli::BreakdownArgs),
    Dma(&'a crate::dma::DmaArgs),
    Validate,
}

impl Which<'_> {
    fn name(&self) -> &'static str {
        match self {
            Which::Pingpong(_) => "pingpong",
            Which::Breakdown(_) => "breakdown",
            Which::Dma(_) => "dma",
            Which::Validate => "validate",
        }
    }
}

/// Refuses the trace files of one run together with `--sweep`.
fn no_traces(trace: &TraceArgs, plot_ok: bool) -> Result<(), CliError> {
    for (option, set) in [
        ("--vcd", trace.vcd.is_some()),
        ("--pcap", trace.pcap.is_some()),
        ("--perfetto", trace.perfetto.is_some()),
        ("--stats", trace.stats.is_some()),
        ("--plot", trace.plot.is_some() && !plot_ok),
    ] {
        if set {
            return Err(bad(format!(
                "{option} is not taken together with --sweep (it describes one run: give \
                 that point's values with --set instead)"
            )));
        }
    }
    Ok(())
}

/// What one point printed, and its sweep for a ping-pong plot.
struct Point {
    overrides: Vec<String>,
    outcome: Outcome,
    sweep: Option<Sweep>,
}

/// Runs the command of `cli` once per point of its `--sweep` grid.
///
/// # Errors
/// Bad input: a malformed `--sweep`, a command that does not take it, a point whose
/// configuration is invalid, or the command's own bad input on a point.
pub fn run(cli: &Cli, started: SystemTime) -> Result<Outcome, CliError> {
    let axes: Vec<Axis> = cli
        .global
        .sweeps
        .iter()
        .map(|s| axis(s).map_err(|m| bad(format!("--sweep {m}"))))
        .collect::<Result<_, _>>()?;
    let which =
        match &cli.command {
            None => Which::Pingpong(PingPongArgs::default()),
            Some(Command::Pingpong(a)) => Which::Pingpong(a.clone()),
            Some(Command::Breakdown(a)) => Which::Breakdown(a),
            Some(Command::Dma(a)) => Which::Dma(a),
            Some(Command::Validate) => Which::Validate,
            Some(_) => return Err(bad(
                "--sweep: this command does not take it (pingpong, breakdown, dma and validate do)",
            )),
        };
    match &which {
        Which::Pingpong(a) => {
            no_traces(&a.trace, true)?;
            crate::pingpong_cli::check_files(&a.trace)?;
        }
        Which::Breakdown(a) => no_traces(&a.trace, false)?,
        Which::Dma(a) if a.stats.is_some() => no_traces(
            &TraceArgs {
                stats: a.stats.clone(),
                ..TraceArgs::default()
            },
            false,
        )?,
        Which::Dma(_) | Which::Validate => {}
    }
    let points = grid(&axes).map_err(|m| bad(format!("--sweep {m}")))?;
    let source = cli.global.source();
    let base = Provenance::of(&cli.global);
    // Every point's configuration first: bad input is reported before anything runs.
    let configs: Vec<(Vec<String>, SystemConfig, Provenance)> = points
        .into_iter()
        .map(|point| {
            let mut sets = cli.global.sets.clone();
            sets.extend(point.iter().cloned());
            let cfg = SystemConfig::load(&source, &sets)
                .map_err(|e| bad(format!("--sweep {}: {e}", point.join(" "))))?;
            let prov = Provenance {
                overrides: sets,
                ..base.clone()
            };
            Ok((point, cfg, prov))
        })
        .collect::<Result<_, CliError>>()?;
    let format = cli.global.format;
    let done: Vec<Point> = configs
        .par_iter()
        .with_max_len(1)
        .map(|(point, cfg, prov)| one(&which, cli, point, cfg, prov, format, started))
        .collect::<Result<_, _>>()?;
    if let Some(p) = done
        .iter()
        .find(|p| p.outcome.stdout.is_empty() && p.outcome.status != 0)
    {
        return Ok(Outcome {
            stdout: String::new(),
            stderr: format!(
                "hvia: --sweep point {}: {}",
                p.overrides.join(" "),
                p.outcome.stderr
            ),
            status: p.outcome.status,
        });
    }
    let mut stderr = String::new();
    for p in &done {
        if !p.outcome.stderr.is_empty() {
            stderr.push_str(&format!("[{}] {}", p.overrides.join(" "), p.outcome.stderr));
        }
    }
    if let Some(path) = match &which {
        Which::Pingpong(a) => a.trace.plot.as_ref(),
        _ => None,
    } {
        let lines: Vec<(String, Sweep)> = done
            .iter()
            .filter_map(|p| p.sweep.clone().map(|s| (p.overrides.join(" "), s)))
            .collect();
        if let Err(e) = crate::pingpong_cli::plot_points(path, &lines, &base) {
            return Ok(Outcome {
                stdout: String::new(),
                stderr: format!("hvia pingpong: {e}\n"),
                status: 1,
            });
        }
    }
    let cfg = cli.global.load_config()?;
    let stdout = match format {
        Format::Json => json(
            which.name(),
            &axes,
            &done,
            &RunInfo::new(&cfg, &base, started),
        ),
        Format::Csv => csv_doc(&axes, &done),
        Format::Table => table(&done),
    };
    Ok(Outcome {
        stdout,
        stderr,
        status: done.iter().map(|p| p.outcome.status).max().unwrap_or(0),
    })
}

/// Runs one point.
fn one(
    which: &Which<'_>,
    cli: &Cli,
    point: &[String],
    cfg: &SystemConfig,
    prov: &Provenance,
    format: Format,
    started: SystemTime,
) -> Result<Point, CliError> {
    let mut sweep = None;
    let mut outcome = match which {
        Which::Pingpong(args) => match crate::pingpong_cli::compute(args, cfg)? {
            Ok(s) => {
                let stdout = crate::pingpong_cli::render(&s, format, prov)?;
                sweep = Some(s);
                Outcome {
                    stdout,
                    stderr: String::new(),
                    status: 0,
                }
            }
            Err(o) => o,
        },
        Which::Breakdown(args) => crate::pingpong_cli::run_breakdown(args, format, cfg, prov)?,
        Which::Dma(args) => crate::dma::run(args, format, cfg)?,
        Which::Validate => {
            let calibrated = crate::config::calibrated::of(&cli.global.source(), cfg)
                .map_err(|e| bad(format!("--sweep {}: {e}", point.join(" "))))?;
            crate::validate::run(cfg, &calibrated, &prov.label(), format)
        }
    };
    if format == Format::Json && !outcome.stdout.is_empty() {
        outcome.stdout = RunInfo::new(cfg, prov, started).insert_into(&outcome.stdout);
    }
    Ok(Point {
        overrides: point.to_vec(),
        outcome,
        sweep,
    })
}

/// Indents every line of `text` after the first by `n` spaces.
fn indent(text: &str, n: usize) -> String {
    text.trim_end()
        .replace('\n', &format!("\n{}", " ".repeat(n)))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The JSON document of a swept run.
fn json(command: &str, axes: &[Axis], done: &[Point], run: &RunInfo) -> String {
    let list = |v: &[String]| {
        format!(
            "[{}]",
            v.iter().map(|s| json_str(s)).collect::<Vec<_>>().join(", ")
        )
    };
    let sweep: Vec<String> = axes
        .iter()
        .map(|a| {
            format!(
                "{{ \"key\": {}, \"values\": {} }}",
                json_str(&a.key),
                list(&a.values)
            )
        })
        .collect();
    let points: Vec<String> = done
        .iter()
        .map(|p| {
            format!(
                "    {{\n      \"overrides\": {},\n      \"result\": {}\n    }}",
                list(&p.overrides),
                indent(&p.outcome.stdout, 6)
            )
        })
        .collect();
    let doc = format!(
        "{{\n  \"command\": {},\n  \"sweep\": [{}],\n  \"points\": [\n{}\n  ]\n}}\n",
        json_str(command),
        sweep.join(", "),
        points.join(",\n")
    );
    run.insert_into(&doc)
}

/// The CSV of a swept run: the swept keys' values, then the command's columns.
fn csv_doc(axes: &[Axis], done: &[Point]) -> String {
    let mut out = String::new();
    let keys: Vec<String> = axes
        .iter()
        .map(|a| csv_field(&a.key).into_owned())
        .collect();
    for (i, p) in done.iter().enumerate() {
        let mut lines = p.outcome.stdout.lines();
        let header = lines.next().unwrap_or_default();
        if i == 0 {
            let mut h = keys.clone();
            h.push(header.to_owned());
            out.push_str(&h.join(","));
            out.push('\n');
        }
        let values: Vec<String> = p
            .overrides
            .iter()
            .map(|o| csv_field(o.split_once('=').map_or("", |(_, v)| v)).into_owned())
            .collect();
        for line in lines {
            let mut row = values.clone();
            row.push(line.to_owned());
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

/// The tables of a swept run, one per point.
fn table(done: &[Point]) -> String {
    let n = done.len();
    done.iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "== what-if point {}/{n}: --set {}\n{}",
                i + 1,
                p.overrides.join(" --set "),
                p.outcome.stdout
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
