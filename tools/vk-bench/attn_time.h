/* Shared by tools/vk-bench/attn.c and attn_dec.c (included, not built on
 * its own): the device, ops and command buffer of one run, and the median
 * GPU time of one vkop_attn_run() over many calls recorded in one command
 * buffer with a barrier each. */
#ifndef ZN_VKB_ATTN_TIME_H
#define ZN_VKB_ATTN_TIME_H
#include <stdio.h>
#include <stdlib.h>

#include "limits.h"
#include "vk_attn.h"

#define MAX_REPS 50
static int REPS = 20, WARM = 5;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static vkdev d;
static vkops o;
static vkcmd c;
static zn_err err;

/* Records WARM + REPS calls; the median microseconds of one. */
static bool time_calls(const vkop_attn *a, double *us) {
    uint32_t start[MAX_REPS + 8];
    if (vkcmd_begin(&c, &err)) return false;
    for (int r = 0; r < WARM + REPS; r++) {
        start[r] = c.n_ts;
        if (vkop_attn_run(&o, &c, a, "attn", &err)) {
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
    double t[MAX_REPS];
    for (int r = 0; r < REPS; r++) {
        t[r] = 0;
        for (uint32_t i = start[WARM + r]; i < start[WARM + r + 1]; i++) /* timestamp 0 opens the buffer */
            t[r] += (double)(ts[i] - ts[i - 1]) * d.info.timestamp_period_ns * 1e-3;
    }
    free(ts);
    qsort(t, REPS, sizeof *t, cmp);
    *us = t[REPS / 2];
    return true;
}

/* The first device, its ops and a timed command buffer; stdout by lines. */
static bool open_device(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (vkdev_open(&d, -1, &err) || vkops_init(&o, &d, NULL, NULL, &err) || vkcmd_init(&c, &d, o.ps.layout, true, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return false;
    }
    return true;
}

static float frand(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (float)(*s >> 40) / (float)(1 << 23) - 1.0f;
}

/* One shape's buffers: the same random q (nq floats) and K, V (n_ctx
 * positions of kdim f16 values each, in the paged cache's layout of one
 * layer: vk_ops.h vkop_kv, its blocks adjacent) every run, y for nq
 * outputs, part_bytes of split scratch (or none); xf for downloads. */
typedef struct attn_bufs { vkarena a; vkxfer xf; vkref q, kvb, tab, y, part; vkop_kv kv; } attn_bufs;

static bool attn_bufs_init(attn_bufs *b, size_t nq, size_t n_ctx, size_t kdim, size_t part_bytes) {
    vkarena_init(&b->a, &d, VKMEM_DEVICE, 0, 0);
    const size_t nb = (n_ctx + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK, pos_bytes = 4 * kdim, nkv = nb * ZN_KV_BLOCK * 2 * kdim;
    float *qh = malloc(sizeof(float) * nq);
    zn_half *kvh = malloc(sizeof(zn_half) * nkv);
    uint64_t *tab = malloc(sizeof(uint64_t) * nb);
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < nq; i++) qh[i] = frand(&s);
    for (size_t i = 0; kvh && i < nkv; i++) kvh[i] = zn_f32_to_fp16(frand(&s));
    b->part = (vkref){0};
    bool ok = qh && kvh && tab && !vkxfer_init(&b->xf, &d, 64ull << 20, &err) &&
              !vkarena_alloc(&b->a, 4 * nq, 256, &b->q, &err) && !vkarena_alloc(&b->a, 2 * nkv, 256, &b->kvb, &err) &&
              !vkarena_alloc(&b->a, 8 * nb, 256, &b->tab, &err) && !vkarena_alloc(&b->a, 4 * nq, 256, &b->y, &err) &&
              (!part_bytes || !vkarena_alloc(&b->a, part_bytes, 256, &b->part, &err));
    for (size_t i = 0; ok && i < nb; i++) tab[i] = b->kvb.addr + i * ZN_KV_BLOCK * pos_bytes;
    ok = ok && !vkxfer_upload(&b->xf, b->q, qh, 4 * nq, &err) && !vkxfer_upload(&b->xf, b->kvb, kvh, 2 * nkv, &err) &&
         !vkxfer_upload(&b->xf, b->tab, tab, 8 * nb, &err) && !vkxfer_flush(&b->xf, &err);
    b->kv = (vkop_kv){.tab = b->tab.addr, .koff = 0, .voff = (uint32_t)(2 * kdim), .pos_bytes = (uint32_t)pos_bytes};
    free(qh); free(kvh); free(tab);
    return ok;
}

static void attn_bufs_free(attn_bufs *b) {
    vkxfer_free(&b->xf);
    vkarena_free(&b->a);
}

#endif
