#!/usr/bin/env bash
# The README's first command, on a bare Debian 12 / Ubuntu 24.04 (as root):
# installs the dependencies (make included), builds ./zinc and writes a
# paragraph with the shipped demo model (models/zinc-demo-qwen35.gguf).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc)" zinc
./zinc -p "The old prince looked at his son and said" -n 200 --seed 42
