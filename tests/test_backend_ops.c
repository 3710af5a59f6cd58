/* Backend conformance: every graph op (a loop over ZN_OP_COUNT: an op
 * without cases fails) as small hand-built graphs, run on the CPU backend
 * (the reference) and on the Vulkan backend through the backend interface
 * only (backend.h: init with the graph's weights, write the inputs, run,
 * read), and compared by normalised error, nmse = sum (vk - cpu)^2 / sum
 * cpu^2, against a bound per op (and weight type) stated with each case.
 * Sizes are odd on purpose (rows and columns that are no multiple of a
 * block, workgroup or tile; token counts on both sides of the kernel
 * thresholds); the matmul ops run every weight type. Stateful ops (KV
 * cache, recurrent state) run as several steps of one sequence, each step's
 * output compared. Then the fusions the Vulkan planner makes, as the short
 * node sequences the architectures produce, with fusion on and off.
 *
 * Each Vulkan case runs under the engine configurations that change which
 * kernel it takes (the f16 GEMM path, the float mat-vec, quantx), set
 * through the backend's options (tuning overrides and test hooks). No
 * Vulkan device: the suite is skipped. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "graph.h"
#include "harness.h"
#include "quant.h"

/* ---- data ---- */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static int irand(int n) { return (int)((frand() + 1.0f) * 0.5f * (float)n) % n; }

/* ---- a case: a model holding only what backends read, its weights, the steps of one sequence ---- */

#define TC_TENSORS 64
#define TC_STEPS 128
#define TC_INPUTS 6
#define TC_BLOBS 512
#define TC_NODES 16

typedef struct step {
    char what[96];                /* for messages */
    double tol;                   /* nmse bound of its output */
    zn_graph g;
    int n_in, in[TC_INPUTS];
    const float *in_data[TC_INPUTS];
    int out;
    int32_t *tokens;
} step;

/* Steps of one sequence on one backend instance (one init per
 * configuration: they are what makes Vulkan runs slow on lavapipe, so one
 * case holds as many steps as share a model). */
typedef struct tcase {
    char name[64];
    zn_model m;
    zn_layer layers[1];
    gguf_tensor t[TC_TENSORS];
    step s[TC_STEPS];
    zn_graph prep;                /* every step's nodes: the weights backends prepare at init */
    int n_steps, n_ctx, max_tokens;
    void *blob[TC_BLOBS];
    int n_blob;
} tcase;

static void *tc_alloc(tcase *tc, size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p || tc->n_blob == TC_BLOBS) abort();
    tc->blob[tc->n_blob++] = p;
    return p;
}

/* A one-layer model: attention (or recurrent) sizes as the case sets them. */
static tcase *tc_new(int max_tokens, const char *name) {
    tcase *tc = calloc(1, sizeof *tc);
    if (!tc) abort();
    snprintf(tc->name, sizeof tc->name, "%s", name);
    tc->max_tokens = max_tokens;
    tc->n_ctx = 64;
    tc->m.layers = tc->layers;
    tc->m.gguf.tensors = tc->t;
    zn_hparams *hp = &tc->m.hp;
    hp->n_layer = 1;
    hp->n_vocab = 64;
    hp->n_embd = 64;
    hp->n_head = hp->n_head_kv = 1;
    hp->head_dim_k = hp->head_dim_v = 64;
    hp->n_rot = 64;
    hp->rms_eps = 1e-6f;
    return tc;
}

static void tc_free(tcase *tc) {
    for (int i = 0; i < tc->n_steps; i++) graph_free(&tc->s[i].g);
    graph_free(&tc->prep);
    for (int i = 0; i < tc->n_blob; i++) free(tc->blob[i]);
    free(tc);
}

static float *tc_floats(tcase *tc, size_t n, float lo, float hi) {
    float *v = tc_alloc(tc, sizeof *v * n);
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * 0.5f * (frand() + 1.0f);
    return v;
}

static gguf_tensor *tc_tensor(tcase *tc, zn_type type, int64_t ne0, int64_t ne1, int64_t ne2, const void *data) {
    if (tc->m.gguf.n_tensors == TC_TENSORS) abort();
    gguf_tensor *t = &tc->t[tc->m.gguf.n_tensors++];
    *t = (gguf_tensor){.name = "w", .n_dims = 3, .ne = {(uint64_t)ne0, (uint64_t)ne1, (uint64_t)ne2, 1},
                       .type = type, .data = data};
    t->nbytes = zn_row_size(type, ne0) * (size_t)(ne1 * ne2);
    return t;
}

/* Random weights of any type: uniform f32 rows times scale, quantised. */
static gguf_tensor *tc_weight(tcase *tc, zn_type type, int64_t ne0, int64_t ne1, int64_t ne2, float scale) {
    const int64_t rows = ne1 * ne2;
    const size_t rb = zn_row_size(type, ne0);
    uint8_t *q = tc_alloc(tc, rb * (size_t)rows);
    float *f = tc_floats(tc, (size_t)ne0, -scale, scale);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < ne0; i++) f[i] = scale * frand();
        quant_quantize_row(type, f, q + rb * (size_t)r, ne0);
    }
    return tc_tensor(tc, type, ne0, ne1, ne2, q);
}

static gguf_tensor *tc_f32(tcase *tc, int64_t n, float lo, float hi) {
    return tc_tensor(tc, ZN_TYPE_F32, n, 1, 1, tc_floats(tc, (size_t)n, lo, hi));
}

/* A new step of the sequence: n_tokens at position n_past, its output
 * within nmse tol of the CPU's. */
static step *tc_step(tcase *tc, int n_tokens, int n_past, double tol, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static step *tc_step(tcase *tc, int n_tokens, int n_past, double tol, const char *fmt, ...) {
    if (tc->n_steps == TC_STEPS) abort();
    step *s = &tc->s[tc->n_steps++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->what, sizeof s->what, fmt, ap);
    va_end(ap);
    s->tol = tol;
    zn_err err = {0};
    if (graph_init_empty(&s->g, &tc->m, tc->max_tokens, TC_NODES, TC_NODES, &err)) {
        fprintf(stderr, "  %s: %s\n", tc->name, err.msg);
        abort();
    }
    s->tokens = tc_alloc(tc, sizeof(int32_t) * (size_t)n_tokens);
    graph_set_step(&s->g, s->tokens, n_tokens, n_past);
    if (n_past + n_tokens > tc->n_ctx) tc->n_ctx = n_past + n_tokens;
    return s;
}

static int st_input_data(tcase *tc, step *s, int rows, int cols, const float *data) {
    (void)tc;
    if (s->n_in == TC_INPUTS) abort();
    const int a = graph_input(&s->g, rows, cols);
    s->in[s->n_in] = a;
    s->in_data[s->n_in++] = data;
    return a;
}

static int st_input(tcase *tc, step *s, int rows, int cols, float lo, float hi) {
    return st_input_data(tc, s, rows, cols, tc_floats(tc, (size_t)rows * (size_t)cols, lo, hi));
}

static zn_node *st_node(step *s, zn_op op, int dst, int src0, int src1, int src2) {
    zn_node *n = graph_node(&s->g, op, dst, graph_op_name(op), 0);
    n->src[0] = src0;
    n->src[1] = src1;
    n->src[2] = src2;
    return n;
}

static void st_finish(tcase *tc, step *s, int out) {
    zn_err err = {0};
    s->out = out;
    if (graph_finish(&s->g, out, &err)) {
        fprintf(stderr, "  %s: %s\n", tc->name, err.msg);
        abort();
    }
}

/* ---- running ---- */

/* Kernel-choosing configurations of the Vulkan backend: tuning overrides
 * and test hooks of its options. A configuration that must change some
 * result of a case (another kernel, another rounding of x) is checked to:
 * a setting the backend stopped reading fails. */
typedef struct vkcfg {
    const char *name;
    const char *tune;          /* NULL: the device's tuning */
    bool mm_emulate, no_fusion;
    bool changes;
    bool same;                 /* every result bit for bit as under the first configuration */
} vkcfg;
static const vkcfg CFG_DEFAULT = {"default", NULL, false, false, false, false};
static const vkcfg CFG_GEMM = {"gemm", NULL, true, false, false, false}; /* f16 GEMM path from 2 tokens, emulated
                                                                   where there are no cooperative matrices */
/* the same, where steps of 2-4 tokens on a matrix of 128+ rows are in the
 * case: every device runs those on the mat-vec by default */
static const vkcfg CFG_GEMM_MM = {"gemm", NULL, true, false, true, false};
static const vkcfg CFG_MVFLOAT = {"mvfloat", "intdot=off", false, false, false, false}; /* float mat-vec for every type */
static const vkcfg CFG_QUANTX = {"quantx", "mvx=off", false, false, false, false};     /* x quantised by its own dispatch */
static const vkcfg CFG_NOFUSE = {"nofuse", NULL, false, true, false, false};
static const vkcfg CFG_NOFUSE_SAME = {"nofuse", NULL, false, true, false, true};

/* The graph backends prepare: every step's nodes and activations side by
 * side (never run; init reads its weights, shapes and capacity). */
static void tc_prep(tcase *tc) {
    int nodes = 0, acts = 0;
    for (int i = 0; i < tc->n_steps; i++) nodes += tc->s[i].g.n_nodes, acts += tc->s[i].g.n_acts;
    zn_err err = {0};
    zn_graph *p = &tc->prep;
    if (graph_init_empty(p, &tc->m, tc->max_tokens, nodes, acts, &err)) {
        fprintf(stderr, "  %s: %s\n", tc->name, err.msg);
        abort();
    }
    for (int i = 0; i < tc->n_steps; i++) {
        const zn_graph *g = &tc->s[i].g;
        const int base = p->n_acts;
        for (int a = 0; a < g->n_acts; a++) graph_act(p, g->acts[a].rows, g->acts[a].cols);
        for (int k = 0; k < g->n_nodes; k++) {
            const zn_node *from = &g->nodes[k];
            zn_node *n = graph_node(p, from->op, from->dst + base, from->tag, from->layer);
            *n = *from;
            n->dst += base;
            for (int j = 0; j < ZN_NODE_SRC; j++) n->src[j] += n->src[j] >= 0 ? base : 0;
        }
    }
    if (graph_finish(p, p->n_acts - 1, &err)) {
        fprintf(stderr, "  %s: %s\n", tc->name, err.msg);
        abort();
    }
}

/* Runs every step of tc on backend be; outs[i] gets step i's output.
 * ZN_OK, or the first failure (err says where). */
static zn_status run_case_cfg(const zn_backend_ops *be, tcase *tc, const vkcfg *cfg, float **outs, zn_err *err) {
    size_t arena = 1;
    for (int i = 0; i < tc->n_steps; i++)
        if (tc->s[i].g.arena_floats > arena) arena = tc->s[i].g.arena_floats;
    if (!tc->prep.nodes) tc_prep(tc);
    zn_backend_opts o = {.n_threads = 2, .max_tokens = tc->max_tokens, .arena_floats = arena, .graph = &tc->prep,
                         .device = -1};
    if (cfg) o.tune = cfg->tune, o.mm_emulate = cfg->mm_emulate, o.no_fusion = cfg->no_fusion;
    void *ctx = NULL, *seq = NULL;
    zn_status st = be->init(&ctx, &tc->m, &o, err);
    if (!st) st = be->seq_init(ctx, &seq, tc->n_ctx, err);
    for (int i = 0; i < tc->n_steps && !st; i++) {
        const step *s = &tc->s[i];
        for (int k = 0; k < s->n_in && !st; k++) st = be->write(ctx, &s->g, s->in[k], s->in_data[k], err);
        if (!st) st = be->run(ctx, &seq, &s->g, err);
        if (!st) st = be->read(ctx, &s->g, s->out, 0, s->g.acts[s->out].rows, outs[i], err);
        if (st) zn_err_prefix(err, "step %d (%s)", i, s->what);
    }
    if (seq) be->seq_free(ctx, seq);
    if (ctx) be->free(ctx);
    return st;
}

static zn_status run_case(const zn_backend_ops *be, tcase *tc, float **outs, zn_err *err) {
    return run_case_cfg(be, tc, NULL, outs, err);
}

static double nmse(const float *y, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i])) return INFINITY;
        const double e = (double)y[i] - ref[i];
        num += e * e;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

/* Per op: graphs and Vulkan backends run, the worst error relative to its bound. */
static struct tally {
    double t0;
    int graphs, runs;
    double worst, worst_ratio;
    char worst_name[160];
} T;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void tally_reset(void) {
    memset(&T, 0, sizeof T);
    T.t0 = now_s();
}
static void tally_print(const char *what) {
    fprintf(stderr, "  %-13s %3d graphs, %2d Vulkan inits, %5.1f s, worst nmse %.2e (%.0f%% of its bound: %s)\n",
            what, T.graphs, T.runs, now_s() - T.t0, T.worst, 100.0 * T.worst_ratio, T.worst_name);
}

/* The case on the CPU, then on Vulkan under each configuration: every
 * step's output within its bound of the CPU's. Frees tc. */
static void check_case(tcase *tc, const vkcfg *const *cfgs, int n_cfg) {
    float *cpu[TC_STEPS], *vk[TC_STEPS];
    size_t n[TC_STEPS];
    for (int i = 0; i < tc->n_steps; i++) {
        const zn_act *a = &tc->s[i].g.acts[tc->s[i].out];
        n[i] = (size_t)a->rows * (size_t)a->cols;
        cpu[i] = tc_alloc(tc, sizeof(float) * n[i]);
        vk[i] = tc_alloc(tc, sizeof(float) * n[i]);
    }
    zn_err err = {0};
    zn_status st = run_case(&zn_backend_cpu, tc, cpu, &err);
    CHECK_MSG(!st, "%s: cpu: %s", tc->name, err.msg);
    T.graphs += tc->n_steps;
    float *first[TC_STEPS] = {0}; /* the first configuration's outputs */
    for (int c = 0; c < n_cfg && !st; c++) {
        for (int i = 0; i < tc->n_steps; i++) {
            if (c == 1) first[i] = memcpy(tc_alloc(tc, sizeof(float) * n[i]), vk[i], sizeof(float) * n[i]);
            for (size_t j = 0; j < n[i]; j++) vk[i][j] = NAN; /* an output never read back fails */
        }
        zn_status vs = run_case_cfg(&zn_backend_vulkan, tc, cfgs[c], vk, &err);
        T.runs++;
        CHECK_MSG(!vs, "%s [%s]: vulkan: %s", tc->name, cfgs[c]->name, err.msg);
        for (int i = 0; i < tc->n_steps && !vs; i++) {
            const step *s = &tc->s[i];
            const double e = nmse(vk[i], cpu[i], n[i]);
            CHECK_MSG(e <= s->tol, "%s [%s] step %d, %s (%d tokens at %d): nmse %.3g > %.3g", tc->name, cfgs[c]->name, i,
                      s->what, s->g.n_tokens, s->g.n_past, e, s->tol);
            const double ratio = s->tol > 0 ? e / s->tol : e > 0 ? INFINITY : 0;
            if (e > T.worst) T.worst = e;
            if (ratio > T.worst_ratio || !T.worst_name[0]) {
                T.worst_ratio = ratio;
                snprintf(T.worst_name, sizeof T.worst_name, "%s, %d tokens [%s]", s->what, s->g.n_tokens, cfgs[c]->name);
            }
        }
        bool same = true;
        for (int i = 0; i < tc->n_steps && c > 0 && !vs; i++) same &= !memcmp(first[i], vk[i], sizeof(float) * n[i]);
        CHECK_MSG(vs || c == 0 || !cfgs[c]->changes || !same, "%s [%s]: every result as under [%s]: the setting had no effect",
                  tc->name, cfgs[c]->name, cfgs[0]->name);
        CHECK_MSG(vs || c == 0 || !cfgs[c]->same || same, "%s [%s]: results differ from [%s] in their bits", tc->name,
                  cfgs[c]->name, cfgs[0]->name);
    }
    tc_free(tc);
}

static void check1(tcase *tc, const vkcfg *cfg) { check_case(tc, &cfg, 1); }

/* The types each backend runs. Vulkan runs these (its init refuses the
 * others with an error naming the type: checked below). */
static bool vk_type(zn_type t) {
    return t == ZN_TYPE_F32 || t == ZN_TYPE_F16 || t == ZN_TYPE_BF16 || t == ZN_TYPE_Q4_0 || t == ZN_TYPE_Q8_0 ||
           t == ZN_TYPE_Q4_K || t == ZN_TYPE_Q5_K || t == ZN_TYPE_Q6_K;
}
static bool cpu_type(int t) { return zn_type_get((uint32_t)t) && quant_supported((zn_type)t) && t != ZN_TYPE_Q8_K; }
static int block_of(zn_type t) { return (int)zn_type_get(t)->blck; }
static bool float_type(zn_type t) { return t == ZN_TYPE_F32 || t == ZN_TYPE_F16 || t == ZN_TYPE_BF16; }

/* Error bounds of the matmul ops by weight type. The CPU multiplies
 * quantised weights by x quantised to 8 bits (Q8_0 / Q8_K), F16 weights by
 * x in f16; the Vulkan integer mat-vec quantises x to 8 bits per 32
 * values, its float kernels and the f16 GEMM path round x to f16 (GEMM) or
 * not at all: two different roundings of x, each ~1e-5 relative squared
 * for 8 bits. Float weights: summation order and f16 rounding of x only. */
static double mm_tol(zn_type t) {
    if (t == ZN_TYPE_F32) return 1e-6; /* the GEMM path rounds x to f16 */
    if (t == ZN_TYPE_F16 || t == ZN_TYPE_BF16) return 2e-6;
    return 2e-4;
}
/* Two quantised matmuls in a row (gate/up, then down): the first one's
 * error enters the second's x, and SwiGLU amplifies it. */
static double mm2_tol(zn_type t) { return float_type(t) ? 4 * mm_tol(t) : 1e-3; }

/* ---- cases per op ---- */

static void cases_embed(void) {
    tcase *tc = tc_new(8, "embed");
    const int vocab = 37;
    tc->m.hp.n_vocab = vocab;
    for (int t = 0; t < ZN_TYPE_COUNT; t++) {
        if (!cpu_type(t) || !vk_type((zn_type)t)) continue;
        const zn_type type = (zn_type)t;
        /* 3 blocks (odd) of the quantised types; 97 columns of the float ones */
        const int cols = float_type(type) ? 97 : 3 * block_of(type);
        gguf_tensor *w = tc_weight(tc, type, cols, vocab, 1, 1.0f);
        const int counts[2] = {5, 1};
        for (int k = 0; k < 2; k++) {
            /* dequantisation: exact up to the order of one multiply-add */
            step *s = tc_step(tc, counts[k], 0, 1e-12, "embed %s %d x %d", zn_type_name(type), vocab, cols);
            for (int i = 0; i < counts[k]; i++) s->tokens[i] = irand(vocab);
            s->tokens[0] = vocab - 1;
            const int y = graph_act(&s->g, counts[k], cols);
            st_node(s, ZN_OP_EMBED, y, -1, -1, -1)->w[0] = w;
            st_finish(tc, s, y);
        }
    }
    check1(tc, &CFG_DEFAULT);
}

static void cases_rmsnorm(void) {
    /* whole rows (4099 columns: no multiple of any workgroup), with and
     * without weight; per head (5 heads of 64, 3 of 128); a short row */
    const struct { int cols, group, weight; } sh[] = {{4099, 4099, 1}, {4099, 4099, 0}, {320, 64, 1}, {384, 128, 1}, {17, 17, 1}};
    tcase *tc = tc_new(8, "rmsnorm");
    for (size_t c = 0; c < sizeof sh / sizeof sh[0]; c++) {
        gguf_tensor *w = sh[c].weight ? tc_f32(tc, sh[c].group, -2.0f, 2.0f) : NULL;
        const int counts[2] = {7, 1};
        for (int k = 0; k < 2; k++) {
            step *s = tc_step(tc, counts[k], 0, 1e-11, "rmsnorm %d cols, groups of %d%s", sh[c].cols, sh[c].group,
                              sh[c].weight ? ", weight" : "");
            const int x = st_input(tc, s, counts[k], sh[c].cols, -3.0f, 3.0f), y = graph_act(&s->g, counts[k], sh[c].cols);
            zn_node *n = st_node(s, ZN_OP_RMSNORM, y, x, -1, -1);
            n->w[0] = w;
            n->norm = (zn_norm_params){.group = sh[c].group, .eps = 1e-5f};
            st_finish(tc, s, y);
        }
    }
    check1(tc, &CFG_DEFAULT);
}

/* A weight of `type`, rows x cols, with bias and scale; one-node steps of
 * the token counts given (1: the mat-vec; several: the GEMM under
 * CFG_GEMM) with bias, scale and their order varied. */
static void matmul_steps(tcase *tc, zn_type type, int rows, int cols, const int *counts, int n_counts) {
    gguf_tensor *w = tc_weight(tc, type, cols, rows, 1, 1.0f);
    gguf_tensor *b = tc_f32(tc, rows, -1.0f, 1.0f), *s1 = tc_f32(tc, 1, 0.5f, 1.5f);
    for (int k = 0; k < n_counts; k++) {
        step *s = tc_step(tc, counts[k], 0, mm_tol(type), "matmul %s %d x %d%s%s%s", zn_type_name(type), rows, cols,
                          k % 3 != 2 ? ", bias" : "", k % 3 != 1 ? ", scale" : "", k % 2 ? ", bias first" : "");
        const int x = st_input(tc, s, counts[k], cols, -1.0f, 1.0f), y = graph_act(&s->g, counts[k], rows);
        zn_node *n = st_node(s, ZN_OP_MATMUL, y, x, -1, -1);
        n->w[0] = w;
        n->w[1] = k % 3 != 2 ? b : NULL;
        n->w[2] = k % 3 != 1 ? s1 : NULL;
        n->matmul.bias_first = k % 2;
        st_finish(tc, s, y);
    }
}

/* A type the CPU runs and Vulkan does not: its init must refuse the
 * weight with an error naming the type. */
static void refused_type(zn_type type) {
    tcase *tc = tc_new(4, "matmul (CPU only)");
    const int cols = 2 * block_of(type);
    gguf_tensor *w = tc_weight(tc, type, cols, 3, 1, 1.0f);
    step *s = tc_step(tc, 1, 0, 0, "matmul %s", zn_type_name(type));
    const int x = st_input(tc, s, 1, cols, -1.0f, 1.0f), y = graph_act(&s->g, 1, 3);
    st_node(s, ZN_OP_MATMUL, y, x, -1, -1)->w[0] = w;
    st_finish(tc, s, y);
    float out[3], *outs[1] = {out};
    zn_err err = {0};
    CHECK_MSG(run_case(&zn_backend_cpu, tc, outs, &err) == ZN_OK, "%s: cpu: %s", s->what, err.msg);
    const zn_status st = run_case(&zn_backend_vulkan, tc, outs, &err);
    CHECK_MSG(st == ZN_ERR_UNSUPPORTED && strstr(err.msg, zn_type_name(type)),
              "%s: vulkan gave status %d (%s), not a refusal naming the type", s->what, st, err.msg);
    tc_free(tc);
}

static void cases_matmul(void) {
    /* 1 twice (bias orders), then past lavapipe's and the GPUs' mat-vec
     * limits, odd counts (partial GEMM tiles) */
    const int counts[] = {1, 1, 3, 8, 17, 33};
    tcase *tc = tc_new(64, "matmul");
    int n_cpu_only = 0;
    for (int t = 0; t < ZN_TYPE_COUNT; t++) {
        if (!cpu_type(t)) continue;
        const zn_type type = (zn_type)t;
        if (!vk_type(type)) {
            refused_type(type);
            n_cpu_only++;
            continue;
        }
        /* rows: odd; fewer than a GEMM takes (128), and past the float
         * kernel's row-per-workgroup limit (512) in 4 GEMM tiles and a bit;
         * columns: an odd number of blocks (float types: 100) */
        const int cols = float_type(type) ? 100 : (block_of(type) == 32 ? 7 : 3) * block_of(type);
        matmul_steps(tc, type, 67, cols, counts, 3);
        matmul_steps(tc, type, 515, cols, counts, 6);
    }
    /* mat-vec variants, the GEMM path */
    static const vkcfg *const cfgs[] = {&CFG_DEFAULT, &CFG_GEMM_MM, &CFG_MVFLOAT, &CFG_QUANTX};
    check_case(tc, cfgs, 4);
    CHECK_MSG(n_cpu_only == 3, "%d CPU-only types (expected Q4_1, Q5_0, Q5_1)", n_cpu_only);
}

static void cases_rope(void) {
    const struct { zn_rope_mode mode; int hd, n_rot, heads, ff, sec[4]; float base, scale; } sh[] = {
        {ZN_ROPE_NORM, 64, 64, 3, 0, {0}, 10000.0f, 1.0f},
        {ZN_ROPE_NEOX, 128, 64, 2, 1, {0}, 1e6f, 0.25f},          /* partial rotation, frequency factors */
        {ZN_ROPE_NEOX, 80, 80, 3, 0, {0}, 10000.0f, 1.0f},
        {ZN_ROPE_IMROPE, 64, 64, 3, 0, {11, 11, 10, 0}, 1e7f, 1.0f}, /* qwen35 */
    };
    tcase *tc = tc_new(8, "rope");
    tc->m.hp.head_dim_k = tc->m.hp.head_dim_v = 128; /* the largest head: backends size rope scratch by it */
    for (size_t c = 0; c < sizeof sh / sizeof sh[0]; c++) {
        gguf_tensor *ff = sh[c].ff ? tc_f32(tc, sh[c].n_rot / 2, 0.5f, 4.0f) : NULL;
        const int at[3][2] = {{5, 0}, {1, 5}, {3, 1000}}; /* tokens, position */
        for (int k = 0; k < 3; k++) {
            /* f32 angles from positions up to 1000: the bound leaves room for
             * GPU sin/cos */
            step *s = tc_step(tc, at[k][0], at[k][1], 1e-9, "rope mode %d hd %d n_rot %d%s", sh[c].mode, sh[c].hd,
                              sh[c].n_rot, sh[c].ff ? ", factors" : "");
            const int x = st_input(tc, s, at[k][0], sh[c].heads * sh[c].hd, -1.0f, 1.0f);
            zn_node *n = st_node(s, ZN_OP_ROPE, x, x, -1, -1);
            n->w[0] = ff;
            n->rope = (zn_rope_params){.head_dim = sh[c].hd, .n_rot = sh[c].n_rot, .mode = sh[c].mode,
                                       .freq_base = sh[c].base, .freq_scale = sh[c].scale};
            memcpy(n->rope.sections, sh[c].sec, sizeof n->rope.sections);
            st_finish(tc, s, x);
        }
    }
    check1(tc, &CFG_DEFAULT);
}

/* Attention shapes: heads, KV heads, head dims. The KV cache is f16 on
 * both backends; the bound covers f16 rounding of q (and of p) inside the
 * GPU kernels on matrix products. */
typedef struct attn_shape { int h, hkv, hdk, hdv; } attn_shape;
static const attn_shape attn_shapes[] = {{4, 2, 64, 64}, {3, 1, 128, 128}, {2, 2, 96, 96}, {4, 1, 64, 36}};
#define ATTN_TOL 5e-6

static tcase *attn_tcase(const attn_shape *a, int max_tokens, const char *what) {
    tcase *tc = tc_new(max_tokens, what);
    zn_hparams *hp = &tc->m.hp;
    hp->n_head = a->h;
    hp->n_head_kv = a->hkv;
    hp->head_dim_k = a->hdk;
    hp->head_dim_v = a->hdv;
    return tc;
}

/* A one-node step storing n tokens of K and V at position p (its output is
 * K itself; the attention steps after it check what it stored). */
static void kv_step(tcase *tc, const attn_shape *a, int n, int p) {
    step *s = tc_step(tc, n, p, 0, "kv_store %d/%d heads, hd %d/%d", a->h, a->hkv, a->hdk, a->hdv);
    const int k = st_input(tc, s, n, a->hkv * a->hdk, -1.0f, 1.0f), v = st_input(tc, s, n, a->hkv * a->hdv, -1.0f, 1.0f);
    st_node(s, ZN_OP_KV_STORE, k, k, v, -1);
    st_finish(tc, s, k);
}

/* A one-node step of n query rows at position p (the cache holds p + n). */
static void attn_step(tcase *tc, const attn_shape *a, int n, int p) {
    step *s = tc_step(tc, n, p, ATTN_TOL, "attn %d/%d heads, hd %d/%d", a->h, a->hkv, a->hdk, a->hdv);
    const int q = st_input(tc, s, n, a->h * a->hdk, -1.0f, 1.0f), y = graph_act(&s->g, n, a->h * a->hdv);
    st_node(s, ZN_OP_ATTN, y, q, -1, -1)->attn =
        (zn_attn_params){.n_head = a->h, .n_head_kv = a->hkv, .hd_k = a->hdk, .hd_v = a->hdv, .scale = 1.0f / sqrtf((float)a->hdk)};
    st_finish(tc, s, y);
}

static void cases_kv_store(void) {
    /* the cache written in pieces of odd sizes, then read by one attention step */
    for (size_t c = 0; c < sizeof attn_shapes / sizeof attn_shapes[0]; c++) {
        const attn_shape *a = &attn_shapes[c];
        tcase *tc = attn_tcase(a, 8, "kv_store");
        kv_step(tc, a, 3, 0);
        kv_step(tc, a, 1, 3);
        kv_step(tc, a, 5, 4);
        attn_step(tc, a, 2, 7);
        check1(tc, &CFG_DEFAULT);
    }
}

/* Head dims the Vulkan kernels do not take (hd_k a multiple of 32, hd_v of
 * 4): the run fails with an error naming them; the CPU runs them. */
static void attn_refused(void) {
    const attn_shape a = {2, 2, 80, 80};
    tcase *tc = attn_tcase(&a, 4, "attn (CPU only)");
    kv_step(tc, &a, 3, 0);
    attn_step(tc, &a, 3, 0);
    float k[3 * 160], y[3 * 160], *outs[2] = {k, y};
    zn_err err = {0};
    CHECK_MSG(run_case(&zn_backend_cpu, tc, outs, &err) == ZN_OK, "%s: cpu: %s", tc->name, err.msg);
    const zn_status st = run_case(&zn_backend_vulkan, tc, outs, &err);
    CHECK_MSG(st == ZN_ERR_UNSUPPORTED && strstr(err.msg, "head dims 80/80"),
              "%s: vulkan gave status %d (%s), not a refusal naming the head dims", tc->name, st, err.msg);
    tc_free(tc);
}

static void cases_attn(void) {
    static const vkcfg *const cfgs[] = {&CFG_DEFAULT, &CFG_GEMM};
    attn_refused();
    for (size_t c = 0; c < sizeof attn_shapes / sizeof attn_shapes[0]; c++) {
        const attn_shape *a = &attn_shapes[c];
        tcase *tc = attn_tcase(a, 300, "attn");
        kv_step(tc, a, 7, 0);
        attn_step(tc, a, 7, 0);    /* a prompt */
        kv_step(tc, a, 1, 7);
        attn_step(tc, a, 1, 7);    /* decode */
        kv_step(tc, a, 300, 8);
        attn_step(tc, a, 20, 288); /* prefill rows after a long context (16+ rows) */
        attn_step(tc, a, 3, 305);  /* a few tokens over 308 keys (split) */
        attn_step(tc, a, 1, 307);  /* decode over more than 256 keys */
        check_case(tc, cfgs, 2);
    }
}

/* Elementwise ops: 1001 columns, steps of 6 tokens and 1; f32 arithmetic
 * (exp in silu/sigmoid) only. */
static void cases_binary(zn_op op) {
    const int cols = 1001;
    tcase *tc = tc_new(8, graph_op_name(op));
    for (int var = 0; var < 2; var++) {
        const int counts[2] = {6, 1};
        for (int k = 0; k < 2; k++) {
            const char *v = !var ? "" : op == ZN_OP_SWIGLU ? ", [gate | up]" : op == ZN_OP_SIGMOID_MUL ? ", one gate per row" : ", dst = src";
            step *s = tc_step(tc, counts[k], 0, 1e-12, "%s %d cols%s", graph_op_name(op), cols, v);
            const int n = counts[k];
            int a, b = -1;
            if (op == ZN_OP_SWIGLU && var) {
                a = st_input(tc, s, n, 2 * cols, -4.0f, 4.0f);
            } else {
                a = st_input(tc, s, n, cols, -4.0f, 4.0f);
                b = st_input(tc, s, n, op == ZN_OP_SIGMOID_MUL && var ? 1 : cols, -4.0f, 4.0f);
            }
            const int y = op == ZN_OP_ADD && var ? a : graph_act(&s->g, n, cols);
            st_node(s, op, y, a, b, -1);
            st_finish(tc, s, y);
        }
    }
    check1(tc, &CFG_DEFAULT);
}

static void cases_add(void) { cases_binary(ZN_OP_ADD); }
static void cases_swiglu(void) { cases_binary(ZN_OP_SWIGLU); }
static void cases_sigmoid_mul(void) { cases_binary(ZN_OP_SIGMOID_MUL); }

static void cases_moe_route(void) {
    const struct { int n_exp, k, norm; float ws; } sh[] = {{8, 2, 1, 0.0f}, {60, 4, 1, 2.5f}, {7, 3, 0, 1.0f}};
    tcase *tc = tc_new(8, "moe_route");
    for (size_t c = 0; c < sizeof sh / sizeof sh[0]; c++) {
        const int counts[2] = {5, 1};
        for (int k = 0; k < 2; k++) {
            /* the expert ids must match exactly: a different choice is an error of order 1 */
            step *s = tc_step(tc, counts[k], 0, 1e-12, "moe_route %d experts, top %d%s, scale %g", sh[c].n_exp,
                              sh[c].k, sh[c].norm ? ", normalised" : "", sh[c].ws);
            const int x = st_input(tc, s, counts[k], sh[c].n_exp, -4.0f, 4.0f), y = graph_act(&s->g, counts[k], 2 * sh[c].k);
            st_node(s, ZN_OP_MOE_ROUTE, y, x, -1, -1)->route =
                (zn_route_params){.k = sh[c].k, .normalise = sh[c].norm, .w_scale = sh[c].ws};
            st_finish(tc, s, y);
        }
    }
    check1(tc, &CFG_DEFAULT);
}

/* A routing of n tokens to k distinct experts of n_exp, as MOE_ROUTE
 * writes it: ids (as floats), then weights. */
static const float *route_data(tcase *tc, int n, int k, int n_exp) {
    float *r = tc_alloc(tc, sizeof(float) * (size_t)(n * 2 * k));
    for (int t = 0; t < n; t++)
        for (int j = 0; j < k; j++) {
            int e;
            bool dup;
            do {
                e = irand(n_exp);
                dup = false;
                for (int i = 0; i < j; i++) dup |= r[t * 2 * k + i] == (float)e;
            } while (dup);
            r[t * 2 * k + j] = (float)e;
            r[t * 2 * k + k + j] = 0.1f + 0.9f * 0.5f * (frand() + 1.0f);
        }
    return r;
}

static void cases_moe_matmul(void) {
    static const vkcfg *const cfgs[] = {&CFG_DEFAULT, &CFG_GEMM};
    enum { E = 5, K = 2, ROWS = 67 };
    tcase *tc = tc_new(24, "moe_matmul");
    tc->m.hp.n_expert = E;
    tc->m.hp.n_expert_used = K;
    for (int t = 0; t < ZN_TYPE_COUNT; t++) {
        if (!cpu_type(t) || !vk_type((zn_type)t)) continue;
        const zn_type type = (zn_type)t;
        const int cols = float_type(type) ? 100 : (block_of(type) == 32 ? 5 : 2) * block_of(type);
        gguf_tensor *w = tc_weight(tc, type, cols, ROWS, E, 1.0f), *sc = tc_f32(tc, E, 0.5f, 1.5f);
        /* tokens, and whether each slot has its own x (the down projection);
         * 20 tokens: the grouped GEMM (from 16 on GPUs, 2 under CFG_GEMM) */
        const int at[4][2] = {{1, 0}, {3, 1}, {1, 1}, {20, 0}};
        for (int k = 0; k < 4; k++) {
            const int n = at[k][0];
            step *s = tc_step(tc, n, 0, mm_tol(type), "moe_matmul %s %d experts of %d x %d, top %d%s%s", zn_type_name(type),
                              E, ROWS, cols, K, at[k][1] ? ", x per slot" : "", k == 0 || k == 3 ? ", scale" : "");
            const int x = st_input(tc, s, at[k][1] ? n * K : n, cols, -1.0f, 1.0f);
            const int r = st_input_data(tc, s, n, 2 * K, route_data(tc, n, K, E)), y = graph_act(&s->g, n * K, ROWS);
            zn_node *nd = st_node(s, ZN_OP_MOE_MATMUL, y, x, r, -1);
            nd->w[0] = w;
            nd->w[2] = k == 0 || k == 3 ? sc : NULL;
            st_finish(tc, s, y);
        }
    }
    check_case(tc, cfgs, 2);
}

static void cases_moe_sum(void) {
    enum { K = 3, COLS = 99 };
    tcase *tc = tc_new(8, "moe_sum");
    const int counts[2] = {5, 1};
    for (int k = 0; k < 2; k++) {
        const int n = counts[k];
        step *s = tc_step(tc, n, 0, 1e-12, "moe_sum top %d, %d cols", K, COLS);
        const int x = st_input(tc, s, n * K, COLS, -2.0f, 2.0f), r = st_input_data(tc, s, n, 2 * K, route_data(tc, n, K, 8));
        const int y = graph_act(&s->g, n, COLS);
        st_node(s, ZN_OP_MOE_SUM, y, x, r, -1);
        st_finish(tc, s, y);
    }
    check1(tc, &CFG_DEFAULT);
}

static void cases_get_rows(void) {
    tcase *tc = tc_new(8, "get_rows");
    const int pick[3][2] = {{6, 1}, {0, 7}, {2, 3}}; /* first, count */
    for (int k = 0; k < 3; k++) {
        step *s = tc_step(tc, 7, 0, 0, "get_rows %d from %d of 7 x 257", pick[k][1], pick[k][0]);
        const int x = st_input(tc, s, 7, 257, -1.0f, 1.0f), y = graph_act(&s->g, pick[k][1], 257);
        st_node(s, ZN_OP_GET_ROWS, y, x, -1, -1)->get_rows.first = pick[k][0];
        st_finish(tc, s, y);
    }
    check1(tc, &CFG_DEFAULT);
}

/* The rows a step wants logits of (out_rows): of one sequence here, all
 * rows or the last (several sequences' rows: test_batch, end to end). */
static void cases_gather_rows(void) {
    tcase *tc = tc_new(8, "gather_rows");
    for (int all = 0; all < 2; all++) {
        step *s = tc_step(tc, 7, 0, 0, "gather_rows (%s) of 7 x 257", all ? "all" : "the last");
        s->g.all_logits = all;
        graph_set_step(&s->g, s->tokens, 7, 0);
        const int x = st_input(tc, s, 7, 257, -1.0f, 1.0f), y = graph_act(&s->g, s->g.n_out, 257);
        st_node(s, ZN_OP_GATHER_ROWS, y, x, -1, -1);
        st_finish(tc, s, y);
    }
    check1(tc, &CFG_DEFAULT);
}

static void cases_copy_cols(void) {
    /* qwen35's [query | gate] halves per head, and odd blocks */
    const struct { int blocks, width, stride, off; } sh[] = {{3, 64, 128, 0}, {3, 64, 128, 64}, {5, 7, 9, 2}};
    tcase *tc = tc_new(8, "copy_cols");
    for (size_t c = 0; c < sizeof sh / sizeof sh[0]; c++) {
        const int counts[2] = {4, 1};
        for (int k = 0; k < 2; k++) {
            step *s = tc_step(tc, counts[k], 0, 0, "copy_cols %d blocks of %d every %d from %d", sh[c].blocks,
                              sh[c].width, sh[c].stride, sh[c].off);
            const int x = st_input(tc, s, counts[k], sh[c].blocks * sh[c].stride, -1.0f, 1.0f);
            const int y = graph_act(&s->g, counts[k], sh[c].blocks * sh[c].width);
            st_node(s, ZN_OP_COPY_COLS, y, x, -1, -1)->copy_cols =
                (zn_copy_cols_params){.width = sh[c].width, .stride = sh[c].stride, .off = sh[c].off};
            st_finish(tc, s, y);
        }
    }
    check1(tc, &CFG_DEFAULT);
}

/* A recurrent layer: H_k key heads and H_v value heads of d (= d_k = d_v,
 * as the loader requires), conv kernel 4. */
static tcase *recr_tcase(int h_k, int h_v, int d, const char *what) {
    tcase *tc = tc_new(8, what);
    zn_hparams *hp = &tc->m.hp;
    tc->layers[0].recurrent = true;
    hp->ssm_d_conv = 4;
    hp->ssm_d_state = d;
    hp->ssm_n_group = h_k;
    hp->ssm_dt_rank = h_v;
    hp->ssm_d_inner = h_v * d;
    return tc;
}

static const int recr_steps[4] = {5, 1, 1, 3}; /* tokens per step: the state carries over */
#define RECR_TOL 1e-9                            /* f32 throughout (exp, log, sqrt) */

static void cases_conv1d(void) {
    const int sh[2][3] = {{2, 4, 16}, {1, 3, 32}};
    for (int c = 0; c < 2; c++) {
        tcase *tc = recr_tcase(sh[c][0], sh[c][1], sh[c][2], "conv1d");
        const int ch = 2 * sh[c][0] * sh[c][2] + sh[c][1] * sh[c][2];
        gguf_tensor *w = tc_tensor(tc, ZN_TYPE_F32, 4, ch, 1, tc_floats(tc, (size_t)ch * 4, -1.0f, 1.0f));
        int p = 0;
        for (int k = 0; k < 4; k++) {
            step *s = tc_step(tc, recr_steps[k], p, RECR_TOL, "conv1d %d channels", ch);
            const int x = st_input(tc, s, recr_steps[k], ch, -2.0f, 2.0f), y = graph_act(&s->g, recr_steps[k], ch);
            st_node(s, ZN_OP_CONV1D, y, x, -1, -1)->w[0] = w;
            st_finish(tc, s, y);
            p += recr_steps[k];
        }
        check1(tc, &CFG_DEFAULT);
    }
}

static void cases_gdn(void) {
    const int sh[2][3] = {{2, 4, 16}, {1, 2, 128}}; /* key heads tiled over value heads; qwen35's head size */
    for (int c = 0; c < 2; c++) {
        const int h_k = sh[c][0], h_v = sh[c][1], d = sh[c][2];
        tcase *tc = recr_tcase(h_k, h_v, d, "gdn");
        gguf_tensor *dt = tc_f32(tc, h_v, -1.0f, 1.0f), *a = tc_f32(tc, h_v, -2.0f, -0.1f);
        int p = 0;
        for (int k = 0; k < 4; k++) {
            const int n = recr_steps[k];
            step *s = tc_step(tc, n, p, RECR_TOL, "gdn H_k %d, H_v %d, d %d", h_k, h_v, d);
            const int x = st_input(tc, s, n, 2 * h_k * d + h_v * d, -1.0f, 1.0f);
            const int al = st_input(tc, s, n, h_v, -3.0f, 1.0f), be = st_input(tc, s, n, h_v, -3.0f, 3.0f);
            const int y = graph_act(&s->g, n, h_v * d);
            zn_node *nd = st_node(s, ZN_OP_GDN, y, x, al, be);
            nd->w[0] = dt;
            nd->w[1] = a;
            nd->gdn = (zn_gdn_params){.h_k = h_k, .h_v = h_v, .d_k = d, .d_v = d, .eps = 1e-6f};
            st_finish(tc, s, y);
            p += n;
        }
        check1(tc, &CFG_DEFAULT);
    }
}

static void (*const op_cases[ZN_OP_COUNT])(void) = {
    [ZN_OP_EMBED] = cases_embed,
    [ZN_OP_RMSNORM] = cases_rmsnorm,
    [ZN_OP_MATMUL] = cases_matmul,
    [ZN_OP_ROPE] = cases_rope,
    [ZN_OP_KV_STORE] = cases_kv_store,
    [ZN_OP_ATTN] = cases_attn,
    [ZN_OP_ADD] = cases_add,
    [ZN_OP_SWIGLU] = cases_swiglu,
    [ZN_OP_SIGMOID_MUL] = cases_sigmoid_mul,
    [ZN_OP_MOE_ROUTE] = cases_moe_route,
    [ZN_OP_MOE_MATMUL] = cases_moe_matmul,
    [ZN_OP_MOE_SUM] = cases_moe_sum,
    [ZN_OP_GET_ROWS] = cases_get_rows,
    [ZN_OP_GATHER_ROWS] = cases_gather_rows,
    [ZN_OP_COPY_COLS] = cases_copy_cols,
    [ZN_OP_CONV1D] = cases_conv1d,
    [ZN_OP_GDN] = cases_gdn,
};

static int cur_op;
static void test_op(void) {
    h_cur = graph_op_name((zn_op)cur_op);
    tally_reset();
    CHECK_MSG(op_cases[cur_op], "op %d (%s) has no conformance cases", cur_op, graph_op_name((zn_op)cur_op));
    if (!op_cases[cur_op]) return;
    op_cases[cur_op]();
    tally_print(graph_op_name((zn_op)cur_op));
}

/* ---- the fusions of the Vulkan planner, on and off ---- */

static const vkcfg *const fuse_cfgs[] = {&CFG_DEFAULT, &CFG_NOFUSE};
static const vkcfg *const fuse_gemm_cfgs[] = {&CFG_DEFAULT, &CFG_NOFUSE, &CFG_GEMM};

static void norm_node(step *s, int y, int x, const gguf_tensor *w, int group) {
    zn_node *n = st_node(s, ZN_OP_RMSNORM, y, x, -1, -1);
    n->w[0] = w;
    n->norm = (zn_norm_params){.group = group, .eps = 1e-6f};
}

/* RMS norm (whole rows, weight) read by the matmuls after it: by one, and
 * by a q/k/v group of one input (grouped mat-vec with the norm in x). */
static void test_fuse_norm_matmul(void) {
    tally_reset();
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q8_0, ZN_TYPE_F16};
    enum { COLS = 512, ROWS = 33 };
    tcase *tc = tc_new(8, "norm+matmul");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const zn_type type = types[ti];
        for (int n_mm = 1; n_mm <= 3; n_mm += 2) {
            gguf_tensor *nw = tc_f32(tc, COLS, 0.5f, 1.5f), *w[3];
            for (int k = 0; k < n_mm; k++) w[k] = tc_weight(tc, type, COLS, ROWS, 1, 1.0f);
            const int counts[2] = {1, 6};
            for (int c = 0; c < 2; c++) {
                step *s = tc_step(tc, counts[c], 0, mm_tol(type), "rmsnorm -> %d matmul(s) %s", n_mm, zn_type_name(type));
                const int x = st_input(tc, s, counts[c], COLS, -3.0f, 3.0f), h = graph_act(&s->g, counts[c], COLS);
                norm_node(s, h, x, nw, COLS);
                int y[3];
                for (int k = 0; k < n_mm; k++) {
                    y[k] = graph_act(&s->g, counts[c], ROWS);
                    st_node(s, ZN_OP_MATMUL, y[k], h, -1, -1)->w[0] = w[k];
                }
                /* the group's outputs summed: one activation to compare
                 * (an ADD right after a matmul would fold into it instead) */
                int out = y[0];
                if (n_mm == 3) {
                    const int t = graph_act(&s->g, counts[c], ROWS);
                    out = graph_act(&s->g, counts[c], ROWS);
                    st_node(s, ZN_OP_ADD, t, y[0], y[1], -1);
                    st_node(s, ZN_OP_ADD, out, t, y[2], -1);
                }
                st_finish(tc, s, out);
            }
        }
    }
    check_case(tc, fuse_gemm_cfgs, 3);
    tally_print("norm+matmul");
}

/* The dense FFN: gate and up (a group), SwiGLU read by the down matmul. */
static void test_fuse_swiglu_matmul(void) {
    tally_reset();
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_F16};
    enum { E = 256, F = 768 };
    tcase *tc = tc_new(8, "swiglu+matmul");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const zn_type type = types[ti];
        gguf_tensor *wg = tc_weight(tc, type, E, F, 1, 1.0f), *wu = tc_weight(tc, type, E, F, 1, 1.0f);
        gguf_tensor *wd = tc_weight(tc, type, F, E, 1, 1.0f);
        const int counts[2] = {1, 7};
        for (int c = 0; c < 2; c++) {
            const int n = counts[c];
            step *s = tc_step(tc, n, 0, mm2_tol(type), "ffn gate/up -> swiglu -> down %s", zn_type_name(type));
            const int x = st_input(tc, s, n, E, -1.0f, 1.0f);
            const int g = graph_act(&s->g, n, F), u = graph_act(&s->g, n, F), h = graph_act(&s->g, n, F), y = graph_act(&s->g, n, E);
            st_node(s, ZN_OP_MATMUL, g, x, -1, -1)->w[0] = wg;
            st_node(s, ZN_OP_MATMUL, u, x, -1, -1)->w[0] = wu;
            st_node(s, ZN_OP_SWIGLU, h, g, u, -1);
            st_node(s, ZN_OP_MATMUL, y, h, -1, -1)->w[0] = wd;
            st_finish(tc, s, y);
        }
    }
    /* gate and up as one matmul: a SwiGLU of one input, which the mat-vec
     * reads with up at column f of each row (aux + x's offset); f 262 puts
     * up 8 bytes off a 16-byte boundary (the unaligned loads) */
    const struct { zn_type t; int f; } mg[] = {{ZN_TYPE_Q4_K, F}, {ZN_TYPE_F16, 262}};
    for (size_t mi = 0; mi < sizeof mg / sizeof mg[0]; mi++) {
        const int f = mg[mi].f;
        gguf_tensor *wgu = tc_weight(tc, mg[mi].t, E, 2 * f, 1, 1.0f), *wd = tc_weight(tc, mg[mi].t, f, E, 1, 1.0f);
        const int counts[2] = {1, 7};
        for (int c = 0; c < 2; c++) {
            const int n = counts[c];
            step *s = tc_step(tc, n, 0, mm2_tol(mg[mi].t), "ffn gate_up -> swiglu of one input -> down %s, f %d",
                              zn_type_name(mg[mi].t), f);
            const int x = st_input(tc, s, n, E, -1.0f, 1.0f), gu = graph_act(&s->g, n, 2 * f);
            const int h = graph_act(&s->g, n, f), y = graph_act(&s->g, n, E);
            st_node(s, ZN_OP_MATMUL, gu, x, -1, -1)->w[0] = wgu;
            st_node(s, ZN_OP_SWIGLU, h, gu, -1, -1);
            st_node(s, ZN_OP_MATMUL, y, h, -1, -1)->w[0] = wd;
            st_finish(tc, s, y);
        }
    }
    check_case(tc, fuse_gemm_cfgs, 3);
    tally_print("swiglu+matmul");
}

/* A DeltaNet block's gated norm and output projection: an RMS norm by
 * heads of 128 (with a weight) read as the up of a SwiGLU by the gate z,
 * read by the projection (and its residual ADD): on the integer mat-vec
 * quantising x in its workgroups the projection norms the heads itself
 * (vkop_mm.gn_w); several tokens there only where its tuning quantises
 * their x in the workgroups too. */
static void test_fuse_gated_norm(void) {
    tally_reset();
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_F16};
    enum { D = 512, G = 128, E = 96 };
    tcase *tc = tc_new(8, "gated norm");
    gguf_tensor *nw = tc_f32(tc, G, 0.5f, 1.5f);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        gguf_tensor *w = tc_weight(tc, types[ti], D, E, 1, 1.0f);
        const int counts[2] = {1, 5};
        for (int c = 0; c < 2; c++) {
            const int n = counts[c];
            step *s = tc_step(tc, n, 0, mm2_tol(types[ti]), "norm by heads -> silu(z) * normed -> matmul -> add %s",
                              zn_type_name(types[ti]));
            const int o = st_input(tc, s, n, D, -2.0f, 2.0f), z = st_input(tc, s, n, D, -3.0f, 3.0f);
            const int res = st_input(tc, s, n, E, -1.0f, 1.0f), h = graph_act(&s->g, n, D), sw = graph_act(&s->g, n, D);
            const int y = graph_act(&s->g, n, E), out = graph_act(&s->g, n, E);
            norm_node(s, h, o, nw, G);
            st_node(s, ZN_OP_SWIGLU, sw, z, h, -1);
            st_node(s, ZN_OP_MATMUL, y, sw, -1, -1)->w[0] = w;
            st_node(s, ZN_OP_ADD, out, y, res, -1);
            st_finish(tc, s, out);
        }
    }
    static const vkcfg cfg_on = {"mv_gnorm=on", "mv_gnorm=on", false, false, false, false};
    static const vkcfg cfg_mvt = {"mv_gnorm=on,mvt_modes=15", "mv_gnorm=on,mvt_modes=15", false, false, false, false};
    static const vkcfg *const cfgs[] = {&cfg_on, &CFG_DEFAULT, &CFG_NOFUSE, &CFG_GEMM, &cfg_mvt};
    check_case(tc, cfgs, 5);
    tally_print("gated norm");
}

/* A gated attention's output: the sigmoid gate per value read by the
 * output projection's mat-vec as it loads x (VKX_SIGMUL), its residual ADD
 * in the store; the f16 GEMM does not take the gate (it runs apart). */
static void test_fuse_gate_matmul(void) {
    tally_reset();
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_F16};
    enum { D = 256, E = 96 };
    tcase *tc = tc_new(8, "gate+matmul");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        gguf_tensor *w = tc_weight(tc, types[ti], D, E, 1, 1.0f);
        const int counts[2] = {1, 7};
        for (int c = 0; c < 2; c++) {
            const int n = counts[c];
            step *s = tc_step(tc, n, 0, mm_tol(types[ti]), "attn * sigmoid(gate) -> matmul -> add %s", zn_type_name(types[ti]));
            const int a = st_input(tc, s, n, D, -2.0f, 2.0f), gt = st_input(tc, s, n, D, -3.0f, 3.0f);
            const int res = st_input(tc, s, n, E, -1.0f, 1.0f), sg = graph_act(&s->g, n, D);
            const int y = graph_act(&s->g, n, E), o = graph_act(&s->g, n, E);
            st_node(s, ZN_OP_SIGMOID_MUL, sg, a, gt, -1);
            st_node(s, ZN_OP_MATMUL, y, sg, -1, -1)->w[0] = w;
            st_node(s, ZN_OP_ADD, o, y, res, -1);
            st_finish(tc, s, o);
        }
    }
    check_case(tc, fuse_gemm_cfgs, 3);
    tally_print("gate+matmul");
}

/* A matmul whose output only a residual ADD reads (the sum stored by the
 * matmul), with the residual on either side of the ADD. */
static void test_fuse_matmul_add(void) {
    tally_reset();
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_F32};
    enum { K = 256, N = 67 };
    tcase *tc = tc_new(8, "matmul+add");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const zn_type type = types[ti];
        gguf_tensor *w = tc_weight(tc, type, K, N, 1, 1.0f), *b = tc_f32(tc, N, -1.0f, 1.0f);
        const int counts[3] = {1, 5, 1};
        for (int c = 0; c < 3; c++) {
            const int n = counts[c];
            step *s = tc_step(tc, n, 0, mm_tol(type), "matmul -> add %s, residual %s", zn_type_name(type),
                              c == 2 ? "first" : "second");
            const int x = st_input(tc, s, n, K, -1.0f, 1.0f), r = st_input(tc, s, n, N, -1.0f, 1.0f);
            const int y = graph_act(&s->g, n, N), o = graph_act(&s->g, n, N);
            zn_node *mm = st_node(s, ZN_OP_MATMUL, y, x, -1, -1);
            mm->w[0] = w;
            mm->w[1] = b;
            if (c == 2) st_node(s, ZN_OP_ADD, o, r, y, -1);
            else st_node(s, ZN_OP_ADD, o, y, r, -1);
            st_finish(tc, s, o);
        }
    }
    check_case(tc, fuse_gemm_cfgs, 3);
    tally_print("matmul+add");
}

/* Attention's front (qwen3 order): per-head q/k norms, ropes, the KV store
 * after rope k (rope + norm + store in one dispatch), attention. */
static void test_fuse_rope_norm_kv(void) {
    tally_reset();
    const attn_shape a = {4, 2, 64, 64};
    tcase *tc = attn_tcase(&a, 8, "rope+norm+kv");
    gguf_tensor *qn = tc_f32(tc, a.hdk, 0.5f, 1.5f), *kn = tc_f32(tc, a.hdk, 0.5f, 1.5f);
    const int at[3][2] = {{5, 0}, {1, 5}, {1, 6}};
    for (int c = 0; c < 3; c++) {
        const int n = at[c][0];
        step *s = tc_step(tc, n, at[c][1], ATTN_TOL, "q/k norm -> rope -> kv_store -> attn");
        const int q = st_input(tc, s, n, a.h * a.hdk, -2.0f, 2.0f), k = st_input(tc, s, n, a.hkv * a.hdk, -2.0f, 2.0f);
        const int v = st_input(tc, s, n, a.hkv * a.hdv, -1.0f, 1.0f);
        const int qh = graph_act(&s->g, n, a.h * a.hdk), kh = graph_act(&s->g, n, a.hkv * a.hdk);
        const int y = graph_act(&s->g, n, a.h * a.hdv);
        norm_node(s, qh, q, qn, a.hdk);
        norm_node(s, kh, k, kn, a.hdk);
        const zn_rope_params rp = {.head_dim = a.hdk, .n_rot = a.hdk, .mode = ZN_ROPE_NEOX, .freq_base = 1e6f, .freq_scale = 1.0f};
        st_node(s, ZN_OP_ROPE, qh, qh, -1, -1)->rope = rp;
        st_node(s, ZN_OP_ROPE, kh, kh, -1, -1)->rope = rp;
        st_node(s, ZN_OP_KV_STORE, kh, kh, v, -1);
        st_node(s, ZN_OP_ATTN, y, qh, -1, -1)->attn =
            (zn_attn_params){.n_head = a.h, .n_head_kv = a.hkv, .hd_k = a.hdk, .hd_v = a.hdv, .scale = 0.125f};
        st_finish(tc, s, y);
    }
    check_case(tc, fuse_cfgs, 2);
    tally_print("rope+norm+kv");
}

/* MoE FFN: norm read by the router and the gate/up experts, SwiGLU read by
 * the down experts, the weighted sum. The gate / up experts pick the
 * experts themselves (vkop_mm.route) with tuning moe_route on; by default
 * the routing runs on its own. */
static const vkcfg CFG_ROUTE = {"moe_route=on", "moe_route=on", false, false, false, false};
static void test_fuse_moe(void) {
    tally_reset();
    enum { E = 6, K = 2, D = 256, F = 256 };
    const zn_type type = ZN_TYPE_Q4_K;
    tcase *tc = tc_new(24, "moe");
    tc->m.hp.n_expert = E;
    tc->m.hp.n_expert_used = K;
    gguf_tensor *nw = tc_f32(tc, D, 0.5f, 1.5f), *router = tc_weight(tc, ZN_TYPE_F32, D, E, 1, 1.0f);
    gguf_tensor *wg = tc_weight(tc, type, D, F, E, 1.0f), *wu = tc_weight(tc, type, D, F, E, 1.0f);
    gguf_tensor *wd = tc_weight(tc, ZN_TYPE_Q6_K, F, D, E, 1.0f);
    const int counts[3] = {1, 3, 17};
    for (int c = 0; c < 3; c++) {
        const int n = counts[c];
        step *s = tc_step(tc, n, 0, mm2_tol(type), "moe: norm -> route -> experts -> swiglu -> down -> sum");
        const int x = st_input(tc, s, n, D, -2.0f, 2.0f), h = graph_act(&s->g, n, D), lg = graph_act(&s->g, n, E);
        const int r = graph_act(&s->g, n, 2 * K), g = graph_act(&s->g, n * K, F), u = graph_act(&s->g, n * K, F);
        const int sw = graph_act(&s->g, n * K, F), dn = graph_act(&s->g, n * K, D), y = graph_act(&s->g, n, D);
        norm_node(s, h, x, nw, D);
        st_node(s, ZN_OP_MATMUL, lg, h, -1, -1)->w[0] = router;
        st_node(s, ZN_OP_MOE_ROUTE, r, lg, -1, -1)->route = (zn_route_params){.k = K, .normalise = 1};
        st_node(s, ZN_OP_MOE_MATMUL, g, h, r, -1)->w[0] = wg;
        st_node(s, ZN_OP_MOE_MATMUL, u, h, r, -1)->w[0] = wu;
        st_node(s, ZN_OP_SWIGLU, sw, g, u, -1);
        st_node(s, ZN_OP_MOE_MATMUL, dn, sw, r, -1)->w[0] = wd;
        st_node(s, ZN_OP_MOE_SUM, y, dn, r, -1);
        st_finish(tc, s, y);
    }
    /* the experts' gate and up merged (qwen35moe's ffn_gate_up_exps): the
     * SwiGLU of one input read by the down experts' mat-vec, x's rows
     * [n * K][2F] */
    gguf_tensor *wgu = tc_weight(tc, type, D, 2 * F, E, 1.0f);
    for (int c = 0; c < 3; c++) {
        const int n = counts[c];
        step *s = tc_step(tc, n, 0, mm2_tol(type), "moe: norm -> route -> gate_up experts -> swiglu -> down -> sum");
        const int x = st_input(tc, s, n, D, -2.0f, 2.0f), h = graph_act(&s->g, n, D), lg = graph_act(&s->g, n, E);
        const int r = graph_act(&s->g, n, 2 * K), gu = graph_act(&s->g, n * K, 2 * F);
        const int sw = graph_act(&s->g, n * K, F), dn = graph_act(&s->g, n * K, D), y = graph_act(&s->g, n, D);
        norm_node(s, h, x, nw, D);
        st_node(s, ZN_OP_MATMUL, lg, h, -1, -1)->w[0] = router;
        st_node(s, ZN_OP_MOE_ROUTE, r, lg, -1, -1)->route = (zn_route_params){.k = K, .normalise = 1};
        st_node(s, ZN_OP_MOE_MATMUL, gu, h, r, -1)->w[0] = wgu;
        st_node(s, ZN_OP_SWIGLU, sw, gu, -1, -1);
        st_node(s, ZN_OP_MOE_MATMUL, dn, sw, r, -1)->w[0] = wd;
        st_node(s, ZN_OP_MOE_SUM, y, dn, r, -1);
        st_finish(tc, s, y);
    }
    static const vkcfg *const cfgs[] = {&CFG_DEFAULT, &CFG_NOFUSE, &CFG_GEMM, &CFG_ROUTE};
    check_case(tc, cfgs, 4);
    tally_print("moe");
}

/* A DeltaNet block's projections and conv: in one-token steps the conv
 * runs in the grouped mat-vec that made its input (vkop_group.conv), its
 * state carried across prompt steps (the conv's own dispatch) and
 * one-token ones; the projection grouped with another (its output added to
 * the conv's to compare both), or alone (a group of one: the other of
 * another type), quantised and f16. Bit for bit the conv on its own: the
 * same taps in the same order. */
static void test_fuse_conv(void) {
    tally_reset();
    enum { D = 256, CH = 160 };
    static const int steps[6] = {5, 1, 1, 3, 1, 1};
    const struct { zn_type a, b; } ty[3] = {{ZN_TYPE_Q4_K, ZN_TYPE_Q4_K}, {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K}, {ZN_TYPE_F16, ZN_TYPE_F16}};
    for (int c = 0; c < 3; c++) {
        tcase *tc = recr_tcase(1, 3, 32, "conv");
        gguf_tensor *wq = tc_weight(tc, ty[c].a, D, CH, 1, 1.0f), *wz = tc_weight(tc, ty[c].b, D, CH, 1, 1.0f);
        gguf_tensor *w = tc_tensor(tc, ZN_TYPE_F32, 4, CH, 1, tc_floats(tc, (size_t)CH * 4, -1.0f, 1.0f));
        int p = 0;
        for (int k = 0; k < 6; k++) {
            const int n = steps[k];
            step *s = tc_step(tc, n, p, mm_tol(ty[c].b), "projections %s, %s -> conv", zn_type_name(ty[c].a),
                              zn_type_name(ty[c].b));
            const int x = st_input(tc, s, n, D, -1.0f, 1.0f), q = graph_act(&s->g, n, CH), z = graph_act(&s->g, n, CH);
            const int y = graph_act(&s->g, n, CH), o = graph_act(&s->g, n, CH);
            st_node(s, ZN_OP_MATMUL, q, x, -1, -1)->w[0] = wq;
            st_node(s, ZN_OP_MATMUL, z, x, -1, -1)->w[0] = wz;
            st_node(s, ZN_OP_CONV1D, y, q, -1, -1)->w[0] = w;
            st_node(s, ZN_OP_ADD, o, y, z, -1);
            st_finish(tc, s, o);
            p += n;
        }
        static const vkcfg conv_on = {"mv_conv=on", "mv_conv=on", false, false, false, false};
        static const vkcfg conv_off = {"mv_conv=off", "mv_conv=off", false, false, false, true};
        static const vkcfg conv_qx = {"mv_conv=on,mvx=off", "mv_conv=on,mvx=off", false, false, false, false};
        static const vkcfg *const cfgs[] = {&conv_on, &conv_off, &CFG_NOFUSE, &conv_qx};
        check_case(tc, cfgs, 4);
    }
    tally_print("conv");
}

/* The end of a MoE layer after the experts' sum y (n rows of cols): with a
 * shared expert (its output sh, its gate logits gt; sh < 0: none) y + sh *
 * sigmoid(gt), then the residual x, into o. */
static void moe_end(step *s, int n, int cols, int y, int sh, int gt, int x, int o) {
    if (sh >= 0) {
        const int sg = graph_act(&s->g, n, cols), f = graph_act(&s->g, n, cols);
        st_node(s, ZN_OP_SIGMOID_MUL, sg, sh, gt, -1);
        st_node(s, ZN_OP_ADD, f, y, sg, -1);
        st_node(s, ZN_OP_ADD, o, x, f, -1);
    } else {
        st_node(s, ZN_OP_ADD, o, y, x, -1);
    }
}

/* A whole MoE FFN with its tail: the experts' down (on the integer
 * mat-vec) computes the routing-weighted sum, the shared expert's gate and
 * the residual (vkop_mm.tail), k 2 and 8 of 10 experts, with and without a
 * shared expert; against the CPU with the tail fused, with tuning
 * moe_tail off (the tail on its own: bit for bit, the kernel keeps the
 * sums' order and roundings) and with fusion off. */
static const vkcfg CFG_TAIL = {"moe_tail=on", "moe_tail=on", false, false, false, false};
static const vkcfg CFG_NOTAIL = {"moe_tail=off", "moe_tail=off", false, false, false, true};
static void test_fuse_moe_down_tail(void) {
    tally_reset();
    enum { E = 10, D = 256, F = 256 };
    const int ks[2] = {2, 8};
    tcase *tc = tc_new(24, "moe down tail");
    tc->m.hp.n_expert = E;
    tc->m.hp.n_expert_used = 8;
    gguf_tensor *router = tc_weight(tc, ZN_TYPE_F32, D, E, 1, 1.0f);
    gguf_tensor *wg = tc_weight(tc, ZN_TYPE_Q4_K, D, F, E, 1.0f), *wu = tc_weight(tc, ZN_TYPE_Q4_K, D, F, E, 1.0f);
    gguf_tensor *wd[2] = {tc_weight(tc, ZN_TYPE_Q6_K, F, D, E, 1.0f), tc_weight(tc, ZN_TYPE_Q8_0, F, D, E, 1.0f)};
    const int counts[3] = {1, 3, 17};
    for (int c = 0; c < 6; c++) {
        const int n = counts[c % 3], K = ks[c / 3], shared = c != 4;
        step *s = tc_step(tc, n, 0, mm2_tol(ZN_TYPE_Q4_K), "moe: route -> experts -> down with the tail, top %d%s", K,
                          shared ? ", shared expert" : "");
        const int x = st_input(tc, s, n, D, -2.0f, 2.0f), lg = graph_act(&s->g, n, E), r = graph_act(&s->g, n, 2 * K);
        const int g = graph_act(&s->g, n * K, F), u = graph_act(&s->g, n * K, F), sw = graph_act(&s->g, n * K, F);
        const int dn = graph_act(&s->g, n * K, D), y = graph_act(&s->g, n, D), o = graph_act(&s->g, n, D);
        int sh = -1, gt = -1;
        if (shared) sh = st_input(tc, s, n, D, -1.0f, 1.0f), gt = st_input(tc, s, n, c == 1 ? D : 1, -3.0f, 3.0f);
        st_node(s, ZN_OP_MATMUL, lg, x, -1, -1)->w[0] = router;
        st_node(s, ZN_OP_MOE_ROUTE, r, lg, -1, -1)->route = (zn_route_params){.k = K, .normalise = 1};
        st_node(s, ZN_OP_MOE_MATMUL, g, x, r, -1)->w[0] = wg;
        st_node(s, ZN_OP_MOE_MATMUL, u, x, r, -1)->w[0] = wu;
        st_node(s, ZN_OP_SWIGLU, sw, g, u, -1);
        st_node(s, ZN_OP_MOE_MATMUL, dn, sw, r, -1)->w[0] = wd[c % 2];
        st_node(s, ZN_OP_MOE_SUM, y, dn, r, -1);
        moe_end(s, n, D, y, sh, gt, x, o);
        st_finish(tc, s, o);
    }
    static const vkcfg *const cfgs[] = {&CFG_TAIL, &CFG_NOTAIL, &CFG_NOFUSE};
    check_case(tc, cfgs, 3);
    tally_print("moe down tail");
}

/* A MoE layer's tail, folded into its residual ADD (vk_fuse.h
 * vkfuse_tail): the experts' weighted sum, the shared expert's output
 * times the sigmoid of its gate (one per row, or one per value), their sum,
 * the residual; without a shared expert, the sum and the residual (on the
 * ADD's other side); the experts' outputs written over before the ADD
 * (the sum then runs on its own). Element-wise only, so fused and one by one must
 * agree bit for bit. */
static void test_fuse_moe_tail(void) {
    tally_reset();
    enum { E = 8, K = 3, D = 96 };
    tcase *tc = tc_new(24, "moe tail");
    tc->m.hp.n_expert = E;
    tc->m.hp.n_expert_used = K;
    /* gate cols 0: no shared expert. Step 4 writes over the experts'
     * outputs after the sum, which then is not folded but read; step 5
     * reads them and the routing again after the tail, so the ADD's output
     * cannot take their memory and the whole tail folds. */
    const int counts[6] = {1, 3, 17, 5, 2, 4}, gate_cols[6] = {1, D, 1, 0, 1, 1};
    for (int c = 0; c < 6; c++) {
        const int n = counts[c];
        step *s = tc_step(tc, n, 0, 1e-10, "moe sum -> shared expert gate -> add -> residual add, gate cols %d",
                          gate_cols[c]);
        const int lg = st_input(tc, s, n, E, -2.0f, 2.0f), dn = st_input(tc, s, n * K, D, -1.0f, 1.0f);
        const int x = st_input(tc, s, n, D, -1.0f, 1.0f);
        const int r = graph_act(&s->g, n, 2 * K), y = graph_act(&s->g, n, D), o = graph_act(&s->g, n, D);
        st_node(s, ZN_OP_MOE_ROUTE, r, lg, -1, -1)->route = (zn_route_params){.k = K, .normalise = 1};
        st_node(s, ZN_OP_MOE_SUM, y, dn, r, -1);
        if (c == 4) {
            const int d2 = st_input(tc, s, n * K, D, -1.0f, 1.0f);
            st_node(s, ZN_OP_ADD, dn, d2, d2, -1);
        }
        int sh = -1, gt = -1;
        if (gate_cols[c]) sh = st_input(tc, s, n, D, -1.0f, 1.0f), gt = st_input(tc, s, n, gate_cols[c], -3.0f, 3.0f);
        moe_end(s, n, D, y, sh, gt, x, o);
        int out = o;
        if (c == 5) {
            const int y2 = graph_act(&s->g, n, D);
            out = graph_act(&s->g, n, D);
            st_node(s, ZN_OP_MOE_SUM, y2, dn, r, -1);
            st_node(s, ZN_OP_ADD, out, o, y2, -1);
        }
        st_finish(tc, s, out);
    }
    static const vkcfg *const cfgs[] = {&CFG_DEFAULT, &CFG_NOFUSE_SAME};
    check_case(tc, cfgs, 2);
    tally_print("moe tail");
}

/* Two matmuls of one x that cannot be grouped (different types): the
 * second reuses the quantised x of the first. */
static void test_fuse_x_reuse(void) {
    tally_reset();
    enum { K = 512, N = 40 };
    tcase *tc = tc_new(8, "x reuse");
    gguf_tensor *a = tc_weight(tc, ZN_TYPE_Q4_K, K, N, 1, 1.0f), *b = tc_weight(tc, ZN_TYPE_Q6_K, K, N, 1, 1.0f);
    const int counts[2] = {1, 3};
    for (int c = 0; c < 2; c++) {
        const int n = counts[c];
        step *s = tc_step(tc, n, 0, mm_tol(ZN_TYPE_Q4_K), "Q4_K then Q6_K matmul of one x");
        const int x = st_input(tc, s, n, K, -1.0f, 1.0f), ya = graph_act(&s->g, n, N), yb = graph_act(&s->g, n, N);
        const int y = graph_act(&s->g, n, N);
        st_node(s, ZN_OP_MATMUL, ya, x, -1, -1)->w[0] = a;
        st_node(s, ZN_OP_MATMUL, yb, x, -1, -1)->w[0] = b;
        st_node(s, ZN_OP_ADD, y, ya, yb, -1);
        st_finish(tc, s, y);
    }
    check_case(tc, fuse_cfgs, 2);
    tally_print("x reuse");
}

/* Whether a Vulkan backend can start here: ZN_ERR_DEVICE or UNSUPPORTED
 * from init (no loader, no device, a device without what the backend
 * needs) means the suite cannot run. */
static bool vk_absent(char *why, size_t cap) {
    tcase *tc = tc_new(1, "probe");
    step *s = tc_step(tc, 1, 0, 0, "add");
    const int x = st_input(tc, s, 1, 4, -1.0f, 1.0f), y = graph_act(&s->g, 1, 4);
    st_node(s, ZN_OP_ADD, y, x, x, -1);
    st_finish(tc, s, y);
    tc_prep(tc);
    zn_err err = {0};
    zn_backend_opts o = {.n_threads = 1, .max_tokens = 1, .arena_floats = s->g.arena_floats, .graph = &tc->prep, .device = -1};
    void *ctx = NULL;
    const zn_status st = zn_backend_vulkan.init(&ctx, &tc->m, &o, &err);
    if (ctx) zn_backend_vulkan.free(ctx);
    tc_free(tc);
    if (st == ZN_ERR_DEVICE || st == ZN_ERR_UNSUPPORTED) {
        snprintf(why, cap, "no usable Vulkan device: %s", err.msg);
        return true;
    }
    return false;
}

/* Arguments: run only the ops / tests named (e.g. "matmul test_fuse_moe"). */
static int n_only;
static char **only;
static bool wanted(const char *name) {
    for (int i = 0; i < n_only; i++)
        if (!strcmp(only[i], name)) return true;
    return n_only == 0;
}
#define RUN_IF(fn) do { if (wanted(#fn)) RUN(fn); } while (0)

int main(int argc, char **argv) {
    n_only = argc - 1;
    only = argv + 1;
    char why[sizeof(zn_err) + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("backend_ops", why);
        return harness_report("backend_ops");
    }
    for (cur_op = 0; cur_op < ZN_OP_COUNT; cur_op++)
        if (wanted(graph_op_name((zn_op)cur_op))) RUN(test_op);
    RUN_IF(test_fuse_norm_matmul);
    RUN_IF(test_fuse_swiglu_matmul);
    RUN_IF(test_fuse_matmul_add);
    RUN_IF(test_fuse_gate_matmul);
    RUN_IF(test_fuse_gated_norm);
    RUN_IF(test_fuse_rope_norm_kv);
    RUN_IF(test_fuse_moe);
    RUN_IF(test_fuse_moe_tail);
    RUN_IF(test_fuse_moe_down_tail);
    RUN_IF(test_fuse_conv);
    RUN_IF(test_fuse_x_reuse);
    return harness_report("backend_ops");
}
