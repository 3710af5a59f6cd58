/* Small vector kernels of the CPU backend (attention, KV cache, SwiGLU,
 * RMS norm): scalar
 * versions here, AVX2/FMA/F16C ones in cpu_vec_avx2.c, picked once at init
 * from what the running CPU supports. */
#include <math.h>
#ifdef __x86_64__
#include <cpuid.h>
#endif

#include "cpu.h"

static void att_scores(const zn_half *k, size_t stride, int n_keys, const float *const *q, int nq, int d, float scale,
                       float (*s)[CPU_ATT_Q]) {
    for (int j = 0; j < n_keys; j++)
        for (int i = 0; i < nq; i++) {
            float acc = 0;
            for (int e = 0; e < d; e++) acc += zn_fp16_to_f32(k[(size_t)j * stride + e]) * q[i][e];
            s[j][i] = scale * acc;
        }
}

static void att_softmax(float (*s)[CPU_ATT_Q], const int *n, int nq) {
    for (int i = 0; i < nq; i++) {
        float mx = -INFINITY;
        for (int j = 0; j < n[i]; j++) mx = s[j][i] > mx ? s[j][i] : mx;
        double sum = 0;
        for (int j = 0; j < n[i]; j++) {
            s[j][i] = expf(s[j][i] - mx);
            sum += s[j][i];
        }
        const float inv = (float)(1.0 / sum);
        for (int j = 0; j < n[i]; j++) s[j][i] *= inv;
    }
}

static void att_values(const zn_half *v, size_t stride, const int *n, const float (*s)[CPU_ATT_Q], int nq, int d,
                       float *const *y) {
    for (int i = 0; i < nq; i++) {
        for (int e = 0; e < d; e++) y[i][e] = 0;
        for (int j = 0; j < n[i]; j++)
            for (int e = 0; e < d; e++) y[i][e] += s[j][i] * zn_fp16_to_f32(v[(size_t)j * stride + e]);
    }
}

static void to_f16(zn_half *dst, const float *src, int n) {
    for (int i = 0; i < n; i++) dst[i] = zn_f32_to_fp16(src[i]);
}

static void kv_to_f16(zn_kv_type t, const uint8_t *src, zn_half *dst, int n) {
    const size_t bb = backend_kv_bytes(t, 32);
    float y[32];
    for (int b = 0; b < n / 32; b++) {
        backend_kv_dequantize(t, src + (size_t)b * bb, y, 32);
        to_f16(dst + 32 * b, y, 32);
    }
}

static void swiglu(float *y, const float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static double sum_sq(const float *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

static cpu_pack_tile_fn no_packed(zn_type t) {
    (void)t;
    return NULL;
}

#ifdef __x86_64__
/* CPUID bits clang's __builtin_cpu_supports has no name for before clang 16
 * (the fuzz targets build with clang): F16C (leaf 1, ECX 29) and AVX-VNNI
 * (leaf 7 subleaf 1, EAX 4). */
static bool has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
}
static bool has_avxvnni(void) {
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}
/* AVX-512 VNNI (leaf 7 ECX 11), with F, BW and VL, which the compiler's
 * check also asks the OS to save (XCR0's opmask and ZMM state) */
static bool has_avx512vnni(void) {
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c >> 11 & 1);
}
#endif

void cpu_vec_select(cpu_vec *v) {
    *v = (cpu_vec){no_packed, NULL, att_scores, att_softmax, att_values, to_f16, kv_to_f16, swiglu, sum_sq};
#ifdef __x86_64__
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
        *v = (cpu_vec){cpu_packed_avx2,     NULL, cpu_att_scores_avx2, cpu_att_softmax_avx2, cpu_att_values_avx2,
                       cpu_to_f16_avx2,     cpu_kv_to_f16_avx2,  cpu_swiglu_avx2,     cpu_sum_sq_avx2};
    if (v->packed == cpu_packed_avx2 && has_avxvnni()) v->packed = cpu_packed_vnni;
    /* (Zen 4, Ice Lake: AVX-512 VNNI without AVX-VNNI; the integers are exact on every path) */
    if (v->packed != no_packed && has_avx512vnni()) v->packed2 = cpu_packed_avx512;
#endif
}
