//! Output formats of the `hvia` command: `--format table|json|csv`, aligned text
//! tables and RFC 4180 CSV.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The output format chosen with `--format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned text (TOML for `config --show`), for people.
    #[default]
    Table,
    /// JSON, for scripts (keys are stable).
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

/// `field` quoted for CSV when it holds a comma, a quote or a line break.
#[must_use]
pub fn csv_field(field: &str) -> Cow<'_, str> {
    if field.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(field)
    }
}

/// A CSV document: the header line, then one line per row.
#[must_use]
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let line = |fields: Vec<Cow<'_, str>>| fields.join(",");
    out.push_str(&line(header.iter().map(|h| csv_field(h)).collect()));
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.iter().map(|f| csv_field(f)).collect()));
        out.push('\n');
    }
    out
}

/// A text table: the header (none if empty), then the rows, columns padded to their
/// widest cell (the last column is not padded).
#[must_use]
pub fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    columns(header, rows, &[])
}

/// A text table like [`aligned`], with column `c` right-aligned where `right[c]` is true
/// (numbers); columns beyond `right` are left-aligned.
#[must_use]
pub fn columns(header: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let all: Vec<Vec<&str>> = std::iter::once(header.to_vec())
        .filter(|h| !h.is_empty())
        .chain(rows.iter().map(|r| r.iter().map(String::as_str).collect()))
        .collect();
    let columns = all.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            all.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &all {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let last = c + 1 == row.len();
            if right.get(c).copied().unwrap_or(false) {
                let _ = write!(line, "{cell:>w$}", w = widths[c]);
            } else if last {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}", w = widths[c]);
            }
            if !last {
                line.push_str("  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        let doc = csv(&["name", "description"], &[vec!["x".into(), "1, 2".into()]]);
        assert_eq!(doc, "name,description\nx,\"1, 2\"\n");
    }

    #[test]
    fn aligned_pads_all_but_the_last_column() {
        let t = aligned(
            &["NAME", "DESCRIPTION"],
            &[vec!["hvia-ge".into(), "d".into()]],
        );
        assert_eq!(t, "NAME     DESCRIPTION\nhvia-ge  d\n");
        let t = aligned(
            &[],
            &[vec!["a".into(), "b".into()], vec!["ccc".into(), "d".into()]],
        );
        assert_eq!(t, "a    b\nccc  d\n");
    }

    #[test]
    fn columns_right_aligns_numbers() {
        let t = columns(
            &["SIZE", "NAME", "NS"],
            &[
                vec!["4".into(), "ab".into(), "1.5".into()],
                vec!["1024".into(), "c".into(), "12.25".into()],
            ],
            &[true, false, true],
        );
        assert_eq!(
            t,
            "SIZE  NAME     NS\n   4  ab      1.5\n1024  c     12.25\n"
        );
    }
}
