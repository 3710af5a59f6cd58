"""Byte-level BPE for the zinc demo model: training, encoding, decoding.

Plain Python 3 (no third-party modules), so the tokenizer can be rebuilt on
any machine. The pre-tokenizer is the one GGUF files name `qwen35`
(llama.cpp LLAMA_VOCAB_PRE_TYPE_QWEN35):

  (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
  |[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
  |\s*[\r\n]+|\s+(?!\S)|\s+

Python's `re` has no \p{..}; the classes are spelled out from unicodedata
below, and \s as PCRE2 with UCP sees it (Unicode White_Space, not Python's
str.isspace, which also takes U+001C..U+001F). The alternation and
backtracking rules of `re` match PCRE's, so the split is the same.
"""
import heapq
import re
import sys
import unicodedata
from collections import Counter, defaultdict

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _category_class(prefixes):
    """A regex class body listing every code point whose general category
    starts with one of `prefixes` (e.g. "L"), as ranges."""
    parts, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp))[0] in prefixes:
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            parts.append((start, prev))
            start = None
    if start is not None:
        parts.append((start, prev))
    esc = lambda cp: "\\U%08x" % cp
    return "".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in parts)


def _build_split_regex():
    L, M, N = _category_class("L"), _category_class("M"), _category_class("N")
    s = _WS
    pat = (
        r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
        rf"|[^\r\n{L}{N}]?[{L}{M}]+"
        rf"|[{N}]"
        rf"| ?[^{s}{L}{M}{N}]+[\r\n]*"
        rf"|[{s}]*[\r\n]+"
        rf"|[{s}]+(?![^{s}])"
        rf"|[{s}]+"
    )
    return re.compile(pat)


SPLIT_RE = _build_split_regex()


def pretokenize(text):
    return SPLIT_RE.findall(text)


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_ENC = bytes_to_unicode()
BYTE_DEC = {c: b for b, c in BYTE_ENC.items()}


def to_symbols(piece):
    return "".join(BYTE_ENC[b] for b in piece.encode("utf-8"))


def train(word_counts, n_merges, log=None):
    """word_counts: {byte-mapped pre-token: count}. Returns the merges, as
    (left, right) symbol-string pairs, in rank order. Ties in pair count
    break by the pair's strings, so the result is deterministic."""
    sym_of = [BYTE_ENC[b] for b in range(256)]
    id_of = {s: i for i, s in enumerate(sym_of)}
    words = [[id_of[c] for c in w] for w in word_counts]
    freqs = list(word_counts.values())
    pair_count = Counter()
    where = defaultdict(set)
    for wi, (w, f) in enumerate(zip(words, freqs)):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += f
            where[(a, b)].add(wi)
    key = lambda p: (-pair_count[p], sym_of[p[0]], sym_of[p[1]])
    heap = [(key(p), p) for p in pair_count]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        k, p = heapq.heappop(heap)
        if pair_count.get(p, 0) <= 0 or k != key(p):
            continue  # stale heap entry
        a, b = p
        new = len(sym_of)
        sym_of.append(sym_of[a] + sym_of[b])
        merges.append((sym_of[a], sym_of[b]))
        touched = set()
        for wi in list(where[p]):
            w, f = words[wi], freqs[wi]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= f
                touched.add((x, y))
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] += f
                where[(x, y)].add(wi)
                touched.add((x, y))
        del pair_count[p]
        where.pop(p, None)
        for q in touched:
            if pair_count.get(q, 0) > 0:
                heapq.heappush(heap, (key(q), q))
        if log and len(merges) % 500 == 0:
            log(f"merge {len(merges)}: {sym_of[a]!r} + {sym_of[b]!r} ({-k[0]})")
    return merges


class Tokenizer:
    """Vocabulary: 256 byte symbols, then one token per merge, then SPECIALS."""

    def __init__(self, merges):
        self.merges = merges
        self.tokens = [BYTE_ENC[b] for b in range(256)] + [a + b for a, b in merges] + SPECIALS
        self.id_of = {t: i for i, t in enumerate(self.tokens)}
        self.rank = {m: i for i, m in enumerate(merges)}
        self.cache = {}
        self.special_re = re.compile("|".join(re.escape(s) for s in SPECIALS))

    def _bpe(self, sym):
        if sym in self.cache:
            return self.cache[sym]
        parts = list(sym)
        while len(parts) > 1:
            best, bi = None, -1
            for i in range(len(parts) - 1):
                r = self.rank.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
        ids = [self.id_of[p] for p in parts]
        self.cache[sym] = ids
        return ids

    def encode_plain(self, text):
        out = []
        for piece in pretokenize(text):
            out.extend(self._bpe(to_symbols(piece)))
        return out

    def encode(self, text, parse_special=True):
        """Special-token strings become their ids; the text between them is
        tokenized fragment by fragment, as llama.cpp does."""
        if not parse_special:
            return self.encode_plain(text)
        out, pos = [], 0
        for m in self.special_re.finditer(text):
            out.extend(self.encode_plain(text[pos:m.start()]))
            out.append(self.id_of[m.group(0)])
            pos = m.end()
        out.extend(self.encode_plain(text[pos:]))
        return out

    def decode(self, ids):
        data = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in SPECIALS:
                data += t.encode("utf-8")
            else:
                data += bytes(BYTE_DEC[c] for c in t)
        return data.decode("utf-8", errors="replace")


def save_merges(path, merges):
    with open(path, "w", encoding="utf-8") as f:
        for a, b in merges:
            f.write(f"{a} {b}\n")


def load_merges(path):
    with open(path, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split(" ")) for line in f if line.strip()]
