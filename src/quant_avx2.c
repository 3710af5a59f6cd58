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
#include <string.h>

#include "quant.h"
#include "quant_impl.h"

static inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
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

/* Unpacks the twelve scale bytes of Q4_K/Q5_K into 8 scales and 8 mins. */
static inline void k4_unpack(const uint8_t *s, int *sc, int *m) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 0xF) | ((s[j] >> 6) << 4);
        m[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
    }
}

/* Shared by Q4_K and Q5_K: qh is NULL for Q4_K. */
static float dot_k4(const uint8_t *base, size_t bsize, size_t off_d, size_t off_scales, size_t off_qs, ptrdiff_t off_qh,
                    const block_q8_K *y, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float accm = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = base + (size_t)i * bsize;
        zn_half dh[2];
        memcpy(dh, blk + off_d, sizeof dh);
        int sc[8], m[8];
        k4_unpack(blk + off_scales, sc, m);
        int summ = 0;
        for (int j = 0; j < 8; j++) summ += m[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        const uint8_t *qs = blk + off_qs;
        const int8_t *q8 = y[i].qs;
        __m256i hb = off_qh >= 0 ? load32(blk + off_qh) : _mm256_setzero_si256();
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i bits = load32(qs + 32 * c);
            __m256i lo = _mm256_and_si256(bits, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (off_qh >= 0) {
                __m256i ml = _mm256_set1_epi8((char)(1 << (2 * c))), mh = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, ml), ml), b4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, mh), mh), b4));
            }
            __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(q8 + 64 * c)), _mm256_set1_epi16((short)sc[2 * c]));
            __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(q8 + 64 * c + 32)),
                                           _mm256_set1_epi16((short)sc[2 * c + 1]));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(dh[0]) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
        accm += h2f(dh[1]) * y[i].d * (float)summ;
    }
    return hsum_ps(acc) - accm;
}

static float dot_q6_K(const block_q6_K *x, const block_q8_K *y, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float accs = 0;
    for (int64_t i = 0; i < nb; i++) {
        const int8_t *sc = x[i].scales;
        int off = 0; /* the codes are stored +32: subtract 32 * sum(scale * ysum) once */
        for (int g = 0; g < 16; g++) off += sc[g] * y[i].bsums[g];
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i l0 = load32(x[i].ql + 64 * h), l1 = load32(x[i].ql + 64 * h + 32), qh = load32(x[i].qh + 32 * h);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(3)), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(12)), 2));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, _mm256_set1_epi8(48)));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8((char)0xC0)), 2));
            for (int k = 0; k < 4; k++) {
                int g = h * 8 + k * 2; /* 16-element groups g (low lane) and g+1 (high lane) */
                __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
                __m256i p = _mm256_maddubs_epi16(q[k], load32(y[i].qs + 128 * h + 32 * k));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
            }
        }
        float d = h2f(x[i].d) * y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        accs += d * (float)(32 * off);
    }
    return hsum_ps(acc) - accs;
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

static inline __m256 load_w8(zn_type t, const void *row, int64_t i) {
    if (t == ZN_TYPE_F32) return _mm256_loadu_ps((const float *)row + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
    if (t == ZN_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static float dot_float(zn_type t, const void *row, const float *x, int64_t n) {
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
    case ZN_TYPE_F32: case ZN_TYPE_F16: case ZN_TYPE_BF16: *out = dot_float(t, row, xq, n); return true;
    case ZN_TYPE_Q8_0: *out = dot_q8_0(row, xq, nb32); return true;
    case ZN_TYPE_Q4_0: *out = dot_q4_0(row, xq, nb32); return true;
    case ZN_TYPE_Q4_1: *out = dot_q4_1(row, xq, nb32); return true;
    case ZN_TYPE_Q5_0: *out = dot_q5_0(row, xq, nb32); return true;
    case ZN_TYPE_Q5_1: *out = dot_q5_1(row, xq, nb32); return true;
    case ZN_TYPE_Q4_K:
        *out = dot_k4(row, sizeof(block_q4_K), offsetof(block_q4_K, d), offsetof(block_q4_K, scales),
                      offsetof(block_q4_K, qs), -1, xq, nbK);
        return true;
    case ZN_TYPE_Q5_K:
        *out = dot_k4(row, sizeof(block_q5_K), offsetof(block_q5_K, d), offsetof(block_q5_K, scales),
                      offsetof(block_q5_K, qs), (ptrdiff_t)offsetof(block_q5_K, qh), xq, nbK);
        return true;
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

bool quant_avx2_quantize_act(zn_type vdt, const float *x, void *dst, int64_t n) {
    if (vdt != ZN_TYPE_Q8_0) return false;
    act_q8_0(x, dst, n / QK8_0);
    return true;
}
