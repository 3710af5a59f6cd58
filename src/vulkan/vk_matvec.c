/* The mat-vec kernels (vk_mm.h): the float mat-vec (matvec.comp), the
 * integer one on int8-quantised x (quantx.comp + matvec_q.comp, or
 * matvec_q.comp quantising x itself), grouped and per expert; the matmul
 * push constants the GEMMs share. */
#include <stdio.h>
#include <string.h>

#include "vk_ops_impl.h"
#include "vk_quant.h"

/* The fused integer mat-vec (matvec_q.comp with XB > 0) sized for x rows
 * of up to 4096 and 16384 columns (1.25 bytes each in shared memory: small
 * pipelines leave room for more workgroups per SM), and the largest the
 * device's shared memory holds (beside reduce.glsl's 128 bytes). */
uint32_t vkmm_mvx_cap(const vkops *o, vkop_kind k) {
    const uint32_t sh = o->d->info.max_shared, most = sh > 256 ? (sh - 256) / 40 * 32 : 0;
    if (k >= VKO_MATVEC_QXB_S) k -= VKO_MATVEC_QXB_S - VKO_MATVEC_QX_S; /* big matrices: the same sizes */
    const uint32_t cap = k == VKO_MATVEC_QX_S ? 4096 : k == VKO_MATVEC_QX_M ? 16384 : most;
    return cap < most ? cap : most;
}

/* The fused integer mat-vec's configuration for type t and size class big
 * (vktune.mvx_t; workgroups per token, prefetch: see vk_tune.h). */
typedef struct mvx_tune { uint32_t wg, rows, unroll, wgs, pf, pn; } mvx_tune;
static mvx_tune mvx_tune_for(const vkops *o, zn_type t, bool big) {
    const int ts = vktune_slot(t);
    const vktune_mvx *x = &o->t.mvx_t[big];
    const int i = ts < 0 ? 5 : ts;
    return (mvx_tune){x->wg[i], x->rows[i], x->unroll[i], x->wgs[i], x->pf[i], x->pn[i]};
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

/* Rows per subgroup and steps per loop iteration of the integer mat-vec
 * after quantx (vktune.mvq_rows, mvq_unroll). */
static uint32_t mvq_rows_for(const vkops *o, zn_type t) {
    const int ts = vktune_slot(t);
    return o->t.mvq_rows[ts < 0 ? 0 : ts];
}
static uint32_t mvq_unroll_for(const vkops *o, zn_type t) {
    const int ts = vktune_slot(t);
    return o->t.mvq_unroll[ts < 0 ? 0 : ts];
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
                     .ids = a->group ? a->group : a->ids,
                     .aux = a->aux, .expert_bytes = (uint32_t)a->expert_bytes, .ncols = a->ncols, .nrows = a->nrows,
                     .row_bytes = a->row_bytes, .n_slots = a->n_slots ? a->n_slots : 1, .x_stride = a->x_stride,
                     .y_stride = a->y_stride, .x_slot_stride = a->x_slot_stride, .y_slot_stride = a->y_slot_stride,
                     .n_tok = a->n_tok, .ids_stride = a->ids_stride,
                     .flags = (a->bias_first ? 1u : 0u) | (aligned ? 2u : 0u) | (uint32_t)a->xmode << 2 |
                              (a->group ? 16u : 0u),
                     .eps = a->eps};
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
    if (vkops_pipe(o, VKO_QUANTX, (vkvar){0}, &p, &e2) || vkops_pipe(o, VKO_MATVEC_Q, (vkvar){.type = a->type}, &pm, &e2)) {
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

/* The fused integer mat-vec's pipeline for a row of ncols (NULL: x does not
 * fit, or the device rejected the pipeline: then vkops.mvx goes off and
 * intdot_err says why). */
static const vkpipe *mvx_pipe(vkops *o, zn_type t, uint32_t ncols, uint32_t xmode, bool big) {
    if (!o->mvx || ncols > o->mvx_max_cols || !(o->t.mvx_modes >> xmode & 1)) return NULL;
    vkop_kind k = VKO_MATVEC_QX_S;
    while (k < VKO_MATVEC_QX_L && ncols > vkmm_mvx_cap(o, k)) k++;
    if (big) k += VKO_MATVEC_QXB_S - VKO_MATVEC_QX_S;
    const vkpipe *p = NULL;
    zn_err e2 = {0};
    if (vkops_pipe(o, k, (vkvar){.type = t}, &p, &e2)) {
        snprintf(o->intdot_err, sizeof o->intdot_err, "%s", e2.msg);
        o->mvx = false;
        return NULL;
    }
    return p;
}

zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkmm_check(a, err);
    if (st) return st;
    mm_push pc = vkmm_push(a);
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
    else st = vkops_pipe(o, q ? VKO_MATVEC_Q : one ? VKO_MATVEC_1 : VKO_MATVEC, (vkvar){.type = a->type}, &p, err);
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
    vkops_grid2(o, n_wg, &gx, &gy);
    vkcmd_dispatch(c, p, &pc, sizeof pc, gx, gy, a->n_tok * pc.n_slots, name);
    return ZN_OK;
}

/* ---- specialisation constants ---- */

typedef struct spec_matvec { uint32_t wg, type, nr, sg; } spec_matvec;                        /* matvec.comp */
typedef struct spec_matvec_q { uint32_t wg, type, nr, sg, u, xb, pf, pn; } spec_matvec_q;     /* matvec_q.comp */
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

/* VKO_MATVEC_Q reads x quantised by quantx (xb 0); the QX kinds quantise it
 * themselves into xb blocks of shared memory, with their own tuning. */
zn_status vkspec_matvec_q(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)err;
    const uint32_t sg = o->d->info.subgroup_size, t = (uint32_t)v.type;
    if (k == VKO_MATVEC_Q) {
        VKSPEC(out, spec_matvec_q, {.wg = o->t.mv_wg, .type = t, .nr = mvq_rows_for(o, v.type), .sg = sg,
                                    .u = mvq_unroll_for(o, v.type), .xb = 0, .pf = 0, .pn = o->t.mvq_pn});
        return ZN_OK;
    }
    const mvx_tune m = mvx_tune_for(o, v.type, k >= VKO_MATVEC_QXB_S);
    VKSPEC(out, spec_matvec_q, {.wg = m.wg, .type = t, .nr = m.rows, .sg = sg, .u = m.unroll,
                                .xb = vkmm_mvx_cap(o, k) / 32, .pf = m.pf, .pn = m.pn});
    return ZN_OK;
}

zn_status vkspec_quantx(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)v, (void)err;
    VKSPEC(out, spec_quantx, {.wg = qx_wg(o), .sk = o->t.qx_sk});
    return ZN_OK;
}
