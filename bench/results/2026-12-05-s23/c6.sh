#!/usr/bin/env bash
# s23 call 3: issue 14's table (three shapes, zinc vs llama-batched-bench, 1/8/32/64 sequences, -ntg 128),
# the 32-token tile rule against the old one (--tune cm2_cfg=6 is not the old rule: the old rule is a build away,
# so the 8B at 32 runs with cm2_cfg unset = new rule), then the server under 32 streaming clients.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O/bb" "$O/load"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/ll && ( cat .dev/llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll ) &
Z=.dev/zinc L=.dev/zinc-load
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
for s in qwen3-8b qwen3.5-2b; do $Z synth --like $s --type q4_k_m -o /tmp/$s.gguf > /dev/null 2>> "$O/synth.err"; done
( $Z synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/qwen3.5-35b-a3b.gguf > /dev/null 2>> "$O/synth.err" ) & s35=$!
wait %1 2>/dev/null
export LD_LIBRARY_PATH=/tmp/ll/llama-cuda
for s in qwen3-8b qwen3.5-2b qwen3.5-35b-a3b; do
  [ $s = qwen3.5-35b-a3b ] && wait $s35
  f=/tmp/$s.gguf
  timeout 150 $Z bench -m $f --backend vulkan -npl 1,8,32,64 -npp 128 -ntg 128 > "$O/bb/zinc-$s.txt" 2>&1
  timeout 100 /tmp/ll/llama-cuda/llama-batched-bench -m $f -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 > "$O/bb/llama-$s.txt" 2>&1
  echo "=== $s"; grep -E "^\|" "$O/bb/llama-$s.txt" | tail -4; grep -E "^\|   128|^memory" "$O/bb/zinc-$s.txt"
done
cd "$O" && tar czf all.tgz bb machine.txt && rm -rf bb
