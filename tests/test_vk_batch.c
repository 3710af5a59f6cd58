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
 * sequence one token) at different positions against each sequence alone.
 * About 5 minutes on lavapipe. No Vulkan
 * device: the suite is skipped. */
#include <dirent.h>

#include "batch_check.h"
#include "vk_device.h"

static bool vk_absent(char *why, size_t cap) {
    vkdev d;
    zn_err err = {0};
    if (vkdev_open(&d, -1, &err) == ZN_OK) {
        vkdev_close(&d);
        return false;
    }
    snprintf(why, cap, "no usable Vulkan device: %s", err.msg);
    return true;
}

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
        CHECK_MSG(vk.multi_steps >= 10 && vk.mixed_steps >= 5, "%s%s: %d steps of several sequences, %d mixed", name,
                  what, vk.multi_steps, vk.mixed_steps);
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
    o.tune = "mm_prep_tok=1"; /* the weights dequantised into the scratch first, not in the tile loads */
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
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", shared_path("models/tiny"), name);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
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
 * 128 and 64 among them), and the quantized one's mat-vecs at other tokens
 * per workgroup (tuning mvt). */
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
    /* the integer mat-vec over the step's 8 rows: 3 groups of up to 3
     * tokens per workgroup, x quantised in the workgroups (the default on
     * lavapipe: by quantx.comp first); and a token per workgroup */
    o = backend_default_opts();
    o.tune = "mvt=3,mvt_modes=7";
    check_batched_decode("qwen3-dense-q4_k_m", o, " (mvt 3, x in the workgroups)");
    o.tune = "mvt=1";
    check_batched_decode("qwen3-dense-q4_k_m", o, " (mvt 1)");
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
    RUN(test_memory);
    return harness_report("vk_batch");
}
