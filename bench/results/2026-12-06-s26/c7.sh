#!/usr/bin/env bash
# why -npl 1 decodes slower than plain tg: engine sized for 64 sequences vs 1, and profiles
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f /tmp/qwen3-8b.gguf ] || $Z synth --like qwen3-8b --type q4_k_m -o /tmp/qwen3-8b.gguf > /dev/null 2> "$O/synth.err"
M=/tmp/qwen3-8b.gguf
timeout 40 $Z bench -m $M --backend vulkan -p 128 -n 64 -r 2 > "$O/plain.txt" 2>&1; grep -E '^(pp|tg)' "$O/plain.txt"
timeout 40 $Z bench -m $M --backend vulkan -npl 1 -npp 128 -ntg 64 > "$O/npl1.txt" 2>&1; grep -E '^\|   128|^steps' "$O/npl1.txt"
timeout 60 $Z bench -m $M --backend vulkan -npl 1,64 -npp 128 -ntg 64 > "$O/npl164.txt" 2>&1; grep -E '^\|   128|^steps' "$O/npl164.txt"
timeout 40 $Z bench -m $M --backend vulkan -p 128 -n 4 -r 1 --profile > "$O/prof-plain.txt" 2>&1
timeout 40 $Z bench -m $M --backend vulkan -npl 1 -npp 128 -ntg 4 --profile > "$O/prof-npl1.txt" 2>&1
grep -A14 "decode of 1 token(s) at position 13[0-9]" "$O/prof-plain.txt" | head -15
grep -A14 "decode of 1 token(s) at position 13[0-9]" "$O/prof-npl1.txt" | head -15
