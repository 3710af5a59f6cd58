/* Microbenchmark of the CPU Q4_K / Q6_K / Q8_0 matmul kernels on one thread: ns
 * per 256 weights x token for the packed 8-row kernels (cpu_packed_*) over rows x
 * tokens like a prefill matmul (each row group against every token,
 * weights hot in L1/L2; TOKENS 1 is decode), and quant's row dot (one row
 * x one token) for scale.
 *
 *   make && cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/cpu_kernels tools/bench/cpu_kernels.c \
 *       build/libzinc.a -lm -lpthread -ldl -lpcre2-8 -lcurl -lcrypto -lmicrohttpd
 *   build/cpu_kernels [K] [ROWS] [TOKENS] [REPS] [TYPE]   (defaults 768 256 128 20 q4_k; or q6_k, q8_0)
 *
 * Prints the minimum over REPS of each kernel (the least disturbed run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t rng = 7;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1u << 23) - 1.0f;
}

int main(int argc, char **argv) {
    const int64_t K = argc > 1 ? atoll(argv[1]) : 768;
    const int64_t N = argc > 2 ? atoll(argv[2]) : 256;
    const int T = argc > 3 ? atoi(argv[3]) : 128;
    const int reps = argc > 4 ? atoi(argv[4]) : 20;
    const zn_type type = argc <= 5                 ? ZN_TYPE_Q4_K
                         : !strcmp(argv[5], "q8_0") ? ZN_TYPE_Q8_0
                         : !strcmp(argv[5], "q6_k") ? ZN_TYPE_Q6_K
                                                    : ZN_TYPE_Q4_K;
    const zn_type vt = quant_vec_dot_type(type);
    if (K % QK_K || N % CPU_PACK_ROWS || T < 1 || T > 4096 || reps < 1) {
        fprintf(stderr, "K must be a multiple of 256, ROWS of 8\n");
        return 1;
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) {
        fprintf(stderr, "no AVX2\n");
        return 1;
    }
    const size_t wrow = zn_row_size(type, K), xrow = zn_row_size(vt, K), gbytes = cpu_pack_group_bytes(type, K);
    uint8_t *w = malloc(wrow * (size_t)N), *xq = malloc(xrow * (size_t)T), *xu = malloc(xrow * (size_t)T);
    uint8_t *pk = malloc(gbytes * (size_t)(N / CPU_PACK_ROWS));
    float *f = malloc(sizeof *f * (size_t)K), *y = malloc(sizeof *y * (size_t)N * (size_t)T);
    const void **xs = malloc(sizeof *xs * (size_t)T);
    for (int64_t r = 0; r < N; r++) {
        for (int64_t i = 0; i < K; i++) f[i] = frand();
        quant_quantize_row(type, f, w + (size_t)r * wrow, K);
    }
    for (int t = 0; t < T; t++) {
        for (int64_t i = 0; i < K; i++) f[i] = frand();
        quant_quantize_act(vt, f, xq + (size_t)t * xrow, K);
        xs[t] = xq + (size_t)t * xrow;
    }
    memcpy(xu, xq, xrow * (size_t)T); /* packed Q8_0 reads the codes + 128 */
    for (int64_t b = 0; type == ZN_TYPE_Q8_0 && b < T * K / QK8_0; b++)
        for (int e = 0; e < QK8_0; e++) ((block_q8_0 *)xu)[b].qs[e] ^= (int8_t)0x80;
    cpu_pack_rows(type, w, N, K, pk);
    struct {
        const char *name;
        cpu_pack_tile_fn packed; /* NULL: quant_dot_act, one row x one token */
    } k[3] = {{"row dot", NULL},
              {"packed x8 avx2", cpu_packed_avx2(type)},
              {"packed x8 vnni", __builtin_cpu_supports("avxvnni") ? cpu_packed_vnni(type) : NULL}};
    double best[3] = {1e30, 1e30, 1e30};
    for (int rep = 0; rep < reps; rep++)
        for (int j = 0; j < 3; j++) { /* alternate kernels so load changes hit all alike */
            if (j > 0 && !k[j].packed) continue;
            const double t0 = now();
            if (!k[j].packed) {
                for (int64_t o = 0; o < N; o++)
                    for (int t = 0; t < T; t++) y[o * T + t] = quant_dot_act(type, w + (size_t)o * wrow, xs[t], K);
            } else {
                for (int64_t g = 0; g < N / CPU_PACK_ROWS; g++)
                    for (int t = 0; t < T; t += 16) {
                        float out[16][CPU_PACK_ROWS];
                        k[j].packed(pk + g * gbytes, xu + (size_t)t * xrow, xrow, NULL, T - t < 16 ? T - t : 16, K, out);
                        y[g * T + t] += out[0][0];
                    }
            }
            const double dt = now() - t0;
            if (dt < best[j]) best[j] = dt;
        }
    const double units = (double)N * (double)T * (double)(K / QK_K);
    printf("%s: K %lld, rows %lld, tokens %d, best of %d\n", zn_type_name(type), (long long)K, (long long)N, T, reps);
    for (int j = 0; j < 3; j++)
        if (best[j] < 1e30) printf("  %-16s %6.2f ns per 256 weights x token\n", k[j].name, best[j] * 1e9 / units);
    free(w);
    free(xq);
    free(pk);
    free(f);
    free(y);
    free(xs);
    free(xu);
    return 0;
}
