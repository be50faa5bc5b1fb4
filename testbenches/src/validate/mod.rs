//! `hvia validate`: every published figure of the HVIA-GE paper against the model, one
//! row per figure (figure, where published, published value, model value, error,
//! tolerance, verdict). Exit 0 when every row holds, 1 when one does not.
//!
//! Files: this one (the rows and the command), `measure` (the experiments), `out`
//! (table, JSON, CSV).

mod measure;
mod out;

pub use measure::{
    measure, recv_wait_processing, sweep_sizes, MeasureError, Measurements, RecvSide, FIGURE_SIZES,
};

use crate::cli::Outcome;
use crate::config::{calibrated, SystemConfig};
use crate::report::Format;
use crate::system::breakdown::Breakdown;

/// How a row's model value is compared with the published one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Within this fraction of the published value (0.03 = 3 %).
    Relative(f64),
    /// Within this absolute difference, in the row's unit.
    Absolute(f64),
    /// At most the published value plus this much.
    AtMost(f64),
    /// The model value must be true (1): a qualitative claim.
    Holds,
}

impl Tolerance {
    /// As printed, e.g. `+-3 %`.
    #[must_use]
    pub fn text(self, unit: &str) -> String {
        match self {
            Tolerance::Relative(f) => format!("+-{} %", f * 100.0),
            Tolerance::Absolute(a) => format!("+-{a} {unit}"),
            Tolerance::AtMost(a) => format!("<= published + {a} {unit}"),
            Tolerance::Holds => "must hold".into(),
        }
    }
}

/// One published figure against the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What is compared.
    pub figure: String,
    /// Where it is published.
    pub source: String,
    /// The published value (for a qualitative claim: 1).
    pub published: f64,
    /// The model's value.
    pub model: f64,
    /// Unit of both.
    pub unit: String,
    /// How close the model must be.
    pub tolerance: Tolerance,
}

impl Row {
    /// Model minus published (relative rows: as a fraction of the published value).
    #[must_use]
    pub fn error(&self) -> f64 {
        match self.tolerance {
            Tolerance::Relative(_) if self.published != 0.0 => {
                (self.model - self.published) / self.published
            }
            _ => self.model - self.published,
        }
    }

    /// Whether the model is within the tolerance.
    #[must_use]
    pub fn holds(&self) -> bool {
        let e = self.error();
        match self.tolerance {
            Tolerance::Relative(f) => e.abs() <= f,
            Tolerance::Absolute(a) => e.abs() <= a,
            Tolerance::AtMost(a) => e <= a,
            Tolerance::Holds => self.model >= 1.0,
        }
    }
}

const PAPER: &str = "HVIA-GE paper, sec. 5";

fn row(figure: String, published: f64, model: f64, unit: &str, tolerance: Tolerance) -> Row {
    Row {
        figure,
        source: PAPER.into(),
        published,
        model,
        unit: unit.into(),
        tolerance,
    }
}

/// The stages of a breakdown that may be long: bus and wire transfers, and CPU calls
/// whose cost the paper publishes (`VipPostRecv`).
fn exempt(stage: &crate::system::breakdown::Stage) -> bool {
    matches!(stage.domain.as_str(), "pci.system" | "pci.local" | "gmii")
        || stage.name == "VipPostRecv"
}

/// The longest stage of `bd` that is not `exempt` \[ns\], and its name. A stage that
/// other stages interrupt (the card's doorbell step while the host reads a register
/// over the same bus) counts whole: the durations of all pieces of one stage name of one
/// component are added up.
#[must_use]
pub fn longest_unexplained(bd: &Breakdown) -> (f64, String) {
    let mut total: std::collections::BTreeMap<(&str, &str), f64> = Default::default();
    for s in bd.stages.iter().filter(|s| !exempt(s)) {
        *total.entry((&s.component, &s.name)).or_default() += (s.end - s.start).as_ns_f64();
    }
    total
        .into_iter()
        .map(|((_, name), ns)| (ns, name.to_owned()))
        .fold((0.0, String::new()), |a, b| if b.0 > a.0 { b } else { a })
}

/// Every row, from the measurements and the calibrated values of `cfg`'s preset text.
#[must_use]
#[allow(clippy::too_many_lines)]
pub fn rows(m: &Measurements, calibrated: &[calibrated::Calibrated]) -> Vec<Row> {
    let mut rows = Vec::new();
    let rdma4 = Measurements::at(&m.rdma, 4).map_or(f64::NAN, |r| r.one_way_ns);
    rows.push(row(
        "RDMA write, 4 B, one-way latency".into(),
        12.5,
        rdma4 / 1e3,
        "us",
        Tolerance::Relative(0.03),
    ));
    let peak = |s: &crate::pingpong_cli::Sweep| {
        s.results
            .iter()
            .map(|r| r.bandwidth_mb_s)
            .fold(0.0, f64::max)
    };
    rows.push(row(
        "RDMA write, peak bandwidth (4 B .. 1 MiB)".into(),
        95.5,
        peak(&m.rdma),
        "MB/s",
        Tolerance::Relative(0.03),
    ));
    for size in FIGURE_SIZES {
        let gap = match (
            Measurements::at(&m.sendrecv, size),
            Measurements::at(&m.rdma, size),
        ) {
            (Some(s), Some(r)) => (s.one_way_ns - r.one_way_ns) / 1e3,
            _ => f64::NAN,
        };
        let tol = if size == 4 { 0.5 } else { 0.9 };
        rows.push(row(
            format!("send/recv minus RDMA write, one-way, {size} B"),
            2.9,
            gap,
            "us",
            Tolerance::Absolute(tol),
        ));
    }
    let deficits: Vec<(u32, f64)> = m
        .rdma
        .results
        .iter()
        .filter_map(|r| {
            Measurements::at(&m.sendrecv, r.size)
                .map(|s| (r.size, r.bandwidth_mb_s - s.bandwidth_mb_s))
        })
        .collect();
    let worst = deficits.iter().map(|d| d.1).fold(f64::NAN, f64::max);
    rows.push(row(
        "send/recv bandwidth below RDMA write, largest (4 B .. 1 MiB)".into(),
        1.4,
        worst,
        "MB/s",
        Tolerance::Absolute(0.4),
    ));
    let large = deficits.last().map_or(f64::NAN, |d| d.1);
    rows.push(row(
        "send/recv bandwidth below RDMA write, 1 MiB".into(),
        0.1,
        large,
        "MB/s",
        Tolerance::Absolute(0.1),
    ));
    #[allow(clippy::cast_precision_loss)]
    let mean_post = m.recv.iter().map(|r| r.post_recv_ns).sum::<f64>() / m.recv.len().max(1) as f64;
    rows.push(row(
        "VipPostRecv CPU time at the receiver, mean over 4 B .. 16 KiB".into(),
        6.0,
        mean_post / 1e3,
        "us",
        Tolerance::Relative(0.15),
    ));
    let spread = m
        .recv
        .iter()
        .map(|r| ((r.post_recv_ns - mean_post) / mean_post).abs())
        .fold(0.0, f64::max);
    rows.push(row(
        "VipPostRecv CPU time, largest deviation from its mean (regardless of size)".into(),
        0.0,
        spread * 100.0,
        "%",
        Tolerance::AtMost(10.0),
    ));
    let grows = m
        .recv
        .windows(2)
        .all(|w| w[1].recv_wait_ns > w[0].recv_wait_ns);
    rows.push(row(
        "VipRecvWait processing time grows with size (4 B .. 16 KiB)".into(),
        1.0,
        if grows { 1.0 } else { 0.0 },
        "",
        Tolerance::Holds,
    ));
    rows.push(row(
        "PCI DMA with 512-byte bursts, system bus, best of read and write".into(),
        120.0,
        m.dma_system_mb_s,
        "MB/s",
        Tolerance::Relative(0.04),
    ));
    rows.push(row(
        "PCI DMA with 512-byte bursts, local bus, best of read and write".into(),
        117.0,
        m.dma_local_mb_s,
        "MB/s",
        Tolerance::Relative(0.04),
    ));
    let (longest, name) = longest_unexplained(&m.breakdown);
    rows.push(Row {
        figure: format!(
            "4-byte RDMA write: longest stage that is not a bus or wire transfer or a published CPU call ({name})"
        ),
        source: "issue 11: no fitted lump".into(),
        published: 1.5,
        model: longest / 1e3,
        unit: "us".into(),
        tolerance: Tolerance::AtMost(0.0),
    });
    for c in calibrated {
        rows.push(Row {
            figure: format!(
                "calibrated {} inside its plausible range [{}, {}]",
                c.key, c.lo, c.hi
            ),
            source: c.file.clone(),
            published: 1.0,
            model: if (c.lo..=c.hi).contains(&c.value) {
                1.0
            } else {
                0.0
            },
            unit: String::new(),
            tolerance: Tolerance::Holds,
        });
    }
    rows
}

/// The per-size values behind the rows that summarise several sizes.
#[must_use]
pub fn notes(m: &Measurements) -> Vec<String> {
    let per = |f: &dyn Fn(&RecvSide) -> f64| {
        m.recv
            .iter()
            .map(|r| format!("{} B {:.2}", r.size, f(r) / 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        format!(
            "VipPostRecv CPU time (us): {}",
            per(&|r: &RecvSide| r.post_recv_ns)
        ),
        format!(
            "VipRecvWait processing time (us), from the receiving node's first stage to the return: {}",
            per(&|r: &RecvSide| r.recv_wait_ns)
        ),
    ]
}

/// Runs `hvia validate` and returns what to print: exit 0 when every row holds, 1 when
/// one does not or an experiment failed.
#[must_use]
pub fn run(
    cfg: &SystemConfig,
    calibrated: &[calibrated::Calibrated],
    preset: &str,
    format: Format,
) -> Outcome {
    let m = match measure(cfg) {
        Ok(m) => m,
        Err(e) => {
            return Outcome {
                stdout: String::new(),
                stderr: format!("hvia validate: {e}\n"),
                status: 1,
            }
        }
    };
    let rows = rows(&m, calibrated);
    let holds = rows.iter().all(Row::holds);
    let stdout = match format {
        Format::Table => out::table(&rows, preset, &notes(&m)),
        Format::Csv => out::csv_doc(&rows),
        Format::Json => out::json(&rows, preset),
    };
    Outcome {
        stdout,
        stderr: String::new(),
        status: u8::from(!holds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(published: f64, model: f64, tolerance: Tolerance) -> Row {
        row("f".into(), published, model, "us", tolerance)
    }

    #[test]
    fn each_tolerance_judges_the_error() {
        assert!(r(12.5, 12.8, Tolerance::Relative(0.03)).holds());
        assert!(!r(12.5, 12.9, Tolerance::Relative(0.03)).holds());
        assert!((r(10.0, 11.0, Tolerance::Relative(0.2)).error() - 0.1).abs() < 1e-12);
        assert!(r(2.9, 3.3, Tolerance::Absolute(0.5)).holds());
        assert!(!r(2.9, 2.3, Tolerance::Absolute(0.5)).holds());
        assert!(r(1.5, 1.5, Tolerance::AtMost(0.0)).holds());
        assert!(!r(1.5, 1.6, Tolerance::AtMost(0.0)).holds());
        assert!(r(0.0, -5.0, Tolerance::AtMost(0.0)).holds());
        assert!(r(1.0, 1.0, Tolerance::Holds).holds());
        assert!(!r(1.0, 0.0, Tolerance::Holds).holds());
        assert!(
            !r(12.5, f64::NAN, Tolerance::Relative(0.03)).holds(),
            "no value never holds"
        );
    }

    #[test]
    fn outputs_carry_every_row_and_the_verdict() {
        let rows = vec![
            r(12.5, 12.6, Tolerance::Relative(0.03)),
            r(2.9, 5.0, Tolerance::Absolute(0.5)),
        ];
        let j: serde_json::Value = serde_json::from_str(&out::json(&rows, "p")).unwrap();
        assert_eq!(j["preset"], "p");
        assert_eq!(j["holds"], false);
        let keys = [
            "figure",
            "source",
            "published",
            "model",
            "unit",
            "error",
            "tolerance",
            "holds",
        ];
        for k in keys {
            assert!(j["rows"][0].get(k).is_some(), "{k}");
        }
        assert_eq!(j["rows"][1]["holds"], false);
        let t = out::table(&rows, "p", &["a note".into()]);
        assert!(t.contains("FAILS") && t.contains("1 of 2 rows fail") && t.contains("a note"));
        assert_eq!(out::csv_doc(&rows).lines().count(), 3);
    }
}
