#!/bin/bash
# An optional profile-guided build of `hvia` (the README's `cargo run --release` stays
# the default): an instrumented build runs the default sweep of both operations, the
# profile is merged with the toolchain's llvm-profdata, and a second build uses it. The
# simulator is bound by instruction-cache misses (docs/speed-plan.md, eighth round),
# which a profile-guided code layout reduces. Measured 27 November 2026: the 1 MiB
# one-thread run 7 % faster (median of 7 runs alternating with the default build,
# 147.0 -> 136.2 ms), the same JSON. Needs the toolchain's llvm-tools component
# (`rustup component add llvm-tools`); takes two release builds (about 5 minutes on
# two cores).
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
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
RUSTFLAGS="-Cprofile-generate=$data" CARGO_TARGET_DIR="$out/gen" \
  cargo build --release -q -p testbenches
for op in rdma-write send-recv; do
  "$out/gen/release/hvia" pingpong --op "$op" --sizes 4..1048576 --iters 4 --format json > /dev/null
done
"$profdata" merge -o "$data/merged.profdata" "$data"/*.profraw
RUSTFLAGS="-Cprofile-use=$data/merged.profdata" CARGO_TARGET_DIR="$out/use" \
  cargo build --release -q -p testbenches
cp "$out/use/release/hvia" "$out/hvia"
echo "$out/hvia"
