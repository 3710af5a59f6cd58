/* Batched engine steps on the CPU backend (issue 14): for every tiny
 * fixture, each sequence's logits in a batch of mixed lengths (prompt
 * chunks and decode tokens in one step, sequences joining and leaving)
 * match its logits when run alone within the golden tests' bounds (NMSE
 * 1e-5 F32, 1e-4 F16/BF16, 1e-3 quantized); on the CPU they are in fact
 * the same bits, which is checked too. The batched steps allocate nothing
 * (counted by a malloc interposer; not under ASan, which owns malloc).
 * Bad steps are refused before anything runs. The memory the engine reports
 * (engine_mem) follows the sequences it holds. */
#include <dirent.h>
#include <stdatomic.h>

#include "batch_check.h"

#if defined(__SANITIZE_ADDRESS__)
#define BC_COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BC_COUNT_ALLOCS 0
#endif
#endif
#ifndef BC_COUNT_ALLOCS
#define BC_COUNT_ALLOCS 1
#endif

#if BC_COUNT_ALLOCS
/* Every allocation of the process goes through these while counting is on
 * (glibc's own entry points underneath). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static atomic_bool counting;
static atomic_long n_allocs;
static inline void note(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add(&n_allocs, 1);
}
void *malloc(size_t n) {
    note();
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    note();
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    note();
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t al, size_t n) {
    note();
    return __libc_memalign(al, n);
}
int posix_memalign(void **p, size_t al, size_t n) {
    note();
    *p = __libc_memalign(al, n);
    return *p ? 0 : 12; /* ENOMEM */
}
void free(void *p) { __libc_free(p); }
static void count_start(void) {
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, true);
}
static long count_stop(void) {
    atomic_store(&counting, false);
    return atomic_load(&n_allocs);
}
static const bc_hooks hooks = {count_start, count_stop, false};
#else
static const bc_hooks hooks = {NULL, NULL, false};
#endif

#define CPU_OPTS(n) (&(zn_engine_opts){.backend = "cpu", .be = {.n_threads = (n), .device = -1}})

static double bound_for(const char *name) {
    if (strstr(name, "-f32")) return 1e-5;
    if (strstr(name, "-f16") || strstr(name, "-bf16")) return 1e-4;
    return 1e-3;
}

static long total_allocs = -1;

static void check_fixture(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    zn_engine e;
    if (engine_init(&e, &m, CPU_OPTS(2), &err) != ZN_OK) {
        CHECK_MSG(0, "%s: %s", name, err.msg);
        model_free(&m);
        return;
    }
    bc_result r;
    if (bc_run(&e, &hooks, &r)) {
        const double bound = bound_for(name);
        CHECK_MSG(r.worst <= bound, "%s: worst row NMSE %.3g > %.0e against the sequence alone", name, r.worst, bound);
        CHECK_MSG(r.exact == r.compared, "%s: %ld of %ld rows differ from the sequence alone (worst NMSE %.3g)", name,
                  r.compared - r.exact, r.compared, r.worst);
        CHECK_MSG(r.compared >= 80, "%s: only %ld rows compared", name, r.compared);
        CHECK_MSG(r.multi_steps >= 10 && r.mixed_steps >= 5 && r.in_place > 0, "%s: %d steps of several sequences, %d mixed, %d logits in place", name,
                  r.multi_steps, r.mixed_steps, r.in_place);
        if (r.allocs >= 0) {
            CHECK_MSG(r.allocs == 0, "%s: %ld allocations in the step loop", name, r.allocs);
            total_allocs = total_allocs < 0 ? r.allocs : total_allocs + r.allocs;
        }
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-26s %ld rows, worst nmse %.3g, %d multi / %d mixed steps, %ld allocs\n", name,
                    r.compared, r.worst, r.multi_steps, r.mixed_steps, r.allocs);
    }
    engine_free(&e);
    model_free(&m);
}

static int check_dir(const char *dir) {
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return 0;
    int tested = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        char name[256];
        size_t n = strlen(ent->d_name);
        if (n < 6 || n >= sizeof name || strcmp(ent->d_name + n - 5, ".gguf")) continue;
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), ent->d_name);
        check_fixture(dir, name);
        tested++;
    }
    closedir(d);
    return tested;
}

static void test_all_fixtures(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", shared_path("models/tiny"));
    const int tested = check_dir(dir);
    CHECK_MSG(tested >= 30, "only %d fixtures tested", tested);
}

/* value heads = 2 x key heads in Gated DeltaNet; qwen3 in Q5_K and Q4_0 */
static void test_extra_models(void) {
    const int tested = check_dir("tests/data");
    CHECK_MSG(tested >= 3, "only %d models in tests/data", tested);
}

static void test_no_allocation(void) {
    if (!BC_COUNT_ALLOCS) SKIP("ASan owns malloc here: allocations are counted in the plain build");
    CHECK_MSG(total_allocs == 0, "%ld allocations in the batched steps of all fixtures", total_allocs);
}

/* Bad steps fail with ZN_ERR_ARG before anything runs: every sequence is
 * left as it was. */
static void test_refused(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen35-dense-q8_0.gguf", shared_path("models/tiny"));
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    zn_engine e, e2;
    zn_seq a, b, other;
    CHECK(engine_init(&e, &m, CPU_OPTS(2), &err) == ZN_OK);
    CHECK(engine_init(&e2, &m, CPU_OPTS(1), &err) == ZN_OK);
    CHECK(seq_init(&a, &e, 8, &err) == ZN_OK);
    CHECK(seq_init(&b, &e, 8, &err) == ZN_OK);
    CHECK(seq_init(&other, &e2, 8, &err) == ZN_OK);
    const int V = m.hp.n_vocab;
    int32_t t[ZN_STEP_TOKENS + 1] = {0};
    float *lg = malloc(sizeof *lg * (size_t)V * 8);
    zn_step_item it[3] = {{.seq = &a, .tokens = t, .n = 3, .logits = lg}, {.seq = &b, .tokens = t, .n = 2, .logits = lg}};
    CHECK(engine_step(&e, it, 2, &err) == ZN_OK);
    CHECK_EQ_INT(a.n_past, 3);
    CHECK_EQ_INT(b.n_past, 2);
    it[1].seq = &a; /* one sequence twice */
    CHECK(engine_step(&e, it, 2, &err) == ZN_ERR_ARG);
    it[1].seq = &other; /* another engine's */
    CHECK(engine_step(&e, it, 2, &err) == ZN_ERR_ARG);
    it[1].seq = &b;
    it[1].n = 0;
    CHECK(engine_step(&e, it, 2, &err) == ZN_ERR_ARG);
    it[1].n = 7; /* past b's context of 8 */
    CHECK(engine_step(&e, it, 2, &err) == ZN_ERR_ARG);
    CHECK(strstr(err.msg, "context") != NULL);
    it[1].n = 1;
    t[0] = V; /* out of the vocab */
    CHECK(engine_step(&e, it, 2, &err) == ZN_ERR_ARG);
    t[0] = 0;
    CHECK(engine_step(&e, it, 0, &err) == ZN_ERR_ARG);
    CHECK(engine_step(&e, it, e.max_seqs + 1, &err) == ZN_ERR_ARG);
    CHECK_EQ_INT(a.n_past, 3);
    CHECK_EQ_INT(b.n_past, 2);
    /* over the step budget: a context that could take it, too many tokens */
    zn_seq big;
    CHECK(seq_init(&big, &e, ZN_STEP_TOKENS + 8, &err) == ZN_OK);
    it[1] = (zn_step_item){.seq = &big, .tokens = t, .n = ZN_STEP_TOKENS - 2};
    CHECK(engine_step(&e, it, 2, &err) == ZN_ERR_ARG);
    CHECK_EQ_INT(big.n_past, 0);
    it[1].n = ZN_STEP_TOKENS - 3; /* exactly the budget */
    CHECK(engine_step(&e, it, 2, &err) == ZN_OK);
    CHECK_EQ_INT(big.n_past, ZN_STEP_TOKENS - 3);
    CHECK_EQ_INT(a.n_past, 6);
    seq_free(&big);
    free(lg);
    seq_free(&a);
    seq_free(&b);
    seq_free(&other);
    engine_free(&e);
    engine_free(&e2);
    model_free(&m);
}

static void test_memory(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen35-dense-q8_0.gguf", shared_path("models/tiny"));
    bc_check_memory(path, CPU_OPTS(2));
}

int main(void) {
    RUN(test_all_fixtures);
    RUN(test_extra_models);
    RUN(test_no_allocation);
    RUN(test_refused);
    RUN(test_memory);
    return harness_report("batch");
}
