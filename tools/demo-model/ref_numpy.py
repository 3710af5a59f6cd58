"""An independent NumPy forward pass of the exported demo model, written from
llama.cpp's qwen35 graph (src/models/qwen35.cpp) in GGUF conventions (norm
weights already 1 + w, ssm_a = -exp(A_log), tiled value heads). Checking its
logits against the PyTorch model's checks the export before any engine runs.

  /usr/bin/python3 ref_numpy.py MODEL RUN_DIR [--max-nmse X] [--greedy N]

MODEL is export.py's output folder or a GGUF file (F32/F16/Q8_0 tensors);
RUN_DIR holds train.py's ref.json and ref_logits.npz. Prints the normalised
MSE per prompt and whether the first N greedy tokens match; exits 1 when a
check fails.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def load_export(d):
    meta, tensors = {}, {}
    raw = np.fromfile(os.path.join(d, "tensors.bin"), dtype="<f4")
    for line in open(os.path.join(d, "manifest.tsv"), encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "kv":
            meta[f[1]] = f[3]
        elif f[0] == "tensor":
            ne = [int(x) for x in f[2].split(",")]
            off, n = int(f[3]) // 4, int(np.prod(ne))
            tensors[f[1]] = raw[off:off + n].reshape(list(reversed(ne))).astype(np.float64)
    return meta, tensors


def load_gguf(path):
    """A minimal GGUF v3 reader: metadata as strings (arrays comma-joined, as
    in the manifest) and F32/F16/Q8_0 tensors dequantized to float64."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        pos += n
        return data[pos - n:pos].decode("utf-8")

    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return ",".join(str(int(v) if isinstance(v, bool) else v) for v in (value(et) for _ in range(n)))
        v = take(scalars[t])
        return str(int(v)) if isinstance(v, bool) else str(v)

    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 4
    assert take("I") == 3, "GGUF v3 expected"
    n_tensors, n_kv = take("Q"), take("Q")
    meta = {}
    for _ in range(n_kv):
        k = string()
        meta[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    align = int(meta.get("general.alignment", 32))
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        n = int(np.prod(ne))
        if t == 0:
            a = np.frombuffer(data, "<f4", n, base + off)
        elif t == 1:
            a = np.frombuffer(data, "<f2", n, base + off)
        elif t == 8:  # Q8_0: per 32 values an f16 scale and 32 int8
            blk = np.frombuffer(data, np.dtype([("d", "<f2"), ("q", "i1", 32)]), n // 32, base + off)
            a = blk["d"].astype(np.float64)[:, None] * blk["q"]
        else:
            raise ValueError(f"{name}: tensor type {t} not supported here")
        tensors[name] = np.asarray(a, np.float64).reshape(list(reversed(ne)))
    return meta, tensors


def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1 + np.exp(-x))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


class Model:
    def __init__(self, meta, W):
        a = meta["general.architecture"]
        g = lambda k: meta[f"{a}.{k}"]
        self.W = W
        self.n_layer = int(g("block_count"))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.n_head, self.n_head_kv = int(g("attention.head_count")), int(g("attention.head_count_kv"))
        self.hd = int(g("attention.key_length"))
        self.n_rot = int(g("rope.dimension_count"))
        self.base = float(g("rope.freq_base"))
        self.recurrent = [v == "1" for v in g("attention.recurrent_layers").split(",")]
        self.dk = int(g("ssm.state_size"))
        self.hk = int(g("ssm.group_count"))
        self.hv = int(g("ssm.time_step_rank"))
        self.dv = int(g("ssm.inner_size")) // self.hv
        self.kconv = int(g("ssm.conv_kernel"))

    def deltanet(self, il, h):
        W, p = self.W, f"blk.{il}."
        T = h.shape[0]
        qkv = h @ W[p + "attn_qkv.weight"].T
        z = (h @ W[p + "attn_gate.weight"].T).reshape(T, self.hv, self.dv)
        beta = sigmoid(h @ W[p + "ssm_beta.weight"].T)
        gate = np.logaddexp(0, h @ W[p + "ssm_alpha.weight"].T + W[p + "ssm_dt.bias"]) * W[p + "ssm_a"]
        cw = W[p + "ssm_conv1d.weight"]  # [channels, K]
        xp = np.concatenate([np.zeros((self.kconv - 1, qkv.shape[1])), qkv])
        conv = silu(sum(xp[k:k + T] * cw[:, k] for k in range(self.kconv)))
        nk = self.hk * self.dk
        q = conv[:, :nk].reshape(T, self.hk, self.dk)
        k = conv[:, nk:2 * nk].reshape(T, self.hk, self.dk)
        v = conv[:, 2 * nk:].reshape(T, self.hv, self.dv)
        l2 = lambda x: x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + self.eps)
        q, k = l2(q) / np.sqrt(self.dk), l2(k)
        out = np.zeros((T, self.hv, self.dv))
        for hh in range(self.hv):
            kh = hh % self.hk  # tiled value heads
            S = np.zeros((self.dk, self.dv))
            for t in range(T):
                S *= np.exp(gate[t, hh])
                delta = (v[t, hh] - S.T @ k[t, kh]) * beta[t, hh]
                S += np.outer(k[t, kh], delta)
                out[t, hh] = S.T @ q[t, kh]
        out = rms(out, W[p + "ssm_norm.weight"], self.eps) * silu(z)
        return out.reshape(T, -1) @ W[p + "ssm_out.weight"].T

    def rope(self, x, pos):
        half = self.n_rot // 2
        theta = pos[:, None] * self.base ** (-2.0 * np.arange(half) / self.n_rot)
        c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
        x = x.copy()
        a, b = x[..., :half].copy(), x[..., half:self.n_rot].copy()
        x[..., :half], x[..., half:self.n_rot] = a * c - b * s, a * s + b * c
        return x

    def attention(self, il, h):
        W, p, hd = self.W, f"blk.{il}.", self.hd
        T = h.shape[0]
        qg = (h @ W[p + "attn_q.weight"].T).reshape(T, self.n_head, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:]
        k = (h @ W[p + "attn_k.weight"].T).reshape(T, self.n_head_kv, hd)
        v = (h @ W[p + "attn_v.weight"].T).reshape(T, self.n_head_kv, hd)
        q, k = rms(q, W[p + "attn_q_norm.weight"], self.eps), rms(k, W[p + "attn_k_norm.weight"], self.eps)
        pos = np.arange(T, dtype=np.float64)
        q, k = self.rope(q, pos), self.rope(k, pos)
        out = np.zeros((T, self.n_head, hd))
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for hh in range(self.n_head):
            kv = hh // (self.n_head // self.n_head_kv)
            s = q[:, hh] @ k[:, kv].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, hh] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kv]
        out = out * sigmoid(gate)
        return out.reshape(T, -1) @ W[p + "attn_output.weight"].T

    def logits(self, ids):
        W = self.W
        x = W["token_embd.weight"][ids]
        for il in range(self.n_layer):
            h = rms(x, W[f"blk.{il}.attn_norm.weight"], self.eps)
            x = x + (self.deltanet(il, h) if self.recurrent[il] else self.attention(il, h))
            h = rms(x, W[f"blk.{il}.post_attention_norm.weight"], self.eps)
            p = f"blk.{il}."
            x = x + (silu(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        return rms(x, W["output_norm.weight"], self.eps) @ W["output.weight"].T


def nmse(a, b):
    return float(np.sum((a - b) ** 2) / np.sum(b ** 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("run")
    ap.add_argument("--max-nmse", type=float, default=None)
    ap.add_argument("--greedy", type=int, default=32, help="greedy tokens to compare (0: none)")
    args = ap.parse_args()
    meta, W = load_gguf(args.model) if os.path.isfile(args.model) else load_export(args.model)
    ref = json.load(open(os.path.join(args.run, "ref.json")))
    ref_logits = np.load(os.path.join(args.run, "ref_logits.npz"))
    m = Model(meta, W)
    worst, ok = 0.0, True
    for i, p in enumerate(ref["prompts"]):
        lg = m.logits(p["ids"])
        e = nmse(lg, ref_logits[f"logits_{i}"].astype(np.float64))
        worst = max(worst, e)
        seq = list(p["ids"])
        for _ in range(args.greedy):
            seq.append(int(np.argmax(m.logits(seq)[-1])))
        same = seq[len(p["ids"]):] == p["greedy"][:args.greedy]
        ok &= same and (args.max_nmse is None or e <= args.max_nmse)
        print(f"prompt {i} ({len(p['ids'])} tokens): NMSE {e:.3e}, first {args.greedy} greedy tokens "
              f"{'identical' if same else 'DIFFER'}")
    print(f"worst NMSE {worst:.3e}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
