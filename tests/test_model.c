/* Model loading: every fixture binds with the hyper-parameters llama.cpp
 * derives (values checked against gguf-py's view of the files), and broken
 * files -- derived from a fixture with the GGUF writer -- fail with a message
 * that names the problem. */
#include <stdlib.h>
#include <unistd.h>

#include "gguf_edit.h"
#include "harness.h"
#include "model.h"

static const char *tiny(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s.gguf", shared_path("models/tiny"), name);
    return buf;
}

static void test_llama_dense(void) {
    zn_model m;
    zn_err err = {0};
    zn_status st = model_load(&m, tiny("llama-dense-f32"), &err);
    CHECK_MSG(st == ZN_OK, "%s", err.msg);
    if (st) return;
    const zn_hparams *hp = &m.hp;
    CHECK_EQ_INT(m.arch, ZN_ARCH_LLAMA);
    CHECK_EQ_INT(hp->n_vocab, 128);
    CHECK_EQ_INT(hp->n_embd, 256);
    CHECK_EQ_INT(hp->n_layer, 2);
    CHECK_EQ_INT(hp->n_ff, 512);
    CHECK_EQ_INT(hp->n_head, 2);
    CHECK_EQ_INT(hp->n_head_kv, 2);
    CHECK_EQ_INT(hp->head_dim_k, 128);
    CHECK_EQ_INT(hp->n_rot, 128);
    CHECK_EQ_INT(hp->rope_mode, ZN_ROPE_NORM);
    CHECK_NEAR(hp->rms_eps, 1e-5, 1e-12);
    CHECK_NEAR(hp->rope_freq_base, 10000.0, 0);
    CHECK_NEAR(hp->rope_freq_scale, 1.0, 0);
    CHECK(m.rope_freqs != NULL);
    CHECK(!m.tied_output);
    const zn_layer *L = &m.layers[1];
    CHECK(L->wq.w && L->wq.b && L->wq.s && L->wo.b && L->ffn_gate.b && L->ffn_down.s);
    CHECK(L->q_norm == NULL && L->ffn_gate_inp.w == NULL);
    CHECK_EQ_INT(model_n_attn_layers(&m), 2);
    /* 2 layers x (4 attn 256x256 + 3 ffn 256x512 + biases/norms/scales) + embd/out */
    CHECK(m.n_params > 2 * (4 * 65536 + 3 * 131072) + 2 * 32768);
    model_free(&m);
}

static void test_every_fixture_loads(void) {
    static const char *const names[] = {
        "llama-dense-q4_k_m", "llama-dense-q8_0", "llama-moe-f32", "llama-moe-q4_k_m",
        "llama-moe-q8_0", "qwen2-dense-f32", "qwen2-dense-q4_k_m", "qwen2-dense-q8_0",
        "qwen3-dense-f32", "qwen3-dense-q4_k_m", "qwen3-dense-q6_k", "qwen3-dense-q8_0",
        "qwen3moe-moe-q4_k_m", "qwen3moe-moe-q8_0", "qwen35-dense-bf16", "qwen35-dense-f16",
        "qwen35-dense-f32", "qwen35-dense-q4_0", "qwen35-dense-q4_k_m", "qwen35-dense-q5_k_m",
        "qwen35-dense-q6_k", "qwen35-dense-q8_0", "qwen35moe-moe-f16", "qwen35moe-moe-f32",
        "qwen35moe-moe-q4_0", "qwen35moe-moe-q4_k_m", "qwen35moe-moe-q5_k_m", "qwen35moe-moe-q6_k",
        "qwen35moe-moe-q8_0",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        zn_model m;
        zn_err err = {0};
        zn_status st = model_load(&m, tiny(names[i]), &err);
        CHECK_MSG(st == ZN_OK, "%s: %s", names[i], err.msg);
        if (st == ZN_OK) model_free(&m);
    }
}

static void test_moe_and_qwen(void) {
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, tiny("llama-moe-f32"), &err) == ZN_OK) {
        CHECK_EQ_INT(m.hp.n_expert, 2);
        CHECK_EQ_INT(m.hp.n_expert_used, 2);
        CHECK_EQ_INT(m.hp.n_ff_exp, 512);
        CHECK(m.layers[0].ffn_gate_exps.s != NULL && m.layers[0].ffn_gate_up_exps.w == NULL);
        model_free(&m);
    } else CHECK_MSG(0, "%s", err.msg);

    if (model_load(&m, tiny("qwen3-dense-f32"), &err) == ZN_OK) {
        CHECK_EQ_INT(m.hp.n_head, 4);
        CHECK_EQ_INT(m.hp.n_head_kv, 1);
        CHECK_EQ_INT(m.hp.head_dim_k, 64);
        CHECK_EQ_INT(m.hp.rope_mode, ZN_ROPE_NEOX);
        CHECK(m.layers[0].q_norm && m.layers[0].k_norm);
        CHECK(m.layers[0].wo.b == NULL); /* llama.cpp binds the output bias only on llama */
        model_free(&m);
    } else CHECK_MSG(0, "%s", err.msg);

    if (model_load(&m, tiny("qwen2-dense-f32"), &err) == ZN_OK) {
        CHECK(m.output.b != NULL && m.layers[0].wk.b != NULL);
        model_free(&m);
    } else CHECK_MSG(0, "%s", err.msg);

    if (model_load(&m, tiny("qwen35moe-moe-f32"), &err) == ZN_OK) {
        CHECK_EQ_INT(m.hp.rope_mode, ZN_ROPE_IMROPE);
        CHECK_EQ_INT(m.hp.rope_sections[3], 32);
        CHECK(m.layers[0].recurrent && !m.layers[1].recurrent);
        CHECK_EQ_INT(model_n_attn_layers(&m), 1);
        CHECK_EQ_INT(m.hp.ssm_d_conv, 4);
        CHECK_EQ_INT(m.hp.ssm_dt_rank, 2);
        CHECK_EQ_INT(m.hp.n_ff_shexp, 256);
        CHECK(m.layers[0].ffn_gate_up_exps.w && m.layers[0].ffn_gate_inp_shexp.w);
        CHECK(m.layers[0].ssm_conv1d && m.layers[0].wqkv.w && m.layers[1].wq.w);
        CHECK_EQ_INT(m.layers[1].wq.w->ne[1], 512); /* query + gate */
        model_free(&m);
    } else CHECK_MSG(0, "%s", err.msg);
}

/* ---- broken files ---- */

typedef struct edit {
    const char *arch;        /* new general.architecture, or NULL */
    const char *drop;        /* tensor to leave out, or NULL */
    const char *reshape;     /* tensor whose first two dims are swapped */
    const char *drop_key;    /* metadata key to leave out */
} edit;

/* Writes a copy of fixture `src` with one edit to a temp file. */
static int write_edited(const char *src, const edit *e, char *path, size_t cap) {
    gguf_ctx g;
    zn_err err = {0};
    if (gguf_open(&g, tiny(src), &err) != ZN_OK) return 0;
    gguf_writer *w;
    int ok = gguf_writer_init(&w, 32, &err) == ZN_OK;
    for (uint64_t i = 0; ok && i < g.n_kv; i++) {
        if (e->drop_key && gguf_str_eq(g.kv[i].key, e->drop_key)) continue;
        ok = gguf_writer_copy_kv(w, &g.kv[i]) == ZN_OK;
    }
    if (ok && e->arch) ok = gguf_writer_set_str(w, "general.architecture", e->arch) == ZN_OK;
    for (uint64_t i = 0; ok && i < g.n_tensors; i++) {
        const gguf_tensor *t = &g.tensors[i];
        if (e->drop && !strcmp(t->name, e->drop)) continue;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (e->reshape && !strcmp(t->name, e->reshape)) {
            ne[0] = t->ne[1];
            ne[1] = t->ne[0];
        }
        ok = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, t->data, &err) == ZN_OK;
    }
    snprintf(path, cap, "/tmp/zn_test_model_XXXXXX");
    int fd = ok ? mkstemp(path) : -1;
    if (fd >= 0) close(fd);
    ok = ok && fd >= 0 && gguf_writer_write(w, path, &err) == ZN_OK;
    if (w) gguf_writer_free(w);
    gguf_close(&g);
    return ok;
}

static void expect_failure(const char *src, edit e, zn_status want, const char *needle) {
    char path[256];
    CHECK(write_edited(src, &e, path, sizeof path));
    zn_model m;
    zn_err err = {0};
    zn_status st = model_load(&m, path, &err);
    CHECK_MSG(st == want, "got %d (%s), want %d", st, err.msg, want);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    if (st == ZN_OK) model_free(&m);
    unlink(path);
}

static void test_errors(void) {
    expect_failure("llama-dense-f32", (edit){.arch = "gpt2"}, ZN_ERR_UNSUPPORTED, "qwen35moe");
    expect_failure("llama-dense-f32", (edit){.drop = "blk.1.attn_k.weight"}, ZN_ERR_FORMAT, "blk.1.attn_k.weight");
    expect_failure("llama-dense-f32", (edit){.reshape = "blk.0.ffn_up.weight"}, ZN_ERR_FORMAT,
                   "blk.0.ffn_up.weight' has shape [512, 256");
    expect_failure("qwen3-dense-f32", (edit){.drop = "blk.0.attn_q_norm.weight"}, ZN_ERR_FORMAT,
                   "attn_q_norm");
    expect_failure("qwen35-dense-f32", (edit){.drop = "blk.0.ssm_a"}, ZN_ERR_FORMAT, "blk.0.ssm_a");
    expect_failure("qwen35-dense-f32", (edit){.drop_key = "qwen35.ssm.conv_kernel"}, ZN_ERR_FORMAT,
                   "qwen35.ssm.conv_kernel");
    expect_failure("llama-dense-f32", (edit){.drop_key = "llama.attention.layer_norm_rms_epsilon"},
                   ZN_ERR_FORMAT, "layer_norm_rms_epsilon");

    zn_model m;
    zn_err err = {0};
    CHECK(model_load(&m, "/nonexistent/model.gguf", &err) == ZN_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "/nonexistent/model.gguf") != NULL);
}

/* Without output.weight the head is tied to the embedding. */
static void test_tied_output(void) {
    char path[256];
    CHECK(write_edited("qwen3-dense-f32", &(edit){.drop = "output.weight"}, path, sizeof path));
    zn_model m;
    zn_err err = {0};
    zn_status st = model_load(&m, path, &err);
    CHECK_MSG(st == ZN_OK, "%s", err.msg);
    if (st == ZN_OK) {
        CHECK(m.tied_output);
        CHECK(m.output.w == m.tok_embd);
        model_free(&m);
    }
    unlink(path);
}

/* Loads src with the edits e; the status, and the message in msg. */
static zn_status load_edited(const char *src, const gedit *e, char *msg, size_t cap) {
    char path[] = "/tmp/zn_test_model_XXXXXX";
    int fd = mkstemp(path);
    zn_err err = {0};
    CHECK(fd >= 0);
    if (fd < 0) return ZN_ERR_IO;
    close(fd);
    zn_status st = ZN_ERR_IO;
    if (gedit_write(tiny(src), e, path, &err)) {
        CHECK_MSG(0, "%s: cannot write the edited copy: %s", src, err.msg);
    } else {
        zn_model m;
        st = model_load(&m, path, &err);
        if (st == ZN_OK) model_free(&m);
    }
    snprintf(msg, cap, "%s", err.msg);
    unlink(path);
    return st;
}

static void expect_edit_failure(const char *src, const gedit *e, const char *needle, const char *needle2) {
    char msg[ZN_ERR_MSG_MAX];
    zn_status st = load_edited(src, e, msg, sizeof msg);
    CHECK_MSG(st == ZN_ERR_FORMAT, "%s: got %d (%s), want a format error naming '%s'", src, st, msg, needle);
    CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
    if (needle2) CHECK_MSG(strstr(msg, needle2) != NULL, "message '%s' lacks '%s'", msg, needle2);
}

#define SET_F(k, v) (gedit){.set = {{.key = (k), .kind = 'f', .f = (v)}}}
#define SET_D(k, v) (gedit){.set = {{.key = (k), .kind = 'd', .f = (v)}}}

/* Hyper-parameters outside their domain would make NaN logits: refused at
 * load, naming the key (every architecture reads them the same way). */
static void test_bad_float_hparams(void) {
    const char *const fix[] = {"llama-dense-f32", "qwen3-dense-f32", "qwen35-dense-f32"};
    const char *const arch[] = {"llama", "qwen3", "qwen35"};
    for (int a = 0; a < 3; a++) {
        char base[64], eps[96], scale[96];
        snprintf(base, sizeof base, "%s.rope.freq_base", arch[a]);
        snprintf(eps, sizeof eps, "%s.attention.layer_norm_rms_epsilon", arch[a]);
        snprintf(scale, sizeof scale, "%s.rope.scaling.factor", arch[a]);
        const double bad_base[] = {0.0, -1.0, -1e-30, NAN, INFINITY};
        for (int i = 0; i < 5; i++) expect_edit_failure(fix[a], &SET_F(base, bad_base[i]), base, NULL);
        expect_edit_failure(fix[a], &SET_D(base, 1e300), base, "not a finite float");
        expect_edit_failure(fix[a], &SET_F(eps, -1e-5), eps, ">= 0");
        expect_edit_failure(fix[a], &SET_F(eps, NAN), eps, NULL);
        expect_edit_failure(fix[a], &SET_F(scale, -2.0), scale, NULL);
        char msg[ZN_ERR_MSG_MAX];
        CHECK_MSG(load_edited(fix[a], &SET_F(base, 1e-3), msg, sizeof msg) == ZN_OK, "%s", msg); /* odd but valid */
        CHECK_MSG(load_edited(fix[a], &SET_F(eps, 0.0), msg, sizeof msg) == ZN_OK, "%s", msg);
    }
}

/* A vocabulary whose size is not the embedding's row count: refused at load
 * with both sizes (it used to drop or refuse ids at run time). */
static void test_vocab_size_mismatch(void) {
    const char *const fix[] = {"llama-dense-f32", "qwen35-dense-f32"};
    for (int a = 0; a < 2; a++) {
        expect_edit_failure(fix[a], &(gedit){.vocab = 127}, "127 tokens", "128 rows");
        expect_edit_failure(fix[a], &(gedit){.vocab = 129}, "129 tokens", "128 rows");
        char msg[ZN_ERR_MSG_MAX];
        CHECK_MSG(load_edited(fix[a], &(gedit){.vocab = 128}, msg, sizeof msg) == ZN_OK, "%s", msg);
    }
}

/* Gated DeltaNet shapes: with consistent tensors, head sizes the kernels of
 * both backends cannot run (the CPU's stack scratch is ZN_SSM_MAX_HEAD_DIM;
 * gdn.comp needs a power of two) and conv kernels beyond ZN_GDN_MAX_CONV
 * are refused at load, naming the key; the limits themselves load (and run
 * on both backends: test_edge_models.c). All-zero rope sections too. */
static void test_ssm_shape_limits(void) {
    const int64_t bad[] = {4, 12, 96, 600, 1024, 4096};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gedit e = {0};
        CHECK(gedit_qwen35_ssm(&e, tiny("qwen35-dense-f32"), bad[i], 0) == 1);
        expect_edit_failure("qwen35-dense-f32", &e, "qwen35.ssm.state_size", NULL);
    }
    const int64_t good[] = {ZN_SSM_MIN_HEAD_DIM, 64, ZN_SSM_MAX_HEAD_DIM};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        gedit e = {0};
        char msg[ZN_ERR_MSG_MAX];
        CHECK(gedit_qwen35_ssm(&e, tiny("qwen35-dense-f32"), good[i], 0) == 1);
        CHECK_MSG(load_edited("qwen35-dense-f32", &e, msg, sizeof msg) == ZN_OK, "state %lld: %s",
                  (long long)good[i], msg);
    }
    gedit e = {0};
    CHECK(gedit_qwen35_ssm(&e, tiny("qwen35-dense-f32"), 128, ZN_GDN_MAX_CONV + 1) == 1);
    expect_edit_failure("qwen35-dense-f32", &e, "qwen35.ssm.conv_kernel", NULL);
    static const int32_t zero[4] = {0, 0, 0, 0}, big[4] = {0, 0, 999, 0};
    expect_edit_failure("qwen35-dense-f32",
                        &(gedit){.set = {{.key = "qwen35.rope.dimension_sections", .kind = 'a', .arr = zero, .n = 4}}},
                        "qwen35.rope.dimension_sections", "all zero");
    expect_edit_failure("qwen35-dense-f32",
                        &(gedit){.set = {{.key = "qwen35.rope.dimension_sections", .kind = 'a', .arr = big, .n = 4}}},
                        "qwen35.rope.dimension_sections", "999");
}

int main(void) {
    RUN(test_llama_dense);
    RUN(test_every_fixture_loads);
    RUN(test_moe_and_qwen);
    RUN(test_errors);
    RUN(test_tied_output);
    RUN(test_bad_float_hparams);
    RUN(test_vocab_size_mismatch);
    RUN(test_ssm_shape_limits);
    return harness_report("model");
}
