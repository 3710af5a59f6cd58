/* Prefill attention timing on a real GPU (not part of CI):
 *   make tools   (builds build/vk-attn)
 *   build/vk-attn              (512 tokens from an empty cache, median of 20 calls: seconds on an H200)
 *   build/vk-attn 64 2 0       (64 tokens, 2 timed calls, no prefix: a minute on lavapipe)
 *   build/vk-attn 512 20 512   (512 tokens after 512 cached ones)
 * Times one layer's causal attention for the three benchmark shapes
 * (Qwen3-8B: head dim 128, 32 query / 8 KV heads; Qwen3.5-2B: 256, 8 / 2;
 * Qwen3.5-35B-A3B: 256, 16 / 2) with GPU timestamps over many calls
 * recorded in one command buffer: the scalar kernel (attn_fa.comp), then
 * attn_fa_cm.glsl in every tile config of the head dim the device runs
 * (zn_vk_fa_cfgs: rows x keys per workgroup; on cooperative matrices, or
 * emulated without them) and in the default one, each with K and V in
 * shared buffers of their own ("K|V", where they fit: the default) and in
 * one ("KV"; tuning fa_kv2=off). TFLOP/s counts
 * 4 * head_dim * heads * (causal query-key pairs); ms/prefill = us/call
 * times the model's attention layers (36, 6, 10); "nmse" compares each
 * output with the scalar kernel's (f16 Q and P: ~1e-7 expected). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_attn.h"
#include "vk_mm.h"

#include "attn_time.h"

static int T = 512, N_PAST = 0;

int main(int argc, char **argv) {
    if (argc > 1) T = atoi(argv[1]);
    if (argc > 2) REPS = atoi(argv[2]), WARM = (REPS + 3) / 4;
    if (argc > 3) N_PAST = atoi(argv[3]);
    if (T < 16 || REPS < 1 || REPS > MAX_REPS || N_PAST < 0) {
        fprintf(stderr, "usage: vk-attn [tokens (16..) [timed calls (1..%d) [cached tokens]]]\n", MAX_REPS);
        return 2;
    }
    if (!open_device()) return 1;
    const bool cm = o.coopmat;
    printf("device: %s, coopmat %s, shared memory %u bytes, %d tokens after %d, median of %d\n", d.info.name,
           cm ? "yes" : "no (emulated)", d.info.max_shared, T, N_PAST, REPS);
    /* layers: attention layers per model (ms/prefill = one call per layer) */
    const struct { const char *what; uint32_t n_head, n_kv, hd, layers; } shapes[] = {
        {"8B   hd128 32/8", 32, 8, 128, 36},
        {"2B   hd256 8/2", 8, 2, 256, 6},
        {"35B  hd256 16/2", 16, 2, 256, 10},
    };
    printf("%-16s %-30s %10s %10s %8s %10s\n", "shape", "kernel", "us/call", "ms/prefill", "TFLOP/s", "nmse");
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const uint32_t nh = shapes[si].n_head, nkv = shapes[si].n_kv, hd = shapes[si].hd, n_ctx = (uint32_t)(N_PAST + T);
        const size_t nq = (size_t)T * nh * hd;
        attn_bufs b;
        float *ref = malloc(sizeof(float) * nq), *out = malloc(sizeof(float) * nq);
        if (!attn_bufs_init(&b, nq, n_ctx, (size_t)nkv * hd, 0)) {
            fprintf(stderr, "%s: %s\n", shapes[si].what, err.msg);
            return 1;
        }
        vkop_attn at = {.q = b.q.addr, .kv = b.kv, .dst = b.y.addr, .n_tok = (uint32_t)T,
                        .n_past = (uint32_t)N_PAST, .n_head = nh, .n_head_kv = nkv, .hd_k = hd, .hd_v = hd,
                        .scale = 1.0f / sqrtf((float)hd)};
        double pairs = 0;
        for (int t = 0; t < T; t++) pairs += N_PAST + t + 1;
        const double flop = 4.0 * hd * nh * pairs;
        /* -1: the scalar kernel (the reference), 0..NCFG-1: the configs, NCFG:
         * the default; each with K and V in buffers of their own (where that
         * fits), then in one */
        for (int ci = -1; ci <= ZN_VK_FA_NCFG; ci++) {
            if (ci >= 0 && ci < ZN_VK_FA_NCFG && (zn_vk_fa_cfgs[ci].hd != hd || !vkops_fa_cfg_ok(&o, (uint32_t)ci))) continue;
            o.fa_cm = ci >= 0;
            o.mm_emulate = !cm;
            o.t.fa_cfg = ci >= 0 && ci < ZN_VK_FA_NCFG ? (uint32_t)ci : ZN_VK_MM_AUTO;
            const uint32_t used = ci >= 0 ? vkops_fa_cfg_for(&o, hd, n_ctx) : ZN_VK_MM_AUTO;
            uint32_t b0 = 0, b1 = 0;
            if (used != ZN_VK_MM_AUTO) {
                o.t.fa_kv2 = false, b0 = vkops_fa_cfg_bytes(&o, used);
                o.t.fa_kv2 = true, b1 = vkops_fa_cfg_bytes(&o, used);
            }
            for (int v = b1 != b0; v >= 0; v--) { /* the second buffer only where it fits */
                char name[64];
                o.t.fa_kv2 = v;
                if (used != ZN_VK_MM_AUTO) {
                    vkpipe_destroy(&o.ps, &o.pipes[vkops_fa_kind(&o, used)][used]); /* rebuilt with this fa_kv2 */
                    snprintf(name, sizeof name, "%s%s %ux%u %s%s (%u B)", cm ? "cm" : "emu",
                             zn_vk_fa_cfgs[used].sg ? " sg" : "", zn_vk_fa_cfgs[used].br,
                             zn_vk_fa_cfgs[used].bc, v ? "K|V" : "KV", ci == ZN_VK_FA_NCFG ? " default" : "", v ? b1 : b0);
                } else {
                    snprintf(name, sizeof name, ci < 0 ? "scalar attn_fa" : "%s: no config fits", cm ? "cm" : "emu");
                }
                double us;
                if (!time_calls(&at, &us)) {
                    fprintf(stderr, "  %s: %s\n", name, err.msg);
                    continue;
                }
                if (ci >= 0 && !o.fa_cm) { /* vk_ops fell back to the scalar kernel */
                    printf("%-16s %-30s pipeline refused: %s\n", shapes[si].what, name, o.fa_err);
                    o.fa_cm = true;
                    continue;
                }
                if (vkxfer_download(&b.xf, b.y, ci < 0 ? ref : out, 4 * nq, &err)) {
                    fprintf(stderr, "  download: %s\n", err.msg);
                    continue;
                }
                double num = 0, den = 0;
                for (size_t i = 0; ci >= 0 && i < nq; i++)
                    num += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]), den += (double)ref[i] * ref[i];
                char e[32] = "";
                if (ci >= 0) snprintf(e, sizeof e, "%.3g", den > 0 ? num / den : num);
                printf("%-16s %-30s %10.1f %10.2f %8.2f %10s\n", shapes[si].what, name, us, us * shapes[si].layers * 1e-3,
                       flop / us * 1e-6, e);
            }
        }
        o.fa_cm = true, o.t.fa_cfg = ZN_VK_MM_AUTO, o.mm_emulate = false, o.t.fa_kv2 = true;
        attn_bufs_free(&b);
        free(ref);
        free(out);
    }
    vkcmd_free(&c);
    vkops_free(&o);
    vkdev_close(&d);
    return 0;
}
