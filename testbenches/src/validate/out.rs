//! `hvia validate` output: an aligned table for people, JSON (`{ "preset", "rows":
//! [ { "figure", "source", "published", "model", "unit", "error", "tolerance", "holds" }
//! ], "holds" }`) and CSV with one row per figure.

use super::Row;
use crate::report::{columns, csv};

fn num(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.3}")
    }
}

fn error_text(r: &Row) -> String {
    match r.tolerance {
        super::Tolerance::Relative(_) => format!("{:+.2} %", r.error() * 100.0),
        super::Tolerance::Holds => String::new(),
        _ => format!("{:+.3} {}", r.error(), r.unit),
    }
}

fn cells(r: &Row) -> Vec<String> {
    vec![
        r.figure.clone(),
        r.source.clone(),
        num(r.published),
        num(r.model),
        r.unit.clone(),
        error_text(r),
        r.tolerance.text(&r.unit),
        if r.holds() { "holds" } else { "FAILS" }.into(),
    ]
}

const HEADER: [&str; 8] = [
    "FIGURE",
    "SOURCE",
    "PUBLISHED",
    "MODEL",
    "UNIT",
    "ERROR",
    "TOLERANCE",
    "VERDICT",
];

/// The table.
#[must_use]
pub fn table(rows: &[Row], preset: &str, notes: &[String]) -> String {
    let body: Vec<Vec<String>> = rows.iter().map(cells).collect();
    let failed = rows.iter().filter(|r| !r.holds()).count();
    let notes: String = notes.iter().map(|n| format!("{n}\n")).collect();
    format!(
        "Published figures of HVIA-GE against the model ({preset})\n\n{}\n{notes}{}\n",
        columns(
            &HEADER,
            &body,
            &[false, false, true, true, false, true, false, false]
        ),
        if failed == 0 {
            format!("All {} rows hold.", rows.len())
        } else {
            format!("{failed} of {} rows fail.", rows.len())
        }
    )
}

/// CSV, one line per row.
#[must_use]
pub fn csv_doc(rows: &[Row]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.figure.clone(),
                r.source.clone(),
                r.published.to_string(),
                r.model.to_string(),
                r.unit.clone(),
                r.error().to_string(),
                r.tolerance.text(&r.unit),
                r.holds().to_string(),
            ]
        })
        .collect();
    csv(
        &[
            "figure",
            "source",
            "published",
            "model",
            "unit",
            "error",
            "tolerance",
            "holds",
        ],
        &body,
    )
}

/// JSON (keys of the `hvia` contract).
#[must_use]
pub fn json(rows: &[Row], preset: &str) -> String {
    let finite = |v: f64| {
        if v.is_finite() {
            serde_json::json!(v)
        } else {
            serde_json::Value::Null
        }
    };
    let v = serde_json::json!({
        "preset": preset,
        "rows": rows.iter().map(|r| serde_json::json!({
            "figure": r.figure,
            "source": r.source,
            "published": finite(r.published),
            "model": finite(r.model),
            "unit": r.unit,
            "error": finite(r.error()),
            "tolerance": r.tolerance.text(&r.unit),
            "holds": r.holds(),
        })).collect::<Vec<_>>(),
        "holds": rows.iter().all(Row::holds),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}
