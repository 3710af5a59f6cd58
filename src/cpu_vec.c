/* Small vector kernels of the CPU backend (attention, KV cache): scalar
 * versions here, AVX2/FMA/F16C ones in cpu_vec_avx2.c, picked once at init
 * from what the running CPU supports. */
#include "cpu.h"

static float dot_f16(const zn_half *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += zn_fp16_to_f32(a[i]) * b[i];
    return s;
}

static void axpy_f16(float *y, const zn_half *x, float a, int n) {
    for (int i = 0; i < n; i++) y[i] += a * zn_fp16_to_f32(x[i]);
}

static void to_f16(zn_half *dst, const float *src, int n) {
    for (int i = 0; i < n; i++) dst[i] = zn_f32_to_fp16(src[i]);
}

static cpu_tile_fn no_tile(zn_type t) {
    (void)t;
    return NULL;
}

static cpu_pack_tile_fn no_packed(zn_type t) {
    (void)t;
    return NULL;
}

void cpu_vec_select(cpu_vec *v) {
    *v = (cpu_vec){no_tile, no_packed, dot_f16, axpy_f16, to_f16};
#ifdef __x86_64__
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        *v = (cpu_vec){cpu_tile_avx2, cpu_packed_avx2, cpu_dot_f16_avx2, cpu_axpy_f16_avx2, cpu_to_f16_avx2};
    if (v->tile == cpu_tile_avx2 && __builtin_cpu_supports("avxvnni")) {
        v->tile = cpu_tile_vnni;
        v->packed = cpu_packed_vnni;
    }
#endif
}
