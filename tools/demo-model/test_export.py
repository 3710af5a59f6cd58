"""Checks export.convert on the case the demo model itself does not exercise:
more value heads than key heads (H_v = 2 H_k), where GGUF wants the value
heads tiled (value head h uses key head h mod H_k) while Hugging Face groups
them (h uses key head h // (H_v/H_k)).

A random Gated DeltaNet layer in Hugging Face layout runs through a direct
NumPy transcription of transformers' Qwen3.5 forward (grouped heads, A_log,
zero-based conv weight shape); the same weights, converted, run through
ref_numpy.Model.deltanet (GGUF conventions, tiled heads). The outputs must
agree. Prints "N passed, N failed".
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import ref_numpy  # noqa: E402

EPS = 1e-6


def hf_deltanet(sd, cfg, x):
    """transformers' Qwen3_5GatedDeltaNet.forward (torch_recurrent path)."""
    pre = "model.layers.0.linear_attn."
    hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    T = x.shape[0]
    mixed = x @ sd[pre + "in_proj_qkv.weight"].T
    w = sd[pre + "conv1d.weight"][:, 0, :]  # (channels, K)
    K = w.shape[1]
    padded = np.concatenate([np.zeros((K - 1, mixed.shape[1])), mixed])
    conv = np.stack([(padded[t:t + K] * w.T).sum(0) for t in range(T)])
    conv = conv / (1 + np.exp(-conv))
    q = conv[:, :hk * dk].reshape(T, hk, dk)
    k = conv[:, hk * dk:2 * hk * dk].reshape(T, hk, dk)
    v = conv[:, 2 * hk * dk:].reshape(T, hv, dv)
    z = (x @ sd[pre + "in_proj_z.weight"].T).reshape(T, hv, dv)
    beta = 1 / (1 + np.exp(-(x @ sd[pre + "in_proj_b.weight"].T)))
    g = -np.exp(sd[pre + "A_log"]) * np.log1p(np.exp(x @ sd[pre + "in_proj_a.weight"].T + sd[pre + "dt_bias"]))
    r = hv // hk
    q, k = np.repeat(q, r, axis=1), np.repeat(k, r, axis=1)  # repeat_interleave: grouped
    q = q / np.sqrt((q * q).sum(-1, keepdims=True) + EPS) / np.sqrt(dk)
    k = k / np.sqrt((k * k).sum(-1, keepdims=True) + EPS)
    state = np.zeros((hv, dk, dv))
    out = np.zeros((T, hv, dv))
    for t in range(T):
        state = state * np.exp(g[t])[:, None, None]
        kv_mem = (state * k[t][:, :, None]).sum(1)
        delta = (v[t] - kv_mem) * beta[t][:, None]
        state = state + k[t][:, :, None] * delta[:, None, :]
        out[t] = (state * q[t][:, :, None]).sum(1)
    var = (out * out).mean(-1, keepdims=True)
    out = out / np.sqrt(var + EPS) * sd[pre + "norm.weight"] * (z / (1 + np.exp(-z)))
    return out.reshape(T, -1) @ sd[pre + "out_proj.weight"].T


def check(hk, hv, seed):
    rng = np.random.default_rng(seed)
    d, dk, dv, K, n_embd, T = 8, 8, 8, 4, 32, 7
    cfg = {"linear_num_key_heads": hk, "linear_num_value_heads": hv, "linear_key_head_dim": dk,
           "linear_value_head_dim": dv}
    pre = "model.layers.0.linear_attn."
    shapes = {"in_proj_qkv.weight": (2 * hk * dk + hv * dv, n_embd), "in_proj_z.weight": (hv * dv, n_embd),
              "in_proj_a.weight": (hv, n_embd), "in_proj_b.weight": (hv, n_embd), "A_log": (hv,),
              "dt_bias": (hv,), "conv1d.weight": (2 * hk * dk + hv * dv, 1, K), "norm.weight": (dv,),
              "out_proj.weight": (n_embd, hv * dv)}
    sd = {pre + k: rng.normal(0, 0.5, s) for k, s in shapes.items()}
    sd[pre + "norm.weight"] = 1 + 0.1 * rng.normal(size=dv)
    x = rng.normal(size=(T, n_embd))
    want = hf_deltanet(sd, cfg, x)
    W = {k: v.astype(np.float64) for k, v in export.convert(sd, cfg).items()}
    meta = {"general.architecture": "qwen35", "qwen35.block_count": "1",
            "qwen35.attention.layer_norm_rms_epsilon": str(EPS), "qwen35.attention.head_count": "1",
            "qwen35.attention.head_count_kv": "1", "qwen35.attention.key_length": str(d),
            "qwen35.rope.dimension_count": "0", "qwen35.rope.freq_base": "1", "qwen35.attention.recurrent_layers": "1",
            "qwen35.ssm.state_size": str(dk), "qwen35.ssm.group_count": str(hk), "qwen35.ssm.time_step_rank": str(hv),
            "qwen35.ssm.inner_size": str(hv * dv), "qwen35.ssm.conv_kernel": str(K)}
    got = ref_numpy.Model(meta, W).deltanet(0, x)
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    return err


def main():
    passed = failed = 0
    for hk, hv in [(2, 2), (2, 4), (1, 3), (2, 6)]:
        err = check(hk, hv, seed=hk * 10 + hv)
        ok = err < 1e-5  # export stores f32: rounding, not a wrong head order (that gives ~1)
        print(f"H_k={hk} H_v={hv}: max relative error {err:.2e} {'ok' if ok else 'FAIL'}")
        passed += ok
        failed += not ok
    # The reorder must matter: without it, the grouped weights give a different answer.
    saved = export.reorder_v_heads
    export.reorder_v_heads = lambda t, *a: t
    err = check(2, 4, seed=24)
    export.reorder_v_heads = saved
    ok = err > 1e-3
    print(f"without the reorder, H_k=2 H_v=4 differs by {err:.2e} {'ok' if ok else 'FAIL (test cannot detect it)'}")
    passed += ok
    failed += not ok
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
