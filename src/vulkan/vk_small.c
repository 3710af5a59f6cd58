/* The small ops (vk_small.h): embedding rows (embed.comp), norms
 * (norm.comp), rope (rope.comp, with the per-head norm and the KV store it
 * can take in), elementwise ops (eltwise.comp), the MoE router
 * (moe_route.comp), argmax. */
#include <math.h>
#include <string.h>

#include "vk_ops_impl.h"

#define ELT_WG 256

zn_status vkop_embed(vkops *o, vkcmd *c, zn_type t, VkDeviceAddress w, uint32_t row_bytes, uint32_t ncols,
                     VkDeviceAddress tokens, uint32_t n_tok, VkDeviceAddress dst, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_EMBED, (vkvar){.type = t}, &p, err);
    if (st) return st;
    struct { uint64_t w, tokens, dst; uint32_t ncols, row_bytes, n_tok; } pc = {w, tokens, dst, ncols, row_bytes, n_tok};
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, n_tok, "embed");
    return ZN_OK;
}

zn_status vkop_norm(vkops *o, vkcmd *c, vknorm_mode mode, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                    VkDeviceAddress z, uint32_t group, uint32_t n_groups, float eps, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_NORM, (vkvar){0}, &p, err);
    if (st) return st;
    struct { uint64_t x, y, w, z; uint32_t group, n_groups, mode; float eps; } pc = {x, y, w, z, group, n_groups, mode, eps};
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, n_groups, name);
    return ZN_OK;
}

/* IMRoPE's sections a byte each: the push constants have no room for four
 * words and the sequence table */
static zn_status rope_secs(const vkop_rope *a, uint32_t *secs, zn_err *err) {
    *secs = 0;
    for (int i = 0; i < 4; i++) {
        if (a->sections[i] < 0 || a->sections[i] > 255)
            return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: rope section of %d", a->sections[i]);
        *secs |= (uint32_t)a->sections[i] << (8 * i);
    }
    if (a->mode == 2 && !*secs) return zn_errf(err, ZN_ERR_ARG, "vulkan: IMRoPE without sections");
    return ZN_OK;
}

/* computed here with the C library's powf, as ggml does */
static float rope_theta_scale(const vkop_rope *a) { return powf(a->freq_base, -2.0f / (float)a->n_rot); }

zn_status vkop_rope_params(const vkop_rope *q, const vkop_rope *k, vkop_rope_p *out, zn_err *err) {
    if (q->n_rot != k->n_rot || q->mode != k->mode || q->head_dim != k->head_dim || q->ff != k->ff ||
        q->freq_base != k->freq_base || q->freq_scale != k->freq_scale || memcmp(q->sections, k->sections, sizeof q->sections))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: the q and k ropes differ");
    if (!q->n_rot || q->n_rot > q->head_dim || q->n_rot % 2) return zn_errf(err, ZN_ERR_ARG, "vulkan: rope n_rot %u", q->n_rot);
    uint32_t secs = 0;
    zn_status st = rope_secs(q, &secs, err);
    if (st) return st;
    *out = (vkop_rope_p){.nwq = q->nw, .nwk = k->nw, .ff = q->ff, .theta_scale = rope_theta_scale(q),
                         .freq_scale = q->freq_scale, .eps_q = q->eps, .eps_k = k->eps, .n_rot = q->n_rot,
                         .mode = q->mode, .secs = secs};
    return ZN_OK;
}

zn_status vkop_rope_run(vkops *o, vkcmd *c, const vkop_rope *a, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_ROPE, (vkvar){0}, &p, err);
    if (st) return st;
    if (a->n_rot > a->head_dim || a->n_rot % 2) return zn_errf(err, ZN_ERR_ARG, "vulkan: rope n_rot %u", a->n_rot);
    if (a->kv.tab && a->row_stride != a->n_heads * a->head_dim)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: rope into the cache needs packed heads");
    if (a->kv.tab && (!a->n_heads || a->vdim % a->n_heads)) return zn_errf(err, ZN_ERR_ARG, "vulkan: V rows of %u", a->vdim);
    uint32_t secs = 0;
    st = rope_secs(a, &secs, err);
    if (st) return st;
    struct {
        uint64_t x, src, ff, nw, tab, v, step;
        uint32_t n_tok, n_heads, head_dim, n_rot, row_stride, mode, n_past, secs, vdim;
        float theta_scale, freq_scale, eps;
        uint32_t koff, voff, pos_bytes;
        uint64_t seqs;
    } pc = {a->x, a->src ? a->src : a->x, a->ff, a->nw, a->kv.tab, a->v, a->step, a->n_tok, a->n_heads, a->head_dim, a->n_rot,
            a->row_stride, a->mode, a->n_past, secs, a->vdim,
            rope_theta_scale(a), a->freq_scale, a->eps, a->kv.koff, a->kv.voff, a->kv.pos_bytes,
            a->seqs};
    _Static_assert(sizeof pc <= ZN_VK_PUSH_MAX, "push constants");
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, a->n_tok * a->n_heads, name);
    return ZN_OK;
}

zn_status vkop_eltwise(vkops *o, vkcmd *c, const vkop_elt *e, const char *name, zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_ELTWISE, (vkvar){0}, &p, err);
    if (st) return st;
    if (!e->cols || e->n % e->cols) return zn_errf(err, ZN_ERR_ARG, "vulkan: eltwise %u elements in rows of %u", e->n, e->cols);
    if (e->mode == VKELT_COPY_COLS && (!e->k || e->cols % e->k))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: copy_cols of width %u into rows of %u", e->k, e->cols);
    struct { uint64_t a, b, dst, route, gate, res; uint32_t n, cols, b_cols, k, mode, aux, aux2; } pc = {
        e->a, e->b, e->dst, e->route, e->gate, e->res, e->n, e->cols, e->b_cols, e->k, e->mode, e->aux, e->aux2};
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, (e->n + ELT_WG - 1) / ELT_WG, name);
    return ZN_OK;
}

zn_status vkop_moe_route(vkops *o, vkcmd *c, VkDeviceAddress logits, VkDeviceAddress dst, uint32_t n_tok,
                         uint32_t n_expert, uint32_t k, bool norm, float wscale, const char *name, zn_err *err) {
    if (n_expert > ZN_MAX_EXPERTS || k > ZN_MAX_EXPERTS_USED || k > n_expert || !k)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: moe route %u of %u experts", k, n_expert);
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_MOE_ROUTE, (vkvar){0}, &p, err);
    if (st) return st;
    struct { uint64_t logits, dst; uint32_t n_tok, n_expert, k, norm; float wscale; } pc = {logits, dst, n_tok, n_expert, k, norm, wscale};
    vkops_dispatch_items(o, c, p, &pc, sizeof pc, n_tok, name);
    return ZN_OK;
}

zn_status vkop_argmax(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress dst, uint32_t n_rows, uint32_t n,
                      zn_err *err) {
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_ARGMAX, (vkvar){0}, &p, err);
    if (st) return st;
    struct { uint64_t x, dst; uint32_t n_rows, n; } pc = {x, dst, n_rows, n};
    vkcmd_dispatch(c, p, &pc, sizeof pc, n_rows, 1, 1, "argmax");
    return ZN_OK;
}

/* ---- specialisation constants ---- */

typedef struct spec_wg { uint32_t wg; } spec_wg;                /* norm, rope, eltwise, moe_route, argmax */
typedef struct spec_embed { uint32_t wg, type; } spec_embed;    /* embed.comp */

zn_status vkspec_small(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    switch (k) {
    case VKO_EMBED: VKSPEC(out, spec_embed, {.wg = o->t.small_wg, .type = (uint32_t)v.type}); break;
    case VKO_NORM: VKSPEC(out, spec_wg, {.wg = o->t.norm_wg}); break;
    case VKO_ROPE: VKSPEC(out, spec_wg, {.wg = o->t.small_wg}); break;
    case VKO_ELTWISE: VKSPEC(out, spec_wg, {.wg = ELT_WG}); break;
    case VKO_MOE_ROUTE: VKSPEC(out, spec_wg, {.wg = 64}); break; /* its PER assumes 64 */
    case VKO_ARGMAX: VKSPEC(out, spec_wg, {.wg = 256}); break;
    default: return zn_errf(err, ZN_ERR_ARG, "vulkan: op %d is not a small op", (int)k);
    }
    return ZN_OK;
}
