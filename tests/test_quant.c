/* Quantization formats: conversions, hand-built known-answer blocks, error
 * bounds, dot products (reference, activation-quantized, AVX2), and the
 * shared fixtures: every tensor of every tiny model is dequantized and
 * compared with the F32 file of the same model, and re-quantizing the F32
 * tensor must give the bytes llama-quantize wrote.
 *
 * `test_quant --bench` prints row-dot throughput per type instead. */
#include <dirent.h>
#include <stdint.h>
#include <time.h>
#include <immintrin.h>

#include "harness.h"
#include "gguf.h"
#include "quant.h"
#include "quant_impl.h"

/* ---- helpers ---------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_unif(void) { return (double)(rng_u64() >> 11) * 0x1p-53; }
static float rng_normal(void) { /* Box-Muller */
    double u = rng_unif(), v = rng_unif();
    return (float)(sqrt(-2.0 * log(u + 1e-300)) * cos(2 * M_PI * v));
}
static void fill_normal(float *x, int64_t n, float sigma) {
    for (int64_t i = 0; i < n; i++) x[i] = sigma * rng_normal();
}

static const zn_type all_types[] = {ZN_TYPE_F32, ZN_TYPE_F16, ZN_TYPE_BF16, ZN_TYPE_Q4_0, ZN_TYPE_Q4_1, ZN_TYPE_Q5_0,
                                    ZN_TYPE_Q5_1, ZN_TYPE_Q8_0, ZN_TYPE_Q4_K, ZN_TYPE_Q5_K, ZN_TYPE_Q6_K, ZN_TYPE_Q8_K};
#define N_TYPES (int)(sizeof all_types / sizeof all_types[0])

/* Normalised MSE (sum err^2 / sum x^2) of quantize->dequantize for
 * Gaussian data (the tiny fixtures are N(0, 0.1) too). Rounding with step D
 * costs D^2/12. F16 and BF16 keep 11 and 8 significant bits, so their
 * relative error is at most 2^-11 and 2^-9: hard bounds. Q8_0's step is
 * amax/127 with amax ~ 2.0-2.5 sigma over 32 values: ~2.9e-5 measured; Q8_K
 * has one step per 256 values (amax ~ 3 sigma): ~5e-5. Each bit fewer costs
 * ~4x: Q6_K 3.2e-4, Q5_K 1.3e-3, Q4_K 5.1e-3 (5.7e-3 on the fixtures' small
 * tensors); the 32-blocks have no scale search: Q5_1 1.4e-3, Q5_0 1.9e-3,
 * Q4_1 6.2e-3, Q4_0 7.7e-3 (8.2e-3 on the fixtures). The bounds are the
 * largest measured values plus ~20%. */
static double nmse_bound(zn_type t) {
    switch (t) {
    case ZN_TYPE_F32: return 0;
    case ZN_TYPE_F16: return 0x1p-22;
    case ZN_TYPE_BF16: return 0x1p-18;
    case ZN_TYPE_Q8_0: return 4.0e-5;
    case ZN_TYPE_Q8_K: return 6.5e-5;
    case ZN_TYPE_Q6_K: return 4.0e-4;
    case ZN_TYPE_Q5_K: return 1.7e-3;
    case ZN_TYPE_Q5_1: return 1.8e-3;
    case ZN_TYPE_Q5_0: return 2.3e-3;
    case ZN_TYPE_Q4_K: return 7.0e-3;
    case ZN_TYPE_Q4_1: return 7.5e-3;
    case ZN_TYPE_Q4_0: return 1.0e-2;
    default: return 0;
    }
}

static double nmse(const float *ref, const float *got, int64_t n) {
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
        s += (double)ref[i] * ref[i];
    }
    return s > 0 ? e / s : e;
}

static size_t row_bytes(zn_type t, int64_t n) { return zn_row_size(t, n); }

/* ---- fp16 / bf16 ------------------------------------------------------ */

static void test_fp16_known(void) {
    CHECK_EQ_INT(zn_f32_to_fp16(1.0f), 0x3C00);
    CHECK_EQ_INT(zn_f32_to_fp16(-2.0f), 0xC000);
    CHECK_EQ_INT(zn_f32_to_fp16(0.5f), 0x3800);
    CHECK_EQ_INT(zn_f32_to_fp16(65504.0f), 0x7BFF);           /* largest finite */
    CHECK_EQ_INT(zn_f32_to_fp16(65519.99f), 0x7BFF);
    CHECK_EQ_INT(zn_f32_to_fp16(65520.0f), 0x7C00);           /* tie rounds to even = inf */
    CHECK_EQ_INT(zn_f32_to_fp16(1e10f), 0x7C00);
    CHECK_EQ_INT(zn_f32_to_fp16(-INFINITY), 0xFC00);
    CHECK_EQ_INT(zn_f32_to_fp16(0x1p-24f), 0x0001);           /* smallest subnormal */
    CHECK_EQ_INT(zn_f32_to_fp16(0x1p-25f), 0x0000);           /* tie to even (0) */
    CHECK_EQ_INT(zn_f32_to_fp16(0x1.8p-24f), 0x0002);         /* 1.5 ulp: tie to even (2) */
    CHECK_EQ_INT(zn_f32_to_fp16(0x1p-14f), 0x0400);           /* smallest normal */
    CHECK_EQ_INT(zn_f32_to_fp16(0x1.ff8p-15f), 0x03FF);       /* largest subnormal */
    CHECK_EQ_INT(zn_f32_to_fp16(0x1.ffbp-15f), 0x03FF);
    CHECK_EQ_INT(zn_f32_to_fp16(0x1.ffcp-15f), 0x0400);       /* tie: rounds up into the normals */
    CHECK_EQ_INT(zn_f32_to_fp16(1.0f + 0x1p-11f), 0x3C00);    /* tie, even stays */
    CHECK_EQ_INT(zn_f32_to_fp16(1.0f + 0x1.8p-10f), 0x3C02);  /* tie, odd rounds up */
    CHECK_EQ_INT(zn_f32_to_fp16(-0.0f), 0x8000);
    CHECK(isnan(zn_fp16_to_f32(zn_f32_to_fp16(NAN))));
    CHECK_NEAR(zn_fp16_to_f32(0x3555), 0.333251953125, 0);
    CHECK_NEAR(zn_fp16_to_f32(0x0001), 0x1p-24, 0);
    CHECK_NEAR(zn_fp16_to_f32(0x83FF), -0x1.ff8p-15, 0);
    CHECK(isinf(zn_fp16_to_f32(0x7C00)));
}

/* Every half survives a round trip; f32 -> fp16 is the nearest half with
 * ties to even (checked against neighbours, not against our own code). */
static void test_fp16_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = zn_fp16_to_f32((zn_half)h);
        bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff);
        if (nan ? !isnan(f) || !isnan(zn_fp16_to_f32(zn_f32_to_fp16(f))) : zn_f32_to_fp16(f) != h) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)rng_u64();
        u = (u & 0x807fffffu) | ((uint32_t)(100 + rng_u64() % 50) << 23); /* |f| in [2^-27, 2^22) */
        float f;
        memcpy(&f, &u, 4);
        zn_half h = zn_f32_to_fp16(f);
        double v = zn_fp16_to_f32(h), e = fabs(v - f);
        if ((h & 0x7fff) >= 0x7C00) { /* only past the largest finite half */
            if (fabsf(f) < 65520.0f) bad++;
            continue;
        }
        zn_half up = (zn_half)(h + 1), dn = (zn_half)(h - 1);
        double eu = (up & 0x7fff) < 0x7C00 ? fabs(zn_fp16_to_f32(up) - (double)f) : INFINITY;
        double ed = (h & 0x7fff) ? fabs(zn_fp16_to_f32(dn) - (double)f) : INFINITY;
        if (e > eu || e > ed || ((e == eu || e == ed) && (h & 1))) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_bf16(void) {
    CHECK_EQ_INT(zn_f32_to_bf16(1.0f), 0x3F80);
    CHECK_EQ_INT(zn_f32_to_bf16(-3.0f), 0xC040);
    float t;
    uint32_t u = 0x3F808000u; /* exactly halfway, even below */
    memcpy(&t, &u, 4);
    CHECK_EQ_INT(zn_f32_to_bf16(t), 0x3F80);
    u = 0x3F818000u; /* halfway, odd below: up */
    memcpy(&t, &u, 4);
    CHECK_EQ_INT(zn_f32_to_bf16(t), 0x3F82);
    u = 0x3F808001u;
    memcpy(&t, &u, 4);
    CHECK_EQ_INT(zn_f32_to_bf16(t), 0x3F81);
    CHECK_EQ_INT(zn_f32_to_bf16(INFINITY), 0x7F80);
    CHECK_EQ_INT(zn_f32_to_bf16(3.4e38f), 0x7F80); /* rounds past the max to inf */
    u = 0x7F800001u; /* signalling NaN with a low payload: must stay NaN */
    memcpy(&t, &u, 4);
    CHECK(isnan(zn_bf16_to_f32(zn_f32_to_bf16(t))));
    CHECK_NEAR(zn_bf16_to_f32(0x4049), 3.140625, 0);
    int bad = 0;
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = zn_bf16_to_f32((uint16_t)b);
        if (!isnan(f) && zn_f32_to_bf16(f) != b) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* ---- known-answer blocks ---------------------------------------------- */

static void check_deq(zn_type t, const void *blk, const float *want, int n) {
    float got[QK_K];
    quant_dequantize_row(t, blk, got, n);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            if (!bad) fprintf(stderr, "  %s element %d: got %g want %g\n", zn_type_name(t), i, got[i], want[i]);
            bad++;
        }
    CHECK_EQ_INT(bad, 0);
}

static void test_known_q4_q8(void) {
    float want[32];
    block_q4_0 a = {.d = 0x3800}; /* 0.5 */
    for (int j = 0; j < 16; j++) {
        a.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        want[j] = (float)(j - 8) * 0.5f;
        want[j + 16] = (float)(7 - j) * 0.5f;
    }
    check_deq(ZN_TYPE_Q4_0, &a, want, 32);

    block_q4_1 b = {.d = 0x3C00, .m = 0xC000}; /* d 1, m -2 */
    for (int j = 0; j < 16; j++) {
        b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        want[j] = (float)j - 2;
        want[j + 16] = (float)(15 - j) - 2;
    }
    check_deq(ZN_TYPE_Q4_1, &b, want, 32);

    block_q8_0 c = {.d = 0x3400}; /* 0.25 */
    for (int j = 0; j < 32; j++) {
        c.qs[j] = (int8_t)(j * 7 - 100);
        want[j] = (float)(j * 7 - 100) * 0.25f;
    }
    check_deq(ZN_TYPE_Q8_0, &c, want, 32);
}

/* Q5: the fifth bit of element e is bit e of qh (little endian). */
static void test_known_q5(void) {
    float want0[32], want1[32];
    block_q5_0 a = {.d = 0x3C00, .qh = {0x55, 0x55, 0xAA, 0xAA}}; /* bits: even e < 16, odd e >= 16 */
    block_q5_1 b = {.d = 0x3800, .m = 0x3C00, .qh = {0x55, 0x55, 0xAA, 0xAA}};
    for (int j = 0; j < 16; j++) {
        a.qs[j] = b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        int lo = j | ((j % 2 == 0) ? 16 : 0), hi = (15 - j) | ((j % 2 == 1) ? 16 : 0);
        want0[j] = (float)(lo - 16);
        want0[j + 16] = (float)(hi - 16);
        want1[j] = (float)lo * 0.5f + 1;
        want1[j + 16] = (float)hi * 0.5f + 1;
    }
    check_deq(ZN_TYPE_Q5_0, &a, want0, 32);
    check_deq(ZN_TYPE_Q5_1, &b, want1, 32);
    /* spot values worked by hand: e=0 -> q 0|16=16 -> 0; e=17 -> q 14|16 = 30 -> 14 */
    CHECK_NEAR(want0[0], 0, 0);
    CHECK_NEAR(want0[17], 14, 0);
}

/* Scales {1,2,3,63,16,33,47,63}, mins {0,5,63,7,17,40,1,62}, packed by
 * hand into the 12 bytes (see the layout comment in quant.c). */
static const uint8_t k4_scales[12] = {0x41, 0x82, 0x83, 0xFF, 0x40, 0x85, 0x3F, 0xC7, 0x10, 0x81, 0x1F, 0xEF};
static const int k4_sc[8] = {1, 2, 3, 63, 16, 33, 47, 63}, k4_m[8] = {0, 5, 63, 7, 17, 40, 1, 62};
static int k4_nib_of(int e) { return (e * 3 + e / 32) & 15; }

static void test_known_q4_K(void) {
    block_q4_K b = {.d = 0x3C00, .dmin = 0x3800}; /* 1, 0.5 */
    memcpy(b.scales, k4_scales, 12);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) b.qs[c * 32 + l] = (uint8_t)(k4_nib_of(c * 64 + l) | (k4_nib_of(c * 64 + 32 + l) << 4));
    float want[QK_K];
    for (int e = 0; e < QK_K; e++) want[e] = (float)(k4_sc[e / 32] * k4_nib_of(e)) - 0.5f * (float)k4_m[e / 32];
    check_deq(ZN_TYPE_Q4_K, &b, want, QK_K);
    /* and our quantizer packs the same way: re-quantizing reproduces it */
    float x[QK_K];
    quant_dequantize_row(ZN_TYPE_Q4_K, &b, x, QK_K);
    block_q4_K r;
    quant_quantize_row(ZN_TYPE_Q4_K, x, &r, QK_K);
    float y[QK_K];
    quant_dequantize_row(ZN_TYPE_Q4_K, &r, y, QK_K);
    CHECK(nmse(x, y, QK_K) < 1e-3);
}

static void test_known_q5_K(void) {
    block_q5_K b = {.d = 0x3C00, .dmin = 0x3800};
    memcpy(b.scales, k4_scales, 12);
    for (int l = 0; l < 32; l++) b.qh[l] = (uint8_t)(l * 37 + 11);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) b.qs[c * 32 + l] = (uint8_t)(k4_nib_of(c * 64 + l) | (k4_nib_of(c * 64 + 32 + l) << 4));
    float want[QK_K];
    for (int e = 0; e < QK_K; e++) {
        int j = e / 32, q = k4_nib_of(e) | (((b.qh[e % 32] >> j) & 1) << 4);
        want[e] = (float)(k4_sc[j] * q) - 0.5f * (float)k4_m[j];
    }
    check_deq(ZN_TYPE_Q5_K, &b, want, QK_K);
    /* by hand: e=0: qh[0]=11=0b1011 bit0 set, nibble 0 -> q 16, sc 1, m 0 -> 16 */
    CHECK_NEAR(want[0], 16, 0);
}

/* Q6_K: element e = h*128 + quarter*32 + l takes its low nibble from
 * ql[h*64 + l + (quarter odd)*32] (high nibble for quarters 2-3) and its
 * top two bits from qh[h*32 + l] >> (2*quarter); scales are int8 per 16. */
static void test_known_q6_K(void) {
    block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    for (int g = 0; g < 16; g++) b.scales[g] = (int8_t)(g * 17 - 128); /* -128 .. 127 */
    int q[QK_K];
    for (int e = 0; e < QK_K; e++) {
        q[e] = (e * 5 + 3) & 63;
        int h = e / 128, quarter = (e % 128) / 32, l = e % 32;
        uint8_t *lo = &b.ql[h * 64 + l + (quarter & 1) * 32];
        *lo |= (uint8_t)((q[e] & 15) << (quarter >= 2 ? 4 : 0));
        b.qh[h * 32 + l] |= (uint8_t)((q[e] >> 4) << (2 * quarter));
    }
    float want[QK_K];
    for (int e = 0; e < QK_K; e++) want[e] = 0.25f * (float)b.scales[e / 16] * (float)(q[e] - 32);
    check_deq(ZN_TYPE_Q6_K, &b, want, QK_K);
    /* literal bytes worked by hand: ql[0] = 3 | (323&15)<<4 = 0x33; qh[0] =
     * (3>>4) | (163>>4&3)<<2 | (323>>4&3)<<4 | (483>>4&3)<<6 = 0|2<<2|0<<4|2<<6 */
    CHECK_EQ_INT(b.ql[0], 0x33);
    CHECK_EQ_INT(b.qh[0], 0x88);
    CHECK_NEAR(want[0], 0.25 * -128 * (3 - 32), 0);
    CHECK_NEAR(want[255], 0.25 * 127 * (((255 * 5 + 3) & 63) - 32), 0);
}

static void test_known_q8_K(void) {
    block_q8_K b = {.d = 0.125f};
    float want[QK_K];
    for (int j = 0; j < QK_K; j++) {
        b.qs[j] = (int8_t)(j - 128);
        want[j] = (float)(j - 128) * 0.125f;
    }
    check_deq(ZN_TYPE_Q8_K, &b, want, QK_K);
    float x[QK_K];
    for (int j = 0; j < QK_K; j++) x[j] = (float)(j % 16) - 3.0f;
    block_q8_K a;
    quant_quantize_act(ZN_TYPE_Q8_K, x, &a, QK_K);
    CHECK_NEAR(a.d, -12.0 / 127.0, 1e-9); /* the max-magnitude value (12) maps to -127 */
    CHECK_EQ_INT(a.qs[15], -127);
    CHECK_EQ_INT(a.qs[3], 0);
    CHECK_EQ_INT(a.qs[0], 32); /* -3 * (-127/12) = 31.75 -> 32 */
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += a.qs[g * 16 + i];
        CHECK_EQ_INT(a.bsums[g], s);
    }
}

/* ---- round trip error ------------------------------------------------- */

static void test_roundtrip_error(void) {
    const int64_t n = 256 * 64;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    void *q = malloc(row_bytes(ZN_TYPE_F32, n));
    fill_normal(x, n, 0.1f);
    for (int ti = 0; ti < N_TYPES; ti++) {
        zn_type t = all_types[ti];
        CHECK(quant_supported(t));
        quant_quantize_row(t, x, q, n);
        quant_dequantize_row(t, q, y, n);
        double e = nmse(x, y, n);
        CHECK_MSG(e <= nmse_bound(t), "%s: nmse %.3e > %.3e", zn_type_name(t), e, nmse_bound(t));
        /* and not suspiciously small (a format we do not really quantize) */
        if (t != ZN_TYPE_F32) CHECK_MSG(e > nmse_bound(t) / 8, "%s: nmse %.3e", zn_type_name(t), e);
    }
    CHECK(!quant_supported(ZN_TYPE_Q2_K));
    /* an all-zero row stays zero, no NaN from 0/0 */
    memset(x, 0, n * sizeof *x);
    for (int ti = 0; ti < N_TYPES; ti++) {
        quant_quantize_row(all_types[ti], x, q, n);
        quant_dequantize_row(all_types[ti], q, y, n);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += y[i] != 0.0f;
        CHECK_MSG(bad == 0, "%s", zn_type_name(all_types[ti]));
    }
    free(x);
    free(y);
    free(q);
}

/* ---- dot products ----------------------------------------------------- */

/* Row sizes with odd block counts and float tails. */
static int64_t test_len(zn_type t, int k) {
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    static const int64_t blocks[] = {1, 3, 7, 16};
    static const int64_t floats[] = {1, 7, 33, 4096 + 5};
    return ti->blck == 1 ? floats[k] : ti->blck * blocks[k];
}

/* dot_f32 equals the dequantized row dotted in double. */
static void test_dot_f32(void) {
    float *x = malloc(4200 * sizeof *x), *w = malloc(4200 * sizeof *w), *wd = malloc(4200 * sizeof *wd);
    void *q = malloc(4200 * 4);
    for (int ti = 0; ti < N_TYPES; ti++)
        for (int k = 0; k < 4; k++) {
            zn_type t = all_types[ti];
            int64_t n = test_len(t, k);
            fill_normal(w, n, 0.05f);
            fill_normal(x, n, 1.0f);
            quant_quantize_row(t, w, q, n);
            quant_dequantize_row(t, q, wd, n);
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                ref += (double)wd[i] * x[i];
                mag += fabs((double)wd[i] * x[i]);
            }
            CHECK_MSG(fabs(quant_dot_f32(t, q, x, n) - ref) <= 1e-6 * mag + 1e-30, "%s n=%ld", zn_type_name(t), (long)n);
        }
    free(x);
    free(w);
    free(wd);
    free(q);
}

/* Activation quantization error is within half a step, and the integer
 * dot equals the f32 dot against the dequantized activations; so dot_act
 * differs from the exact dot by at most sum |w_i| |x_i - xq_i|. */
static void test_dot_act(void) {
    const int64_t cap = 4200;
    float *x = malloc(cap * sizeof *x), *w = malloc(cap * sizeof *w), *wd = malloc(cap * sizeof *wd);
    float *xd = malloc(cap * sizeof *xd);
    void *q = malloc(cap * 4), *xq = malloc(cap * 4 + 1024);
    for (int ti = 0; ti < N_TYPES; ti++)
        for (int k = 0; k < 4; k++) {
            zn_type t = all_types[ti], vdt = quant_vec_dot_type(t);
            int64_t n = test_len(t, k);
            fill_normal(w, n, 0.05f);
            fill_normal(x, n, 1.0f);
            quant_quantize_row(t, w, q, n);
            quant_dequantize_row(t, q, wd, n);
            quant_quantize_act(vdt, x, xq, n);
            quant_dequantize_row(vdt, xq, xd, n);
            const zn_type_info *vi = zn_type_get((uint32_t)vdt);
            int bad = 0;
            for (int64_t b = 0; b < n / vi->blck; b++) { /* per block: |x - xq| <= 0.57 step */
                float amax = 0;
                for (uint32_t i = 0; i < vi->blck; i++) amax = fmaxf(amax, fabsf(x[b * vi->blck + i]));
                double step = vdt == ZN_TYPE_F32 ? 0 : amax / 127.0;
                for (uint32_t i = 0; i < vi->blck; i++)
                    bad += fabs((double)x[b * vi->blck + i] - xd[b * vi->blck + i]) > 0.57 * step;
            }
            CHECK_MSG(bad == 0, "%s: %d activations off by more than half a step", zn_type_name(vdt), bad);
            double ref_q = 0, ref = 0, mag = 0, bound = 0;
            for (int64_t i = 0; i < n; i++) {
                ref_q += (double)wd[i] * xd[i];
                ref += (double)wd[i] * x[i];
                mag += fabs((double)wd[i] * xd[i]);
                bound += fabs((double)wd[i]) * fabs((double)x[i] - xd[i]);
            }
            float got = quant_dot_act(t, q, xq, n), got_ref = quant_dot_act_ref(t, q, xq, n);
            CHECK_MSG(fabs(got_ref - ref_q) <= 2e-6 * mag, "%s n=%ld: %g vs %g", zn_type_name(t), (long)n, got_ref, ref_q);
            CHECK_MSG(fabs(got - ref_q) <= 2e-6 * mag, "%s n=%ld: %g vs %g", zn_type_name(t), (long)n, got, ref_q);
            CHECK_MSG(fabs(got - ref) <= bound + 2e-6 * mag, "%s n=%ld", zn_type_name(t), (long)n);
        }
    free(x);
    free(w);
    free(wd);
    free(xd);
    free(q);
    free(xq);
}

/* A finite fp16 of magnitude 2^-10 .. 2^-2 with a random sign. */
static zn_half rand_scale(void) {
    return zn_f32_to_fp16((float)((rng_u64() & 1) ? -1 : 1) * (float)ldexp(1.0 + rng_unif(), -(int)(2 + rng_u64() % 9)));
}

/* Fills a row of type t with random bytes, then makes every fp16/f32 scale
 * field finite: exercises bit patterns the quantizer never writes. */
static void random_row(zn_type t, void *row, int64_t n) {
    size_t bytes = zn_row_size(t, n);
    uint8_t *p = row;
    for (size_t i = 0; i < bytes; i++) p[i] = (uint8_t)rng_u64();
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    for (int64_t b = 0; b < n / (int64_t)ti->blck; b++) {
        uint8_t *blk = p + (size_t)b * ti->size;
        zn_half h[2] = {rand_scale(), rand_scale()};
        switch (t) {
        case ZN_TYPE_F32: { float f = rng_normal(); memcpy(blk, &f, 4); break; }
        case ZN_TYPE_F16: memcpy(blk, h, 2); break;
        case ZN_TYPE_BF16: { uint16_t v = zn_f32_to_bf16(rng_normal()); memcpy(blk, &v, 2); break; }
        case ZN_TYPE_Q4_0: case ZN_TYPE_Q5_0: case ZN_TYPE_Q8_0: memcpy(blk, h, 2); break;
        case ZN_TYPE_Q4_1: case ZN_TYPE_Q5_1: case ZN_TYPE_Q4_K: case ZN_TYPE_Q5_K: memcpy(blk, h, 4); break;
        case ZN_TYPE_Q6_K: memcpy(blk + offsetof(block_q6_K, d), h, 2); break;
        case ZN_TYPE_Q8_K: {
            float d = 1.0f / 127;
            memcpy(blk, &d, 4);
            for (int g = 0; g < 16; g++) { /* bsums must match qs */
                int s = 0;
                for (int i = 0; i < 16; i++) s += ((block_q8_K *)blk)->qs[g * 16 + i];
                ((block_q8_K *)blk)->bsums[g] = (int16_t)s;
            }
            break;
        }
        default: break;
        }
    }
}

/* The dispatching entry points (AVX2 here when the CPU has it) agree with
 * the scalar reference, on random bytes and odd lengths. */
static void test_simd_matches_ref(void) {
    if (!quant_cpu_avx2()) SKIP("no AVX2 on this CPU: the dispatch is the scalar reference itself");
    const int64_t cap = 4200;
    float *x = malloc(cap * sizeof *x), *wd = malloc(cap * sizeof *wd), *xd = malloc(cap * sizeof *xd);
    void *row = malloc(cap * 4), *xq = malloc(cap * 4 + 1024), *xq2 = malloc(cap * 4 + 1024);
    for (int rep = 0; rep < 8; rep++)
        for (int ti = 0; ti < N_TYPES; ti++)
            for (int k = 0; k < 4; k++) {
                zn_type t = all_types[ti], vdt = quant_vec_dot_type(t);
                int64_t n = test_len(t, k);
                random_row(t, row, n);
                fill_normal(x, n, rep % 2 ? 1.0f : 100.0f);
                quant_quantize_act(vdt, x, xq, n);
                quant_quantize_act_ref(vdt, x, xq2, n);
                CHECK_MSG(!memcmp(xq, xq2, zn_row_size(vdt, n)), "%s activations differ", zn_type_name(vdt));
                quant_dequantize_row(t, row, wd, n);
                quant_dequantize_row(vdt, xq, xd, n);
                double mag = 0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)wd[i] * xd[i]);
                float a = quant_dot_act(t, row, xq, n), b = quant_dot_act_ref(t, row, xq, n);
                CHECK_MSG(fabs(a - b) <= 2e-6 * mag, "%s n=%ld: simd %.9g ref %.9g", zn_type_name(t), (long)n, a, b);
            }
    /* Q8_K edge cases: an all-zero block, and +amax before -amax (the
     * first one found sets the sign) in either order */
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < 2 * QK_K; i++) x[i] = c == 0 ? 0.0f : 0.25f * rng_normal();
        if (c) {
            x[QK_K + 37] = c == 1 ? 5.0f : -5.0f;
            x[QK_K + 200] = c == 1 ? -5.0f : 5.0f;
        }
        quant_quantize_act(ZN_TYPE_Q8_K, x, xq, 2 * QK_K);
        quant_quantize_act_ref(ZN_TYPE_Q8_K, x, xq2, 2 * QK_K);
        CHECK_MSG(!memcmp(xq, xq2, zn_row_size(ZN_TYPE_Q8_K, 2 * QK_K)), "Q8_K activations differ (case %d)", c);
    }
    free(x);
    free(wd);
    free(xd);
    free(row);
    free(xq);
    free(xq2);
}

/* ---- fixtures --------------------------------------------------------- */

static void check_fixture(const char *qpath, const char *fpath) {
    gguf_ctx q, f;
    zn_err err = {0};
    if (gguf_open(&q, qpath, &err)) { CHECK_MSG(0, "%s", err.msg); return; }
    if (gguf_open(&f, fpath, &err)) { CHECK_MSG(0, "%s", err.msg); gguf_close(&q); return; }
    int checked = 0;
    for (uint64_t i = 0; i < q.n_tensors; i++) {
        const gguf_tensor *t = &q.tensors[i], *r = gguf_find_tensor(&f, t->name);
        CHECK_MSG(r != NULL, "%s: %s not in %s", qpath, t->name, fpath);
        if (!r) continue;
        CHECK_MSG(r->type == ZN_TYPE_F32, "%s: %s", fpath, t->name);
        CHECK_MSG(quant_supported(t->type), "%s: %s has type %s", qpath, t->name, zn_type_name(t->type));
        int64_t n = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) n *= (int64_t)t->ne[d];
        const float *ref = (const float *)r->data;
        float *got = malloc((size_t)n * sizeof *got);
        quant_dequantize_row(t->type, t->data, got, n);
        double e = nmse(ref, got, n);
        CHECK_MSG(e <= nmse_bound(t->type), "%s: %s (%s): nmse %.3e > %.3e", qpath, t->name, zn_type_name(t->type), e,
                  nmse_bound(t->type));
        /* The first 256 blocks of each tensor (the K-quant search is slow
         * under the sanitizers; all blocks of all files match too). */
        const zn_type_info *ti = zn_type_get(t->type);
        size_t nblk = t->nbytes / ti->size < 256 ? t->nbytes / ti->size : 256, diff = 0;
        uint8_t *re = malloc(nblk * ti->size);
        quant_quantize_row(t->type, ref, re, (int64_t)(nblk * ti->blck));
        for (size_t b = 0; b < nblk; b++) diff += memcmp(re + b * ti->size, t->data + b * ti->size, ti->size) != 0;
        CHECK_MSG(diff == 0, "%s: %s (%s): %zu of %zu blocks differ from llama-quantize's", qpath, t->name,
                  zn_type_name(t->type), diff, nblk);
        free(got);
        free(re);
        checked++;
    }
    CHECK(checked > 0);
    gguf_close(&q);
    gguf_close(&f);
}

static void test_fixtures(void) {
    const char *dir_rel = "models/tiny";
    char dir[512];
    snprintf(dir, sizeof dir, "%s", shared_path(dir_rel));
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return;
    int pairs = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char base[256], fpath[800], qpath[800];
        size_t len = strlen(e->d_name);
        if (len < 6 || len >= sizeof base || strcmp(e->d_name + len - 5, ".gguf")) continue;
        memcpy(base, e->d_name, len - 5);
        base[len - 5] = 0;
        char *dash = strrchr(base, '-');
        if (!dash || !strcmp(dash, "-f32")) continue;
        snprintf(qpath, sizeof qpath, "%s/%s", dir, e->d_name);
        snprintf(fpath, sizeof fpath, "%s/%.*s-f32.gguf", dir, (int)(dash - base), base);
        FILE *fp = fopen(fpath, "rb");
        if (!fp) continue; /* qwen3moe has no F32 file */
        fclose(fp);
        check_fixture(qpath, fpath);
        pairs++;
    }
    closedir(d);
    CHECK_MSG(pairs >= 22, "only %d fixture pairs", pairs);
}

/* ---- benchmark (not a test) ------------------------------------------ */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads every byte (the ceiling a bandwidth-bound row dot can reach). */
__attribute__((target("avx2"))) static uint64_t read_all(const uint8_t *p, size_t n) {
    __m256i acc = _mm256_setzero_si256();
    for (size_t i = 0; i + 32 <= n; i += 32) acc = _mm256_xor_si256(acc, _mm256_loadu_si256((const __m256i *)(p + i)));
    return (uint64_t)_mm256_extract_epi64(acc, 0) ^ (uint64_t)_mm256_extract_epi64(acc, 3);
}

/* Best of 5 passes over `rows` rows; returns seconds. */
static double bench_rows(zn_type t, const uint8_t *w, int64_t rows, int64_t n, const float *x, void *xq, float *out) {
    size_t rb = zn_row_size(t, n);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        quant_quantize_act(quant_vec_dot_type(t), x, xq, n);
        for (int64_t r = 0; r < rows; r++) out[r] = quant_dot_act(t, w + r * rb, xq, n);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

/* Row dots of 4096-element rows, one thread: a 1 MiB matrix (stays in L2:
 * the kernel's compute speed) and a 96 MiB one (the memory system's), in
 * GB/s of weight bytes, against a plain read of the same bytes. */
static void bench(void) {
    const int64_t n = 4096;
    const size_t big = (size_t)96 << 20, small = (size_t)1 << 20;
    float *x = malloc(n * sizeof *x), *out = malloc(((size_t)1 << 16) * sizeof *out);
    void *xq = malloc(n * 4 + 1024);
    uint8_t *w = malloc(big);
    fill_normal(x, n, 1.0f);
    for (size_t i = 0; i < big; i++) w[i] = (uint8_t)(i * 131);
    double best = 1e9;
    uint64_t sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        sink ^= read_all(w, big);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    printf("plain read of 96 MiB: %.2f GB/s (%llx)\n", big / best / 1e9, (unsigned long long)(sink & 1));
    printf("row dot, n=%ld, one thread, %s:     1 MiB (L2)      96 MiB\n", (long)n, quant_cpu_avx2() ? "AVX2" : "scalar");
    for (int ti = 0; ti < N_TYPES; ti++) {
        zn_type t = all_types[ti];
        size_t rb = zn_row_size(t, n);
        int64_t rows_big = (int64_t)(big / rb), rows_small = (int64_t)(small / rb);
        for (int64_t r = 0; r < rows_big; r++) random_row(t, w + r * rb, n);
        double ts = bench_rows(t, w, rows_small, n, x, xq, out), tb = bench_rows(t, w, rows_big, n, x, xq, out);
        printf("  %-5s %8.2f GB/s %6.1f Gw/s   %6.2f GB/s\n", zn_type_name(t), rows_small * rb / ts / 1e9,
               (double)rows_small * n / ts / 1e9, rows_big * rb / tb / 1e9);
    }
    free(x);
    free(out);
    free(xq);
    free(w);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--bench")) {
        bench();
        return 0;
    }
    RUN(test_fp16_known);
    RUN(test_fp16_exhaustive);
    RUN(test_bf16);
    RUN(test_known_q4_q8);
    RUN(test_known_q5);
    RUN(test_known_q4_K);
    RUN(test_known_q5_K);
    RUN(test_known_q6_K);
    RUN(test_known_q8_K);
    RUN(test_roundtrip_error);
    RUN(test_dot_f32);
    RUN(test_dot_act);
    RUN(test_simd_matches_ref);
    RUN(test_fixtures);
    return harness_report("quant");
}
