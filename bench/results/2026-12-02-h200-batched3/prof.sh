set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for s in "$@"; do
  f=/tmp/$s.gguf; [ -f $f ] || .dev/zinc synth --like $s --type q4_k_m -o $f > /dev/null
  for b in 1 32; do
    timeout 200 .dev/zinc bench -m $f --backend vulkan -npl $b -npp 128 -ntg 3 --profile > "$O/prof-$s-$b.txt" 2>&1
    echo "=== $s B=$b"; awk '/vulkan profile/{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$O/prof-$s-$b.txt" | head -30
  done
done
