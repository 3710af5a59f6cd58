/* zinc synth: llama-quantize's type mix (checked against every tiny
 * fixture, which llama-quantize made), real-model shapes (parameter counts
 * against the published ones), the written files (read back, loaded by the
 * model loader, value statistics, determinism), the GGUF writer's streaming
 * fill, and the command line. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "harness.h"
#include "cli.h"
#include "gguf.h"
#include "model.h"
#include "quant.h"
#include "synth.h"

static char tmp_path[256];

static const char *tmp_file(void) {
    const char *dir = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/zinc_synth_XXXXXX", dir ? dir : "/tmp");
    int fd = mkstemp(tmp_path);
    if (fd >= 0) close(fd);
    return tmp_path;
}

static const synth_tensor *find(const synth_tensor *t, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return &t[i];
    return NULL;
}

/* ---- the type mix against llama-quantize's own files ----------------- */

/* Every quantized tiny fixture: take its tensor names and shapes, assign
 * types for the file type in its name, compare with what llama-quantize
 * wrote (the sources were F32, so unquantized tensors are F32). */
static void test_types_match_fixtures(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", shared_path("models/tiny"));
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".gguf")) continue;
        char ftype[32];
        const char *dash = strrchr(e->d_name, '-');
        snprintf(ftype, sizeof ftype, "%.*s", (int)(e->d_name + len - 5 - dash - 1), dash + 1);
        if (!strcmp(ftype, "f32")) continue;
        char path[800];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        gguf_ctx g;
        zn_err err = {0};
        if (gguf_open(&g, path, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            continue;
        }
        char arch[32], key[96];
        gguf_get_str_or(&g, "general.architecture", arch, sizeof arch, "");
        snprintf(key, sizeof key, "%s.block_count", arch);
        int n_layer = (int)gguf_get_int_or(&g, key, 0);
        snprintf(key, sizeof key, "%s.expert_count", arch);
        int n_expert = (int)gguf_get_int_or(&g, key, 0);
        synth_tensor *t = calloc(g.n_tensors, sizeof *t);
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            snprintf(t[i].name, sizeof t[i].name, "%s", g.tensors[i].name);
            t[i].n_dims = g.tensors[i].n_dims;
            memcpy(t[i].ne, g.tensors[i].ne, sizeof t[i].ne);
        }
        CHECK_MSG(synth_assign_types(t, g.n_tensors, ftype, n_layer, n_expert, &err) == ZN_OK, "%s", err.msg);
        for (uint64_t i = 0; i < g.n_tensors; i++)
            CHECK_MSG(t[i].type == g.tensors[i].type, "%s: %s: synth picks %s, llama-quantize wrote %s", e->d_name,
                      t[i].name, zn_type_name(t[i].type), zn_type_name(g.tensors[i].type));
        free(t);
        gguf_close(&g);
        files++;
    }
    closedir(d);
    CHECK_MSG(files >= 24, "only %d quantized fixtures", files);
}

/* ---- real shapes ------------------------------------------------------- */

typedef struct counts {
    uint64_t total, embed, bytes;
    size_t n;
} counts;

static counts plan_counts(const char *like, const char *ftype, synth_tensor **out) {
    counts c = {0};
    synth_opts o = {.like = like, .ftype = ftype};
    synth_tensor *t = NULL;
    zn_err err = {0};
    CHECK_MSG(synth_plan(&o, &t, &c.n, &err) == ZN_OK, "%s", err.msg);
    for (size_t i = 0; i < c.n; i++) {
        uint64_t nel = t[i].ne[0] * t[i].ne[1] * t[i].ne[2] * t[i].ne[3];
        c.total += nel;
        if (!strcmp(t[i].name, "token_embd.weight") || !strcmp(t[i].name, "output.weight")) c.embed += nel;
        c.bytes += zn_row_size(t[i].type, (int64_t)t[i].ne[0]) * (nel / t[i].ne[0]);
    }
    if (out) *out = t;
    else free(t);
    return c;
}

#define CHECK_REL(got, want, rel) CHECK_MSG(fabs((double)(got) - (want)) <= (rel) * (want), "%s: %.4g vs %.4g", #got, (double)(got), (double)(want))

/* Parameter counts against the model cards (text model; Qwen3.5's vision
 * encoder and MTP head are not written). */
static void test_plan_param_counts(void) {
    counts c = plan_counts("qwen3-8b", "q4_k_m", NULL); /* card: 8.2B, non-embedding 6.95B */
    CHECK_REL(c.total, 8.19e9, 0.01);
    CHECK_REL(c.total - c.embed, 6.95e9, 0.005);
    c = plan_counts("qwen3-0.6b", "q4_k_m", NULL); /* card: 0.6B, non-embedding 0.44B */
    CHECK_REL(c.total - c.embed, 0.44e9, 0.01);
    c = plan_counts("llama-3.2-1b", "q4_k_m", NULL); /* card: 1.23B */
    CHECK_REL(c.total, 1.235e9, 0.005);
    c = plan_counts("qwen3.5-35b-a3b", "q4_k_m", NULL); /* card: 35B with vision and MTP */
    CHECK_REL(c.total, 34.66e9, 0.01);
    CHECK(c.bytes > 19.0e9 && c.bytes < 22.5e9); /* published Q4_K_M files: ~20-21 GB */
    c = plan_counts("qwen3-125m", "q4_k_m", NULL);
    CHECK_REL(c.total, 0.125e9, 0.25);
}

static void check_shape(const synth_tensor *t, size_t n, const char *name, zn_type ty, uint64_t ne0, uint64_t ne1,
                        uint64_t ne2) {
    const synth_tensor *x = find(t, n, name);
    CHECK_MSG(x != NULL, "no %s", name);
    if (!x) return;
    CHECK_MSG(x->type == ty && x->ne[0] == ne0 && x->ne[1] == ne1 && x->ne[2] == ne2,
              "%s: %s [%llu, %llu, %llu], want %s [%llu, %llu, %llu]", name, zn_type_name(x->type),
              (unsigned long long)x->ne[0], (unsigned long long)x->ne[1], (unsigned long long)x->ne[2],
              zn_type_name(ty), (unsigned long long)ne0, (unsigned long long)ne1, (unsigned long long)ne2);
}

/* Qwen3.5-2B: 24 layers, every 4th full attention (8 heads x 256, 2 KV
 * heads, query+gate), the others Gated DeltaNet (16 key heads, 16 value
 * heads of 128), FFN 6144, tied 248320-token embedding. */
static void test_plan_qwen35_2b(void) {
    synth_tensor *t = NULL;
    counts c = plan_counts("qwen3.5-2b", "q4_k_m", &t);
    if (!t) return;
    CHECK_EQ_INT(c.n, 2 + 18 * 14 + 6 * 11);
    CHECK(find(t, c.n, "output.weight") == NULL);
    check_shape(t, c.n, "token_embd.weight", ZN_TYPE_Q6_K, 2048, 248320, 1); /* tied: the output's type */
    check_shape(t, c.n, "blk.0.attn_qkv.weight", ZN_TYPE_Q6_K, 2048, 6144, 1);
    check_shape(t, c.n, "blk.0.attn_gate.weight", ZN_TYPE_Q4_K, 2048, 2048, 1);
    check_shape(t, c.n, "blk.0.ssm_conv1d.weight", ZN_TYPE_F32, 4, 6144, 1);
    check_shape(t, c.n, "blk.0.ssm_a", ZN_TYPE_F32, 16, 1, 1);
    check_shape(t, c.n, "blk.0.ssm_alpha.weight", ZN_TYPE_Q4_K, 2048, 16, 1);
    check_shape(t, c.n, "blk.0.ssm_norm.weight", ZN_TYPE_F32, 128, 1, 1);
    check_shape(t, c.n, "blk.0.ssm_out.weight", ZN_TYPE_Q4_K, 2048, 2048, 1);
    check_shape(t, c.n, "blk.3.attn_q.weight", ZN_TYPE_Q4_K, 2048, 4096, 1);
    check_shape(t, c.n, "blk.3.attn_k.weight", ZN_TYPE_Q4_K, 2048, 512, 1);
    /* attn_qkv and attn_v share one counter (24 of them): Q6_K for 0-2,
     * 21-23 and 5, 8, ..., 20 */
    check_shape(t, c.n, "blk.3.attn_v.weight", ZN_TYPE_Q4_K, 2048, 512, 1);
    check_shape(t, c.n, "blk.11.attn_v.weight", ZN_TYPE_Q6_K, 2048, 512, 1);
    check_shape(t, c.n, "blk.8.attn_qkv.weight", ZN_TYPE_Q6_K, 2048, 6144, 1);
    check_shape(t, c.n, "blk.9.attn_qkv.weight", ZN_TYPE_Q4_K, 2048, 6144, 1);
    check_shape(t, c.n, "blk.3.attn_output.weight", ZN_TYPE_Q4_K, 2048, 2048, 1);
    check_shape(t, c.n, "blk.3.attn_q_norm.weight", ZN_TYPE_F32, 256, 1, 1);
    check_shape(t, c.n, "blk.4.ffn_down.weight", ZN_TYPE_Q4_K, 6144, 2048, 1);
    check_shape(t, c.n, "blk.5.ffn_down.weight", ZN_TYPE_Q6_K, 6144, 2048, 1);
    CHECK(find(t, c.n, "blk.3.attn_qkv.weight") == NULL && find(t, c.n, "blk.2.attn_q.weight") == NULL);
    /* file order: globals by name, then block by block */
    CHECK_EQ_STR(t[0].name, "output_norm.weight");
    CHECK_EQ_STR(t[1].name, "token_embd.weight");
    CHECK_EQ_STR(t[2].name, "blk.0.attn_gate.weight");
    CHECK_EQ_STR(t[c.n - 1].name, "blk.23.post_attention_norm.weight");
    free(t);
}

/* Qwen3-8B Q4_K_M, by hand: 36 layers; attn_v and ffn_down get Q6_K in
 * the first 4 and last 5 layers and every third in between (6, 9, ...). */
static void test_plan_mix_by_hand(void) {
    static const int q6[] = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35};
    synth_tensor *t = NULL;
    counts c = plan_counts("qwen3-8b", "q4_k_m", &t);
    if (!t) return;
    for (int il = 0; il < 36; il++) {
        bool more = false;
        for (size_t k = 0; k < sizeof q6 / sizeof q6[0]; k++) more |= q6[k] == il;
        char n[64];
        snprintf(n, sizeof n, "blk.%d.attn_v.weight", il);
        check_shape(t, c.n, n, more ? ZN_TYPE_Q6_K : ZN_TYPE_Q4_K, 4096, 1024, 1);
        snprintf(n, sizeof n, "blk.%d.ffn_down.weight", il);
        check_shape(t, c.n, n, more ? ZN_TYPE_Q6_K : ZN_TYPE_Q4_K, 12288, 4096, 1);
        snprintf(n, sizeof n, "blk.%d.ffn_up.weight", il);
        check_shape(t, c.n, n, ZN_TYPE_Q4_K, 4096, 12288, 1);
    }
    check_shape(t, c.n, "token_embd.weight", ZN_TYPE_Q4_K, 4096, 151936, 1); /* untied: its own type */
    check_shape(t, c.n, "output.weight", ZN_TYPE_Q6_K, 4096, 151936, 1);
    check_shape(t, c.n, "blk.0.attn_q_norm.weight", ZN_TYPE_F32, 128, 1, 1);
    free(t);
    /* other file types */
    c = plan_counts("qwen3-8b", "q8_0", &t);
    check_shape(t, c.n, "output.weight", ZN_TYPE_Q8_0, 4096, 151936, 1);
    check_shape(t, c.n, "blk.7.attn_v.weight", ZN_TYPE_Q8_0, 4096, 1024, 1);
    free(t);
    c = plan_counts("qwen3-8b", "q4_0", &t);
    check_shape(t, c.n, "output.weight", ZN_TYPE_Q6_K, 4096, 151936, 1);
    check_shape(t, c.n, "blk.0.attn_v.weight", ZN_TYPE_Q4_0, 4096, 1024, 1);
    free(t);
    c = plan_counts("qwen3-8b", "bf16", &t);
    check_shape(t, c.n, "output.weight", ZN_TYPE_BF16, 4096, 151936, 1);
    check_shape(t, c.n, "output_norm.weight", ZN_TYPE_F32, 4096, 1, 1);
    free(t);
    c = plan_counts("llama-3.2-1b", "q5_k_m", &t);
    check_shape(t, c.n, "token_embd.weight", ZN_TYPE_Q6_K, 2048, 128256, 1);
    check_shape(t, c.n, "rope_freqs.weight", ZN_TYPE_F32, 32, 1, 1);
    check_shape(t, c.n, "blk.0.attn_v.weight", ZN_TYPE_Q6_K, 2048, 512, 1);
    check_shape(t, c.n, "blk.2.attn_v.weight", ZN_TYPE_Q5_K, 2048, 512, 1);
    check_shape(t, c.n, "blk.2.attn_q.weight", ZN_TYPE_Q5_K, 2048, 2048, 1);
    CHECK(find(t, c.n, "blk.0.attn_q_norm.weight") == NULL);
    free(t);
}

/* ---- written files ----------------------------------------------------- */

typedef struct stats {
    double sum, sum2;
    uint64_t n, nonfinite, zero_blocks;
} stats;

/* Dequantizes up to max_rows rows of t, 256 values at a time, counting
 * all-zero groups. */
static void tensor_stats(const gguf_tensor *t, int64_t max_rows, stats *s) {
    int64_t row = (int64_t)t->ne[0], rows = (int64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    if (rows > max_rows) rows = max_rows;
    size_t rb = zn_row_size(t->type, row);
    float *v = malloc((size_t)row * sizeof *v);
    for (int64_t r = 0; r < rows; r++) {
        quant_dequantize_row(t->type, t->data + (size_t)r * rb, v, row);
        for (int64_t i = 0; i < row; i += 256) {
            bool any = false;
            for (int64_t k = i; k < i + 256 && k < row; k++) {
                if (!isfinite(v[k])) s->nonfinite++;
                any |= v[k] != 0.0f;
                s->sum += v[k];
                s->sum2 += (double)v[k] * v[k];
                s->n++;
            }
            s->zero_blocks += !any;
        }
    }
    free(v);
}

/* Reads back a synth file: the tensors are the plan's, in order, and the
 * values look like weights. */
static void check_written(const char *path, const synth_opts *o) {
    synth_tensor *t = NULL;
    size_t n = 0;
    zn_err err = {0};
    CHECK(synth_plan(o, &t, &n, &err) == ZN_OK);
    gguf_ctx g;
    if (gguf_open(&g, path, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        free(t);
        return;
    }
    CHECK_EQ_INT(g.n_tensors, n);
    for (uint64_t i = 0; i < g.n_tensors && i < n; i++) {
        const gguf_tensor *x = &g.tensors[i];
        CHECK_EQ_STR(x->name, t[i].name);
        CHECK_MSG(x->type == t[i].type && x->n_dims == t[i].n_dims && !memcmp(x->ne, t[i].ne, sizeof x->ne), "%s",
                  x->name);
        stats s = {0};
        tensor_stats(x, 64, &s);
        double mean = s.sum / (double)s.n, rms = sqrt(s.sum2 / (double)s.n);
        CHECK_MSG(s.nonfinite == 0, "%s: %llu non-finite values", x->name, (unsigned long long)s.nonfinite);
        CHECK_MSG(s.zero_blocks == 0, "%s: %llu all-zero blocks", x->name, (unsigned long long)s.zero_blocks);
        if (strstr(x->name, "norm.weight")) {
            CHECK_MSG(fabs(mean - 1.0) < 0.01, "%s: mean %g", x->name, mean);
        } else if (strlen(x->name) > 5 && !strcmp(x->name + strlen(x->name) - 5, "ssm_a")) {
            CHECK_MSG(mean < -1.0, "%s: mean %g", x->name, mean);
        } else if (x->ne[0] * x->ne[1] >= 4096 && !strstr(x->name, "ssm_conv1d")) {
            /* weights ~N(0, 0.02): RMS within 15%, mean well inside it */
            CHECK_MSG(fabs(rms - 0.02) < 0.003 && fabs(mean) < 0.002, "%s (%s): mean %g rms %g", x->name,
                      zn_type_name(x->type), mean, rms);
        }
    }
    gguf_close(&g);
    free(t);
}

static bool same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    char x[65536], y[65536];
    while (same) {
        size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
        same = na == nb && !memcmp(x, y, na);
        if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static void test_write_dense_tied(void) {
    synth_opts o = {.like = "qwen3-125m", .ftype = "q4_k_m", .n_layer = 2, .n_vocab = 512, .seed = 7};
    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s", tmp_file());
    synth_summary sum;
    zn_err err = {0};
    CHECK_MSG(synth_write(&o, p1, &sum, &err) == ZN_OK, "%s", err.msg);
    check_written(p1, &o);
    CHECK_EQ_INT(sum.n_tensors, 2 + 2 * 11);
    zn_model m;
    zn_status ls = model_load(&m, p1, &err);
    CHECK_MSG(ls == ZN_OK, "%s", err.msg);
    if (ls == ZN_OK) {
        CHECK_EQ_INT(m.arch, ZN_ARCH_QWEN3);
        CHECK_EQ_INT(m.hp.n_layer, 2);
        CHECK_EQ_INT(m.hp.n_embd, 768);
        CHECK_EQ_INT(m.hp.n_vocab, 512);
        CHECK_EQ_INT(m.hp.n_head, 12);
        CHECK_EQ_INT(m.hp.n_head_kv, 4);
        CHECK_EQ_INT(m.hp.head_dim_k, 64);
        CHECK_EQ_INT(m.hp.n_ff, 2048);
        CHECK(m.tied_output);
        CHECK_EQ_INT(m.weight_bytes, sum.data_bytes);
        model_free(&m);
    }
    /* deterministic for a seed, different for another */
    snprintf(p2, sizeof p2, "%s", tmp_file());
    CHECK(synth_write(&o, p2, NULL, &err) == ZN_OK);
    CHECK(same_file(p1, p2));
    o.seed = 8;
    CHECK(synth_write(&o, p2, NULL, &err) == ZN_OK);
    CHECK(!same_file(p1, p2));
    remove(p1);
    remove(p2);
}

/* Hybrid MoE: recurrent and attention layers, routed and shared experts,
 * untied output; --experts shrinks the expert count. */
static void test_write_hybrid_moe(void) {
    synth_opts o = {.like = "qwen3.5-35b-a3b", .n_layer = 4, .n_expert = 2, .n_vocab = 256, .seed = 3};
    char p[256];
    snprintf(p, sizeof p, "%s", tmp_file());
    zn_err err = {0};
    CHECK_MSG(synth_write(&o, p, NULL, &err) == ZN_OK, "%s", err.msg);
    check_written(p, &o);
    zn_model m;
    zn_status ls = model_load(&m, p, &err);
    CHECK_MSG(ls == ZN_OK, "%s", err.msg);
    if (ls == ZN_OK) {
        CHECK_EQ_INT(m.arch, ZN_ARCH_QWEN35MOE);
        CHECK_EQ_INT(m.hp.n_expert, 2);
        CHECK_EQ_INT(m.hp.n_expert_used, 2);
        CHECK_EQ_INT(m.hp.n_ff_exp, 512);
        CHECK_EQ_INT(m.hp.n_ff_shexp, 512);
        CHECK_EQ_INT(m.hp.ssm_dt_rank, 32);
        CHECK_EQ_INT(m.hp.ssm_n_group, 16);
        CHECK_EQ_INT(m.hp.ssm_d_inner, 4096);
        CHECK_EQ_INT(m.hp.n_rot, 64);
        CHECK_EQ_INT(m.hp.rope_sections[0], 11);
        CHECK_EQ_INT(m.hp.rope_sections[2], 10);
        CHECK(m.layers[0].recurrent && m.layers[1].recurrent && m.layers[2].recurrent && !m.layers[3].recurrent);
        CHECK(!m.tied_output);
        CHECK(m.layers[3].ffn_down_exps.w && m.layers[3].ffn_down_exps.w->ne[2] == 2);
        CHECK(m.layers[3].ffn_gate_exps.w && !m.layers[3].ffn_gate_up_exps.w);
        model_free(&m);
    }
    remove(p);
    /* --gate-up: the experts' gate and up as one tensor of twice the rows,
     * as the tiny qwen35moe fixtures (llama.cpp's) have them */
    o.gate_up = true;
    CHECK_MSG(synth_write(&o, p, NULL, &err) == ZN_OK, "%s", err.msg);
    check_written(p, &o);
    ls = model_load(&m, p, &err);
    CHECK_MSG(ls == ZN_OK, "%s", err.msg);
    if (ls == ZN_OK) {
        for (int il = 0; il < m.hp.n_layer; il++) {
            const gguf_tensor *gu = m.layers[il].ffn_gate_up_exps.w;
            CHECK(gu && gu->ne[0] == 2048 && gu->ne[1] == 1024 && gu->ne[2] == 2 && !m.layers[il].ffn_gate_exps.w &&
                  !m.layers[il].ffn_up_exps.w);
        }
        model_free(&m);
    }
    remove(p);
}

/* ---- the writer's streaming fill ------------------------------------- */

static zn_status fill_pattern(void *user, uint8_t *buf, uint64_t off, size_t n, zn_err *err) {
    uint64_t *calls = user;
    (*calls)++;
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)((off + i) * 7 + ((off + i) >> 16));
    return ZN_OK;
}

static zn_status fill_fail(void *user, uint8_t *buf, uint64_t off, size_t n, zn_err *err) {
    if (off > 0) return zn_errf(err, ZN_ERR_IO, "refusing offset %llu", (unsigned long long)off);
    memset(buf, 1, n);
    return ZN_OK;
}

static void test_writer_fill(void) {
    /* a full chunk and a partial one of Q8_0 blocks: offsets and sizes line up */
    const uint64_t ne[2] = {32 * 1000, 200};
    gguf_writer *w;
    zn_err err = {0};
    uint64_t calls = 0;
    CHECK(gguf_writer_init(&w, 0, &err) == ZN_OK);
    CHECK(gguf_writer_add_tensor_fill(w, "big", ZN_TYPE_Q8_0, 2, ne, fill_pattern, &calls, &err) == ZN_OK);
    const char *p = tmp_file();
    CHECK_MSG(gguf_writer_write(w, p, &err) == ZN_OK, "%s", err.msg);
    gguf_writer_free(w);
    uint64_t bytes = zn_row_size(ZN_TYPE_Q8_0, (int64_t)ne[0]) * ne[1];
    const uint64_t chunk = GGUF_FILL_CHUNK / 34 * 34;
    CHECK_EQ_INT(calls, (bytes + chunk - 1) / chunk);
    CHECK(calls >= 2);
    gguf_ctx g;
    if (gguf_open(&g, p, &err) == ZN_OK) {
        const gguf_tensor *t = gguf_find_tensor(&g, "big");
        CHECK(t && t->nbytes == bytes);
        int bad = 0;
        for (uint64_t i = 0; t && i < bytes; i++) bad += t->data[i] != (uint8_t)(i * 7 + (i >> 16));
        CHECK_EQ_INT(bad, 0);
        gguf_close(&g);
    } else {
        CHECK_MSG(0, "%s", err.msg);
    }
    /* a failing fill aborts the write, removes the file and says why */
    CHECK(gguf_writer_init(&w, 0, &err) == ZN_OK);
    CHECK(gguf_writer_add_tensor_fill(w, "big", ZN_TYPE_Q8_0, 2, ne, fill_fail, NULL, &err) == ZN_OK);
    CHECK(gguf_writer_write(w, p, &err) == ZN_ERR_IO);
    CHECK_MSG(strstr(err.msg, "refusing offset") != NULL && strstr(err.msg, p) != NULL, "%s", err.msg);
    CHECK(access(p, F_OK) != 0);
    gguf_writer_free(w);
}

/* ---- command line and errors ----------------------------------------- */

/* Runs `zinc synth` with its output (summary, usage, errors) sent to
 * /dev/null. */
static int run_cli(int argc, const char **argv) {
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), errfd = dup(2), null = open("/dev/null", O_WRONLY);
    if (out >= 0 && errfd >= 0 && null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    int rc = cli_synth(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    if (out >= 0) dup2(out, 1);
    if (errfd >= 0) dup2(errfd, 2);
    if (out >= 0) close(out);
    if (errfd >= 0) close(errfd);
    if (null >= 0) close(null);
    return rc;
}

static void test_cli(void) {
    char p[256];
    snprintf(p, sizeof p, "%s", tmp_file());
    const char *ok[] = {"synth", "--like", "qwen3-125m", "--type", "q8_0", "--layers", "1", "--vocab", "256", "-o", p};
    CHECK_EQ_INT(run_cli(11, ok), 0);
    gguf_ctx g;
    zn_err err = {0};
    if (gguf_open(&g, p, &err) == ZN_OK) {
        CHECK_EQ_INT(gguf_get_int_or(&g, "general.file_type", -1), 7);
        CHECK_EQ_INT(gguf_get_int_or(&g, "qwen3.block_count", -1), 1);
        CHECK_EQ_INT(gguf_find_tensor(&g, "blk.0.attn_v.weight")->type, ZN_TYPE_Q8_0);
        gguf_close(&g);
    }
    remove(p);
    const char *no_out[] = {"synth", "--like", "qwen3-125m"};
    CHECK_EQ_INT(run_cli(3, no_out), 2);
    const char *bad_num[] = {"synth", "--like", "qwen3-125m", "--layers", "x", "-o", p};
    CHECK_EQ_INT(run_cli(7, bad_num), 2);
    const char *bad_model[] = {"synth", "--like", "gpt-5", "-o", p};
    CHECK_EQ_INT(run_cli(5, bad_model), 1);
    CHECK(access(p, F_OK) != 0);
    /* library errors name the problem */
    synth_opts o = {.like = "qwen3-8b", .n_expert = 4};
    CHECK(synth_write(&o, p, NULL, &err) == ZN_ERR_ARG && strstr(err.msg, "no experts"));
    o = (synth_opts){.like = "qwen3-8b", .gate_up = true};
    CHECK(synth_write(&o, p, NULL, &err) == ZN_ERR_ARG && strstr(err.msg, "--gate-up"));
    o = (synth_opts){.like = "qwen3-8b", .ftype = "q3_k_m"};
    CHECK(synth_write(&o, p, NULL, &err) == ZN_ERR_ARG && strstr(err.msg, "q3_k_m"));
    o = (synth_opts){.like = "qwen3-125m", .n_layer = 1, .n_vocab = 256};
    CHECK(synth_write(&o, "/nonexistent-dir/x.gguf", NULL, &err) == ZN_ERR_IO && strstr(err.msg, "/nonexistent-dir"));
}

int main(void) {
    RUN(test_types_match_fixtures);
    RUN(test_plan_param_counts);
    RUN(test_plan_qwen35_2b);
    RUN(test_plan_mix_by_hand);
    RUN(test_write_dense_tied);
    RUN(test_write_hybrid_moe);
    RUN(test_writer_fill);
    RUN(test_cli);
    return harness_report("synth");
}
