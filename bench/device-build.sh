#!/usr/bin/env bash
# bench/device-build.sh [TEST...]: the copies a device call carries in .dev (a folder the checkout ignores): a
# stripped zinc with a tiny fixture embedded in place of the demo model (carry size), .dev/$TVL (default tvl): the
# suite $SUITE (default test_vk_layers) holding only the tests named (default test_attention_mm and test_gdn:
# kernels on cooperative matrices and subgroup paths that lavapipe only emulates or runs narrow), .dev/vk-attn
# (tools/vk-bench/attn.c), and .dev/commit (the commit, "+dirty" when src or tests differ from it).
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- test_attention_mm test_gdn
SUITE=${SUITE:-test_vk_layers} TVL=${TVL:-tvl}
pat=$(printf '%s\\)|' "$@"); pat=${pat%|}
make -j2 -s build/zinc >/dev/null
LIBS="-lm -lpthread -ldl -Wl,-Bstatic -lpcre2-8 -lmicrohttpd -ljansson -Wl,-Bdynamic -lgnutls -lcurl -lcrypto -lz"
INC=$(for d in src/*/; do printf -- '-I%s ' "${d%/}"; done)
mkdir -p .dev
sed 's#models/zinc-demo-qwen35.gguf#../shared/models/tiny/qwen35-dense-q8_0.gguf#' src/format/embedded_data.S > .dev/emb.S
cc -c -o .dev/emb.o .dev/emb.S
cc -o .dev/zinc build/obj/cli/main.o .dev/emb.o build/libzinc.a $LIBS && strip .dev/zinc
awk -v pat="$pat" '/RUN\(/ && $0 !~ pat {next} {print}' tests/$SUITE.c > .dev/$TVL.c
cc -O2 -std=c11 -D_GNU_SOURCE -w -pthread $INC -Ibuild/gen -Itests -o .dev/$TVL .dev/$TVL.c .dev/emb.o build/libzinc.a $LIBS && strip .dev/$TVL
cc -O2 -std=c11 -D_GNU_SOURCE -w -pthread $INC -Ibuild/gen -Itools/vk-bench -o .dev/vk-attn tools/vk-bench/attn.c .dev/emb.o build/libzinc.a $LIBS && strip .dev/vk-attn
rm -f .dev/emb.o .dev/emb.S .dev/$TVL.c
git rev-parse --short HEAD > .dev/commit
git diff --quiet HEAD -- src tests || echo "+dirty" >> .dev/commit
ls -la .dev | tail -n +4
