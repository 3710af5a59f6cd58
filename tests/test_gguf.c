/* GGUF reader/writer tests.
 * Expected facts about the shared fixtures were taken with llama.cpp's
 * independent Python reader (gguf-py); malformed inputs are built here
 * byte by byte with a small encoder that does not use src/gguf.c. */
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <unistd.h>

#include "harness.h"
#include "gguf.h"

/* ---- fixtures ---- */

#define MAX_FILES 128
static char files[MAX_FILES][512];
static int n_files;

static void collect(const char *dir_rel) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", shared_path(dir_rel));
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && n_files < MAX_FILES) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".gguf") == 0)
            snprintf(files[n_files++], sizeof files[0], "%s/%s", dir, e->d_name);
    }
    closedir(d);
}

static void test_open_all_fixtures(void) {
    n_files = 0;
    collect("models");
    collect("models/tiny");
    collect("tokenizers/ggml-vocab");
    CHECK_MSG(n_files >= 40, "only %d fixtures found", n_files);
    for (int i = 0; i < n_files; i++) {
        gguf_ctx g;
        zn_err err = {0};
        zn_status s = gguf_open(&g, files[i], &err);
        CHECK_MSG(s == ZN_OK, "%s", err.msg);
        if (s) continue;
        CHECK(g.version == 3);
        CHECK(g.alignment == 32);
        CHECK(gguf_find_kv(&g, "general.architecture") != NULL);
        CHECK(g.data_offset % g.alignment == 0 || g.n_tensors == 0);
        for (uint64_t t = 0; t < g.n_tensors; t++) {
            const gguf_tensor *tt = &g.tensors[t];
            CHECK(gguf_find_tensor(&g, tt->name) == tt);
            CHECK(tt->data >= g.map + g.data_offset && tt->data + tt->nbytes <= g.map + g.size);
        }
        for (uint64_t k = 0; k < g.n_kv; k++) {
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)g.kv[k].key.len, g.kv[k].key.ptr);
            CHECK(gguf_find_kv(&g, key) == &g.kv[k]);
        }
        gguf_close(&g);
    }
}

static void test_model_getters(void) {
    gguf_ctx g;
    zn_err err = {0};
    zn_status s = gguf_open(&g, shared_path("models/tiny/qwen35-dense-q4_0.gguf"), &err);
    CHECK_MSG(s == ZN_OK, "%s", err.msg);
    if (s) return;
    CHECK_EQ_INT(g.n_tensors, 61);
    const gguf_arr *a = NULL;
    CHECK(gguf_get_arr(&g, "qwen35.rope.dimension_sections", &a, &err) == ZN_OK);
    if (a) {
        CHECK(a->type == GGUF_TYPE_INT32);
        CHECK_EQ_INT(a->n, 4);
        for (int i = 0; i < 4; i++) CHECK_EQ_INT(gguf_arr_int(a, i), 32);
        CHECK_NEAR(gguf_arr_float(a, 3), 32.0, 0);
        CHECK_EQ_INT(gguf_arr_int(a, 4), 0); /* out of range */
    }
    int64_t v = 0;
    CHECK(gguf_get_int(&g, "qwen35.ssm.conv_kernel", &v, &err) == ZN_OK);
    CHECK_EQ_INT(v, 4);
    CHECK_EQ_INT(gguf_get_int_or(&g, "qwen35.rope.scaling.original_context_length", -1), 256);
    CHECK_EQ_INT(gguf_get_int_or(&g, "no.such.key", -7), -7);
    double f = 0;
    CHECK(gguf_get_float(&g, "qwen35.rope.freq_base", &f, &err) == ZN_OK);
    CHECK_NEAR(f, 10000.0, 0);
    CHECK_NEAR(gguf_get_float_or(&g, "qwen35.rope.scaling.yarn_ext_factor", 5), -1.0, 0);
    CHECK(isinf(gguf_get_float_or(&g, "qwen35.kda.gate_lower_bound", 0)));
    bool b = true;
    CHECK(gguf_get_bool(&g, "qwen35.rope.scaling.finetuned", &b, &err) == ZN_OK);
    CHECK(!b);
    CHECK(gguf_get_bool_or(&g, "no.such.key", true));
    char buf[64];
    CHECK_EQ_STR(gguf_get_str_or(&g, "general.architecture", buf, sizeof buf, "x"), "qwen35");
    CHECK_EQ_STR(gguf_get_str_or(&g, "qwen35.rope.scaling.type", buf, 4, "x"), "lin"); /* truncated */
    CHECK_EQ_STR(gguf_get_str_or(&g, "no.such.key", buf, sizeof buf, "dflt"), "dflt");
    /* type mismatches name the key */
    gguf_str str;
    CHECK(gguf_get_str(&g, "qwen35.ssm.conv_kernel", &str, &err) == ZN_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "qwen35.ssm.conv_kernel") && strstr(err.msg, "u32"), "%s", err.msg);
    CHECK(gguf_get_int(&g, "general.architecture", &v, &err) == ZN_ERR_FORMAT);
    CHECK(gguf_get_int(&g, "missing.key", &v, &err) == ZN_ERR_NOT_FOUND);
    CHECK(gguf_get_bool(&g, "qwen35.rope.freq_base", &b, &err) == ZN_ERR_FORMAT);
    CHECK(gguf_get_arr(&g, "qwen35.rope.freq_base", &a, &err) == ZN_ERR_FORMAT);
    CHECK_EQ_INT(gguf_get_int_or(&g, "general.architecture", 9), 9);
    /* an empty array of strings */
    CHECK(gguf_get_arr(&g, "tokenizer.ggml.merges", &a, &err) == ZN_OK);
    if (a) CHECK_EQ_INT(a->n, 0);

    const gguf_tensor *t = gguf_find_tensor(&g, "output.weight");
    CHECK(t != NULL);
    if (t) {
        CHECK(t->type == ZN_TYPE_Q6_K);
        CHECK_EQ_INT(t->n_dims, 2);
        CHECK_EQ_INT(t->ne[0], 256);
        CHECK_EQ_INT(t->ne[1], 128);
        CHECK_EQ_INT(t->ne[2], 1);
        CHECK_EQ_INT(t->nbytes, 26880);
        CHECK_EQ_INT(t->data - g.map, 23296);
    }
    t = gguf_find_tensor(&g, "token_embd.weight");
    CHECK(t && t->type == ZN_TYPE_Q4_0 && t->nbytes == 18432 && t->data - g.map == 51200);
    t = gguf_find_tensor(&g, "blk.0.attn_gate.input_scale");
    CHECK(t && t->type == ZN_TYPE_F32 && t->n_dims == 1 && t->ne[0] == 1 && t->data - g.map == 69632);
    CHECK(gguf_find_tensor(&g, "output.weigh") == NULL);
    CHECK(gguf_find_tensor(&g, "") == NULL);
    gguf_close(&g);
    CHECK(g.map == NULL && g.kv == NULL);
    gguf_close(&g); /* closing twice is harmless */
}

static void test_vocab_getters(void) {
    gguf_ctx g;
    zn_err err = {0};
    zn_status s = gguf_open(&g, shared_path("tokenizers/ggml-vocab/ggml-vocab-llama-spm.gguf"), &err);
    CHECK_MSG(s == ZN_OK, "%s", err.msg);
    if (s) return;
    CHECK_EQ_INT(g.n_tensors, 0);
    CHECK_EQ_INT(g.n_kv, 22);
    const gguf_arr *tok = NULL, *sc = NULL, *tt = NULL;
    CHECK(gguf_get_arr(&g, "tokenizer.ggml.tokens", &tok, &err) == ZN_OK);
    CHECK(gguf_get_arr(&g, "tokenizer.ggml.scores", &sc, &err) == ZN_OK);
    CHECK(gguf_get_arr(&g, "tokenizer.ggml.token_type", &tt, &err) == ZN_OK);
    if (tok && sc && tt) {
        CHECK(tok->type == GGUF_TYPE_STRING && tok->n == 32000);
        CHECK(gguf_str_eq(tok->strs[0], "<unk>"));
        CHECK(gguf_str_eq(tok->strs[1], "<s>"));
        CHECK(gguf_str_eq(tok->strs[3], "<0x00>"));
        CHECK(gguf_str_eq(tok->strs[259], "\xe2\x96\x81\xe2\x96\x81"));
        CHECK(gguf_str_eq(tok->strs[31999], "\xe7\xbb\x99"));
        CHECK(sc->type == GGUF_TYPE_FLOAT32 && sc->n == 32000);
        CHECK_NEAR(gguf_arr_float(sc, 1000), -741.0, 0);
        CHECK_EQ_INT(gguf_arr_int(sc, 1000), -741);
        CHECK(tt->type == GGUF_TYPE_INT32);
        CHECK_EQ_INT(gguf_arr_int(tt, 0), 2);
        CHECK_EQ_INT(gguf_arr_int(tt, 1), 3);
        CHECK_EQ_INT(gguf_arr_int(tt, 3), 6);
    }
    CHECK(gguf_get_bool_or(&g, "tokenizer.ggml.add_bos_token", false) == true);
    CHECK(gguf_get_bool_or(&g, "tokenizer.ggml.add_eos_token", true) == false);
    CHECK_EQ_INT(gguf_get_int_or(&g, "tokenizer.ggml.eos_token_id", -1), 2);
    CHECK_NEAR(gguf_get_float_or(&g, "llama.attention.layer_norm_rms_epsilon", 0), 9.999999747378752e-06, 1e-18);
    char buf[32];
    CHECK_EQ_STR(gguf_get_str_or(&g, "tokenizer.ggml.pre", buf, sizeof buf, NULL), "default");
    gguf_close(&g);
}

static void test_open_errors(void) {
    gguf_ctx g;
    zn_err err = {0};
    CHECK(gguf_open(&g, "/nonexistent/x.gguf", &err) == ZN_ERR_NOT_FOUND);
    CHECK_MSG(strstr(err.msg, "/nonexistent/x.gguf"), "%s", err.msg);
    CHECK(gguf_open(&g, shared_path("models"), &err) != ZN_OK);
    CHECK(gguf_open_mem(&g, NULL, 0, "empty", &err) == ZN_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "empty") && strstr(err.msg, "magic"), "%s", err.msg);
}

/* ---- hand-built files: an encoder independent of src/gguf.c ---- */

typedef struct mbuf {
    uint8_t b[4096];
    size_t n;
} mbuf;

static void m_put(mbuf *m, const void *p, size_t n) {
    if (m->n + n <= sizeof m->b) memcpy(m->b + m->n, p, n);
    m->n += n;
}
static void m_u8(mbuf *m, uint8_t v) { m_put(m, &v, 1); }
static void m_u32(mbuf *m, uint32_t v) { m_put(m, &v, 4); }
static void m_u64(mbuf *m, uint64_t v) { m_put(m, &v, 8); }
static void m_str(mbuf *m, const char *s) { m_u64(m, strlen(s)); m_put(m, s, strlen(s)); }
static void m_pad(mbuf *m, size_t a) { while (m->n % a) m_u8(m, 0); }

/* Variations of the base file, each breaking one rule. */
typedef struct spec {
    const char *key5;      /* key of the 6th kv (default "t.u8") */
    const char *tname1;    /* name of tensor 1 (default "b") */
    uint32_t name_nul;     /* put a NUL byte into tensor 2's name */
    int depth;             /* nesting depth of "t.nested" (default 2) */
    uint64_t b_ne0;        /* row length of Q8_0 tensor b (default 32) */
    uint64_t a_ne1;        /* tensor a's ne[1] (default 2) */
} spec;

/* Offsets of fields in the last built file. */
static struct {
    size_t n_tensors, n_kv, key0_len, str0_len, align_type, align_val, type1, arr_type, arr_count;
    size_t t_ndims[3], t_ne[3], t_type[3], t_off[3];
    size_t bounds[64];
    int n_bounds;
    size_t data;
} at;

static void bound(mbuf *m) { at.bounds[at.n_bounds++] = m->n; }

static void nested(mbuf *m, int depth) {
    if (depth == 1) { /* [1,2] as i8 */
        m_u32(m, GGUF_TYPE_INT8); m_u64(m, 2); m_u8(m, 1); m_u8(m, 2);
        return;
    }
    m_u32(m, GGUF_TYPE_ARRAY); m_u64(m, 2);
    nested(m, depth - 1);
    nested(m, depth - 1);
}

/* 3 tensors: a F32 [8,2] @0, b Q8_0 [32] @64, c F16 [4,1,1,2] @128. */
static void build(mbuf *m, spec sp) {
    const char *key5 = sp.key5 ? sp.key5 : "t.u8";
    const char *tn[3] = {"a", sp.tname1 ? sp.tname1 : "b", "c"};
    int depth = sp.depth ? sp.depth : 2;
    uint64_t b_ne0 = sp.b_ne0 ? sp.b_ne0 : 32, a_ne1 = sp.a_ne1 ? sp.a_ne1 : 2;
    memset(&at, 0, sizeof at);
    m->n = 0;
    m_put(m, "GGUF", 4); m_u32(m, 3);
    at.n_tensors = m->n; m_u64(m, 3);
    at.n_kv = m->n; m_u64(m, 12);
    bound(m);
    at.key0_len = m->n; m_str(m, "general.architecture"); m_u32(m, GGUF_TYPE_STRING);
    at.str0_len = m->n; m_str(m, "test"); bound(m);
    m_str(m, "general.alignment"); at.align_type = m->n; m_u32(m, GGUF_TYPE_UINT32);
    at.align_val = m->n; m_u32(m, 32); bound(m);
    m_str(m, "t.i16"); at.type1 = m->n; m_u32(m, GGUF_TYPE_INT16); uint16_t i16 = (uint16_t)-5; m_put(m, &i16, 2); bound(m);
    m_str(m, "t.f64"); m_u32(m, GGUF_TYPE_FLOAT64); double f = 2.5; m_put(m, &f, 8); bound(m);
    m_str(m, "t.bool"); m_u32(m, GGUF_TYPE_BOOL); m_u8(m, 1); bound(m);
    m_str(m, key5); m_u32(m, GGUF_TYPE_UINT8); m_u8(m, 7); bound(m);
    m_str(m, "t.i64"); m_u32(m, GGUF_TYPE_INT64); m_u64(m, (uint64_t)-(1ll << 40)); bound(m);
    m_str(m, "t.u64"); m_u32(m, GGUF_TYPE_UINT64); m_u64(m, (1ull << 63) + 5); bound(m);
    m_str(m, "t.f32"); m_u32(m, GGUF_TYPE_FLOAT32); float f32 = 0.25f; m_put(m, &f32, 4); bound(m);
    m_str(m, "t.arr"); m_u32(m, GGUF_TYPE_ARRAY);
    at.arr_type = m->n; m_u32(m, GGUF_TYPE_UINT32);
    at.arr_count = m->n; m_u64(m, 3); m_u32(m, 1); m_u32(m, 2); m_u32(m, 3); bound(m);
    m_str(m, "t.strs"); m_u32(m, GGUF_TYPE_ARRAY); m_u32(m, GGUF_TYPE_STRING); m_u64(m, 3);
    m_str(m, "a"); m_str(m, "bc"); m_str(m, ""); bound(m);
    m_str(m, "t.nested"); m_u32(m, GGUF_TYPE_ARRAY); nested(m, depth); bound(m);
    const uint64_t ne[3][4] = {{8, a_ne1}, {b_ne0}, {4, 1, 1, 2}};
    const uint32_t nd[3] = {2, 1, 4}, ty[3] = {ZN_TYPE_F32, ZN_TYPE_Q8_0, ZN_TYPE_F16};
    const uint64_t off[3] = {0, 64, 128};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && sp.name_nul) { m_u64(m, 3); m_put(m, "c\0d", 3); }
        else m_str(m, tn[i]);
        at.t_ndims[i] = m->n; m_u32(m, nd[i]);
        at.t_ne[i] = m->n;
        for (uint32_t d = 0; d < nd[i]; d++) m_u64(m, ne[i][d]);
        at.t_type[i] = m->n; m_u32(m, ty[i]);
        at.t_off[i] = m->n; m_u64(m, off[i]);
        bound(m);
    }
    m_pad(m, 32);
    at.data = m->n; bound(m);
    for (int i = 0; i < 16; i++) { float x = (float)i; m_put(m, &x, 4); }           /* a: 16 f32 */
    bound(m);
    uint8_t q[34] = {0}; m_put(m, q, 34); bound(m);                                     /* b */
    m_pad(m, 32);
    uint16_t h[8] = {0}; m_put(m, h, 16); bound(m);                                     /* c */
}

static void put_at(mbuf *m, size_t off, const void *v, size_t n) { memcpy(m->b + off, v, n); }
static void put_u32_at(mbuf *m, size_t off, uint32_t v) { put_at(m, off, &v, 4); }
static void put_u64_at(mbuf *m, size_t off, uint64_t v) { put_at(m, off, &v, 8); }

/* Opens the first n bytes from an exactly-sized heap copy, so that ASan
 * sees any read past the end. */
static zn_status open_copy(const uint8_t *p, size_t n, zn_err *err) {
    void *c = malloc(n ? n : 1);
    memcpy(c, p, n);
    gguf_ctx g;
    zn_status s = gguf_open_mem(&g, c, n, "mem.gguf", err);
    if (s == ZN_OK) {
        /* exercise what a caller would touch */
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            volatile uint8_t sum = 0;
            for (uint64_t j = 0; j < g.tensors[i].nbytes; j++) sum ^= g.tensors[i].data[j];
            (void)sum;
        }
        gguf_close(&g);
    }
    free(c);
    return s;
}

static void expect_fail(const mbuf *m, zn_status want, const char *substr, int line) {
    zn_err err = {0};
    zn_status s = open_copy(m->b, m->n, &err);
    if (s != want || !strstr(err.msg, substr) || !strstr(err.msg, "mem.gguf")) {
        fprintf(stderr, "  line %d: expected status %d with \"%s\", got %d: %s\n", line, want, substr, s, err.msg);
        h_cur_failed = 1;
    }
}
#define EXPECT_FAIL(m, want, substr) expect_fail(m, want, substr, __LINE__)

static void test_built_file_valid(void) {
    static mbuf m;
    build(&m, (spec){0});
    gguf_ctx g;
    zn_err err = {0};
    zn_status s = gguf_open_mem(&g, m.b, m.n, "mem.gguf", &err);
    CHECK_MSG(s == ZN_OK, "%s", err.msg);
    if (s) return;
    CHECK_EQ_INT(g.n_kv, 12);
    CHECK_EQ_INT(g.n_tensors, 3);
    CHECK_EQ_INT(g.data_offset, at.data);
    int64_t v;
    CHECK(gguf_get_int(&g, "t.i16", &v, &err) == ZN_OK && v == -5);
    CHECK(gguf_get_int(&g, "t.i64", &v, &err) == ZN_OK && v == -(1ll << 40));
    CHECK(gguf_get_int(&g, "t.u64", &v, &err) == ZN_ERR_FORMAT); /* does not fit int64 */
    CHECK_MSG(strstr(err.msg, "t.u64"), "%s", err.msg);
    const gguf_kv *kv = gguf_find_kv(&g, "t.u64");
    CHECK(kv && kv->type == GGUF_TYPE_UINT64 && kv->v.u64 == (1ull << 63) + 5);
    CHECK_EQ_INT(gguf_get_int_or(&g, "t.u8", 0), 7);
    CHECK_NEAR(gguf_get_float_or(&g, "t.f64", 0), 2.5, 0);
    CHECK_NEAR(gguf_get_float_or(&g, "t.f32", 0), 0.25, 0);
    CHECK_NEAR(gguf_get_float_or(&g, "t.u8", 0), 7, 0); /* integers convert to float */
    CHECK(gguf_get_bool_or(&g, "t.bool", false));
    const gguf_arr *a;
    CHECK(gguf_get_arr(&g, "t.strs", &a, &err) == ZN_OK && a->n == 3 && gguf_str_eq(a->strs[1], "bc") &&
          gguf_str_eq(a->strs[2], ""));
    CHECK(gguf_get_arr(&g, "t.nested", &a, &err) == ZN_OK);
    CHECK(a->type == GGUF_TYPE_ARRAY && a->n == 2 && a->subs[1].type == GGUF_TYPE_INT8 && a->subs[1].n == 2);
    CHECK_EQ_INT(gguf_arr_int(&a->subs[1], 1), 2);
    CHECK_EQ_INT(gguf_arr_int(a, 0), 0); /* not numeric */
    const gguf_tensor *t = gguf_find_tensor(&g, "c");
    CHECK(t && t->n_dims == 4 && t->ne[3] == 2 && t->nbytes == 16 && t->data == m.b + at.data + 128);
    t = gguf_find_tensor(&g, "a");
    float x;
    memcpy(&x, t->data + 4 * 5, 4);
    CHECK_NEAR(x, 5.0, 0);
    gguf_close(&g);
    /* deeper nesting up to the limit is fine */
    build(&m, (spec){.depth = ZN_GGUF_MAX_DEPTH});
    CHECK(open_copy(m.b, m.n, &err) == ZN_OK);
}

/* The messages a cut-short file may produce, depending on where it ends. */
static bool says_truncated(const char *msg) {
    return strstr(msg, "truncated") || strstr(msg, "past the end") || strstr(msg, "cannot fit") ||
           strstr(msg, "needs at least");
}

static void test_truncated_everywhere(void) {
    static mbuf m;
    build(&m, (spec){0});
    for (size_t n = 0; n < m.n; n++) {
        zn_err err = {0};
        zn_status s = open_copy(m.b, n, &err);
        CHECK_MSG(s == ZN_ERR_FORMAT && strstr(err.msg, "mem.gguf"), "prefix %zu: status %d: %s", n, s, err.msg);
    }
    CHECK(open_copy(m.b, m.n, NULL) == ZN_OK);
    /* at the section boundaries the message says what is missing */
    for (int i = 0; i < at.n_bounds - 1; i++) {
        size_t n = at.bounds[i];
        zn_err err = {0};
        open_copy(m.b, n, &err);
        CHECK_MSG(says_truncated(err.msg), "prefix %zu: %s", n, err.msg);
    }
}

static void test_mutated_everywhere(void) {
    /* every byte of the metadata replaced by a few values: no crash, no
     * leak (ASan), and a failure always names the file */
    static mbuf m, c;
    build(&m, (spec){0});
    static const uint8_t vals[] = {0x00, 0x01, 0x05, 0x7f, 0x80, 0xff};
    int ok = 0, bad = 0;
    for (size_t i = 0; i < at.data; i++) {
        for (size_t k = 0; k < sizeof vals; k++) {
            c = m;
            if (c.b[i] == vals[k]) continue;
            c.b[i] = vals[k];
            zn_err err = {0};
            zn_status s = open_copy(c.b, c.n, &err);
            if (s == ZN_OK) ok++;
            else {
                bad++;
                CHECK_MSG(strstr(err.msg, "mem.gguf: "), "byte %zu = %u: %s", i, vals[k], err.msg);
            }
        }
    }
    CHECK(ok > 0 && bad > 0);
}

static void test_malformed(void) {
    static mbuf m;
#define BASE() build(&m, (spec){0})
    BASE(); m.b[3] = 'G';
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "bad magic 'GGUG'");
    BASE(); put_u32_at(&m, 4, 1);
    EXPECT_FAIL(&m, ZN_ERR_UNSUPPORTED, "version 1 is not supported");
    BASE(); put_u32_at(&m, 4, 4);
    EXPECT_FAIL(&m, ZN_ERR_UNSUPPORTED, "unsupported GGUF version 4");
    BASE(); put_u32_at(&m, 4, 3u << 24);
    EXPECT_FAIL(&m, ZN_ERR_UNSUPPORTED, "big-endian");
    BASE(); put_u32_at(&m, 4, 2); /* v2 has the same layout */
    CHECK(open_copy(m.b, m.n, NULL) == ZN_OK);

    BASE(); put_u64_at(&m, at.n_kv, 1ull << 40);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "kv count 1099511627776 exceeds the limit");
    BASE(); put_u64_at(&m, at.n_kv, ZN_GGUF_MAX_KV);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "cannot fit");
    BASE(); put_u64_at(&m, at.n_tensors, UINT64_MAX);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor count 18446744073709551615 exceeds the limit");
    BASE(); put_u64_at(&m, at.n_tensors, 1000);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "cannot fit");
    BASE(); put_u64_at(&m, at.n_kv, 13); /* one more kv than present: the tensor infos are read as a kv */
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "mem.gguf: ");

    BASE(); put_u64_at(&m, at.key0_len, 1ull << 62);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "key 0: key length 4611686018427387904 exceeds the limit");
    BASE(); put_u64_at(&m, at.str0_len, ZN_GGUF_MAX_STRING + 1ull);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "key 0 'general.architecture': string value length 67108865 exceeds the limit");
    BASE(); put_u64_at(&m, at.str0_len, m.n);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "runs past the end of the file");
    BASE(); put_u64_at(&m, at.key0_len, 0);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "mem.gguf: ");

    BASE(); put_u64_at(&m, at.arr_count, 1ull << 40);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'t.arr': array count 1099511627776 exceeds the limit");
    BASE(); put_u64_at(&m, at.arr_count, 1u << 20);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'t.arr': array of 1048576 u32");
    BASE(); put_u32_at(&m, at.arr_type, 99);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'t.arr': unknown array element type 99");
    BASE(); put_u32_at(&m, at.type1, 13);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'t.i16': unknown value type 13");
    build(&m, (spec){.depth = ZN_GGUF_MAX_DEPTH + 1});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'t.nested': arrays nested deeper than");

    build(&m, (spec){.key5 = "t.f64"});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "key 5 't.f64': duplicate key (first seen as key 3)");
    build(&m, (spec){.key5 = "t.u8"}); /* control: the builder itself is fine */
    CHECK(open_copy(m.b, m.n, NULL) == ZN_OK);
    build(&m, (spec){.tname1 = "a"});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': duplicate tensor name (first seen as tensor 0)");
    build(&m, (spec){.tname1 = ""});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "empty name");
    build(&m, (spec){.name_nul = 1});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'c?d': name contains a NUL byte");

    BASE(); put_u32_at(&m, at.align_val, 48);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'general.alignment': alignment 48 is not a power of two");
    BASE(); put_u32_at(&m, at.align_val, 0);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "alignment 0 is not a power of two");
    BASE(); put_u32_at(&m, at.align_type, GGUF_TYPE_FLOAT32);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "'general.alignment': must be an integer, is f32");
    BASE(); put_u32_at(&m, at.align_val, 64); /* now b at 64 is fine but c at 128 too; data start moves */
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "mem.gguf: ");

    BASE(); put_u32_at(&m, at.t_type[0], 77);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': unknown type id 77");
    BASE(); put_u32_at(&m, at.t_type[1], 4); /* Q4_2, removed from ggml */
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'b': unknown type id 4");
    BASE(); put_u64_at(&m, at.t_ne[0] + 8, 0);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': dimension 1 is 0");
    BASE(); put_u32_at(&m, at.t_ndims[0], 5);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': n_dims 5 is not in 1..4");
    BASE(); put_u32_at(&m, at.t_ndims[0], 0);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': n_dims 0 is not in 1..4");
    build(&m, (spec){.a_ne1 = 1ull << 62});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': element count overflows at dimension 1");
    build(&m, (spec){.a_ne1 = 1ull << 40}); /* no overflow, but far past the file */
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'a': data [0, +35184372088832) runs past the end");
    build(&m, (spec){.b_ne0 = 16});
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'b': row length 16 is not a multiple of the Q8_0 block size 32");

    BASE(); put_u64_at(&m, at.t_off[2], 1u << 20);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'c': data [1048576, +16) runs past the end of the data section");
    BASE(); put_u64_at(&m, at.t_off[2], UINT64_MAX - 31);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'c': data [18446744073709551584, +16) runs past the end");
    BASE(); put_u64_at(&m, at.t_off[1], 32);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'b': data at offset 32 overlaps tensor 'a' [0, 64)");
    BASE(); put_u64_at(&m, at.t_off[2], 96); /* b is [64, 98) */
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'c': data at offset 96 overlaps tensor 'b' [64, 98)");
    BASE(); put_u64_at(&m, at.t_off[1], 0);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "overlaps tensor");
    BASE(); put_u64_at(&m, at.t_off[1], 65);
    EXPECT_FAIL(&m, ZN_ERR_FORMAT, "tensor 'b': offset 65 is not a multiple of the alignment 32");
    BASE(); put_u64_at(&m, at.t_off[0], 64); put_u64_at(&m, at.t_off[1], 0); /* any order is fine */
    CHECK(open_copy(m.b, m.n, NULL) == ZN_OK);
#undef BASE
}


static void test_fixture_truncations(void) {
    /* a real model: many prefixes in the metadata, plus the data section */
    size_t n = 0;
    uint8_t *p = (uint8_t *)harness_read_file(shared_path("models/tiny/qwen35-dense-q4_0.gguf"), &n);
    CHECK(p != NULL);
    if (!p) return;
    gguf_ctx g;
    zn_err err = {0};
    CHECK(gguf_open_mem(&g, p, n, "q.gguf", &err) == ZN_OK);
    size_t data = (size_t)g.data_offset;
    gguf_close(&g);
    for (size_t cut = 0; cut < data; cut += 1 + cut / 16) {
        zn_status s = open_copy(p, cut, &err);
        CHECK_MSG(s == ZN_ERR_FORMAT && says_truncated(err.msg),
                  "cut %zu: %s", cut, err.msg);
    }
    for (size_t cut = data; cut < n; cut += (n - data) / 7) {
        zn_status s = open_copy(p, cut, &err);
        CHECK_MSG(s == ZN_ERR_FORMAT && strstr(err.msg, "runs past the end of the data section"), "cut %zu: %s", cut, err.msg);
    }
    free(p);
}

/* ---- writer ---- */

static bool arr_equal(const gguf_arr *a, const gguf_arr *b) {
    if (a->type != b->type || a->n != b->n) return false;
    for (uint64_t i = 0; i < a->n; i++) {
        if (a->type == GGUF_TYPE_STRING) {
            if (a->strs[i].len != b->strs[i].len || memcmp(a->strs[i].ptr, b->strs[i].ptr, a->strs[i].len)) return false;
        } else if (a->type == GGUF_TYPE_ARRAY) {
            if (!arr_equal(&a->subs[i], &b->subs[i])) return false;
        } else if (gguf_arr_float(a, i) != gguf_arr_float(b, i) || gguf_arr_int(a, i) != gguf_arr_int(b, i)) {
            return false;
        }
    }
    return true;
}

static bool kv_equal(const gguf_kv *a, const gguf_kv *b) {
    if (a->type != b->type || a->key.len != b->key.len || memcmp(a->key.ptr, b->key.ptr, a->key.len)) return false;
    switch (a->type) {
    case GGUF_TYPE_STRING: return a->v.str.len == b->v.str.len && !memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len);
    case GGUF_TYPE_ARRAY: return arr_equal(&a->v.arr, &b->v.arr);
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64: return !memcmp(&a->v.f64, &b->v.f64, sizeof a->v.f64);
    case GGUF_TYPE_BOOL: return a->v.b == b->v.b;
    default: return a->v.u64 == b->v.u64;
    }
}

static char tmp_path[256];

static void make_tmp(void) {
    const char *dir = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/zinc-test-gguf-XXXXXX", dir ? dir : "/tmp");
    int fd = mkstemp(tmp_path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
}

/* read -> copy every kv and tensor into a writer -> write -> read back */
static void roundtrip(const char *rel) {
    gguf_ctx g, h;
    zn_err err = {0};
    if (gguf_open(&g, shared_path(rel), &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    gguf_writer *w;
    CHECK(gguf_writer_init(&w, (uint32_t)g.alignment, &err) == ZN_OK);
    for (uint64_t i = 0; i < g.n_kv; i++) CHECK(gguf_writer_copy_kv(w, &g.kv[i]) == ZN_OK);
    for (uint64_t i = 0; i < g.n_tensors; i++) {
        const gguf_tensor *t = &g.tensors[i];
        CHECK_MSG(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) == ZN_OK, "%s", err.msg);
    }
    make_tmp();
    CHECK_MSG(gguf_writer_write(w, tmp_path, &err) == ZN_OK, "%s", err.msg);
    gguf_writer_free(w);
    if (gguf_open(&h, tmp_path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s: %s", rel, err.msg);
        gguf_close(&g);
        unlink(tmp_path);
        return;
    }
    CHECK_EQ_INT(h.version, 3);
    CHECK_EQ_INT(h.n_kv, g.n_kv);
    CHECK_EQ_INT(h.n_tensors, g.n_tensors);
    for (uint64_t i = 0; i < g.n_kv && i < h.n_kv; i++)
        CHECK_MSG(kv_equal(&g.kv[i], &h.kv[i]), "%s: kv %" PRIu64 " differs", rel, i);
    for (uint64_t i = 0; i < g.n_tensors && i < h.n_tensors; i++) {
        const gguf_tensor *a = &g.tensors[i], *b = &h.tensors[i];
        CHECK(strcmp(a->name, b->name) == 0 && a->type == b->type && a->n_dims == b->n_dims && a->nbytes == b->nbytes);
        CHECK(memcmp(a->ne, b->ne, sizeof a->ne) == 0);
        CHECK_MSG(memcmp(a->data, b->data, a->nbytes) == 0, "%s: tensor %s data differs", rel, a->name);
        CHECK(b->offset % h.alignment == 0);
    }
    /* llama.cpp lays tensors out in order with the same padding, so the
     * copy is byte-identical; older vocab-only files (0 tensors) lack the
     * zero padding after the metadata that current writers add */
    uint64_t want = g.n_tensors ? g.size : (g.size + g.alignment - 1) / g.alignment * g.alignment;
    CHECK_MSG(h.size == want && memcmp(g.map, h.map, g.size) == 0, "%s: %" PRIu64 " vs %" PRIu64 " bytes", rel,
              g.size, h.size);
    for (uint64_t i = g.size; i < h.size; i++) CHECK(h.map[i] == 0);
    gguf_close(&h);
    gguf_close(&g);
    unlink(tmp_path);
}

static void test_roundtrip_fixtures(void) {
    static const char *const rels[] = {
        "models/tiny/qwen35-dense-q4_0.gguf", "models/tiny/qwen35moe-moe-q4_k_m.gguf",
        "models/tiny/llama-moe-q8_0.gguf", "models/tiny/qwen3-dense-q6_k.gguf", "models/llama-2-tiny-random.gguf",
        "tokenizers/ggml-vocab/ggml-vocab-llama-spm.gguf", "tokenizers/ggml-vocab/ggml-vocab-gpt-2.gguf",
        "tokenizers/ggml-vocab/ggml-vocab-bert-bge.gguf",
    };
    for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) roundtrip(rels[i]);
}

static void test_writer_synthetic(void) {
    gguf_writer *w;
    zn_err err = {0};
    CHECK(gguf_writer_init(&w, 48, &err) == ZN_ERR_ARG);
    CHECK(gguf_writer_init(&w, 64, &err) == ZN_OK);
    CHECK(gguf_writer_set_str(w, "general.architecture", "first") == ZN_OK);
    CHECK(gguf_writer_set_int(w, "k.i8", GGUF_TYPE_INT8, -128) == ZN_OK);
    CHECK(gguf_writer_set_int(w, "k.i8", GGUF_TYPE_INT8, 128) == ZN_ERR_ARG);
    CHECK(gguf_writer_set_int(w, "k.u16", GGUF_TYPE_UINT16, -1) == ZN_ERR_ARG);
    CHECK(gguf_writer_set_int(w, "k.u16", GGUF_TYPE_UINT16, 65535) == ZN_OK);
    CHECK(gguf_writer_set_uint(w, "k.u64", GGUF_TYPE_UINT64, UINT64_MAX) == ZN_OK);
    CHECK(gguf_writer_set_uint(w, "k.i64", GGUF_TYPE_INT64, UINT64_MAX) == ZN_ERR_ARG);
    CHECK(gguf_writer_set_int(w, "k.i64", GGUF_TYPE_INT64, INT64_MIN) == ZN_OK);
    CHECK(gguf_writer_set_int(w, "k.bad", GGUF_TYPE_STRING, 1) == ZN_ERR_ARG);
    CHECK(gguf_writer_set_f32(w, "k.f32", -0.5f) == ZN_OK);
    CHECK(gguf_writer_set_f64(w, "k.f64", 1e300) == ZN_OK);
    CHECK(gguf_writer_set_bool(w, "k.b", true) == ZN_OK);
    CHECK(gguf_writer_set_str(w, "general.architecture", "second") == ZN_OK); /* replaces, keeps position */
    const int32_t sec[4] = {32, 32, 32, 32};
    CHECK(gguf_writer_set_arr(w, "k.sections", GGUF_TYPE_INT32, sec, 4) == ZN_OK);
    CHECK(gguf_writer_set_arr(w, "k.bad", GGUF_TYPE_STRING, sec, 4) == ZN_ERR_ARG);
    const char *const strs[] = {"x", "", "yz"};
    CHECK(gguf_writer_set_arr_str(w, "k.strs", strs, 3) == ZN_OK);
    CHECK(gguf_writer_set_str(w, "general.alignment", "64") == ZN_ERR_ARG);
    /* a nested array, copied from a reader */
    static mbuf m;
    build(&m, (spec){.depth = 3});
    gguf_ctx src;
    CHECK(gguf_open_mem(&src, m.b, m.n, "mem.gguf", &err) == ZN_OK);
    const gguf_kv *nkv = gguf_find_kv(&src, "t.nested");
    CHECK(nkv && gguf_writer_copy_kv(w, nkv) == ZN_OK);

    float a[64];
    for (int i = 0; i < 64; i++) a[i] = (float)i * 0.5f;
    uint8_t q[2 * 34];
    for (int i = 0; i < 68; i++) q[i] = (uint8_t)(i * 7);
    CHECK(gguf_writer_add_tensor(w, "t.a", ZN_TYPE_F32, 2, (const uint64_t[]){3, 7}, a, &err) == ZN_OK);
    CHECK(gguf_writer_add_tensor(w, "t.q", ZN_TYPE_Q8_0, 1, (const uint64_t[]){64}, q, &err) == ZN_OK);
    CHECK(gguf_writer_add_tensor(w, "t.q", ZN_TYPE_F32, 1, (const uint64_t[]){1}, a, &err) == ZN_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "'t.q'") && strstr(err.msg, "duplicate"), "%s", err.msg);
    CHECK(gguf_writer_add_tensor(w, "t.r", ZN_TYPE_Q8_0, 1, (const uint64_t[]){48}, q, &err) == ZN_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "multiple of the Q8_0 block size 32"), "%s", err.msg);
    CHECK(gguf_writer_add_tensor(w, "t.r", (zn_type)77, 1, (const uint64_t[]){1}, q, &err) == ZN_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "unknown type id 77"), "%s", err.msg);
    CHECK(gguf_writer_add_tensor(w, "t.r", ZN_TYPE_F32, 5, (const uint64_t[]){1, 1, 1, 1, 1}, a, &err) == ZN_ERR_ARG);
    CHECK(gguf_writer_add_tensor(w, "t.r", ZN_TYPE_F32, 2, (const uint64_t[]){1, 0}, a, &err) == ZN_ERR_ARG);
    CHECK(gguf_writer_add_tensor(w, "t.s", ZN_TYPE_F32, 4, (const uint64_t[]){1, 1, 1, 1}, a + 9, &err) == ZN_OK);
    make_tmp();
    CHECK_MSG(gguf_writer_write(w, tmp_path, &err) == ZN_OK, "%s", err.msg);
    gguf_writer_free(w);

    gguf_ctx g;
    zn_status s = gguf_open(&g, tmp_path, &err);
    CHECK_MSG(s == ZN_OK, "%s", err.msg);
    if (s == ZN_OK) {
        CHECK_EQ_INT(g.alignment, 64);
        CHECK_EQ_INT(g.data_offset % 64, 0);
        CHECK(gguf_str_eq(g.kv[0].key, "general.alignment")); /* set by init */
        CHECK(gguf_str_eq(g.kv[1].key, "general.architecture") && gguf_str_eq(g.kv[1].v.str, "second"));
        CHECK_EQ_INT(gguf_get_int_or(&g, "k.i8", 0), -128);
        CHECK_EQ_INT(gguf_get_int_or(&g, "k.u16", 0), 65535);
        CHECK_EQ_INT(gguf_get_int_or(&g, "k.i64", 0), INT64_MIN);
        CHECK(gguf_find_kv(&g, "k.u64")->v.u64 == UINT64_MAX);
        CHECK_NEAR(gguf_get_float_or(&g, "k.f32", 0), -0.5, 0);
        CHECK_NEAR(gguf_get_float_or(&g, "k.f64", 0), 1e300, 0);
        CHECK(gguf_get_bool_or(&g, "k.b", false));
        CHECK(gguf_find_kv(&g, "k.bad") == NULL);
        const gguf_arr *arr;
        CHECK(gguf_get_arr(&g, "k.sections", &arr, &err) == ZN_OK && arr->type == GGUF_TYPE_INT32 && arr->n == 4 &&
              gguf_arr_int(arr, 2) == 32);
        CHECK(gguf_get_arr(&g, "k.strs", &arr, &err) == ZN_OK && arr->n == 3 && gguf_str_eq(arr->strs[2], "yz") &&
              gguf_str_eq(arr->strs[1], ""));
        CHECK(kv_equal(gguf_find_kv(&g, "t.nested"), nkv));
        CHECK(gguf_get_arr(&g, "t.nested", &arr, &err) == ZN_OK && arr->subs[1].subs[0].n == 2);
        CHECK_EQ_INT(g.n_tensors, 3);
        const gguf_tensor *t = gguf_find_tensor(&g, "t.a");
        CHECK(t && t->offset == 0 && t->nbytes == 84 && memcmp(t->data, a, 84) == 0);
        t = gguf_find_tensor(&g, "t.q");
        CHECK(t && t->offset == 128 && t->nbytes == 68 && memcmp(t->data, q, 68) == 0);
        t = gguf_find_tensor(&g, "t.s");
        CHECK(t && t->offset == 256 && t->n_dims == 4 && t->nbytes == 4 && memcmp(t->data, a + 9, 4) == 0);
        CHECK_EQ_INT(g.size, g.data_offset + 320); /* the last tensor is padded too */
        gguf_close(&g);
    }
    gguf_close(&src);
    unlink(tmp_path);

    /* general.alignment set as a kv is honoured as well */
    CHECK(gguf_writer_init(&w, 0, &err) == ZN_OK);
    CHECK(gguf_writer_set_uint(w, "general.alignment", GGUF_TYPE_UINT32, 48) == ZN_ERR_ARG);
    CHECK(gguf_writer_set_uint(w, "general.alignment", GGUF_TYPE_UINT32, 256) == ZN_OK);
    CHECK(gguf_writer_add_tensor(w, "x", ZN_TYPE_F32, 1, (const uint64_t[]){3}, a, &err) == ZN_OK);
    CHECK(gguf_writer_add_tensor(w, "y", ZN_TYPE_F32, 1, (const uint64_t[]){3}, a, &err) == ZN_OK);
    make_tmp();
    CHECK(gguf_writer_write(w, tmp_path, &err) == ZN_OK);
    gguf_writer_free(w);
    s = gguf_open(&g, tmp_path, &err);
    CHECK_MSG(s == ZN_OK, "%s", err.msg);
    if (s == ZN_OK) {
        CHECK(g.alignment == 256 && g.data_offset % 256 == 0 && g.tensors[1].offset == 256);
        gguf_close(&g);
    }
    unlink(tmp_path);
    CHECK(gguf_writer_init(&w, 0, &err) == ZN_OK);
    CHECK(gguf_writer_write(w, "/nonexistent/dir/x.gguf", &err) == ZN_ERR_IO);
    CHECK_MSG(strstr(err.msg, "/nonexistent/dir/x.gguf"), "%s", err.msg);
    gguf_writer_free(w);
}

int main(void) {
    RUN(test_open_all_fixtures);
    RUN(test_model_getters);
    RUN(test_vocab_getters);
    RUN(test_open_errors);
    RUN(test_built_file_valid);
    RUN(test_truncated_everywhere);
    RUN(test_mutated_everywhere);
    RUN(test_malformed);
    RUN(test_fixture_truncations);
    RUN(test_roundtrip_fixtures);
    RUN(test_writer_synthetic);
    return harness_report("gguf");
}
