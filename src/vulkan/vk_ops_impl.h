/* Internals the op families share (vk_ops.c and the vk_<family>.c files):
 * the pipeline table's interface, dispatch helpers, the matmul push
 * constants. Not for the backend. */
#ifndef ZINC_VK_OPS_IMPL_H
#define ZINC_VK_OPS_IMPL_H

#include <string.h>

#include "vk_attn.h"
#include "vk_gdn.h"
#include "vk_mm.h"
#include "vk_ops.h"
#include "vk_small.h"

/* ---- pipelines (vk_ops.c) ---- */

/* What selects a pipeline of a kind (pipe_table in vk_ops.c says which
 * field the kind reads; the others are ignored). */
typedef struct vkvar {
    zn_type type;                 /* per weight type */
    uint32_t cfg;                 /* per entry of the kind's tile-config table */
    uint32_t head_dim;            /* per power-of-two head dim, 8 .. 1024 */
    uint32_t rows_log2;           /* per power-of-two count of query rows */
} vkvar;

/* A pipeline's specialisation constants, in constant_id order. */
typedef struct vkspec {
    uint32_t v[ZN_VK_MAX_SPEC];
    uint32_t n;
} vkspec;

/* Sets out to a shader's constants given as a struct of uint32_t in the
 * shader's constant_id order: VKSPEC(out, spec_norm, {.wg = 256}). */
#define VKSPEC(out, type, ...)                                                                      \
    do {                                                                                            \
        const type vkspec_v_ = __VA_ARGS__;                                                         \
        _Static_assert(sizeof vkspec_v_ % 4 == 0 && sizeof vkspec_v_ <= 4 * ZN_VK_MAX_SPEC, #type); \
        memcpy((out)->v, &vkspec_v_, sizeof vkspec_v_);                                             \
        (out)->n = (uint32_t)(sizeof vkspec_v_ / 4);                                                \
    } while (0)

/* Builds kind k's constants for variant v (an error: the device cannot run it). */
typedef zn_status (*vkspec_fn)(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);

/* The pipeline of kind k for variant v, created on first use. */
zn_status vkops_pipe(vkops *o, vkop_kind k, vkvar v, const vkpipe **out, zn_err *err);

/* The families' constant builders, named in the table. */
zn_status vkspec_matvec(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);   /* vk_matvec.c */
zn_status vkspec_matvec_q(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_quantx(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_mmi8(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_matmul(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);   /* vk_gemm.c */
zn_status vkspec_mm_prep(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_wg256(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_mmf(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_mmf_cm2(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_attn(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);     /* vk_attn.c */
zn_status vkspec_attn_dec(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_attn_fa(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_attn_fa_cm(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_attn_fa_sg(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_kv_store(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_conv1d(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);   /* vk_gdn.c */
zn_status vkspec_gdn(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);
zn_status vkspec_small(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err);    /* vk_small.c */

/* attn_dec.comp's variants: 1, 2, 4, 8, 16 query rows */
#define VK_ATTN_DEC_SLOTS 5

/* ---- dispatch (vk_ops.c) ---- */

/* Workgroup grid for n groups: x up to the device limit, the rest in y
 * (shaders linearise gl_WorkGroupID.y * gl_NumWorkGroups.x + x). */
void vkops_grid2(const vkops *o, uint32_t n, uint32_t *gx, uint32_t *gy);
/* Dispatches one workgroup per item over that grid. */
void vkops_dispatch_items(vkops *o, vkcmd *c, const vkpipe *p, const void *pc, uint32_t size, uint32_t n_items,
                          const char *name);

/* ---- matmuls (vk_matvec.c) ---- */

/* Mirrors mm_push.glsl. */
typedef struct mm_push {
    uint64_t w, x, y, bias, scale, res, ids, aux;
    uint32_t expert_bytes, ncols, nrows, row_bytes, n_slots;
    uint32_t x_stride, y_stride, x_slot_stride, y_slot_stride;
    uint32_t n_tok, ids_stride, flags;
    float eps;
    uint64_t aux_w;
} mm_push;
_Static_assert(sizeof(mm_push) <= ZN_VK_PUSH_MAX, "push constants");

zn_status vkmm_check(const vkop_mm *a, zn_err *err);
mm_push vkmm_push(const vkop_mm *a);

#endif
