//! The `run` object every report's JSON carries: which tool, version and commit made
//! it, from which configuration (preset or file, the seed, a digest of the whole
//! effective configuration) and when (wall-clock start, UTC). Two reports with the same
//! digest and commit were computed from the same inputs by the same code.

use serde::Serialize;
use std::time::SystemTime;

use crate::config::SystemConfig;
use crate::pingpong_cli::Provenance;

/// The commit the binary was built from (`build.rs`; `unknown` without git).
pub const COMMIT: &str = env!("HVIA_GIT_COMMIT");

/// `hvia --version`: the package version and the commit.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("HVIA_GIT_COMMIT"),
    ")"
);

/// Run metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunInfo {
    /// Always `hvia`.
    pub tool: &'static str,
    /// The package version.
    pub version: &'static str,
    /// The commit (12 hex digits, or `unknown`).
    pub commit: &'static str,
    /// The preset (none for `--config FILE`).
    pub preset: Option<String>,
    /// The config file, for `--config FILE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_file: Option<String>,
    /// `sim.seed` of the effective configuration.
    pub seed: u64,
    /// FNV-1a 64 of the effective configuration's JSON, `fnv1a64:` and 16 hex digits.
    pub config_digest: String,
    /// When the command started, UTC, RFC 3339 (`2026-01-31T12:00:00Z`).
    pub started_at: String,
}

impl RunInfo {
    /// The metadata of a run of `cfg` started at `started`.
    #[must_use]
    pub fn new(cfg: &SystemConfig, prov: &Provenance, started: SystemTime) -> Self {
        Self {
            tool: "hvia",
            version: env!("CARGO_PKG_VERSION"),
            commit: COMMIT,
            preset: prov.preset.clone(),
            config_file: prov.config_file.clone(),
            seed: cfg.sim.seed,
            config_digest: digest(cfg),
            started_at: rfc3339(started),
        }
    }

    /// `json` (a pretty-printed object, as every report prints) with this object added
    /// as its last key, `run`. Text that is not an object is returned unchanged.
    #[must_use]
    pub fn insert_into(&self, json: &str) -> String {
        let body = json.trim_end();
        let Some(inner) = body.strip_suffix('}') else {
            return json.to_owned();
        };
        let Ok(run) = serde_json::to_string_pretty(self) else {
            return json.to_owned();
        };
        let run = run.replace('\n', "\n  ");
        let inner = inner.trim_end();
        let sep = if inner.ends_with('{') { "" } else { "," };
        format!("{inner}{sep}\n  \"run\": {run}\n}}\n")
    }
}

/// The digest of the effective configuration.
#[must_use]
pub fn digest(cfg: &SystemConfig) -> String {
    let text = serde_json::to_string(cfg).unwrap_or_default();
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    format!("fnv1a64:{h:016x}")
}

/// `t` as RFC 3339 UTC, to the second.
#[must_use]
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month, day of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates() {
        let at = |s| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn run_goes_last_in_the_object() {
        let cfg = SystemConfig::from_preset(crate::config::DEFAULT_PRESET).expect("preset");
        let info = RunInfo::new(&cfg, &Provenance::default(), SystemTime::UNIX_EPOCH);
        let text = info.insert_into("{\n  \"a\": 1\n}\n");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(v["a"], 1);
        assert_eq!(v["run"]["tool"], "hvia");
        assert_eq!(v["run"]["seed"], cfg.sim.seed);
        assert!(text.ends_with("}\n}\n"), "{text}");
        assert_eq!(info.insert_into("[1]"), "[1]");
        let empty: serde_json::Value = serde_json::from_str(&info.insert_into("{}")).expect("JSON");
        assert!(empty["run"].is_object());
        let mut other = cfg.clone();
        other.sim.seed += 1;
        assert_ne!(digest(&cfg), digest(&other));
    }
}
