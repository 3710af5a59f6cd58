set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
Z=.dev/zinc; M=/tmp/q35.gguf
$Z synth --like qwen3.5-35b-a3b --type q4_k_m -o $M > /dev/null 2>&1
for t in cm2_cfg=2 cm2_cfg=auto; do echo "pp512 $t: $(timeout 40 $Z bench -m $M --backend vulkan -p 512 -n 0 -r 3 --tune $t 2>&1 | grep -E '^pp[0-9]' | tr -s ' ')"; done
