/* The Vulkan backend's context, shared by its three parts:
 * backend_vulkan.c (init, sequences, runs: the zn_backend_ops table),
 * vk_weights.c (the weights' upload) and vk_record.c (a step's graph into a
 * command buffer: the plan, the nodes' dispatches, barriers, pipelines at
 * init). Not for other modules: they go through backend.h. */
#ifndef ZINC_VK_BACKEND_H
#define ZINC_VK_BACKEND_H

#include "backend.h"
#include "kv_blocks.h"
#include "vk_attn.h"
#include "vk_fuse.h"
#include "vk_gdn.h"
#include "vk_mm.h"
#include "vk_replay.h"
#include "vk_small.h"

#define VK_MAX_CHUNKS 16
/* ranges tracked per barrier interval: a per-sequence op of a step of
 * ZN_MAX_STEP_SEQS sequences declares a few per sequence */
#define VK_HAZARDS 192

typedef struct vk_weight {
    uint32_t n_chunks;            /* 0 = not on the device */
    uint32_t chunk_rows;          /* rows per chunk (the last may hold fewer) */
    uint32_t row_bytes;
    VkDeviceAddress addr[VK_MAX_CHUNKS];
} vk_weight;

typedef struct range { uint64_t lo, hi; } range;

/* Decode steps kept for replay: [0] one sequence's, [1] a step of several
 * sequences' (vk_replay.h). Each recording reads host-written blocks
 * (step blocks, sequence tables, group blocks) of a region of its own, so
 * that recording another step never overwrites what a kept one reads:
 * region 0 for the steps recorded anew (c->c), 1 + i for rp[i]. */
#define VK_REPLAYS 2
#define VK_REGIONS (1 + VK_REPLAYS)

typedef struct vk_ctx {
    const zn_model *m;
    vkdev d;
    vkops o;
    vkcmd c;                      /* per-step recordings (prefill, profiling, replay off) */
    vkreplay rp[VK_REPLAYS];      /* the decode steps kept for replay; rp[i].cmd.d == NULL: replay off */
    vkcmd *rec;                   /* the command buffer being recorded */
    vkxfer x;
    vkarena wmem;                 /* weights */
    vkarena smem;                 /* activations, scratch */
    vkbuf io;                     /* host-visible: token ids in */
    vkbuf step;                   /* host-written vkop_step blocks, one per sequence of a step: ZN_MAX_STEP_SEQS
                                     per region (the positions, rewritten before every submit) */
    vkbuf seqtab;                 /* host-written sequence tables of a batched decode step (vkop_seq_ent):
                                     ZN_MAX_STEP_SEQS entries per layer, n_layer tables per region */
    vkbuf ropep;                  /* host-written vkop_rope_p per layer: the ropes attention takes in
                                     (written as steps are recorded; a layer's never changes) */
    vkbuf out;                    /* host-visible: the logits of a run, copied at its end */
    uint64_t out_off, out_floats; /* which activation out holds now (0 floats: none) */
    bool batch;                   /* the last step run is a batched decode step (vk_record.c) */
    bool decode;                  /* the last step run is a decode step (every sequence one token) */
    vkbuf groups;                 /* host-written vkop_group blocks: cap_groups per region */
    uint32_t n_groups, cap_groups;
    uint32_t region;              /* the region of the recording being made */
    uint64_t key_ids[ZN_MAX_STEP_SEQS];   /* the current step's key (vk_replay.h): its sequences' ids */
    uint32_t key_shape[ZN_MAX_STEP_SEQS]; /* and attention shapes */
    uint64_t next_seq;            /* vk_seq ids */
    uint64_t seq_bytes;           /* the live sequences' arenas (zinc bench -npl, serve) */
    int n_seqs;
    int pipes_at_init;            /* pipelines created when init returned */
    int build_threads;            /* CPU threads that build them at init (zn_backend_opts.n_threads) */
    zn_backend_stats stats;
    vk_weight *w;                 /* [gguf n_tensors], by model_weight_id */
    vkref act;                    /* the activation arena */
    vkref part;                   /* split-K attention partials */
    vkref mm_scratch;             /* f16 GEMM operands (vkops.mm_scratch) */
    uint64_t mm_need;
    bool profile_kernels;         /* --profile splits each op's time by shader */
    uint64_t xq_bytes;            /* the integer mat-vec's x scratch (vkops_set_xq) */
    bool x_reuse;                 /* recording: the node's x is the previous matmul's, unchanged */
    uint64_t part_floats;
    int max_tokens;
    /* the fusion plan of the graph being recorded (vk_fuse.h), sized for the model's graphs */
    int cap_nodes, cap_acts;
    bool no_fusion;               /* every node on its own (tests) */
    zn_kv_type kv_type;           /* the caches' format (f16, Q8_0, Q4_0: c->o.kvq; rotated: vk_record.c
                                     rotates K, V and q before, the output after, by kv_rot.comp) */
    zn_kv_layout kvl;             /* the paged cache's rows and blocks (backend.h) */
    uint32_t *kv_off;             /* [n_layer]: an attention layer's K row in a position's row (V: + kvl.k_bytes) */
    /* The shared KV pool (kv_pool_tokens > 0; else every sequence holds
     * the blocks of its whole context): which blocks are free and how many
     * sequences hold each (seq_copy shares whole blocks) counted by
     * kv_blocks.h (blocks.n_blocks: 0 without a pool). */
    vkarena pool;
    vkref *pool_blk;              /* [blocks.n_blocks]: the blocks by index */
    kvb blocks;
    vkfuse plan;
    /* hazard tracking since the last barrier */
    range rd[VK_HAZARDS], wr[VK_HAZARDS];
    int n_rd, n_wr;
} vk_ctx;

typedef struct vk_seq {
    uint64_t id;                  /* unique in its context: keys the replay */
    vkarena mem;
    int n_ctx;
    /* The paged KV cache (vk_ops.h vkop_kv): the block table on the device
     * (n_tab addresses; its address never changes, recordings keep it), and
     * the blocks it names, [0, n_blk) held (without a pool: all of them,
     * blk, from mem; with one: taken from the pool as the sequence grows,
     * bix their pool indices, shared ones written only after a copy). */
    vkref tab;
    vkref *blk;                   /* [n_tab] (no pool) */
    int32_t *bix;                 /* [n_tab] (a pool's sequence) */
    int n_tab, n_blk;
    vkref *conv, *delta;          /* [n_layer]: recurrent state (zero for a new sequence) */
    uint64_t held;                /* its arena's bytes, counted in vk_ctx.seq_bytes once made */
} vk_seq;

/* Layer L's part of sequence s's paged cache, as the ops take it. */
static inline vkop_kv vkseq_kv(const vk_ctx *c, const vk_seq *s, int L) {
    return (vkop_kv){.tab = s->tab.addr, .koff = c->kv_off[L], .voff = c->kv_off[L] + (uint32_t)c->kvl.k_bytes,
                     .pos_bytes = (uint32_t)c->kvl.pos_bytes};
}

/* ---- vk_weights.c ---- */

/* Rows of a weight (all but its row length). */
uint64_t vkweights_rows(const gguf_tensor *t);
/* Uploads the weights graph gin reads (NULL: the model's one-token step),
 * sizes the plan (c->plan) and the scratch the matmuls need (c->xq_bytes,
 * c->mm_need) for c->max_tokens. */
zn_status vkweights_upload(vk_ctx *c, const zn_graph *gin, zn_err *err);

/* ---- vk_record.c ---- */

/* Plans g and records it for its sequences (states[i]: the state of
 * g->seqs[i]) into cmd: every node (the ops with per-sequence state or
 * positions once per sequence, or once for all in a batched decode step),
 * then a copy of the logits into host-visible memory (so reading them
 * needs no second submit); its host-written blocks in region `region`.
 * Sets c->batch. Ends the recording, also after a failure. */
zn_status vkrecord_step(vk_ctx *c, vk_seq *const *states, const zn_graph *g, vkcmd *cmd, uint32_t region,
                        zn_err *err);
/* What a recording of step g fixes of its sequences' positions, per
 * sequence into shape[g->n_seq] (vk_attn.h vkop_attn_shape): equal shapes,
 * equal recordings. Returns whether the step runs batched. */
bool vkrecord_step_shape(const vk_ctx *c, const zn_graph *g, uint32_t *shape);
/* Writes the positions of step g into the blocks of region `region` that a
 * recording of it reads (the step blocks; batch: the sequence tables too),
 * before each submit of it. */
void vkrecord_positions(vk_ctx *c, const zn_graph *g, uint32_t region, bool batch);
/* Creates every pipeline the model's steps can select (c->max_tokens,
 * every context length), recording nothing. */
zn_status vkrecord_prepare_pipelines(vk_ctx *c, zn_err *err);
/* --profile: GPU time per op tag of the last run, from timestamp queries. */
void vkrecord_print_profile(vk_ctx *c, const zn_graph *g);

#endif
