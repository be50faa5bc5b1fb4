//! How a configuration is shown: TOML with the period of every clock as a trailing
//! comment (still a valid config that parses back to the same values), and a flat
//! list of (key, value) pairs for CSV.

use toml::Value;
use toml_edit::{DocumentMut, Item};

use super::error::ConfigError;
use super::schema::SystemConfig;
use super::set::leaf_paths;

/// `cfg` as TOML, each clock annotated with `# period N ps`.
pub(crate) fn to_toml(cfg: &SystemConfig) -> Result<String, ConfigError> {
    let plain = toml::to_string(cfg).map_err(|e| ConfigError::Serialize {
        message: e.to_string(),
    })?;
    let mut doc: DocumentMut =
        plain
            .parse()
            .map_err(|e: toml_edit::TomlError| ConfigError::Serialize {
                message: e.to_string(),
            })?;
    for clock in cfg.clocks() {
        let Ok(period) = clock.period_ps() else {
            continue;
        };
        if let Some(value) = item_mut(&mut doc, clock.key).and_then(Item::as_value_mut) {
            value
                .decor_mut()
                .set_suffix(format!("  # period {period} ps"));
        }
    }
    Ok(doc.to_string())
}

/// The item at dotted `path` of `doc`.
fn item_mut<'a>(doc: &'a mut DocumentMut, path: &str) -> Option<&'a mut Item> {
    let mut item = doc.as_item_mut();
    for seg in path.split('.') {
        item = item.get_mut(seg)?;
    }
    Some(item)
}

/// Every value of `cfg` as (dotted key, text): strings bare, other values as TOML.
pub(crate) fn flatten(cfg: &SystemConfig) -> Result<Vec<(String, String)>, ConfigError> {
    let table = cfg.to_table()?;
    let mut paths = Vec::new();
    leaf_paths(&table, "", &mut paths);
    Ok(paths
        .into_iter()
        .map(|path| {
            let mut v: Option<&Value> = None;
            let mut t = &table;
            for seg in path.split('.') {
                match t.get(seg) {
                    Some(Value::Table(inner)) => t = inner,
                    other => v = other,
                }
            }
            let text = match v {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            (path, text)
        })
        .collect())
}
