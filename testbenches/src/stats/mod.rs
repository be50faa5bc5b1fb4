//! `--stats FILE` and `hvia stats --list`: every counter the components keep, named by
//! node and component (`n0.pci.system.retries`, `n1.card.engine.doorbells`,
//! `n0.pci.system.card_dma.wait_for_grant_cycles` for one master of a bus), each with
//! its unit and a one-line description, in the spirit of gem5's `stats.txt`.
//!
//! Files: this one (the counter list of a system or a DMA run, the catalogue, the file
//! writer), `collect` (one table per statistics struct), `tests` (the tables cover every
//! field of their structs). The file is JSON (`{ "counters": [ { "name", "value",
//! "unit", "description" } ] }`) or CSV (`name,value,unit,description`), chosen by the
//! extension (`.json`, `.csv`); `pingpong` adds `runs`, one counter list per size (CSV:
//! a leading `size_bytes` column), and its `counters` are the first size's.

mod collect;
#[cfg(test)]
mod tests;

use serde::Serialize;
use std::path::Path;

use crate::config::SystemConfig;
use crate::report::csv;
use crate::system::{Comp, System};

/// One counter: its value, unit and meaning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counter {
    /// Dotted name, node first: `n0.pci.system.retries`.
    pub name: String,
    /// The value, a number of `unit`s.
    pub value: u64,
    /// The unit: `count`, `bytes`, `frames`, `PCI clocks`, `ps`, ...
    pub unit: &'static str,
    /// What it counts, one line.
    pub description: &'static str,
}

impl Counter {
    fn new(name: String, value: u64, unit: &'static str, description: &'static str) -> Self {
        Self {
            name,
            value,
            unit,
            description,
        }
    }
}

/// Every counter of every component of `sys`, in node order, then the kernel's.
#[must_use]
pub fn of_system(sys: &System) -> Vec<Counter> {
    let mut out = Vec::new();
    for (_, comp) in sys.world.iter() {
        match comp {
            Comp::Cpu(n, c) => collect::cpu(&mut out, &format!("n{n}.host.cpu"), c.stats()),
            Comp::SystemBus(n, b) => {
                let p = format!("n{n}.pci.system");
                collect::bus(&mut out, &p, b.stats());
                if let Some(br) = b.bridge() {
                    collect::bridge(&mut out, &format!("{p}.bridge"), br.stats());
                }
            }
            Comp::Dma(n, _) | Comp::FoldedDma(n) => {
                if let Some(d) = sys.dma(*n) {
                    collect::dma(&mut out, &format!("n{n}.card.dma"), d.stats());
                }
            }
            Comp::Engine(n, e) => {
                let p = format!("n{n}.card.engine");
                collect::engine(&mut out, &p, &e.stats());
                // The card's target Retries doorbell writes while the FIFO holds
                // back-pressure on; the bus does it on the card's behalf and counts them
                // (the doorbell windows are the only write-retry window on the system bus).
                let retried = sys
                    .system_bus(*n)
                    .map_or(0, |b| b.stats().write_retry_refusals);
                out.push(Counter::new(
                    format!("{p}.doorbell_writes_retried"),
                    retried,
                    "count",
                    "doorbell writes Retried because the doorbell FIFO was full (back-pressure on; the system bus's write_retry_refusals)",
                ));
            }
            Comp::Att(n, a) => collect::att(&mut out, &format!("n{n}.card.att"), &a.stats()),
            Comp::Gec(n) => {
                // With the reads the local bus answered from the buffer RAM for it.
                if let Some(s) = sys.gec_stats(*n) {
                    collect::gec(&mut out, &format!("n{n}.card.gec"), &s);
                }
            }
            Comp::LocalBus(n, b) => collect::bus(&mut out, &format!("n{n}.pci.local"), b.stats()),
            Comp::MacBus(n, _) | Comp::FoldedMacBus(n) => {
                if let Some(m) = sys.mac_bus(*n) {
                    collect::mac_bus(&mut out, &format!("n{n}.mac.bus"), m.stats());
                }
            }
            Comp::MacSide(n, m) => {
                collect::mac_side(&mut out, &format!("n{n}.mac.side"), m.stats());
                collect::gmii_tx(&mut out, &format!("n{n}.mac.gmii.tx"), m.tx().stats());
                collect::gmii_rx(&mut out, &format!("n{n}.mac.gmii.rx"), m.rx().stats());
                collect::wire_faults(&mut out, &format!("n{n}.wire.faults"), &sys.wire_faults(*n));
            }
            // The host-memory ATT's table port keeps no counters of its own (its DMA
            // shows in the card's DMA master and the system bus).
            Comp::AttPort(..) => {}
            Comp::Switch(s) => {
                for p in 0..s.port_count() {
                    let port = gige_mac::PortIndex(u16::try_from(p).unwrap_or(u16::MAX));
                    if let Some(st) = s.port_stats(port) {
                        collect::switch_port(&mut out, &format!("switch.port{p}"), st);
                    }
                    if let Some(tx) = s.tx(port) {
                        collect::gmii_tx(&mut out, &format!("switch.port{p}.gmii.tx"), tx.stats());
                    }
                }
            }
        }
    }
    collect::kernel(&mut out, "sim", &sys.kernel.stats());
    out
}

/// Every counter of a DMA measurement (`hvia dma`): the bus (`pci.system` or
/// `pci.local`, with its masters), the host bridge on the system bus, the kernel.
#[must_use]
pub fn of_dma(bus: &str, report: &pci_model::DmaBenchReport, simulated_ps: u64) -> Vec<Counter> {
    let mut out = Vec::new();
    collect::bus(&mut out, bus, &report.stats);
    if let Some(b) = &report.bridge {
        collect::bridge(&mut out, &format!("{bus}.bridge"), b);
    }
    let k = sim_kernel::RunStats {
        events: report.events,
        simulated: sim_kernel::Time(simulated_ps),
        wall: std::time::Duration::ZERO,
    };
    collect::kernel(&mut out, "sim", &k);
    out
}

/// The catalogue: every counter a ping-pong or breakdown run reports (on the system
/// `cfg` describes), with zero values.
///
/// # Errors
/// The system cannot be built from `cfg`.
pub fn catalogue(cfg: &SystemConfig) -> Result<Vec<Counter>, crate::system::BuildError> {
    let sys = System::build(cfg, false)?;
    let mut all = of_system(&sys);
    for c in &mut all {
        c.value = 0;
    }
    Ok(all)
}

/// How `--stats` writes: from the file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsFormat {
    /// `.json`
    Json,
    /// `.csv`
    Csv,
}

impl StatsFormat {
    /// The format of `path`, or a message for `--stats`.
    ///
    /// # Errors
    /// The extension is neither `.json` nor `.csv`.
    pub fn of(path: &Path) -> Result<Self, String> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("json") => Ok(Self::Json),
            Some("csv") => Ok(Self::Csv),
            _ => Err(format!(
                "{}: the file name must end in .json or .csv (the format to write)",
                path.display()
            )),
        }
    }
}

/// The text of a stats file: `counters`, and for a sweep one list per size.
///
/// # Errors
/// JSON serialisation failed.
pub fn render(
    format: StatsFormat,
    counters: &[Counter],
    runs: Option<&[(u32, Vec<Counter>)]>,
) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Run<'a> {
        size_bytes: u32,
        counters: &'a [Counter],
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        counters: &'a [Counter],
        #[serde(skip_serializing_if = "Option::is_none")]
        runs: Option<Vec<Run<'a>>>,
    }
    let row = |c: &Counter| {
        vec![
            c.name.clone(),
            c.value.to_string(),
            c.unit.to_owned(),
            c.description.to_owned(),
        ]
    };
    match (format, runs) {
        (StatsFormat::Json, runs) => {
            let doc = Doc {
                counters,
                runs: runs.map(|r| {
                    r.iter()
                        .map(|(size, c)| Run {
                            size_bytes: *size,
                            counters: c,
                        })
                        .collect()
                }),
            };
            serde_json::to_string_pretty(&doc).map(|s| s + "\n")
        }
        (StatsFormat::Csv, None) => Ok(csv(
            &["name", "value", "unit", "description"],
            &counters.iter().map(row).collect::<Vec<_>>(),
        )),
        (StatsFormat::Csv, Some(runs)) => {
            let rows: Vec<Vec<String>> = runs
                .iter()
                .flat_map(|(size, cs)| {
                    cs.iter().map(move |c| {
                        let mut r = vec![size.to_string()];
                        r.extend(row(c));
                        r
                    })
                })
                .collect();
            Ok(csv(
                &["size_bytes", "name", "value", "unit", "description"],
                &rows,
            ))
        }
    }
}

/// Checks before a run that `path` can take the `--stats` file: a `.json` or `.csv`
/// name, not a directory, in a directory that exists (nothing is left behind).
///
/// # Errors
/// What is wrong, for an error naming `--stats`.
pub fn check_path(path: &Path) -> Result<StatsFormat, String> {
    let format = StatsFormat::of(path)?;
    let cannot = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    if path.is_dir() {
        return Err(cannot(&"is a directory"));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| cannot(&e))?;
    } else {
        std::fs::File::create(path).map_err(|e| cannot(&e))?;
        std::fs::remove_file(path).map_err(|e| cannot(&e))?;
    }
    Ok(format)
}

/// Writes the stats file (format by the extension).
///
/// # Errors
/// A message naming the file: a bad extension, or it could not be written.
pub fn write_file(
    path: &Path,
    counters: &[Counter],
    runs: Option<&[(u32, Vec<Counter>)]>,
) -> Result<(), String> {
    let format = StatsFormat::of(path)?;
    let cannot = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let text = render(format, counters, runs).map_err(|e| cannot(&e))?;
    std::fs::write(path, text).map_err(|e| cannot(&e))
}
