/* The op families' shared state (see vk_ops.h): init, the pipeline table
 * and its lookup, dispatch helpers. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "vk_ops_impl.h"

bool vkops_type_ok(zn_type t) { return vktune_slot(t) >= 0; }

/* ---- the pipeline table ---- */

/* What selects a kind's variants (its slot in vkops.pipes[kind]). */
typedef enum vkvar_by {
    BY_NONE,      /* one pipeline */
    BY_TYPE,      /* vkvar.type: a weight type slot (vktune_slot) */
    BY_CFG,       /* vkvar.cfg: an entry of the kind's tile-config table */
    BY_HEAD_DIM,  /* vkvar.head_dim: 8 << slot */
    BY_ROWS,      /* vkvar.rows_log2: 1 << slot query rows */
    BY_CFG_TYPE,  /* vkvar.cfg and vkvar.type: cfg * ZN_VK_NTYPES + type slot */
} vkvar_by;

#define SG_DEVICE UINT32_MAX /* the pipeline requires the device's subgroup size */

typedef struct vkpipe_desc {
    const char *shader;           /* embedded SPIR-V (zn_spv_blobs) */
    vkvar_by by;
    uint32_t n_var;               /* BY_CFG, BY_ROWS: variants */
    uint32_t subgroup;            /* required subgroup size: 0 the driver's choice, SG_DEVICE, or a size */
    vkspec_fn spec;
} vkpipe_desc;

static const vkpipe_desc pipe_table[VKO_COUNT] = {
    [VKO_MATVEC] = {"matvec", BY_TYPE, 0, SG_DEVICE, vkspec_matvec},
    [VKO_MATVEC_1] = {"matvec", BY_TYPE, 0, SG_DEVICE, vkspec_matvec},
    [VKO_MATVEC_Q] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    /* cfg: the features compiled in (vk_matvec.c MVQ_RT, MVQ_GN, MVQ_CV) */
    [VKO_MATVEC_QX_S] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QX_M] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QX_L] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QXB_S] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QXB_M] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QXB_L] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QT] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QTX_S] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_MATVEC_QTX_L] = {"matvec_q", BY_CFG_TYPE, 8, SG_DEVICE, vkspec_matvec_q},
    [VKO_QUANTX] = {"quantx", BY_NONE, 0, 0, vkspec_quantx},
    [VKO_MATMUL] = {"matmul", BY_TYPE, 0, 0, vkspec_matmul},
    [VKO_MATMUL_CM] = {"matmul_cm", BY_TYPE, 0, 32, vkspec_matmul},
    [VKO_MATMUL_SPLIT] = {"matmul", BY_TYPE, 0, 0, vkspec_matmul},
    [VKO_MM_PREP] = {"mm_prep", BY_TYPE, 0, 0, vkspec_mm_prep},
    [VKO_MOE_BUCKET] = {"moe_bucket", BY_NONE, 0, 0, vkspec_wg256},
    [VKO_MM_REDUCE] = {"mm_reduce", BY_NONE, 0, 0, vkspec_wg256},
    [VKO_KV_ROT] = {"kv_rot", BY_NONE, 0, 0, vkspec_wg256},
    [VKO_MMF] = {"mmf_cm", BY_CFG, ZN_VK_MM_NCFG, 32, vkspec_mmf},
    [VKO_MMF_EMU] = {"mmf_emu", BY_CFG, ZN_VK_MM_NCFG, 0, vkspec_mmf},
    [VKO_MMF_CM2] = {"mmf_cm2", BY_CFG, ZN_VK_CM2_NCFG, 0, vkspec_mmf_cm2},
    [VKO_MMF_CM2_MOE] = {"mmf_cm2", BY_CFG, ZN_VK_CM2_NCFG, 0, vkspec_mmf_cm2},
    [VKO_EMBED] = {"embed", BY_TYPE, 0, 0, vkspec_small},
    [VKO_NORM] = {"norm", BY_NONE, 0, 0, vkspec_small},
    [VKO_ROPE] = {"rope", BY_NONE, 0, 0, vkspec_small},
    [VKO_ELTWISE] = {"eltwise", BY_NONE, 0, 0, vkspec_small},
    [VKO_MOE_ROUTE] = {"moe_route", BY_NONE, 0, 0, vkspec_small},
    [VKO_ARGMAX] = {"argmax", BY_NONE, 0, 0, vkspec_small},
    [VKO_KV_STORE] = {"kv_store", BY_NONE, 0, 0, vkspec_kv_store},
    [VKO_ATTN] = {"attn", BY_NONE, 0, 0, vkspec_attn},
    [VKO_ATTN_MERGE] = {"attn_merge", BY_NONE, 0, 0, vkspec_attn},
    [VKO_ATTN_DEC64] = {"attn_dec", BY_ROWS, VK_ATTN_DEC_SLOTS, 0, vkspec_attn_dec},
    [VKO_ATTN_DEC128] = {"attn_dec", BY_ROWS, VK_ATTN_DEC_SLOTS, 0, vkspec_attn_dec},
    [VKO_ATTN_DEC256] = {"attn_dec", BY_ROWS, VK_ATTN_DEC_SLOTS, 0, vkspec_attn_dec},
    [VKO_ATTN_FA] = {"attn_fa", BY_HEAD_DIM, 0, 0, vkspec_attn_fa},
    [VKO_ATTN_FA_CM] = {"attn_fa_cm", BY_CFG, ZN_VK_FA_NCFG, 32, vkspec_attn_fa_cm},
    [VKO_ATTN_FA_EMU] = {"attn_fa_emu", BY_CFG, ZN_VK_FA_NCFG, 0, vkspec_attn_fa_cm},
    [VKO_ATTN_FA_SG] = {"attn_fa_sg", BY_CFG, ZN_VK_FA_NCFG, 32, vkspec_attn_fa_sg},
    [VKO_ATTN_FA_SGE] = {"attn_fa_sge", BY_CFG, ZN_VK_FA_NCFG, 0, vkspec_attn_fa_sg},
    [VKO_CONV1D] = {"conv1d", BY_NONE, 0, 0, vkspec_conv1d},
    [VKO_GDN] = {"gdn", BY_HEAD_DIM, 0, SG_DEVICE, vkspec_gdn},
    [VKO_GDN_R2] = {"gdn", BY_HEAD_DIM, 0, SG_DEVICE, vkspec_gdn},
    [VKO_GDN_R4] = {"gdn", BY_HEAD_DIM, 0, SG_DEVICE, vkspec_gdn},
    [VKO_MMQ] = {"mmf_cm", BY_CFG_TYPE, ZN_VK_MM_NCFG, 32, vkspec_mmf},
    [VKO_MMQ_EMU] = {"mmf_emu", BY_CFG_TYPE, ZN_VK_MM_NCFG, 0, vkspec_mmf},
    [VKO_MMQ_CM2] = {"mmf_cm2", BY_CFG_TYPE, ZN_VK_CM2_NCFG, 0, vkspec_mmf_cm2},
    [VKO_MMQ_CM2_MOE] = {"mmf_cm2", BY_CFG_TYPE, ZN_VK_CM2_NCFG, 0, vkspec_mmf_cm2},
    [VKO_MMQ_SPLIT] = {"mmf_cm", BY_CFG_TYPE, ZN_VK_MM_NCFG, 32, vkspec_mmf},
    [VKO_MMQ_EMU_SPLIT] = {"mmf_emu", BY_CFG_TYPE, ZN_VK_MM_NCFG, 0, vkspec_mmf},
    [VKO_MMQ_CM2_SPLIT] = {"mmf_cm2", BY_CFG_TYPE, ZN_VK_CM2_NCFG, 0, vkspec_mmf_cm2},
    [VKO_MMI8] = {"mmi8", BY_NONE, 0, 0, vkspec_mmi8},
    [VKO_MATVEC_QXK] = {"matvec_q", BY_CFG_TYPE, ZN_VK_TAIL_SLOTS, SG_DEVICE, vkspec_matvec_q},
};
_Static_assert(ZN_VK_MM_NCFG <= ZN_VK_NVAR / ZN_VK_NTYPES && ZN_VK_CM2_NCFG <= ZN_VK_NVAR / ZN_VK_NTYPES &&
                   ZN_VK_TAIL_SLOTS <= ZN_VK_NVAR / ZN_VK_NTYPES &&
                   ZN_VK_FA_NCFG <= ZN_VK_NVAR && VK_ATTN_DEC_SLOTS <= ZN_VK_NVAR,
               "every variant has a slot in vkops.pipes");

/* log2(d) - 3 for the head dims 8..1024, else -1. */
static int dim_slot(uint32_t d) {
    for (int i = 0; i < ZN_VK_NTYPES; i++)
        if (d == 8u << i) return i;
    return -1;
}

_Static_assert(VKO_COUNT <= 64, "vkops.refuse_kinds is a 64-bit mask");

/* vkops_collect's list: each pipeline once */
static zn_status pending_add(vkops *o, vkpipe *p, const char *shader, const vkspec *s, uint32_t sg, zn_err *err) {
    for (int i = 0; i < o->n_pending; i++)
        if (o->pending[i].p == p) return ZN_OK;
    if (o->n_pending == o->cap_pending) {
        const int cap = o->cap_pending ? 2 * o->cap_pending : 64;
        vkpipe_job *j = realloc(o->pending, (size_t)cap * sizeof *j);
        if (!j) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
        o->pending = j, o->cap_pending = cap;
    }
    vkpipe_job *j = &o->pending[o->n_pending++];
    *j = (vkpipe_job){.p = p, .shader = shader, .n_spec = s->n, .subgroup = sg};
    memcpy(j->spec, s->v, sizeof j->spec);
    return ZN_OK;
}

zn_status vkops_pipe(vkops *o, vkop_kind k, vkvar v, const vkpipe **out, zn_err *err) {
    const vkpipe_desc *d = (unsigned)k < VKO_COUNT ? &pipe_table[k] : NULL;
    if (!d || !d->shader) return zn_errf(err, ZN_ERR_ARG, "vulkan: pipeline kind %d", (int)k);
    int slot = 0;
    switch (d->by) {
    case BY_NONE: break;
    case BY_TYPE:
        slot = vktune_slot(v.type);
        if (slot < 0) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no kernel for weight type %s", zn_type_name(v.type));
        break;
    case BY_CFG:
    case BY_ROWS: {
        const uint32_t i = d->by == BY_CFG ? v.cfg : v.rows_log2;
        if (i >= d->n_var) return zn_errf(err, ZN_ERR_ARG, "vulkan: %s: no variant %u", d->shader, i);
        slot = (int)i;
        break;
    }
    case BY_CFG_TYPE: {
        const int ts = vktune_slot(v.type);
        if (ts < 0) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no kernel for weight type %s", zn_type_name(v.type));
        if (v.cfg >= d->n_var) return zn_errf(err, ZN_ERR_ARG, "vulkan: %s: no variant %u", d->shader, v.cfg);
        slot = (int)v.cfg * ZN_VK_NTYPES + ts;
        break;
    }
    case BY_HEAD_DIM:
        slot = dim_slot(v.head_dim);
        if (slot < 0) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: head dim %u", v.head_dim);
        break;
    }
    vkpipe *p = &o->pipes[k][slot];
    *out = p;
    if (p->pipe) return ZN_OK;
    if (o->refuse_kinds >> k & 1) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %s: pipeline refused (test)", d->shader);
    vkspec s = {{0}, 0};
    zn_status st = d->spec(o, k, v, &s, err);
    if (st) return st;
    const uint32_t sg = d->subgroup == SG_DEVICE ? o->d->info.subgroup_size : d->subgroup;
    if (o->collecting) return pending_add(o, p, d->shader, &s, sg, err);
    return vkpipe_create(&o->ps, p, d->shader, s.v, s.n, sg, err);
}

void vkops_collect(vkops *o) { o->collecting = true; }

void vkops_build(vkops *o, int threads) {
    vkpipe_create_all(&o->ps, o->pending, o->n_pending, threads);
    free(o->pending);
    o->pending = NULL;
    o->n_pending = o->cap_pending = 0;
    o->collecting = false;
}

/* ---- state ---- */

zn_status vkops_init(vkops *o, vkdev *d, const vktune *t, const char *cache_path, zn_err *err) {
    memset(o, 0, sizeof *o);
    o->d = d;
    for (int k = 0; k < VKO_COUNT; k++)
        if (!pipe_table[k].shader) return zn_errf(err, ZN_ERR_ARG, "vulkan: pipeline kind %d has no table entry", k);
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
    o->mvx_max_cols = vkmm_mvx_cap(o, VKO_MATVEC_QX_L);
    o->mvxk = o->mvx;
    o->mmi = true;
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
        for (int t = 0; t < ZN_VK_NVAR; t++) vkpipe_destroy(&o->ps, &o->pipes[k][t]);
    free(o->pending);
    vkpipes_free(&o->ps);
    memset(o, 0, sizeof *o);
}

/* ---- dispatch ---- */

void vkops_grid2(const vkops *o, uint32_t n, uint32_t *gx, uint32_t *gy) {
    uint32_t lim = o->d->info.max_wg_count[0] ? o->d->info.max_wg_count[0] : 65535;
    if (lim > 65535) lim = 65535;
    *gx = n < lim ? n : lim;
    *gy = (n + *gx - 1) / *gx;
}

void vkops_dispatch_items(vkops *o, vkcmd *c, const vkpipe *p, const void *pc, uint32_t size, uint32_t n_items,
                          const char *name) {
    uint32_t gx, gy;
    vkops_grid2(o, n_items, &gx, &gy);
    vkcmd_dispatch(c, p, pc, size, gx, gy, 1, name);
}
