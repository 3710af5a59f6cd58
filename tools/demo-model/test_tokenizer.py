"""zinc's tokenizer reproduces the one the demo model was trained with.

bpe.py encoded the training data; zinc encodes prompts with its own BPE
(PCRE2 pre-tokenizer chosen by tokenizer.ggml.pre = qwen35, merges from the
GGUF). Both must give the same ids, or the model sees text it never saw.

  /usr/bin/python3 test_tokenizer.py ZINC MODEL CORPORA_DIR   (prints "N passed, N failed")
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import prepare  # noqa: E402

EXCERPT = 300_000  # characters of each corpus (the whole corpora agree too; this keeps the test fast)


def main():
    zinc, model, corpora = sys.argv[1:4]
    tok = bpe.Tokenizer(bpe.load_merges(os.path.join(os.path.dirname(os.path.abspath(__file__)), "merges.txt")))
    wp = prepare.war_and_peace(open(os.path.join(corpora, "war-and-peace.txt"), encoding="utf-8").read())
    sh = open(os.path.join(corpora, "tinyshakespeare.txt"), encoding="utf-8").read()
    cases = {
        "war-and-peace": wp[:EXCERPT],
        "shakespeare": sh[:EXCERPT],
        "unicode and spacing": "Hello  world!!\n\n\n  tabs\there \u00e9t\u00e9 na\u00efve 12345 \u4e2d\u6587 "
                               "cafe\u0301 don't I'LL  \r\n x \u00a0y \u2003 end   ",
        "chatml": "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                  "<|im_start|>assistant\n",
    }
    passed = failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, text in cases.items():
            path = os.path.join(d, "in.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            r = subprocess.run([zinc, "tokenize", "-m", model, "-f", path], capture_output=True, text=True)
            want = tok.encode(text)
            try:
                got = json.loads(r.stdout) if r.returncode == 0 else None
            except json.JSONDecodeError:
                got = None
            if got == want:
                print(f"ok: {name}: {len(want)} tokens identical")
                passed += 1
            else:
                failed += 1
                if got is None:
                    print(f"FAIL: {name}: zinc tokenize exit {r.returncode}: {r.stderr.strip()[:300]}")
                    continue
                i = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
                print(f"FAIL: {name}: first difference at token {i}: zinc {got[i:i + 6]} vs bpe.py {want[i:i + 6]} "
                      f"({tok.decode(want[max(0, i - 3):i + 6])!r})")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
