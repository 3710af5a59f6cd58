/* Tensor element types (ggml/GGUF ids) and the quantization formats:
 * block layouts exactly as GGUF stores them, reference (scalar)
 * dequantize/quantize, and row dot products used by the CPU matmul. */
#ifndef ZINC_QUANT_H
#define ZINC_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum zn_type {
    ZN_TYPE_F32 = 0, ZN_TYPE_F16 = 1, ZN_TYPE_Q4_0 = 2, ZN_TYPE_Q4_1 = 3,
    ZN_TYPE_Q5_0 = 6, ZN_TYPE_Q5_1 = 7, ZN_TYPE_Q8_0 = 8, ZN_TYPE_Q8_1 = 9,
    ZN_TYPE_Q2_K = 10, ZN_TYPE_Q3_K = 11, ZN_TYPE_Q4_K = 12, ZN_TYPE_Q5_K = 13,
    ZN_TYPE_Q6_K = 14, ZN_TYPE_Q8_K = 15,
    ZN_TYPE_IQ2_XXS = 16, ZN_TYPE_IQ2_XS = 17, ZN_TYPE_IQ3_XXS = 18,
    ZN_TYPE_IQ1_S = 19, ZN_TYPE_IQ4_NL = 20, ZN_TYPE_IQ3_S = 21,
    ZN_TYPE_IQ2_S = 22, ZN_TYPE_IQ4_XS = 23, ZN_TYPE_I8 = 24, ZN_TYPE_I16 = 25,
    ZN_TYPE_I32 = 26, ZN_TYPE_I64 = 27, ZN_TYPE_F64 = 28, ZN_TYPE_IQ1_M = 29,
    ZN_TYPE_BF16 = 30, ZN_TYPE_TQ1_0 = 34, ZN_TYPE_TQ2_0 = 35, ZN_TYPE_MXFP4 = 39,
    ZN_TYPE_COUNT = 40
} zn_type;

typedef struct zn_type_info {
    const char *name;   /* "Q4_K" */
    uint32_t blck;      /* elements per block */
    uint32_t size;      /* bytes per block */
    bool compute;       /* zinc can dequantize / multiply it */
} zn_type_info;

/* NULL for an id that is not a known ggml type. */
const zn_type_info *zn_type_get(uint32_t id);
const char *zn_type_name(uint32_t id); /* "type#N" style name for unknown ids */
/* Bytes of a row of n elements; 0 when n is not a multiple of the block. */
size_t zn_row_size(zn_type t, int64_t n);

/* ---- block layouts (little-endian, packed as in GGUF) ---- */
#define QK4_0 32
#define QK8_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

typedef uint16_t zn_half; /* IEEE fp16 bits */

typedef struct { zn_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
typedef struct { zn_half d, m; uint8_t qs[QK4_0 / 2]; } block_q4_1;
typedef struct { zn_half d; uint8_t qh[4]; uint8_t qs[QK4_0 / 2]; } block_q5_0;
typedef struct { zn_half d, m; uint8_t qh[4]; uint8_t qs[QK4_0 / 2]; } block_q5_1;
typedef struct { zn_half d; int8_t qs[QK8_0]; } block_q8_0;
typedef struct { zn_half d, s; int8_t qs[QK8_0]; } block_q8_1;
typedef struct { zn_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { zn_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; zn_half d; } block_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;

_Static_assert(sizeof(block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K");

/* ---- scalar conversions ---- */
float zn_fp16_to_f32(zn_half h);
zn_half zn_f32_to_fp16(float f);           /* round to nearest even */
float zn_bf16_to_f32(uint16_t b);
uint16_t zn_f32_to_bf16(float f);          /* round to nearest even, NaN kept */

/* ---- rows ---- */
/* n must be a multiple of the type's block size. F32/F16/BF16 included. */
bool quant_supported(zn_type t); /* dequantize + quantize + dot implemented */
void quant_dequantize_row(zn_type t, const void *src, float *dst, int64_t n);
/* Reference round-to-nearest quantization (K-quants: with scale search). */
void quant_quantize_row(zn_type t, const float *src, void *dst, int64_t n);
/* dot(row of type t, x f32), exact f32 activations (reference). */
float quant_dot_f32(zn_type t, const void *row, const float *x, int64_t n);

/* Fast path: activations quantized once per matmul to the type's "vec dot
 * type" (Q8_0 for the 32-blocks, Q8_K for the K-quants, F32 for float
 * weights), then an integer dot per row, as ggml does. */
zn_type quant_vec_dot_type(zn_type t);
void quant_quantize_act(zn_type vec_dot_type, const float *x, void *dst, int64_t n);
float quant_dot_act(zn_type t, const void *row, const void *xq, int64_t n);

#endif
