/* The device-class table, the key table and the override parser of the
 * Vulkan tuning (see vk_tune.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "limits.h"
#include "vk_attn.h"
#include "vk_mm.h"
#include "vk_tune.h"

int vktune_slot(zn_type t) {
    switch (t) {
    case ZN_TYPE_F32: return 0;
    case ZN_TYPE_F16: return 1;
    case ZN_TYPE_BF16: return 2;
    case ZN_TYPE_Q4_0: return 3;
    case ZN_TYPE_Q8_0: return 4;
    case ZN_TYPE_Q4_K: return 5;
    case ZN_TYPE_Q5_K: return 6;
    case ZN_TYPE_Q6_K: return 7;
    default: return -1;
    }
}

static const char *const slot_names[ZN_VK_NTYPES] = {"f32", "f16", "bf16", "q4_0", "q8_0", "q4_k", "q5_k", "q6_k"};
#define FIRST_QUANT 3 /* slots 3.. are the integer mat-vec's types */

void vktune_set_all(uint32_t a[ZN_VK_NTYPES], uint32_t v) {
    for (int i = 0; i < ZN_VK_NTYPES; i++) a[i] = v;
}

/* ---- the device classes ---- */

#define ALL(v) {v, v, v, v, v, v, v, v}
#define KQ(k, o) {o, o, o, o, o, k, k, o} /* Q4_K and Q5_K k, the other types o */
#define Q6(k, o) {o, o, o, o, o, o, o, k} /* Q6_K k, the other types o */
#define SG 0                              /* a workgroup size of one subgroup */

/* One class: its defaults as measured on a device of ref_units SMs / CUs;
 * the counts that fill a GPU (workgroups per token, minimum workgroup
 * counts of the tile choices) are scaled to the device's own (ref_units 0:
 * never scaled). Workgroup sizes are threads (SG: one subgroup) unless
 * named in subgroups. */
typedef struct row_mvx {
    uint8_t sgs[ZN_VK_NTYPES], rows[ZN_VK_NTYPES], unroll[ZN_VK_NTYPES], pf[ZN_VK_NTYPES], pn[ZN_VK_NTYPES];
    uint32_t wgs[ZN_VK_NTYPES];
} row_mvx;

typedef struct tune_row {
    const char *cls;
    bool (*match)(const vkdev_info *d);
    uint32_t ref_units;
    uint32_t mv_sgs;
    uint8_t mv_rows[ZN_VK_NTYPES], mvq_rows[ZN_VK_NTYPES], mvq_unroll[ZN_VK_NTYPES];
    uint32_t mv_one_rows, mvq_pn, qx_sk;
    row_mvx mvx[2];
    uint32_t mvx_big_mb;
    uint32_t mvt, mvt_modes;
    row_mvx mvt_x;
    uint32_t mmi_min_tok, mmi_max_tok, mmi_bn;
    uint32_t small_wg, norm_wg, merge_wg;
    uint32_t mm_min_tok, moe_min_tok, mm_min_rows, mm_min_wgs, cm2_min_wgs, cm2_long_k, mm_prep_tok, moe_prep_tok;
    uint32_t mm_split_wgs, mm_split_k, mt_split_k;
    uint32_t attn_dec_min, attn_wgs, fa_min_tok, fa_sg_kv;
    uint32_t gdn_tc;
    bool poll;
} tune_row;

static bool is_cpu(const vkdev_info *d) { return d->kind && !strcmp(d->kind, "cpu"); }
static bool is_nvidia(const vkdev_info *d) { return d->vendor_id == 0x10de; }
/* Navi 4x (RX 9000 series) by PCI id; RDNA3 as llama.cpp tells it: wave32
 * and wave64, and accelerated mixed-signedness int8 dot products */
static bool is_rdna4(const vkdev_info *d) { return d->vendor_id == 0x1002 && d->device_id >= 0x7550 && d->device_id <= 0x75ff; }
static bool is_rdna3(const vkdev_info *d) {
    return d->vendor_id == 0x1002 && d->subgroup_min == 32 && d->subgroup_max == 64 && d->int_dot_mixed_fast;
}
static bool is_amd(const vkdev_info *d) { return d->vendor_id == 0x1002; }
static bool is_intel(const vkdev_info *d) { return d->vendor_id == 0x8086; }
static bool any(const vkdev_info *d) { (void)d; return true; }

/* The GPU defaults. Measured on an NVIDIA H200 (Hopper, 132 SMs; bench/
 * results/2026-11-30-h200-vulkan*): on other GPUs they are a starting point
 * for tools/vk-bench until someone measures a row of their own.
 * - mv_rows: 4 rows per subgroup for the 4/5-bit K-quants, whose per-row
 *   loads are small; 2 for Q6_K (4 ran 1.4-4x slower) and the rest (sweep,
 *   2026-11-30-h200-vulkan.md).
 * - mvq_rows x mvq_unroll: per lane, NR x U row steps of loads in flight (16
 *   bytes of quants per step for Q4_0 and the 4/5-bit K-quants, 32 for
 *   Q8_0, 48 for Q6_K); 1 x 4 was +1.7 % on an 8B decode and even on a 2B
 *   one, per-shape sweeps disagreed by type, so 2 x 2 for all (s2).
 * - mvx rows and unroll 1 for Q6_K (the fused mat-vec of one token):
 *   H100, 2026-12-06 (bench/results/2026-12-06-s27.md, one call), tg128
 *   8B 210.3 -> 213.7 tok/s (rows 1 alone 214.8, unroll 1 alone 215.7),
 *   2B 410.1 -> 454.3 (423.3, 441.4); rows 1 with unroll 4 lost (190, 402).
 * - qx_sk 1: quantx in slices of one vec4 per thread: an 8B's gate+up 32.9
 *   -> 28.5 us with its barrier and mat-vec, down 34.5 -> 22.7 (s3 run 10).
 * - mvx: each workgroup quantises x itself (up to 96 KB of f32 x and aux
 *   read), so workgroups loop over row blocks, all resident at once: one
 *   per SM of 16 subgroups, x staged once per SM. H100, 2026-12-07
 *   (bench/results/2026-12-07-s35.md, one call, alternated), tg128 tok/s
 *   from 4 per SM of 4 subgroups (128 threads, 528 workgroups): 8B 225.4 /
 *   225.9 -> 267.2 / 264.7, 2B 493.5 -> 567.0, 35B-A3B (256 experts) 234.1
 *   -> 248.2; 256 x 264: 254.0, 554.2, 244.0; 512 x 264: 250.7, 537.1,
 *   243.8; 1024 x 132: 247.8, 491.4, 220.9; 512 x 528: 241.2, 519.5, 237.8;
 *   the pair (mvx off): 270.5, 529.2, 217.7. Each extra workgroup per SM
 *   reads and quantises x again (a mat-vec of 9 MB read from L2 still took
 *   10 us: the staging, not the weights, set its time).
 *   Per-token experts of several tokens (batched decode of a MoE) take
 *   the second class (mvxb), which keeps the 4 subgroups and 528
 *   workgroups: there each (token, slot) stages an x of its own for a few
 *   row blocks, and the wide workgroups lost: 35B-A3B at 8 / 32
 *   sequences 635 / 952 aggregate tok/s with 128 x 528, 597 / 872 with
 *   512 x 132 (c6 of the same session, alternated twice).
 *   The class also takes matrices of mvx_big_mb MiB and more: off. (In
 *   s3 it held one workgroup of 16 subgroups per SM, rows and steps 4, for
 *   an 8B's gate+up, down and output, faster alone (run 10: gate+up 32.4
 *   -> 25.7 us, down 27.0 -> 21.2, output 168 -> 128) but the 8B decoded
 *   at 229 tok/s with it and 242.5 without (run 12).)
 * - mvt 8, mvt_modes 0, mvt rows 2, unroll 2: batched decode steps of
 *   2-31 tokens take 8 tokens per workgroup of the integer mat-vec, each
 *   weight step loaded once for them, x quantised by quantx.comp first
 *   (read from L1/L2, not shared memory). H100, 8B Q4_K_M synth, 2026-12-05
 *   (bench/results/2026-12-05-h100-s22.md): vk-matvec's 8-token grid put
 *   the 8B's matmuls at 8.9 ms a step this way against 23.5 with 4 rows and
 *   1 step per iteration, and the in-workgroup quantisation (mvt_modes 7:
 *   8 rows of x in 40 KB of shared memory per workgroup) was slower still; end to end 8 sequences 781 tok/s against 407
 *   (llama.cpp CUDA 726 in the same run), the 2B 1,446 against 880. 16
 *   tokens per workgroup (mvt 16) lost at 8-24 sequences (517 / 767 / 751
 *   against 810 / 933 / 1,046).
 * - mm_min_tok 32: up to 31 rows a step run the mat-vec above, not the
 *   tiled GEMM: 8B at 16 sequences 933 tok/s against 626 on the GEMM, 24
 *   sequences 1,046; from 32 the GEMM (1,183 at 32; the mat-vec was not
 *   timed there with these settings).
 *   (It was 16 with the older mat-vec, 5 before batching.)
 * - moe_min_tok 65: expert matmuls of up to 64 tokens stay on the
 *   per-token mat-vec (with 256 experts each gets ~1 of 32 tokens: the
 *   grouped GEMM's tiles run nearly empty): 35B-A3B shape at 32 sequences
 *   744 tok/s against 629, at 64 953 against 917.
 * - mmi_min_tok 32, mmi_max_tok 64, mmi_bn 32, where the device has no
 *   NV cooperative matrix 2 (off where it has): 32-64-token Q4_K matmuls
 *   on the int8 GEMM (mmi8.comp) instead of the KHR cooperative-matrix f16
 *   GEMM. H100 with mm_cm2=off standing in for such a device (2026-12-05,
 *   bench/results/2026-12-05-s23.md): 8B at 32 / 64 sequences 693 / 1,158
 *   tok/s against 351 / 666, 2B 1,476 / 2,054 against 930 / 1,489; 64
 *   tokens per tile 610 / 1,075. Against the cm2 GEMM it lost (8B 1,123 /
 *   1,583 against 1,297 / 1,806).
 * - mm_min_wgs 256 (two workgroups per SM): the largest f16 GEMM tile that
 *   still gives that many, small products need many small tiles.
 * - cm2: at k >= cm2_long_k (8B ffn_down, 12288) 128 x 128 does 191 TFLOP/s
 *   where it still gives about a workgroup per SM (cm2_min_wgs 96); below
 *   that 64 x 128 is the fastest or within 5 % on every dense shape of the
 *   three models and on the grouped MoE GEMM, and 64 x 64 wins where 64 x
 *   128 gives too few workgroups (s3 runs 7-8).
 *   cm2_long_k 0 on GPUs: 128 x 128 at every k where it gives cm2_min_wgs.
 *   H100, 2026-12-06 (bench/results/2026-12-06-s27.md, one call), pp512 /
 *   pp4096 tok/s at 8192 -> 0: 8B 7,987 / 6,294 -> 8,907 / 6,832, 2B
 *   10,279 / 20,420 -> 20,347 / 19,219 (128 x 128 everywhere, cm2_cfg 1:
 *   8B 8,732 / 6,745, 2B 18,678 / 17,400).
 * - mm_prep_tok 128: GEMMs of fewer than 128 tokens (batched decode of
 *   16-127 sequences, short prompt chunks) dequantise each A tile as it is
 *   loaded, saving the write and read of 2 bytes per weight per call that
 *   the dequantised copy (mm_prep.comp) costs; longer ones multiply the
 *   copy, faster there. H100, 8B Q4_K_M synth, 2026-12-05: 32 sequences
 *   1,166 tok/s against 880 with the copy, 64 sequences 1,840 / 1,527,
 *   pp512 7,889 / 7,899 (with no copy ever pp512 fell to 4,640); the logits
 *   of a 64-token step are the same bits either way (zinc eval).
 * - mm_split_wgs 1056 (8 workgroups per SM), mm_split_k 1024: split-K of
 *   the GEMMs that dequantise their tiles (vk_gemm.c mm_split) over the
 *   AQS GEMM (9a525be). H100, 2026-12-06 (bench/results/2026-12-06-s27.md,
 *   zinc bench -npp 128 -ntg 32, one call), aggregate tok/s at 32 / 48 / 64
 *   sequences, off -> 264 / 528 / 1056 / 2112: 8B 1,951 / 2,648 / 3,344 ->
 *   2,522 / 3,228 / 4,013, 2,475 / 3,061 / 3,770, 2,581 / 3,087 / 3,790,
 *   2,547 / 3,005 / 3,695; 2B 4,312 / 5,645 / 6,833 -> 5,076 / 6,431 /
 *   7,738, 5,258 / 6,532 / 7,771, 5,263 / 6,532 / 7,786, 5,279 / 6,529 /
 *   7,794; mm_split_k 512 no better. It had lost against the unsplit GEMM
 *   before AQS (1,078 at 2112 against 1,356 off, s26).
 * - attn_dec_min 64: contexts of up to 64 keys stay on attn.comp,
 *   unsplit; longer ones split over attn_dec.comp. H100, 8B, 2026-12-06
 *   (bench/results/2026-12-06-s26.md): at 256, one workgroup per head
 *   made attention 1.0 ms of a 5.7 ms decode step at depth 130 (0.25 ms
 *   at depth 8); one sequence at depth 128-192 190 -> 205 tok/s at 64,
 *   8 sequences 807 -> 848, tg128 from an empty context 212.6 either way
 *   (16 and 1: 203 / 211). Earlier (run 12) 256 had won at depth 0
 *   (240 tok/s against 229), and attn_dec.comp 215 against 177 at 4096.
 * - attn_wgs 264 (2 workgroups per SM): split decode attention keeps KV
 *   heads x splits at most that. H100, 2026-12-06
 *   (bench/results/2026-12-06-s28.md), 8B (8 KV heads) tg64 at depth 4096
 *   / tg32 at 32768, off -> 264 (256 -> 32 splits), twice in one call:
 *   188.7 / 127.4 -> 195.2 / 141.0, 184.8 / 125.1 -> 192.7 / 138.8; split
 *   counts forced by attn_chunk: 32 the best of 8-256 at 4096, 16384 and
 *   32768; 2 KV heads (2B, 35B-A3B): 128 the best at 4096 (unchanged
 *   here); at 32768 they go from 256 to 128 splits, unmeasured (64: 2B
 *   394 against 424-429, 35B 187 against 190). */
#define GPU_ROW(name, fn)                                                                                          \
    {.cls = name, .match = fn, .ref_units = 132, .mv_sgs = 4, .mv_rows = KQ(4, 2), .mvq_rows = ALL(2),            \
     .mvq_unroll = ALL(2), .mv_one_rows = 512, .mvq_pn = 0, .qx_sk = 1,                                          \
     .mvx = {{ALL(16), Q6(1, 2), Q6(1, 2), ALL(0), ALL(0), ALL(132)}, {ALL(4), Q6(1, 2), Q6(1, 2), ALL(0), ALL(0), ALL(528)}}, \
     .mvx_big_mb = ZN_VK_OFF, .mvt = 8, .mvt_modes = 0, .mvt_x = {ALL(8), ALL(2), ALL(2), ALL(0), ALL(0), ALL(264)}, \
     .mmi_min_tok = 32, .mmi_max_tok = 64, .mmi_bn = 32,                                                        \
     .small_wg = 64, .norm_wg = 256, .merge_wg = 256, .mm_min_tok = 32, .moe_min_tok = 65, \
     .mm_min_rows = 128, .mm_min_wgs = 256, .cm2_min_wgs = 96, .cm2_long_k = 0, .attn_dec_min = 64,            \
     .attn_wgs = 264, .fa_min_tok = 16, .fa_sg_kv = 1024, .gdn_tc = 16, .poll = true, .mm_prep_tok = 128, .moe_prep_tok = 64, .mm_split_wgs = 1056, .mm_split_k = 1024,             \
     .mt_split_k = 256}

static const tune_row rows[] = {
    /* CPU implementations (lavapipe): they run a workgroup's subgroups one
     * after another and pay for every barrier, so one subgroup per
     * workgroup; the tiled GEMM's barriers cost more than re-reading
     * weights (mat-vec at every size); each fused-mat-vec workgroup
     * quantising x again is CPU time (16); more quantx workgroups only
     * cost; polling takes a core from the work. Several tokens per
     * workgroup: an 8B's matmuls at 8 tokens 1.7-3.1x faster at mvt 8
     * than a token per workgroup, and x by quantx.comp first (mvt_modes
     * 0) 1.1-1.4x faster than each workgroup quantising 8 rows
     * (tools/vk-bench matvec, ZN_BENCH_TOKENS=8, ZN_BENCH_QUICK=1). */
    {.cls = "cpu", .match = is_cpu, .ref_units = 0, .mv_sgs = 1, .mv_rows = ALL(4), .mvq_rows = ALL(4),
     .mvq_unroll = ALL(1), .mv_one_rows = 512, .mvq_pn = 0, .qx_sk = 0,
     .mvx = {{ALL(1), ALL(4), ALL(1), ALL(0), ALL(0), ALL(16)}, {ALL(1), ALL(4), ALL(1), KQ(2, 0), ALL(0), ALL(16)}},
     .mvx_big_mb = ZN_VK_OFF, .mvt = 8, .mvt_modes = 0, .mvt_x = {ALL(1), ALL(4), ALL(1), ALL(0), ALL(0), ALL(16)},
     .mmi_min_tok = ZN_VK_OFF, .mmi_max_tok = 64, .mmi_bn = 16,
     .small_wg = SG, .norm_wg = SG, .merge_wg = 32, .mm_min_tok = ZN_VK_OFF,
     .moe_min_tok = ZN_VK_OFF, .mm_min_rows = 128, .mm_min_wgs = 256, .cm2_min_wgs = 96, .cm2_long_k = 8192,
     .attn_dec_min = 256, .attn_wgs = ZN_VK_OFF, .fa_min_tok = 16, .fa_sg_kv = 1024, .poll = false, .mm_prep_tok = ZN_VK_OFF, .moe_prep_tok = ZN_VK_OFF,
     .mm_split_wgs = ZN_VK_OFF, .mm_split_k = 1024, .mt_split_k = ZN_VK_OFF},
    GPU_ROW("nvidia", is_nvidia),     /* Turing and later: the H200's and H100's */
    GPU_ROW("amd-rdna4", is_rdna4),   /* unmeasured: the GPU defaults */
    GPU_ROW("amd-rdna3", is_rdna3),   /* unmeasured */
    GPU_ROW("amd", is_amd),           /* GCN, RDNA1/2; unmeasured */
    GPU_ROW("intel", is_intel),       /* unmeasured; no core count from the driver */
    GPU_ROW("generic", any),
};

static uint32_t scaled(const tune_row *r, uint32_t units, uint32_t v) {
    if (!r->ref_units || !units || v == ZN_VK_OFF) return v;
    const uint64_t s = ((uint64_t)v * units + r->ref_units / 2) / r->ref_units;
    return s < 1 ? 1 : s > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)s;
}

/* The most threads a workgroup of the tuned kernels takes on d: the
 * device's limit, and ZN_VK_WG_SUBGROUPS subgroups (reduce.glsl's slots). */
static uint32_t wg_most(const vkdev_info *d) {
    const uint32_t sg = d->subgroup_size ? d->subgroup_size : 1, by_sg = ZN_VK_WG_SUBGROUPS * sg;
    return d->max_wg_invocations && d->max_wg_invocations < by_sg ? d->max_wg_invocations : by_sg;
}

/* A row's workgroup threads (SG: one subgroup), at most wg_most. */
static uint32_t threads(uint32_t v, uint32_t sg, const vkdev_info *d) {
    const uint32_t n = v == SG ? sg : v;
    return n > wg_most(d) ? wg_most(d) : n;
}

/* n subgroups of sg lanes, at most as many as wg_most allows */
static uint32_t sgs_wg(uint32_t n, uint32_t sg, const vkdev_info *d) {
    const uint32_t most = wg_most(d) / sg;
    return (most && n > most ? most : n) * sg;
}

static void fill(vktune *t, const tune_row *r, const vkdev_info *d) {
    const uint32_t sg = d->subgroup_size ? d->subgroup_size : 1, u = d->compute_units;
    memset(t, 0, sizeof *t);
    t->cls = r->cls;
    t->units = r->ref_units ? u : 0;
    t->mv_wg = sgs_wg(r->mv_sgs, sg, d);
    for (int i = 0; i < ZN_VK_NTYPES; i++) {
        t->mv_rows[i] = r->mv_rows[i];
        t->mvq_rows[i] = r->mvq_rows[i];
        t->mvq_unroll[i] = r->mvq_unroll[i];
        for (int b = 0; b < 3; b++) {
            const row_mvx *m = b < 2 ? &r->mvx[b] : &r->mvt_x;
            vktune_mvx *x = b < 2 ? &t->mvx_t[b] : &t->mvt_t;
            x->wg[i] = sgs_wg(m->sgs[i], sg, d), x->rows[i] = m->rows[i], x->unroll[i] = m->unroll[i];
            x->wgs[i] = scaled(r, u, m->wgs[i]), x->pf[i] = m->pf[i], x->pn[i] = m->pn[i];
        }
    }
    t->mv_one_rows = r->mv_one_rows;
    t->intdot = t->mvx = true;
    t->mvq_pn = r->mvq_pn;
    t->qx_sk = r->qx_sk;
    t->mvx_modes = 15;
    /* the MoE tail and routing in the experts' mat-vecs: off, 35B tg128 on an H100 133 tok/s with them
     * against 190 without (bench/results/2026-12-07-s34.md) */
    t->moe_tail = t->moe_route = false;
    /* the DeltaNet's conv and gated norm in the mat-vecs: off, the 35B's tg128 on an H100 216 tok/s with
     * them against 225 without, the 2B's 474-476 against 476-485 (the same file) */
    t->mv_conv = t->mv_gnorm = false;
    t->mvx_big_mb = r->mvx_big_mb;
    t->mvt = r->mvt;
    t->mvt_modes = r->mvt_modes;
    /* the int8 GEMM only where the f16 one has no cooperative matrix 2 */
    t->mmi_min_tok = d->coopmat2 ? ZN_VK_OFF : r->mmi_min_tok;
    t->mmi_max_tok = r->mmi_max_tok;
    t->mmi_bn = r->mmi_bn;
    t->small_wg = threads(r->small_wg, sg, d);
    t->norm_wg = threads(r->norm_wg, sg, d);
    t->qx_wg = t->norm_wg; /* one per row, wide, like norm's */
    t->merge_wg = threads(r->merge_wg, sg, d);
    t->mm_min_tok = r->mm_min_tok;
    t->moe_min_tok = r->moe_min_tok;
    t->mm_min_rows = r->mm_min_rows;
    t->mm_cfg = t->cm2_cfg = t->cm2_moe_cfg = t->fa_cfg = ZN_VK_AUTO;
    t->mm_min_wgs = scaled(r, u, r->mm_min_wgs);
    t->mm_cm2 = t->mm_cm2_moe = true;
    t->cm2_min_wgs = scaled(r, u, r->cm2_min_wgs);
    t->cm2_long_k = r->cm2_long_k;
    /* 1/64 of the device's memory, within limits: a matrix split into
     * chunks serialises dequantisation and multiplication */
    uint64_t cap = d->vram_bytes / 64;
    cap = cap < ZN_VK_MM_SCRATCH ? ZN_VK_MM_SCRATCH : cap > ZN_VK_MM_SCRATCH_MAX ? ZN_VK_MM_SCRATCH_MAX : cap;
    t->mm_scratch_mb = (uint32_t)(cap >> 20);
    t->mm_prep_tok = r->mm_prep_tok;
    t->moe_prep_tok = r->moe_prep_tok;
    t->mm_split_wgs = scaled(r, u, r->mm_split_wgs);
    t->mm_split_k = r->mm_split_k;
    t->mt_split_k = r->mt_split_k;
    t->attn_dec = t->attn_rope = t->fa_cm = t->fa_kv2 = true;
    t->attn_chunk = ZN_VK_AUTO; /* by attn_dec: vktune_init resolves it */
    t->attn_dec_min = r->attn_dec_min;
    t->attn_wgs = scaled(r, u, r->attn_wgs);
    t->fa_min_tok = r->fa_min_tok;
    t->fa_sg_kv = r->fa_sg_kv;
    t->gdn_lanes = ZN_VK_AUTO;
    t->gdn_rows = 1;
    t->gdn_tc = r->gdn_tc;
    t->poll = r->poll;
}

/* ---- the keys ---- */

typedef enum { K_BOOL, K_U32, K_TYPED } key_kind;
enum {
    F_SG = 1,    /* a workgroup size: a multiple of the subgroup size, at most wg_most */
    F_AUTO = 2,  /* "auto" = ZN_VK_AUTO */
    F_OFF = 4,   /* "off" = ZN_VK_OFF */
    F_QUANT = 8, /* per type, the integer kernels' types only */
    F_M8 = 16,   /* a workgroup size, a multiple of 8 (q8x.glsl's 8-lane blocks) */
    F_M16 = 32,  /* a multiple of 16 (mmi8.comp's tokens: 16 threads' worth) */
    F_POW2 = 64, /* a power of two */
};

typedef struct tune_key {
    const char *name;
    key_kind kind;
    size_t off;
    uint32_t lo, hi, flags;
} tune_key;

#define KB(n, f) {n, K_BOOL, offsetof(vktune, f), 0, 1, 0}
#define KU(n, f, lo, hi, fl) {n, K_U32, offsetof(vktune, f), lo, hi, fl}
#define KT(n, f, lo, hi, fl) {n, K_TYPED, offsetof(vktune, f), lo, hi, fl}
#define KX(p, x)                                                                                     \
    KT(p "_wg", x.wg, 1, 1024, F_SG | F_QUANT), KT(p "_rows", x.rows, 1, 16, F_QUANT),               \
    KT(p "_unroll", x.unroll, 1, 8, F_QUANT), KT(p "_wgs", x.wgs, 0, 1u << 20, F_QUANT),             \
    KT(p "_pf", x.pf, 0, ZN_VK_MVX_MAX_PF, F_QUANT), KT(p "_pn", x.pn, 0, ZN_VK_MVX_MAX_PF, F_QUANT)

static const tune_key keys[] = {
    KU("mv_wg", mv_wg, 1, 1024, F_SG),
    KT("mv_rows", mv_rows, 1, 16, 0),
    KU("mv_one_rows", mv_one_rows, 0, 1u << 30, 0),
    KB("intdot", intdot),
    KT("mvq_rows", mvq_rows, 1, 16, F_QUANT),
    KT("mvq_unroll", mvq_unroll, 1, 8, F_QUANT),
    KU("mvq_pn", mvq_pn, 0, ZN_VK_MVX_MAX_PF, 0),
    KU("qx_sk", qx_sk, 0, 16, 0),
    KU("qx_wg", qx_wg, 8, 1024, F_M8),
    KB("mvx", mvx),
    KU("mvx_modes", mvx_modes, 0, 15, 0),
    KB("moe_tail", moe_tail),
    KB("moe_route", moe_route),
    KB("mv_conv", mv_conv),
    KB("mv_gnorm", mv_gnorm),
    KU("mvx_big_mb", mvx_big_mb, 0, 1u << 20, F_OFF),
    KX("mvx", mvx_t[0]),
    KX("mvxb", mvx_t[1]),
    KU("mvt", mvt, 1, ZN_VK_MVT_MAX, 0),
    KU("mvt_modes", mvt_modes, 0, 15, 0),
    KX("mvt", mvt_t),
    KU("mmi_min_tok", mmi_min_tok, 1, 1u << 30, F_OFF),
    KU("mmi_max_tok", mmi_max_tok, 1, 1u << 30, 0),
    KU("mmi_bn", mmi_bn, 16, 64, F_M16),
    KU("small_wg", small_wg, 1, 1024, F_SG),
    KU("norm_wg", norm_wg, 1, 1024, F_SG),
    KU("mm_min_tok", mm_min_tok, 1, 1u << 30, F_OFF),
    KU("moe_min_tok", moe_min_tok, 1, 1u << 30, F_OFF),
    KU("mm_min_rows", mm_min_rows, 0, 1u << 30, 0),
    KU("mm_cfg", mm_cfg, 0, ZN_VK_MM_NCFG - 1, F_AUTO),
    KU("mm_min_wgs", mm_min_wgs, 1, 1u << 20, 0),
    KB("mm_cm2", mm_cm2),
    KB("mm_cm2_moe", mm_cm2_moe),
    KU("cm2_cfg", cm2_cfg, 0, ZN_VK_CM2_NCFG - 1, F_AUTO),
    KU("cm2_moe_cfg", cm2_moe_cfg, 0, ZN_VK_CM2_NCFG - 1, F_AUTO),
    KU("cm2_min_wgs", cm2_min_wgs, 1, 1u << 20, 0),
    KU("cm2_long_k", cm2_long_k, 0, 1u << 30, F_OFF),
    KU("mm_scratch_mb", mm_scratch_mb, 0, 1u << 20, 0),
    KU("mm_prep_tok", mm_prep_tok, 1, 1u << 30, F_OFF),
    KU("moe_prep_tok", moe_prep_tok, 1, 1u << 30, F_OFF),
    KU("mm_split_wgs", mm_split_wgs, 1, 1u << 20, F_OFF),
    KU("mm_split_k", mm_split_k, 32, 1u << 30, 0),
    KU("mt_split_k", mt_split_k, 32, 1u << 30, F_OFF),
    KB("attn_dec", attn_dec),
    KU("attn_chunk", attn_chunk, 1, 1u << 20, F_AUTO),
    KU("attn_dec_min", attn_dec_min, 0, 1u << 30, 0),
    KU("attn_wgs", attn_wgs, 1, 1u << 20, F_OFF),
    KB("attn_rope", attn_rope),
    KU("merge_wg", merge_wg, 1, 1024, F_SG),
    KB("fa_cm", fa_cm),
    KU("fa_cfg", fa_cfg, 0, ZN_VK_FA_NCFG - 1, F_AUTO),
    KB("fa_kv2", fa_kv2),
    KU("fa_min_tok", fa_min_tok, 1, 1u << 30, F_OFF),
    KU("fa_sg_kv", fa_sg_kv, 1, 1u << 30, F_OFF),
    KU("gdn_lanes", gdn_lanes, 1, 64, F_AUTO | F_POW2),
    KU("gdn_rows", gdn_rows, 1, 4, F_POW2),
    KU("gdn_tc", gdn_tc, 0, 64, 0),
    KB("gdn_vec", gdn_vec),
    KB("poll", poll),
};
#define N_KEYS (sizeof keys / sizeof *keys)

static uint32_t *u32_at(vktune *t, const tune_key *k) { return (uint32_t *)((char *)t + k->off); }
static bool *bool_at(vktune *t, const tune_key *k) { return (bool *)((char *)t + k->off); }
static const uint32_t *cu32_at(const vktune *t, const tune_key *k) { return (const uint32_t *)((const char *)t + k->off); }
static const bool *cbool_at(const vktune *t, const tune_key *k) { return (const bool *)((const char *)t + k->off); }

/* "mvx_foo": the keys that share its first word; else the key families
 * ("mv_*, intdot, ..."). */
static void key_hint(const char *name, size_t len, char *buf, size_t cap) {
    size_t w = 0;
    while (w < len && name[w] != '_' && name[w] != '.') w++;
    size_t n = 0;
    buf[0] = 0;
    for (int pass = 0; pass < 2 && !n; pass++)
        for (size_t i = 0; i < N_KEYS; i++) {
            const char *kn = keys[i].name;
            const size_t kw = strcspn(kn, "_");
            if (pass == 0 && (kw != w || strncmp(kn, name, w))) continue;
            if (pass == 1 && i && strcspn(keys[i - 1].name, "_") == kw && !strncmp(keys[i - 1].name, kn, kw)) continue;
            bool seen = false; /* a family listed before (mv_* around mv_one_rows) */
            for (size_t j = 0; pass == 1 && j + 1 < i && !seen; j++)
                seen = strcspn(keys[j].name, "_") == kw && !strncmp(keys[j].name, kn, kw);
            if (seen) continue;
            const bool family = pass == 1 && (kn[kw] || (i + 1 < N_KEYS && !strncmp(keys[i + 1].name, kn, kw) &&
                                                          keys[i + 1].name[kw] == '_'));
            int wr = pass == 0 ? snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", kn)
                               : snprintf(buf + n, cap - n, "%s%.*s%s", n ? ", " : "", (int)kw, kn, family ? "_*" : "");
            if (wr < 0 || (size_t)wr >= cap - n) break;
            n += (size_t)wr;
        }
}

static bool word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && !strncmp(s, w, n); }

/* A decimal number of n characters in [lo, hi]. */
static bool parse_num(const char *s, size_t n, uint32_t lo, uint32_t hi, uint32_t *out) {
    if (!n || n > 10) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v < lo || v > hi) return false;
    *out = (uint32_t)v;
    return true;
}

static void range_text(const tune_key *k, const vkdev_info *d, char *buf, size_t cap) {
    if (k->kind == K_BOOL) {
        snprintf(buf, cap, "on or off");
        return;
    }
    const uint32_t sg = d->subgroup_size ? d->subgroup_size : 1;
    const uint32_t hi = (k->flags & (F_SG | F_M8)) && wg_most(d) < k->hi ? wg_most(d) : k->hi;
    int n = (k->flags & F_SG) ? snprintf(buf, cap, "a multiple of %u in %u..%u", sg, sg, hi)
            : (k->flags & F_M8) ? snprintf(buf, cap, "a multiple of 8 in %u..%u", k->lo, hi)
            : (k->flags & F_M16) ? snprintf(buf, cap, "a multiple of 16 in %u..%u", k->lo, hi)
            : (k->flags & F_POW2) ? snprintf(buf, cap, "a power of two in %u..%u", k->lo, hi)
                                : snprintf(buf, cap, "%u..%u", k->lo, hi);
    if (n > 0 && (size_t)n < cap && (k->flags & (F_AUTO | F_OFF)))
        snprintf(buf + n, cap - (size_t)n, " or %s", (k->flags & F_AUTO) ? "auto" : "off");
}

static bool parse_value(const tune_key *k, const vkdev_info *d, const char *v, size_t n, uint32_t *out) {
    if (k->kind == K_BOOL) {
        if (word_is(v, n, "on") || word_is(v, n, "1") || word_is(v, n, "true")) return *out = 1, true;
        if (word_is(v, n, "off") || word_is(v, n, "0") || word_is(v, n, "false")) return *out = 0, true;
        return false;
    }
    if ((k->flags & F_AUTO) && word_is(v, n, "auto")) return *out = ZN_VK_AUTO, true;
    if ((k->flags & F_OFF) && word_is(v, n, "off")) return *out = ZN_VK_OFF, true;
    uint32_t hi = k->hi;
    if ((k->flags & (F_SG | F_M8)) && wg_most(d) < hi) hi = wg_most(d);
    if (!parse_num(v, n, k->lo, hi, out)) return false;
    const uint32_t sg = d->subgroup_size ? d->subgroup_size : 1;
    if ((k->flags & F_SG) && *out % sg) return false;
    if ((k->flags & F_M8) && *out % 8) return false;
    if ((k->flags & F_M16) && *out % 16) return false;
    if ((k->flags & F_POW2) && (*out & (*out - 1))) return false;
    return true;
}

/* One "key[.type]=value" item of n characters. */
static zn_status apply_item(vktune *t, const vkdev_info *d, const char *s, size_t n, zn_err *err) {
    const char *eq = memchr(s, '=', n);
    if (!eq) return zn_errf(err, ZN_ERR_ARG, "tuning: '%.*s' is not key=value", (int)n, s);
    const char *dot = memchr(s, '.', (size_t)(eq - s));
    const size_t kl = (size_t)((dot ? dot : eq) - s);
    if (!kl) return zn_errf(err, ZN_ERR_ARG, "tuning: '%.*s' has no key", (int)n, s);
    const tune_key *k = NULL;
    for (size_t i = 0; i < N_KEYS && !k; i++)
        if (word_is(s, kl, keys[i].name)) k = &keys[i];
    if (!k) {
        char hint[384];
        key_hint(s, kl, hint, sizeof hint);
        return zn_errf(err, ZN_ERR_ARG, "tuning: unknown key '%.*s' (keys: %s)", (int)kl, s, hint);
    }
    int slot = -1;
    if (dot) {
        const size_t tl = (size_t)(eq - dot - 1);
        for (int i = k->flags & F_QUANT ? FIRST_QUANT : 0; i < ZN_VK_NTYPES && slot < 0; i++)
            if (tl == strlen(slot_names[i]) && !strncasecmp(dot + 1, slot_names[i], tl)) slot = i;
        if (k->kind != K_TYPED || slot < 0)
            return zn_errf(err, ZN_ERR_ARG, "tuning: '%.*s': %s", (int)(eq - s), s,
                           k->kind != K_TYPED ? "the key has no per-type values"
                           : k->flags & F_QUANT ? "the type is one of q4_0, q8_0, q4_k, q5_k, q6_k"
                                                : "the type is one of f32, f16, bf16, q4_0, q8_0, q4_k, q5_k, q6_k");
    }
    const char *v = eq + 1;
    const size_t vl = n - (size_t)(v - s);
    uint32_t val;
    if (!parse_value(k, d, v, vl, &val)) {
        char want[96];
        range_text(k, d, want, sizeof want);
        return zn_errf(err, ZN_ERR_ARG, "tuning: bad value '%.*s' for %s (%s)", (int)vl, v, k->name, want);
    }
    if (k->kind == K_BOOL) *bool_at(t, k) = val != 0;
    else if (k->kind == K_U32) *u32_at(t, k) = val;
    else
        for (int i = 0; i < ZN_VK_NTYPES; i++)
            if (slot < 0 ? !(k->flags & F_QUANT) || i >= FIRST_QUANT : i == slot) u32_at(t, k)[i] = val;
    return ZN_OK;
}

zn_status vktune_apply(vktune *t, const vkdev_info *d, const char *spec, zn_err *err) {
    for (const char *p = spec; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *s = p;
        while (n && (*s == ' ' || *s == '\t')) s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        if (n) {
            zn_status st = apply_item(t, d, s, n, err);
            if (st) return st;
        }
        p = e ? e + 1 : p + strlen(p);
    }
    return ZN_OK;
}

zn_status vktune_init(vktune *t, const vkdev_info *d, const char *spec, zn_err *err) {
    const tune_row *r = &rows[0];
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (rows[i].match(d)) {
            r = &rows[i];
            break;
        }
    fill(t, r, d);
    zn_status st = vktune_apply(t, d, spec, err);
    if (st) return st;
    /* attn_dec.comp splits more finely (its 8-lane rows need subgroups of 8) */
    if (t->attn_chunk == ZN_VK_AUTO)
        t->attn_chunk = t->attn_dec && d->subgroup_size >= 8 ? ZN_VK_ATTN_DEC_CHUNK : ZN_VK_ATTN_CHUNK;
    return ZN_OK;
}

static int put_value(char *buf, size_t cap, const tune_key *k, uint32_t v) {
    if (k->kind == K_BOOL) return snprintf(buf, cap, "%s", v ? "on" : "off");
    if ((k->flags & F_AUTO) && v == ZN_VK_AUTO) return snprintf(buf, cap, "auto");
    if ((k->flags & F_OFF) && v == ZN_VK_OFF) return snprintf(buf, cap, "off");
    return snprintf(buf, cap, "%u", v);
}

void vktune_describe(const vktune *t, char *buf, size_t cap) {
    size_t n = 0;
    if (cap) buf[0] = 0;
#define PUT(...)                                                                   \
    do {                                                                           \
        int w_ = snprintf(buf + n, cap - n, __VA_ARGS__);                          \
        if (w_ < 0 || (size_t)w_ >= cap - n) return;                               \
        n += (size_t)w_;                                                           \
    } while (0)
#define PUTV(k, v)                                                                 \
    do {                                                                           \
        int w_ = put_value(buf + n, cap - n, k, v);                                \
        if (w_ < 0 || (size_t)w_ >= cap - n) return;                               \
        n += (size_t)w_;                                                           \
    } while (0)
    for (size_t i = 0; i < N_KEYS; i++) {
        const tune_key *k = &keys[i];
        if (k->kind != K_TYPED) {
            PUT("%s%s=", i ? "," : "", k->name);
            PUTV(k, k->kind == K_BOOL ? *cbool_at(t, k) : *cu32_at(t, k));
            continue;
        }
        /* the most common value over the key's types, then the others */
        const uint32_t *a = cu32_at(t, k);
        const int lo = k->flags & F_QUANT ? FIRST_QUANT : 0;
        uint32_t base = a[lo];
        int best = 0;
        for (int s = lo; s < ZN_VK_NTYPES; s++) {
            int c = 0;
            for (int j = lo; j < ZN_VK_NTYPES; j++) c += a[j] == a[s];
            if (c > best) best = c, base = a[s];
        }
        PUT("%s%s=", i ? "," : "", k->name);
        PUTV(k, base);
        for (int s = lo; s < ZN_VK_NTYPES; s++)
            if (a[s] != base) {
                PUT(",%s.%s=", k->name, slot_names[s]);
                PUTV(k, a[s]);
            }
    }
#undef PUT
#undef PUTV
}
