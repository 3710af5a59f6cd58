/* Packed matmul kernels (cpu_tile_impl.h) with AVX2 integer products.
 * Compiled with -mavx2 -mfma -mf16c; used only when the CPU has them. */
#include <immintrin.h>

#include "cpu.h"

#define ACC_MADD(acc, p, s) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (s)))
/* packed Q4_K: maddubs pairs summed in int16 (4 x 2 x 15 x 127 fits),
 * then madd with the scale in both halves of each 32-bit lane */
#define PK_FIRST(w, x) _mm256_maddubs_epi16((w), (x))
#define PK_DOT(acc, w, x) _mm256_add_epi16((acc), _mm256_maddubs_epi16((w), (x)))
#define PK_SCALE(s) _mm256_or_si256((s), _mm256_slli_epi32((s), 16))
#define PK_ACC(acc, h, s) _mm256_add_epi32((acc), _mm256_madd_epi16((h), (s)))
/* packed Q8_0: the token code back to signed, its sign moved onto |w| */
#define P8_INIT(wsum) _mm256_setzero_si256()
static inline __m256i p8_dot(__m256i acc, __m256i w, __m256i xu) {
    const __m256i x = _mm256_xor_si256(xu, _mm256_set1_epi8((char)0x80));
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}
#define P8_DOT(acc, w, xu) p8_dot((acc), (w), (xu))
#define PACK_SELECT cpu_packed_avx2
#include "cpu_tile_impl.h"
