/* Shared by the Vulkan matmul op tests (test_vk_ops.c, test_vk_mv_fused.c):
 * the int8 x of the integer mat-vec and its bounds, MoE expert arguments,
 * dropping the mat-vec pipelines after a tuning change and setting their
 * rows and steps. */
#ifndef ZINC_VK_MM_TEST_H
#define ZINC_VK_MM_TEST_H

#include "vk_test.h"

/* The integer mat-vec (matvec_q.comp) multiplies x quantised per block of
 * 32 (quantx.comp: d = max|x| / 127, q = x / d rounded to even); its
 * reference is the exact product with that quantised x, so its errors are
 * the kernel's own (f32 sums of exact integer dots), not quantisation. */
static inline bool is_quant(zn_type t) {
    return t == ZN_TYPE_Q4_0 || t == ZN_TYPE_Q8_0 || t == ZN_TYPE_Q4_K || t == ZN_TYPE_Q5_K || t == ZN_TYPE_Q6_K;
}
static inline bool q8_path(zn_type t) { return E.o.intdot && is_quant(t); }
static inline void q8_round(float *x, int n) {
    for (int b = 0; b < n / 32; b++) {
        float *v = x + 32 * b, amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(v[j]));
        const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0;
        for (int j = 0; j < 32; j++) v[j] = d * nearbyintf(v[j] * id);
    }
}
/* Bound for the integer path: lavapipe matches the reference to ~1e-14,
 * but a GPU's 1 / d may differ from the CPU's by an ulp and round a quant
 * on a tie the other way: one quant off by one is nmse ~4e-8 in the
 * smallest case here. Quantising x itself costs 7e-6..4e-5 (measured), so
 * the bound also shows the kernel multiplies exactly the quantised x. */
#define MM_TOL_Q8 1e-7
/* The same where x comes through an f32 exp or a reduction of the
 * kernel's own order (the gated norm, the sigmoid gate): the kernel's x
 * then differs from the reference's by an ulp here and there, which moves
 * a quant on a tie now and then (each ~4e-8 of nmse); this allows a few,
 * where a wrong group, weight or gate costs 1e-4 or more. */
#define MM_TOL_GN 1e-6

/* The matmul of MoE experts (make_experts) over T tokens x k slots, routed
 * by route ([T][2k]: ids, weights), x shared or per slot. */
static inline vkop_mm moe_args(zn_type t, int ne, int rows, int cols, int T, int k, bool per_slot, vkref w, vkref x,
                        vkref route, vkref scales, vkref y) {
    const size_t rb = vkq_row_bytes(t, cols);
    return (vkop_mm){.type = t, .w = w.addr, .x = x.addr, .y = y.addr, .scale = scales.addr, .ids = route.addr,
                     .expert_bytes = rb * (size_t)rows, .n_expert = (uint32_t)ne, .ncols = (uint32_t)cols,
                     .nrows = (uint32_t)rows, .row_bytes = (uint32_t)rb, .n_tok = (uint32_t)T, .n_slots = (uint32_t)k,
                     .ids_stride = (uint32_t)(2 * k), .x_stride = (uint32_t)(per_slot ? k * cols : cols),
                     .x_slot_stride = (uint32_t)(per_slot ? cols : 0), .y_stride = (uint32_t)(k * rows),
                     .y_slot_stride = (uint32_t)rows};
}

/* f32 accumulation over a few hundred products: ~1e-14 typical; 1e-10
 * leaves room for summation order, not for a wrong weight or index. */
#define MM_TOL 1e-10

/* Drops the mat-vec pipelines (their tuning is in their specialisation
 * constants: a pipeline built for other rows would leave rows unwritten). */
static inline void mv_pipes_drop(void) {
    static const vkop_kind kinds[] = {VKO_MATVEC, VKO_MATVEC_Q, VKO_MATVEC_QX_S, VKO_MATVEC_QX_M, VKO_MATVEC_QX_L,
                                      VKO_MATVEC_QXB_S, VKO_MATVEC_QXB_M, VKO_MATVEC_QXB_L, VKO_MATVEC_QT,
                                      VKO_MATVEC_QTX_S, VKO_MATVEC_QTX_L, VKO_MATVEC_QXK};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int t = 0; t < ZN_VK_NVAR; t++) vkpipe_destroy(&E.o.ps, &E.o.pipes[kinds[k]][t]);
}

/* Integer mat-vec pipelines for rows per subgroup / steps per iteration /
 * workgroup size, the fused kernels' workgroup (0: the device defaults);
 * the tokens per workgroup stay as set. */
static inline void mvq_config(uint32_t rows, uint32_t unroll, uint32_t wg, uint32_t xwg) {
    vktune *t = &E.o.t;
    const vktune *t0 = &E.t0;
    t->mv_wg = wg ? wg : t0->mv_wg;
    for (int i = 0; i < ZN_VK_NTYPES; i++) {
        t->mv_rows[i] = rows ? rows : t0->mv_rows[i];
        t->mvq_rows[i] = rows ? rows : t0->mvq_rows[i];
        t->mvq_unroll[i] = unroll ? unroll : t0->mvq_unroll[i];
        for (int b = 0; b < 3; b++) {
            vktune_mvx *x = b < 2 ? &t->mvx_t[b] : &t->mvt_t;
            const vktune_mvx *x0 = b < 2 ? &t0->mvx_t[b] : &t0->mvt_t;
            x->wg[i] = xwg ? xwg : x0->wg[i];
            x->rows[i] = rows ? rows : x0->rows[i];
            x->unroll[i] = unroll ? unroll : x0->unroll[i];
        }
    }
    mv_pipes_drop();
}

#endif
