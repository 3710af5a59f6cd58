#!/usr/bin/env bash
# (.ll: the peers' llama-cuda tarball repacked without llama-batched-bench and libmtmd, which llama-bench does not load, to fit the 64 MiB carry)
# s35 call 4 (0a237b6: mvx_wg 512, mvx_wgs 132): issue 15's side-by-side, tg128 (REPS 2), the three shapes;
# the old fused mat-vec shape (128 x 528) against the new default in this binary; then variants around it.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
mkdir -p /tmp/ll && tar -xJf .ll/llama-cuda-slim.tar.xz -C /tmp/ll; L=$(dirname "$(find /tmp/ll -name llama-bench | head -1)")
Z=$(realpath .dev/zinc)
TESTS=tg128 REPS=2 LLAMA_DIR=$L OUTDIR=$O/sbs timeout 300 bash .dev/side-by-side.sh $Z qwen3-8b qwen3.5-2b qwen3.5-35b-a3b 2>&1 | tail -8
t() { echo "$1 $2 $3: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 16 -n 128 -r 3 --tune $3 2>&1 | grep -E '^tg' | tr -s ' ' | tr '\n' ' ')"; }
for s in qwen3-8b qwen3.5-35b-a3b qwen3.5-2b; do for c in mvx_wg=128,mvx_wgs=528 poll=on; do t $s zinc $c; done; done
for s in qwen3-8b qwen3.5-2b; do for c in poll=on mvx_wg=256 mvx_rows=1 mvx_unroll=4 mvx_pf=2 mvx_modes=13 mvx_modes=11; do t $s zinc $c; done; done
