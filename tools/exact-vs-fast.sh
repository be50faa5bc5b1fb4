#!/bin/bash
# Issue 13's equality check: for every preset and both ping-pong operations, the sweep
# `--sizes 4..1048576 --iters 8` gives the same JSON in exact and fast stepping, apart
# from wall time, event counts and the run's metadata (start time, the config digest and
# the override list, which name the stepping). Prints one line per case; exit 1 on any
# difference. Usage: tools/exact-vs-fast.sh [path/to/hvia] (default target/release/hvia).
set -u
B=${1:-./target/release/hvia}
strip='import json,sys
d=json.load(sys.stdin)
d.pop("simulation",None)
d.pop("overrides",None)
for k in ("config_digest","started_at"):
    d.get("run",{}).pop(k,None)
def s(x):
    if isinstance(x,dict):
        return {k:s(v) for k,v in x.items() if k not in ("wall_seconds","events")}
    if isinstance(x,list): return [s(v) for v in x]
    return x
print(json.dumps(s(d),sort_keys=True))'
rc=0
for p in $("$B" presets --format json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))'); do
  for op in rdma-write send-recv; do
    fast=$("$B" pingpong --preset "$p" --op "$op" --sizes 4..1048576 --iters 8 --format json | python3 -c "$strip" | md5sum) || exit 2
    exact=$("$B" pingpong --preset "$p" --op "$op" --sizes 4..1048576 --iters 8 --set sim.stepping=exact --format json | python3 -c "$strip" | md5sum) || exit 2
    if [ "$fast" == "$exact" ]; then echo "$p $op: same"; else echo "$p $op: DIFFERENT"; rc=1; fi
  done
done
exit $rc
