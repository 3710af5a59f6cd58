#!/usr/bin/env bash
# s34 call 1. Copies: bench/device-build.sh test_gdn test_attention_mm test_attention_refused; SUITE=test_vk_ops
# TVL=tvo bench/device-build.sh test_matvec_moe_tail test_matvec_moe_route test_matvec_gated_norm
# test_matvec_fused_x; .dev/zinc0 e6f07fa's zinc. .dev/zinc: the experts' down computing the MoE tail (tuning
# moe_tail), the experts' gate / up picking the experts (moe_route), the DeltaNet conv in its projection's
# mat-vec (mv_conv) and its gated norm in the output's (mv_gnorm), all on; the attention gate in its output's x
# (no key). Most wanted first: tvo (those kernels on subgroups of 32), decode (tg128, the step's dispatches and
# barriers) of the 35B (256 experts): zinc0, all four off, each off, all on; of the 2B: zinc0, the DeltaNet two
# off, all on; alternated twice. Then the 35B's batched decode at 8 and 32 sequences all off and all on, tvl,
# and s33's unrun pp512 comparison of the delta rule's staging (2B, 35B).
. bench/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; cat .dev/commit
echo "== tvo"; timeout 120 .dev/tvo 2>&1 | grep -E "^ok|FAIL|failed|passed" | head
t() { echo "$1 $2 $3: $(timeout 90 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan -p 16 -n 128 -r 3 --tune $3 2>&1 | grep -E '^tg|^step ' | tr -s ' ' | tr '\n' ' ')"; }
syn qwen3.5-35b-a3b
OFF=moe_tail=off,moe_route=off,mv_conv=off,mv_gnorm=off
for i in 1 2; do for c in "zinc0 poll=on" "zinc $OFF" "zinc moe_tail=off" "zinc moe_route=off" "zinc mv_conv=off" "zinc mv_gnorm=off" "zinc moe_tail=on"; do
  t qwen3.5-35b-a3b $c; done; done
syn qwen3.5-2b
for i in 1 2; do for c in "zinc0 poll=on" "zinc mv_conv=off,mv_gnorm=off" "zinc mv_conv=on"; do t qwen3.5-2b $c; done; done
for c in $OFF moe_tail=on; do
  echo "35b batched $c: $(timeout 150 .dev/zinc bench -m /tmp/sbs-models/qwen3.5-35b-a3b.gguf --backend vulkan -npl 8,32 -npp 128 -ntg 32 --tune $c 2>&1 | tail -4 | tr -s ' ' | tr '\n' ' ')"
done
echo "== tvl"; timeout 60 .dev/tvl 2>&1 | grep -E "^ok|FAIL|failed|passed" | head
for i in 1 2; do for c in "zinc0 poll=on" "zinc gdn_tc=16" "zinc gdn_tc=16,gdn_vec=on" "zinc gdn_rows=2"; do b qwen3.5-2b $c "-p 512"; done; done
for c in "zinc0 poll=on" "zinc gdn_tc=16"; do b qwen3.5-35b-a3b $c "-p 512"; done
