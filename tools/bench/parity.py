#!/usr/bin/env python3
"""Compares zinc's logits with a reference's (llama.cpp), both as JSON in the
golden schema {n_vocab, prompt, prompt_logits, greedy} (zinc eval's output).

usage: parity.py ZINC.json REF.json [NAME]
Prints one line: worst and mean per-position NMSE over the prompt, top-1
agreement over prompt positions, and how many greedy tokens match before
the first difference. Exit status 1 if prompts or n_vocab differ."""
import json
import sys

import numpy as np


def main(zpath, rpath, name):
    z, r = json.load(open(zpath)), json.load(open(rpath))
    if z["prompt"] != r["prompt"] or z["n_vocab"] != r["n_vocab"]:
        print(f"{name}: prompt or n_vocab differ")
        return 1
    a = np.asarray(z["prompt_logits"], dtype=np.float64)
    b = np.asarray(r["prompt_logits"], dtype=np.float64)
    nmse = ((a - b) ** 2).sum(axis=1) / (b ** 2).sum(axis=1)
    top1 = (a.argmax(axis=1) == b.argmax(axis=1)).mean()
    gz, gr = z["greedy"], r["greedy"]
    same = next((i for i, (x, y) in enumerate(zip(gz, gr)) if x != y), min(len(gz), len(gr)))
    print(f"{name:28s} nmse worst {nmse.max():.2e} mean {nmse.mean():.2e}  top1 {top1 * 100:5.1f}%  "
          f"greedy {same}/{len(gr)} match")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else sys.argv[1]))
