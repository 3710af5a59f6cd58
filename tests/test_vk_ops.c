/* The Vulkan matmul kernels against the CPU reference (tests/vk_test.h):
 * mat-vec (float, integer, x quantised in the kernel), the tiled and f16
 * GEMMs (KHR / NV cooperative matrices or their emulation), grouped
 * matmuls and MoE experts (the integer mat-vec's fusions of MoE tails,
 * routing and gated norms: test_vk_mv_fused.c). Sizes are small and odd on
 * purpose. */
#include "vk_mm_test.h"
#include "vk_ops_impl.h" /* vkops_pipe: test_pipes_parallel */

/* ---- mat-vec / mat-mat ------------------------------------------------ */

typedef enum mm_kernel { K_AUTO, K_VEC, K_MAT, K_F16 } mm_kernel;

/* K_F16: the f16 GEMM path (vk_ops.h mm_scratch) on cooperative matrices
 * when f16_cm, else on their emulation. Its scratch (NaN-poisoned, so a
 * missing zero pad shows) holds half the weights: they go in chunks. */
static bool f16_cm, f16_cm2; /* f16_cm2: dense GEMMs on mmf_cm2.comp (NV cooperative matrix 2) */
/* " (coopmat2)", " (coopmat)" or " (emulated)": the f16 GEMM path a failure message is about */
static const char *f16_path_name(void) { return f16_cm2 ? " (coopmat2)" : f16_cm ? " (coopmat)" : " (emulated)"; }
static zn_status f16_matmat(vkop_mm *a, uint64_t weight_bytes, zn_err *err) {
    const vkops saved = E.o;
    E.o.coopmat = f16_cm;
    E.o.mm_emulate = !f16_cm;
    E.o.mm_cm2 = f16_cm && f16_cm2;
    E.o.mm_scratch_bytes = vkops_mm_scratch_bytes(&E.o, a, weight_bytes / 2);
    E.o.mm_scratch = dev_out(E.o.mm_scratch_bytes).addr;
    zn_status st = vkop_matmat(&E.o, &E.c, a, "f16", err);
    E.o.coopmat = saved.coopmat, E.o.mm_emulate = saved.mm_emulate, E.o.mm_cm2 = saved.mm_cm2;
    E.o.mm_scratch = saved.mm_scratch, E.o.mm_scratch_bytes = saved.mm_scratch_bytes;
    return st;
}

/* One matmul case: T tokens, optional bias/scale/residual; x rows xpad
 * floats longer than cols (unaligned rows when xpad % 4). Returns nmse. */
static double mm_case_x(zn_type t, int rows, int cols, int T, bool extras, mm_kernel kern, int xpad) {
    const int ld = cols + xpad;
    float *wf = malloc(sizeof(float) * (size_t)rows * cols), *x = malloc(sizeof(float) * (size_t)T * ld);
    float *bias = malloc(sizeof(float) * rows), *res = malloc(sizeof(float) * (size_t)T * rows);
    float *y = malloc(sizeof(float) * (size_t)T * rows);
    double *ref = malloc(sizeof(double) * (size_t)T * rows);
    void *wq = make_weights(t, rows, cols, wf);
    fill(x, (size_t)T * ld, 1.0f);
    fill(bias, rows, 1.0f);
    fill(res, (size_t)T * rows, 1.0f);
    float scale = 0.75f;
    float *xr = malloc(sizeof(float) * (size_t)T * cols); /* the x the kernel multiplies */
    for (int tk = 0; tk < T; tk++) memcpy(xr + (size_t)tk * cols, x + (size_t)tk * ld, sizeof(float) * cols);
    if (kern == K_VEC && q8_path(t))
        for (int tk = 0; tk < T; tk++) q8_round(xr + (size_t)tk * cols, cols);
    for (int tk = 0; tk < T; tk++)
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int k = 0; k < cols; k++) s += (double)wf[(size_t)r * cols + k] * xr[(size_t)tk * cols + k];
            if (extras) s = s * scale + bias[r] + res[(size_t)tk * rows + r];
            ref[(size_t)tk * rows + r] = s;
        }
    size_t rb = vkq_row_bytes(t, cols);
    vkref dw = dev_up(wq, rb * rows), dx = dev_up(x, sizeof(float) * T * ld), dy = dev_out(sizeof(float) * T * rows);
    vkop_mm a = {.type = t, .w = dw.addr, .x = dx.addr, .y = dy.addr, .ncols = (uint32_t)cols, .nrows = (uint32_t)rows,
                 .row_bytes = (uint32_t)rb, .n_tok = (uint32_t)T, .x_stride = (uint32_t)ld, .y_stride = (uint32_t)rows};
    if (extras) {
        a.bias = dev_up(bias, sizeof(float) * rows).addr;
        a.res = dev_up(res, sizeof(float) * T * rows).addr;
        a.scale = dev_up(&scale, sizeof scale).addr;
    }
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = kern == K_VEC ? vkop_matvec(&E.o, &E.c, &a, "mv", &err)
                     : kern == K_MAT ? vkop_matmat(&E.o, &E.c, &a, "mm", &err)
                     : kern == K_F16 ? f16_matmat(&a, rb * rows, &err)
                                     : vkop_matmul(&E.o, &E.c, &a, "mm", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dy, y, sizeof(float) * T * rows);
            e = nmse(y, ref, (size_t)T * rows);
        }
    }
    free(wf); free(x); free(xr); free(bias); free(res); free(y); free(ref); free(wq);
    reset();
    return e;
}

static double mm_case(zn_type t, int rows, int cols, int T, bool extras, mm_kernel kern) {
    return mm_case_x(t, rows, cols, T, extras, kern, 0);
}

/* Runs a mat-vec test with the integer kernel (where the device has it),
 * both ways of quantising x: in the mat-vec's workgroups (the default) and
 * by quantx.comp first. Each with the defaults (several tokens: t.mvt per
 * workgroup, matmuls without experts), and with 3 rows per
 * subgroup (a partial last group) and 2 steps per iteration (what GPUs
 * run, with a remainder) and 3 tokens per workgroup, then 2 tokens;
 * the fused one then also with 3 subgroups per
 * workgroup (the RMS sum across them; on lavapipe's 8 lanes a row of 32
 * x 3k columns ends inside the workgroup's last pass) on 2 workgroups per
 * token (each looping over row blocks) prefetching 5 sectors per thread
 * before x and 3 per row block (past the matrix's end on small ones), as
 * the pipelines for big matrices (tuning mvx_big_mb 0), and
 * quantx.comp for rows over 256
 * (fused below, on 2 subgroups per workgroup, while quantx.comp's mat-vec
 * has its default: both in one test), then quantx.comp alone, splitting
 * rows into slices of 2 vec4s per thread (several workgroups per row, a
 * partial last slice; fused x modes only through quantx.comp's slices,
 * tuning mvx_modes) and its mat-vec prefetching 4 sectors per thread per
 * row block. Then a token per workgroup (mvt 1) and the float kernel. */
static void both_matvecs(void (*fn)(void)) {
    const bool had = E.o.intdot, mvx = E.o.mvx;
    const uint32_t max_cols = E.o.mvx_max_cols, sg = E.d.info.subgroup_size;
    const vktune saved = E.o.t;
    vktune *t = &E.o.t;
    if (had) {
        t->mvt_modes = 7; /* fused where x fits, like a single token's (the cpu class's own is 0) */
        fn();
        t->mvt = 3; /* 3 tokens per workgroup of 3 rows per subgroup: 9 sums, padded to 16 */
        mvq_config(3, 2, 3 * sg, 3 * sg);
        for (int b = 0; b < 3; b++) {
            vktune_mvx *x = b < 2 ? &t->mvx_t[b] : &t->mvt_t;
            vktune_set_all(x->wgs, 2);
            vktune_set_all(x->pf, 5);
            vktune_set_all(x->pn, 3);
        }
        t->mvx_big_mb = 0;
        fn();
        t->mvx_big_mb = saved.mvx_big_mb;
        for (int b = 0; b < 3; b++) {
            vktune_mvx *x = b < 2 ? &t->mvx_t[b] : &t->mvt_t;
            const vktune_mvx *x0 = b < 2 ? &saved.mvx_t[b] : &saved.mvt_t;
            memcpy(x->wgs, x0->wgs, sizeof x->wgs);
            memcpy(x->pf, x0->pf, sizeof x->pf);
            memcpy(x->pn, x0->pn, sizeof x->pn);
        }
        t->mvt = 2; /* 2 tokens of 3 rows */
        mvq_config(3, 2, 0, 2 * sg);
        E.o.mvx_max_cols = 256;
        fn();
        E.o.mvx_max_cols = max_cols;
        t->mvt = saved.mvt;
        t->mvx_modes = t->mvt_modes = 1u << VKX_PLAIN; /* the fused modes through quantx.comp */
        t->qx_sk = 2;
        t->mvq_pn = 4;
        mvq_config(0, 0, 0, 0);
        vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_QUANTX][0]);
        fn();
        E.o.mvx = false; /* and the plain one */
        fn();
        E.o.mvx = mvx;
        t->mvx_modes = saved.mvx_modes;
        t->mvt_modes = saved.mvt_modes;
        t->qx_sk = saved.qx_sk;
        t->mvq_pn = saved.mvq_pn;
        t->mvt = 1; /* several tokens, a token per workgroup */
        mvq_config(0, 0, 0, 0);
        vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_QUANTX][0]);
        fn();
        t->mvt = saved.mvt;
        mv_pipes_drop();
    }
    E.o.intdot = false;
    fn();
    t->mv_one_rows = 0; /* the float kernel's multi-row workgroups too */
    fn();
    t->mv_one_rows = saved.mv_one_rows;
    E.o.intdot = had;
}

static void matvec_types(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        const double tol = q8_path(t) ? MM_TOL_Q8 : MM_TOL;
        double e1 = mm_case(t, 37, cols_for(t, 45), 1, false, K_VEC);
        double e3 = mm_case(t, 19, cols_for(t, 77), 3, true, K_VEC);
        /* rows longer than a subgroup's lanes take in one pass */
        double e4 = mm_case(t, 9, t == ZN_TYPE_F32 || t == ZN_TYPE_F16 || t == ZN_TYPE_BF16 ? 1111 : 2304, 2, false, K_VEC);
        double e5 = mm_case_x(t, 11, cols_for(t, 64), 3, false, K_VEC, 1); /* x rows not 16-byte aligned */
        /* one block per row: fewer steps than lanes (rows share a subgroup) */
        double e6 = mm_case(t, 21, zn_type_get(t)->blck == 256 ? 256 : 32, 2, true, K_VEC);
        CHECK_MSG(e1 <= tol && e3 <= tol && e4 <= tol && e5 <= tol && e6 <= tol,
                  "%s%s: nmse %.3g (T=1) %.3g (T=3, bias/scale/res) %.3g (long rows) %.3g (unaligned x) %.3g (short rows)",
                  zn_type_name(t), q8_path(t) ? " (int8 x)" : "", e1, e3, e4, e5, e6);
    }
}
static void test_matvec_types(void) {
    both_matvecs(matvec_types);
    /* the integer kernel falls back to the float one if its pipelines fail */
    CHECK_MSG(!E.o.intdot_err[0], "integer mat-vec off: %s", E.o.intdot_err);
}

static void matmat_types(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        /* cooperative matrices multiply f16-rounded operands: relative error
         * ~2^-11 per product, nmse ~1e-7 */
        const double tol = E.o.coopmat && t != ZN_TYPE_F32 ? 1e-5 : MM_TOL;
        double e1 = mm_case(t, 70, cols_for(t, 45), 67, false, K_MAT);
        double e2 = mm_case(t, 33, cols_for(t, 33), 5, true, K_MAT);
        double e3 = mm_case(t, 130, cols_for(t, 64), 131, true, K_MAT); /* more than one tile each way */
        CHECK_MSG(e1 <= tol && e2 <= tol && e3 <= tol, "%s%s: nmse %.3g (70x67) %.3g (33x5, extras) %.3g (130x131)",
                  zn_type_name(t), E.o.coopmat ? " (coopmat)" : "", e1, e2, e3);
    }
}

/* The tiled kernel, and on devices with cooperative matrices the f32 one too. */
static void test_matmat_types(void) {
    matmat_types();
    if (E.o.coopmat) {
        E.o.coopmat = false;
        matmat_types();
        E.o.coopmat = true;
    }
}

/* vkops_collect lists the pipelines asked for instead of building them
 * (each once; a refused kind is not listed and stays refused), and
 * vkops_build builds the list on two threads, each pipeline counted. */
static void test_pipes_parallel(void) {
    const vkop_kind ks[] = {VKO_NORM, VKO_ROPE, VKO_ELTWISE, VKO_ARGMAX};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) vkpipe_destroy(&E.o.ps, &E.o.pipes[ks[i]][0]);
    vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_MATVEC][vktune_slot(ZN_TYPE_Q4_K)]);
    const int before = E.o.ps.n_created;
    E.o.refuse_kinds = 1ull << VKO_ARGMAX;
    vkops_collect(&E.o);
    zn_err err = {0};
    for (int rep = 0; rep < 2; rep++)
        for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
            const vkpipe *p = NULL;
            const zn_status st = vkops_pipe(&E.o, ks[i], (vkvar){0}, &p, &err);
            CHECK_MSG(ks[i] == VKO_ARGMAX ? st != ZN_OK : st == ZN_OK && p && !p->pipe, "kind %d", (int)ks[i]);
        }
    const vkpipe *pq = NULL;
    CHECK(vkops_pipe(&E.o, VKO_MATVEC, (vkvar){.type = ZN_TYPE_Q4_K}, &pq, &err) == ZN_OK && !pq->pipe);
    CHECK_EQ_INT(E.o.n_pending, 4);
    CHECK_EQ_INT(E.o.ps.n_created, before);
    vkops_build(&E.o, 2);
    CHECK(!E.o.collecting && E.o.n_pending == 0);
    CHECK_EQ_INT(E.o.ps.n_created, before + 4);
    for (size_t i = 0; i < 3; i++) CHECK_MSG(E.o.pipes[ks[i]][0].pipe != VK_NULL_HANDLE, "kind %d not built", (int)ks[i]);
    CHECK(pq->pipe != VK_NULL_HANDLE);
    const vkpipe *p = NULL;
    CHECK(vkops_pipe(&E.o, VKO_ARGMAX, (vkvar){0}, &p, &err) != ZN_OK);
    E.o.refuse_kinds = 0;
}

/* The NV-coopmat2 tiles: every config's accumulator at least
 * ZN_VK_CM2_MIN_ACC values, its rows and tokens multiples of ZN_VK_CM2_GRAIN
 * (others left outputs unwritten on an H200 and an H100, vk_gemm.c
 * zn_vk_cm2_cfgs); by shape, grouped GEMMs take 64 x 64 or larger at any
 * tokens per expert, with or without the dequantised copy, and a dense
 * batched decode step of 32 tokens 32 x 64. */
static void test_cm2_cfg_grouped(void) {
    for (int ci = 0; ci < ZN_VK_CM2_NCFG; ci++)
        CHECK_MSG(zn_vk_cm2_cfgs[ci].bm * zn_vk_cm2_cfgs[ci].bn >= ZN_VK_CM2_MIN_ACC &&
                      zn_vk_cm2_cfgs[ci].bm % ZN_VK_CM2_GRAIN == 0 && zn_vk_cm2_cfgs[ci].bn % ZN_VK_CM2_GRAIN == 0,
                  "cm2 config %d: %ux%u", ci, zn_vk_cm2_cfgs[ci].bm, zn_vk_cm2_cfgs[ci].bn);
    const uint32_t saved = E.o.t.cm2_cfg;
    E.o.t.cm2_cfg = ZN_VK_AUTO;
    static const uint32_t toks[] = {1, 8, 16, 32, 33, 64, 65, 128, 600};
    for (size_t i = 0; i < sizeof toks / sizeof *toks; i++)
        for (int direct = 0; direct < 2; direct++) {
            const vkcm2_cfg *f = &zn_vk_cm2_cfgs[vkops_cm2_cfg(&E.o, 512, toks[i], 2048, 256, direct)];
            CHECK_MSG(f->bm >= 64 && f->bn >= 64, "grouped, %u tokens an expert%s: %ux%u", toks[i],
                      direct ? ", no copy" : "", f->bm, f->bn);
        }
    const vkcm2_cfg *d = &zn_vk_cm2_cfgs[vkops_cm2_cfg(&E.o, 4096, 32, 4096, 1, true)];
    CHECK_MSG(d->bm == 32 && d->bn == 64, "dense, 32 tokens, no copy: %ux%u", d->bm, d->bn);
    /* cm2_moe_cfg sets the grouped tile alone; cm2_cfg sets both */
    E.o.t.cm2_moe_cfg = 3;
    CHECK_EQ_INT(vkops_cm2_cfg(&E.o, 512, 16, 2048, 256, true), 3);
    CHECK_EQ_INT(vkops_cm2_cfg(&E.o, 4096, 32, 4096, 1, true), 4);
    E.o.t.cm2_cfg = 1;
    CHECK_EQ_INT(vkops_cm2_cfg(&E.o, 512, 16, 2048, 256, true), 1);
    E.o.t.cm2_moe_cfg = ZN_VK_AUTO;
    E.o.t.cm2_cfg = saved;
}

/* The tiled kernel split over k (tuning mt_split_k: matmul.comp SPLIT, then
 * mm_reduce.comp applying the epilogue once): F32 and Q4_K, bias, scale and
 * residual, k in ranges of 64 columns with a shorter last one, several
 * tiles each way, against the same double-precision reference; the split
 * pipeline must be the one that ran. */
static void test_tiled_split(void) {
    const vkops saved = E.o;
    E.o.coopmat = false; /* matmul.comp, not matmul_cm.comp */
    E.o.t.mt_split_k = 64, E.o.t.mm_split_wgs = 64;
    E.o.mm_scratch_bytes = 16u << 20;
    const zn_type types[] = {ZN_TYPE_F32, ZN_TYPE_Q4_K};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        const zn_type t = types[i];
        const int cols = t == ZN_TYPE_F32 ? 300 : 768;
        E.o.mm_scratch = dev_out(E.o.mm_scratch_bytes).addr; /* mm_case's reset() frees it */
        const double e1 = mm_case(t, 130, cols, 131, true, K_MAT);
        E.o.mm_scratch = dev_out(E.o.mm_scratch_bytes).addr;
        const double e2 = mm_case(t, 33, cols, 5, false, K_MAT);
        CHECK_MSG(e1 <= MM_TOL && e2 <= MM_TOL, "%s split over k: nmse %.3g (130x131, extras) %.3g (33x5)", zn_type_name(t),
                  e1, e2);
        CHECK_MSG(E.o.pipes[VKO_MATMUL_SPLIT][vktune_slot(t)].pipe != VK_NULL_HANDLE, "%s: not split", zn_type_name(t));
    }
    E.o.coopmat = saved.coopmat, E.o.t = saved.t;
    E.o.mm_scratch = saved.mm_scratch, E.o.mm_scratch_bytes = saved.mm_scratch_bytes;
}

/* The f16 GEMM path: weights dequantised and activations converted to f16
 * (so nmse ~1e-7 as on cooperative matrices), in several chunks for the
 * 300-row case; emulated everywhere, on cooperative matrices where present. */
static void f16_types(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        if (t == ZN_TYPE_F32) continue; /* kept on the f32 kernel */
        double e1 = mm_case(t, 70, cols_for(t, 45), 67, false, K_F16);
        double e2 = mm_case(t, 33, cols_for(t, 33), 5, true, K_F16);
        double e3 = mm_case(t, 300, cols_for(t, 72), 131, true, K_F16);
        CHECK_MSG(e1 <= 1e-5 && e2 <= 1e-5 && e3 <= 1e-5, "%s%s: nmse %.3g (70x67) %.3g (33x5, extras) %.3g (300x131, chunks)",
                  zn_type_name(t), f16_path_name(), e1, e2, e3);
    }
}

/* The f16 GEMM path both ways (tuning mm_prep_tok, moe_prep_tok): A read
 * from a copy of the weights that mm_prep.comp dequantised first, then A
 * dequantised tile by tile from the weights themselves (dq.glsl dq8h) as
 * the GEMM loads it. */
static bool mm_direct;
static void both_gemm_paths(void (*fn)(void)) {
    const uint32_t saved = E.o.t.mm_prep_tok, saved_moe = E.o.t.moe_prep_tok;
    for (int d = 0; d < 2; d++) {
        mm_direct = d == 1;
        E.o.t.mm_prep_tok = E.o.t.moe_prep_tok = mm_direct ? ZN_VK_OFF : 1;
        fprintf(stderr, "  f16 GEMM, %s\n", mm_direct ? "weights dequantised in its tile loads" : "weights dequantised first");
        fn();
    }
    E.o.t.mm_prep_tok = saved, E.o.t.moe_prep_tok = saved_moe;
    mm_direct = false;
}

/* Which GEMMs skip the dequantised copy: dense ones by their tokens
 * (mm_prep_tok), grouped ones by their tokens per expert (moe_prep_tok),
 * whatever the other key says: a prompt of 512 on 256 experts of 8 slots
 * is 16 tokens an expert, on 32 experts 128. */
static void test_mm_direct_rule(void) {
    const vktune saved = E.o.t;
    E.o.t.mm_prep_tok = 128, E.o.t.moe_prep_tok = 64;
    vkop_mm d = {.type = ZN_TYPE_Q4_K, .n_tok = 127}, g = {.type = ZN_TYPE_Q4_K, .ids = 1, .n_tok = 512, .n_slots = 8};
    CHECK(vkops_mm_direct(&E.o, &d));
    d.n_tok = 128;
    CHECK(!vkops_mm_direct(&E.o, &d));
    g.n_expert = 256;
    CHECK(vkops_mm_direct(&E.o, &g));
    g.n_expert = 32;
    CHECK(!vkops_mm_direct(&E.o, &g));
    g.n_expert = 65; /* 4096 / 65: 63.02, 64 tokens an expert once rounded up */
    CHECK(!vkops_mm_direct(&E.o, &g));
    g.n_expert = 66; /* 62.06: 63 */
    CHECK(vkops_mm_direct(&E.o, &g));
    g.n_tok = 16, g.n_expert = 2; /* 64 tokens an expert, below mm_prep_tok as a whole: the copy */
    CHECK(!vkops_mm_direct(&E.o, &g));
    E.o.t.mm_prep_tok = 1, E.o.t.moe_prep_tok = ZN_VK_OFF;
    CHECK(vkops_mm_direct(&E.o, &g));
    CHECK(!vkops_mm_direct(&E.o, &d));
    E.o.t = saved;
}

/* Was the NV cooperative matrix 2 pipeline of tile config ci (grouped:
 * moe) built, for the path mm_direct says (then for some weight type)? */
static bool cm2_built(bool moe, uint32_t ci) {
    if (!mm_direct) return E.o.pipes[moe ? VKO_MMF_CM2_MOE : VKO_MMF_CM2][ci].pipe != VK_NULL_HANDLE;
    for (int t = 0; t < ZN_VK_NTYPES; t++)
        if (E.o.pipes[moe ? VKO_MMQ_CM2_MOE : VKO_MMQ_CM2][ci * ZN_VK_NTYPES + t].pipe != VK_NULL_HANDLE) return true;
    return false;
}

/* Emulated in the tile configs picked by shape (lavapipe: 128x64 with 256
 * threads, 64x64 with 128); on cooperative matrices in every config the
 * device fits. */
static void matmat_f16(void) {
    f16_cm = false;
    f16_types();
    const uint32_t cfg = E.o.t.mm_cfg;
    for (uint32_t ci = 0; E.o.coopmat && ci < ZN_VK_MM_NCFG; ci++) {
        const vkmm_cfg *f = &zn_vk_mm_cfgs[ci];
        if (!vkops_mm_cfg_fits(&E.o, ci)) continue;
        fprintf(stderr, "  coopmat GEMM %ux%u, subgroup %ux%u, %u threads\n", f->bm, f->bn, f->wm, f->wn, f->wg);
        E.o.t.mm_cfg = ci;
        f16_cm = true;
        f16_types();
    }
    E.o.t.mm_cfg = cfg;
}

/* The NV cooperative matrix 2 GEMM (devices with it) in every tile config:
 * the f16_types cases (rows, tokens and kp not multiples of the tiles: the
 * clamped loads) and 260 x 272 with kp a multiple of 64 (whole tiles: the
 * unclamped loads), against the same double-precision reference. */
static void test_matmat_f16(void) { both_gemm_paths(matmat_f16); }

static void matmat_cm2(void) {
    const uint32_t cfg = E.o.t.cm2_cfg;
    f16_cm = f16_cm2 = true;
    for (uint32_t ci = 0; ci < ZN_VK_CM2_NCFG; ci++) {
        const vkcm2_cfg *f = &zn_vk_cm2_cfgs[ci];
        fprintf(stderr, "  coopmat2 GEMM %ux%u, k %u x %u\n", f->bm, f->bn, f->bk, f->unroll);
        E.o.t.cm2_cfg = ci;
        f16_types();
        /* vk_ops falls back to the KHR kernel when the driver refuses the pipeline: it must not have */
        CHECK_MSG(cm2_built(false, ci), "coopmat2 %ux%u k %u x %u: no pipeline", f->bm, f->bn, f->bk, f->unroll);
        for (size_t i = 1; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
            const zn_type t = ALL_TYPES[i];
            const double e = mm_case(t, 260, zn_type_get(t)->blck == 256 ? 512 : 128, 272, true, K_F16);
            CHECK_MSG(e <= 1e-5, "%s (coopmat2 %ux%u k %u): nmse %.3g (260x272, whole tiles)", zn_type_name(t), f->bm,
                      f->bn, f->bk, e);
        }
    }
    f16_cm2 = false;
    E.o.t.cm2_cfg = cfg;
}
static void test_matmat_cm2(void) {
    if (!E.o.coopmat || !E.d.info.coopmat2) SKIP("no NV cooperative matrix 2 on %s", E.d.info.name);
    both_gemm_paths(matmat_cm2);
}

/* Three stacked matmuls as one f16 GEMM with the grouped epilogue (own
 * outputs with padded strides, bias, scale), its weights in two chunks
 * (the second starts inside the stack: r_base). */
static void f16_grouped_case(const int rows[3]) {
    const zn_type t = ZN_TYPE_Q4_K;
    const int total = rows[0] + rows[1] + rows[2], cols = 256, T = 67, ymax = (rows[0] > rows[2] ? rows[0] : rows[2]) + 3;
    float *wf = malloc(sizeof(float) * total * cols), *x = malloc(sizeof(float) * T * cols);
    float *bias = malloc(sizeof(float) * total), scale[3] = {0.5f, 1.5f, -2.0f}, *y = malloc(sizeof(float) * T * ymax);
    double *ref = malloc(sizeof(double) * T * ymax);
    void *wq = make_weights(t, total, cols, wf);
    fill(x, (size_t)T * cols, 1.0f);
    fill(bias, (size_t)total, 1.0f);
    const size_t rb = vkq_row_bytes(t, cols);
    vkref dw = dev_up(wq, rb * total), dx = dev_up(x, sizeof(float) * T * cols), db = dev_up(bias, sizeof(float) * total);
    vkref ds = dev_up(scale, sizeof scale), dy[3];
    vkop_group grp = {.n_seg = 3};
    for (int sg = 0, r0 = 0; sg < 3; r0 += rows[sg++]) {
        dy[sg] = dev_out(sizeof(float) * T * (rows[sg] + 3));
        grp.y[sg] = dy[sg].addr;
        grp.bias[sg] = sg == 1 ? 0 : db.addr + 4 * r0;
        grp.scale[sg] = ds.addr + 4 * sg;
        grp.row_end[sg] = (uint32_t)(r0 + rows[sg]);
        grp.y_stride[sg] = (uint32_t)rows[sg] + 3;
    }
    vkref dg = dev_up(&grp, sizeof grp);
    vkop_mm a = {.type = t, .w = dw.addr, .x = dx.addr, .ncols = cols, .nrows = total, .row_bytes = (uint32_t)rb,
                 .n_tok = T, .x_stride = cols, .group = dg.addr};
    zn_err err = {0};
    bool ok = false;
    if (begin()) {
        zn_status st = f16_matmat(&a, rb * total, &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        ok = run() && !st;
    }
    CHECK(ok);
    for (int sg = 0, r0 = 0; ok && sg < 3; r0 += rows[sg++]) {
        const int ld = rows[sg] + 3;
        dev_down(dy[sg], y, sizeof(float) * T * ld);
        for (int tk = 0; tk < T; tk++)
            for (int r = 0; r < ld; r++) {
                if (r >= rows[sg]) { /* padding stays untouched (NaN) */
                    CHECK(y[tk * ld + r] != y[tk * ld + r]);
                    ref[tk * ld + r] = 0, y[tk * ld + r] = 0;
                    continue;
                }
                double v = 0;
                for (int k = 0; k < cols; k++) v += (double)wf[(r0 + r) * cols + k] * x[tk * cols + k];
                ref[tk * ld + r] = v * scale[sg] + (sg != 1 ? bias[r0 + r] : 0);
            }
        const double e = nmse(y, ref, (size_t)T * ld);
        CHECK_MSG(e <= 1e-5, "segment %d of %d/%d/%d rows%s: nmse %.3g", sg, rows[0], rows[1], rows[2],
                  f16_path_name(), e);
    }
    free(wf); free(x); free(y); free(ref); free(wq); free(bias);
    reset();
}

/* Segments smaller than a tile (every tile spans several), and segments of
 * whole tiles with one straddled (the per-tile segment lookup of
 * mmf_cm2.comp), each in two chunks of rows. */
static void f16_grouped(void) {
    static const int small[3] = {13, 7, 20}, large[3] = {128, 64, 70};
    f16_grouped_case(small);
    f16_grouped_case(large);
}

/* Three f16 GEMMs in one command buffer sharing the scratch: the second
 * reads the first one's converted x (x_reuse); the third claims reuse for
 * a different x, which the key check must refuse. */
static void f16_x_reuse(void) {
    const zn_type t = ZN_TYPE_Q8_0;
    const int rows = 19, cols = 96, T = 9;
    float wf[19 * 96], x[2][9 * 96], y[3][9 * 19];
    double ref[9 * 19];
    fill(x[0], (size_t)T * cols, 1.0f);
    fill(x[1], (size_t)T * cols, 2.0f);
    void *wq = make_weights(t, rows, cols, wf);
    const size_t rb = vkq_row_bytes(t, cols);
    vkref dw = dev_up(wq, rb * rows), dx[2] = {dev_up(x[0], sizeof x[0]), dev_up(x[1], sizeof x[1])}, dy[3];
    const vkops saved = E.o;
    E.o.coopmat = f16_cm, E.o.mm_emulate = !f16_cm, E.o.mm_cm2 = f16_cm && f16_cm2;
    vkop_mm a = {.type = t, .w = dw.addr, .ncols = cols, .nrows = rows, .row_bytes = (uint32_t)rb, .n_tok = T,
                 .x_stride = cols, .y_stride = rows};
    E.o.mm_scratch_bytes = vkops_mm_scratch_bytes(&E.o, &a, rb * rows);
    E.o.mm_scratch = dev_out(E.o.mm_scratch_bytes).addr;
    zn_err err = {0};
    zn_status st = begin() ? ZN_OK : ZN_ERR_DEVICE;
    for (int i = 0; i < 3 && !st; i++) {
        dy[i] = dev_out(sizeof y[i]);
        a.x = dx[i == 2].addr, a.y = dy[i].addr, a.x_reuse = i > 0;
        st = vkop_matmat(&E.o, &E.c, &a, "f16", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
    }
    const bool ok = run() && !st;
    E.o.coopmat = saved.coopmat, E.o.mm_emulate = saved.mm_emulate, E.o.mm_cm2 = saved.mm_cm2;
    E.o.mm_scratch = saved.mm_scratch, E.o.mm_scratch_bytes = saved.mm_scratch_bytes;
    CHECK(ok);
    for (int i = 0; ok && i < 3; i++) {
        dev_down(dy[i], y[i], sizeof y[i]);
        for (int tk = 0; tk < T; tk++)
            for (int r = 0; r < rows; r++) {
                double v = 0;
                for (int k = 0; k < cols; k++) v += (double)wf[r * cols + k] * x[i == 2][tk * cols + k];
                ref[tk * rows + r] = v;
            }
        const double e = nmse(y[i], ref, (size_t)T * rows);
        CHECK_MSG(e <= 1e-5, "call %d%s: nmse %.3g", i, f16_path_name(), e);
    }
    free(wq);
    reset();
}

/* A SwiGLU or an RMS norm fused into the f16 GEMM's x conversion
 * (mm_prep.comp): dense, and the grouped MoE GEMM with per-slot x
 * (gathered in bucket order, a SwiGLU's aux with it), against silu(x) *
 * aux, or x / rms(x) * aux (aux the norm's weight), then the matmul in
 * double precision. Rows of 256 (a workgroup's threads more than a norm's
 * row has steps) and of 8448 (fewer: each thread takes several). */
static void f16_xmode(int mode, int cols) {
    const zn_type t = ZN_TYPE_Q4_K;
    const int ne = 3, rows = 37, T = 21, k = 2;
    const size_t rb = vkq_row_bytes(t, cols);
    float *wf = malloc(sizeof(float) * ne * rows * cols), *x = malloc(sizeof(float) * T * k * cols);
    float *aux = malloc(sizeof(float) * T * k * cols), *h = malloc(sizeof(float) * T * k * cols);
    float *y = malloc(sizeof(float) * T * k * rows), route[21 * 4], scales[3] = {1, 1, 1};
    double *ref = malloc(sizeof(double) * T * k * rows);
    uint8_t *wq = make_experts(t, ne, rows, cols, wf);
    fill(x, (size_t)T * k * cols, 3.0f);
    fill(aux, (size_t)T * k * cols, 1.0f);
    for (int r = 0; r < T * k; r++) {
        double ss = 0;
        for (int c = 0; c < cols; c++) ss += (double)x[r * cols + c] * x[r * cols + c];
        const double inv = 1.0 / sqrt(ss / cols + 1e-5);
        for (int c = 0, i = r * cols; c < cols; c++, i++)
            h[i] = mode == VKX_SWIGLU ? x[i] / (1.0f + expf(-x[i])) * aux[i] : (float)(x[i] * inv * aux[c]);
    }
    for (int tk = 0; tk < T; tk++)
        for (int j = 0; j < k; j++) route[tk * 2 * k + j] = (float)((tk + 2 * j) % ne), route[tk * 2 * k + k + j] = 0.5f;
    for (int moe = 0; moe < 2; moe++) { /* (reset() frees the device buffers) */
        vkref dw = dev_up(wq, rb * rows * ne), dx = dev_up(x, sizeof(float) * T * k * cols);
        vkref da = dev_up(aux, sizeof(float) * T * k * cols), dr = dev_up(route, sizeof route);
        vkref ds = dev_up(scales, sizeof scales), dy = dev_out(sizeof(float) * T * k * rows);
        vkop_mm a = moe ? moe_args(t, ne, rows, cols, T, k, true, dw, dx, dr, ds, dy)
                        : (vkop_mm){.type = t, .w = dw.addr, .x = dx.addr, .y = dy.addr, .ncols = cols, .nrows = rows,
                                    .row_bytes = (uint32_t)rb, .n_tok = T * k, .x_stride = cols, .y_stride = rows};
        a.xmode = mode, a.aux = da.addr, a.eps = 1e-5f;
        for (int tk = 0; tk < T; tk++) /* dense: T * k rows of x; MoE: token tk, slot j reads its own row too */
            for (int j = 0; j < k; j++)
                for (int r = 0; r < rows; r++) {
                    const int e = moe ? (int)route[tk * 2 * k + j] : 0;
                    const float *wr = wf + ((size_t)e * rows + r) * cols, *hr = h + (size_t)(tk * k + j) * cols;
                    double v = 0;
                    for (int c = 0; c < cols; c++) v += (double)wr[c] * hr[c];
                    ref[(tk * k + j) * rows + r] = v;
                }
        zn_err err = {0};
        double e = INFINITY;
        if (begin()) {
            zn_status st = f16_matmat(&a, rb * rows * ne, &err);
            if (st) fprintf(stderr, "  %s\n", err.msg);
            if (run() && !st) {
                dev_down(dy, y, sizeof(float) * T * k * rows);
                e = nmse(y, ref, (size_t)T * k * rows);
            }
        }
        CHECK_MSG(e <= 1e-5, "%s x of %d, %s%s: nmse %.3g", mode == VKX_SWIGLU ? "SwiGLU" : "RMS-normed", cols,
                  moe ? "grouped MoE" : "dense", f16_path_name(), e);
        reset();
    }
    free(wf); free(x); free(aux); free(h); free(y); free(ref); free(wq);
}

/* Emulated, on cooperative matrices, on NV cooperative matrix 2 (where present). */
static void matmat_f16_grouped(void) {
    for (int cm = 0; cm <= (E.o.coopmat ? 1 + (int)E.d.info.coopmat2 : 0); cm++) {
        f16_cm = cm > 0, f16_cm2 = cm == 2;
        f16_grouped();
        f16_x_reuse();
        f16_xmode(VKX_SWIGLU, 256);
        f16_xmode(VKX_RMSNORM, 256);
        f16_xmode(VKX_RMSNORM, 8448);
    }
    f16_cm2 = false;
}
static void test_matmat_f16_grouped(void) { both_gemm_paths(matmat_f16_grouped); }

/* The grouped MoE GEMM: 133 tokens x 3 slots over 6 experts (one chosen by
 * no token, one by all: more than one token tile), shared or per-slot x,
 * per-expert scales; weights dequantised two experts at a time. */
static double moe_case_r(zn_type t, bool per_slot, int rows, int cols) {
    const int ne = 6, T = 133, k = 3;
    const size_t rb = vkq_row_bytes(t, cols), eb = rb * rows;
    float *wf = malloc(sizeof(float) * ne * rows * cols), *x = malloc(sizeof(float) * T * k * cols);
    float *route = malloc(sizeof(float) * T * 2 * k), scales[6], *y = malloc(sizeof(float) * T * k * rows);
    double *ref = malloc(sizeof(double) * T * k * rows);
    uint8_t *wq = make_experts(t, ne, rows, cols, wf);
    fill(x, (size_t)T * k * cols, 1.0f);
    fill(scales, 6, 1.0f);
    for (int tk = 0; tk < T; tk++) /* distinct experts per token: {0, 5} and one of 1..3 */
        for (int j = 0; j < k; j++) {
            const int e = j == 0 ? (tk % 5 ? 0 : 5) : j == 1 ? 1 + tk % 3 : (tk % 5 ? 5 : 0);
            route[tk * 2 * k + j] = (float)e;
            route[tk * 2 * k + k + j] = 0.25f;
        }
    for (int tk = 0; tk < T; tk++)
        for (int j = 0; j < k; j++) {
            const int e = (int)route[tk * 2 * k + j];
            const float *xr = x + (per_slot ? (size_t)(tk * k + j) * cols : (size_t)tk * cols);
            for (int r = 0; r < rows; r++) {
                const float *wr = wf + ((size_t)e * rows + r) * cols;
                double s = 0;
                for (int c = 0; c < cols; c++) s += (double)wr[c] * xr[c];
                ref[(tk * k + j) * rows + r] = s * scales[e];
            }
        }
    vkref dw = dev_up(wq, eb * ne), dx = dev_up(x, sizeof(float) * T * k * cols), dr = dev_up(route, sizeof(float) * T * 2 * k);
    vkref ds = dev_up(scales, sizeof scales), dy = dev_out(sizeof(float) * T * k * rows);
    vkop_mm a = moe_args(t, ne, rows, cols, T, k, per_slot, dw, dx, dr, ds, dy);
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = f16_matmat(&a, eb * ne * 2 / 3, &err); /* half of that: two experts per chunk */
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dy, y, sizeof(float) * T * k * rows);
            e = nmse(y, ref, (size_t)T * k * rows);
        }
    }
    free(wf); free(x); free(route); free(y); free(ref); free(wq);
    reset();
    return e;
}

static double moe_case(zn_type t, bool per_slot) { return moe_case_r(t, per_slot, 40, cols_for(t, 72)); }

static void moe_types(void) {
    for (size_t i = 0; i < sizeof ALL_TYPES / sizeof *ALL_TYPES; i++) {
        zn_type t = ALL_TYPES[i];
        if (t == ZN_TYPE_F32) continue;
        double e0 = moe_case(t, false), e1 = moe_case(t, true);
        CHECK_MSG(e0 <= 1e-5 && e1 <= 1e-5, "%s%s: nmse %.3g (shared x) %.3g (per-slot x)", zn_type_name(t),
                  f16_path_name(), e0, e1);
    }
}

/* y[(t, j)][r] of a grouped MoE matmul in double precision (unit scales). */
static void moe_ref(const float *wf, const float *route, const float *x, int T, int k, int rows, int cols, double *ref) {
    for (int tk = 0; tk < T; tk++)
        for (int j = 0; j < k; j++)
            for (int r = 0; r < rows; r++) {
                const float *wr = wf + ((size_t)route[tk * 2 * k + j] * rows + r) * cols;
                double s = 0;
                for (int c = 0; c < cols; c++) s += (double)wr[c] * x[(size_t)tk * cols + c];
                ref[(tk * k + j) * rows + r] = s;
            }
}

/* Consecutive grouped GEMMs of one x (gate then up): the second reuses the
 * first's bucket and gathered x (x_reuse); a third claims reuse under other
 * routing, which the key check must refuse (it buckets and gathers anew). */
static void moe_x_reuse(void) {
    const zn_type t = ZN_TYPE_Q4_K;
    const int ne = 4, T = 37, k = 2, rows = 24, cols = cols_for(t, 64);
    const size_t rb = vkq_row_bytes(t, cols), eb = rb * rows;
    float *wf[2], *x = malloc(sizeof(float) * T * cols), route[2][37 * 4], scales[4];
    float *y = malloc(sizeof(float) * T * k * rows);
    double *ref = malloc(sizeof(double) * T * k * rows);
    uint8_t *wq[2];
    for (int i = 0; i < 2; i++) {
        wf[i] = malloc(sizeof(float) * ne * rows * cols);
        wq[i] = make_experts(t, ne, rows, cols, wf[i]);
    }
    fill(x, (size_t)T * cols, 1.0f);
    for (int e = 0; e < ne; e++) scales[e] = 1.0f;
    for (int tk = 0; tk < T; tk++)
        for (int j = 0; j < k; j++) {
            route[0][tk * 2 * k + j] = (float)((tk + j) % ne);
            route[1][tk * 2 * k + j] = (float)((3 * tk + 2 * j + 1) % ne);
            route[0][tk * 2 * k + k + j] = route[1][tk * 2 * k + k + j] = 0.5f;
        }
    vkref dw[2] = {dev_up(wq[0], eb * ne), dev_up(wq[1], eb * ne)}, dx = dev_up(x, sizeof(float) * T * cols);
    vkref dr[2] = {dev_up(route[0], sizeof route[0]), dev_up(route[1], sizeof route[1])};
    vkref ds = dev_up(scales, sizeof scales), dy[3];
    const int wsel[3] = {0, 1, 1}, rsel[3] = {0, 0, 1};
    const vkops saved = E.o;
    E.o.coopmat = f16_cm, E.o.mm_emulate = !f16_cm, E.o.mm_cm2 = f16_cm && f16_cm2, E.o.t.mm_cm2_moe = true;
    vkop_mm a = moe_args(t, ne, rows, cols, T, k, false, dw[0], dx, dr[0], ds, ds);
    E.o.mm_scratch_bytes = vkops_mm_scratch_bytes(&E.o, &a, eb * ne);
    E.o.mm_scratch = dev_out(E.o.mm_scratch_bytes).addr;
    zn_err err = {0};
    zn_status st = begin() ? ZN_OK : ZN_ERR_DEVICE;
    for (int i = 0; i < 3 && !st; i++) {
        dy[i] = dev_out(sizeof(float) * T * k * rows);
        a = moe_args(t, ne, rows, cols, T, k, false, dw[wsel[i]], dx, dr[rsel[i]], ds, dy[i]);
        a.x_reuse = i > 0;
        st = vkop_matmat(&E.o, &E.c, &a, "moe", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
    }
    const bool ok = run() && !st;
    E.o.coopmat = saved.coopmat, E.o.mm_emulate = saved.mm_emulate, E.o.mm_cm2 = saved.mm_cm2;
    E.o.t.mm_cm2_moe = saved.t.mm_cm2_moe, E.o.mm_scratch = saved.mm_scratch, E.o.mm_scratch_bytes = saved.mm_scratch_bytes;
    CHECK(ok);
    for (int i = 0; ok && i < 3; i++) {
        dev_down(dy[i], y, sizeof(float) * T * k * rows);
        moe_ref(wf[wsel[i]], route[rsel[i]], x, T, k, rows, cols, ref);
        const double e = nmse(y, ref, (size_t)T * k * rows);
        CHECK_MSG(e <= 1e-5, "grouped call %d%s: nmse %.3g", i, f16_path_name(), e);
    }
    for (int i = 0; i < 2; i++) free(wf[i]), free(wq[i]);
    free(x); free(y); free(ref);
    reset();
}

static void moe_grouped(void) {
    f16_cm = false;
    moe_types();
    moe_x_reuse();
    if (E.o.coopmat) {
        f16_cm = true;
        moe_types();
        moe_x_reuse();
        f16_cm2 = E.d.info.coopmat2;
        if (f16_cm2) moe_x_reuse();
    }
    /* NV cooperative matrix 2: B rows gathered by its decode function, in every tile config */
    const uint32_t cfg = E.o.t.cm2_cfg;
    f16_cm2 = true;
    for (uint32_t ci = 0; E.o.coopmat && E.d.info.coopmat2 && ci < ZN_VK_CM2_NCFG; ci++) {
        const vkcm2_cfg *f = &zn_vk_cm2_cfgs[ci];
        E.o.t.cm2_cfg = ci;
        fprintf(stderr, "  coopmat2 grouped GEMM %ux%u, k %u x %u\n", f->bm, f->bn, f->bk, f->unroll);
        moe_types();
        /* whole row tiles with kp a multiple of BK: the unclamped A loads */
        const double e0 = moe_case_r(ZN_TYPE_Q4_K, false, 260, 512), e1 = moe_case_r(ZN_TYPE_F16, true, 256, 128);
        CHECK_MSG(e0 <= 1e-5 && e1 <= 1e-5, "coopmat2 %ux%u k %u: nmse %.3g (Q4_K, 260 rows) %.3g (F16, 256 rows)",
                  f->bm, f->bn, f->bk, e0, e1);
        CHECK_MSG(cm2_built(true, ci), "coopmat2 grouped %ux%u k %u: no pipeline", f->bm, f->bn, f->bk);
    }
    f16_cm2 = false;
    E.o.t.cm2_cfg = cfg;
}
static void test_moe_grouped(void) { both_gemm_paths(moe_grouped); }

/* Mat-vec with the producer of x fused in: an RMS norm (with weight), a
 * SwiGLU or a sigmoid gate, against the two ops done separately in double
 * precision. The gate's cases come after the others', whose random data
 * stay what they were before it came. */
static void fused_x_case(zn_type t, int mode) {
    const int rows = 29, cols = cols_for(t, 72), T = 3;
    float *wf = malloc(sizeof(float) * rows * cols), x[3 * 512], aux[3 * 512], y[3 * 29], bias[29];
    double ref[3 * 29], h[512];
    float hf[512];
    void *wq = make_weights(t, rows, cols, wf);
    fill(x, sizeof x / sizeof *x, 2.0f); fill(aux, sizeof aux / sizeof *aux, 1.0f); fill(bias, 29, 1.0f);
    const float eps = 1e-5f;
    for (int tk = 0; tk < T; tk++) {
        double ss = 0;
        for (int k = 0; k < cols; k++) ss += (double)x[tk * cols + k] * x[tk * cols + k];
        for (int k = 0; k < cols; k++) {
            double xv = x[tk * cols + k];
            const double av = aux[tk * cols + k];
            h[k] = mode == VKX_RMSNORM ? xv / sqrt(ss / cols + eps) * aux[k]
                   : mode == VKX_SWIGLU ? xv / (1 + exp(-xv)) * av
                                        : xv / (1 + exp(-av));
        }
        if (q8_path(t)) {
            for (int k = 0; k < cols; k++) hf[k] = (float)h[k];
            q8_round(hf, cols);
            for (int k = 0; k < cols; k++) h[k] = hf[k];
        }
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int k = 0; k < cols; k++) s += (double)wf[r * cols + k] * h[k];
            ref[tk * rows + r] = s + bias[r];
        }
    }
    size_t rb = vkq_row_bytes(t, cols);
    vkref dw = dev_up(wq, rb * rows), dx = dev_up(x, sizeof x), da = dev_up(aux, sizeof aux);
    vkref db = dev_up(bias, sizeof bias), dy = dev_out(sizeof y);
    vkop_mm a = {.type = t, .w = dw.addr, .x = dx.addr, .y = dy.addr, .bias = db.addr, .ncols = (uint32_t)cols,
                 .nrows = (uint32_t)rows, .row_bytes = (uint32_t)rb, .n_tok = (uint32_t)T,
                 .x_stride = (uint32_t)cols, .y_stride = (uint32_t)rows, .xmode = mode, .aux = da.addr, .eps = eps};
    zn_err err = {0};
    double e = INFINITY;
    if (begin()) {
        zn_status st = vkop_matvec(&E.o, &E.c, &a, "mv", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        if (run() && !st) {
            dev_down(dy, y, sizeof(float) * T * rows);
            e = nmse(y, ref, (size_t)T * rows);
        }
    }
    CHECK_MSG(e <= (!q8_path(t) ? MM_TOL : mode == VKX_SIGMUL ? MM_TOL_GN : MM_TOL_Q8), "%s%s %s: nmse %.3g", zn_type_name(t),
              q8_path(t) ? " (int8 x)" : "", mode == VKX_RMSNORM ? "rmsnorm" : mode == VKX_SWIGLU ? "swiglu" : "sigmoid gate", e);
    free(wf);
    free(wq);
    reset();
}

static void matvec_fused_x(void) {
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_F32, ZN_TYPE_Q8_0, ZN_TYPE_Q4_0, ZN_TYPE_Q5_K};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (int mode = VKX_RMSNORM; mode <= VKX_SWIGLU; mode++) fused_x_case(types[ti], mode);
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) fused_x_case(types[ti], VKX_SIGMUL);
}

static void test_matvec_fused_x(void) { both_matvecs(matvec_fused_x); }

/* Grouped mat-vec: three stacked matrices (13, 7 and 20 rows), each with its
 * own output (different row strides), bias and scale, plus a fused norm. */
static void matvec_grouped(void) {
    const zn_type t = ZN_TYPE_Q4_K;
    const int rows[3] = {13, 7, 20}, total = 40, cols = 256, T = 3;
    float *wf = malloc(sizeof(float) * total * cols), x[3 * 256], nw[256], bias[40], scale[3] = {0.5f, 1.5f, -2.0f};
    void *wq = make_weights(t, total, cols, wf);
    fill(x, sizeof x / sizeof *x, 1.0f); fill(nw, 256, 1.0f); fill(bias, 40, 1.0f);
    const size_t rb = vkq_row_bytes(t, cols);
    vkref dw = dev_up(wq, rb * total), dx = dev_up(x, sizeof x), dn = dev_up(nw, sizeof nw), db = dev_up(bias, sizeof bias);
    vkref ds = dev_up(scale, sizeof scale);
    vkref dy[3];
    vkop_group grp = {.n_seg = 3};
    for (int sg = 0, r0 = 0; sg < 3; r0 += rows[sg++]) {
        dy[sg] = dev_out(sizeof(float) * T * (rows[sg] + 3));
        grp.y[sg] = dy[sg].addr;
        grp.bias[sg] = sg == 1 ? 0 : db.addr + 4 * r0; /* the middle one has no bias */
        grp.scale[sg] = ds.addr + 4 * sg;
        grp.row_end[sg] = (uint32_t)(r0 + rows[sg]);
        grp.y_stride[sg] = (uint32_t)rows[sg] + 3;
    }
    vkref dg = dev_up(&grp, sizeof grp);
    vkop_mm a = {.type = t, .w = dw.addr, .x = dx.addr, .ncols = cols, .nrows = total, .row_bytes = (uint32_t)rb,
                 .n_tok = T, .x_stride = cols, .xmode = VKX_RMSNORM, .aux = dn.addr, .eps = 1e-6f, .group = dg.addr};
    zn_err err = {0};
    bool ok = false;
    if (begin()) {
        zn_status st = vkop_matvec(&E.o, &E.c, &a, "grouped", &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        ok = run() && !st;
    }
    CHECK(ok);
    for (int sg = 0, r0 = 0; ok && sg < 3; r0 += rows[sg++]) {
        float y[3 * 23];
        double ref[3 * 23];
        dev_down(dy[sg], y, sizeof(float) * T * (rows[sg] + 3));
        for (int tk = 0; tk < T; tk++) {
            double ss = 0;
            for (int k = 0; k < cols; k++) ss += (double)x[tk * cols + k] * x[tk * cols + k];
            const double inv = 1.0 / sqrt(ss / cols + 1e-6);
            float h[256];
            for (int k = 0; k < cols; k++) h[k] = (float)(x[tk * cols + k] * inv * nw[k]);
            if (q8_path(t)) q8_round(h, cols);
            for (int r = 0; r < rows[sg] + 3; r++) {
                if (r >= rows[sg]) { /* the padding columns of the output stay untouched (NaN) */
                    CHECK(y[tk * (rows[sg] + 3) + r] != y[tk * (rows[sg] + 3) + r]);
                    ref[tk * (rows[sg] + 3) + r] = 0, y[tk * (rows[sg] + 3) + r] = 0;
                    continue;
                }
                double v = 0;
                for (int k = 0; k < cols; k++)
                    v += q8_path(t) ? (double)wf[(r0 + r) * cols + k] * h[k]
                                    : (double)wf[(r0 + r) * cols + k] * x[tk * cols + k] * inv * nw[k];
                v *= scale[sg];
                if (sg != 1) v += bias[r0 + r];
                ref[tk * (rows[sg] + 3) + r] = v;
            }
        }
        double e = nmse(y, ref, (size_t)T * (rows[sg] + 3));
        CHECK_MSG(e <= (q8_path(t) ? MM_TOL_Q8 : MM_TOL), "segment %d%s: nmse %.3g", sg, q8_path(t) ? " (int8 x)" : "", e);
    }
    free(wf);
    free(wq);
    reset();
}

static void test_matvec_grouped(void) { both_matvecs(matvec_grouped); }

/* MoE expert mat-vec: only the chosen experts' matrices, shared or per-slot x. */
static void matvec_experts(void) {
    const zn_type types[] = {ZN_TYPE_Q4_K, ZN_TYPE_Q8_0, ZN_TYPE_F16};
    for (size_t ti = 0; ti < 3; ti++) {
        zn_type t = types[ti];
        int ne = 5, rows = 11, cols = cols_for(t, 64), T = 3, k = 2;
        size_t rb = vkq_row_bytes(t, cols), eb = rb * rows;
        float *wf = malloc(sizeof(float) * ne * rows * cols);
        uint8_t *wq = make_experts(t, ne, rows, cols, wf);
        float x[3 * 2 * 512], xq[3 * 2 * 512], route[3 * 4], scales[5], y[3 * 2 * 11];
        double ref[3 * 2 * 11];
        fill(x, sizeof x / sizeof *x, 1.0f);
        memcpy(xq, x, sizeof x);
        if (q8_path(t))
            for (int i = 0; i < 3 * 2 * 512 / cols; i++) q8_round(xq + i * cols, cols);
        fill(scales, 5, 1.0f);
        const int ids[3][2] = {{4, 0}, {2, 2}, {1, 3}};
        for (int tk = 0; tk < T; tk++)
            for (int j = 0; j < k; j++) route[tk * 2 * k + j] = (float)ids[tk][j], route[tk * 2 * k + k + j] = 0.5f;
        for (int per_slot = 0; per_slot < 2; per_slot++) {
            for (int tk = 0; tk < T; tk++)
                for (int j = 0; j < k; j++)
                    for (int r = 0; r < rows; r++) {
                        const float *xr = (per_slot ? xq + (size_t)(tk * k + j) * cols : xq + (size_t)tk * cols);
                        const float *wr = wf + ((size_t)ids[tk][j] * rows + r) * cols;
                        double s = 0;
                        for (int c = 0; c < cols; c++) s += (double)wr[c] * xr[c];
                        ref[(tk * k + j) * rows + r] = s * scales[ids[tk][j]];
                    }
            vkref dw = dev_up(wq, eb * ne), dx = dev_up(x, sizeof x), dr = dev_up(route, sizeof route);
            vkref ds = dev_up(scales, sizeof scales), dy = dev_out(sizeof y);
            vkop_mm a = moe_args(t, ne, rows, cols, T, k, per_slot, dw, dx, dr, ds, dy);
            zn_err err = {0};
            double e = INFINITY;
            if (begin()) {
                zn_status st = vkop_matmul(&E.o, &E.c, &a, "moe", &err);
                if (st) fprintf(stderr, "  %s\n", err.msg);
                if (run() && !st) {
                    dev_down(dy, y, sizeof y);
                    e = nmse(y, ref, (size_t)T * k * rows);
                }
            }
            CHECK_MSG(e <= (q8_path(t) ? MM_TOL_Q8 : MM_TOL), "%s%s per_slot=%d: nmse %.3g", zn_type_name(t),
                      q8_path(t) ? " (int8 x)" : "", per_slot, e);
            reset();
        }
        free(wf);
        free(wq);
    }
}

static void test_matvec_experts(void) { both_matvecs(matvec_experts); }

/* Consecutive integer mat-vecs of one x: the second (x_reuse) reads the
 * first one's quantised x; a third claims reuse for a different x, which
 * the key check must refuse (it quantises its own). Each against its
 * quantised-x reference. */
static void matvec_x_reuse(void) {
    const zn_type types[3] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K, ZN_TYPE_Q8_0};
    const int rows = 13, cols = 512, T = 2;
    float x[2][2 * 512], wf[3][13 * 512], y[3][2 * 13];
    fill(x[0], 2 * 512, 1.0f);
    fill(x[1], 2 * 512, 2.0f);
    vkref dx[2] = {dev_up(x[0], sizeof x[0]), dev_up(x[1], sizeof x[1])}, dy[3];
    vkop_mm a[3];
    for (int k = 0; k < 3; k++) {
        void *wq = make_weights(types[k], rows, cols, wf[k]);
        const size_t rb = vkq_row_bytes(types[k], cols);
        vkref dw = dev_up(wq, rb * rows);
        free(wq);
        dy[k] = dev_out(sizeof y[k]);
        a[k] = (vkop_mm){.type = types[k], .w = dw.addr, .x = dx[k == 2].addr, .y = dy[k].addr, .ncols = cols,
                         .nrows = rows, .row_bytes = (uint32_t)rb, .n_tok = T, .x_stride = cols, .y_stride = rows,
                         .x_reuse = k > 0};
    }
    zn_err err = {0};
    bool ok = begin();
    const uint32_t turn0 = E.o.xq_turn, disp0 = E.c.n_dispatch;
    for (int k = 0; k < 3 && ok; k++) {
        if (vkop_matvec(&E.o, &E.c, &a[k], "mv", &err)) ok = false, fprintf(stderr, "  %s\n", err.msg);
        vkcmd_barrier(&E.c);
    }
    const uint32_t disp = E.c.n_dispatch - disp0;
    ok = run() && ok;
    CHECK(ok);
    /* quantised in the mat-vecs' workgroups: no quantise pass at all */
    const uint32_t modes = E.o.t.mvt > 1 ? E.o.t.mvt_modes : E.o.t.mvx_modes; /* T = 2: several tokens per workgroup */
    const uint32_t passes = E.o.mvx && (modes >> VKX_PLAIN & 1) ? 0 : 2;
    CHECK_MSG(E.o.xq_turn - turn0 == passes && disp == 3 + passes, "%u quantise passes, %u dispatches for 3 calls (%u, %u expected)",
              E.o.xq_turn - turn0, disp, passes, 3 + passes);
    for (int k = 0; k < 3 && ok; k++) {
        double ref[2 * 13];
        dev_down(dy[k], y[k], sizeof y[k]);
        for (int tk = 0; tk < T; tk++) {
            float xr[512];
            memcpy(xr, x[k == 2] + tk * cols, sizeof xr);
            q8_round(xr, cols);
            for (int r = 0; r < rows; r++) {
                double v = 0;
                for (int c = 0; c < cols; c++) v += (double)wf[k][r * cols + c] * xr[c];
                ref[tk * rows + r] = v;
            }
        }
        double e = nmse(y[k], ref, (size_t)T * rows);
        CHECK_MSG(e <= MM_TOL_Q8, "call %d (%s%s%s): nmse %.3g", k, zn_type_name(types[k]),
                  k == 1 ? ", reused x" : k == 2 ? ", other x" : "", E.o.mvx ? ", fused" : "", e);
    }
    reset();
}

static void test_matvec_x_reuse(void) {
    if (!E.o.intdot) SKIP("no integer dot products on %s: no integer mat-vec", E.d.info.name);
    const bool mvx = E.o.mvx;
    matvec_x_reuse();
    E.o.mvx = false;
    matvec_x_reuse();
    E.o.mvx = mvx;
}

/* Several tokens per workgroup (t.mvt; matvec_q.comp's NT) with the
 * tuning as it is: every quant type at T = 1 .. 2 mvt + 1 tokens (a token
 * alone, one partial group, full groups, groups of a split with a
 * remainder), on rows of fewer steps than a subgroup's lanes (row groups,
 * their own reduction; not Q4_K/Q5_K on 8 lanes) and of more (the
 * transposed reduction), bias, scale and residual at every other T. The
 * kind `want` must have been built: the mat-vecs took it, not a token per
 * workgroup. */
static void mvt_cases(vkop_kind want) {
    const zn_type types[] = {ZN_TYPE_Q4_0, ZN_TYPE_Q8_0, ZN_TYPE_Q4_K, ZN_TYPE_Q5_K, ZN_TYPE_Q6_K};
    const int nt = (int)E.o.t.mvt;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const zn_type t = types[ti];
        const int slot = vktune_slot(t), short_cols = zn_type_get(t)->blck == 256 ? 256 : 96;
        vkpipe_destroy(&E.o.ps, &E.o.pipes[want][slot]);
        double worst = 0;
        int at = 0;
        for (int T = 1; T <= 2 * nt + 1; T++) {
            const double e0 = mm_case(t, 19, short_cols, T, T % 2 == 1, K_VEC);
            const double e1 = mm_case(t, 13, 1024, T, T % 2 == 0, K_VEC);
            const double e = e0 != e0 || e1 != e1 ? NAN : fmax(e0, e1);
            if (worst == worst && !(e <= worst)) worst = e, at = T;
        }
        const bool took = E.o.pipes[want][slot].pipe != VK_NULL_HANDLE;
        CHECK_MSG(worst <= MM_TOL_Q8 && took, "%s, %d tokens per workgroup (%u rows per subgroup, %u steps): nmse %.3g at %d tokens%s",
                  zn_type_name(t), nt, E.o.t.mvt_t.rows[slot], E.o.t.mvt_t.unroll[slot], worst, at,
                  took ? "" : ", its kernel not taken");
    }
}

/* The int8 GEMM of Q4_K weights (mmi8.comp), taken by the mat-vec path
 * from t.mmi_min_tok tokens: one token, a partial token tile, full tiles
 * and more, rows of one partial row tile and of several, rows of one
 * super-block and of four; bias, scale and residual every other case. */
static void test_mmi8(void) {
    if (!E.o.intdot) SKIP("no integer dot products on %s: no int8 GEMM", E.d.info.name);
    const vktune saved = E.o.t;
    static const int toks[] = {1, 5, 16, 17, 33, 48};
    static const int rows[][2] = {{13, 256}, {70, 1024}, {128, 512}};
    E.o.t.mmi_min_tok = 1;
    E.o.t.mmi_max_tok = 64;
    E.o.t.mmi_bn = 16;
    if (!vkops_mmi_takes(&E.o, ZN_TYPE_Q4_K, 16)) {
        E.o.t = saved;
        SKIP("%s: mmi8.comp's tiles do not fit its shared memory (%u bytes)", E.d.info.name, E.d.info.max_shared);
    }
    for (int bi = 0; bi < 2; bi++) {
        E.o.t.mmi_bn = bi ? 32 : 16;
        vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_MMI8][0]);
        if (!vkops_mmi_takes(&E.o, ZN_TYPE_Q4_K, 16)) continue; /* 32 tokens per tile may not fit */
        double worst = 0;
        int at = 0, k = 0;
        for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++)
            for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++, k++) {
                const double e = mm_case(ZN_TYPE_Q4_K, rows[ri][0], rows[ri][1], toks[ti], k % 2 == 1, K_VEC);
                if (worst == worst && !(e <= worst)) worst = e, at = k;
            }
        const bool took = E.o.pipes[VKO_MMI8][0].pipe != VK_NULL_HANDLE;
        CHECK_MSG(worst <= MM_TOL_Q8 && took, "int8 GEMM, %u tokens per tile: nmse %.3g at case %d%s", E.o.t.mmi_bn, worst,
                  at, took ? "" : ", its kernel not taken");
    }
    E.o.t = saved;
    vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_MMI8][0]);
}

/* Split-K (tuning mm_split_wgs): the direct GEMM of few row tiles splits
 * k, each workgroup's partial tile goes to the scratch, mm_reduce.comp sums
 * them and applies the epilogue. Every weight type with bias, scale and
 * residual; k of 16 ranges and of ranges that do not divide it (the last
 * one short); the grouped epilogue of stacked matmuls; emulated, on
 * cooperative matrices and on cooperative matrix 2 where present. */
static void matmat_split(void) {
    static const struct { zn_type t; int rows, cols, T; } longk[] = {
        {ZN_TYPE_Q4_K, 70, 2048, 5}, {ZN_TYPE_Q8_0, 33, 1120, 9}, {ZN_TYPE_F16, 40, 1000, 3}};
    for (int cm = 0; cm <= (E.o.coopmat ? 1 + (int)E.d.info.coopmat2 : 0); cm++) {
        f16_cm = cm > 0, f16_cm2 = cm == 2;
        vkpipe_destroy(&E.o.ps, &E.o.pipes[VKO_MM_REDUCE][0]);
        f16_types();
        for (size_t i = 0; i < sizeof longk / sizeof *longk; i++) {
            const double e = mm_case(longk[i].t, longk[i].rows, longk[i].cols, longk[i].T, true, K_F16);
            CHECK_MSG(e <= 1e-5, "%s %dx%d, %d tokens, split k%s: nmse %.3g", zn_type_name(longk[i].t), longk[i].rows,
                      longk[i].cols, longk[i].T, f16_path_name(), e);
        }
        f16_grouped();
        CHECK_MSG(E.o.pipes[VKO_MM_REDUCE][0].pipe != VK_NULL_HANDLE, "split-K%s: mm_reduce never ran",
                  f16_path_name());
    }
    f16_cm = f16_cm2 = false;
}
static void test_matmat_split(void) {
    const vktune saved = E.o.t;
    E.o.t.mm_prep_tok = ZN_VK_OFF; /* only GEMMs that dequantise their tiles split */
    E.o.t.mm_split_wgs = 1u << 20;
    E.o.t.mm_split_k = 64;
    fprintf(stderr, "  k ranges of 64 and more\n");
    matmat_split();
    E.o.t.mm_split_k = 96; /* rounded up to whole k tiles */
    fprintf(stderr, "  k ranges of 96 and more\n");
    matmat_split();
    E.o.t = saved;
}

static void test_matvec_tokens(void) {
    if (!E.o.intdot) SKIP("no integer dot products on %s: no integer mat-vec", E.d.info.name);
    const vktune saved = E.o.t;
    vktune *t = &E.o.t;
    const uint32_t sg = E.d.info.subgroup_size;
    if (t->mvt < 2) t->mvt = 8; /* the GPU default where the device's tuning has it off */
    mv_pipes_drop();
    t->mvt_modes = 7;
    if (E.o.mvx) mvt_cases(VKO_MATVEC_QTX_S); /* x quantised in the workgroups */
    t->mvt_modes = 0;
    mvt_cases(VKO_MATVEC_QT); /* by quantx.comp */
    /* 5 tokens of 2 rows per subgroup, 2 steps per iteration, 2 subgroups
     * per workgroup, 2 workgroups per group looping over row blocks */
    t->mvt = 5;
    mvq_config(2, 2, 2 * sg, 2 * sg);
    vktune_set_all(t->mvt_t.wgs, 2);
    mvt_cases(VKO_MATVEC_QT);
    t->mvt_modes = 7;
    if (E.o.mvx) mvt_cases(VKO_MATVEC_QTX_S);
    E.o.t = saved;
    mv_pipes_drop();
}

/* The fused integer mat-vec's pipelines by the x row they hold in shared
 * memory: rows past the small one's 4096 columns take the next, and rows
 * past what the device holds go to quantx.comp. */
static void mvx_sizes(const uint32_t cols[3], vkop_kind k0, vkop_kind k1) {
    const zn_type types[2] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K};
    for (int ti = 0; ti < 2; ti++)
        for (int k = 0; k < 3; k++) {
            if (!cols[k]) continue;
            const int slot = types[ti] == ZN_TYPE_Q4_K ? 5 : 7, kind = k == 0 ? k0 : k1;
            const uint32_t turn0 = E.o.xq_turn;
            double e = mm_case(types[ti], 5, (int)cols[k], 2, true, K_VEC);
            const bool fused = k < 2 ? E.o.pipes[kind][slot].pipe != VK_NULL_HANDLE : E.o.xq_turn != turn0;
            CHECK_MSG(e <= MM_TOL_Q8 && fused, "%s, %u columns, %u tokens per workgroup: nmse %.3g, %s",
                      zn_type_name(types[ti]), cols[k], E.o.t.mvt, e,
                      k < 2 ? (fused ? "fused" : "no fused pipeline") : (fused ? "quantx" : "no quantx pass"));
        }
}

static void test_matvec_mvx_sizes(void) {
    if (!E.o.mvx) SKIP("no fused integer mat-vec on %s (integer dot products %s, subgroup %u, or tuning mvx=off)", E.d.info.name,
                      E.o.intdot ? "yes" : "no", E.d.info.subgroup_size);
    const uint32_t lim = E.o.mvx_max_cols, cols[3] = {4352, lim >= 16640 ? 16640 : 0, (lim / 256 + 1) * 256};
    const uint32_t modes = E.o.t.mvx_modes, tmodes = E.o.t.mvt_modes, mvt = E.o.t.mvt;
    E.o.t.mvx_modes = E.o.t.mvt_modes = 7; /* every x mode fused (whatever the tuning says) */
    E.o.t.mvt = 1; /* 2 tokens: a workgroup each */
    mvx_sizes(cols, VKO_MATVEC_QX_M, VKO_MATVEC_QX_L);
    /* 2 tokens in one workgroup of up to 8 (rows of up to 2048 columns:
     * the small pipeline, then the large one up to what 8 rows fit, past
     * that quantx.comp) */
    E.o.t.mvt = 8;
    mv_pipes_drop();
    const uint32_t tl = vkmm_mvx_cap(&E.o, VKO_MATVEC_QTX_L);
    const uint32_t tcols[3] = {1024, tl >= 2304 ? 2304 : 0, (tl / 256 + 1) * 256};
    CHECK_MSG(tl < lim && vkmm_mvx_cap(&E.o, VKO_MATVEC_QTX_S) == (tl < 2048 ? tl : 2048u), "8 rows of x: %u columns", tl);
    mvx_sizes(tcols, VKO_MATVEC_QTX_S, VKO_MATVEC_QTX_L);
    E.o.t.mvt = mvt;
    mv_pipes_drop();
    E.o.t.mvx_modes = modes;
    E.o.t.mvt_modes = tmodes;
}

int main(void) {
    if (!setup("vk_ops")) return no_device("vk_ops");
    fprintf(stderr, "vk_ops on %s (subgroup %u, integer dot products %s)\n", E.d.info.name, E.d.info.subgroup_size,
            E.o.intdot ? "yes" : "no");
    RUN(test_matvec_types);
    RUN(test_matvec_tokens);
    RUN(test_mmi8);
    RUN(test_matmat_types);
    RUN(test_matmat_f16);
    RUN(test_mm_direct_rule);
    RUN(test_tiled_split);
    RUN(test_cm2_cfg_grouped);
    RUN(test_pipes_parallel);
    RUN(test_matmat_cm2);
    RUN(test_matmat_f16_grouped);
    RUN(test_matmat_split);
    RUN(test_moe_grouped);
    RUN(test_matvec_fused_x);
    RUN(test_matvec_grouped);
    RUN(test_matvec_experts);
    RUN(test_matvec_x_reuse);
    RUN(test_matvec_mvx_sizes);
    teardown();
    return harness_report("vk_ops");
}
