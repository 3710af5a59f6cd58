#!/usr/bin/env bash
# s30 call 2: issue 14's table (zinc bench -npl 1,8,32,64 against llama-batched-bench, same files, one call) for the
# shapes given, then issue 15's side-by-side (llama-bench) for the first shape.
. bench/device-env.sh
Z=$PWD/.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee "$O/machine.txt"
mkdir -p /tmp/ll /tmp/sbs-models && cat .ll/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll; L=$(dirname "$(find /tmp/ll -name llama-bench | head -1)")
for s in "$@"; do
  f=/tmp/sbs-models/$s.gguf
  $Z synth --like $s --type q4_k_m -o $f > /dev/null 2>> "$O/synth.err"
  timeout 150 $Z bench -m $f --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 > /tmp/z-$s.txt 2>&1
  echo "zinc  $s: $(grep -E '^\|   128' /tmp/z-$s.txt | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
  LD_LIBRARY_PATH=$L timeout 150 $L/llama-batched-bench -m $f -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > /tmp/l-$s.txt 2>&1
  echo "llama $s: $(grep -E '^\|   128' /tmp/l-$s.txt | awk -F'|' '{printf "npl%s TG %s | ", $4, $9}')"
  cat /tmp/z-$s.txt /tmp/l-$s.txt > "$O/batched-$s.txt"
done
s=$1
[ "${SBS:-1}" = 0 ] && exit 0
REPS=2 LLAMA_DIR=$L OUTDIR=$O/sbs-$s timeout ${SBS_LIMIT:-240} bash .dev/side-by-side.sh $Z $s > /dev/null 2>&1
cat $O/sbs-$s/table.md
