/* Decode attention timing on a real GPU (not part of CI):
 *   make && cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -Ibuild/gen tools/vk-bench/attn_dec.c build/libzinc.a -ldl -lm -lpthread -o vk-attn-dec
 *   ./vk-attn-dec            (one token, median of 20 calls: seconds on an H200)
 *   ./vk-attn-dec 20 4       (4 tokens per call)
 *   ./vk-attn-dec 2 1 512    (depth 512 only, 2 timed calls: lavapipe)
 * Times one layer's decode attention, merge of the splits included, for
 * the three benchmark shapes (Qwen3-8B: head dim 128, 32 query / 8 KV
 * heads; Qwen3.5-2B: 256, 8 / 2; Qwen3.5-35B-A3B: 256, 16 / 2) after 512,
 * 4096 and 32768 cached tokens, with GPU timestamps over many calls
 * recorded in one command buffer: attn.comp (one workgroup per query head,
 * 256-key splits: ZN_VK_ATTN_DEC=0), then attn_dec.comp (one workgroup per
 * KV head and split) at several keys per split (ZN_VK_ATTN_CHUNK; "*" marks
 * the default). GB/s counts the K and V rows read once; "nmse" compares
 * each output with attn.comp's (f32 both: ~1e-14 expected). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_ops.h"

#define MAX_REPS 50
static int REPS = 20, WARM = 5, T = 1;

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

static float frand(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (float)(*s >> 40) / (float)(1 << 23) - 1.0f;
}

int main(int argc, char **argv) {
    int only_depth = 0;
    if (argc > 1) REPS = atoi(argv[1]), WARM = (REPS + 3) / 4;
    if (argc > 2) T = atoi(argv[2]);
    if (argc > 3) only_depth = atoi(argv[3]);
    if (REPS < 1 || REPS > MAX_REPS || T < 1 || T > ZN_VK_ATTN_SPLIT_TOK || only_depth < 0) {
        fprintf(stderr, "usage: vk-attn-dec [timed calls (1..%d) [tokens (1..%d) [depth]]]\n", MAX_REPS,
                ZN_VK_ATTN_SPLIT_TOK);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (vkdev_open(&d, -1, &err) || vkops_init(&o, &d, NULL, &err) || vkcmd_init(&c, &d, o.ps.layout, true, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const bool dec_ok = o.attn_dec;
    printf("device: %s, subgroup %u, %d token(s) per call, median of %d%s\n", d.info.name, d.info.subgroup_size, T, REPS,
           dec_ok ? "" : " (attn_dec.comp off: ZN_VK_ATTN_DEC=0 or subgroups under 8)");
    const struct { const char *what; uint32_t n_head, n_kv, hd; } shapes[] = {
        {"8B   hd128 32/8", 32, 8, 128},
        {"2B   hd256 8/2", 8, 2, 256},
        {"35B  hd256 16/2", 16, 2, 256},
    };
    const int depths[] = {512, 4096, 32768};
    /* 0: attn.comp; then attn_dec.comp at these keys per split */
    const uint32_t chunks[] = {0, 32, 64, 128, 256};
    const int n_cfg = dec_ok ? (int)(sizeof chunks / sizeof *chunks) : 1;
    printf("%-16s %6s %-22s %7s %10s %8s %10s\n", "shape", "depth", "kernel", "splits", "us/call", "GB/s", "nmse");
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (size_t di = 0; di < sizeof depths / sizeof *depths; di++) {
            if (only_depth && depths[di] != only_depth) continue;
            const uint32_t nh = shapes[si].n_head, nkv = shapes[si].n_kv, hd = shapes[si].hd;
            const uint32_t n_past = (uint32_t)depths[di], n_ctx = n_past + (uint32_t)T;
            const size_t nq = (size_t)T * nh * hd, nkvv = (size_t)n_ctx * nkv * hd;
            const size_t pf = (size_t)ZN_VK_ATTN_MAX_SPLIT * nh * (hd + 2) * ZN_VK_ATTN_SPLIT_TOK; /* any config */
            vkarena a;
            vkarena_init(&a, &d, VKMEM_DEVICE, 0, 0);
            vkref q, ck, cv, y, part;
            vkxfer xf;
            float *qh = malloc(sizeof(float) * nq), *ref = malloc(sizeof(float) * nq), *out = malloc(sizeof(float) * nq);
            zn_half *kh = malloc(sizeof(zn_half) * nkvv), *vh = malloc(sizeof(zn_half) * nkvv);
            uint64_t s = 88172645463325252ull;
            for (size_t i = 0; i < nq; i++) qh[i] = frand(&s);
            for (size_t i = 0; i < nkvv; i++) kh[i] = zn_f32_to_fp16(frand(&s)), vh[i] = zn_f32_to_fp16(frand(&s));
            bool ok = !vkxfer_init(&xf, &d, 64ull << 20, &err) && !vkarena_alloc(&a, 4 * nq, 256, &q, &err) &&
                      !vkarena_alloc(&a, 2 * nkvv, 256, &ck, &err) && !vkarena_alloc(&a, 2 * nkvv, 256, &cv, &err) &&
                      !vkarena_alloc(&a, 4 * nq, 256, &y, &err) && !vkarena_alloc(&a, 4 * pf, 256, &part, &err) &&
                      !vkxfer_upload(&xf, q, qh, 4 * nq, &err) && !vkxfer_upload(&xf, ck, kh, 2 * nkvv, &err) &&
                      !vkxfer_upload(&xf, cv, vh, 2 * nkvv, &err) && !vkxfer_flush(&xf, &err);
            if (!ok) {
                fprintf(stderr, "%s: %s\n", shapes[si].what, err.msg);
                return 1;
            }
            vkop_attn at = {.q = q.addr, .ck = ck.addr, .cv = cv.addr, .dst = y.addr, .part = part.addr,
                            .n_tok = (uint32_t)T, .n_past = n_past, .n_head = nh, .n_head_kv = nkv, .hd_k = hd,
                            .hd_v = hd, .scale = 1.0f / sqrtf((float)hd)};
            const double kv_bytes = 2.0 * 2.0 * (double)nkvv;
            for (int ci = 0; ci < n_cfg; ci++) {
                o.attn_dec = ci > 0;
                o.attn_chunk = ci ? chunks[ci] : ZN_VK_ATTN_CHUNK;
                char name[64];
                if (ci) snprintf(name, sizeof name, "attn_dec %u keys%s", chunks[ci], chunks[ci] == ZN_VK_ATTN_DEC_CHUNK ? " *" : "");
                else snprintf(name, sizeof name, "attn.comp 256 keys");
                const uint32_t splits = vkop_attn_splits(&o, (uint32_t)T, n_ctx);
                double us;
                if (!time_calls(&at, &us)) {
                    fprintf(stderr, "  %s: %s\n", name, err.msg);
                    continue;
                }
                if (vkxfer_download(&xf, y, ci ? out : ref, 4 * nq, &err)) {
                    fprintf(stderr, "  download: %s\n", err.msg);
                    continue;
                }
                double num = 0, den = 0;
                for (size_t i = 0; ci && i < nq; i++)
                    num += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]), den += (double)ref[i] * ref[i];
                char e[32] = "";
                if (ci) snprintf(e, sizeof e, "%.3g", den > 0 ? num / den : num);
                printf("%-16s %6d %-22s %7u %10.1f %8.0f %10s\n", shapes[si].what, depths[di], name, splits, us,
                       kv_bytes / us * 1e-3, e);
            }
            vkxfer_free(&xf);
            vkarena_free(&a);
            free(qh); free(ref); free(out); free(kh); free(vh);
        }
    vkcmd_free(&c);
    vkops_free(&o);
    vkdev_close(&d);
    return 0;
}
