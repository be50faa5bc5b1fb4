//! The configuration of a simulated system: the serde schema ([`SystemConfig`]), the
//! embedded presets, `--config FILE`, `--set KEY=VALUE` overrides, validation, and the
//! TOML shown by `hvia config --show`.
//!
//! Order of application: a preset or a file, then every `--set` in order (each one
//! type-checked as it is applied), then range validation ([`SystemConfig::load`]).
//! Every error names its key path and, for text, its `origin:line:column`.
//!
//! The PCI timing tables map onto `pci-model`'s parameter structs in one place:
//! [`SystemConfig::pci_bus_params`], [`SystemConfig::host_bridge_params`],
//! [`SystemConfig::dma_params`], [`SystemConfig::card_target_profile`] and
//! [`SystemConfig::local_target`].

pub mod calibrated;
mod error;
mod faults;
pub mod feasible;
mod host;
mod libraries;
mod pci;
mod presets;
mod schema;
mod schema_pci;
mod set;
mod show;
mod source;
mod validate;
mod validate_pci;

pub use error::ConfigError;
pub use pci::PciBusKind;
pub use presets::{find as find_preset, Preset, DEFAULT_PRESET, PRESETS};
pub use schema::{
    AttLocation, BspSection, CardConfig, FaultDirection, FaultsConfig, HostConfig, HostCostsConfig,
    MacConfig, MpiRegistration, MpiSection, PciBusConfig, PciConfig, SimConfig, SimStepping,
    SwitchKind, SystemConfig, TopologyConfig, ViaConfig, ViaReliability, ViplConfig, WireConfig,
};
pub use schema_pci::{
    BridgeConfig, CardTargetConfig, Devsel, DmaMasterConfig, LocalTargetConfig, MacDmaConfig, Park,
    ReadMode, TargetConfig,
};
pub use source::{key_path_at, line_col, span_of_key, LineCol};
pub use validate::Problem;

use serde::Deserialize;
use sim_kernel::clock::{period_ps_from_mhz, ClockDomain, ClockError};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Where the base configuration comes from, before any `--set`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// An embedded preset, by name.
    Preset(String),
    /// A TOML file.
    File(PathBuf),
}

impl Default for ConfigSource {
    fn default() -> Self {
        ConfigSource::Preset(DEFAULT_PRESET.to_owned())
    }
}

/// One clock of the system: the key that sets it, the domain it becomes, its frequency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockSpec {
    /// Dotted config key, e.g. `pci.system.clock_mhz`.
    pub key: &'static str,
    /// Name of the clock domain it becomes, e.g. `pci.system`.
    pub domain: &'static str,
    /// Frequency \[MHz\].
    pub mhz: f64,
    /// Highest accepted frequency \[MHz\].
    pub max_mhz: f64,
    /// Why that is the limit.
    pub limit: &'static str,
}

impl ClockSpec {
    /// The period this clock becomes \[ps\], rounded once to a whole picosecond.
    ///
    /// # Errors
    /// A frequency that is not finite and positive.
    pub fn period_ps(&self) -> Result<u64, ClockError> {
        period_ps_from_mhz(self.mhz)
    }

    /// The clock domain (phase 0) this clock becomes.
    ///
    /// # Errors
    /// A frequency that is not finite and positive.
    pub fn clock_domain(&self) -> Result<ClockDomain, ClockError> {
        ClockDomain::from_mhz(self.domain, self.mhz)
    }
}

impl SystemConfig {
    /// Every clock of one node, in schema order.
    #[must_use]
    pub fn clocks(&self) -> [ClockSpec; 6] {
        const CPU: &str = "a sane bound for a host CPU";
        const PCI: &str =
            "PCI 2.2 ch. 7: 66 MHz is the fastest conventional PCI clock; PCI-X is not modelled";
        const CARD: &str = "a sane bound for FPGA and SDRAM clocks";
        const WIRE: &str = "a sane bound; GMII is 125 MHz";
        let c = |key, domain, mhz, max_mhz, limit| ClockSpec {
            key,
            domain,
            mhz,
            max_mhz,
            limit,
        };
        [
            c(
                "host.cpu_clock_mhz",
                "host.cpu",
                self.host.cpu_clock_mhz,
                10_000.0,
                CPU,
            ),
            c(
                "pci.system.clock_mhz",
                "pci.system",
                self.pci.system.clock_mhz,
                66.67,
                PCI,
            ),
            c(
                "pci.local.clock_mhz",
                "pci.local",
                self.pci.local.clock_mhz,
                66.67,
                PCI,
            ),
            c(
                "card.core_clock_mhz",
                "card.core",
                self.card.core_clock_mhz,
                1_000.0,
                CARD,
            ),
            c(
                "card.sdram_clock_mhz",
                "card.sdram",
                self.card.sdram_clock_mhz,
                1_000.0,
                CARD,
            ),
            c(
                "wire.gmii_clock_mhz",
                "wire.gmii",
                self.wire.gmii_clock_mhz,
                1_000.0,
                WIRE,
            ),
        ]
    }

    /// The embedded preset `name`, validated.
    ///
    /// # Errors
    /// An unknown name, or a preset that does not parse or validate.
    pub fn from_preset(name: &str) -> Result<Self, ConfigError> {
        Self::load(&ConfigSource::Preset(name.to_owned()), &[] as &[&str])
    }

    /// A whole configuration from TOML `text`, validated; `source_name` (a path or a
    /// preset file) names the text in error messages.
    ///
    /// # Errors
    /// [`ConfigError::File`] for syntax, unknown keys, wrong types and missing keys;
    /// [`ConfigError::Invalid`] for values out of range. Both carry line and column.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Self, ConfigError> {
        let cfg = Self::parse_toml(text, source_name)?;
        cfg.validate_with(|p| located_in_file(p, text, source_name))?;
        Ok(cfg)
    }

    /// Like [`SystemConfig::from_toml_str`] without the range validation (types only).
    ///
    /// # Errors
    /// [`ConfigError::File`] for syntax, unknown keys, wrong types and missing keys.
    pub fn parse_toml(text: &str, source_name: &str) -> Result<Self, ConfigError> {
        toml::from_str::<SystemConfig>(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            // Syntax messages have a second line ("expected ..."): keep one line.
            let what = e.message().trim().replace('\n', "; ");
            let message = match key_path_at(text, span.start) {
                Some(key) => format!("{key}: {what}"),
                None => what,
            };
            ConfigError::in_file(source_name, text, span, message)
        })
    }

    /// The base configuration from `source`, then every `--set` of `sets` in order, then
    /// validation. A range error points at the `--set` that last set the key, else at
    /// the key in the file or preset.
    ///
    /// # Errors
    /// Any [`ConfigError`].
    pub fn load<S: AsRef<str>>(source: &ConfigSource, sets: &[S]) -> Result<Self, ConfigError> {
        let (text, origin, dir) = match source {
            ConfigSource::Preset(name) => {
                let p = presets::find(name)?;
                (p.text.to_owned(), p.file.to_owned(), None)
            }
            ConfigSource::File(path) => {
                let text = read_config_file(path)?;
                let dir = path.parent().map(Path::to_path_buf);
                (text, path.display().to_string(), dir)
            }
        };
        let mut cfg = Self::resolve(&text, &origin, dir.as_deref(), &mut Vec::new())?;
        for input in sets {
            cfg.apply_set(input.as_ref())?;
        }
        cfg.validate_with(|p| {
            let last_set = sets.iter().rev().find_map(|s| {
                let a = set::split(s.as_ref()).ok()?;
                (a.key == p.key).then(|| (s.as_ref(), a.value_span))
            });
            match last_set {
                Some((input, span)) => ConfigError::Invalid {
                    location: format!("--set `{input}`: "),
                    src: Some(ConfigError::source_code("--set", input)),
                    span: Some(span.into()),
                    key: p.key,
                    reason: p.reason,
                },
                None => located_in_file(p, &text, &origin),
            }
        })?;
        tracing::debug!(target: "config", origin = %origin, sets = sets.len(), "configuration loaded");
        Ok(cfg)
    }

    /// The configuration a text describes: a whole configuration, or (with `extends =
    /// "BASE"` at its top) the base's configuration with only the values it lists
    /// changed, each applied exactly as a `--set` would be (so an unknown key or a wrong
    /// type is an error naming the key and its place in this text). `BASE` is an embedded
    /// preset's name or a TOML file (relative to the directory of the file that names
    /// it); a base may extend another, up to [`MAX_EXTENDS_DEPTH`] levels, and a cycle is
    /// an error. `chain` holds the origins already on the way down.
    fn resolve(
        text: &str,
        origin: &str,
        dir: Option<&Path>,
        chain: &mut Vec<String>,
    ) -> Result<Self, ConfigError> {
        let Some(base) = extends_of(text) else {
            return Self::parse_toml(text, origin);
        };
        let at = span_of_key(text, "extends").unwrap_or(0..0);
        let here = |message: String| ConfigError::in_file(origin, text, at.clone(), message);
        chain.push(origin.to_owned());
        if chain.len() > MAX_EXTENDS_DEPTH {
            return Err(here(format!(
                "extends: more than {MAX_EXTENDS_DEPTH} levels of `extends` ({})",
                chain.join(" -> ")
            )));
        }
        let (base_text, base_origin, base_dir) = match presets::find(&base) {
            Ok(p) => (p.text.to_owned(), p.file.to_owned(), None),
            Err(preset_err) => {
                let Some(path) = dir
                    .map(|d| d.join(&base))
                    .filter(|_| base.ends_with(".toml"))
                else {
                    return Err(here(format!(
                        "extends: {preset_err} (or name a .toml file next to this one)"
                    )));
                };
                let t = read_config_file(&path).map_err(|e| here(format!("extends: {e}")))?;
                let d = path.parent().map(Path::to_path_buf);
                (t, path.display().to_string(), d)
            }
        };
        if chain.contains(&base_origin) {
            return Err(here(format!(
                "extends: a cycle ({} -> {base_origin})",
                chain.join(" -> ")
            )));
        }
        let mut cfg = Self::resolve(&base_text, &base_origin, base_dir.as_deref(), chain)?;
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            ConfigError::in_file(origin, text, span, e.message().trim().replace('\n', "; "))
        })?;
        let mut leaves = Vec::new();
        flatten_table("", &table, &mut leaves);
        for (key, value) in leaves {
            if key == "extends" {
                continue;
            }
            let input = format!("{key}={value}");
            cfg.apply_set(&input).map_err(|e| {
                let span = span_of_key(text, &key).unwrap_or(0..0);
                ConfigError::in_file(origin, text, span, format!("{key}: {e}"))
            })?;
        }
        Ok(cfg)
    }

    /// Applies one `--set KEY=VALUE`: `KEY` is a dotted path that must already exist,
    /// `VALUE` is read as TOML (a bare word is a string) and type-checked against the
    /// schema. Ranges are checked later by [`SystemConfig::validate`].
    ///
    /// # Errors
    /// [`ConfigError::SetSyntax`], [`ConfigError::UnknownKey`], [`ConfigError::SetTable`]
    /// or [`ConfigError::SetValue`]; `self` is unchanged on error.
    pub fn apply_set(&mut self, input: &str) -> Result<(), ConfigError> {
        let a = set::split(input)?;
        let mut table = self.to_table()?;
        set::assign(&mut table, &a, input)?;
        let cfg = SystemConfig::deserialize(toml::Value::Table(table)).map_err(|e| {
            ConfigError::SetValue {
                input: input.to_owned(),
                key: a.key.clone(),
                message: e.message().trim().to_owned(),
                src: ConfigError::source_code("--set", input),
                span: a.value_span.clone().into(),
            }
        })?;
        tracing::debug!(target: "config", key = %a.key, "applied --set");
        *self = cfg;
        Ok(())
    }

    /// Checks every value's range.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first key out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with(|p| ConfigError::Invalid {
            key: p.key,
            reason: p.reason,
            location: String::new(),
            src: None,
            span: None,
        })
    }

    fn validate_with(&self, err: impl FnOnce(Problem) -> ConfigError) -> Result<(), ConfigError> {
        validate::check(self).map_err(err)
    }

    /// The configuration as a TOML table (no comments).
    ///
    /// # Errors
    /// [`ConfigError::Serialize`] for a value TOML cannot hold (a seed above `i64::MAX`).
    pub fn to_table(&self) -> Result<toml::Table, ConfigError> {
        toml::Table::try_from(self).map_err(|e| ConfigError::Serialize {
            message: e.to_string(),
        })
    }

    /// The configuration as TOML, every clock followed by the period it becomes
    /// (`clock_mhz = 33.0  # period 30303 ps`). Parsing it gives back `self`.
    ///
    /// # Errors
    /// [`ConfigError::Serialize`] for a value TOML cannot hold (a seed above `i64::MAX`).
    pub fn to_toml(&self) -> Result<String, ConfigError> {
        show::to_toml(self)
    }

    /// Every value as (dotted key, text) in schema order, for CSV and tables.
    ///
    /// # Errors
    /// [`ConfigError::Serialize`] for a value TOML cannot hold.
    pub fn flatten(&self) -> Result<Vec<(String, String)>, ConfigError> {
        show::flatten(self)
    }
}

/// A range problem located at the key's value in a file or preset, when it is there.
fn located_in_file(p: Problem, text: &str, origin: &str) -> ConfigError {
    match span_of_key(text, &p.key) {
        Some(span) => {
            let pos = line_col(text, span.start);
            ConfigError::Invalid {
                location: format!("{origin}:{}:{}: ", pos.line, pos.column),
                src: Some(ConfigError::source_code(origin, text)),
                span: Some(span.into()),
                key: p.key,
                reason: p.reason,
            }
        }
        None => ConfigError::Invalid {
            location: format!("{origin}: "),
            src: None,
            span: None,
            key: p.key,
            reason: p.reason,
        },
    }
}

#[cfg(test)]
mod tests;

/// The text a configuration source starts from: the embedded preset's TOML, or the
/// file's.
///
/// # Errors
/// An unknown preset, or a file that cannot be read (see `read_config_file`).
pub fn source_text(source: &ConfigSource) -> Result<String, ConfigError> {
    match source {
        ConfigSource::Preset(name) => Ok(presets::find(name)?.text.to_owned()),
        ConfigSource::File(path) => read_config_file(path),
    }
}

/// What `hvia config --diff` compares a source against, with its name: the preset
/// itself, or for a file the base it `extends` (a preset, or a `.toml` file next to
/// it), else the default preset.
///
/// # Errors
/// The file or its base cannot be read or is not a valid configuration.
pub fn diff_base(source: &ConfigSource) -> Result<(String, SystemConfig), ConfigError> {
    let default = || -> Result<(String, SystemConfig), ConfigError> {
        Ok((
            DEFAULT_PRESET.to_owned(),
            SystemConfig::from_preset(DEFAULT_PRESET)?,
        ))
    };
    match source {
        ConfigSource::Preset(name) => Ok((name.clone(), SystemConfig::from_preset(name)?)),
        ConfigSource::File(path) => {
            let Some(base) = extends_of(&read_config_file(path)?) else {
                return default();
            };
            if presets::find(&base).is_ok() {
                return Ok((base.clone(), SystemConfig::from_preset(&base)?));
            }
            let file = path.parent().unwrap_or(Path::new(".")).join(&base);
            let cfg = SystemConfig::load::<&str>(&ConfigSource::File(file.clone()), &[])?;
            Ok((file.display().to_string(), cfg))
        }
    }
}

/// Largest configuration file read \[bytes\]: a whole configuration is a few KB, so
/// anything larger (or a device such as `/dev/zero`) is refused before it is read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// How many `extends` a configuration may go through to reach a complete one.
pub const MAX_EXTENDS_DEPTH: usize = 8;

/// Reads a configuration file: a regular file (not a directory, pipe or device) of at
/// most [`MAX_CONFIG_BYTES`].
fn read_config_file(path: &Path) -> Result<String, ConfigError> {
    let read = |reason: std::io::Error| ConfigError::Read {
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(read)?;
    if !meta.is_file() {
        return Err(read(std::io::Error::other(
            "not a regular file (a configuration is read from a TOML file, not a directory, pipe or device)",
        )));
    }
    let too_large = || {
        read(std::io::Error::other(format!(
            "larger than {MAX_CONFIG_BYTES} bytes, too large for a configuration"
        )))
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map_err(|e| read(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// The base preset a config text extends (`extends = "NAME"` at its top level), if any.
fn extends_of(text: &str) -> Option<String> {
    let table: toml::Table = toml::from_str(text).ok()?;
    table.get("extends")?.as_str().map(str::to_owned)
}

/// Every leaf of `table` as (dotted key, value).
fn flatten_table(prefix: &str, table: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten_table(&key, t, out),
            other => out.push((key, other.clone())),
        }
    }
}
