/* GPU ops: the op families' shared state and their pipelines. Each family
 * records dispatches into a vkcmd, one function per shader family:
 * vk_mm.h (mat-vec, GEMM), vk_attn.h (KV store, attention), vk_gdn.h (the
 * recurrent conv and delta rule), vk_small.h (embedding, norms, rope,
 * elementwise, routing). All tensors are passed as device addresses (f32
 * activations, row-major, strides in elements). Pipelines are kept once
 * created, one per kind (vkop_kind) and variant; the table in vk_ops.c says
 * for each kind its shader, what selects its variants and its
 * specialisation constants. An op called with a NULL vkcmd records nothing
 * and only creates the pipelines it would use: the backend does that at
 * init for every shape its model's steps can take, then vkops_forget(); a
 * pipeline still missing is created on first use. Ops do not insert
 * barriers between each other: the caller orders dependent ops with
 * vkcmd_barrier. */
#ifndef ZINC_VK_OPS_H
#define ZINC_VK_OPS_H

#include "quant.h"
#include "vk_cmd.h"
#include "vk_tune.h"

typedef enum vkop_kind {
    VKO_MATVEC, VKO_MATMUL, VKO_MATMUL_CM, VKO_EMBED,        /* per weight type */
    VKO_MATVEC_1,                                            /* matvec.comp, a row per single-subgroup workgroup */
    VKO_MM_PREP,                                             /* per weight type */
    VKO_MMF, VKO_MMF_EMU,                                    /* per tile config (zn_vk_mm_cfgs, vk_mm.h) */
    VKO_MMF_CM2, VKO_MMF_CM2_MOE,                            /* per tile config (zn_vk_cm2_cfgs): dense, grouped */
    VKO_MOE_BUCKET,
    VKO_NORM, VKO_ROPE, VKO_KV_STORE, VKO_ATTN, VKO_ATTN_MERGE, /* untyped (slot 0) */
    VKO_ATTN_FA,                                             /* variant by head dim */
    VKO_ELTWISE, VKO_MOE_ROUTE, VKO_ARGMAX, VKO_CONV1D,
    VKO_GDN, VKO_GDN_R2, VKO_GDN_R4,                         /* variant by head dim; 1, 2, 4 state rows per
                                                                lane cluster */
    VKO_MATVEC_Q, VKO_QUANTX,                                /* integer mat-vec (typed), its x (untyped) */
    VKO_MATVEC_QX_S, VKO_MATVEC_QX_M, VKO_MATVEC_QX_L,        /* integer mat-vec quantising x itself (typed),
                                                                by the x row it holds (vkops.mvx) */
    VKO_MATVEC_QXB_S, VKO_MATVEC_QXB_M, VKO_MATVEC_QXB_L,     /* the same for big matrices (own tuning) */
    VKO_MATVEC_QT,                                           /* integer mat-vec of t.mvt tokens per workgroup
                                                                after quantx (typed) */
    VKO_MATVEC_QTX_S, VKO_MATVEC_QTX_L,                      /* ... quantising their x itself, by the x rows
                                                                it holds */
    VKO_ATTN_FA_CM, VKO_ATTN_FA_EMU,                         /* per tile config (zn_vk_fa_cfgs, vk_attn.h) */
    VKO_ATTN_FA_SG, VKO_ATTN_FA_SGE,                         /* the same, the configs with sg set */
    VKO_ATTN_DEC64, VKO_ATTN_DEC128, VKO_ATTN_DEC256,        /* per query rows (log2) */
    VKO_MMQ, VKO_MMQ_EMU, VKO_MMQ_CM2, VKO_MMQ_CM2_MOE,      /* the f16 GEMMs reading the weights directly
                                                                (per tile config and weight type) */
    VKO_MMQ_SPLIT, VKO_MMQ_EMU_SPLIT, VKO_MMQ_CM2_SPLIT,     /* the same, split-K (own pipelines: the others'
                                                                k bounds stay compile-time aligned) */
    VKO_MATMUL_SPLIT,                                        /* matmul.comp split-K (per weight type) */
    VKO_MMI8,                                                /* Q4_K GEMM on int8 dot products (t.mmi_*) */
    VKO_MM_REDUCE,                                           /* split-K GEMMs' sums and epilogue */
    VKO_KV_ROT,                                              /* the rotated KV cache's head rotation */
    VKO_MATVEC_QXK,                                          /* the integer mat-vec quantising x itself, a MoE
                                                                tail's experts' down (per slots and type) */
    VKO_COUNT
} vkop_kind;

/* Pipeline variants of one kind: a weight type slot, a tile config, or
 * both (config * ZN_VK_NTYPES + type slot). */
#define ZN_VK_NVAR (ZN_VK_NTYPES * 8)

typedef struct vkops {
    vkdev *d;
    vkpipes ps;
    vkpipe pipes[VKO_COUNT][ZN_VK_NVAR];
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
    /* Prefill attention (16+ rows, head dims 64/128/256) on attn_fa_cm.glsl
     * or attn_fa_sg.glsl (by tile config, vkops_fa_kind):
     * on cooperative matrices where the device has them, else on their
     * emulation when mm_emulate (tests), else on attn_fa.comp. */
    bool fa_cm;
    uint32_t fa_refused;      /* tile configs (bit ci) whose pipeline the driver refused: the
                                 others are taken in their place, attn_fa.comp when none is left */
    char fa_err[192];         /* the last refusal's message, or "" */
    uint64_t refuse_kinds;    /* tests: pipelines of these kinds (bit k) fail to build, as a
                                 driver's refusal would */
    /* The KV cache's format, fixed at init: zn_kv_type's value (0 f16,
     * 1 Q8_0 blocks, 2 Q4_0 blocks: kvq.glsl), a specialisation constant of
     * kv_store.comp, attn.comp and attn_fa.comp (KVQ). Those are the only
     * kernels that store and read a quantised cache -- the fused rope + KV
     * store, attn_dec.comp and attn_fa_*.glsl are not taken with one. */
    uint32_t kvq;
    bool attn_dec;            /* decode attention per KV head (attn_dec.comp) where it applies:
                                 t.attn_dec on a device with subgroups of 8 or more */
    uint32_t n_head_kv;       /* the model's KV heads: its split count's cap (t.attn_wgs); 0 none */
    bool intdot;              /* quantised weights: mat-vec on integer dot products of
                                 int8-quantised x (needs xq); tests clear it to check the
                                 float kernel */
    bool mvx;                 /* the integer mat-vec quantises x itself, per workgroup into
                                 shared memory (no quantx dispatch and barrier), for rows of
                                 at most mvx_max_cols (with t.mvt tokens per workgroup: as
                                 many rows as fit, vkmm_mvx_cap) */
    uint32_t mvx_max_cols;    /* what shared memory holds (tests lower it to see the fallback) */
    bool mvxk;                /* the MoE tail in the experts' down (VKO_MATVEC_QXK) where t.moe_tail: off
                                 once the driver rejected such a pipeline */
    bool mmi;                 /* the int8 GEMM (mmi8.comp) may run where t.mmi_* say: off once the
                                 driver rejected its pipeline */
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
    /* vkops_collect: pipelines asked for are listed here, not created */
    bool collecting;
    vkpipe_job *pending;
    int n_pending, cap_pending;
} vkops;

/* t: the tuning (NULL: vktune_init's defaults for the device). */
zn_status vkops_init(vkops *o, vkdev *d, const vktune *t, const char *cache_path, zn_err *err);
void vkops_free(vkops *o);
/* Forgets what earlier calls left for later ones to reuse (the quantised
 * and converted x, vkop_mm.x_reuse): after calls without a command buffer. */
void vkops_forget(vkops *o);
/* From vkops_collect on, a pipeline not built yet is listed instead of
 * built (the op gets it empty: for calls without a command buffer only);
 * vkops_build builds the list on `threads` threads at once and ends that.
 * What failed to build is built again, and refused, when next asked for. */
void vkops_collect(vkops *o);
void vkops_build(vkops *o, int threads);
/* Types the mat-vec / mat-mat / get_rows shaders read. */
bool vkops_type_ok(zn_type t);

/* The step block: the position of a sequence in a step, read by the
 * position-dependent shaders (rope, kv_store, attn) at run time from
 * device-visible memory instead of from push constants, so that a recorded
 * command buffer stays valid for later positions and can be submitted
 * again (backend_vulkan.c replays its decode steps this way). One per
 * sequence of a step; the host writes them before each submit. Ops take
 * its address as `step`; 0 = use their n_past argument. The shaders read
 * n_past as the first uint at that address. */
typedef struct vkop_step {
    uint32_t n_past;          /* tokens already in the sequence */
    uint32_t pad[3];
} vkop_step;

/* One layer of a sequence's paged KV cache (engine/backend.h
 * zn_kv_layout, shaders/kvtab.glsl): the address of the sequence's block
 * table (a device address per block of ZN_KV_BLOCK positions, host-written,
 * read by the kernels at run time), the byte offsets of the layer's K and V
 * rows within a position's row, and that row's bytes (every attention
 * layer's). The table's address stays for the sequence's life, its entries
 * change as blocks are taken and given back: a recording keeps the
 * address only. */
typedef struct vkop_kv {
    VkDeviceAddress tab;
    uint32_t koff, voff, pos_bytes;
} vkop_kv;

/* The sequence table of a batched decode step (every sequence of the step
 * decodes one token): the ops with per-sequence state (rope with its
 * fusions, kv_store, attn, conv1d, gdn) then run once over all the step's sequences
 * rather than once per sequence, each sequence's workgroups reading its
 * entry (shaders/seqs.glsl) where a one-sequence dispatch has push
 * constants. One table per layer (the recurrent states differ by layer;
 * the KV offsets stay in the push constants); ops take the layer's table
 * as `seqs`, 0 = one sequence, as before. The host writes
 * it when it records the step, and the positions (n_past) again before
 * every submit: a replayed recording reads the same table at later
 * positions. */
typedef struct vkop_seq_ent {
    VkDeviceAddress a;        /* attention layers: the sequence's KV block table (vkop_kv.tab);
                                 recurrent ones: its conv state */
    VkDeviceAddress b;        /* recurrent layers: its delta state (attention: 0) */
    uint32_t row;             /* its row in the step's activations */
    uint32_t n_past;          /* its position */
    uint32_t pad[2];
} vkop_seq_ent;

#endif
