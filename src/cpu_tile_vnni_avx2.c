/* Matmul tiles (kernels in cpu_tile_impl.h) on AVX-VNNI, selected at run
 * time (cpu_vec.c). vpdpwssd fuses the scale multiply-add with the int32
 * accumulation (Q4_K, Q6_K). Q8_0 uses vpdpbusd (u8 x s8 -> int32): the
 * weight is made unsigned by flipping its sign bit (w + 128) and the
 * accumulator starts at -128 x the token's lane sums, computed once per
 * token block for all rows of the tile: one instruction per row x token
 * instead of sign + maddubs + madd. */
#pragma GCC target("avxvnni")
#include "cpu.h"

#define ACC_MADD(acc, p, s) _mm256_dpwssd_avx_epi32((acc), (p), (s))
#define Q80_ROW(w) _mm256_xor_si256((w), _mm256_set1_epi8((char)0x80))
#define Q80_TOK(x)                                                                                  \
    _mm256_sub_epi32(_mm256_setzero_si256(),                                                        \
                     _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), (x)))
#define Q80_DOT(wp, w, x, xp) _mm256_dpbusd_avx_epi32((xp), (wp), (x))
/* packed Q4_K: vpdpbusd sums 4 products per lane into int32; a 16-product
 * sum fits in the lane's low int16 (the high one is its sign), so vpdpwssd
 * with the scale in the low half only multiplies it exactly */
#define PK_FIRST(w, x) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), (w), (x))
#define PK_DOT(acc, w, x) _mm256_dpbusd_avx_epi32((acc), (w), (x))
#define PK_SCALE(s) (s)
#define PK_ACC(acc, h, s) _mm256_dpwssd_avx_epi32((acc), (h), (s))
#define TILE_SELECT cpu_tile_vnni
#define PACK_Q4K cpu_q4k_x8_vnni
#include "cpu_tile_impl.h"
