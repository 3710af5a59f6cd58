#!/usr/bin/env bash
# Device copies (as s26's mk.sh): a stripped zinc with a tiny fixture embedded in place of the demo model (carry
# size), and .dev/tvo-cm2: test_vk_ops holding only test_matmat_cm2 and test_matmat_split (the coopmat2 GEMM,
# which lavapipe cannot run).
set -eu
cd "$(dirname "$0")/../../.."
make -j2 -s build/zinc >/dev/null
LIBS="-lm -lpthread -ldl -Wl,-Bstatic -lpcre2-8 -lmicrohttpd -ljansson -Wl,-Bdynamic -lgnutls -lcurl -lcrypto -lz"
INC=$(for d in src/*/; do printf -- '-I%s ' "${d%/}"; done)
mkdir -p .dev
sed 's#models/zinc-demo-qwen35.gguf#../shared/models/tiny/qwen35-dense-q8_0.gguf#' src/format/embedded_data.S > .dev/emb.S
cc -c -o .dev/emb.o .dev/emb.S
cc -o .dev/zinc build/obj/cli/main.o .dev/emb.o build/libzinc.a $LIBS && strip .dev/zinc
awk '/RUN\(/ && !/test_matmat_cm2\)|test_matmat_split\)/ {next} {print}' tests/test_vk_ops.c > .dev/tvo-cm2.c
cc -O2 -std=c11 -D_GNU_SOURCE -w -pthread $INC -Ibuild/gen -Itests -o .dev/tvo-cm2 .dev/tvo-cm2.c .dev/emb.o build/libzinc.a $LIBS && strip .dev/tvo-cm2
rm -f .dev/emb.o .dev/emb.S .dev/tvo-cm2.c
git rev-parse --short HEAD > .dev/commit
git diff --quiet HEAD -- src tests || echo "+dirty" >> .dev/commit
ls -la .dev
