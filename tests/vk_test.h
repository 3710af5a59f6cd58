/* The device, buffers and helpers of the Vulkan op tests (test_vk_ops.c:
 * matmuls; test_vk_layers.c: every other op), included by both. Every
 * kernel is checked against a CPU reference (quant.c dequantisation and
 * plain double-precision math), on whatever device vkdev_open picks
 * (lavapipe in CI). Errors are normalised: nmse = sum (y - ref)^2 / sum
 * ref^2, with a bound per op and type stated at each check. */
#ifndef ZN_TEST_VK_TEST_H
#define ZN_TEST_VK_TEST_H

#include <stdint.h>
#include "harness.h"
#include "quant.h"
#include "gdn.h"
#include "vk_attn.h"
#include "vk_gdn.h"
#include "vk_mm.h"
#include "vk_small.h"
#include "vk_quant.h"

typedef struct env {
    bool ok;
    vkdev d;
    vkops o;
    vkcmd c;
    vkxfer x;
    vkarena a;
    vkarena xa;   /* the integer mat-vec's x scratch (vkops_set_xq) */
    vktune t0;    /* vkops_init's tuning, as the device's defaults */
} env;
static env E;
static char vk_no_device[256]; /* setup: why no device could be opened */

/* xorshift64*: deterministic test data */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static inline void fill(float *v, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) v[i] = frand() * scale;
}

static inline double nmse(const float *y, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)y[i] - ref[i];
        if (y[i] != y[i]) return INFINITY;
        num += e * e;
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

/* Device memory for a test: uploaded copy of host data, or poisoned output. */
static inline vkref dev_up(const void *src, size_t n) {
    vkref r = {0};
    zn_err err = {0};
    if (vkarena_alloc(&E.a, n, 256, &r, &err) || vkxfer_upload(&E.x, r, src, n, &err) || vkxfer_flush(&E.x, &err))
        fprintf(stderr, "  upload: %s\n", err.msg);
    return r;
}
static inline vkref dev_out(size_t n) {
    vkref r = {0};
    zn_err err = {0};
    /* NaN poison: an element the shader forgets to write fails the check */
    if (vkarena_alloc(&E.a, n, 256, &r, &err) || vkxfer_fill(&E.x, r, 0x7fc00000u, &err))
        fprintf(stderr, "  alloc: %s\n", err.msg);
    return r;
}
static inline void dev_down(vkref r, void *dst, size_t n) {
    zn_err err = {0};
    if (vkxfer_download(&E.x, r, dst, n, &err)) fprintf(stderr, "  download: %s\n", err.msg);
}
static inline bool begin(void) {
    zn_err err = {0};
    if (vkcmd_begin(&E.c, &err)) { fprintf(stderr, "  begin: %s\n", err.msg); return false; }
    return true;
}
static inline bool run(void) {
    zn_err err = {0};
    if (vkcmd_run(&E.c, &err)) { fprintf(stderr, "  run: %s\n", err.msg); return false; }
    return true;
}
/* Frees every test buffer (arena reset between tests). */
static inline void reset(void) {
    vkarena_free(&E.a);
    vkarena_init(&E.a, &E.d, VKMEM_DEVICE, 16u << 20, 0);
}

static const zn_type ALL_TYPES[] = {ZN_TYPE_F32, ZN_TYPE_F16, ZN_TYPE_BF16, ZN_TYPE_Q4_0,
                                    ZN_TYPE_Q8_0, ZN_TYPE_Q4_K, ZN_TYPE_Q5_K, ZN_TYPE_Q6_K};

/* Random weights quantised to type t, in the GPU layout (vk_quant.h,
 * vkq_row_bytes per row); wf gets the dequantised values (the exact matrix
 * the GPU must multiply). */
static inline void *make_weights(zn_type t, int rows, int cols, float *wf) {
    size_t rb = zn_row_size(t, cols);
    uint8_t *q = malloc(rb * (size_t)rows), *g = malloc(vkq_row_bytes(t, cols) * (size_t)rows);
    float *tmp = malloc(sizeof(float) * (size_t)cols);
    for (int r = 0; r < rows; r++) {
        fill(tmp, (size_t)cols, 1.0f);
        quant_quantize_row(t, tmp, q + rb * (size_t)r, cols);
        quant_dequantize_row(t, q + rb * (size_t)r, wf + (size_t)r * cols, cols);
    }
    vkq_repack(t, q, g, cols, rows);
    free(tmp);
    free(q);
    return g;
}

/* ne expert matrices of rows x cols stacked (GPU layout), as MoE weights;
 * wf gets them dequantised, expert after expert. */
static inline uint8_t *make_experts(zn_type t, int ne, int rows, int cols, float *wf) {
    const size_t eb = vkq_row_bytes(t, cols) * (size_t)rows;
    uint8_t *wq = malloc(eb * (size_t)ne);
    for (int e = 0; e < ne; e++) {
        void *q = make_weights(t, rows, cols, wf + (size_t)e * rows * cols);
        memcpy(wq + eb * e, q, eb);
        free(q);
    }
    return wq;
}


static inline int cols_for(zn_type t, int odd) {
    const zn_type_info *ti = zn_type_get(t);
    if (ti->blck == 256) return 512;
    if (ti->blck == 32) return 96;
    return odd;
}

static inline bool setup(const char *suite) {
    zn_err err = {0};
    if (vkdev_open(&E.d, -1, &err)) {
        snprintf(vk_no_device, sizeof vk_no_device, "no usable Vulkan device: %s", err.msg);
        return false;
    }
    if (vkops_init(&E.o, &E.d, NULL, NULL, &err) || vkcmd_init(&E.c, &E.d, E.o.ps.layout, false, &err) ||
        vkxfer_init(&E.x, &E.d, 1u << 20, &err)) {
        fprintf(stderr, "%s: %s\n", suite, err.msg);
        return false;
    }
    vkarena_init(&E.a, &E.d, VKMEM_DEVICE, 16u << 20, 0);
    vkarena_init(&E.xa, &E.d, VKMEM_DEVICE, 0, 0);
    vkref xq;
    /* test_matvec_mvx_sizes: 2 rows just past the fused kernel's limit */
    const uint64_t xqb = vkops_xq_bytes(E.o.mvx_max_cols + 512 > 2304 ? E.o.mvx_max_cols + 512 : 2304, 8);
    if (vkarena_alloc(&E.xa, xqb, 256, &xq, &err)) {
        fprintf(stderr, "%s: %s\n", suite, err.msg);
        return false;
    }
    vkops_set_xq(&E.o, xq.addr, xqb);
    E.t0 = E.o.t;
    /* every upload through the double-buffered staging copy (lavapipe's
     * memory is host-visible, which would otherwise take the memcpy path);
     * a 1 MiB stage makes the larger uploads take several rounds */
    E.x.force_staging = true;
    return true;
}

static inline void teardown(void) {
    vkarena_free(&E.a);
    vkarena_free(&E.xa);
    vkxfer_free(&E.x);
    vkcmd_free(&E.c);
    vkops_free(&E.o);
    vkdev_close(&E.d);
}

/* setup failed: no device to open skips the suite; a device that opened
 * and then failed (pipelines, memory) fails it. */
static inline int no_device(const char *suite) {
    if (vk_no_device[0]) harness_skip_suite(suite, vk_no_device);
    else h_failed++;
    return harness_report(suite);
}

#endif
