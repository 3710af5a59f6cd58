/* libFuzzer target for the GGUF reader: parse arbitrary bytes, and when they
 * are accepted, touch everything a caller may touch (every getter on every
 * key, every array element, every tensor's bytes) and re-encode every kv
 * with the writer, so that anything the validator let through is proven
 * safe to use. */
#include <stdint.h>
#include <string.h>

#include "gguf.h"

static volatile uint64_t sink;

static uint64_t bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static void walk_arr(const gguf_arr *a) {
    for (uint64_t i = 0; i < a->n; i++) {
        if (a->type == GGUF_TYPE_STRING) {
            if (a->strs[i].len) sink += (uint8_t)a->strs[i].ptr[0] + (uint8_t)a->strs[i].ptr[a->strs[i].len - 1];
        } else if (a->type == GGUF_TYPE_ARRAY) {
            walk_arr(&a->subs[i]);
        } else {
            sink += (uint64_t)gguf_arr_int(a, i) + bits(gguf_arr_float(a, i));
        }
    }
    sink += (uint64_t)gguf_arr_int(a, a->n) + bits(gguf_arr_float(a, a->n)); /* out of range */
}

static void use_kv(const gguf_ctx *g, const gguf_kv *kv, gguf_writer *w) {
    char key[256];
    if (kv->key.len < sizeof key && !memchr(kv->key.ptr, 0, kv->key.len)) {
        memcpy(key, kv->key.ptr, kv->key.len);
        key[kv->key.len] = 0;
        sink += gguf_find_kv(g, key) == kv;
        zn_err err;
        int64_t i;
        double f;
        bool b;
        gguf_str s;
        const gguf_arr *a;
        char buf[8];
        sink += gguf_get_int(g, key, &i, &err) + gguf_get_float(g, key, &f, &err) + gguf_get_bool(g, key, &b, &err) +
                gguf_get_str(g, key, &s, &err) + gguf_get_arr(g, key, &a, &err);
        sink += (uint64_t)gguf_get_int_or(g, key, 0) + bits(gguf_get_float_or(g, key, 0)) +
                gguf_get_bool_or(g, key, false) + (uint8_t)gguf_get_str_or(g, key, buf, sizeof buf, "")[0];
    }
    if (kv->type == GGUF_TYPE_STRING && kv->v.str.len) sink += (uint8_t)kv->v.str.ptr[kv->v.str.len - 1];
    if (kv->type == GGUF_TYPE_ARRAY) walk_arr(&kv->v.arr);
    sink += gguf_writer_copy_kv(w, kv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_ctx g;
    zn_err err;
    if (gguf_open_mem(&g, data, size, "fuzz", &err) != ZN_OK) {
        sink += strlen(err.msg);
        return 0;
    }
    gguf_writer *w = NULL;
    if (gguf_writer_init(&w, (uint32_t)g.alignment, &err) == ZN_OK) {
        for (uint64_t i = 0; i < g.n_kv; i++) use_kv(&g, &g.kv[i], w);
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            const gguf_tensor *t = &g.tensors[i];
            sink += gguf_find_tensor(&g, t->name) == t;
            for (uint64_t j = 0; j < t->nbytes; j++) sink += t->data[j];
            sink += gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err);
        }
        gguf_writer_free(w);
    }
    sink += gguf_find_kv(&g, "general.architecture") != NULL;
    sink += gguf_find_tensor(&g, "token_embd.weight") != NULL;
    gguf_close(&g);
    return 0;
}
