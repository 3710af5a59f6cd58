/* Quantization formats: fp16/bf16 conversions, block dequantize/quantize
 * and the row dot products of the CPU matmul.
 *
 * The arithmetic follows ggml (llama.cpp) so that our results can be
 * compared with its files and logits:
 *  - quantize_row reproduces llama-quantize without an importance matrix
 *    (round-to-nearest for the 32-blocks, weighted least-squares scale/min
 *    search for the K-quants), so re-quantizing an F32 tensor gives the
 *    bytes llama-quantize wrote, up to float ties;
 *  - the activations of a quantized matmul are quantized once to Q8_0 (the
 *    32-element types) or Q8_K (the K-quants), rounding ties to even as
 *    ggml's AVX2 path does, and each row dot is then an integer dot.
 * Everything here is the scalar reference; quant_avx2.c holds the fast
 * kernels, picked at run time. */
#include <float.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "quant.h"
#include "quant_impl.h"

#define QK_SUB 32          /* K-quant sub-block (Q4_K/Q5_K scales) */
#define QK6_SUB 16         /* Q6_K sub-block */
#define GROUP_MAX_EPS 1e-15f

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
static inline float h2f(zn_half h) { return zn_fp16_to_f32(h); }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- scalar conversions --------------------------------------------- */

float zn_fp16_to_f32(zn_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN payload kept */
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13)); /* rebias 15 -> 127 */
}

zn_half zn_f32_to_fp16(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (zn_half)(sign | 0x7e00 | ((a >> 13) & 0x3ff)); /* quiet NaN */
    if (a >= 0x477ff000u) return (zn_half)(sign | 0x7c00); /* >= 65520 rounds to inf */
    if (a < 0x38800000u) {
        /* below 2^-14: a multiple of 2^-24. Scaling by 2^24 is exact, and
         * adding 2^23 rounds to an integer with ties to even. */
        float v = bits_f32(a) * 0x1p24f;
        v = (v + 0x1p23f) - 0x1p23f;
        return (zn_half)(sign | (uint16_t)v); /* 1024 becomes the smallest normal */
    }
    uint32_t r = a - ((127u - 15u) << 23);
    r += 0xfffu + ((r >> 13) & 1); /* round the 13 dropped bits to nearest even */
    return (zn_half)(sign | (r >> 13));
}

float zn_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t zn_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* ---- K-quant scale packing ------------------------------------------ */

/* Q4_K/Q5_K pack eight 6-bit scales and eight 6-bit mins in 12 bytes:
 * bytes 0-3 / 4-7 hold scale / min 0-3 in their low 6 bits, and the top 2
 * bits of scale / min 4-7; bytes 8-11 hold the low nibbles of scale 4-7
 * (low half) and min 4-7 (high half). */
static void k4_get(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

void quant_k4_pack(uint8_t *s, const uint8_t *ls, const uint8_t *lm) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((ls[j] & 63) | ((ls[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)((lm[j] & 63) | ((lm[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((ls[j + 4] & 0xF) | ((lm[j + 4] & 0xF) << 4));
    }
}

/* Q6_K: 6-bit value of element e (0..255) of a block, before the -32. */
static inline int q6_get(const block_q6_K *b, int e) {
    int h = e / 128, l = e % 32, q = (e % 128) / 32;
    uint8_t lo = b->ql[h * 64 + l + (q & 1) * 32];
    int nib = q >= 2 ? lo >> 4 : lo & 0xF;
    return nib | (((b->qh[h * 32 + l] >> (2 * q)) & 3) << 4);
}

/* Q4_K/Q5_K: 4-bit value of element e: the 32 bytes of each 64-element
 * chunk hold sub-block 2c in low nibbles and 2c+1 in high nibbles. */
static inline int k4_nib(const uint8_t *qs, int e) {
    uint8_t b = qs[(e / 64) * 32 + e % 32];
    return (e % 64) < 32 ? b & 0xF : b >> 4;
}

/* ---- dequantize one block ------------------------------------------- */

static void deq_q4_0(const void *v, float *y) {
    const block_q4_0 *b = v;
    float d = h2f(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((b->qs[j] & 0xF) - 8) * d;
        y[j + 16] = (float)((b->qs[j] >> 4) - 8) * d;
    }
}

static void deq_q4_1(const void *v, float *y) {
    const block_q4_1 *b = v;
    float d = h2f(b->d), m = h2f(b->m);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(b->qs[j] & 0xF) * d + m;
        y[j + 16] = (float)(b->qs[j] >> 4) * d + m;
    }
}

/* Q5: element e's fifth bit is bit e of the little-endian qh word. */
static void q5_vals(const uint8_t *qs, const uint8_t *qh4, int *q) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0xF) | (int)(((qh >> j) & 1) << 4);
        q[j + 16] = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
    }
}

static void deq_q5_0(const void *v, float *y) {
    const block_q5_0 *b = v;
    int q[32];
    q5_vals(b->qs, b->qh, q);
    float d = h2f(b->d);
    for (int j = 0; j < 32; j++) y[j] = (float)(q[j] - 16) * d;
}

static void deq_q5_1(const void *v, float *y) {
    const block_q5_1 *b = v;
    int q[32];
    q5_vals(b->qs, b->qh, q);
    float d = h2f(b->d), m = h2f(b->m);
    for (int j = 0; j < 32; j++) y[j] = (float)q[j] * d + m;
}

static void deq_q8_0(const void *v, float *y) {
    const block_q8_0 *b = v;
    float d = h2f(b->d);
    for (int j = 0; j < 32; j++) y[j] = (float)b->qs[j] * d;
}

/* Q4_K and Q5_K (qh != NULL: bit j of qh[l] is the fifth bit of element
 * 32j + l) */
static void deq_k4(zn_half dh, zn_half dminh, const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, float *y) {
    float d = h2f(dh), dmin = h2f(dminh);
    for (int j = 0; j < QK_K / QK_SUB; j++) {
        int sc, m;
        k4_get(scales, j, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        for (int l = 0; l < QK_SUB; l++) {
            int q = k4_nib(qs, j * QK_SUB + l) | (qh ? ((qh[l] >> j) & 1) << 4 : 0);
            y[j * QK_SUB + l] = d1 * (float)q - m1;
        }
    }
}

static void deq_q4_K(const void *v, float *y) {
    const block_q4_K *b = v;
    deq_k4(b->d, b->dmin, b->scales, b->qs, NULL, y);
}

static void deq_q5_K(const void *v, float *y) {
    const block_q5_K *b = v;
    deq_k4(b->d, b->dmin, b->scales, b->qs, b->qh, y);
}

static void deq_q6_K(const void *v, float *y) {
    const block_q6_K *b = v;
    float d = h2f(b->d);
    for (int e = 0; e < QK_K; e++) y[e] = d * (float)b->scales[e / QK6_SUB] * (float)(q6_get(b, e) - 32);
}

static void deq_q8_K(const void *v, float *y) {
    const block_q8_K *b = v;
    for (int j = 0; j < QK_K; j++) y[j] = b->d * (float)b->qs[j];
}

/* ---- quantize one block (llama-quantize's reference arithmetic) ------ */

/* Signed max-magnitude element (keeps its sign) and its magnitude. */
static float signed_absmax(const float *x, int n, float *amax_out) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
    *amax_out = amax;
    return max;
}

static void q_q4_0(const float *x, void *v) {
    block_q4_0 *b = v;
    float amax, max = signed_absmax(x, 32, &amax);
    /* The max-magnitude value maps to -8, which uses the full [-8, 7]. */
    float d = max / -8, id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = zn_f32_to_fp16(d);
    for (int j = 0; j < 16; j++) {
        int q0 = clampi((int8_t)(x[j] * id + 8.5f), 0, 15);
        int q1 = clampi((int8_t)(x[j + 16] * id + 8.5f), 0, 15);
        b->qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
}

/* Q4_1/Q5_1: x ~ d*q + min with q in [0, nmax]; stores d and min,
 * returns 1/d (0 for a constant block). */
static float affine_scale(const float *x, int nmax, zn_half *d_out, zn_half *m_out, float *lo_out) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    float d = (hi - lo) / (float)nmax;
    *d_out = zn_f32_to_fp16(d);
    *m_out = zn_f32_to_fp16(lo);
    *lo_out = lo;
    return d != 0.0f ? 1.0f / d : 0.0f;
}

static void q_q4_1(const float *x, void *v) {
    block_q4_1 *b = v;
    float lo, id = affine_scale(x, 15, &b->d, &b->m, &lo);
    for (int j = 0; j < 16; j++) {
        int q0 = clampi((int8_t)((x[j] - lo) * id + 0.5f), 0, 15);
        int q1 = clampi((int8_t)((x[j + 16] - lo) * id + 0.5f), 0, 15);
        b->qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
}

static void q5_pack(const int *q, uint8_t *qs, uint8_t *qh4) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        qh |= (uint32_t)((q[j] >> 4) & 1) << j;
        qh |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
    }
    memcpy(qh4, &qh, 4);
}

static void q_q5_0(const float *x, void *v) {
    block_q5_0 *b = v;
    float amax, max = signed_absmax(x, 32, &amax);
    float d = max / -16, id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = zn_f32_to_fp16(d);
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = clampi((int8_t)(x[j] * id + 16.5f), 0, 31);
    q5_pack(q, b->qs, b->qh);
}

static void q_q5_1(const float *x, void *v) {
    block_q5_1 *b = v;
    float lo, id = affine_scale(x, 31, &b->d, &b->m, &lo);
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = (uint8_t)((x[j] - lo) * id + 0.5f) & 31;
    q5_pack(q, b->qs, b->qh);
}

static void q_q8_0(const float *x, void *v) {
    block_q8_0 *b = v;
    float amax;
    signed_absmax(x, 32, &amax);
    float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = zn_f32_to_fp16(d);
    for (int j = 0; j < 32; j++) b->qs[j] = (int8_t)roundf(x[j] * id);
}

/* Fits x ~ scale*L - mn (L in [0, nmax], mn >= 0) minimising the weighted
 * squared error: start from the min/max grid, then try nstep+1 stretched
 * grids and keep the least-squares (scale, min) of the best one. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *mn,
                           float rmin, float rdelta, int nstep) {
    float lo = x[0], hi = x[0], sw = w[0], swx = w[0] * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sw += w[i];
        swx += w[i] * x[i];
    }
    if (lo > 0) lo = 0;
    if (hi == lo) {
        memset(L, 0, (size_t)n);
        *mn = -lo;
        return 0.f;
    }
    float iscale = (float)nmax / (hi - lo), scale = 1 / iscale, best = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(quant_nearest_int(iscale * (x[i] - lo)), 0, nmax);
        float diff = scale * L[i] + lo - x[i];
        best += w[i] * (diff * diff);
    }
    uint8_t Laux[QK_SUB];
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (hi - lo);
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(quant_nearest_int(iscale * (x[i] - lo)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sl += w[i] * (float)l;
            sl2 += w[i] * (float)l * (float)l;
            sxl += w[i] * (float)l * x[i];
        }
        float D = sw * sl2 - sl * sl;
        if (D <= 0) continue;
        float s = (sw * sxl - swx * sl) / D, m = (sl2 * swx - sl * sxl) / D;
        if (m > 0) {
            m = 0;
            s = sxl / sl2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = s * Laux[i] + m - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best) {
            memcpy(L, Laux, (size_t)n);
            best = err;
            scale = s;
            lo = m;
        }
    }
    *mn = -lo;
    return scale;
}

/* Q4_K (nmax 15) and Q5_K (nmax 31): per 32-element sub-block scale and
 * min, themselves quantized to 6 bits against the block's d and dmin.
 * L receives the final 0..nmax values. */
static void q_k4_common(const float *x, int nmax, float rmin, int nstep, zn_half *d_out, zn_half *dmin_out,
                        uint8_t *scales12, uint8_t *L) {
    float scales[QK_K / QK_SUB], mins[QK_K / QK_SUB], w[QK_SUB];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / QK_SUB; j++) {
        const float *xs = x + j * QK_SUB;
        float sum_x2 = 0;
        for (int l = 0; l < QK_SUB; l++) sum_x2 += xs[l] * xs[l];
        float av_x = sqrtf(sum_x2 / QK_SUB);
        for (int l = 0; l < QK_SUB; l++) w[l] = av_x + fabsf(xs[l]);
        scales[j] = fit_scale_min(QK_SUB, nmax, xs, w, L + j * QK_SUB, &mins[j], rmin, 0.1f, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < QK_K / QK_SUB; j++) {
        ls[j] = (uint8_t)quant_nearest_int(inv_scale * scales[j]);
        lm[j] = (uint8_t)quant_nearest_int(inv_min * mins[j]);
        if (ls[j] > 63) ls[j] = 63;
        if (lm[j] > 63) lm[j] = 63;
    }
    quant_k4_pack(scales12, ls, lm);
    *d_out = zn_f32_to_fp16(max_scale / 63.f);
    *dmin_out = zn_f32_to_fp16(max_min / 63.f);
    for (int j = 0; j < QK_K / QK_SUB; j++) {
        int sc, m;
        k4_get(scales12, j, &sc, &m);
        float d = h2f(*d_out) * (float)sc;
        if (d == 0.0f) continue;
        float dm = h2f(*dmin_out) * (float)m;
        for (int l = 0; l < QK_SUB; l++)
            L[j * QK_SUB + l] = (uint8_t)clampi(quant_nearest_int((x[j * QK_SUB + l] + dm) / d), 0, nmax);
    }
}

static void q_q4_K(const float *x, void *v) {
    block_q4_K *b = v;
    uint8_t L[QK_K];
    q_k4_common(x, 15, -1.f, 20, &b->d, &b->dmin, b->scales, L);
    for (int c = 0; c < QK_K / 64; c++)
        for (int l = 0; l < 32; l++) b->qs[c * 32 + l] = (uint8_t)(L[c * 64 + l] | (L[c * 64 + 32 + l] << 4));
}

static void q_q5_K(const float *x, void *v) {
    block_q5_K *b = v;
    uint8_t L[QK_K];
    q_k4_common(x, 31, -0.5f, 15, &b->d, &b->dmin, b->scales, L);
    memset(b->qh, 0, sizeof b->qh);
    for (int c = 0; c < QK_K / 64; c++)
        for (int l = 0; l < 32; l++) {
            int lo = L[c * 64 + l], hi = L[c * 64 + 32 + l];
            b->qs[c * 32 + l] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
            b->qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
}

/* Symmetric fit x ~ scale*(L - nmax), L in [0, 2*nmax-1], weights x^2,
 * trying 18 grids around nmax/max (llama.cpp's make_qx_quants, rmse 1). */
static float fit_scale_sym(int n, int nmax, const float *x, int8_t *L) {
    float amax, max = signed_absmax(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = (float)-nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

static void q_q6_K(const float *x, void *v) {
    block_q6_K *b = v;
    int8_t L[QK_K];
    float scales[QK_K / QK6_SUB], max_scale = 0, max_abs = 0;
    for (int g = 0; g < QK_K / QK6_SUB; g++) {
        scales[g] = fit_scale_sym(QK6_SUB, 32, x + g * QK6_SUB, L + g * QK6_SUB);
        if (fabsf(scales[g]) > max_abs) { max_abs = fabsf(scales[g]); max_scale = scales[g]; }
    }
    if (max_abs < GROUP_MAX_EPS) {
        memset(b, 0, sizeof *b);
        return;
    }
    float iscale = -128.f / max_scale;
    b->d = zn_f32_to_fp16(1 / iscale);
    for (int g = 0; g < QK_K / QK6_SUB; g++) {
        int s = quant_nearest_int(iscale * scales[g]);
        b->scales[g] = (int8_t)(s < 127 ? s : 127);
    }
    for (int g = 0; g < QK_K / QK6_SUB; g++) {
        float d = h2f(b->d) * (float)b->scales[g];
        if (d == 0.0f) continue;
        for (int i = 0; i < QK6_SUB; i++)
            L[g * QK6_SUB + i] = (int8_t)(clampi(quant_nearest_int(x[g * QK6_SUB + i] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const int8_t *Lh = L + h * 128;
            b->ql[h * 64 + l] = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
            b->ql[h * 64 + l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
            b->qh[h * 32 + l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                          ((Lh[l + 96] >> 4) << 6));
        }
}

/* Q8_K, as ggml's quantize_row_q8_K: the max-magnitude value maps to -127
 * exactly, d = 1/iscale kept in f32, and bsums hold the 16-element sums. */
static void q_q8_K(const float *x, void *v) {
    block_q8_K *b = v;
    float amax, max = signed_absmax(x, QK_K, &amax);
    if (amax == 0.0f) {
        memset(b, 0, sizeof *b);
        return;
    }
    float iscale = -127.f / max;
    for (int j = 0; j < QK_K; j++) {
        int q = quant_nearest_int(iscale * x[j]);
        b->qs[j] = (int8_t)(q < 127 ? q : 127);
    }
    for (int g = 0; g < QK_K / 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += b->qs[g * 16 + i];
        b->bsums[g] = (int16_t)s;
    }
    b->d = 1 / iscale;
}

/* ---- type table ------------------------------------------------------ */

typedef struct qfns {
    void (*deq)(const void *blk, float *y);
    void (*quant)(const float *x, void *blk);
} qfns;

static const qfns *fns_of(zn_type t) {
    static const qfns q4_0 = {deq_q4_0, q_q4_0}, q4_1 = {deq_q4_1, q_q4_1}, q5_0 = {deq_q5_0, q_q5_0},
                      q5_1 = {deq_q5_1, q_q5_1}, q8_0 = {deq_q8_0, q_q8_0}, q4_K = {deq_q4_K, q_q4_K},
                      q5_K = {deq_q5_K, q_q5_K}, q6_K = {deq_q6_K, q_q6_K}, q8_K = {deq_q8_K, q_q8_K};
    switch (t) {
    case ZN_TYPE_Q4_0: return &q4_0;
    case ZN_TYPE_Q4_1: return &q4_1;
    case ZN_TYPE_Q5_0: return &q5_0;
    case ZN_TYPE_Q5_1: return &q5_1;
    case ZN_TYPE_Q8_0: return &q8_0;
    case ZN_TYPE_Q4_K: return &q4_K;
    case ZN_TYPE_Q5_K: return &q5_K;
    case ZN_TYPE_Q6_K: return &q6_K;
    case ZN_TYPE_Q8_K: return &q8_K;
    default: return NULL;
    }
}

static bool is_float_type(zn_type t) { return t == ZN_TYPE_F32 || t == ZN_TYPE_F16 || t == ZN_TYPE_BF16; }

bool quant_supported(zn_type t) { return is_float_type(t) || fns_of(t) != NULL; }

void quant_dequantize_row(zn_type t, const void *src, float *dst, int64_t n) {
    switch (t) {
    case ZN_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return;
    case ZN_TYPE_F16: for (int64_t i = 0; i < n; i++) dst[i] = h2f(((const uint16_t *)src)[i]); return;
    case ZN_TYPE_BF16: for (int64_t i = 0; i < n; i++) dst[i] = zn_bf16_to_f32(((const uint16_t *)src)[i]); return;
    default: break;
    }
    const qfns *f = fns_of(t);
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    if (!f || !ti) return;
    const uint8_t *p = src;
    for (int64_t i = 0; i < n / ti->blck; i++) f->deq(p + (size_t)i * ti->size, dst + i * ti->blck);
}

void quant_quantize_row(zn_type t, const float *src, void *dst, int64_t n) {
    switch (t) {
    case ZN_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return;
    case ZN_TYPE_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = zn_f32_to_fp16(src[i]); return;
    case ZN_TYPE_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = zn_f32_to_bf16(src[i]); return;
    default: break;
    }
    const qfns *f = fns_of(t);
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    if (!f || !ti) return;
    uint8_t *p = dst;
    for (int64_t i = 0; i < n / ti->blck; i++) f->quant(src + i * ti->blck, p + (size_t)i * ti->size);
}

float quant_dot_f32(zn_type t, const void *row, const float *x, int64_t n) {
    double sum = 0;
    if (is_float_type(t)) {
        for (int64_t i = 0; i < n; i++) {
            float w = t == ZN_TYPE_F32 ? ((const float *)row)[i]
                      : t == ZN_TYPE_F16 ? h2f(((const uint16_t *)row)[i])
                                         : zn_bf16_to_f32(((const uint16_t *)row)[i]);
            sum += (double)w * x[i];
        }
        return (float)sum;
    }
    const qfns *f = fns_of(t);
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    if (!f || !ti) return 0.0f;
    float w[QK_K];
    const uint8_t *p = row;
    for (int64_t i = 0; i < n / ti->blck; i++) {
        f->deq(p + (size_t)i * ti->size, w);
        const float *xb = x + i * ti->blck;
        for (uint32_t j = 0; j < ti->blck; j++) sum += (double)w[j] * xb[j];
    }
    return (float)sum;
}

/* ---- activations and integer dots ----------------------------------- */

zn_type quant_vec_dot_type(zn_type t) {
    switch (t) {
    case ZN_TYPE_Q4_0: case ZN_TYPE_Q4_1: case ZN_TYPE_Q5_0: case ZN_TYPE_Q5_1: case ZN_TYPE_Q8_0:
        return ZN_TYPE_Q8_0;
    case ZN_TYPE_Q4_K: case ZN_TYPE_Q5_K: case ZN_TYPE_Q6_K: case ZN_TYPE_Q8_K:
        return ZN_TYPE_Q8_K;
    default:
        return ZN_TYPE_F32;
    }
}

/* Q8_0 activations as ggml's AVX2 quantize_row_q8_0: id = 127/amax (not
 * 1/d) and ties rounded to even, so the values match its arithmetic. */
static void act_q8_0(const float *x, block_q8_0 *b) {
    float amax;
    signed_absmax(x, 32, &amax);
    b->d = zn_f32_to_fp16(amax / 127.f);
    float id = amax != 0.0f ? 127.f / amax : 0.0f;
    for (int j = 0; j < 32; j++) b->qs[j] = (int8_t)clampi(quant_nearest_int(x[j] * id), -127, 127);
}

void quant_quantize_act_ref(zn_type vdt, const float *x, void *dst, int64_t n) {
    if (vdt == ZN_TYPE_Q8_0) {
        for (int64_t i = 0; i < n / QK8_0; i++) act_q8_0(x + i * QK8_0, (block_q8_0 *)dst + i);
        return;
    }
    quant_quantize_row(vdt, x, dst, n); /* Q8_K, and F32 as a copy */
}

void quant_quantize_act(zn_type vdt, const float *x, void *dst, int64_t n) {
    if (quant_cpu_avx2() && quant_avx2_quantize_act(vdt, x, dst, n)) return;
    quant_quantize_act_ref(vdt, x, dst, n);
}

static int dot_i8(const int *q, const int8_t *y, int n) {
    int s = 0;
    for (int j = 0; j < n; j++) s += q[j] * y[j];
    return s;
}

static int sum_i8(const int8_t *y, int n) {
    int s = 0;
    for (int j = 0; j < n; j++) s += y[j];
    return s;
}

/* One block of a 32-element type against a Q8_0 block. */
static float dot_blk32(zn_type t, const void *v, const block_q8_0 *y) {
    int q[32];
    float dy = h2f(y->d);
    switch (t) {
    case ZN_TYPE_Q4_0: case ZN_TYPE_Q4_1: {
        const uint8_t *qs = t == ZN_TYPE_Q4_0 ? ((const block_q4_0 *)v)->qs : ((const block_q4_1 *)v)->qs;
        for (int j = 0; j < 16; j++) { q[j] = qs[j] & 0xF; q[j + 16] = qs[j] >> 4; }
        if (t == ZN_TYPE_Q4_1) {
            const block_q4_1 *b = v;
            return h2f(b->d) * dy * (float)dot_i8(q, y->qs, 32) + h2f(b->m) * dy * (float)sum_i8(y->qs, 32);
        }
        for (int j = 0; j < 32; j++) q[j] -= 8;
        return h2f(((const block_q4_0 *)v)->d) * dy * (float)dot_i8(q, y->qs, 32);
    }
    case ZN_TYPE_Q5_0: {
        const block_q5_0 *b = v;
        q5_vals(b->qs, b->qh, q);
        for (int j = 0; j < 32; j++) q[j] -= 16;
        return h2f(b->d) * dy * (float)dot_i8(q, y->qs, 32);
    }
    case ZN_TYPE_Q5_1: {
        const block_q5_1 *b = v;
        q5_vals(b->qs, b->qh, q);
        return h2f(b->d) * dy * (float)dot_i8(q, y->qs, 32) + h2f(b->m) * dy * (float)sum_i8(y->qs, 32);
    }
    case ZN_TYPE_Q8_0: {
        const block_q8_0 *b = v;
        for (int j = 0; j < 32; j++) q[j] = b->qs[j];
        return h2f(b->d) * dy * (float)dot_i8(q, y->qs, 32);
    }
    default: return 0.0f;
    }
}

/* One K-quant block against a Q8_K block. */
static float dot_blkK(zn_type t, const void *v, const block_q8_K *y) {
    int q[QK_SUB];
    switch (t) {
    case ZN_TYPE_Q4_K: case ZN_TYPE_Q5_K: {
        /* sum_j d*sc_j*<q, y>_j - dmin*m_j*sum(y_j); the y sums come from bsums */
        const uint8_t *scales = t == ZN_TYPE_Q4_K ? ((const block_q4_K *)v)->scales : ((const block_q5_K *)v)->scales;
        const uint8_t *qs = t == ZN_TYPE_Q4_K ? ((const block_q4_K *)v)->qs : ((const block_q5_K *)v)->qs;
        zn_half d = t == ZN_TYPE_Q4_K ? ((const block_q4_K *)v)->d : ((const block_q5_K *)v)->d;
        zn_half dmin = t == ZN_TYPE_Q4_K ? ((const block_q4_K *)v)->dmin : ((const block_q5_K *)v)->dmin;
        int sumi = 0, summ = 0;
        for (int j = 0; j < QK_K / QK_SUB; j++) {
            int sc, m;
            k4_get(scales, j, &sc, &m);
            for (int l = 0; l < QK_SUB; l++) {
                q[l] = k4_nib(qs, j * QK_SUB + l);
                if (t == ZN_TYPE_Q5_K) q[l] |= ((((const block_q5_K *)v)->qh[l] >> j) & 1) << 4;
            }
            sumi += sc * dot_i8(q, y->qs + j * QK_SUB, QK_SUB);
            summ += m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
        }
        return h2f(d) * y->d * (float)sumi - h2f(dmin) * y->d * (float)summ;
    }
    case ZN_TYPE_Q6_K: {
        const block_q6_K *b = v;
        int sumi = 0;
        for (int g = 0; g < QK_K / QK6_SUB; g++) {
            for (int l = 0; l < QK6_SUB; l++) q[l] = q6_get(b, g * QK6_SUB + l) - 32;
            sumi += b->scales[g] * dot_i8(q, y->qs + g * QK6_SUB, QK6_SUB);
        }
        return h2f(b->d) * y->d * (float)sumi;
    }
    case ZN_TYPE_Q8_K: {
        const block_q8_K *b = v;
        int sumi = 0;
        for (int j = 0; j < QK_K; j++) sumi += b->qs[j] * y->qs[j];
        return b->d * y->d * (float)sumi;
    }
    default: return 0.0f;
    }
}

float quant_dot_act_ref(zn_type t, const void *row, const void *xq, int64_t n) {
    zn_type vdt = quant_vec_dot_type(t);
    if (vdt == ZN_TYPE_F32) return quant_dot_f32(t, row, xq, n);
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    if (!ti || !fns_of(t)) return 0.0f;
    const uint8_t *p = row;
    float sum = 0;
    for (int64_t i = 0; i < n / ti->blck; i++) {
        const void *blk = p + (size_t)i * ti->size;
        sum += vdt == ZN_TYPE_Q8_0 ? dot_blk32(t, blk, (const block_q8_0 *)xq + i)
                                   : dot_blkK(t, blk, (const block_q8_K *)xq + i);
    }
    return sum;
}

float quant_dot_act(zn_type t, const void *row, const void *xq, int64_t n) {
    float r;
    if (quant_cpu_avx2() && quant_avx2_dot_act(t, row, xq, n, &r)) return r;
    return quant_dot_act_ref(t, row, xq, n);
}

bool quant_cpu_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    /* F16C from CPUID (leaf 1, ECX bit 29): clang's __builtin_cpu_supports
     * has no name for it before clang 16 (the fuzz targets build with clang).
     * Asked once: this runs per row. */
    static _Atomic int f16c = -1;
    int has = atomic_load_explicit(&f16c, memory_order_relaxed);
    if (has < 0) {
        unsigned a, b, c, d;
        has = __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
        atomic_store_explicit(&f16c, has, memory_order_relaxed);
    }
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has;
#else
    return false;
#endif
}
