#!/bin/bash
# Issue 13's steady measure of a build's cost, as README "Simulation speed" quotes it:
# the instructions callgrind counts (one thread) for the standard runs, and whether two
# builds give the same JSON apart from the `simulation` block and the run's commit and
# start time. Wall time on a shared machine varies by far more than the changes being
# compared; instruction counts do not (the same build counts the same to within
# 0.01 %). Needs valgrind and python3 (not needed to build or test the project).
#   4b:   hvia pingpong --sizes 4 --iters 2000 --warmup 10        (small messages, steady)
#   1m:   hvia pingpong --sizes 1048576 --iters 2 --warmup 1      (the data path)
#   sweep: hvia pingpong --sizes 4..1048576 --iters 8             (the default sweep; slow)
# Usage:
#   tools/instructions.sh [-r 4b,1m,sweep] BASE_BINARY [NEW_BINARY]
# With two binaries, each run's counts are printed side by side with the change, and
# "same JSON", "same JSON but events (A -> B)" (a change that removes events and nothing
# else: the per-size event counts summed) or "DIFFERENT JSON" (a change meant to be
# exact must print one of the first two).
set -eu
runs="4b,1m"
if [ "${1:-}" == "-r" ]; then runs=$2; shift 2; fi
[ $# -ge 1 ] || { sed -n 2,16p "$0"; exit 2; }
command -v valgrind > /dev/null || { echo "valgrind not found" >&2; exit 2; }
bins=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

args_of() {
  case $1 in
    4b) echo "--sizes 4 --iters 2000 --warmup 10" ;;
    1m) echo "--sizes 1048576 --iters 2 --warmup 1" ;;
    sweep) echo "--sizes 4..1048576 --iters 8" ;;
    *) echo "unknown run '$1' (4b, 1m, sweep)" >&2; exit 2 ;;
  esac
}

# Instructions of one run of binary $1 (index $2) for run kind $3; its JSON in the dir.
count() {
  local out="$dir/$3-$2"
  # shellcheck disable=SC2046 # the arguments are words on purpose
  RAYON_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
    "$1" pingpong $(args_of "$3") --format json > "$out.json" 2> "$out.err" \
    || { echo "run $3 of $1 failed:" >&2; tail -5 "$out.err" >&2; exit 1; }
  sed -n 's/.*I *refs: *//p' "$out.err" | tr -d ,
}

same_json() {
  python3 - "$1" "$2" << 'PY'
import json, sys
def load(p):
    d = json.load(open(p))
    d.pop("simulation", None)
    for v in d.values():
        if isinstance(v, dict):
            v.pop("commit", None)
            v.pop("started_at", None)
    return d
def events(d):
    """The per-size event counts summed, taken out of `d`."""
    return sum(r.pop("events", 0) for r in d.get("results", []))
a, b = load(sys.argv[1]), load(sys.argv[2])
ea, eb = events(a), events(b)
if a != b:
    print("DIFFERENT JSON")
elif ea == eb:
    print("same JSON")
else:
    print(f"same JSON but events ({ea} -> {eb})")
PY
}

for r in ${runs//,/ }; do
  args_of "$r" > /dev/null
  a=$(count "${bins[0]}" 0 "$r")
  if [ ${#bins[@]} -eq 1 ]; then
    printf '%-6s %14s instructions\n' "$r" "$a"
    continue
  fi
  b=$(count "${bins[1]}" 1 "$r")
  change=$(python3 -c "print(f'{($b - $a) / $a * 100:+.2f} %')")
  printf '%-6s %14s -> %14s (%s), %s\n' "$r" "$a" "$b" "$change" \
    "$(same_json "$dir/$r-0.json" "$dir/$r-1.json")"
done
