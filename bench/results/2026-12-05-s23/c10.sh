#!/usr/bin/env bash
# s23: the first -npl run's decode cost (issue 15): the same run four times in one process, with and without replay
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name --format=csv,noheader; } | tee "$O/machine.txt"
$Z synth --like qwen3-8b --type q4_k_m -o /tmp/8b.gguf > /dev/null 2> "$O/synth.err"
for x in "" --no-replay; do
  timeout 60 $Z bench -m /tmp/8b.gguf --backend vulkan -npl 1,1,1,1 -npp 128 -ntg 32 $x > "$O/r$x.txt" 2>&1
  echo "== [$x] rc $?"; grep -E "^\|   128|replay|recorded" "$O/r$x.txt" | head -8
done
