#!/usr/bin/env bash
# Issue 14 + 17 on the H200: zinc serve (Vulkan) under 32 streaming clients
# without / with a shared system prompt (prefix cache), and with / without
# response_format (constrained sampling); grammar_cost on this host's CPU.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc L=.dev/zinc-load M=models/zinc-demo-qwen35.gguf
{ echo "date: $(date -u '+%F %T UTC')"; echo "commit: $(cat .dev/commit)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"; } > "$O/machine.txt"
cat "$O/machine.txt"
$Z --list-devices >> "$O/machine.txt" 2>&1
P=28431
$Z serve -m $M --backend vulkan --port $P --parallel 32 --ctx 2048 2> "$O/serve.err" & zp=$!
for i in $(seq 300); do curl -sf localhost:$P/health >/dev/null && break; sleep 0.2; done
m() { curl -s localhost:$P/metrics | grep -E '^zinc_(prefix|grammar|prompt|engine)' > "$O/metrics-$1.txt"; }
run() { local n=$1; shift; echo "== $n: $*"; $L --url http://127.0.0.1:$P ${ENDPOINT:+--endpoint $ENDPOINT} "$@" --json "$O/$n.json" > "$O/$n.txt" 2>&1; echo "rc=$?" >> "$O/$n.txt"; tail -n 12 "$O/$n.txt"; m $n; }
# warm-up (pipelines, first-use)
$L --url http://127.0.0.1:$P --concurrency 8 --requests 16 --max-tokens 16 --prompt-words 16 > /dev/null 2>&1
C="--concurrency 32 --requests 128 --max-tokens 128 --prompt-words 64"
run nosys $C
run sys256 $C --system-words 256
run sys1024 $C --system-words 1024
RF='{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"ok":{"type":"boolean"}},"required":["name","age","tags","ok"]}}}'
G="--concurrency 1,8,32 --max-tokens 128 --prompt-words 64"
run free $G
run schema $G --response-format "$RF"
run jsonobj $G --response-format '{"type":"json_object"}'
kill -TERM $zp; wait $zp
for r in $(seq ${GC_REPS:-3}); do
  .dev/grammar_cost $M 20000; .dev/grammar_cost .dev/ggml-vocab-qwen35.gguf 5000
done > "$O/grammar_cost.txt" 2>&1
cp .dev/commit "$O/"; (cd "$O" && tar -czf ../raw.tgz . && rm -f * && mv ../raw.tgz .)
