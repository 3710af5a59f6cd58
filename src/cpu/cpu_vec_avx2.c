/* AVX2/FMA/F16C versions of cpu_vec.c's kernels (this file is compiled with
 * -mavx2 -mfma -mf16c and only called when the CPU has them). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu.h"

/* The four lane sums of a[0..3], each by the same tree whatever the others
 * hold: ((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)). */
static inline __m128 hsum4x8(const __m256 a[4]) {
    const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

static inline __m256 load_h8(const zn_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* Missing queries (nq < 4) repeat the last one; their results are dropped.
 * Two keys per pass: 8 independent accumulator chains, the query loads
 * shared. */
void cpu_att_scores_avx2(const zn_half *k, size_t stride, int n_keys, const float *const *q, int nq, int d,
                         float scale, float (*s)[CPU_ATT_Q]) {
    const float *qs[CPU_ATT_Q];
    #pragma GCC unroll 4
    for (int i = 0; i < CPU_ATT_Q; i++) qs[i] = q[i < nq ? i : nq - 1];
    const int d8 = d / 8 * 8;
    const __m128 vs = _mm_set1_ps(scale);
    for (int j0 = 0; j0 < n_keys; j0 += 2) {
        const int nk = n_keys - j0 < 2 ? 1 : 2;
        const zn_half *kj[2] = {k + (size_t)j0 * stride, k + (size_t)(j0 + nk - 1) * stride};
        __m256 acc[2][CPU_ATT_Q];
        #pragma GCC unroll 4
        for (int a = 0; a < 2; a++)
            #pragma GCC unroll 4
            for (int i = 0; i < CPU_ATT_Q; i++) acc[a][i] = _mm256_setzero_ps();
        for (int e = 0; e < d8; e += 8) {
            const __m256 k0 = load_h8(kj[0] + e), k1 = load_h8(kj[1] + e);
            #pragma GCC unroll 4
            for (int i = 0; i < CPU_ATT_Q; i++) {
                const __m256 qv = _mm256_loadu_ps(qs[i] + e);
                acc[0][i] = _mm256_fmadd_ps(k0, qv, acc[0][i]);
                acc[1][i] = _mm256_fmadd_ps(k1, qv, acc[1][i]);
            }
        }
        #pragma GCC unroll 4
        for (int a = 0; a < nk; a++) {
            __m128 r = hsum4x8(acc[a]);
            if (d8 < d) { /* head dims are multiples of 8 in practice */
                float t[CPU_ATT_Q];
                _mm_storeu_ps(t, r);
                #pragma GCC unroll 4
                for (int i = 0; i < CPU_ATT_Q; i++)
                    for (int e = d8; e < d; e++) t[i] += _cvtsh_ss(kj[a][e]) * qs[i][e];
                r = _mm_loadu_ps(t);
            }
            _mm_storeu_ps(s[j0 + a], _mm_mul_ps(vs, r));
        }
    }
}

/* e^x to about 2 ulp: x = n ln2 + r, |r| <= ln2 / 2, e^r by its degree-6
 * Taylor polynomial, 2^n into the exponent; below -87.3 it gives 0. */
static inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.33654f);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.72283f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n in two factors so that n = 128 (x near the top) does not overflow the exponent */
    const __m256i ni = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(ni, 1);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
    const __m256 s2 =
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
    const __m256 e = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_and_ps(e, _mm256_cmp_ps(x, lo, _CMP_GT_OQ));
}

/* Every slot is exponentiated (pairs of keys x 4 queries per vector, each
 * element on its own, so a query's values do not depend on the others);
 * the sums run per query over its own keys, in key order. */
void cpu_att_softmax_avx2(float (*s)[CPU_ATT_Q], const int *n, int nq) {
    float mx[CPU_ATT_Q];
    int nmax = 0;
    for (int i = 0; i < CPU_ATT_Q; i++) {
        mx[i] = 0; /* slots of missing queries: anything finite */
        if (i >= nq) continue;
        mx[i] = -INFINITY;
        for (int j = 0; j < n[i]; j++) mx[i] = s[j][i] > mx[i] ? s[j][i] : mx[i];
        nmax = n[i] > nmax ? n[i] : nmax;
    }
    const __m256 m = _mm256_setr_ps(mx[0], mx[1], mx[2], mx[3], mx[0], mx[1], mx[2], mx[3]);
    float *f = s[0];
    int j = 0;
    for (; j + 2 <= nmax; j += 2) _mm256_storeu_ps(f + 4 * j, exp8(_mm256_sub_ps(_mm256_loadu_ps(f + 4 * j), m)));
    if (j < nmax) { /* an odd last key: pad the pair */
        float t[8] = {0};
        memcpy(t, f + 4 * j, sizeof(float) * 4);
        _mm256_storeu_ps(t, exp8(_mm256_sub_ps(_mm256_loadu_ps(t), m)));
        memcpy(f + 4 * j, t, sizeof(float) * 4);
    }
    float inv[CPU_ATT_Q] = {0, 0, 0, 0};
    for (int i = 0; i < nq; i++) {
        double sum = 0;
        for (int k = 0; k < n[i]; k++) sum += s[k][i];
        inv[i] = (float)(1.0 / sum);
    }
    const __m256 vi = _mm256_setr_ps(inv[0], inv[1], inv[2], inv[3], inv[0], inv[1], inv[2], inv[3]);
    for (j = 0; j + 2 <= nmax; j += 2) _mm256_storeu_ps(f + 4 * j, _mm256_mul_ps(_mm256_loadu_ps(f + 4 * j), vi));
    for (; j < nmax; j++)
        for (int i = 0; i < CPU_ATT_Q; i++) s[j][i] *= inv[i];
}

/* y[i][e0 .. e0 + 8W) for the 4 queries, W vectors each, in registers
 * (4W independent accumulator chains). */
static inline __attribute__((always_inline)) void att_values_w(const zn_half *v, size_t stride, const int *nn,
                                                               const float (*s)[CPU_ATT_Q], int nq, int e0, int W,
                                                               float *const *y) {
    __m256 acc[2][CPU_ATT_Q];
    #pragma GCC unroll 4
    for (int w = 0; w < W; w++)
        #pragma GCC unroll 4
        for (int i = 0; i < CPU_ATT_Q; i++) acc[w][i] = _mm256_setzero_ps();
    int j = 0;
    for (; j < nn[0]; j++) { /* every query sees key j */
        #pragma GCC unroll 4
        for (int w = 0; w < W; w++) {
            const __m256 vv = load_h8(v + (size_t)j * stride + e0 + 8 * w);
            #pragma GCC unroll 4
            for (int i = 0; i < CPU_ATT_Q; i++) acc[w][i] = _mm256_fmadd_ps(_mm256_broadcast_ss(&s[j][i]), vv, acc[w][i]);
        }
    }
    for (; j < nn[CPU_ATT_Q - 1]; j++) /* the later queries' keys */
        #pragma GCC unroll 4
        for (int w = 0; w < W; w++) {
            const __m256 vv = load_h8(v + (size_t)j * stride + e0 + 8 * w);
            #pragma GCC unroll 4
            for (int i = 1; i < CPU_ATT_Q; i++)
                if (j < nn[i]) acc[w][i] = _mm256_fmadd_ps(_mm256_broadcast_ss(&s[j][i]), vv, acc[w][i]);
        }
    #pragma GCC unroll 4
    for (int w = 0; w < W; w++)
        #pragma GCC unroll 4
        for (int i = 0; i < nq; i++) _mm256_storeu_ps(y[i] + e0 + 8 * w, acc[w][i]);
}

void cpu_att_values_avx2(const zn_half *v, size_t stride, const int *n, const float (*s)[CPU_ATT_Q], int nq, int d,
                         float *const *y) {
    int nn[CPU_ATT_Q];
    #pragma GCC unroll 4
    for (int i = 0; i < CPU_ATT_Q; i++) nn[i] = n[i < nq ? i : nq - 1];
    int e = 0;
    for (; e + 16 <= d; e += 16) att_values_w(v, stride, nn, s, nq, e, 2, y);
    for (; e + 8 <= d; e += 8) att_values_w(v, stride, nn, s, nq, e, 1, y);
    #pragma GCC unroll 4
    for (int i = 0; i < nq; i++)
        for (int t = e; t < d; t++) {
            float acc = 0;
            for (int j = 0; j < nn[i]; j++) acc += s[j][i] * _cvtsh_ss(v[(size_t)j * stride + t]);
            y[i][t] = acc;
        }
}

void cpu_to_f16_avx2(zn_half *dst, const float *src, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

/* The same products as backend_kv_dequantize (d times the code's value,
 * in float), 8 at a time; q3_0r's codes index its levels in one register. */
void cpu_kv_to_f16_avx2(zn_kv_type t, const uint8_t *src, zn_half *dst, int n) {
    const size_t bb = backend_kv_bytes(t, 32);
    const __m256 lv = _mm256_loadu_ps(backend_kv_q3_level);
    const __m256i sh2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), sh1 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int b = 0; b < n / 32; b++, src += bb, dst += 32) {
        uint16_t h;
        memcpy(&h, src, 2);
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
        const uint8_t *q = src + 2;
        for (int g = 0; g < 4; g++) {
            __m256 v;
            if (t == ZN_KV_Q8_0) {
                v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * g))));
            } else if (t == ZN_KV_Q3_0R) {
                const __m256i lo = _mm256_srlv_epi32(_mm256_set1_epi32(q[2 * g] | q[2 * g + 1] << 8), sh2);
                const __m256i hi = _mm256_srlv_epi32(_mm256_set1_epi32(q[8 + g]), sh1);
                const __m256i c = _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(3)),
                                                  _mm256_slli_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), 2));
                v = _mm256_permutevar8x32_ps(lv, c);
            } else { /* Q4_0: values 0-15 are the low nibbles of qs[0..15], 16-31 the high ones */
                __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * (g & 1))));
                if (g >= 2) c = _mm256_srli_epi32(c, 4);
                c = _mm256_sub_epi32(_mm256_and_si256(c, _mm256_set1_epi32(15)), _mm256_set1_epi32(8));
                v = _mm256_cvtepi32_ps(c);
            }
            _mm_storeu_si128((__m128i *)(dst + 8 * g), _mm256_cvtps_ph(_mm256_mul_ps(v, d), _MM_FROUND_TO_NEAREST_INT));
        }
    }
}

static inline __m256 swiglu8(__m256 g, __m256 u) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

/* The tail goes through the same vector code (padded), so an element's
 * value does not depend on where a thread's range starts. */
void cpu_swiglu_avx2(float *y, const float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, swiglu8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        float tg[8] = {0}, tu[8] = {0};
        memcpy(tg, g + i, sizeof(float) * (size_t)(n - i));
        memcpy(tu, u + i, sizeof(float) * (size_t)(n - i));
        _mm256_storeu_ps(tg, swiglu8(_mm256_loadu_ps(tg), _mm256_loadu_ps(tu)));
        memcpy(y + i, tg, sizeof(float) * (size_t)(n - i));
    }
}

/* Four double accumulators, 4 lanes each: a fixed order for a given n. */
double cpu_sum_sq_avx2(const float *x, int64_t n) {
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd(), a2 = _mm256_setzero_pd(), a3 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
        const __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v0)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1));
        const __m256d d2 = _mm256_cvtps_pd(_mm256_castps256_ps128(v1)), d3 = _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1));
        a0 = _mm256_fmadd_pd(d0, d0, a0);
        a1 = _mm256_fmadd_pd(d1, d1, a1);
        a2 = _mm256_fmadd_pd(d2, d2, a2);
        a3 = _mm256_fmadd_pd(d3, d3, a3);
    }
    const __m256d a = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    double s = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    for (; i < n; i++) s += (double)x[i] * x[i];
    return s;
}
