/* AVX2/FMA/F16C row kernels: the CPU matmul's inner loop. Each computes the
 * same integer sums as the scalar reference in quant.c (only the float
 * accumulation order differs); quant.c calls them when quant_cpu_avx2().
 *
 * Integer trick used throughout: _mm256_maddubs_epi16 multiplies unsigned
 * by signed bytes and adds pairs into int16. Unsigned weights (the 4/5/6-bit
 * codes before their offset) go straight in; for signed weights the sign is
 * moved onto the activation (|w| * sign(w)*y). Pair sums stay below 2^15 for
 * every input these formats produce (activations are in [-127, 127]). */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "quant.h"
#include "quant_impl.h"
#include "quant_avx2_codes.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

static inline float hsum4_ps(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float hsum_ps(__m256 v) {
    return hsum4_ps(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

static inline float h2f(zn_half h) { return _cvtsh_ss(h); }

static inline __m256i ones16(void) { return _mm256_set1_epi16(1); }

/* unsigned bytes (< 128) x signed bytes -> 8 int32 partial sums */
static inline __m256i dot_u8(__m256i u, __m256i y) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), ones16()); }

/* signed x signed bytes -> 8 int32 partial sums */
static inline __m256i dot_s8(__m256i x, __m256i y) {
    return dot_u8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 16 bytes of packed nibbles -> 32 bytes: low nibbles then high nibbles */
static inline __m256i nibbles32(const uint8_t *qs) {
    __m128i t = _mm_loadu_si128((const __m128i *)qs);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* bit i of a 32-bit little-endian word -> byte i: 0xFF when set, else 0 */
static inline __m256i bits32(const uint8_t *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)w), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(b, bit), bit);
}

static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* sum of the 32 int8 of y, as 8 int32 partial sums */
static inline __m256i sum_s8(__m256i y) { return dot_u8(_mm256_set1_epi8(1), y); }

/* ---- 32-element types x Q8_0 ---------------------------------------- */

static float dot_q8_0(const block_q8_0 *x, const block_q8_0 *y, int64_t nb) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        __m256 p0 = _mm256_cvtepi32_ps(dot_s8(load32(x[i].qs), load32(y[i].qs)));
        __m256 p1 = _mm256_cvtepi32_ps(dot_s8(load32(x[i + 1].qs), load32(y[i + 1].qs)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i + 1].d) * h2f(y[i + 1].d)), p1, acc1);
    }
    for (; i < nb; i++) {
        __m256 p = _mm256_cvtepi32_ps(dot_s8(load32(x[i].qs), load32(y[i].qs)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc0);
    }
    return hsum_ps(_mm256_add_ps(acc0, acc1));
}

static float dot_q4_0(const block_q4_0 *x, const block_q8_0 *y, int64_t nb) {
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        __m256 p0 = _mm256_cvtepi32_ps(dot_s8(_mm256_sub_epi8(nibbles32(x[i].qs), eight), load32(y[i].qs)));
        __m256 p1 = _mm256_cvtepi32_ps(dot_s8(_mm256_sub_epi8(nibbles32(x[i + 1].qs), eight), load32(y[i + 1].qs)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i + 1].d) * h2f(y[i + 1].d)), p1, acc1);
    }
    for (; i < nb; i++) {
        __m256 p = _mm256_cvtepi32_ps(dot_s8(_mm256_sub_epi8(nibbles32(x[i].qs), eight), load32(y[i].qs)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc0);
    }
    return hsum_ps(_mm256_add_ps(acc0, acc1));
}

static float dot_q4_1(const block_q4_1 *x, const block_q8_0 *y, int64_t nb) {
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i yq = load32(y[i].qs);
        float dy = h2f(y[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * dy), _mm256_cvtepi32_ps(dot_u8(nibbles32(x[i].qs), yq)), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].m) * dy), _mm256_cvtepi32_ps(sum_s8(yq)), accm);
    }
    return hsum_ps(_mm256_add_ps(acc, accm));
}

/* Q5 codes: nibble | (fifth bit << 4) */
static inline __m256i q5_codes(const uint8_t *qs, const uint8_t *qh) {
    return _mm256_or_si256(nibbles32(qs), _mm256_and_si256(bits32(qh), _mm256_set1_epi8(0x10)));
}

static float dot_q5_0(const block_q5_0 *x, const block_q8_0 *y, int64_t nb) {
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i q = _mm256_sub_epi8(q5_codes(x[i].qs, x[i].qh), sixteen);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)),
                              _mm256_cvtepi32_ps(dot_s8(q, load32(y[i].qs))), acc);
    }
    return hsum_ps(acc);
}

static float dot_q5_1(const block_q5_1 *x, const block_q8_0 *y, int64_t nb) {
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i yq = load32(y[i].qs);
        float dy = h2f(y[i].d);
        __m256i q = q5_codes(x[i].qs, x[i].qh);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * dy), _mm256_cvtepi32_ps(dot_u8(q, yq)), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].m) * dy), _mm256_cvtepi32_ps(sum_s8(yq)), accm);
    }
    return hsum_ps(_mm256_add_ps(acc, accm));
}

/* ---- K-quants x Q8_K ------------------------------------------------- */

/* The 6-bit scales (lanes 0-7) and mins (lanes 8-15) of a Q4_K/Q5_K block
 * as 16 int16, unpacked four at a time from 32-bit words (layout in quant.c). */
static inline __m256i k4_scales_mins(const uint8_t *s12) {
    uint32_t u[4];
    quant_k4_unpack(s12, u);
    return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)u));
}

/* sum_j min_j * (sum of the 32 activations of sub-block j), 4 int32 */
static inline __m128i k4_min_dot(__m256i sm, const block_q8_K *y) {
    __m256i bs = load32(y->bsums);
    __m128i pair = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    return _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), pair);
}

/* int16 lane j of v (replicated in both 128-bit halves) broadcast to all lanes */
static inline __m256i lane16(__m256i v, int j) { return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)(0x0100 + 0x0202 * j))); }

/* One 64-element chunk: codes lo (sub-block 2c) and hi (2c+1), 0..31. */
static inline __m256i k4_chunk(__m256i lo, __m256i hi, const int8_t *q8, __m256i scales, int c) {
    __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(q8)), lane16(scales, 2 * c));
    __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(q8 + 32)), lane16(scales, 2 * c + 1));
    return _mm256_add_epi32(pl, ph);
}

/* Q4_K and Q5_K share d, dmin and the scales; Q5_K adds qh (bit 2c of
 * qh[l] is the fifth bit of sub-block 2c, bit 2c+1 of 2c+1). */
_Static_assert(offsetof(block_q4_K, scales) == offsetof(block_q5_K, scales), "k4 layout");
static ALWAYS_INLINE float dot_k4(const uint8_t *row, const block_q8_K *y, int64_t nb, bool five) {
    const size_t stride = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const size_t off_qs = five ? offsetof(block_q5_K, qs) : offsetof(block_q4_K, qs);
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    for (int64_t i = 0; i < nb; i++, row += stride) {
        zn_half dh[2]; /* d, dmin */
        memcpy(dh, row, sizeof dh);
        __m256i sm = k4_scales_mins(row + offsetof(block_q4_K, scales));
        accm = _mm_fmadd_ps(_mm_set1_ps(h2f(dh[1]) * y[i].d), _mm_cvtepi32_ps(k4_min_dot(sm, &y[i])), accm);
        __m256i scales = _mm256_permute2x128_si256(sm, sm, 0x00);
        __m256i hb = five ? load32(row + offsetof(block_q5_K, qh)) : _mm256_setzero_si256();
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m256i bits = load32(row + off_qs + 32 * c);
            __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (five) {
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4), b4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hb, 3), b4));
                hb = _mm256_srli_epi16(hb, 2);
            }
            sumi = _mm256_add_epi32(sumi, k4_chunk(lo, hi, y[i].qs + 64 * c, scales, c));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(dh[0]) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc) - hsum4_ps(accm);
}

static float dot_q6_K(const block_q6_K *x, const block_q8_K *y, int64_t nb) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        /* the codes are stored +32: take 32 * sum_g scale_g * ysum_g off at the end */
        __m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(y[i].bsums)), 5);
        sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
        /* scales of groups 8h..8h+7 in both 128-bit halves */
        const __m256i sch[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6k_codes(x[i].ql + 64 * h, x[i].qh + 32 * h, q);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                /* 32 codes = groups 2k (low half of the vector) and 2k+1 (high half) */
                __m256i s = _mm256_shuffle_epi8(sch[h], _mm256_setr_m128i(_mm_set1_epi16((short)(0x0100 + 0x0202 * 2 * k)),
                                                                      _mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * k + 1)))));
                __m256i p = _mm256_maddubs_epi16(q[k], load32(y[i].qs + 128 * h + 32 * k));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

static float dot_q8_K(const block_q8_K *x, const block_q8_K *y, int64_t nb) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i s = _mm256_setzero_si256();
        for (int c = 0; c < QK_K / 32; c++) s = _mm256_add_epi32(s, dot_s8(load32(x[i].qs + 32 * c), load32(y[i].qs + 32 * c)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * y[i].d), _mm256_cvtepi32_ps(s), acc);
    }
    return hsum_ps(acc);
}

/* ---- float weights x f32 --------------------------------------------- */

/* t is a constant at every call, so each type gets its own loop */
static ALWAYS_INLINE __m256 load_w8(zn_type t, const void *row, int64_t i) {
    if (t == ZN_TYPE_F32) return _mm256_loadu_ps((const float *)row + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
    if (t == ZN_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static ALWAYS_INLINE float dot_float(zn_type t, const void *row, const float *x, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_w8(t, row, i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(load_w8(t, row, i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_w8(t, row, i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_w8(t, row, i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_w8(t, row, i), _mm256_loadu_ps(x + i), a0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) {
        float w = t == ZN_TYPE_F32 ? ((const float *)row)[i]
                  : t == ZN_TYPE_F16 ? h2f(((const uint16_t *)row)[i])
                                     : zn_bf16_to_f32(((const uint16_t *)row)[i]);
        s += w * x[i];
    }
    return s;
}

bool quant_avx2_dot_act(zn_type t, const void *row, const void *xq, int64_t n, float *out) {
    int64_t nb32 = n / QK8_0, nbK = n / QK_K;
    switch (t) {
    case ZN_TYPE_F32: *out = dot_float(ZN_TYPE_F32, row, xq, n); return true;
    case ZN_TYPE_F16: *out = dot_float(ZN_TYPE_F16, row, xq, n); return true;
    case ZN_TYPE_BF16: *out = dot_float(ZN_TYPE_BF16, row, xq, n); return true;
    case ZN_TYPE_Q8_0: *out = dot_q8_0(row, xq, nb32); return true;
    case ZN_TYPE_Q4_0: *out = dot_q4_0(row, xq, nb32); return true;
    case ZN_TYPE_Q4_1: *out = dot_q4_1(row, xq, nb32); return true;
    case ZN_TYPE_Q5_0: *out = dot_q5_0(row, xq, nb32); return true;
    case ZN_TYPE_Q5_1: *out = dot_q5_1(row, xq, nb32); return true;
    case ZN_TYPE_Q4_K: *out = dot_k4(row, xq, nbK, false); return true;
    case ZN_TYPE_Q5_K: *out = dot_k4(row, xq, nbK, true); return true;
    case ZN_TYPE_Q6_K: *out = dot_q6_K(row, xq, nbK); return true;
    case ZN_TYPE_Q8_K: *out = dot_q8_K(row, xq, nbK); return true;
    default: return false;
    }
}

/* ---- activation quantization ----------------------------------------- */

/* Bit-identical to act_q8_0 in quant.c: same amax, same id = 127/amax,
 * same round-half-to-even. */
static void act_q8_0(const float *x, block_q8_0 *y, int64_t nb) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t i = 0; i < nb; i++, x += 32) {
        __m256 v[4], mx = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            mx = _mm256_max_ps(mx, _mm256_and_ps(v[k], abs_mask));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        float amax = _mm_cvtss_f32(m4);
        y[i].d = zn_f32_to_fp16(amax / 127.f);
        __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
        __m256i q[4];
        for (int k = 0; k < 4; k++)
            q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        /* packs work per 128-bit lane: pack, then restore element order */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        p = _mm256_max_epi8(p, _mm256_set1_epi8(-127));
        _mm256_storeu_si256((__m256i *)y[i].qs, p);
    }
}

/* Bit-identical to q_q8_K in quant.c: the first max-magnitude element
 * (with its sign) maps to -127, iscale = -127/max, round-half-to-even
 * (cvtps uses the default rounding mode, as the magic-number add does). */
static void act_q8_K(const float *x, block_q8_K *y, int64_t nb) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        __m256 mx = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const __m256 va = _mm256_set1_ps(amax);
        float max = 0;
        for (int k = 0; k < QK_K; k += 8) {
            int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask), va, _CMP_EQ_OQ));
            if (hit) {
                max = x[k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + k + 8 * j)));
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(y[i].qs + k), p);
            int32_t s4[8]; /* sums of 4 consecutive codes */
            _mm256_storeu_si256((__m256i *)s4, dot_u8(_mm256_set1_epi8(1), p));
            y[i].bsums[k / 16] = (int16_t)(s4[0] + s4[1] + s4[2] + s4[3]);
            y[i].bsums[k / 16 + 1] = (int16_t)(s4[4] + s4[5] + s4[6] + s4[7]);
        }
        y[i].d = 1 / iscale;
    }
}

bool quant_avx2_quantize_act(zn_type vdt, const float *x, void *dst, int64_t n) {
    if (vdt == ZN_TYPE_Q8_0) act_q8_0(x, dst, n / QK8_0);
    else if (vdt == ZN_TYPE_Q8_K) act_q8_K(x, dst, n / QK_K);
    else return false;
    return true;
}
