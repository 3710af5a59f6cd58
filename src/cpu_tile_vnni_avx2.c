/* The Q8_0 matmul tile on AVX-VNNI (vpdpbusd: u8 x s8 -> int32 in one
 * instruction). The weight is made unsigned by flipping its sign bit (w+128)
 * and the accumulator starts at -128 x the token's lane sums, computed once
 * per token block for all rows of the tile: one instruction per row x token
 * instead of sign + maddubs + madd. Selected at run time (cpu_vec.c) on CPUs
 * with AVX-VNNI; the other types use cpu_tile_avx2.c's kernels. */
#pragma GCC target("avxvnni")
#include <immintrin.h>

#include "cpu.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static ALWAYS_INLINE __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

#define Q80_ROW(w) _mm256_xor_si256((w), _mm256_set1_epi8((char)0x80))
#define Q80_TOK(x) \
    _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), (x)))
#define Q80_DOT(wp, w, x, xp) _mm256_dpbusd_avx_epi32((xp), (wp), (x))
#include "cpu_q80_tile.h"

cpu_tile_fn cpu_tile_vnni(zn_type t) { return t == ZN_TYPE_Q8_0 ? tile_q8_0 : cpu_tile_avx2(t); }
