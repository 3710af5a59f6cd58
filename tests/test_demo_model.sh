#!/usr/bin/env bash
# The shipped demo model (models/zinc-demo-qwen35.gguf) and the tools that made
# it (tools/demo-model/). $1: the build directory. Last line "N passed, N failed".
build=${1:-build}
py=${PYTHON:-/usr/bin/python3}
dir=tools/demo-model
model=models/zinc-demo-qwen35.gguf
. "$(dirname "$0")/lib.sh"

size=$(stat -c %s "$model" 2>/dev/null || echo 0)
check "shipped model exists and is at most 10 MB ($size bytes)" test "$size" -gt 0 -a "$size" -le 10000000
# The shipped file holds the trained model: an independent NumPy forward pass
# over it matches the PyTorch logits recorded at training time.
check "shipped model == trained PyTorch model (NumPy reference; NMSE <= 1e-4, 8 greedy tokens)" \
  "$py" $dir/ref_numpy.py "$model" $dir/reference --max-nmse 1e-4 --greedy 8
# zinc's engine on the shipped file: Q8_0 weights and (as in llama.cpp) Q8_0
# activations in the dot products, so the quantized-file bound of the golden
# tests; prompt 1 reaches a near-tie (PyTorch's top two logits 0.047 apart) at
# its 9th greedy token, which that rounding may flip: compare 8 tokens.
check "zinc CPU == PyTorch on the shipped model (NMSE <= 1e-3, 8 greedy tokens)" \
  "$py" $dir/parity.py "$build/zinc" "$model" --max-nmse 1e-3 --greedy 8 --backend cpu
# Generation through the CLI. The same seed gives the same text (each backend
# run twice); greedy decoding prints PyTorch's greedy continuation, and the
# same text on Vulkan (lavapipe in CI).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gen() { "$build/zinc" -m "$model" -p "The old prince" "$@" 2>>"$tmp/stderr"; }
gen -n 64 --temp 0.8 --seed 7 --backend cpu > "$tmp/s1"
gen -n 64 --temp 0.8 --seed 7 --backend cpu > "$tmp/s2"
check "seeded sampling on the CPU is deterministic ($(wc -c < "$tmp/s1") bytes, twice the same)" \
  bash -c '[ -s "$1" ] && cmp "$1" "$2"' _ "$tmp/s1" "$tmp/s2"
# no Vulkan device: the Vulkan checks are skipped, each with the reason
vk_none=$("$build/zinc" --list-devices 2>&1 >/dev/null) && vk_none=
vkcheck() { if [ -z "$vk_none" ]; then check "$@"; else skip "$1" "no Vulkan device ($vk_none)"; fi; }
vkgen() { [ -n "$vk_none" ] || gen "$@" --backend vulkan; }
vkgen -n 32 --temp 0.8 --seed 7 > "$tmp/v1"
vkgen -n 32 --temp 0.8 --seed 7 > "$tmp/v2"
vkcheck "seeded sampling on Vulkan is deterministic ($(wc -c < "$tmp/v1") bytes, twice the same)" \
  bash -c '[ -s "$1" ] && cmp "$1" "$2"' _ "$tmp/v1" "$tmp/v2"
check "the CLI reports tok/s" grep -q "tok/s" "$tmp/stderr"
gen -n 32 --temp 0 --backend cpu > "$tmp/g_cpu"
check "greedy CLI text (CPU) == PyTorch's greedy continuation" \
  "$py" -c 'import json, sys; want = json.load(open(sys.argv[1]))["prompts"][0]["greedy_text"]
got = open(sys.argv[2], encoding="utf-8").read()
sys.exit(0 if want in got else "want %r in %r" % (want, got))' $dir/reference/ref.json "$tmp/g_cpu"
vkgen -n 32 --temp 0 > "$tmp/g_vk"
vkcheck "greedy CLI text: CPU == Vulkan" bash -c '[ -s "$1" ] && cmp "$1" "$2"' _ "$tmp/g_cpu" "$tmp/g_vk"
vkcheck "zinc Vulkan == PyTorch on the shipped model (NMSE <= 1e-3, 8 greedy tokens)" \
  "$py" $dir/parity.py "$build/zinc" "$model" --max-nmse 1e-3 --greedy 8 --backend vulkan
check "zinc tokenize == bpe.py, the tokenizer the model was trained with" \
  "$py" $dir/test_tokenizer.py "$build/zinc" "$model" ../shared/corpora
check "export: value-head reorder for H_v > H_k" "$py" $dir/test_export.py
check "demo-pack: manifest -> GGUF round trip (F32, Q8_0)" "$py" $dir/test_pack.py "$build/demo-pack"

finish demo_model
