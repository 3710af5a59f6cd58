#!/usr/bin/env bash
# One call: batched decode of the three shapes vs llama-batched-bench (bb.sh), then the server load runs
# (load2.sh: chat endpoint, then completions) without grammar_cost.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O/bb" "$O/chat" "$O/compl"
OUT=$O/bb bash .dev/bb.sh qwen3.5-2b qwen3-8b qwen3.5-35b-a3b 2>&1 | grep -E "^\|   128|^memory|^ +B " 
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for s in qwen3-8b qwen3.5-35b-a3b; do
  timeout 120 .dev/zinc bench -m /tmp/$s.gguf --backend vulkan -npl 32 -npp 128 -ntg 3 --profile > "$O/prof-$s-32.txt" 2>&1
  echo "=== profile $s B=32"; awk '/vulkan profile/{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$O/prof-$s-32.txt" | head -12
done
ENDPOINT=chat GC_REPS=0 OUT=$O/chat bash .dev/load2.sh 2>&1 | grep -E "^==|^ +(1|8|32) " 
GC_REPS=0 OUT=$O/compl bash .dev/load2.sh 2>&1 | grep -E "^==|^ +(1|8|32) "
for d in chat compl; do (cd $O/$d && tar -xzf raw.tgz && grep -E "hits|reused" metrics-sys256.txt metrics-sys1024.txt); done
(cd "$O" && tar -czf all.tgz bb chat compl prof-*.txt && rm -rf bb chat compl prof-*.txt)
