#!/usr/bin/env bash
# side-by-side.sh on the given shapes (issue 15), with the clocks sampled
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
{ date -u '+%F %T UTC'; cat .dev/commit; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu --format=csv,noheader -l 1 > "$O/clocks.csv" 2>&1 & np=$!
OUTDIR=$O bash .dev/side-by-side.sh .dev/zinc "$@"
kill $np
grep -h '"pp_each"\|"tg_each"' "$O/zinc.jsonl" | python3 -c '
import sys, json
for l in sys.stdin:
    r = json.loads(l); print(r["shape"], r["test"], r.get("pp_each") or r.get("tg_each"))'
cat "$O/machine.txt"
