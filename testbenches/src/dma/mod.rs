//! `hvia dma`: raw DMA throughput of one bus of the card.
//!
//! - `--bus system`: the card's DMA master moves `--bytes` between host memory (a
//!   process buffer over scattered 4 KB frames, behind the host bridge) and itself;
//! - `--bus local`: the DP83820, master of the card's local bus, moves them between the
//!   GEC's buffer RAM (the real GEC model as the target) and itself.
//!
//! The runs are `pci_model::dma_throughput` (system) and `gige_mac::testbench::local_dma`
//! (local) with parameters built from the configuration by the one mapping in
//! [`crate::config`] (`[pci.*]`, `[card.dma]`, `[mac.dma]`, `[card.local_target]`), so
//! `--set pci.system.width_bits=64` and friends apply, exactly as in the whole system.
//! Throughput is bytes over the time from the master getting the job to its last data
//! phase (MB = 10^6 bytes). Files: this one (options, the run), `parse` (option values),
//! `out` (table, JSON, CSV).

mod out;
mod parse;

use clap::{Args, ValueEnum};
use pci_model::{
    dma_throughput, BenchDirection, BenchTarget, BusParams, DmaBenchParams, DmaBenchReport,
    PciError, PAGE_SIZE,
};
use std::time::Instant;

use crate::cli::Outcome;
use crate::config::{PciBusKind, SystemConfig};
use crate::report::Format;

pub use parse::{parse_burst, parse_bytes, parse_offset, MAX_BYTES};

/// Which bus `hvia dma` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BusArg {
    /// The system bus: the card's DMA master and host memory behind the host bridge.
    System,
    /// The card's local bus: the DP83820 as the master, the FPGA's buffer RAM as target.
    Local,
}

impl From<BusArg> for PciBusKind {
    fn from(b: BusArg) -> Self {
        match b {
            BusArg::System => PciBusKind::System,
            BusArg::Local => PciBusKind::Local,
        }
    }
}

/// Which way the data moves, seen from the master.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    /// Into the master: from host memory (system) or the buffer RAM (local).
    Read,
    /// Out of the master: into host memory (system) or the buffer RAM (local).
    Write,
}

impl From<DirectionArg> for BenchDirection {
    fn from(d: DirectionArg) -> Self {
        match d {
            DirectionArg::Read => BenchDirection::Read,
            DirectionArg::Write => BenchDirection::Write,
        }
    }
}

/// Options of `hvia dma`.
#[derive(Debug, Args)]
pub struct DmaArgs {
    /// The bus: `system` (the card's DMA master <-> host memory through the host bridge)
    /// or `local` (the DP83820 is the master there <-> the FPGA's buffer RAM).
    #[arg(long, value_enum, default_value_t = BusArg::System)]
    pub bus: BusArg,
    /// `read` moves data into the master, `write` out of it.
    #[arg(long, value_enum, default_value_t = DirectionArg::Read)]
    pub direction: DirectionArg,
    /// Bytes to move: at least 1, at most 268435456 (decimal, or hex after 0x).
    #[arg(long, value_name = "N", default_value = "1048576", value_parser = parse_bytes)]
    pub bytes: u64,
    /// Longest burst in bytes, a power of two from 4 to 4096; by default the config's
    /// `pci.system.burst_bytes` or `pci.local.burst_bytes` (512 in the preset).
    #[arg(long, value_name = "BYTES", value_parser = parse_burst)]
    pub burst: Option<u32>,
    /// Where the buffer starts within its first 4 KB page, in bytes (0 to 4095).
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = parse_offset)]
    pub offset: u64,
    /// Write the bus's (and host bridge's) counters, with unit and description, as JSON
    /// or CSV by FILE's extension.
    #[arg(long, value_name = "FILE.json|.csv")]
    pub stats: Option<std::path::PathBuf>,
}

/// Bad input to `hvia dma` that the option parsers cannot see alone (it depends on the
/// configuration), or parameters the PCI model refuses. The binary exits with 2.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DmaError {
    /// An option value that does not fit the configured system.
    #[error("{option}: {message}")]
    #[diagnostic(code(hvia::dma::input))]
    Input {
        /// The option, e.g. `--burst`.
        option: &'static str,
        /// What is wrong with its value.
        message: String,
    },
    /// The PCI model refused the parameters built from the configuration.
    #[error("the PCI model cannot simulate this configuration: {0}")]
    #[diagnostic(code(hvia::dma::model))]
    Model(PciError),
}

/// One finished `hvia dma` run: what was asked and what the model reported.
#[derive(Clone, Debug)]
pub struct DmaRun {
    /// The bus measured.
    pub bus: PciBusKind,
    /// Its parameters (width, clock).
    pub bus_params: BusParams,
    /// Start offset within the first page \[bytes\].
    pub offset: u64,
    /// The model's report.
    pub report: DmaBenchReport,
    /// Simulated time: every bus clock the run simulated \[ps\].
    pub simulated_ps: u64,
    /// Host time the simulation took \[s\].
    pub wall_seconds: f64,
}

/// The `pci_model` bench parameters of `args` on `cfg`.
///
/// # Errors
/// [`DmaError::Input`] for a burst narrower than one data phase or bytes that do not fit
/// host memory; [`DmaError::Model`] for a bus the model refuses.
pub fn bench_params(args: &DmaArgs, cfg: &SystemConfig) -> Result<DmaBenchParams, DmaError> {
    let kind = PciBusKind::from(args.bus);
    let bus = cfg.pci_bus_params(kind).map_err(DmaError::Model)?;
    let mut dma = cfg.dma_params(kind);
    if let Some(burst) = args.burst {
        dma.burst_bytes = u64::from(burst);
    }
    if dma.burst_bytes < bus.width.bytes() {
        return Err(DmaError::Input {
            option: "--burst",
            message: format!(
                "{} bytes is less than one data phase of the {}-bit {} bus ({} bytes)",
                dma.burst_bytes,
                bus.width.bits(),
                kind.name(),
                bus.width.bytes()
            ),
        });
    }
    let target = match kind {
        PciBusKind::System => {
            let memory_bytes = cfg.host_memory_bytes();
            if args.bytes.saturating_add(args.offset) > memory_bytes {
                return Err(DmaError::Input {
                    option: "--bytes",
                    message: format!(
                        "{} bytes at offset {} do not fit in host memory ({} MB, host.memory_mb)",
                        args.bytes, args.offset, cfg.host.memory_mb
                    ),
                });
            }
            BenchTarget::HostMemory {
                bridge: cfg.host_bridge_params(),
                memory_bytes,
            }
        }
        PciBusKind::Local => {
            let (profile, read_latency) = cfg.local_target();
            BenchTarget::Device {
                profile,
                read_latency,
            }
        }
    };
    if kind == PciBusKind::Local && args.offset != 0 {
        return Err(DmaError::Input {
            option: "--offset",
            message: "the local bus moves whole buffers from the start of the GEC's buffer RAM; --offset applies to --bus system".into(),
        });
    }
    Ok(DmaBenchParams {
        bus,
        dma,
        target,
        direction: args.direction.into(),
        bytes: args.bytes,
        offset: args.offset.min(PAGE_SIZE - 1),
        seed: cfg.sim.seed,
        trace: cfg.sim.trace,
        accounting: true,
    })
}

/// Why a DMA measurement did not produce a report.
#[derive(Debug)]
pub enum DmaFailure {
    /// Input the configured system cannot take (exit 2).
    Input(DmaError),
    /// The run did not move the bytes exactly (a model bug, exit 1).
    Failed(String),
}

/// Runs the DMA measurement `args` asks for on `cfg`: the system bus through
/// `pci_model::dma_throughput`, the local bus with the real GEC through
/// `gige_mac::testbench::local_dma`.
///
/// # Errors
/// See [`DmaFailure`].
pub fn throughput(args: &DmaArgs, cfg: &SystemConfig) -> Result<DmaBenchReport, DmaFailure> {
    let params = bench_params(args, cfg).map_err(DmaFailure::Input)?;
    match PciBusKind::from(args.bus) {
        PciBusKind::System => dma_throughput(&params).map_err(|e| match e {
            PciError::Scenario(_) | PciError::Mem(_) => DmaFailure::Failed(e.to_string()),
            e => DmaFailure::Input(DmaError::Model(e)),
        }),
        PciBusKind::Local => {
            use gige_mac::testbench::{local_dma, LocalDirection, LocalDmaError, LocalDmaParams};
            let mut gec = cfg.gec_params();
            gec.mxdma_bytes = params.dma.burst_bytes;
            let p = LocalDmaParams {
                bus: params.bus.clone(),
                gec,
                mac: cfg.mac_params(),
                core_clock_mhz: cfg.card.core_clock_mhz,
                direction: match args.direction {
                    DirectionArg::Read => LocalDirection::Read,
                    DirectionArg::Write => LocalDirection::Write,
                },
                bytes: args.bytes,
                seed: cfg.sim.seed,
            };
            let r = local_dma(&p).map_err(|e| match e {
                LocalDmaError::Scenario(s) => DmaFailure::Failed(s),
                LocalDmaError::Pci(e) => DmaFailure::Input(DmaError::Model(e)),
                e => DmaFailure::Input(DmaError::Input {
                    option: "--bytes",
                    message: e.to_string(),
                }),
            })?;
            Ok(DmaBenchReport {
                direction: params.direction,
                bytes: r.bytes,
                burst_bytes: params.dma.burst_bytes,
                elapsed: r.elapsed,
                cycles: r.cycles,
                throughput_mb_s: r.throughput_mb_s,
                ceiling_mb_s: params.bus.ceiling_mb_s(),
                bursts: r.bursts,
                stats: r.stats,
                bridge: None,
                accounting: r.accounting,
                events: r.events,
                trace_digest: 0,
            })
        }
    }
}

/// Runs `hvia dma` and returns what to print.
///
/// # Errors
/// A [`DmaError`] for input the configured system cannot take. A run whose bytes do not
/// arrive (a model bug) is not an error of the input: it is an [`Outcome`] with status 1.
pub fn run(args: &DmaArgs, format: Format, cfg: &SystemConfig) -> Result<Outcome, DmaError> {
    let params = bench_params(args, cfg)?;
    if let Some(path) = &args.stats {
        crate::stats::check_path(path).map_err(|message| DmaError::Input {
            option: "--stats",
            message,
        })?;
    }
    let start = Instant::now();
    let result = throughput(args, cfg);
    let wall_seconds = start.elapsed().as_secs_f64();
    let report = match result {
        Ok(r) => r,
        Err(DmaFailure::Failed(e)) => {
            return Ok(Outcome {
                stdout: String::new(),
                stderr: format!("hvia dma: the simulation failed (a model bug): {e}\n"),
                status: 1,
            })
        }
        Err(DmaFailure::Input(e)) => return Err(e),
    };
    let period_ps = params
        .bus
        .clock_domain(PciBusKind::from(args.bus).domain())
        .map_err(DmaError::Model)?
        .period()
        .as_ps();
    let run = DmaRun {
        bus: args.bus.into(),
        bus_params: params.bus,
        offset: params.offset,
        simulated_ps: report.stats.cycles.saturating_mul(period_ps),
        report,
        wall_seconds,
    };
    if let Some(path) = &args.stats {
        let bus = match run.bus {
            PciBusKind::System => "pci.system",
            PciBusKind::Local => "pci.local",
        };
        let counters = crate::stats::of_dma(bus, &run.report, run.simulated_ps);
        if let Err(e) = crate::stats::write_file(path, &counters, None) {
            return Ok(Outcome {
                stdout: String::new(),
                stderr: format!("hvia dma: --stats: {e}\n"),
                status: 1,
            });
        }
    }
    let stdout = match format {
        Format::Table => out::table(&run),
        Format::Csv => out::csv_doc(&run),
        Format::Json => out::json(&run).map_err(|e| DmaError::Input {
            option: "--format",
            message: e.to_string(),
        })?,
    };
    Ok(Outcome {
        stdout,
        stderr: String::new(),
        status: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_PRESET;
    use sim_kernel::Cycles;

    fn args(bus: BusArg, burst: Option<u32>) -> DmaArgs {
        DmaArgs {
            bus,
            direction: DirectionArg::Write,
            bytes: 4096,
            burst,
            offset: 12,
            stats: None,
        }
    }

    #[test]
    fn each_bus_gets_its_master_and_target() {
        let cfg = SystemConfig::from_preset(DEFAULT_PRESET).unwrap();
        let p = bench_params(&args(BusArg::System, None), &cfg).unwrap();
        assert!(matches!(
            p.target,
            BenchTarget::HostMemory { memory_bytes, .. } if memory_bytes == 256 << 20
        ));
        assert_eq!(p.dma.burst_bytes, 512);
        assert_eq!(
            (p.direction, p.bytes, p.offset),
            (BenchDirection::Write, 4096, 12)
        );
        let err = bench_params(&args(BusArg::Local, Some(64)), &cfg).unwrap_err();
        assert!(err.to_string().starts_with("--offset: "), "{err}");
        let local = DmaArgs {
            offset: 0,
            ..args(BusArg::Local, Some(64))
        };
        let p = bench_params(&local, &cfg).unwrap();
        assert!(matches!(
            p.target,
            BenchTarget::Device { read_latency, .. } if read_latency == Cycles(2)
        ));
        assert_eq!(p.dma.burst_bytes, 64);
    }

    #[test]
    fn a_burst_under_one_data_phase_is_refused() {
        let mut cfg = SystemConfig::from_preset(DEFAULT_PRESET).unwrap();
        cfg.apply_set("pci.local.width_bits=64").unwrap();
        let local = DmaArgs {
            offset: 0,
            ..args(BusArg::Local, Some(4))
        };
        let err = bench_params(&local, &cfg).unwrap_err();
        assert!(err.to_string().starts_with("--burst: 4 bytes"), "{err}");
        assert!(bench_params(&args(BusArg::System, Some(4)), &cfg).is_ok());
    }
}
