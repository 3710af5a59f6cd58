/* The Vulkan backend's tuning: every kernel choice and size that the
 * device's capabilities leave open, as one struct of data.
 *
 * vktune_init() fills it once per device: the row of the device-class table
 * in vk_tune.c that matches the device's properties (CPU-emulated, NVIDIA,
 * AMD RDNA3 / RDNA4, Intel, generic), the counts of that row scaled to the
 * device's SMs / CUs, then the overrides of a "key=value,..." string (zinc's
 * --tune option, the ZN_TUNE variable) parsed by one table of keys that
 * rejects unknown keys and bad values. vktune_describe() prints the result in
 * the same syntax. Capabilities still decide what can run: a switch here
 * turns a kernel off or picks among those the device has (vkops holds the
 * effective flags). */
#ifndef ZINC_VK_TUNE_H
#define ZINC_VK_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "status.h"
#include "vk_device.h"

#define ZN_VK_NTYPES 8        /* weight type slots: F32 F16 BF16 Q4_0 Q8_0 Q4_K Q5_K Q6_K */
#define ZN_VK_AUTO UINT32_MAX /* a tile config: chosen per shape */
#define ZN_VK_OFF UINT32_MAX  /* a threshold: never reached */
#define ZN_VK_MVX_MAX_PF 64

/* The fused integer mat-vec (matvec_q.comp quantising x itself), per weight
 * type slot: workgroup threads, rows per subgroup, steps per loop
 * iteration, workgroups per token (each looping over row blocks; 0: one
 * block each), 32-byte weight sectors per thread prefetched before x is
 * quantised and per row block. */
typedef struct vktune_mvx {
    uint32_t wg[ZN_VK_NTYPES], rows[ZN_VK_NTYPES], unroll[ZN_VK_NTYPES];
    uint32_t wgs[ZN_VK_NTYPES], pf[ZN_VK_NTYPES], pn[ZN_VK_NTYPES];
} vktune_mvx;

typedef struct vktune {
    const char *cls;          /* the table row ("nvidia", "cpu", ...) */
    uint32_t units;           /* SMs / CUs its counts were scaled to (0: unknown, left as measured) */
    /* float mat-vec (matvec.comp) */
    uint32_t mv_wg;           /* workgroup threads (also the integer mat-vec's after quantx) */
    uint32_t mv_rows[ZN_VK_NTYPES];
    uint32_t mv_one_rows;     /* up to this many rows: a row per one-subgroup workgroup */
    /* integer mat-vec of int8-quantised x: quantx.comp, a barrier, matvec_q.comp */
    bool intdot;              /* off: the float kernel for every type */
    uint32_t mvq_rows[ZN_VK_NTYPES], mvq_unroll[ZN_VK_NTYPES];
    uint32_t mvq_pn;          /* sectors per thread prefetched per row block */
    uint32_t qx_sk;           /* quantx: vec4s per thread of a row slice (0: a workgroup per row) */
    uint32_t qx_wg;           /* quantx's workgroup */
    /* ... or quantising x inside the mat-vec's own workgroups */
    bool mvx;
    uint32_t mvx_modes;       /* bit m: x mode m (vkop_mm.xmode) takes it */
    bool moe_tail;            /* a MoE layer's experts' down mat-vec computes the layer's tail (vkop_mm.tail) */
    bool moe_route;           /* a MoE layer's experts' gate / up mat-vec picks the experts itself (vkop_mm.route) */
    bool mv_conv;             /* a decode step's conv runs in the (grouped) mat-vec before it (vkop_group.conv) */
    bool mv_gnorm;            /* the gated norm's group RMS norm runs in the mat-vec reading its SwiGLU (vkop_mm.gn_w) */
    vktune_mvx mvx_t[2];      /* [1]: per-token experts of several tokens, and matrices of mvx_big_mb
                                 MiB and more; [0]: the rest */
    uint32_t mvx_big_mb;      /* MiB of one matrix from which mvx_t[1] applies (ZN_VK_OFF: never) */
    /* several tokens per workgroup (matmuls of 2+ tokens without per-token
     * experts): each weight step loaded once for up to mvt tokens */
    uint32_t mvt;             /* tokens per workgroup at most (1: a token per workgroup, as above) */
    uint32_t mvt_modes;       /* bit m: x mode m quantised in the workgroups where mvt rows fit
                                 shared memory (vkops.mvx on too), else by quantx.comp */
    vktune_mvx mvt_t;         /* its kernel: rows and unroll for both ways of quantising x;
                                 wg, wgs, pf, pn for the in-workgroup one (after quantx: mv_wg, mvq_pn) */
    /* an int8 GEMM of Q4_K weights (mmi8.comp) for dense matmuls of
     * mmi_min_tok .. mmi_max_tok tokens, mmi_bn tokens per workgroup */
    uint32_t mmi_min_tok, mmi_max_tok, mmi_bn;
    /* per-row ops */
    uint32_t small_wg, norm_wg;
    /* prefill GEMM */
    uint32_t mm_min_tok;      /* a matmul of this many tokens takes the tiled kernels (ZN_VK_OFF: never) */
    uint32_t moe_min_tok;     /* ... an expert matmul the grouped GEMM */
    uint32_t mm_min_rows;     /* fewer rows stay on the mat-vec kernel */
    uint32_t mm_cfg;          /* zn_vk_mm_cfgs index, ZN_VK_AUTO: by shape */
    uint32_t mm_min_wgs;      /* by shape: the largest tile that still gives this many workgroups */
    bool mm_cm2, mm_cm2_moe;  /* NV cooperative matrix 2 for the dense / grouped GEMM */
    uint32_t cm2_cfg;         /* zn_vk_cm2_cfgs index, ZN_VK_AUTO: by shape */
    uint32_t cm2_moe_cfg;     /* ... of the grouped GEMM (under cm2_cfg) */
    uint32_t cm2_min_wgs, cm2_long_k;
    uint32_t mm_scratch_mb;   /* f16 weights dequantised at a time (0: the f16 GEMM path off) */
    uint32_t mm_split_wgs;    /* a GEMM dequantising its tiles with fewer workgroups splits k until it has
                                 about this many (ZN_VK_OFF: never) ... */
    uint32_t mm_split_k;      /* ... into ranges of at least this many */
    uint32_t mt_split_k;      /* the tiled f32 kernel (matmul.comp) likewise, in ranges of at least this
                                 many (ZN_VK_OFF: never) */
    uint32_t mm_prep_tok;     /* from this many tokens the f16 GEMMs multiply a dequantised copy of
                                 the weights (mm_prep.comp); below, they dequantise each tile as they
                                 load it (ZN_VK_OFF: always the latter) */
    uint32_t moe_prep_tok;    /* the same for the grouped MoE GEMM, counted in tokens per expert (the
                                 pairs spread evenly over the experts) */
    /* attention */
    bool attn_dec;            /* decode on attn_dec.comp (a workgroup per KV head and split) */
    uint32_t attn_chunk;      /* split-K: keys per split at most */
    uint32_t attn_dec_min;    /* contexts of at most this many keys stay on attn.comp, unsplit */
    uint32_t attn_wgs;        /* split decode attention (attn_dec): KV heads x splits at most (off: no cap) */
    bool attn_rope;           /* decode attention takes in the ropes of q and K and the KV store (attn_rope.glsl) */
    uint32_t merge_wg;
    bool fa_cm;               /* prefill attention on matrix products (attn_fa_cm.glsl) */
    uint32_t fa_cfg;          /* zn_vk_fa_cfgs index, ZN_VK_AUTO: the first that fits */
    bool fa_kv2;              /* K and V tiles in buffers of their own where shared memory allows */
    uint32_t fa_min_tok;      /* prefill attention kernels from this many query rows */
    uint32_t fa_sg_kv;        /* from this many keys prefill attention prefers a subgroup per 16 rows
                                 (attn_fa_sg.glsl) to shared S tiles (off: never) */
    /* the gated delta rule (gdn.comp) */
    uint32_t gdn_lanes;       /* lanes per cluster of state rows (auto: 8, half the subgroup below 16) */
    uint32_t gdn_rows;        /* state rows per cluster, sharing q and k (1, 2 or 4; 1 where the value
                                 head dim is not a multiple) */
    uint32_t gdn_tc;          /* prompts: tokens staged in shared memory at a time per workgroup (0: each
                                 cluster loads its own inputs, one token ahead) */
    bool gdn_vec;             /* a lane's state elements in vec4 blocks (other last bits than the default
                                 single floats, which keep the results of staged and unstaged steps equal) */
    /* execution */
    bool poll;                /* poll for the end of a step instead of blocking on the fence */
} vktune;

/* The slot of a weight type in the per-type arrays (ZN_VK_NTYPES), -1: none. */
int vktune_slot(zn_type t);
/* The class row and scaled defaults for the device, then the overrides of
 * spec ("key=value,..."; NULL or "" for none; "key.TYPE=value" sets one
 * weight type of a per-type key). ZN_ERR_ARG names the key or value. */
zn_status vktune_init(vktune *t, const vkdev_info *d, const char *spec, zn_err *err);
/* Applies more overrides to an initialised tuning (same syntax). */
zn_status vktune_apply(vktune *t, const vkdev_info *d, const char *spec, zn_err *err);
/* "key=value,..." of every key, parseable by vktune_apply. */
void vktune_describe(const vktune *t, char *buf, size_t cap);
/* Sets every slot of a per-type array. */
void vktune_set_all(uint32_t a[ZN_VK_NTYPES], uint32_t v);

#endif
