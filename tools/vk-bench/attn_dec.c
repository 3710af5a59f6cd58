/* Decode attention timing on a real GPU (not part of CI):
 *   make tools   (builds build/vk-attn_dec)
 *   build/vk-attn_dec            (one token, median of 20 calls: seconds on an H200)
 *   build/vk-attn_dec 20 4       (4 tokens per call)
 *   build/vk-attn_dec 2 1 512    (depth 512 only, 2 timed calls: lavapipe)
 * Times one layer's decode attention, merge of the splits included, for
 * the three benchmark shapes (Qwen3-8B: head dim 128, 32 query / 8 KV
 * heads; Qwen3.5-2B: 256, 8 / 2; Qwen3.5-35B-A3B: 256, 16 / 2) after 512,
 * 4096 and 32768 cached tokens, with GPU timestamps over many calls
 * recorded in one command buffer: attn.comp (one workgroup per query head,
 * 256-key splits: tuning attn_dec=off), then attn_dec.comp (one workgroup per
 * KV head and split) at several keys per split (ZN_VK_ATTN_CHUNK; "*" marks
 * the default; both merge their splits with attn_merge.comp). us/token =
 * us/call times the model's attention layers (36, 6, 10): the decode
 * step's attention; GB/s counts the K and V rows read once; "nmse" compares
 * each output with attn.comp's (f32 both: ~1e-13 expected). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_attn.h"

#include "attn_time.h"

static int T = 1;

int main(int argc, char **argv) {
    int only_depth = 0;
    if (argc > 1) REPS = atoi(argv[1]), WARM = (REPS + 3) / 4;
    if (argc > 2) T = atoi(argv[2]);
    if (argc > 3) only_depth = atoi(argv[3]);
    if (REPS < 1 || REPS > MAX_REPS || T < 1 || T > ZN_VK_ATTN_SPLIT_TOK || only_depth < 0) {
        fprintf(stderr, "usage: vk-attn_dec [timed calls (1..%d) [tokens (1..%d) [depth]]]\n", MAX_REPS,
                ZN_VK_ATTN_SPLIT_TOK);
        return 2;
    }
    if (!open_device()) return 1;
    const bool dec_ok = o.attn_dec;
    printf("device: %s, subgroup %u, %d token(s) per call, median of %d%s\n", d.info.name, d.info.subgroup_size, T, REPS,
           dec_ok ? "" : " (attn_dec.comp off: tuning attn_dec=off or subgroups under 8)");
    /* layers: attention layers per model (us/token = one call per layer) */
    const struct { const char *what; uint32_t n_head, n_kv, hd, layers; } shapes[] = {
        {"8B   hd128 32/8", 32, 8, 128, 36},
        {"2B   hd256 8/2", 8, 2, 256, 6},
        {"35B  hd256 16/2", 16, 2, 256, 10},
    };
    const int depths[] = {512, 4096, 32768};
    /* 0: attn.comp; then attn_dec.comp at these keys per split */
    const uint32_t chunks[] = {0, 32, 64, 128, 256};
    const int n_cfg = dec_ok ? (int)(sizeof chunks / sizeof *chunks) : 1;
    printf("%-16s %6s %-22s %7s %10s %9s %8s %10s\n", "shape", "depth", "kernel", "splits", "us/call", "us/token", "GB/s",
           "nmse");
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
        for (size_t di = 0; di < sizeof depths / sizeof *depths; di++) {
            if (only_depth && depths[di] != only_depth) continue;
            const uint32_t nh = shapes[si].n_head, nkv = shapes[si].n_kv, hd = shapes[si].hd;
            const uint32_t n_past = (uint32_t)depths[di], n_ctx = n_past + (uint32_t)T;
            const size_t nq = (size_t)T * nh * hd, nkvv = (size_t)n_ctx * nkv * hd;
            const size_t pf = (size_t)ZN_VK_ATTN_MAX_SPLIT * nh * (hd + 2) * ZN_VK_ATTN_SPLIT_TOK; /* any config */
            attn_bufs b;
            float *ref = malloc(sizeof(float) * nq), *out = malloc(sizeof(float) * nq);
            if (!attn_bufs_init(&b, nq, n_ctx, (size_t)nkv * hd, 4 * pf)) {
                fprintf(stderr, "%s: %s\n", shapes[si].what, err.msg);
                return 1;
            }
            vkop_attn at = {.q = b.q.addr, .kv = b.kv, .dst = b.y.addr, .part = b.part.addr,
                            .n_tok = (uint32_t)T, .n_past = n_past, .n_head = nh, .n_head_kv = nkv, .hd_k = hd,
                            .hd_v = hd, .scale = 1.0f / sqrtf((float)hd)};
            const double kv_bytes = 2.0 * 2.0 * (double)nkvv;
            for (int ci = 0; ci < n_cfg; ci++) {
                o.attn_dec = ci > 0;
                o.t.attn_chunk = ci ? chunks[ci] : ZN_VK_ATTN_CHUNK;
                char name[64];
                const char *dflt = chunks[ci] == ZN_VK_ATTN_DEC_CHUNK ? " *" : "";
                if (ci) snprintf(name, sizeof name, "attn_dec %u keys%s", chunks[ci], dflt);
                else snprintf(name, sizeof name, "attn.comp 256 keys");
                const uint32_t splits = vkop_attn_splits(&o, (uint32_t)T, n_ctx);
                double us;
                if (!time_calls(&at, &us)) {
                    fprintf(stderr, "  %s: %s\n", name, err.msg);
                    continue;
                }
                if (vkxfer_download(&b.xf, b.y, ci ? out : ref, 4 * nq, &err)) {
                    fprintf(stderr, "  download: %s\n", err.msg);
                    continue;
                }
                double num = 0, den = 0;
                for (size_t i = 0; ci && i < nq; i++)
                    num += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]), den += (double)ref[i] * ref[i];
                char e[32] = "";
                if (ci) snprintf(e, sizeof e, "%.3g", den > 0 ? num / den : num);
                printf("%-16s %6d %-22s %7u %10.1f %9.0f %8.0f %10s\n", shapes[si].what, depths[di], name, splits, us,
                       us * shapes[si].layers, kv_bytes / us * 1e-3, e);
            }
            attn_bufs_free(&b);
            free(ref);
            free(out);
        }
    vkcmd_free(&c);
    vkops_free(&o);
    vkdev_close(&d);
    return 0;
}
