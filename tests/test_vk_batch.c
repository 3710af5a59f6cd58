/* Batched engine steps on the Vulkan backend (issue 14): for every tiny
 * fixture, the plan of batch_check.h (prompt chunks and decode tokens in
 * one step, sequences joining and leaving, a slot reused after a reset)
 * through engine_step on Vulkan, where a step of several sequences is one
 * forward (matmuls over all its rows, attention / KV / conv / delta state
 * per sequence). Each logits row a batched step returns must match
 *  - the same sequence run alone on Vulkan (engine_decode), and
 *  - the same row of the same plan batched on the CPU backend
 * within the golden tests' bounds (NMSE 1e-5 F32, 1e-4 F16/BF16, 1e-3
 * quantized). Not bit for bit: a batch of more rows takes other kernels
 * (GEMM instead of mat-vec). No pipeline may be created during the steps
 * (all at init), and a one-sequence decode step between batched ones is
 * still the replayed recording. One fixture again on the f16 GEMM path
 * (emulated cooperative matrices) from 2 rows on, three with split-K
 * attention from the first keys on. About 4 minutes on lavapipe. No Vulkan
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
    RUN(test_memory);
    return harness_report("vk_batch");
}
