/* Every Vulkan shader against a CPU reference (quant.c dequantisation and
 * plain double-precision math), on whatever device vkdev_open picks
 * (lavapipe in CI). Sizes are small and odd on purpose. Errors are
 * normalised: nmse = sum (y - ref)^2 / sum ref^2, with a bound per op and
 * type stated at each check. No device: the suite fails, unless
 * ZN_SKIP_VULKAN=1 says that is expected. */
#include <stdint.h>

#include "harness.h"
#include "quant.h"
#include "vk_ops.h"

typedef struct env {
    bool ok;
    vkdev d;
    vkops o;
    vkcmd c;
    vkxfer x;
    vkarena a;
} env;
static env E;

/* xorshift64*: deterministic test data */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static void fill(float *v, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) v[i] = frand() * scale;
}

static double nmse(const float *y, const double *ref, size_t n) {
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
static vkref dev_up(const void *src, size_t n) {
    vkref r = {0};
    zn_err err = {0};
    if (vkarena_alloc(&E.a, n, 256, &r, &err) || vkxfer_upload(&E.x, r, src, n, &err) || vkxfer_flush(&E.x, &err))
        fprintf(stderr, "  upload: %s\n", err.msg);
    return r;
}
static vkref dev_out(size_t n) {
    vkref r = {0};
    zn_err err = {0};
    /* NaN poison: an element the shader forgets to write fails the check */
    if (vkarena_alloc(&E.a, n, 256, &r, &err) || vkxfer_fill(&E.x, r, 0x7fc00000u, &err))
        fprintf(stderr, "  alloc: %s\n", err.msg);
    return r;
}
static void dev_down(vkref r, void *dst, size_t n) {
    zn_err err = {0};
    if (vkxfer_download(&E.x, r, dst, n, &err)) fprintf(stderr, "  download: %s\n", err.msg);
}
static bool begin(void) {
    zn_err err = {0};
    if (vkcmd_begin(&E.c, &err)) { fprintf(stderr, "  begin: %s\n", err.msg); return false; }
    return true;
}
static bool run(void) {
    zn_err err = {0};
    if (vkcmd_run(&E.c, &err)) { fprintf(stderr, "  run: %s\n", err.msg); return false; }
    return true;
}
/* Frees every test buffer (arena reset between tests). */
static void reset(void) {
    vkarena_free(&E.a);
    vkarena_init(&E.a, &E.d, VKMEM_DEVICE, 16u << 20, 0);
}

/* ---- mat-vec / mat-mat ------------------------------------------------ */

static const zn_type ALL_TYPES[] = {ZN_TYPE_F32, ZN_TYPE_F16, ZN_TYPE_BF16, ZN_TYPE_Q4_0,
                                    ZN_TYPE_Q8_0, ZN_TYPE_Q4_K, ZN_TYPE_Q5_K, ZN_TYPE_Q6_K};

/* Random weights quantised to type t; wf gets the dequantised values (the
 * exact matrix the GPU must multiply). */
static void *make_weights(zn_type t, int rows, int cols, float *wf) {
    size_t rb = zn_row_size(t, cols);
    uint8_t *q = malloc(rb * (size_t)rows);
    float *tmp = malloc(sizeof(float) * (size_t)cols);
    for (int r = 0; r < rows; r++) {
        fill(tmp, (size_t)cols, 1.0f);
        quant_quantize_row(t, tmp, q + rb * (size_t)r, cols);
        quant_dequantize_row(t, q + rb * (size_t)r, wf + (size_t)r * cols, cols);
    }
    free(tmp);
    return q;
}

typedef enum mm_kernel { K_AUTO, K_VEC, K_MAT } mm_kernel;

/* One matmul case: T tokens, optional bias/scale/residual. Returns nmse. */
static double mm_case(zn_type t, int rows, int cols, int T, bool extras, mm_kernel kern) {
    float *wf = malloc(sizeof(float) * (size_t)rows * cols), *x = malloc(sizeof(float) * (size_t)T * cols);
    float *bias = malloc(sizeof(float) * rows), *res = malloc(sizeof(float) * (size_t)T * rows);
    float *y = malloc(sizeof(float) * (size_t)T * rows);
    double *ref = malloc(sizeof(double) * (size_t)T * rows);
    void *wq = make_weights(t, rows, cols, wf);
    fill(x, (size_t)T * cols, 1.0f);
    fill(bias, rows, 1.0f);
    fill(res, (size_t)T * rows, 1.0f);
    float scale = 0.75f;
    for (int tk = 0; tk < T; tk++)
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int k = 0; k < cols; k++) s += (double)wf[(size_t)r * cols + k] * x[(size_t)tk * cols + k];
            if (extras) s = s * scale + bias[r] + res[(size_t)tk * rows + r];
            ref[(size_t)tk * rows + r] = s;
        }
    size_t rb = zn_row_size(t, cols);
    vkref dw = dev_up(wq, rb * rows), dx = dev_up(x, sizeof(float) * T * cols), dy = dev_out(sizeof(float) * T * rows);
    vkop_mm a = {.type = t, .w = dw.addr, .x = dx.addr, .y = dy.addr, .ncols = (uint32_t)cols, .nrows = (uint32_t)rows,
                 .row_bytes = (uint32_t)rb, .n_tok = (uint32_t)T, .x_stride = (uint32_t)cols, .y_stride = (uint32_t)rows};
    if (extras) {
        a.bias = dev_up(bias, sizeof(float) * rows).addr;
        a.res = dev_up(res, sizeof(float) * T * rows).addr;
        a.scale = dev_up(&scale, sizeof scale).addr;
    }
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = kern == K_VEC ? vkop_matvec(&E.o, &E.c, &a, "mv", &err)
                     : kern == K_MAT ? vkop_matmat(&E.o, &E.c, &a, "mm", &err)
                                     : vkop_matmul(&E.o, &E.c, &a, "mm", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dy, y, sizeof(float) * T * rows);
            e = nmse(y, ref, (size_t)T * rows);
        }
    }
    free(wf); free(x); free(bias); free(res); free(y); free(ref); free(wq);
    reset();
    return e;
}

static int cols_for(zn_type t, int odd) {
    const zn_type_info *ti = zn_type_get(t);
    if (ti->blck == 256) return 512;
    if (ti->blck == 32) return 96;
    return odd;
}

/* f32 accumulation over a few hundred products: ~1e-14 typical; 1e-10
 * leaves room for summation order, not for a wrong weight or index. */
#define MM_TOL 1e-10

static void test_matvec_types(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        double e1 = mm_case(t, 37, cols_for(t, 45), 1, false, K_VEC);
        double e3 = mm_case(t, 19, cols_for(t, 77), 3, true, K_VEC);
        CHECK_MSG(e1 <= MM_TOL && e3 <= MM_TOL, "%s: nmse %.3g (T=1) %.3g (T=3, bias/scale/res)", zn_type_name(t), e1, e3);
    }
}

static void test_matmat_types(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        double e1 = mm_case(t, 70, cols_for(t, 45), 67, false, K_MAT);
        double e2 = mm_case(t, 33, cols_for(t, 33), 5, true, K_MAT);
        CHECK_MSG(e1 <= MM_TOL && e2 <= MM_TOL, "%s: nmse %.3g (70x67) %.3g (33x5, extras)", zn_type_name(t), e1, e2);
    }
}

/* ---- main --------------------------------------------------------------- */

static bool setup(void) {
    zn_err err = {0};
    if (vkdev_open(&E.d, -1, &err)) {
        fprintf(stderr, "test_vk_ops: no usable Vulkan device: %s\n", err.msg);
        return false;
    }
    if (vkops_init(&E.o, &E.d, NULL, &err) || vkcmd_init(&E.c, &E.d, E.o.ps.layout, false, &err) ||
        vkxfer_init(&E.x, &E.d, 1u << 20, &err)) {
        fprintf(stderr, "test_vk_ops: %s\n", err.msg);
        return false;
    }
    vkarena_init(&E.a, &E.d, VKMEM_DEVICE, 16u << 20, 0);
    return true;
}

static void teardown(void) {
    vkarena_free(&E.a);
    vkxfer_free(&E.x);
    vkcmd_free(&E.c);
    vkops_free(&E.o);
    vkdev_close(&E.d);
}

int main(void) {
    if (!setup()) {
        const char *skip = getenv("ZN_SKIP_VULKAN");
        if (skip && !strcmp(skip, "1")) {
            printf("vk_ops: skipped (ZN_SKIP_VULKAN=1): 0 passed, 0 failed\n");
            return 0;
        }
        printf("vk_ops: 0 passed, 1 failed\n");
        return 1;
    }
    fprintf(stderr, "vk_ops on %s\n", E.d.info.name);
    RUN(test_matvec_types);
    RUN(test_matmat_types);
    teardown();
    return harness_report("vk_ops");
}
