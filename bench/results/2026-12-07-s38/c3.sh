#!/usr/bin/env bash
# s38 call 3: the server under load once more (no system prompt) with the block-skipping scan and sampler_set,
# then issue 15's side-by-side of the 8B and the 2B, every test, REPS 2, as time allows.
# Carry .dev (zinc.xz, zinc-load.xz, side-by-side.sh), .gl, .ll.
for f in .dev/*.xz; do xz -dc $f > ${f%.xz} && chmod +x ${f%.xz}; done
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
syn qwen3-8b
echo "== system words 0 $(date +%T)"
SYSTEM_WORDS=0 CTX=2048 OUT=$O/load-0 COMMIT=$(cat .dev/commit) timeout 150 tools/load/h200.sh .dev/zinc .dev/zinc-load \
  /tmp/sbs-models/qwen3-8b.gguf 2>&1 | grep -vE "^\\$" | tail -5
grep -E "^zinc_engine_(step|host)_seconds|^zinc_engine_steps" $O/load-0/zinc-metrics.txt
echo "== side by side $(date +%T)"
LIMIT=${LIMIT:-280} SHAPES="qwen3-8b qwen3.5-2b" bash bench/results/2026-12-07-s36/sbs.sh | tail -12
echo "end $(date +%T)"
