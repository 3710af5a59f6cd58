/* The Vulkan tuning table and its override parser (vk_tune.c), on device
 * properties written out here (no device needed): the class each kind of
 * device gets; every value an NVIDIA H200 gets, pinned as text, the values
 * its measurements chose (a change here changes the H200's speed); the
 * counts scaled by SM count on a smaller NVIDIA GPU; lavapipe's row; and
 * the parser: per-type keys, auto / off, round trips, and errors that name
 * the key and the value. */
#include "harness.h"
#include "vk_tune.h"

/* What the H200's driver reports (the fields the table reads). */
static vkdev_info h200(void) {
    vkdev_info d = {0};
    snprintf(d.name, sizeof d.name, "NVIDIA H200");
    d.kind = "discrete";
    d.vendor_id = 0x10de, d.device_id = 0x2335;
    d.vram_bytes = 150ull << 30;
    d.subgroup_size = d.subgroup_min = d.subgroup_max = 32;
    d.subgroup_size_control = d.subgroup_arith = d.int_dot = d.coopmat = d.coopmat2 = true;
    d.max_shared = 49152, d.max_wg_invocations = 1024;
    d.compute_units = 132, d.warps_per_cu = 64;
    return d;
}

static vkdev_info lavapipe(void) {
    vkdev_info d = {0};
    snprintf(d.name, sizeof d.name, "llvmpipe (LLVM 15.0.6, 256 bits)");
    d.kind = "cpu";
    d.vendor_id = 0x10005;
    d.vram_bytes = 2ull << 30;
    d.subgroup_size = d.subgroup_min = d.subgroup_max = 8;
    d.subgroup_arith = d.int_dot = true;
    d.max_shared = 32768, d.max_wg_invocations = 1024;
    return d;
}

/* The H200's tuning: the values bench/results/2026-11-30-h200-vulkan*
 * measured (before the table existed they were constants of vk_ops.c and
 * backend_vulkan.c: MVX_WGS 528, the big-matrix row's 132, MMF_MIN_WGS
 * 256, CM2_MIN_WGS 96, CM2_LONG_K 8192, MVX_BIG_BYTES "off", ...);
 * since 2026-12-02 mm_min_tok 16 (was 5: batched decode of 8-12 sequences
 * runs 1.2-1.7x faster on mat-vec, bench/results/2026-12-02-h200-batched.md);
 * mvt 8 (several tokens per workgroup; measured on an H100, 2026-12-05); later that day
 * mvt_modes 0, mvt_rows 2, mvt_unroll 2, mm_min_tok 32, moe_min_tok 65 (batched decode of
 * 8-31 sequences on the multi-token mat-vec after quantx: H100, bench/results/2026-12-05-h100-s22.md);
 * mmi_* (the int8 GEMM, off where the device has NV cooperative matrix 2: test_mmi_without_cm2). */
static const char *const H200_TUNING =
    "mv_wg=128,mv_rows=2,mv_rows.q4_k=4,mv_rows.q5_k=4,mv_one_rows=512,intdot=on,mvq_rows=2,mvq_unroll=2,mvq_pn=0,"
    "qx_sk=1,qx_wg=256,mvx=on,mvx_modes=15,moe_tail=off,moe_route=off,mv_conv=off,mv_gnorm=off,mvx_big_mb=off,mvx_wg=512,mvx_rows=2,mvx_rows.q6_k=1,mvx_unroll=2,mvx_unroll.q6_k=1,mvx_wgs=132,mvx_pf=0,"
    "mvx_pn=0,mvxb_wg=128,mvxb_rows=2,mvxb_rows.q6_k=1,mvxb_unroll=2,mvxb_unroll.q6_k=1,"
    "mvxb_wgs=528,mvxb_pf=0,mvxb_pn=0,mvt=8,mvt_modes=0,mvt_wg=256,"
    "mvt_rows=2,mvt_unroll=2,mvt_wgs=264,mvt_pf=0,mvt_pn=0,mmi_min_tok=off,mmi_max_tok=64,mmi_bn=32,small_wg=64,norm_wg=256,"
    "mm_min_tok=32,moe_min_tok=65,mm_min_rows=128,mm_cfg=auto,mm_min_wgs=256,mm_cm2=on,mm_cm2_moe=on,cm2_cfg=auto,cm2_moe_cfg=auto,"
    "cm2_min_wgs=96,cm2_long_k=0,mm_scratch_mb=1024,mm_prep_tok=128,moe_prep_tok=64,mm_split_wgs=1056,mm_split_k=1024,mt_split_k=256,attn_dec=on,attn_chunk=64,attn_dec_min=64,attn_wgs=264,attn_rope=on,merge_wg=256,"
    "fa_cm=on,fa_cfg=auto,fa_kv2=on,fa_min_tok=16,fa_sg_kv=1024,gdn_lanes=auto,gdn_rows=1,gdn_tc=16,gdn_vec=off,poll=on";

/* A GPU of the same class without NV cooperative matrix 2 (the f16 GEMM
 * on KHR cooperative matrices: AMD, Intel) runs 32-64-token Q4_K matmuls
 * on the int8 GEMM; only those keys differ from the H200's. */
static void test_mmi_without_cm2(void) {
    vkdev_info d = h200();
    d.coopmat2 = false;
    vktune t;
    zn_err err = {0};
    char buf[ZN_TUNE_TEXT_MAX], want[ZN_TUNE_TEXT_MAX];
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_INT(t.mmi_min_tok, 32);
    CHECK_EQ_INT(t.mmi_max_tok, 64);
    CHECK_EQ_INT(t.mmi_bn, 32);
    vktune_describe(&t, buf, sizeof buf);
    const char *at = strstr(H200_TUNING, "mmi_min_tok=off");
    CHECK(at != NULL);
    if (!at) return;
    snprintf(want, sizeof want, "%.*smmi_min_tok=32%s", (int)(at - H200_TUNING), H200_TUNING, at + strlen("mmi_min_tok=off"));
    CHECK_EQ_STR(buf, want);
    /* mmi_bn: a multiple of 16 up to 64 */
    CHECK(vktune_apply(&t, &d, "mmi_bn=48", &err) == ZN_OK);
    CHECK_EQ_INT(t.mmi_bn, 48);
    CHECK(vktune_apply(&t, &d, "mmi_bn=40", &err) != ZN_OK);
    CHECK(strstr(err.msg, "mmi_bn") != NULL);
}

static void test_h200(void) {
    vkdev_info d = h200();
    vktune t;
    zn_err err = {0};
    char buf[ZN_TUNE_TEXT_MAX];
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "nvidia");
    CHECK_EQ_INT(t.units, 132);
    vktune_describe(&t, buf, sizeof buf);
    CHECK_EQ_STR(buf, H200_TUNING);
    /* a driver without VK_NV_shader_sm_builtins: the same, unscaled */
    d.compute_units = 0;
    vktune u;
    CHECK(vktune_init(&u, &d, NULL, &err) == ZN_OK);
    vktune_describe(&u, buf, sizeof buf);
    CHECK_EQ_STR(buf, H200_TUNING);
}

/* The counts that fill the GPU follow the SM count; sizes do not. */
static void test_scaled(void) {
    vkdev_info d = h200();
    d.compute_units = 66;
    vktune t;
    zn_err err = {0};
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_INT(t.mvx_t[0].wgs[5], 66);  /* 1 per SM */
    CHECK_EQ_INT(t.mvx_t[0].wg[5], 512); /* a size, not scaled */
    CHECK_EQ_INT(t.mvx_t[1].wgs[7], 264); /* 4 per SM */
    CHECK_EQ_INT(t.mm_min_wgs, 128);
    CHECK_EQ_INT(t.cm2_min_wgs, 48);
    CHECK_EQ_INT(t.mv_wg, 128);
    CHECK_EQ_INT(t.mvx_t[1].wg[5], 128);
    CHECK_EQ_INT(t.mvt_t.wgs[7], 132); /* 2 per SM */
    CHECK_EQ_INT(t.mvt_t.wg[7], 256);
    CHECK_EQ_INT(t.mvt, 8); /* a count of tokens, not scaled */
    CHECK_EQ_INT(t.mm_split_wgs, 528); /* 8 per SM */
    CHECK_EQ_INT(t.mm_split_k, 1024);  /* a depth, not scaled */
}

/* Workgroup sizes stop at the device's limit and at ZN_VK_WG_SUBGROUPS
 * subgroups. */
static void test_wg_limit(void) {
    vkdev_info d = h200();
    d.max_wg_invocations = 256;
    vktune t;
    zn_err err = {0};
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_INT(t.mvx_t[0].wg[5], 256); /* 16 subgroups asked */
    CHECK_EQ_INT(t.mvx_t[1].wg[5], 128); /* 4 fit */
    CHECK_EQ_INT(t.mvt_t.wg[5], 256);
    CHECK_EQ_INT(t.mv_wg, 128);
    /* subgroups of 8 lanes: at most ZN_VK_WG_SUBGROUPS of them (reduce.glsl's slots), 256 threads */
    d.max_wg_invocations = 1024, d.subgroup_size = d.subgroup_min = d.subgroup_max = 8;
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_INT(t.mvx_t[0].wg[5], 128); /* 16 subgroups */
    CHECK_EQ_INT(t.norm_wg, 256);
    CHECK(vktune_init(&t, &d, "norm_wg=512", &err) == ZN_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "a multiple of 8 in 8..256"), "%s", err.msg);
    CHECK(vktune_init(&t, &d, "qx_wg=264", &err) == ZN_ERR_ARG);
    CHECK(vktune_init(&t, &d, "mvx_wg=256,qx_wg=256", &err) == ZN_OK);
    d.subgroup_size = d.subgroup_min = d.subgroup_max = 32;
    d.max_wg_invocations = 0; /* unknown: as the row says */
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_INT(t.mvx_t[0].wg[5], 512);
}

static void test_lavapipe(void) {
    vkdev_info d = lavapipe();
    vktune t;
    zn_err err = {0};
    char buf[ZN_TUNE_TEXT_MAX];
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "cpu");
    vktune_describe(&t, buf, sizeof buf);
    /* one subgroup per workgroup, no tiled GEMM, 16 fused workgroups (several tokens: x by quantx.comp), no polling */
    CHECK_EQ_STR(buf, "mv_wg=8,mv_rows=4,mv_one_rows=512,intdot=on,mvq_rows=4,mvq_unroll=1,mvq_pn=0,qx_sk=0,qx_wg=8,"
                      "mvx=on,mvx_modes=15,moe_tail=off,moe_route=off,mv_conv=off,mv_gnorm=off,mvx_big_mb=off,mvx_wg=8,mvx_rows=4,mvx_unroll=1,mvx_wgs=16,mvx_pf=0,mvx_pn=0,"
                      "mvxb_wg=8,mvxb_rows=4,mvxb_unroll=1,mvxb_wgs=16,mvxb_pf=0,mvxb_pf.q4_k=2,mvxb_pf.q5_k=2,"
                      "mvxb_pn=0,mvt=8,mvt_modes=0,mvt_wg=8,mvt_rows=4,mvt_unroll=1,mvt_wgs=16,mvt_pf=0,mvt_pn=0,"
                      "mmi_min_tok=off,mmi_max_tok=64,mmi_bn=16,"
                      "small_wg=8,norm_wg=8,mm_min_tok=off,moe_min_tok=off,mm_min_rows=128,mm_cfg=auto,"
                      "mm_min_wgs=256,mm_cm2=on,mm_cm2_moe=on,cm2_cfg=auto,cm2_moe_cfg=auto,cm2_min_wgs=96,cm2_long_k=8192,"
                      "mm_scratch_mb=128,mm_prep_tok=off,moe_prep_tok=off,mm_split_wgs=off,mm_split_k=1024,mt_split_k=off,attn_dec=on,attn_chunk=64,attn_dec_min=256,attn_wgs=off,attn_rope=on,merge_wg=32,fa_cm=on,fa_cfg=auto,"
                      "fa_kv2=on,fa_min_tok=16,fa_sg_kv=1024,gdn_lanes=auto,gdn_rows=1,gdn_tc=0,gdn_vec=off,poll=off");
}

static void test_classes(void) {
    vktune t;
    zn_err err = {0};
    vkdev_info d = h200();
    d.kind = "discrete", d.vendor_id = 0x1002, d.device_id = 0x744c; /* RX 7900 XTX */
    d.subgroup_size = 64, d.subgroup_min = 32, d.subgroup_max = 64, d.int_dot_mixed_fast = true, d.compute_units = 96;
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "amd-rdna3");
    CHECK_EQ_INT(t.mvx_t[0].wgs[3], 96);
    CHECK_EQ_INT(t.mv_wg, 256); /* 4 subgroups of 64 */
    d.device_id = 0x7550; /* RX 9070 XT */
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "amd-rdna4");
    d.device_id = 0x73bf, d.int_dot_mixed_fast = false; /* RDNA2 */
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "amd");
    d.vendor_id = 0x8086, d.compute_units = 0;
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "intel");
    CHECK_EQ_INT(t.mvx_t[0].wgs[3], 132); /* no core count: left as measured */
    d.vendor_id = 0x106b;
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "generic");
    /* a CPU implementation is the cpu class whoever made it */
    d.kind = "cpu";
    CHECK(vktune_init(&t, &d, NULL, &err) == ZN_OK);
    CHECK_EQ_STR(t.cls, "cpu");
}

static void test_overrides(void) {
    vkdev_info d = h200();
    vktune t;
    zn_err err = {0};
    CHECK(vktune_init(&t, &d, " mv_rows=3 , mv_rows.Q6_K=5,,mvx=off,mm_cfg=2,mvx_big_mb=100,attn_dec=0,poll=false,", &err) ==
          ZN_OK);
    CHECK_EQ_INT(t.mv_rows[0], 3);
    CHECK_EQ_INT(t.mv_rows[5], 3);
    CHECK_EQ_INT(t.mv_rows[7], 5);
    CHECK(!t.mvx && !t.attn_dec && !t.poll);
    CHECK_EQ_INT(t.mm_cfg, 2);
    CHECK_EQ_INT(t.mvx_big_mb, 100);
    CHECK_EQ_INT(t.attn_chunk, 256); /* auto follows attn_dec: attn.comp's chunk */
    /* later keys win (ZN_TUNE, then --tune) */
    CHECK(vktune_apply(&t, &d, "mm_cfg=auto,mvx_big_mb=off,mvx_wgs.q8_0=0", &err) == ZN_OK);
    CHECK_EQ_INT(t.mm_cfg, ZN_VK_AUTO);
    CHECK_EQ_INT(t.mvx_big_mb, ZN_VK_OFF);
    CHECK_EQ_INT(t.mvx_t[0].wgs[4], 0);
    CHECK_EQ_INT(t.mvx_t[0].wgs[3], 132);
    /* integer-kernel keys leave the float types alone */
    CHECK(vktune_apply(&t, &d, "mvq_rows=7", &err) == ZN_OK);
    CHECK_EQ_INT(t.mvq_rows[3], 7);
    CHECK_EQ_INT(t.mvq_rows[0], 2);
    /* tokens per workgroup: off (1) up to the limit, its kernel per type */
    CHECK(vktune_apply(&t, &d, "mvt=1,mvt_modes=0,mvt_rows.q6_k=3,mvt_wg=512,mvt_wgs=0", &err) == ZN_OK);
    CHECK(t.mvt == 1 && t.mvt_modes == 0 && t.mvt_t.rows[7] == 3 && t.mvt_t.rows[5] == 2 && t.mvt_t.wg[3] == 512 &&
          t.mvt_t.wgs[6] == 0);
    CHECK(vktune_apply(&t, &d, "mvt=16", &err) == ZN_OK);
    CHECK_EQ_INT(t.mvt, ZN_VK_MVT_MAX);
}

/* What describe prints parses back to the same tuning, on another device
 * too. */
static void test_round_trip(void) {
    vkdev_info d = h200(), l = lavapipe();
    vktune a, b;
    zn_err err = {0};
    char buf[ZN_TUNE_TEXT_MAX];
    CHECK(vktune_init(&a, &d, "mv_rows.f16=7,mvxb_pn.q4_0=9,fa_cfg=3,mm_min_tok=off,attn_chunk=32", &err) == ZN_OK);
    vktune_describe(&a, buf, sizeof buf);
    vkdev_info big = l;
    big.subgroup_size = big.subgroup_min = big.subgroup_max = 32; /* lavapipe would refuse mv_wg=128 */
    CHECK(vktune_init(&b, &big, buf, &err) == ZN_OK);
    CHECK_MSG(!err.msg[0], "%s", err.msg);
    char back[ZN_TUNE_TEXT_MAX];
    vktune_describe(&b, back, sizeof back);
    CHECK_EQ_STR(back, buf);
    CHECK(strstr(buf, "mv_rows.f16=7") && strstr(buf, "mvxb_pn.q4_0=9") && strstr(buf, "attn_chunk=32"));
}

static void test_errors(void) {
    vkdev_info d = lavapipe();
    vktune t;
    zn_err err = {0};
    struct { const char *spec, *want; } bad[] = {
        {"mvx_foo=1", "unknown key 'mvx_foo'"},
        {"nosuch=1", "unknown key 'nosuch'"},
        {"mv_wg", "'mv_wg' is not key=value"},
        {"=3", "'=3' has no key"},
        {"mv_wg=12", "bad value '12' for mv_wg (a multiple of 8 in 8..256)"},
        {"mv_wg=2048", "bad value '2048' for mv_wg"},
        {"mv_rows=0", "bad value '0' for mv_rows (1..16)"},
        {"mv_rows=abc", "bad value 'abc' for mv_rows"},
        {"mv_rows=-1", "bad value '-1' for mv_rows"},
        {"mv_rows=99999999999", "bad value '99999999999' for mv_rows"},
        {"mv_rows=", "bad value '' for mv_rows"},
        {"poll=maybe", "bad value 'maybe' for poll (on or off)"},
        {"mm_cfg=8", "bad value '8' for mm_cfg (0..7 or auto)"},
        {"gdn_rows=3", "bad value '3' for gdn_rows (a power of two in 1..4)"},
        {"gdn_lanes=12", "bad value '12' for gdn_lanes (a power of two in 1..64 or auto)"},
        {"mm_min_tok=auto", "bad value 'auto' for mm_min_tok (1..1073741824 or off)"},
        {"qx_wg=12", "bad value '12' for qx_wg (a multiple of 8 in 8..256)"},
        {"poll.q4_k=on", "'poll.q4_k': the key has no per-type values"},
        {"mvq_rows.f32=2", "'mvq_rows.f32': the type is one of q4_0, q8_0, q4_k, q5_k, q6_k"},
        {"mv_rows.q3_k=2", "'mv_rows.q3_k': the type is one of f32"},
        {"mvt=0", "bad value '0' for mvt (1..16)"},
        {"mvt=17", "bad value '17' for mvt (1..16)"},
        {"mvt_rows.f16=2", "'mvt_rows.f16': the type is one of q4_0"},
        {"mvt_wg=12", "bad value '12' for mvt_wg (a multiple of 8 in 8..256)"}, /* 32 subgroups of 8 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = 0;
        const zn_status st = vktune_init(&t, &d, bad[i].spec, &err);
        CHECK_MSG(st == ZN_ERR_ARG && strstr(err.msg, bad[i].want), "'%s': status %d, \"%s\"", bad[i].spec, (int)st, err.msg);
    }
    /* the unknown key's message lists the keys of its family */
    vktune_init(&t, &d, "mvx_foo=1", &err);
    CHECK(strstr(err.msg, "mvx_wgs") && !strstr(err.msg, "poll"));
    vktune_init(&t, &d, "mvt_foo=1", &err);
    CHECK(strstr(err.msg, "mvt_modes") && strstr(err.msg, "mvt_wgs") && !strstr(err.msg, "mvx_wgs"));
    vktune_init(&t, &d, "zzz=1", &err);
    CHECK(strstr(err.msg, "poll") != NULL);
}

int main(void) {
    RUN(test_h200);
    RUN(test_mmi_without_cm2);
    RUN(test_scaled);
    RUN(test_wg_limit);
    RUN(test_lavapipe);
    RUN(test_classes);
    RUN(test_overrides);
    RUN(test_round_trip);
    RUN(test_errors);
    return harness_report("vk_tune");
}
