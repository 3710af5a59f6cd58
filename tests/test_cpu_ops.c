/* Every CPU op on its own, in hand-built graphs over a synthetic model,
 * against a naive double-precision reference written here (or a
 * hand-computed case), with 1 and 3 threads (3 > some row counts, so
 * empty thread ranges are exercised; results must be bit-identical). */
#include <math.h>

#include "backend.h"
#include "cpu.h"
#include "harness.h"
#include "quant_impl.h"

static uint32_t rng = 1;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1u << 23) - 1.0f;
}

/* A model with only what the backend reads: sizes and a tensor list. */
typedef struct fake {
    zn_model m;
    zn_layer layers[2];
    gguf_tensor t[16];
} fake;

static void fake_init(fake *f, int n_head, int n_head_kv, int head_dim) {
    memset(f, 0, sizeof *f);
    f->m.layers = f->layers;
    f->m.hp.n_layer = 1;
    f->m.hp.n_head = n_head;
    f->m.hp.n_head_kv = n_head_kv;
    f->m.hp.head_dim_k = f->m.hp.head_dim_v = head_dim;
    f->m.gguf.tensors = f->t;
}

static gguf_tensor *fake_tensor(fake *f, zn_type type, int64_t ne0, int64_t ne1, int64_t ne2, const void *data) {
    if (f->m.gguf.n_tensors == sizeof f->t / sizeof f->t[0]) abort();
    gguf_tensor *t = &f->t[f->m.gguf.n_tensors++];
    *t = (gguf_tensor){.name = "w", .n_dims = 3, .ne = {(uint64_t)ne0, (uint64_t)ne1, (uint64_t)ne2, 1},
                       .type = type, .data = data};
    t->nbytes = zn_row_size(type, ne0) * (size_t)(ne1 * ne2);
    return t;
}

/* Runs g on a fresh CPU backend with one sequence; copies act `out`. */
static int run_cpu(const zn_model *m, const zn_graph *g, int threads, float *out) {
    zn_err err = {0};
    zn_backend_opts o = {.n_threads = threads, .max_tokens = g->max_tokens, .arena_floats = g->arena_floats, .device = -1};
    void *ctx = NULL, *st = NULL;
    int ok = zn_backend_cpu.init(&ctx, m, &o, &err) == ZN_OK && zn_backend_cpu.seq_init(ctx, &st, 64, &err) == ZN_OK &&
             zn_backend_cpu.run(ctx, &st, g, &err) == ZN_OK &&
             zn_backend_cpu.read(ctx, g, g->logits, 0, g->acts[g->logits].rows, out, &err) == ZN_OK;
    CHECK_MSG(ok, "%s", err.msg);
    if (st) zn_backend_cpu.seq_free(ctx, st);
    if (ctx) zn_backend_cpu.free(ctx);
    return ok;
}

/* Input activation filled by an EMBED of an F32 table row per token. */
static int input_rows(zn_graph *g, fake *f, const float *table, int rows, int cols) {
    graph_set_step(g, g->tokens, rows, g->n_past);
    int x = graph_act(g, rows, cols);
    zn_node *n = graph_node(g, ZN_OP_EMBED, x, "in", -1);
    n->w[0] = fake_tensor(f, ZN_TYPE_F32, cols, rows, 1, table);
    return x;
}

static int32_t iota[64] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                           16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* A one-layer fake model and an empty graph of the given capacity whose
 * tokens are 0, 1, 2, ... */
static void begin(fake *f, zn_graph *g, int max_tokens, int cap) {
    zn_err err;
    fake_init(f, 1, 1, 8);
    CHECK(graph_init_empty(g, &f->m, max_tokens, cap, cap, &err) == ZN_OK);
    g->tokens = iota;
}

static double nmse(const float *a, const double *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += (a[i] - ref[i]) * (a[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

/* Runs with 1 and 3 threads, checks they agree and returns the 1-thread result. */
static void run_both(const zn_model *m, const zn_graph *g, float *out, int n) {
    float *o3 = malloc(sizeof *o3 * (size_t)n);
    if (run_cpu(m, g, 1, out) && run_cpu(m, g, 3, o3)) CHECK(!memcmp(out, o3, sizeof *o3 * (size_t)n));
    free(o3);
}

/* ---- matmul for every type ---- */

static void matmul_case(zn_type type, int bias_first, int N) {
    enum { K = 512, NMAX = 40, T = 6 }; /* 6 tokens: a full tile of 4 and a partial one */
    static float wf[NMAX * K], x[T * K], deq[K], bias[NMAX], y[T * NMAX];
    static double ref[T * NMAX];
    static uint8_t wq[NMAX * K * 4];
    const size_t row = zn_row_size(type, K);
    for (int i = 0; i < N * K; i++) wf[i] = frand();
    for (int i = 0; i < T * K; i++) x[i] = frand();
    for (int i = 0; i < N; i++) bias[i] = frand();
    for (int o = 0; o < N; o++) quant_quantize_row(type, wf + o * K, wq + o * row, K);
    const float scale = 0.75f;
    for (int o = 0; o < N; o++) {
        quant_dequantize_row(type, wq + o * row, deq, K);
        for (int t = 0; t < T; t++) {
            double d = 0;
            for (int i = 0; i < K; i++) d += (double)deq[i] * x[t * K + i];
            ref[t * N + o] = bias_first ? (d + bias[o]) * scale : d * scale + bias[o];
        }
    }
    fake f;
    zn_graph g;
    zn_err err;
    begin(&f, &g, T, 4);
    int xa = input_rows(&g, &f, x, T, K);
    int ya = graph_act(&g, T, N);
    zn_node *n = graph_node(&g, ZN_OP_MATMUL, ya, "mm", -1);
    n->src[0] = xa;
    n->w[0] = fake_tensor(&f, type, K, N, 1, wq);
    n->w[1] = fake_tensor(&f, ZN_TYPE_F32, N, 1, 1, bias);
    n->w[2] = fake_tensor(&f, ZN_TYPE_F32, 1, 1, 1, &scale);
    n->matmul.bias_first = bias_first;
    CHECK(graph_finish(&g, ya, &err) == ZN_OK);
    run_both(&f.m, &g, y, T * N);
    /* float weights dot exact f32 activations; the others see activations
     * quantized to 8 bits (Q8_0 / Q8_K), as ggml does */
    const bool exact = quant_vec_dot_type(type) == ZN_TYPE_F32;
    const double e = nmse(y, ref, T * N);
    CHECK_MSG(e < (exact ? 1e-12 : 1e-4), "%s: NMSE %.3g", zn_type_name(type), e);
    /* and it is quant's row dot, up to float summation order */
    const zn_type vt = quant_vec_dot_type(type);
    static uint8_t xq[T * K * 4];
    const size_t xrow = vt == ZN_TYPE_F32 ? sizeof(float) * K : zn_row_size(vt, K);
    for (int t = 0; t < T; t++) quant_quantize_act(vt, x + t * K, xq + t * xrow, K);
    for (int t = 0; t < T; t++)
        for (int o = 0; o < N; o++) {
            const float ax = bias_first ? y[t * N + o] / scale - bias[o] : (y[t * N + o] - bias[o]) / scale;
            ref[t * N + o] = quant_dot_act(type, wq + o * row, vt == ZN_TYPE_F32 ? (const void *)(x + t * K) : xq + t * xrow, K);
            y[t * N + o] = ax;
        }
    CHECK_MSG(nmse(y, ref, T * N) < 1e-10, "%s: vs quant_dot_act NMSE %.3g", zn_type_name(type), nmse(y, ref, T * N));
    graph_free(&g);
}

static void test_matmul_all_types(void) {
    int tested = 0;
    for (int t = 0; t < ZN_TYPE_COUNT; t++) {
        if (!zn_type_get(t) || !quant_supported((zn_type)t) || t == ZN_TYPE_Q8_K) continue;
        matmul_case((zn_type)t, 0, 40);
        matmul_case((zn_type)t, 1, 40);
        tested++;
    }
    /* row counts that are not a multiple of the packed Q4_K groups (8),
     * split over 3 threads */
    matmul_case(ZN_TYPE_Q4_K, 0, 13);
    matmul_case(ZN_TYPE_Q4_K, 1, 7);
    matmul_case(ZN_TYPE_Q8_0, 0, 13);
    matmul_case(ZN_TYPE_Q8_0, 1, 1);
    CHECK_MSG(tested >= 8, "only %d weight types", tested); /* F32 F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K */
}

/* The packed kernels (Q4_K, Q6_K, Q8_0): weights with a row count that is not a
 * multiple of 8 packed into groups; every token count gives bit for bit
 * what one token gives, AVX2 and AVX-VNNI agree bit for bit, pad rows give
 * 0, and the results are the scalar reference row dot up to float
 * summation order. */
static void packed_case(zn_type type) {
    enum { K = 768, R = 13, T = 11, G = (R + CPU_PACK_ROWS - 1) / CPU_PACK_ROWS };
    static float wf[K], wd[R * K], xf[T * K];
    static uint8_t wq[R * K * 2], xq[T * K * 2], xu[T * K * 2], pk[G * CPU_PACK_ROWS * K * 2];
    static float one[G * CPU_PACK_ROWS][T];
    const zn_type vt = quant_vec_dot_type(type);
    const size_t row = zn_row_size(type, K), xrow = zn_row_size(vt, K), gbytes = cpu_pack_group_bytes(type, K);
    CHECK(gbytes > 0 && G * gbytes <= sizeof pk);
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < K; i++) wf[i] = frand() * (1.0f + (float)r); /* rows of different scales */
        quant_quantize_row(type, wf, wq + r * row, K);
        quant_dequantize_row(type, wq + r * row, wd + r * K, K);
    }
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < K; i++) xf[t * K + i] = frand();
        quant_quantize_act(vt, xf + t * K, xq + t * xrow, K);
    }
    /* the packed Q8_0 kernels read the codes + 128 (CPU_XQ_Q8_0_U) */
    memcpy(xu, xq, sizeof xu);
    for (int b = 0; type == ZN_TYPE_Q8_0 && b < T * K / QK8_0; b++)
        for (int e = 0; e < QK8_0; e++) ((block_q8_0 *)xu)[b].qs[e] ^= (int8_t)0x80;
    cpu_pack_rows(type, wq, R, K, pk);
    const cpu_pack_tile_fn fns[2] = {cpu_packed_avx2(type),
                                     __builtin_cpu_supports("avxvnni") ? cpu_packed_vnni(type) : NULL};
    CHECK(fns[0] != NULL);
    int bad = 0, far = 0;
    for (int f = 0; f < 2 && fns[f]; f++) {
        for (int g = 0; g < G; g++)
            for (int t = 0; t < T; t++) {
                float y[1][CPU_PACK_ROWS];
                fns[f](pk + g * gbytes, xu + t * xrow, xrow, NULL, 1, K, y);
                for (int r = 0; r < CPU_PACK_ROWS; r++) {
                    const int o = g * CPU_PACK_ROWS + r;
                    if (f == 0) one[o][t] = y[0][r];
                    else bad += memcmp(&one[o][t], &y[0][r], sizeof(float)) != 0; /* VNNI == AVX2 */
                    const double d = o < R ? quant_dot_act_ref(type, wq + o * row, xq + t * xrow, K) : 0.0;
                    /* float rounding of the per-block terms: relative to the sum of |w x| */
                    double mag = 0;
                    for (int e = 0; o < R && e < K; e++) mag += fabs((double)wd[o * K + e] * xf[t * K + e]);
                    far += o < R ? !(fabs(y[0][r] - d) <= 1e-6 * (1 + mag)) : y[0][r] != 0.0f;
                }
            }
        for (int nt = 2; nt <= T; nt++) /* the last nt tokens, in passes of 4 and a partial one */
            for (int g = 0; g < G; g++) {
                int32_t xi[T];
                float y[T][CPU_PACK_ROWS];
                for (int t = 0; t < nt; t++) xi[t] = T - nt + t;
                fns[f](pk + g * gbytes, xu, xrow, xi, nt, K, y);
                for (int t = 0; t < nt; t++)
                    for (int r = 0; r < CPU_PACK_ROWS; r++)
                        bad += memcmp(&y[t][r], &one[g * CPU_PACK_ROWS + r][T - nt + t], sizeof(float)) != 0;
            }
    }
    /* the 16-row AVX-512 kernel (both groups at once): the 8-row kernels' results for every token count */
    cpu_vec v;
    cpu_vec_select(&v);
    const cpu_pack_tile2_fn fn2 = v.packed2 ? v.packed2(type) : NULL;
    CHECK_MSG(!fn2 == !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")),
              "%s: the 16-row kernel chosen on a CPU without AVX-512 VNNI, or not on one with it", zn_type_name(type));
    for (int nt = 1; fn2 && nt <= T; nt++) {
        int32_t xi[T];
        float y[T][2 * CPU_PACK_ROWS];
        for (int t = 0; t < nt; t++) xi[t] = T - nt + t;
        fn2(pk, gbytes, xu, xrow, xi, nt, K, y);
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < 2 * CPU_PACK_ROWS; r++) bad += memcmp(&y[t][r], &one[r][T - nt + t], sizeof(float)) != 0;
    }
    CHECK_MSG(far == 0, "%s: %d packed results off the reference row dot", zn_type_name(type), far);
    CHECK_MSG(bad == 0, "%s: %d packed results depend on the token count or the path", zn_type_name(type), bad);
    if (fn2) printf("    %s: the 16-row AVX-512 kernel too\n", zn_type_name(type));
}

static void test_packed_kernels(void) {
#ifdef __x86_64__
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
        SKIP("no AVX2/FMA/F16C on this CPU: weights are not packed");
    }
    packed_case(ZN_TYPE_Q4_K);
    packed_case(ZN_TYPE_Q6_K);
    packed_case(ZN_TYPE_Q8_0);
#else
    SKIP("not an x86-64 build: no packed kernels");
#endif
}

/* A quantized KV cache's rows as f16 (what the f16 attention kernels read):
 * the AVX2 kernel gives each value's backend_kv_dequantize float rounded to
 * f16, bit for bit, in every format; blocks of very different scales, a
 * zero block and one of denormal f16 values included. */
static void test_kv_to_f16(void) {
#ifdef __x86_64__
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
        SKIP("no AVX2/FMA/F16C on this CPU");
    }
    enum { N = 32 * 12 };
    static float x[N], y[N];
    static uint8_t q[N * 4];
    static zn_half ref[N], got[N];
    for (int i = 0; i < N; i++) x[i] = frand() * (i < 32 ? 0.0f : i < 64 ? 1e-6f : (float)(1 << (i / 32 % 8)));
    for (int t = ZN_KV_Q8_0; t < ZN_KV_COUNT; t++) {
        backend_kv_quantize((zn_kv_type)t, x, q, N);
        backend_kv_dequantize((zn_kv_type)t, q, y, N);
        for (int i = 0; i < N; i++) ref[i] = zn_f32_to_fp16(y[i]);
        memset(got, 0xff, sizeof got);
        cpu_kv_to_f16_avx2((zn_kv_type)t, q, got, N);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += ref[i] != got[i];
        CHECK_MSG(bad == 0, "%s: %d of %d values differ from backend_kv_dequantize", backend_kv_type_name(t), bad, N);
    }
#else
    SKIP("not an x86-64 build: no AVX2 kernels");
#endif
}

/* ---- norms and element-wise ops ---- */

static void test_rmsnorm(void) {
    enum { T = 3, C = 24, G = 8 };
    static float x[T * C], w[C], y[T * C];
    static double ref[T * C];
    for (int i = 0; i < T * C; i++) x[i] = frand() * 3;
    for (int i = 0; i < C; i++) w[i] = frand();
    for (int grouped = 0; grouped < 2; grouped++) {
        const int group = grouped ? G : C;
        for (int gi = 0; gi < T * C / group; gi++) {
            double ss = 0;
            for (int i = 0; i < group; i++) ss += (double)x[gi * group + i] * x[gi * group + i];
            const double sc = 1.0 / sqrt(ss / group + 1e-5);
            for (int i = 0; i < group; i++) ref[gi * group + i] = x[gi * group + i] * sc * w[i];
        }
        fake f;
        zn_graph g;
        zn_err err;
        begin(&f, &g, T, 4);
        int xa = input_rows(&g, &f, x, T, C);
        zn_node *n = graph_node(&g, ZN_OP_RMSNORM, graph_act(&g, T, C), "norm", -1);
        n->src[0] = xa;
        n->w[0] = fake_tensor(&f, ZN_TYPE_F32, group, 1, 1, w);
        n->norm = (zn_norm_params){.group = group, .eps = 1e-5f};
        CHECK(graph_finish(&g, n->dst, &err) == ZN_OK);
        run_both(&f.m, &g, y, T * C);
        CHECK_MSG(nmse(y, ref, T * C) < 1e-12, "group %d: %.3g", group, nmse(y, ref, T * C));
        graph_free(&g);
    }
}

/* ops of one or two same-shaped inputs: add, swiglu, sigmoid_mul, get_rows */
static void test_elementwise(void) {
    enum { T = 4, C = 10 };
    static float a[T * 2 * C], b[T * C], gate1[T], y[T * 2 * C];
    static double ref[T * C];
    for (int i = 0; i < T * 2 * C; i++) a[i] = frand() * 4;
    for (int i = 0; i < T * C; i++) b[i] = frand() * 4;
    for (int i = 0; i < T; i++) gate1[i] = frand() * 4;
    for (int op = 0; op < 6; op++) {
        fake f;
        zn_graph g;
        zn_err err;
        begin(&f, &g, T, 8);
        const bool halves = op == 2;
        int aa = input_rows(&g, &f, a, T, halves ? 2 * C : C);
        int bb = graph_act(&g, T, op == 4 ? 1 : C);
        zn_node *nb = graph_node(&g, ZN_OP_EMBED, bb, "in2", -1);
        nb->w[0] = op == 4 ? fake_tensor(&f, ZN_TYPE_F32, 1, T, 1, gate1) : fake_tensor(&f, ZN_TYPE_F32, C, T, 1, b);
        int out = -1, rows = T;
        for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++) {
                const double x = halves ? a[t * 2 * C + i] : a[t * C + i], u = halves ? a[t * 2 * C + C + i] : b[t * C + i];
                const double gv = op == 4 ? gate1[t] : b[t * C + i];
                double r = 0;
                switch (op) {
                case 0: r = x + u; break;
                case 1: case 2: r = x / (1 + exp(-x)) * u; break;
                case 3: case 4: r = x / (1 + exp(-gv)); break;
                case 5: r = a[(t + 1) % T * C + i]; break;
                }
                ref[t * C + i] = r;
            }
        switch (op) {
        case 0: out = graph_add(&g, aa, bb, -1, "add"); break;
        case 1: out = graph_swiglu(&g, aa, bb, -1, "swiglu"); break;
        case 2: out = graph_swiglu(&g, aa, -1, -1, "swiglu_halves"); break;
        case 3: case 4: out = graph_sigmoid_mul(&g, aa, bb, -1, "sigmoid_mul"); break;
        case 5: out = graph_get_rows(&g, aa, 1, T - 1, -1, "rows"), rows = T - 1; break;
        }
        CHECK(graph_finish(&g, out, &err) == ZN_OK);
        run_both(&f.m, &g, y, rows * C);
        CHECK_MSG(nmse(y, ref, rows * C) < 1e-12, "op case %d: %.3g", op, nmse(y, ref, rows * C));
        graph_free(&g);
    }
}

/* ---- rope: hand-computed angles ---- */

static void rope_case(zn_rope_mode mode, const float *ff, int n_past, const float *x, const float *want, int hd,
                      int n_rot) {
    fake f;
    fake_init(&f, 1, 1, hd);
    zn_graph g;
    zn_err err;
    CHECK(graph_init_empty(&g, &f.m, 1, 4, 4, &err) == ZN_OK);
    g.tokens = iota;
    g.n_past = n_past;
    int xa = input_rows(&g, &f, x, 1, hd);
    zn_node *n = graph_node(&g, ZN_OP_ROPE, xa, "rope", -1);
    n->src[0] = xa;
    n->rope = (zn_rope_params){.head_dim = hd, .n_rot = n_rot, .mode = mode, .freq_base = 10000.0f, .freq_scale = 1.0f};
    if (ff) n->w[0] = fake_tensor(&f, ZN_TYPE_F32, n_rot / 2, 1, 1, ff);
    CHECK(graph_finish(&g, xa, &err) == ZN_OK);
    float y[8];
    run_both(&f.m, &g, y, hd);
    for (int i = 0; i < hd; i++) CHECK_NEAR(y[i], want[i], 2e-6);
    graph_free(&g);
}

static void test_rope(void) {
    /* position 1, n_rot 4: pair 0 turns by 1 rad, pair 1 by 10000^-0.5 = 0.01 */
    const double c1 = 0.5403023058681398, s1 = 0.8414709848078965;
    const double c2 = 0.9999500004166653, s2 = 0.009999833334166664;
    const float x[6] = {1, 2, 3, 4, 5, 6};
    /* NORM pairs (x0,x1), (x2,x3); x4, x5 beyond n_rot pass through */
    const float norm[6] = {(float)(1 * c1 - 2 * s1), (float)(1 * s1 + 2 * c1), (float)(3 * c2 - 4 * s2),
                           (float)(3 * s2 + 4 * c2), 5, 6};
    rope_case(ZN_ROPE_NORM, NULL, 1, x, norm, 6, 4);
    /* NEOX pairs (x0,x2), (x1,x3) */
    const float neox[6] = {(float)(1 * c1 - 3 * s1), (float)(2 * c2 - 4 * s2), (float)(1 * s1 + 3 * c1),
                           (float)(2 * s2 + 4 * c2), 5, 6};
    rope_case(ZN_ROPE_NEOX, NULL, 1, x, neox, 6, 4);
    /* frequency factors divide the angle: pair 1 by 2 -> 0.005 rad */
    const double c3 = 0.9999875000260416, s3 = 0.004999979166692708;
    const float ff[2] = {1, 2};
    const float normff[4] = {(float)(1 * c1 - 2 * s1), (float)(1 * s1 + 2 * c1), (float)(3 * c3 - 4 * s3),
                             (float)(3 * s3 + 4 * c3)};
    rope_case(ZN_ROPE_NORM, ff, 1, x, normff, 4, 4);
    /* position 0 is the identity */
    rope_case(ZN_ROPE_NEOX, NULL, 0, x, x, 6, 6);
}

/* ---- attention over the f16 cache, in two steps, GQA ---- */

static void attention_case(int H, int HKV, int D) {
    enum { T1 = 5, T2 = 3, CMAX = 6 * 20 };
    const int C = H * D, CK = HKV * D;
    static float q[(T1 + T2) * CMAX], k[(T1 + T2) * CMAX], v[(T1 + T2) * CMAX], y[T2 * CMAX];
    static double ref[T2 * CMAX];
    if (C > CMAX) abort();
    for (int i = 0; i < (T1 + T2) * C; i++) q[i] = frand();
    for (int i = 0; i < (T1 + T2) * CK; i++) k[i] = frand(), v[i] = frand();
    const float scale = 0.25f;
    /* reference for the second step's rows, with K/V rounded to f16 as cached */
    for (int t = T1; t < T1 + T2; t++)
        for (int h = 0; h < H; h++) {
            const int kh = h / (H / HKV);
            double s[T1 + T2], mx = -1e30, sum = 0;
            for (int j = 0; j <= t; j++) {
                double d = 0;
                for (int i = 0; i < D; i++)
                    d += (double)q[t * C + h * D + i] * zn_fp16_to_f32(zn_f32_to_fp16(k[j * CK + kh * D + i]));
                s[j] = scale * d;
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int j = 0; j <= t; j++) sum += s[j] = exp(s[j] - mx);
            for (int i = 0; i < D; i++) {
                double o = 0;
                for (int j = 0; j <= t; j++) o += s[j] / sum * zn_fp16_to_f32(zn_f32_to_fp16(v[j * CK + kh * D + i]));
                ref[(t - T1) * C + h * D + i] = o;
            }
        }
    fake f;
    fake_init(&f, H, HKV, D);
    zn_err err = {0};
    for (int threads = 1; threads <= 3; threads += 2) {
        zn_backend_opts o = {.n_threads = threads, .max_tokens = T1, .device = -1};
        f.m.gguf.n_tensors = 0;
        zn_graph g[2];
        for (int step = 0; step < 2; step++) {
            const int n = step ? T2 : T1, p = step ? T1 : 0;
            CHECK(graph_init_empty(&g[step], &f.m, T1, 8, 8, &err) == ZN_OK);
            g[step].tokens = iota;
            g[step].n_past = p;
            int qa = input_rows(&g[step], &f, q + p * C, n, C);
            int ka = input_rows(&g[step], &f, k + p * CK, n, CK);
            int va = input_rows(&g[step], &f, v + p * CK, n, CK);
            zn_node *kv = graph_node(&g[step], ZN_OP_KV_STORE, ka, "kv", 0);
            kv->src[0] = ka;
            kv->src[1] = va;
            int ya = graph_act(&g[step], n, C);
            zn_node *at = graph_node(&g[step], ZN_OP_ATTN, ya, "attn", 0);
            at->src[0] = qa;
            at->attn = (zn_attn_params){.n_head = H, .n_head_kv = HKV, .hd_k = D, .hd_v = D, .scale = scale};
            CHECK(graph_finish(&g[step], ya, &err) == ZN_OK);
            if (g[step].arena_floats > o.arena_floats) o.arena_floats = g[step].arena_floats;
        }
        void *ctx = NULL, *st = NULL;
        int ok = zn_backend_cpu.init(&ctx, &f.m, &o, &err) == ZN_OK && zn_backend_cpu.seq_init(ctx, &st, 16, &err) == ZN_OK &&
                 zn_backend_cpu.run(ctx, &st, &g[0], &err) == ZN_OK && zn_backend_cpu.run(ctx, &st, &g[1], &err) == ZN_OK &&
                 zn_backend_cpu.read(ctx, &g[1], g[1].logits, 0, T2, y, &err) == ZN_OK;
        CHECK_MSG(ok, "%s", err.msg);
        CHECK_MSG(nmse(y, ref, T2 * C) < 1e-12, "threads %d: NMSE %.3g", threads, nmse(y, ref, T2 * C));
        if (st) zn_backend_cpu.seq_free(ctx, st);
        if (ctx) zn_backend_cpu.free(ctx);
        graph_free(&g[0]);
        graph_free(&g[1]);
    }
}

/* group 2, and group 3 with a head dim that is not a multiple of 8 (the
 * queries of a block then straddle tokens unevenly) */
static void test_attention(void) {
    attention_case(4, 2, 16);
    attention_case(6, 2, 20);
}

/* ---- MoE: router by hand, expert matmuls + weighted sum by reference ---- */

static void test_moe_route(void) {
    const float logits[3 * 4] = {1, 3, 2, 0, /* */ 0.5f, 0.5f, 0.5f, 0.5f, /* */ -1, 4, 4, 9};
    fake f;
    zn_graph g;
    zn_err err;
    begin(&f, &g, 3, 4);
    int la = input_rows(&g, &f, logits, 3, 4);
    zn_node *n = graph_node(&g, ZN_OP_MOE_ROUTE, graph_act(&g, 3, 4), "route", -1);
    n->src[0] = la;
    n->route = (zn_route_params){.k = 2, .normalise = 1};
    CHECK(graph_finish(&g, n->dst, &err) == ZN_OK);
    float y[12];
    run_both(&f.m, &g, y, 12);
    /* row 0: experts 1 (e^3) then 2 (e^2): weights e/(e+1), 1/(e+1) */
    const double e = exp(1.0);
    const float want[12] = {1, 2, (float)(e / (e + 1)), (float)(1 / (e + 1)),
                            0, 1, 0.5f, 0.5f,                         /* ties: lowest index first */
                            3, 1, (float)(1 / (1 + exp(-5.0))), (float)(exp(-5.0) / (1 + exp(-5.0)))};
    for (int i = 0; i < 12; i++) CHECK_NEAR(y[i], want[i], 1e-6);
    graph_free(&g);
}

/* F32 experts, or quantized ones (an odd OUT: packed per expert) */
static void moe_case(zn_type type, int IN, int OUT) {
    enum { T = 5, E = 4, K = 2, INMAX = 256, OUTMAX = 24 };
    static float x[T * INMAX], w[E * OUTMAX * INMAX], y[T * OUTMAX], route[T * 2 * K], es[E];
    static double ref[T * OUTMAX];
    static uint8_t wq[E * OUTMAX * INMAX];
    for (int i = 0; i < T * IN; i++) x[i] = frand();
    for (int i = 0; i < E * OUT * IN; i++) w[i] = frand();
    const size_t row = zn_row_size(type, IN);
    for (int r = 0; type != ZN_TYPE_F32 && r < E * OUT; r++) { /* the reference uses the dequantized weights */
        quant_quantize_row(type, w + r * IN, wq + r * row, IN);
        quant_dequantize_row(type, wq + r * row, w + r * IN, IN);
    }
    for (int e = 0; e < E; e++) es[e] = 1.0f + 0.25f * e;
    for (int t = 0; t < T; t++) { /* distinct experts, arbitrary weights */
        route[t * 2 * K + 0] = (float)((t * 3) % E);
        route[t * 2 * K + 1] = (float)((t * 3 + 1 + t % 2) % E);
        route[t * 2 * K + 2] = 0.7f - 0.1f * t;
        route[t * 2 * K + 3] = 0.3f + 0.1f * t;
    }
    for (int t = 0; t < T; t++)
        for (int o = 0; o < OUT; o++) {
            double acc = 0;
            for (int j = 0; j < K; j++) {
                const int ex = (int)route[t * 2 * K + j];
                double d = 0;
                for (int i = 0; i < IN; i++) d += (double)w[(ex * OUT + o) * IN + i] * x[t * IN + i];
                acc += route[t * 2 * K + K + j] * d * es[ex];
            }
            ref[t * OUT + o] = acc;
        }
    fake f;
    fake_init(&f, 1, 1, 8);
    f.m.hp.n_expert = E;
    f.m.hp.n_expert_used = K;
    zn_graph g;
    zn_err err;
    CHECK(graph_init_empty(&g, &f.m, T, 8, 8, &err) == ZN_OK);
    g.tokens = iota;
    int xa = input_rows(&g, &f, x, T, IN);
    int ra = graph_act(&g, T, 2 * K);
    graph_node(&g, ZN_OP_EMBED, ra, "route", -1)->w[0] = fake_tensor(&f, ZN_TYPE_F32, 2 * K, T, 1, route);
    int ma = graph_act(&g, T * K, OUT);
    zn_node *n = graph_node(&g, ZN_OP_MOE_MATMUL, ma, "experts", -1);
    n->src[0] = xa;
    n->src[1] = ra;
    n->w[0] = fake_tensor(&f, type, IN, OUT, E, type == ZN_TYPE_F32 ? (const void *)w : wq);
    n->w[2] = fake_tensor(&f, ZN_TYPE_F32, E, 1, 1, es);
    n = graph_node(&g, ZN_OP_MOE_SUM, graph_act(&g, T, OUT), "sum", -1);
    n->src[0] = ma;
    n->src[1] = ra;
    CHECK(graph_finish(&g, n->dst, &err) == ZN_OK);
    run_both(&f.m, &g, y, T * OUT);
    /* quantized weights see Q8_K activations */
    const double bound = type == ZN_TYPE_F32 ? 1e-12 : 1e-4;
    CHECK_MSG(nmse(y, ref, T * OUT) < bound, "%s: NMSE %.3g", zn_type_name(type), nmse(y, ref, T * OUT));
    graph_free(&g);
}

static void test_moe_ffn(void) {
    moe_case(ZN_TYPE_F32, 64, 24);
    moe_case(ZN_TYPE_Q4_K, 256, 11);
    moe_case(ZN_TYPE_Q8_0, 64, 21);
}

/* EMBED dequantizes the token's row of a quantized table. */
static void test_embed_quantized(void) {
    enum { V = 6, C = 64 };
    static float tab[V * C], deq[C], y[3 * C];
    static uint8_t q[V * C * 2];
    const size_t row = zn_row_size(ZN_TYPE_Q8_0, C);
    for (int i = 0; i < V * C; i++) tab[i] = frand();
    for (int r = 0; r < V; r++) quant_quantize_row(ZN_TYPE_Q8_0, tab + r * C, q + r * row, C);
    fake f;
    fake_init(&f, 1, 1, 8);
    zn_graph g;
    zn_err err;
    CHECK(graph_init_empty(&g, &f.m, 3, 4, 4, &err) == ZN_OK);
    const int32_t toks[3] = {5, 0, 5};
    graph_set_step(&g, toks, 3, 0);
    int ya = graph_act(&g, 3, C);
    graph_node(&g, ZN_OP_EMBED, ya, "embd", -1)->w[0] = fake_tensor(&f, ZN_TYPE_Q8_0, C, V, 1, q);
    CHECK(graph_finish(&g, ya, &err) == ZN_OK);
    run_both(&f.m, &g, y, 3 * C);
    for (int t = 0; t < 3; t++) {
        quant_dequantize_row(ZN_TYPE_Q8_0, q + toks[t] * row, deq, C);
        CHECK(!memcmp(y + t * C, deq, sizeof deq));
    }
    graph_free(&g);
}

int main(void) {
    RUN(test_matmul_all_types);
    RUN(test_rmsnorm);
    RUN(test_elementwise);
    RUN(test_rope);
    RUN(test_attention);
    RUN(test_moe_route);
    RUN(test_moe_ffn);
    RUN(test_packed_kernels);
    RUN(test_kv_to_f16);
    RUN(test_embed_quantized);
    return harness_report("cpu_ops");
}
