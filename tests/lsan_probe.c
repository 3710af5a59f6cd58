/* tests/test_lsan.sh's probe, always built with ASan (LeakSanitizer), also
 * in the plain build. `lsan_probe MODEL clean|leak`: loads MODEL, decodes two
 * tokens on the Vulkan backend (the driver loaded, shaders compiled by
 * lavapipe's LLVM) and frees everything; `leak` also loses a GGUF context
 * that zinc's gguf_open allocated. With tests/lsan.supp, `clean` must exit 0
 * and `leak` must be reported: the suppressions hide the driver's own leak
 * and nothing of zinc's. Prints "vulkan: yes" or "vulkan: no (why)" first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "gguf.h"
#include "model.h"

/* Loses a heap GGUF context: nothing but this frame ever points at it. */
static __attribute__((noinline)) void lose_gguf(const char *path) {
    zn_err err = {0};
    gguf_ctx *g = malloc(sizeof *g);
    if (!g || gguf_open(g, path, &err)) fprintf(stderr, "lsan_probe: %s\n", err.msg);
}

/* Overwrites the stack below the caller, so no stale copy of the lost
 * pointer keeps it reachable. */
static __attribute__((noinline)) void scrub_stack(void) {
    volatile char junk[16384];
    memset((char *)junk, 0, sizeof junk);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "clean") && strcmp(argv[2], "leak"))) {
        fprintf(stderr, "usage: lsan_probe MODEL clean|leak\n");
        return 2;
    }
    zn_err err = {0};
    zn_model m;
    if (model_load(&m, argv[1], &err)) {
        fprintf(stderr, "lsan_probe: %s\n", err.msg);
        return 2;
    }
    zn_engine e;
    zn_seq s;
    int rc = 0;
    zn_engine_opts o = engine_default_opts();
    o.backend = "vulkan";
    o.be.n_threads = 1;
    if (engine_init(&e, &m, &o, &err)) {
        printf("vulkan: no (%s)\n", err.msg);
    } else {
        printf("vulkan: yes\n");
        float *logits = malloc(sizeof(float) * (size_t)m.hp.n_vocab);
        const int32_t toks[2] = {1, 2};
        if (!logits || seq_init(&s, &e, 8, &err) || engine_decode(&e, &s, toks, 2, logits, false, &err)) {
            fprintf(stderr, "lsan_probe: %s\n", err.msg);
            rc = 1;
        } else {
            seq_free(&s);
        }
        free(logits);
        engine_free(&e);
    }
    fflush(stdout);
    if (!strcmp(argv[2], "leak")) lose_gguf(argv[1]);
    scrub_stack();
    model_free(&m);
    return rc;
}
