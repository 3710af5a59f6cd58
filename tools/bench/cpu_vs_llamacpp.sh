#!/bin/sh
# Side-by-side CPU benchmark of zinc and llama.cpp on the same GGUF files,
# in one run: for each round, each model and each thread count, zinc bench,
# llama-bench and zinc's STREAM-like read probe, interleaved so that a change
# in machine load hits both engines alike. Writes one JSON object a line.
#
# usage: tools/bench/cpu_vs_llamacpp.sh OUT.jsonl MODEL.gguf...
# env:   ZINC (./zinc), LLAMA_BENCH (llama-bench), THREADS ("1 2"),
#        ROUNDS (3), REPS (3 per round), PP (128), TG (64)
# Summarize with tools/bench/summarize.py OUT.jsonl.
set -eu
out=$1
shift
zinc=${ZINC:-./zinc}
lb=${LLAMA_BENCH:-llama-bench}
threads=${THREADS:-1 2}
rounds=${ROUNDS:-3}
reps=${REPS:-3}
pp=${PP:-128}
tg=${TG:-64}
: >"$out"
load() { printf '{"kind": "load", "loadavg": "%s"}\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"; }
load
r=1
while [ "$r" -le "$rounds" ]; do
    for m in "$@"; do
        for t in $threads; do
            "$zinc" bench --bandwidth -t "$t" --json | sed "s/^{/{\"kind\": \"bw\", \"round\": $r, /" >>"$out"
            "$zinc" bench --backend cpu -m "$m" -p "$pp" -n "$tg" -r "$reps" -t "$t" --json |
                sed "s/^{/{\"kind\": \"zinc\", \"round\": $r, /" >>"$out"
            "$lb" -m "$m" -p "$pp" -n "$tg" -r "$reps" -t "$t" -o jsonl |
                sed "s/^{/{\"kind\": \"llama\", \"round\": $r, /" >>"$out"
            load
        done
    done
    r=$((r + 1))
done
