//! Small things users trip on: `hvia config --diff`, `hvia completions`, `--version`.

use std::process::{Command, Output};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs")
}

fn ok(args: &[&str]) -> String {
    let o = hvia(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn config_diff_lists_only_what_changes() {
    let table = ok(&[
        "config",
        "--diff",
        "--set",
        "pci.system.clock_mhz=66",
        "--set",
        "card.att_location=host",
    ]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(
        lines[0].starts_with("KEY") && lines[0].contains("PRESET hvia-ge"),
        "{table}"
    );
    assert!(lines[1].starts_with("pci.system.clock_mhz") && lines[1].ends_with("66.0"));
    assert!(lines[2].starts_with("card.att_location") && lines[2].ends_with("host"));
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "--preset",
        "burst-128",
        "config",
        "--diff",
        "--set",
        "sim.seed=9",
        "--format",
        "json",
    ]))
    .expect("JSON");
    assert_eq!(v["against"], "burst-128");
    assert_eq!(
        v["changes"],
        serde_json::json!([{ "key": "sim.seed", "preset": "1", "value": "9" }])
    );
    assert_eq!(
        ok(&["config", "--diff"]),
        "no change against preset hvia-ge\n"
    );
    // A file is compared with the base it extends.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("diff-what-if.toml");
    std::fs::write(
        &file,
        "extends = \"att-in-host\"\n[pci.system]\nclock_mhz = 66.0\n",
    )
    .expect("write");
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "--config",
        file.to_str().unwrap(),
        "config",
        "--diff",
        "--format",
        "json",
    ]))
    .expect("JSON");
    assert_eq!(v["against"], "att-in-host");
    assert_eq!(v["changes"][0]["key"], "pci.system.clock_mhz");
    assert_eq!(v["changes"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(hvia(&["config", "--diff", "--show"]).status.code(), Some(2));
    assert_eq!(hvia(&["config"]).status.code(), Some(2));
}

#[test]
fn completions_for_each_shell() {
    assert!(ok(&["completions", "bash"]).contains("_hvia()"));
    assert!(ok(&["completions", "zsh"]).starts_with("#compdef hvia"));
    let fish = ok(&["completions", "fish"]);
    assert!(
        fish.contains("complete -c hvia") && fish.contains("sweep"),
        "{fish}"
    );
    let o = hvia(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("tcsh"));
}

#[test]
fn version_names_the_commit() {
    let v = ok(&["--version"]);
    assert!(v.starts_with("hvia 0.1.0 (commit "), "{v}");
    assert!(v.trim_end().ends_with(')'), "{v}");
}
