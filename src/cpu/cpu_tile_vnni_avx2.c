/* Matmul kernels (cpu_tile_impl.h) on AVX-VNNI, selected at run time
 * (cpu_vec.c): vpdpbusd (u8 x s8 -> int32, 4 products a lane) instead of
 * maddubs + madd, and vpdpwssd, which fuses a scale multiply-add with the
 * int32 accumulation. */
#pragma GCC target("avxvnni")
#include "cpu.h"

#define ACC_MADD(acc, p, s) _mm256_dpwssd_avx_epi32((acc), (p), (s))
/* packed Q4_K: vpdpbusd sums 4 products per lane into int32; a 16-product
 * sum fits in the lane's low int16 (the high one is its sign), so vpdpwssd
 * with the scale in the low half only multiplies it exactly */
#define PK_FIRST(w, x) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), (w), (x))
#define PK_DOT(acc, w, x) _mm256_dpbusd_avx_epi32((acc), (w), (x))
#define PK_SCALE(s) (s)
#define PK_ACC(acc, h, s) _mm256_dpwssd_avx_epi32((acc), (h), (s))
/* packed Q8_0: u8 (code + 128) x s8 weight; start from -128 * sum(w) */
#define P8_INIT(wsum) _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32((wsum), 7))
#define P8_DOT(acc, w, xu) _mm256_dpbusd_avx_epi32((acc), (xu), (w))
#define PACK_SELECT cpu_packed_vnni
#include "cpu_tile_impl.h"
