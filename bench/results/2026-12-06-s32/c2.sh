#!/usr/bin/env bash
# s32 call 2: issue 15's side-by-side (../shared/peers/side-by-side.sh, llama-bench CUDA) for the shapes given, at
# .ll/commit, one run of the script per shape (a table each); ZN_TUNE from the environment.
. bench/device-env.sh
cat .ll/commit; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "ZN_TUNE=${ZN_TUNE:-}"
for s in "$@"; do
  REPS=${REPS:-2} TESTS=${TESTS:-"pp512 pp4096 tg128"} OUTDIR=$O/sbs-$s timeout ${LIM:-300} bash .ll/side-by-side.sh .ll/zinc $s > /dev/null 2>&1
  grep -v "^|---\|^| shape" $O/sbs-$s/table.md
done
