//! Positions in TOML text: byte offset -> line:column, the key path at an offset, and
//! the span of a key path. Used to make every config error name its key and place.

use std::ops::Range;
use toml_edit::{ImDocument, Item, Key, Table, Value};

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    /// Line number, from 1.
    pub line: usize,
    /// Column number in characters, from 1.
    pub column: usize,
}

/// The line and column of byte `offset` in `text` (clamped to the text's end).
#[must_use]
pub fn line_col(text: &str, offset: usize) -> LineCol {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    LineCol { line, column }
}

/// One entry of a parsed document: its dotted path and where its key and value are.
struct Entry {
    path: String,
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
}

/// Every key/value entry of `text` (tables included), in document order.
/// Text that does not parse yields no entries.
fn entries(text: &str) -> Vec<Entry> {
    let Ok(doc) = ImDocument::parse(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk_table(doc.as_table(), "", &mut out);
    out
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk_table(table: &Table, prefix: &str, out: &mut Vec<Entry>) {
    for (name, item) in table.iter() {
        let path = join(prefix, name);
        let key = table.key(name).and_then(Key::span);
        match item {
            Item::Table(t) => {
                out.push(Entry {
                    path: path.clone(),
                    key,
                    value: t.span(),
                });
                walk_table(t, &path, out);
            }
            Item::Value(v) => walk_value(v, path, key, out),
            Item::ArrayOfTables(_) | Item::None => out.push(Entry {
                path,
                key,
                value: item.span(),
            }),
        }
    }
}

fn walk_value(value: &Value, path: String, key: Option<Range<usize>>, out: &mut Vec<Entry>) {
    out.push(Entry {
        path: path.clone(),
        key,
        value: value.span(),
    });
    if let Value::InlineTable(t) = value {
        for (name, v) in t.iter() {
            let key = t.key(name).and_then(Key::span);
            walk_value(v, join(&path, name), key, out);
        }
    }
}

/// The dotted key path of the deepest entry of `text` whose key or value contains byte
/// `offset`, if any (e.g. `pci.system.clock_mhz` for an offset inside `"abc"` in
/// `[pci.system]` / `clock_mhz = "abc"`).
#[must_use]
pub fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let contains = |r: &Option<Range<usize>>| r.as_ref().is_some_and(|r| r.contains(&offset));
    entries(text)
        .into_iter()
        .filter(|e| contains(&e.key) || contains(&e.value))
        .max_by_key(|e| e.path.matches('.').count())
        .map(|e| e.path)
}

/// The span of the value of the entry at dotted `path` in `text` (or of its key when the
/// value has none), if the text sets it.
#[must_use]
pub fn span_of_key(text: &str, path: &str) -> Option<Range<usize>> {
    entries(text)
        .into_iter()
        .find(|e| e.path == path)
        .and_then(|e| e.value.or(e.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "[sim]\nseed = 1\n\n[pci.system]\nclock_mhz = \"abc\"\nx = { a = 1 }\n";

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col(DOC, 0), LineCol { line: 1, column: 1 });
        let off = DOC.find("\"abc\"").unwrap();
        assert_eq!(
            line_col(DOC, off),
            LineCol {
                line: 5,
                column: 13
            }
        );
        assert_eq!(line_col(DOC, 10_000).line, 7);
        assert_eq!(line_col("é=1", 1), LineCol { line: 1, column: 1 });
    }

    #[test]
    fn key_path_at_finds_the_deepest_entry() {
        let off = DOC.find("\"abc\"").unwrap() + 1;
        assert_eq!(
            key_path_at(DOC, off).as_deref(),
            Some("pci.system.clock_mhz")
        );
        let off = DOC.find("seed").unwrap();
        assert_eq!(key_path_at(DOC, off).as_deref(), Some("sim.seed"));
        let off = DOC.find("a = 1").unwrap();
        assert_eq!(key_path_at(DOC, off).as_deref(), Some("pci.system.x.a"));
        assert_eq!(key_path_at("not toml [", 3), None);
    }

    #[test]
    fn span_of_key_points_at_the_value() {
        let span = span_of_key(DOC, "pci.system.clock_mhz").unwrap();
        assert_eq!(&DOC[span], "\"abc\"");
        assert_eq!(span_of_key(DOC, "no.such"), None);
    }
}
