/* The GEMMs (vk_mm.h): the f16 path (mm_prep.comp converts W and x into
 * scratch, mmf.glsl / mmf_cm2.comp multiply on cooperative matrices or
 * their emulation; moe_bucket.comp groups expert rows), the tiled kernels
 * (matmul.comp, matmul_cm.comp), their tile configurations, and the kernel
 * choice between them and the mat-vec. */
#include <string.h>

#include "vk_ops_impl.h"

#define MM_PREP_WG 256 /* mm_prep.comp's workgroup: a multiple of 8 steps */

const vkmm_cfg zn_vk_mm_cfgs[ZN_VK_MM_NCFG] = {
    {256, 128, 128, 64, 32}, {256, 128, 128, 32, 64}, {128, 128, 128, 64, 64}, {256, 64, 128, 32, 32},
    {128, 64, 64, 32, 32},   {256, 128, 64, 32, 32},  {128, 64, 128, 32, 64},
    {256, 128, 256, 64, 64}, /* only where shared memory exceeds 48 KiB */
};

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
 * k steps per loop iteration); vkops_cm2_cfg() picks 1, 2, 3 or 5, and 4
 * for batched decode steps whose A tiles are dequantised in the GEMM; 0 is
 * for sweeps (tuning keys cm2_cfg, cm2_moe_cfg). Every accumulator holds at
 * least 2,048 values (8 pieces of 16 x 16 for the workgroup's 8 warps,
 * ZN_VK_CM2_MIN_ACC) and is a multiple of ZN_VK_CM2_GRAIN both ways,
 * mmf_cm2.comp's half tiles too. The grouped op tests left outputs
 * unwritten on an H200 in 32 x 32 and 64 x 32 (whose half tiles were
 * 32 x 16 and 64 x 16) and 32 x 64 (a 32 x 32 half tile,
 * bench/results/2026-12-07-s36.md), and on an H100 in 128 x 32 (a 128 x 16
 * half, 2026-12-07-s37.md), while 64 x 64 (64 x 32 halves), 128 x 64 and
 * up passed. The half tiles of 16 tokens broke the grain the device check
 * (vk_device.c) promises, below the granularity the driver may report;
 * a 32 x 32 accumulator keeps it and failed all the same, hence the size
 * limit, found by test rather than documented. llama.cpp's coopmat2 tiles
 * are no smaller either (32 x 64 dense, 128 x 64 for its MoE GEMM). */
const vkcm2_cfg zn_vk_cm2_cfgs[ZN_VK_CM2_NCFG] = {
    {128, 256, 64, 4}, {128, 128, 64, 4}, {64, 128, 64, 4}, {64, 64, 64, 4}, {32, 64, 64, 4}, {128, 64, 64, 4},
};

/* The cm2 tile for `groups` products of rows x toks x k: t.cm2_cfg when
 * set; else 128 x 128 for long k (t.cm2_long_k) where it gives about a
 * workgroup per SM (t.cm2_min_wgs), 64 x 128, or 64 x 64 where that gives
 * too few (vk_tune.c has the measurements: 8B q/k/v 130 TFLOP/s against 103
 * for 128 x 128, 2B gate+up 121 against 94, 8B attn_k, 1024 rows, 114 on
 * 64 x 64 against 76). 128 x 256 (f32 accumulators: twice the registers)
 * was 1.3-1.8x slower than 128 x 128 everywhere. */
uint32_t vkops_cm2_cfg(const vkops *o, uint32_t rows, uint32_t toks, uint32_t k, uint32_t groups, bool direct) {
    if (o->t.cm2_cfg < ZN_VK_CM2_NCFG) return o->t.cm2_cfg;
    /* Grouped: 128 x 64 up to 64 tokens an expert, whichever way A comes:
     * the 35B-A3B's pp512 (16 an expert) 4,203 tok/s on 64 x 64 -> 5,257 on
     * an H100 (bench/results/2026-12-07-s37.md; 64 x 32 before that, whose
     * speed, 3,467 -> 4,390 tok/s in s27, is void: see the table). */
    if (groups > 1) return o->t.cm2_moe_cfg < ZN_VK_CM2_NCFG ? o->t.cm2_moe_cfg : toks <= 64 ? 5 : 2;
    /* Batched decode with the A tiles dequantised in the GEMM (tuning
     * mm_prep_tok, moe_prep_tok; a token tile or less, experts a few tokens each): the
     * weights are read once whatever the tile, so the tokens get the
     * narrowest tile that holds them and the rows 32 whatever their number
     * (the most workgroups). H200 (vk-matmul, 2026-12-05,
     * bench/results/2026-12-05-s23.md): an 8B's 24,576-row gate+up at 32
     * tokens took 312 us in 32 x 32 tiles against 389 in 64 x 32. H100,
     * 2026-12-06, with B through shared memory (mmf_cm2.comp AQS): 8B at
     * 64 sequences 2,220 tok/s in 32 x 64 everywhere against 2,050 with
     * 64 x 64 for the matrices of 12,288 rows and more; at 32, 32 x 32
     * 1,452 against 32 x 64 1,385 (bench/results/2026-12-06-s26.md), a
     * 32 x 32 tile since found to leave outputs unwritten (see the table):
     * 32 x 64 up to 64 tokens. The dequantised copy keeps the choice below,
     * measured on the H200. */
    if (direct && toks <= 64) return 4;
    const uint64_t wg128 = (uint64_t)((rows + 127) / 128) * ((toks + 127) / 128) * groups;
    const uint64_t wg64 = (uint64_t)((rows + 63) / 64) * ((toks + 127) / 128) * groups;
    if (groups == 1 && k >= o->t.cm2_long_k && wg128 >= o->t.cm2_min_wgs) return 1;
    return wg64 >= o->t.cm2_min_wgs ? 2 : 3;
}

/* ---- specialisation constants ---- */

typedef struct spec_matmul { uint32_t wg, type, split; } spec_matmul;                /* matmul.comp, matmul_cm.comp */
typedef struct spec_wg_type { uint32_t wg, type; } spec_wg_type;                     /* mm_prep.comp */
typedef struct spec_wg { uint32_t wg; } spec_wg;                                     /* moe_bucket.comp, mm_reduce.comp */
typedef struct spec_mmf { uint32_t wg, bm, bn, wm, wn, nst, aq, type, split; } spec_mmf;              /* mmf.glsl */
typedef struct spec_mmf_cm2 { uint32_t wg, bm, bn, bk, unr, grouped, aq, type, split, min_acc, grain; } spec_mmf_cm2; /* mmf_cm2.comp */

/* The split-K kinds (mm_split). */
static bool kind_split(vkop_kind k) { return k == VKO_MMQ_SPLIT || k == VKO_MMQ_EMU_SPLIT || k == VKO_MMQ_CM2_SPLIT; }

/* The kinds whose A operand is the weights (dq8h in the tile loads). */
static bool kind_aq(vkop_kind k) {
    return k == VKO_MMQ || k == VKO_MMQ_EMU || k == VKO_MMQ_CM2 || k == VKO_MMQ_CM2_MOE || kind_split(k);
}

zn_status vkspec_matmul(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)o, (void)err;
    VKSPEC(out, spec_matmul, {.wg = 256, .type = (uint32_t)v.type, .split = k == VKO_MATMUL_SPLIT});
    return ZN_OK;
}

zn_status vkspec_mm_prep(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)o, (void)k, (void)err;
    VKSPEC(out, spec_wg_type, {.wg = MM_PREP_WG, .type = (uint32_t)v.type});
    return ZN_OK;
}

zn_status vkspec_wg256(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)o, (void)k, (void)v, (void)err;
    VKSPEC(out, spec_wg, {.wg = 256});
    return ZN_OK;
}

zn_status vkspec_mmf_cm2(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)o, (void)err;
    const vkcm2_cfg *f = &zn_vk_cm2_cfgs[v.cfg];
    const bool aq = kind_aq(k);
    VKSPEC(out, spec_mmf_cm2, {.wg = ZN_VK_CM2_WG, .bm = f->bm, .bn = f->bn, .bk = f->bk, .unr = f->unroll,
                               .grouped = k == VKO_MMF_CM2_MOE || k == VKO_MMQ_CM2_MOE, .aq = aq,
                               .type = aq ? (uint32_t)v.type : (uint32_t)ZN_TYPE_F16, .split = kind_split(k),
                               .min_acc = ZN_VK_CM2_MIN_ACC, .grain = ZN_VK_CM2_GRAIN});
    return ZN_OK;
}

/* mmf.glsl's specialisation: the config, and as many 16x16 f32 epilogue
 * staging tiles as fit beside the double-buffered operand tiles. */
zn_status vkspec_mmf(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k;
    const vkmm_cfg *f = &zn_vk_mm_cfgs[v.cfg];
    const uint32_t nsg = f->wg / 32, tiles = 2 * (f->bm + f->bn) * MMF_LDV * 4;
    uint32_t nst = o->d->info.max_shared > tiles ? (o->d->info.max_shared - tiles) / 1024 : 0;
    if (nst > nsg) nst = nsg;
    if (!nst) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: GEMM tile %ux%u needs more than %u bytes of shared memory",
                             f->bm, f->bn, o->d->info.max_shared);
    const bool aq = kind_aq(k);
    VKSPEC(out, spec_mmf, {.wg = f->wg, .bm = f->bm, .bn = f->bn, .wm = f->wm, .wn = f->wn, .nst = nst, .aq = aq,
                           .type = aq ? (uint32_t)v.type : (uint32_t)ZN_TYPE_F16, .split = kind_split(k)});
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

/* The most splits a padded k of kp allows (mm_split): ranges of at least
 * t.mm_split_k, at most ZN_VK_MM_SPLIT_MAX of them. */
static uint64_t split_cap(const vkops *o, uint32_t kp) {
    const uint64_t n = kp / o->t.mm_split_k;
    return n < ZN_VK_MM_SPLIT_MAX ? n : ZN_VK_MM_SPLIT_MAX;
}

/* Split-K partials at most (mm_split): the splits its k allows of every
 * token count that dequantises in the GEMM (below t.mm_prep_tok). */
static uint64_t split_bytes(const vkops *o, const vkop_mm *a, const mm_plan *pl) {
    if (a->ids || o->t.mm_split_wgs == ZN_VK_OFF) return 0;
    const uint64_t tok = a->n_tok < o->t.mm_prep_tok ? a->n_tok : o->t.mm_prep_tok - 1, n = split_cap(o, pl->kp);
    return n < 2 ? 0 : n * tok * a->nrows * 4;
}

uint64_t vkops_mm_scratch_bytes(const vkops *o, const vkop_mm *a, uint64_t a_cap) {
    mm_plan pl;
    mm_plan_shape(o, a, &pl);
    const uint64_t tile = a->ids ? 1 : 128 /* the largest BM */, min_units = tile < pl.units ? tile : pl.units;
    uint64_t units = a_cap / pl.unit_bytes;
    if (units < min_units) units = min_units;
    if (units > pl.units) units = pl.units;
    const uint64_t a_bytes = align256(units * pl.unit_bytes), part = align256(split_bytes(o, a, &pl));
    return pl.a_off + (a_bytes > part ? a_bytes : part);
}

static zn_status mm_plan_for(const vkops *o, const vkop_mm *a, uint32_t bm, bool direct, mm_plan *pl, zn_err *err) {
    mm_plan_shape(o, a, pl);
    if (direct) { /* the weights stay where they are: the scratch holds x (and the bucket) only */
        if (pl->a_off > o->mm_scratch_bytes)
            return zn_errf(err, ZN_ERR_ARG, "vulkan: GEMM scratch of %llu bytes too small for %u tokens of %u",
                           (unsigned long long)o->mm_scratch_bytes, pl->xrows, a->ncols);
        pl->n_chunks = 1, pl->per_chunk = pl->units;
        return ZN_OK;
    }
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

/* Does the f16 GEMM of a dequantise its weights tile by tile as it loads
 * them (the A operand is the weights), rather than multiply a dequantised
 * copy that mm_prep.comp writes first? Below t.mm_prep_tok tokens; F32
 * weights never come here. The copy pays when each weight is multiplied
 * by many token tiles; a grouped GEMM's expert sees only its own tokens
 * (a prompt of 512 on 256 experts, 8 each: 16), so it goes by the tokens
 * per expert (t.moe_prep_tok): below that its tiles are dequantised once
 * either way, and the copy only adds a write and a read of 2 bytes per
 * weight of every expert, used or not. */
static bool mm_direct_tok(const vkops *o, uint32_t n_tok) { return n_tok < o->t.mm_prep_tok; }
static uint32_t mm_expert_tok(const vkop_mm *a) { return (a->n_tok * a->n_slots + a->n_expert - 1) / a->n_expert; }
bool vkops_mm_direct(const vkops *o, const vkop_mm *a) {
    return a->ids ? mm_expert_tok(a) < o->t.moe_prep_tok : mm_direct_tok(o, a->n_tok);
}

/* The splits of k for a GEMM of wgs workgroups (fewer than
 * t.mm_split_wgs): enough for about that many, at most cap (k's ranges),
 * ZN_VK_MM_SPLIT_MAX and room (the partials the scratch holds); 1: none. */
static uint64_t split_count(const vkops *o, uint64_t wgs, uint64_t cap, uint64_t room) {
    uint64_t n = (o->t.mm_split_wgs + wgs - 1) / wgs;
    if (n > cap) n = cap;
    if (n > ZN_VK_MM_SPLIT_MAX) n = ZN_VK_MM_SPLIT_MAX;
    if (n > room) n = room;
    return n < 2 ? 1 : n;
}

/* Split-K (tuning mm_split_wgs, mm_split_k): a batched decode step's GEMM
 * has a workgroup per row tile (its tokens fit one tile), each walking all
 * of k, so a matrix of few row tiles leaves most of the GPU idle with long
 * serial loops (an 8B's ffn_down at 32 tokens: 128 workgroups, 12,288
 * deep). Split k into ranges of at least t.mm_split_k until there are
 * t.mm_split_wgs workgroups; each stores its partial tile in the scratch
 * after x, and mm_reduce.comp sums them and applies the epilogue. Returns
 * the splits (1: none) and *kspl, the k per split, whole k tiles of bk;
 * fewer where the partials would not fit. */
static uint32_t mm_split(const vkops *o, const vkop_mm *a, const mm_plan *pl, uint32_t bm, uint32_t bn, uint32_t bk,
                         uint32_t *kspl) {
    const uint64_t wgs = (uint64_t)((a->nrows + bm - 1) / bm) * ((a->n_tok + bn - 1) / bn);
    const uint64_t part = 4ull * a->n_tok * a->nrows; /* one split's partials */
    if (o->t.mm_split_wgs == ZN_VK_OFF || wgs >= o->t.mm_split_wgs || o->mm_scratch_bytes < pl->a_off) return 1;
    const uint64_t n = split_count(o, wgs, split_cap(o, pl->kp), (o->mm_scratch_bytes - pl->a_off) / part);
    if (n < 2) return 1;
    const uint32_t k = (uint32_t)((pl->kp + n - 1) / n + bk - 1) / bk * bk;
    *kspl = k;
    return (pl->kp + k - 1) / k;
}

/* The second half of a split-K GEMM: mm_reduce.comp sums the nsplit
 * partials at part (rows r0 .. r0 + rows of a) and applies a's epilogue. */
static void split_reduce(vkops *o, vkcmd *c, const vkpipe *pr, VkDeviceAddress part, const vkop_mm *a, uint32_t rows,
                         uint64_t r0, uint32_t nsplit, const char *name) {
    struct {
        uint64_t part, y, bias, scale, res, group;
        uint32_t nrows, n_tok, nsplit, y_stride, r_base, flags;
    } r = {part, a->y + 4 * r0, a->bias ? a->bias + 4 * r0 : 0, a->scale, a->res ? a->res + 4 * r0 : 0,
           a->group, rows, a->n_tok, nsplit, a->y_stride, (uint32_t)r0, a->bias_first ? 1u : 0u};
    _Static_assert(sizeof r <= ZN_VK_PUSH_MAX, "push constants");
    vkcmd_barrier(c);
    vkops_dispatch_items(o, c, pr, &r, sizeof r, (rows * a->n_tok + 255) / 256, name);
}

static zn_status mm_f16(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    if (a->ids && (!a->n_expert || a->n_expert > ZN_MAX_EXPERTS || a->n_slots > ZN_MAX_EXPERTS_USED))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: grouped GEMM over %u experts, %u slots", a->n_expert, a->n_slots);
    mm_plan pl;
    const vkpipe *pp = NULL, *pg = NULL, *pb = NULL, *pr = NULL;
    /* grouped: tokens per expert as if the pairs spread evenly */
    const uint32_t toks = a->ids ? mm_expert_tok(a) : a->n_tok;
    const uint32_t groups = a->ids ? a->n_expert : 1;
    const uint32_t ci = mmf_cfg(o, a->nrows, toks, groups);
    /* on NV coopmat2 when the device has it (same operands and push
     * constants); should the driver refuse that pipeline, the KHR kernel
     * from then on (test_vk_ops checks every config is built) */
    bool cm2 = o->mm_cm2 && o->coopmat && (!a->ids || o->t.mm_cm2_moe);
    const bool direct = vkops_mm_direct(o, a);
    const uint32_t c2 = cm2 ? vkops_cm2_cfg(o, a->nrows, toks, a->ncols, groups, direct) : 0;
    const vkop_kind kc2 = direct ? (a->ids ? VKO_MMQ_CM2_MOE : VKO_MMQ_CM2) : a->ids ? VKO_MMF_CM2_MOE : VKO_MMF_CM2;
    if (cm2 && vkops_pipe(o, kc2, (vkvar){.cfg = c2, .type = a->type}, &pg, err)) o->mm_cm2 = cm2 = false;
    const uint32_t bm = cm2 ? zn_vk_cm2_cfgs[c2].bm : zn_vk_mm_cfgs[ci].bm;
    const uint32_t bn = cm2 ? zn_vk_cm2_cfgs[c2].bn : zn_vk_mm_cfgs[ci].bn;
    zn_status st = mm_plan_for(o, a, bm, direct, &pl, err);
    if (!st) st = vkops_pipe(o, VKO_MM_PREP, (vkvar){.type = a->type}, &pp, err);
    const vkop_kind kf = direct ? (o->coopmat ? VKO_MMQ : VKO_MMQ_EMU) : o->coopmat ? VKO_MMF : VKO_MMF_EMU;
    if (!st && !cm2) st = vkops_pipe(o, kf, (vkvar){.cfg = ci, .type = a->type}, &pg, err);
    if (!st && a->ids) st = vkops_pipe(o, VKO_MOE_BUCKET, (vkvar){0}, &pb, err);
    uint32_t kspl = 0;
    const uint32_t nsplit = !st && direct && !a->ids ? mm_split(o, a, &pl, bm, bn, cm2 ? zn_vk_cm2_cfgs[c2].bk : 32, &kspl) : 1;
    if (!st && nsplit > 1) st = vkops_pipe(o, VKO_MM_REDUCE, (vkvar){0}, &pr, err);
    /* the split pipeline of the same kernel and config */
    if (!st && nsplit > 1)
        st = vkops_pipe(o, cm2 ? VKO_MMQ_CM2_SPLIT : o->coopmat ? VKO_MMQ_SPLIT : VKO_MMQ_EMU_SPLIT,
                        (vkvar){.cfg = cm2 ? c2 : ci, .type = a->type}, &pg, err);
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
        const bool swiglu = a->xmode == VKX_SWIGLU, norm = a->xmode == VKX_RMSNORM;
        struct {
            uint64_t w, x, da, db, bucket, aux;
            uint32_t row_bytes, expert_bytes, nrows, n_a, n_b, ncols, kp, xs, x_stride, x_slot_stride, e0;
            uint32_t wg_a, n_expert, flags;
            float eps;
        } pp_pc = {a->w + (a->ids ? (uint64_t)u0 * a->expert_bytes : r0 * a->row_bytes), a->x, sa, sx,
                   a->ids ? sb : 0, swiglu || norm ? a->aux : 0, a->row_bytes, (uint32_t)a->expert_bytes, rows,
                   direct ? 0 : nu * (a->ids ? a->nrows : 1) * steps, ch || have_x ? 0 : pl.xrows * steps, a->ncols, pl.kp, pl.xs,
                   a->x_stride, a->x_slot_stride, u0, 0, a->n_expert,
                   (a->x % 16 == 0 && (a->xmode == VKX_PLAIN || a->aux % 16 == 0) && a->x_stride % 4 == 0 &&
                    a->x_slot_stride % 4 == 0) | (swiglu ? 2u : 0u) | (norm ? 4u : 0u),
                   a->eps};
        _Static_assert(sizeof pp_pc <= ZN_VK_PUSH_MAX, "push constants");
        pp_pc.wg_a = (pp_pc.n_a + MM_PREP_WG - 1) / MM_PREP_WG;
        uint32_t gx, gy;
        if (pp_pc.n_a || pp_pc.n_b) { /* direct, with x converted by the previous call: nothing to prepare */
            /* B: a workgroup per row with a norm (mm_prep.comp norm_row), else per MM_PREP_WG steps */
            const uint32_t wg_b = norm ? pp_pc.n_b / steps : (pp_pc.n_b + MM_PREP_WG - 1) / MM_PREP_WG;
            vkops_grid2(o, pp_pc.wg_a + wg_b, &gx, &gy);
            vkcmd_dispatch(c, pp, &pp_pc, sizeof pp_pc, gx, gy, 1, name);
            vkcmd_barrier(c);
        }
        struct {
            uint64_t a, b, y, bias, scale, res, bucket, group;
            uint32_t kp, nrows, n_tok, n_slots, y_stride, y_slot_stride, e0, n_expert, r_base, flags;
            uint32_t row_bytes, expert_bytes, ncols, kspl;
        } g = {direct ? a->w : sa, sx, a->y + 4 * r0, a->bias ? a->bias + 4 * r0 : 0, a->scale,
               a->res ? a->res + 4 * r0 : 0, a->ids ? sb : 0, a->group, pl.kp, rows, a->n_tok,
               a->n_slots ? a->n_slots : 1, a->y_stride, a->y_slot_stride, u0, a->n_expert, (uint32_t)r0,
               a->bias_first ? 1u : 0u, a->row_bytes, (uint32_t)a->expert_bytes, a->ncols, 0};
        _Static_assert(sizeof g <= ZN_VK_PUSH_MAX, "push constants");
        if (nsplit > 1) { /* the partials go to the scratch after x; the epilogue to mm_reduce.comp */
            g.y = sa, g.bias = g.scale = g.res = g.group = 0, g.y_stride = rows, g.kspl = kspl;
        }
        vkcmd_dispatch(c, pg, &g, sizeof g, (rows + bm - 1) / bm, (a->n_tok + bn - 1) / bn, a->ids ? nu : nsplit, name);
        if (nsplit > 1) split_reduce(o, c, pr, sa, a, rows, r0, nsplit, name);
    }
    return ZN_OK;
}

#define MT_TILE 64 /* matmul.comp's rows and tokens per workgroup */
/* Split-K of the tiled kernel (matmul.comp SPLIT; tuning mt_split_k): its
 * workgroups walk all of k in serial steps of 32, each a load, two
 * barriers and the products, so a matrix of few tiles is that chain's
 * latency: an MoE router (256 f32 rows, 2,048 deep) at 512 tokens, 32
 * workgroups, took 230 us a layer on an H100 (9 % of the 35B-A3B's
 * pp512). Split k into ranges of at least t.mt_split_k until there are
 * about t.mm_split_wgs workgroups, at most ZN_VK_MM_SPLIT_MAX, the
 * partials in the GEMM scratch. Returns the splits (1: none) and *ks, the
 * k-steps of 32 per split. */
static uint32_t mt_split(const vkops *o, const vkop_mm *a, uint64_t scratch, uint32_t *ks) {
    const uint64_t wgs = (uint64_t)((a->nrows + MT_TILE - 1) / MT_TILE) * ((a->n_tok + MT_TILE - 1) / MT_TILE);
    const uint32_t steps = (a->ncols + 31) / 32;
    if (o->t.mt_split_k == ZN_VK_OFF || o->t.mm_split_wgs == ZN_VK_OFF || wgs >= o->t.mm_split_wgs) return 1;
    const uint64_t n = split_count(o, wgs, 32ull * steps / o->t.mt_split_k, scratch / (4ull * a->n_tok * a->nrows));
    if (n < 2) return 1;
    *ks = (uint32_t)((steps + n - 1) / n);
    return (steps + *ks - 1) / *ks;
}

uint64_t vkops_mt_split_bytes(const vkops *o, const vkop_mm *a) {
    uint32_t ks = 0;
    const uint32_t n = mt_split(o, a, UINT64_MAX, &ks);
    return n > 1 ? 4ull * n * a->n_tok * a->nrows : 0;
}

zn_status vkop_matmat(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    o->xq_last.q = 0;
    zn_status st = vkmm_check(a, err);
    if (st) return st;
    if (f16_path(o, a->type)) return mm_f16(o, c, a, name, err);
    if (a->ids) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: tiled matmul with expert ids");
    if (a->xmode != VKX_PLAIN || a->group)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: tiled matmul with a fused x or a group");
    /* f32 weights stay on the exact f32 kernel: f16 operands would cost
     * their precision */
    const bool cm = o->coopmat && a->type != ZN_TYPE_F32;
    const uint32_t tile = cm ? 128 : MT_TILE;
    uint32_t ks = 0;
    const uint32_t nsplit = cm || !o->mm_scratch ? 1 : mt_split(o, a, o->mm_scratch_bytes, &ks);
    const vkpipe *pr = NULL;
    st = vkops_pipe(o, cm ? VKO_MATMUL_CM : nsplit > 1 ? VKO_MATMUL_SPLIT : VKO_MATMUL, (vkvar){.type = a->type}, &p, err);
    if (!st && nsplit > 1) st = vkops_pipe(o, VKO_MM_REDUCE, (vkvar){0}, &pr, err);
    if (st) return st;
    mm_push pc = vkmm_push(a);
    if (nsplit > 1) { /* the partials go to the scratch, over whatever x an f16 GEMM left there */
        vkcmd_barrier(c); /* the previous GEMM may still read the scratch */
        o->mmx_last.x = 0;
        pc.aux = o->mm_scratch, pc.ids_stride = ks;
    }
    vkcmd_dispatch(c, p, &pc, sizeof pc, (a->nrows + tile - 1) / tile, (a->n_tok + tile - 1) / tile, nsplit, name);
    if (nsplit > 1) split_reduce(o, c, pr, o->mm_scratch, a, a->nrows, 0, nsplit, name);
    return ZN_OK;
}

/* Below t.mm_min_rows rows a tiled mat-mat has a single row tile, a
 * handful of workgroups for the whole GPU (the MoE routers and shared-expert
 * gates, the delta rule's alpha/beta: 0.2 ms each at 512 tokens where it was
 * measured); the mat-vec kernel re-reads the small matrix per token from
 * cache instead. */
vkmm_kernel vkops_mm_kernel(const vkops *o, zn_type t, uint32_t n_tok, uint32_t nrows, bool experts) {
    if (experts) return !f16_path(o, t) || n_tok < o->t.moe_min_tok ? VKMM_MATVEC : VKMM_GEMM;
    if (vkops_mmi_takes(o, t, n_tok)) return VKMM_MATVEC; /* ... on mmi8.comp */
    if (n_tok < o->t.mm_min_tok || nrows < o->t.mm_min_rows) return VKMM_MATVEC;
    return f16_path(o, t) ? VKMM_GEMM : VKMM_TILED;
}

bool vkops_mm_takes(const vkops *o, vkmm_kernel k, int xmode, bool group, uint32_t n_tok) {
    if (k == VKMM_MATVEC) return true;
    if (k == VKMM_GEMM) return xmode == VKX_PLAIN || xmode == VKX_SWIGLU || (xmode == VKX_RMSNORM && mm_direct_tok(o, n_tok));
    return xmode == VKX_PLAIN && !group;
}

zn_status vkop_matmul(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    if (vkops_mm_kernel(o, a->type, a->n_tok, a->nrows, a->ids != 0) == VKMM_MATVEC) return vkop_matvec(o, c, a, name, err);
    if (a->tail || a->route || a->gn_w)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: a MoE tail, routing or gated norm on the GEMM");
    return vkop_matmat(o, c, a, name, err);
}
