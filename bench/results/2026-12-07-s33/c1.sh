#!/usr/bin/env bash
# s33 call 1 (s32's c1.sh, not run there: no machine came) (copies: bench/device-build.sh; .dev/zinc0: e6f07fa's zinc): .dev/zinc = gdn.comp with RPT state rows
# per lane cluster (gdn_rows), prompts staged through shared memory gdn_tc tokens at a time (vec4 q/k blocks) with
# their gates computed once per chunk (gdn_tc 0, the default: per-cluster loads one token ahead, as e6f07fa);
# lanes on single floats (bit for bit e6f07fa's results) or vec4 blocks (gdn_vec=on).
# tvl: test_gdn, test_attention_mm, test_attention_refused (bench/device-build.sh test_gdn test_attention_mm test_attention_refused). Then pp512 of
# the 2B and the 35B (256 experts) by gdn_tc / gdn_rows / gdn_lanes, a profile of the 35B, and the 8B's prefill
# with the sg attention kernel from empty (fa_sg_kv 1) against the default (1024). Most wanted first.
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; cat .dev/commit
echo "== tvl"; timeout 60 .dev/tvl 2>&1 | grep -E "^ok|FAIL|failed|passed" | head
prof() { timeout 60 .dev/zinc bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 512 -n 0 -r 2 --profile --tune $2 > $O/prof-$1.txt 2>&1
  echo "== profile $1 $2"; grep -E '^pp|ms ' $O/prof-$1.txt | head -12; }
if [ "${QUICK:-0}" = 1 ]; then # c2.sh: what fits a few device minutes, alternated
  syn qwen3.5-2b
  for i in 1 2; do for c in "zinc0 poll=on" "zinc gdn_tc=16" "zinc gdn_tc=16,gdn_vec=on" "zinc gdn_rows=2"; do b qwen3.5-2b $c "-p 512"; done; done
  syn qwen3.5-35b-a3b
  for i in 1 2; do for c in "zinc0 poll=on" "zinc gdn_tc=16" "zinc gdn_tc=16,gdn_vec=on"; do b qwen3.5-35b-a3b $c "-p 512"; done; done
  exit
fi
syn qwen3.5-2b
for i in 1 2; do for c in "zinc0 poll=on" "zinc gdn_tc=16" "zinc gdn_tc=16,gdn_vec=on" "zinc gdn_tc=0" "zinc gdn_rows=2"; do b qwen3.5-2b $c "-p 512"; done; done
syn qwen3.5-35b-a3b
for c in "zinc0 poll=on" "zinc gdn_tc=16" "zinc gdn_tc=16,gdn_vec=on" "zinc gdn_tc=0" "zinc gdn_rows=2"; do b qwen3.5-35b-a3b $c "-p 512"; done
prof qwen3.5-35b-a3b gdn_tc=16
for c in gdn_lanes=16 gdn_lanes=32 gdn_rows=4 gdn_tc=32 gdn_lanes=16,gdn_rows=2 gdn_tc=8; do b qwen3.5-2b zinc $c "-p 512"; done
b qwen3.5-2b zinc0 poll=on "-p 4096"; b qwen3.5-2b zinc gdn_tc=16 "-p 4096"
syn qwen3-8b
for a in "-p 512" "-p 4096"; do b qwen3-8b zinc fa_sg_kv=1024 "$a"; b qwen3-8b zinc fa_sg_kv=1 "$a"; done
