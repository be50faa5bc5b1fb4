//! `hvia validate` on the default preset, pinned: every row's model value (to the digits
//! the README quotes) and verdict is a committed snapshot, and the README's "Results"
//! quote the same figures, so a model change that moves a published figure shows in
//! review and cannot leave the README behind.

use std::process::Command;

fn validate() -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(["validate", "--format", "json"])
        .output()
        .expect("run hvia");
    // Exit 1 while a row fails: the snapshot says which.
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("validate prints JSON")
}

fn model_of(v: &serde_json::Value, figure: &str) -> f64 {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["figure"].as_str().is_some_and(|f| f.starts_with(figure)))
        .and_then(|r| r["model"].as_f64())
        .unwrap_or_else(|| panic!("no row {figure}"))
}

#[test]
fn the_published_figures_are_pinned_and_quoted_in_the_readme() {
    let v = validate();
    let rows = v["rows"].as_array().unwrap();
    let pinned: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} | {:.3} {} | {}",
                r["figure"].as_str().unwrap(),
                r["model"].as_f64().unwrap(),
                r["unit"].as_str().unwrap(),
                if r["holds"].as_bool().unwrap() {
                    "holds"
                } else {
                    "FAILS"
                }
            )
        })
        .collect();
    insta::assert_snapshot!("validate_default", pinned.join("\n"));

    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let holding = rows.iter().filter(|r| r["holds"] == true).count();
    let quoted = [
        format!("**{:.2} us**", model_of(&v, "RDMA write, 4 B")),
        format!("**{:.2}\nMB/s**", model_of(&v, "RDMA write, peak")),
        format!("{holding} of {} rows hold", rows.len()),
        format!(
            "VipPostRecv ({:.2} us",
            model_of(&v, "VipPostRecv CPU time at")
        ),
    ];
    for q in quoted {
        assert!(readme.contains(&q), "README does not quote `{q}`");
    }
}
