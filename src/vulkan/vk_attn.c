/* The attention ops (vk_attn.h): the KV store (kv_store.comp), decode
 * attention (attn.comp over every key, or split-K: attn.comp / attn_dec.comp
 * per split, attn_merge.comp), prefill attention (attn_fa_cm.glsl or
 * attn_fa_sg.glsl on matrix products or their emulation, attn_fa.comp). */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "vk_ops_impl.h"

#define ATTN_MERGE_DIMS 32 /* attn_merge.comp's DS: output dims per workgroup */
#define ATTN_WG 128
_Static_assert(1 << (VK_ATTN_DEC_SLOTS - 1) == ZN_VK_ATTN_DEC_MAX_ROWS &&
                   ZN_VK_ATTN_DEC_MAX_ROWS * 8 <= ATTN_WG, "attn_dec.comp: 8 softmax lanes per row");
#define ATTN_FA_ROWS 32    /* query rows per workgroup of attn_fa.comp (its BR) */

/* Per head dim, the default first. Prefill's whole grid is resident at
 * once on a large GPU (132 SMs where they were measured), so a layer takes about as long as
 * its longest workgroup: rows per workgroup small enough for several
 * workgroups per SM (8B: 1,024 of 16 rows; the hd 256 shapes have 2 KV
 * heads: 256 / 512 of 16 rows), K/V tiles shared by as many rows as that
 * allows. 16 rows for hd 128: H100, 2026-12-06 (bench/results/
 * 2026-12-06-s30.md), 8B pp512 at depth 3584 5,551 / 5,539 -> 5,841 /
 * 5,773 tok/s against 32 rows, pp4096 6,762 / 6,764 -> 7,009 / 7,007,
 * pp512 at depth 0 8,685 / 8,732 -> 8,741 (64 rows: 8,645). The defaults
 * fit 32 KiB of shared memory (lavapipe), so the op tests there run them;
 * the rest (up to 48 KiB) are for sweeps (tools/vk-bench/attn.c).
 * attn_fa_sg.glsl's (sg 1) come after: from t.fa_sg_kv keys on the first of
 * them that runs is the default. A quarter of the workgroups of 16-row
 * tiles, fewer barriers: H100, 2026-12-06 (bench/results/2026-12-06-s31.md),
 * 8B 64 x 32 on every chunk, pp4096 8,259 against 6,910 tok/s. */
const vkfa_cfg zn_vk_fa_cfgs[ZN_VK_FA_NCFG] = {
    {64, 64, 32, 0},  {128, 16, 32, 0}, {128, 64, 32, 0}, {128, 32, 32, 0},
    {128, 32, 64, 0}, {256, 16, 32, 0}, {256, 32, 32, 0}, {256, 16, 64, 0},
    {128, 64, 32, 1}, {128, 32, 32, 1}, {64, 64, 32, 1},  {128, 32, 64, 1},
};
#define FA_WG 128 /* attn_fa_cm.glsl: 4 subgroups of 32 */

/* Parts an S tile's head dims are split into so that all 4 subgroups of
 * attn_fa_cm.glsl have one: 4 / tiles where there are fewer tiles. */
static uint32_t fa_kparts(const vkfa_cfg *f) {
    const uint32_t tiles = f->br / 16 * (f->bc / 16);
    return tiles < 4 ? 4 / tiles : 1;
}

/* attn_fa_cm.glsl's ss array (floats): the S parts, or the 4 staging tiles */
static uint32_t fa_ss_floats(const vkfa_cfg *f) {
    const uint32_t s = fa_kparts(f) * f->br * (f->bc + 4);
    return s > 4 * 256 ? s : 4 * 256;
}

/* attn_fa_cm.glsl: Q and one K/V tile (rows padded by 8 halves), S, P
 * (padded), alpha; attn_fa_sg.glsl: K and V tiles (Q passes through them),
 * each subgroup's S and P, alpha */
static uint32_t fa_base_bytes(const vkfa_cfg *f) {
    if (f->sg) return 2 * f->bc * (f->hd + 8) * 2 + f->br * (f->bc + 4) * 4 + f->br * (f->bc + 8) * 2 + f->br * 4;
    return (f->br + f->bc) * (f->hd + 8) * 2 + fa_ss_floats(f) * 4 + f->br * (f->bc + 8) * 2 + f->br * 4;
}

/* A second K/V tile (K and V in buffers of their own) where it fits and
 * the tuning's fa_kv2 is on */
static bool fa_kv2(const vkops *o, const vkfa_cfg *f) {
    return !f->sg && o->t.fa_kv2 && fa_base_bytes(f) + f->bc * (f->hd + 8) * 2 <= o->d->info.max_shared;
}

uint32_t vkops_fa_cfg_bytes(const vkops *o, uint32_t ci) {
    const vkfa_cfg *f = &zn_vk_fa_cfgs[ci];
    return fa_base_bytes(f) + (fa_kv2(o, f) ? f->bc * (f->hd + 8) * 2 : 0);
}

bool vkops_fa_cfg_ok(const vkops *o, uint32_t ci) {
    if (ci >= ZN_VK_FA_NCFG || o->fa_refused >> ci & 1) return false;
    const vkfa_cfg *f = &zn_vk_fa_cfgs[ci];
    if (fa_base_bytes(f) > o->d->info.max_shared) return false;
    /* attn_fa_sg.glsl: Q passes through the K and V tiles; each subgroup
     * holds its Q and O in registers (head dims up to 128) */
    if (f->sg) return f->br <= 2 * f->bc && f->br % 16 == 0 && f->br <= 64 && f->bc % 32 == 0 && f->hd <= 128;
    /* a row's softmax threads reduce through shuffles: within one subgroup */
    return FA_WG / f->br <= o->d->info.subgroup_size;
}

vkop_kind vkops_fa_kind(const vkops *o, uint32_t ci) {
    const bool sg = ci < ZN_VK_FA_NCFG && zn_vk_fa_cfgs[ci].sg;
    return o->coopmat ? (sg ? VKO_ATTN_FA_SG : VKO_ATTN_FA_CM) : (sg ? VKO_ATTN_FA_SGE : VKO_ATTN_FA_EMU);
}

uint32_t vkops_fa_cfg_for(const vkops *o, uint32_t hd, uint32_t n_kv) {
    if (o->t.fa_cfg < ZN_VK_FA_NCFG && zn_vk_fa_cfgs[o->t.fa_cfg].hd == hd && vkops_fa_cfg_ok(o, o->t.fa_cfg))
        return o->t.fa_cfg;
    const uint32_t sg = o->t.fa_sg_kv != ZN_VK_OFF && n_kv >= o->t.fa_sg_kv;
    for (int pass = 0; pass < 2; pass++) /* the preferred kernel, else any */
        for (uint32_t i = 0; i < ZN_VK_FA_NCFG; i++)
            if (zn_vk_fa_cfgs[i].hd == hd && (pass || zn_vk_fa_cfgs[i].sg == sg) && vkops_fa_cfg_ok(o, i)) return i;
    return ZN_VK_MM_AUTO;
}

zn_status vkop_kv_store(vkops *o, vkcmd *c, VkDeviceAddress k, VkDeviceAddress v, const vkop_kv *kv,
                        uint32_t n_tok, uint32_t kdim, uint32_t vdim, uint32_t n_past, VkDeviceAddress step,
                        VkDeviceAddress seqs, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_KV_STORE, (vkvar){0}, &p, err);
    if (st) return st;
    struct {
        uint64_t k, v, tab, step;
        uint32_t n_tok, kdim, vdim, n_past, koff, voff, pos_bytes, pad;
        uint64_t seqs;
    } pc = {k, v, kv->tab, step, n_tok, kdim, vdim, n_past, kv->koff, kv->voff, kv->pos_bytes, 0, seqs};
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, n_tok, name);
    return ZN_OK;
}

uint32_t vkops_kvq(zn_kv_type t) {
    _Static_assert(ZN_KV_COUNT == 5, "a KVQ for every format");
    return t == ZN_KV_Q8_0 ? 1u : t == ZN_KV_Q4_0 || t == ZN_KV_Q4_0R ? 2u : t == ZN_KV_Q3_0R ? 3u : 0u;
}

zn_status vkop_kv_rot(vkops *o, vkcmd *c, VkDeviceAddress x, uint32_t rows, uint32_t heads, uint32_t hd,
                      uint32_t stride, bool inverse, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    if (hd > ZN_KV_ROT_MAX_HD || hd & (hd - 1))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: KV rotation of heads of %u values", hd);
    zn_status st = vkops_pipe(o, VKO_KV_ROT, (vkvar){0}, &p, err);
    if (st) return st;
    struct {
        uint64_t x;
        uint32_t rows, heads, hd, stride;
        float scale;
        uint32_t inverse;
    } pc = {x, rows, heads, hd, stride, backend_kv_rot_scale((int)hd), inverse};
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, rows * heads, name);
    return ZN_OK;
}

/* Split-K only for decode over a long context: prefill rows already fill
 * the GPU. ceil(n_kv / chunk) rounded up to a power of two. attn.comp alone
 * (attn_dec off): single tokens, chunk keys per split, those past the keys
 * empty (cheap: they exit after loading q). With attn_dec: up to
 * ZN_VK_ATTN_SPLIT_TOK tokens (attn_dec.comp has one workgroup per KV head
 * and split: too few without), at most ZN_VK_ATTN_MAX_SPLIT splits (the
 * merge reads them all), the keys spread evenly by the kernels. */
uint32_t vkop_attn_splits(const vkops *o, uint32_t n_tok, uint32_t n_kv) {
    if (n_tok > (o->attn_dec ? ZN_VK_ATTN_SPLIT_TOK : 1u) || n_kv <= o->t.attn_chunk) return 1;
    if (o->attn_dec && n_kv <= o->t.attn_dec_min) return 1; /* attn.comp, unsplit (vkop_attn_run) */
    const uint32_t need = (n_kv + o->t.attn_chunk - 1) / o->t.attn_chunk;
    uint32_t s = 2;
    while (s < need && !(o->attn_dec && s >= ZN_VK_ATTN_MAX_SPLIT)) s *= 2;
    /* attn_dec.comp's workgroups are KV heads x splits: past about two per
     * SM, more splits only shorten each workgroup's run of keys and lengthen
     * the merge */
    if (o->attn_dec && o->n_head_kv && o->t.attn_wgs != ZN_VK_OFF)
        while (s > 2 && s * o->n_head_kv > o->t.attn_wgs) s /= 2;
    return s;
}

_Static_assert(ZN_VK_ATTN_MAX_SPLIT < 1u << 30, "vkop_attn_shape: the split count below its flags");
uint32_t vkop_attn_shape(const vkops *o, uint32_t n_tok, uint32_t n_kv, bool batched) {
    /* vkop_attn_run's choice of attn_dec.comp, less what the graph fixes (attn_dec_pipe) */
    const bool dec = o->attn_dec && n_tok <= ZN_VK_ATTN_SPLIT_TOK && n_kv > o->t.attn_dec_min;
    return (batched ? 1u : vkop_attn_splits(o, n_tok, n_kv)) | (uint32_t)dec << 30 | (uint32_t)batched << 31;
}

bool vkop_attn_batch_ok(const vkops *o, uint32_t n_seq, uint32_t n_kv) {
    const uint32_t s = vkop_attn_splits(o, 1, n_kv);
    return s == 1 || n_seq >= s;
}

/* For every step of a context of n_ctx: the most splits times the most
 * tokens that split. */
uint64_t vkop_attn_part_floats(const vkops *o, uint32_t n_tok, uint32_t n_ctx, uint32_t n_head, uint32_t hd_v) {
    (void)n_tok;
    uint32_t s = vkop_attn_splits(o, 1, n_ctx);
    return s > 1 ? (uint64_t)s * n_head * (hd_v + 2) * (o->attn_dec ? ZN_VK_ATTN_SPLIT_TOK : 1u) : 0;
}

/* The push constants of attn.comp and attn_fa.comp. */
typedef struct attn_push {
    uint64_t q, tab, dst, part, step;
    uint32_t n_tok, n_past, n_head, n_head_kv, hd_k, hd_v, chunk, n_split;
    float scale;
    uint32_t koff, voff, pos_bytes;
    uint64_t seqs;           /* attn.comp, attn_dec.comp */
    uint64_t rp, kraw, vraw; /* attn.comp, attn_dec.comp (attn_rope.glsl) */
    uint32_t q_hs, q_rs;
} attn_push;
_Static_assert(sizeof(attn_push) == 128 && sizeof(attn_push) <= ZN_VK_PUSH_MAX, "attn*.comp's push constants");
_Static_assert(sizeof(vkop_rope_p) == 56, "attn_rope.glsl's RopeP");

/* One split: every key (UINT32_MAX); more: attn_chunk keys each, or (0,
 * with attn_dec) ceil(keys / n_split), derived by the kernel. */
static attn_push attn_pc(const vkops *o, const vkop_attn *a, uint32_t n_split) {
    const uint32_t chunk = n_split == 1 ? UINT32_MAX : o->attn_dec ? 0 : o->t.attn_chunk;
    return (attn_push){a->q, a->kv.tab, a->dst, n_split > 1 ? a->part : 0, a->step, a->n_tok, a->n_past,
                       a->n_head, a->n_head_kv, a->hd_k, a->hd_v, chunk, n_split, a->scale, a->kv.koff, a->kv.voff,
                       a->kv.pos_bytes, a->seqs, a->rp, a->kraw, a->vraw, a->q_hs, a->q_rs};
}

/* attn_dec.comp's pipeline for this call: the kind by head dim, the slot
 * log2 of its query rows rounded up to a power of two; false where it does
 * not apply. */
static bool attn_dec_pipe(const vkops *o, const vkop_attn *a, vkop_kind *kind, uint32_t *slot) {
    const uint32_t rows = a->n_tok * (a->n_head / a->n_head_kv), hd = a->hd_k;
    /* more tokens go unsplit: attn.comp's workgroup per (head, token) then
     * keeps more of the GPU busy than one per KV head; the f16 cache is read
     * 16 bytes at a time, a quantized one (kvq) a byte at a time */
    if (!o->attn_dec || a->n_tok > ZN_VK_ATTN_SPLIT_TOK || rows > ZN_VK_ATTN_DEC_MAX_ROWS || hd != a->hd_v ||
        (hd != 64 && hd != 128 && hd != 256) || (!o->kvq && (a->kv.koff | a->kv.voff | a->kv.pos_bytes) % 16))
        return false;
    *kind = hd == 64 ? VKO_ATTN_DEC64 : hd == 128 ? VKO_ATTN_DEC128 : VKO_ATTN_DEC256;
    for (*slot = 0; 1u << *slot < rows; ++*slot) {}
    return true;
}

zn_status vkop_attn_run(vkops *o, vkcmd *c, const vkop_attn *a, const char *name, zn_err *err) {
    if (a->hd_k > ZN_VK_ATTN_MAX_HEAD_DIM || a->hd_v > ZN_VK_ATTN_MAX_HEAD_DIM)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: attention head dim %u/%u > %d", a->hd_k, a->hd_v,
                       ZN_VK_ATTN_MAX_HEAD_DIM);
    if (a->hd_k % 32 || a->hd_v % 4)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: attention head dims %u/%u (need multiples of 32/4)", a->hd_k, a->hd_v);
    if (!a->n_head_kv || a->n_head % a->n_head_kv) return zn_errf(err, ZN_ERR_ARG, "vulkan: %u heads / %u kv heads", a->n_head, a->n_head_kv);
    if (a->seqs && (a->n_tok != 1 || !a->n_seq))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: batched attention of %u sequences, %u tokens each", a->n_seq,
                       a->n_tok);
    if ((a->q_hs || a->q_rs) && (!a->rp || a->q_hs < a->hd_k || a->q_rs < a->n_head * a->q_hs))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: attention q heads %u floats apart in rows of %u", a->q_hs, a->q_rs);
    if (a->rp && (a->n_tok != 1 || o->kvq || !a->kraw || !a->vraw))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: attention taking in the ropes of %u tokens%s", a->n_tok,
                       o->kvq ? " into a quantized cache" : "");
    const vkpipe *p = NULL, *pm = NULL;
    const bool fa = !a->seqs && !a->rp && a->n_tok >= o->t.fa_min_tok && a->hd_k == a->hd_v && a->hd_k >= 64 && a->hd_k <= 256 &&
                    !(a->hd_k & (a->hd_k - 1));
    /* on matrix products (or their emulation) where a tile config fits and
     * the rows are 16-byte aligned (a quantized cache's are read a byte at
     * a time: only Q's) */
    const bool mm = o->fa_cm && (o->coopmat || o->mm_emulate);
    const uint32_t G = a->n_head / a->n_head_kv;
    /* should the driver refuse a config's pipeline, the next that fits from
     * then on, attn_fa.comp when none is left (the op tests check every
     * config is built) */
    for (uint32_t ci = fa && mm ? vkops_fa_cfg_for(o, a->hd_k, a->n_past + a->n_tok) : ZN_VK_MM_AUTO;
         ci != ZN_VK_MM_AUTO && !(a->q % 16) && (o->kvq || !((a->kv.koff | a->kv.voff | a->kv.pos_bytes) % 16));
         ci = vkops_fa_cfg_for(o, a->hd_k, a->n_past + a->n_tok)) {
        const uint32_t nb = (uint32_t)(((uint64_t)a->n_tok * G + zn_vk_fa_cfgs[ci].br - 1) / zn_vk_fa_cfgs[ci].br);
        if (nb > 65535) break;
        zn_err e2 = {0};
        if (!vkops_pipe(o, vkops_fa_kind(o, ci), (vkvar){.cfg = ci}, &p, &e2)) {
            attn_push pc = attn_pc(o, a, 1);
            vkcmd_dispatch(c, p, &pc, sizeof pc, nb, a->n_head_kv, 1, name);
            return ZN_OK;
        }
        snprintf(o->fa_err, sizeof o->fa_err, "config %u: %s", ci, e2.msg);
        o->fa_refused |= 1u << ci;
    }
    if (fa) {
        zn_status st = vkops_pipe(o, VKO_ATTN_FA, (vkvar){.head_dim = a->hd_k}, &p, err);
        if (st) return st;
        attn_push pc = attn_pc(o, a, 1);
        vkcmd_dispatch(c, p, &pc, sizeof pc, a->n_head, (a->n_tok + ATTN_FA_ROWS - 1) / ATTN_FA_ROWS, 1, name);
        return ZN_OK;
    }
    vkop_kind dk;
    uint32_t ds;
    /* batched: every sequence unsplit (no partials scratch per sequence) */
    const uint32_t n_split = a->seqs ? 1 : vkop_attn_splits(o, a->n_tok, a->n_past + a->n_tok);
    const bool dec = a->n_past + a->n_tok > o->t.attn_dec_min && attn_dec_pipe(o, a, &dk, &ds);
    zn_status st = vkops_pipe(o, dec ? dk : VKO_ATTN, (vkvar){.rows_log2 = dec ? ds : 0}, &p, err);
    if (!st) st = vkops_pipe(o, VKO_ATTN_MERGE, (vkvar){0}, &pm, err);
    if (st) return st;
    if (n_split > 1 && !a->part) return zn_errf(err, ZN_ERR_ARG, "vulkan: attention needs split scratch");
    attn_push pc = attn_pc(o, a, n_split);
    if (a->seqs) {
        vkcmd_dispatch(c, p, &pc, sizeof pc, dec ? a->n_head_kv : a->n_head, 1, a->n_seq, name);
        return ZN_OK;
    }
    if (dec) vkcmd_dispatch(c, p, &pc, sizeof pc, a->n_head_kv, n_split, 1, name);
    else vkcmd_dispatch(c, p, &pc, sizeof pc, a->n_head, a->n_tok, n_split, name);
    if (n_split > 1) {
        vkcmd_barrier(c);
        struct { uint64_t part, dst; uint32_t n_head, hd_v, n_split; } pm_pc = {a->part, a->dst, a->n_head, a->hd_v, n_split};
        vkcmd_dispatch(c, pm, &pm_pc, sizeof pm_pc, a->n_head, a->n_tok, (a->hd_v + ATTN_MERGE_DIMS - 1) / ATTN_MERGE_DIMS,
                       name);
    }
    return ZN_OK;
}

/* ---- specialisation constants ---- */

typedef struct spec_wg { uint32_t wg, kvq; } spec_wg;                               /* attn, attn_merge, kv_store */
typedef struct spec_attn_dec { uint32_t wg, rows, hd, kvq; } spec_attn_dec;         /* attn_dec.comp */
typedef struct spec_attn_fa { uint32_t wg, hd, bc, kvq; } spec_attn_fa;             /* attn_fa.comp */
typedef struct spec_attn_fa_cm { uint32_t wg, hd, br, bc, ssz, kv2, kp, kvq; } spec_attn_fa_cm; /* attn_fa_cm.glsl */

zn_status vkspec_attn(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)v, (void)err;
    VKSPEC(out, spec_wg, {.wg = k == VKO_ATTN_MERGE ? o->t.merge_wg : ATTN_WG, .kvq = o->kvq});
    return ZN_OK;
}

zn_status vkspec_kv_store(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)v, (void)err;
    VKSPEC(out, spec_wg, {.wg = o->t.small_wg, .kvq = o->kvq});
    return ZN_OK;
}

/* The kind fixes the head dim (64, 128, 256), the variant the query rows. */
zn_status vkspec_attn_dec(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)err;
    VKSPEC(out, spec_attn_dec, {.wg = ATTN_WG, .rows = 1u << v.rows_log2, .hd = 64u << (k - VKO_ATTN_DEC64), .kvq = o->kvq});
    return ZN_OK;
}

/* K + V tiles (f32) of 32 KiB in all: every device's minimum of shared memory */
zn_status vkspec_attn_fa(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)o, (void)k, (void)err;
    VKSPEC(out, spec_attn_fa, {.wg = 128, .hd = v.head_dim, .bc = 4096 / v.head_dim, .kvq = o->kvq});
    return ZN_OK;
}

zn_status vkspec_attn_fa_cm(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)err;
    const vkfa_cfg *f = &zn_vk_fa_cfgs[v.cfg];
    VKSPEC(out, spec_attn_fa_cm, {.wg = FA_WG, .hd = f->hd, .br = f->br, .bc = f->bc, .ssz = fa_ss_floats(f),
                                  .kv2 = fa_kv2(o, f), .kp = fa_kparts(f), .kvq = o->kvq});
    return ZN_OK;
}

typedef struct spec_attn_fa_sg { uint32_t wg, hd, bc, kvq; } spec_attn_fa_sg; /* attn_fa_sg.glsl */

zn_status vkspec_attn_fa_sg(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)err;
    const vkfa_cfg *f = &zn_vk_fa_cfgs[v.cfg];
    VKSPEC(out, spec_attn_fa_sg, {.wg = 2 * f->br, .hd = f->hd, .bc = f->bc, .kvq = o->kvq});
    return ZN_OK;
}
