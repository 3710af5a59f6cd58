#!/usr/bin/env bash
# issue 14's table (llama-batched-bench) and issue 15's side-by-side (llama-bench), same call, SHAPES given
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=$PWD/.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee "$O/machine.txt"
mkdir -p /tmp/ll /tmp/sbs-models && cat .ll/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll; L=/tmp/ll/llama-cuda
for s in "$@"; do
  f=/tmp/sbs-models/$(echo "$s" | tr -c 'A-Za-z0-9.\n-' '_').gguf
  t0=$(date +%s); $Z synth --like $s --type q4_k_m -o $f > /dev/null 2>> "$O/synth.err"; echo "synth $s $(( $(date +%s) - t0 )) s"
  timeout 150 $Z bench -m $f --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 > /tmp/z-$s.txt 2>&1
  echo "zinc  $s: $(grep -E '^\|   128' /tmp/z-$s.txt | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
  LD_LIBRARY_PATH=$L timeout 150 $L/llama-batched-bench -m $f -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > /tmp/l-$s.txt 2>&1
  echo "llama $s: $(grep -E '^\|   128' /tmp/l-$s.txt | awk -F'|' '{printf "npl%s TG %s | ", $4, $9}')"
  cat /tmp/z-$s.txt /tmp/l-$s.txt > "$O/batched-$s.txt"
  t0=$(date +%s); LLAMA_DIR=$L OUTDIR=/tmp/sbs-$s REPS=${REPS:-3} timeout ${SBS_LIMIT:-400} bash .dev/side-by-side.sh $Z $s > /dev/null 2>&1
  echo "side-by-side $s $(( $(date +%s) - t0 )) s"; cat /tmp/sbs-$s/table.md; cat /tmp/sbs-$s/zinc.jsonl /tmp/sbs-$s/llama.jsonl > "$O/sbs-$s.jsonl"
done
