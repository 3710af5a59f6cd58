/* The recurrent ops of Gated DeltaNet layers (vk_gdn.h): the causal conv
 * + SiLU (conv1d.comp) and the gated delta rule (gdn.comp). */
#include "vk_ops_impl.h"

/* Lanes per cluster of gdn.comp: 8 (3 shuffle steps per reduction); on
 * narrower subgroups (lavapipe's 8) half the subgroup, so the op tests still
 * run two clusters per subgroup as GPUs do. */
static uint32_t gdn_lanes(const vkops *o) {
    const uint32_t sg = o->d->info.subgroup_size;
    if (o->t.gdn_lanes != ZN_VK_AUTO) return o->t.gdn_lanes < sg ? o->t.gdn_lanes : sg;
    return sg >= 16 ? 8 : sg > 1 ? sg / 2 : 1;
}

/* State rows per cluster: the tuned count where it divides the value head
 * dim (a cluster's rows share one head's q and k), else fewer; a pipeline
 * kind each. */
static vkop_kind gdn_kind(const vkops *o, uint32_t d_v) {
    const uint32_t want = o->t.gdn_rows;
    return want >= 4 && d_v % 4 == 0 ? VKO_GDN_R4 : want >= 2 && d_v % 2 == 0 ? VKO_GDN_R2 : VKO_GDN;
}
static uint32_t gdn_kind_rows(vkop_kind k) { return k == VKO_GDN_R4 ? 4 : k == VKO_GDN_R2 ? 2 : 1; }

/* gdn.comp's workgroup: 4 subgroups of subgroup / gdn_lanes clusters. */
static uint32_t gdn_rows_wg(const vkops *o, vkop_kind k) {
    return 4 * (o->d->info.subgroup_size / gdn_lanes(o)) * gdn_kind_rows(k);
}

zn_status vkop_conv1d(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                      VkDeviceAddress state, VkDeviceAddress seqs, uint32_t n_tok, uint32_t n_ch, uint32_t ld,
                      uint32_t kernel, const char *name, zn_err *err) {
    if (kernel < 1 || kernel > ZN_GDN_MAX_CONV)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: conv kernel %u (1..%d)", kernel, ZN_GDN_MAX_CONV);
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, VKO_CONV1D, (vkvar){0}, &p, err);
    if (st) return st;
    /* batched: one token per sequence, the sequences along z */
    const uint32_t nt = seqs ? 1 : n_tok, nz = seqs ? n_tok : 1;
    struct { uint64_t x, y, w, state; uint32_t n_tok, n_ch, ld, kernel; uint64_t seqs; } pc = {
        x, y, w, state, nt, n_ch, ld, kernel, seqs};
    /* conv1d.comp: workgroups of small_wg channels x 16 tokens */
    vkcmd_dispatch(c, p, &pc, sizeof pc, (n_ch + o->t.small_wg - 1) / o->t.small_wg, (nt + 15) / 16, nz, name);
    return ZN_OK;
}

/* gdn.comp's staged tokens per chunk for head dim dk: the tuned count, fewer
 * where its shared memory (k and q, v of the workgroup's rows, the gates;
 * double-buffered) would not fit. */
static uint32_t gdn_chunk(const vkops *o, uint32_t dk, uint32_t rows_wg) {
    const uint32_t per_tok = 2 * (2 * dk * 4 + rows_wg * 4 + 2 * 4);
    uint32_t tc = o->t.gdn_tc ? o->t.gdn_tc : 1;
    while (tc > 1 && tc * per_tok > o->d->info.max_shared) tc /= 2;
    return tc;
}

zn_status vkop_gdn_run(vkops *o, vkcmd *c, const vkop_gdn *a, const char *name, zn_err *err) {
    if (!a->h_k || a->h_v % a->h_k) return zn_errf(err, ZN_ERR_ARG, "vulkan: %u value heads / %u key heads", a->h_v, a->h_k);
    const vkop_kind kind = gdn_kind(o, a->d_v);
    const vkpipe *p = NULL;
    zn_status st = vkops_pipe(o, kind, (vkvar){.head_dim = a->d_k}, &p, err);
    if (st) return st;
    /* batched: the sequences along z */
    const uint32_t rows_wg = gdn_rows_wg(o, kind);
    const uint32_t n = a->seqs ? 1 : a->n_tok;
    /* staged: several tokens, the workgroup's rows in one head, q and k
     * rows loaded as aligned vec4s */
    const bool stage = o->t.gdn_tc && n > 1 && a->d_v % rows_wg == 0 && a->d_k % 4 == 0 && !((a->q | a->k) % 16) &&
                       a->ld_qk % 4 == 0;
    struct {
        uint64_t q, k, v, g, beta, state, dst, dt_bias, a;
        uint32_t n_tok, h_k, h_v, d_v, ld_qk, ld_v, ld_o, ld_g, gate_raw, l2;
        float eps;
        uint32_t stage;
        uint64_t seqs;
    } pc = {a->q, a->k, a->v, a->g, a->beta, a->state, a->dst, a->dt_bias, a->a, n, a->h_k,
            a->h_v, a->d_v, a->ld_qk, a->ld_v, a->ld_o, a->ld_g, a->gate_raw, a->l2, a->eps, stage, a->seqs};
    _Static_assert(sizeof pc <= ZN_VK_PUSH_MAX, "push constants");
    uint32_t gx, gy;
    vkops_grid2(o, (a->h_v * a->d_v + rows_wg - 1) / rows_wg, &gx, &gy);
    vkcmd_dispatch(c, p, &pc, sizeof pc, gx, gy, a->seqs ? a->n_tok : 1, name);
    return ZN_OK;
}

/* ---- specialisation constants ---- */

typedef struct spec_wg { uint32_t wg; } spec_wg;                        /* conv1d.comp */
typedef struct spec_gdn { uint32_t wg, sg, dk, lpr, rows, tc, vec; } spec_gdn; /* gdn.comp */

zn_status vkspec_conv1d(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    (void)k, (void)v, (void)err;
    VKSPEC(out, spec_wg, {.wg = o->t.small_wg});
    return ZN_OK;
}

/* 4 subgroups per workgroup; the head dim a multiple of the lanes per cluster. */
zn_status vkspec_gdn(const vkops *o, vkop_kind k, vkvar v, vkspec *out, zn_err *err) {
    const uint32_t sg = o->d->info.subgroup_size, lpr = gdn_lanes(o);
    if (v.head_dim % lpr)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: delta-rule head dim %u vs %u lanes", v.head_dim, lpr);
    const uint32_t tc = gdn_chunk(o, v.head_dim, gdn_rows_wg(o, k));
    VKSPEC(out, spec_gdn, {.wg = 4 * sg, .sg = sg, .dk = v.head_dim, .lpr = lpr, .rows = gdn_kind_rows(k), .tc = tc,
                           .vec = o->t.gdn_vec});
    return ZN_OK;
}
