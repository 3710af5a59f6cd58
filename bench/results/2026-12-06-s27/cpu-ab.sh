# CPU rows, A/B on the dev box (2 cores): e93ce77 (before ZN_GRAPH_FOLD 4; /tmp/wt-base/build/zinc, a worktree build)
# against HEAD's ./zinc, demo model, two rounds interleaved: prefill/decode at depth 0 and 3000, batched decode
for r in 1 2; do for b in /tmp/wt-base/build/zinc ./zinc; do
  for d in 0 3000; do
    echo "$b depth $d: $($b bench -m models/zinc-demo-qwen35.gguf --backend cpu -p 256 -n 64 -r 3 --depth $d 2>&1 | grep -E '^(pp|tg)' | tr -s ' ' | tr '\n' ' ')"
  done
  echo "$b -npl 1,8,32: $($b bench -m models/zinc-demo-qwen35.gguf --backend cpu -npl 1,8,32 -npp 64 -ntg 64 2>&1 | grep -E '^\|    64' | awk -F'|' '{printf "npl%s TG %s | ", $4, $10}')"
done; done
