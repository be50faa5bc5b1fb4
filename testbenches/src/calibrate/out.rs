//! `hvia calibrate` output: the fitted parameters and each target's residual as a table,
//! JSON (`{ "parameters": [ { "key", "value", "range" } ], "targets": [ { "figure",
//! "published", "model", "residual" } ] }`) or CSV, and the config text with the fitted
//! values written in (`--write FILE`).

use super::{Fit, Param, TARGETS};
use crate::report::{columns, csv};

/// The table.
#[must_use]
pub fn table(fit: &Fit) -> String {
    let params: Vec<Vec<String>> = fit
        .params
        .iter()
        .map(|p| {
            vec![
                p.key.clone(),
                p.text(p.value),
                format!("[{}, {}]", p.lo, p.hi),
            ]
        })
        .collect();
    let targets: Vec<Vec<String>> = TARGETS
        .iter()
        .zip(fit.evaluation.model)
        .zip(fit.evaluation.residuals())
        .map(|((t, m), r)| {
            vec![
                t.figure.into(),
                format!("{:.3}", t.published),
                format!("{m:.3}"),
                t.unit.into(),
                format!("{r:+.2}"),
            ]
        })
        .collect();
    format!(
        "Fitted parameters ({} model evaluations)\n\n{}\nTargets (residual = (model - published) / tolerance)\n\n{}\ncost {:.4}\n",
        fit.evaluations,
        columns(&["KEY", "VALUE", "RANGE"], &params, &[false, true, false]),
        columns(
            &["FIGURE", "PUBLISHED", "MODEL", "UNIT", "RESIDUAL"],
            &targets,
            &[false, true, true, false, true]
        ),
        fit.evaluation.cost
    )
}

/// JSON (keys of the `hvia` contract).
#[must_use]
pub fn json(fit: &Fit) -> String {
    let v = serde_json::json!({
        "parameters": fit.params.iter().map(|p| serde_json::json!({
            "key": p.key,
            "value": p.value,
            "range": [p.lo, p.hi],
        })).collect::<Vec<_>>(),
        "targets": TARGETS.iter().zip(fit.evaluation.model).zip(fit.evaluation.residuals())
            .map(|((t, m), r)| serde_json::json!({
                "figure": t.figure,
                "published": t.published,
                "model": m,
                "residual": r,
            })).collect::<Vec<_>>(),
        "cost": fit.evaluation.cost,
        "evaluations": fit.evaluations,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// CSV: one row per parameter, then one per target.
#[must_use]
pub fn csv_doc(fit: &Fit) -> String {
    let mut rows: Vec<Vec<String>> = fit
        .params
        .iter()
        .map(|p| {
            vec![
                "parameter".into(),
                p.key.clone(),
                p.value.to_string(),
                format!("{} {}", p.lo, p.hi),
            ]
        })
        .collect();
    rows.extend(
        TARGETS
            .iter()
            .zip(fit.evaluation.model)
            .zip(fit.evaluation.residuals())
            .map(|((t, m), r)| {
                vec![
                    "target".into(),
                    t.figure.into(),
                    m.to_string(),
                    r.to_string(),
                ]
            }),
    );
    csv(&["kind", "name", "value", "range_or_residual"], &rows)
}

/// `text` with each fitted parameter's value replaced on its `key = value` line (the
/// comment kept); a parameter with no line of its own is added as a dotted key before
/// the first table.
#[must_use]
pub fn rewrite(text: &str, params: &[Param]) -> String {
    let mut table = String::new();
    let mut done = vec![false; params.len()];
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let (code, comment) = match line.find('#') {
            Some(i) => (&line[..i], &line[i..]),
            None => (line, ""),
        };
        let trimmed = code.trim();
        if let Some(t) = trimmed.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
            t.trim().clone_into(&mut table);
            lines.push(line.to_owned());
            continue;
        }
        let hit = trimmed.split_once('=').and_then(|(k, _)| {
            let key = if table.is_empty() {
                k.trim().to_owned()
            } else {
                format!("{table}.{}", k.trim())
            };
            params.iter().position(|p| p.key == key)
        });
        match hit {
            Some(i) => {
                let p = &params[i];
                let name = trimmed.split_once('=').map_or("", |(k, _)| k.trim());
                let indent = &code[..code.len() - code.trim_start().len()];
                let body = format!("{indent}{name} = {}", p.text(p.value));
                let pad = code.len().saturating_sub(body.len()).max(1);
                lines.push(if comment.is_empty() {
                    body
                } else {
                    format!("{body}{}{comment}", " ".repeat(pad))
                });
                done[i] = true;
            }
            None => lines.push(line.to_owned()),
        }
    }
    let missing: Vec<String> = params
        .iter()
        .zip(&done)
        .filter(|(_, d)| !**d)
        .map(|(p, _)| {
            format!(
                "{} = {} # calibrated: written by hvia calibrate",
                p.key,
                p.text(p.value)
            )
        })
        .collect();
    if !missing.is_empty() {
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with('['))
            .unwrap_or(lines.len());
        for (k, m) in missing.into_iter().enumerate() {
            lines.insert(at + k, m);
        }
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_replaces_values_and_keeps_comments() {
        let text = "extends = \"hvia-ge\"\n[a]\nx = 3   # calibrated: fitted to t; range [1, 9]\ny = 2.5 # paper: p\n";
        let params = vec![
            Param {
                key: "a.x".into(),
                lo: 1.0,
                hi: 9.0,
                integer: true,
                value: 7.0,
            },
            Param {
                key: "b.z".into(),
                lo: 0.0,
                hi: 1.0,
                integer: false,
                value: 0.25,
            },
        ];
        let out = rewrite(text, &params);
        assert!(
            out.contains("x = 7   # calibrated: fitted to t; range [1, 9]"),
            "{out}"
        );
        assert!(out.contains("y = 2.5 # paper: p"), "{out}");
        let z = out.find("b.z = 0.250").unwrap();
        assert!(z < out.find("[a]").unwrap(), "{out}");
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["a"]["x"].as_integer(), Some(7));
    }
}
