#!/usr/bin/env bash
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
[ -f /tmp/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err"
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 32 -npp 128 -ntg 8 --profile > "$O/prof32.txt" 2>&1
grep -B2 -A30 "decode of 32" "$O/prof32.txt" | head -70
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -npl 64 -npp 128 -ntg 8 --profile > "$O/prof64.txt" 2>&1
grep -A30 "decode of 64" "$O/prof64.txt" | head -34
timeout 60 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 0 -n 8 -r 1 --profile > "$O/prof1.txt" 2>&1
grep -A30 "decode of 1 " "$O/prof1.txt" | head -34
