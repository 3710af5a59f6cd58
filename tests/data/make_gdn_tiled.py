#!/usr/bin/env python3
"""Writes qwen35moe-gdn-tiled-f32.gguf: the tiny qwen35moe fixture
(../shared/models/tiny/qwen35moe-moe-f32.gguf) reshaped so that the Gated
DeltaNet layer has twice as many value heads as key heads (ssm.time_step_rank
4, ssm.group_count 2), and 4 experts of which 2 are used. The metadata is
copied from the fixture, so llama.cpp loads it as it loads the fixture.

Weights are redrawn (numpy seed 42), NOT with the fixture's N(0, 0.1) for
every tensor: there, the per-tensor output scales (*.scale ~ 0.1) and norm
weights (~ 0.1) shrink the DeltaNet branch so much that zeroing it moves the
logits by < 1e-9 (NMSE), so a wrong head mapping would go unnoticed. Here
matrices are N(0, 0.1), norm weights 1 + N(0, 0.1), scales 1, ssm_a
-exp(N(0, 0.5)) (negative, as -exp(A_log) in real models): every branch
moves the logits. Needs gguf-py from llama.cpp: PYTHONPATH=.../llama.cpp/gguf-py.

usage: make_gdn_tiled.py FIXTURE.gguf OUT.gguf"""
import sys

import numpy as np
import gguf

N_V_HEADS, N_EXPERT, N_EXPERT_USED, N_FF_EXP = 4, 4, 2, 256
ARCH = "qwen35moe"


def main(src, dst):
    r = gguf.GGUFReader(src)
    kv = {f.name: f for f in r.fields.values()}
    get = lambda k: kv[k].contents()
    d_state = get(f"{ARCH}.ssm.state_size")
    n_k_heads = get(f"{ARCH}.ssm.group_count")
    n_embd = get(f"{ARCH}.embedding_length")
    d_inner = N_V_HEADS * d_state
    qkv = 2 * n_k_heads * d_state + d_inner
    override = {
        f"{ARCH}.ssm.time_step_rank": N_V_HEADS,
        f"{ARCH}.ssm.inner_size": d_inner,
        f"{ARCH}.expert_count": N_EXPERT,
        f"{ARCH}.expert_used_count": N_EXPERT_USED,
        f"{ARCH}.expert_feed_forward_length": N_FF_EXP,
    }
    # ggml order (ne0 first), by name suffix; other tensors keep their shape
    shapes = {
        "attn_qkv.weight": [n_embd, qkv],
        "attn_gate.weight": [n_embd, d_inner],
        "ssm_out.weight": [d_inner, n_embd],
        "ssm_conv1d.weight": [4, qkv],
        "ssm_dt.bias": [N_V_HEADS],
        "ssm_a": [N_V_HEADS],
        "ssm_alpha.weight": [n_embd, N_V_HEADS],
        "ssm_beta.weight": [n_embd, N_V_HEADS],
        "ffn_gate_inp.weight": [n_embd, N_EXPERT],
        "ffn_down_exps.weight": [N_FF_EXP, n_embd, N_EXPERT],
        "ffn_gate_up_exps.weight": [n_embd, 2 * N_FF_EXP, N_EXPERT],
        "ffn_down_exps.scale": [N_EXPERT],
        "ffn_down_exps.input_scale": [N_EXPERT],
    }
    w = gguf.GGUFWriter(dst, ARCH)
    for name, f in kv.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = f.types[0]
        if name in override:
            w.add_key_value(name, override[name], vtype)
        elif vtype == gguf.GGUFValueType.ARRAY:
            if f.data:  # gguf-py cannot write empty arrays; all are optional
                    w.add_key_value(name, f.contents(), vtype, f.types[-1])
        else:
            w.add_key_value(name, f.contents(), vtype)
    rng = np.random.default_rng(42)
    for t in r.tensors:
        suffix = t.name.split(".", 2)[-1] if t.name.startswith("blk.") else t.name
        ne = shapes.get(suffix, [int(x) for x in t.shape])
        data = rng.normal(0.0, 0.1, size=list(reversed(ne)))
        if t.name.endswith("scale"):
            data = np.ones_like(data)
        elif t.name.endswith("norm.weight"):
            data += 1.0
        elif t.name.endswith("ssm_a"):
            data = -np.exp(5.0 * data)
        data = data.astype(np.float32)
        w.add_tensor(t.name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
