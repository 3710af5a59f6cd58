/* Batched engine steps on the Vulkan backend (issue 14): for every tiny
 * fixture, the plan of batch_check.h (prompt chunks and decode tokens in
 * one step, sequences joining and leaving, a slot reused after a reset)
 * through engine_step on Vulkan, where a step of several sequences is one
 * forward (matmuls over all its rows, attention / KV / conv / delta state
 * per sequence, or once for all where each sequence decodes one token). Each logits row a batched step returns must match
 *  - the same sequence run alone on Vulkan (engine_decode), and
 *  - the same row of the same plan batched on the CPU backend
 * within the golden tests' bounds (NMSE 1e-5 F32, 1e-4 F16/BF16, 1e-3
 * quantized). Not bit for bit: a batch of more rows takes other kernels
 * (GEMM instead of mat-vec). No pipeline may be created during the steps
 * (all at init), and a one-sequence decode step between batched ones is
 * still the replayed recording. One fixture again on the f16 GEMM path
 * (emulated cooperative matrices) from 2 rows on, three with split-K
 * attention from the first keys on. Then batched decode steps (every
 * sequence one token) at different positions against each sequence alone,
 * and many of them in a row, replayed (one recording resubmitted while the
 * sequences stay the same), across split counts, kernel changes, a
 * sequence leaving and one joining, bit for bit against recording each
 * step anew. About 5 minutes on lavapipe. No Vulkan
 * device: the suite is skipped. */
#include <dirent.h>

#include "batch_check.h"
#include "vk_absent.h"

static double bound_for(const char *name) {
    if (strstr(name, "-f32")) return 1e-5;
    if (strstr(name, "-f16") || strstr(name, "-bf16")) return 1e-4;
    return 1e-3;
}

static const bc_hooks keep = {NULL, NULL, true};

/* The plan on an engine of backend `backend` with options o; r.got kept. */
static bool run_on(const zn_model *m, const char *name, const char *backend, zn_backend_opts o, bc_result *r,
                   zn_backend_stats *stats) {
    zn_engine e;
    zn_err err = {0};
    zn_engine_opts eo = {.backend = backend, .be = o};
    eo.be.n_threads = 2;
    if (engine_init(&e, m, &eo, &err) != ZN_OK) {
        CHECK_MSG(0, "%s (%s): %s", name, backend, err.msg);
        return false;
    }
    CHECK_MSG(!strcmp(backend, "cpu") || e.be->multi_seq, "%s: the %s backend runs steps item by item", name, backend);
    const bool ok = bc_run(&e, &keep, r);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        if (e.be->stats) e.be->stats(e.be_ctx, stats);
    }
    engine_free(&e);
    return ok;
}

static void check_fixture_with(const char *dir, const char *name, zn_backend_opts o, const char *what) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    const int V = m.hp.n_vocab;
    const double bound = bound_for(name);
    bc_result cpu, vk;
    zn_backend_stats st;
    memset(&cpu, 0, sizeof cpu);
    memset(&vk, 0, sizeof vk);
    if (run_on(&m, name, "cpu", backend_default_opts(), &cpu, NULL) && run_on(&m, name, "vulkan", o, &vk, &st)) {
        CHECK_MSG(vk.worst <= bound, "%s%s: worst row NMSE %.3g > %.0e against the sequence alone on Vulkan", name,
                  what, vk.worst, bound);
        CHECK_MSG(vk.compared >= 80, "%s%s: only %ld rows compared", name, what, vk.compared);
        CHECK_MSG(vk.multi_steps >= 10 && vk.mixed_steps >= 5 && vk.in_place > 0, "%s%s: %d steps of several sequences, %d mixed, %d logits in place", name,
                  what, vk.multi_steps, vk.mixed_steps, vk.in_place);
        CHECK_MSG(!memcmp(vk.have, cpu.have, sizeof vk.have), "%s%s: the backends returned different rows", name, what);
        double worst_cpu = 0;
        long n_cpu = 0;
        for (int q = 0; q < BC_SEQS; q++)
            for (int i = 0; i < BC_MAX_LEN; i++) {
                if (!vk.have[q][i] || !cpu.have[q][i]) continue;
                const size_t off = ((size_t)q * BC_MAX_LEN + i) * (size_t)V;
                const double d = bc_nmse(vk.got + off, cpu.got + off, V);
                worst_cpu = d > worst_cpu ? d : worst_cpu;
                n_cpu++;
            }
        CHECK_MSG(n_cpu == vk.compared, "%s%s: %ld of %ld rows compared with the CPU", name, what, n_cpu, vk.compared);
        CHECK_MSG(worst_cpu <= bound, "%s%s: worst row NMSE %.3g > %.0e against the CPU batched", name, what,
                  worst_cpu, bound);
        /* the plan's last steps decode one sequence alone: replayed after the first */
        CHECK_MSG(st.replayed >= 1, "%s%s: no decode step replayed (%llu one-token steps)", name, what,
                  (unsigned long long)st.steps);
        CHECK_MSG(st.pipelines_late == 0, "%s%s: %llu pipelines created after init", name, what,
                  (unsigned long long)st.pipelines_late);
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-26s%s %ld rows, nmse %.3g vs alone, %.3g vs cpu, %d multi / %d mixed, %llu/%llu replayed\n",
                    name, what, vk.compared, vk.worst, worst_cpu, vk.multi_steps, vk.mixed_steps,
                    (unsigned long long)st.replayed, (unsigned long long)st.steps);
    }
    free(cpu.got);
    free(vk.got);
    model_free(&m);
}

static int tested;

static void test_all_fixtures(void) {
    const char *dir = shared_path("models/tiny");
    char dbuf[512];
    snprintf(dbuf, sizeof dbuf, "%s", dir);
    DIR *d = opendir(dbuf);
    CHECK_MSG(d != NULL, "cannot list %s", dbuf);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        char name[256];
        size_t n = strlen(ent->d_name);
        if (n < 6 || n >= sizeof name || strcmp(ent->d_name + n - 5, ".gguf")) continue;
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), ent->d_name);
        check_fixture_with(dbuf, name, backend_default_opts(), "");
        tested++;
    }
    closedir(d);
    CHECK_MSG(tested >= 30, "only %d fixtures tested", tested);
}

/* Batched steps on the f16 GEMM path from 2 rows on: a hybrid MoE model
 * (its attention and shared-expert projections dense GEMMs, its experts
 * the grouped GEMM). */
static void test_gemm_path(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", shared_path("models/tiny"));
    zn_backend_opts o = backend_default_opts();
    o.mm_emulate = true;
    check_fixture_with(dir, "qwen35moe-moe-q4_k_m", o, " (gemm)");
    o.tune = "mm_prep_tok=1,moe_prep_tok=1"; /* the weights dequantised into the scratch first, not in the tile loads */
    check_fixture_with(dir, "qwen35moe-moe-q4_k_m", o, " (gemm, prep)");
}

/* Split-K attention (flash-decoding) in batched steps: chunks of 4 keys
 * from the first position on, so the decode tokens and the short chunks
 * (up to ZN_VK_ATTN_SPLIT_TOK rows) of several sequences split their
 * keys, one after the other through the one partials scratch; on
 * attn_dec.comp, and on attn.comp (single tokens). */
static void test_split_attention(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", shared_path("models/tiny"));
    zn_backend_opts o = backend_default_opts();
    o.tune = "attn_chunk=4,attn_dec_min=0";
    check_fixture_with(dir, "llama-dense-f32", o, " (split)");
    check_fixture_with(dir, "qwen35moe-moe-q8_0", o, " (split)");
    o.tune = "attn_dec=0,attn_chunk=4";
    check_fixture_with(dir, "qwen3-dense-f32", o, " (split, attn.comp)");
}

/* The tiny fixture `name` into m; false (reported) when it does not load. */
static bool load_tiny(const char *name, zn_model *m) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", shared_path("models/tiny"), name);
    zn_err err = {0};
    if (model_load(m, path, &err) == ZN_OK) return true;
    CHECK_MSG(0, "%s", err.msg);
    return false;
}

/* Batched decode (vk_record.c batch_step): a step where every sequence
 * decodes one token runs rope (with the norm before it and the KV store
 * after it), the KV store, attention, the DeltaNet conv and delta rule
 * once for all its sequences,
 * through the sequence tables, rather than once per sequence. Here
 * BD_SEQS sequences at different positions, three past t.attn_dec_min
 * (256) keys, decode BD_STEPS tokens together; each step's row of each
 * sequence must match the same sequence decoding alone (a copy of its
 * state, one engine_decode per token) within the bounds above, and every
 * such step must have taken that path (zn_backend_stats.batched). */
#define BD_SEQS 8
#define BD_STEPS 4
#define BD_CTX 320
static const int bd_prompt[BD_SEQS] = {1, 9, 40, 64, 130, 255, 262, 300};

static void check_batched_decode(const char *name, zn_backend_opts o, const char *what) {
    zn_model m;
    zn_err err = {0};
    if (!load_tiny(name, &m)) return;
    zn_engine e;
    zn_engine_opts eo = {.backend = "vulkan", .be = o};
    if (engine_init(&e, &m, &eo, &err) != ZN_OK) {
        CHECK_MSG(0, "%s%s: %s", name, what, err.msg);
        model_free(&m);
        return;
    }
    const int V = m.hp.n_vocab;
    const double bound = bound_for(name);
    float *got = malloc(sizeof *got * (size_t)BD_SEQS * BD_STEPS * (size_t)V);
    float *solo = malloc(sizeof *solo * (size_t)BD_SEQS * BD_STEPS * (size_t)V);
    static int32_t tok[BD_SEQS][BD_CTX];
    zn_seq a[BD_SEQS], b[BD_SEQS];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    bool ok = got && solo;
    /* the same prompt in a (batched next) and b (alone next) */
    for (int q = 0; ok && q < BD_SEQS; q++) {
        for (int i = 0; i < BD_CTX; i++) tok[q][i] = bc_token(q + BC_SEQS, i, V);
        ok = seq_init(&a[q], &e, BD_CTX, &err) == ZN_OK && seq_init(&b[q], &e, BD_CTX, &err) == ZN_OK &&
             engine_decode(&e, &a[q], tok[q], bd_prompt[q], NULL, false, &err) == ZN_OK &&
             seq_copy(&b[q], &a[q], bd_prompt[q], &err) == ZN_OK;
    }
    zn_backend_stats s0 = {0}, s1 = {0};
    if (ok) e.be->stats(e.be_ctx, &s0);
    for (int k = 0; ok && k < BD_STEPS; k++) {
        zn_step_item items[BD_SEQS];
        for (int q = 0; q < BD_SEQS; q++)
            items[q] = (zn_step_item){.seq = &a[q], .tokens = tok[q] + bd_prompt[q] + k, .n = 1,
                                      .logits = got + ((size_t)q * BD_STEPS + (size_t)k) * (size_t)V};
        ok = engine_step(&e, items, BD_SEQS, &err) == ZN_OK;
    }
    if (ok) e.be->stats(e.be_ctx, &s1);
    for (int q = 0; ok && q < BD_SEQS; q++)
        for (int k = 0; ok && k < BD_STEPS; k++)
            ok = engine_decode(&e, &b[q], tok[q] + bd_prompt[q] + k, 1,
                               solo + ((size_t)q * BD_STEPS + (size_t)k) * (size_t)V, false, &err) == ZN_OK;
    CHECK_MSG(ok, "%s%s: %s", name, what, err.msg);
    if (ok) {
        CHECK_MSG(s1.batched - s0.batched == BD_STEPS, "%s%s: %llu of %d steps batched", name, what,
                  (unsigned long long)(s1.batched - s0.batched), BD_STEPS);
        CHECK_MSG(s1.pipelines_late == 0, "%s%s: %llu pipelines created after init", name, what,
                  (unsigned long long)s1.pipelines_late);
        double worst = 0;
        int worst_q = 0;
        for (int q = 0; q < BD_SEQS; q++)
            for (int k = 0; k < BD_STEPS; k++) {
                const size_t off = ((size_t)q * BD_STEPS + (size_t)k) * (size_t)V;
                const double d = bc_nmse(got + off, solo + off, V);
                if (d > worst) worst = d, worst_q = q;
            }
        CHECK_MSG(worst <= bound, "%s%s: worst row NMSE %.3g > %.0e (the sequence at %d) against it alone", name,
                  what, worst, bound, bd_prompt[worst_q]);
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-26s%s batched decode: %d x %d rows, nmse %.3g vs alone\n", name, what, BD_SEQS,
                    BD_STEPS, worst);
    }
    for (int q = 0; q < BD_SEQS; q++) {
        seq_free(&a[q]);
        seq_free(&b[q]);
    }
    free(got);
    free(solo);
    engine_free(&e);
    model_free(&m);
}

/* Dense llama / qwen2 / qwen3 (per-head norm fused into rope), the qwen35
 * hybrids (gated attention between DeltaNet layers, whose conv and delta
 * states are in the tables too), a quantized one; on attn_dec.comp (the
 * default past 256 keys), on attn.comp (attn_dec=0), with the Q8_0 and
 * the Q4_0 cache (rope, then kv_store.comp, attn.comp on blocks; head dims
 * 128 and 64 among them), the quantized one's mat-vecs at other tokens
 * per workgroup (tuning mvt), and its matmuls on the int8 and the split-K
 * f16 GEMM. */
static void test_batched_decode(void) {
    static const char *const dense[] = {"llama-dense-f32", "qwen2-dense-f32", "qwen3-dense-f32", "qwen35-dense-f32",
                                        "qwen3-dense-q4_k_m", "qwen35moe-moe-q8_0"};
    zn_backend_opts o = backend_default_opts();
    for (size_t i = 0; i < sizeof dense / sizeof *dense; i++) check_batched_decode(dense[i], o, "");
    o.tune = "attn_dec=0";
    check_batched_decode("qwen3-dense-f32", o, " (attn.comp)");
    check_batched_decode("qwen35-dense-f32", o, " (attn.comp)");
    o = backend_default_opts();
    o.kv_type = ZN_KV_Q8_0;
    check_batched_decode("llama-dense-f32", o, " (q8_0 cache)");
    check_batched_decode("qwen35-dense-f32", o, " (q8_0 cache)");
    o.kv_type = ZN_KV_Q4_0;
    check_batched_decode("qwen3-dense-f32", o, " (q4_0 cache)");
    check_batched_decode("qwen35-dense-f32", o, " (q4_0 cache)");
    o.kv_type = ZN_KV_Q4_0R; /* kv_rot.comp on K, V, the queries and the output of every sequence's rows */
    check_batched_decode("llama-dense-f32", o, " (q4_0r cache)");
    o.kv_type = ZN_KV_Q3_0R; /* the same, into 3-bit blocks */
    check_batched_decode("qwen35-dense-f32", o, " (q3_0r cache)");
    /* the integer mat-vec over the step's 8 rows: 3 groups of up to 3
     * tokens per workgroup, x quantised in the workgroups (the default on
     * lavapipe: by quantx.comp first); and a token per workgroup */
    o = backend_default_opts();
    o.tune = "mvt=3,mvt_modes=7";
    check_batched_decode("qwen3-dense-q4_k_m", o, " (mvt 3, x in the workgroups)");
    o.tune = "mvt=1";
    check_batched_decode("qwen3-dense-q4_k_m", o, " (mvt 1)");
    /* the Q4_K matmuls of 2+ rows on the int8 GEMM (mmi8.comp), 16 tokens
     * per workgroup (the step's 8 rows: one partial token tile) */
    o.tune = "mmi_min_tok=2,mmi_bn=16";
    check_batched_decode("qwen3-dense-q4_k_m", o, " (int8 GEMM)");
    /* every matmul of 2+ rows on the f16 GEMM with k split in ranges of
     * 32 (vk_gemm.c mm_split; mm_reduce.comp sums them) */
    o = backend_default_opts();
    o.mm_emulate = true; /* lavapipe: the f16 GEMM emulated, from 2 tokens on */
    o.tune = "mm_min_rows=0,mm_split_wgs=4096,mm_split_k=32";
    check_batched_decode("qwen3-dense-q4_k_m", o, " (split-K GEMM)");
    check_batched_decode("qwen35-dense-q8_0", o, " (split-K GEMM)");
}

/* A batched decode step's DeltaNet convs run in their projections'
 * mat-vecs, each token's state through the sequence table (tuning
 * mv_conv): a dispatch fewer per DeltaNet layer than with mv_conv off, and
 * every logit bit for bit the same (the conv's arithmetic is kept), over
 * two steps of three sequences at different positions. */
static void test_batched_conv(void) {
    enum { NS = 3, STEPS = 2, CTX = 16 };
    zn_model m;
    zn_err err = {0};
    if (!load_tiny("qwen35-dense-q4_k_m", &m)) return;
    const int V = m.hp.n_vocab;
    int rec = 0;
    for (int il = 0; il < m.hp.n_layer; il++) rec += m.layers[il].recurrent;
    float *lg[2] = {malloc(sizeof(float) * NS * STEPS * (size_t)V), malloc(sizeof(float) * NS * STEPS * (size_t)V)};
    uint32_t disp[2] = {0};
    for (int k = 0; k < 2; k++) {
        zn_engine e;
        zn_engine_opts eo = {.backend = "vulkan", .be = backend_default_opts()};
        eo.be.tune = k ? "mv_conv=off" : "mv_conv=on";
        bool ok = lg[k] && engine_init(&e, &m, &eo, &err) == ZN_OK;
        CHECK_MSG(ok, "%s", err.msg);
        if (!ok) continue;
        zn_seq s[NS];
        memset(s, 0, sizeof s);
        int32_t tok[NS][CTX];
        for (int q = 0; ok && q < NS; q++) {
            for (int i = 0; i < CTX; i++) tok[q][i] = bc_token(q, i, V);
            ok = seq_init(&s[q], &e, CTX, &err) == ZN_OK && engine_decode(&e, &s[q], tok[q], 2 + 3 * q, NULL, false, &err) == ZN_OK;
        }
        for (int st = 0; ok && st < STEPS; st++) {
            zn_step_item items[NS];
            for (int q = 0; q < NS; q++)
                items[q] = (zn_step_item){.seq = &s[q], .tokens = tok[q] + 2 + 3 * q + st, .n = 1,
                                          .logits = lg[k] + ((size_t)st * NS + (size_t)q) * (size_t)V};
            ok = engine_step(&e, items, NS, &err) == ZN_OK;
        }
        CHECK_MSG(ok, "mv_conv %s: %s", k ? "off" : "on", err.msg);
        zn_backend_stats bs = {0};
        if (ok) e.be->stats(e.be_ctx, &bs);
        disp[k] = bs.step_dispatches;
        for (int q = 0; q < NS; q++) seq_free(&s[q]);
        engine_free(&e);
    }
    CHECK_MSG(rec > 0 && disp[0] > 0 && disp[1] == disp[0] + (uint32_t)rec,
              "a batched step: %u dispatches with mv_conv, %u without (%d DeltaNet layers)", disp[0], disp[1], rec);
    CHECK_MSG(lg[0] && lg[1] && !memcmp(lg[0], lg[1], sizeof(float) * NS * STEPS * (size_t)V),
              "batched steps' logits differ with mv_conv on and off");
    free(lg[0]);
    free(lg[1]);
    model_free(&m);
}

/* Replayed batched decode (vk_replay.h): RD_STEPS consecutive decode
 * steps of up to five sequences at different positions, one leaving at
 * step RD_LEAVE (freed) and another joining at RD_JOIN (prompt alone
 * first, then second in the step's order). A decode step whose key is the
 * last one's (the same sequences in the same order, graph and attention
 * shapes) resubmits its recording with only the token ids and positions
 * rewritten. Every row must be bit for bit the row of an engine that
 * records every step anew (opts.no_replay: the same schedule), and within
 * the bounds above of the same sequence decoding alone (a copy of its
 * state after its prompt, one engine_decode per token); the replaying
 * engine's counters must show exactly the expected steps replayed (the
 * other one none). */
#define RD_SLOTS 6
#define RD_STEPS 40
#define RD_CTX 80
#define RD_LEAVER 2
#define RD_LEAVE 12
#define RD_JOINER 5
#define RD_JOIN 20
static const int rd_prompt[RD_SLOTS] = {2, 3, 6, 8, 4, 20};
static const int rd_order[RD_SLOTS] = {0, RD_JOINER, 1, 2, 3, 4};

static bool rd_live(int q, int k) {
    return q == RD_LEAVER ? k < RD_LEAVE : q == RD_JOINER ? k >= RD_JOIN : true;
}

/* Sequence q's token at step k (its prompt before). */
static const int32_t *rd_tok(int32_t (*tok)[RD_CTX], int q, int k) {
    return tok[q] + rd_prompt[q] + k - (q == RD_JOINER ? RD_JOIN : 0);
}

/* q's prompt into a[q], and a copy of its state into alone[q] (NULL: none). */
static bool rd_prefill(zn_engine *e, zn_seq *a, zn_seq *alone, int32_t (*tok)[RD_CTX], int q, zn_err *err) {
    return seq_init(&a[q], e, RD_CTX, err) == ZN_OK &&
           engine_decode(e, &a[q], tok[q], rd_prompt[q], NULL, false, err) == ZN_OK &&
           (!alone || (seq_init(&alone[q], e, RD_CTX, err) == ZN_OK &&
                       seq_copy(&alone[q], &a[q], rd_prompt[q], err) == ZN_OK));
}

/* The schedule on e: every row into got[q][k]; the counters of its decode
 * steps into *d. */
static bool rd_schedule(zn_engine *e, int32_t (*tok)[RD_CTX], float *got, zn_seq *alone, zn_backend_stats *d,
                        zn_err *err) {
    const int V = e->model->hp.n_vocab;
    zn_seq a[RD_SLOTS];
    memset(a, 0, sizeof a);
    bool ok = true;
    for (int q = 0; ok && q < RD_SLOTS; q++)
        if (q != RD_JOINER) ok = rd_prefill(e, a, alone, tok, q, err);
    zn_backend_stats s0 = {0}, s1 = {0};
    if (ok) e->be->stats(e->be_ctx, &s0);
    for (int k = 0; ok && k < RD_STEPS; k++) {
        if (k == RD_LEAVE) seq_free(&a[RD_LEAVER]);
        if (k == RD_JOIN) ok = rd_prefill(e, a, alone, tok, RD_JOINER, err);
        zn_step_item items[RD_SLOTS];
        int n = 0;
        for (int i = 0; i < RD_SLOTS; i++) {
            const int q = rd_order[i];
            if (rd_live(q, k))
                items[n++] = (zn_step_item){.seq = &a[q], .tokens = rd_tok(tok, q, k), .n = 1,
                                            .logits = got + ((size_t)q * RD_STEPS + (size_t)k) * (size_t)V};
        }
        if (ok) ok = engine_step(e, items, n, err) == ZN_OK;
    }
    if (ok) e->be->stats(e->be_ctx, &s1);
    *d = (zn_backend_stats){.steps = s1.steps - s0.steps, .replayed = s1.replayed - s0.replayed,
                            .batched = s1.batched - s0.batched, .pipelines_late = s1.pipelines_late};
    for (int q = 0; q < RD_SLOTS; q++) seq_free(&a[q]);
    return ok;
}

static void check_replayed_decode(const char *name, const char *tune, int replayed, const char *what) {
    zn_model m;
    zn_err err = {0};
    if (!load_tiny(name, &m)) return;
    zn_engine e[2]; /* [0] replays, [1] records every step */
    bool up[2] = {false, false};
    for (int i = 0; i < 2; i++) {
        zn_engine_opts eo = {.backend = "vulkan", .be = backend_default_opts()};
        eo.be.tune = tune;
        eo.be.no_replay = i == 1;
        up[i] = engine_init(&e[i], &m, &eo, &err) == ZN_OK;
        CHECK_MSG(up[i], "%s%s: %s", name, what, err.msg);
    }
    const int V = m.hp.n_vocab;
    const size_t rows = (size_t)RD_SLOTS * RD_STEPS * (size_t)V;
    float *got[2] = {calloc(rows, sizeof(float)), calloc(rows, sizeof(float))};
    float *solo = malloc(sizeof *solo * (size_t)V);
    static int32_t tok[RD_SLOTS][RD_CTX];
    for (int q = 0; q < RD_SLOTS; q++)
        for (int i = 0; i < RD_CTX; i++) tok[q][i] = bc_token(q + 2 * BC_SEQS, i, V);
    zn_seq alone[RD_SLOTS];
    memset(alone, 0, sizeof alone);
    zn_backend_stats d[2];
    bool ok = up[0] && up[1] && got[0] && got[1] && solo && rd_schedule(&e[0], tok, got[0], alone, &d[0], &err) &&
              rd_schedule(&e[1], tok, got[1], NULL, &d[1], &err);
    double worst = 0;
    int differ = 0, compared = 0;
    for (int q = 0; ok && q < RD_SLOTS; q++)
        for (int k = 0; ok && k < RD_STEPS; k++) {
            if (!rd_live(q, k)) continue;
            ok = engine_decode(&e[0], &alone[q], rd_tok(tok, q, k), 1, solo, false, &err) == ZN_OK;
            const size_t off = ((size_t)q * RD_STEPS + (size_t)k) * (size_t)V;
            const double nm = bc_nmse(got[0] + off, solo, V);
            worst = nm > worst ? nm : worst;
            differ += memcmp(got[0] + off, got[1] + off, sizeof(float) * (size_t)V) != 0;
            compared++;
        }
    CHECK_MSG(ok, "%s%s: %s", name, what, err.msg);
    if (ok) {
        const double bound = bound_for(name);
        CHECK_MSG(differ == 0, "%s%s: %d of %d rows differ from the engine that records every step", name, what,
                  differ, compared);
        CHECK_MSG(worst <= bound, "%s%s: worst row NMSE %.3g > %.0e against the sequence alone", name, what, worst,
                  bound);
        CHECK_MSG(d[0].steps == RD_STEPS && d[1].steps == RD_STEPS, "%s%s: %llu / %llu decode steps counted", name,
                  what, (unsigned long long)d[0].steps, (unsigned long long)d[1].steps);
        CHECK_MSG(d[0].replayed == (uint64_t)replayed && d[1].replayed == 0,
                  "%s%s: %llu of %d steps replayed (want %d), %llu with replay off", name, what,
                  (unsigned long long)d[0].replayed, RD_STEPS, replayed, (unsigned long long)d[1].replayed);
        CHECK_MSG(d[0].batched == d[1].batched, "%s%s: %llu steps batched replaying, %llu recording", name, what,
                  (unsigned long long)d[0].batched, (unsigned long long)d[1].batched);
        CHECK_MSG(d[0].pipelines_late == 0, "%s%s: %llu pipelines created after init", name, what,
                  (unsigned long long)d[0].pipelines_late);
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-26s%s replayed decode: %d rows, nmse %.3g vs alone, %llu of %d replayed, %llu batched\n",
                    name, what, compared, worst, (unsigned long long)d[0].replayed, RD_STEPS,
                    (unsigned long long)d[0].batched);
    }
    for (int q = 0; q < RD_SLOTS; q++) seq_free(&alone[q]);
    free(got[0]);
    free(got[1]);
    free(solo);
    for (int i = 0; i < 2; i++)
        if (up[i]) engine_free(&e[i]);
    model_free(&m);
}

static void test_replayed_decode(void) {
    /* 4-key chunks, attn_dec.comp from the first key: batched while the
     * longest sequence needs no more splits than the step has sequences
     * (steps 0-7, up to 16 keys), then per sequence, through split counts
     * changing at 5, 9, 17 and 33 keys. Recorded: the first step, the
     * switch to per sequence (8), the leave (12) and the join (20), and the
     * 8 other steps where a sequence crosses to another split count (10,
     * 13, 14, 24, 28, 29, 30, 32): 28 replayed. */
    check_replayed_decode("llama-dense-f32", "attn_chunk=4,attn_dec_min=0", 28, " (split)");
    check_replayed_decode("qwen35-dense-f32", "attn_chunk=4,attn_dec_min=0", 28, " (split)");
    /* the same on attn.comp, whose splits take 4 keys each whatever the
     * position: a recording replayed at another split count would drop
     * keys */
    check_replayed_decode("qwen3-dense-f32", "attn_dec=0,attn_chunk=4", 28, " (split, attn.comp)");
    /* unsplit (64-key chunks on lavapipe), batched throughout: attn.comp
     * up to 24 keys, then attn_dec.comp (the longest sequence there at
     * step 16). Recorded: the first step, the leave, the join and the
     * kernel change: 36 replayed. */
    check_replayed_decode("qwen35-dense-f32", "attn_dec_min=24", 36, "");
}

static void test_memory(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen35-dense-q8_0.gguf", shared_path("models/tiny"));
    bc_check_memory(path, &(zn_engine_opts){.backend = "vulkan", .be = {.n_threads = 2, .device = -1}});
}

int main(void) {
    char why[sizeof(zn_err) + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("vk_batch", why);
        return harness_report("vk_batch");
    }
    RUN(test_all_fixtures);
    RUN(test_gemm_path);
    RUN(test_split_attention);
    RUN(test_batched_decode);
    RUN(test_batched_conv);
    RUN(test_replayed_decode);
    RUN(test_memory);
    return harness_report("vk_batch");
}
