#!/usr/bin/python3
"""numpy oracle for tests/test_qwen35.c: a synthetic qwen35 model with twice
as many value heads as key heads (H_k = 2, H_v = 4), partial rotary dims and
IMRoPE sections that give one rotation pair to the 4th (zero) position.

Weights come from the LCG below, reproduced exactly by the C test
(synth_fill); the forward pass is written from llama.cpp's qwen35 graph in
float64. Run `/usr/bin/python3 tests/ref/qwen35_synth_ref.py` and paste the
printed EXP_SYNTH_LOGITS into tests/test_qwen35.c.
"""
import numpy as np

E, V, FF, NL = 32, 16, 48, 2
NH, NKV, HD, NROT, SECT, BASE, EPS = 2, 1, 16, 8, [1, 1, 1, 1], 10000.0, 1e-6
K_CONV, D_STATE, H_K, H_V = 4, 8, 2, 4
D_V = D_STATE
CONV_DIM = 2 * H_K * D_STATE + H_V * D_V
RECURRENT = [1, 0]
PROMPT = [3, 14, 1, 9, 7]   # one batch
DECODE = [12, 5]            # then one token at a time

# name, ne (GGUF order: ne0 = row length), scale, offset -- the same table
# (and order: the seed is the index + 1) as SYNTH_TENSORS in the C test.
TENSORS = [("token_embd.weight", (E, V), 2.0, 0.0), ("output_norm.weight", (E,), 0.2, 1.0),
           ("output.weight", (E, V), 0.5, 0.0)]
for il in range(NL):
    p = "blk.%d." % il
    TENSORS += [(p + "attn_norm.weight", (E,), 0.2, 1.0), (p + "post_attention_norm.weight", (E,), 0.2, 1.0)]
    if RECURRENT[il]:
        TENSORS += [(p + "attn_qkv.weight", (E, CONV_DIM), 0.5, 0.0), (p + "attn_gate.weight", (E, H_V * D_V), 0.5, 0.0),
                    (p + "ssm_conv1d.weight", (K_CONV, CONV_DIM), 1.0, 0.0), (p + "ssm_dt.bias", (H_V,), 1.0, 0.0),
                    (p + "ssm_a", (H_V,), 1.0, -1.0), (p + "ssm_beta.weight", (E, H_V), 1.0, 0.0),
                    (p + "ssm_alpha.weight", (E, H_V), 1.0, 0.0), (p + "ssm_norm.weight", (D_V,), 0.2, 1.0),
                    (p + "ssm_out.weight", (H_V * D_V, E), 0.5, 0.0)]
    else:
        TENSORS += [(p + "attn_q.weight", (E, 2 * NH * HD), 0.5, 0.0), (p + "attn_k.weight", (E, NKV * HD), 0.5, 0.0),
                    (p + "attn_v.weight", (E, NKV * HD), 0.5, 0.0), (p + "attn_output.weight", (NH * HD, E), 0.5, 0.0),
                    (p + "attn_q_norm.weight", (HD,), 0.2, 1.0), (p + "attn_k_norm.weight", (HD,), 0.2, 1.0)]
    TENSORS += [(p + "ffn_gate.weight", (E, FF), 0.5, 0.0), (p + "ffn_up.weight", (E, FF), 0.5, 0.0),
                (p + "ffn_down.weight", (FF, E), 0.5, 0.0)]


def lcg(n, seed, scale, offset):
    x, out = seed, np.empty(n)
    for i in range(n):
        x = (x * 1103515245 + 12345) % 2 ** 31
        out[i] = np.float32(offset + scale * (x / 2 ** 31 - 0.5))  # stored as f32
    return out


W = {}
for idx, (name, ne, scale, off) in enumerate(TENSORS):
    W[name] = lcg(int(np.prod(ne)), idx + 1, scale, off).reshape(tuple(reversed(ne)))


def rms(x, w):
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + EPS) * w


def silu(x):
    return x / (1 + np.exp(-x))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def rope(x, p):
    # IMRoPE: pair i takes position component sector%3 (t, h, w) while that
    # section lasts, else the 4th (0 for text); sections [1,1,1,1] give pair 3
    # to the 4th component
    comps = [0, 1, 2, 3]
    pos = [p, p, p, 0]
    y, half = x.copy(), NROT // 2
    for i in range(half):
        th = pos[comps[i % 4]] * BASE ** (-2.0 * i / NROT)
        y[..., i] = x[..., i] * np.cos(th) - x[..., i + half] * np.sin(th)
        y[..., i + half] = x[..., i] * np.sin(th) + x[..., i + half] * np.cos(th)
    return y


conv_state = np.zeros((CONV_DIM, K_CONV - 1))
S = np.zeros((H_V, D_STATE, D_V))   # paper layout S[h][i (key)][j (value)]
KC, VC = [], []


def delta_net(il, x):
    p = "blk.%d." % il
    global conv_state
    qkv = x @ W[p + "attn_qkv.weight"].T
    z = x @ W[p + "attn_gate.weight"].T
    beta = sigmoid(x @ W[p + "ssm_beta.weight"].T)
    a = x @ W[p + "ssm_alpha.weight"].T + W[p + "ssm_dt.bias"]
    g = np.where(a > 20, a, np.log1p(np.exp(np.minimum(a, 20)))) * W[p + "ssm_a"]
    xin = np.concatenate([conv_state, qkv.T], 1)
    w = W[p + "ssm_conv1d.weight"]
    c = silu(np.stack([np.sum(xin[:, t:t + K_CONV] * w, 1) for t in range(len(x))]))
    conv_state = xin[:, -(K_CONV - 1):]
    kd = H_K * D_STATE
    out = np.zeros((len(x), H_V, D_V))
    for t in range(len(x)):
        q = c[t, :kd].reshape(H_K, D_STATE)
        k = c[t, kd:2 * kd].reshape(H_K, D_STATE)
        v = c[t, 2 * kd:].reshape(H_V, D_V)
        q = q / np.sqrt(np.sum(q * q, 1, keepdims=True) + EPS)
        k = k / np.sqrt(np.sum(k * k, 1, keepdims=True) + EPS)
        for h in range(H_V):
            kk, qq = k[h % H_K], q[h % H_K]   # value head h reads key head h mod H_k
            S[h] *= np.exp(g[t, h])
            S[h] += np.outer(kk, (v[h] - S[h].T @ kk) * beta[t, h])
            out[t, h] = S[h].T @ qq / np.sqrt(D_STATE)
    o = rms(out, W[p + "ssm_norm.weight"]) * silu(z.reshape(len(x), H_V, D_V))
    return o.reshape(len(x), -1) @ W[p + "ssm_out.weight"].T


def attention(il, x, p0):
    p = "blk.%d." % il
    T = len(x)
    qg = (x @ W[p + "attn_q.weight"].T).reshape(T, NH, 2 * HD)
    q, gate = qg[..., :HD], qg[..., HD:]
    k = (x @ W[p + "attn_k.weight"].T).reshape(T, NKV, HD)
    v = (x @ W[p + "attn_v.weight"].T).reshape(T, NKV, HD)
    q = rms(q, W[p + "attn_q_norm.weight"])
    k = rms(k, W[p + "attn_k_norm.weight"])
    q = np.stack([rope(q[t], p0 + t) for t in range(T)])
    k = np.stack([rope(k[t], p0 + t) for t in range(T)])
    # the KV cache holds f16 (zinc's and llama.cpp's default)
    KC.extend(k.astype(np.float16).astype(np.float64))
    VC.extend(v.astype(np.float16).astype(np.float64))
    Kc, Vc = np.stack(KC), np.stack(VC)
    out = np.zeros((T, NH, HD))
    for t in range(T):
        n = p0 + t + 1
        for h in range(NH):
            kv = h // (NH // NKV)
            s = Kc[:n, kv] @ q[t, h] / np.sqrt(HD)
            a = np.exp(s - s.max())
            out[t, h] = (a / a.sum()) @ Vc[:n, kv]
    return (out * sigmoid(gate)).reshape(T, -1) @ W[p + "attn_output.weight"].T


def forward(tokens, p0):
    x = W["token_embd.weight"][tokens]
    for il in range(NL):
        p = "blk.%d." % il
        h = rms(x, W[p + "attn_norm.weight"])
        x = x + (delta_net(il, h) if RECURRENT[il] else attention(il, h, p0))
        h = rms(x, W[p + "post_attention_norm.weight"])
        x = x + (silu(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
    return rms(x, W["output_norm.weight"]) @ W["output.weight"].T


logits = [forward(PROMPT, 0)]
for i, t in enumerate(DECODE):
    logits.append(forward([t], len(PROMPT) + i))
L = np.concatenate(logits)
print("static const float EXP_SYNTH_LOGITS[%d] = {%s};" % (L.size, ", ".join("%.8g" % v for v in L.ravel())))
