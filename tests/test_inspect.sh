#!/usr/bin/env bash
# zinc inspect: on every shared GGUF (text and --json; the JSON is checked
# against a small independent GGUF parser written here in Python), and on
# malformed files (non-zero exit below 128, one "zinc: inspect: ..." line on
# stderr naming the problem, nothing on stdout).
# usage: tests/test_inspect.sh BUILD_DIR; last line "inspect: N passed, N failed"
set -uo pipefail
build=${1:-build}
zinc="$build/zinc"
shared=${ZN_SHARED:-../shared}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zinc-inspect.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

mapfile -t files < <(find "$shared/models" "$shared/tokenizers/ggml-vocab" -name '*.gguf' | sort)
[ "${#files[@]}" -ge 40 ] && ok || bad "only ${#files[@]} fixtures under $shared"

# every fixture: text mode works and shows the main facts; JSON is saved for the check below
i=0
for f in "${files[@]}"; do
  i=$((i+1))
  out=$("$zinc" inspect "$f" 2>"$tmp/err"); rc=$?
  if [ $rc -ne 0 ]; then bad "inspect $f: exit $rc: $(cat "$tmp/err")"; continue; fi
  for want in "gguf version:  3" "architecture:" "vocab size" "chat template" "metadata (" "total: "; do
    grep -qF "$want" <<<"$out" || { bad "inspect $f: no '$want' in the output"; continue 2; }
  done
  "$zinc" inspect --json "$f" >"$tmp/$i.json" 2>"$tmp/err" || { bad "inspect --json $f: $(cat "$tmp/err")"; continue; }
  echo "$f" >"$tmp/$i.path"
  ok
done

# the JSON against an independent reading of each file
"$py" - "$tmp" "$i" <<'EOF' >"$tmp/pycheck" 2>&1
import json, struct, sys
tmp, n = sys.argv[1], int(sys.argv[2])
# ggml type id -> (block elements, block bytes, name)
TYPES = {0: (1, 4, "F32"), 1: (1, 2, "F16"), 2: (32, 18, "Q4_0"), 3: (32, 20, "Q4_1"), 6: (32, 22, "Q5_0"),
         7: (32, 24, "Q5_1"), 8: (32, 34, "Q8_0"), 10: (256, 84, "Q2_K"), 11: (256, 110, "Q3_K"),
         12: (256, 144, "Q4_K"), 13: (256, 176, "Q5_K"), 14: (256, 210, "Q6_K"), 30: (1, 2, "BF16")}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

class R:
    def __init__(self, b): self.b, self.p = b, 0
    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.p); self.p += struct.calcsize("<" + fmt); return v[0]
    def str(self):
        n = self.take("Q"); s = self.b[self.p:self.p + n]; self.p += n; return s.decode("utf-8", "replace")
    def value(self, t):
        if t == 8: return self.str()
        if t == 9:
            et, cnt = self.take("I"), self.take("Q")
            return ("arr", et, [self.value(et) for _ in range(cnt)])
        return self.take(SCALAR[t])

def parse(path):
    b = open(path, "rb").read()
    r = R(b)
    assert b[:4] == b"GGUF"
    r.p = 4
    version, nt, nkv = r.take("I"), r.take("Q"), r.take("Q")
    kv = []
    for _ in range(nkv):
        k = r.str(); t = r.take("I"); kv.append((k, t, r.value(t)))
    tensors = []
    for _ in range(nt):
        name = r.str(); nd = r.take("I"); ne = [r.take("Q") for _ in range(nd)]
        t = r.take("I"); off = r.take("Q"); tensors.append((name, ne, t, off))
    return version, kv, tensors

fails = 0
def check(cond, what):
    global fails
    if not cond:
        fails += 1; print("  FAIL:", what)

for i in range(1, n + 1):
    try:
        path = open(f"{tmp}/{i}.path").read().strip()
        d = json.load(open(f"{tmp}/{i}.json"))
    except FileNotFoundError:
        continue
    version, kv, tensors = parse(path)
    check(d["version"] == version, f"{path}: version")
    check(d["n_tensors"] == len(tensors) == len(d["tensors"]), f"{path}: tensor count")
    check(len(d["metadata"]) == len(kv), f"{path}: kv count")
    kvd = {k: v for k, t, v in kv}
    check(d["architecture"] == kvd.get("general.architecture"), f"{path}: architecture")
    toks = kvd.get("tokenizer.ggml.tokens")
    check(d["tokenizer"]["vocab_size"] == (len(toks[2]) if toks else None), f"{path}: vocab size")
    tmpl = kvd.get("tokenizer.chat_template")
    check(d["chat_template"]["present"] == (tmpl is not None), f"{path}: chat template")
    arch = kvd.get("general.architecture", "")
    for hk, hv in d["hparams"].items():
        ref = kvd.get(arch + "." + hk)
        if isinstance(ref, tuple): ref = ref[2][:len(hv)]
        if isinstance(ref, float): check(abs(hv - ref) <= 1e-6 * abs(ref), f"{path}: hparam {hk}")
        else: check(hv == ref, f"{path}: hparam {hk}: {hv} != {ref}")
    for (k, t, v), m in zip(kv, d["metadata"]):
        check(m["key"] == k, f"{path}: key {k}")
        if t == 9:
            check(m["count"] == len(v[2]), f"{path}: {k} count")
            if v[1] in (8,) or v[1] in (0, 1, 2, 3, 4, 5, 10, 11):
                check(m["value"] == v[2][:len(m["value"])] and len(m["value"]) == min(8, len(v[2])), f"{path}: {k} head")
        elif t in (6, 12):
            check(isinstance(m["value"], str) or abs(m["value"] - v) <= 1e-7 * abs(v), f"{path}: {k} value")
        else:
            check(m["value"] == v, f"{path}: {k} value {m['value']!r} != {v!r}")
    total = params = 0
    for (name, ne, t, off), jt in zip(tensors, d["tensors"]):
        blck, size, tname = TYPES[t]
        nel = 1
        for x in ne: nel *= x
        nbytes = nel // blck * size
        total += nbytes; params += nel
        check(jt["name"] == name and jt["shape"] == ne and jt["type"] == tname and jt["bytes"] == nbytes
              and jt["offset"] == off, f"{path}: tensor {name}: {jt} vs {ne} {tname} {nbytes} {off}")
    check(d["tensor_bytes"] == total and d["params"] == params, f"{path}: totals")
print(f"pycheck: {n} files, {fails} failed")
EOF
if grep -q "pycheck: [0-9]* files, 0 failed" "$tmp/pycheck"; then ok; else bad "JSON vs independent parser:"; cat "$tmp/pycheck" >&2; fi

# awkward values: bytes that are not UTF-8, control characters, nested arrays,
# inf, the largest u64, bool arrays; the JSON must still parse and keep them
mkdir -p "$tmp/good"
"$py" - "$tmp/good/odd.gguf" <<'EOF'
import struct, sys
def s(x): return struct.pack("<Q", len(x)) + x
kv = [(b"general.architecture", 8, s(b"odd")),
      (b"odd.bytes", 8, s(b"a\xff\xfe\x01\n\"\\z\xe2\x96\x81")),
      (b"odd.nested", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 5, 2) + struct.pack("<ii", 1, -2)
                          + struct.pack("<IQ", 5, 1) + struct.pack("<i", 3)),
      (b"odd.inf", 6, struct.pack("<f", float("-inf"))),
      (b"odd.u64", 10, struct.pack("<Q", 2**64 - 1)),
      (b"odd.bools", 9, struct.pack("<IQ", 7, 3) + bytes([1, 0, 1]))]
b = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
for k, t, v in kv: b += s(k) + struct.pack("<I", t) + v
open(sys.argv[1], "wb").write(b)
EOF
if "$zinc" inspect --json "$tmp/good/odd.gguf" >"$tmp/odd.json" 2>"$tmp/err" && "$zinc" inspect "$tmp/good/odd.gguf" >/dev/null 2>&1; then
  "$py" - "$tmp/odd.json" <<'EOF' && ok || bad "odd values in JSON: $(cat "$tmp/odd.json")"
import json, sys
m = {e["key"]: e for e in json.load(open(sys.argv[1]))["metadata"]}
assert m["odd.bytes"]["value"] == "a\ufffd\ufffd\x01\n\"\\z\u2581", m["odd.bytes"]
assert m["odd.nested"]["value"] == [[1, -2], [3]] and m["odd.nested"]["count"] == 2
assert m["odd.inf"]["value"] == "-inf" and m["odd.u64"]["value"] == 2**64 - 1
assert m["odd.bools"]["value"] == [True, False, True]
EOF
else
  bad "inspect odd.gguf: $(cat "$tmp/err")"
fi

# --help, usage errors
"$zinc" inspect --help | grep -q "usage: zinc inspect FILE \[--json\]" && ok || bad "inspect --help"
"$zinc" inspect >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] && ok || bad "inspect without a file: exit $rc"
"$zinc" inspect --bogus "${files[0]}" >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] && ok || bad "inspect --bogus: exit $rc"

# malformed files
src="$shared/models/tiny/qwen35-dense-q4_0.gguf"
: >"$tmp/empty.gguf"
{ printf 'XXXX'; tail -c +5 "$src"; } >"$tmp/magic.gguf"
{ head -c 4 "$src"; printf '\001\000\000\000'; tail -c +9 "$src"; } >"$tmp/v1.gguf"
head -c 1000 "$src" >"$tmp/cut-meta.gguf"
size=$(stat -c %s "$src")
head -c $((size - 100)) "$src" >"$tmp/cut-data.gguf"
{ head -c 16 "$src"; printf '\377\377\377\377\377\377\377\377'; tail -c +25 "$src"; } >"$tmp/kvcount.gguf"
"$py" - "$src" "$tmp/type77.gguf" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
name = b"output.weight"
p = b.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
nd = struct.unpack_from("<I", b, p)[0]
struct.pack_into("<I", b, p + 4 + 8 * nd, 77)
open(sys.argv[2], "wb").write(b)
EOF
mkdir -p "$tmp/dir.gguf"
malformed() { # FILE EXPECTED-SUBSTRING
  "$zinc" inspect "$1" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then bad "$1: exit $rc"; return; fi
  if [ "$lines" -ne 1 ] || ! grep -q '^zinc: inspect: ' "$tmp/err"; then bad "$1: stderr not one 'zinc: inspect:' line: $(cat "$tmp/err")"; return; fi
  if ! grep -qF -- "$2" "$tmp/err"; then bad "$1: no '$2' in: $(cat "$tmp/err")"; return; fi
  if [ -s "$tmp/out" ]; then bad "$1: wrote to stdout"; return; fi
  ok
}
malformed "$tmp/empty.gguf" "empty file"
malformed "$tmp/magic.gguf" "bad magic 'XXXX'"
malformed "$tmp/v1.gguf" "version 1 is not supported"
malformed "$tmp/cut-meta.gguf" "cut-meta.gguf: "
malformed "$tmp/cut-data.gguf" "runs past the end of the data section"
malformed "$tmp/kvcount.gguf" "kv count 18446744073709551615 exceeds the limit"
malformed "$tmp/type77.gguf" "tensor 'output.weight': unknown type id 77"
malformed "$tmp/dir.gguf" "not a regular file"
malformed "$tmp/missing.gguf" "cannot open"
for f in "$tmp"/*.gguf; do
  [ -f "$f" ] || continue
  "$zinc" inspect --json "$f" >/dev/null 2>&1; rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] && ok || bad "inspect --json $f: exit $rc"
done

finish inspect
