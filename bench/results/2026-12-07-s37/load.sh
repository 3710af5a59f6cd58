#!/usr/bin/env bash
# issue 14's server under load (tools/load/h200.sh, zinc only) on the synth Qwen3-8B: 1 / 8 / 32 streaming
# clients, without and with a shared 400-word system prompt (the prefix cache; its hits and reused tokens from
# /metrics). Written in s37, not run (the device budget ran out). Carry .dev (zinc, zinc-load: make load) and .gl.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
syn qwen3-8b
for sw in 0 400; do
  echo "== system words $sw $(date +%T)"
  SYSTEM_WORDS=$sw CTX=2048 OUT=$O/load-$sw COMMIT=$(cat .dev/commit) timeout 240 tools/load/h200.sh .dev/zinc .dev/zinc-load \
    /tmp/sbs-models/qwen3-8b.gguf 2>&1 | grep -vE "^\\$" | tail -6
  grep -E "^zinc_prefix_cache_(hits|misses|reused)" $O/load-$sw/zinc-metrics.txt
done
