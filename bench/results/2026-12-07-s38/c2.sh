#!/usr/bin/env bash
# s38 call 2: the server under load again with the one-pass sampler and /metrics' step / host split (s37's
# load.sh), then issue 15's side-by-side of the 35B-A3B (256 experts), every test, REPS 2 (s36's sbs.sh).
# Carry .dev (zinc, zinc-load, side-by-side.sh), .gl, .ll.
# (.dev's binaries carried xz-compressed: the tree's files count by disk blocks against the carry's 64 MiB)
for f in .dev/*.xz; do xz -dc $f > ${f%.xz} && chmod +x ${f%.xz}; done
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
syn qwen3-8b
for sw in 0 400; do
  echo "== system words $sw $(date +%T)"
  SYSTEM_WORDS=$sw CTX=2048 OUT=$O/load-$sw COMMIT=$(cat .dev/commit) timeout 150 tools/load/h200.sh .dev/zinc .dev/zinc-load \
    /tmp/sbs-models/qwen3-8b.gguf 2>&1 | grep -vE "^\\$" | tail -6
  grep -E "^zinc_(prefix_cache_(hits|reused)|engine_(step|host)_seconds|engine_steps)" $O/load-$sw/zinc-metrics.txt
done
echo "== side by side $(date +%T)"
LIMIT=330 SHAPES=qwen3.5-35b-a3b bash bench/results/2026-12-07-s36/sbs.sh | tail -12
echo "end $(date +%T)"
