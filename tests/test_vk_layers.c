/* Every other Vulkan op against the CPU reference (tests/vk_test.h):
 * embedding, norms, RoPE (+ fused norm / KV store), attention (decode,
 * flash prefill, cooperative-matrix prefill), element-wise ops, MoE
 * routing, argmax, conv1d, the gated delta rule. Sizes are small and odd
 * on purpose. */
#include "backend.h"
#include "vk_test.h"

static void test_embed(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        int rows = 23, cols = cols_for(t, 41), T = 5;
        float *wf = malloc(sizeof(float) * rows * cols), *y = malloc(sizeof(float) * T * cols);
        double *ref = malloc(sizeof(double) * T * cols);
        void *wq = make_weights(t, rows, cols, wf);
        int32_t tok[5] = {22, 0, 7, 7, 13};
        for (int r = 0; r < T; r++)
            for (int c = 0; c < cols; c++) ref[r * cols + c] = wf[tok[r] * cols + c];
        size_t rb = vkq_row_bytes(t, cols);
        vkref dw = dev_up(wq, rb * rows), dt = dev_up(tok, sizeof tok), dy = dev_out(sizeof(float) * T * cols);
        zn_err err = {0};
        double e = INFINITY;
        if (begin()) {
            zn_status st = vkop_embed(&E.o, &E.c, t, dw.addr, (uint32_t)rb, (uint32_t)cols, dt.addr, (uint32_t)T, dy.addr, &err);
            if (st) fprintf(stderr, "  %s\n", err.msg);
            if (run() && !st) {
                dev_down(dy, y, sizeof(float) * T * cols);
                e = nmse(y, ref, (size_t)T * cols);
            }
        }
        /* dequantisation is exact up to the rounding of d*q - m */
        CHECK_MSG(e <= 1e-12, "%s: nmse %.3g", zn_type_name(t), e);
        free(wf); free(y); free(ref); free(wq);
        reset();
    }
}

/* One norm case; returns nmse. */
static double norm_case(vknorm_mode mode, int group, int n_groups, bool use_w, bool use_z, bool in_place) {
    size_t n = (size_t)group * n_groups;
    float *x = malloc(sizeof(float) * n), *z = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * group);
    float *y = malloc(sizeof(float) * n);
    double *ref = malloc(sizeof(double) * n);
    fill(x, n, 3.0f); fill(z, n, 2.0f); fill(w, group, 1.0f);
    const float eps = 1e-6f;
    for (int g = 0; g < n_groups; g++) {
        double ss = 0;
        for (int i = 0; i < group; i++) ss += (double)x[g * group + i] * x[g * group + i];
        double sc = mode == VKNORM_RMS ? 1.0 / sqrt(ss / group + eps) : 1.0 / sqrt(ss + eps);
        for (int i = 0; i < group; i++) {
            double v = x[g * group + i] * sc;
            if (use_w) v *= w[i];
            if (use_z) { double zz = z[g * group + i]; v *= zz / (1 + exp(-zz)); }
            ref[g * group + i] = v;
        }
    }
    vkref dx = dev_up(x, sizeof(float) * n), dw = dev_up(w, sizeof(float) * group), dz = dev_up(z, sizeof(float) * n);
    vkref dy = in_place ? dx : dev_out(sizeof(float) * n);
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = vkop_norm(&E.o, &E.c, mode, dx.addr, dy.addr, use_w ? dw.addr : 0, use_z ? dz.addr : 0,
                                 (uint32_t)group, (uint32_t)n_groups, eps, "norm", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dy, y, sizeof(float) * n);
            e = nmse(y, ref, n);
        }
    }
    free(x); free(z); free(w); free(y); free(ref);
    reset();
    return e;
}

static void test_norms(void) {
    /* f32 sums of a few hundred squares: relative error ~1e-7 */
    const double tol = 1e-11;
    double e[6] = {norm_case(VKNORM_RMS, 256, 3, true, false, false), norm_case(VKNORM_RMS, 37, 5, true, false, true),
                   norm_case(VKNORM_RMS, 128, 4, false, false, false), norm_case(VKNORM_RMS, 300, 2, true, true, false),
                   norm_case(VKNORM_L2, 128, 6, false, false, true), norm_case(VKNORM_L2, 19, 3, false, false, false)};
    for (int i = 0; i < 6; i++) CHECK_MSG(e[i] <= tol, "case %d: nmse %.3g", i, e[i]);
}


/* RoPE: NORM and NEOX against a double-precision reference with ggml's
 * running-product angles; IMROPE against gdn.c's reference. */
static double rope_case(int mode, int head_dim, int n_rot, int n_heads, int T, int n_past, bool use_ff) {
    const int stride = n_heads * head_dim + 3; /* rows wider than the heads: stride matters */
    size_t n = (size_t)T * stride;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), ff[64];
    double *ref = malloc(sizeof(double) * n);
    fill(x, n, 1.0f);
    for (int i = 0; i < n_rot / 2; i++) ff[i] = 1.0f + 0.25f * (float)(i % 3);
    const float base = 10000.0f, fscale = mode == 1 ? 0.5f : 1.0f;
    const int sec[4] = {3, 3, 2, 0};
    float *xi = malloc(sizeof(float) * n);
    memcpy(xi, x, sizeof(float) * n);
    for (size_t i = 0; i < n; i++) ref[i] = x[i];
    for (int r = 0; r < T; r++) {
        int p = n_past + r;
        if (mode == 2) {
            float cs[128];
            int32_t pos[4] = {p, p, p, 0};
            gdn_imrope_cache(cs, n_rot, sec, pos, base, fscale);
            gdn_rope_neox_apply(xi + (size_t)r * stride, n_heads, head_dim, n_rot, cs);
            for (int i = 0; i < n_heads * head_dim; i++) ref[(size_t)r * stride + i] = xi[(size_t)r * stride + i];
            continue;
        }
        float ts = powf(base, -2.0f / n_rot);
        for (int h = 0; h < n_heads; h++) {
            float th = (float)p;
            for (int i = 0; i < n_rot / 2; i++, th *= ts) {
                double t = (double)th / (use_ff ? ff[i] : 1.0f) * fscale;
                int i0 = mode == 0 ? 2 * i : i, i1 = mode == 0 ? i0 + 1 : i + n_rot / 2;
                size_t b = (size_t)r * stride + (size_t)h * head_dim;
                double a = x[b + i0], c = x[b + i1];
                ref[b + i0] = a * cos(t) - c * sin(t);
                ref[b + i1] = a * sin(t) + c * cos(t);
            }
        }
    }
    vkref dx = dev_up(x, sizeof(float) * n), df = dev_up(ff, sizeof ff);
    vkop_rope a = {.x = dx.addr, .ff = use_ff ? df.addr : 0, .n_tok = (uint32_t)T, .n_heads = (uint32_t)n_heads,
                   .head_dim = (uint32_t)head_dim, .n_rot = (uint32_t)n_rot, .row_stride = (uint32_t)stride,
                   .mode = (uint32_t)mode, .n_past = (uint32_t)n_past, .sections = {sec[0], sec[1], sec[2], sec[3]},
                   .freq_base = base, .freq_scale = fscale};
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = vkop_rope_run(&E.o, &E.c, &a, "rope", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dx, y, sizeof(float) * n);
            e = nmse(y, ref, n);
        }
    }
    free(x); free(y); free(xi); free(ref);
    reset();
    return e;
}

static void test_rope(void) {
    /* f32 angles up to ~40 rad and GPU cos/sin: ~1e-7 relative */
    const double tol = 1e-10;
    double e0 = rope_case(0, 64, 64, 3, 4, 5, true), e1 = rope_case(1, 64, 32, 2, 3, 17, false);
    double e2 = rope_case(2, 32, 32, 3, 3, 9, false), e3 = rope_case(1, 128, 128, 1, 2, 0, false);
    CHECK_MSG(e0 <= tol, "NORM: nmse %.3g", e0);
    CHECK_MSG(e1 <= tol, "NEOX partial: nmse %.3g", e1);
    CHECK_MSG(e2 <= tol, "IMROPE: nmse %.3g", e2);
    CHECK_MSG(e3 <= tol, "NEOX p=0: nmse %.3g", e3);
}

/* A paged KV cache (vk_ops.h vkop_kv, shaders/kvtab.glsl) for the op
 * tests: two attention layers of K rows of rbk bytes and V rows of rbv, the
 * ops on the second (its rows at offsets past the first's), the nb blocks
 * of n_ctx positions in reverse order behind an unused one, so the kernels
 * must go through the table (a contiguous reading finds other positions),
 * and tiles of keys span blocks. host: what the cache should hold. */
typedef struct paged {
    size_t rbk, rbv, pos_bytes, koff, voff, bytes;
    int nb;
    uint8_t *host;
    vkref buf, tab;
} paged;

/* Where position j's row starts (table entry j / ZN_KV_BLOCK names slot nb - that). */
static size_t paged_at(const paged *pg, int j) {
    const size_t slot = (size_t)(pg->nb - j / ZN_KV_BLOCK);
    return (slot * ZN_KV_BLOCK + (size_t)(j % ZN_KV_BLOCK)) * pg->pos_bytes;
}

static paged paged_make(size_t rbk, size_t rbv, int n_ctx) {
    paged pg = {.rbk = rbk, .rbv = rbv, .pos_bytes = 2 * (rbk + rbv), .koff = rbk + rbv, .voff = 2 * rbk + rbv,
                .nb = (n_ctx + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK};
    pg.bytes = (size_t)(pg.nb + 1) * ZN_KV_BLOCK * pg.pos_bytes;
    pg.host = calloc(pg.bytes, 1);
    return pg;
}

static uint8_t *paged_k(paged *pg, int j) { return pg->host + paged_at(pg, j) + pg->koff; }
static uint8_t *paged_v(paged *pg, int j) { return pg->host + paged_at(pg, j) + pg->voff; }

/* Uploads the host copy and the table naming its blocks. */
static vkop_kv paged_up(paged *pg) {
    uint64_t *t = malloc(sizeof *t * (size_t)pg->nb);
    pg->buf = dev_up(pg->host, pg->bytes);
    for (int b = 0; b < pg->nb; b++) t[b] = pg->buf.addr + paged_at(pg, b * ZN_KV_BLOCK);
    pg->tab = dev_up(t, sizeof *t * (size_t)pg->nb);
    free(t);
    return (vkop_kv){.tab = pg->tab.addr, .koff = (uint32_t)pg->koff, .voff = (uint32_t)pg->voff,
                     .pos_bytes = (uint32_t)pg->pos_bytes};
}

/* The first byte offset where the device's cache differs from the host's + 1 (0: none). */
static size_t paged_diff(const paged *pg) {
    uint8_t *got = malloc(pg->bytes);
    dev_down(pg->buf, got, pg->bytes);
    size_t at = 0;
    for (size_t i = 0; !at && i < pg->bytes; i++) at = got[i] != pg->host[i] ? i + 1 : 0;
    free(got);
    return at;
}

/* RoPE with the per-head RMS norm before it and the KV store after it fused
 * in: the f16 K cache rows must hold rope(norm(src)), the V rows copied.
 * The position comes from a step block (vkop_step), as in a replayed decode
 * step; the push constants carry a wrong one. */
static void test_rope_fused(void) {
    const int hd = 64, n_rot = 32, nh = 3, T = 2, n_past = 3, vdim = nh * 16, kdim = nh * hd, n_ctx = n_past + T;
    float src[2 * 192], nw[64], v[2 * 48], h[64];
    double ref[2 * 192], vref[2 * 48];
    fill(src, sizeof src / sizeof *src, 2.0f); fill(nw, 64, 1.0f); fill(v, sizeof v / sizeof *v, 1.0f);
    const float base = 10000.0f, eps = 1e-6f, ts = powf(base, -2.0f / n_rot);
    for (int r = 0; r < T; r++)
        for (int hh = 0; hh < nh; hh++) {
            const float *x = src + r * kdim + hh * hd;
            double ss = 0;
            for (int d = 0; d < hd; d++) ss += (double)x[d] * x[d];
            for (int d = 0; d < hd; d++) h[d] = (float)(x[d] / sqrt(ss / hd + eps) * nw[d]);
            double *o = ref + r * kdim + hh * hd;
            for (int d = 0; d < hd; d++) o[d] = h[d];
            float th = (float)(n_past + r);
            for (int i = 0; i < n_rot / 2; i++, th *= ts) { /* NEOX */
                o[i] = h[i] * cos(th) - h[i + n_rot / 2] * sin(th);
                o[i + n_rot / 2] = h[i] * sin(th) + h[i + n_rot / 2] * cos(th);
            }
        }
    for (int i = 0; i < T * vdim; i++) vref[i] = zn_fp16_to_f32(zn_f32_to_fp16(v[i]));
    vkref dsrc = dev_up(src, sizeof src), dnw = dev_up(nw, sizeof nw), dv = dev_up(v, sizeof v);
    vkref dx = dev_out(sizeof src);
    paged pg = paged_make(2 * (size_t)kdim, 2 * (size_t)vdim, n_ctx);
    vkop_step step = {.n_past = n_past};
    vkop_rope a = {.x = dx.addr, .src = dsrc.addr, .nw = dnw.addr, .kv = paged_up(&pg), .v = dv.addr,
                   .step = dev_up(&step, sizeof step).addr, .n_tok = T, .n_heads = nh, .head_dim = hd,
                   .n_rot = n_rot, .row_stride = kdim, .mode = 1, .n_past = 0, .vdim = vdim, .freq_base = base, .freq_scale = 1.0f, .eps = eps};
    zn_err err = {0};
    bool ok = false;
    if (begin()) {
        zn_status st = vkop_rope_run(&E.o, &E.c, &a, "rope", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        ok = run() && !st;
    }
    CHECK(ok);
    if (ok) {
        float kf[2 * 192], vf[2 * 48];
        dev_down(pg.buf, pg.host, pg.bytes);
        for (int r = 0; r < T; r++) {
            const zn_half *kh = (const zn_half *)paged_k(&pg, n_past + r), *vh = (const zn_half *)paged_v(&pg, n_past + r);
            for (int i = 0; i < kdim; i++) kf[r * kdim + i] = zn_fp16_to_f32(kh[i]);
            for (int i = 0; i < vdim; i++) vf[r * vdim + i] = zn_fp16_to_f32(vh[i]);
        }
        double ek = nmse(kf, ref, (size_t)T * kdim), ev = nmse(vf, vref, (size_t)T * vdim);
        CHECK_MSG(ek <= 1e-6, "K cache: nmse %.3g (f16 storage: ~1e-7)", ek);
        CHECK_MSG(ev == 0, "V cache: nmse %.3g (a rounded copy: exact)", ev);
        /* nothing else of the cache written: clear those rows, the rest is 0 */
        for (int r = 0; r < T; r++) {
            memset(paged_k(&pg, n_past + r), 0, pg.rbk);
            memset(paged_v(&pg, n_past + r), 0, pg.rbv);
        }
        size_t nz = 0;
        for (size_t i = 0; i < pg.bytes; i++) nz += pg.host[i] != 0;
        CHECK_MSG(nz == 0, "%zu bytes of the cache written outside the rows of the tokens", nz);
    }
    free(pg.host);
    reset();
}

/* KV store then attention in cache format kt (E.o.kvq set to match);
 * reference in double over the cache's values: K and V as the CPU backend
 * stores them (backend_kv_put: f16, or Q8_0 / Q4_0 blocks), dequantised.
 * The cache holds the first n_past rows already, the kernel stores T more:
 * the whole cache must then hold the CPU's bytes, in the paged layout
 * above (blocks scrambled, the rows of another layer beside them). via_step:
 * the position comes from a step block (vkop_step) and the push constants
 * carry a wrong one. */
static double attn_case_kv(zn_kv_type kt, int n_head, int n_kv, int hd_k, int hd_v, int n_past, int T, bool via_step) {
    int n_ctx = n_past + T, kdim = n_kv * hd_k, vdim = n_kv * hd_v;
    const size_t rbk = backend_kv_bytes(kt, kdim), rbv = backend_kv_bytes(kt, vdim);
    float *kc = malloc(sizeof(float) * n_ctx * kdim), *vc = malloc(sizeof(float) * n_ctx * vdim);
    float *q = malloc(sizeof(float) * T * n_head * hd_k), *y = malloc(sizeof(float) * T * n_head * hd_v);
    double *ref = malloc(sizeof(double) * T * n_head * hd_v), *sc = malloc(sizeof(double) * n_ctx);
    fill(kc, (size_t)n_ctx * kdim, 1.0f); fill(vc, (size_t)n_ctx * vdim, 1.0f); fill(q, (size_t)T * n_head * hd_k, 1.0f);
    /* the CPU's cache (kb, vb), its values (kf, vf), and what is uploaded:
     * the rows before n_past, those this step writes zeroed */
    uint8_t *kb = malloc(rbk * n_ctx), *vb = malloc(rbv * n_ctx);
    paged pg = paged_make(rbk, rbv, n_ctx);
    float *kf = malloc(sizeof(float) * n_ctx * kdim), *vf = malloc(sizeof(float) * n_ctx * vdim);
    for (int j = 0; j < n_ctx; j++) {
        backend_kv_quantize(kt, kc + (size_t)j * kdim, kb + rbk * j, kdim); /* kv_store.comp does not rotate */
        backend_kv_quantize(kt, vc + (size_t)j * vdim, vb + rbv * j, vdim);
    }
    backend_kv_dequantize(kt, kb, kf, (int64_t)n_ctx * kdim);
    backend_kv_dequantize(kt, vb, vf, (int64_t)n_ctx * vdim);
    for (int j = 0; j < n_past; j++) {
        memcpy(paged_k(&pg, j), kb + rbk * j, rbk);
        memcpy(paged_v(&pg, j), vb + rbv * j, rbv);
    }
    const float scale = 1.0f / sqrtf((float)hd_k);
    for (int r = 0; r < T; r++)
        for (int h = 0; h < n_head; h++) {
            int g = h / (n_head / n_kv), p = n_past + r;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= p; j++) {
                double a = 0;
                for (int d = 0; d < hd_k; d++) a += (double)q[(r * n_head + h) * hd_k + d] * kf[j * kdim + g * hd_k + d];
                sc[j] = a * scale;
                if (sc[j] > mx) mx = sc[j];
            }
            for (int j = 0; j <= p; j++) sum += sc[j] = exp(sc[j] - mx);
            for (int d = 0; d < hd_v; d++) {
                double o = 0;
                for (int j = 0; j <= p; j++) o += sc[j] * vf[j * vdim + g * hd_v + d];
                ref[(r * n_head + h) * hd_v + d] = o / sum;
            }
        }
    const vkop_kv kv = paged_up(&pg);
    for (int j = n_past; j < n_ctx; j++) { /* what the kernel must write */
        memcpy(paged_k(&pg, j), kb + rbk * j, rbk);
        memcpy(paged_v(&pg, j), vb + rbv * j, rbv);
    }
    zn_err err = {0};
    vkref dk = dev_up(kc + (size_t)n_past * kdim, sizeof(float) * T * kdim), dv = dev_up(vc + (size_t)n_past * vdim, sizeof(float) * T * vdim);
    vkref dq = dev_up(q, sizeof(float) * T * n_head * hd_k), dy = dev_out(sizeof(float) * T * n_head * hd_v);
    uint64_t pf = vkop_attn_part_floats(&E.o, (uint32_t)T, (uint32_t)n_ctx, (uint32_t)n_head, (uint32_t)hd_v);
    vkref dp = dev_out(pf ? 4 * pf : 4);
    vkop_step step = {.n_past = (uint32_t)n_past};
    const VkDeviceAddress sa = via_step ? dev_up(&step, sizeof step).addr : 0;
    /* a wrong push-constant position with the same split count */
    const uint32_t pc_past = via_step ? (uint32_t)n_past - 1 : (uint32_t)n_past;
    vkop_attn a = {.q = dq.addr, .kv = kv, .dst = dy.addr, .part = dp.addr, .step = sa,
                   .n_tok = (uint32_t)T, .n_past = pc_past, .n_head = (uint32_t)n_head, .n_head_kv = (uint32_t)n_kv,
                   .hd_k = (uint32_t)hd_k, .hd_v = (uint32_t)hd_v, .scale = scale};
    double e = INFINITY;
    if (begin()) {
        zn_status st = vkop_kv_store(&E.o, &E.c, dk.addr, dv.addr, &kv, (uint32_t)T, (uint32_t)kdim, (uint32_t)vdim,
                                     pc_past, sa, 0, "kv", &err);
        vkcmd_barrier(&E.c);
        if (!st) st = vkop_attn_run(&E.o, &E.c, &a, "attn", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dy, y, sizeof(float) * T * n_head * hd_v);
            e = nmse(y, ref, (size_t)T * n_head * hd_v);
            const size_t at = paged_diff(&pg);
            CHECK_MSG(!at, "%s cache, %d + %d rows of %d/%d: not the CPU's bytes (from byte %zu of a row, %zu rows "
                      "into the buffer)", backend_kv_type_name(kt), n_past, T, kdim, vdim, at ? (at - 1) % pg.pos_bytes : 0,
                      at ? (at - 1) / pg.pos_bytes : 0);
        }
    }
    free(kc); free(vc); free(q); free(y); free(ref); free(sc); free(kb); free(vb); free(pg.host); free(kf); free(vf);
    reset();
    return e;
}

static double attn_case(int n_head, int n_kv, int hd_k, int hd_v, int n_past, int T, bool via_step) {
    return attn_case_kv(ZN_KV_F16, n_head, n_kv, hd_k, hd_v, n_past, T, via_step);
}

static void test_attention(void) {
    const double tol = 1e-10;
    const bool fa_cm = E.o.fa_cm, dec = E.o.attn_dec;
    const uint32_t chunk = E.o.t.attn_chunk;
    E.o.fa_cm = false; /* the f32 kernels (matrix products: test_attention_mm) */
    E.o.attn_dec = false, E.o.t.attn_chunk = ZN_VK_ATTN_CHUNK; /* attn.comp alone (tuning attn_dec=off) */
    double e0 = attn_case(4, 2, 64, 64, 0, 7, false);      /* causal prefill from empty, GQA 2 */
    double e1 = attn_case(2, 1, 128, 32, 13, 5, false);    /* prefill after a prefix, hd_k != hd_v */
    double e2 = attn_case(4, 4, 32, 32, 1100, 1, false);   /* decode with split-K (5 chunks -> 8 splits) */
    double e3 = attn_case(3, 1, 256, 256, 200, 1, false);  /* decode, head dim 256, one split */
    double e4 = attn_case(4, 4, 32, 32, 1030, 1, true);    /* split-K, position from the step block */
    double e5 = attn_case(2, 1, 128, 32, 13, 5, true);     /* prefill, position from the step block */
    CHECK(vkop_attn_splits(&E.o, 1, 1031) == 8 && vkop_attn_splits(&E.o, 1, 1024) == 4 &&
          vkop_attn_splits(&E.o, 1, 256) == 1 && vkop_attn_splits(&E.o, 1, 257) == 2 &&
          vkop_attn_splits(&E.o, 2, 5000) == 1);
    CHECK_MSG(e0 <= tol, "prefill: nmse %.3g", e0);
    CHECK_MSG(e1 <= tol, "prefill after prefix: nmse %.3g", e1);
    CHECK_MSG(e2 <= tol, "split-K decode: nmse %.3g", e2);
    CHECK_MSG(e3 <= tol, "hd 256 decode: nmse %.3g", e3);
    CHECK_MSG(e4 <= tol, "split-K decode via the step block: nmse %.3g", e4);
    CHECK_MSG(e5 <= tol, "prefill via the step block: nmse %.3g", e5);
    E.o.t.attn_chunk = 4; /* 512 splits: the merge takes them in two blocks */
    const double e6 = attn_case(4, 2, 64, 64, 1100, 1, false);
    E.o.t.attn_chunk = ZN_VK_ATTN_CHUNK;
    CHECK_MSG(e6 <= tol, "512 splits: nmse %.3g", e6);
    /* prefill of >= 16 rows: attn_fa.comp (32-row blocks, 64 / 32 / 16-key tiles by head dim) */
    double f0 = attn_case(4, 2, 64, 64, 0, 40, false), f1 = attn_case(2, 1, 128, 128, 45, 50, false);
    double f2 = attn_case(2, 2, 256, 256, 10, 33, false), f3 = attn_case(6, 2, 128, 128, 0, 16, false);
    double f4 = attn_case(2, 1, 128, 128, 45, 50, true);
    double f5 = attn_case(4, 2, 64, 64, 230, 60, false); /* rows and keys in two blocks */
    CHECK_MSG(f5 <= tol, "flash prefill across a block: nmse %.3g", f5);
    CHECK_MSG(f0 <= tol, "flash prefill hd 64: nmse %.3g", f0);
    CHECK_MSG(f1 <= tol, "flash prefill hd 128 after prefix: nmse %.3g", f1);
    CHECK_MSG(f2 <= tol, "flash prefill hd 256: nmse %.3g", f2);
    CHECK_MSG(f3 <= tol, "flash prefill GQA 3: nmse %.3g", f3);
    CHECK_MSG(f4 <= tol, "flash prefill via the step block: nmse %.3g", f4);
    E.o.fa_cm = fa_cm, E.o.attn_dec = dec, E.o.t.attn_chunk = chunk;
}

/* Decode attention per KV head (attn_dec.comp) against the same reference:
 * head dims 64/128/256, GQA 1..16, contexts of 1, 37, 300 and 4097 keys,
 * 1 to 4 tokens, with and without splits (a tiny chunk gives splits that
 * are empty, or empty for the first token's row only); where it does not
 * apply (hd_k != hd_v, other head dims, more rows or tokens), attn.comp
 * with the splits of this rule. */
static void test_attention_dec(void) {
    const double tol = 1e-10;
    const bool dec = E.o.attn_dec;
    const uint32_t chunk = E.o.t.attn_chunk;
    E.o.attn_dec = E.d.info.subgroup_size >= 8; /* as vkops_init has it with attn_dec on */
    if (!E.o.attn_dec) {
        E.o.attn_dec = dec;
        SKIP("subgroups of %u lanes: no attn_dec.comp on this device", E.d.info.subgroup_size);
    }
    /* short contexts: attn.comp unsplit (vkops_init's threshold) */
    E.o.t.attn_chunk = ZN_VK_ATTN_DEC_CHUNK;
    CHECK(vkop_attn_splits(&E.o, 1, ZN_VK_ATTN_CHUNK) == 1 && vkop_attn_splits(&E.o, 1, ZN_VK_ATTN_CHUNK + 1) > 1);
    const double es = attn_case(8, 2, 128, 128, 100, 1, true), el = attn_case(8, 2, 128, 128, 300, 1, true);
    CHECK_MSG(es <= tol && el <= tol, "101 keys (attn.comp): nmse %.3g; 301 keys (attn_dec.comp, split): %.3g", es, el);
    /* from here on attn_dec.comp at every context length (its splits as the chunk says) */
    const uint32_t min_kv = E.o.t.attn_dec_min;
    E.o.t.attn_dec_min = 0;
    CHECK(vkop_attn_splits(&E.o, 1, 64) == 1 && vkop_attn_splits(&E.o, 1, 65) == 2 &&
          vkop_attn_splits(&E.o, 1, 4097) == 128 && vkop_attn_splits(&E.o, ZN_VK_ATTN_SPLIT_TOK, 4097) == 128 &&
          vkop_attn_splits(&E.o, ZN_VK_ATTN_SPLIT_TOK + 1, 4097) == 1 &&
          vkop_attn_splits(&E.o, 1, 1u << 24) == ZN_VK_ATTN_MAX_SPLIT);
    CHECK(vkop_attn_part_floats(&E.o, 1, 4097, 8, 64) == 128ull * 8 * 66 * ZN_VK_ATTN_SPLIT_TOK);
    /* the GPU rows' cap (t.attn_wgs): KV heads x splits at most 264, not below 2 splits */
    const uint32_t wgs = E.o.t.attn_wgs, nkv = E.o.n_head_kv;
    E.o.t.attn_wgs = 264, E.o.n_head_kv = 8;
    CHECK(vkop_attn_splits(&E.o, 1, 4097) == 32 && vkop_attn_splits(&E.o, 1, 1u << 24) == 32 &&
          vkop_attn_splits(&E.o, 1, 129) == 4 && vkop_attn_splits(&E.o, 1, 64) == 1);
    CHECK(vkop_attn_part_floats(&E.o, 1, 4097, 64, 64) == 32ull * 64 * 66 * ZN_VK_ATTN_SPLIT_TOK);
    E.o.n_head_kv = 2;
    CHECK(vkop_attn_splits(&E.o, 1, 4097) == 128 && vkop_attn_splits(&E.o, 1, 1u << 24) == 128);
    E.o.n_head_kv = 200;
    CHECK(vkop_attn_splits(&E.o, 1, 4097) == 2);
    E.o.t.attn_wgs = ZN_VK_OFF;
    CHECK(vkop_attn_splits(&E.o, 1, 4097) == 128);
    E.o.t.attn_wgs = wgs, E.o.n_head_kv = nkv;
    static const struct { int n_head, n_kv, n_past, T; uint32_t chunk; bool via_step; } cs[] = {
        {4, 4, 0, 1, 0, false},      /* one key, GQA 1 */
        {4, 2, 36, 1, 0, false},     /* 37 keys, GQA 2, one split */
        {8, 2, 36, 1, 16, true},     /* 37 keys in 4 splits, GQA 4, position from the step block */
        {8, 1, 299, 1, 0, false},    /* 300 keys in 8 splits, GQA 8 */
        {16, 1, 36, 1, 0, false},    /* GQA 16 */
        {8, 2, 4096, 1, 0, true},    /* 4097 keys in 128 splits */
        {4, 4, 4094, 3, 0, false},   /* 3 tokens (4 rows) over 4097 keys in 128 splits */
        {8, 2, 296, 4, 0, true},     /* 4 tokens x GQA 4: 16 rows, split */
        {8, 2, 7, 4, 2, false},      /* chunk 2: a split with keys only for the last rows */
        {4, 4, 3, 2, 1, false},      /* 5 keys in 8 splits of 1: some empty */
        {8, 2, 299, 2, 512, false},  /* 301 keys, one split: many tiles */
        {4, 1, 1000, 1, 600, true},  /* 1001 keys in 2 splits of many tiles */
        {8, 2, 20, 6, 0, false},     /* 6 tokens: attn.comp, one split */
        {8, 1, 40, 3, 0, false},     /* 24 rows: attn.comp */
    };
    static const int hds[][2] = {{64, 64}, {128, 128}, {256, 256}, {128, 64}, {64, 256}};
    for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
        for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
            if (hi >= 3 && i % 3) continue; /* hd_k != hd_v (attn.comp): a few cases */
            /* 16 rows at one head dim: those variants take lavapipe ~10 s each to compile */
            if (hds[hi][0] != 128 && cs[i].n_head / cs[i].n_kv * cs[i].T == 16) continue;
            E.o.t.attn_chunk = cs[i].chunk ? cs[i].chunk : ZN_VK_ATTN_DEC_CHUNK;
            const double e = attn_case(cs[i].n_head, cs[i].n_kv, hds[hi][0], hds[hi][1], cs[i].n_past, cs[i].T, cs[i].via_step);
            CHECK_MSG(e <= tol, "hd %d/%d, %d/%d heads, %d + %d tokens, chunk %u: nmse %.3g", hds[hi][0], hds[hi][1],
                      cs[i].n_head, cs[i].n_kv, cs[i].n_past, cs[i].T, E.o.t.attn_chunk, e);
        }
    for (int k = VKO_ATTN_DEC64; k <= VKO_ATTN_DEC256; k++)
        for (int slot = 0; slot < (k == VKO_ATTN_DEC128 ? 5 : 4); slot++) /* 1, 2, 4, 8 (and 16) rows ran on it */
            CHECK_MSG(E.o.pipes[k][slot].pipe != VK_NULL_HANDLE, "attn_dec.comp, hd %d, %d rows: not used",
                      64 << (k - VKO_ATTN_DEC64), 1 << slot);
    /* head dims it does not take: attn.comp with the derived chunk */
    E.o.t.attn_chunk = ZN_VK_ATTN_DEC_CHUNK;
    const double e0 = attn_case(4, 4, 32, 32, 1100, 1, false), e1 = attn_case(4, 2, 96, 96, 300, 3, true);
    const double e2 = attn_case(2, 1, 64, 36, 300, 1, false); /* the merge's last 32 dims partly past hd_v */
    CHECK_MSG(e0 <= tol, "hd 32, split: nmse %.3g", e0);
    CHECK_MSG(e1 <= tol, "hd 96, 3 tokens split: nmse %.3g", e1);
    CHECK_MSG(e2 <= tol, "hd 64/36, split: nmse %.3g", e2);
    E.o.attn_dec = dec, E.o.t.attn_chunk = chunk, E.o.t.attn_dec_min = min_kv;
}

/* Prefill attention on matrix products (attn_fa_cm.glsl): every tile config
 * the device runs, with K and V in one shared buffer and (where it fits) in
 * two, on cooperative matrices where the device has them, else on their
 * emulation. Q and P are rounded to f16 for the products, so the bound is
 * that of f16 operands (lavapipe, emulated: 1.5e-8 .. 4.3e-8), not the f32
 * kernels' 1e-10. */
static void test_attention_mm(void) {
    const double tol = 5e-7;
    const vkops saved = E.o;
    E.o.mm_emulate = !E.o.coopmat;
    E.o.fa_cm = true;
    int n_run = 0, n_kv2 = 0;
    for (uint32_t ci = 0; ci < ZN_VK_FA_NCFG; ci++) {
        if (!vkops_fa_cfg_ok(&E.o, ci)) continue;
        const vkfa_cfg *f = &zn_vk_fa_cfgs[ci];
        const int hd = (int)f->hd;
        const vkop_kind k = vkops_fa_kind(&E.o, ci);
        E.o.t.fa_cfg = ci;
        E.o.t.fa_kv2 = true;
        const uint32_t kv2_bytes = vkops_fa_cfg_bytes(&E.o, ci);
        for (int v = 1; v >= 0; v--) {
            E.o.t.fa_kv2 = v;
            if (!v && vkops_fa_cfg_bytes(&E.o, ci) == kv2_bytes) break; /* no second buffer here anyway */
            n_kv2 += v;
            vkpipe_destroy(&E.o.ps, &E.o.pipes[k][ci]); /* built with this fa_kv2 */
            CHECK(vkops_fa_cfg_for(&E.o, f->hd, 16) == ci && vkops_fa_cfg_for(&E.o, f->hd, 1u << 20) == ci);
            const double e[] = {
                attn_case(4, 4, hd, hd, 0, 37, false),   /* GQA 1, odd length */
                attn_case(8, 2, hd, hd, 21, 130, false), /* GQA 4 after a prefix */
                attn_case(8, 1, hd, hd, 5, 37, true),    /* GQA 8, position from the step block */
                attn_case(6, 2, hd, hd, 0, 16, false),   /* GQA 3: blocks split a token's heads */
                attn_case(4, 2, hd, hd, 240, 33, false), /* rows and keys in two cache blocks */
            };
            for (size_t i = 0; i < sizeof e / sizeof *e; i++)
                CHECK_MSG(e[i] <= tol, "config %u (hd %u, %u rows x %u keys, %s, %s), case %zu: nmse %.3g", ci,
                          f->hd, f->br, f->bc, f->sg ? "a subgroup per 16 rows" : "shared S tiles",
                          v ? "K/V buffers" : "one K/V buffer", i, e[i]);
            CHECK_MSG(E.o.pipes[k][ci].pipe != VK_NULL_HANDLE, "config %u: kernel not used (%s)", ci, E.o.fa_err);
            E.o.fa_cm = true;
            n_run++;
        }
    }
    /* lavapipe (32 KiB of shared memory) fits the defaults and 16-row hd
     * 128, which has room for the second buffer */
    CHECK(n_run >= 5 && n_kv2 >= 1);
    bool dims[3] = {false, false, false}, sg = false;
    for (uint32_t ci = 0; ci < ZN_VK_FA_NCFG; ci++)
        if (vkops_fa_cfg_ok(&E.o, ci)) {
            dims[zn_vk_fa_cfgs[ci].hd == 64 ? 0 : zn_vk_fa_cfgs[ci].hd == 128 ? 1 : 2] = true;
            sg |= zn_vk_fa_cfgs[ci].sg;
        }
    CHECK(dims[0] && dims[1] && dims[2] && sg); /* both kernels ran */
    E.o.mm_emulate = saved.mm_emulate, E.o.fa_cm = saved.fa_cm, E.o.t.fa_cfg = saved.t.fa_cfg, E.o.t.fa_kv2 = saved.t.fa_kv2;
    for (uint32_t ci = 0; ci < ZN_VK_FA_NCFG; ci++) /* built as saved.t.fa_kv2 says */
        vkpipe_destroy(&E.o.ps, &E.o.pipes[vkops_fa_kind(&E.o, ci)][ci]);
}

/* A driver that refuses a prefill attention pipeline: the next config that
 * fits takes its place (a subgroup kernel refused: the shared-tile one), and
 * attn_fa.comp when every config is refused; the results stay right and the
 * other configs stay on. */
static void test_attention_refused(void) {
    enum { FA_HD128 = 4 }; /* attn_fa.comp's slot for head dim 128 (8 << 4) */
    const double tol = 5e-7;
    const vkops saved = E.o;
    E.o.mm_emulate = !E.o.coopmat;
    E.o.fa_cm = true;
    E.o.t.fa_cfg = ZN_VK_MM_AUTO;
    E.o.t.fa_sg_kv = 1; /* the subgroup kernel first at every length */
    const uint32_t sg = vkops_fa_cfg_for(&E.o, 128, 151);
    CHECK(sg != ZN_VK_MM_AUTO && zn_vk_fa_cfgs[sg].sg);
    if (sg == ZN_VK_MM_AUTO) {
        E.o = saved;
        return;
    }
    for (uint32_t ci = 0; ci < ZN_VK_FA_NCFG; ci++) vkpipe_destroy(&E.o.ps, &E.o.pipes[vkops_fa_kind(&E.o, ci)][ci]);
    vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_ATTN_FA][FA_HD128]);
    const vkop_kind ksg = vkops_fa_kind(&E.o, sg);
    E.o.refuse_kinds = 1ull << ksg;
    double e = attn_case(8, 2, 128, 128, 21, 130, false);
    CHECK_MSG(e <= tol, "subgroup kernel refused: nmse %.3g", e);
    uint32_t sh = ZN_VK_MM_AUTO; /* the shared-tile config that took its place */
    for (uint32_t ci = 0; ci < ZN_VK_FA_NCFG; ci++)
        if (E.o.pipes[vkops_fa_kind(&E.o, ci)][ci].pipe) sh = ci;
    CHECK_MSG(sh != ZN_VK_MM_AUTO && !zn_vk_fa_cfgs[sh].sg && zn_vk_fa_cfgs[sh].hd == 128,
              "no shared-tile config ran in the refused one's place (%s)", E.o.fa_err);
    CHECK(E.o.fa_refused >> sg & 1 && E.o.fa_cm && strstr(E.o.fa_err, "refused"));
    CHECK(!E.o.pipes[VKO_ATTN_FA][FA_HD128].pipe);
    /* every config refused: the scalar kernel */
    E.o.refuse_kinds |= 1ull << vkops_fa_kind(&E.o, sh);
    vkpipe_destroy(&E.o.ps, &E.o.pipes[vkops_fa_kind(&E.o, sh)][sh]);
    e = attn_case(8, 2, 128, 128, 21, 130, false);
    CHECK_MSG(e <= 1e-10, "every config refused: nmse %.3g", e);
    CHECK(vkops_fa_cfg_for(&E.o, 128, 151) == ZN_VK_MM_AUTO);
    CHECK_MSG(E.o.pipes[VKO_ATTN_FA][FA_HD128].pipe != VK_NULL_HANDLE, "attn_fa.comp did not run (%s)", E.o.fa_err);
    for (uint32_t ci = 0; ci < ZN_VK_FA_NCFG; ci++) vkpipe_destroy(&E.o.ps, &E.o.pipes[vkops_fa_kind(&E.o, ci)][ci]);
    E.o.mm_emulate = saved.mm_emulate, E.o.fa_cm = saved.fa_cm, E.o.t = saved.t;
    E.o.refuse_kinds = 0, E.o.fa_refused = 0, E.o.fa_err[0] = 0;
}

/* The kernels with the cache format as a specialisation constant, built
 * anew for E.o.kvq. */
static void kvq_set(zn_kv_type kt) {
    static const vkop_kind kinds[] = {VKO_KV_STORE,   VKO_ATTN,        VKO_ATTN_FA,     VKO_ATTN_DEC64,
                                      VKO_ATTN_DEC128, VKO_ATTN_DEC256, VKO_ATTN_FA_CM, VKO_ATTN_FA_EMU,
                                      VKO_ATTN_FA_SG,  VKO_ATTN_FA_SGE};
    E.o.kvq = vkops_kvq(kt);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int v = 0; v < ZN_VK_NVAR; v++) vkpipe_destroy(&E.o.ps, &E.o.pipes[kinds[k]][v]);
}

/* The Q8_0, Q4_0 and q3_0r caches (vk_ops.h kvq; q3_0r's blocks without
 * its rotation, which is kv_rot.comp's): kv_store.comp writes the CPU's
 * bytes, attn.comp (prefill rows, decode, split-K, head dims 32..256,
 * hd_k != hd_v) and attn_fa.comp (16+ rows) read them, both exactly: the
 * dequantised values d * q are exact in f32, so the bound is the f32
 * kernels' of test_attention. Then decode past attn_dec_min keys on
 * attn_dec.comp (head dims 64, 128, 256; several rows; split), which keeps
 * the dequantised values as f16 (as the CPU backend does): bound 1e-6
 * (f16 rounding of values exact in f32). Then the flash prefill cases on
 * matrix products (attn_fa_cm.glsl and attn_fa_sg.glsl, or their
 * emulation), which also round the dequantised values to f16:
 * test_attention_mm's bound (hd 64). */
static void test_attention_kvq(void) {
    const double tol = 1e-10, tol_dec = 1e-6, tol_mm = 5e-7;
    int n_mm = 0;
    const bool fa_cm = E.o.fa_cm, dec = E.o.attn_dec;
    const uint32_t chunk = E.o.t.attn_chunk;
    E.o.fa_cm = E.o.attn_dec = false, E.o.t.attn_chunk = ZN_VK_ATTN_CHUNK;
    static const struct { int n_head, n_kv, hd_k, hd_v, n_past, T; bool via_step; const char *what; } cs[] = {
        {4, 2, 64, 64, 0, 7, false, "prefill from empty (attn.comp)"},
        {2, 1, 128, 32, 13, 5, true, "prefill after a prefix, hd_k != hd_v, position from the step block"},
        {4, 4, 32, 32, 1100, 1, false, "decode, split-K"},
        {3, 1, 256, 256, 200, 1, true, "decode, hd 256, position from the step block"},
        {4, 2, 64, 64, 0, 40, false, "flash prefill hd 64 (attn_fa.comp)"},
        {2, 1, 128, 128, 45, 50, true, "flash prefill hd 128 after a prefix, position from the step block"},
        {2, 2, 256, 256, 10, 33, false, "flash prefill hd 256"},
        {4, 2, 64, 64, 250, 20, false, "flash prefill hd 64 across a cache block"},
        {2, 1, 128, 32, 530, 3, false, "prefill rows in the third cache block"},
    };
    static const struct { int n_head, n_kv, hd_k, hd_v, n_past, T; bool via_step; const char *what; } dc[] = {
        {4, 2, 64, 64, 300, 1, false, "decode hd 64 (attn_dec.comp)"},
        {4, 1, 128, 128, 700, 3, true, "3 decode rows hd 128, position from the step block (attn_dec.comp)"},
        {2, 1, 256, 256, 1500, 1, false, "decode hd 256 over 1500 keys, split (attn_dec.comp)"},
    };
    static const zn_kv_type kts[] = {ZN_KV_Q8_0, ZN_KV_Q4_0, ZN_KV_Q3_0R};
    for (size_t t = 0; t < sizeof kts / sizeof *kts; t++) {
        kvq_set(kts[t]);
        for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
            const double e = attn_case_kv(kts[t], cs[i].n_head, cs[i].n_kv, cs[i].hd_k, cs[i].hd_v, cs[i].n_past,
                                          cs[i].T, cs[i].via_step);
            CHECK_MSG(e <= tol, "%s cache, %s: nmse %.3g", backend_kv_type_name(kts[t]), cs[i].what, e);
        }
        /* attn_fa.comp's slots: log2(head dim) - 3 */
        CHECK_MSG(E.o.pipes[VKO_ATTN][0].pipe && E.o.pipes[VKO_ATTN_FA][3].pipe && E.o.pipes[VKO_ATTN_FA][4].pipe &&
                      E.o.pipes[VKO_ATTN_FA][5].pipe,
                  "%s cache: attn.comp or attn_fa.comp (hd 64, 128, 256) not used", backend_kv_type_name(kts[t]));
        E.o.attn_dec = true, E.o.t.attn_chunk = chunk;
        for (size_t i = 0; i < sizeof dc / sizeof *dc; i++) {
            const double e = attn_case_kv(kts[t], dc[i].n_head, dc[i].n_kv, dc[i].hd_k, dc[i].hd_v, dc[i].n_past,
                                          dc[i].T, dc[i].via_step);
            CHECK_MSG(e <= tol_dec, "%s cache, %s: nmse %.3g", backend_kv_type_name(kts[t]), dc[i].what, e);
        }
        bool dec_used[3] = {false, false, false};
        for (int k = 0; k < 3; k++)
            for (int v = 0; v < ZN_VK_NVAR; v++) dec_used[k] |= E.o.pipes[VKO_ATTN_DEC64 + k][v].pipe != VK_NULL_HANDLE;
        CHECK_MSG(dec_used[0] && dec_used[1] && dec_used[2], "%s cache: attn_dec.comp not used for hd %s%s%s",
                  backend_kv_type_name(kts[t]), dec_used[0] ? "" : "64 ", dec_used[1] ? "" : "128 ", dec_used[2] ? "" : "256");
        E.o.attn_dec = false, E.o.t.attn_chunk = ZN_VK_ATTN_CHUNK;
        const bool emu = E.o.mm_emulate;
        E.o.fa_cm = true, E.o.mm_emulate = !E.o.coopmat;
        const uint32_t sg_kv = E.o.t.fa_sg_kv;
        for (size_t i = 0; i < 2 * (sizeof cs / sizeof *cs); i++) {
            /* the shared S tiles, then (fa_sg_kv 1) a subgroup per 16 rows */
            E.o.t.fa_sg_kv = i < sizeof cs / sizeof *cs ? ZN_VK_OFF : 1;
            const size_t c = i % (sizeof cs / sizeof *cs);
            if (cs[c].T < 16 || cs[c].hd_k != cs[c].hd_v) continue;
            /* hd 64 only: the staging code is the same at every head dim
             * (test_attention_mm runs them all on f16 caches), and each
             * pipeline takes lavapipe ~30 s to compile without a shader cache */
            if (cs[c].hd_k != 64) continue;
            const uint32_t ci = vkops_fa_cfg_for(&E.o, (uint32_t)cs[c].hd_k, (uint32_t)(cs[c].n_past + cs[c].T));
            if (ci == ZN_VK_MM_AUTO) continue; /* no tile config fits this head dim here */
            const bool sg = zn_vk_fa_cfgs[ci].sg;
            const double e = attn_case_kv(kts[t], cs[c].n_head, cs[c].n_kv, cs[c].hd_k, cs[c].hd_v, cs[c].n_past,
                                          cs[c].T, cs[c].via_step);
            CHECK_MSG(e <= tol_mm, "%s cache, %s, on matrix products (%s): nmse %.3g", backend_kv_type_name(kts[t]),
                      cs[c].what, sg ? "attn_fa_sg" : "attn_fa_cm", e);
            CHECK_MSG(E.o.pipes[vkops_fa_kind(&E.o, ci)][ci].pipe != VK_NULL_HANDLE && E.o.fa_cm,
                      "%s cache, %s: attn_fa_*.glsl not used (%s)",
                      backend_kv_type_name(kts[t]), cs[c].what, E.o.fa_err);
            CHECK_MSG(sg == (E.o.t.fa_sg_kv == 1), "%s cache, %s: config %u is not the kernel fa_sg_kv picks",
                      backend_kv_type_name(kts[t]), cs[c].what, ci);
            n_mm++;
        }
        E.o.fa_cm = false, E.o.mm_emulate = emu, E.o.t.fa_sg_kv = sg_kv;
    }
    CHECK_MSG(n_mm >= 12, "%d flash prefill cases on matrix products", n_mm); /* 2 per format and kernel */
    kvq_set(ZN_KV_F16);
    E.o.fa_cm = fa_cm, E.o.attn_dec = dec, E.o.t.attn_chunk = chunk;
}

/* kv_rot.comp (the q4_0r cache's rotation) against backend_kv_rotate, bit
 * for bit (the same float operations in the same order: the caches of the
 * two backends then hold the same bytes): every head dim it takes, both
 * ways, 3 rows of heads with a row stride longer than the heads (q's rows
 * in a gated attention) whose padding must stay untouched. */
static void test_kv_rot(void) {
    for (int hd = 32; hd <= ZN_KV_ROT_MAX_HD; hd *= 2)
        for (int inv = 0; inv < 2; inv++) {
            const int rows = 3, heads = 2, stride = heads * hd + 5, n = rows * stride;
            float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
            fill(x, (size_t)n, 2.0f);
            memcpy(ref, x, sizeof(float) * n);
            for (int r = 0; r < rows; r++)
                for (int h = 0; h < heads; h++) backend_kv_rotate(ref + r * stride + h * hd, hd, inv);
            vkref dx = dev_up(x, sizeof(float) * n);
            zn_err err = {0};
            bool ok = false;
            if (begin()) {
                zn_status st = vkop_kv_rot(&E.o, &E.c, dx.addr, rows, heads, (uint32_t)hd, (uint32_t)stride, inv, "rot", &err);
                if (st) fprintf(stderr, "  %s\n", err.msg);
                ok = run() && !st;
            }
            if (ok) dev_down(dx, y, sizeof(float) * n);
            int bad = -1;
            for (int i = 0; ok && i < n && bad < 0; i++)
                if (memcmp(&y[i], &ref[i], sizeof(float))) bad = i;
            CHECK_MSG(ok && bad < 0, "hd %d%s: element %d is %.9g, the CPU's %.9g", hd, inv ? " (inverse)" : "", bad,
                      bad >= 0 ? y[bad] : 0.0, bad >= 0 ? ref[bad] : 0.0);
            free(x); free(y); free(ref);
            reset();
        }
}

static double silu_d(double x) { return x / (1 + exp(-x)); }

static void test_eltwise(void) {
    const int rows = 5, cols = 77, k = 3;
    float a[5 * 2 * 77 * 3], b[5 * 77], bc[5], route[5 * 6], y[5 * 77];
    double ref[5 * 77];
    fill(a, sizeof a / sizeof *a, 3.0f); fill(b, sizeof b / sizeof *b, 3.0f); fill(bc, 5, 3.0f);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < k; j++) route[r * 2 * k + j] = (float)j, route[r * 2 * k + k + j] = frand();
    for (int mode = 0; mode <= 6; mode++) {
        for (int bcast = 0; bcast < (mode == VKELT_SIGMOID_MUL ? 2 : 1); bcast++) {
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) {
                    int i = r * cols + c;
                    double v = 0;
                    switch (mode) {
                    case VKELT_ADD: v = (double)a[i] + b[i]; break;
                    case VKELT_SWIGLU: v = silu_d(a[i]) * b[i]; break;
                    case VKELT_SWIGLU_CAT: v = silu_d(a[2 * cols * r + c]) * a[2 * cols * r + cols + c]; break;
                    case VKELT_SIGMOID_MUL: v = a[i] / (1 + exp(-(double)(bcast ? bc[r] : b[i]))); break;
                    case VKELT_MOE_SUM:
                        for (int j = 0; j < k; j++) v += (double)route[r * 2 * k + k + j] * a[(r * k + j) * cols + c];
                        break;
                    case VKELT_MUL: v = (double)a[i] * b[i]; break;
                    default: v = a[r * (2 * cols + 1) + (c / 7) * 12 + 3 + c % 7]; /* 11 blocks of 7 from rows of 155 */
                    }
                    ref[i] = v;
                }
            vkref da = dev_up(a, sizeof a), db = bcast ? dev_up(bc, sizeof bc) : dev_up(b, sizeof b), dr = dev_up(route, sizeof route);
            vkref dy = dev_out(sizeof y);
            zn_err err = {0};
            double e = INFINITY;
            if (begin()) {
                vkop_elt el = {.mode = (vkelt_mode)mode, .a = da.addr, .b = db.addr, .dst = dy.addr, .route = dr.addr,
                               .n = rows * cols, .cols = cols, .b_cols = bcast ? 1 : cols, .k = k};
                if (mode == VKELT_COPY_COLS) el.b_cols = 2 * cols + 1, el.k = 7, el.aux = 12, el.aux2 = 3;
                zn_status st = vkop_eltwise(&E.o, &E.c, &el, "elt", &err);
                if (st) fprintf(stderr, "  %s\n", err.msg);
                if (run() && !st) {
                    dev_down(dy, y, sizeof y);
                    e = nmse(y, ref, (size_t)rows * cols);
                }
            }
            CHECK_MSG(e <= 1e-12, "mode %d bcast %d: nmse %.3g", mode, bcast, e);
            reset();
        }
    }
}

static void test_moe_route(void) {
    const int T = 4, ne = 37;
    float logits[4 * 37], out[4 * 2 * 8];
    fill(logits, sizeof logits / sizeof *logits, 4.0f);
    logits[1 * ne + 5] = logits[1 * ne + 9] = logits[1 * ne + 30] = 9.0f; /* a three-way tie at the top */
    for (int norm = 0; norm < 2; norm++)
        for (int k = 1; k <= 8; k += 7) {
            const float wscale = norm ? 2.5f : 0.0f;
            vkref dl = dev_up(logits, sizeof logits), dd = dev_out(sizeof out);
            zn_err err = {0};
            bool ok = false;
            if (begin()) {
                zn_status st = vkop_moe_route(&E.o, &E.c, dl.addr, dd.addr, T, ne, k, norm, wscale, "route", &err);
                if (st) fprintf(stderr, "  %s\n", err.msg);
                ok = run() && !st;
            }
            if (ok) dev_down(dd, out, sizeof(float) * T * 2 * k);
            CHECK(ok);
            for (int r = 0; ok && r < T; r++) {
                const float *l = logits + r * ne;
                double mx = -INFINITY, sum = 0, p[37], wsum = 0;
                for (int e = 0; e < ne; e++) mx = l[e] > mx ? l[e] : mx;
                for (int e = 0; e < ne; e++) sum += p[e] = exp(l[e] - mx);
                bool taken[37] = {0};
                int idx[8];
                for (int j = 0; j < k; j++) {
                    int b = -1;
                    for (int e = 0; e < ne; e++)
                        if (!taken[e] && (b < 0 || p[e] > p[b])) b = e;
                    taken[b] = true;
                    idx[j] = b;
                    wsum += p[b] / sum;
                }
                for (int j = 0; j < k; j++) {
                    double w = p[idx[j]] / sum;
                    if (norm) w = w / (wsum > 6.103515625e-5 ? wsum : 6.103515625e-5) * wscale;
                    CHECK_MSG((int)out[r * 2 * k + j] == idx[j], "row %d slot %d: expert %g, want %d", r, j, out[r * 2 * k + j], idx[j]);
                    CHECK_NEAR(out[r * 2 * k + k + j], w, 1e-6 * (1 + fabs(w)));
                }
            }
            reset();
        }
}

static void test_argmax(void) {
    const int rows = 3, n = 1001;
    float *x = malloc(sizeof(float) * rows * n);
    fill(x, (size_t)rows * n, 1.0f);
    x[0 * n + 777] = 5.0f;
    x[1 * n + 3] = x[1 * n + 1000] = 7.0f; /* tie: lower index wins */
    x[2 * n + 1000] = 2.0f;
    vkref dx = dev_up(x, sizeof(float) * rows * n), dd = dev_out(sizeof(int32_t) * rows);
    int32_t got[3] = {-1, -1, -1};
    zn_err err = {0};
    if (begin()) {
        zn_status st = vkop_argmax(&E.o, &E.c, dx.addr, dd.addr, rows, n, &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) dev_down(dd, got, sizeof got);
    }
    CHECK_EQ_INT(got[0], 777);
    CHECK_EQ_INT(got[1], 3);
    CHECK_EQ_INT(got[2], 1000);
    free(x);
    reset();
}


/* conv1d + SiLU against gdn.c, in two calls (prefill then decode) so the
 * state hand-over is checked too; T1 = 70 spans five 16-token blocks of the
 * kernel, T1 = 1 < K - 1 keeps part of the old state. */
static void conv1d_case(int T1, int T2) {
    enum { C = 77, K = 4, ld = 80, TMAX = 72 };
    const int T = T1 + T2;
    static float x[TMAX * ld], y[TMAX * ld], y_ref[TMAX * ld];
    float w[C * K], st[C * (K - 1)], st_ref[C * (K - 1)];
    fill(x, (size_t)T * ld, 2.0f); fill(w, sizeof w / sizeof *w, 1.0f); fill(st, sizeof st / sizeof *st, 1.0f);
    memcpy(st_ref, st, sizeof st);
    memset(y_ref, 0, sizeof y_ref);
    gdn_conv1d_silu(y_ref, x, T1, C, ld, w, K, st_ref);
    gdn_conv1d_silu(y_ref + T1 * ld, x + T1 * ld, T2, C, ld, w, K, st_ref);
    vkref dx = dev_up(x, sizeof(float) * T * ld), dw = dev_up(w, sizeof w), ds = dev_up(st, sizeof st),
          dy = dev_up(y_ref, sizeof(float) * T * ld);
    zn_err err = {0};
    bool ok = false;
    if (begin()) {
        zn_status s1 = vkop_conv1d(&E.o, &E.c, dx.addr, dy.addr, dw.addr, ds.addr, 0, (uint32_t)T1, C, ld, K, "conv", &err);
        vkcmd_barrier(&E.c);
        zn_status s2 = vkop_conv1d(&E.o, &E.c, dx.addr + 4ull * T1 * ld, dy.addr + 4ull * T1 * ld, dw.addr, ds.addr, 0,
                                   (uint32_t)T2, C, ld, K, "conv", &err);
        if (s1 || s2) fprintf(stderr, "  %s\n", err.msg);
        ok = run() && !s1 && !s2;
    }
    CHECK_MSG(ok, "T1 %d T2 %d", T1, T2);
    if (!ok) return;
    dev_down(dy, y, sizeof(float) * T * ld);
    dev_down(ds, st, sizeof st);
    static double ry[TMAX * ld];
    double rs[C * (K - 1)];
    for (int i = 0; i < T * ld; i++) ry[i] = y_ref[i];
    for (int i = 0; i < C * (K - 1); i++) rs[i] = st_ref[i];
    double ey = nmse(y, ry, (size_t)T * ld), es = nmse(st, rs, (size_t)C * (K - 1));
    CHECK_MSG(ey <= 1e-12, "T1 %d T2 %d: y nmse %.3g", T1, T2, ey);
    CHECK_MSG(es == 0, "T1 %d T2 %d: state nmse %.3g (a copy of inputs: must be exact)", T1, T2, es);
    reset();
}

static void test_conv1d(void) {
    conv1d_case(5, 1);
    conv1d_case(70, 2);
    conv1d_case(1, 1);
}

/* Gated delta rule: GPU over T tokens vs gdn_recurrent, with tiled key
 * heads (h_v = 2 h_k), gates precomputed or raw; pad: q and k rows longer
 * than the heads (odd pads leave them unaligned for vec4 loads). */
static double gdn_case(int h_k, int h_v, int dk, int T, bool raw, bool l2, int pad) {
    const int dv = dk, ld_qk = h_k * dk + pad, ld_v = h_v * dv + 3, ld_o = h_v * dv, ld_g = h_v + 1;
    size_t nqk = (size_t)T * ld_qk, nv = (size_t)T * ld_v, ns = (size_t)h_v * dv * dk;
    float *q = malloc(4 * nqk), *k = malloc(4 * nqk), *v = malloc(4 * nv), *s0 = malloc(4 * ns), *sr = malloc(4 * ns);
    float *o = malloc(4 * (size_t)T * ld_o), *or_ = malloc(4 * (size_t)T * ld_o);
    float alpha[256], braw[256], g[256], beta[256], dtb[8], av[8];
    CHECK(T * ld_g <= 256 && h_v <= 8);
    fill(q, nqk, 1.0f); fill(k, nqk, 1.0f); fill(v, nv, 1.0f); fill(s0, ns, 0.5f);
    fill(alpha, 256, 2.0f); fill(braw, 256, 2.0f); fill(dtb, 8, 1.0f);
    for (int i = 0; i < 8; i++) av[i] = -expf(frand());
    float *q_in = malloc(4 * nqk), *k_in = malloc(4 * nqk); /* what the GPU gets */
    memcpy(q_in, q, 4 * nqk);
    memcpy(k_in, k, 4 * nqk);
    for (int t = 0; t < T; t++) {
        for (int hk = 0; hk < h_k; hk++) { /* gdn.h wants L2-normalised q and k */
            gdn_l2_norm(q + t * ld_qk + hk * dk, dk, 1e-6f);
            gdn_l2_norm(k + t * ld_qk + hk * dk, dk, 1e-6f);
        }
        gdn_gates(g + t * ld_g, beta + t * ld_g, alpha + t * ld_g, braw + t * ld_g, dtb, av, h_v);
    }
    memcpy(sr, s0, 4 * ns);
    gdn_args ra = {.q = q, .k = k, .v = v, .g = g, .beta = beta, .state = sr, .out = or_, .n_tokens = T,
                       .h_k = h_k, .h_v = h_v, .d_k = dk, .d_v = dv, .ld_qk = ld_qk, .ld_v = ld_v, .ld_o = ld_o, .ld_g = ld_g};
    gdn_recurrent(&ra, 0, h_v);
    vkref dq = dev_up(l2 ? q_in : q, 4 * nqk), dk_ = dev_up(l2 ? k_in : k, 4 * nqk), dv_ = dev_up(v, 4 * nv), ds = dev_up(s0, 4 * ns);
    vkref dg = dev_up(raw ? alpha : g, sizeof g), db = dev_up(raw ? braw : beta, sizeof beta);
    vkref dt = dev_up(dtb, sizeof dtb), da = dev_up(av, sizeof av), dout = dev_out(4 * (size_t)T * ld_o);
    vkop_gdn a = {.q = dq.addr, .k = dk_.addr, .v = dv_.addr, .g = dg.addr, .beta = db.addr, .state = ds.addr,
                  .dst = dout.addr, .dt_bias = dt.addr, .a = da.addr, .n_tok = (uint32_t)T, .h_k = (uint32_t)h_k,
                  .h_v = (uint32_t)h_v, .d_k = (uint32_t)dk, .d_v = (uint32_t)dv, .ld_qk = (uint32_t)ld_qk,
                  .ld_v = (uint32_t)ld_v, .ld_o = (uint32_t)ld_o, .ld_g = (uint32_t)ld_g, .gate_raw = raw,
                  .l2 = l2, .eps = 1e-6f};
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = vkop_gdn_run(&E.o, &E.c, &a, "gdn", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dout, o, 4 * (size_t)T * ld_o);
            dev_down(ds, s0, 4 * ns);
            double *ro = malloc(8 * (size_t)T * ld_o), *rs = malloc(8 * ns);
            for (size_t i = 0; i < (size_t)T * ld_o; i++) ro[i] = or_[i];
            for (size_t i = 0; i < ns; i++) rs[i] = sr[i];
            double eo = nmse(o, ro, (size_t)T * ld_o), es = nmse(s0, rs, ns);
            e = eo > es ? eo : es;
            free(ro); free(rs);
        }
    }
    free(q); free(k); free(v); free(s0); free(sr); free(o); free(or_); free(q_in); free(k_in);
    reset();
    return e;
}

/* A sequence's outputs and state may not depend on how its tokens were
 * split into steps: T tokens in one dispatch (staged where it can be) and
 * in pieces of 1 (per-cluster loads), 17, 1 and the rest, with the state
 * carried, must agree bit for bit (a request served alone and among others
 * decodes the same: test_serve.sh's concurrent clients). */
static bool gdn_split_same(int dk, int T) {
    const int h_k = 1, h_v = 2, dv = dk, ld_qk = 2 * h_k * dk, ld_v = h_v * dv, ld_o = h_v * dv, ld_g = h_v;
    const size_t nqk = (size_t)T * ld_qk, nv = (size_t)T * ld_v, ns = (size_t)h_v * dv * dk, no = (size_t)T * ld_o;
    float *qk = malloc(4 * nqk), *v = malloc(4 * nv), *s0 = malloc(4 * ns), *g = malloc(4 * (size_t)T * ld_g);
    float *b = malloc(4 * (size_t)T * ld_g), *o[2] = {malloc(4 * no), malloc(4 * no)}, *st[2] = {malloc(4 * ns), malloc(4 * ns)};
    float dtb[2] = {0.5f, -0.25f}, av[2] = {-0.7f, -1.3f};
    fill(qk, nqk, 1.0f); fill(v, nv, 1.0f); fill(s0, ns, 0.5f); fill(g, (size_t)T * ld_g, 2.0f); fill(b, (size_t)T * ld_g, 2.0f);
    vkref dqk = dev_up(qk, 4 * nqk), dv_ = dev_up(v, 4 * nv), dg = dev_up(g, 4 * (size_t)T * ld_g);
    vkref db = dev_up(b, 4 * (size_t)T * ld_g), dt = dev_up(dtb, sizeof dtb), da = dev_up(av, sizeof av);
    bool ok = true;
    for (int way = 0; way < 2 && ok; way++) {
        const int pieces[2][4] = {{T, 0, 0, 0}, {1, 17, 1, T - 19}};
        vkref ds = dev_up(s0, 4 * ns), dout = dev_out(4 * no);
        for (int i = 0, t0 = 0; i < 4 && pieces[way][i] > 0 && ok; t0 += pieces[way][i++]) {
            vkop_gdn a = {.q = dqk.addr + 4ull * t0 * ld_qk, .k = dqk.addr + 4ull * (t0 * ld_qk + h_k * dk),
                          .v = dv_.addr + 4ull * t0 * ld_v, .g = dg.addr + 4ull * t0 * ld_g, .beta = db.addr + 4ull * t0 * ld_g,
                          .state = ds.addr, .dst = dout.addr + 4ull * t0 * ld_o, .dt_bias = dt.addr, .a = da.addr,
                          .n_tok = (uint32_t)pieces[way][i], .h_k = (uint32_t)h_k, .h_v = (uint32_t)h_v, .d_k = (uint32_t)dk,
                          .d_v = (uint32_t)dv, .ld_qk = (uint32_t)ld_qk, .ld_v = (uint32_t)ld_v, .ld_o = (uint32_t)ld_o,
                          .ld_g = (uint32_t)ld_g, .gate_raw = true, .l2 = true, .eps = 1e-6f};
            zn_err err = {0};
            ok = begin() && !vkop_gdn_run(&E.o, &E.c, &a, "gdn", &err) && run();
            if (err.msg[0]) fprintf(stderr, "  %s\n", err.msg);
        }
        dev_down(dout, o[way], 4 * no);
        dev_down(ds, st[way], 4 * ns);
    }
    ok = ok && !memcmp(o[0], o[1], 4 * no) && !memcmp(st[0], st[1], 4 * ns);
    free(qk); free(v); free(s0); free(g); free(b); free(o[0]); free(o[1]); free(st[0]); free(st[1]);
    reset();
    return ok;
}

static void gdn_forget_pipelines(void) {
    const vkop_kind kinds[] = {VKO_GDN, VKO_GDN_R2, VKO_GDN_R4};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int v = 0; v < ZN_VK_NVAR; v++) vkpipe_destroy(&E.o.ps, &E.o.pipes[kinds[k]][v]);
}

/* Every count of state rows per lane cluster (a pipeline each), with q and
 * k rows unaligned (each cluster loading its own) and aligned (staged
 * through shared memory where the workgroup's rows are one head's),
 * unstaged (gdn_tc 0) and staged in chunks of 16 tokens and, at one row
 * per cluster, of 4 (40 tokens: whole and partial chunks); lanes on single
 * floats (the default) and on vec4 blocks (gdn_vec). gdn_split_same's
 * pieces of 1 token run unstaged in the staged pipelines: its bitwise
 * check holds staged and unstaged steps to the same arithmetic. */
static void test_gdn(void) {
    /* f32 recurrences of a few steps, different summation order: ~1e-13 */
    const double tol = 1e-10;
    const uint32_t rows = E.o.t.gdn_rows, tc = E.o.t.gdn_tc;
    const bool vec = E.o.t.gdn_vec;
    static const struct { uint32_t tc, max_rows; bool vec; } cfgs[] = {
        {0, 4, false}, {16, 4, false}, {4, 1, false}, {16, 4, true}}; /* chunks of 4: the chunk logic, one row count */
    for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++) {
        gdn_forget_pipelines();
        E.o.t.gdn_tc = cfgs[c].tc, E.o.t.gdn_vec = cfgs[c].vec;
        const char *lanes = cfgs[c].vec ? "vec4" : "float";
        for (uint32_t r = 1; r <= cfgs[c].max_rows; r *= 2) {
            E.o.t.gdn_rows = r;
            for (int pad = 5; pad >= 0; pad -= 5) {
                double e0 = gdn_case(2, 4, 32, 1, false, false, pad), e1 = gdn_case(1, 2, 64, 7, true, false, pad);
                double e2 = gdn_case(2, 2, 128, 3, true, true, pad), e3 = gdn_case(2, 4, 64, 40, true, true, pad);
                double e4 = gdn_case(1, 2, 16, 9, true, true, pad), e5 = gdn_case(1, 2, 32, 21, false, true, pad);
                const double e[] = {e0, e1, e2, e3, e4, e5};
                static const char *what[] = {"decode", "prefill, raw gates, tiled heads", "dk 128, L2 in the kernel",
                                             "40 tokens, tiled heads, L2", "dk 16", "dk 32, 21 tokens"};
                for (int i = 0; i < 6; i++)
                    CHECK_MSG(e[i] <= tol, "tc %u, %s lanes, rows %u, pad %d: %s: nmse %.3g", cfgs[c].tc, lanes, r, pad,
                              what[i], e[i]);
            }
            CHECK_MSG(gdn_split_same(32, 40), "tc %u, %s lanes, rows %u: dk 32: 40 tokens at once and in pieces differ",
                      cfgs[c].tc, lanes, r);
            CHECK_MSG(gdn_split_same(128, 40), "tc %u, %s lanes, rows %u: dk 128: 40 tokens at once and in pieces differ",
                      cfgs[c].tc, lanes, r);
        }
    }
    gdn_forget_pipelines();
    E.o.t.gdn_rows = rows, E.o.t.gdn_tc = tc, E.o.t.gdn_vec = vec;
}

int main(void) {
    if (!setup("vk_layers")) return no_device("vk_layers");
    fprintf(stderr, "vk_layers on %s (subgroup %u, integer dot products %s)\n", E.d.info.name, E.d.info.subgroup_size,
            E.o.intdot ? "yes" : "no");
    RUN(test_embed);
    RUN(test_norms);
    RUN(test_rope);
    RUN(test_rope_fused);
    RUN(test_attention);
    RUN(test_attention_dec);
    RUN(test_attention_mm);
    RUN(test_attention_refused);
    RUN(test_attention_kvq);
    RUN(test_kv_rot);
    RUN(test_eltwise);
    RUN(test_moe_route);
    RUN(test_argmax);
    RUN(test_conv1d);
    RUN(test_gdn);
    teardown();
    return harness_report("vk_layers");
}
