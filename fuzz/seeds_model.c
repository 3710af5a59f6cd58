/* Seeds for fuzz_model: a model fixture scaled down so that it still loads.
 * Cutting every tensor to one block (as the gguf seeds do) fails binding at
 * the first tensor, so the fuzzer would never get past it; instead every
 * size is divided by the same factor S, which keeps the relations the loader
 * checks (n_embd = n_head * head_dim, inner = state * heads, ...):
 *   - a "size" is an integer >= SIZE_MIN that S divides: hyper-parameters
 *     under "<arch>." and tensor dimensions alike; counts (heads, experts,
 *     layers, the conv kernel) are smaller and stay;
 *   - the vocabulary becomes SEED_VOCAB tokens (embedding/output rows, and
 *     every tokenizer array of the vocabulary's length);
 *   - a tensor keeps its type when its new row length is a whole number of
 *     its blocks, else it becomes Q8_0 (rows of 32) or F16; its data is the
 *     start of the original tensor's (same type) or small valid values;
 *   - other arrays are cut to a few elements.
 * S is the smallest of 8, 16, 32 that makes the file at most SEED_MODEL_MAX
 * bytes. Every third fixture gets a second copy with general.alignment 1 or 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "make_seeds.h"

#define SIZE_MIN 16
#define SEED_VOCAB 16
#define SEED_ARR_KEEP 8
#define SEED_MODEL_MAX (32 << 10)

static uint64_t rng_state = 7;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static uint64_t scale_dim(uint64_t v, uint64_t s) { return v >= SIZE_MIN && v % s == 0 ? v / s : v; }

static bool is_prefix(gguf_str key, const char *pre) {
    size_t n = strlen(pre);
    return key.len >= n && !memcmp(key.ptr, pre, n);
}

/* Small valid values of a type (norm weights of ~1 keep the copied data). */
static void fill(zn_type type, uint8_t *p, uint64_t nbytes) {
    if (type == ZN_TYPE_Q8_0) {
        for (uint64_t b = 0; b + 34 <= nbytes; b += 34) {
            p[b] = 0x00, p[b + 1] = 0x1c; /* d = 2^-8 */
            for (int i = 0; i < 32; i++) p[b + 2 + i] = (uint8_t)rnd();
        }
    } else if (type == ZN_TYPE_F16 || type == ZN_TYPE_BF16) {
        for (uint64_t i = 0; i + 2 <= nbytes; i += 2) {
            uint16_t h = type == ZN_TYPE_F16 ? (uint16_t)(0x2000 | (rnd() & 0x83ff)) : (uint16_t)(0x3c00 | (rnd() & 0x807f));
            p[i] = (uint8_t)h, p[i + 1] = (uint8_t)(h >> 8);
        }
    } else {
        for (uint64_t i = 0; i + 4 <= nbytes; i += 4) {
            float f = ((float)(rnd() % 2001) - 1000.0f) * 1e-4f;
            memcpy(p + i, &f, 4);
        }
    }
}

static int shrink_model(const gguf_ctx *g, uint64_t s, const char *arch, uint64_t vocab, uint32_t align,
                        size_t *out_size) {
    zn_err err;
    gguf_writer *w;
    if (gguf_writer_init(&w, align, &err)) return 1;
    char pre[80];
    snprintf(pre, sizeof pre, "%s.", arch);
    void **bufs = calloc(g->n_tensors + 1, sizeof *bufs);
    int32_t *ints = NULL;
    int rc = 0;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        gguf_kv kv = g->kv[i];
        bool hp = is_prefix(kv.key, pre);
        if (gguf_str_eq(kv.key, "general.alignment")) continue; /* the writer's */
        if (hp && gguf_str_eq((gguf_str){kv.key.ptr + strlen(pre), kv.key.len - strlen(pre)}, "vocab_size")) {
            kv.v.u64 = SEED_VOCAB; /* an integer of any type: the union's 64 bits */
        } else if (hp && kv.type <= GGUF_TYPE_INT64 && kv.type != GGUF_TYPE_FLOAT32 && kv.type != GGUF_TYPE_BOOL &&
                   kv.type != GGUF_TYPE_STRING && kv.type != GGUF_TYPE_ARRAY) {
            bool sgn = kv.type == GGUF_TYPE_INT8 || kv.type == GGUF_TYPE_INT16 || kv.type == GGUF_TYPE_INT32 ||
                       kv.type == GGUF_TYPE_INT64;
            if (sgn ? kv.v.i64 > 0 && kv.v.i64 < (1 << 24) : kv.v.u64 < (1 << 24)) {
                uint64_t v = sgn ? (uint64_t)kv.v.i64 : kv.v.u64;
                v = scale_dim(v, s);
                if (sgn) kv.v.i64 = (int64_t)v;
                else kv.v.u64 = v;
            }
        } else if (kv.type == GGUF_TYPE_ARRAY) {
            gguf_arr *a = &kv.v.arr;
            bool ints32 = a->type == GGUF_TYPE_INT32 || a->type == GGUF_TYPE_UINT32;
            if (a->n == vocab) {
                a->n = SEED_VOCAB;
            } else if (hp && ints32 && a->n <= 64) {
                /* sizes in arrays (rope sections): scaled as the rest */
                free(ints);
                ints = malloc(a->n * sizeof *ints + 1);
                for (uint64_t k = 0; k < a->n; k++) {
                    int64_t v = gguf_arr_int(a, k);
                    ints[k] = v > 0 ? (int32_t)scale_dim((uint64_t)v, s) : (int32_t)v;
                }
                char key[256];
                snprintf(key, sizeof key, "%.*s", (int)kv.key.len, kv.key.ptr);
                gguf_writer_set_arr(w, key, a->type, ints, a->n);
                continue;
            } else if (a->n > SEED_ARR_KEEP) {
                a->n = SEED_ARR_KEEP;
            }
        }
        gguf_writer_copy_kv(w, &kv);
    }
    for (uint64_t i = 0; i < g->n_tensors && !rc; i++) {
        const gguf_tensor *t = &g->tensors[i];
        uint64_t ne[ZN_GGUF_MAX_DIMS] = {1, 1, 1, 1};
        /* the embedding's rows, the output's rows and its bias */
        bool vocab_dims = !strncmp(t->name, "token_embd.", 11) || !strncmp(t->name, "output.", 7);
        for (uint32_t d = 0; d < t->n_dims; d++)
            ne[d] = vocab_dims && t->ne[d] == vocab ? SEED_VOCAB : scale_dim(t->ne[d], s);
        zn_type type = t->type;
        const zn_type_info *ti = zn_type_get((uint32_t)type);
        if (!ti || ne[0] % ti->blck) type = ne[0] % 32 == 0 ? ZN_TYPE_Q8_0 : ZN_TYPE_F16;
        uint64_t nbytes = zn_row_size(type, (int64_t)ne[0]) * ne[1] * ne[2] * ne[3];
        uint8_t *p = bufs[i] = calloc(nbytes + 1, 1);
        if (!p) {
            rc = 1;
            break;
        }
        if (type == t->type) memcpy(p, t->data, nbytes < t->nbytes ? nbytes : t->nbytes);
        else fill(type, p, nbytes);
        if (gguf_writer_add_tensor(w, t->name, type, t->n_dims, ne, p, &err)) {
            fprintf(stderr, "make_seeds: %s\n", err.msg);
            rc = 1;
        }
    }
    char path[1200];
    if (!rc) rc = write_seed(w, "model.gguf", path, sizeof path);
    gguf_writer_free(w);
    for (uint64_t i = 0; i < g->n_tensors; i++) free(bufs[i]);
    free(bufs);
    free(ints);
    size_t n = 0;
    uint8_t *f = rc ? NULL : slurp(path, &n);
    free(f);
    *out_size = n;
    if (!rc && n > SEED_MODEL_MAX && s < 32) {
        remove(path); /* too big: the caller tries a larger factor */
        n_seeds--;
    }
    return rc;
}

int seeds_model(const char *fixture) {
    gguf_ctx g;
    zn_err err;
    if (gguf_open(&g, fixture, &err) != ZN_OK) {
        fprintf(stderr, "make_seeds: %s\n", err.msg);
        return 1;
    }
    char arch[64];
    gguf_get_str_or(&g, "general.architecture", arch, sizeof arch, "");
    const gguf_tensor *te = gguf_find_tensor(&g, "token_embd.weight");
    int rc = 0;
    if (arch[0] && te) {
        size_t size = 0;
        uint64_t s = 8;
        for (; s <= 32 && !rc; s *= 2) {
            rc = shrink_model(&g, s, arch, te->ne[1], (uint32_t)g.alignment, &size);
            if (size <= SEED_MODEL_MAX) break;
        }
        /* every third fixture also with alignment 1 or 2 (valid GGUF: the
         * tensors are then misaligned in the map) */
        static int n_fixtures;
        if (!rc && n_fixtures++ % 3 == 1)
            rc = shrink_model(&g, s > 32 ? 32 : s, arch, te->ne[1], n_fixtures % 2 ? 1 : 2, &size);
    }
    gguf_close(&g);
    return rc;
}
