"""An independent NumPy forward pass of the exported demo model, written from
llama.cpp's qwen35 graph (src/models/qwen35.cpp) in GGUF conventions (norm
weights already 1 + w, ssm_a = -exp(A_log), tiled value heads). Checking its
logits against the PyTorch model's checks the export before any engine runs.

  /usr/bin/python3 ref_numpy.py EXPORT_DIR RUN_DIR

EXPORT_DIR is export.py's output, RUN_DIR train.py's (ref.json,
ref_logits.npz). Prints the normalised MSE per prompt and the greedy tokens.
"""
import json
import os
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
    meta, W = load_export(sys.argv[1])
    ref = json.load(open(os.path.join(sys.argv[2], "ref.json")))
    ref_logits = np.load(os.path.join(sys.argv[2], "ref_logits.npz"))
    m = Model(meta, W)
    worst = 0.0
    for i, p in enumerate(ref["prompts"]):
        lg = m.logits(p["ids"])
        e = nmse(lg, ref_logits[f"logits_{i}"].astype(np.float64))
        worst = max(worst, e)
        seq = list(p["ids"])
        for _ in range(len(p["greedy"])):
            seq.append(int(np.argmax(m.logits(seq)[-1])))
        same = seq[len(p["ids"]):] == p["greedy"]
        print(f"prompt {i} ({len(p['ids'])} tokens): NMSE {e:.3e}, greedy {len(p['greedy'])} tokens "
              f"{'identical' if same else 'DIFFER'}")
    print(f"worst NMSE {worst:.3e}")


if __name__ == "__main__":
    main()
