#!/bin/bash
# An optional profile-guided build of `hvia` (the README's `cargo run --release` stays
# the default): an instrumented build runs the sweep `--sizes 4..1048576 --iters 4` of
# both operations, the profile is merged with the toolchain's llvm-profdata, and a
# second build uses it. The run's cache misses are mostly in code, not data
# (cachegrind; docs/speed-plan.md, eighth round); the profile steers inlining and code
# layout by what the run executes (which of them gains what was not measured apart; a
# linker order of the hot functions alone gained nothing: ninth round). Measured 27
# November 2026 with `RAYON_NUM_THREADS=1 hvia pingpong --sizes 1048576 --iters 8`
# (20 one-way messages): 14 % faster (medians of 9 runs
# alternating with the default build, 151.8 -> 130.5 ms), the sweep 3.42x real time
# (2.91x), the same JSON.
# Needs the toolchain's llvm-tools component (`rustup component add llvm-tools`); takes
# two release builds (about 5 minutes on two cores). Both builds are for the host
# target named explicitly, so that build scripts and proc macros are not instrumented;
# the PGO flags replace any RUSTFLAGS of your own.
# Usage:
#   tools/pgo-build.sh [out-dir]   (default target/pgo; prints the binary's path)
set -eu
out=${1:-target/pgo}
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "pgo-build: no llvm-profdata at $profdata; install it with: rustup component add llvm-tools" >&2
  exit 2
fi
unset CARGO_ENCODED_RUSTFLAGS
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
RUSTFLAGS="-Cprofile-generate=$data" CARGO_TARGET_DIR="$out/gen" \
  cargo build --release -q -p testbenches --target "$host"
for op in rdma-write send-recv; do
  "$out/gen/$host/release/hvia" pingpong --op "$op" --sizes 4..1048576 --iters 4 \
    --format json > /dev/null
done
"$profdata" merge -o "$data/merged.profdata" "$data"/*.profraw
RUSTFLAGS="-Cprofile-use=$data/merged.profdata" CARGO_TARGET_DIR="$out/use" \
  cargo build --release -q -p testbenches --target "$host"
cp "$out/use/$host/release/hvia" "$out/hvia"
echo "$out/hvia"
