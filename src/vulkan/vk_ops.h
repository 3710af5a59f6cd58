/* GPU ops: one function per shader family, recording dispatches into a
 * vkcmd. All tensors are passed as device addresses (f32 activations,
 * row-major, strides in elements). Pipelines are kept once created. An op
 * called with a NULL vkcmd records nothing and only creates the pipelines
 * it would use: the backend does that at init for every shape its model's
 * steps can take, then vkops_forget(); a pipeline still missing is created
 * on first use. Ops do not insert barriers
 * between each other: the caller orders dependent ops with vkcmd_barrier. */
#ifndef ZINC_VK_OPS_H
#define ZINC_VK_OPS_H

#include "quant.h"
#include "vk_cmd.h"
#include "vk_tune.h"

typedef enum vkop_kind {
    VKO_MATVEC, VKO_MATMUL, VKO_MATMUL_CM, VKO_EMBED,        /* per weight type */
    VKO_MATVEC_1,                                            /* matvec.comp, a row per single-subgroup workgroup */
    VKO_MM_PREP,                                             /* per weight type */
    VKO_MMF, VKO_MMF_EMU,                                    /* per tile config (zn_vk_mm_cfgs) */
    VKO_MMF_CM2, VKO_MMF_CM2_MOE,                            /* per tile config (zn_vk_cm2_cfgs): dense, grouped */
    VKO_MOE_BUCKET,
    VKO_NORM, VKO_ROPE, VKO_KV_STORE, VKO_ATTN, VKO_ATTN_MERGE, /* untyped (slot 0) */
    VKO_ATTN_FA,                                             /* variant by head dim */
    VKO_ELTWISE, VKO_MOE_ROUTE, VKO_ARGMAX, VKO_CONV1D,
    VKO_GDN,                                                 /* variant by head dim */
    VKO_MATVEC_Q, VKO_QUANTX,                                /* integer mat-vec (typed), its x (untyped) */
    VKO_MATVEC_QX_S, VKO_MATVEC_QX_M, VKO_MATVEC_QX_L,        /* integer mat-vec quantising x itself (typed),
                                                                by the x row it holds (vkops.mvx) */
    VKO_MATVEC_QXB_S, VKO_MATVEC_QXB_M, VKO_MATVEC_QXB_L,     /* the same for big matrices (own tuning) */
    VKO_ATTN_FA_CM, VKO_ATTN_FA_EMU,                         /* per tile config (zn_vk_fa_cfgs) */
    VKO_ATTN_DEC64, VKO_ATTN_DEC128, VKO_ATTN_DEC256,        /* per query rows (log2) */
    VKO_COUNT
} vkop_kind;


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
#define ZN_VK_CM2_NCFG 8 /* at most ZN_VK_NTYPES: one pipeline slot each */
extern const vkcm2_cfg zn_vk_cm2_cfgs[ZN_VK_CM2_NCFG];

/* Tile configurations of prefill attention on matrix products
 * (attn_fa_cm.glsl): head dim, (token, head) rows per workgroup (16, 32 or
 * 64), keys per tile. Per head dim the first one that fits the device's
 * shared memory is the default. */
typedef struct vkfa_cfg { uint32_t hd, br, bc; } vkfa_cfg;
#define ZN_VK_FA_NCFG 8 /* at most ZN_VK_NTYPES: one pipeline slot each */
extern const vkfa_cfg zn_vk_fa_cfgs[ZN_VK_FA_NCFG];

typedef struct vkops {
    vkdev *d;
    vkpipes ps;
    vkpipe pipes[VKO_COUNT][ZN_VK_NTYPES];
    /* Every kernel choice and size (vk_tune.h), read when pipelines are
     * built and ops recorded; tests and tools/vk-bench change it (and
     * destroy the pipelines built from the old values). */
    vktune t;
    /* What runs, from the tuning and the device: */
    bool coopmat;             /* tiled kernel on cooperative matrices (f16 operands) for
                                 non-F32 weights; tests clear it to check the fallback */
    /* The f16 GEMM path (mmf.glsl) for non-F32 weights: the operands are
     * dequantised / converted into the scratch the owner allocates once
     * (vkops_mm_scratch_bytes), then multiplied on cooperative matrices, or
     * on their scalar emulation when mm_emulate (tests; no coopmat). Without
     * scratch, matmat takes the kernels above. MoE matmuls of at least
     * t.moe_min_tok tokens run on it as one grouped GEMM. */
    VkDeviceAddress mm_scratch;
    uint64_t mm_scratch_bytes;
    bool mm_emulate;
    bool mm_cm2;              /* GEMMs of that path on mmf_cm2.comp (device coopmat2 and t.mm_cm2;
                                 off after the driver refused such a pipeline) */
    /* Prefill attention (16+ rows, head dims 64/128/256) on attn_fa_cm.glsl:
     * on cooperative matrices where the device has them, else on their
     * emulation when mm_emulate (tests), else on attn_fa.comp. */
    bool fa_cm;
    char fa_err[192];         /* why fa_cm went off (pipeline creation failed), or "" */
    bool attn_dec;            /* decode attention per KV head (attn_dec.comp) where it applies:
                                 t.attn_dec on a device with subgroups of 8 or more */
    bool intdot;              /* quantised weights: mat-vec on integer dot products of
                                 int8-quantised x (needs xq); tests clear it to check the
                                 float kernel */
    bool mvx;                 /* the integer mat-vec quantises x itself, per workgroup into
                                 shared memory (no quantx dispatch and barrier), for rows of
                                 at most mvx_max_cols */
    uint32_t mvx_max_cols;    /* what shared memory holds (tests lower it to see the fallback) */
    char intdot_err[192];     /* why intdot went off at run time (pipeline creation failed), or "" */
    VkDeviceAddress xq;       /* scratch for quantised x (vkops_set_xq) */
    uint64_t xq_bytes;
    uint32_t xq_turn;         /* which half of xq the next integer mat-vec uses */
    struct vkop_xq_key {      /* what the last quantise pass wrote (at q; q == 0: nothing) */
        VkDeviceAddress x, aux, q;
        uint32_t ncols, rows, nsx, x_stride, x_slot_stride, flags;
        float eps;
        uint32_t zero;        /* no padding: keys compare with memcmp */
    } xq_last;
    struct vkop_mmx_key {     /* the x the last f16 GEMM converted, and where to (x == 0: none); */
        VkDeviceAddress x, xh;    /* grouped: in the order of the bucket of routing ids (kept with it) */
        VkDeviceAddress ids;
        uint32_t ncols, kp, xrows, xs, x_stride, x_slot_stride, n_expert, pad;
    } mmx_last;
} vkops;

/* t: the tuning (NULL: vktune_init's defaults for the device). */
zn_status vkops_init(vkops *o, vkdev *d, const vktune *t, const char *cache_path, zn_err *err);
void vkops_free(vkops *o);
/* Forgets what earlier calls left for later ones to reuse (the quantised
 * and converted x, vkop_mm.x_reuse): after calls without a command buffer. */
void vkops_forget(vkops *o);
/* Types the mat-vec / mat-mat / get_rows shaders read. */
bool vkops_type_ok(zn_type t);

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
     * like x). */
    enum { VKX_PLAIN, VKX_RMSNORM, VKX_SWIGLU } xmode;
    VkDeviceAddress aux;
    float eps;
    /* The address of a vkop_group (y, bias, scale, res and ids unused
     * then): the mat-vec and the f16 GEMM take groups. */
    VkDeviceAddress group;
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
} vkop_group;

/* The integer mat-vec quantises x (n_tok x slots rows of ncols, after the
 * fused x mode) into device scratch before the dot products: each call
 * alternates between two halves of it, so a call's quantise pass never
 * overwrites what the previous call's mat-vec may still be reading (the
 * barrier between a call's two dispatches orders everything earlier).
 * vkops_xq_bytes is the scratch both halves need for up to `rows` rows of
 * ncols; calls that need more, or without scratch, use the float kernel. */
uint64_t vkops_xq_bytes(uint32_t ncols, uint32_t rows);
void vkops_set_xq(vkops *o, VkDeviceAddress xq, uint64_t bytes);

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
/* Does kernel k read x in mode xmode (vkop_mm.xmode) / take a group? The
 * mat-vec takes every mode and groups; the f16 GEMM applies a SwiGLU while
 * converting x (not an RMS norm) and takes groups; the tiled kernel
 * neither. */
bool vkops_mm_takes(vkmm_kernel k, int xmode, bool group);
/* Scratch bytes the f16 path needs for matmul a (its largest n_tok) when at
 * most a_cap bytes of f16 weights are dequantised at a time (at least one
 * expert or one row tile are). */
uint64_t vkops_mm_scratch_bytes(const vkops *o, const vkop_mm *a, uint64_t a_cap);
/* Does tile config ci fit the device's shared memory? (matmat falls back
 * to the first one that does.) */
bool vkops_mm_cfg_fits(const vkops *o, uint32_t ci);
zn_status vkop_matmul(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);
/* Forces one kernel (tests compare both). */
zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);
zn_status vkop_matmat(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);

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

/* The step block: the position of a step, read by the position-dependent
 * shaders (rope, kv_store, attn) at run time from device-visible memory
 * instead of from push constants, so that a recorded command buffer stays
 * valid for later positions and can be submitted again (backend_vulkan.c
 * replays its decode step this way). The host writes it before each submit.
 * Ops take its address as `step`; 0 = use their n_past argument. The
 * shaders read n_past as the first uint at that address. */
typedef struct vkop_step {
    uint32_t n_past;          /* tokens already in the sequence */
    uint32_t pad[3];
} vkop_step;

/* ZN_OP_ROPE in place on [n_tok][row_stride] rows holding n_heads heads of
 * head_dim; mode: zn_rope_mode values; ff: frequency factors or 0.
 * Fusions: with nw, x is first computed as the per-head RMS norm of src
 * (times nw, eps); with kc, the result goes to the f16 K cache [pos][n_heads
 * * head_dim] at n_past + r instead of x, and the V rows (v [n_tok][vdim])
 * are copied into the V cache vc. */
typedef struct vkop_rope {
    VkDeviceAddress x, ff, step;
    VkDeviceAddress src, nw, kc, v, vc;
    uint32_t n_tok, n_heads, head_dim, n_rot, row_stride, mode, n_past, vdim;
    int sections[4];
    float freq_base, freq_scale, eps;
} vkop_rope;
zn_status vkop_rope_run(vkops *o, vkcmd *c, const vkop_rope *a, const char *name, zn_err *err);

/* K/V rows (f32) into f16 caches [pos][kdim] / [pos][vdim] at n_past + r
 * (n_past from the step block when step is not 0). */
zn_status vkop_kv_store(vkops *o, vkcmd *c, VkDeviceAddress k, VkDeviceAddress v, VkDeviceAddress ck,
                        VkDeviceAddress cv, uint32_t n_tok, uint32_t kdim, uint32_t vdim, uint32_t n_past,
                        VkDeviceAddress step, const char *name, zn_err *err);

/* Causal GQA attention of ZN_OP_ATTN. part: scratch for split-K partials,
 * vkop_attn_part_floats() floats (0 when that is 0). A single-token step
 * over more than o->t.attn_chunk keys splits them
 * (flash-decoding) into chunks of that many keys, over vkop_attn_splits()
 * workgroups: a power of two, so the count (the only thing of the
 * partition a recording fixes) changes only when the context doubles; the
 * splits past the last key are empty. With step set, the dispatch stays
 * valid for every n_past whose split count is the recorded one.
 * With o->attn_dec, steps of up to ZN_VK_ATTN_SPLIT_TOK tokens and
 * ZN_VK_ATTN_DEC_MAX_ROWS query rows per KV head (n_tok x n_head /
 * n_head_kv; hd_k = hd_v = 64, 128 or 256)
 * run attn_dec.comp, one workgroup per (KV head, split), which reads each
 * K/V row once for the whole group; steps of that many tokens (on either
 * kernel) split, t.attn_chunk defaults to
 * ZN_VK_ATTN_DEC_CHUNK and the split count stops at ZN_VK_ATTN_MAX_SPLIT:
 * both kernels then derive the keys per split from the position
 * (ceil(keys / splits)), so the count alone fixes a recording. */
#define ZN_VK_ATTN_MAX_HEAD_DIM 256
#define ZN_VK_ATTN_CHUNK 256
#define ZN_VK_ATTN_DEC_CHUNK 64
#define ZN_VK_ATTN_DEC_MAX_ROWS 16
#define ZN_VK_ATTN_SPLIT_TOK 4
#define ZN_VK_ATTN_MAX_SPLIT 256
typedef struct vkop_attn {
    VkDeviceAddress q, ck, cv, dst, part, step;
    uint32_t n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    float scale;
} vkop_attn;
/* Shared memory bytes of tile config ci on this device, and whether the
 * device runs it; the config prefill attention of head dim hd takes
 * (ZN_VK_MM_AUTO: the scalar kernel). */
uint32_t vkops_fa_cfg_bytes(const vkops *o, uint32_t ci);
bool vkops_fa_cfg_ok(const vkops *o, uint32_t ci);
uint32_t vkops_fa_cfg_for(const vkops *o, uint32_t hd);
uint32_t vkop_attn_splits(const vkops *o, uint32_t n_tok, uint32_t n_kv);
uint64_t vkop_attn_part_floats(const vkops *o, uint32_t n_tok, uint32_t n_ctx, uint32_t n_head, uint32_t hd_v);
zn_status vkop_attn_run(vkops *o, vkcmd *c, const vkop_attn *a, const char *name, zn_err *err);

typedef enum vkelt_mode {
    VKELT_ADD = 0, VKELT_SWIGLU = 1, VKELT_SWIGLU_CAT = 2, VKELT_SIGMOID_MUL = 3, VKELT_MOE_SUM = 4, VKELT_MUL = 5,
    VKELT_COPY_COLS = 6,
} vkelt_mode;
/* See eltwise.comp: n = elements of dst, rows of cols; b_cols for
 * SIGMOID_MUL (and a's row length for COPY_COLS); route and k for MOE_SUM;
 * k, aux, aux2 = width, stride, offset for COPY_COLS. */
typedef struct vkop_elt {
    vkelt_mode mode;
    VkDeviceAddress a, b, dst, route;
    uint32_t n, cols, b_cols, k, aux, aux2;
} vkop_elt;
zn_status vkop_eltwise(vkops *o, vkcmd *c, const vkop_elt *e, const char *name, zn_err *err);

/* ZN_OP_MOE_ROUTE: dst [n_tok][2k]. */
zn_status vkop_moe_route(vkops *o, vkcmd *c, VkDeviceAddress logits, VkDeviceAddress dst, uint32_t n_tok,
                         uint32_t n_expert, uint32_t k, bool norm, float wscale, const char *name, zn_err *err);

/* dst[r] (int32) = argmax of row r of x [n_rows][n]. */
zn_status vkop_argmax(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress dst, uint32_t n_rows, uint32_t n,
                      zn_err *err);

/* Causal depthwise conv1d + SiLU with state (gdn.h gdn_conv1d_silu); x and y
 * rows have stride ld, w is [n_ch][kernel], state [n_ch][kernel-1]. */
zn_status vkop_conv1d(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                      VkDeviceAddress state, uint32_t n_tok, uint32_t n_ch, uint32_t ld, uint32_t kernel,
                      const char *name, zn_err *err);

/* Gated delta rule over T tokens (gdn.h gdn_args semantics, all heads).
 * With gate_raw, g/beta hold the raw alpha/beta projections and dt_bias/a
 * the per-head gate parameters (gdn_gates is applied in the kernel). */
typedef struct vkop_gdn {
    VkDeviceAddress q, k, v, g, beta, state, dst, dt_bias, a;
    uint32_t n_tok, h_k, h_v, d_k, d_v;
    uint32_t ld_qk, ld_v, ld_o, ld_g;
    bool gate_raw;
    bool l2;                  /* L2-normalise q and k (eps) first */
    float eps;
} vkop_gdn;
zn_status vkop_gdn_run(vkops *o, vkcmd *c, const vkop_gdn *a, const char *name, zn_err *err);

#endif
