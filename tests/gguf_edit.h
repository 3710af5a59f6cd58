/* Test fixtures made at test time: a copy of a GGUF file with edits (keys
 * set or dropped, another alignment, a tensor filled with one value, the
 * vocabulary cut or padded, tensors given new shapes), written with the
 * library's GGUF writer. Used by the C tests and by tests/gguf_edit.c, the
 * command-line tool the shell tests call. Nothing from ../shared is copied
 * into the repository: fixtures are derived from it when the tests run. */
#ifndef ZINC_TEST_GGUF_EDIT_H
#define ZINC_TEST_GGUF_EDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

#define GEDIT_MAX 16

typedef struct gedit_set {
    const char *key;
    char kind;            /* 'i' int32, 'u' uint32, 'f' f32, 'd' f64, 's' string, 'a' int32 array */
    int64_t i;
    double f;
    const char *s;
    const int32_t *arr;
    uint64_t n;
} gedit_set;

typedef struct gedit_shape {
    const char *name;     /* F32 tensor written with this shape and small pseudo-random values */
    uint32_t n_dims;
    uint64_t ne[4];
} gedit_shape;

typedef struct gedit {
    uint32_t align;                  /* 0: the default (32) */
    const char *drop_key[GEDIT_MAX]; /* metadata keys left out */
    gedit_set set[GEDIT_MAX];        /* keys set (added or replaced) */
    const char *fill;                /* an F32 tensor whose every element becomes fill_value */
    float fill_value;
    int64_t vocab;                   /* > 0: tokenizer.ggml.tokens/scores/token_type cut or padded to this */
    gedit_shape shape[GEDIT_MAX];
} gedit;

static inline bool gedit_dropped(const gedit *e, gguf_str key) {
    for (int i = 0; i < GEDIT_MAX && e->drop_key[i]; i++)
        if (gguf_str_eq(key, e->drop_key[i])) return true;
    for (int i = 0; i < GEDIT_MAX && e->set[i].key; i++)
        if (gguf_str_eq(key, e->set[i].key)) return true;
    if (e->align && gguf_str_eq(key, "general.alignment")) return true;
    if (e->vocab > 0 && (gguf_str_eq(key, "tokenizer.ggml.tokens") || gguf_str_eq(key, "tokenizer.ggml.scores") ||
                         gguf_str_eq(key, "tokenizer.ggml.token_type")))
        return true;
    return false;
}

/* tokenizer.ggml.tokens and its parallel arrays with n entries: the first n
 * of the source, then "[GEDIT_PADi]" tokens of score 0 and type 1. */
static inline zn_status gedit_vocab(gguf_writer *w, const gguf_ctx *g, uint64_t n) {
    const gguf_arr *toks = NULL, *scores = NULL, *types = NULL;
    if (gguf_get_arr(g, "tokenizer.ggml.tokens", &toks, NULL) || toks->type != GGUF_TYPE_STRING) return ZN_ERR_FORMAT;
    if (gguf_get_arr(g, "tokenizer.ggml.scores", &scores, NULL)) scores = NULL;
    if (gguf_get_arr(g, "tokenizer.ggml.token_type", &types, NULL)) types = NULL;
    char **strs = calloc(n, sizeof *strs);
    float *sc = calloc(n, sizeof *sc);
    int32_t *ty = calloc(n, sizeof *ty);
    zn_status s = strs && sc && ty ? ZN_OK : ZN_ERR_NOMEM;
    for (uint64_t i = 0; !s && i < n; i++) {
        size_t len = i < toks->n ? (size_t)toks->strs[i].len : 0;
        if (!(strs[i] = malloc(len + 32))) {
            s = ZN_ERR_NOMEM;
            break;
        }
        if (i < toks->n) memcpy(strs[i], toks->strs[i].ptr, len), strs[i][len] = 0;
        else snprintf(strs[i], len + 32, "[GEDIT_PAD%llu]", (unsigned long long)i);
        sc[i] = scores && i < scores->n ? (float)gguf_arr_float(scores, i) : 0.0f;
        ty[i] = types && i < types->n ? (int32_t)gguf_arr_int(types, i) : 1;
    }
    if (!s) s = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)strs, n);
    if (!s && scores) s = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, sc, n);
    if (!s && types) s = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, ty, n);
    for (uint64_t i = 0; strs && i < n; i++) free(strs[i]);
    free(strs);
    free(sc);
    free(ty);
    return s;
}

/* Adds to e what makes the qwen35 file src consistent with a Gated DeltaNet
 * head size (ssm.state_size) of `state` and a conv kernel of `conv` (0:
 * unchanged): the keys, and new shapes for every recurrent layer's tensors
 * that depend on them. Returns the number of layers changed (-1: not a
 * qwen35 F32 file). */
static inline int gedit_qwen35_ssm(gedit *e, const char *src, int64_t state, int64_t conv) {
    static char names[GEDIT_MAX][64];
    gguf_ctx g;
    zn_err err = {0};
    if (gguf_open(&g, src, &err)) return -1;
    char arch[32];
    gguf_get_str_or(&g, "general.architecture", arch, sizeof arch, "");
    char key[96];
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    int64_t emb = gguf_get_int_or(&g, key, -1);
    snprintf(key, sizeof key, "%s.ssm.time_step_rank", arch);
    int64_t vh = gguf_get_int_or(&g, key, -1);
    snprintf(key, sizeof key, "%s.ssm.group_count", arch);
    int64_t kh = gguf_get_int_or(&g, key, -1);
    snprintf(key, sizeof key, "%s.ssm.conv_kernel", arch);
    if (!conv) conv = gguf_get_int_or(&g, key, -1);
    int ns = 0, nh = 0, layers = 0;
    while (ns < GEDIT_MAX && e->set[ns].key) ns++;
    while (nh < GEDIT_MAX && e->shape[nh].name) nh++;
    static char keys[3][96];
    snprintf(keys[0], sizeof keys[0], "%s.ssm.state_size", arch);
    snprintf(keys[1], sizeof keys[1], "%s.ssm.inner_size", arch);
    snprintf(keys[2], sizeof keys[2], "%s.ssm.conv_kernel", arch);
    if (emb < 1 || vh < 1 || kh < 1 || ns + 3 > GEDIT_MAX) {
        gguf_close(&g);
        return -1;
    }
    e->set[ns++] = (gedit_set){.key = keys[0], .kind = 'u', .i = state};
    e->set[ns++] = (gedit_set){.key = keys[1], .kind = 'u', .i = state * vh};
    e->set[ns++] = (gedit_set){.key = keys[2], .kind = 'u', .i = conv};
    const uint64_t kd = (uint64_t)(state * kh), vd = (uint64_t)(state * vh), cd = 2 * kd + vd;
    for (int il = 0; il < 64; il++) {
        snprintf(key, sizeof key, "blk.%d.ssm_norm.weight", il);
        if (!gguf_find_tensor(&g, key)) continue;
        static const char *const base[5] = {"attn_qkv.weight", "attn_gate.weight", "ssm_conv1d.weight",
                                            "ssm_norm.weight", "ssm_out.weight"};
        const uint64_t ne[5][2] = {{(uint64_t)emb, cd}, {(uint64_t)emb, vd}, {(uint64_t)conv, cd},
                                   {(uint64_t)state, 1}, {vd, (uint64_t)emb}};
        for (int j = 0; j < 5 && nh < GEDIT_MAX; j++, nh++) {
            snprintf(names[nh], sizeof names[nh], "blk.%d.%s", il, base[j]);
            e->shape[nh] = (gedit_shape){names[nh], j == 3 ? 1 : 2, {ne[j][0], ne[j][1], 1, 1}};
        }
        layers++;
    }
    gguf_close(&g);
    return layers;
}

/* Writes src with the edits to dst; 0 on success, else a message in err. */
static inline int gedit_write(const char *src, const gedit *e, const char *dst, zn_err *err) {
    gguf_ctx g;
    if (gguf_open(&g, src, err) != ZN_OK) return -1;
    gguf_writer *w = NULL;
    float *bufs[GEDIT_MAX + 1] = {0};
    int nb = 0;
    zn_status s = gguf_writer_init(&w, e->align, err);
    for (uint64_t i = 0; !s && i < g.n_kv; i++)
        if (!gedit_dropped(e, g.kv[i].key)) s = gguf_writer_copy_kv(w, &g.kv[i]);
    for (int i = 0; !s && i < GEDIT_MAX && e->set[i].key; i++) {
        const gedit_set *k = &e->set[i];
        switch (k->kind) {
        case 'i': s = gguf_writer_set_int(w, k->key, GGUF_TYPE_INT32, k->i); break;
        case 'u': s = gguf_writer_set_uint(w, k->key, GGUF_TYPE_UINT32, (uint64_t)k->i); break;
        case 'f': s = gguf_writer_set_f32(w, k->key, (float)k->f); break;
        case 'd': s = gguf_writer_set_f64(w, k->key, k->f); break;
        case 's': s = gguf_writer_set_str(w, k->key, k->s); break;
        case 'a': s = gguf_writer_set_arr(w, k->key, GGUF_TYPE_INT32, k->arr, k->n); break;
        default: s = ZN_ERR_ARG;
        }
    }
    if (!s && e->vocab > 0) s = gedit_vocab(w, &g, (uint64_t)e->vocab);
    if (s && !err->msg[0]) zn_errf(err, s, "gguf_edit: setting metadata failed");
    for (uint64_t i = 0; !s && i < g.n_tensors; i++) {
        const gguf_tensor *t = &g.tensors[i];
        const void *data = t->data;
        uint32_t nd = t->n_dims;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        const gedit_shape *sh = NULL;
        for (int j = 0; j < GEDIT_MAX && e->shape[j].name; j++)
            if (!strcmp(e->shape[j].name, t->name)) sh = &e->shape[j];
        bool fill = e->fill && !strcmp(e->fill, t->name);
        if ((sh || fill) && t->type != ZN_TYPE_F32) {
            s = zn_errf(err, ZN_ERR_ARG, "gguf_edit: tensor %s is not F32", t->name);
            break;
        }
        if (sh) nd = sh->n_dims, memcpy(ne, sh->ne, sizeof ne);
        if (sh || fill) {
            uint64_t n = ne[0] * ne[1] * ne[2] * ne[3];
            float *b = malloc((size_t)n * sizeof *b + 1);
            if (!b || nb == GEDIT_MAX) {
                free(b);
                s = zn_errf(err, ZN_ERR_NOMEM, "gguf_edit: out of memory");
                break;
            }
            uint32_t x = 2463534242u ^ (uint32_t)i;
            for (uint64_t j = 0; j < n; j++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                b[j] = fill ? e->fill_value : ((float)(x >> 8) / (float)(1u << 24) - 0.5f) * 0.2f;
            }
            bufs[nb++] = b;
            data = b;
        }
        s = gguf_writer_add_tensor(w, t->name, t->type, nd, ne, data, err);
    }
    if (!s) s = gguf_writer_write(w, dst, err);
    if (w) gguf_writer_free(w);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    gguf_close(&g);
    return s ? -1 : 0;
}

#endif
