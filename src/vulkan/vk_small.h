/* The small ops: embedding rows, norms, rope, elementwise ops, the MoE
 * router and argmax. vk_small.c. */
#ifndef ZINC_VK_SMALL_H
#define ZINC_VK_SMALL_H

#include "vk_attn.h"
#include "vk_ops.h"

/* dst[r] = dequantised row tokens[r] (int32) of w ([n_vocab][ncols], GPU
 * rows of vk_quant.h). */
zn_status vkop_embed(vkops *o, vkcmd *c, zn_type t, VkDeviceAddress w, uint32_t row_bytes, uint32_t ncols,
                     VkDeviceAddress tokens, uint32_t n_tok, VkDeviceAddress dst, zn_err *err);

typedef enum vknorm_mode { VKNORM_RMS = 0, VKNORM_L2 = 1 } vknorm_mode;
/* Over n_groups contiguous groups of `group` floats: RMS: x / sqrt(mean x^2
 * + eps) * w * silu(z); L2: x / sqrt(sum x^2 + eps). w, z optional (0).
 * y may equal x. */
zn_status vkop_norm(vkops *o, vkcmd *c, vknorm_mode mode, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                    VkDeviceAddress z, uint32_t group, uint32_t n_groups, float eps, const char *name, zn_err *err);

/* ZN_OP_ROPE in place on [n_tok][row_stride] rows holding n_heads heads of
 * head_dim; mode: zn_rope_mode values; ff: frequency factors or 0;
 * sections below 256. With seqs (vk_ops.h vkop_seq_ent), row r is the
 * token of the table's sequence r, at its row of x / src / v, its
 * position and block table (n_past unused, kv.tab then only says whether
 * to store). Fusions: with nw, x is first computed as the per-head RMS
 * norm of src (times nw, eps); with kv.tab, the result goes to the layer's
 * f16 K row (n_heads * head_dim) of position n_past + r of the paged cache
 * (vk_ops.h vkop_kv) instead of x, and the V rows (v [n_tok][vdim]) are
 * copied into its V rows. */
typedef struct vkop_rope {
    VkDeviceAddress x, ff, step;
    VkDeviceAddress src, nw, v, seqs;
    vkop_kv kv;
    uint32_t n_tok, n_heads, head_dim, n_rot, row_stride, mode, n_past, vdim;
    int sections[4];
    float freq_base, freq_scale, eps;
} vkop_rope;
zn_status vkop_rope_run(vkops *o, vkcmd *c, const vkop_rope *a, const char *name, zn_err *err);
/* The parameters of a layer's q and k ropes (their norms in src / nw / eps)
 * as attention takes them in (vk_attn.h vkop_attn.rp); an error where the
 * two rotate differently. */
zn_status vkop_rope_params(const vkop_rope *q, const vkop_rope *k, vkop_rope_p *out, zn_err *err);

typedef enum vkelt_mode {
    VKELT_ADD = 0, VKELT_SWIGLU = 1, VKELT_SWIGLU_CAT = 2, VKELT_SIGMOID_MUL = 3, VKELT_MOE_SUM = 4, VKELT_MUL = 5,
    VKELT_COPY_COLS = 6, VKELT_MOE_TAIL = 7,
} vkelt_mode;
/* See eltwise.comp: n = elements of dst, rows of cols; b_cols for
 * SIGMOID_MUL (and a's row length for COPY_COLS); route and k for MOE_SUM;
 * k, aux, aux2 = width, stride, offset for COPY_COLS; MOE_TAIL (vk_fuse.h
 * vkfuse_tail): res + (MOE_SUM of a, route, k (k = 0: a itself) + b *
 * sigmoid(gate) when b is set). */
typedef struct vkop_elt {
    vkelt_mode mode;
    VkDeviceAddress a, b, dst, route, gate, res;
    uint32_t n, cols, b_cols, k, aux, aux2;
} vkop_elt;
zn_status vkop_eltwise(vkops *o, vkcmd *c, const vkop_elt *e, const char *name, zn_err *err);

/* ZN_OP_MOE_ROUTE: dst [n_tok][2k]. */
zn_status vkop_moe_route(vkops *o, vkcmd *c, VkDeviceAddress logits, VkDeviceAddress dst, uint32_t n_tok,
                         uint32_t n_expert, uint32_t k, bool norm, float wscale, const char *name, zn_err *err);

/* dst[r] (int32) = argmax of row r of x [n_rows][n]. */
zn_status vkop_argmax(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress dst, uint32_t n_rows, uint32_t n,
                      zn_err *err);

#endif
