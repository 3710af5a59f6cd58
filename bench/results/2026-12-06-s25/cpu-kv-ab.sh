# A/B in one run: 179a7ee (before) vs c6fb47d (after), demo model, CPU 2 threads, tg64 at depth 3000, interleaved
# /tmp/wt-old: a git worktree of 179a7ee built with `make build/zinc`; /work/main/build/zinc built at c6fb47d
for kt in f16 q8_0 q4_0 q4_0r q3_0r; do
  for b in /tmp/wt-old/build/zinc /work/main/build/zinc; do
    echo "$kt $b: $($b bench -m /work/main/models/zinc-demo-qwen35.gguf --backend cpu -p 256 -n 64 -r 3 --depth 3000 --kv-type $kt 2>&1 | grep -E '^tg')"
  done
done
