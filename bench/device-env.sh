# Sourced first by the GPU machine's scripts in bench/results (the device tool runs them from the repository root):
# unpacks the Vulkan loader and libglvnd .debs carried in .gl (../shared/peers/README.md), points the loader at
# NVIDIA's ICD, and sets O, the folder whose files come back ($OUT).
set -u
O=${OUT:-/tmp/out}
mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
