/* Weight rows as the GPU reads them. GGUF blocks of 18, 34 or 210 bytes
 * leave most fields unaligned, so at upload each row is rewritten into
 * planes (all quants of the row, then all scales), every plane and row
 * 16-byte aligned, so shaders load 8 and 16 bytes at a time:
 *   Q4_0: qs [nb][16] | d [nb]          Q8_0: qs [nb][32] | d [nb]
 *   Q6_K: ql [nb][128] | qh [nb][64] | scales [nb][16] | d [nb]
 *   Q4_K, Q5_K: the GGUF blocks as they are (144 / 176 bytes, aligned)
 *   F32, F16, BF16: the values, zero-padded to a multiple of 32
 * (nb = blocks per row). src/shaders/dq.glsl reads these layouts. */
#ifndef ZINC_VK_QUANT_H
#define ZINC_VK_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

/* Bytes of one GPU row of n elements; 0 if n does not fit the type. */
size_t vkq_row_bytes(zn_type t, int64_t n);
/* Rewrites rows GGUF rows of n elements (src, packed) into GPU rows (dst,
 * vkq_row_bytes apart). */
void vkq_repack(zn_type t, const void *src, void *dst, int64_t n, int64_t rows);

#endif
