"""Round trip of pack.c: a small manifest with every record type is packed
to F32 and Q8_0 GGUF files, which are read back with ref_numpy.load_gguf.

  /usr/bin/python3 test_pack.py BUILD/demo-pack        (prints "N passed, N failed")
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_numpy  # noqa: E402


def main():
    pack = sys.argv[1]
    results = []
    check = lambda name, cond: results.append((name, bool(cond)))
    rng = np.random.default_rng(7)
    tensors = {"w.weight": rng.normal(size=(3, 64)).astype("<f4"),   # 2-D, rows of 64: quantized
               "n.weight": rng.normal(size=(64,)).astype("<f4"),     # 1-D: stays F32
               "c.weight": rng.normal(size=(5, 4)).astype("<f4")}    # rows of 4: stays F32
    with tempfile.TemporaryDirectory() as d:
        lines = ["zinc-pack\t1", "kv\tgeneral.architecture\tstr\ttest", "kv\tt.count\tu32\t7",
                 "kv\tt.eps\tf32\t0.5", "kv\tt.flag\tbool\t1", "kv\tt.ints\tarr_i32\t3,-3,2,0",
                 "kv\tt.uints\tarr_u32\t1,0,1", "kv\tt.tags\tarr_str\ta,b c", "kv\tt.lines\tarr_str_file\tl.txt",
                 "kv\tt.text\tstr_file\tx.txt"]
        with open(os.path.join(d, "l.txt"), "w") as f:
            f.write("Ġa\nb c\n<|im_end|>\n")
        with open(os.path.join(d, "x.txt"), "w") as f:
            f.write("two\nlines")
        off = 0
        with open(os.path.join(d, "tensors.bin"), "wb") as f:
            for name, t in tensors.items():
                f.write(t.tobytes())
                lines.append(f"tensor\t{name}\t{','.join(str(x) for x in reversed(t.shape))}\t{off}")
                off += t.nbytes
        with open(os.path.join(d, "manifest.tsv"), "w") as f:
            f.write("\n".join(lines) + "\n")
        for typ in ["f32", "q8_0"]:
            out = os.path.join(d, f"{typ}.gguf")
            r = subprocess.run([pack, d, out, typ], capture_output=True, text=True)
            check(f"{typ}: demo-pack exits 0 ({r.stderr.strip()})", r.returncode == 0)
            if r.returncode:
                continue
            meta, W = ref_numpy.load_gguf(out)
            check(f"{typ}: scalars", (meta["t.count"], meta["t.eps"], meta["t.flag"]) == ("7", "0.5", "1"))
            check(f"{typ}: arrays", (meta["t.ints"], meta["t.uints"], meta["t.tags"]) == ("3,-3,2,0", "1,0,1", "a,b c"))
            check(f"{typ}: files", (meta["t.lines"], meta["t.text"]) == ("Ġa,b c,<|im_end|>", "two\nlines"))
            check(f"{typ}: file_type", meta["general.file_type"] == ("0" if typ == "f32" else "7"))
            check(f"{typ}: F32 tensors exact", all(np.array_equal(W[n], tensors[n]) for n in ["n.weight", "c.weight"]))
            w, ref = W["w.weight"], tensors["w.weight"]
            err = np.abs(w - ref).max() / np.abs(ref).max()
            check(f"{typ}: w.weight error {err:.1e}", err == 0 if typ == "f32" else 0 < err < 1 / 127)
        with open(os.path.join(d, "manifest.tsv"), "a") as f:
            f.write(f"tensor\tbad\t64,64\t{off}\n")
        r = subprocess.run([pack, d, os.path.join(d, "bad.gguf")], capture_output=True, text=True)
        check("a tensor past the data fails with a message", r.returncode == 1 and "outside tensors.bin" in r.stderr)
    for name, ok in results:
        print(("ok: " if ok else "FAIL: ") + name)
    failed = sum(not ok for _, ok in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
