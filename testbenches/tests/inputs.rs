//! Every documented input finishes or is refused, through the binary: settings that
//! are each in range but cannot run together exit 2 naming the key, configuration files
//! are read with a size limit and only when regular, `extends` chains resolve (and name
//! the file and line when they do not), output that cannot be written is an error (a
//! broken pipe is not), and two outputs may not share a path.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `args`, expects exit status 2 without a panic, returns stderr.
fn bad(args: &[&str]) -> String {
    let o = hvia(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    err
}

/// A fresh scratch directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("inputs-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).expect("write scratch file");
    path.display().to_string()
}

#[test]
fn infeasible_settings_exit_2_naming_the_key() {
    for (set, key) in [
        ("card.sdram_mb=1", "card.sdram_mb"),
        ("host.memory_mb=4096", "host.memory_mb"),
        ("wire.mtu_bytes=9014", "wire.mtu_bytes"),
        ("mac.tx_fifo_bytes=1024", "mac.tx_fifo_bytes"),
        ("mac.rx_fifo_bytes=1024", "mac.rx_fifo_bytes"),
    ] {
        let err = bad(&["pingpong", "--sizes", "4", "--set", set]);
        assert!(err.contains(&format!("{key}: ")), "{set}: {err}");
    }
    let err = bad(&[
        "pingpong",
        "--sizes",
        "4",
        "--set",
        "card.att_location=host",
        "--set",
        "host.memory_mb=16",
    ]);
    assert!(err.contains("cannot hold the ATT in host memory"), "{err}");
}

#[test]
fn a_message_larger_than_memory_is_refused_before_running() {
    let err = bad(&[
        "pingpong",
        "--sizes",
        "4,2097152",
        "--set",
        "host.memory_mb=2",
    ]);
    assert!(err.contains("--sizes: 2097152 bytes does not fit"), "{err}");
    assert!(err.contains("host.memory_mb"), "{err}");
    let err = bad(&[
        "breakdown",
        "--size",
        "2097152",
        "--set",
        "host.memory_mb=2",
    ]);
    assert!(err.contains("--size: 2097152 bytes"), "{err}");
}

#[test]
fn config_files_are_regular_and_small() {
    let d = dir("files");
    if Path::new("/dev/zero").exists() {
        let err = bad(&["config", "--show", "--config", "/dev/zero"]);
        assert!(err.contains("not a regular file"), "{err}");
    }
    let err = bad(&["config", "--show", "--config", &d.display().to_string()]);
    assert!(err.contains("not a regular file"), "{err}");
    let big = write(&d.join("big.toml"), &"# padding\n".repeat(200_000));
    let err = bad(&["config", "--show", "--config", &big]);
    assert!(err.contains("too large for a configuration"), "{err}");
    #[cfg(unix)]
    {
        // A named pipe is refused without being opened (opening would block).
        let fifo = d.join("pipe.toml");
        let made = Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err = bad(&["config", "--show", "--config", &fifo.display().to_string()]);
            assert!(err.contains("not a regular file"), "{err}");
        }
    }
}

#[test]
fn extends_chains_resolve_and_errors_name_the_right_file() {
    let d = dir("extends");
    write(
        &d.join("base.toml"),
        "extends = \"att-in-host\"\n[pci.system]\nclock_mhz = 66.0 # source: what-if\n",
    );
    let top = write(
        &d.join("top.toml"),
        "extends = \"base.toml\"\n[pci.local]\nclock_mhz = 66.0 # source: what-if\n",
    );
    let o = hvia(&["config", "--show", "--config", &top]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let shown = text(&o.stdout);
    assert!(shown.contains("att_location = \"host\""), "{shown}");
    assert_eq!(shown.matches("clock_mhz = 66.0").count(), 2, "{shown}");

    // A bad value in the middle file is reported in that file, at its key, even when
    // the key's name appears earlier in a comment.
    write(
        &d.join("base.toml"),
        "extends = \"hvia-ge\"\n# clock_mhz is the bus clock\n[pci.system]\nclock_mhz = \"fast\"\n",
    );
    let err = bad(&["config", "--show", "--config", &top]);
    assert!(err.contains("base.toml:4:"), "{err}");

    // A cycle and an unknown base are errors at the `extends` line.
    write(&d.join("base.toml"), "extends = \"top.toml\"\n");
    let err = bad(&["config", "--show", "--config", &top]);
    assert!(err.contains("a cycle"), "{err}");
    let lost = write(&d.join("lost.toml"), "# what-if\nextends = \"nope\"\n");
    let err = bad(&["config", "--show", "--config", &lost]);
    assert!(err.contains("lost.toml:2:"), "{err}");
}

#[test]
fn output_that_cannot_be_written_is_an_error() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    for args in [&["presets"][..], &["config", "--show"], &["--help"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let o = Command::new(env!("CARGO_BIN_EXE_hvia"))
            .args(args)
            .stdout(full)
            .output()
            .expect("hvia runs");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            text(&o.stderr).contains("cannot write to stdout"),
            "{args:?}"
        );
    }
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(["config", "--show"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hvia runs");
    drop(child.stdout.take()); // the reader goes away before hvia writes
    let o = child.wait_with_output().expect("hvia ends");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
}

#[test]
fn two_outputs_may_not_share_a_file() {
    let d = dir("same");
    let f = d.join("x.out").display().to_string();
    let err = bad(&["breakdown", "--size", "4", "--pcap", &f, "--vcd", &f]);
    assert!(err.contains("--vcd and --pcap"), "{err}");
}
