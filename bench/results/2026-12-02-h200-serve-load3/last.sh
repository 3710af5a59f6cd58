set -u
O=${OUT:-/tmp/out}; mkdir -p "$O/compl"
GC_REPS=0 OUT=$O/compl bash .dev/load2.sh 2>&1 | grep -E "^==|^ +(1|8|32) "
(cd $O/compl && tar -xzf raw.tgz && rm raw.tgz && grep -E "hits|reused" metrics-nosys.txt metrics-sys256.txt metrics-sys1024.txt)
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
.dev/zinc synth --like qwen3.5-35b-a3b --type q4_k_m -o /tmp/35.gguf > /dev/null 2>&1; ls -la /tmp/35.gguf
timeout 200 .dev/zinc bench -m /tmp/35.gguf --backend vulkan -npl 1,8 -npp 16 -ntg 4 > $O/mem35.txt 2>&1; tail -5 $O/mem35.txt
(cd "$O" && tar -czf all.tgz compl mem35.txt && rm -rf compl mem35.txt)
