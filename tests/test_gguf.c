/* GGUF reader/writer tests.
 * Expected facts about the shared fixtures were taken with llama.cpp's
 * independent Python reader (gguf-py); malformed inputs are built here
 * byte by byte with a small encoder that does not use src/gguf.c. */
#include <dirent.h>
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

int main(void) {
    RUN(test_open_all_fixtures);
    RUN(test_model_getters);
    RUN(test_vocab_getters);
    RUN(test_open_errors);
    return harness_report("gguf");
}
