/* Internals of the quant module shared by quant.c, quant_avx2.c and the
 * tests: the scalar reference kernels (always available, the oracle for the
 * SIMD ones) and the AVX2/FMA/F16C kernels (quant_avx2.c, compiled with
 * -mavx2 -mfma -mf16c; call them only when quant_cpu_avx2() is true). */
#ifndef ZINC_QUANT_IMPL_H
#define ZINC_QUANT_IMPL_H

#include <string.h>

#include "quant.h"

/* True when this CPU runs the AVX2+FMA kernels (F16C comes with them on
 * every x86 CPU that has both). */
bool quant_cpu_avx2(void);

/* Scalar reference versions of quant_quantize_act / quant_dot_act. */
void quant_quantize_act_ref(zn_type vec_dot_type, const float *x, void *dst, int64_t n);
float quant_dot_act_ref(zn_type t, const void *row, const void *xq, int64_t n);

/* AVX2: false when there is no AVX2 kernel for t (caller falls back). */
bool quant_avx2_dot_act(zn_type t, const void *row, const void *xq, int64_t n, float *out);
bool quant_avx2_quantize_act(zn_type vec_dot_type, const float *x, void *dst, int64_t n);

/* Packs eight 6-bit scales and mins into Q4_K/Q5_K's 12 scale bytes. */
void quant_k4_pack(uint8_t *s12, const uint8_t *scales, const uint8_t *mins);
/* The 12 packed bytes of a Q4_K/Q5_K block as 8 six-bit scales (bytes 0-7
 * of u) then 8 six-bit mins (bytes 8-15), the order the SIMD kernels use. */
static inline void quant_k4_unpack(const uint8_t *s12, uint32_t u[4]) {
    uint32_t a, b, c;
    memcpy(&a, s12, 4);
    memcpy(&b, s12 + 4, 4);
    memcpy(&c, s12 + 8, 4);
    u[0] = a & 0x3f3f3f3fu;
    u[1] = (c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4);
    u[2] = b & 0x3f3f3f3fu;
    u[3] = ((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4);
}


/* Round to nearest, ties to even, for |f| < 2^22 (as ggml's nearest_int). */
static inline int quant_nearest_int(float f) {
    float v = f + 12582912.f; /* 1.5 * 2^23: the sum's low mantissa bits are the rounded integer */
    int i;
    __builtin_memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

#endif
