//! `--set KEY=VALUE`: splitting the argument, reading the value as TOML, and replacing
//! an existing value in the config's TOML table. Type checking happens afterwards,
//! when the table is deserialized into the schema.

use std::ops::Range;
use toml::{Table, Value};

use super::error::ConfigError;

/// A `--set` argument taken apart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Assignment {
    /// The dotted key path, trimmed.
    pub key: String,
    /// The value as TOML (a bare word becomes a string).
    pub value: Value,
    /// Byte range of the value text in the argument.
    pub value_span: Range<usize>,
}

/// Splits `input` at its first `=` and reads the value.
///
/// # Errors
/// [`ConfigError::SetSyntax`] when there is no `=` or the key is empty.
pub(crate) fn split(input: &str) -> Result<Assignment, ConfigError> {
    let syntax = || ConfigError::SetSyntax {
        input: input.to_owned(),
    };
    let (key, raw) = input.split_once('=').ok_or_else(syntax)?;
    let key = key.trim();
    if key.is_empty() {
        return Err(syntax());
    }
    let value_start = key_end(input) + 1;
    let lead = raw.len() - raw.trim_start().len();
    let text = raw.trim();
    let start = value_start + lead;
    Ok(Assignment {
        key: key.to_owned(),
        value: parse_value(text),
        value_span: start..start + text.len(),
    })
}

/// Byte index of the first `=` (the caller checked there is one).
fn key_end(input: &str) -> usize {
    input.find('=').unwrap_or(input.len())
}

/// `text` read as a TOML value (`66`, `33.3`, `true`, `"card"`, `[1, 2]`); anything
/// that is not exactly one TOML value is taken as a string, so a bare word like `card`
/// works without quotes.
pub(crate) fn parse_value(text: &str) -> Value {
    match format!("v = {text}").parse::<Table>() {
        Ok(mut table) if table.len() == 1 => table
            .remove("v")
            .unwrap_or_else(|| Value::String(text.to_owned())),
        _ => Value::String(text.to_owned()),
    }
}

/// Replaces the value at `a.key` in `root`. The key must already exist and name a value,
/// not a table.
///
/// # Errors
/// [`ConfigError::UnknownKey`] or [`ConfigError::SetTable`].
pub(crate) fn assign(root: &mut Table, a: &Assignment, input: &str) -> Result<(), ConfigError> {
    let unknown = |root: &Table| ConfigError::UnknownKey {
        key: a.key.clone(),
        input: input.to_owned(),
        help: unknown_key_help(root, &a.key),
    };
    let segments: Vec<&str> = a.key.split('.').map(str::trim).collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(unknown(root));
    }
    let Some((last, parents)) = segments.split_last() else {
        return Err(unknown(root));
    };
    // A copy for the help text, since the walk below borrows `root` mutably.
    let snapshot = root.clone();
    let mut table: &mut Table = root;
    for seg in parents {
        table = match table.get_mut(*seg) {
            Some(Value::Table(t)) => t,
            _ => return Err(unknown(&snapshot)),
        };
    }
    match table.get_mut(*last) {
        None => Err(unknown(&snapshot)),
        Some(Value::Table(t)) => Err(ConfigError::SetTable {
            key: a.key.clone(),
            input: input.to_owned(),
            help: format!(
                "set one of its keys: {}",
                t.keys()
                    .map(|k| format!("{}.{k}", a.key))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
        Some(slot) => {
            *slot = a.value.clone();
            Ok(())
        }
    }
}

/// Every leaf (non-table) key path of `table`, in order.
pub(crate) fn leaf_paths(table: &Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(t) => leaf_paths(t, &path, out),
            _ => out.push(path),
        }
    }
}

/// Help for an unknown key: close matches among all keys, then the keys of the deepest
/// table the path does reach.
fn unknown_key_help(root: &Table, key: &str) -> String {
    let mut all = Vec::new();
    leaf_paths(root, "", &mut all);
    let last = key.rsplit('.').next().unwrap_or(key);
    let mut close: Vec<&String> = all
        .iter()
        .filter(|p| {
            let d = edit_distance(p, key);
            d <= 2.max(key.len() / 4) || p.rsplit('.').next() == Some(last)
        })
        .collect();
    close.truncate(5);

    let mut table = root;
    let mut reached = String::new();
    for seg in key.split('.') {
        match table.get(seg) {
            Some(Value::Table(t)) => {
                table = t;
                if !reached.is_empty() {
                    reached.push('.');
                }
                reached.push_str(seg);
            }
            _ => break,
        }
    }
    let keys: Vec<String> = table
        .iter()
        .map(|(k, v)| match v {
            Value::Table(_) => format!("{k}.*"),
            _ => k.clone(),
        })
        .collect();
    let listing = if reached.is_empty() {
        format!("top-level tables: {}", keys.join(", "))
    } else {
        format!("keys of `{reached}`: {}", keys.join(", "))
    };
    if close.is_empty() {
        listing
    } else {
        let close: Vec<String> = close.iter().map(|p| format!("`{p}`")).collect();
        format!("did you mean {}? {listing}", close.join(" or "))
    }
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Table {
        "[sim]\nseed = 1\n[pci.system]\nclock_mhz = 33.0\nwidth_bits = 32\n"
            .parse()
            .unwrap()
    }

    #[test]
    fn values_are_toml_and_bare_words_are_strings() {
        assert_eq!(parse_value("66"), Value::Integer(66));
        assert_eq!(parse_value("66.5"), Value::Float(66.5));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("\"card\""), Value::String("card".into()));
        assert_eq!(parse_value("card"), Value::String("card".into()));
        assert_eq!(parse_value("abc def"), Value::String("abc def".into()));
        assert_eq!(parse_value("1\nx = 2"), Value::String("1\nx = 2".into()));
        assert_eq!(parse_value(""), Value::String(String::new()));
    }

    #[test]
    fn split_finds_key_value_and_span() {
        let input = " pci.system.clock_mhz = 66 ";
        let a = split(input).unwrap();
        assert_eq!(a.key, "pci.system.clock_mhz");
        assert_eq!(a.value, Value::Integer(66));
        assert_eq!(&input[a.value_span], "66");
        let a = split("k=a=b").unwrap();
        assert_eq!(a.value, Value::String("a=b".into()));
        assert!(matches!(
            split("novalue"),
            Err(ConfigError::SetSyntax { .. })
        ));
        assert!(matches!(split("=1"), Err(ConfigError::SetSyntax { .. })));
    }

    #[test]
    fn assign_replaces_existing_values_only() {
        let mut t = root();
        assign(&mut t, &split("pci.system.clock_mhz=66").unwrap(), "").unwrap();
        assert_eq!(t["pci"]["system"]["clock_mhz"], Value::Integer(66));
        for bad in [
            "no.such.key=1",
            "sim.seed.x=1",
            "sim..seed=1",
            "pci.system.clock=1",
        ] {
            let err = assign(&mut t, &split(bad).unwrap(), bad).unwrap_err();
            assert!(
                matches!(err, ConfigError::UnknownKey { .. }),
                "{bad}: {err:?}"
            );
        }
        let err = assign(&mut t, &split("pci.system=1").unwrap(), "").unwrap_err();
        assert!(matches!(err, ConfigError::SetTable { .. }), "{err:?}");
    }

    #[test]
    fn unknown_key_help_suggests_close_keys() {
        let help = unknown_key_help(&root(), "pci.system.clock");
        assert!(help.contains("`pci.system.clock_mhz`"), "{help}");
        assert!(
            help.contains("keys of `pci.system`: clock_mhz, width_bits"),
            "{help}"
        );
        let help = unknown_key_help(&root(), "no.such.key");
        assert!(help.starts_with("top-level tables: sim.*, pci.*"), "{help}");
        let help = unknown_key_help(&root(), "clock_mhz");
        assert!(help.contains("`pci.system.clock_mhz`"), "{help}");
    }

    #[test]
    fn edit_distance_is_levenshtein() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
