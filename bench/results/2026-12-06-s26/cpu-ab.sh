# CPU rows, A/B in one run on the dev box (2 cores): 37b133e (session start; .dev-keep/zinc-base, a stripped build of it)
# against HEAD's ./zinc, demo model, interleaved: prefill/decode at depth 0 and 3000 (f16 and q4_0 KV), and batched decode
for b in .dev-keep/zinc-base ./zinc; do
  for d in 0 3000; do
    echo "$b depth $d: $($b bench -m models/zinc-demo-qwen35.gguf --backend cpu -p 256 -n 64 -r 3 --depth $d 2>&1 | grep -E '^(pp|tg)' | tr -s ' ' | tr '\n' ' ')"
  done
  echo "$b depth 3000 q4_0: $($b bench -m models/zinc-demo-qwen35.gguf --backend cpu -p 256 -n 64 -r 3 --depth 3000 --kv-type q4_0 2>&1 | grep -E '^(pp|tg)' | tr -s ' ' | tr '\n' ' ')"
  echo "$b -npl 1,8,32: $($b bench -m models/zinc-demo-qwen35.gguf --backend cpu -npl 1,8,32 -npp 64 -ntg 64 2>&1 | grep -E '^\|    64' | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
done
