/* Every tiny fixture through the Vulkan backend against llama.cpp's golden
 * logits (../shared/models/tiny/X.golden.json): normalised MSE per prompt
 * position within the bounds (1e-5 F32, 1e-4 F16/BF16, 1e-3
 * quantized) and, for F32 files, the 16 greedy tokens (decode steps, so the
 * single-token kernels and the cache/state hand-over are checked on every
 * architecture). Drives the backend
 * directly through graph.h, one prompt batch then one decode step per
 * token. No Vulkan device: the suite is skipped. */
#include "backend.h"
#include "golden.h"
#include "graph.h"
#include "model.h"
#include "vk_absent.h"

/* No Vulkan device to open here: the suite is skipped (any failure after
 * a device opened is a failure). */
/* The fixture on a backend set up by o (max_tokens and arena set here). */
static void check_fixture_with(const char *name, double tol, bool check_greedy, zn_backend_opts o) {
    char mpath[512], gpath[512];
    snprintf(mpath, sizeof mpath, "%s", shared_path("models/tiny/"));
    strncat(mpath, name, sizeof mpath - strlen(mpath) - 8);
    snprintf(gpath, sizeof gpath, "%s", mpath);
    strcat(mpath, ".gguf");
    strcat(gpath, ".golden.json");
    golden gd = {0};
    zn_model m;
    zn_err err = {0};
    if (!golden_load(&gd, gpath)) {
        CHECK_MSG(false, "%s: cannot read golden file", gpath);
        return;
    }
    if (model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        free(gd.logits);
        return;
    }
    const zn_backend_ops *be = &zn_backend_vulkan;
    zn_graph g;
    void *ctx = NULL, *seq = NULL;
    zn_status st = graph_init(&g, &m, NPOS, &err);
    o.n_threads = 1;
    o.max_tokens = NPOS;
    o.arena_floats = g.arena_floats;
    if (!st) st = be->init(&ctx, &m, &o, &err);
    if (!st) st = be->seq_init(ctx, &seq, 2 * NPOS + 1, &err);
    float *logits = malloc(sizeof(float) * NPOS * (size_t)gd.n_vocab);
    if (!st) st = graph_build(&g, gd.prompt, NPOS, 0, true, &err);
    if (!st) st = be->run(ctx, &seq, &g, &err);
    if (!st) st = be->read(ctx, &g, g.logits, 0, NPOS, logits, &err);
    CHECK_MSG(!st, "%s: %s", name, err.msg);
    double worst = 0;
    for (int p = 0; !st && p < NPOS; p++) {
        double e = nmse(logits + (size_t)p * gd.n_vocab, gd.logits + (size_t)p * gd.n_vocab, gd.n_vocab);
        if (e > worst) worst = e;
    }
    if (!st) CHECK_MSG(worst <= tol, "%s: worst prompt nmse %.3g > %.0e", name, worst, tol);
    if (!st && getenv("ZN_TEST_VERBOSE")) fprintf(stderr, "  %-24s worst nmse %.3g\n", name, worst);
    /* greedy (F32 files): one decode step per token after the prompt */
    int tok = st ? 0 : argmax(logits + (size_t)(NPOS - 1) * gd.n_vocab, gd.n_vocab), match = 0;
    for (int i = 0; !st && check_greedy && i < NPOS; i++) {
        if (tok != gd.greedy[i]) break;
        match++;
        int32_t t = tok;
        st = graph_build(&g, &t, 1, NPOS + i, false, &err);
        if (!st) st = be->run(ctx, &seq, &g, &err);
        if (!st) st = be->read(ctx, &g, g.logits, 0, 1, logits, &err);
        if (!st) tok = argmax(logits, gd.n_vocab);
    }
    CHECK_MSG(!st, "%s: decode: %s", name, err.msg);
    if (check_greedy && !st) CHECK_MSG(match == NPOS, "%s: greedy tokens: %d of %d match", name, match, NPOS);
    free(logits);
    if (seq) be->seq_free(ctx, seq);
    if (ctx) be->free(ctx);
    graph_free(&g);
    model_free(&m);
    free(gd.logits);
}

static void check_fixture(const char *name, double tol, bool check_greedy) {
    check_fixture_with(name, tol, check_greedy, backend_default_opts());
}

/* Options with one test hook set. */
static zn_backend_opts max_alloc(uint64_t bytes) {
    zn_backend_opts o = backend_default_opts();
    o.max_alloc = bytes;
    return o;
}
static zn_backend_opts no_fusion(void) {
    zn_backend_opts o = backend_default_opts();
    o.no_fusion = true;
    return o;
}
static zn_backend_opts emulate(void) {
    zn_backend_opts o = backend_default_opts();
    o.mm_emulate = true;
    return o;
}
/* The f16 GEMM path with the weights dequantised into the scratch first
 * (mm_prep.comp) rather than in its tile loads (the default). */
static zn_backend_opts emulate_prep(void) {
    zn_backend_opts o = emulate();
    o.tune = "mm_prep_tok=1,moe_prep_tok=1";
    return o;
}

#define F32 1e-5
#define F16 1e-4
#define QNT 1e-3

static void test_llama(void) {
    check_fixture("llama-dense-f32", F32, true);
    /* weights split by rows across allocations of at most 200 kB (the FFN
     * matrices and the output take 3 chunks each): same results */
    check_fixture_with("llama-dense-f32", F32, true, max_alloc(200000));
    /* every node on its own: the fusions (norm / SwiGLU into the mat-vec
     * that reads them) change nothing beyond rounding */
    check_fixture_with("llama-dense-f32", F32, true, no_fusion());
    check_fixture("llama-dense-q8_0", QNT, false);
    check_fixture("llama-dense-q4_k_m", QNT, false);
    /* the prompt through the f16 GEMM path (emulated without cooperative
     * matrices): f16 operands, same bound */
    check_fixture_with("llama-dense-q4_k_m", QNT, false, emulate());
    check_fixture_with("llama-dense-q4_k_m", QNT, false, emulate_prep());
}
static void test_llama_moe(void) {
    check_fixture("llama-moe-f32", F32, true);
    check_fixture("llama-moe-q8_0", QNT, false);
    check_fixture("llama-moe-q4_k_m", QNT, false);
    /* the experts of the prompt as one grouped GEMM (f16 path) */
    check_fixture_with("llama-moe-q8_0", QNT, false, emulate());
}
static void test_qwen2(void) {
    check_fixture("qwen2-dense-f32", F32, true);
    check_fixture("qwen2-dense-q8_0", QNT, false);
    check_fixture("qwen2-dense-q4_k_m", QNT, false);
}
static void test_qwen3(void) {
    check_fixture("qwen3-dense-f32", F32, true);
    check_fixture("qwen3-dense-q8_0", QNT, false);
    check_fixture("qwen3-dense-q6_k", QNT, false);
    check_fixture("qwen3-dense-q4_k_m", QNT, false);
}
static void test_qwen3moe(void) {
    check_fixture("qwen3moe-moe-q8_0", QNT, false);
    check_fixture("qwen3moe-moe-q4_k_m", QNT, false);
}

static void test_qwen35(void) {
    check_fixture("qwen35-dense-f32", F32, true);
    check_fixture("qwen35-dense-f16", F16, false);
    check_fixture("qwen35-dense-bf16", F16, false);
    check_fixture("qwen35-dense-q8_0", QNT, false);
    check_fixture("qwen35-dense-q6_k", QNT, false);
    check_fixture("qwen35-dense-q5_k_m", QNT, false);
    check_fixture("qwen35-dense-q4_k_m", QNT, false);
    check_fixture("qwen35-dense-q4_0", QNT, false);
}
static void test_qwen35moe(void) {
    check_fixture("qwen35moe-moe-f32", F32, true);
    check_fixture("qwen35moe-moe-f16", F16, false);
    check_fixture("qwen35moe-moe-q8_0", QNT, false);
    check_fixture("qwen35moe-moe-q6_k", QNT, false);
    check_fixture("qwen35moe-moe-q5_k_m", QNT, false);
    check_fixture("qwen35moe-moe-q4_k_m", QNT, false);
    check_fixture("qwen35moe-moe-q4_0", QNT, false);
    check_fixture_with("qwen35moe-moe-q4_k_m", QNT, false, emulate());
    check_fixture_with("qwen35moe-moe-q4_k_m", QNT, false, emulate_prep());
    check_fixture_with("qwen35moe-moe-f16", F16, false, emulate());
}

int main(void) {
    char why[sizeof(zn_err) + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("vk_golden", why);
        return harness_report("vk_golden");
    }
    RUN(test_llama);
    RUN(test_llama_moe);
    RUN(test_qwen2);
    RUN(test_qwen3);
    RUN(test_qwen3moe);
    RUN(test_qwen35);
    RUN(test_qwen35moe);
    return harness_report("vk_golden");
}
