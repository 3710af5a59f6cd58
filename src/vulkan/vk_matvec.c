/* The mat-vec kernels (vk_mm.h): the float mat-vec (matvec.comp), the
 * integer one on int8-quantised x (quantx.comp + matvec_q.comp, or
 * matvec_q.comp quantising x itself), grouped and per expert; the matmul
 * push constants the GEMMs share. */
#include <stdio.h>
#include <string.h>

#include "vk_ops_impl.h"
#include "vk_quant.h"

/* matvec_q.comp's shared memory in bytes for xb blocks of 32 per x row,
 * nt rows (xs_q, xs_d, the gated norm's gsum: 44 bytes a block), the MoE
 * tail's ks slots' results (ys) and reduce.glsl's 128 bytes. */
static uint32_t mvq_shared(uint32_t xb, uint32_t nt, uint32_t ks, uint32_t sg, uint32_t nr) {
    return 44 * nt * xb + 28 + 4 * (ks * sg * nr + 1) + 128;
}

/* The fused integer mat-vec (matvec_q.comp with XB > 0) sized for x rows
 * of up to 4096 and 16384 columns (1.375 bytes each in shared memory: small
 * pipelines leave room for more workgroups per SM), and the largest the
 * device's shared memory holds (beside reduce.glsl's 128 bytes); with
 * t.mvt tokens per workgroup (the QTX kinds) that many rows, of up to 2048
 * columns, or as long as fit. */
uint32_t vkmm_mvx_cap(const vkops *o, vkop_kind k) {
    const bool mvt = k == VKO_MATVEC_QTX_S || k == VKO_MATVEC_QTX_L;
    const uint32_t sh = o->d->info.max_shared, rows = mvt && o->t.mvt ? o->t.mvt : 1;
    const uint32_t most = sh > 256 ? (sh - 256) / (44 * rows) * 32 : 0;
    if (k >= VKO_MATVEC_QXB_S && k <= VKO_MATVEC_QXB_L) k -= VKO_MATVEC_QXB_S - VKO_MATVEC_QX_S; /* big: the same */
    const uint32_t cap = k == VKO_MATVEC_QX_S    ? 4096
                         : k == VKO_MATVEC_QX_M  ? 16384
                         : k == VKO_MATVEC_QTX_S ? 2048
                         : k == VKO_MATVEC_QXK   ? ZN_VK_TAIL_COLS /* all the slots' rows */
                                                 : most;
    return cap < most ? cap : most;
}

/* Rows per subgroup of the float mat-vec kernel (vktune.mv_rows). */
static uint32_t mv_rows_for(const vkops *o, zn_type t) {
    const int ts = vktune_slot(t);
    return o->t.mv_rows[ts < 0 ? 0 : ts];
}

/* quantx.comp's workgroup. */
static uint32_t qx_wg(const vkops *o) { return o->t.qx_wg; }

/* The weight types of the integer mat-vec (matvec_q.comp). */
static bool is_quant(zn_type t) {
    return t == ZN_TYPE_Q4_0 || t == ZN_TYPE_Q8_0 || t == ZN_TYPE_Q4_K || t == ZN_TYPE_Q5_K || t == ZN_TYPE_Q6_K;
}

/* An integer mat-vec pipeline's configuration (its specialisation
 * constants, and what its dispatch needs): workgroup threads, rows per
 * subgroup, steps per loop iteration, workgroups per z layer (0: one per
 * row block), prefetched sectors per thread before x and per row block,
 * x capacity in shared memory in blocks of 32 (0: x from quantx.comp),
 * tokens per workgroup. Each kind's tuning (vk_tune.h): after quantx
 * mv_wg with mvq_* or, several tokens, mvt_*; quantising x itself mvx_t
 * (by matrix size) or mvt_t. */
typedef struct mvq_cfg { uint32_t wg, rows, unroll, wgs, pf, pn, xb, nt, ks, rt, gn, cv; } mvq_cfg;
#define MVQ_RT 1u /* vkvar.cfg of the QX / QXB / QTX kinds: the routing compiled in */
#define MVQ_GN 2u /* ... the gated norm */
#define MVQ_CV 4u /* ... a group's conv (all the integer kinds: the one feature quantx.comp's x may carry) */
static mvq_cfg mvq_cfg_for(const vkops *o, vkop_kind k, vkvar v) {
    const int ts = vktune_slot(v.type), i = ts < 0 ? 0 : ts;
    const vktune *tu = &o->t;
    /* the MoE tail: a subgroup per slot (v.cfg + 1 of them), one row block
     * per workgroup, no prefetching; rows and unroll as the small matrices' */
    if (k == VKO_MATVEC_QXK)
        return (mvq_cfg){(v.cfg + 1) * o->d->info.subgroup_size, tu->mvx_t[0].rows[i], tu->mvx_t[0].unroll[i], 0, 0, 0,
                         vkmm_mvx_cap(o, k) / 32, 1, v.cfg + 1, 0, 0, 0};
    const uint32_t cv = (v.cfg & MVQ_CV) != 0;
    if (k == VKO_MATVEC_Q)
        return (mvq_cfg){tu->mv_wg, tu->mvq_rows[i], tu->mvq_unroll[i], 0, 0, tu->mvq_pn, 0, 1, 0, 0, 0, cv};
    if (k == VKO_MATVEC_QT)
        return (mvq_cfg){tu->mv_wg, tu->mvt_t.rows[i], tu->mvt_t.unroll[i], 0, 0, tu->mvq_pn, 0, tu->mvt, 0, 0, 0, cv};
    const bool mvt = k == VKO_MATVEC_QTX_S || k == VKO_MATVEC_QTX_L;
    const vktune_mvx *x = mvt ? &tu->mvt_t : &tu->mvx_t[k >= VKO_MATVEC_QXB_S && k <= VKO_MATVEC_QXB_L];
    return (mvq_cfg){x->wg[i], x->rows[i], x->unroll[i], x->wgs[i], x->pf[i], x->pn[i], vkmm_mvx_cap(o, k) / 32,
                     mvt ? tu->mvt : 1, 0, (v.cfg & MVQ_RT) != 0, (v.cfg & MVQ_GN) != 0, cv};
}

/* Tokens per workgroup of the integer mat-vec of a: t.mvt where one
 * matrix serves all its tokens (dense, or the grouped stack; not
 * per-token experts) and there are several, else 1. */
static uint32_t mvt_for(const vkops *o, const vkop_mm *a) {
    return a->n_tok > 1 && !a->ids && a->n_slots <= 1 ? o->t.mvt : 1;
}

zn_status vkmm_check(const vkop_mm *a, zn_err *err) {
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

mm_push vkmm_push(const vkop_mm *a) {
    const bool aligned = a->x % 16 == 0 && a->x_stride % 4 == 0 && a->x_slot_stride % 4 == 0 && a->aux % 16 == 0;
    return (mm_push){.w = a->w, .x = a->x, .y = a->y, .bias = a->bias, .scale = a->scale, .res = a->res,
                     .ids = a->group ? a->group : a->tail ? a->tail : a->route ? a->route : a->ids,
                     .aux = a->aux, .expert_bytes = (uint32_t)a->expert_bytes, .ncols = a->ncols, .nrows = a->nrows,
                     .row_bytes = a->row_bytes, .n_slots = a->n_slots ? a->n_slots : 1, .x_stride = a->x_stride,
                     .y_stride = a->y_stride, .x_slot_stride = a->x_slot_stride, .y_slot_stride = a->y_slot_stride,
                     .n_tok = a->n_tok, .ids_stride = a->ids_stride,
                     .flags = (a->bias_first ? 1u : 0u) | (aligned ? 2u : 0u) | (uint32_t)a->xmode << 2 |
                              (a->group ? 16u : 0u) | (a->route ? 32u : 0u) |
                              (a->gn_w ? (uint32_t)__builtin_ctz(a->gn_group) << 12 : 0u),
                     .eps = a->eps, .aux_w = a->gn_w};
}

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
 * call's copy, x_reuse) for the mat-vec kind km; *q = its address, 0: use
 * the float kernel (no scratch for this size, or no integer pipelines on
 * this device). */
static void quantize_x(vkops *o, vkcmd *c, const vkop_mm *a, const mm_push *mp, vkop_kind km, VkDeviceAddress *q) {
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
    if (vkops_pipe(o, VKO_QUANTX, (vkvar){0}, &p, &e2) ||
        vkops_pipe(o, km, (vkvar){.type = a->type, .cfg = a->group_conv ? MVQ_CV : 0u}, &pm, &e2)) {
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
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, rows * parts, "quantx");
    vkcmd_barrier(c);
}

/* The fused integer mat-vec's pipeline for a row of ncols, t.mvt tokens
 * per workgroup when mvt (NULL: x does not fit, or the device rejected the
 * pipeline: then vkops.mvx goes off and intdot_err says why). */
static const vkpipe *mvx_pipe(vkops *o, zn_type t, uint32_t ncols, uint32_t xmode, bool big, bool mvt, uint32_t feat,
                              vkop_kind *kind) {
    const uint32_t modes = mvt ? o->t.mvt_modes : o->t.mvx_modes;
    if (!o->mvx || ncols > o->mvx_max_cols || !(modes >> xmode & 1)) return NULL;
    const vkop_kind last = mvt ? VKO_MATVEC_QTX_L : VKO_MATVEC_QX_L;
    vkop_kind k = mvt ? VKO_MATVEC_QTX_S : VKO_MATVEC_QX_S;
    while (k < last && ncols > vkmm_mvx_cap(o, k)) k++;
    if (ncols > vkmm_mvx_cap(o, k)) return NULL; /* t.mvt rows of it do not fit */
    if (big && !mvt) k += VKO_MATVEC_QXB_S - VKO_MATVEC_QX_S;
    const vkpipe *p = NULL;
    zn_err e2 = {0};
    if (vkops_pipe(o, k, (vkvar){.type = t, .cfg = feat}, &p, &e2)) {
        snprintf(o->intdot_err, sizeof o->intdot_err, "%s", e2.msg);
        o->mvx = false;
        return NULL;
    }
    *kind = k;
    return p;
}

/* ---- the int8 GEMM (mmi8.comp) ---- */

#define MMI_BM 64 /* rows per workgroup (mmi8.comp's BM) */

/* mmi8.comp's shared memory: BM rows and bn tokens of 256 int8 (16 + 1
 * uvec4 each) and 8 (+1) vec2 scales. */
static uint32_t mmi_shared(uint32_t bn) { return (MMI_BM + bn) * (17 * 16 + 9 * 8); }

bool vkops_mmi_takes(const vkops *o, zn_type t, uint32_t n_tok) {
    return o->intdot && o->mmi && t == ZN_TYPE_Q4_K && n_tok >= o->t.mmi_min_tok && n_tok <= o->t.mmi_max_tok &&
           o->d->info.max_wg_invocations >= 256 && mmi_shared(o->t.mmi_bn) <= o->d->info.max_shared;
}

/* x quantised by quantx.comp (false: no scratch for it or no pipeline:
 * the caller takes the mat-vec), then tiles of 64 rows x mmi_bn tokens.
 * Its pipeline first: a driver that rejects it turns the int8 GEMM off
 * (vkops.mmi), where quantize_x would take it for one without the integer
 * path and turn all of that off. */
static bool mmi8(vkops *o, vkcmd *c, const vkop_mm *a, const char *name) {
    mm_push pc = vkmm_push(a);
    VkDeviceAddress q = 0;
    const vkpipe *p = NULL;
    const uint32_t n_wg = (a->nrows + MMI_BM - 1) / MMI_BM;
    if (n_wg > o->d->info.max_wg_count[0]) return false;
    zn_err e2 = {0};
    if (vkops_pipe(o, VKO_MMI8, (vkvar){0}, &p, &e2)) {
        snprintf(o->intdot_err, sizeof o->intdot_err, "%s", e2.msg);
        o->mmi = false;
        return false;
    }
    quantize_x(o, c, a, &pc, VKO_MMI8, &q);
    if (!q) return false;
    pc.x = q;
    pc.x_stride = 1;
    pc.x_slot_stride = 0;
    vkcmd_dispatch(c, p, &pc, sizeof pc, n_wg, (a->n_tok + o->t.mmi_bn - 1) / o->t.mmi_bn, 1,
                   name);
    return true;
}

bool vkops_moe_tail_takes(const vkops *o, zn_type t, uint32_t ncols, uint32_t k, uint32_t n_tok, int xmode) {
    if (!o->t.moe_tail || !o->intdot || !o->mvx || !o->mvxk || !is_quant(t) || !(o->t.mvx_modes >> xmode & 1) || !k ||
        k > ZN_VK_TAIL_SLOTS)
        return false;
    const uint32_t sg = o->d->info.subgroup_size, xb = vkmm_mvx_cap(o, VKO_MATVEC_QXK) / 32;
    const int ts = vktune_slot(t);
    return k * sg <= o->d->info.max_wg_invocations && ncols / 32 <= xb / k &&
           mvq_shared(xb, 1, k, sg, o->t.mvx_t[0].rows[ts < 0 ? 0 : ts]) <= o->d->info.max_shared &&
           vkops_mm_kernel(o, t, n_tok, 0, true) == VKMM_MATVEC;
}

bool vkops_gnorm_takes(const vkops *o, zn_type t, uint32_t ncols, uint32_t n_tok, uint32_t group) {
    if (!o->t.mv_gnorm || !o->intdot || !o->mvx || !is_quant(t) || group < 32 || group > 32768 || (group & (group - 1)) ||
        ncols % group || ncols > o->mvx_max_cols || !(o->t.mvx_modes >> VKX_SWIGLU & 1) ||
        vkops_mm_kernel(o, t, n_tok, 0, false) != VKMM_MATVEC || vkops_mmi_takes(o, t, n_tok))
        return false;
    /* several tokens: a workgroup per t.mvt of them, x in its shared memory only where they fit (mvx_pipe) */
    return n_tok == 1 || o->t.mvt <= 1 || ((o->t.mvt_modes >> VKX_SWIGLU & 1) && ncols <= vkmm_mvx_cap(o, VKO_MATVEC_QTX_L));
}

bool vkops_moe_route_takes(const vkops *o, zn_type t, uint32_t ncols, int xmode, uint32_t n_expert, uint32_t k,
                           uint32_t n_tok) {
    return o->t.moe_route && o->intdot && o->mvx && is_quant(t) && ncols <= o->mvx_max_cols &&
           (o->t.mvx_modes >> xmode & 1) && k >= 1 && k <= n_expert && n_expert <= ZN_MAX_EXPERTS &&
           n_expert <= 64 * o->d->info.subgroup_size && vkops_mm_kernel(o, t, n_tok, 0, true) == VKMM_MATVEC;
}

/* The experts' down with the MoE tail (vkop_mm.tail): a workgroup of a
 * subgroup per slot for each row block and token. */
static zn_status matvec_tail(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    if (!vkops_moe_tail_takes(o, a->type, a->ncols, a->n_slots, a->n_tok, (int)a->xmode) || !a->x_slot_stride)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no MoE tail for %u experts of %s rows of %u", a->n_slots,
                       zn_type_name(a->type), a->ncols);
    const vkvar v = {.type = a->type, .cfg = a->n_slots - 1};
    const vkpipe *p = NULL;
    zn_err e2 = {0};
    if (vkops_pipe(o, VKO_MATVEC_QXK, v, &p, &e2)) {
        o->mvxk = false;
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "%s", e2.msg);
    }
    mm_push pc = vkmm_push(a);
    const uint32_t lg = matvec_q_groups(o, a->type, a->ncols), per_wg = mvq_cfg_for(o, VKO_MATVEC_QXK, v).rows << lg;
    pc.flags |= lg << 8;
    uint32_t gx, gy;
    vkops_grid2(o, (a->nrows + per_wg - 1) / per_wg, &gx, &gy);
    vkcmd_dispatch(c, p, &pc, sizeof pc, gx, gy, a->n_tok, name);
    return ZN_OK;
}

zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkmm_check(a, err);
    if (st) return st;
    if (a->tail) return matvec_tail(o, c, a, name, err);
    const bool iq = o->intdot && is_quant(a->type);
    if (!a->ids && a->n_slots <= 1 && !a->gn_w && vkops_mmi_takes(o, a->type, a->n_tok) && mmi8(o, c, a, name))
        return ZN_OK;
    mm_push pc = vkmm_push(a);
    const uint32_t nt = iq ? mvt_for(o, a) : 1;
    /* the second class (mvx_t[1]): matrices of mvx_big_mb MiB or more (one expert's, for MoE), and
     * per-token experts of several tokens, where each (token, slot) has an x of its own to stage and
     * few row blocks to share it (the wide workgroup of one token's mat-vec lost there) */
    const bool big = nt == 1 && ((a->ids && a->n_tok > 1) ||
                                 (o->t.mvx_big_mb != ZN_VK_OFF &&
                                  (uint64_t)a->nrows * a->row_bytes >= (uint64_t)o->t.mvx_big_mb << 20));
    vkop_kind kq = nt > 1 ? VKO_MATVEC_QT : VKO_MATVEC_Q; /* the integer kind */
    /* the routing and the gated norm in pipelines of their own (matvec_q.comp's RT and GN): the
     * others carry none of their code */
    const uint32_t feat = (a->route ? MVQ_RT : 0u) | (a->gn_w ? MVQ_GN : 0u) | (a->group_conv ? MVQ_CV : 0u);
    const vkpipe *px = iq ? mvx_pipe(o, a->type, a->ncols, (uint32_t)a->xmode, big, nt > 1, feat, &kq) : NULL;
    if (a->gn_w && !px) /* only its workgroups norm x's groups */
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no gated norm in the %s mat-vec", zn_type_name(a->type));
    if (a->route && !px) /* only its workgroups pick experts */
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no routing in the %s mat-vec", zn_type_name(a->type));
    VkDeviceAddress q = 0;
    if (iq && !px) quantize_x(o, c, a, &pc, kq, &q);
    if (!q) o->xq_last.q = 0; /* x_reuse means "the previous call's x": this one quantised nothing */

    /* float kernel, few rows (MoE routers and gates): a row per workgroup of
     * one subgroup, so the rows spread over the GPU instead of a few
     * workgroups reading row after row */
    const bool one = !px && !q && a->nrows <= o->t.mv_one_rows;
    if (px) p = px;
    else st = vkops_pipe(o, q ? kq : one ? VKO_MATVEC_1 : VKO_MATVEC, (vkvar){.type = a->type, .cfg = feat}, &p, err);
    if (st) return st;
    uint32_t per_sg = one ? 1 : mv_rows_for(o, a->type), wg = one ? o->d->info.subgroup_size : o->t.mv_wg;
    uint32_t z = a->n_tok * pc.n_slots;
    const mvq_cfg mc = px || q ? mvq_cfg_for(o, kq, (vkvar){.type = a->type, .cfg = feat}) : (mvq_cfg){0};
    if (px || q) {
        const uint32_t lg = matvec_q_groups(o, a->type, a->ncols);
        pc.flags |= lg << 8;
        per_sg = mc.rows << lg;
        wg = mc.wg;
        z = (a->n_tok * pc.n_slots + mc.nt - 1) / mc.nt; /* groups of up to nt tokens (n_slots 1 when nt > 1) */
    }
    if (q) { /* matvec_q.comp reads the quantised rows: strides in rows */
        pc.x = q;
        pc.x_stride = a->x_slot_stride ? pc.n_slots : 1;
        pc.x_slot_stride = a->x_slot_stride ? 1 : 0;
    }
    const uint32_t per_wg = per_sg * (wg / o->d->info.subgroup_size);
    uint32_t n_wg = (a->nrows + per_wg - 1) / per_wg, gx, gy;
    /* the fused kernel loops over row blocks: fewer workgroups, each
     * quantising x once */
    if (px && mc.wgs && n_wg > mc.wgs) n_wg = mc.wgs;
    vkops_grid2(o, n_wg, &gx, &gy);
    vkcmd_dispatch(c, p, &pc, sizeof pc, gx, gy, z, name);
    return ZN_OK;
}

/* ---- specialisation constants ---- */

typedef struct spec_matvec { uint32_t wg, type, nr, sg; } spec_matvec;                        /* matvec.comp */
typedef struct spec_matvec_q { uint32_t wg, type, nr, sg, u, xb, pf, pn, nt, ks, rt, gn, cv; } spec_matvec_q; /* matvec_q.comp */
typedef struct spec_quantx { uint32_t wg, sk; } spec_quantx;                                  /* quantx.comp */

/* VKO_MATVEC: subgroups of mv_rows rows; VKO_MATVEC_1: a row per
 * one-subgroup workgroup. */
zn_status vkspec_matvec(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)err;
    const uint32_t sg = o->d->info.subgroup_size;
    if (k == VKO_MATVEC_1) VKSPEC(out, spec_matvec, {.wg = sg, .type = (uint32_t)v.type, .nr = 1, .sg = sg});
    else VKSPEC(out, spec_matvec, {.wg = o->t.mv_wg, .type = (uint32_t)v.type, .nr = mv_rows_for(o, v.type), .sg = sg});
    return ZN_OK;
}

/* VKO_MATVEC_Q and VKO_MATVEC_QT read x quantised by quantx (xb 0); the
 * other kinds quantise it themselves into xb blocks of shared memory per
 * token, with their own tuning (mvq_cfg_for). */
zn_status vkspec_matvec_q(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    const mvq_cfg m = mvq_cfg_for(o, k, v);
    const uint32_t sg = o->d->info.subgroup_size, sh = mvq_shared(m.xb, m.nt, m.ks, sg, m.rows);
    if (m.wg > o->d->info.max_wg_invocations || sh > o->d->info.max_shared)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: matvec_q: workgroups of %u threads, %u bytes of shared memory",
                       m.wg, sh);
    VKSPEC(out, spec_matvec_q, {.wg = m.wg, .type = (uint32_t)v.type, .nr = m.rows, .sg = o->d->info.subgroup_size,
                                .u = m.unroll, .xb = m.xb, .pf = m.pf, .pn = m.pn, .nt = m.nt, .ks = m.ks, .rt = m.rt,
                                .gn = m.gn, .cv = m.cv});
    return ZN_OK;
}

typedef struct spec_mmi8 { uint32_t wg, bn; } spec_mmi8; /* mmi8.comp */
zn_status vkspec_mmi8(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)v, (void)err;
    VKSPEC(out, spec_mmi8, {.wg = 256, .bn = o->t.mmi_bn});
    return ZN_OK;
}

zn_status vkspec_quantx(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)v, (void)err;
    VKSPEC(out, spec_quantx, {.wg = qx_wg(o), .sk = o->t.qx_sk});
    return ZN_OK;
}
