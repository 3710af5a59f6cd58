/* KV cache quantization (--kv-type, backend.h zn_kv_type): every tiny
 * fixture (all have attention layers) and the demo model run with a Q8_0,
 * a Q4_0 and the two rotated caches (q4_0r, q3_0r) on the CPU backend, against the same backend with the
 * f16 cache; then on Vulkan with each against the CPU with the same one
 * (check_vulkan). Each run is a 12-token prompt batch then 12 single-token
 * decode steps (the prefill and the decode attention both read the
 * quantized cache; 24 positions, two blocks of ZN_KV_BLOCK would need
 * longer prompts than the fixtures' contexts, the chunking is checked by
 * test_long_chunks). Bounds on the worst normalised MSE of a position's
 * logits, from the measurements of bench/results/2026-12-02-cpu-kvq.md with
 * margin (worst measured in brackets; q4_0r and q3_0r: 2026-12-05-s24.md):
 *                       q8_0             q4_0             q4_0r            q3_0r
 *   f32/f16/bf16 files  1e-5 (1.0e-6)    2e-3 (2.6e-4)    2e-3 (2.1e-4)    5e-3 (8.6e-4)
 *   quantized files     2e-3 (6.1e-4)    1e-2 (2.2e-3)    1e-2 (1.6e-3)    2e-2 (3.8e-3)
 * Quantized weights have the higher floor: their matmuls quantize the
 * activations to Q8_0 again, and a small change in the attention output
 * flips some of those roundings (the f16 cache against llama.cpp's shows
 * the same kind of floor: test_golden's 1e-3 for quantized files).
 * Also: a fork (seq_copy) of a quantized sequence continues exactly as the
 * original (on both backends); a model whose head dim is not a multiple of
 * 32 is refused by both with its name and dims.
 * ZN_TEST_VERBOSE=1 prints the table (NMSE, KV bytes per token). */
#include "backend.h"
#include "golden.h"
#include "graph.h"
#include "model.h"
#include "limits.h"
#include "quant.h"
#include "vk_device.h"

#define N_PROMPT 12
#define N_DECODE 12
#define N_ALL (N_PROMPT + N_DECODE)
/* [float weights, quantized weights] */
static const double bound_q8_0[2] = {1e-5, 2e-3}, bound_q4_0[2] = {2e-3, 1e-2};
/* q4_0r (heads rotated, then Q4_0): held to q4_0's bounds; what the
 * rotation buys is measured (ZN_TEST_VERBOSE table), not assumed */
static const double bound_q4_0r[2] = {2e-3, 1e-2};
/* q3_0r (rotated, 3-bit codebook): 5e-3 (8.6e-4 measured, qwen3-dense-f32)
 * and 2e-2 (3.8e-3, the demo model; 4.5e-3 on Vulkan against its own f16
 * cache) */
static const double bound_q3_0r[2] = {5e-3, 2e-2};
#define NKT 4
static const zn_kv_type kts[NKT] = {ZN_KV_Q8_0, ZN_KV_Q4_0, ZN_KV_Q4_0R, ZN_KV_Q3_0R};
/* Vulkan against CPU with the same cache format, [q8_0, q4_0][float
 * weights, quantized weights]. Both backends store the same bytes
 * (test_vk_layers checks kv_store.comp's); what differs is the order of
 * the sums and the CPU attention's rounding of the dequantized values to
 * f16. q8_0: float files 1e-7 (1.1e-9 measured); q4_0: 1e-8 (4.8e-10, on
 * qwen3-dense-f32; a wrong nibble order or scale is 1e-5 and more: the
 * q4_0 cache against f16 is 5e-5..3e-4 on these files). Quantized files
 * 1e-2 for both (q8_0 4.5e-3, q4_0 3.3e-3, the demo model; the files
 * 3.4e-4 / 3.4e-4): the two backends' f16 caches already differ by that
 * floor there (8.5e-4 on the demo, 3.4e-4 on the files), the float files
 * hold the kernels to the tight bound. */
static const double bound_vk_cpu[NKT][2] = {{1e-7, 1e-2}, {1e-8, 1e-2}, {1e-8, 1e-2}, {1e-8, 1e-2}};
static bool vk_present;

static const char *const fixtures[] = {
    "llama-dense-f32",   "llama-dense-q8_0",   "llama-dense-q4_k_m", "llama-moe-f32",      "llama-moe-q8_0",
    "llama-moe-q4_k_m",  "qwen2-dense-f32",    "qwen2-dense-q8_0",   "qwen2-dense-q4_k_m", "qwen3-dense-f32",
    "qwen3-dense-q8_0",  "qwen3-dense-q6_k",   "qwen3-dense-q4_k_m", "qwen3moe-moe-q8_0",  "qwen3moe-moe-q4_k_m",
    "qwen35-dense-f32",  "qwen35-dense-f16",   "qwen35-dense-bf16",  "qwen35-dense-q8_0",  "qwen35-dense-q6_k",
    "qwen35-dense-q5_k_m", "qwen35-dense-q4_k_m", "qwen35-dense-q4_0", "qwen35moe-moe-f32", "qwen35moe-moe-f16",
    "qwen35moe-moe-q8_0", "qwen35moe-moe-q6_k", "qwen35moe-moe-q5_k_m", "qwen35moe-moe-q4_k_m", "qwen35moe-moe-q4_0",
};

/* The tokens: the fixture's golden prompt, continued by its greedy tokens
 * (any valid ids would do; these keep the softmax realistic). */
typedef struct run_in {
    int32_t tok[N_ALL];
    int n_vocab;
} run_in;

/* All N_ALL positions' logits ([N_ALL][n_vocab]) of the model with KV
 * format kt on backend be; when fork is set, also the decode steps run on
 * a copy (seq_copy) of the sequence taken after the prompt, into fork. */
static zn_status run_model(const zn_backend_ops *be, const zn_model *m, zn_kv_type kt, const char *tune,
                           const run_in *in, float *out, float *fork, zn_err *err) {
    zn_graph g;
    void *ctx = NULL, *seq = NULL, *seq2 = NULL;
    zn_status st = graph_init(&g, m, N_PROMPT, err);
    if (st) return st;
    zn_backend_opts o = backend_default_opts();
    o.n_threads = 2;
    o.max_tokens = N_PROMPT;
    o.arena_floats = g.arena_floats;
    o.kv_type = kt;
    o.tune = tune;
    o.lazy_pipelines = true; /* only the few this run takes (seconds less per fixture on lavapipe) */
    st = be->init(&ctx, m, &o, err);
    if (!st) st = be->seq_init(ctx, &seq, N_ALL, err);
    if (!st && fork) st = be->seq_init(ctx, &seq2, N_ALL, err);
    if (!st) st = graph_build(&g, in->tok, N_PROMPT, 0, true, err);
    if (!st) st = be->run(ctx, &seq, &g, err);
    if (!st) st = be->read(ctx, &g, g.logits, 0, N_PROMPT, out, err);
    if (!st && fork) st = be->seq_copy(ctx, seq2, seq, N_PROMPT, err);
    for (int k = 0; k < (fork ? 2 : 1); k++) {
        void *s = k ? seq2 : seq;
        float *dst = k ? fork : out + (size_t)N_PROMPT * in->n_vocab;
        for (int i = 0; !st && i < N_DECODE; i++) {
            st = graph_build(&g, &in->tok[N_PROMPT + i], 1, N_PROMPT + i, false, err);
            if (!st) st = be->run(ctx, &s, &g, err);
            if (!st) st = be->read(ctx, &g, g.logits, 0, 1, dst + (size_t)i * in->n_vocab, err);
        }
    }
    if (seq2) be->seq_free(ctx, seq2);
    if (seq) be->seq_free(ctx, seq);
    if (ctx) be->free(ctx);
    graph_free(&g);
    return st;
}

static double worst_nmse(const float *y, const float *ref, int n_pos, int n_vocab) {
    double w = 0;
    for (int p = 0; p < n_pos; p++) {
        double e = nmse(y + (size_t)p * n_vocab, ref + (size_t)p * n_vocab, n_vocab);
        if (e > w) w = e;
    }
    return w;
}

/* KV bytes one token takes over all attention layers. */
static size_t kv_bytes_per_token(const zn_model *m, zn_kv_type kt) {
    const zn_hparams *hp = &m->hp;
    return (size_t)model_n_attn_layers(m) * (backend_kv_bytes(kt, (int64_t)hp->n_head_kv * hp->head_dim_k) +
                                             backend_kv_bytes(kt, (int64_t)hp->n_head_kv * hp->head_dim_v));
}

/* Weights in f32, f16 or bf16 (the lower bounds). */
static bool float_weights(const char *name) {
    return strstr(name, "-f32") || strstr(name, "-f16") || strstr(name, "-bf16");
}

/* Vulkan with each quantized cache against the CPU with the same one
 * (ycpu: q8_0, q4_0; the same bytes, kv_store.comp rounds as the CPU
 * does, so what differs is the order of the sums and the CPU attention's
 * rounding of the dequantized values to f16) on every file, the 12-row
 * prompt on attn.comp (below fa_min_tok); on the vk_ref files (the
 * attention kernels do not depend on the weights' format; each Vulkan run
 * costs most of a second on lavapipe) also the prompt on attn_fa.comp
 * (fa_min_tok lowered to the prompt, where the head dims allow it) against
 * the CPU, and the cache against Vulkan's own f16 one. */
static void check_vulkan(const char *name, const zn_model *m, const run_in *in, float *const ycpu[NKT], bool vk_ref) {
    const int fq = !float_weights(name);
    const double bounds[NKT][2] = {{bound_q8_0[0], bound_q8_0[1]}, {bound_q4_0[0], bound_q4_0[1]},
                                   {bound_q4_0r[0], bound_q4_0r[1]}, {bound_q3_0r[0], bound_q3_0r[1]}};
    const size_t n = (size_t)N_ALL * in->n_vocab, nd = (size_t)N_DECODE * in->n_vocab;
    const int hd = m->hp.head_dim_k;
    const bool fa = vk_ref && hd == m->hp.head_dim_v && hd >= 64 && hd <= 256 && !(hd & (hd - 1));
    char fa_tune[32];
    snprintf(fa_tune, sizeof fa_tune, "fa_min_tok=%d", N_PROMPT);
    float *vy = malloc(sizeof(float) * n), *vfa = malloc(sizeof(float) * n), *vref = NULL, *fork = malloc(sizeof(float) * nd);
    zn_err err = {0};
    zn_status st = ZN_OK;
    for (int k = 0; !st && k < NKT; k++) {
        const char *kn = backend_kv_type_name(kts[k]);
        st = run_model(&zn_backend_vulkan, m, kts[k], NULL, in, vy, fork, &err);
        CHECK_MSG(!st, "%s vulkan %s: %s", name, kn, err.msg);
        if (st) break;
        const double ec = worst_nmse(vy, ycpu[k], N_ALL, in->n_vocab);
        CHECK_MSG(ec <= bound_vk_cpu[k][fq], "%s: vulkan %s against cpu %s: worst nmse %.3g > %.0e", name, kn, kn, ec,
                  bound_vk_cpu[k][fq]);
        CHECK_MSG(!memcmp(fork, vy + (size_t)N_PROMPT * in->n_vocab, sizeof(float) * nd),
                  "%s vulkan %s: the forked sequence's logits differ", name, kn);
        double ef = -1, efp = -1, e = -1;
        if (fa) {
            st = run_model(&zn_backend_vulkan, m, kts[k], fa_tune, in, vfa, NULL, &err);
            CHECK_MSG(!st, "%s vulkan %s (%s): %s", name, kn, fa_tune, err.msg);
            if (st) break;
            ef = worst_nmse(vfa, ycpu[k], N_ALL, in->n_vocab);
            efp = worst_nmse(vfa, ycpu[k], N_PROMPT, in->n_vocab);
            CHECK_MSG(ef <= bound_vk_cpu[k][fq], "%s: vulkan %s, prompt on attn_fa.comp, against cpu %s: worst nmse %.3g > %.0e",
                      name, kn, kn, ef, bound_vk_cpu[k][fq]);
            /* another kernel sums in another order: a prompt row the same to the bit says it did not run */
            CHECK_MSG(memcmp(vfa, vy, sizeof(float) * (size_t)N_PROMPT * in->n_vocab),
                      "%s vulkan %s: %s left the prompt's logits as they were", name, kn, fa_tune);
        }
        if (vk_ref) {
            if (!vref) {
                vref = malloc(sizeof(float) * n);
                st = run_model(&zn_backend_vulkan, m, ZN_KV_F16, NULL, in, vref, NULL, &err);
                CHECK_MSG(!st, "%s vulkan f16: %s", name, err.msg);
                if (st) break;
            }
            e = worst_nmse(vy, vref, N_ALL, in->n_vocab);
            CHECK_MSG(e <= bounds[k][fq], "%s: vulkan --kv-type %s: worst nmse %.3g > %.0e", name, kn, e, bounds[k][fq]);
        }
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-22s vulkan %-5s vs cpu %s: worst nmse %.3g (prompt %.3g); the prompt on attn_fa.comp: %.3g "
                    "(prompt %.3g); vs vulkan f16 %.3g (-1: not run)\n", name, kn, kn, ec,
                    worst_nmse(vy, ycpu[k], N_PROMPT, in->n_vocab), ef, efp, e);
    }
    free(vy);
    free(vfa);
    free(vref);
    free(fork);
}

/* gold: llama.cpp's logits of the first NPOS tokens (NULL: none), for the
 * verbose table only. */
static void check_model(const char *name, const char *mpath, const run_in *in0, const float *gold, bool vk_ref) {
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return;
    }
    run_in in = *in0;
    in.n_vocab = m.hp.n_vocab;
    const size_t n = (size_t)N_ALL * in.n_vocab;
    float *ref = malloc(sizeof(float) * n), *fork = malloc(sizeof(float) * (size_t)N_DECODE * in.n_vocab);
    zn_status st = run_model(&zn_backend_cpu, &m, ZN_KV_F16, NULL, &in, ref, NULL, &err);
    CHECK_MSG(!st, "%s f16: %s", name, err.msg);
    const int fq = !float_weights(name);
    const double bounds[NKT] = {bound_q8_0[fq], bound_q4_0[fq], bound_q4_0r[fq], bound_q3_0r[fq]};
    const bool verbose = getenv("ZN_TEST_VERBOSE");
    if (!st && verbose && gold)
        fprintf(stderr, "  %-22s f16 KV vs llama.cpp: worst nmse %.3g\n", name, worst_nmse(ref, gold, NPOS, in.n_vocab));
    float *ycpu[NKT];
    for (int k = 0; k < NKT; k++) ycpu[k] = malloc(sizeof(float) * n);
    for (int k = 0; !st && k < NKT; k++) {
        float *y = ycpu[k];
        st = run_model(&zn_backend_cpu, &m, kts[k], NULL, &in, y, fork, &err);
        CHECK_MSG(!st, "%s %s: %s", name, backend_kv_type_name(kts[k]), err.msg);
        if (st) break;
        const double e = worst_nmse(y, ref, N_ALL, in.n_vocab);
        const double ep = worst_nmse(y, ref, N_PROMPT, in.n_vocab);
        CHECK_MSG(e <= bounds[k], "%s: --kv-type %s: worst nmse %.3g > %.0e", name, backend_kv_type_name(kts[k]), e,
                  bounds[k]);
        /* the fork continues bit for bit as the original */
        CHECK_MSG(!memcmp(fork, y + (size_t)N_PROMPT * in.n_vocab, sizeof(float) * (size_t)N_DECODE * in.n_vocab),
                  "%s %s: the forked sequence's logits differ", name, backend_kv_type_name(kts[k]));
        if (verbose)
            fprintf(stderr, "  %-22s hd %3d/%3d  %-5s worst nmse %.3g (prompt %.3g; vs llama.cpp %.3g)  KV %zu B/token (f16 %zu)\n",
                    name, m.hp.head_dim_k, m.hp.head_dim_v, backend_kv_type_name(kts[k]), e, ep,
                    gold ? worst_nmse(y, gold, NPOS, in.n_vocab) : 0.0, kv_bytes_per_token(&m, kts[k]),
                    kv_bytes_per_token(&m, ZN_KV_F16));
    }
    if (!st && vk_present) check_vulkan(name, &m, &in, ycpu, vk_ref);
    for (int k = 0; k < NKT; k++) free(ycpu[k]);
    free(ref);
    free(fork);
    model_free(&m);
}

/* One file per architecture: the f32 one, qwen3moe's q8_0 (it has no f32). */
static bool vk_ref_of(const char *name) {
    return strstr(name, "-f32") || !strcmp(name, "qwen3moe-moe-q8_0");
}

static void test_fixtures(void) {
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        char mpath[512], gpath[512];
        golden_paths(fixtures[i], mpath, gpath, sizeof mpath);
        golden gd = {0};
        if (!golden_load(&gd, gpath)) {
            CHECK_MSG(false, "%s: cannot read golden file", gpath);
            continue;
        }
        run_in in = {0};
        for (int t = 0; t < NPOS; t++) in.tok[t] = gd.prompt[t];
        for (int t = NPOS; t < N_ALL; t++) in.tok[t] = gd.greedy[t - NPOS];
        check_model(fixtures[i], mpath, &in, gd.logits, vk_ref_of(fixtures[i]));
        free(gd.logits);
    }
}

/* The demo model (a Qwen3.5 hybrid: 2 attention layers of 8); any ids
 * below its vocabulary. */
static void test_demo(void) {
    run_in in = {0};
    for (int t = 0; t < N_ALL; t++) in.tok[t] = (int32_t)(17 + 131 * t);
    check_model("zinc-demo-qwen35", "models/zinc-demo-qwen35.gguf", &in, NULL, true);
}

/* More keys than one KV block (ZN_KV_BLOCK, 256): 3 batches of 128 tokens, the
 * last batch's logits (keys 256..383 span two chunks) q8_0 against f16. */
#define LONG_BATCH 128
#define LONG_N 3
static zn_status run_long(const zn_model *m, zn_kv_type kt, float *out, zn_err *err) {
    const zn_backend_ops *be = &zn_backend_cpu;
    zn_graph g;
    void *ctx = NULL, *seq = NULL;
    zn_status st = graph_init(&g, m, LONG_BATCH, err);
    if (st) return st;
    zn_backend_opts o = backend_default_opts();
    o.n_threads = 2;
    o.max_tokens = LONG_BATCH;
    o.arena_floats = g.arena_floats;
    o.kv_type = kt;
    st = be->init(&ctx, m, &o, err);
    if (!st) st = be->seq_init(ctx, &seq, LONG_BATCH * LONG_N, err);
    int32_t tok[LONG_BATCH];
    for (int b = 0; !st && b < LONG_N; b++) {
        for (int t = 0; t < LONG_BATCH; t++) tok[t] = (int32_t)((7 + 37 * (b * LONG_BATCH + t)) % m->hp.n_vocab);
        st = graph_build(&g, tok, LONG_BATCH, b * LONG_BATCH, true, err);
        if (!st) st = be->run(ctx, &seq, &g, err);
    }
    if (!st) st = be->read(ctx, &g, g.logits, 0, LONG_BATCH, out, err);
    if (seq) be->seq_free(ctx, seq);
    if (ctx) be->free(ctx);
    graph_free(&g);
    return st;
}

static void test_long_chunks(void) {
    zn_model m;
    zn_err err = {0};
    char mpath[512], gpath[512];
    golden_paths("qwen3-dense-f32", mpath, gpath, sizeof mpath);
    if (model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return;
    }
    const size_t n = (size_t)LONG_BATCH * m.hp.n_vocab;
    float *ref = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    zn_status st = run_long(&m, ZN_KV_F16, ref, &err);
    if (!st) st = run_long(&m, ZN_KV_Q8_0, y, &err);
    CHECK_MSG(!st, "%s", err.msg);
    if (!st) {
        const double e = worst_nmse(y, ref, LONG_BATCH, m.hp.n_vocab);
        CHECK_MSG(e <= bound_q8_0[0], "positions 256..383: worst nmse %.3g > %.0e", e, bound_q8_0[0]);
        if (getenv("ZN_TEST_VERBOSE")) fprintf(stderr, "  qwen3-dense-f32 positions 256..383 q8_0 worst nmse %.3g\n", e);
    }
    free(ref);
    free(y);
    model_free(&m);
}

/* Head dims that are not whole Q8_0 blocks: refused, naming the model and
 * the dims; f16 still runs. */
static void test_bad_head_dim(void) {
    zn_model m;
    zn_err err = {0};
    char mpath[512], gpath[512];
    golden_paths("llama-dense-f32", mpath, gpath, sizeof mpath);
    if (model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return;
    }
    const int hd = m.hp.head_dim_k;
    m.hp.head_dim_k = hd + 8; /* only the check reads it */
    CHECK(backend_kv_check(&m, ZN_KV_F16, &err) == ZN_OK);
    CHECK(backend_kv_check(&m, ZN_KV_Q8_0, &err) == ZN_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "llama-dense-f32") && strstr(err.msg, "multiples of 32"), "message: %s", err.msg);
    char dims[32];
    snprintf(dims, sizeof dims, "%d", hd + 8);
    CHECK_MSG(strstr(err.msg, dims), "message without the dim %s: %s", dims, err.msg);
    void *ctx = NULL;
    zn_backend_opts o = backend_default_opts();
    o.n_threads = 1;
    o.max_tokens = 1;
    o.arena_floats = 1;
    o.kv_type = ZN_KV_Q4_0;
    CHECK(zn_backend_cpu.init(&ctx, &m, &o, &err) == ZN_ERR_UNSUPPORTED && !ctx);
    err.msg[0] = 0;
    CHECK(zn_backend_vulkan.init(&ctx, &m, &o, &err) == ZN_ERR_UNSUPPORTED && !ctx);
    CHECK_MSG(strstr(err.msg, "multiples of 32") && strstr(err.msg, dims), "vulkan's message: %s", err.msg);
    /* q4_0r: a multiple of 32 that is not a power of two (96) */
    m.hp.head_dim_k = 96;
    err.msg[0] = 0;
    CHECK(backend_kv_check(&m, ZN_KV_Q4_0, &err) == ZN_OK);
    CHECK(backend_kv_check(&m, ZN_KV_Q4_0R, &err) == ZN_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "llama-dense-f32") && strstr(err.msg, "powers of two") && strstr(err.msg, "96"),
              "message: %s", err.msg);
    o.kv_type = ZN_KV_Q4_0R;
    CHECK(zn_backend_cpu.init(&ctx, &m, &o, &err) == ZN_ERR_UNSUPPORTED && !ctx);
    m.hp.head_dim_k = hd;
    CHECK_EQ_INT(backend_kv_type_parse("q4_0r"), ZN_KV_Q4_0R);
    CHECK_EQ_INT(backend_kv_bytes(ZN_KV_Q4_0R, 64), 36);
    CHECK_EQ_INT(backend_kv_type_parse("q8_0"), ZN_KV_Q8_0);
    CHECK_EQ_INT(backend_kv_type_parse("q4_0"), ZN_KV_Q4_0);
    CHECK_EQ_INT(backend_kv_type_parse("f16"), ZN_KV_F16);
    CHECK_EQ_INT(backend_kv_type_parse("q8"), -1);
    CHECK_EQ_INT(backend_kv_bytes(ZN_KV_Q8_0, 64), 68);
    CHECK_EQ_INT(backend_kv_bytes(ZN_KV_Q4_0, 64), 36);
    CHECK_EQ_INT(backend_kv_bytes(ZN_KV_F16, 64), 128);
    model_free(&m);
}

/* The rotation of q4_0r (backend_kv_rotate) on its own: orthogonal (norms
 * and dot products kept, the inverse undoes it) at every head dim it
 * takes; and it does what it is for: a head with one outlier channel (a
 * value 50x the others, as real models' keys have) loses far less to Q4_0
 * rounding rotated than as is. */
static void fill(float *x, int n, float seed) { /* values in [-1, 1), a fixed sequence per seed */
    uint32_t h = (uint32_t)(seed * 7919.0f) + 12345u;
    for (int i = 0; i < n; i++) h = h * 1664525u + 1013904223u, x[i] = (float)(h >> 8) / (float)(1u << 23) - 1.0f;
}

static void test_rotation(void) {
    static float a[ZN_KV_ROT_MAX_HD], b[ZN_KV_ROT_MAX_HD], a0[ZN_KV_ROT_MAX_HD], b0[ZN_KV_ROT_MAX_HD];
    for (int hd = 32; hd <= ZN_KV_ROT_MAX_HD; hd *= 2) {
        fill(a0, hd, 1.0f);
        fill(b0, hd, 2.0f);
        memcpy(a, a0, sizeof(float) * hd);
        memcpy(b, b0, sizeof(float) * hd);
        backend_kv_rotate(a, hd, false);
        backend_kv_rotate(b, hd, false);
        double d0 = 0, d1 = 0, n0 = 0, n1 = 0, moved = 0;
        for (int i = 0; i < hd; i++) {
            d0 += (double)a0[i] * b0[i], d1 += (double)a[i] * b[i];
            n0 += (double)a0[i] * a0[i], n1 += (double)a[i] * a[i];
            moved += fabs((double)a[i] - a0[i]);
        }
        CHECK_MSG(fabs(d1 - d0) <= 1e-5 * sqrt(n0 * n0) && fabs(n1 - n0) <= 1e-5 * n0 && moved > 0.1 * hd * 0.1,
                  "hd %d: dot %.9g -> %.9g, norm^2 %.9g -> %.9g, moved %.3g", hd, d0, d1, n0, n1, moved);
        backend_kv_rotate(a, hd, true);
        double back = 0;
        for (int i = 0; i < hd; i++) back = fmax(back, fabs((double)a[i] - a0[i]));
        CHECK_MSG(back <= 1e-6, "hd %d: inverse off by %.3g", hd, back);
    }
    const int hd = 128;
    fill(a0, hd, 1.0f);
    a0[37] = 50.0f;
    uint8_t q[ZN_KV_ROT_MAX_HD];
    double err[2];
    for (int r = 0; r < 2; r++) {
        backend_kv_put(r ? ZN_KV_Q4_0R : ZN_KV_Q4_0, a0, q, hd, hd);
        backend_kv_dequantize(ZN_KV_Q4_0, q, a, hd);
        if (r) backend_kv_rotate(a, hd, true);
        double e = 0, n = 0;
        for (int i = 0; i < hd; i++) e += ((double)a[i] - a0[i]) * ((double)a[i] - a0[i]), n += (double)a0[i] * a0[i];
        err[r] = e / n;
    }
    CHECK_MSG(err[1] < 0.5 * err[0], "a head with an outlier: Q4_0 nmse %.3g, rotated %.3g", err[0], err[1]);
    if (getenv("ZN_TEST_VERBOSE")) fprintf(stderr, "  outlier head: q4_0 nmse %.3g, q4_0r %.3g\n", err[0], err[1]);
}

int main(void) {
    vkdev d;
    zn_err err = {0};
    vk_present = vkdev_open(&d, -1, &err) == ZN_OK;
    if (vk_present) vkdev_close(&d);
    else fprintf(stderr, "kv_quant: no usable Vulkan device (%s): the CPU backend only\n", err.msg);
    RUN(test_fixtures);
    RUN(test_demo);
    RUN(test_long_chunks);
    RUN(test_bad_head_dim);
    RUN(test_rotation);
    return harness_report("kv_quant");
}
