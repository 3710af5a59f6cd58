/* Matmul tiles (kernels in cpu_tile_impl.h) with AVX2 integer products.
 * Compiled with -mavx2 -mfma -mf16c; used only when the CPU has them. */
#include "cpu.h"

#define ACC_MADD(acc, p, s) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (s)))
/* Q8_0: |w| times x with w's sign */
#define Q80_ROW(w) _mm256_sign_epi8((w), (w))
#define Q80_TOK(x) (x)
#define Q80_DOT(wp, w, x, xp) \
    _mm256_madd_epi16(_mm256_maddubs_epi16((wp), _mm256_sign_epi8((xp), (w))), _mm256_set1_epi16(1))
/* packed Q4_K: maddubs pairs summed in int16 (4 x 2 x 15 x 127 fits),
 * then madd with the scale in both halves of each 32-bit lane */
#define PK_FIRST(w, x) _mm256_maddubs_epi16((w), (x))
#define PK_DOT(acc, w, x) _mm256_add_epi16((acc), _mm256_maddubs_epi16((w), (x)))
#define PK_SCALE(s) _mm256_or_si256((s), _mm256_slli_epi32((s), 16))
#define PK_ACC(acc, h, s) _mm256_add_epi32((acc), _mm256_madd_epi16((h), (s)))
#define TILE_SELECT cpu_tile_avx2
#define PACK_Q4K cpu_q4k_x8_avx2
#include "cpu_tile_impl.h"
