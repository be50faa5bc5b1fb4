//! The calibrated parameters of a configuration: every value whose comment says
//! `calibrated: fitted to ...` must also give its plausible range as `range [lo, hi]`
//! (the mechanism it stands for bounds it). `hvia validate` checks each value is inside
//! its range; `hvia calibrate` searches inside it.

use super::{presets, ConfigSource, SystemConfig};

/// One calibrated parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibrated {
    /// Dotted key, e.g. `pci.bridge.memory_read_latency_ns`.
    pub key: String,
    /// Its value in the effective configuration.
    pub value: f64,
    /// Lowest plausible value.
    pub lo: f64,
    /// Highest plausible value.
    pub hi: f64,
    /// What it was fitted to (the comment after `fitted to`).
    pub target: String,
    /// The preset or file that calibrates it.
    pub file: String,
}

/// Why a `calibrated:` line is not usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct CalibratedError {
    /// The preset or file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// The calibrated lines of one TOML text: (dotted key, lo, hi, target, line).
///
/// # Errors
/// A `calibrated:` line without `fitted to` or without a well-formed `range [lo, hi]`
/// (`lo <= hi`).
pub fn parse(text: &str, file: &str) -> Result<Vec<(String, f64, f64, String)>, CalibratedError> {
    let mut table = String::new();
    let mut out = Vec::new();
    // The comment block directly above the current line (a value's source may be there).
    let mut above = String::new();
    for (i, line) in text.lines().enumerate() {
        let err = |reason: &str| CalibratedError {
            file: file.to_owned(),
            line: i + 1,
            reason: reason.to_owned(),
        };
        let (code, own) = line.split_once('#').unwrap_or((line, ""));
        let code = code.trim();
        if code.is_empty() && line.trim_start().starts_with('#') {
            above.push_str(own);
            above.push(' ');
            continue;
        }
        let block = std::mem::take(&mut above);
        if let Some(t) = code.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
            t.trim().clone_into(&mut table);
            continue;
        }
        let comment = if own.contains("calibrated:") {
            own.to_owned()
        } else if code.contains('=') && block.contains("calibrated:") {
            block
        } else {
            continue;
        };
        let Some((key, _)) = code.split_once('=') else {
            continue;
        };
        let key = if table.is_empty() {
            key.trim().to_owned()
        } else {
            format!("{table}.{}", key.trim())
        };
        let comment = comment.as_str();
        let target = comment
            .split_once("fitted to")
            .map(|(_, t)| t.split(';').next().unwrap_or("").trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| err("a calibrated value must say which target it was fitted to"))?;
        let range = comment
            .split_once("range [")
            .and_then(|(_, r)| r.split_once(']'))
            .map(|(r, _)| r)
            .ok_or_else(|| {
                err("a calibrated value must give its plausible range as `range [lo, hi]`")
            })?;
        let (lo, hi) = range
            .split_once(',')
            .and_then(|(a, b)| Some((a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?)))
            .filter(|(lo, hi)| lo <= hi)
            .ok_or_else(|| err("`range [lo, hi]` needs two numbers with lo <= hi"))?;
        out.push((key, lo, hi, target));
    }
    Ok(out)
}

/// The texts a source is made of, base first: an embedded preset and the presets it
/// extends (files extending presets are read for their own lines only).
fn texts(source: &ConfigSource) -> Vec<(String, String)> {
    let mut chain = Vec::new();
    let mut next = match source {
        ConfigSource::Preset(name) => Some(name.clone()),
        ConfigSource::File(path) => {
            if let Ok(text) = std::fs::read_to_string(path) {
                let base = super::extends_of(&text);
                chain.push((path.display().to_string(), text));
                base
            } else {
                None
            }
        }
    };
    while let Some(name) = next.take() {
        let Ok(p) = presets::find(&name) else { break };
        if chain.iter().any(|(f, _)| f == p.file) {
            break;
        }
        chain.push((p.file.to_owned(), p.text.to_owned()));
        next = super::extends_of(p.text);
    }
    chain.reverse();
    chain
}

/// Every calibrated parameter of `source`, with its value in `cfg` (a later text's line
/// replaces an earlier one for the same key).
///
/// # Errors
/// A malformed `calibrated:` line.
pub fn of(source: &ConfigSource, cfg: &SystemConfig) -> Result<Vec<Calibrated>, CalibratedError> {
    let values = cfg.flatten().unwrap_or_default();
    let mut out: Vec<Calibrated> = Vec::new();
    for (file, text) in texts(source) {
        for (key, lo, hi, target) in parse(&text, &file)? {
            let value = values
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            out.retain(|c| c.key != key);
            out.push(Calibrated {
                key,
                value,
                lo,
                hi,
                target,
                file: file.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_block_above_the_value_counts() {
        let text = "[a]\n# calibrated: fitted to the peak;\n# range [0, 24]: why\nx = 10\ny = 1 # paper: p\n";
        let got = parse(text, "t").unwrap();
        assert_eq!(got, vec![("a.x".into(), 0.0, 24.0, "the peak".into())]);
    }

    #[test]
    fn lines_give_key_range_and_target() {
        let text = "[a.b]\nx = 3 # calibrated: fitted to the 4-byte latency; range [1, 5]: why\ny = 1 # paper: p\n";
        let got = parse(text, "t").unwrap();
        assert_eq!(
            got,
            vec![("a.b.x".into(), 1.0, 5.0, "the 4-byte latency".into())]
        );
        for bad in [
            "x = 3 # calibrated: fitted to t\n",
            "x = 3 # calibrated: range [1, 2]\n",
            "x = 3 # calibrated: fitted to t; range [5, 1]\n",
            "x = 3 # calibrated: fitted to t; range [a, 1]\n",
        ] {
            assert!(parse(bad, "t").is_err(), "{bad}");
        }
    }

    #[test]
    fn every_preset_calibration_is_well_formed() {
        for p in crate::config::PRESETS {
            let cfg = SystemConfig::from_preset(p.name).unwrap();
            let cal = of(&ConfigSource::Preset(p.name.into()), &cfg).unwrap();
            assert!(!cal.is_empty(), "{}", p.name);
            assert!(
                cal.iter().all(|c| c.value.is_finite()),
                "{}: {cal:?}",
                p.name
            );
        }
    }

    #[test]
    fn every_preset_calibration_is_in_range() {
        for p in crate::config::PRESETS {
            let cfg = SystemConfig::from_preset(p.name).unwrap();
            let cal = of(&ConfigSource::Preset(p.name.into()), &cfg).unwrap();
            for c in &cal {
                assert!(
                    (c.lo..=c.hi).contains(&c.value),
                    "{}: {} = {} outside [{}, {}]",
                    p.name,
                    c.key,
                    c.value,
                    c.lo,
                    c.hi
                );
            }
        }
    }
}
