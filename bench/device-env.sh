# Sourced first by the GPU machine's scripts in bench/results (the device tool runs them from the repository root):
# unpacks the Vulkan loader and libglvnd .debs carried in .gl (../shared/peers/README.md), points the loader at
# NVIDIA's ICD, and sets O, the folder whose files come back ($OUT).
set -u
O=${OUT:-/tmp/out}
mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# Helpers of the s33+ call scripts. syn SHAPE: /tmp/sbs-models/SHAPE.gguf (zinc synth --like, Q4_K_M) unless there.
# b SHAPE BIN TUNE ARGS: prefill rows of .dev/BIN bench with tuning TUNE and ARGS (-p N), two repetitions.
mkdir -p /tmp/sbs-models
syn() { [ -f /tmp/sbs-models/$1.gguf ] || .dev/zinc synth --like $1 --type q4_k_m -o /tmp/sbs-models/$1.gguf > /dev/null 2>&1; }
b() { echo "$1 $4 $2 $3: $(timeout 60 .dev/$2 bench -m /tmp/sbs-models/$1.gguf --backend vulkan $4 -n 0 -r 2 --tune $3 2>&1 | grep -E '^pp' | tr -s ' ')"; }
