/* GGUF rows -> GPU rows (see vk_quant.h). */
#include <string.h>

#include "vk_quant.h"

static size_t up16(size_t n) { return (n + 15) & ~(size_t)15; }

size_t vkq_row_bytes(zn_type t, int64_t n) {
    size_t gg = zn_row_size(t, n);
    if (!gg || n <= 0) return 0;
    switch (t) {
    case ZN_TYPE_F32: return 4 * (size_t)((n + 31) / 32 * 32);
    case ZN_TYPE_F16: case ZN_TYPE_BF16: return 2 * (size_t)((n + 31) / 32 * 32);
    default: return up16(gg);
    }
}

/* Splits nb blocks of bsize bytes into planes: field f (offset off[f], len[f]
 * within a block) of every block, one plane after another. */
static void planes(const uint8_t *src, uint8_t *dst, size_t nb, size_t bsize, const size_t *off, const size_t *len,
                   int nf) {
    size_t base = 0;
    for (int f = 0; f < nf; f++) {
        for (size_t b = 0; b < nb; b++) memcpy(dst + base + b * len[f], src + b * bsize + off[f], len[f]);
        base += nb * len[f];
    }
}

void vkq_repack(zn_type t, const void *src, void *dst, int64_t n, int64_t rows) {
    const size_t gg = zn_row_size(t, n), gr = vkq_row_bytes(t, n);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *s = (const uint8_t *)src + (size_t)r * gg;
        uint8_t *d = (uint8_t *)dst + (size_t)r * gr;
        memset(d, 0, gr);
        switch (t) {
        case ZN_TYPE_Q4_0: {
            const size_t off[2] = {2, 0}, len[2] = {16, 2};
            planes(s, d, gg / 18, 18, off, len, 2);
            break;
        }
        case ZN_TYPE_Q8_0: {
            const size_t off[2] = {2, 0}, len[2] = {32, 2};
            planes(s, d, gg / 34, 34, off, len, 2);
            break;
        }
        case ZN_TYPE_Q6_K: {
            const size_t off[4] = {0, 128, 192, 208}, len[4] = {128, 64, 16, 2};
            planes(s, d, gg / 210, 210, off, len, 4);
            break;
        }
        default: memcpy(d, s, gg);
        }
    }
}
