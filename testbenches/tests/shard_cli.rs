//! `hvia pingpong --shard K/N` and `hvia merge`: the shards of a sweep, merged, give the
//! unsharded report (apart from the wall time and the start instant); a missing,
//! repeated or foreign shard is refused naming the file; traces do not go with a shard.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .output()
        .expect("hvia runs")
}

/// A scratch directory of this test process, removed when dropped (also when an
/// assertion fails).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("hvia-shard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The report of `args`, without what differs from run to run.
fn report(args: &[&str]) -> Value {
    let o = hvia(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    strip(&mut v);
    v
}

fn strip(v: &mut Value) {
    v["simulation"]
        .as_object_mut()
        .unwrap()
        .remove("wall_seconds");
    v["run"].as_object_mut().unwrap().remove("started_at");
}

#[test]
fn merged_shards_equal_the_unsharded_sweep() {
    let base = [
        "pingpong",
        "--sizes",
        "4..64,100",
        "--iters",
        "1",
        "--format",
        "json",
    ];
    let whole = report(&base);
    let scratch = Scratch::new();
    let mut files = Vec::new();
    for k in ["2/3", "1/3", "3/3"] {
        let o = hvia(&[&base[..], &["--shard", k]].concat());
        assert!(o.status.success());
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["shard"]["count"], 3);
        let path = scratch.file(&format!("s{}.json", &k[..1]));
        std::fs::write(&path, &o.stdout).unwrap();
        files.push(path);
    }
    let names: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let merged = report(&[&["merge"][..], &names[..]].concat());
    assert_eq!(merged, whole);
    // A shard missing, or given twice: refused, exit 2.
    for bad in [&names[..2], &[names[0], names[0], names[1]][..]] {
        let o = hvia(&[&["merge"][..], bad].concat());
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(err.contains("missing") || err.contains("twice"), "{err}");
    }
}

#[test]
fn a_shard_takes_no_trace_files_and_bad_shards_are_refused() {
    let o = hvia(&["pingpong", "--shard", "1/2", "--vcd", "x.vcd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--shard"));
    for bad in ["0/2", "3/2", "x"] {
        let o = hvia(&["pingpong", "--shard", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
}
