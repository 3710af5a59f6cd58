/* The packed matmul kernels, included by cpu_tile_avx2.c and (compiled for
 * AVX-VNNI) cpu_tile_vnni_avx2.c, which define:
 *   ACC_MADD(acc, p, s)   acc + pairwise int16 products of p and s (int32)
 *   PK_FIRST(w, x), PK_DOT(acc, w, x)
 *                         packed Q4_K: per 32-bit lane, the 4 products of
 *                         u8 w and s8 x summed (into acc), in a form PK_ACC
 *                         takes; sums of 16 products stay below 2^15
 *   PK_SCALE(s)           the scale vector (int32 lanes < 64) in PK_ACC's form
 *   PK_ACC(acc, h, s)     acc + (the 16-product sum in h) * s, int32 lanes
 *   P8_INIT(wsum), P8_DOT(acc, w, xu)
 *                         packed Q8_0: the int32 row sums start at
 *                         P8_INIT(row code sums) and P8_DOT adds the 4
 *                         products of s8 w and u8 xu (token code + 128)
 *                         per lane, so that they end at the sums of w * code
 *   PACK_SELECT           the name of the type -> packed kernel selector
 * Both give the same exact integers, so results do not depend on the path.
 *
 * The weights are packed 8 rows at a time (cpu_pack.c): a step dots 8 rows
 * (one per 32-bit lane) with a token's 4 broadcast codes, for up to 4
 * tokens, so a block's codes and scales are unpacked once for 8 rows x 4
 * tokens and nothing is summed across lanes.
 * Each (row, token) result is computed the same way for every token count,
 * so it does not depend on how the batch was grouped. */
#if !defined(ACC_MADD) || !defined(PK_DOT) || !defined(P8_DOT) || !defined(PACK_SELECT)
#error "define ACC_MADD, PK_*, P8_* and PACK_SELECT before including cpu_tile_impl.h"
#endif
#include <immintrin.h>
#include <string.h>

#include "quant_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Decode streams the weights from memory: ask for the cache lines a few
 * KiB ahead of the block being read (past a row's end is the next row). */
#define PREFETCH_AHEAD 4096
static ALWAYS_INLINE void prefetch_ahead(const void *block, size_t size) {
    for (size_t o = 0; o < size; o += 64) _mm_prefetch((const char *)block + PREFETCH_AHEAD + o, _MM_HINT_T0);
}

/* ---- packed Q4_K (8 rows) x Q8_K ---- */

/* Per row lane: the 16 products of 4 weight dwords (codes 0..15) with the
 * token's 16 activations at q (broadcast 4 at a time), at most 16 * 15 *
 * 127 in magnitude, so PK_ACC can scale it with 16-bit multiplies. */
typedef int32_t __attribute__((may_alias, aligned(1))) pk_i32; /* so the broadcasts load from memory */
static ALWAYS_INLINE __m256i pk_dot16(const __m256i w[4], const int8_t *q) {
    const pk_i32 *v = (const pk_i32 *)q;
    __m256i h = PK_FIRST(w[0], _mm256_set1_epi32(v[0]));
    h = PK_DOT(h, w[1], _mm256_set1_epi32(v[1]));
    h = PK_DOT(h, w[2], _mm256_set1_epi32(v[2]));
    return PK_DOT(h, w[3], _mm256_set1_epi32(v[3]));
}

static ALWAYS_INLINE void q4k_x8_tile(const cpu_q4k_x8 *w, const block_q8_K *const *x, int64_t nb, int nt,
                                      float (*y)[CPU_PACK_ROWS], bool pf) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[CPU_PACK_TOKENS];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const cpu_q4k_x8 *b = &w[i];
        if (pf) prefetch_ahead(b, sizeof *b);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->d));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->dmin));
        /* mins: per row, sum_j min_j * (sum of the token's sub-block j) */
        __m256i mins[4];
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) mins[p] = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)b->mins[p]));
        __m256i sumi[CPU_PACK_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *xb = &x[t][i];
            const __m256i bs = load32(xb->bsums);
            const __m256i pair = _mm256_broadcastsi128_si256(
                _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
            __m256i ms = _mm256_madd_epi16(mins[0], _mm256_shuffle_epi32(pair, 0x00));
            ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mins[1], _mm256_shuffle_epi32(pair, 0x55)));
            ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mins[2], _mm256_shuffle_epi32(pair, 0xAA)));
            ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mins[3], _mm256_shuffle_epi32(pair, 0xFF)));
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, _mm256_set1_ps(xb->d)), _mm256_cvtepi32_ps(ms), acc[t]);
            sumi[t] = _mm256_setzero_si256();
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i slo = PK_SCALE(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)b->sc[2 * c])));
            const __m256i shi = PK_SCALE(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)b->sc[2 * c + 1])));
            /* low nibbles (sub-block 2c), then high (2c+1), 16 codes a row
             * at a time: 4 weight vectors live, so nothing spills */
#pragma GCC unroll 4
            for (int hh = 0; hh < 4; hh++) {
                const int h = hh / 2, high = hh % 2;
                __m256i wv[4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    const __m256i bits = load32(b->qs[c][4 * h + k]);
                    wv[k] = _mm256_and_si256(high ? _mm256_srli_epi16(bits, 4) : bits, m4);
                }
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++)
                    sumi[t] = PK_ACC(sumi[t], pk_dot16(wv, x[t][i].qs + 64 * c + 32 * high + 16 * h), high ? shi : slo);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t][i].d)), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y[t], acc[t]);
}

/* ---- packed Q6_K (8 rows) x Q8_K ---- */

/* Per row lane: sum over the 8 codes of 2 weight dwords x the token's 8
 * activations at q, as int16 pairs (2 x 2 x 63 x 127 fits). */
static ALWAYS_INLINE __m256i q6_dot8(__m256i w0, __m256i w1, const int8_t *q) {
    const pk_i32 *v = (const pk_i32 *)q;
    return _mm256_add_epi16(_mm256_maddubs_epi16(w0, _mm256_set1_epi32(v[0])),
                            _mm256_maddubs_epi16(w1, _mm256_set1_epi32(v[1])));
}

static ALWAYS_INLINE void q6k_x8_tile(const cpu_q6k_x8 *w, const block_q8_K *const *x, int64_t nb, int nt,
                                      float (*y)[CPU_PACK_ROWS], bool pf) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    /* int16 pair (a, b) of each lane -> (a, a) or (b, b) */
    const __m256i dup_a = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8,
                                           9, 8, 9, 12, 13, 12, 13);
    const __m256i dup_b = _mm256_add_epi8(dup_a, _mm256_set1_epi8(2));
    __m256 acc[CPU_PACK_TOKENS];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const cpu_q6k_x8 *b = &w[i];
        if (pf) prefetch_ahead(b, sizeof *b);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->d));
        __m256i sc2[8]; /* per row: the scales of groups 2p, 2p+1 as an int16 pair */
#pragma GCC unroll 8
        for (int p = 0; p < 8; p++) sc2[p] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->sc[p]));
        /* codes are stored + 32: start from -32 * sum_g scale_g * (the token's group sum) */
        __m256i sumi[CPU_PACK_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const pk_i32 *bs = (const pk_i32 *)x[t][i].bsums;
            __m256i c = _mm256_madd_epi16(sc2[0], _mm256_set1_epi32(bs[0]));
#pragma GCC unroll 8
            for (int p = 1; p < 8; p++) c = _mm256_add_epi32(c, _mm256_madd_epi16(sc2[p], _mm256_set1_epi32(bs[p])));
            sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(c, 5));
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
#pragma GCC unroll 4
            for (int hh = 0; hh < 4; hh++) {
                const int high = hh / 2, h = hh % 2, m = 2 * (c % 2) + high;
                const int g = 4 * c + 2 * high + h; /* the 16 codes' group */
                const __m256i s = _mm256_shuffle_epi8(sc2[g / 2], g % 2 ? dup_b : dup_a);
                __m256i wv[4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    const __m256i lo = load32(b->ql[c][4 * h + k]), hb = load32(b->qh[c / 2][4 * h + k]);
                    const __m256i top = m == 0   ? _mm256_slli_epi16(hb, 4)
                                        : m == 1 ? _mm256_slli_epi16(hb, 2)
                                        : m == 2 ? hb
                                                 : _mm256_srli_epi16(hb, 2);
                    wv[k] = _mm256_or_si256(_mm256_and_si256(high ? _mm256_srli_epi16(lo, 4) : lo, m4),
                                            _mm256_and_si256(top, m2));
                }
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const int8_t *q = x[t][i].qs + 64 * c + 32 * high + 16 * h;
                    sumi[t] = ACC_MADD(sumi[t], q6_dot8(wv[0], wv[1], q), s);
                    sumi[t] = ACC_MADD(sumi[t], q6_dot8(wv[2], wv[3], q + 8), s);
                }
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t][i].d)), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y[t], acc[t]);
}

/* Q8_0 (8 rows) x unsigned Q8_0 tokens (codes + 128): per row, P8_DOT
 * sums the code products, P8_INIT(wsum) holds what the +128 adds to them
 * (or nothing, on a path that takes it off the token instead). */
typedef int16_t __attribute__((may_alias, aligned(1))) pk_i16;
static ALWAYS_INLINE void q80_x8_tile(const cpu_q80_x8 *w, const block_q8_0 *const *x, int64_t nb, int nt,
                                      float (*y)[CPU_PACK_ROWS], bool pf) {
    __m256 acc[CPU_PACK_TOKENS];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const cpu_q80_x8 *b = &w[i];
        if (pf) prefetch_ahead(b, sizeof *b);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->d));
        const __m256i init = P8_INIT(_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)b->wsum)));
        __m256i sumi[CPU_PACK_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = init;
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i wv[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) wv[k] = load32(b->qs[4 * h + k]);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const pk_i32 *q = (const pk_i32 *)(x[t][i].qs + 16 * h);
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) sumi[t] = P8_DOT(sumi[t], wv[k], _mm256_set1_epi32(q[k]));
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_set1_epi16(*(const pk_i16 *)&x[t][i].d));
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y[t], acc[t]);
}

/* One instance per token count (so the loops unroll), CPU_PACK_TOKENS at
 * a time; only the first pass prefetches (the next ones find the group in
 * L1). */
#define PACKED_FN(name, tile, wtype, xtype, blck)                                                       \
    static void name(const void *w, const uint8_t *xq, size_t xrow, const int32_t *xi, int nt, int64_t n,   \
                     float (*y)[CPU_PACK_ROWS]) {                                                        \
        for (int t0 = 0; t0 < nt; t0 += CPU_PACK_TOKENS) {                                             \
            const xtype *xs[CPU_PACK_TOKENS];                                                           \
            const int m = nt - t0 < CPU_PACK_TOKENS ? nt - t0 : CPU_PACK_TOKENS;                       \
            for (int j = 0; j < m; j++) xs[j] = (const xtype *)(xq + (size_t)(xi ? xi[t0 + j] : t0 + j) * xrow); \
            switch (m) {                                                                                \
            case 1: tile((const wtype *)w, xs, n / (blck), 1, y + t0, t0 == 0); break;                 \
            case 2: tile((const wtype *)w, xs, n / (blck), 2, y + t0, t0 == 0); break;                 \
            case 3: tile((const wtype *)w, xs, n / (blck), 3, y + t0, t0 == 0); break;                 \
            default: tile((const wtype *)w, xs, n / (blck), 4, y + t0, t0 == 0); break;                \
            }                                                                                           \
        }                                                                                               \
    }
PACKED_FN(packed_q4_K, q4k_x8_tile, cpu_q4k_x8, block_q8_K, QK_K)
PACKED_FN(packed_q6_K, q6k_x8_tile, cpu_q6k_x8, block_q8_K, QK_K)
PACKED_FN(packed_q8_0, q80_x8_tile, cpu_q80_x8, block_q8_0, QK8_0)
#undef PACKED_FN

cpu_pack_tile_fn PACK_SELECT(zn_type t) {
    switch (t) {
    case ZN_TYPE_Q4_K: return packed_q4_K;
    case ZN_TYPE_Q6_K: return packed_q6_K;
    case ZN_TYPE_Q8_0: return packed_q8_0;
    default: return NULL;
    }
}

