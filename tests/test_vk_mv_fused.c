/* The fusions of the integer mat-vec against references computed op by op
 * (tests/vk_mm_test.h): the gated norm in its SwiGLU x, which fused class
 * a call takes, a MoE layer's tail in its experts' down, the routing in
 * its experts' gate / up. Split from test_vk_ops.c. */
#include "vk_mm_test.h"

/* The integer mat-vec quantising x in its workgroups with the gated norm
 * folded into its SwiGLU x (vkop_mm.gn_w): x = silu(z) * (aux / rms of
 * aux's group * w), groups of 32 and 128, rows of 1 or 4 groups, 1 and 3
 * tokens, against the ops one by one in double precision (x quantised as
 * the reference computes it; MM_TOL_GN). Without the in-workgroup path
 * (mvx off, a float type) ZN_ERR_UNSUPPORTED, nothing recorded. */
static double gnorm_case(zn_type t, int cols, int G, int T, zn_status *st) {
    enum { ROWS = 21 };
    float *wf = malloc(sizeof(float) * ROWS * cols), z[3 * 512], aux[3 * 512], nw[128], y[3 * ROWS];
    double ref[3 * ROWS], h[512];
    float hf[512];
    void *wq = make_weights(t, ROWS, cols, wf);
    fill(z, sizeof z / sizeof *z, 2.0f); fill(aux, sizeof aux / sizeof *aux, 1.5f); fill(nw, 128, 1.0f);
    const float eps = 1e-6f;
    for (int tk = 0; tk < T; tk++) {
        for (int g0 = 0; g0 < cols; g0 += G) {
            double ss = 0;
            for (int k = g0; k < g0 + G; k++) ss += (double)aux[tk * cols + k] * aux[tk * cols + k];
            for (int k = g0; k < g0 + G; k++) {
                const double zv = z[tk * cols + k];
                h[k] = zv / (1 + exp(-zv)) * (aux[tk * cols + k] / sqrt(ss / G + eps) * nw[k - g0]);
            }
        }
        for (int k = 0; k < cols; k++) hf[k] = (float)h[k];
        q8_round(hf, cols);
        for (int r = 0; r < ROWS; r++) {
            double s = 0;
            for (int k = 0; k < cols; k++) s += (double)wf[r * cols + k] * hf[k];
            ref[tk * ROWS + r] = s;
        }
    }
    const size_t rb = vkq_row_bytes(t, cols);
    vkref dw = dev_up(wq, rb * ROWS), dz = dev_up(z, sizeof z), da = dev_up(aux, sizeof aux), dn = dev_up(nw, sizeof nw);
    vkref dy = dev_out(sizeof y);
    vkop_mm a = {.type = t, .w = dw.addr, .x = dz.addr, .y = dy.addr, .ncols = (uint32_t)cols, .nrows = ROWS,
                 .row_bytes = (uint32_t)rb, .n_tok = (uint32_t)T, .x_stride = (uint32_t)cols, .y_stride = ROWS,
                 .xmode = VKX_SWIGLU, .aux = da.addr, .eps = eps, .gn_w = dn.addr, .gn_group = (uint32_t)G};
    zn_err err = {0};
    double e = INFINITY;
    *st = ZN_ERR_IO;
    if (begin()) {
        *st = vkop_matvec(&E.o, &E.c, &a, "gn", &err);
        if (*st && *st != ZN_ERR_UNSUPPORTED) fprintf(stderr, "  %s\n", err.msg);
        CHECK(*st != ZN_ERR_UNSUPPORTED || E.c.n_dispatch == 0);
        if (run() && !*st) {
            dev_down(dy, y, sizeof(float) * T * ROWS);
            e = nmse(y, ref, (size_t)T * ROWS);
        }
    }
    free(wf);
    free(wq);
    reset();
    return e;
}

/* Every case where vkops_gnorm_takes says the kernel takes it: several
 * tokens only with t.mvt_modes holding SwiGLU (a pass with and without). */
static void test_matvec_gated_norm(void) {
    const bool gn0 = E.o.t.mv_gnorm;
    E.o.t.mv_gnorm = true; /* off by default: what the op takes when asked */
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_Q8_0, ZN_TYPE_Q4_0};
    const struct { int cols, G, T; } sh[] = {{512, 128, 1}, {256, 32, 3}, {128, 128, 3}};
    zn_status st;
    const bool mvx = E.o.mvx;
    const uint32_t modes = E.o.t.mvt_modes;
    int taken = 0, several = 0;
    for (int pass = 0; pass < 2; pass++) {
        E.o.t.mvt_modes = pass ? 15 : 0;
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
            for (size_t c = 0; c < sizeof sh / sizeof *sh; c++) {
                const zn_type t = types[ti];
                const int cols = zn_type_get(t)->blck == 256 && sh[c].cols < 256 ? 256 : sh[c].cols;
                const bool takes = vkops_gnorm_takes(&E.o, t, (uint32_t)cols, (uint32_t)sh[c].T, (uint32_t)sh[c].G);
                const double e = gnorm_case(t, cols, sh[c].G, sh[c].T, &st);
                taken += takes;
                several += takes && sh[c].T > 1;
                if (!takes) {
                    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
                    continue;
                }
                CHECK_MSG(!st && e <= MM_TOL_GN, "%s, rows of %d, groups of %d, %d tokens: %s nmse %.3g",
                          zn_type_name(t), cols, sh[c].G, sh[c].T, st ? "refused," : "", e);
            }
    }
    E.o.t.mvt_modes = modes;
    CHECK(!mvx || (taken > 0 && several > 0));
    E.o.mvx = false;
    gnorm_case(ZN_TYPE_Q4_K, 256, 128, 1, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    E.o.mvx = mvx;
    gnorm_case(ZN_TYPE_F16, 256, 128, 1, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    E.o.t.mv_gnorm = gn0;
}

/* Which fused class a mat-vec takes (vk_matvec.c): per-token experts of
 * several tokens the second (mvxb: each (token, slot) stages its own x),
 * one token's experts and dense matrices the first, whatever their size
 * while mvx_big_mb is off. Pipelines are only created (no command buffer). */
static bool class_used(vkop_mm a, vkop_kind k0) {
    mv_pipes_drop();
    zn_err err = {0};
    if (vkop_matmul(&E.o, NULL, &a, "class", &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return false;
    }
    bool any = false;
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < ZN_VK_NVAR; v++) any = any || E.o.pipes[k0 + k][v].pipe;
    return any;
}

static void test_matvec_expert_class(void) {
    if (!E.o.mvx) SKIP("no fused integer mat-vec on %s", E.d.info.name);
    const uint32_t big = E.o.t.mvx_big_mb;
    E.o.t.mvx_big_mb = ZN_VK_OFF;
    const vkref z = {.addr = 1ull << 40}; /* never read: nothing is recorded */
    vkop_mm a = moe_args(ZN_TYPE_Q4_K, 8, 64, 256, 3, 2, false, z, z, z, z, z);
    CHECK_MSG(class_used(a, VKO_MATVEC_QXB_S) && !class_used(a, VKO_MATVEC_QX_S), "3 tokens' experts: the second class");
    a.n_tok = 1;
    CHECK_MSG(class_used(a, VKO_MATVEC_QX_S) && !class_used(a, VKO_MATVEC_QXB_S), "one token's experts: the first class");
    vkop_mm d = {.type = ZN_TYPE_Q4_K, .w = z.addr, .x = z.addr, .y = z.addr, .ncols = 256, .nrows = 64,
                 .row_bytes = (uint32_t)vkq_row_bytes(ZN_TYPE_Q4_K, 256), .n_tok = 1, .n_slots = 1, .x_stride = 256,
                 .y_stride = 64};
    CHECK_MSG(class_used(d, VKO_MATVEC_QX_S) && !class_used(d, VKO_MATVEC_QXB_S), "a dense matrix: the first class");
    E.o.t.mvx_big_mb = 0; /* every matrix is big */
    CHECK_MSG(class_used(d, VKO_MATVEC_QXB_S), "mvx_big_mb 0: the second class");
    E.o.t.mvx_big_mb = big;
    mv_pipes_drop();
}

/* The experts' down computing its MoE layer's tail (vkop_mm.tail): per
 * token, res + (the sum over its k slots of the routing weight times the
 * slot's expert rows (scaled per expert) by the slot's x) + b *
 * sigmoid(gate of the token or of the value), or without b. x as it is
 * (swiglu false): nmse against the double reference, x quantised as the
 * kernel does. x = silu(gate) * up of the slot (swiglu): nmse against the
 * unfused path on the device (the experts' mat-vec of the same x mode, a
 * barrier, eltwise.comp's MOE_TAIL), which quantises the same x with the
 * same code: the double reference's silu would round an element an ulp
 * away now and then, moving a quant. ZN_ERR_UNSUPPORTED (as *st) where the
 * op refuses the tail. */
static double moe_tail_case(zn_type t, int k, int cols, int gate_cols, int T, bool swiglu, zn_status *st) {
    const int ne = 10, rows = 37, D = rows;
    const size_t rb = vkq_row_bytes(t, cols), eb = rb * rows, nx = (size_t)T * k * cols;
    float *wf = malloc(sizeof(float) * ne * rows * cols), *g = malloc(sizeof(float) * nx), *u = malloc(sizeof(float) * nx);
    float *h = malloc(sizeof(float) * nx), route[4 * 2 * ZN_VK_TAIL_SLOTS], scales[10], res[4 * 37], b[4 * 37];
    float gt[4 * 37], y[4 * 37], yu[4 * 37];
    double ref[4 * 37];
    uint8_t *wq = make_experts(t, ne, rows, cols, wf);
    fill(g, nx, 3.0f); fill(u, nx, 1.0f); fill(scales, 10, 1.0f); fill(res, 4 * 37, 1.0f); fill(b, 4 * 37, 1.0f);
    fill(gt, 4 * 37, 3.0f);
    memcpy(h, g, sizeof(float) * nx);
    for (size_t i = 0; i < nx / (size_t)cols; i++) q8_round(h + i * cols, cols);
    for (int tk = 0; tk < T; tk++)
        for (int j = 0; j < k; j++) { /* distinct experts, weights in (0.1, 0.9) */
            route[tk * 2 * k + j] = (float)((tk * 3 + j * 7) % ne);
            route[tk * 2 * k + k + j] = 0.1f + 0.8f * (float)((tk * 5 + j * 3) % 7) / 6.0f;
        }
    for (int tk = 0; tk < T; tk++)
        for (int r = 0; r < D; r++) {
            double v = 0;
            for (int j = 0; j < k; j++) {
                const int e = (int)route[tk * 2 * k + j];
                const float *wr = wf + ((size_t)e * rows + r) * cols, *xr = h + (size_t)(tk * k + j) * cols;
                double s = 0;
                for (int c = 0; c < cols; c++) s += (double)wr[c] * xr[c];
                v += route[tk * 2 * k + k + j] * s * scales[e];
            }
            if (gate_cols) v += b[tk * D + r] / (1.0 + exp(-(double)gt[tk * gate_cols + (gate_cols == 1 ? 0 : r)]));
            ref[tk * D + r] = v + res[tk * D + r];
        }
    vkref dw = dev_up(wq, eb * ne), dg = dev_up(g, sizeof(float) * nx), du = dev_up(u, sizeof(float) * nx);
    vkref dr = dev_up(route, sizeof route), ds = dev_up(scales, sizeof scales), dres = dev_up(res, sizeof res);
    vkref dbb = dev_up(b, sizeof b), dgt = dev_up(gt, sizeof gt), dy = dev_out(sizeof y), dyu = dev_out(sizeof yu);
    vkref dslots = dev_out(sizeof(float) * (size_t)T * k * rows);
    vkop_tail tl = {.route = dr.addr, .b = gate_cols ? dbb.addr : 0, .gate = dgt.addr, .b_cols = (uint32_t)gate_cols};
    vkref dt = dev_up(&tl, sizeof tl);
    vkop_mm a = moe_args(t, ne, rows, cols, T, k, true, dw, dg, dr, ds, dslots);
    if (swiglu) a.xmode = VKX_SWIGLU, a.aux = du.addr;
    vkop_mm at = a;
    at.tail = dt.addr;
    at.y = dy.addr;
    at.res = dres.addr;
    at.y_stride = (uint32_t)D;
    const vkop_elt el = {.mode = VKELT_MOE_TAIL, .a = dslots.addr, .b = tl.b, .gate = dgt.addr, .dst = dyu.addr,
                         .route = dr.addr, .res = dres.addr, .n = (uint32_t)(T * D), .cols = (uint32_t)D,
                         .b_cols = (uint32_t)gate_cols, .k = (uint32_t)k};
    zn_err err = {0};
    double e = INFINITY;
    *st = ZN_ERR_IO;
    if (begin()) {
        *st = vkop_matmul(&E.o, &E.c, &at, "moe_tail", &err);
        if (*st && *st != ZN_ERR_UNSUPPORTED) fprintf(stderr, "  %s\n", err.msg);
        CHECK(*st != ZN_ERR_UNSUPPORTED || E.c.n_dispatch == 0);
        zn_status su = *st || !swiglu ? ZN_OK : vkop_matmul(&E.o, &E.c, &a, "moe", &err);
        if (!*st && swiglu && !su) {
            vkcmd_barrier(&E.c);
            su = vkop_eltwise(&E.o, &E.c, &el, "tail", &err);
        }
        CHECK_MSG(!su, "unfused: %s", err.msg);
        if (run() && !*st && !su) {
            dev_down(dy, y, sizeof(float) * T * D);
            if (swiglu) {
                dev_down(dyu, yu, sizeof(float) * T * D);
                for (int i = 0; i < T * D; i++) ref[i] = yu[i];
            }
            e = nmse(y, ref, (size_t)T * D);
        }
    }
    free(wf); free(g); free(u); free(h); free(wq);
    reset();
    return e;
}

/* Every integer type, k 1, 3 and ZN_VK_TAIL_SLOTS, the slots' rows filling
 * the shared memory they get (ZN_VK_TAIL_COLS) or not, rows of fewer steps
 * than a subgroup has lanes (several rows per subgroup), 1 to 4 tokens, a
 * shared expert gated per token, per value or none; then 3 rows per
 * subgroup and 2 steps per iteration. Where the op cannot take the tail
 * (float x, x quantised by quantx, tuning moe_tail off, too long a row,
 * the driver refusing the pipeline) it says ZN_ERR_UNSUPPORTED and
 * records nothing, and after a refusal it stops trying (vkops.mvxk). */
static void test_matvec_moe_tail(void) {
    const bool tail0 = E.o.t.moe_tail;
    E.o.t.moe_tail = true; /* off by default: the op takes it when asked */
    if (!E.o.intdot || !E.o.mvx) {
        zn_status st;
        moe_tail_case(ZN_TYPE_Q4_K, 3, 256, 1, 2, true, &st);
        CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
        E.o.t.moe_tail = tail0;
        return;
    }
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_Q8_0, ZN_TYPE_Q5_K, ZN_TYPE_Q4_0};
    const struct { int k, cols, gate, T; } sh[] = {
        {ZN_VK_TAIL_SLOTS, 512, 1, 1}, {3, 256, 37, 3}, {1, 1024, 0, 2}, {ZN_VK_TAIL_SLOTS, ZN_VK_TAIL_COLS / ZN_VK_TAIL_SLOTS, 37, 4}};
    for (int pass = 0; pass < 2; pass++) {
        if (pass) mvq_config(3, 2, 0, 0);
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
            for (size_t c = 0; c < sizeof sh / sizeof *sh; c++)
                for (int sw = 0; sw < 2; sw++) {
                    const zn_type t = types[ti];
                    const int cols = zn_type_get(t)->blck == 256 || sh[c].cols % 256 == 0 ? sh[c].cols : 96;
                    zn_status st;
                    const double e = moe_tail_case(t, sh[c].k, cols, sh[c].gate, sh[c].T, sw, &st);
                    /* against the unfused device path: the same products, the tail's sums in another order at most */
                    CHECK_MSG(!st && e <= (sw ? 1e-12 : MM_TOL_Q8),
                              "%s, k %d, rows of %d, gate cols %d, %d tokens, %s, pass %d: %s nmse %.3g", zn_type_name(t),
                              sh[c].k, cols, sh[c].gate, sh[c].T, sw ? "swiglu" : "plain", pass, st ? "refused," : "", e);
                }
    }
    mvq_config(0, 0, 0, 0);
    zn_status st;
    moe_tail_case(ZN_TYPE_F16, 3, 256, 1, 2, true, &st); /* the float kernel takes no tail */
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    moe_tail_case(ZN_TYPE_Q4_K, ZN_VK_TAIL_SLOTS, ZN_VK_TAIL_COLS / ZN_VK_TAIL_SLOTS + 256, 1, 1, true, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    E.o.t.moe_tail = false;
    moe_tail_case(ZN_TYPE_Q4_K, 3, 256, 1, 2, true, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    E.o.t.moe_tail = true;
    E.o.mvx = false;
    moe_tail_case(ZN_TYPE_Q4_K, 3, 256, 1, 2, true, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    E.o.mvx = true;
    mv_pipes_drop();
    E.o.refuse_kinds = 1ull << VKO_MATVEC_QXK;
    moe_tail_case(ZN_TYPE_Q4_K, 3, 256, 1, 2, true, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    CHECK(!E.o.mvxk && !vkops_moe_tail_takes(&E.o, ZN_TYPE_Q4_K, 256, 3, 2, VKX_SWIGLU));
    E.o.refuse_kinds = 0;
    E.o.mvxk = true;
    CHECK(vkops_moe_tail_takes(&E.o, ZN_TYPE_Q4_K, 256, 3, 2, VKX_SWIGLU));
    E.o.t.moe_tail = tail0;
}

/* The routing of T tokens by logits [T][ne] (moe_route.comp's: softmax,
 * top k, ties to the lower index; renormalised with norm, scaled by a
 * wscale other than 0 and 1): ids and weights [T][k]. */
static void ref_route(const float *logits, int T, int ne, int k, bool norm, float wscale, int *ids, double *w) {
    for (int r = 0; r < T; r++) {
        const float *l = logits + r * ne;
        double mx = -INFINITY, sum = 0, wsum = 0, *p = malloc(sizeof(double) * ne);
        bool *taken = calloc((size_t)ne, 1);
        for (int e = 0; e < ne; e++) mx = l[e] > mx ? l[e] : mx;
        for (int e = 0; e < ne; e++) sum += p[e] = exp(l[e] - mx);
        for (int j = 0; j < k; j++) {
            int b = -1;
            for (int e = 0; e < ne; e++)
                if (!taken[e] && (b < 0 || p[e] > p[b])) b = e;
            taken[b] = true;
            ids[r * k + j] = b;
            wsum += w[r * k + j] = p[b] / sum;
        }
        for (int j = 0; j < k; j++) {
            if (norm) w[r * k + j] /= wsum > 6.103515625e-5 ? wsum : 6.103515625e-5;
            if (wscale != 0.0f && wscale != 1.0f) w[r * k + j] *= wscale;
        }
        free(p);
        free(taken);
    }
}

/* The experts' gate picking its experts from the router's logits itself
 * (vkop_mm.route): against the double reference with the reference
 * routing (x quantised as the kernel does), and the routing rows it
 * stores (write) against moe_route.comp's reference, the ids exactly; a
 * three-way tie at the top of one row. n_expert below a subgroup's lanes,
 * odd, 256, and ZN_MAX_EXPERTS; k 1 to 8; without write the rows stay
 * untouched. x quantised by quantx.comp (mvx off) or the float kernel: the
 * op says ZN_ERR_UNSUPPORTED and records nothing. */
static double moe_route_case(zn_type t, int ne, int k, bool norm, float wscale, bool write, zn_status *st) {
    enum { T = 3, ROWS = 19 };
    const int cols = cols_for(t, 64);
    const size_t rb = vkq_row_bytes(t, cols), eb = rb * ROWS;
    float *wf = malloc(sizeof(float) * ne * ROWS * cols), *logits = malloc(sizeof(float) * T * ne);
    float x[T * 512], xq[T * 512], *scales = malloc(sizeof(float) * ne), y[T * 8 * ROWS], out[T * 2 * 8];
    double ref[T * 8 * ROWS], w[T * 8];
    int ids[T * 8];
    uint8_t *wq = make_experts(t, ne, ROWS, cols, wf);
    fill(logits, (size_t)T * ne, 4.0f);
    logits[ne + 1] = logits[ne + ne / 2] = logits[ne + ne - 1] = 9.0f;
    fill(x, T * 512, 1.0f);
    fill(scales, (size_t)ne, 1.0f);
    memcpy(xq, x, sizeof x);
    for (int r = 0; r < T; r++) q8_round(xq + r * cols, cols);
    ref_route(logits, T, ne, k, norm, wscale, ids, w);
    for (int r = 0; r < T; r++)
        for (int j = 0; j < k; j++)
            for (int row = 0; row < ROWS; row++) {
                const float *wr = wf + ((size_t)ids[r * k + j] * ROWS + row) * cols;
                double d = 0;
                for (int c = 0; c < cols; c++) d += (double)wr[c] * xq[r * cols + c];
                ref[(r * k + j) * ROWS + row] = d * scales[ids[r * k + j]];
            }
    for (int i = 0; i < T * 2 * 8; i++) out[i] = -7.0f;
    vkref dw = dev_up(wq, eb * ne), dx = dev_up(x, sizeof x), dl = dev_up(logits, sizeof(float) * T * ne);
    vkref ds = dev_up(scales, sizeof(float) * ne), dy = dev_out(sizeof y), dd = dev_up(out, sizeof out);
    vkop_route rt = {.logits = dl.addr, .dst = dd.addr, .n_expert = (uint32_t)ne, .k = (uint32_t)k, .norm = norm,
                     .write = write, .wscale = wscale};
    vkref dr = dev_up(&rt, sizeof rt);
    vkop_mm a = moe_args(t, ne, ROWS, cols, T, k, false, dw, dx, dd, ds, dy);
    a.route = dr.addr;
    zn_err err = {0};
    double e = INFINITY;
    *st = ZN_ERR_IO;
    if (begin()) {
        *st = vkop_matmul(&E.o, &E.c, &a, "routed", &err);
        if (*st && *st != ZN_ERR_UNSUPPORTED) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !*st) {
            dev_down(dy, y, sizeof(float) * T * k * ROWS);
            e = nmse(y, ref, (size_t)T * k * ROWS);
        }
        dev_down(dd, out, sizeof out);
        for (int r = 0; r < T && !*st; r++)
            for (int j = 0; j < k; j++) {
                const float id = out[r * 2 * k + j], wv = out[r * 2 * k + k + j];
                if (!write) {
                    CHECK(id == -7.0f && wv == -7.0f);
                    continue;
                }
                CHECK_MSG((int)id == ids[r * k + j], "%d experts, top %d: row %d slot %d: expert %g, want %d", ne, k, r, j,
                          id, ids[r * k + j]);
                CHECK_NEAR(wv, w[r * k + j], 1e-6 * (1 + fabs(w[r * k + j])));
            }
    }
    free(wf); free(logits); free(scales); free(wq);
    reset();
    return e;
}

static void test_matvec_moe_route(void) {
    const struct { int ne, k, norm; float ws; } sh[] = {{5, 2, 1, 0.0f}, {37, 3, 0, 1.0f}, {256, 8, 1, 2.5f},
                                                        {ZN_MAX_EXPERTS, 8, 1, 1.0f}, {10, 1, 1, 0.0f}};
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q8_0, ZN_TYPE_Q6_K};
    zn_status st;
    const bool mvx0 = E.o.mvx;
    if (!E.o.intdot || !mvx0) {
        moe_route_case(ZN_TYPE_Q4_K, 10, 2, true, 0.0f, true, &st);
        CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
        return;
    }
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t c = 0; c < sizeof sh / sizeof *sh; c++) {
            const double e = moe_route_case(types[ti], sh[c].ne, sh[c].k, sh[c].norm, sh[c].ws, c != 1, &st);
            CHECK_MSG(!st && e <= MM_TOL_Q8, "%s, %d experts, top %d: %s nmse %.3g", zn_type_name(types[ti]), sh[c].ne,
                      sh[c].k, st ? "refused," : "", e);
        }
    E.o.mvx = false; /* x by quantx.comp: its pipelines have no routing */
    moe_route_case(ZN_TYPE_Q4_K, 10, 2, true, 0.0f, true, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
    E.o.mvx = mvx0;
    moe_route_case(ZN_TYPE_F16, 10, 2, true, 0.0f, true, &st);
    CHECK_EQ_INT(st, ZN_ERR_UNSUPPORTED);
}

int main(void) {
    if (!setup("vk_mv_fused")) return no_device("vk_mv_fused");
    RUN(test_matvec_gated_norm);
    RUN(test_matvec_expert_class);
    RUN(test_matvec_moe_tail);
    RUN(test_matvec_moe_route);
    teardown();
    return harness_report("vk_mv_fused");
}
