//! The output files of `pingpong` and `breakdown`: checked before the simulation runs
//! (so a typo in a path does not cost a whole sweep), then written after it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{PingPongError, TraceArgs};

/// What `--plot` draws into, from the file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PlotKind {
    /// Scalable vector graphics (`.svg`).
    Svg,
    /// A bitmap (`.png`).
    Png,
}

impl PlotKind {
    fn of(path: &Path) -> Result<Self, PingPongError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(Self::Svg),
            Some("png") => Ok(Self::Png),
            _ => Err(PingPongError::Input {
                option: "--plot",
                message: format!(
                    "{}: the file name must end in .svg or .png (the format to draw)",
                    path.display()
                ),
            }),
        }
    }
}

/// Checks that every file `trace` names can be written, and the plot's format.
pub(super) fn check_outputs(trace: &TraceArgs) -> Result<Option<PlotKind>, PingPongError> {
    let plot = trace.plot.as_deref().map(PlotKind::of).transpose()?;
    if let Some(p) = &trace.stats {
        crate::stats::StatsFormat::of(p).map_err(|message| PingPongError::Input {
            option: "--stats",
            message,
        })?;
    }
    let mut seen: Vec<(&'static str, PathBuf)> = Vec::new();
    for (option, path) in [
        ("--vcd", &trace.vcd),
        ("--pcap", &trace.pcap),
        ("--perfetto", &trace.perfetto),
        ("--plot", &trace.plot),
        ("--stats", &trace.stats),
    ] {
        if let Some(p) = path {
            let same = same_file_key(p);
            if let Some((first, _)) = seen.iter().find(|(_, k)| *k == same) {
                return Err(PingPongError::Input {
                    option,
                    message: format!(
                        "{first} and {option} name the same file {}: one would overwrite the other",
                        p.display()
                    ),
                });
            }
            seen.push((option, same));
            probe(p).map_err(|e| write_error(option, p, &e))?;
        }
    }
    Ok(plot)
}

/// A path's identity for comparing two output options: the canonical path of an
/// existing file, else the absolute path as given.
fn same_file_key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Opens `path` for writing without changing it (an existing file is not truncated; a
/// new one is removed again).
fn probe(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Err(io::Error::other("is a directory"));
    }
    if path.exists() {
        OpenOptions::new().append(true).open(path).map(drop)
    } else {
        File::create(path)?;
        std::fs::remove_file(path)
    }
}

/// The error of an output file that cannot be written.
pub(super) fn write_error(
    option: &'static str,
    path: &Path,
    e: &dyn std::fmt::Display,
) -> PingPongError {
    PingPongError::Input {
        option,
        message: format!("cannot write {}: {e}", path.display()),
    }
}

/// Writes the counters to the `--stats` file (format by its extension, checked before
/// the run).
pub(super) fn write_stats(
    path: &Path,
    counters: &[crate::stats::Counter],
    runs: Option<&[(u32, Vec<crate::stats::Counter>)]>,
) -> Result<(), PingPongError> {
    crate::stats::write_file(path, counters, runs).map_err(|message| PingPongError::Input {
        option: "--stats",
        message,
    })
}

/// A buffered output file.
pub(super) struct OutFile(BufWriter<File>);

impl OutFile {
    /// Flushes the file.
    pub(super) fn finish(mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Creates (or truncates) `path` for the file of `option`.
pub(super) fn create(option: &'static str, path: &Path) -> Result<OutFile, PingPongError> {
    File::create(path)
        .map(|f| OutFile(BufWriter::new(f)))
        .map_err(|e| write_error(option, path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_kind_follows_the_extension() {
        assert_eq!(PlotKind::of(Path::new("a.svg")).unwrap(), PlotKind::Svg);
        assert_eq!(PlotKind::of(Path::new("dir/A.PNG")).unwrap(), PlotKind::Png);
        for bad in ["a.pdf", "a", "svg"] {
            let err = PlotKind::of(Path::new(bad)).unwrap_err().to_string();
            assert!(err.starts_with("--plot: "), "{err}");
        }
    }

    #[test]
    fn unwritable_paths_name_the_option() {
        let trace = TraceArgs {
            perfetto: Some("/nonexistent-dir/x.json".into()),
            ..TraceArgs::default()
        };
        let err = check_outputs(&trace).unwrap_err().to_string();
        assert!(err.starts_with("--perfetto: cannot write"), "{err}");
        let trace = TraceArgs {
            vcd: Some(std::env::temp_dir()),
            ..TraceArgs::default()
        };
        let err = check_outputs(&trace).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
    }
}
