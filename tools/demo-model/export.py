"""Step 3 of the demo model: convert the trained Hugging Face Qwen3.5 weights
to GGUF tensors (names, shapes and value conventions as llama.cpp's
convert_hf_to_gguf.py writes them for `qwen35`) plus the metadata, as a
manifest that pack.c turns into the GGUF file with zinc's own writer.

  /usr/bin/python3 export.py --weights RUN_DIR --merges merges.txt --out DIR

RUN_DIR holds train.py's w*.safetensors and ref.json. DIR receives
manifest.tsv, tensors.bin (raw little-endian f32), tokens.txt, merges.txt and
chat_template.jinja.

Conventions (the facts GGUF files of this architecture follow):
- Hugging Face's Qwen3.5 RMSNorm weights are zero-centred (scale = 1 + w);
  GGUF stores w + 1 for every norm except the DeltaNet gated norm
  (`linear_attn.norm`), whose weight is a plain scale.
- `A_log` is stored as `ssm_a = -exp(A_log)`; `dt_bias` as `ssm_dt.bias`.
- The conv1d weight {channels, 1, K} is squeezed to {channels, K}.
- When value heads outnumber key heads, value heads are reordered from grouped
  (by key head) to tiled (value head h uses key head h mod H_k) in every tensor
  that carries value-head channels.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
LICENSE_NOTE = ("Weights: CC0-1.0 (trained by the zinc project). Training text: public domain "
                "(Tolstoy, War and Peace, English translation; Shakespeare, via karpathy/char-rnn tinyshakespeare).")


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
    return out


def reorder_v_heads(t, axis, n_k, n_per_k, head_dim):
    """Grouped [k0: v0..v{r-1}, k1: ...] -> tiled [v0 of k0, v0 of k1, ...]."""
    shape = list(t.shape)
    axis %= len(shape)
    t = t.reshape(shape[:axis] + [n_k, n_per_k, head_dim] + shape[axis + 1:])
    return np.swapaxes(t, axis, axis + 1).reshape(shape)


def convert(sd, cfg):
    """HF state dict -> {gguf name: f32 array in GGUF (ne reversed) order}."""
    n_k, n_v = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    r = n_v // n_k
    tiled = lambda t, axis, hd: reorder_v_heads(t, axis, n_k, r, hd) if r > 1 else t
    out = {}
    for name, t in sd.items():
        t = np.array(t, dtype=np.float32)
        if name == "model.embed_tokens.weight":
            out["token_embd.weight"] = t
            continue
        if name == "lm_head.weight":
            out["output.weight"] = t
            continue
        if name == "model.norm.weight":
            out["output_norm.weight"] = t + 1
            continue
        parts = name.split(".")
        assert parts[0] == "model" and parts[1] == "layers", name
        il, rest = int(parts[2]), ".".join(parts[3:])
        blk = f"blk.{il}."
        if rest.startswith("linear_attn."):
            key = rest[len("linear_attn."):]
            if key == "in_proj_qkv.weight":
                qk = t[:2 * n_k * dk]
                out[blk + "attn_qkv.weight"] = np.concatenate([qk, tiled(t[2 * n_k * dk:], 0, dv)])
            elif key == "in_proj_z.weight":
                out[blk + "attn_gate.weight"] = tiled(t, 0, dv)
            elif key == "in_proj_a.weight":
                out[blk + "ssm_alpha.weight"] = tiled(t, 0, 1)
            elif key == "in_proj_b.weight":
                out[blk + "ssm_beta.weight"] = tiled(t, 0, 1)
            elif key == "A_log":
                out[blk + "ssm_a"] = tiled(-np.exp(t), 0, 1)
            elif key == "dt_bias":
                out[blk + "ssm_dt.bias"] = tiled(t, 0, 1)
            elif key == "conv1d.weight":
                c = t.reshape(t.shape[0], t.shape[-1])
                out[blk + "ssm_conv1d.weight"] = np.concatenate([c[:2 * n_k * dk], tiled(c[2 * n_k * dk:], 0, dv)])
            elif key == "norm.weight":
                out[blk + "ssm_norm.weight"] = t  # plain scale: no +1
            elif key == "out_proj.weight":
                out[blk + "ssm_out.weight"] = tiled(t, 1, dv)
            else:
                raise KeyError(name)
            continue
        table = {
            "input_layernorm.weight": ("attn_norm.weight", 1),
            "post_attention_layernorm.weight": ("post_attention_norm.weight", 1),
            "self_attn.q_norm.weight": ("attn_q_norm.weight", 1),
            "self_attn.k_norm.weight": ("attn_k_norm.weight", 1),
            "self_attn.q_proj.weight": ("attn_q.weight", 0),
            "self_attn.k_proj.weight": ("attn_k.weight", 0),
            "self_attn.v_proj.weight": ("attn_v.weight", 0),
            "self_attn.o_proj.weight": ("attn_output.weight", 0),
            "mlp.gate_proj.weight": ("ffn_gate.weight", 0),
            "mlp.up_proj.weight": ("ffn_up.weight", 0),
            "mlp.down_proj.weight": ("ffn_down.weight", 0),
        }
        gname, plus = table[rest]
        out[blk + gname] = t + plus
    return out


def metadata(cfg, n_tokens, eot, im_start, im_end):
    a = "qwen35"
    hd = cfg["head_dim"]
    rp = cfg["rope_parameters"]
    n_rot = int(hd * rp.get("partial_rotary_factor", 1.0))
    sections = list(rp["mrope_section"]) + [0] * (4 - len(rp["mrope_section"]))
    assert sum(sections) == n_rot // 2, (sections, n_rot)
    rec = [1 if t == "linear_attention" else 0 for t in cfg["layer_types"]]
    return [
        ("general.architecture", "str", a),
        ("general.type", "str", "model"),
        ("general.name", "str", "zinc demo (Qwen3.5 hybrid, 8.6M)"),
        ("general.basename", "str", "zinc-demo-qwen35"),
        ("general.size_label", "str", "8.6M"),
        ("general.author", "str", "the zinc project"),
        ("general.organization", "str", "zinc"),
        ("general.version", "str", "1.0"),
        ("general.description", "str",
         "A tiny Qwen3.5 hybrid model (6 Gated DeltaNet + 2 gated-attention layers) trained from scratch by the "
         "zinc project as its offline demo. It writes English-looking prose, nothing more. Rebuild: "
         "tools/demo-model/README.md."),
        ("general.license", "str", "cc0-1.0"),
        ("general.license.name", "str", "CC0 1.0 Universal"),
        ("general.license.link", "str", "https://creativecommons.org/publicdomain/zero/1.0/"),
        ("general.source.description", "str", LICENSE_NOTE),
        ("general.dataset.count", "u32", 2),
        ("general.dataset.0.name", "str", "War and Peace (Tolstoy, English translation)"),
        ("general.dataset.0.description", "str",
         "public domain; ollama/ollama fb30760 tokenizer/testdata/war-and-peace.txt (Gutenberg header stripped)"),
        ("general.dataset.1.name", "str", "tinyshakespeare"),
        ("general.dataset.1.description", "str",
         "public domain; karpathy/char-rnn 6f9487a data/tinyshakespeare/input.txt"),
        ("general.tags", "arr_str", "demo,text-generation,qwen35"),
        ("general.languages", "arr_str", "en"),
        (f"{a}.vocab_size", "u32", cfg["vocab_size"]),
        (f"{a}.context_length", "u32", cfg["max_position_embeddings"]),
        (f"{a}.embedding_length", "u32", cfg["hidden_size"]),
        (f"{a}.block_count", "u32", cfg["num_hidden_layers"]),
        (f"{a}.feed_forward_length", "u32", cfg["intermediate_size"]),
        (f"{a}.attention.head_count", "u32", cfg["num_attention_heads"]),
        (f"{a}.attention.head_count_kv", "u32", cfg["num_key_value_heads"]),
        (f"{a}.attention.key_length", "u32", hd),
        (f"{a}.attention.value_length", "u32", hd),
        (f"{a}.attention.layer_norm_rms_epsilon", "f32", cfg["rms_norm_eps"]),
        (f"{a}.attention.recurrent_layers", "arr_u32", ",".join(map(str, rec))),
        (f"{a}.full_attention_interval", "u32", cfg["full_attention_interval"]),
        (f"{a}.rope.freq_base", "f32", rp["rope_theta"]),
        (f"{a}.rope.dimension_count", "u32", n_rot),
        (f"{a}.rope.dimension_sections", "arr_i32", ",".join(map(str, sections))),
        (f"{a}.ssm.conv_kernel", "u32", cfg["linear_conv_kernel_dim"]),
        (f"{a}.ssm.state_size", "u32", cfg["linear_key_head_dim"]),
        (f"{a}.ssm.group_count", "u32", cfg["linear_num_key_heads"]),
        (f"{a}.ssm.time_step_rank", "u32", cfg["linear_num_value_heads"]),
        (f"{a}.ssm.inner_size", "u32", cfg["linear_value_head_dim"] * cfg["linear_num_value_heads"]),
        ("tokenizer.ggml.model", "str", "gpt2"),
        ("tokenizer.ggml.pre", "str", "qwen35"),
        ("tokenizer.ggml.tokens", "arr_str_file", "tokens.txt"),
        ("tokenizer.ggml.token_type", "arr_i32", ",".join("3" if i >= n_tokens - len(bpe.SPECIALS) else "1"
                                                         for i in range(n_tokens))),
        ("tokenizer.ggml.merges", "arr_str_file", "merges.txt"),
        ("tokenizer.ggml.bos_token_id", "u32", eot),
        ("tokenizer.ggml.eos_token_id", "u32", eot),
        ("tokenizer.ggml.eot_token_id", "u32", im_end),
        ("tokenizer.ggml.padding_token_id", "u32", eot),
        ("tokenizer.ggml.add_bos_token", "bool", 0),
        ("tokenizer.chat_template", "str_file", "chat_template.jinja"),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--merges", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ref = json.load(open(os.path.join(args.weights, "ref.json")))
    cfg = ref["config"]
    sd = {}
    for f in sorted(os.listdir(args.weights)):
        if f.endswith(".safetensors"):
            sd.update(read_safetensors(os.path.join(args.weights, f)))
    tensors = convert(sd, cfg)

    merges = bpe.load_merges(args.merges)
    tok = bpe.Tokenizer(merges)
    assert len(tok.tokens) == cfg["vocab_size"]
    with open(os.path.join(args.out, "tokens.txt"), "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in tok.tokens)
    bpe.save_merges(os.path.join(args.out, "merges.txt"), merges)
    with open(os.path.join(args.out, "chat_template.jinja"), "w", encoding="utf-8") as f:
        f.write(CHAT_TEMPLATE)

    ids = tok.id_of
    meta = metadata(cfg, len(tok.tokens), ids["<|endoftext|>"], ids["<|im_start|>"], ids["<|im_end|>"])
    # Tensor order: as llama.cpp's converter emits them (embedding, then per
    # block, then output), so the file reads naturally in `zinc inspect`.
    def order(n):
        if n.startswith("blk."):
            return (1, int(n.split(".")[1]), n)
        return (0 if n == "token_embd.weight" else 2, 0, n)
    lines = ["zinc-pack\t1"]
    lines += [f"kv\t{k}\t{t}\t{v}" for k, t, v in meta]
    off = 0
    with open(os.path.join(args.out, "tensors.bin"), "wb") as f:
        for name in sorted(tensors, key=order):
            t = np.ascontiguousarray(tensors[name], dtype="<f4")
            ne = ",".join(str(d) for d in reversed(t.shape))  # GGUF ne: row length first
            f.write(t.tobytes())
            lines.append(f"tensor\t{name}\t{ne}\t{off}")
            off += t.nbytes
    with open(os.path.join(args.out, "manifest.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(tensors)} tensors, {off / 4:.0f} parameters -> {args.out}")


if __name__ == "__main__":
    main()
