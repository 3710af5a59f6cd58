/* AVX2/FMA kernel of the gated delta rule (one token, one value head); the
 * scalar reference and the semantics are in gdn.c / gdn.h. Four value rows
 * go together so each load of k and q serves four rows, and each row takes
 * two passes instead of four: (decay, read with k), then (write back, read
 * with q). Only called when the CPU has AVX2 and FMA. */
#ifdef __x86_64__
#include <immintrin.h>

#include "gdn.h"

enum { ROWS = 4 };

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* rows j0 .. j0+nr-1 (nr <= ROWS) */
static inline void rows_step(float *S, const float *k, const float *q, const float *v, float decay, float b,
                             float scale, float *o, int64_t dk, int64_t j0, int nr) {
    const int64_t nv = dk / 8 * 8;
    const __m256 vdecay = _mm256_set1_ps(decay);
    __m256 acc[ROWS];
    float u[ROWS] = {0}, d[ROWS];
    for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nv; i += 8) {
        const __m256 kv = _mm256_loadu_ps(k + i);
        for (int r = 0; r < nr; r++) {
            float *p = S + (j0 + r) * dk + i;
            const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(p), vdecay);
            _mm256_storeu_ps(p, s);
            acc[r] = _mm256_fmadd_ps(s, kv, acc[r]);
        }
    }
    for (int r = 0; r < nr; r++) {
        float *Sj = S + (j0 + r) * dk;
        u[r] = hsum(acc[r]);
        for (int64_t i = nv; i < dk; i++) {
            Sj[i] *= decay;
            u[r] += Sj[i] * k[i];
        }
        d[r] = (v[j0 + r] - u[r]) * b;
        acc[r] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < nv; i += 8) {
        const __m256 kv = _mm256_loadu_ps(k + i), qv = _mm256_loadu_ps(q + i);
        for (int r = 0; r < nr; r++) {
            float *p = S + (j0 + r) * dk + i;
            const __m256 s = _mm256_fmadd_ps(kv, _mm256_set1_ps(d[r]), _mm256_loadu_ps(p));
            _mm256_storeu_ps(p, s);
            acc[r] = _mm256_fmadd_ps(s, qv, acc[r]);
        }
    }
    for (int r = 0; r < nr; r++) {
        float *Sj = S + (j0 + r) * dk;
        float sum = hsum(acc[r]);
        for (int64_t i = nv; i < dk; i++) {
            Sj[i] += k[i] * d[r];
            sum += Sj[i] * q[i];
        }
        o[j0 + r] = sum * scale;
    }
}

void gdn_step_avx2(float *S, const float *k, const float *q, const float *v, float decay, float b,
                       float scale, float *o, int64_t dk, int64_t dv) {
    int64_t j = 0;
    for (; j + ROWS <= dv; j += ROWS) rows_step(S, k, q, v, decay, b, scale, o, dk, j, ROWS);
    if (j < dv) rows_step(S, k, q, v, decay, b, scale, o, dk, j, (int)(dv - j));
}
#endif
