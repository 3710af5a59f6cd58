/* The Q8_0 x Q8_0 matmul tile, included by cpu_tile_avx2.c (maddubs) and
 * cpu_tile_vnni_avx2.c (AVX-VNNI dpbusd), which define how one 32-byte
 * block of a weight row and one of a token give 8 int32 partial sums:
 *   Q80_ROW(w)            per weight block, shared by the tile's tokens
 *   Q80_TOK(x)            per token block, shared by the tile's rows
 *   Q80_DOT(wp, w, x, xp) lane j = sum of w[4j..4j+3] * x[4j..4j+3]
 * Both give the same exact integers, so the result does not depend on the
 * path, nor on how rows and tokens were grouped into tiles. Several rows
 * per tile share each token's loads and give independent accumulator
 * chains, which a single row x single token dot (decode) lacks: it waits on
 * its FMA's latency every block. */
#ifndef Q80_DOT
#error "define Q80_ROW, Q80_TOK and Q80_DOT before including cpu_q80_tile.h"
#endif

#ifndef Q80_PREFETCH
#define Q80_PREFETCH 4096
#endif
static ALWAYS_INLINE void q80_tile(const block_q8_0 *const *w, const block_q8_0 *const *x, int64_t nb, int nr,
                                   int nt, float (*y)[CPU_TILE]) {
    __m256 acc[CPU_TILE_ROWS][CPU_TILE];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) acc[r][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i xv[CPU_TILE], xp[CPU_TILE];
        float dx[CPU_TILE];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            xv[t] = load32(x[t][i].qs);
            xp[t] = Q80_TOK(xv[t]);
            dx[t] = _cvtsh_ss(x[t][i].d);
        }
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            _mm_prefetch((const char *)&w[r][i] + Q80_PREFETCH, _MM_HINT_T0);
            const __m256i wv = load32(w[r][i].qs), wp = Q80_ROW(wv);
            const float dw = _cvtsh_ss(w[r][i].d);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const __m256i p = Q80_DOT(wp, wv, xv[t], xp[t]);
                acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * dx[t]), _mm256_cvtepi32_ps(p), acc[r][t]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) y[r][t] = hsum8(acc[r][t]);
}

/* Rows in groups whose accumulators fit the 16 registers with the tokens'. */
#define Q80_CASE(R, T)                                                                      \
    case (R) * 8 + (T): q80_tile(wr, xs, nb, R, T, y); break;
static ALWAYS_INLINE void q80_rows(const block_q8_0 *const *wr, const block_q8_0 *const *xs, int64_t nb, int nr,
                                   int nt, float (*y)[CPU_TILE]) {
    switch (nr * 8 + nt) {
        Q80_CASE(1, 1) Q80_CASE(1, 2) Q80_CASE(1, 3) Q80_CASE(1, 4)
        Q80_CASE(2, 1) Q80_CASE(2, 2) Q80_CASE(2, 3) Q80_CASE(2, 4)
        Q80_CASE(3, 1) Q80_CASE(3, 2)
        Q80_CASE(4, 1) Q80_CASE(4, 2)
    default: break;
    }
}
#undef Q80_CASE

static void tile_q8_0(const void *w, size_t wrow, int nr, const void *const *x, int nt, int64_t n,
                      float (*y)[CPU_TILE]) {
    const int step = nt <= 2 ? 4 : 2;
    for (int r = 0; r < nr; r += step) {
        const int k = nr - r < step ? nr - r : step;
        const block_q8_0 *wr[CPU_TILE_ROWS];
        for (int j = 0; j < k; j++) wr[j] = (const block_q8_0 *)((const uint8_t *)w + (size_t)(r + j) * wrow);
        q80_rows(wr, (const block_q8_0 *const *)x, n / QK8_0, k, nt, y + r);
    }
}
