#!/usr/bin/env bash
# s38 call 3 (the budget's last ~4 minutes): issue 15's side-by-side of the 8B, every test, REPS 2, then the
# server under load once more (no system prompt) with the block-skipping scan and sampler_set, as time allows.
# Carry .dev (zinc.xz, zinc-load.xz, side-by-side.sh), .gl, .ll.
for f in .dev/*.xz; do xz -dc $f > ${f%.xz} && chmod +x ${f%.xz}; done
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
echo "== side by side $(date +%T)"
LIMIT=${LIMIT:-150} SHAPES=qwen3-8b bash bench/results/2026-12-07-s36/sbs.sh | tail -8
echo "== system words 0 $(date +%T)"
LEVELS=8,32 SYSTEM_WORDS=0 CTX=2048 OUT=$O/load-0 COMMIT=$(cat .dev/commit) timeout 70 tools/load/h200.sh .dev/zinc \
  .dev/zinc-load /tmp/sbs-models/qwen3-8b.gguf 2>&1 | grep -vE "^\\$" | tail -4
grep -E "^zinc_engine_(step|host)_seconds|^zinc_engine_steps" $O/load-0/zinc-metrics.txt
echo "end $(date +%T)"
