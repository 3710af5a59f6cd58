/* Prefill GEMM timing on a real GPU (not part of CI):
 *   make tools   (builds build/vk-matmul)
 *   build/vk-matmul            (512 tokens, median of 20 calls: seconds on an H200)
 *   build/vk-matmul 8 2        (8 tokens, 2 timed calls: minutes on lavapipe)
 *   build/vk-matmul 512,64,32  (each token count in turn)
 *   VKB_ONLY_CM2=1 build/vk-matmul   (NV coopmat2 devices: its configs and the KHR kernel's default only)
 * Times 512-token matmuls of Qwen3-8B (dense) and one MoE layer of a
 * Qwen3.5-35B-A3B shape (32 experts, top 8) with GPU timestamps: the
 * mat-vec kernel (integer dot products where the device has them) and the
 * old tiled kernels (MoE: the expert mat-vec), then the f16 GEMM path in
 * every tile config (zn_vk_mm_cfgs: rows x tokens per workgroup / per
 * subgroup / threads) and in the one picked by shape (the default), then
 * (devices with VK_NV_cooperative_matrix2) the same for
 * mmf_cm2.comp (zn_vk_cm2_cfgs: rows x tokens per workgroup, k step).
 * Every f16-path row is timed both ways (tuning mm_prep_tok, moe_prep_tok): "prep",
 * the weights dequantised into the scratch first, and "direct", each A
 * tile dequantised from the weights as the GEMM loads it.
 * "prep" = dequantise + convert, "gemm" = the multiply. Random bytes stand
 * in for the quantised weights: the kernels' cost does not depend on their
 * values. TFLOP/s counts 2 * rows * cols * tokens (* slots). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_mm.h"
#include "vk_quant.h"

#define MAX_REPS 50
static int T = 512, REPS = 20, WARM = 5;
static const uint32_t PATHS[2] = {1, ZN_VK_OFF}; /* mm_prep_tok: prep, direct */

typedef struct shape {
    const char *what;
    zn_type t;
    uint32_t cols, rows;
    uint32_t n_expert, k; /* 0: dense */
    bool per_slot;        /* MoE: x per (token, slot) (the down projection) */
} shape;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static vkdev d;
static vkops o;
static vkcmd c;
static zn_err err;

/* Records WARM + REPS calls of one kernel choice; median total, prep and
 * gemm microseconds (per call: dispatch 0 is moe_bucket when grouped, then
 * prep / gemm alternate on the f16 path). */
static bool time_calls(const vkop_mm *a, int mode, bool grouped, double *tot, double *prep, double *gemm) {
    uint32_t start[2 * MAX_REPS + 1];
    if (vkcmd_begin(&c, &err)) return false;
    for (int r = 0; r < WARM + REPS; r++) {
        start[r] = c.n_ts;
        zn_status st = mode == 0 ? vkop_matmat(&o, &c, a, "mm", &err) : vkop_matvec(&o, &c, a, "mm", &err);
        if (st) {
            vkcmd_run(&c, &err);
            return false;
        }
        vkcmd_barrier(&c);
    }
    start[WARM + REPS] = c.n_ts;
    if (vkcmd_run(&c, &err)) return false;
    uint64_t *ts = malloc(sizeof *ts * c.n_ts);
    d.fn.vkGetQueryPoolResults(d.dev, c.qp, 0, c.n_ts, sizeof *ts * c.n_ts, ts, 8,
                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    double t[MAX_REPS], p[MAX_REPS], g[MAX_REPS];
    const double ns = d.info.timestamp_period_ns * 1e-3;
    for (int r = 0; r < REPS; r++) {
        const uint32_t s = start[WARM + r], e = start[WARM + r + 1];
        t[r] = p[r] = g[r] = 0;
        for (uint32_t i = s; i < e; i++) {
            const double us = (double)(ts[i] - ts[i - 1]) * ns; /* timestamp 0 opens the buffer */
            t[r] += us;
            const uint32_t k = i - s - (grouped ? 1 : 0);
            if (grouped && i == s) continue; /* the bucket: in the total only */
            if (k % 2) g[r] += us;
            else p[r] += us;
        }
    }
    free(ts);
    qsort(t, REPS, sizeof *t, cmp);
    qsort(p, REPS, sizeof *p, cmp);
    qsort(g, REPS, sizeof *g, cmp);
    *tot = t[REPS / 2], *prep = p[REPS / 2], *gemm = g[REPS / 2];
    return true;
}

static void print_row(const shape *s, const char *name, double tot, double prep, double gemm, double flop) {
    printf("%-13s %-5s %-34s %9.1f %9.1f %9.1f %8.1f %8.1f\n", s->what, zn_type_name(s->t), name, tot, prep, gemm,
           flop / tot * 1e-6, flop / gemm * 1e-6);
}

int main(int argc, char **argv) {
    vkarena a;
    int toks[16], n_toks = 0;
    for (const char *s = argc > 1 ? argv[1] : "512"; *s && n_toks < 16;) {
        toks[n_toks++] = atoi(s);
        s += strcspn(s, ",");
        s += *s == ',';
    }
    if (argc > 2) REPS = atoi(argv[2]), WARM = (REPS + 3) / 4;
    for (int i = 0; i < n_toks; i++)
        if (toks[i] < 1) n_toks = 0;
    if (!n_toks || REPS < 1 || REPS > MAX_REPS) {
        fprintf(stderr, "usage: vk-matmul [tokens[,tokens...] [timed calls (1..%d)]]\n", MAX_REPS);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (vkdev_open(&d, -1, &err) || vkops_init(&o, &d, NULL, NULL, &err) || vkcmd_init(&c, &d, o.ps.layout, true, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const bool cm2 = o.mm_cm2; /* a device without coopmat2 skips its rows */
    const char *oc = getenv("VKB_ONLY_CM2"); /* 1: only the coopmat2 configs (and the KHR default) */
    const bool only_cm2 = oc && atoi(oc) > 0;
    o.t.mm_cm2_moe = true;       /* its cm2 rows time the MoE shapes on cm2 too */
    printf("device: %s, coopmat %s, NV coopmat2 %s, shared memory %u bytes, median of %d\n", d.info.name,
           o.coopmat ? "yes" : "no", d.info.coopmat2 ? "yes" : "no", d.info.max_shared, REPS);
    vkarena_init(&a, &d, VKMEM_DEVICE, 0, 0);
    const shape shapes[] = {
        {"8B ffn_gate", ZN_TYPE_Q4_K, 4096, 12288, 0, 0, false},
        {"8B ffn_down", ZN_TYPE_Q6_K, 12288, 4096, 0, 0, false},
        {"8B attn_q", ZN_TYPE_Q4_K, 4096, 4096, 0, 0, false},
        {"8B attn_k", ZN_TYPE_Q4_K, 4096, 1024, 0, 0, false},
        {"8B gate+up", ZN_TYPE_Q4_K, 4096, 24576, 0, 0, false}, /* the stacked group of a prefill */
        {"8B qkv", ZN_TYPE_Q4_K, 4096, 6144, 0, 0, false},
        {"2B gate+up", ZN_TYPE_Q4_K, 2048, 12288, 0, 0, false},
        {"2B ffn_down", ZN_TYPE_Q6_K, 6144, 2048, 0, 0, false},
        {"35B moe_gate", ZN_TYPE_Q4_K, 2048, 512, 32, 8, false},
        {"35B moe_down", ZN_TYPE_Q6_K, 512, 2048, 32, 8, true},
        {"35B256 gate", ZN_TYPE_Q4_K, 2048, 512, 256, 8, false}, /* all 256 experts */
        {"35B256 down", ZN_TYPE_Q6_K, 512, 2048, 256, 8, true},
    };
    for (int ti = 0; ti < n_toks; ti++) {
        T = toks[ti];
        printf("--- %d tokens\n", T);
        printf("%-13s %-5s %-34s %9s %9s %9s %8s %8s\n", "shape", "type", "kernel", "total us", "prep us", "gemm us",
               "TFLOP/s", "gemm TF/s");
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            const shape *s = &shapes[si];
            const uint32_t rb = (uint32_t)vkq_row_bytes(s->t, s->cols), ne = s->n_expert ? s->n_expert : 1;
            const uint32_t slots = s->k ? s->k : 1, xrows = T * (s->per_slot ? slots : 1);
            const uint64_t wbytes = (uint64_t)rb * s->rows * ne;
            vkref w, x, y, route = {0}, scratch = {0}, xq = {0};
            vkxfer xf;
            if (vkxfer_init(&xf, &d, 64ull << 20, &err)) return 1;
            uint8_t *junk = malloc(wbytes);
            for (uint64_t i = 0; i < wbytes; i++) junk[i] = (uint8_t)(i * 2654435761u >> 13);
            bool ok = !vkarena_alloc(&a, wbytes, 256, &w, &err) && !vkxfer_upload(&xf, w, junk, wbytes, &err);
            ok = ok && !vkarena_alloc(&a, 4ull * xrows * s->cols, 256, &x, &err) &&
                 !vkarena_alloc(&a, 4ull * T * slots * s->rows, 256, &y, &err);
            if (ok) ok = !vkxfer_fill(&xf, x, 0x3c000000u, &err); /* 2^-7 */
            if (ok && s->n_expert) { /* top-k distinct experts per token, uniform */
                float *rt = malloc(sizeof(float) * T * 2 * slots);
                uint64_t st = 88172645463325252ull;
                for (int t = 0; t < T; t++)
                    for (uint32_t j = 0; j < slots; j++) {
                        uint32_t e;
                        bool dup;
                        do {
                            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
                            e = (uint32_t)(st % ne);
                            dup = false;
                            for (uint32_t q = 0; q < j; q++) dup |= rt[t * 2 * slots + q] == (float)e;
                        } while (dup);
                        rt[t * 2 * slots + j] = (float)e;
                        rt[t * 2 * slots + slots + j] = 1.0f / (float)slots;
                    }
                ok = !vkarena_alloc(&a, sizeof(float) * T * 2 * slots, 256, &route, &err) &&
                     !vkxfer_upload(&xf, route, rt, sizeof(float) * T * 2 * slots, &err);
                free(rt);
            }
            if (ok) ok = !vkxfer_flush(&xf, &err);
            vkxfer_free(&xf);
            free(junk);
            vkop_mm m = {.type = s->t, .w = w.addr, .x = x.addr, .y = y.addr, .ncols = s->cols, .nrows = s->rows,
                         .row_bytes = rb, .n_tok = T, .n_slots = slots, .x_stride = s->cols * (s->per_slot ? slots : 1),
                         .y_stride = s->rows * slots};
            if (s->n_expert)
                m.ids = route.addr, m.ids_stride = 2 * slots, m.expert_bytes = (uint64_t)rb * s->rows, m.n_expert = ne,
                m.x_slot_stride = s->per_slot ? s->cols : 0, m.y_slot_stride = s->rows;
            const uint64_t need = ok ? vkops_mm_scratch_bytes(&o, &m, ZN_VK_MM_SCRATCH) : 0;
            ok = ok && !vkarena_alloc(&a, need, 256, &scratch, &err);
            const uint64_t xq_need = vkops_xq_bytes(s->cols, xrows);
            ok = ok && !vkarena_alloc(&a, xq_need, 256, &xq, &err);
            vkops_set_xq(&o, xq.addr, xq_need);
            if (!ok) {
                fprintf(stderr, "%s: %s\n", s->what, err.msg);
                return 1;
            }
            const double flop = 2.0 * s->rows * s->cols * T * slots;
            double tot, prep, gemm;
            /* the kernels without the f16 path: mat-vec (per token; MoE: per token
             * and slot), the old tiled ones (dense) */
            o.mm_scratch = 0, o.mm_scratch_bytes = 0;
            const bool cm = o.coopmat;
            for (int v = 0; !only_cm2 && v < (s->n_expert ? 1 : 2 + cm); v++) {
                o.coopmat = cm && v == 1;
                const char *name = v == 0 ? (s->n_expert ? "expert mat-vec" : "mat-vec") : o.coopmat ? "old coopmat tile"
                                                                                                  : "old f32 tile";
                if (time_calls(&m, v == 0 ? 1 : 0, false, &tot, &prep, &gemm))
                    printf("%-13s %-5s %-34s %9.1f %9s %9s %8.1f %8s\n", s->what, zn_type_name(s->t), name, tot, "", "",
                           flop / tot * 1e-6, "");
                else fprintf(stderr, "  %s: %s\n", name, err.msg);
            }
            o.coopmat = cm;
            o.mm_emulate = !cm;
            o.mm_scratch = scratch.addr, o.mm_scratch_bytes = need;
            o.mm_cm2 = false;
            for (uint32_t ci = 0; ci <= ZN_VK_MM_NCFG; ci++) { /* the last: picked by shape (the default) */
                const vkmm_cfg *f = &zn_vk_mm_cfgs[ci < ZN_VK_MM_NCFG ? ci : 0];
                if (ci < ZN_VK_MM_NCFG && (!vkops_mm_cfg_fits(&o, ci) || (only_cm2 && cm2))) continue;
                o.t.mm_cfg = ci < ZN_VK_MM_NCFG ? ci : ZN_VK_MM_AUTO;
                for (int pa = 0; pa < 2; pa++) {
                    o.t.mm_prep_tok = o.t.moe_prep_tok = PATHS[pa];
                    char name[64];
                    const char *k = cm ? "cm" : "emu", *path = pa ? "direct" : "prep";
                    if (ci == ZN_VK_MM_NCFG) snprintf(name, sizeof name, "f16 %s %s auto", k, path);
                    else snprintf(name, sizeof name, "f16 %s %s %ux%u/%ux%u/%u", k, path, f->bm, f->bn, f->wm, f->wn, f->wg);
                    if (time_calls(&m, 0, s->n_expert != 0, &tot, &prep, &gemm))
                        print_row(s, name, tot, prep, gemm, flop);
                    else fprintf(stderr, "  %s: %s\n", name, err.msg);
                }
            }
            o.t.mm_cfg = ZN_VK_MM_AUTO, o.mm_emulate = false;
            /* the NV cooperative matrix 2 kernel in every config, then by shape */
            for (uint32_t ci = 0; cm2 && ci <= ZN_VK_CM2_NCFG; ci++) {
                const vkcm2_cfg *f = &zn_vk_cm2_cfgs[ci < ZN_VK_CM2_NCFG ? ci : 0];
                o.t.cm2_cfg = ci < ZN_VK_CM2_NCFG ? ci : ZN_VK_MM_AUTO;
                for (int pa = 0; pa < 2; pa++) {
                    o.mm_cm2 = true;
                    o.t.mm_prep_tok = o.t.moe_prep_tok = PATHS[pa];
                    char name[64];
                    if (ci == ZN_VK_CM2_NCFG) snprintf(name, sizeof name, "f16 cm2 %s auto", pa ? "direct" : "prep");
                    else snprintf(name, sizeof name, "f16 cm2 %s %ux%u k%ux%u", pa ? "direct" : "prep", f->bm, f->bn, f->bk,
                                  f->unroll);
                    const bool ran = time_calls(&m, 0, s->n_expert != 0, &tot, &prep, &gemm);
                    if (ran && !o.mm_cm2) /* vk_ops fell back to the KHR kernel */
                        printf("%-13s %-5s %-34s pipeline refused: %s\n", s->what, zn_type_name(s->t), name, err.msg);
                    else if (ran)
                        print_row(s, name, tot, prep, gemm, flop);
                    else fprintf(stderr, "  %s: %s\n", name, err.msg);
                }
            }
            o.mm_cm2 = cm2, o.t.cm2_cfg = ZN_VK_MM_AUTO;
            vkarena_free(&a);
            vkarena_init(&a, &d, VKMEM_DEVICE, 0, 0);
        }
    }
    vkarena_free(&a);
    vkcmd_free(&c);
    vkops_free(&o);
    vkdev_close(&d);
    return 0;
}
