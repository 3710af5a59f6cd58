#!/usr/bin/env bash
# The shipped demo model (models/zinc-demo-qwen35.gguf) and the tools that made
# it (tools/demo-model/). $1: the build directory. Last line "N passed, N failed".
build=${1:-build}
py=${PYTHON:-/usr/bin/python3}
dir=tools/demo-model
model=models/zinc-demo-qwen35.gguf
P=0; F=0
check() { # name, command...
  local name=$1; shift
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -eq 0 ]; then echo "ok: $name"; P=$((P+1)); else echo "FAIL: $name"; printf '%s\n' "$out" | tail -20 | sed 's/^/    /'; F=$((F+1)); fi
}

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
check "zinc tokenize == bpe.py, the tokenizer the model was trained with" \
  "$py" $dir/test_tokenizer.py "$build/zinc" "$model" ../shared/corpora
check "export: value-head reorder for H_v > H_k" "$py" $dir/test_export.py
check "demo-pack: manifest -> GGUF round trip (F32, Q8_0)" "$py" $dir/test_pack.py "$build/demo-pack"

echo "demo_model: $P passed, $F failed"
[ "$F" -eq 0 ]
