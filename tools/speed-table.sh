#!/bin/bash
# Issue 13's speed figures, as in README "Simulation speed": for each size, the best of
# N runs (one thread) of `hvia pingpong --sizes S --iters 4 --warmup 1`, with events per
# one-way message (events / 10), simulated time per wall second and events per second;
# then the best of N runs of the default sweep `--sizes 4..1048576 --iters 8` on every
# core. Each run's JSON is written to a file and read once the run has ended, so that
# nothing else takes a core while it runs. Wall times depend on the machine's load: run
# it on a quiet machine, and compare builds by alternating them (pass several
# binaries). Last, exact stepping (`--set sim.stepping=exact`) per size, the best of
# two runs, as README's table has it.
# Usage:
#   tools/speed-table.sh [-n N] [hvia binary ...]   (default: 7 runs, target/release/hvia)
set -eu
n=7
if [ "${1:-}" == "-n" ]; then n=$2; shift 2; fi
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=(./target/release/hvia)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sim='import json,sys; s=json.load(sys.stdin)["simulation"]; print(s["simulated_ps"], s["wall_seconds"], s["events"])'
best() { # binary, then hvia arguments: prints "best_ratio events best_wall"
  local b=$1; shift
  local out=""
  for _ in $(seq "$n"); do
    # The JSON goes to a file and is read after the run: a reader started with the run
    # (a pipe into python) takes a core while the run starts, which slowed the two-core
    # sweep by about a sixth (27 November 2026, the same build: best walls 0.187 s with
    # it, 0.156 s without).
    "$b" pingpong "$@" --format json > "$tmp"
    out+="$(python3 -c "$sim" < "$tmp")"$'\n'
  done
  printf '%s' "$out" | python3 -c '
import sys
rows=[tuple(map(float,l.split())) for l in sys.stdin if l.strip()]
ps,wall,ev=max(rows,key=lambda r:r[0]/r[1])
print(f"{ps/1e12/wall:.3f} {int(ev)} {wall:.6f} {sorted(r[1] for r in rows)[len(rows)//2]:.6f}")'
}
echo "| binary | size | events per message | simulated / wall (best of $n) | events/s | median wall [s] |"
echo "|---|---:|---:|---:|---:|---:|"
for s in 4 1460 65536 1048576; do
  for b in "${bins[@]}"; do
    read -r ratio ev wall med < <(RAYON_NUM_THREADS=1 best "$b" --sizes "$s" --iters 4 --warmup 1)
    python3 -c "print(f'| $b | $s | {$ev/10:,.0f} | $ratio | {$ev/$wall/1e6:.2f} M | $med |')"
  done
done
echo
echo "| binary | sweep 4..1048576 --iters 8 | simulated / wall (best of $n) | events | best wall [s] | median wall [s] |"
echo "|---|---|---:|---:|---:|---:|"
for b in "${bins[@]}"; do
  read -r ratio ev wall med < <(best "$b" --sizes 4..1048576 --iters 8)
  echo "| $b | all cores | $ratio | $ev | $wall | $med |"
done
echo
echo "| binary | size | exact: events per message | exact: simulated / wall (best of 2) |"
echo "|---|---:|---:|---:|"
for s in 4 1460 65536 1048576; do
  for b in "${bins[@]}"; do
    read -r ratio ev _ _ < <(n=2 RAYON_NUM_THREADS=1 best "$b" --sizes "$s" --iters 4 --warmup 1 --set sim.stepping=exact)
    python3 -c "print(f'| $b | $s | {$ev/10:,.0f} | $ratio |')"
  done
done
