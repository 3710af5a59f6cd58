/* Mat-vec kernel sweep for tuning on a real GPU (not part of CI):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -Ibuild/gen tools/vk-bench/matvec.c build/libzinc.a -ldl -lm -lpthread -o vk-matvec
 * For decode-shaped matrices of the bench models, times every (workgroup,
 * rows per subgroup) configuration with GPU timestamps, rotating over
 * several weight copies so the L2 cache does not serve them, and prints
 * the median time and the weight bandwidth. Random bytes stand in for the
 * quantised weights: the kernel's cost does not depend on their values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_ops.h"
#include "vk_quant.h"

#define COPIES 6
#define REPS 30
#define WARM 400 /* dispatches before the timed ones: let the clocks ramp up */

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    vkdev d;
    vkops o;
    vkcmd c;
    vkarena a;
    zn_err err = {0};
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (vkdev_open(&d, -1, &err) || vkops_init(&o, &d, NULL, &err) || vkcmd_init(&c, &d, o.ps.layout, true, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    vkarena_init(&a, &d, VKMEM_DEVICE, 0, 0);
    const struct { zn_type t; uint32_t rows, cols; const char *what; } shapes[] = {
        {ZN_TYPE_Q4_K, 12288, 4096, "8B ffn_gate"}, {ZN_TYPE_Q6_K, 4096, 12288, "8B ffn_down"},
        {ZN_TYPE_Q4_K, 6144, 2048, "2B ffn_gate"},
    };
    const uint32_t wgs[] = {64, 128}, nrs[] = {1, 2, 4};
    const size_t n_wg = sizeof wgs / sizeof *wgs, n_nr = sizeof nrs / sizeof *nrs;
    printf("%-12s %-5s %-4s %-3s %9s %8s\n", "shape", "type", "wg", "nr", "us", "GB/s");
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const uint32_t rb = (uint32_t)vkq_row_bytes(shapes[si].t, shapes[si].cols);
        const uint64_t wbytes = (uint64_t)rb * shapes[si].rows;
        const int copies = wbytes > (200ull << 20) ? 1 : COPIES;
        vkref w[COPIES], x, y;
        uint8_t *junk = malloc(wbytes);
        for (uint64_t i = 0; i < wbytes; i++) junk[i] = (uint8_t)(i * 2654435761u >> 13);
        /* small positive scales so f16 fields stay finite */
        vkxfer xf;
        vkxfer_init(&xf, &d, 64ull << 20, &err);
        for (int k = 0; k < copies; k++) {
            vkarena_alloc(&a, wbytes, 256, &w[k], &err);
            vkxfer_upload(&xf, w[k], junk, wbytes, &err);
        }
        vkarena_alloc(&a, 4ull * shapes[si].cols, 256, &x, &err);
        vkarena_alloc(&a, 4ull * shapes[si].rows, 256, &y, &err);
        vkxfer_fill(&xf, x, 0x3c000000u, &err);
        vkxfer_flush(&xf, &err);
        vkxfer_free(&xf);
        free(junk);
        for (size_t wi = 0; wi < n_wg; wi++)
            for (size_t ni = 0; ni < n_nr; ni++) {
                if (wgs[wi] % d.info.subgroup_size) continue;
                o.mv_wg = wgs[wi];
                o.mv_rows = nrs[ni];
                for (int t = 0; t < ZN_VK_NTYPES; t++) vkpipe_destroy(&o.ps, &o.pipes[VKO_MATVEC][t]);
                vkcmd_begin(&c, &err);
                for (int r = 0; r < REPS + WARM; r++) {
                    vkop_mm m = {.type = shapes[si].t, .w = w[r % copies].addr, .x = x.addr, .y = y.addr,
                                 .ncols = shapes[si].cols, .nrows = shapes[si].rows, .row_bytes = rb, .n_tok = 1,
                                 .x_stride = shapes[si].cols, .y_stride = shapes[si].rows};
                    if (vkop_matvec(&o, &c, &m, "mv", &err)) fprintf(stderr, "%s\n", err.msg);
                    vkcmd_barrier(&c);
                }
                if (vkcmd_run(&c, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
                uint64_t ts[REPS + 1];
                d.fn.vkGetQueryPoolResults(d.dev, c.qp, WARM, REPS + 1, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
                double us[REPS];
                for (int r = 0; r < REPS; r++) us[r] = (double)(ts[r + 1] - ts[r]) * d.info.timestamp_period_ns * 1e-3;
                qsort(us, REPS, sizeof *us, cmp);
                double med = us[REPS / 2];
                printf("%-12s %-5s %-4u %-3u %9.1f %8.0f\n", shapes[si].what, zn_type_name(shapes[si].t), wgs[wi], nrs[ni], med,
                       (double)wbytes / (med * 1e-6) / 1e9);
            }
        vkarena_free(&a);
    }
    return 0;
}
