#!/usr/bin/env bash
# zinc synth end to end: write small versions of two models, read them back
# with `zinc inspect --json` and compare every tensor's name, type and shape
# (in file order) and the main metadata with tables written out here by hand
# from the models' configs and llama-quantize's Q4_K_M rules.
# usage: tests/test_synth.sh BUILD_DIR; last line "synth_cli: N passed, N failed"
set -uo pipefail
build=${1:-build}
zinc="$build/zinc"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zinc-synth.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

run() { # name, synth args...
  local name=$1; shift
  if "$zinc" synth "$@" -o "$tmp/$name.gguf" >"$tmp/$name.out" 2>"$tmp/err" &&
     "$zinc" inspect --json "$tmp/$name.gguf" >"$tmp/$name.json" 2>>"$tmp/err"; then ok
  else bad "synth/inspect $name: $(cat "$tmp/err")"; fi
}
run q3 --like qwen3-125m --layers 2 --vocab 512
run q35 --like qwen3.5-2b --layers 2 --vocab 256 --type q4_k_m --seed 5

"$py" - "$tmp" <<'EOF' >"$tmp/check" 2>&1
import json, sys
tmp = sys.argv[1]
fails = 0
def expect(cond, msg):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", msg)

def layer(i, rows):
    return [("blk.%d.%s" % (i, n), t, s) for n, t, s in rows]

# qwen3-125m, 2 layers, vocab 512, tied embeddings: with 2 layers the
# "more bits" rule picks layer 1 (the last eighth) for attn_v and ffn_down.
q3 = [("output_norm.weight", "F32", [768]), ("token_embd.weight", "Q6_K", [768, 512])]
for i, more in ((0, "Q4_K"), (1, "Q6_K")):
    q3 += layer(i, [("attn_k.weight", "Q4_K", [768, 256]), ("attn_k_norm.weight", "F32", [64]),
                    ("attn_norm.weight", "F32", [768]), ("attn_output.weight", "Q4_K", [768, 768]),
                    ("attn_q.weight", "Q4_K", [768, 768]), ("attn_q_norm.weight", "F32", [64]),
                    ("attn_v.weight", more, [768, 256]), ("ffn_down.weight", more, [2048, 768]),
                    ("ffn_gate.weight", "Q4_K", [768, 2048]), ("ffn_norm.weight", "F32", [768]),
                    ("ffn_up.weight", "Q4_K", [768, 2048])])

# qwen3.5-2b, 2 layers (both Gated DeltaNet: full attention is every 4th),
# vocab 256: 16 key and 16 value heads of 128 -> qkv 2*2048+2048 = 6144.
q35 = [("output_norm.weight", "F32", [2048]), ("token_embd.weight", "Q6_K", [2048, 256])]
for i, more in ((0, "Q4_K"), (1, "Q6_K")):
    q35 += layer(i, [("attn_gate.weight", "Q4_K", [2048, 2048]), ("attn_norm.weight", "F32", [2048]),
                     ("attn_qkv.weight", more, [2048, 6144]), ("ffn_down.weight", more, [6144, 2048]),
                     ("ffn_gate.weight", "Q4_K", [2048, 6144]), ("ffn_up.weight", "Q4_K", [2048, 6144]),
                     ("post_attention_norm.weight", "F32", [2048]), ("ssm_a", "F32", [16]),
                     ("ssm_alpha.weight", "Q4_K", [2048, 16]), ("ssm_beta.weight", "Q4_K", [2048, 16]),
                     ("ssm_conv1d.weight", "F32", [4, 6144]), ("ssm_dt.bias", "F32", [16]),
                     ("ssm_norm.weight", "F32", [128]), ("ssm_out.weight", "Q4_K", [2048, 2048])])

meta = {
    "q3": {"general.architecture": "qwen3", "general.file_type": 15, "qwen3.block_count": 2,
           "qwen3.embedding_length": 768, "qwen3.attention.head_count": 12, "qwen3.attention.head_count_kv": 4,
           "qwen3.attention.key_length": 64, "qwen3.feed_forward_length": 2048, "qwen3.vocab_size": 512},
    "q35": {"general.architecture": "qwen35", "qwen35.block_count": 2, "qwen35.embedding_length": 2048,
            "qwen35.attention.head_count": 8, "qwen35.attention.head_count_kv": 2, "qwen35.attention.key_length": 256,
            "qwen35.feed_forward_length": 6144, "qwen35.ssm.conv_kernel": 4, "qwen35.ssm.state_size": 128,
            "qwen35.ssm.group_count": 16, "qwen35.ssm.time_step_rank": 16, "qwen35.ssm.inner_size": 2048,
            "qwen35.full_attention_interval": 4, "qwen35.rope.dimension_count": 64},
}
for name, want in (("q3", q3), ("q35", q35)):
    d = json.load(open("%s/%s.json" % (tmp, name)))
    got = [(t["name"], t["type"], t["shape"]) for t in d["tensors"]]
    expect(len(got) == len(want), "%s: %d tensors, want %d" % (name, len(got), len(want)))
    for g, w in zip(got, want):
        expect(g == w, "%s: got %s, want %s" % (name, g, w))
    kv = {m["key"]: m.get("value") for m in d["metadata"]}
    for k, v in meta[name].items():
        expect(kv.get(k) == v, "%s: %s = %r, want %r" % (name, k, kv.get(k), v))
print("fails", fails)
EOF
if grep -q "^fails 0$" "$tmp/check"; then ok; else bad "$(cat "$tmp/check")"; fi

# the summary line
grep -q "24 tensors" "$tmp/q3.out" && ok || bad "summary: $(cat "$tmp/q3.out")"
# bad arguments: exit 2 with usage, nothing written
"$zinc" synth --like qwen3-125m --layers many -o "$tmp/x.gguf" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -e "$tmp/x.gguf" ] && grep -q "non-negative" "$tmp/err" && ok || bad "bad --layers: $(cat "$tmp/err")"
"$zinc" synth --like nope -o "$tmp/x.gguf" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && [ ! -e "$tmp/x.gguf" ] && grep -q "unknown model 'nope'" "$tmp/err" && ok || bad "bad --like: $(cat "$tmp/err")"

finish synth_cli
