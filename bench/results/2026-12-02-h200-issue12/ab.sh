#!/usr/bin/env bash
# ab.sh SHAPES... : zinc-before, zinc-after (Vulkan) and llama.cpp CUDA on the same synth files, interleaved per test.
set -uo pipefail
cd "$(dirname "$0")"
for f in ../.gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
O=${OUT:-/tmp/ab}; mkdir -p $O /tmp/m
mkdir -p /tmp/ll && cat llama-cuda-sm90.tar.xz.part* | tar -xJ -C /tmp/ll; L=/tmp/ll/llama-cuda
export LD_LIBRARY_PATH=$L:$PWD/lib
TESTS=${TESTS:-pp512 tg128 tg128@4096}; REPS=${REPS:-3}
./zinc-after --check > $O/check.txt 2>&1; grep -iE "class|tuning|device|READY" $O/check.txt | head -8
for s in "$@"; do
  like=${s%%:*}; opts=""; [ "$like" != "$s" ] && opts=$(echo "${s#*:}" | tr ',' ' ')
  f=/tmp/m/$(echo "$s" | tr -c 'A-Za-z0-9.\n-' '_').gguf
  [ -f $f ] || ./zinc-after synth --like $like --type q4_k_m $opts -o $f > /dev/null 2>>$O/synth.err || { echo "synth $s failed"; continue; }
  for t in $TESTS; do
    case $t in
      pp*) p=${t#pp}; z="-p $p -n 0"; l="-p $p -n 0";;
      tg*@*) n=${t#tg}; d=${n#*@}; n=${n%@*}; z="-p 0 -n $n --depth $d"; l="-p 0 -n $n -d $d";;
      tg*) n=${t#tg}; z="-p 0 -n $n"; l="-p 0 -n $n";;
    esac
    for b in before after; do
      timeout 200 ./zinc-$b bench -m $f $z -r $REPS --backend vulkan --json 2>>$O/zinc-$b.err | sed "s|^{|{\"bin\":\"$b\",\"shape\":\"$s\",\"test\":\"$t\",|" >> $O/zinc.jsonl
    done
    timeout 200 $L/llama-bench -m $f -ngl 99 -fa 1 -r $REPS $l -o jsonl 2>>$O/llama.err | sed "s|^{|{\"shape\":\"$s\",\"test\":\"$t\",|" >> $O/llama.jsonl
  done
done
python3 - $O <<'PY' | tee $O/table.md
import json,sys
o=sys.argv[1]
def rows(p):
    try:
        for line in open(p):
            line=line.strip()
            if line.startswith('{'):
                try: yield json.loads(line)
                except ValueError: pass
    except FileNotFoundError: return
Z={}
for r in rows(o+'/zinc.jsonl'):
    pp=r['test'].startswith('pp')
    Z[(r['bin'],r['shape'],r['test'])]=(r.get('pp_tps' if pp else 'tg_tps'), r.get('pp_sd' if pp else 'tg_sd'))
L={(r['shape'],r['test']):(r['avg_ts'],r['stddev_ts']) for r in rows(o+'/llama.jsonl')}
print('| shape | test | zinc before (2c0252b) | zinc after | after / before | llama.cpp CUDA | after / CUDA |')
print('|---|---|---|---|---|---|---|')
keys=sorted({(k[1],k[2]) for k in Z}|set(L))
f=lambda v: f'{v[0]:,.1f} ± {v[1] or 0:,.1f}' if v and v[0] else '—'
for k in keys:
    b,a,l=Z.get(('before',)+k),Z.get(('after',)+k),L.get(k)
    r1=f'{a[0]/b[0]:.3f}' if a and b and a[0] and b[0] else '—'
    r2=f'{a[0]/l[0]:.2f}' if a and l and a[0] else '—'
    print(f'| {k[0]} | {k[1]} | {f(b)} | {f(a)} | {r1} | {f(l)} | {r2} |')
PY
