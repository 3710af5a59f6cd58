/* The packed matmul kernels of cpu_tile_impl.h on AVX-512 VNNI, two packed
 * groups (16 rows) at a time: each 512-bit vector holds group g's 8 rows in
 * its low half and group g+1's in its high half (two 32-byte loads per
 * weight vector, used for up to 4 tokens), so a vpdpbusd dots 16 rows with a
 * token's 4 broadcast codes where the AVX2 / AVX-VNNI kernels dot 8. The
 * integer sums and every float operation per (row, token) are the AVX-VNNI
 * kernel's, so the results are bit for bit the same (test_cpu_ops). Chosen
 * at run time (cpu_vec.c) on CPUs with AVX-512 F, BW, VL and VNNI. */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#include <immintrin.h>

#include "cpu.h"
#include "quant_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define ROWS2 (2 * CPU_PACK_ROWS)

/* n bytes at p in group g and at p + gb in group g+1, as one vector */
static ALWAYS_INLINE __m512i load2x32(const void *p, size_t gb) {
    const uint8_t *a = p;
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)(a + gb)), 1);
}
static ALWAYS_INLINE __m256i load2x16(const void *p, size_t gb) {
    const uint8_t *a = p;
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                   _mm_loadu_si128((const __m128i *)(a + gb)), 1);
}
static ALWAYS_INLINE __m128i load2x8(const void *p, size_t gb) {
    const uint8_t *a = p;
    return _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)(a + gb)));
}

/* Decode streams the weights (cpu_tile_impl.h): the cache lines PREFETCH_AHEAD
 * bytes further into each group, where that passes the group's end the same
 * place in the next pair (at + gb: the partner group is being read already;
 * a plain look ahead would fetch it and leave the next pair's second group
 * to demand misses, 40 % of decode on a 768-wide model). */
#define PREFETCH_AHEAD 4096
static ALWAYS_INLINE void prefetch2(const void *group, size_t at, size_t size, size_t gb) {
    size_t ahead = at + PREFETCH_AHEAD;
    if (ahead >= gb) ahead += gb;
    for (size_t o = 0; o < size; o += 64) {
        _mm_prefetch((const char *)group + ahead + o, _MM_HINT_T0);
        _mm_prefetch((const char *)group + gb + ahead + o, _MM_HINT_T0);
    }
}

typedef int32_t __attribute__((may_alias, aligned(1))) pk_i32;
typedef int16_t __attribute__((may_alias, aligned(1))) pk_i16;

/* ---- packed Q4_K x Q8_K ---- */

static ALWAYS_INLINE __m512i pk_dot16(const __m512i w[4], const int8_t *q) {
    const pk_i32 *v = (const pk_i32 *)q;
    __m512i h = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], _mm512_set1_epi32(v[0]));
    h = _mm512_dpbusd_epi32(h, w[1], _mm512_set1_epi32(v[1]));
    h = _mm512_dpbusd_epi32(h, w[2], _mm512_set1_epi32(v[2]));
    return _mm512_dpbusd_epi32(h, w[3], _mm512_set1_epi32(v[3]));
}

static ALWAYS_INLINE void q4k_x16_tile(const cpu_q4k_x8 *w, size_t gb, const block_q8_K *const *x, int64_t nb, int nt,
                                       float (*y)[ROWS2], bool pf) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[CPU_PACK_TOKENS];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const cpu_q4k_x8 *b = &w[i];
        if (pf) prefetch2(w, (size_t)i * sizeof *b, sizeof *b, gb);
        const __m512 d = _mm512_cvtph_ps(load2x16(b->d, gb));
        const __m512 dmin = _mm512_cvtph_ps(load2x16(b->dmin, gb));
        __m512i mins[4];
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) mins[p] = _mm512_cvtepu8_epi16(load2x16(b->mins[p], gb));
        __m512i sumi[CPU_PACK_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *xb = &x[t][i];
            const __m256i bs = _mm256_loadu_si256((const __m256i *)xb->bsums);
            const __m512i pair =
                _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
            __m512i ms = _mm512_madd_epi16(mins[0], _mm512_shuffle_epi32(pair, (_MM_PERM_ENUM)0x00));
            ms = _mm512_add_epi32(ms, _mm512_madd_epi16(mins[1], _mm512_shuffle_epi32(pair, (_MM_PERM_ENUM)0x55)));
            ms = _mm512_add_epi32(ms, _mm512_madd_epi16(mins[2], _mm512_shuffle_epi32(pair, (_MM_PERM_ENUM)0xAA)));
            ms = _mm512_add_epi32(ms, _mm512_madd_epi16(mins[3], _mm512_shuffle_epi32(pair, (_MM_PERM_ENUM)0xFF)));
            acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, _mm512_set1_ps(xb->d)), _mm512_cvtepi32_ps(ms), acc[t]);
            sumi[t] = _mm512_setzero_si512();
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m512i slo = _mm512_cvtepu8_epi32(load2x8(b->sc[2 * c], gb));
            const __m512i shi = _mm512_cvtepu8_epi32(load2x8(b->sc[2 * c + 1], gb));
#pragma GCC unroll 4
            for (int hh = 0; hh < 4; hh++) {
                const int h = hh / 2, high = hh % 2;
                __m512i wv[4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    const __m512i bits = load2x32(b->qs[c][4 * h + k], gb);
                    wv[k] = _mm512_and_si512(high ? _mm512_srli_epi16(bits, 4) : bits, m4);
                }
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++)
                    sumi[t] = _mm512_dpwssd_epi32(sumi[t], pk_dot16(wv, x[t][i].qs + 64 * c + 32 * high + 16 * h),
                                                  high ? shi : slo);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[t][i].d)), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y[t], acc[t]);
}

/* ---- packed Q6_K x Q8_K ---- */

static ALWAYS_INLINE __m512i q6_dot8(__m512i w0, __m512i w1, const int8_t *q) {
    const pk_i32 *v = (const pk_i32 *)q;
    return _mm512_add_epi16(_mm512_maddubs_epi16(w0, _mm512_set1_epi32(v[0])),
                            _mm512_maddubs_epi16(w1, _mm512_set1_epi32(v[1])));
}

static ALWAYS_INLINE void q6k_x16_tile(const cpu_q6k_x8 *w, size_t gb, const block_q8_K *const *x, int64_t nb, int nt,
                                       float (*y)[ROWS2], bool pf) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    /* int16 pair (a, b) of each lane -> (a, a) or (b, b), in every 128-bit lane */
    const __m512i dup_a = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13));
    const __m512i dup_b = _mm512_add_epi8(dup_a, _mm512_set1_epi8(2));
    __m512 acc[CPU_PACK_TOKENS];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const cpu_q6k_x8 *b = &w[i];
        if (pf) prefetch2(w, (size_t)i * sizeof *b, sizeof *b, gb);
        const __m512 d = _mm512_cvtph_ps(load2x16(b->d, gb));
        __m512i sc2[8];
#pragma GCC unroll 8
        for (int p = 0; p < 8; p++) sc2[p] = _mm512_cvtepi8_epi16(load2x16(b->sc[p], gb));
        __m512i sumi[CPU_PACK_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const pk_i32 *bs = (const pk_i32 *)x[t][i].bsums;
            __m512i c = _mm512_madd_epi16(sc2[0], _mm512_set1_epi32(bs[0]));
#pragma GCC unroll 8
            for (int p = 1; p < 8; p++) c = _mm512_add_epi32(c, _mm512_madd_epi16(sc2[p], _mm512_set1_epi32(bs[p])));
            sumi[t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(c, 5));
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
#pragma GCC unroll 4
            for (int hh = 0; hh < 4; hh++) {
                const int high = hh / 2, h = hh % 2, m = 2 * (c % 2) + high;
                const int g = 4 * c + 2 * high + h;
                const __m512i s = _mm512_shuffle_epi8(sc2[g / 2], g % 2 ? dup_b : dup_a);
                __m512i wv[4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    const __m512i lo = load2x32(b->ql[c][4 * h + k], gb), hb = load2x32(b->qh[c / 2][4 * h + k], gb);
                    const __m512i top = m == 0   ? _mm512_slli_epi16(hb, 4)
                                        : m == 1 ? _mm512_slli_epi16(hb, 2)
                                        : m == 2 ? hb
                                                 : _mm512_srli_epi16(hb, 2);
                    wv[k] = _mm512_or_si512(_mm512_and_si512(high ? _mm512_srli_epi16(lo, 4) : lo, m4),
                                            _mm512_and_si512(top, m2));
                }
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const int8_t *q = x[t][i].qs + 64 * c + 32 * high + 16 * h;
                    sumi[t] = _mm512_dpwssd_epi32(sumi[t], q6_dot8(wv[0], wv[1], q), s);
                    sumi[t] = _mm512_dpwssd_epi32(sumi[t], q6_dot8(wv[2], wv[3], q + 8), s);
                }
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[t][i].d)), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y[t], acc[t]);
}

/* ---- packed Q8_0 x unsigned Q8_0 tokens ---- */

static ALWAYS_INLINE void q80_x16_tile(const cpu_q80_x8 *w, size_t gb, const block_q8_0 *const *x, int64_t nb, int nt,
                                       float (*y)[ROWS2], bool pf) {
    __m512 acc[CPU_PACK_TOKENS];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const cpu_q80_x8 *b = &w[i];
        if (pf) prefetch2(w, (size_t)i * sizeof *b, sizeof *b, gb);
        const __m512 d = _mm512_cvtph_ps(load2x16(b->d, gb));
        const __m512i wsum = _mm512_cvtepi16_epi32(load2x16(b->wsum, gb));
        const __m512i init = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(wsum, 7));
        __m512i sumi[CPU_PACK_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = init;
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m512i wv[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) wv[k] = load2x32(b->qs[4 * h + k], gb);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const pk_i32 *q = (const pk_i32 *)(x[t][i].qs + 16 * h);
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) sumi[t] = _mm512_dpbusd_epi32(sumi[t], _mm512_set1_epi32(q[k]), wv[k]);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const __m512 dx = _mm512_cvtph_ps(_mm256_set1_epi16(*(const pk_i16 *)&x[t][i].d));
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y[t], acc[t]);
}

/* As cpu_tile_impl.h's PACKED_FN, for the group at w and the next one. */
#define PACKED2_FN(name, tile, wtype, xtype, blck)                                                              \
    static void name(const void *w, size_t gb, const uint8_t *xq, size_t xrow, const int32_t *xi, int nt, int64_t n, \
                     float (*y)[ROWS2]) {                                                                        \
        for (int t0 = 0; t0 < nt; t0 += CPU_PACK_TOKENS) {                                                      \
            const xtype *xs[CPU_PACK_TOKENS];                                                                    \
            const int m = nt - t0 < CPU_PACK_TOKENS ? nt - t0 : CPU_PACK_TOKENS;                                \
            for (int j = 0; j < m; j++) xs[j] = (const xtype *)(xq + (size_t)(xi ? xi[t0 + j] : t0 + j) * xrow); \
            switch (m) {                                                                                         \
            case 1: tile((const wtype *)w, gb, xs, n / (blck), 1, y + t0, t0 == 0); break;                      \
            case 2: tile((const wtype *)w, gb, xs, n / (blck), 2, y + t0, t0 == 0); break;                      \
            case 3: tile((const wtype *)w, gb, xs, n / (blck), 3, y + t0, t0 == 0); break;                      \
            default: tile((const wtype *)w, gb, xs, n / (blck), 4, y + t0, t0 == 0); break;                     \
            }                                                                                                    \
        }                                                                                                        \
    }
PACKED2_FN(packed2_q4_K, q4k_x16_tile, cpu_q4k_x8, block_q8_K, QK_K)
PACKED2_FN(packed2_q6_K, q6k_x16_tile, cpu_q6k_x8, block_q8_K, QK_K)
PACKED2_FN(packed2_q8_0, q80_x16_tile, cpu_q80_x8, block_q8_0, QK8_0)
#undef PACKED2_FN

cpu_pack_tile2_fn cpu_packed_avx512(zn_type t) {
    switch (t) {
    case ZN_TYPE_Q4_K: return packed2_q4_K;
    case ZN_TYPE_Q6_K: return packed2_q6_K;
    case ZN_TYPE_Q8_0: return packed2_q8_0;
    default: return NULL;
    }
}
