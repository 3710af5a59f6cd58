/* Op recording (see vk_ops.h): pipeline variants per op and weight type,
 * created on first use, and the push-constant blocks of each shader. */
#include <string.h>

#include "vk_ops.h"

static int type_slot(zn_type t) {
    switch (t) {
    case ZN_TYPE_F32: return 0;
    case ZN_TYPE_F16: return 1;
    case ZN_TYPE_BF16: return 2;
    case ZN_TYPE_Q4_0: return 3;
    case ZN_TYPE_Q8_0: return 4;
    case ZN_TYPE_Q4_K: return 5;
    case ZN_TYPE_Q5_K: return 6;
    case ZN_TYPE_Q6_K: return 7;
    default: return -1;
    }
}

bool vkops_type_ok(zn_type t) { return type_slot(t) >= 0; }

zn_status vkops_init(vkops *o, vkdev *d, const char *cache_path, zn_err *err) {
    memset(o, 0, sizeof *o);
    o->d = d;
    if (!d->info.subgroup_arith)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: '%s' lacks subgroup arithmetic in compute shaders", d->info.name);
    return vkpipes_init(&o->ps, d, cache_path, err);
}

void vkops_free(vkops *o) {
    if (!o->d) return;
    for (int k = 0; k < VKO_COUNT; k++)
        for (int t = 0; t < ZN_VK_NTYPES; t++) vkpipe_destroy(&o->ps, &o->pipes[k][t]);
    vkpipes_free(&o->ps);
    memset(o, 0, sizeof *o);
}

#define MV_ROWS 2   /* rows per mat-vec workgroup */
#define MV_WG 64

/* The pipeline of op `k` for weight type t (slot 0 for untyped ops). */
static zn_status get_pipe(vkops *o, vkop_kind k, zn_type t, const vkpipe **out, zn_err *err) {
    int ts = type_slot(t);
    if (ts < 0) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: no kernel for weight type %s", zn_type_name(t));
    vkpipe *p = &o->pipes[k][ts];
    *out = p;
    if (p->pipe) return ZN_OK;
    uint32_t spec[ZN_VK_MAX_SPEC];
    uint32_t n = 0;
    const char *shader = NULL;
    switch (k) {
    case VKO_MATVEC:
        shader = "matvec";
        spec[n++] = MV_WG; spec[n++] = (uint32_t)t; spec[n++] = MV_ROWS;
        break;
    case VKO_MATMUL:
        shader = "matmul";
        spec[n++] = 256; spec[n++] = (uint32_t)t;
        break;
    default:
        return zn_errf(err, ZN_ERR_ARG, "vulkan: op %d", (int)k);
    }
    return vkpipe_create(&o->ps, p, shader, spec, n, 0, err);
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
    uint64_t w, x, y, bias, scale, res, ids, expert_bytes;
    uint32_t ncols, nrows, row_bytes, n_slots;
    uint32_t x_stride, y_stride, x_slot_stride, y_slot_stride;
    uint32_t n_tok;
} mm_push;
_Static_assert(sizeof(mm_push) <= ZN_VK_PUSH_MAX, "push constants");

static zn_status mm_check(const vkop_mm *a, zn_err *err) {
    const zn_type_info *ti = zn_type_get((uint32_t)a->type);
    if (!ti || !vkops_type_ok(a->type)) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: matmul of type %s", zn_type_name(a->type));
    if (a->ncols % ti->blck) return zn_errf(err, ZN_ERR_ARG, "vulkan: row of %u is not a multiple of %s blocks", a->ncols, ti->name);
    if (ti->blck == 1 && a->ncols % 32 && a->type != ZN_TYPE_F32 && a->type != ZN_TYPE_F16 && a->type != ZN_TYPE_BF16)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: bad row length %u", a->ncols);
    if (!a->n_tok || !a->nrows || !a->ncols) return zn_errf(err, ZN_ERR_ARG, "vulkan: empty matmul");
    return ZN_OK;
}

static mm_push mm_fill(const vkop_mm *a) {
    return (mm_push){.w = a->w, .x = a->x, .y = a->y, .bias = a->bias, .scale = a->scale, .res = a->res, .ids = a->ids,
                     .expert_bytes = a->expert_bytes, .ncols = a->ncols, .nrows = a->nrows, .row_bytes = a->row_bytes,
                     .n_slots = a->n_slots ? a->n_slots : 1, .x_stride = a->x_stride, .y_stride = a->y_stride,
                     .x_slot_stride = a->x_slot_stride, .y_slot_stride = a->y_slot_stride, .n_tok = a->n_tok};
}

zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = mm_check(a, err);
    if (!st) st = get_pipe(o, VKO_MATVEC, a->type, &p, err);
    if (st) return st;
    mm_push pc = mm_fill(a);
    uint32_t gx, gy;
    grid2(o, (a->nrows + MV_ROWS - 1) / MV_ROWS, &gx, &gy);
    vkcmd_dispatch(c, p, &pc, sizeof pc, gx, gy, a->n_tok * pc.n_slots, name);
    return ZN_OK;
}

zn_status vkop_matmat(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = mm_check(a, err);
    if (!st && a->ids) st = zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: tiled matmul with expert ids");
    if (!st) st = get_pipe(o, VKO_MATMUL, a->type, &p, err);
    if (st) return st;
    mm_push pc = mm_fill(a);
    vkcmd_dispatch(c, p, &pc, sizeof pc, (a->nrows + 63) / 64, (a->n_tok + 63) / 64, 1, name);
    return ZN_OK;
}

zn_status vkop_matmul(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err) {
    if (a->ids || a->n_tok <= 4) return vkop_matvec(o, c, a, name, err);
    return vkop_matmat(o, c, a, name, err);
}
