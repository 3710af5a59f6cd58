"""zinc's engine against the PyTorch model the demo was trained as.

For each prompt recorded at training time (reference/ref.json, logits in
reference/ref_logits.npz, f32 on the CPU), runs `zinc eval` and compares the
logits at every prompt position (normalised MSE, sum (a-b)^2 / sum b^2) and
the greedy continuation (one token per decode step).

  /usr/bin/python3 parity.py ZINC MODEL [--ref DIR] [--max-nmse X] [--greedy N] [--backend B]

Prints one line per prompt and "N passed, N failed"; exits 1 on a failure.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("zinc")
    ap.add_argument("model")
    ap.add_argument("--ref", default=os.path.join(here, "reference"))
    ap.add_argument("--max-nmse", type=float, default=1e-4)
    ap.add_argument("--greedy", type=int, default=32)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    ref = json.load(open(os.path.join(args.ref, "ref.json")))
    ref_logits = np.load(os.path.join(args.ref, "ref_logits.npz"))
    print(f"model {args.model}, backend {args.backend}; reference: PyTorch {ref['versions']['torch']}, "
          f"transformers {ref['versions']['transformers']}, f32 on the CPU")
    passed = failed = 0
    for i, p in enumerate(ref["prompts"]):
        cmd = [args.zinc, "eval", "-m", args.model, "--tokens", ",".join(map(str, p["ids"])),
               "-n", str(args.greedy), "--backend", args.backend]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL: prompt {i}: zinc eval exit {r.returncode}: {r.stderr.strip()[:300]}")
            failed += 1
            continue
        out = json.loads(r.stdout)
        got = np.array(out["prompt_logits"], dtype=np.float64)
        want = ref_logits[f"logits_{i}"].astype(np.float64)
        nmse = [float(np.sum((g - w) ** 2) / np.sum(w ** 2)) for g, w in zip(got, want)]
        greedy_ok = out["greedy"] == p["greedy"][:args.greedy]
        ok = got.shape == want.shape and max(nmse) <= args.max_nmse and greedy_ok
        print(f"{'ok' if ok else 'FAIL'}: prompt {i} {p['text']!r} ({len(p['ids'])} tokens): NMSE worst position "
              f"{max(nmse):.2e}, mean {np.mean(nmse):.2e} (bound {args.max_nmse:g}); {args.greedy} greedy tokens "
              f"{'identical' if greedy_ok else 'DIFFER: zinc ' + str(out['greedy']) + ' torch ' + str(p['greedy'][:args.greedy])}")
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
