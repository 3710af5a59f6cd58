/* AVX2 block decoders of the row dots (quant_avx2.c; the CPU backend's
 * packed kernels decode their own layouts); include only from files built
 * with -mavx2. */
#ifndef ZINC_QUANT_AVX2_CODES_H
#define ZINC_QUANT_AVX2_CODES_H

#include <immintrin.h>
#include <stdint.h>

/* Half h of a Q6_K block (ql + 64h, qh + 32h) as 4 vectors of 32 codes
 * 0..63 (still offset by +32): groups 2k and 2k+1 in vector k. */
static inline __attribute__((always_inline)) void q6k_codes(const uint8_t *ql, const uint8_t *qh, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
}

#endif
