#!/usr/bin/env bash
# CPU decode with each KV cache format, demo model, depth 0 and 3,000 (its context is 4,096)
cd /work/main
for kt in f16 q8_0 q4_0 q4_0r q3_0r; do
  for d in 0 3000; do
    echo "== kv $kt depth $d"
    build/zinc bench -m models/zinc-demo-qwen35.gguf --backend cpu -p 256 -n 64 -r 3 --depth $d --kv-type $kt 2>&1 | grep -vE "^zinc: backend"
  done
done
