/* Writes the seed corpus of one fuzz target into a directory (layouts in
 * fuzz.h); nothing of it is committed.
 *   gguf:  small valid files made with the writer (every kv type, nested
 *          arrays, several tensor types, a non-default alignment); for each
 *          fixture a "shrunk" valid copy (its real keys, value types and
 *          tensor names, arrays cut to a few elements, each tensor one block),
 *          its first bytes cut at several points (up to 16 KiB), and
 *          bit-flipped variants of the shrunk copy.
 *   model: each model fixture scaled down so that it still loads (fuzz/seeds_model.c).
 *   tokenizer, jinja, sampler: fuzz/seeds_text.c.
 * usage: make_seeds TARGET OUTDIR [FILE...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "make_seeds.h"

#define SEED_ARR_MAX 8      /* elements kept per array in a shrunk copy */
#define SEED_CUT_MAX 16384  /* longest cut: long seeds slow every execution */
#define SEED_FLIPS 24       /* bit-flipped variants per shrunk fixture */

int n_seeds;
static char outdir[1024];

void next_path(char *buf, size_t cap, const char *tag) {
    snprintf(buf, cap, "%s/%04d-%s", outdir, n_seeds++, tag);
}

void write_bytes(const char *tag, const void *p, size_t n) {
    char path[1200];
    next_path(path, sizeof path, tag);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}

uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (p) {
        *n = fread(p, 1, (size_t)sz, f);
        p[*n] = 0;
    }
    fclose(f);
    return p;
}

int write_seed(gguf_writer *w, const char *tag, char *path, size_t cap) {
    zn_err err;
    next_path(path, cap, tag);
    if (gguf_writer_write(w, path, &err) != ZN_OK) {
        fprintf(stderr, "make_seeds: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int handmade(void) {
    zn_err err;
    gguf_writer *w;
    char path[1200];
    if (gguf_writer_init(&w, 64, &err)) return 1;
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_int(w, "llama.block_count", GGUF_TYPE_UINT32, 2);
    gguf_writer_set_int(w, "k.i8", GGUF_TYPE_INT8, -3);
    gguf_writer_set_int(w, "k.i16", GGUF_TYPE_INT16, -300);
    gguf_writer_set_int(w, "k.u16", GGUF_TYPE_UINT16, 300);
    gguf_writer_set_int(w, "k.i32", GGUF_TYPE_INT32, -70000);
    gguf_writer_set_int(w, "k.i64", GGUF_TYPE_INT64, -1);
    gguf_writer_set_uint(w, "k.u64", GGUF_TYPE_UINT64, UINT64_MAX);
    gguf_writer_set_uint(w, "k.u8", GGUF_TYPE_UINT8, 255);
    gguf_writer_set_f32(w, "k.f32", 1.5f);
    gguf_writer_set_f64(w, "k.f64", -2.25);
    gguf_writer_set_bool(w, "k.b", true);
    const int32_t sec[4] = {32, 32, 32, 32};
    gguf_writer_set_arr(w, "llama.rope.dimension_sections", GGUF_TYPE_INT32, sec, 4);
    const char *const toks[] = {"<s>", "</s>", "a", "\xe2\x96\x81", ""};
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 5);
    static float buf[512];
    for (int i = 0; i < 512; i++) buf[i] = (float)i;
    gguf_writer_add_tensor(w, "token_embd.weight", ZN_TYPE_F32, 2, (const uint64_t[]){4, 5}, buf, &err);
    gguf_writer_add_tensor(w, "blk.0.q", ZN_TYPE_Q8_0, 2, (const uint64_t[]){32, 2}, buf, &err);
    gguf_writer_add_tensor(w, "blk.0.k", ZN_TYPE_Q4_K, 1, (const uint64_t[]){256}, buf, &err);
    gguf_writer_add_tensor(w, "blk.0.n", ZN_TYPE_BF16, 4, (const uint64_t[]){2, 1, 3, 1}, buf, &err);
    int rc = write_seed(w, "handmade-all.gguf", path, sizeof path);
    gguf_writer_free(w);

    /* a nested array and the smallest files */
    if (gguf_writer_init(&w, 0, &err)) return 1;
    gguf_ctx g;
    if (gguf_open(&g, path, &err) == ZN_OK) {
        const gguf_kv *kv = gguf_find_kv(&g, "tokenizer.ggml.tokens");
        if (kv) gguf_writer_copy_kv(w, kv);
        gguf_close(&g);
    }
    static const int8_t small[3] = {1, -2, 3};
    const gguf_arr inner[2] = {{.type = GGUF_TYPE_INT8, .n = 3, .data = small}, {.type = GGUF_TYPE_INT8, .n = 1, .data = small}};
    const gguf_arr outer[1] = {{.type = GGUF_TYPE_ARRAY, .n = 2, .subs = inner}};
    const gguf_kv nested = {.key = {"k.nested", 8}, .type = GGUF_TYPE_ARRAY,
                            .v.arr = {.type = GGUF_TYPE_ARRAY, .n = 1, .subs = outer}};
    gguf_writer_copy_kv(w, &nested);
    rc |= write_seed(w, "handmade-strs.gguf", path, sizeof path);
    gguf_writer_free(w);
    if (gguf_writer_init(&w, 0, &err)) return 1;
    rc |= write_seed(w, "handmade-empty.gguf", path, sizeof path);
    gguf_writer_free(w);
    if (gguf_writer_init(&w, 1, &err)) return 1;
    gguf_writer_add_tensor(w, "t", ZN_TYPE_F16, 1, (const uint64_t[]){3}, buf, &err);
    rc |= write_seed(w, "handmade-align1.gguf", path, sizeof path);
    gguf_writer_free(w);
    return rc;
}

/* A copy of g with every array cut short and every tensor one block. */
static int shrink(const gguf_ctx *g, const char *path, char *out, size_t cap) {
    zn_err err;
    gguf_writer *w;
    if (gguf_writer_init(&w, (uint32_t)g->alignment, &err)) return 1;
    static uint8_t zeros[1024];
    for (uint64_t i = 0; i < g->n_kv; i++) {
        gguf_kv kv = g->kv[i];
        if (kv.type == GGUF_TYPE_ARRAY && kv.v.arr.n > SEED_ARR_MAX) kv.v.arr.n = SEED_ARR_MAX;
        gguf_writer_copy_kv(w, &kv);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        const zn_type_info *ti = zn_type_get((uint32_t)t->type);
        uint64_t ne[ZN_GGUF_MAX_DIMS] = {ti->blck, 1, 1, 1};
        if (gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, zeros, &err)) fprintf(stderr, "%s\n", err.msg);
    }
    int rc = write_seed(w, "shrunk.gguf", out, cap);
    gguf_writer_free(w);
    (void)path;
    return rc;
}

static int fixture(const char *path, uint64_t *rng) {
    size_t n = 0;
    uint8_t *p = slurp(path, &n);
    if (!p) {
        fprintf(stderr, "make_seeds: cannot read %s\n", path);
        return 1;
    }
    /* cut at a few points inside the header and kv part */
    static const size_t cuts[] = {24, 100, 512, 2048, 8192, SEED_CUT_MAX};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        if (cuts[i] < n) write_bytes("cut.gguf", p, cuts[i]);
    gguf_ctx g;
    zn_err err;
    int rc = 0;
    if (gguf_open_mem(&g, p, n, path, &err) == ZN_OK) {
        char out[1200];
        rc = shrink(&g, path, out, sizeof out);
        gguf_close(&g);
        size_t sn = 0;
        uint8_t *s = rc ? NULL : slurp(out, &sn);
        for (int k = 0; s && sn && k < SEED_FLIPS; k++) {
            uint8_t *c = malloc(sn);
            memcpy(c, s, sn);
            for (int f = 0; f < 1 + k % 3; f++) {
                *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t r = *rng >> 17;
                /* most flips in the metadata, where the parser lives */
                size_t pos = (size_t)(r % (sn < 4096 ? sn : 4096));
                c[pos] ^= (uint8_t)(1u << (r >> 40) % 8);
            }
            write_bytes("flip.gguf", c, sn);
            free(c);
        }
        free(s);
    } else {
        fprintf(stderr, "make_seeds: %s\n", err.msg);
        rc = 1;
    }
    free(p);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: make_seeds gguf|model|tokenizer|jinja|sampler OUTDIR [FILE...]\n");
        return 2;
    }
    snprintf(outdir, sizeof outdir, "%s", argv[2]);
    const char *target = argv[1];
    int rc = 0;
    if (!strcmp(target, "gguf")) {
        rc = handmade();
        uint64_t rng = 42;
        for (int i = 3; i < argc; i++) rc |= fixture(argv[i], &rng);
    } else if (!strcmp(target, "model")) {
        for (int i = 3; i < argc; i++) rc |= seeds_model(argv[i]);
    } else if (!strcmp(target, "tokenizer")) {
        rc = seeds_tokenizer(argc - 3, argv + 3);
    } else if (!strcmp(target, "jinja")) {
        rc = seeds_jinja(argc - 3, argv + 3);
    } else if (!strcmp(target, "sampler")) {
        rc = seeds_sampler(argc - 3, argv + 3);
    } else {
        fprintf(stderr, "make_seeds: unknown target '%s'\n", target);
        return 2;
    }
    printf("make_seeds: %d seeds\n", n_seeds);
    return rc;
}
