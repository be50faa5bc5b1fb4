//! What `hvia breakdown` prints: a table (the stages, a total line, then the time per
//! component), the JSON of the CLI contract (`op`, `size_bytes`, `one_way_latency_ns`,
//! `stages[]` with `name`, `component`, `domain`, `start_ns`, `end_ns`, `cycles`, plus
//! `duration_ns`), or CSV (one row per stage). Times are ns from the message's start, so
//! the first stage starts at 0 and the last ends at the one-way latency.

use serde::Serialize;

use super::{Provenance, BREAKDOWN_WARMUP};
use crate::report::{columns, csv};
use crate::system::breakdown::Breakdown;

/// The JSON object.
#[derive(Serialize)]
struct Json {
    op: &'static str,
    size_bytes: u32,
    one_way_latency_ns: f64,
    stages: Vec<StageJson>,
}

/// One stage.
#[derive(Serialize)]
struct StageJson {
    name: String,
    component: String,
    domain: String,
    start_ns: f64,
    end_ns: f64,
    cycles: u64,
    duration_ns: f64,
}

fn stages(bd: &Breakdown) -> Vec<StageJson> {
    bd.stages
        .iter()
        .map(|s| StageJson {
            name: s.name.clone(),
            component: s.component.clone(),
            domain: s.domain.clone(),
            start_ns: s.start.saturating_since(bd.start).as_ns_f64(),
            end_ns: s.end.saturating_since(bd.start).as_ns_f64(),
            cycles: s.cycles.0,
            duration_ns: s.end.saturating_since(s.start).as_ns_f64(),
        })
        .collect()
}

/// `--format json`.
pub(super) fn json(bd: &Breakdown) -> Result<String, serde_json::Error> {
    let j = Json {
        op: bd.op.name(),
        size_bytes: bd.size_bytes,
        one_way_latency_ns: bd.one_way_ns(),
        stages: stages(bd),
    };
    serde_json::to_string_pretty(&j).map(|s| s + "\n")
}

/// The CSV columns, one row per stage.
pub const CSV_HEADER: [&str; 7] = [
    "name",
    "component",
    "domain",
    "start_ns",
    "end_ns",
    "duration_ns",
    "cycles",
];

/// `--format csv`.
pub(super) fn csv_doc(bd: &Breakdown) -> String {
    let rows: Vec<Vec<String>> = stages(bd)
        .into_iter()
        .map(|s| {
            vec![
                s.name,
                s.component,
                s.domain,
                format!("{:.3}", s.start_ns),
                format!("{:.3}", s.end_ns),
                format!("{:.3}", s.duration_ns),
                s.cycles.to_string(),
            ]
        })
        .collect();
    csv(&CSV_HEADER, &rows)
}

/// Total time per component, in order of first appearance on the path.
fn per_component(bd: &Breakdown) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for s in &bd.stages {
        let ns = s.end.saturating_since(s.start).as_ns_f64();
        let name = if s.component.is_empty() {
            s.name.as_str()
        } else {
            s.component.as_str()
        };
        match out.iter_mut().find(|(c, _)| c == name) {
            Some((_, total)) => *total += ns,
            None => out.push((name.to_owned(), ns)),
        }
    }
    out
}

/// `--format table`.
pub(super) fn table(bd: &Breakdown, prov: &Provenance) -> String {
    let total = bd.one_way_ns();
    let mut out = format!(
        "One-way latency of one {}-byte {} message in steady state (after {} warm-up round \
         trips), {}: {:.1} ns\n\n",
        bd.size_bytes,
        bd.op.name(),
        BREAKDOWN_WARMUP,
        prov.label(),
        total
    );
    let mut rows: Vec<Vec<String>> = stages(bd)
        .into_iter()
        .map(|s| {
            vec![
                s.name,
                s.component,
                s.domain,
                format!("{:.1}", s.start_ns),
                format!("{:.1}", s.end_ns),
                format!("{:.1}", s.duration_ns),
                s.cycles.to_string(),
            ]
        })
        .collect();
    rows.push(vec![
        "total".to_owned(),
        String::new(),
        String::new(),
        "0.0".to_owned(),
        format!("{total:.1}"),
        format!("{total:.1}"),
        String::new(),
    ]);
    out.push_str(&columns(
        &[
            "STAGE",
            "COMPONENT",
            "DOMAIN",
            "START_NS",
            "END_NS",
            "DURATION_NS",
            "CYCLES",
        ],
        &rows,
        &[false, false, false, true, true, true, true],
    ));
    out.push_str("\nTime per component:\n");
    let rows: Vec<Vec<String>> = per_component(bd)
        .into_iter()
        .map(|(c, ns)| {
            let share = if total > 0.0 { 100.0 * ns / total } else { 0.0 };
            vec![c, format!("{ns:.1}"), format!("{share:.1} %")]
        })
        .collect();
    out.push_str(&columns(
        &["COMPONENT", "NS", "SHARE"],
        &rows,
        &[false, true, true],
    ));
    out
}
