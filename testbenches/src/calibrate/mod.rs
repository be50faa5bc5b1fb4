//! `hvia calibrate`: fits every parameter marked `calibrated:` in the configuration (each
//! with its plausible range, `range [lo, hi]`) to the published figures, prints each
//! target's residual and the fitted values, and can write them into a config file.
//!
//! The objective is the sum over the targets of `(model - published) / scale` squared,
//! where `scale` is the target's tolerance in `hvia validate` (3 % of 12.5 us, 0.5 us,
//! ...): a target at the edge of its tolerance costs 1. The search is a documented
//! bounded coordinate descent: in order, each parameter is minimised alone over its range
//! (golden-section search for a real value, ternary search then a scan of the last few
//! points for an integer), the others held; the sweep over all parameters repeats until
//! it changes nothing or [`MAX_SWEEPS`] sweeps have run. Every evaluation is a set of
//! whole-model runs, so the fit is of mechanisms, not of formulas.
//!
//! Files: this one (the search and the command), `objective` (targets and their cheap
//! measurements), `out` (table, JSON, CSV, the written file).

mod objective;
mod out;

pub use objective::{evaluate, Evaluation, Target, TARGETS};

use crate::cli::Outcome;
use crate::config::calibrated::Calibrated;
use crate::config::SystemConfig;
use crate::report::Format;

/// Sweeps over all parameters at most.
pub const MAX_SWEEPS: usize = 3;

/// Evaluations of one real parameter's golden-section search.
const GOLDEN_STEPS: usize = 10;

/// One parameter being fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Dotted key.
    pub key: String,
    /// Lowest and highest plausible value.
    pub lo: f64,
    /// See `lo`.
    pub hi: f64,
    /// Whether the key takes whole numbers.
    pub integer: bool,
    /// The current value.
    pub value: f64,
}

impl Param {
    /// The parameters of `calibrated` with their types from `cfg`.
    #[must_use]
    pub fn of(calibrated: &[Calibrated], cfg: &SystemConfig) -> Vec<Param> {
        let flat = cfg.flatten().unwrap_or_default();
        calibrated
            .iter()
            .map(|c| Param {
                key: c.key.clone(),
                lo: c.lo,
                hi: c.hi,
                integer: flat
                    .iter()
                    .find(|(k, _)| *k == c.key)
                    .is_some_and(|(_, v)| !v.contains(['.', 'e', 'E'])),
                value: c.value,
            })
            .collect()
    }

    fn text(&self, v: f64) -> String {
        if self.integer {
            format!("{}", v.round())
        } else {
            format!("{v:.3}")
        }
    }
}

/// Why a calibration could not run.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// A value could not be set (a key the schema does not have, or of another type).
    #[error("{key}: {reason}")]
    Set {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A run failed at some point of the search.
    #[error("a run failed with {point}: {reason}")]
    Run {
        /// The parameter values.
        point: String,
        /// Why.
        reason: String,
    },
}

/// `cfg` with every parameter at `values`.
fn with(
    cfg: &SystemConfig,
    params: &[Param],
    values: &[f64],
) -> Result<SystemConfig, CalibrateError> {
    let mut c = cfg.clone();
    for (p, v) in params.iter().zip(values) {
        c.apply_set(&format!("{}={}", p.key, p.text(*v)))
            .map_err(|e| CalibrateError::Set {
                key: p.key.clone(),
                reason: e.to_string(),
            })?;
    }
    Ok(c)
}

/// The search state: the configuration, the parameters and a log of evaluations.
struct Search<'a> {
    cfg: &'a SystemConfig,
    params: &'a [Param],
    evaluations: usize,
}

impl Search<'_> {
    fn cost(&mut self, values: &[f64]) -> Result<f64, CalibrateError> {
        let c = with(self.cfg, self.params, values)?;
        self.evaluations += 1;
        let e = evaluate(&c).map_err(|reason| CalibrateError::Run {
            point: point_text(self.params, values),
            reason,
        })?;
        tracing::info!(target: "hvia", point = %point_text(self.params, values), cost = e.cost, "calibration point");
        Ok(e.cost)
    }

    /// Minimises over parameter `i` alone; returns its best value.
    fn line(&mut self, values: &mut [f64], i: usize) -> Result<f64, CalibrateError> {
        let p = &self.params[i];
        let (lo, hi) = (p.lo, p.hi);
        let at = |s: &mut Self, v: f64, values: &mut [f64]| {
            values[i] = v;
            s.cost(values)
        };
        if p.integer {
            let (mut a, mut b) = (lo.ceil() as i64, hi.floor() as i64);
            while b - a > 3 {
                let m1 = a + (b - a) / 3;
                let m2 = b - (b - a) / 3;
                let (f1, f2) = (at(self, m1 as f64, values)?, at(self, m2 as f64, values)?);
                if f1 <= f2 {
                    b = m2;
                } else {
                    a = m1;
                }
            }
            let mut best = (f64::INFINITY, a as f64);
            for v in a..=b {
                let f = at(self, v as f64, values)?;
                if f < best.0 {
                    best = (f, v as f64);
                }
            }
            values[i] = best.1;
            return Ok(best.1);
        }
        let g = (5f64.sqrt() - 1.0) / 2.0;
        let (mut a, mut b) = (lo, hi);
        let mut c = b - g * (b - a);
        let mut d = a + g * (b - a);
        let (mut fc, mut fd) = (at(self, c, values)?, at(self, d, values)?);
        for _ in 0..GOLDEN_STEPS {
            if fc <= fd {
                b = d;
                d = c;
                fd = fc;
                c = b - g * (b - a);
                fc = at(self, c, values)?;
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + g * (b - a);
                fd = at(self, d, values)?;
            }
        }
        let best = if fc <= fd { c } else { d };
        values[i] = best;
        Ok(best)
    }
}

fn point_text(params: &[Param], values: &[f64]) -> String {
    params
        .iter()
        .zip(values)
        .map(|(p, v)| format!("{}={}", p.key, p.text(*v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The result of a calibration.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The parameters at their fitted values.
    pub params: Vec<Param>,
    /// The targets at the fitted point.
    pub evaluation: Evaluation,
    /// Model evaluations the search used.
    pub evaluations: usize,
}

/// Where the search starts: the fitted parameters (indices `free`) clamped into their
/// ranges, the others at their values.
fn start_values(params: &[Param], free: &[usize]) -> Vec<f64> {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if free.contains(&i) {
                p.value.clamp(p.lo, p.hi)
            } else {
                p.value
            }
        })
        .collect()
}

/// Fits `params` (only those named in `only`, if any) on `cfg`. A fitted parameter
/// starts from its value clamped into its range; the others keep their values, even one
/// outside its range.
///
/// # Errors
/// A value that cannot be set, or a run that fails.
pub fn fit(cfg: &SystemConfig, params: &[Param], only: &[String]) -> Result<Fit, CalibrateError> {
    let free: Vec<usize> = (0..params.len())
        .filter(|&i| only.is_empty() || only.contains(&params[i].key))
        .collect();
    let mut values = start_values(params, &free);
    let mut search = Search {
        cfg,
        params,
        evaluations: 0,
    };
    for _ in 0..MAX_SWEEPS {
        let before = values.clone();
        for &i in &free {
            search.line(&mut values, i)?;
        }
        let same = before
            .iter()
            .zip(&values)
            .zip(params)
            .all(|((a, b), p)| p.text(*a) == p.text(*b));
        if same {
            break;
        }
    }
    let c = with(cfg, params, &values)?;
    let evaluation = evaluate(&c).map_err(|reason| CalibrateError::Run {
        point: point_text(params, &values),
        reason,
    })?;
    let fitted = params
        .iter()
        .zip(&values)
        .map(|(p, v)| Param {
            value: if p.integer {
                v.round()
            } else {
                (v * 1000.0).round() / 1000.0
            },
            ..p.clone()
        })
        .collect();
    Ok(Fit {
        params: fitted,
        evaluation,
        evaluations: search.evaluations + 1,
    })
}

/// Runs `hvia calibrate`: fits, prints, and writes `write` (a config file with the
/// fitted values) when asked. `text` is the configuration's own text (preset or file).
#[must_use]
pub fn run(
    cfg: &SystemConfig,
    calibrated: &[Calibrated],
    only: &[String],
    text: &str,
    write: Option<&std::path::Path>,
    format: Format,
) -> Outcome {
    let params = Param::of(calibrated, cfg);
    let failed = |msg: String| Outcome {
        stdout: String::new(),
        stderr: format!("hvia calibrate: {msg}\n"),
        status: 1,
    };
    let fit = match fit(cfg, &params, only) {
        Ok(f) => f,
        Err(e) => return failed(e.to_string()),
    };
    if let Some(path) = write {
        let body = out::rewrite(text, &fit.params);
        if let Err(e) = std::fs::write(path, body) {
            return failed(format!("cannot write {}: {e}", path.display()));
        }
    }
    let stdout = match format {
        Format::Table => out::table(&fit),
        Format::Json => out::json(&fit),
        Format::Csv => out::csv_doc(&fit),
    };
    Outcome {
        stdout,
        stderr: String::new(),
        status: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(key: &str, value: f64) -> Param {
        Param {
            key: key.into(),
            lo: 1.0,
            hi: 20.0,
            integer: true,
            value,
        }
    }

    #[test]
    fn held_parameters_keep_values_outside_their_range() {
        let params = [p("a", 76.0), p("b", 30.0), p("c", 5.0)];
        assert_eq!(start_values(&params, &[1, 2]), vec![76.0, 20.0, 5.0]);
        assert_eq!(start_values(&params, &[0, 1, 2]), vec![20.0, 20.0, 5.0]);
    }
}
