#!/usr/bin/env bash
# Issue 14 on the H200: aggregate decode at 1/8/32/64 sequences, zinc (Vulkan) and llama-batched-bench (CUDA), same files.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/ll && { [ -x /tmp/ll/llama-cuda/llama-batched-bench ] || cat .dev/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll; }
export LD_LIBRARY_PATH=/tmp/ll/llama-cuda
Z=.dev/zinc
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } > "$O/machine.txt"
for s in "$@"; do
  f=/tmp/$s.gguf
  t0=$SECONDS; [ -f "$f" ] || $Z synth --like $s --type q4_k_m -o $f > /dev/null 2>> "$O/synth.err"; echo "$s: synth $((SECONDS-t0)) s" >> "$O/machine.txt"
  t0=$SECONDS; timeout 240 $Z bench -m $f --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 > "$O/zinc-$s.txt" 2>&1; echo "$s: zinc $((SECONDS-t0)) s rc $?" >> "$O/machine.txt"
  t0=$SECONDS; timeout 240 /tmp/ll/llama-cuda/llama-batched-bench -m $f -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > "$O/llama-$s.txt" 2>&1; echo "$s: llama $((SECONDS-t0)) s rc $?" >> "$O/machine.txt"
  grep -E "^\|" "$O/llama-$s.txt" | tail -5; tail -8 "$O/zinc-$s.txt"
done
cat "$O/machine.txt"
(cd "$O" && tar -czf ../raw.tgz . && rm -f * && mv ../raw.tgz .)
