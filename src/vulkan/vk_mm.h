/* The matmul ops: mat-vec (float, integer on int8-quantised x, grouped),
 * the f16 GEMM path and the tiled GEMM, and the one place that chooses
 * among them (vkops_mm_kernel). vk_matvec.c, vk_gemm.c. */
#ifndef ZINC_VK_MM_H
#define ZINC_VK_MM_H

#include <stddef.h>

#include "vk_ops.h"

/* Tile configurations of the f16 GEMM (mmf.glsl): workgroup threads, the
 * workgroup's rows x tokens, each subgroup's rows x tokens. */
typedef struct vkmm_cfg { uint32_t wg, bm, bn, wm, wn; } vkmm_cfg;
#define ZN_VK_MM_NCFG 8
#define ZN_VK_MM_AUTO ZN_VK_AUTO
extern const vkmm_cfg zn_vk_mm_cfgs[ZN_VK_MM_NCFG];

/* Tile configurations of the f16 GEMM on NV cooperative matrix 2
 * (mmf_cm2.comp, ZN_VK_CM2_WG threads): rows x tokens per workgroup, k
 * step, k steps per loop iteration. */
typedef struct vkcm2_cfg { uint32_t bm, bn, bk, unroll; } vkcm2_cfg;
#define ZN_VK_CM2_NCFG 6 /* at most ZN_VK_NTYPES: one pipeline slot each */
#define ZN_VK_CM2_MIN_ACC 2048 /* values in an accumulator at least (vk_gemm.c zn_vk_cm2_cfgs) */
extern const vkcm2_cfg zn_vk_cm2_cfgs[ZN_VK_CM2_NCFG];

/* y[t][slot][r] = (sum_k W_e[r][k] x[t][slot][k]) * scale[e] + bias[e][r] + res[t][slot][r]
 * (bias_first: (... + bias) * scale) where e = ids[t * ids_stride + slot]
 * (expert indices stored as f32, as ZN_OP_MOE_ROUTE writes them) with ids,
 * else 0 and n_slots = 1. Optional addresses are 0 when absent.
 * x_slot_stride 0 = every slot reads the same x. */
typedef struct vkop_mm {
    zn_type type;
    VkDeviceAddress w, x, y, bias, scale, res, ids;
    uint64_t expert_bytes;        /* bytes between experts' matrices */
    uint32_t ncols, nrows, row_bytes;  /* row_bytes: vkq_row_bytes (GPU layout) */
    uint32_t n_tok, n_slots;
    uint32_t x_stride, y_stride, x_slot_stride, y_slot_stride;
    uint32_t ids_stride;
    uint32_t n_expert;            /* matrices in the expert stack (the grouped GEMM needs it) */
    bool bias_first;
    /* The op producing x, fused (the kernels that take each mode:
     * vkops_mm_takes): VKX_RMSNORM: x -> x / sqrt(mean(x^2) + eps) * aux
     * (norm weight [ncols]); VKX_SWIGLU: x -> silu(x) * aux (aux laid out
     * like x); VKX_SIGMUL: x -> x * sigmoid(aux) (aux laid out like x: a
     * gate per value). */
    enum { VKX_PLAIN, VKX_RMSNORM, VKX_SWIGLU, VKX_SIGMUL } xmode;
    VkDeviceAddress aux;
    float eps;
    /* gn_w != 0, with VKX_SWIGLU: aux is first RMS-normed per group of
     * gn_group values (a power of two from 32; eps) and weighted by
     * gn_w[k % gn_group]: Qwen3.5's gated norm. Only the integer mat-vec
     * quantising x in its workgroups takes it (vkops_gnorm_takes);
     * vkop_matvec says ZN_ERR_UNSUPPORTED, recording nothing, elsewhere. */
    VkDeviceAddress gn_w;
    uint32_t gn_group;
    /* The address of a vkop_group (y, bias, scale, res and ids unused
     * then): the mat-vec and the f16 GEMM take groups. */
    VkDeviceAddress group;
    bool group_conv;              /* the group block holds a conv (vkop_group.conv_w): compiled in for it alone */
    /* The address of a vkop_tail (ids unused then): the experts' down of a
     * MoE layer (n_slots experts per token, x_slot_stride > 0) computes the
     * layer's tail and stores y[t][r] = res[t][r] + (sum over slots of the
     * routing weight times the slot's result + the gated shared expert),
     * y_stride y's row. Only the integer mat-vec takes it
     * (vkops_moe_tail_takes); vkop_matvec says ZN_ERR_UNSUPPORTED when it
     * cannot run it (the caller then runs the matmul and the tail apart). */
    VkDeviceAddress tail;
    /* The address of a vkop_route (ids unused then): the experts' gate /
     * up of n_slots experts per token pick them from the router's logits
     * themselves, and the route block may say to store the routing. Only
     * the integer mat-vec takes it (vkops_moe_route_takes); vkop_matvec
     * says ZN_ERR_UNSUPPORTED, recording nothing, when it cannot. */
    VkDeviceAddress route;
    /* The caller vouches that x (and aux) were read by the previous
     * vkop_matvec / vkop_matmat call on these ops and not written since:
     * when that call quantised the same rows the same way, the integer path
     * reuses them. */
    bool x_reuse;
} vkop_mm;

/* A grouped mat-vec (vkop_mm.group): the matrices of up to 4 matmuls that
 * read the same x, stacked row-wise in one weight of nrows = row_end[n-1]
 * rows; rows [row_end[s-1], row_end[s]) of each token go to y[s] (row
 * stride y_stride[s]) with that matmul's bias and scale. The block lives in
 * device-visible memory; its layout is the Group block of matvec.comp. */
#define ZN_VK_GROUP_MAX 4
typedef struct vkop_group {
    uint64_t y[ZN_VK_GROUP_MAX], bias[ZN_VK_GROUP_MAX], scale[ZN_VK_GROUP_MAX];
    uint32_t row_end[ZN_VK_GROUP_MAX], y_stride[ZN_VK_GROUP_MAX];
    uint32_t n_seg;
    /* conv_w != 0 (one token per sequence): segment conv_seg's results go
     * through a causal depthwise conv of conv_k taps (weights
     * [rows][conv_k]) + SiLU with the token's sequence's rolling state
     * ([rows][conv_k - 1]: conv_state, or with conv_seqs, a batched step's
     * sequence table, token t's entry's a), which each row's invocation
     * shifts: gdn.h gdn_conv1d_silu for one token, its ZN_OP_CONV1D folded
     * into the projection before it. */
    uint32_t conv_k, conv_seg;
    uint64_t conv_w, conv_state, conv_seqs;
} vkop_group;
_Static_assert(offsetof(vkop_group, conv_w) == 144 && sizeof(vkop_group) == 168, "mm_store.glsl's Group block layout");

/* A MoE tail (vkop_mm.tail), in device-visible memory: the routing
 * (ZN_OP_MOE_ROUTE's rows: ids | weights), the shared expert's output b
 * (0: none; laid out like y) and its gate logits, b_cols per token (1: one
 * per token). Its layout is the Tail block of mm_store.glsl; it fits in a
 * vkop_group's slot (the backend keeps both in one pool). */
typedef struct vkop_tail {
    uint64_t route, b, gate;
    uint32_t b_cols, pad;
} vkop_tail;
_Static_assert(sizeof(vkop_tail) <= sizeof(vkop_group), "a tail block takes a group block's slot");

/* A MoE routing computed in the experts' mat-vec (vkop_mm.route), in
 * device-visible memory: the router's logits [n_tok][n_expert] and, write
 * set, where the routing rows go (ZN_OP_MOE_ROUTE's dst), its norm and
 * scale. Its layout is the Route block of mm_store.glsl; it fits in a
 * vkop_group's slot too. */
typedef struct vkop_route {
    uint64_t logits, dst;
    uint32_t n_expert, k, norm, write;
    float wscale;
    uint32_t pad;
} vkop_route;
_Static_assert(sizeof(vkop_route) <= sizeof(vkop_group), "a route block takes a group block's slot");

/* Does a matmul of n_tok tokens (type t, rows of ncols, dense) read its
 * SwiGLU's aux through a gated norm of groups of `group` (vkop_mm.gn_w)? */
bool vkops_gnorm_takes(const vkops *o, zn_type t, uint32_t ncols, uint32_t n_tok, uint32_t group);

/* Does the experts' gate / up of n_tok tokens (type t, rows of ncols, x
 * in mode xmode) pick k of n_expert experts itself (vkop_mm.route) on this
 * device? Only the integer mat-vec quantising x in its workgroups does. */
bool vkops_moe_route_takes(const vkops *o, zn_type t, uint32_t ncols, int xmode, uint32_t n_expert, uint32_t k,
                           uint32_t n_tok);

/* Does the experts' down of n_tok tokens (type t, rows of ncols, k slots,
 * x in mode xmode) take its layer's tail (vkop_mm.tail) on this device? */
bool vkops_moe_tail_takes(const vkops *o, zn_type t, uint32_t ncols, uint32_t k, uint32_t n_tok, int xmode);

/* The integer mat-vec quantises x (n_tok x slots rows of ncols, after the
 * fused x mode) into device scratch before the dot products: each call
 * alternates between two halves of it, so a call's quantise pass never
 * overwrites what the previous call's mat-vec may still be reading (the
 * barrier between a call's two dispatches orders everything earlier).
 * vkops_xq_bytes is the scratch both halves need for up to `rows` rows of
 * ncols; calls that need more, or without scratch, use the float kernel. */
uint64_t vkops_xq_bytes(uint32_t ncols, uint32_t rows);
void vkops_set_xq(vkops *o, VkDeviceAddress xq, uint64_t bytes);
/* Columns of x the fused integer mat-vec's kind k holds in shared memory
 * (per token: the QTX kinds hold t.mvt rows); longer rows take quantx. */
uint32_t vkmm_mvx_cap(const vkops *o, vkop_kind k);

/* The kernel a matmul runs on, chosen here only: vkop_matmul dispatches
 * on it, the fusion planner (vk_fuse.h) asks it what each matmul will take
 * and the backend sizes the integer mat-vec's scratch by it. The mat-vec
 * for fewer than t.mm_min_tok tokens (experts: t.moe_min_tok, or always
 * without the f16 path) and for dense matrices of fewer than t.mm_min_rows
 * rows; else the f16 GEMM where the device has it for the type (not F32),
 * else the tiled kernel (dense only). */
typedef enum vkmm_kernel {
    VKMM_MATVEC,                  /* matvec.comp / matvec_q.comp */
    VKMM_GEMM,                    /* the f16 path: mm_prep.comp converts x (and W), mmf.glsl multiplies */
    VKMM_TILED,                   /* matmul.comp / matmul_cm.comp on x as it is */
} vkmm_kernel;
vkmm_kernel vkops_mm_kernel(const vkops *o, zn_type t, uint32_t n_tok, uint32_t nrows, bool experts);
/* Does a dense matmul of n_tok tokens of type t run on mmi8.comp (the
 * int8 GEMM of the mat-vec kernel's path: t.mmi_*, Q4_K, and where its
 * tiles fit the device's shared memory)? */
bool vkops_mmi_takes(const vkops *o, zn_type t, uint32_t n_tok);
/* Does kernel k, for n_tok tokens, read x in mode xmode (vkop_mm.xmode) /
 * take a group? The mat-vec takes every mode and groups; the f16 GEMM
 * takes groups and applies a SwiGLU while converting x (mm_prep.comp), an
 * RMS norm only below t.mm_prep_tok tokens: there (batched decode) it
 * saves a dispatch and a barrier, H100 2026-12-06 8B 2,546 -> 2,632 tok/s
 * at 32 sequences; in prefill a workgroup per row normalising cost 0.8 %
 * of pp512 against the norm kernel (bench/results/2026-12-06-s30.md); the
 * tiled kernel neither. */
bool vkops_mm_takes(const vkops *o, vkmm_kernel k, int xmode, bool group, uint32_t n_tok);
/* The NV-coopmat2 tile config (zn_vk_cm2_cfgs) of `groups` products of
 * rows x toks x k (grouped: toks per expert), A dequantised in the GEMM
 * (direct) or not: t.cm2_cfg, else by shape. */
uint32_t vkops_cm2_cfg(const vkops *o, uint32_t rows, uint32_t toks, uint32_t k, uint32_t groups, bool direct);
/* Does the f16 GEMM of a dequantise its weight tiles as it loads them
 * rather than multiply a copy mm_prep.comp dequantised first? Dense below
 * t.mm_prep_tok tokens, grouped below t.moe_prep_tok tokens per expert. */
bool vkops_mm_direct(const vkops *o, const vkop_mm *a);
/* Scratch bytes the f16 path needs for matmul a (its largest n_tok) when at
 * most a_cap bytes of f16 weights are dequantised at a time (at least one
 * expert or one row tile are). */
uint64_t vkops_mm_scratch_bytes(const vkops *o, const vkop_mm *a, uint64_t a_cap);
/* Scratch bytes the split-K partials of the tiled kernel without
 * cooperative matrices (matmul.comp: f32 weights) take for matmul a (0: it
 * runs unsplit). */
uint64_t vkops_mt_split_bytes(const vkops *o, const vkop_mm *a);
/* Does tile config ci fit the device's shared memory? (matmat falls back
 * to the first one that does.) */
bool vkops_mm_cfg_fits(const vkops *o, uint32_t ci);
zn_status vkop_matmul(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);
/* Forces one kernel (tests compare both). */
zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);
zn_status vkop_matmat(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);

#endif
