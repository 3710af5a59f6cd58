#!/usr/bin/env bash
# s37 call 2 (the last 380 s of device time): at d257bc9 (grouped GEMMs on 128 x 64), the grouped GEMM end to end
# against the 64 x 64 tile that passed its op tests (zinc eval, Vulkan both: a 35B-A3B of 2 layers, all 256
# experts, 320 prompt tokens), then issue 15's side-by-side of the 35B-A3B, pp512 and tg128 only.
# Carry .dev (zinc, side-by-side.sh), .gl and .ll.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat .dev/commit
.dev/zinc synth --like qwen3.5-35b-a3b --layers 2 --vocab 1000 -o /tmp/e35.gguf > /dev/null 2>&1
T=$(seq -s, 3 322)
for c in cm2_moe_cfg=3 poll=on; do
  timeout 60 .dev/zinc eval -m /tmp/e35.gguf --tokens $T -n 8 --backend vulkan --tune $c > /tmp/e-$c.json 2>/dev/null; done
python3 -c "
import json
a, b = (json.load(open(f)) for f in ('/tmp/e-cm2_moe_cfg=3.json', '/tmp/e-poll=on.json'))
num = sum((x - y) ** 2 for r, s in zip(a['prompt_logits'], b['prompt_logits']) for x, y in zip(r, s))
den = sum(x * x for r in a['prompt_logits'] for x in r)
print('eval default (128 x 64) against 64 x 64: %d rows, nmse %.3g, greedy %s' % (len(b['prompt_logits']), num / den, 'equal' if a['greedy'] == b['greedy'] else 'DIFFER'))
"
TESTS="pp512 tg128" LIMIT=230 bash bench/results/2026-12-07-s36/sbs.sh 2>&1 | grep -vE "^(Unpacking|Selecting|Preparing)" | tail -8
