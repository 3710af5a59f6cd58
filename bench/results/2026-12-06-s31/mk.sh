#!/usr/bin/env bash
# Device copies (as s30's mk.sh): a stripped zinc with a tiny fixture embedded in place of the demo model (carry
# size), .dev/tvl: test_vk_layers holding only test_attention_mm (prefill attention on cooperative matrices, which
# lavapipe only emulates), and .dev/vk-attn (tools/vk-bench/attn.c).
set -eu
cd "$(dirname "$0")/../../.."
make -j2 -s build/zinc >/dev/null
LIBS="-lm -lpthread -ldl -Wl,-Bstatic -lpcre2-8 -lmicrohttpd -ljansson -Wl,-Bdynamic -lgnutls -lcurl -lcrypto -lz"
INC=$(for d in src/*/; do printf -- '-I%s ' "${d%/}"; done)
mkdir -p .dev
sed 's#models/zinc-demo-qwen35.gguf#../shared/models/tiny/qwen35-dense-q8_0.gguf#' src/format/embedded_data.S > .dev/emb.S
cc -c -o .dev/emb.o .dev/emb.S
cc -o .dev/zinc build/obj/cli/main.o .dev/emb.o build/libzinc.a $LIBS && strip .dev/zinc
awk '/RUN\(/ && !/test_attention_mm\)/ {next} {print}' tests/test_vk_layers.c > .dev/tvl.c
cc -O2 -std=c11 -D_GNU_SOURCE -w -pthread $INC -Ibuild/gen -Itests -o .dev/tvl .dev/tvl.c .dev/emb.o build/libzinc.a $LIBS && strip .dev/tvl
cc -O2 -std=c11 -D_GNU_SOURCE -w -pthread $INC -Ibuild/gen -Itools/vk-bench -o .dev/vk-attn tools/vk-bench/attn.c .dev/emb.o build/libzinc.a $LIBS && strip .dev/vk-attn
rm -f .dev/emb.o .dev/emb.S .dev/tvl.c
git rev-parse --short HEAD > .dev/commit
git diff --quiet HEAD -- src tests || echo "+dirty" >> .dev/commit
ls -la .dev
