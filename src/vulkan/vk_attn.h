/* The attention ops: the KV store and causal attention (decode, split-K,
 * prefill on matrix products or the scalar kernel). vk_attn.c. */
#ifndef ZINC_VK_ATTN_H
#define ZINC_VK_ATTN_H

#include "backend.h"
#include "vk_ops.h"

/* Tile configurations of prefill attention on matrix products: head dim,
 * (token, head) rows per workgroup (16, 32 or 64), keys per tile, and the
 * kernel: sg 0 attn_fa_cm.glsl (4 subgroups share each S tile), 1
 * attn_fa_sg.glsl (a subgroup per 16 rows). Per head dim the first one the
 * device runs is the default. */
typedef struct vkfa_cfg { uint32_t hd, br, bc, sg; } vkfa_cfg;
#define ZN_VK_FA_NCFG 12 /* at most ZN_VK_NVAR: one pipeline slot each */
extern const vkfa_cfg zn_vk_fa_cfgs[ZN_VK_FA_NCFG];

/* K/V rows (f32) into the layer kv of the paged cache (f16 rows of kdim /
 * vdim, or o->kvq's blocks) at positions n_past + r (n_past from the step
 * block when step is not 0). With seqs (vk_ops.h vkop_seq_ent), row r is
 * the token of the table's sequence r, at its row of k / v, its position
 * and block table (kv->tab, n_past unused; the offsets are kv's). */
zn_status vkop_kv_store(vkops *o, vkcmd *c, VkDeviceAddress k, VkDeviceAddress v, const vkop_kv *kv,
                        uint32_t n_tok, uint32_t kdim, uint32_t vdim, uint32_t n_past, VkDeviceAddress step,
                        VkDeviceAddress seqs, const char *name, zn_err *err);

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
/* kv: the layer of the paged cache (vk_ops.h vkop_kv). With seqs (vk_ops.h
 * vkop_seq_ent): a batched decode step, one token of
 * each of the table's n_seq sequences, q and dst the step's rows, the
 * block tables and positions the table's; kv.tab, step unused, n_tok 1, n_past
 * the largest position (it picks the kernel, as for one sequence: attn.comp
 * up to t.attn_dec_min keys, else attn_dec.comp where that applies), every
 * sequence unsplit (vkop_attn_batch_ok). */
typedef struct vkop_attn {
    VkDeviceAddress q, dst, part, step, seqs;
    vkop_kv kv;
    uint32_t n_tok, n_past, n_head, n_head_kv, hd_k, hd_v, n_seq;
    float scale;
    /* rp set: the ropes before it taken in (attn_rope.glsl), for one token
     * per sequence and an f16 cache: q holds the query rows before their
     * norm, kraw / vraw the token's K and V rows, rp the address of the
     * layer's vkop_rope_p; the kernel stores K and V into the cache. q_hs,
     * q_rs: q's head and row strides in floats (0: packed heads). */
    VkDeviceAddress rp, kraw, vraw;
    uint32_t q_hs, q_rs;
} vkop_attn;
/* attn_rope.glsl's RopeP: the per-head norms' weights (0: none) and eps,
 * and the rope's parameters as rope.comp takes them (vkop_rope_params). */
typedef struct vkop_rope_p {
    uint64_t nwq, nwk, ff;
    float theta_scale, freq_scale, eps_q, eps_k;
    uint32_t n_rot, mode, secs, pad;
} vkop_rope_p;
/* Shared memory bytes of tile config ci on this device, and whether the
 * device runs it; the config prefill attention of head dim hd over n_kv
 * keys takes (ZN_VK_MM_AUTO: the scalar kernel): t.fa_cfg where it
 * applies, else the first that runs of the kernel t.fa_sg_kv prefers. */
uint32_t vkops_fa_cfg_bytes(const vkops *o, uint32_t ci);
bool vkops_fa_cfg_ok(const vkops *o, uint32_t ci);
uint32_t vkops_fa_cfg_for(const vkops *o, uint32_t hd, uint32_t n_kv);
/* The pipeline kind of config ci: its kernel on cooperative matrices, or
 * on their emulation where the device has none. */
vkop_kind vkops_fa_kind(const vkops *o, uint32_t ci);
uint32_t vkop_attn_splits(const vkops *o, uint32_t n_tok, uint32_t n_kv);
/* What a recorded attention dispatch of n_tok tokens over n_kv keys fixes
 * of the position (with the step block or the sequence table set, the
 * shaders read the rest at run time): its split count and whether
 * attn_dec.comp runs (the graph fixes the other conditions). A recording
 * holds for every later position of the same shape. Batched (seqs): every
 * sequence unsplit, n_kv the longest one's (it picks the kernel). */
uint32_t vkop_attn_shape(const vkops *o, uint32_t n_tok, uint32_t n_kv, bool batched);
/* Whether n_seq sequences decoding one token each, the longest over n_kv
 * keys, run as one batched dispatch (seqs): where none of them alone would
 * split, or where the batch has as many sequences as one of them would have
 * splits (its grid then at least as wide as theirs, one after the other). */
bool vkop_attn_batch_ok(const vkops *o, uint32_t n_seq, uint32_t n_kv);
uint64_t vkop_attn_part_floats(const vkops *o, uint32_t n_tok, uint32_t n_ctx, uint32_t n_head, uint32_t hd_v);
zn_status vkop_attn_run(vkops *o, vkcmd *c, const vkop_attn *a, const char *name, zn_err *err);
/* The shaders' KVQ (kvq.glsl, vkops.kvq) of a KV format: 0 f16, 1 Q8_0,
 * 2 Q4_0 (also q4_0r: the rotation is kv_rot.comp's), 3 q3_0r's blocks. */
uint32_t vkops_kvq(zn_kv_type t);
/* kv_rot.comp: each of `heads` heads of hd values (a power of two) of rows
 * rows of f32 x (stride floats apart), in place, rotated as
 * backend_kv_rotate does (inverse: back). */
zn_status vkop_kv_rot(vkops *o, vkcmd *c, VkDeviceAddress x, uint32_t rows, uint32_t heads, uint32_t hd,
                      uint32_t stride, bool inverse, const char *name, zn_err *err);

#endif
