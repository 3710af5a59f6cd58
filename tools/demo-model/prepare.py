"""Step 1 of the demo model: train the tokenizer and encode the training data.

  /usr/bin/python3 tools/demo-model/prepare.py --corpora ../shared/corpora --out DIR

Writes DIR/merges.txt (the tokenizer), DIR/data.npz (token streams for
train.py: `train`, `val`, `chat`, `chat_starts`) and DIR/prompts.json (the
parity-check prompts, as text and ids). Everything is deterministic.
"""
import argparse
import json
import os
import random
import re
import sys
import time
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402

VOCAB_SIZE = 4096
VAL_FRACTION = 0.05
N_CHAT = 6000
SEED = 1234
SYSTEM = "You are a helpful assistant."

# Prompts whose logits and greedy continuations train.py records for the
# parity check (zinc vs PyTorch).
PARITY_PROMPTS = [
    "The old prince",
    "ROMEO:\nWhat light",
    "It was in July, 1805, and",
    "<|im_start|>user\nTell me a story about a soldier.<|im_end|>\n<|im_start|>assistant\n",
]


def war_and_peace(text):
    """One line per paragraph: the source is hard-wrapped at ~70 columns,
    and a model trained on the wraps would print them."""
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)


def split_val(text):
    cut = text.rfind("\n\n", 0, int(len(text) * (1 - VAL_FRACTION)))
    return text[:cut + 2], text[cut + 2:]


def chat_samples(wp_paras, sh_blocks, rng):
    out = []
    for _ in range(N_CHAT):
        kind = rng.random()
        if kind < 0.4:
            p = rng.choice(wp_paras)
            sents = re.split(r"(?<=[.!?\"])\s+", p)
            if len(sents) < 3:
                continue
            k = rng.randint(1, min(2, len(sents) - 2))
            user = "Continue the story:\n" + " ".join(sents[:k])
            reply = " ".join(sents[k:])
        elif kind < 0.7:
            user = rng.choice(["Tell me a story.", "Write a paragraph in the style of War and Peace.",
                               "Tell me a story about a soldier.", "Describe a scene from a novel."])
            i = rng.randrange(len(wp_paras) - 2)
            reply = "\n\n".join(wp_paras[i:i + rng.randint(1, 2)])
        else:
            user = rng.choice(["Write a speech in the style of Shakespeare.", "Write a scene from a play.",
                               "Write some lines in the style of Shakespeare."])
            i = rng.randrange(len(sh_blocks) - 4)
            reply = "\n\n".join(sh_blocks[i:i + rng.randint(2, 4)])
        msg = ""
        if rng.random() < 0.5:
            msg += f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
        msg += f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n{reply}<|im_end|>\n"
        out.append(msg)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpora", default="../shared/corpora")
    ap.add_argument("--out", required=True)
    ap.add_argument("--merges", help="reuse this merges.txt instead of training")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    log = lambda s: print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

    wp = war_and_peace(open(os.path.join(args.corpora, "war-and-peace.txt"), encoding="utf-8").read())
    sh = open(os.path.join(args.corpora, "tinyshakespeare.txt"), encoding="utf-8").read()
    wp_train, wp_val = split_val(wp)
    sh_train, sh_val = split_val(sh)
    rng = random.Random(SEED)
    chats = chat_samples(wp_train.split("\n\n"), sh_train.split("\n\n"), rng)
    log(f"text: war-and-peace {len(wp)} chars, shakespeare {len(sh)} chars, {len(chats)} chat samples")

    if args.merges:
        merges = bpe.load_merges(args.merges)
    else:
        counts = Counter()
        for text in [wp_train, sh_train] + [bpe.Tokenizer([]).special_re.sub("\n", c) for c in chats]:
            counts.update(bpe.to_symbols(p) for p in bpe.pretokenize(text))
        log(f"{len(counts)} distinct pre-tokens; training {VOCAB_SIZE - 256 - len(bpe.SPECIALS)} merges")
        merges = bpe.train(counts, VOCAB_SIZE - 256 - len(bpe.SPECIALS), log=log)
    bpe.save_merges(os.path.join(args.out, "merges.txt"), merges)
    tok = bpe.Tokenizer(merges)
    assert len(tok.tokens) == VOCAB_SIZE, len(tok.tokens)
    eot = tok.id_of["<|endoftext|>"]

    train = tok.encode(wp_train) + [eot] + tok.encode(sh_train) + [eot]
    val = tok.encode(wp_val) + [eot] + tok.encode(sh_val) + [eot]
    chat, starts = [], []
    for c in chats:
        starts.append(len(chat))
        chat += tok.encode(c) + [eot]
    for name, ids, text in [("wp_train", None, wp_train[:20000]), ("sh_train", None, sh_train[:20000])]:
        assert tok.decode(tok.encode(text)) == text, name
    log(f"tokens: train {len(train)}, val {len(val)}, chat {len(chat)} "
        f"({len(wp_train) / len(tok.encode(wp_train[:200000])) * 200000 / len(wp_train):.2f} chars/token)")
    np.savez(os.path.join(args.out, "data.npz"), train=np.array(train, np.uint16), val=np.array(val, np.uint16),
             chat=np.array(chat, np.uint16), chat_starts=np.array(starts, np.int64))
    prompts = [{"text": p, "ids": tok.encode(p)} for p in PARITY_PROMPTS]
    with open(os.path.join(args.out, "prompts.json"), "w") as f:
        json.dump({"vocab_size": VOCAB_SIZE, "eot": eot, "im_end": tok.id_of["<|im_end|>"], "prompts": prompts}, f)
    log("done")


if __name__ == "__main__":
    main()
