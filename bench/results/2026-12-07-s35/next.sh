#!/usr/bin/env bash
# s35's next calls (not run). Carry .dev and .gl (call 1), .dev, .gl and .ll (call 2): the two do not fit one
# 64 MiB carry. .dev: bench/device-build.sh at the commit to measure; for call 1 also .dev/zincP, a zinc built the
# same way at 969cd78 (before attn.comp's batched loads); for call 2 ../shared/peers/side-by-side.sh copied in.
# .ll: the peers' llama-cuda tarball repacked without libmtmd, llama-batched-bench and its library as
# llama-cuda-slim.tar.xz (s35 c4.sh).
#   bash next.sh 1: batched 35B with per-token experts of several tokens on the second class (128 x 528, the default
#     since 8087f03) against the wide workgroups (512 x 132: 0a237b6's), alternated twice; attn.comp's batched
#     loads (4218597) against zincP on the 8B's and 2B's tg128 from a 16-token prompt (contexts of 16-144 keys:
#     attn.comp up to attn_dec_min 64) and tg32 at -p 0; mvx_fill off / on (9ed2797) on the three shapes; the
#     8B's decode profile at position 30.
#   bash next.sh 2: issue 15's side-by-side, every test, REPS 2.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
t() { echo "$1 $2 $3 $4: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan $4 -r 3 --tune $3 2>&1 | grep -E '^tg' | tr -s ' ' | tr '\n' ' ')"; }
if [ "${1:-1}" = 1 ]; then
  # first, the new defaults' kernels on the GPU against their references (.dev/tvo: SUITE=test_vk_ops TVL=tvo
  # bench/device-build.sh test_matvec_types test_matvec_fused_x test_matvec_grouped test_matvec_experts) and the
  # embedded fixture's logits, Vulkan against CPU: none of s35's device calls checked results
  timeout 60 .dev/tvo 2>&1 | tail -6
  T=$(seq -s, 5 40); for b in cpu vulkan; do timeout 30 .dev/zinc eval --tokens $T -n 16 --backend $b > /tmp/e-$b.json 2>/dev/null; done
  python3 -c "
import json
a, b = (json.load(open('/tmp/e-%s.json' % n)) for n in ('cpu', 'vulkan'))
for k in a:
    if isinstance(a[k], list) and a[k] and isinstance(a[k][0], list):
        num = sum((x - y) ** 2 for r, s in zip(a[k], b[k]) for x, y in zip(r, s)); den = sum(x * x for r in a[k] for x in r)
        print('eval', k, len(a[k]), 'rows, vulkan against cpu: nmse %.3g' % (num / den))
    elif k != 'prompt': print('eval', k, 'equal' if a[k] == b[k] else 'DIFFER')
"
  for s in qwen3.5-35b-a3b qwen3-8b qwen3.5-2b; do syn $s; done
  for i in 1 2; do for c in poll=on mvxb_wg=512,mvxb_wgs=132; do
    echo "35B -npl 8,32 $c:"; timeout 80 .dev/zinc bench -m /tmp/sbs-models/qwen3.5-35b-a3b.gguf --backend vulkan \
      -npl 8,32 -npp 128 -ntg 32 --tune $c 2>&1 | grep -E '^\| +128'
  done; done
  t qwen3.5-35b-a3b zinc poll=on "-p 16 -n 128"
  for s in qwen3-8b qwen3.5-2b; do for i in 1 2; do for z in zincP zinc; do
    t $s $z poll=on "-p 16 -n 128"; t $s $z poll=on "-p 0 -n 32"
  done; done; done
  for i in 1 2; do for s in qwen3.5-2b qwen3-8b qwen3.5-35b-a3b; do for c in mvx_fill=off mvx_fill=on; do
    t $s zinc $c "-p 16 -n 128"
  done; done; done
  for z in zincP zinc; do echo "8B profile $z"; .dev/$z bench -m /tmp/sbs-models/qwen3-8b.gguf --backend vulkan -p 16 -n 16 -r 1 \
    --profile 2>&1 | grep -A10 "position 30" | head -11; done
else
  mkdir -p /tmp/ll && tar -xJf .ll/llama-cuda-slim.tar.xz -C /tmp/ll; L=$(dirname "$(find /tmp/ll -name llama-bench | head -1)")
  REPS=2 LLAMA_DIR=$L OUTDIR=$O/sbs timeout 580 bash .dev/side-by-side.sh $(realpath .dev/zinc) qwen3-8b qwen3.5-2b qwen3.5-35b-a3b 2>&1 | tail -18
fi
