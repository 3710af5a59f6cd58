#!/usr/bin/env bash
# s24, for the next GPU session (none was lent in s24): (1) c11.sh's split-K check and mm_split_wgs sweep;
# (2) long-context decode with each KV cache format on the 8B (attn_dec.comp now reads quantized caches):
# tg64 at depth 4096 and 16384, pp512, KV bytes per token from the load line.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O/kv"
bash .dev/c11.sh
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc
for kt in f16 q8_0 q4_0 q4_0r q3_0r; do
  for d in 4096 16384; do
    timeout 90 $Z bench -m /tmp/8b.gguf --backend vulkan -p 512 -n 64 -r 2 --depth $d --kv-type $kt > "$O/kv/$kt-$d.txt" 2>&1
    echo "kv $kt depth $d rc $?: $(grep -E 'tg|pp' "$O/kv/$kt-$d.txt" | tr '\n' ' ' | cut -c1-200)"
  done
done
cd "$O" && tar czf kv.tgz kv && rm -rf kv
