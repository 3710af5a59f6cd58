/* Mat-vec kernels on a real GPU (not part of CI). First, the decode
 * matmuls of an 8B (and the 35B MoE) as a decode step runs them, x fused
 * (RMS norm / SwiGLU), groups and all, two ways: quantx.comp, a barrier,
 * then matvec_q.comp ("pair", tuning mvx=off), and the integer mat-vec
 * quantising x in its own workgroups ("fused", one dispatch; vkops.mvx).
 * Each at the tuning's defaults and over a grid: the pair's quantx slices
 * (tuning keys qx_sk vec4s per thread, 0: a workgroup per row; qx_wg) and
 * mat-vec rows / steps (mvq_rows, mvq_unroll); the fused one's workgroup
 * size (mvx_wg), rows, steps, workgroups per token (mvx_wgs) and weight
 * prefetch before x is quantised (mvx_pf); both with and without
 * prefetching each row block's and the next one's weights into L2 (mvq_pn,
 * mvx_pn). The summary at the end gives per shape the fastest pair and
 * fused configurations, then the 8B decode-step time of these matmuls
 * under what the tuning can say: one pair configuration, a fused one per
 * weight type and size class (mvx_* / mvxb_* keys: matrices under / over
 * mvx_big_mb), and per x mode fused or pair (mvx_modes), each printed as
 * --tune keys. With ZN_BENCH_SWEEP=1 then: the float kernel
 * (matvec.comp) against the integer-dot one on decode-shaped matrices of
 * the bench models, and a sweep of the integer kernel's workgroup size and
 * rows per subgroup. Build and run (a few minutes on an H200; the table is
 * long, the summary is its last ~25 lines):
 *   make tools   (builds build/vk-matvec)
 *   build/vk-matvec > $OUT/matvec.txt; tail -28 $OUT/matvec.txt
 * Each configuration records WARM + REPS calls in one command buffer, with
 * a barrier after each (as in a decode step), rotating over enough weight
 * copies (ZN_BENCH_MB in total, default 256) that the L2 cache cannot serve
 * them, and prints the median GPU time per call from timestamps and the
 * weight bytes per second. For the integer kernel, "us" is the whole call
 * (for the pair: quantising x, barrier, mat-vec) and "mv us" the mat-vec
 * alone; MoE shapes read 8 of 32 experts, each slot with its own x (GB/s
 * counts the chosen experts' bytes). The "copy" line is vkCmdCopyBuffer
 * over the same bytes (read + write counted) timed on the host: the memory
 * system's reach on this device. Random bytes stand in for the quantised
 * weights: the kernels' cost does not depend on their values.
 * ZN_BENCH_QUICK=1: fewer repetitions and configurations (to try it on a
 * CPU). ZN_BENCH_TOKENS=N: the 8B's matmuls over N tokens, as batched
 * decode of N sequences runs them (up to t.mvt tokens per workgroup: the
 * grids then set the mvt_* keys, the summary prints them); ZN_TUNE: the
 * tuning to start from (e.g. mvt=4, or mvt=1 for a token per workgroup). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_mm.h"
#include "vk_quant.h"

#define MAX_COPIES 64

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct bench {
    vkdev d;
    vkops o;
    vkcmd c;
    vkarena a;
    int reps, warm;
    bool quick;
    uint32_t tokens; /* ZN_BENCH_TOKENS: tokens of the dense fshapes */
    vktune t0;    /* vkops_init's tuning */
} bench;

typedef struct shape {
    zn_type t;
    uint32_t rows, cols;
    const char *what;
    uint32_t n_expert, n_used; /* MoE: a stack of n_expert matrices, n_used slots with their own x (0: dense) */
} shape;

/* Bytes of one weight copy, and the bytes one call reads. */
static uint64_t stack_bytes(const shape *s) {
    return (uint64_t)vkq_row_bytes(s->t, s->cols) * s->rows * (s->n_expert ? s->n_expert : 1);
}
static uint64_t read_bytes(const shape *s) {
    return (uint64_t)vkq_row_bytes(s->t, s->cols) * s->rows * (s->n_used ? s->n_used : 1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median us per call (previous call's end to this one's: with the barrier
 * between, as in a decode step) and per mat-vec dispatch alone (the call's
 * last one): calls of m on weight copies w[r % copies]. */
static int time_mm(bench *b, const vkop_mm *m0, const vkref *w, int copies, double *call_us, double *mv_us) {
    zn_err err = {0};
    const int n = b->reps + b->warm;
    uint32_t *end = malloc(sizeof *end * (size_t)n);
    if (vkcmd_begin(&b->c, &err)) goto fail;
    for (int r = 0; r < n; r++) {
        vkop_mm m = *m0;
        m.w = w[r % copies].addr;
        if (vkop_matvec(&b->o, &b->c, &m, "mv", &err)) goto fail;
        end[r] = b->c.n_ts - 1;
        vkcmd_barrier(&b->c);
    }
    if (vkcmd_run(&b->c, &err)) goto fail;
    uint64_t *ts = malloc(sizeof *ts * b->c.n_ts);
    b->d.fn.vkGetQueryPoolResults(b->d.dev, b->c.qp, 0, b->c.n_ts, sizeof *ts * b->c.n_ts, ts, 8,
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    double *cu = malloc(sizeof *cu * (size_t)b->reps), *mu = malloc(sizeof *mu * (size_t)b->reps);
    const double per = b->d.info.timestamp_period_ns * 1e-3;
    for (int r = 0; r < b->reps; r++) {
        const uint32_t e = end[b->warm + r], p = end[b->warm + r - 1];
        cu[r] = (double)(ts[e] - ts[p]) * per;
        mu[r] = (double)(ts[e] - ts[e - 1]) * per;
    }
    qsort(cu, (size_t)b->reps, sizeof *cu, cmp);
    qsort(mu, (size_t)b->reps, sizeof *mu, cmp);
    *call_us = cu[b->reps / 2];
    *mv_us = mu[b->reps / 2];
    free(ts); free(cu); free(mu); free(end);
    return 0;
fail:
    fprintf(stderr, "%s\n", err.msg);
    free(end);
    return 1;
}

static int time_calls(bench *b, const shape *s, const vkref *w, int copies, vkref x, vkref y, vkref ids,
                      double *call_us, double *mv_us) {
    const uint32_t rb = (uint32_t)vkq_row_bytes(s->t, s->cols);
    vkop_mm m = {.type = s->t, .x = x.addr, .y = y.addr, .ncols = s->cols, .nrows = s->rows,
                 .row_bytes = rb, .n_tok = 1, .x_stride = s->cols, .y_stride = s->rows};
    if (s->n_expert) {
        m.ids = ids.addr;
        m.expert_bytes = (uint64_t)rb * s->rows;
        m.n_slots = m.ids_stride = s->n_used;
        m.x_stride = s->n_used * s->cols;
        m.x_slot_stride = s->cols;
        m.y_stride = s->n_used * s->rows;
        m.y_slot_stride = s->rows;
    }
    return time_mm(b, &m, w, copies, call_us, mv_us);
}

/* vkCmdCopyBuffer between weight copies, wall clock over one submit: us per
 * copy of `bytes`. */
static double time_copy(bench *b, const vkref *w, int copies, uint64_t bytes) {
    zn_err err = {0};
    const int n = b->reps;
    vkcmd_begin(&b->c, &err);
    for (int r = 0; r < n; r++) {
        vkcmd_copy(&b->c, w[r % copies], w[(r + 1) % copies], bytes);
        vkcmd_barrier(&b->c);
    }
    double t0 = now_s();
    if (vkcmd_run(&b->c, &err)) { fprintf(stderr, "%s\n", err.msg); return 0; }
    return (now_s() - t0) * 1e6 / n;
}

/* Enough copies of wbytes of junk weights (budget bytes in all, 2 ..
 * MAX_COPIES) that the L2 cache cannot serve them; *copies = how many. */
static int weight_copies(bench *b, vkxfer *xf, uint64_t wbytes, uint64_t budget, vkref *w, int *copies, zn_err *err) {
    int n = (int)((budget + wbytes - 1) / wbytes);
    n = n < 2 ? 2 : n > MAX_COPIES ? MAX_COPIES : n;
    uint8_t *junk = malloc(wbytes);
    for (uint64_t i = 0; i < wbytes; i++) junk[i] = (uint8_t)(i * 2654435761u >> 13);
    int bad = 0;
    for (int k = 0; k < n && !bad; k++)
        bad = vkarena_alloc(&b->a, wbytes, 256, &w[k], err) || vkxfer_upload(xf, w[k], junk, wbytes, err);
    free(junk);
    *copies = n;
    return bad;
}

/* ---- x quantised in the mat-vec (one dispatch) vs quantx.comp first ---- */

typedef struct fshape {
    const char *what;
    zn_type t;
    uint32_t cols, n_seg, seg[3]; /* rows of each matmul of a group (n_seg 1: not grouped) */
    int xmode;                    /* VKX_*: the op fused into x */
    bool res;                     /* a residual add folded in */
    uint32_t n_expert, n_used;    /* MoE: n_used of n_expert; SwiGLU x per slot, else shared */
    uint32_t per_layer;           /* calls per 8B layer (0: once per step, or not the 8B) */
} fshape;

/* Decode of a Qwen3-8B Q4_K_M (36 layers; output Q6_K) and experts of a
 * 35B-A3B: the matmuls the profile shows behind each quantx dispatch. */
static const fshape fshapes[] = {
    {"8B attn_qkv", ZN_TYPE_Q4_K, 4096, 3, {4096, 1024, 1024}, VKX_RMSNORM, false, 0, 0, 1},
    {"8B attn_output", ZN_TYPE_Q4_K, 4096, 1, {4096}, VKX_PLAIN, true, 0, 0, 1},
    {"8B ffn_gate+up", ZN_TYPE_Q4_K, 4096, 2, {12288, 12288}, VKX_RMSNORM, false, 0, 0, 1},
    {"8B ffn_down", ZN_TYPE_Q6_K, 12288, 1, {4096}, VKX_SWIGLU, true, 0, 0, 1},
    {"8B output", ZN_TYPE_Q6_K, 4096, 1, {151936}, VKX_RMSNORM, false, 0, 0, 0},
    {"35B moe_gate", ZN_TYPE_Q4_K, 2048, 1, {512}, VKX_RMSNORM, false, 32, 8, 0},
    {"35B moe_down", ZN_TYPE_Q6_K, 512, 1, {2048}, VKX_SWIGLU, false, 32, 8, 0},
};
#define N_FSHAPES (sizeof fshapes / sizeof *fshapes)
/* The configurations: the pair (quantx + barrier + mat-vec) and the fused
 * kernel at vkops' defaults, then a grid of the pair's (quantx slices of
 * p_sk vec4s per thread, 0: a workgroup per row; quantx workgroup p_qxwg;
 * the mat-vec's rows per subgroup, steps per iteration, per-block
 * prefetch) and a grid of the fused kernel's (subgroups per workgroup x
 * rows per subgroup x steps per iteration x workgroups per token, as
 * warps per SM of an H200 (132 SMs: each workgroup quantises x again, so
 * the fewer per SM the less of that) x prefetch before x / per block).
 * Prefetches are KB of weights per workgroup, turned into mvx_pf /
 * _PN sectors per thread. ZN_BENCH_QUICK: a few. */
#define H200_SMS 132
static const uint32_t p_sk[] = {0, 1, 2}, p_qxwg[] = {64, 256}, g_rows[] = {1, 2, 4}, g_unroll[] = {2, 3, 4};
static const uint32_t p_pnkb[] = {0, 64}, g_sgs[] = {4, 8, 16, 32}, g_wpsm[] = {8, 16, 32};
static const uint32_t g_pref[][2] = {{0, 0}, {32, 0}, {32, 64}}; /* KB before x, per row block */
#define NDIM(a) (sizeof a / sizeof *a)
#define N_PGRID (NDIM(p_sk) * NDIM(p_qxwg) * NDIM(g_rows) * NDIM(g_unroll) * NDIM(p_pnkb))
#define N_GRID (NDIM(g_sgs) * NDIM(g_rows) * NDIM(g_unroll) * NDIM(g_wpsm) * NDIM(g_pref))
#define N_FCFG (2 + N_PGRID + N_GRID)
typedef struct fcfg { bool fused, def; uint32_t wg, rows, unroll, wgs, pf, pn, sk, qxwg; } fcfg;

/* kb KB of weights per workgroup of wg threads as 32-byte sectors per thread (0: none). */
static uint32_t sectors(uint32_t kb, uint32_t wg) {
    const uint32_t n = kb * 1024 / (wg * 32);
    return !kb ? 0 : n < 1 ? 1 : n > ZN_VK_MVX_MAX_PF ? ZN_VK_MVX_MAX_PF : n;
}

/* Configuration ci (0: pair, 1: fused at the defaults, then the pair's
 * grid, then the fused one); false where quick mode leaves it out. */
static bool fcfg_at(const bench *b, size_t ci, fcfg *f) {
    memset(f, 0, sizeof *f);
    f->fused = ci != 0 && (ci == 1 || ci >= 2 + N_PGRID);
    f->def = ci < 2;
    if (ci < 2) return true;
    size_t g = ci - 2;
    if (g < N_PGRID) {
        const size_t in = g % NDIM(p_pnkb), iu = (g /= NDIM(p_pnkb)) % NDIM(g_unroll), ir = (g /= NDIM(g_unroll)) % NDIM(g_rows);
        const size_t iq = (g /= NDIM(g_rows)) % NDIM(p_qxwg), is = g / NDIM(p_qxwg);
        f->sk = p_sk[is], f->qxwg = p_qxwg[iq], f->rows = g_rows[ir], f->unroll = g_unroll[iu];
        f->pn = sectors(p_pnkb[in], b->o.t.mv_wg);
        return !b->quick || (is < 2 && iq < 1 && ir == 1 && iu == 0);
    }
    g -= N_PGRID;
    const size_t ip = g % NDIM(g_pref), iw = (g /= NDIM(g_pref)) % NDIM(g_wpsm), iu = (g /= NDIM(g_wpsm)) % NDIM(g_unroll);
    const size_t ir = (g /= NDIM(g_unroll)) % NDIM(g_rows), is = g / NDIM(g_rows);
    const uint32_t sg = b->d.info.subgroup_size;
    f->wg = g_sgs[is] * sg, f->rows = g_rows[ir], f->unroll = g_unroll[iu];
    f->wgs = g_wpsm[iw] * H200_SMS / g_sgs[is];
    f->pf = sectors(g_pref[ip][0], f->wg), f->pn = sectors(g_pref[ip][1], f->wg);
    return !b->quick || (is < 2 && ir == 1 && iu == 0 && iw == 1 && ip < 2);
}

static int fcfg_name(const fcfg *f, char *s, size_t n) {
    if (f->def) return snprintf(s, n, f->fused ? "fused (defaults)" : "pair (defaults)");
    if (!f->fused) return snprintf(s, n, "pair sk %u qxwg %u nr %u u %u pn %u", f->sk, f->qxwg, f->rows, f->unroll, f->pn);
    return snprintf(s, n, "fused wg %u nr %u u %u wgs %u pf %u pn %u", f->wg, f->rows, f->unroll, f->wgs, f->pf, f->pn);
}

/* Every mat-vec and quantx pipeline, to be rebuilt from the tuning. */
static void drop_pipes(bench *b) {
    static const vkop_kind kinds[] = {VKO_MATVEC, VKO_MATVEC_Q, VKO_QUANTX, VKO_MATVEC_QX_S, VKO_MATVEC_QX_M,
                                      VKO_MATVEC_QX_L, VKO_MATVEC_QXB_S, VKO_MATVEC_QXB_M, VKO_MATVEC_QXB_L,
                                      VKO_MATVEC_QT, VKO_MATVEC_QTX_S, VKO_MATVEC_QTX_L};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int t = 0; t < ZN_VK_NTYPES; t++) vkpipe_destroy(&b->o.ps, &b->o.pipes[kinds[k]][t]);
}

/* vkops as configuration f says (every mat-vec and quantx pipeline rebuilt). */
static void apply_fcfg(bench *b, const fcfg *f, const vkops *def) {
    vktune *t = &b->o.t;
    *t = def->t;
    b->o.mvx = f->fused;
    t->mvx_modes = 7;
    t->mvt_modes = 7;
    if (!f->def && !f->fused) { /* the pair: quantx's slices, the mat-vec after it */
        vktune_set_all(t->mvq_rows, f->rows), vktune_set_all(t->mvt_t.rows, f->rows);
        vktune_set_all(t->mvq_unroll, f->unroll), vktune_set_all(t->mvt_t.unroll, f->unroll);
        t->mvq_pn = f->pn, t->qx_sk = f->sk, t->qx_wg = f->qxwg;
    }
    for (int c = 0; c < 3 && !f->def && f->fused; c++) { /* both size classes, several tokens */
        vktune_mvx *x = c < 2 ? &t->mvx_t[c] : &t->mvt_t;
        vktune_set_all(x->wg, f->wg), vktune_set_all(x->rows, f->rows), vktune_set_all(x->unroll, f->unroll);
        vktune_set_all(x->wgs, f->wgs), vktune_set_all(x->pf, f->pf), vktune_set_all(x->pn, f->pn);
    }
    drop_pipes(b);
}

/* Calls of shape si per 8B decode step (36 layers + the output); 0: not the 8B. */
static double step_calls(size_t si) {
    return fshapes[si].per_layer ? 36.0 * fshapes[si].per_layer : !strncmp(fshapes[si].what, "8B", 2);
}

/* The configuration in [c0, c1) with the least 8B decode-step time over
 * the shapes `use` picks (run ones only); *sum = that time. */
static size_t best_for(double us[][N_FCFG], size_t c0, size_t c1, const bool *use, double *sum) {
    size_t bi = c0;
    *sum = -1;
    for (size_t ci = c0; ci < c1; ci++) {
        double t = 0;
        bool all = true;
        for (size_t si = 0; si < N_FSHAPES; si++)
            if (use[si] && us[si][0] > 0) {
                all = all && us[si][ci] > 0;
                t += step_calls(si) * us[si][ci];
            }
        if (all && (*sum < 0 || t < *sum)) *sum = t, bi = ci;
    }
    return bi;
}

/* Whether shape si takes the fused kernel's tuning for big matrices. */
static bool fshape_big(const bench *b, size_t si) {
    const fshape *s = &fshapes[si];
    uint32_t rows = 0;
    for (uint32_t k = 0; k < s->n_seg; k++) rows += s->seg[k];
    return b->o.t.mvx_big_mb != ZN_VK_OFF && (uint64_t)vkq_row_bytes(s->t, s->cols) * rows >= (uint64_t)b->o.t.mvx_big_mb << 20;
}

static void print_summary(const bench *b, double us[][N_FCFG]) {
    char kp[64], kf[64];
    fcfg f;
    printf("\nsummary: us per call. pair: sk = quantx vec4s per thread per slice (0: a workgroup per row), qxwg = its\n"
           "workgroup, nr/u = the mat-vec's rows per subgroup / steps per iteration. fused: wg = workgroup size,\n"
           "nr/u as the pair's, wgs = workgroups per token, pf = 32-byte sectors per thread prefetched before x;\n"
           "pn (both) = sectors per thread prefetched per row block, this one's and the next)\n");
    printf("  %-15s %8s %9s %8s %-32s %8s %s\n", "matmuls", "pair def", "fused def", "best", "pair configuration", "best",
           "fused configuration");
    const size_t p0 = 2, p1 = 2 + N_PGRID, f1 = N_FCFG;
    for (size_t si = 0; si < N_FSHAPES; si++) {
        if (!us[si][0]) {
            printf("  %-15s (skipped)\n", fshapes[si].what);
            continue;
        }
        size_t bp = 0, bf = 1;
        for (size_t ci = p0; ci < p1; ci++)
            if (us[si][ci] > 0 && us[si][ci] < us[si][bp]) bp = ci;
        for (size_t ci = p1; ci < f1; ci++)
            if (us[si][ci] > 0 && us[si][ci] < us[si][bf]) bf = ci;
        fcfg_at(b, bp, &f), fcfg_name(&f, kp, sizeof kp);
        fcfg_at(b, bf, &f), fcfg_name(&f, kf, sizeof kf);
        printf("  %-15s %8.1f %9.1f %8.1f %-32s %8.1f %s\n", fshapes[si].what, us[si][0], us[si][1], us[si][bp], kp,
               us[si][bf], kf);
    }
    /* what vkops' settings can express: one fused configuration per weight
     * type and size class (mvx_* / mvxb_* keys), one pair configuration (the quantx
     * settings are global), and per x mode fused or pair (mvx_modes) */
    bool use[N_FSHAPES];
    double t_pair, t_def = 0, t_pdef = 0, t_fused = 0, t_mix = 0;
    for (size_t si = 0; si < N_FSHAPES; si++) {
        use[si] = step_calls(si) > 0;
        if (use[si]) t_def += step_calls(si) * us[si][1], t_pdef += step_calls(si) * us[si][0];
    }
    size_t bp = best_for(us, p0, p1, use, &t_pair);
    if (t_pair < 0 || t_pdef <= t_pair) bp = 0, t_pair = t_pdef;
    fcfg_at(b, bp, &f), fcfg_name(&f, kp, sizeof kp);
    printf("\n8B decode step (these matmuls, 36 layers + output), what vkops' settings can express:\n");
    printf("  pair, one configuration: %s: %.0f us (defaults %.0f)\n", kp, t_pair, t_pdef);
    const bool mvt = b->tokens > 1 && b->o.t.mvt > 1; /* the 8B's shapes on the mvt_* keys */
    if (bp)
        printf("    = --tune mvx=off,qx_sk=%u,qx_wg=%u,%s_rows=%u,%s_unroll=%u,mvq_pn=%u\n", f.sk, f.qxwg, mvt ? "mvt" : "mvq",
               f.rows, mvt ? "mvt" : "mvq", f.unroll, f.pn);
    size_t bft[2][2]; /* [Q6_K][big] */
    const zn_type types[2] = {ZN_TYPE_Q4_K, ZN_TYPE_Q6_K};
    for (size_t ti = 0; ti < 2; ti++)
        for (int big = 0; big < 2; big++) {
            bool ut[N_FSHAPES], any = false;
            double t;
            for (size_t si = 0; si < N_FSHAPES; si++) {
                ut[si] = use[si] && fshapes[si].t == types[ti] && fshape_big(b, si) == big;
                any = any || (ut[si] && us[si][0] > 0);
            }
            bft[ti][big] = 1;
            if (!any) continue;
            bft[ti][big] = best_for(us, p1, f1, ut, &t);
            double td = 0;
            best_for(us, 1, 2, ut, &td);
            if (td >= 0 && td <= t) bft[ti][big] = 1, t = td;
            fcfg_at(b, bft[ti][big], &f), fcfg_name(&f, kf, sizeof kf);
            printf("  fused %-5s %-5s %s: %.0f us (defaults %.0f)", zn_type_name(types[ti]), big ? "big" : "small", kf, t, td);
            if (bft[ti][big] == 1) printf("\n");
            else
            {
                const char *k = mvt ? "mvt" : big ? "mvxb" : "mvx", *ty = ti ? "q6_k" : "q4_k";
                printf("; --tune %s_wg.%s=%u,%s_rows.%s=%u,%s_unroll.%s=%u,%s_wgs.%s=%u,%s_pf.%s=%u,%s_pn.%s=%u\n", k, ty,
                       f.wg, k, ty, f.rows, k, ty, f.unroll, k, ty, f.wgs, k, ty, f.pf, k, ty, f.pn);
            }
            t_fused += t > 0 ? t : 0;
        }
    printf("  fused, per type and size: %.0f us (defaults %.0f)\n", t_fused, t_def);
    uint32_t modes = 0;
    for (int m = VKX_PLAIN; m <= VKX_SWIGLU; m++) {
        double tf = 0, tp = 0;
        for (size_t si = 0; si < N_FSHAPES; si++)
            if (use[si] && us[si][0] > 0 && fshapes[si].xmode == m) {
                const size_t bf = bft[fshapes[si].t == ZN_TYPE_Q6_K][fshape_big(b, si)];
                tf += step_calls(si) * us[si][bf], tp += step_calls(si) * us[si][bp];
            }
        if (tf <= tp) modes |= 1u << m;
        t_mix += tf <= tp ? tf : tp;
        printf("  x mode %s: fused %.0f us, pair %.0f us\n", m == VKX_PLAIN ? "plain  " : m == VKX_RMSNORM ? "rmsnorm" : "swiglu ",
               tf, tp);
    }
    printf("  mixed (--tune %s=%u, the pair's and the fused settings above): %.0f us\n", mvt ? "mvt_modes" : "mvx_modes",
           modes, t_mix);
}

/* One fshape's buffers and call. */
typedef struct fstate {
    vkref w[MAX_COPIES], xq;
    int copies;
    uint64_t xqb, rbytes;
    vkop_mm m;
    bool run;
} fstate;

static int fshape_setup(bench *b, const fshape *s, uint64_t budget, fstate *st, zn_err *err) {
    uint32_t rows = 0;
    for (uint32_t k = 0; k < s->n_seg; k++) rows += s->seg[k];
    const uint32_t rb = (uint32_t)vkq_row_bytes(s->t, s->cols), nt = s->n_expert ? 1 : b->tokens;
    const uint32_t ns = s->n_used ? s->n_used : 1, nx = ns * nt; /* slots; rows of y */
    const bool slot_x = s->n_expert && s->xmode == VKX_SWIGLU;
    const uint64_t wbytes = (uint64_t)rb * rows * (s->n_expert ? s->n_expert : 1);
    st->rbytes = (uint64_t)rb * rows * ns;
    st->run = !(b->quick && wbytes > (64ull << 20)); /* the output matrix: minutes on a CPU */
    if (!st->run) return 0;
    vkref x, aux, y, res, grp = {0}, ids = {0};
    vkxfer xf;
    int bad = vkxfer_init(&xf, &b->d, 64ull << 20, err) || weight_copies(b, &xf, wbytes, budget, st->w, &st->copies, err);
    const uint64_t xfl = (uint64_t)s->cols * (slot_x ? ns : nt);
    st->xqb = vkops_xq_bytes(s->cols, nx);
    float idv[16];
    for (uint32_t k = 0; k < s->n_used && k < 16; k++) idv[k] = (float)((5 * k + 1) % s->n_expert);
    bad = bad || vkarena_alloc(&b->a, 4 * xfl, 256, &x, err) || vkarena_alloc(&b->a, 4 * xfl, 256, &aux, err) ||
          vkarena_alloc(&b->a, 4ull * rows * nx, 256, &y, err) || vkarena_alloc(&b->a, 4ull * rows * nx, 256, &res, err) ||
          vkarena_alloc(&b->a, st->xqb, 256, &st->xq, err) || vkxfer_fill(&xf, x, 0x3c000000u, err) ||
          vkxfer_fill(&xf, aux, 0x3f000000u, err) || vkxfer_fill(&xf, res, 0, err) ||
          (s->n_expert && (vkarena_alloc(&b->a, sizeof idv, 256, &ids, err) || vkxfer_upload(&xf, ids, idv, sizeof idv, err)));
    vkop_group g = {.n_seg = s->n_seg};
    for (uint32_t k = 0, r0 = 0; k < s->n_seg && s->n_seg > 1; r0 += s->seg[k++]) {
        g.y[k] = y.addr + 4ull * r0;
        g.row_end[k] = r0 + s->seg[k];
        g.y_stride[k] = rows; /* tokens side by side, no overlap */
    }
    if (s->n_seg > 1) bad = bad || vkarena_alloc(&b->a, sizeof g, 256, &grp, err) || vkxfer_upload(&xf, grp, &g, sizeof g, err);
    bad = bad || vkxfer_flush(&xf, err);
    vkxfer_free(&xf);
    if (bad) return 1;
    vkop_mm m = {.type = s->t, .x = x.addr, .y = s->n_seg > 1 ? 0 : y.addr, .res = s->res ? res.addr : 0,
                 .ncols = s->cols, .nrows = rows, .row_bytes = rb, .n_tok = nt, .n_slots = 1, .x_stride = s->cols,
                 .y_stride = rows, .xmode = s->xmode, .aux = s->xmode ? aux.addr : 0, .eps = 1e-6f, .group = grp.addr};
    if (s->n_expert) {
        m.ids = ids.addr;
        m.expert_bytes = (uint64_t)rb * rows;
        m.n_slots = m.ids_stride = s->n_used;
        m.x_stride = (uint32_t)xfl;
        m.x_slot_stride = slot_x ? s->cols : 0;
        m.y_stride = s->n_used * rows;
        m.y_slot_stride = rows;
        m.n_expert = s->n_expert;
    }
    st->m = m;
    return 0;
}

/* Times every fshape in every configuration (configurations outer: a
 * pipeline serves all shapes of its type); us[shape][config] per call (0:
 * not run). ZN_BENCH_BUDGET_S (default 420): no new configuration after
 * that many seconds (the summary then covers those run). */
static int fused_section(bench *b, uint64_t budget, double us[][N_FCFG]) {
    zn_err err = {0};
    const vkops def = b->o;
    static fstate st[N_FSHAPES];
    memset(us, 0, sizeof(double) * N_FSHAPES * N_FCFG);
    for (size_t si = 0; si < N_FSHAPES; si++)
        if (fshape_setup(b, &fshapes[si], budget, &st[si], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
    const double t0 = now_s(), limit = getenv("ZN_BENCH_BUDGET_S") ? atof(getenv("ZN_BENCH_BUDGET_S")) : 420.0;
    printf("x quantised in the mat-vec (fused, 1 dispatch) vs quantx + barrier + mat-vec (pair); us per call\n");
    printf("%-15s %-5s %7s %-42s %9s %8s %9s\n", "matmuls", "type", "MB", "kernel", "us", "GB/s", "mv us");
    size_t n_run = 0, n_all = 0;
    for (size_t ci = 0; ci < N_FCFG; ci++) {
        fcfg f;
        if (!fcfg_at(b, ci, &f)) continue;
        n_all++;
        if (now_s() - t0 > limit) continue;
        n_run++;
        apply_fcfg(b, &f, &def);
        char kname[64];
        fcfg_name(&f, kname, sizeof kname);
        for (size_t si = 0; si < N_FSHAPES; si++) {
            if (!st[si].run) continue;
            vkops_set_xq(&b->o, st[si].xq.addr, st[si].xqb);
            double mv;
            if (time_mm(b, &st[si].m, st[si].w, st[si].copies, &us[si][ci], &mv)) return 1;
            if (b->o.intdot_err[0]) {
                printf("THE FUSED KERNEL FAILED (quantx used): %s\n", b->o.intdot_err);
                return 1;
            }
            printf("%-15s %-5s %7.1f %-42s %9.1f %8.0f %9.1f\n", fshapes[si].what, zn_type_name(fshapes[si].t),
                   (double)st[si].rbytes / 1e6, kname, us[si][ci], (double)st[si].rbytes / (us[si][ci] * 1e-6) / 1e9, mv);
        }
    }
    vkarena_free(&b->a);
    fcfg f0 = {.fused = true, .def = true};
    apply_fcfg(b, &f0, &def);
    printf("\n%zu of %zu configurations run in %.0f s%s\n", n_run, n_all, now_s() - t0,
           n_run < n_all ? " (time budget ZN_BENCH_BUDGET_S hit: the rest left out)" : "");
    print_summary(b, us);
    return 0;
}

/* The float / pair mat-vec's workgroup, rows per subgroup and steps per
 * iteration (0: the tuning's, per type). */
static void set_config(bench *b, uint32_t wg, uint32_t nr, uint32_t unroll, bool intdot) {
    vktune *t = &b->o.t;
    *t = b->t0;
    if (wg) t->mv_wg = wg;
    if (nr) vktune_set_all(t->mv_rows, nr), vktune_set_all(t->mvq_rows, nr);
    if (unroll) vktune_set_all(t->mvq_unroll, unroll);
    b->o.intdot = intdot;
    drop_pipes(b);
}

int main(void) {
    bench b = {0};
    zn_err err = {0};
    setvbuf(stdout, NULL, _IOLBF, 0);
    vktune tune;
    if (vkdev_open(&b.d, -1, &err) || vktune_init(&tune, &b.d.info, getenv("ZN_TUNE"), &err) ||
        vkops_init(&b.o, &b.d, &tune, NULL, &err) || vkcmd_init(&b.c, &b.d, b.o.ps.layout, true, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const bool quick = getenv("ZN_BENCH_QUICK") && atoi(getenv("ZN_BENCH_QUICK")) > 0;
    const uint64_t budget = (getenv("ZN_BENCH_MB") ? strtoull(getenv("ZN_BENCH_MB"), NULL, 0) : (quick ? 16 : 256)) << 20;
    b.quick = quick;
    const int tokens = getenv("ZN_BENCH_TOKENS") ? atoi(getenv("ZN_BENCH_TOKENS")) : 1;
    b.tokens = tokens < 1 ? 1 : tokens > 64 ? 64 : (uint32_t)tokens;
    b.reps = quick ? 5 : 50;
    b.warm = quick ? 2 : 400; /* dispatches before the timed ones: let the clocks ramp up */
    /* vkops_init's defaults (0: per type) */
    b.t0 = b.o.t;
    const uint32_t def_wg = b.o.t.mv_wg, def_nr = 0, def_u = 0;
    const bool has_int = b.o.intdot;
    printf("device: %s, subgroup %u, integer dot products %s; the 8B's matmuls over %u tokens (up to %u per workgroup)\n",
           b.d.info.name, b.d.info.subgroup_size, has_int ? "yes" : "NO (integer kernel not run)", b.tokens, b.o.t.mvt);
    vkarena_init(&b.a, &b.d, VKMEM_DEVICE, 0, 0);
    static double fus[N_FSHAPES][N_FCFG];
    if (has_int && b.o.mvx && fused_section(&b, budget, fus)) return 1;
    if (!has_int || !b.o.mvx) printf("no fused integer mat-vec on this device\n");
    if (!(getenv("ZN_BENCH_SWEEP") && atoi(getenv("ZN_BENCH_SWEEP")) > 0)) {
        vkcmd_free(&b.c);
        vkops_free(&b.o);
        vkdev_close(&b.d);
        return 0;
    }
    printf("\n");
    static const shape shapes[] = {
        {ZN_TYPE_Q4_K, 12288, 4096, "8B ffn_gate", 0, 0}, {ZN_TYPE_Q6_K, 4096, 12288, "8B ffn_down", 0, 0},
        {ZN_TYPE_Q4_K, 6144, 2048, "2B ffn_gate", 0, 0},  {ZN_TYPE_Q8_0, 4096, 4096, "8B attn_q", 0, 0},
        {ZN_TYPE_Q5_K, 12288, 4096, "8B ffn_gate", 0, 0}, {ZN_TYPE_Q4_K, 4096, 4096, "8B attn_output", 0, 0},
        {ZN_TYPE_Q4_0, 12288, 4096, "8B ffn_gate", 0, 0},
        /* 35B-A3B expert down matrices: 8 of 32 experts, each slot its own x */
        {ZN_TYPE_Q6_K, 2048, 512, "35B moe_down", 32, 8}, {ZN_TYPE_Q4_K, 2048, 512, "35B moe_down", 32, 8},
        {ZN_TYPE_Q4_K, 512, 2048, "35B moe_gate", 32, 8},
    };
    const size_t n_shapes = sizeof shapes / sizeof *shapes;
    double sum_f[16], sum_i[16], best[16];
    uint32_t best_cfg[16][3];
    printf("%-15s %-5s %-6s %4s %3s %2s %9s %8s %9s\n", "matrix", "type", "kernel", "wg", "nr", "u", "us", "GB/s", "mv us");
    for (size_t si = 0; si < n_shapes; si++) {
        const shape *s = &shapes[si];
        const uint64_t wbytes = stack_bytes(s), rbytes = read_bytes(s), nx = s->n_used ? s->n_used : 1;
        int copies = 0;
        vkref w[MAX_COPIES], x, y, xq, ids = {0};
        vkxfer xf;
        int bad = vkxfer_init(&xf, &b.d, 64ull << 20, &err) || weight_copies(&b, &xf, wbytes, budget, w, &copies, &err);
        const uint64_t xqb = vkops_xq_bytes(s->cols, (uint32_t)nx);
        float idv[16];
        for (uint32_t k = 0; k < s->n_used && k < 16; k++) idv[k] = (float)((5 * k + 1) % s->n_expert);
        bad = bad || vkarena_alloc(&b.a, 4ull * s->cols * nx, 256, &x, &err) ||
              vkarena_alloc(&b.a, 4ull * s->rows * nx, 256, &y, &err) || vkarena_alloc(&b.a, xqb, 256, &xq, &err) ||
              vkxfer_fill(&xf, x, 0x3c000000u, &err) ||
              (s->n_expert && (vkarena_alloc(&b.a, sizeof idv, 256, &ids, &err) || vkxfer_upload(&xf, ids, idv, sizeof idv, &err))) ||
              vkxfer_flush(&xf, &err);
        vkxfer_free(&xf);
        if (bad) { fprintf(stderr, "%s\n", err.msg); return 1; }
        vkops_set_xq(&b.o, xq.addr, xqb);
        const double cp = time_copy(&b, w, copies, wbytes);
        printf("%-15s %-5s %-6s %4s %3s %2s %9.1f %8.0f %9s   (read + write, %d copies of %.1f MB)\n", s->what,
               zn_type_name(s->t), "copy", "-", "-", "-", cp, 2.0 * (double)wbytes / (cp * 1e-6) / 1e9, "-", copies,
               (double)wbytes / 1e6);
        double us, mv;
        set_config(&b, def_wg, def_nr, def_u, false);
        if (time_calls(&b, s, w, copies, x, y, ids, &us, &mv)) return 1;
        sum_f[si] = us;
        printf("%-15s %-5s %-6s %4u %3s %2s %9.1f %8.0f %9s\n", s->what, zn_type_name(s->t), "float", def_wg, "def", "-",
               us, (double)rbytes / (us * 1e-6) / 1e9, "-");
        sum_i[si] = 0;
        if (!has_int) {
            vkarena_free(&b.a);
            continue;
        }
        set_config(&b, def_wg, def_nr, def_u, true);
        if (time_calls(&b, s, w, copies, x, y, ids, &us, &mv)) return 1;
        sum_i[si] = best[si] = us;
        best_cfg[si][0] = def_wg, best_cfg[si][1] = def_nr, best_cfg[si][2] = def_u;
        printf("%-15s %-5s %-6s %4u %3s %2s %9.1f %8.0f %9.1f  <- default\n", s->what, zn_type_name(s->t), "int", def_wg,
               "def", "def", us, (double)rbytes / (us * 1e-6) / 1e9, mv);
        const uint32_t sg = b.d.info.subgroup_size, wgs[] = {sg, 4 * sg}, nrs[] = {1, 2, 4}, us_[] = {1, 2, 4};
        for (size_t wi = 0; wi < (quick ? 1 : 2); wi++)
            for (size_t ni = 0; ni < 3; ni++)
                for (size_t ui = 0; ui < (quick ? 2 : 3); ui++) {
                    set_config(&b, wgs[wi], nrs[ni], us_[ui], true);
                    if (time_calls(&b, s, w, copies, x, y, ids, &us, &mv)) return 1;
                    printf("%-15s %-5s %-6s %4u %3u %2u %9.1f %8.0f %9.1f  (mat-vec alone %.0f GB/s)\n", s->what,
                           zn_type_name(s->t), "int", wgs[wi], nrs[ni], us_[ui], us, (double)rbytes / (us * 1e-6) / 1e9,
                           mv, (double)rbytes / (mv * 1e-6) / 1e9);
                    if (us < best[si]) {
                        best[si] = us;
                        best_cfg[si][0] = wgs[wi], best_cfg[si][1] = nrs[ni], best_cfg[si][2] = us_[ui];
                    }
                }
        vkarena_free(&b.a);
    }
    if (b.o.intdot_err[0]) printf("\nTHE INTEGER KERNEL FAILED, float kernel used instead: %s\n", b.o.intdot_err);
    printf("\nsummary (us per call incl. quantising x; 'best' = fastest integer configuration: wg/nr/u)\n");
    printf("  %-15s %-5s %6s %9s %9s %8s %8s %9s %8s %s\n", "matrix", "type", "MB", "float us", "int us", "speedup",
           "int GB/s", "best us", "best GB/s", "wg/nr/u");
    for (size_t si = 0; si < n_shapes; si++) {
        const shape *s = &shapes[si];
        const double mb = (double)read_bytes(s) / 1e6;
        if (!has_int) {
            printf("  %-15s %-5s %6.1f %9.1f\n", s->what, zn_type_name(s->t), mb, sum_f[si]);
            continue;
        }
        printf("  %-15s %-5s %6.1f %9.1f %9.1f %7.2fx %8.0f %9.1f %8.0f  %u/%u/%u\n", s->what, zn_type_name(s->t), mb,
               sum_f[si], sum_i[si], sum_f[si] / sum_i[si], mb * 1e6 / (sum_i[si] * 1e-6) / 1e9, best[si],
               mb * 1e6 / (best[si] * 1e-6) / 1e9, best_cfg[si][0], best_cfg[si][1], best_cfg[si][2]);
    }
    vkcmd_free(&b.c);
    vkops_free(&b.o);
    vkdev_close(&b.d);
    return 0;
}
