#!/usr/bin/env bash
# the cold first row (issue 15: slow repetitions after the machine idles): SM clock and p-state sampled every
# 50 ms while a fresh 2B runs -npl 1,1,1; then c5.sh on the 35B with all 256 experts
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
$Z synth --like qwen3.5-2b --type q4_k_m -o /tmp/q2b.gguf > /dev/null 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,utilization.gpu --format=csv,noheader -lms 50 > /tmp/clk.txt 2>&1 & np=$!
sleep 1; date -u '+start %T.%N'
timeout 60 $Z bench -m /tmp/q2b.gguf --backend vulkan -npl 1,1,1 -npp 128 -ntg 128 2>&1 | grep -E '^\|   128|^steps'
date -u '+end %T.%N'; sleep 0.5; kill $np
awk -F', ' '{print $2, $4, $5, $6}' /tmp/clk.txt | uniq -c | head -40; cp /tmp/clk.txt "$O/clk.txt"
SBS_LIMIT=330 bash .dev/c5.sh qwen3.5-35b-a3b
