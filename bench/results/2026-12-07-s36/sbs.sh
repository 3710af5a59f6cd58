#!/usr/bin/env bash
# issue 15's side-by-side (../shared/peers/side-by-side.sh, every test, REPS 2) of SHAPES (default the
# 35B-A3B with 256 experts) at .dev/commit. Carry .dev (zinc, side-by-side.sh), .gl and .ll (the peers' tarball
# without libmtmd and llama-batched-bench).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
mkdir -p /tmp/ll && tar -xJf .ll/llama-cuda-slim.tar.xz -C /tmp/ll; L=$(dirname "$(find /tmp/ll -name llama-bench | head -1)")
REPS=2 LLAMA_DIR=$L OUTDIR=$O/sbs timeout ${LIMIT:-580} bash .dev/side-by-side.sh $(realpath .dev/zinc) ${SHAPES:-qwen3.5-35b-a3b} 2>&1 | tail -20
