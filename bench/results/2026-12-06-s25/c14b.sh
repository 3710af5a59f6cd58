#!/usr/bin/env bash
# s25 (lean: little device time left): (1) split-K GEMM correctness on the GPU (test_vk_ops: test_matmat_split, cm2); (2) mm_split_wgs sweep, 8B
# and 2B at 32/64 sequences; (3) the MoE-tail fusion (b5af14d) against the commit before it (zinc-prev, c6fb47d)
# on the 35B shape with 32 experts, tg128, interleaved; (4) tg64 at depth 16384 on the 8B per KV cache format.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O/kv" "$O/bb" "$O/ab"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc P=.dev/zinc-prev
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt"; cat "$O/machine.txt"
( for s in qwen3-8b; do $Z synth --like $s --type q4_k_m -o /tmp/$s.gguf > /dev/null 2>> "$O/synth.err"; touch /tmp/done-$s; done
  $Z synth --like qwen3.5-35b-a3b --experts 32 --type q4_k_m -o /tmp/moe32.gguf > /dev/null 2>> "$O/synth.err" ) & sp=$!
timeout 120 .dev/test_vk_ops > "$O/vk_ops.txt" 2>&1; echo "test_vk_ops rc $? $(tail -1 $O/vk_ops.txt)"; grep -E "FAIL|CHECK" "$O/vk_ops.txt" | head -5
while [ ! -e /tmp/done-qwen3-8b ] && kill -0 $sp 2>/dev/null; do sleep 1; done; echo "8B/2B synth done $(date -u +%T)"
for m in qwen3-8b; do
  for w in off 528 1056 2112; do
    [ $m = qwen3.5-2b ] && [ $w = 528 -o $w = 2112 ] && continue
    timeout 50 $Z bench -m /tmp/$m.gguf --backend vulkan -npl 32,64 -npp 128 -ntg 32 --tune mm_split_wgs=$w > "$O/bb/$m-$w.txt" 2>&1
    echo "$m mm_split_wgs=$w rc $?: $(grep -E '^\|   128' "$O/bb/$m-$w.txt" | awk -F'|' '{printf "npl%s %s  ", $4, $10}')"
  done
done
wait $sp; echo "synth done $(date -u +%T)"
for r in 1; do for b in $P $Z; do
  timeout 60 $b bench -m /tmp/moe32.gguf --backend vulkan -p 512 -n 128 -r 3 > "$O/ab/$(basename $b)-$r.txt" 2>&1
  echo "moe32 $(basename $b) run $r: $(grep -E '^(pp|tg)' "$O/ab/$(basename $b)-$r.txt" | tr -s ' ' | tr '\n' ' ')"
done; done
timeout 40 $Z bench -m /tmp/moe32.gguf --backend vulkan -p 8 -n 2 -r 1 --profile > "$O/ab/prof.txt" 2>&1
grep -E "decode.*dispatches" "$O/ab/prof.txt" | head -2
for kt in f16 q4_0 q3_0r; do
  timeout 45 $Z bench -m /tmp/qwen3-8b.gguf --backend vulkan -p 512 -n 64 -r 1 --depth 16384 --kv-type $kt > "$O/kv/$kt.txt" 2>&1
  echo "kv $kt depth 16384 rc $?: $(grep -E '^(pp|tg)' "$O/kv/$kt.txt" | tr -s ' ' | tr '\n' ' ')"
done
cd "$O" && tar czf all.tgz bb kv ab && rm -rf bb kv ab
