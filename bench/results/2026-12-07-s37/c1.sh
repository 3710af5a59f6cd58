#!/usr/bin/env bash
# s37 call 1: s36's next.sh. The GEMM op tests on NV cooperative matrix 2 at HEAD (every config must pass since
# 318b5d9's 2,048-value accumulator rule), then the 35B-A3B's pp512 with the grouped GEMM's dequantised copy
# (moe_prep_tok=1) and without (the default), both on the 64 x 64 tile, against the grouped 128 x 32 tile
# (cm2_moe_cfg=6, new: 16 tokens an expert fill its 128 x 16 half) and 128 x 64 (5), and the prefill profile.
# Carry .dev (zinc, tvo (grouped tests) and tvc (test_matmat_cm2) from SUITE=test_vk_ops TVL=tvo bench/device-build.sh ...) and .gl.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
(syn qwen3.5-35b-a3b) &
t() { timeout $2 .dev/$1 > $O/$1.txt 2>&1; echo "$1 rc $?"; grep -E "^(ok|FAIL)|fail|run:|vk_ops:|passed" $O/$1.txt | head -40; }
t tvo 170
# The grouped GEMM end to end: a 35B-A3B of 2 layers (all 256 experts, vocabulary 1,000), 320 prompt tokens (10
# an expert), zinc eval on Vulkan with each grouped tile against the CPU backend: prompt logits' nmse, greedy equal.
.dev/zinc synth --like qwen3.5-35b-a3b --layers 2 --vocab 1000 -o /tmp/e35.gguf > /dev/null 2>&1
T=$(seq -s, 3 322)
timeout 120 .dev/zinc eval -m /tmp/e35.gguf --tokens $T -n 8 --backend cpu > /tmp/e-cpu.json 2>/dev/null
for c in poll=on cm2_moe_cfg=6 cm2_moe_cfg=6,moe_prep_tok=1 moe_prep_tok=1 cm2_moe_cfg=5; do
  timeout 60 .dev/zinc eval -m /tmp/e35.gguf --tokens $T -n 8 --backend vulkan --tune $c > /tmp/e-vk.json 2>/dev/null
  python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in ('/tmp/e-cpu.json', '/tmp/e-vk.json'))
num = sum((x - y) ** 2 for r, s in zip(a['prompt_logits'], b['prompt_logits']) for x, y in zip(r, s))
den = sum(x * x for r in a['prompt_logits'] for x in r)
print('eval $c: %d rows, nmse %.3g, greedy %s' % (len(b['prompt_logits']), num / den, 'equal' if a['greedy'] == b['greedy'] else 'DIFFER'))
" 2>&1 | tail -1
done
wait
b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null; b qwen3.5-35b-a3b zinc poll=on "-p 64" > /dev/null
for i in 1 2; do for c in moe_prep_tok=1 poll=on cm2_moe_cfg=6 cm2_moe_cfg=6,moe_prep_tok=1 cm2_moe_cfg=5; do
  b qwen3.5-35b-a3b zinc $c "-p 512"; done; done
timeout 60 .dev/zinc bench -m /tmp/sbs-models/qwen3.5-35b-a3b.gguf --backend vulkan -p 512 -n 0 -r 1 --profile > $O/prof.txt 2>&1
awk '/prefill of 512/{n++} n==2' $O/prof.txt | head -16
t tvc 100
