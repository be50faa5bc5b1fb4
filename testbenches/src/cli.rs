//! The `hvia` command line: options shared by every subcommand (format, preset or config
//! file, `--set` overrides), the subcommands built so far, and what each one prints.
//!
//! The contract (names, JSON keys, exit status 2 on bad input) is in the project's
//! `cli.md`; subcommands arrive with the testbenches that implement them. `hvia` without a
//! subcommand runs the main job, `hvia pingpong` with its defaults.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::config::{ConfigError, ConfigSource, SystemConfig, DEFAULT_PRESET, PRESETS};
use crate::dma::{DmaArgs, DmaError};
use crate::layout::{LayoutCommand, LayoutError};
use crate::pingpong_cli::{BreakdownArgs, PingPongArgs, PingPongError, Provenance};
use crate::report::{aligned, csv, Format};

/// A cycle-accurate simulator of the HVIA-GE card (hardware VIA with RDMA write
/// over gigabit Ethernet) and the system around it.
#[derive(Debug, Parser)]
#[command(name = "hvia", version = crate::runinfo::VERSION)]
pub struct Cli {
    /// Options every subcommand takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do; none runs the main job (`hvia pingpong` with its defaults).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every subcommand takes, before or after the subcommand's name.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t)]
    pub format: Format,
    /// Embedded preset to start from (`hvia presets` lists them) [default: hvia-ge].
    #[arg(long, global = true, value_name = "NAME", conflicts_with = "config")]
    pub preset: Option<String>,
    /// TOML file with a whole system configuration to start from.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one config value, e.g. `--set pci.system.clock_mhz=66`; repeatable,
    /// applied in order after the preset or file.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// What-if sweep (pingpong, breakdown, dma, validate): run once per value of KEY,
    /// e.g. `--sweep pci.system.clock_mhz=33,66`; repeatable: the grid of every
    /// combination, in parallel, each point's overrides beside its results.
    #[arg(long = "sweep", global = true, value_name = "KEY=V1,V2,...")]
    pub sweeps: Vec<String>,
}

impl GlobalArgs {
    /// Where the base configuration comes from.
    #[must_use]
    pub fn source(&self) -> ConfigSource {
        match (&self.config, &self.preset) {
            (Some(path), _) => ConfigSource::File(path.clone()),
            (None, Some(name)) => ConfigSource::Preset(name.clone()),
            (None, None) => ConfigSource::Preset(DEFAULT_PRESET.to_owned()),
        }
    }

    /// The effective configuration: preset or file, then every `--set`, validated.
    ///
    /// # Errors
    /// Any [`ConfigError`].
    pub fn load_config(&self) -> Result<SystemConfig, ConfigError> {
        SystemConfig::load(&self.source(), &self.sets)
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Ping-pong between two nodes over RDMA write or send/receive, swept over message
    /// sizes: one-way latency (half a round trip) and bandwidth per size. The default
    /// job of `hvia`.
    Pingpong(PingPongArgs),
    /// Per-clock latency breakdown of one one-way message in steady state: which stage
    /// of which component, in which clock domain, each nanosecond belongs to.
    Breakdown(BreakdownArgs),
    /// List the embedded presets.
    Presets,
    /// Show the effective configuration (preset or file plus every --set).
    Config(ConfigArgs),
    /// Show the bytes of a VI descriptor or of the ATT entries of a region, field by
    /// field, as they are in host memory or card SDRAM.
    #[command(subcommand)]
    Layout(LayoutCommand),
    /// Raw DMA throughput of one bus: the card moving --bytes between host memory and
    /// itself (--bus system), or the DP83820, master of the local bus, moving them
    /// between the FPGA's buffer RAM and itself (--bus local).
    Dma(DmaArgs),
    /// Every published figure of the HVIA-GE paper (latency, bandwidth, send/receive
    /// against RDMA write, VipPostRecv time, DMA ceilings) against the model, one row per
    /// figure; exit 0 when all hold, 1 when one does not.
    Validate,
    /// Fit every parameter marked `calibrated:` in the configuration (inside its
    /// plausible range) to the published figures; print the fitted values and each
    /// target's residual, and with --write, a config file with the values in.
    Calibrate(CalibrateArgs),
    /// Print a shell completion script for `hvia` (bash, zsh, fish, elvish,
    /// powershell), e.g. `hvia completions bash > /etc/bash_completion.d/hvia`.
    Completions(CompletionsArgs),
    /// Join the JSON of every shard of one `pingpong --shard K/N` sweep into the
    /// unsharded report (printed as JSON).
    Merge(MergeArgs),
    /// Traffic patterns beyond the ping-pong: `--pattern stream` (one-way bandwidth with
    /// a window of outstanding descriptors, latency percentiles per message),
    /// `bidirectional`, `incast` (N-1 nodes to node 0) and `all-to-all`.
    Traffic(crate::traffic_cli::TrafficArgs),
    /// MPI over VIPL (vmpi) on the simulated cluster: `pingpong` (latency, bandwidth
    /// and protocol per size, overhead over raw VIPL), `bcast --nodes N`.
    #[command(subcommand)]
    Mpi(crate::mpi_cli::MpiCommand),
    /// BSPlib over VIPL (vbsp) on the simulated cluster: `probe --nodes 2,4,...` (the
    /// cost parameters g and L), `lu --n 64,128,256` (LU on a 2 x 2 grid, checked).
    #[command(subcommand)]
    Bsp(crate::mpi_cli::BspCommand),
    /// The catalogue of counters `--stats FILE` writes (pingpong, breakdown, traffic; dma writes
    /// those of its bus): name, unit and description of each.
    Stats(StatsArgs),
}

/// Options of `hvia merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' JSON files (`hvia pingpong --shard K/N --format json` of one sweep).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<std::path::PathBuf>,
}

/// Options of `hvia completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Options of `hvia stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Print every counter of the system, with its unit and description.
    #[arg(long, required = true)]
    pub list: bool,
}

/// Options of `hvia calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Write the configuration's text (preset or file) with the fitted values to FILE.
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Fit only this parameter (repeatable); the others keep their values.
    #[arg(long, value_name = "KEY")]
    pub only: Vec<String>,
}

/// Options of `hvia config` (one of `--show`, `--diff`).
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct ConfigArgs {
    /// Print the effective configuration: TOML with each clock's period in picoseconds
    /// for `--format table`, a JSON object, or `key,value` CSV.
    #[arg(long)]
    pub show: bool,
    /// Print what the --sets (and a --config file) change against the preset: the
    /// --preset given, or the base a --config file extends, else hvia-ge; key, the
    /// preset's value, the effective value.
    #[arg(long)]
    pub diff: bool,
}

/// What a run of `hvia` prints and how it exits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Text for standard output.
    pub stdout: String,
    /// Text for standard error.
    pub stderr: String,
    /// Process exit status.
    pub status: u8,
}

impl Outcome {
    pub(crate) fn ok(stdout: String) -> Self {
        Self {
            stdout,
            stderr: String::new(),
            status: 0,
        }
    }
}

/// Bad input to `hvia`: the binary prints it and exits with status 2.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CliError {
    /// The configuration (preset, file, `--set`) or its output.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    /// The options of `hvia layout`.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Layout(#[from] LayoutError),
    /// The options of `hvia dma`.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Dma(#[from] DmaError),
    /// The options of `hvia traffic`.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Traffic(#[from] crate::traffic_cli::TrafficError),
    /// The options of `hvia pingpong` and `hvia breakdown`.
    #[error(transparent)]
    #[diagnostic(transparent)]
    PingPong(#[from] PingPongError),
    /// `--sweep`: malformed, not taken by the command, or a point's configuration is
    /// invalid.
    #[error("{message}")]
    #[diagnostic(code(hvia::sweep))]
    Sweep {
        /// What is wrong, naming `--sweep` (or the option it does not go with).
        message: String,
    },
}

/// Runs the command `cli` describes. Bad input is an `Err` (the binary exits with 2).
///
/// # Errors
/// Any [`CliError`]: of the configuration, or of a subcommand's options.
pub fn run(cli: &Cli) -> Result<Outcome, CliError> {
    let started = std::time::SystemTime::now();
    // Every command starts from the effective configuration, so bad input is reported
    // whatever the command.
    let cfg = cli.global.load_config()?;
    if !cli.global.sweeps.is_empty() {
        return crate::grid::run(cli, started);
    }
    let mut out = dispatch(cli, &cfg)?;
    // Every JSON object the tool prints carries the run's metadata (a merge keeps the
    // first shard's; completion scripts are not JSON).
    let reports = !matches!(
        cli.command,
        Some(Command::Merge(_) | Command::Completions(_))
    );
    if reports && cli.global.format == Format::Json && !out.stdout.is_empty() {
        let info = crate::runinfo::RunInfo::new(&cfg, &Provenance::of(&cli.global), started);
        out.stdout = info.insert_into(&out.stdout);
    }
    Ok(out)
}

/// Runs the command on the effective configuration `cfg`.
fn dispatch(cli: &Cli, cfg: &SystemConfig) -> Result<Outcome, CliError> {
    let format = cli.global.format;
    let cfg = cfg.clone();
    let provenance = || Provenance::of(&cli.global);
    match &cli.command {
        None => Ok(crate::pingpong_cli::run_pingpong(
            &PingPongArgs::default(),
            format,
            &cfg,
            &provenance(),
        )?),
        Some(Command::Pingpong(args)) => Ok(crate::pingpong_cli::run_pingpong(
            args,
            format,
            &cfg,
            &provenance(),
        )?),
        Some(Command::Breakdown(args)) => Ok(crate::pingpong_cli::run_breakdown(
            args,
            format,
            &cfg,
            &provenance(),
        )?),
        Some(Command::Presets) => Ok(Outcome::ok(presets(format)?)),
        Some(Command::Stats(_)) => Ok(Outcome::ok(stats_list(&cfg, format)?)),
        // clap requires one of `--show` and `--diff`.
        Some(Command::Config(a)) if a.diff => {
            let (against, base) = crate::config::diff_base(&cli.global.source())?;
            Ok(Outcome::ok(diff_config(&base, &cfg, &against, format)?))
        }
        Some(Command::Config(_)) => Ok(Outcome::ok(show_config(&cfg, format)?)),
        Some(Command::Completions(a)) => {
            let mut out = Vec::new();
            clap_complete::generate(
                a.shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "hvia",
                &mut out,
            );
            Ok(Outcome::ok(String::from_utf8_lossy(&out).into_owned()))
        }
        Some(Command::Layout(cmd)) => Ok(Outcome::ok(crate::layout::run(cmd, format, &cfg)?)),
        Some(Command::Dma(args)) => Ok(crate::dma::run(args, format, &cfg)?),
        Some(Command::Traffic(args)) => Ok(crate::traffic_cli::run(args, format, &cfg)?),
        Some(Command::Mpi(cmd)) => Ok(crate::mpi_cli::run_mpi(cmd, format, &cfg)),
        Some(Command::Bsp(cmd)) => Ok(crate::mpi_cli::run_bsp(cmd, format, &cfg)),
        Some(Command::Merge(args)) => {
            let mut texts = Vec::new();
            for path in &args.files {
                let name = path.display().to_string();
                let text = std::fs::read_to_string(path).map_err(|e| {
                    crate::pingpong_cli::PingPongError::Input {
                        option: "merge",
                        message: format!("{name}: {e}"),
                    }
                })?;
                texts.push((name, text));
            }
            let merged = crate::pingpong_cli::shard::merge(&texts).map_err(|message| {
                crate::pingpong_cli::PingPongError::Input {
                    option: "merge",
                    message,
                }
            })?;
            Ok(Outcome::ok(merged))
        }
        Some(Command::Calibrate(args)) => {
            let calibrated =
                crate::config::calibrated::of(&cli.global.source(), &cfg).map_err(|e| {
                    ConfigError::Calibrated {
                        message: e.to_string(),
                    }
                })?;
            if let Some(k) = args
                .only
                .iter()
                .find(|k| !calibrated.iter().any(|c| &c.key == *k))
            {
                return Err(ConfigError::Calibrated {
                    message: format!(
                        "--only {k}: not a calibrated parameter of this configuration (they are: {})",
                        calibrated.iter().map(|c| c.key.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                }
                .into());
            }
            let text = crate::config::source_text(&cli.global.source())?;
            Ok(crate::calibrate::run(
                &cfg,
                &calibrated,
                &args.only,
                &text,
                args.write.as_deref(),
                format,
            ))
        }
        Some(Command::Validate) => {
            let calibrated =
                crate::config::calibrated::of(&cli.global.source(), &cfg).map_err(|e| {
                    ConfigError::Calibrated {
                        message: e.to_string(),
                    }
                })?;
            let label = provenance().label();
            Ok(crate::validate::run(&cfg, &calibrated, &label, format))
        }
    }
}

fn json(value: &impl serde::Serialize) -> Result<String, ConfigError> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| ConfigError::Serialize {
            message: e.to_string(),
        })
}

/// `hvia presets`.
fn presets(format: Format) -> Result<String, ConfigError> {
    #[derive(serde::Serialize)]
    struct Row<'a> {
        name: &'a str,
        description: &'a str,
    }
    let rows: Vec<Vec<String>> = PRESETS
        .iter()
        .map(|p| vec![p.name.to_owned(), p.description.to_owned()])
        .collect();
    match format {
        Format::Table => Ok(aligned(&["NAME", "DESCRIPTION"], &rows)),
        Format::Csv => Ok(csv(&["name", "description"], &rows)),
        Format::Json => json(
            &PRESETS
                .iter()
                .map(|p| Row {
                    name: p.name,
                    description: p.description,
                })
                .collect::<Vec<_>>(),
        ),
    }
}

/// `hvia stats --list`: the counters of the configured system.
fn stats_list(cfg: &SystemConfig, format: Format) -> Result<String, ConfigError> {
    let all = crate::stats::catalogue(cfg).map_err(|e| ConfigError::Serialize {
        message: format!("the system cannot be built: {e}"),
    })?;
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|c| vec![c.name.clone(), c.unit.to_owned(), c.description.to_owned()])
        .collect();
    match format {
        Format::Table => Ok(aligned(&["NAME", "UNIT", "DESCRIPTION"], &rows)),
        Format::Csv => Ok(csv(&["name", "unit", "description"], &rows)),
        Format::Json => {
            #[derive(serde::Serialize)]
            struct Entry<'a> {
                name: &'a str,
                unit: &'a str,
                description: &'a str,
            }
            #[derive(serde::Serialize)]
            struct Doc<'a> {
                counters: Vec<Entry<'a>>,
            }
            json(&Doc {
                counters: all
                    .iter()
                    .map(|c| Entry {
                        name: &c.name,
                        unit: c.unit,
                        description: c.description,
                    })
                    .collect(),
            })
        }
    }
}

/// `hvia config --diff`: the keys whose values differ between `base` (the preset
/// `against`) and `cfg`.
fn diff_config(
    base: &SystemConfig,
    cfg: &SystemConfig,
    against: &str,
    format: Format,
) -> Result<String, ConfigError> {
    let before: std::collections::BTreeMap<String, String> = base.flatten()?.into_iter().collect();
    let rows: Vec<Vec<String>> = cfg
        .flatten()?
        .into_iter()
        .filter_map(|(k, v)| {
            let old = before.get(&k).cloned().unwrap_or_default();
            (old != v).then(|| vec![k, old, v])
        })
        .collect();
    match format {
        Format::Table if rows.is_empty() => Ok(format!("no change against preset {against}\n")),
        Format::Table => Ok(aligned(
            &["KEY", &format!("PRESET {against}"), "EFFECTIVE"],
            &rows,
        )),
        Format::Csv => Ok(csv(&["key", "preset", "value"], &rows)),
        Format::Json => {
            #[derive(serde::Serialize)]
            struct Change<'a> {
                key: &'a str,
                preset: &'a str,
                value: &'a str,
            }
            #[derive(serde::Serialize)]
            struct Doc<'a> {
                against: &'a str,
                changes: Vec<Change<'a>>,
            }
            json(&Doc {
                against,
                changes: rows
                    .iter()
                    .map(|r| Change {
                        key: &r[0],
                        preset: &r[1],
                        value: &r[2],
                    })
                    .collect(),
            })
        }
    }
}

/// `hvia config --show`.
fn show_config(cfg: &SystemConfig, format: Format) -> Result<String, ConfigError> {
    match format {
        Format::Table => cfg.to_toml(),
        Format::Json => json(cfg),
        Format::Csv => {
            let rows: Vec<Vec<String>> = cfg
                .flatten()?
                .into_iter()
                .map(|(k, v)| vec![k, v])
                .collect();
            Ok(csv(&["key", "value"], &rows))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_work_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "hvia", "config", "--show", "--set", "a=1", "--format", "json",
        ])
        .unwrap();
        assert_eq!(cli.global.sets, ["a=1"]);
        assert_eq!(cli.global.format, Format::Json);
        let cli = Cli::try_parse_from(["hvia", "--preset", "x", "presets"]).unwrap();
        assert_eq!(cli.global.source(), ConfigSource::Preset("x".into()));
    }

    #[test]
    fn preset_and_config_conflict() {
        let err = Cli::try_parse_from(["hvia", "--preset", "x", "--config", "f.toml", "presets"])
            .unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn no_subcommand_is_the_default_ping_pong() {
        let cli = Cli::try_parse_from(["hvia"]).unwrap();
        assert!(cli.command.is_none());
        let Some(Command::Pingpong(explicit)) =
            Cli::try_parse_from(["hvia", "pingpong"]).unwrap().command
        else {
            panic!("pingpong parses");
        };
        let default = PingPongArgs::default();
        assert_eq!(
            (default.op, &default.sizes, default.iters, default.warmup),
            (
                explicit.op,
                &explicit.sizes,
                explicit.iters,
                explicit.warmup
            )
        );
        assert_eq!(default.sizes.0.first(), Some(&4));
        assert_eq!(default.sizes.0.last(), Some(&(1 << 20)));
    }
}
