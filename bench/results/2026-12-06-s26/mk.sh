#!/usr/bin/env bash
# Device copies: a stripped zinc with a tiny fixture embedded in place of the demo model (carry size),
# plus the named test binaries, and .dev/tvo-split (test_vk_ops holding only test_matmat_split).
set -eu
cd "$(dirname "$0")/.."
make -j2 -s build/zinc >/dev/null
LIBS="-lm -lpthread -ldl -Wl,-Bstatic -lpcre2-8 -lmicrohttpd -ljansson -Wl,-Bdynamic -lgnutls -lcurl -lcrypto -lz"
INC=$(for d in src/*/; do printf -- '-I%s ' "${d%/}"; done)
sed 's#models/zinc-demo-qwen35.gguf#../shared/models/tiny/qwen35-dense-q8_0.gguf#' src/format/embedded_data.S > .dev/emb.S
cc -c -o .dev/emb.o .dev/emb.S
cc -o .dev/zinc build/obj/cli/main.o .dev/emb.o build/libzinc.a $LIBS && strip .dev/zinc
for t in "$@"; do make -s build/$t; cp build/$t .dev/; strip .dev/$(basename $t); done
awk '/RUN\(/ && !/test_matmat_split\)/ {next} {print}' tests/test_vk_ops.c > .dev/tvo-split.c
cc -O2 -std=c11 -D_GNU_SOURCE -w -pthread $INC -Ibuild/gen -Itests -o .dev/tvo-split .dev/tvo-split.c .dev/emb.o build/libzinc.a $LIBS && strip .dev/tvo-split
git rev-parse --short HEAD > .dev/commit
ls -la .dev
