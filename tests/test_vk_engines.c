/* Several engines in one process, each with its own backend, device and
 * tuning (zn_engine_opts: configuration is data, nothing process-wide):
 * a CPU engine, a Vulkan engine with the device's tuning, one with
 * another (the float mat-vec, attn.comp decode with 4-key splits, the
 * scalar prefill attention, no fusion) and one whose prompts take the f16
 * GEMM (emulated without cooperative matrices), on the same model at once, stepped
 * in turns: each must give llama.cpp's golden logits at every prompt
 * position and, on F32 files, the golden greedy tokens.
 *
 * Then pipelines at init: a Vulkan engine creates every pipeline its model
 * can select when it starts, so a run through prompts of every size class
 * and decode steps across the attention thresholds (split-K chunks,
 * attn_dec_min: other kernels) creates none (zn_backend_stats.pipelines_late),
 * with the device's tuning, with small thresholds, and on the f16 GEMM path
 * (emulated without cooperative matrices). With the init pass off the
 * same run does create pipelines: the counter sees them.
 * No Vulkan device: the suite is skipped. */
#include "engine.h"
#include "golden.h"
#include "model.h"
#include "vk_ops.h"

#define F32 1e-5
#define QNT 1e-3

/* Engine i of the side-by-side run. */
static zn_engine_opts side_opts(int i) {
    zn_engine_opts o = engine_default_opts();
    o.backend = i ? "vulkan" : "cpu";
    o.be.n_threads = 2;
    if (i == 2) {
        o.be.tune = "intdot=off,attn_dec=off,attn_chunk=4,fa_cm=off,mv_rows=1";
        o.be.no_fusion = true;
    }
    if (i == 3) { /* the prompt's matmuls on the f16 GEMM (however few rows), the norms and SwiGLUs in its x */
        o.be.mm_emulate = true;
        o.be.tune = "mm_min_rows=0";
    }
    return o;
}

#define N_SIDE 4

static void side_by_side(const char *name, double tol, bool greedy) {
    char mpath[512], gpath[512];
    golden_paths(name, mpath, gpath, sizeof mpath);
    golden gd = {0};
    zn_model m;
    zn_err err = {0};
    if (!golden_load(&gd, gpath) || model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s: %s", name, err.msg[0] ? err.msg : "cannot read the golden file");
        free(gd.logits);
        return;
    }
    zn_engine e[N_SIDE];
    zn_seq s[N_SIDE];
    memset(e, 0, sizeof e);
    memset(s, 0, sizeof s);
    float *lg[N_SIDE] = {0};
    int tok[N_SIDE], match[N_SIDE] = {0}, n = 0;
    bool ok = true;
    for (; n < N_SIDE && ok; n++) {
        const zn_engine_opts o = side_opts(n);
        zn_status st = engine_init(&e[n], &m, &o, &err);
        if (!st) st = seq_init(&s[n], &e[n], 2 * NPOS + 1, &err);
        lg[n] = malloc(sizeof(float) * NPOS * (size_t)gd.n_vocab);
        ok = !st && lg[n];
        if (!ok) CHECK_MSG(false, "%s: engine %d: %s", name, n, err.msg);
    }
    /* the prompt on each engine in turn, then a decode step on each in turn */
    for (int i = 0; ok && i < N_SIDE; i++) {
        ok = engine_decode(&e[i], &s[i], gd.prompt, NPOS, lg[i], true, &err) == ZN_OK;
        CHECK_MSG(ok, "%s: engine %d: %s", name, i, err.msg);
        double worst = 0;
        for (int p = 0; ok && p < NPOS; p++) {
            const double d = nmse(lg[i] + (size_t)p * gd.n_vocab, gd.logits + (size_t)p * gd.n_vocab, gd.n_vocab);
            worst = d > worst ? d : worst;
        }
        if (ok) CHECK_MSG(worst <= tol, "%s: engine %d (%s): worst prompt nmse %.3g > %.0e", name, i, e[i].be->name, worst, tol);
        if (ok) tok[i] = argmax(lg[i] + (size_t)(NPOS - 1) * gd.n_vocab, gd.n_vocab);
    }
    for (int k = 0; ok && greedy && k < NPOS; k++)
        for (int i = 0; ok && i < N_SIDE; i++) {
            if (tok[i] != gd.greedy[k]) continue; /* diverged: counted below */
            match[i]++;
            int32_t t = tok[i];
            ok = engine_decode(&e[i], &s[i], &t, 1, lg[i], false, &err) == ZN_OK;
            CHECK_MSG(ok, "%s: engine %d decode: %s", name, i, err.msg);
            if (ok) tok[i] = argmax(lg[i], gd.n_vocab);
        }
    for (int i = 0; ok && greedy && i < N_SIDE; i++)
        CHECK_MSG(match[i] == NPOS, "%s: engine %d (%s): %d of %d greedy tokens match", name, i, e[i].be->name, match[i], NPOS);
    for (int i = 0; i < n; i++) {
        seq_free(&s[i]);
        engine_free(&e[i]);
        free(lg[i]);
    }
    model_free(&m);
    free(gd.logits);
}

static void test_side_by_side(void) {
    side_by_side("qwen3-dense-f32", F32, true);
    side_by_side("qwen35-dense-q4_k_m", QNT, false);
    side_by_side("llama-moe-q8_0", QNT, false);
}

/* The tuning each engine got is its own. */
static void test_tunings_differ(void) {
    char mpath[512], gpath[512];
    golden_paths("qwen3-dense-f32", mpath, gpath, sizeof mpath);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return;
    }
    zn_engine a, b;
    const zn_engine_opts oa = side_opts(1), ob = side_opts(2);
    CHECK(engine_init(&a, &m, &oa, &err) == ZN_OK);
    CHECK(engine_init(&b, &m, &ob, &err) == ZN_OK);
    zn_tuning ta = {0}, tb = {0};
    CHECK(a.be->tuning && a.be->tuning(a.be_ctx, -1, NULL, &ta, &err) == ZN_OK);
    CHECK(b.be->tuning && b.be->tuning(b.be_ctx, -1, NULL, &tb, &err) == ZN_OK);
    CHECK(strstr(ta.spec, "intdot=on") && strstr(ta.spec, "attn_dec=on"));
    CHECK(strstr(tb.spec, "intdot=off") && strstr(tb.spec, "attn_dec=off") && strstr(tb.spec, "attn_chunk=4,"));
    CHECK_EQ_STR(ta.cls, tb.cls);
    engine_free(&a);
    engine_free(&b);
    model_free(&m);
}

/* Prompts of several sizes (the last row's logits or all rows'), then a
 * prompt of n_pre tokens, decode steps to n_pre + n_dec keys and a 16-token
 * chunk after them; returns
 * the pipelines created after init, -1 on failure. */
static long pipelines_during(const zn_model *m, zn_engine_opts o, int n_pre, int n_dec) {
    zn_engine e;
    zn_seq s;
    zn_err err = {0};
    zn_status st = engine_init(&e, m, &o, &err);
    if (st) {
        CHECK_MSG(false, "%s", err.msg);
        return -1;
    }
    const int n_ctx = (n_pre + n_dec > 64 ? n_pre + n_dec : 64) + 16 + 8;
    int32_t *toks = malloc(sizeof *toks * (size_t)n_ctx);
    float *lg = malloc(sizeof *lg * (size_t)m->hp.n_vocab * 64);
    for (int i = 0; toks && i < n_ctx; i++) toks[i] = (int32_t)((i * 37 + 11) % m->hp.n_vocab);
    st = toks && lg ? seq_init(&s, &e, n_ctx, &err) : ZN_ERR_NOMEM;
    static const int sizes[] = {1, 2, 3, 4, 5, 16, 17, 64};
    for (size_t k = 0; !st && k < sizeof sizes / sizeof *sizes; k++) {
        seq_reset(&s);
        st = engine_decode(&e, &s, toks, sizes[k], lg, k % 2 == 1, &err);
        if (!st && sizes[k] <= 4) st = engine_decode(&e, &s, toks + sizes[k], sizes[k], lg, k % 2 == 0, &err);
    }
    if (!st) seq_reset(&s);
    if (!st && n_pre) st = engine_decode(&e, &s, toks, n_pre, lg, false, &err);
    for (int i = 0; !st && i < n_dec; i++) st = engine_decode(&e, &s, toks + n_pre + i, 1, lg, false, &err);
    /* a prompt chunk after them (a server slot's next chunk, a prefix hit) */
    if (!st) st = engine_decode(&e, &s, toks + n_pre + n_dec, 16, lg, false, &err);
    CHECK_MSG(!st, "%s", err.msg);
    zn_backend_stats bs = {0};
    if (e.be->stats) e.be->stats(e.be_ctx, &bs);
    CHECK_MSG(bs.pipelines > 0, "no pipelines counted");
    if (!st) seq_free(&s);
    engine_free(&e);
    free(toks);
    free(lg);
    return st ? -1 : (long)bs.pipelines_late;
}

/* Fixture `name` into m (false: a failed check) and the options of a
 * one-thread Vulkan engine with the device's tuning into o. */
static bool vk_fixture(const char *name, zn_model *m, zn_engine_opts *o) {
    char mpath[512], gpath[512];
    golden_paths(name, mpath, gpath, sizeof mpath);
    zn_err err = {0};
    if (model_load(m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return false;
    }
    *o = engine_default_opts();
    o->backend = "vulkan";
    o->be.n_threads = 1;
    return true;
}

static void pipelines_case(const char *name, bool all, bool sg) {
    zn_model m;
    zn_engine_opts o;
    if (!vk_fixture(name, &m, &o)) return;
    /* small thresholds: splits from 9 keys, attn_dec.comp from 25 */
    o.be.tune = "attn_chunk=8,attn_dec_min=24";
    long late = pipelines_during(&m, o, 0, 30);
    CHECK_MSG(late == 0, "%s, %s: %ld pipelines created after init", name, o.be.tune, late);
    if (all) {
        /* the device's tuning: decode past its attn_dec_min (256) */
        o.be.tune = NULL;
        late = pipelines_during(&m, o, 250, 10);
        CHECK_MSG(late == 0, "%s, the device's tuning: %ld pipelines created after init", name, late);
        /* attn.comp with splits for single tokens; the mat-vecs of several
         * tokens quantising x in the workgroups (lavapipe's default: after
         * quantx.comp) */
        o.be.tune = "attn_dec=off,attn_chunk=8,mvx_modes=1,mvt=3,mvt_modes=7";
        late = pipelines_during(&m, o, 0, 20);
        CHECK_MSG(late == 0, "%s, %s: %ld pipelines created after init", name, o.be.tune, late);
    }
    /* the f16 GEMM path (emulated) from 2 tokens on, its tile configs by
     * shape; prompts over 20 keys on attn_fa_sg.glsl (emulated): the
     * 64-token one from empty and the 16-token chunk after 12 decoded */
    o.be.tune = "attn_chunk=8,attn_dec_min=24,fa_sg_kv=20";
    o.be.mm_emulate = true;
    late = pipelines_during(&m, o, 0, 12);
    CHECK_MSG(late == 0, "%s, emulated GEMM: %ld pipelines created after init", name, late);
    if (sg) {
        /* attn_fa_sg.glsl (head dim 128) only past the longest step from empty
         * (ZN_STEP_TOKENS): the 16-token chunk after 504 keys */
        char tune[96];
        snprintf(tune, sizeof tune, "attn_chunk=8,attn_dec_min=24,fa_sg_kv=%d", ZN_STEP_TOKENS + 8);
        o.be.tune = tune;
        late = pipelines_during(&m, o, ZN_STEP_TOKENS - 12, 4);
        CHECK_MSG(late == 0, "%s, %s: %ld pipelines created after init", name, tune, late);
    }
    if (all) {
        /* without the init pass the same run creates them: the count is real */
        o.be.lazy_pipelines = true;
        late = pipelines_during(&m, o, 0, 12);
        CHECK_MSG(late > 0, "%s, lazy: %ld pipelines created after init", name, late);
    }
    model_free(&m);
}

static void test_pipelines_at_init(void) {
    pipelines_case("qwen3-dense-q4_k_m", true, false);
    pipelines_case("qwen35-dense-q4_k_m", false, true);
    pipelines_case("llama-moe-q8_0", false, false);
}

/* The barriers of a recorded decode step (zn_backend_stats.step_barriers):
 * what the graph's order and the fusions leave. A Qwen3.5-MoE layer's FFN
 * runs in 3 levels (the router's logits beside the shared expert's
 * gate+up; its down beside the experts' gate+up, which pick the experts
 * themselves: vkop_mm.route; their down with the layer's tail:
 * vkop_mm.tail), a fourth with tuning moe_tail or moe_route off, a fifth
 * with both, one more when the shared expert comes after the routed ones;
 * the bound is what this order gives, printed by zinc bench too. With
 * moe_tail off, a dispatch and a barrier more per layer. */
static void test_step_barriers(void) {
    const char *name = "qwen35moe-moe-q4_k_m";
    zn_model m;
    zn_engine_opts o;
    if (!vk_fixture(name, &m, &o)) return;
    o.be.tune = "moe_tail=on,moe_route=on,mv_conv=on,mv_gnorm=on"; /* off by default */
    zn_err err = {0};
    zn_engine e = {0};
    zn_seq s = {0};
    float *lg = malloc(sizeof(float) * (size_t)m.hp.n_vocab);
    const int32_t toks[3] = {1, 2, 3};
    zn_status st = lg ? engine_init(&e, &m, &o, &err) : ZN_ERR_NOMEM;
    if (!st) st = seq_init(&s, &e, 8, &err);
    for (int i = 0; !st && i < 3; i++) st = engine_decode(&e, &s, toks + i, 1, lg, false, &err);
    CHECK_MSG(!st, "%s: %s", name, err.msg);
    zn_backend_stats bs = {0};
    if (!st && e.be->stats) e.be->stats(e.be_ctx, &bs);
    int rec = 0, att = 0;
    for (int il = 0; il < m.hp.n_layer; il++) rec += m.layers[il].recurrent, att += !m.layers[il].recurrent;
    /* per layer: DeltaNet 3 levels (projections with the conv, delta rule,
     * output with the gated norm in its x) or gated attention 3 (q, k, v; the gate's split and
     * attention, which reads q in the projection and takes the ropes in;
     * output with the gate in its x), then the FFN's 3; the embedding and
     * the output head 3 */
    const uint32_t bound = (uint32_t)(3 * rec + 3 * att + 3 * m.hp.n_layer + 3);
    CHECK_MSG(!st && bs.step_dispatches > 0 && bs.step_barriers <= bound,
              "%s: a decode step of %u dispatches, %u barriers (at most %u: %d DeltaNet layers, %d attention)", name,
              bs.step_dispatches, bs.step_barriers, bound, rec, att);
    if (!st) seq_free(&s);
    if (e.be) engine_free(&e);
    static const char *const apart[2] = {"moe_tail=off,moe_route=on,mv_conv=on,mv_gnorm=on",
                                         "moe_tail=on,moe_route=off,mv_conv=on,mv_gnorm=on"}; /* one apart */
    for (int t = 0; t < 2 && !st; t++) {
        o.be.tune = apart[t];
        zn_backend_stats off = {0};
        st = engine_init(&e, &m, &o, &err);
        if (!st) st = seq_init(&s, &e, 8, &err);
        for (int i = 0; !st && i < 3; i++) st = engine_decode(&e, &s, toks + i, 1, lg, false, &err);
        CHECK_MSG(!st, "%s, %s: %s", name, apart[t], err.msg);
        if (!st && e.be->stats) e.be->stats(e.be_ctx, &off);
        CHECK_MSG(!st && off.step_dispatches == bs.step_dispatches + (uint32_t)m.hp.n_layer &&
                      off.step_barriers == bs.step_barriers + (uint32_t)m.hp.n_layer,
                  "%s: %s: %u dispatches, %u barriers; on: %u, %u", name, apart[t], off.step_dispatches,
                  off.step_barriers, bs.step_dispatches, bs.step_barriers);
        if (!st) seq_free(&s);
        if (e.be) engine_free(&e);
    }
    free(lg);
    model_free(&m);
}

/* Pipelines the driver refuses while a step is recorded (no init pass:
 * pipelines on first use). The MoE tail's: that step runs each down, a
 * barrier and the tail's own dispatch instead, and later steps plan the
 * tail apart; every logit bit for bit as with tuning moe_tail off. All the
 * integer mat-vec's: the experts' gate and up fall back to the routing's
 * own dispatch and a barrier before them too, the DeltaNet output to its
 * gated norm's, every matmul to the float kernel; as with intdot off. On the qwen35moe fixture (shared expert) and
 * the llama one (none). */
static void moe_refused_case(const char *name, uint64_t refuse, const char *same_as) {
    zn_model m;
    zn_engine_opts o[2];
    if (!vk_fixture(name, &m, &o[0])) return;
    o[1] = o[0];
    o[0].be.tune = same_as;
    o[1].be.tune = "moe_tail=on,moe_route=on,mv_conv=on,mv_gnorm=on"; /* off by default */
    o[1].be.lazy_pipelines = true;
    o[1].be.refuse_kinds = refuse;
    enum { N = 8 };
    const int V = m.hp.n_vocab;
    float *lg[2] = {malloc(sizeof(float) * N * (size_t)V), malloc(sizeof(float) * N * (size_t)V)};
    const int32_t toks[N] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint32_t disp[2] = {0};
    for (int k = 0; k < 2; k++) {
        zn_err err = {0};
        zn_engine e = {0};
        zn_seq s = {0};
        zn_status st = lg[k] ? engine_init(&e, &m, &o[k], &err) : ZN_ERR_NOMEM;
        if (!st) st = seq_init(&s, &e, 16, &err);
        /* a first step of one token (every fusion planned, the refusals met
         * while it is recorded), one of three, then one token at a time */
        if (!st) st = engine_decode(&e, &s, toks, 1, lg[k], false, &err);
        if (!st) st = engine_decode(&e, &s, toks + 1, 3, lg[k] + (size_t)V, true, &err);
        for (int i = 4; !st && i < N; i++) st = engine_decode(&e, &s, toks + i, 1, lg[k] + (size_t)i * V, false, &err);
        CHECK_MSG(!st, "%s [%s]: %s", name, k ? "refused" : same_as, err.msg);
        zn_backend_stats bs = {0};
        if (!st && e.be->stats) e.be->stats(e.be_ctx, &bs);
        disp[k] = bs.step_dispatches;
        if (!st) seq_free(&s);
        if (e.be) engine_free(&e);
    }
    CHECK_MSG(disp[0] > 0 && disp[1] == disp[0], "%s: %u dispatches a step refused, %u with %s", name, disp[1],
              disp[0], same_as);
    CHECK_MSG(lg[0] && lg[1] && !memcmp(lg[0], lg[1], sizeof(float) * N * (size_t)V),
              "%s: the logits with pipelines refused differ from %s's", name, same_as);
    free(lg[0]);
    free(lg[1]);
    model_free(&m);
}

static void test_moe_refused(void) {
    const uint64_t integer = 1ull << VKO_QUANTX | 1ull << VKO_MATVEC_Q | 1ull << VKO_MATVEC_QT | 1ull << VKO_MMI8 |
                             1ull << VKO_MATVEC_QX_S | 1ull << VKO_MATVEC_QX_M | 1ull << VKO_MATVEC_QX_L |
                             1ull << VKO_MATVEC_QXB_S | 1ull << VKO_MATVEC_QXB_M | 1ull << VKO_MATVEC_QXB_L |
                             1ull << VKO_MATVEC_QTX_S | 1ull << VKO_MATVEC_QTX_L | 1ull << VKO_MATVEC_QXK;
    const char *names[2] = {"qwen35moe-moe-q4_k_m", "llama-moe-q8_0"};
    for (int i = 0; i < 2; i++) {
        moe_refused_case(names[i], 1ull << VKO_MATVEC_QXK, "moe_tail=off,moe_route=on,mv_conv=on,mv_gnorm=on");
        moe_refused_case(names[i], integer, "intdot=off,moe_tail=on,moe_route=on,mv_conv=on,mv_gnorm=on");
    }
}

/* Decode attention taking in the ropes before it (tuning attn_rope,
 * attn_rope.glsl) against the rope dispatches, on the same prompts and
 * tokens: on attn.comp and attn_dec.comp, split and unsplit, for one
 * sequence and for a step of three (batched, or per sequence where the
 * splits forbid a batch); with per-head norms and without, NEOX and NORM
 * rotation, IMRoPE with partial rotation (qwen35's gated attention). Each
 * attention layer runs its two ropes' dispatches fewer (qwen35 its q
 * gather too) and a level fewer; the logits differ only by the norms'
 * summation order. */
#define AR_SEQS 3
#define AR_DEC 6

static void attn_rope_case(const char *name, const char *tune) {
    zn_model m;
    zn_engine_opts o;
    if (!vk_fixture(name, &m, &o)) return;
    const int V = m.hp.n_vocab;
    int n_att = 0;
    for (int il = 0; il < m.hp.n_layer; il++) n_att += !m.layers[il].recurrent;
    float *lg[2] = {malloc(sizeof(float) * AR_SEQS * AR_DEC * (size_t)V), malloc(sizeof(float) * AR_SEQS * AR_DEC * (size_t)V)};
    /* dispatches of a one-sequence and a three-sequence decode step, the
     * one-sequence step's barriers */
    uint32_t one[2] = {0}, many[2] = {0}, bar[2] = {0};
    /* qwen35's q heads, gathered from the [q | gate] projection by a
     * COPY_COLS, are read there: a third dispatch fewer */
    const uint32_t fewer = (uint32_t)n_att * (m.arch == ZN_ARCH_QWEN35 || m.arch == ZN_ARCH_QWEN35MOE ? 3u : 2u);
    int32_t tok[AR_SEQS][32];
    for (int q = 0; q < AR_SEQS; q++)
        for (int i = 0; i < 32; i++) tok[q][i] = (int32_t)((7 * i + 13 * q + 1) % V);
    zn_err err = {0};
    bool ok = lg[0] && lg[1];
    for (int f = 0; f < 2 && ok; f++) {
        char spec[160];
        snprintf(spec, sizeof spec, "%s%sattn_rope=%s", tune, *tune ? "," : "", f ? "off" : "on");
        o.be.tune = spec;
        zn_engine e;
        zn_seq s[AR_SEQS];
        memset(s, 0, sizeof s);
        ok = engine_init(&e, &m, &o, &err) == ZN_OK;
        const int pre[AR_SEQS] = {3, 9, 17};
        for (int q = 0; ok && q < AR_SEQS; q++)
            ok = seq_init(&s[q], &e, 32, &err) == ZN_OK && engine_decode(&e, &s[q], tok[q], pre[q], NULL, false, &err) == ZN_OK;
        zn_backend_stats bs = {0};
        for (int k = 0; ok && k < AR_DEC; k++) {
            if (k < AR_DEC / 2) /* each sequence alone */
                for (int q = 0; ok && q < AR_SEQS; q++)
                    ok = engine_decode(&e, &s[q], tok[q] + pre[q] + k, 1, lg[f] + ((size_t)q * AR_DEC + (size_t)k) * (size_t)V,
                                       false, &err) == ZN_OK;
            else {
                zn_step_item it[AR_SEQS];
                for (int q = 0; q < AR_SEQS; q++)
                    it[q] = (zn_step_item){.seq = &s[q], .tokens = tok[q] + pre[q] + k, .n = 1,
                                           .logits = lg[f] + ((size_t)q * AR_DEC + (size_t)k) * (size_t)V};
                ok = engine_step(&e, it, AR_SEQS, &err) == ZN_OK;
            }
            if (ok && (k == 0 || k == AR_DEC / 2)) {
                e.be->stats(e.be_ctx, &bs);
                (k ? many : one)[f] = bs.step_dispatches;
                if (!k) bar[f] = bs.step_barriers;
            }
        }
        CHECK_MSG(ok, "%s, %s: %s", name, spec, err.msg);
        for (int q = 0; q < AR_SEQS; q++) seq_free(&s[q]);
        if (e.be) engine_free(&e);
    }
    if (ok) {
        double worst = 0;
        for (int r = 0; r < AR_SEQS * AR_DEC; r++) {
            const double d = nmse(lg[0] + (size_t)r * (size_t)V, lg[1] + (size_t)r * (size_t)V, V);
            worst = d > worst ? d : worst;
        }
        CHECK_MSG(worst <= 1e-8, "%s, %s: worst decode nmse %.3g taking the ropes in", name, tune, worst);
        CHECK_MSG(one[1] - one[0] == fewer && many[1] - many[0] >= fewer && bar[1] - bar[0] >= (uint32_t)n_att,
                  "%s, %s: %u / %u dispatches and %u barriers of a decode step with the ropes taken in, %u / %u and %u "
                  "without (%d attention layers)",
                  name, tune, one[0], many[0], bar[0], one[1], many[1], bar[1], n_att);
    }
    free(lg[0]);
    free(lg[1]);
    model_free(&m);
}

static void test_attn_rope(void) {
    static const char *const fixtures[] = {"qwen3-dense-f32", "llama-dense-f32", "qwen35-dense-f32", "qwen2-dense-q8_0",
                                           "qwen3moe-moe-q8_0"};
    static const char *const tunes[] = {"", "attn_dec=off,attn_chunk=4", "attn_dec_min=0", "attn_dec_min=0,attn_chunk=8"};
    for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++)
        for (size_t t = 0; t < sizeof tunes / sizeof *tunes; t++) attn_rope_case(fixtures[i], tunes[t]);
}

/* engine_next (zinc bench's and the CLI's decode steps): the logits of
 * engine_decode, bit for bit, on both backends; on Vulkan in place in the
 * backend's host memory (no copy), so at != the caller's buffer. */
static void next_case(const char *backend) {
    char mpath[512], gpath[512];
    golden_paths("qwen35-dense-q8_0", mpath, gpath, sizeof mpath);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, mpath, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return;
    }
    zn_engine_opts o = engine_default_opts();
    o.backend = backend;
    o.be.n_threads = 2;
    zn_engine e;
    zn_seq a = {0}, b = {0};
    const int nv = m.hp.n_vocab;
    float *la = malloc(sizeof(float) * (size_t)nv), *lb = malloc(sizeof(float) * (size_t)nv);
    const int32_t prompt[6] = {1, 17, 23, 5, 99, 3}; /* the fixtures' vocabulary: 128 */
    const bool up = la && lb && engine_init(&e, &m, &o, &err) == ZN_OK;
    bool ok = up && seq_init(&a, &e, 64, &err) == ZN_OK && seq_init(&b, &e, 64, &err) == ZN_OK;
    for (int i = 0; ok && i < 2; i++) ok = engine_decode(&e, i ? &b : &a, prompt, 6, NULL, false, &err) == ZN_OK;
    CHECK_MSG(ok, "%s: %s", backend, err.msg);
    int32_t t = 7;
    for (int k = 0; ok && k < 6; k++) {
        const float *at = NULL;
        ok = engine_decode(&e, &a, &t, 1, la, false, &err) == ZN_OK && engine_next(&e, &b, t, lb, &at, &err) == ZN_OK;
        CHECK_MSG(ok, "%s: step %d: %s", backend, k, err.msg);
        if (!ok) break;
        CHECK_MSG(at && !memcmp(at, la, sizeof(float) * (size_t)nv), "%s: step %d: other logits", backend, k);
        if (!strcmp(backend, "vulkan")) CHECK_MSG(at != lb, "step %d: the logits were copied", k);
        t = (int32_t)argmax(la, nv);
    }
    seq_free(&a);
    seq_free(&b);
    if (up) engine_free(&e);
    free(la);
    free(lb);
    model_free(&m);
}

static void test_next_in_place(void) {
    next_case("cpu");
    next_case("vulkan");
}

int main(void) {
    zn_device_info d[16];
    int n = 0, def = -1;
    zn_err err = {0};
    if (zn_backend_vulkan.devices(d, 16, &n, &def, &err) || def < 0 || !d[def].usable) {
        char why[sizeof err.msg + 32];
        snprintf(why, sizeof why, "no usable Vulkan device: %s", err.msg);
        harness_skip_suite("vk_engines", why);
        return harness_report("vk_engines");
    }
    RUN(test_side_by_side);
    RUN(test_tunings_differ);
    RUN(test_pipelines_at_init);
    RUN(test_step_barriers);
    RUN(test_moe_refused);
    RUN(test_attn_rope);
    RUN(test_next_in_place);
    return harness_report("vk_engines");
}
