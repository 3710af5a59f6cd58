/* Gated DeltaNet / IMRoPE reference kernels (src/cpu/gdn.c) against cases worked
 * by hand and against an independent numpy oracle (tests/ref/gdn_ref.py; the
 * EXP_* arrays below are its printed output, pasted unchanged). */
#include "harness.h"
#include "gdn.h"

/* ---- numpy oracle output (/usr/bin/python3 tests/ref/gdn_ref.py) ---- */
static const float EXP_GDN_OUT[12] = {0.191945002, 0.127963335, -0.0428881942, 0.0428881942, 0.325848525, 0.397512073, 0.074371289, 0.352552377, 0.585676254, -0.303149419, -1.29569308, -0.750055291};
static const float EXP_GDN_STATE[8] = {0.806161207, -0.828271302, -0.252805953, 0.42871802, 0.190167923, 1.83238672, 0.318116173, 1.06073836};
static const float EXP_CONV_Y[15] = {0.766056117, -0.109455875, 0.731058579, 0.0806144768, 1.43740905, -0.109455875, 1.6527939, -0.268770584, 0.509384024, 0.140544125, 0.0389055912, 0.971624826, -0.114121679, 0.635379222, -0.0693855232};
static const float EXP_CONV_STATE[9] = {2, -0.5, 0.3, 0.25, -1, 0.6, 0.75, 1, -0.9};
static const float EXP_L2[4] = {0.23076923, -0.307692307, 0, 0.92307692};
static const float EXP_GRMS[6] = {0, -0.338414001, 0.74697332, 1.76155893, -0.071137387, 0.622446882};
static const float EXP_G[3] = {-1.70530651, -0.0126928011, -0.23};
static const float EXP_BETA[3] = {0.5, 0.880797078, 0.268941421};
static const float EXP_ROPE[28] = {-0.197783255, -0.609758136, -0.00299846411, 0.379921336, 0.492879971, 0.597213433, -0.678882747, 0.555153146, 0.948678559, 1.00779947, 1.10320865, 1.20138924, 1.3, 1.4, -1.78134076, -1.17936512, 0.876837725, 1.75164321, 1.88380217, 1.99396055, -1.86730423, 2.45134614, 2.72234377, 2.43551762, 2.51222797, 2.60463458, 2.7, 2.8};

/* Inputs of the oracle's cases (same numbers as gdn_ref.py). */
static const float GDN_Q[6] = {0.6f, 0.8f, 1.0f, 0.0f, 0.0f, -1.0f};          /* [T=3][Hk=1][2] */
static const float GDN_K[6] = {0.8f, -0.6f, 0.28f, 0.96f, -0.6f, 0.8f};
static const float GDN_V[12] = {1.0f, 2.0f, -0.5f, 0.25f, 0.5f, -1.0f, 2.0f, 1.0f,
                                -1.5f, 0.75f, 0.0f, 3.0f};                     /* [3][Hv=2][2] */
static const float GDN_G[6] = {-0.1f, -0.5f, -0.2f, 0.0f, -1.0f, -0.05f};     /* [3][2] */
static const float GDN_B[6] = {0.5f, 0.9f, 0.25f, 1.0f, 0.75f, 0.1f};
/* oracle S0[h][i][j] = {{0.1,-0.2},{0.3,0.4}}, {{-0.5,0},{0.25,0.125}}, transposed to [h][j][i] */
static const float GDN_S0[8] = {0.1f, 0.3f, -0.2f, 0.4f, -0.5f, 0.25f, 0.0f, 0.125f};

static gdn_args gdn_case(float *state, float *out) {
    return (gdn_args){.q = GDN_Q, .k = GDN_K, .v = GDN_V, .g = GDN_G, .beta = GDN_B,
                          .state = state, .out = out, .n_tokens = 3, .h_k = 1, .h_v = 2,
                          .d_k = 2, .d_v = 2, .ld_qk = 2, .ld_v = 4, .ld_o = 4, .ld_g = 2};
}

/* Worked by hand (paper layout S[i][j], zinc keeps S[j][i]):
 * t0: S0 = 0, k = (1,0), v = (2,-1), beta = 0.5, g = 0: delta = v/2 = (1,-0.5),
 *     S = k (x) delta = [[1,-0.5],[0,0]], o = S^T q / sqrt2 with q = (0.6,0.8)
 *     = (0.6, -0.3) / sqrt2.
 * t1: g = ln 0.5 halves S = [[0.5,-0.25],[0,0]]; k = (0,1) reads row 1 = 0, so
 *     delta = v = (1,1) (beta 1), S = [[0.5,-0.25],[1,1]]; q = (1,0):
 *     o = (0.5, -0.25) / sqrt2. */
static void test_gdn_hand(void) {
    const float q[4] = {0.6f, 0.8f, 1.0f, 0.0f}, k[4] = {1, 0, 0, 1}, v[4] = {2, -1, 1, 1};
    const float g[2] = {0.0f, logf(0.5f)}, b[2] = {0.5f, 1.0f};
    float S[4] = {0}, o[4];
    gdn_args a = {.q = q, .k = k, .v = v, .g = g, .beta = b, .state = S, .out = o,
                      .n_tokens = 2, .h_k = 1, .h_v = 1, .d_k = 2, .d_v = 2,
                      .ld_qk = 2, .ld_v = 2, .ld_o = 2, .ld_g = 1};
    gdn_recurrent(&a, 0, 1);
    const float r2 = 1.0f / sqrtf(2.0f);
    CHECK_NEAR(o[0], 0.6f * r2, 1e-6);
    CHECK_NEAR(o[1], -0.3f * r2, 1e-6);
    CHECK_NEAR(o[2], 0.5f * r2, 1e-6);
    CHECK_NEAR(o[3], -0.25f * r2, 1e-6);
    /* zinc layout S[j][i]: value row 0 = (0.5, 1), value row 1 = (-0.25, 1) */
    CHECK_NEAR(S[0], 0.5, 1e-6);
    CHECK_NEAR(S[1], 1.0, 1e-6);
    CHECK_NEAR(S[2], -0.25, 1e-6);
    CHECK_NEAR(S[3], 1.0, 1e-6);
}

static void test_gdn_oracle(void) {
    float S[8], o[12];
    memcpy(S, GDN_S0, sizeof S);
    gdn_args a = gdn_case(S, o);
    gdn_recurrent(&a, 0, 2);
    for (int i = 0; i < 12; i++) CHECK_NEAR(o[i], EXP_GDN_OUT[i], 2e-6);
    for (int i = 0; i < 8; i++) CHECK_NEAR(S[i], EXP_GDN_STATE[i], 2e-6);
}

/* Prefill of T tokens == T decode steps == any head split, bit for bit. */
static void test_gdn_decode_equals_prefill(void) {
    float S1[8], o1[12], S2[8], o2[12];
    memcpy(S1, GDN_S0, sizeof S1);
    memcpy(S2, GDN_S0, sizeof S2);
    gdn_args a = gdn_case(S1, o1);
    gdn_recurrent(&a, 0, 2);
    for (int t = 0; t < 3; t++) {
        gdn_args s = gdn_case(S2, o2 + 4 * t);
        s.q += 2 * t; s.k += 2 * t; s.v += 4 * t; s.g += 2 * t; s.beta += 2 * t;
        s.n_tokens = 1;
        gdn_recurrent(&s, 1, 2); /* heads in two calls, reversed */
        gdn_recurrent(&s, 0, 1);
    }
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
    CHECK(memcmp(S1, S2, sizeof S1) == 0);
}

/* H_v = 2 H_k: value head h must read key head h mod H_k (tiled: heads 0,1,0,1),
 * not h / 2. Each value head is checked against a one-head run fed with the
 * key head it should use. */
static void test_gdn_tiled_heads(void) {
    enum { T = 2, HK = 2, HV = 4, D = 3 };
    float q[T * HK * D], k[T * HK * D], v[T * HV * D], g[T * HV], b[T * HV];
    float S[HV * D * D], o[T * HV * D];
    for (int i = 0; i < T * HK * D; i++) {
        q[i] = sinf(1.0f + i);
        k[i] = cosf(0.5f + 2.0f * i);
    }
    for (int t = 0; t < T; t++)
        for (int hk = 0; hk < HK; hk++) {
            gdn_l2_norm(q + (t * HK + hk) * D, D, 1e-6f);
            gdn_l2_norm(k + (t * HK + hk) * D, D, 1e-6f);
        }
    for (int i = 0; i < T * HV * D; i++) v[i] = 0.3f * i - 1.0f;
    for (int i = 0; i < T * HV; i++) { g[i] = -0.1f * (i % 5); b[i] = 0.2f + 0.1f * i; }
    for (int i = 0; i < HV * D * D; i++) S[i] = 0.05f * (i % 7) - 0.1f;
    float S0[HV * D * D];
    memcpy(S0, S, sizeof S);
    gdn_args a = {.q = q, .k = k, .v = v, .g = g, .beta = b, .state = S, .out = o,
                      .n_tokens = T, .h_k = HK, .h_v = HV, .d_k = D, .d_v = D,
                      .ld_qk = HK * D, .ld_v = HV * D, .ld_o = HV * D, .ld_g = HV};
    gdn_recurrent(&a, 0, HV);
    for (int h = 0; h < HV; h++) {
        const int hk = h % HK;
        float q1[T * D], k1[T * D], v1[T * D], g1[T], b1[T], S1[D * D], o1[T * D];
        for (int t = 0; t < T; t++) {
            memcpy(q1 + t * D, q + (t * HK + hk) * D, D * sizeof(float));
            memcpy(k1 + t * D, k + (t * HK + hk) * D, D * sizeof(float));
            memcpy(v1 + t * D, v + (t * HV + h) * D, D * sizeof(float));
            g1[t] = g[t * HV + h];
            b1[t] = b[t * HV + h];
        }
        memcpy(S1, S0 + h * D * D, sizeof S1);
        gdn_args s = {.q = q1, .k = k1, .v = v1, .g = g1, .beta = b1, .state = S1, .out = o1,
                          .n_tokens = T, .h_k = 1, .h_v = 1, .d_k = D, .d_v = D,
                          .ld_qk = D, .ld_v = D, .ld_o = D, .ld_g = 1};
        gdn_recurrent(&s, 0, 1);
        for (int t = 0; t < T; t++)
            for (int j = 0; j < D; j++) CHECK_NEAR(o[(t * HV + h) * D + j], o1[t * D + j], 0);
        for (int i = 0; i < D * D; i++) CHECK_NEAR(S[h * D * D + i], S1[i], 0);
    }
    /* and the mapping matters: heads 1 and 2 read different keys */
    CHECK(fabsf(o[1 * D] - o[2 * D]) > 1e-3f || fabsf(o[1 * D + 1] - o[2 * D + 1]) > 1e-3f);
}

/* The fused form (raw q/k normalised inside, raw alpha/beta turned into gates
 * inside) equals the separate steps bit for bit, and leaves its inputs alone. */
static void test_gdn_fused_prologue(void) {
    enum { T = 2, HK = 1, HV = 2, D = 4 };
    float q[T * HK * D], k[T * HK * D], v[T * HV * D], al[T * HV], br[T * HV];
    const float dt[HV] = {0.3f, -0.2f}, A[HV] = {-0.7f, -1.3f};
    for (int i = 0; i < T * D; i++) { q[i] = 0.5f * i - 1.0f; k[i] = cosf((float)i); }
    for (int i = 0; i < T * HV * D; i++) v[i] = sinf(0.7f * i);
    for (int i = 0; i < T * HV; i++) { al[i] = 0.4f * i - 0.5f; br[i] = 1.0f - 0.6f * i; }
    float S1[HV * D * D] = {0}, S2[HV * D * D] = {0}, o1[T * HV * D], o2[T * HV * D];
    float qc[T * D], kc[T * D], al0[T * HV], br0[T * HV];
    memcpy(qc, q, sizeof q); memcpy(kc, k, sizeof k);
    memcpy(al0, al, sizeof al); memcpy(br0, br, sizeof br);

    gdn_args f = {.q = q, .k = k, .v = v, .g = al, .beta = br, .dt_bias = dt, .a = A,
                      .state = S1, .out = o1, .n_tokens = T, .h_k = HK, .h_v = HV, .d_k = D,
                      .d_v = D, .ld_qk = D, .ld_v = HV * D, .ld_o = HV * D, .ld_g = HV,
                      .l2_qk = true, .l2_eps = 1e-6f};
    gdn_recurrent(&f, 0, HV);
    CHECK(memcmp(q, qc, sizeof q) == 0 && memcmp(k, kc, sizeof k) == 0);
    CHECK(memcmp(al, al0, sizeof al) == 0 && memcmp(br, br0, sizeof br) == 0);

    for (int t = 0; t < T; t++) {
        gdn_l2_norm(qc + t * D, D, 1e-6f);
        gdn_l2_norm(kc + t * D, D, 1e-6f);
        gdn_gates(al0 + t * HV, br0 + t * HV, al0 + t * HV, br0 + t * HV, dt, A, HV);
    }
    gdn_args s = f;
    s.q = qc; s.k = kc; s.g = al0; s.beta = br0; s.dt_bias = s.a = NULL; s.l2_qk = false;
    s.state = S2; s.out = o2;
    gdn_recurrent(&s, 0, HV);
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
    CHECK(memcmp(S1, S2, sizeof S1) == 0);
}

/* The fast kernel (AVX2/FMA where the CPU has it) against the scalar
 * reference, over head sizes with and without a vector tail (dk % 8) and a
 * row tail (dv % 4), 3 tokens from a non-zero state: equal to 1e-5 relative
 * (the sums run in another order). */
static void test_gdn_fast_kernel(void) {
    const int sizes[3][2] = {{128, 128}, {20, 13}, {3, 5}};
    for (int c = 0; c < 3; c++) {
        const int dk = sizes[c][0], dv = sizes[c][1], T = 3, HK = 1, HV = 2;
        const int ld = 2 * HK * dk + HV * dv;
        float *x = malloc(sizeof(float) * T * ld), *S1 = malloc(sizeof(float) * HV * dv * dk);
        float *S2 = malloc(sizeof(float) * HV * dv * dk), *o1 = malloc(sizeof(float) * T * HV * dv);
        float *o2 = malloc(sizeof(float) * T * HV * dv), g[6], b[6];
        for (int i = 0; i < T * ld; i++) x[i] = sinf(0.37f * i + 0.1f);
        for (int i = 0; i < HV * dv * dk; i++) S1[i] = S2[i] = 0.3f * cosf(0.11f * i);
        for (int i = 0; i < T * HV; i++) { g[i] = -0.05f * (i + 1); b[i] = 0.3f + 0.1f * i; }
        gdn_args a = {.q = x, .k = x + HK * dk, .v = x + 2 * HK * dk, .g = g, .beta = b, .state = S1,
                          .out = o1, .n_tokens = T, .h_k = HK, .h_v = HV, .d_k = dk, .d_v = dv,
                          .ld_qk = ld, .ld_v = ld, .ld_o = HV * dv, .ld_g = HV, .l2_qk = true, .l2_eps = 1e-6f};
        gdn_recurrent(&a, 0, HV);
        a.state = S2;
        a.out = o2;
        a.kernel = gdn_kernel_best();
        gdn_recurrent(&a, 0, HV);
        for (int i = 0; i < T * HV * dv; i++) CHECK_NEAR(o2[i], o1[i], 1e-5 * (1 + fabs(o1[i])));
        for (int i = 0; i < HV * dv * dk; i++) CHECK_NEAR(S2[i], S1[i], 1e-5 * (1 + fabs(S1[i])));
        free(x); free(S1); free(S2); free(o1); free(o2);
    }
}

/* ---- conv1d ---- */
static const float CONV_W[12] = {0.5f, -0.25f, 0.125f, 1.0f, 0.0f, 0.3f, -0.7f, 0.2f, 1, 1, 1, 1};
static const float CONV_S0[9] = {0.1f, 0.2f, 0.3f, -1.0f, 0.5f, 0.0f, 0.25f, -0.25f, 0.5f};
static const float CONV_X[15] = {1.0f, -2.0f, 0.5f, 0.0f, 1.5f, -1.0f, 2.0f, 0.25f, 0.75f,
                                 -0.5f, -1.0f, 1.0f, 0.3f, 0.6f, -0.9f};

static void test_conv_oracle(void) {
    float st[9], y[15];
    memcpy(st, CONV_S0, sizeof st);
    gdn_conv1d_silu(y, CONV_X, 5, 3, 3, CONV_W, 4, st);
    for (int i = 0; i < 15; i++) CHECK_NEAR(y[i], EXP_CONV_Y[i], 1e-6);
    for (int i = 0; i < 9; i++) CHECK_NEAR(st[i], EXP_CONV_STATE[i], 0);
}

/* Same result, bit for bit, for: one prefill of 5; 5 decode steps; 2 + 1 + 2
 * (the 1-token and 2-token calls are shorter than the state, K-1 = 3); and
 * channels split in two calls on strided rows. */
static void test_conv_state_continuity(void) {
    float y_ref[15], st_ref[9];
    memcpy(st_ref, CONV_S0, sizeof st_ref);
    gdn_conv1d_silu(y_ref, CONV_X, 5, 3, 3, CONV_W, 4, st_ref);

    float y[15], st[9];
    memcpy(st, CONV_S0, sizeof st);
    for (int t = 0; t < 5; t++) gdn_conv1d_silu(y + 3 * t, CONV_X + 3 * t, 1, 3, 3, CONV_W, 4, st);
    CHECK(memcmp(y, y_ref, sizeof y) == 0);
    CHECK(memcmp(st, st_ref, sizeof st) == 0);

    memcpy(st, CONV_S0, sizeof st);
    const int split[3] = {2, 1, 2};
    for (int i = 0, t = 0; i < 3; t += split[i++])
        gdn_conv1d_silu(y + 3 * t, CONV_X + 3 * t, split[i], 3, 3, CONV_W, 4, st);
    CHECK(memcmp(y, y_ref, sizeof y) == 0);
    CHECK(memcmp(st, st_ref, sizeof st) == 0);

    /* rows of 5 floats (ld 5) holding the 3 channels at offset 1 */
    float xs[25] = {0}, ys[25] = {0};
    for (int t = 0; t < 5; t++) memcpy(xs + 5 * t + 1, CONV_X + 3 * t, 3 * sizeof(float));
    memcpy(st, CONV_S0, sizeof st);
    gdn_conv1d_silu(ys + 1, xs + 1, 5, 2, 5, CONV_W, 4, st);
    gdn_conv1d_silu(ys + 3, xs + 3, 5, 1, 5, CONV_W + 2 * 4, 4, st + 2 * 3);
    for (int t = 0; t < 5; t++) CHECK(memcmp(ys + 5 * t + 1, y_ref + 3 * t, 3 * sizeof(float)) == 0);
    CHECK(memcmp(st, st_ref, sizeof st) == 0);
}

/* ---- norms and gates ---- */
static void test_norms_and_gates(void) {
    float x[4] = {3, -4, 0, 12};
    gdn_l2_norm(x, 4, 1e-6f);
    for (int i = 0; i < 4; i++) CHECK_NEAR(x[i], EXP_L2[i], 1e-7);

    const float xg[6] = {1, -2, 3, 0.5f, 0.5f, -0.5f}, zg[6] = {0, 1, -1, 2, -3, 0.5f};
    const float wg[3] = {1, 0.5f, -2};
    float y[6];
    gdn_gated_rmsnorm(y, xg, zg, wg, 2, 3, 1e-5f);
    for (int i = 0; i < 6; i++) CHECK_NEAR(y[i], EXP_GRMS[i], 1e-6);
    float zz[6];
    memcpy(zz, zg, sizeof zz);
    gdn_gated_rmsnorm(zz, xg, zz, wg, 2, 3, 1e-5f); /* in place over z */
    CHECK(memcmp(zz, y, sizeof y) == 0);

    float alpha[3] = {0.5f, -3.0f, 25.0f}, br[3] = {0, 2, -1};
    const float dt[3] = {0.25f, 1.0f, -2.0f}, a[3] = {-1.5f, -0.1f, -0.01f};
    gdn_gates(alpha, br, alpha, br, dt, a, 3); /* in place */
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(alpha[i], EXP_G[i], 1e-6);
        CHECK_NEAR(br[i], EXP_BETA[i], 1e-7);
    }
}

/* ---- IMRoPE ---- */
static void test_imrope_components(void) {
    /* Qwen3.5's [11,11,10,0]: t,h,w repeating over 30 pairs, then t, h */
    const int sec[4] = {11, 11, 10, 0};
    for (int i = 0; i < 30; i++) CHECK_EQ_INT(gdn_imrope_component(i, sec), i % 3);
    CHECK_EQ_INT(gdn_imrope_component(30, sec), 0);
    CHECK_EQ_INT(gdn_imrope_component(31, sec), 1);
    CHECK_EQ_INT(gdn_imrope_component(32, sec), 0); /* wraps: sector 0 */
    /* [1,1,1,1]: t,h,w then e (sector 3 is past 3*sections[0]) */
    const int s4[4] = {1, 1, 1, 1};
    CHECK_EQ_INT(gdn_imrope_component(3, s4), 3);
    CHECK_EQ_INT(gdn_imrope_component(5, s4), 1);
    /* [2,1,1,0]: sector 3 is t again (3 < 3*2) */
    const int s2[4] = {2, 1, 1, 0};
    CHECK_EQ_INT(gdn_imrope_component(3, s2), 0);
}

/* By hand: n_dims 4, position 1, base 1e4: theta_scale = 1e4^(-1/2) = 0.01, so
 * pair 0 (x0, x2) turns by 1 rad and pair 1 (x1, x3) by 0.01 rad. */
static void test_imrope_hand(void) {
    const int sec[4] = {1, 1, 0, 0};
    const int32_t pos[4] = {1, 1, 1, 0};
    float cs[4], x[5] = {1, 2, 3, 4, 5};
    gdn_imrope_cache(cs, 4, sec, pos, 10000.0f, 1.0f);
    gdn_rope_neox_apply(x, 1, 5, 4, cs);
    CHECK_NEAR(x[0], cos(1.0) - 3 * sin(1.0), 1e-6);
    CHECK_NEAR(x[2], sin(1.0) + 3 * cos(1.0), 1e-6);
    CHECK_NEAR(x[1], 2 * cos(0.01) - 4 * sin(0.01), 1e-6);
    CHECK_NEAR(x[3], 2 * sin(0.01) + 4 * cos(0.01), 1e-6);
    CHECK_NEAR(x[4], 5, 0);
}

static void test_imrope_oracle(void) {
    const int sec[4] = {1, 1, 1, 1};
    const int32_t pos[4] = {3, 5, 7, 2};
    float cs[12], x[28];
    for (int i = 0; i < 28; i++) x[i] = (float)(i % 14 + 1 + (i / 14) * 14) / 10.0f;
    gdn_imrope_cache(cs, 12, sec, pos, 10000.0f, 1.0f);
    gdn_rope_neox_apply(x, 2, 14, 12, cs);
    for (int i = 0; i < 28; i++) CHECK_NEAR(x[i], EXP_ROPE[i], 2e-6);
}

/* Text tokens (pos = {p,p,p,0}) with sections that never select e reduce to
 * plain NEOX rope at p, which is what llama.cpp computes for qwen35 text. */
static void test_imrope_text_is_neox(void) {
    const int sec[4] = {11, 11, 10, 0};
    const int32_t pos[4] = {37, 37, 37, 0};
    float cs[64];
    gdn_imrope_cache(cs, 64, sec, pos, 1e6f, 1.0f);
    for (int i = 0; i < 32; i++) {
        const double th = 37.0 * pow(1e6, -2.0 * i / 64.0);
        CHECK_NEAR(cs[2 * i], cos(th), 2e-5);
        CHECK_NEAR(cs[2 * i + 1], sin(th), 2e-5);
    }
}

int main(void) {
    RUN(test_gdn_hand);
    RUN(test_gdn_oracle);
    RUN(test_gdn_decode_equals_prefill);
    RUN(test_gdn_tiled_heads);
    RUN(test_gdn_fused_prologue);
    RUN(test_gdn_fast_kernel);
    RUN(test_conv_oracle);
    RUN(test_conv_state_continuity);
    RUN(test_norms_and_gates);
    RUN(test_imrope_components);
    RUN(test_imrope_hand);
    RUN(test_imrope_oracle);
    RUN(test_imrope_text_is_neox);
    return harness_report("gdn");
}
