#!/usr/bin/env bash
# s36 call 1 (s35's next.sh 1, trimmed to fit one call, plus prefill profiles): the GPU's results against the
# references first (.dev/tvo: the mat-vec tests; the embedded fixture's logits Vulkan vs CPU); attn.comp's batched
# loads (4218597, in .dev/zinc) against .dev/zincP (969cd78, before them), 8B and 2B tg128 from 16 tokens and tg32
# from none, alternated twice; the batched 35B's expert class (128 x 528 default vs 512 x 132) at 8 / 32
# sequences; the 35B's pp512 with its grouped GEMM on the dequantised copy (moe_prep_tok=1) or not (27679dd's
# default); mvx_fill off / on once per shape; then the 35B's and 8B's pp512 per op (--profile).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
t() { echo "$1 $2 $3 $4: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan $4 -r 3 --tune $3 2>&1 | grep -E '^tg' | tr -s ' ' | tr '\n' ' ')"; }
timeout 60 .dev/tvo 2>&1 | tail -4
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
echo "synth: $(date +%T)"; for s in qwen3.5-35b-a3b qwen3-8b qwen3.5-2b; do syn $s; done; echo "done: $(date +%T)"
# the grouped GEMM's copy by tokens per expert (27679dd, moe_prep_tok 64: direct at 16 an expert) against the copy
for i in 1 2; do for c in moe_prep_tok=1 poll=on; do b qwen3.5-35b-a3b zinc $c "-p 512"; done; done
for s in qwen3-8b qwen3.5-2b; do for i in 1 2; do for z in zincP zinc; do
  t $s $z poll=on "-p 16 -n 128"; t $s $z poll=on "-p 0 -n 32"
done; done; done
echo "npl: $(date +%T)"
for c in poll=on mvxb_wg=512,mvxb_wgs=132 poll=on; do
  echo "35B -npl 8,32 $c: $(timeout 80 .dev/zinc bench -m /tmp/sbs-models/qwen3.5-35b-a3b.gguf --backend vulkan \
    -npl 8,32 -npp 128 -ntg 32 --tune $c 2>&1 | grep -E '^\| +128' | tr -s ' ' | tr '\n' ' ')"
done
echo "fill: $(date +%T)"
for s in qwen3.5-2b qwen3-8b qwen3.5-35b-a3b; do for c in mvx_fill=off mvx_fill=on; do t $s zinc $c "-p 16 -n 128"; done; done
echo "profiles: $(date +%T)"
for s in qwen3.5-35b-a3b qwen3-8b; do
  timeout 60 .dev/zinc bench -m /tmp/sbs-models/$s.gguf --backend vulkan -p 512 -n 0 -r 1 --profile > $O/prof-$s.txt 2>&1
  grep -A24 "prefill of 512" $O/prof-$s.txt | head -25
done
echo "end: $(date +%T)"
