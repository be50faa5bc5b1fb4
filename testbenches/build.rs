//! Build script: records the commit the binary is built from as `HVIA_GIT_COMMIT`
//! (`hvia --version`, the `run` object of every JSON report).
//!
//! The commit comes from `HVIA_GIT_COMMIT` in the environment if set (a packager's
//! override), else from `git rev-parse` in the source tree, else it is `unknown` (a
//! source tarball, or no git installed): the build never fails for want of git. It
//! names the commit checked out, not edits made since.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!s.is_empty()).then_some(s)
}

/// Reruns the script when `path` changes (a path that does not exist is not watched:
/// cargo would rerun the script on every build).
fn watch(path: &std::path::Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=HVIA_GIT_COMMIT");
    let commit = std::env::var("HVIA_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            let head = git(&["rev-parse", "--short=12", "HEAD"])?;
            // Rebuild when HEAD moves: watch HEAD, the branch ref and packed refs.
            if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
                watch(&PathBuf::from(&dir).join("HEAD"));
            }
            if let (Some(common), Some(branch)) = (
                git(&["rev-parse", "--git-common-dir"]),
                git(&["symbolic-ref", "-q", "HEAD"]),
            ) {
                let common = PathBuf::from(common);
                watch(&common.join(&branch));
                watch(&common.join("packed-refs"));
            }
            Some(head)
        })
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=HVIA_GIT_COMMIT={commit}");
}
