#!/usr/bin/env python3
"""Markdown tables from tools/bench/cpu_vs_llamacpp.sh's JSON lines.

usage: summarize.py RUN.jsonl
Per model and thread count: prefill and decode tok/s of zinc and llama.cpp
as the mean of the per-round means +- their sd, their median and the best
round; zinc as a fraction of llama.cpp (best rounds; median rounds); decode as GB/s of weights read per
token (zinc's count, the same file for both) over the best read bandwidth
the probe measured with as many threads."""
import json
import os
import statistics as st
import sys
from collections import defaultdict


def fmt(xs):
    m = st.mean(xs)
    sd = st.stdev(xs) if len(xs) > 1 else 0.0
    return f"{m:.1f} ± {sd:.1f} (median {st.median(xs):.1f}, best {max(xs):.1f})"


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    bw = defaultdict(list)
    zinc = defaultdict(lambda: {"pp": [], "tg": [], "gb_tok": None})
    llama = defaultdict(lambda: {"pp": [], "tg": []})
    loads = [r["loadavg"] for r in rows if r["kind"] == "load"]
    for r in rows:
        if r["kind"] == "bw":
            bw[r["threads"]].append(r["bandwidth_gbs"])
        elif r["kind"] == "zinc":
            z = zinc[(os.path.basename(r["model"]), r["threads"])]
            z["pp"].append(r["pp_tps"])
            z["tg"].append(r["tg_tps"])
            z["gb_tok"] = r["decode_gbs"] / r["tg_tps"]
            z["params"], z["bytes"] = r["params"], r["weight_bytes"]
        elif r["kind"] == "llama":
            ll = llama[(os.path.basename(r["model_filename"]), r["n_threads"])]
            ll["pp" if r["n_prompt"] else "tg"].append(r["avg_ts"])
    print(f"load average (1/5/15 min) before, during, after: {loads[0]} | "
          f"{loads[len(loads) // 2]} | {loads[-1]}\n")
    print("| threads | read bandwidth GB/s, each probe in run order | best |")
    print("|---|---|---|")
    for t in sorted(bw):
        print(f"| {t} | {', '.join(f'{x:.1f}' for x in bw[t])} | {max(bw[t]):.1f} |")
    print()
    print("| model | t | engine | pp tok/s | tg tok/s | zinc/llama pp, tg (best; medians) | decode GB/s (best) | % of bandwidth |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(zinc):
        model, t = key
        z, ll = zinc[key], llama.get(key)
        best_bw = max(bw[t]) if bw.get(t) else float("nan")
        for name, d in (("zinc", z), ("llama.cpp", ll)):
            if not d or not d["tg"]:
                continue
            ratio = ""
            if name == "zinc" and ll and ll["pp"] and ll["tg"]:
                ratio = (f"{max(z['pp']) / max(ll['pp']):.2f}, {max(z['tg']) / max(ll['tg']):.2f}; medians "
                         f"{st.median(z['pp']) / st.median(ll['pp']):.2f}, {st.median(z['tg']) / st.median(ll['tg']):.2f}")
            gbs = max(d["tg"]) * z["gb_tok"]
            print(f"| {model} | {t} | {name} | {fmt(d['pp'])} | {fmt(d['tg'])} | {ratio} | {gbs:.1f} | "
                  f"{100 * gbs / best_bw:.0f}% |")
    print()
    seen = set()
    for key in sorted(zinc):
        z = zinc[key]
        if key[0] in seen:
            continue
        seen.add(key[0])
        print(f"- {key[0]}: {z['params'] / 1e6:.1f} M params, {z['bytes'] / 2**20:.1f} MiB of weights, "
              f"{z['gb_tok'] * 1e3:.1f} MB read per decoded token (zinc's count)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
