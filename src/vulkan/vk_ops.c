/* Op recording (see vk_ops.h): pipeline variants per op and weight type,
 * created on first use, and the push-constant blocks of each shader. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_ops.h"
#include "vk_quant.h"

static int type_slot(zn_type t) { return vktune_slot(t); }

bool vkops_type_ok(zn_type t) { return type_slot(t) >= 0; }

/* The fused integer mat-vec (matvec_q.comp with XB > 0) sized for x rows
 * of up to 4096 and 16384 columns (1.25 bytes each in shared memory: small
 * pipelines leave room for more workgroups per SM), and the largest the
 * device's shared memory holds (beside reduce.glsl's 128 bytes). */
static uint32_t mvx_cap(const vkops *o, vkop_kind k) {
    const uint32_t sh = o->d->info.max_shared, most = sh > 256 ? (sh - 256) / 40 * 32 : 0;
    if (k >= VKO_MATVEC_QXB_S) k -= VKO_MATVEC_QXB_S - VKO_MATVEC_QX_S; /* big matrices: the same sizes */
    const uint32_t cap = k == VKO_MATVEC_QX_S ? 4096 : k == VKO_MATVEC_QX_M ? 16384 : most;
    return cap < most ? cap : most;
}

#define ATTN_MERGE_DIMS 32 /* attn_merge.comp's DS: output dims per workgroup */

/* The fused integer mat-vec's configuration for type t and size class big
 * (vktune.mvx_t; workgroups per token, prefetch: see vk_tune.h). */
typedef struct mvx_tune { uint32_t wg, rows, unroll, wgs, pf, pn; } mvx_tune;
static mvx_tune mvx_tune_for(const vkops *o, zn_type t, bool big) {
    const int ts = type_slot(t);
    const vktune_mvx *x = &o->t.mvx_t[big];
    const int i = ts < 0 ? 5 : ts;
    return (mvx_tune){x->wg[i], x->rows[i], x->unroll[i], x->wgs[i], x->pf[i], x->pn[i]};
}

zn_status vkops_init(vkops *o, vkdev *d, const vktune *t, const char *cache_path, zn_err *err) {
    memset(o, 0, sizeof *o);
    o->d = d;
    if (!d->info.subgroup_arith)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: '%s' lacks subgroup arithmetic in compute shaders", d->info.name);
    zn_status st = t ? ZN_OK : vktune_init(&o->t, &d->info, NULL, err);
    if (st) return st;
    if (t) o->t = *t;
    const uint32_t sg = d->info.subgroup_size;
    o->attn_dec = o->t.attn_dec && sg >= 8; /* attn_dec.comp: 8-lane rows */
    /* matmul_cm.comp lays 8 subgroups of 32 over its tile */
    o->coopmat = d->info.coopmat && (sg == 32 || (d->info.subgroup_size_control && d->info.subgroup_min <= 32 &&
                                                  d->info.subgroup_max >= 32));
    o->mm_cm2 = o->coopmat && d->info.coopmat2 && o->t.mm_cm2; /* mmf_cm2.comp */
    o->fa_cm = o->t.fa_cm;
    o->intdot = d->info.int_dot && o->t.intdot;
    o->mvx = o->intdot && sg >= 8 && o->t.mvx; /* q8x.glsl: 8-lane blocks */
    o->mvx_max_cols = mvx_cap(o, VKO_MATVEC_QX_L);
    return vkpipes_init(&o->ps, d, cache_path, err);
}

void vkops_forget(vkops *o) {
    memset(&o->xq_last, 0, sizeof o->xq_last);
    memset(&o->mmx_last, 0, sizeof o->mmx_last);
    o->xq_turn = 0;
}

void vkops_free(vkops *o) {
    if (!o->d) return;
    for (int k = 0; k < VKO_COUNT; k++)
        for (int t = 0; t < ZN_VK_NTYPES; t++) vkpipe_destroy(&o->ps, &o->pipes[k][t]);
    vkpipes_free(&o->ps);
    memset(o, 0, sizeof *o);
}

#define ATTN_WG 128
#define ATTN_DEC_SLOTS 5 /* attn_dec.comp for 1, 2, 4, 8, 16 query rows */
_Static_assert(1 << (ATTN_DEC_SLOTS - 1) == ZN_VK_ATTN_DEC_MAX_ROWS && ATTN_DEC_SLOTS <= ZN_VK_NTYPES &&
                   ZN_VK_ATTN_DEC_MAX_ROWS * 8 <= ATTN_WG, "attn_dec.comp: 8 softmax lanes per row");
#define MM_PREP_WG 256 /* mm_prep.comp's workgroup: a multiple of 8 steps */
#define ATTN_FA_ROWS 32    /* query rows per workgroup of attn_fa.comp (its BR) */
#define ELT_WG 256

/* Rows per subgroup of the float mat-vec kernel (vktune.mv_rows). */
static uint32_t mv_rows_for(const vkops *o, zn_type t) {
    const int ts = type_slot(t);
    return o->t.mv_rows[ts < 0 ? 0 : ts];
}

/* quantx.comp's workgroup. */
static uint32_t qx_wg(const vkops *o) { return o->t.qx_wg; }

/* The weight types of the integer mat-vec (matvec_q.comp). */
static bool is_quant(zn_type t) {
    return t == ZN_TYPE_Q4_0 || t == ZN_TYPE_Q8_0 || t == ZN_TYPE_Q4_K || t == ZN_TYPE_Q5_K || t == ZN_TYPE_Q6_K;
}

/* Rows per subgroup and steps per loop iteration of the integer mat-vec
 * after quantx (vktune.mvq_rows, mvq_unroll). */
static uint32_t mvq_rows_for(const vkops *o, zn_type t) {
    const int ts = type_slot(t);
    return o->t.mvq_rows[ts < 0 ? 0 : ts];
}
static uint32_t mvq_unroll_for(const vkops *o, zn_type t) {
    const int ts = type_slot(t);
    return o->t.mvq_unroll[ts < 0 ? 0 : ts];
}

/* Lanes per state row of gdn.comp: 8 (3 shuffle steps per reduction); on
 * narrower subgroups (lavapipe's 8) half the subgroup, so the op tests still
 * run two rows per subgroup as GPUs do. */
static uint32_t gdn_lanes(const vkops *o) {
    uint32_t sg = o->d->info.subgroup_size;
    return sg >= 16 ? 8 : sg > 1 ? sg / 2 : 1;
}

/* log2(d) - 3 for the GDN head dims 8..1024, else -1. */
static int dim_slot(uint32_t d) {
    for (int i = 0; i < ZN_VK_NTYPES; i++)
        if (d == 8u << i) return i;
    return -1;
}

const vkmm_cfg zn_vk_mm_cfgs[ZN_VK_MM_NCFG] = {
    {256, 128, 128, 64, 32}, {256, 128, 128, 32, 64}, {128, 128, 128, 64, 64}, {256, 64, 128, 32, 32},
    {128, 64, 64, 32, 32},   {256, 128, 64, 32, 32},  {128, 64, 128, 32, 64},
    {256, 128, 256, 64, 64}, /* only where shared memory exceeds 48 KiB */
};
_Static_assert(ZN_VK_MM_NCFG <= ZN_VK_NTYPES, "GEMM pipelines live in the per-type slots");

#define MMF_LDV 20 /* mmf.glsl: f16vec2 per shared row */

bool vkops_mm_cfg_fits(const vkops *o, uint32_t ci) {
    const vkmm_cfg *f = &zn_vk_mm_cfgs[ci];
    return 2 * (f->bm + f->bn) * MMF_LDV * 4 + 1024 <= o->d->info.max_shared;
}

/* The GEMM tile config for `groups` products of rows x toks: t.mm_cfg when
 * set and it fits, else the largest tile that still gives t.mm_min_wgs
 * workgroups (or the one giving the most): small products need many small
 * tiles to fill the GPU. */
static uint32_t mmf_cfg(const vkops *o, uint32_t rows, uint32_t toks, uint32_t groups) {
    if (o->t.mm_cfg < ZN_VK_MM_NCFG && vkops_mm_cfg_fits(o, o->t.mm_cfg)) return o->t.mm_cfg;
    static const uint32_t by_size[] = {0, 5, 3, 4}; /* 128x128, 128x64, 64x128, 64x64 */
    uint32_t best = 0;
    uint64_t best_n = 0;
    for (size_t i = 0; i < sizeof by_size / sizeof *by_size; i++) {
        const vkmm_cfg *f = &zn_vk_mm_cfgs[by_size[i]];
        if (!vkops_mm_cfg_fits(o, by_size[i])) continue;
        const uint64_t n = (uint64_t)((rows + f->bm - 1) / f->bm) * ((toks + f->bn - 1) / f->bn) * groups;
        if (n >= o->t.mm_min_wgs) return by_size[i];
        if (n > best_n) best = by_size[i], best_n = n;
    }
    return best;
}

/* The tile configs of mmf_cm2.comp (rows x tokens per workgroup, k step,
 * k steps per loop iteration); cm2_cfg() picks 1, 2 or 3, the rest are for
 * sweeps (tuning key cm2_cfg). */
const vkcm2_cfg zn_vk_cm2_cfgs[ZN_VK_CM2_NCFG] = {
    {128, 256, 64, 4}, {128, 128, 64, 4}, {64, 128, 64, 4}, {64, 64, 64, 4},
    {128, 256, 64, 1}, {128, 128, 64, 1}, {128, 128, 32, 8}, {256, 128, 32, 4},
};
_Static_assert(ZN_VK_CM2_NCFG <= ZN_VK_NTYPES, "pipeline slots");

/* The cm2 tile for `groups` products of rows x toks x k: t.cm2_cfg when
 * set; else 128 x 128 for long k (t.cm2_long_k) where it gives about a
 * workgroup per SM (t.cm2_min_wgs), 64 x 128, or 64 x 64 where that gives
 * too few (vk_tune.c has the measurements: 8B q/k/v 130 TFLOP/s against 103
 * for 128 x 128, 2B gate+up 121 against 94, 8B attn_k, 1024 rows, 114 on
 * 64 x 64 against 76). 128 x 256 (f32 accumulators: twice the registers)
 * was 1.3-1.8x slower than 128 x 128 everywhere. */
static uint32_t cm2_cfg(const vkops *o, uint32_t rows, uint32_t toks, uint32_t k, uint32_t groups) {
    if (o->t.cm2_cfg < ZN_VK_CM2_NCFG) return o->t.cm2_cfg;
    const uint64_t wg128 = (uint64_t)((rows + 127) / 128) * ((toks + 127) / 128) * groups;
    const uint64_t wg64 = (uint64_t)((rows + 63) / 64) * ((toks + 127) / 128) * groups;
    if (groups == 1 && k >= o->t.cm2_long_k && wg128 >= o->t.cm2_min_wgs) return 1;
    return wg64 >= o->t.cm2_min_wgs || groups > 1 ? 2 : 3;
}

/* Per head dim, the default first. Prefill's whole grid is resident at
 * once on a large GPU (132 SMs where they were measured), so a layer takes about as long as
 * its longest workgroup: rows per workgroup small enough for several
 * workgroups per SM (8B: 512 of 32 rows; the hd 256 shapes have 2 KV
 * heads: 256 / 512 of 16 rows), K/V tiles shared by as many rows as that
 * allows. The defaults fit 32 KiB of shared memory (lavapipe), so the op
 * tests there run them; the rest (up to 48 KiB) are for sweeps
 * (tools/vk-bench/attn.c). */
const vkfa_cfg zn_vk_fa_cfgs[ZN_VK_FA_NCFG] = {
    {64, 64, 32},  {128, 32, 32}, {128, 64, 32}, {128, 16, 32},
    {128, 32, 64}, {256, 16, 32}, {256, 32, 32}, {256, 16, 64},
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

/* Q and one K/V tile (rows padded by 8 halves), S, P (padded), alpha */
static uint32_t fa_base_bytes(const vkfa_cfg *f) {
    return (f->br + f->bc) * (f->hd + 8) * 2 + fa_ss_floats(f) * 4 + f->br * (f->bc + 8) * 2 + f->br * 4;
}

/* A second K/V tile (K and V in buffers of their own) where it fits and
 * the tuning's fa_kv2 is on */
static bool fa_kv2(const vkops *o, const vkfa_cfg *f) {
    return o->t.fa_kv2 && fa_base_bytes(f) + f->bc * (f->hd + 8) * 2 <= o->d->info.max_shared;
}

uint32_t vkops_fa_cfg_bytes(const vkops *o, uint32_t ci) {
    const vkfa_cfg *f = &zn_vk_fa_cfgs[ci];
    return fa_base_bytes(f) + (fa_kv2(o, f) ? f->bc * (f->hd + 8) * 2 : 0);
}

bool vkops_fa_cfg_ok(const vkops *o, uint32_t ci) {
    /* a row's softmax threads reduce through shuffles: within one subgroup */
    return ci < ZN_VK_FA_NCFG && fa_base_bytes(&zn_vk_fa_cfgs[ci]) <= o->d->info.max_shared &&
           FA_WG / zn_vk_fa_cfgs[ci].br <= o->d->info.subgroup_size;
}

uint32_t vkops_fa_cfg_for(const vkops *o, uint32_t hd) {
    if (o->t.fa_cfg < ZN_VK_FA_NCFG && zn_vk_fa_cfgs[o->t.fa_cfg].hd == hd && vkops_fa_cfg_ok(o, o->t.fa_cfg))
        return o->t.fa_cfg;
    for (uint32_t i = 0; i < ZN_VK_FA_NCFG; i++)
        if (zn_vk_fa_cfgs[i].hd == hd && vkops_fa_cfg_ok(o, i)) return i;
    return ZN_VK_MM_AUTO;
}

/* mmf.glsl's specialisation: the config, and as many 16x16 f32 epilogue
 * staging tiles as fit beside the double-buffered operand tiles. */
static zn_status mmf_spec(const vkops *o, uint32_t ci, uint32_t *spec, zn_err *err) {
    const vkmm_cfg *f = &zn_vk_mm_cfgs[ci];
    const uint32_t nsg = f->wg / 32, tiles = 2 * (f->bm + f->bn) * MMF_LDV * 4;
    uint32_t nst = o->d->info.max_shared > tiles ? (o->d->info.max_shared - tiles) / 1024 : 0;
    if (nst > nsg) nst = nsg;
    if (!nst) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: GEMM tile %ux%u needs more than %u bytes of shared memory",
                             f->bm, f->bn, o->d->info.max_shared);
    uint32_t v[6] = {f->wg, f->bm, f->bn, f->wm, f->wn, nst};
    memcpy(spec, v, sizeof v);
    return ZN_OK;
}

/* The pipeline of op `k` for weight type t (F32 for untyped ops; the head
 * dim for GDN, the tile config for the GEMM). */
static zn_status get_pipe_v(vkops *o, vkop_kind k, zn_type t, uint32_t dim, const vkpipe **out, zn_err *err) {
    const bool by_dim = k == VKO_GDN || k == VKO_ATTN_FA, fa = k == VKO_ATTN_FA_CM || k == VKO_ATTN_FA_EMU;
    const bool cm2 = k == VKO_MMF_CM2 || k == VKO_MMF_CM2_MOE;
    const bool dec = k == VKO_ATTN_DEC64 || k == VKO_ATTN_DEC128 || k == VKO_ATTN_DEC256;
    const bool by_cfg = k == VKO_MMF || k == VKO_MMF_EMU || cm2 || fa || dec;
    const uint32_t ncfg = cm2 ? ZN_VK_CM2_NCFG : fa ? ZN_VK_FA_NCFG : dec ? ATTN_DEC_SLOTS : ZN_VK_MM_NCFG;
    int ts = by_dim ? dim_slot(dim) : by_cfg ? (dim < ncfg ? (int)dim : -1) : type_slot(t);
    if (ts < 0 && by_cfg) return zn_errf(err, ZN_ERR_ARG, "vulkan: GEMM config %u", dim);
    if (ts < 0 && by_dim) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: head dim %u", dim);
    if (ts < 0) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no kernel for weight type %s", zn_type_name(t));
    vkpipe *p = &o->pipes[k][ts];
    *out = p;
    if (p->pipe) return ZN_OK;
    uint32_t spec[ZN_VK_MAX_SPEC];
    uint32_t n = 0;
    const char *shader = NULL;
    switch (k) {
    case VKO_MATVEC:
    case VKO_MATVEC_1: {
        const bool one = k == VKO_MATVEC_1;
        spec[n++] = one ? o->d->info.subgroup_size : o->t.mv_wg; spec[n++] = (uint32_t)t;
        spec[n++] = one ? 1 : mv_rows_for(o, t); spec[n++] = o->d->info.subgroup_size;
        return vkpipe_create(&o->ps, p, "matvec", spec, n, o->d->info.subgroup_size, err);
    }
    case VKO_MATVEC_Q:
        spec[n++] = o->t.mv_wg; spec[n++] = (uint32_t)t; spec[n++] = mvq_rows_for(o, t); spec[n++] = o->d->info.subgroup_size;
        spec[n++] = mvq_unroll_for(o, t); spec[n++] = 0; spec[n++] = 0; spec[n++] = o->t.mvq_pn;
        return vkpipe_create(&o->ps, p, "matvec_q", spec, n, o->d->info.subgroup_size, err);
    case VKO_MATVEC_QX_S:
    case VKO_MATVEC_QX_M:
    case VKO_MATVEC_QX_L:
    case VKO_MATVEC_QXB_S:
    case VKO_MATVEC_QXB_M:
    case VKO_MATVEC_QXB_L: {
        const mvx_tune m = mvx_tune_for(o, t, k >= VKO_MATVEC_QXB_S);
        spec[n++] = m.wg; spec[n++] = (uint32_t)t; spec[n++] = m.rows; spec[n++] = o->d->info.subgroup_size;
        spec[n++] = m.unroll; spec[n++] = mvx_cap(o, k) / 32; spec[n++] = m.pf; spec[n++] = m.pn;
        return vkpipe_create(&o->ps, p, "matvec_q", spec, n, o->d->info.subgroup_size, err);
    }
    case VKO_QUANTX: shader = "quantx"; spec[n++] = qx_wg(o); spec[n++] = o->t.qx_sk; break;
    case VKO_MATMUL:
        shader = "matmul";
        spec[n++] = 256; spec[n++] = (uint32_t)t;
        break;
    case VKO_MATMUL_CM:
        spec[n++] = 256; spec[n++] = (uint32_t)t;
        return vkpipe_create(&o->ps, p, "matmul_cm", spec, n, 32, err);
    case VKO_EMBED: shader = "embed"; spec[n++] = o->t.small_wg; spec[n++] = (uint32_t)t; break;
    case VKO_MM_PREP: shader = "mm_prep"; spec[n++] = MM_PREP_WG; spec[n++] = (uint32_t)t; break;
    case VKO_MOE_BUCKET: shader = "moe_bucket"; spec[n++] = 256; break;
    case VKO_MMF:
    case VKO_MMF_EMU: {
        zn_status st = mmf_spec(o, dim, spec, err);
        if (st) return st;
        return vkpipe_create(&o->ps, p, k == VKO_MMF ? "mmf_cm" : "mmf_emu", spec, 6, k == VKO_MMF ? 32 : 0, err);
    }
    case VKO_MMF_CM2:
    case VKO_MMF_CM2_MOE: {
        const vkcm2_cfg *f = &zn_vk_cm2_cfgs[dim];
        spec[n++] = ZN_VK_CM2_WG; spec[n++] = f->bm; spec[n++] = f->bn; spec[n++] = f->bk; spec[n++] = f->unroll;
        spec[n++] = k == VKO_MMF_CM2_MOE;
        return vkpipe_create(&o->ps, p, "mmf_cm2", spec, n, 0, err);
    }
    case VKO_NORM: shader = "norm"; spec[n++] = o->t.norm_wg; break;
    case VKO_ROPE: shader = "rope"; spec[n++] = o->t.small_wg; break;
    case VKO_KV_STORE: shader = "kv_store"; spec[n++] = o->t.small_wg; break;
    case VKO_ATTN: shader = "attn"; spec[n++] = ATTN_WG; break;
    case VKO_ATTN_MERGE: shader = "attn_merge"; spec[n++] = o->t.merge_wg; break;
    case VKO_ATTN_DEC64:
    case VKO_ATTN_DEC128:
    case VKO_ATTN_DEC256:
        shader = "attn_dec";
        spec[n++] = ATTN_WG; spec[n++] = 1u << dim; spec[n++] = 64u << (k - VKO_ATTN_DEC64);
        break;
    case VKO_ATTN_FA: /* K + V tiles (f32) of 32 KiB in all: every device's minimum of shared memory */
        shader = "attn_fa";
        spec[n++] = 128; spec[n++] = dim; spec[n++] = 4096 / dim;
        break;
    case VKO_ATTN_FA_CM:
    case VKO_ATTN_FA_EMU: {
        const vkfa_cfg *f = &zn_vk_fa_cfgs[dim];
        spec[n++] = FA_WG; spec[n++] = f->hd; spec[n++] = f->br; spec[n++] = f->bc; spec[n++] = fa_ss_floats(f);
        spec[n++] = fa_kv2(o, f); spec[n++] = fa_kparts(f);
        const bool cm = k == VKO_ATTN_FA_CM;
        return vkpipe_create(&o->ps, p, cm ? "attn_fa_cm" : "attn_fa_emu", spec, n, cm ? 32 : 0, err);
    }
    case VKO_ELTWISE: shader = "eltwise"; spec[n++] = ELT_WG; break;
    case VKO_MOE_ROUTE: shader = "moe_route"; spec[n++] = 64; /* its PER assumes 64 */ break;
    case VKO_ARGMAX: shader = "argmax"; spec[n++] = 256; break;
    case VKO_CONV1D: shader = "conv1d"; spec[n++] = o->t.small_wg; break;
    case VKO_GDN: {
        uint32_t sg = o->d->info.subgroup_size, lpr = gdn_lanes(o);
        if (dim % lpr) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: delta-rule head dim %u vs %u lanes", dim, lpr);
        shader = "gdn";
        spec[n++] = 4 * sg; spec[n++] = sg; spec[n++] = dim; spec[n++] = lpr;
        return vkpipe_create(&o->ps, p, shader, spec, n, sg, err);
    }
    default:
        return zn_errf(err, ZN_ERR_ARG, "vulkan: op %d", (int)k);
    }
    return vkpipe_create(&o->ps, p, shader, spec, n, 0, err);
}

static zn_status get_pipe(vkops *o, vkop_kind k, zn_type t, const vkpipe **out, zn_err *err) {
    return get_pipe_v(o, k, t, 0, out, err);
}

/* Workgroup grid for n groups: x up to the device limit, the rest in y
 * (shaders linearise gl_WorkGroupID.y * gl_NumWorkGroups.x + x). */
static void grid2(const vkops *o, uint32_t n, uint32_t *gx, uint32_t *gy) {
    uint32_t lim = o->d->info.max_wg_count[0] ? o->d->info.max_wg_count[0] : 65535;
    if (lim > 65535) lim = 65535;
    *gx = n < lim ? n : lim;
    *gy = (n + *gx - 1) / *gx;
}

/* Mirrors mm_push.glsl. */
typedef struct mm_push {
    uint64_t w, x, y, bias, scale, res, ids, aux;
    uint32_t expert_bytes, ncols, nrows, row_bytes, n_slots;
    uint32_t x_stride, y_stride, x_slot_stride, y_slot_stride;
    uint32_t n_tok, ids_stride, flags;
    float eps;
} mm_push;
_Static_assert(sizeof(mm_push) <= ZN_VK_PUSH_MAX, "push constants");

static zn_status mm_check(const vkop_mm *a, zn_err *err) {
    const zn_type_info *ti = zn_type_get((uint32_t)a->type);
    if (!ti || !vkops_type_ok(a->type)) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: matmul of type %s", zn_type_name(a->type));
    if (a->ncols % ti->blck) return zn_errf(err, ZN_ERR_ARG, "vulkan: row of %u is not a multiple of %s blocks", a->ncols, ti->name);
    if (a->row_bytes != vkq_row_bytes(a->type, a->ncols))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: %s row of %u in %u bytes (vk_quant.h layout: %zu)", ti->name, a->ncols,
                       a->row_bytes, vkq_row_bytes(a->type, a->ncols));
    if (!a->n_tok || !a->nrows || !a->ncols) return zn_errf(err, ZN_ERR_ARG, "vulkan: empty matmul");
    if (a->expert_bytes >> 32) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: expert matrices of 4 GiB or more");
    if (a->group && (a->ids || a->res || a->n_slots > 1))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: a grouped mat-vec has no experts or residual");
    return ZN_OK;
}

static mm_push mm_fill(const vkop_mm *a) {
    const bool aligned = a->x % 16 == 0 && a->x_stride % 4 == 0 && a->x_slot_stride % 4 == 0 && a->aux % 16 == 0;
    return (mm_push){.w = a->w, .x = a->x, .y = a->y, .bias = a->bias, .scale = a->scale, .res = a->res,
                     .ids = a->group ? a->group : a->ids,
                     .aux = a->aux, .expert_bytes = (uint32_t)a->expert_bytes, .ncols = a->ncols, .nrows = a->nrows,
                     .row_bytes = a->row_bytes, .n_slots = a->n_slots ? a->n_slots : 1, .x_stride = a->x_stride,
                     .y_stride = a->y_stride, .x_slot_stride = a->x_slot_stride, .y_slot_stride = a->y_slot_stride,
                     .n_tok = a->n_tok, .ids_stride = a->ids_stride,
                     .flags = (a->bias_first ? 1u : 0u) | (aligned ? 2u : 0u) | (uint32_t)a->xmode << 2 |
                              (a->group ? 16u : 0u),
                     .eps = a->eps};
}

static void dispatch_items(vkops *o, vkcmd *c, const vkpipe *p, const void *pc, uint32_t size, uint32_t n_items,
                           const char *name);

/* Bytes of one quantised x row (quantx.comp): qs [nb][32] | (d, d * sum) [nb]. */
static uint64_t xq_row_bytes(uint32_t ncols) { return ((uint64_t)ncols / 32 * 40 + 15) & ~(uint64_t)15; }

uint64_t vkops_xq_bytes(uint32_t ncols, uint32_t rows) { return 2 * ((xq_row_bytes(ncols) * rows + 255) & ~255ull); }

void vkops_set_xq(vkops *o, VkDeviceAddress xq, uint64_t bytes) {
    o->xq = xq;
    o->xq_bytes = bytes;
}

/* log2 of the row groups per subgroup of matvec_q.comp: a row of fewer
 * steps (32 values, 64 for Q6_K) than the subgroup has lanes gets only as
 * many lanes as the power of two that covers them. */
static uint32_t matvec_q_groups(const vkops *o, zn_type t, uint32_t ncols) {
    const uint32_t steps = ncols / (t == ZN_TYPE_Q6_K ? 64 : 32);
    uint32_t lg = 0;
    while ((o->d->info.subgroup_size >> (lg + 1)) >= steps && (o->d->info.subgroup_size >> (lg + 1)) >= 1 && lg < 15) lg++;
    return lg;
}

/* Records quantx into the next half of the scratch (or finds the previous
 * call's copy, x_reuse); *q = its address, 0: use the float kernel (no
 * scratch for this size, or no integer pipelines on this device). */
static void quantize_x(vkops *o, vkcmd *c, const vkop_mm *a, const mm_push *mp, VkDeviceAddress *q) {
    const uint32_t nsx = a->x_slot_stride ? mp->n_slots : 1, rows = a->n_tok * nsx;
    const uint64_t half = vkops_xq_bytes(a->ncols, rows) / 2;
    *q = 0;
    if (!o->xq || half > ((o->xq_bytes / 2) & ~255ull)) return;
    _Static_assert(sizeof(struct vkop_xq_key) == 56, "vkop_xq_key has padding");
    struct vkop_xq_key key = {a->x, a->aux, 0, a->ncols, rows, nsx, a->x_stride, a->x_slot_stride, mp->flags & 14u, a->eps, 0};
    if (a->x_reuse && o->xq_last.q) {
        key.q = o->xq_last.q;
        if (!memcmp(&key, &o->xq_last, sizeof key)) { /* written and made visible by an earlier call */
            *q = key.q;
            return;
        }
    }
    /* both pipelines before recording anything: a driver that rejects
     * them leaves the float kernel in charge (vkops.intdot_err says why) */
    const vkpipe *p = NULL, *pm = NULL;
    zn_err e2 = {0};
    if (get_pipe(o, VKO_QUANTX, ZN_TYPE_F32, &p, &e2) || get_pipe(o, VKO_MATVEC_Q, a->type, &pm, &e2)) {
        snprintf(o->intdot_err, sizeof o->intdot_err, "%s", e2.msg);
        o->intdot = false;
        return;
    }
    *q = o->xq + (o->xq_turn++ & 1) * ((o->xq_bytes / 2) & ~255ull);
    key.q = *q;
    o->xq_last = key;
    struct {
        uint64_t x, aux, q;
        uint32_t ncols, n_rows, n_slots, x_stride, x_slot_stride, q_row, flags;
        float eps;
    } pc = {a->x, a->aux, *q, a->ncols, rows, nsx, a->x_stride, a->x_slot_stride, (uint32_t)xq_row_bytes(a->ncols),
            mp->flags, a->eps};
    const uint32_t per = o->t.qx_sk * qx_wg(o), parts = per ? (a->ncols / 4 + per - 1) / per : 1;
    dispatch_items(o, c, p, &pc, sizeof pc, rows * parts, "quantx");
    vkcmd_barrier(c);
}

/* The fused integer mat-vec's pipeline for a row of ncols (NULL: x does not
 * fit, or the device rejected the pipeline: then vkops.mvx goes off and
 * intdot_err says why). */
static const vkpipe *mvx_pipe(vkops *o, zn_type t, uint32_t ncols, uint32_t xmode, bool big) {
    if (!o->mvx || ncols > o->mvx_max_cols || !(o->t.mvx_modes >> xmode & 1)) return NULL;
    vkop_kind k = VKO_MATVEC_QX_S;
    while (k < VKO_MATVEC_QX_L && ncols > mvx_cap(o, k)) k++;
    if (big) k += VKO_MATVEC_QXB_S - VKO_MATVEC_QX_S;
    const vkpipe *p = NULL;
    zn_err e2 = {0};
    if (get_pipe(o, k, t, &p, &e2)) {
        snprintf(o->intdot_err, sizeof o->intdot_err, "%s", e2.msg);
        o->mvx = false;
        return NULL;
    }
    return p;
}

zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = mm_check(a, err);
    if (st) return st;
    mm_push pc = mm_fill(a);
    const bool iq = o->intdot && is_quant(a->type);
    const bool big = o->t.mvx_big_mb != ZN_VK_OFF &&
                     (uint64_t)a->nrows * a->row_bytes >= (uint64_t)o->t.mvx_big_mb << 20; /* one expert's, for MoE */
    const vkpipe *px = iq ? mvx_pipe(o, a->type, a->ncols, (uint32_t)a->xmode, big) : NULL;
    VkDeviceAddress q = 0;
    if (iq && !px) quantize_x(o, c, a, &pc, &q);
    if (!q) o->xq_last.q = 0; /* x_reuse means "the previous call's x": this one quantised nothing */
    /* float kernel, few rows (MoE routers and gates): a row per workgroup of
     * one subgroup, so the rows spread over the GPU instead of a few
     * workgroups reading row after row */
    const bool one = !px && !q && a->nrows <= o->t.mv_one_rows;
    if (px) p = px;
    else st = get_pipe(o, q ? VKO_MATVEC_Q : one ? VKO_MATVEC_1 : VKO_MATVEC, a->type, &p, err);
    if (st) return st;
    uint32_t per_sg = one ? 1 : mv_rows_for(o, a->type), wg = one ? o->d->info.subgroup_size : o->t.mv_wg;
    const mvx_tune mt = px ? mvx_tune_for(o, a->type, big) : (mvx_tune){0};
    if (px || q) {
        const uint32_t lg = matvec_q_groups(o, a->type, a->ncols);
        pc.flags |= lg << 8;
        per_sg = (px ? mt.rows : mvq_rows_for(o, a->type)) << lg;
    }
    if (px) wg = mt.wg;
    if (q) { /* matvec_q.comp reads the quantised rows: strides in rows */
        pc.x = q;
        pc.x_stride = a->x_slot_stride ? pc.n_slots : 1;
        pc.x_slot_stride = a->x_slot_stride ? 1 : 0;
    }
    const uint32_t per_wg = per_sg * (wg / o->d->info.subgroup_size);
    uint32_t n_wg = (a->nrows + per_wg - 1) / per_wg, gx, gy;
    /* the fused kernel loops over row blocks: fewer workgroups, each
     * quantising x once */
    if (px && mt.wgs && n_wg > mt.wgs) n_wg = mt.wgs;
    grid2(o, n_wg, &gx, &gy);
    vkcmd_dispatch(c, p, &pc, sizeof pc, gx, gy, a->n_tok * pc.n_slots, name);
    return ZN_OK;
}

/* ---- the f16 GEMM path (mm_prep.comp, moe_bucket.comp, mmf.glsl) ---- */

static bool f16_path(const vkops *o, zn_type t) {
    return (o->coopmat || o->mm_emulate) && t != ZN_TYPE_F32 && o->mm_scratch;
}

static uint64_t align256(uint64_t n) { return (n + 255) & ~255ull; }

/* Where a matmul's operands go in the scratch, and how its weights are
 * split into chunks (units: experts when grouped, else rows). */
typedef struct mm_plan {
    uint32_t kp, xs, xrows;       /* padded k; x rows per token (slots when per-slot x); x rows */
    uint64_t b_off, a_off;        /* bucket at 0 */
    uint64_t unit_bytes;          /* f16 bytes of one expert / one row */
    uint32_t units, per_chunk, n_chunks;
} mm_plan;

static void mm_plan_shape(const vkops *o, const vkop_mm *a, mm_plan *pl) {
    memset(pl, 0, sizeof *pl);
    pl->kp = (a->ncols + 31) / 32 * 32;
    pl->xs = a->ids ? a->n_slots : 1; /* grouped: x rows are (token, slot) pairs */
    pl->xrows = a->n_tok * pl->xs;
    pl->b_off = a->ids ? align256(4ull * (2ull * a->n_expert + (uint64_t)a->n_tok * a->n_slots)) : 0;
    pl->a_off = pl->b_off + align256(2ull * pl->xrows * pl->kp);
    pl->unit_bytes = 2ull * pl->kp * (a->ids ? a->nrows : 1);
    pl->units = a->ids ? a->n_expert : a->nrows;
    (void)o;
}

uint64_t vkops_mm_scratch_bytes(const vkops *o, const vkop_mm *a, uint64_t a_cap) {
    mm_plan pl;
    mm_plan_shape(o, a, &pl);
    const uint64_t tile = a->ids ? 1 : 128 /* the largest BM */, min_units = tile < pl.units ? tile : pl.units;
    uint64_t units = a_cap / pl.unit_bytes;
    if (units < min_units) units = min_units;
    if (units > pl.units) units = pl.units;
    return pl.a_off + align256(units * pl.unit_bytes);
}

static zn_status mm_plan_for(const vkops *o, const vkop_mm *a, uint32_t bm, mm_plan *pl, zn_err *err) {
    mm_plan_shape(o, a, pl);
    uint64_t cap = o->mm_scratch_bytes > pl->a_off ? (o->mm_scratch_bytes - pl->a_off) / pl->unit_bytes : 0;
    if (!a->ids && cap > bm) cap -= cap % bm; /* whole row tiles per chunk */
    if (!cap)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: GEMM scratch of %llu bytes too small for %u x %u x %u",
                       (unsigned long long)o->mm_scratch_bytes, a->nrows, a->ncols, a->n_tok);
    pl->n_chunks = (uint32_t)((pl->units + cap - 1) / cap);
    pl->per_chunk = (pl->units + pl->n_chunks - 1) / pl->n_chunks;
    if (!a->ids && pl->per_chunk % bm && pl->per_chunk > bm) pl->per_chunk += bm - pl->per_chunk % bm; /* still <= cap */
    pl->n_chunks = (pl->units + pl->per_chunk - 1) / pl->per_chunk;
    return ZN_OK;
}

static zn_status mm_f16(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    if (a->xmode == VKX_RMSNORM) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: tiled matmul with a fused RMS norm");
    if (a->ids && (!a->n_expert || a->n_expert > ZN_MAX_EXPERTS || a->n_slots > ZN_MAX_EXPERTS_USED))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: grouped GEMM over %u experts, %u slots", a->n_expert, a->n_slots);
    mm_plan pl;
    const vkpipe *pp = NULL, *pg = NULL, *pb = NULL;
    /* grouped: tokens per expert as if the pairs spread evenly */
    const uint32_t toks = a->ids ? (a->n_tok * a->n_slots + a->n_expert - 1) / a->n_expert : a->n_tok;
    const uint32_t groups = a->ids ? a->n_expert : 1;
    const uint32_t ci = mmf_cfg(o, a->nrows, toks, groups);
    /* on NV coopmat2 when the device has it (same operands and push
     * constants); should the driver refuse that pipeline, the KHR kernel
     * from then on (test_vk_ops checks every config is built) */
    bool cm2 = o->mm_cm2 && o->coopmat && (!a->ids || o->t.mm_cm2_moe);
    const uint32_t c2 = cm2 ? cm2_cfg(o, a->nrows, toks, a->ncols, groups) : 0;
    if (cm2 && get_pipe_v(o, a->ids ? VKO_MMF_CM2_MOE : VKO_MMF_CM2, ZN_TYPE_F32, c2, &pg, err)) o->mm_cm2 = cm2 = false;
    const uint32_t bm = cm2 ? zn_vk_cm2_cfgs[c2].bm : zn_vk_mm_cfgs[ci].bm;
    const uint32_t bn = cm2 ? zn_vk_cm2_cfgs[c2].bn : zn_vk_mm_cfgs[ci].bn;
    zn_status st = mm_plan_for(o, a, bm, &pl, err);
    if (!st) st = get_pipe(o, VKO_MM_PREP, a->type, &pp, err);
    if (!st && !cm2) st = get_pipe_v(o, o->coopmat ? VKO_MMF : VKO_MMF_EMU, ZN_TYPE_F32, ci, &pg, err);
    if (!st && a->ids) st = get_pipe(o, VKO_MOE_BUCKET, ZN_TYPE_F32, &pb, err);
    if (st) return st;
    const VkDeviceAddress sb = o->mm_scratch, sx = sb + pl.b_off, sa = sb + pl.a_off;
    const uint32_t steps = pl.kp / 32;
    /* x as the previous call converted it (x_reuse: same rows, unchanged;
     * grouped: the same routing too, and its bucket is still in place) */
    const struct vkop_mmx_key key = {a->x, sx, a->ids, a->ncols, pl.kp, pl.xrows, pl.xs,
                                     a->x_stride, a->x_slot_stride, a->n_expert, 0};
    _Static_assert(sizeof key == 56, "vkop_mmx_key has padding");
    const bool have_x = a->x_reuse && a->xmode == VKX_PLAIN && !memcmp(&key, &o->mmx_last, sizeof key);
    o->mmx_last = key;
    if (a->xmode != VKX_PLAIN) o->mmx_last.x = 0; /* not x itself: nothing to reuse */
    vkcmd_barrier(c); /* the previous GEMM may still read the scratch */
    if (a->ids && !have_x) {
        struct { uint64_t route, bucket; uint32_t n_tok, n_slots, ids_stride, n_expert; } bp = {
            a->ids, sb, a->n_tok, a->n_slots, a->ids_stride, a->n_expert};
        vkcmd_dispatch(c, pb, &bp, sizeof bp, 1, 1, 1, name);
        vkcmd_barrier(c);
    }
    for (uint32_t ch = 0; ch < pl.n_chunks; ch++) {
        const uint32_t u0 = ch * pl.per_chunk, nu = pl.units - u0 < pl.per_chunk ? pl.units - u0 : pl.per_chunk;
        const uint32_t rows = a->ids ? a->nrows : nu; /* rows per expert / of this chunk */
        const uint64_t r0 = a->ids ? 0 : u0;      /* dense: the chunk's first row */
        if (ch) vkcmd_barrier(c);
        const bool swiglu = a->xmode == VKX_SWIGLU;
        struct {
            uint64_t w, x, da, db, bucket, aux;
            uint32_t row_bytes, expert_bytes, nrows, n_a, n_b, ncols, kp, xs, x_stride, x_slot_stride, e0;
            uint32_t wg_a, n_expert, flags;
        } pp_pc = {a->w + (a->ids ? (uint64_t)u0 * a->expert_bytes : r0 * a->row_bytes), a->x, sa, sx,
                   a->ids ? sb : 0, swiglu ? a->aux : 0, a->row_bytes, (uint32_t)a->expert_bytes, rows,
                   nu * (a->ids ? a->nrows : 1) * steps, ch || have_x ? 0 : pl.xrows * steps, a->ncols, pl.kp, pl.xs,
                   a->x_stride, a->x_slot_stride, u0, 0, a->n_expert,
                   (a->x % 16 == 0 && (!swiglu || a->aux % 16 == 0) && a->x_stride % 4 == 0 && a->x_slot_stride % 4 == 0)
                       | (swiglu ? 2u : 0u)};
        _Static_assert(sizeof pp_pc <= ZN_VK_PUSH_MAX, "push constants");
        pp_pc.wg_a = (pp_pc.n_a + MM_PREP_WG - 1) / MM_PREP_WG;
        uint32_t gx, gy;
        grid2(o, pp_pc.wg_a + (pp_pc.n_b + MM_PREP_WG - 1) / MM_PREP_WG, &gx, &gy);
        vkcmd_dispatch(c, pp, &pp_pc, sizeof pp_pc, gx, gy, 1, name);
        vkcmd_barrier(c);
        struct {
            uint64_t a, b, y, bias, scale, res, bucket, group;
            uint32_t kp, nrows, n_tok, n_slots, y_stride, y_slot_stride, e0, n_expert, r_base, flags;
        } g = {sa, sx, a->y + 4 * r0, a->bias ? a->bias + 4 * r0 : 0, a->scale, a->res ? a->res + 4 * r0 : 0,
               a->ids ? sb : 0, a->group, pl.kp, rows, a->n_tok, a->n_slots ? a->n_slots : 1, a->y_stride,
               a->y_slot_stride, u0, a->n_expert, (uint32_t)r0, a->bias_first ? 1u : 0u};
        _Static_assert(sizeof g <= ZN_VK_PUSH_MAX, "push constants");
        vkcmd_dispatch(c, pg, &g, sizeof g, (rows + bm - 1) / bm, (a->n_tok + bn - 1) / bn, a->ids ? nu : 1, name);
    }
    return ZN_OK;
}

bool vkops_gemm_fuses_swiglu(const vkops *o, zn_type t) { return f16_path(o, t); }

bool vkops_group_ok(const vkops *o, zn_type t, uint32_t n_tok) {
    return vkops_matvec_for(o, t, n_tok, false) || f16_path(o, t);
}

zn_status vkop_matmat(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    o->xq_last.q = 0;
    zn_status st = mm_check(a, err);
    if (st) return st;
    if (f16_path(o, a->type)) return mm_f16(o, c, a, name, err);
    if (a->ids) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: tiled matmul with expert ids");
    if (a->xmode != VKX_PLAIN || a->group)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: tiled matmul with a fused x or a group");
    /* f32 weights stay on the exact f32 kernel: f16 operands would cost
     * their precision */
    const bool cm = o->coopmat && a->type != ZN_TYPE_F32;
    st = get_pipe(o, cm ? VKO_MATMUL_CM : VKO_MATMUL, a->type, &p, err);
    if (st) return st;
    mm_push pc = mm_fill(a);
    const uint32_t tile = cm ? 128 : 64;
    vkcmd_dispatch(c, p, &pc, sizeof pc, (a->nrows + tile - 1) / tile, (a->n_tok + tile - 1) / tile, 1, name);
    return ZN_OK;
}

bool vkops_matvec_for(const vkops *o, zn_type t, uint32_t n_tok, bool experts) {
    if (experts) return !f16_path(o, t) || n_tok < o->t.moe_min_tok;
    return n_tok < o->t.mm_min_tok;
}

/* Below t.mm_min_rows rows a tiled mat-mat has a single row tile, a
 * handful of workgroups for the whole GPU (the MoE routers and shared-expert
 * gates, the delta rule's alpha/beta: 0.2 ms each at 512 tokens where it was
 * measured); the mat-vec kernel re-reads the small matrix per token from
 * cache instead. */
zn_status vkop_matmul(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    if (vkops_matvec_for(o, a->type, a->n_tok, a->ids != 0) || (!a->ids && a->nrows < o->t.mm_min_rows))
        return vkop_matvec(o, c, a, name, err);
    return vkop_matmat(o, c, a, name, err);
}

/* Dispatches one workgroup per item over a 2-D grid. */
static void dispatch_items(vkops *o, vkcmd *c, const vkpipe *p, const void *pc, uint32_t size, uint32_t n_items,
                           const char *name) {
    uint32_t gx, gy;
    grid2(o, n_items, &gx, &gy);
    vkcmd_dispatch(c, p, pc, size, gx, gy, 1, name);
}

zn_status vkop_embed(vkops *o, vkcmd *c, zn_type t, VkDeviceAddress w, uint32_t row_bytes, uint32_t ncols,
                     VkDeviceAddress tokens, uint32_t n_tok, VkDeviceAddress dst, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_EMBED, t, &p, err);
    if (st) return st;
    struct { uint64_t w, tokens, dst; uint32_t ncols, row_bytes, n_tok; } pc = {w, tokens, dst, ncols, row_bytes, n_tok};
    dispatch_items(o, c, p, &pc, sizeof pc, n_tok, "embed");
    return ZN_OK;
}

zn_status vkop_norm(vkops *o, vkcmd *c, vknorm_mode mode, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                    VkDeviceAddress z, uint32_t group, uint32_t n_groups, float eps, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_NORM, ZN_TYPE_F32, &p, err);
    if (st) return st;
    struct { uint64_t x, y, w, z; uint32_t group, n_groups, mode; float eps; } pc = {x, y, w, z, group, n_groups, mode, eps};
    dispatch_items(o, c, p, &pc, sizeof pc, n_groups, name);
    return ZN_OK;
}

zn_status vkop_rope_run(vkops *o, vkcmd *c, const vkop_rope *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_ROPE, ZN_TYPE_F32, &p, err);
    if (st) return st;
    if (a->n_rot > a->head_dim || a->n_rot % 2) return zn_errf(err, ZN_ERR_ARG, "vulkan: rope n_rot %u", a->n_rot);
    if (a->kc && a->row_stride != a->n_heads * a->head_dim)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: rope into the cache needs packed heads");
    if (a->vc && (!a->n_heads || a->vdim % a->n_heads)) return zn_errf(err, ZN_ERR_ARG, "vulkan: V rows of %u", a->vdim);
    struct {
        uint64_t x, src, ff, nw, kc, v, vc, step;
        uint32_t n_tok, n_heads, head_dim, n_rot, row_stride, mode, n_past, sec[4], vdim;
        float theta_scale, freq_scale, eps;
    } pc = {a->x, a->src ? a->src : a->x, a->ff, a->nw, a->kc, a->v, a->vc, a->step, a->n_tok, a->n_heads, a->head_dim, a->n_rot,
            a->row_stride, a->mode, a->n_past,
            {(uint32_t)a->sections[0], (uint32_t)a->sections[1], (uint32_t)a->sections[2], (uint32_t)a->sections[3]},
            a->vdim,
            /* computed here with the C library's powf, as ggml does */
            powf(a->freq_base, -2.0f / (float)a->n_rot), a->freq_scale, a->eps};
    _Static_assert(sizeof pc <= ZN_VK_PUSH_MAX, "push constants");
    if (a->mode == 2 && !(pc.sec[0] + pc.sec[1] + pc.sec[2] + pc.sec[3]))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: IMRoPE without sections");
    dispatch_items(o, c, p, &pc, sizeof pc, a->n_tok * a->n_heads, name);
    return ZN_OK;
}

zn_status vkop_kv_store(vkops *o, vkcmd *c, VkDeviceAddress k, VkDeviceAddress v, VkDeviceAddress ck,
                        VkDeviceAddress cv, uint32_t n_tok, uint32_t kdim, uint32_t vdim, uint32_t n_past,
                        VkDeviceAddress step, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_KV_STORE, ZN_TYPE_F32, &p, err);
    if (st) return st;
    struct { uint64_t k, v, ck, cv, step; uint32_t n_tok, kdim, vdim, n_past; } pc = {k, v, ck, cv, step, n_tok, kdim, vdim, n_past};
    dispatch_items(o, c, p, &pc, sizeof pc, n_tok, name);
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
    return s;
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
    uint64_t q, ck, cv, dst, part, step;
    uint32_t n_tok, n_past, n_head, n_head_kv, hd_k, hd_v, chunk, n_split;
    float scale;
} attn_push;

/* One split: every key (UINT32_MAX); more: attn_chunk keys each, or (0,
 * with attn_dec) ceil(keys / n_split), derived by the kernel. */
static attn_push attn_pc(const vkops *o, const vkop_attn *a, uint32_t n_split) {
    const uint32_t chunk = n_split == 1 ? UINT32_MAX : o->attn_dec ? 0 : o->t.attn_chunk;
    return (attn_push){a->q, a->ck, a->cv, a->dst, n_split > 1 ? a->part : 0, a->step, a->n_tok, a->n_past,
                       a->n_head, a->n_head_kv, a->hd_k, a->hd_v, chunk, n_split, a->scale};
}

/* attn_dec.comp's pipeline for this call: the kind by head dim, the slot
 * log2 of its query rows rounded up to a power of two; false where it does
 * not apply. */
static bool attn_dec_pipe(const vkops *o, const vkop_attn *a, vkop_kind *kind, uint32_t *slot) {
    const uint32_t rows = a->n_tok * (a->n_head / a->n_head_kv), hd = a->hd_k;
    /* more tokens go unsplit: attn.comp's workgroup per (head, token) then
     * keeps more of the GPU busy than one per KV head */
    if (!o->attn_dec || a->n_tok > ZN_VK_ATTN_SPLIT_TOK || rows > ZN_VK_ATTN_DEC_MAX_ROWS || hd != a->hd_v ||
        (hd != 64 && hd != 128 && hd != 256) || (a->ck | a->cv) % 16)
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
    const vkpipe *p = NULL, *pm = NULL;
    const bool fa = a->n_tok >= o->t.fa_min_tok && a->hd_k == a->hd_v && a->hd_k >= 64 && a->hd_k <= 256 &&
                    !(a->hd_k & (a->hd_k - 1));
    /* on matrix products (or their emulation) where a tile config fits and
     * the rows are 16-byte aligned */
    const vkop_kind fk = !o->fa_cm ? VKO_ATTN_FA : o->coopmat ? VKO_ATTN_FA_CM : o->mm_emulate ? VKO_ATTN_FA_EMU : VKO_ATTN_FA;
    const uint32_t ci = fa && fk != VKO_ATTN_FA ? vkops_fa_cfg_for(o, a->hd_k) : ZN_VK_MM_AUTO;
    const uint32_t G = a->n_head / a->n_head_kv;
    if (ci != ZN_VK_MM_AUTO && !((a->q | a->ck | a->cv) % 16)) {
        const uint32_t nb = (uint32_t)(((uint64_t)a->n_tok * G + zn_vk_fa_cfgs[ci].br - 1) / zn_vk_fa_cfgs[ci].br);
        /* should the driver refuse that pipeline, the scalar kernel from
         * then on (the op tests check every config is built) */
        zn_err e2 = {0};
        if (nb <= 65535 && !get_pipe_v(o, fk, ZN_TYPE_F32, ci, &p, &e2)) {
            attn_push pc = attn_pc(o, a, 1);
            vkcmd_dispatch(c, p, &pc, sizeof pc, nb, a->n_head_kv, 1, name);
            return ZN_OK;
        }
        if (e2.msg[0]) {
            snprintf(o->fa_err, sizeof o->fa_err, "%s", e2.msg);
            o->fa_cm = false;
        }
    }
    if (fa) {
        zn_status st = get_pipe_v(o, VKO_ATTN_FA, ZN_TYPE_F32, a->hd_k, &p, err);
        if (st) return st;
        attn_push pc = attn_pc(o, a, 1);
        vkcmd_dispatch(c, p, &pc, sizeof pc, a->n_head, (a->n_tok + ATTN_FA_ROWS - 1) / ATTN_FA_ROWS, 1, name);
        return ZN_OK;
    }
    vkop_kind dk;
    uint32_t ds;
    uint32_t n_split = vkop_attn_splits(o, a->n_tok, a->n_past + a->n_tok);
    const bool dec = a->n_past + a->n_tok > o->t.attn_dec_min && attn_dec_pipe(o, a, &dk, &ds);
    zn_status st = dec ? get_pipe_v(o, dk, ZN_TYPE_F32, ds, &p, err) : get_pipe(o, VKO_ATTN, ZN_TYPE_F32, &p, err);
    if (!st) st = get_pipe(o, VKO_ATTN_MERGE, ZN_TYPE_F32, &pm, err);
    if (st) return st;
    if (n_split > 1 && !a->part) return zn_errf(err, ZN_ERR_ARG, "vulkan: attention needs split scratch");
    attn_push pc = attn_pc(o, a, n_split);
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

zn_status vkop_eltwise(vkops *o, vkcmd *c, const vkop_elt *e, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_ELTWISE, ZN_TYPE_F32, &p, err);
    if (st) return st;
    if (!e->cols || e->n % e->cols) return zn_errf(err, ZN_ERR_ARG, "vulkan: eltwise %u elements in rows of %u", e->n, e->cols);
    if (e->mode == VKELT_COPY_COLS && (!e->k || e->cols % e->k))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: copy_cols of width %u into rows of %u", e->k, e->cols);
    struct { uint64_t a, b, dst, route; uint32_t n, cols, b_cols, k, mode, aux, aux2; } pc = {
        e->a, e->b, e->dst, e->route, e->n, e->cols, e->b_cols, e->k, e->mode, e->aux, e->aux2};
    dispatch_items(o, c, p, &pc, sizeof pc, (e->n + ELT_WG - 1) / ELT_WG, name);
    return ZN_OK;
}

zn_status vkop_moe_route(vkops *o, vkcmd *c, VkDeviceAddress logits, VkDeviceAddress dst, uint32_t n_tok,
                         uint32_t n_expert, uint32_t k, bool norm, float wscale, const char *name, zn_err *err) {
    if (n_expert > ZN_MAX_EXPERTS || k > ZN_MAX_EXPERTS_USED || k > n_expert || !k)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: moe route %u of %u experts", k, n_expert);
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_MOE_ROUTE, ZN_TYPE_F32, &p, err);
    if (st) return st;
    struct { uint64_t logits, dst; uint32_t n_tok, n_expert, k, norm; float wscale; } pc = {logits, dst, n_tok, n_expert, k, norm, wscale};
    dispatch_items(o, c, p, &pc, sizeof pc, n_tok, name);
    return ZN_OK;
}

zn_status vkop_argmax(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress dst, uint32_t n_rows, uint32_t n,
                      zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_ARGMAX, ZN_TYPE_F32, &p, err);
    if (st) return st;
    struct { uint64_t x, dst; uint32_t n_rows, n; } pc = {x, dst, n_rows, n};
    vkcmd_dispatch(c, p, &pc, sizeof pc, n_rows, 1, 1, "argmax");
    return ZN_OK;
}

zn_status vkop_conv1d(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                      VkDeviceAddress state, uint32_t n_tok, uint32_t n_ch, uint32_t ld, uint32_t kernel,
                      const char *name, zn_err *err) {
    if (kernel < 1 || kernel > ZN_SSM_MAX_CONV)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: conv kernel %u (1..%d)", kernel, ZN_SSM_MAX_CONV);
    const vkpipe *p = NULL;
    zn_status st = get_pipe(o, VKO_CONV1D, ZN_TYPE_F32, &p, err);
    if (st) return st;
    struct { uint64_t x, y, w, state; uint32_t n_tok, n_ch, ld, kernel; } pc = {x, y, w, state, n_tok, n_ch, ld, kernel};
    /* conv1d.comp: workgroups of small_wg channels x 16 tokens */
    vkcmd_dispatch(c, p, &pc, sizeof pc, (n_ch + o->t.small_wg - 1) / o->t.small_wg, (n_tok + 15) / 16, 1, name);
    return ZN_OK;
}

zn_status vkop_gdn_run(vkops *o, vkcmd *c, const vkop_gdn *a, const char *name, zn_err *err) {
    if (!a->h_k || a->h_v % a->h_k) return zn_errf(err, ZN_ERR_ARG, "vulkan: %u value heads / %u key heads", a->h_v, a->h_k);
    const vkpipe *p = NULL;
    zn_status st = get_pipe_v(o, VKO_GDN, ZN_TYPE_F32, a->d_k, &p, err);
    if (st) return st;
    struct {
        uint64_t q, k, v, g, beta, state, dst, dt_bias, a;
        uint32_t n_tok, h_k, h_v, d_v, ld_qk, ld_v, ld_o, ld_g, gate_raw, l2;
        float eps;
    } pc = {a->q, a->k, a->v, a->g, a->beta, a->state, a->dst, a->dt_bias, a->a, a->n_tok, a->h_k, a->h_v, a->d_v,
            a->ld_qk, a->ld_v, a->ld_o, a->ld_g, a->gate_raw, a->l2, a->eps};
    _Static_assert(sizeof pc <= ZN_VK_PUSH_MAX, "push constants");
    /* gdn.comp: 4 subgroups per workgroup, subgroup / gdn_lanes rows each */
    const uint32_t rows_wg = 4 * (o->d->info.subgroup_size / gdn_lanes(o));
    dispatch_items(o, c, p, &pc, sizeof pc, (a->h_v * a->d_v + rows_wg - 1) / rows_wg, name);
    return ZN_OK;
}
