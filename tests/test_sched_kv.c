/* The scheduler on a shared KV pool (zinc serve --kv-mem; backend.h
 * kv_pool_tokens): four requests whose contexts together need more than the
 * pool holds all finish, with the tokens they make when every slot has its
 * own context — all four start (their prompts fit), and as they generate
 * past their first block the newest are preempted (their blocks given back)
 * and recompute prompt and generated tokens later — greedy and
 * sampled, on the hybrid demo model and a dense Llama; preemptions are
 * counted in /metrics. A prompt larger than the pool is refused at once; a
 * request that grows past the pool alone ends as a full context does. A
 * request that borrows another slot's prompt prefix shares its whole
 * blocks (backend.h: copy-on-write) and makes the tokens it makes alone;
 * the pool's free positions in /metrics show the sharing. */
#include <string.h>

#include "engine.h"
#include "harness.h"
#include "limits.h"
#include "metrics.h"
#include "model.h"
#include "scheduler.h"
#include "tokenizer.h"

#define N_JOBS 4
#define N_CTX 1024
#define POOL (5 * ZN_KV_BLOCK)

static const struct { int n_prompt, n_gen; float temp; uint64_t seed; } JOBS[N_JOBS] = {
    {100, 300, 0.0f, 1}, {120, 260, 0.9f, 42}, {90, 320, 0.0f, 3}, {110, 280, 0.7f, 7},
};

typedef struct result {
    int32_t ids[400];
    float lps[400];           /* their logprobs */
    int n_gen;
    char finish[16];
} result;

static zn_job *job_make(int i, int nv) {
    zn_job *j = job_new();
    if (!j) return NULL;
    j->n_prompt = JOBS[i].n_prompt;
    j->prompt = malloc(sizeof *j->prompt * (size_t)j->n_prompt);
    for (int t = 0; t < j->n_prompt; t++) j->prompt[t] = (int32_t)(((int64_t)(t + 1) * 7919 + 104729 * (i + 1)) % nv);
    j->max_tokens = JOBS[i].n_gen;
    j->ignore_eos = true;
    j->top_logprobs = 0; /* the ids of the tokens made */
    j->sp = sampler_default_params();
    j->sp.temperature = JOBS[i].temp;
    j->sp.seed = JOBS[i].seed;
    return j;
}

static void job_wait(zn_job *j, result *r) {
    pthread_mutex_lock(&j->mu);
    while (j->state != ZN_JOB_DONE) pthread_cond_wait(&j->cv, &j->mu);
    CHECK_MSG(!j->failed, "job failed: %s", j->err.msg);
    r->n_gen = j->n_gen;
    for (int i = 0; i < j->n_lp && i < 400; i++) r->ids[i] = j->lp[i].id, r->lps[i] = j->lp[i].lp;
    snprintf(r->finish, sizeof r->finish, "%s", j->finish ? j->finish : "");
    pthread_mutex_unlock(&j->mu);
}

/* All jobs at once on 4 slots over engine e; the gauges after. */
static void run_jobs(zn_engine *e, const zn_tokenizer *tok, result *res, zn_metrics_gauges *g, char **metrics_text,
                     int sample_threads) {
    zn_sched s;
    zn_metrics m;
    zn_err err;
    metrics_init(&m);
    if (sched_init(&s, e, tok, &(zn_sched_opts){.n_slots = N_JOBS, .n_ctx = N_CTX, .sample_threads = sample_threads}, &m, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        metrics_free(&m);
        return;
    }
    zn_job *jobs[N_JOBS] = {0};
    for (int i = 0; i < N_JOBS; i++) {
        jobs[i] = job_make(i, e->model->hp.n_vocab);
        CHECK(jobs[i] && sched_submit(&s, jobs[i], &err) == ZN_OK);
    }
    for (int i = 0; i < N_JOBS; i++) job_wait(jobs[i], &res[i]);
    sched_gauges(&s, g);
    size_t len;
    *metrics_text = metrics_render(&m, g, &len);
    sched_free(&s);
    for (int i = 0; i < N_JOBS; i++) job_unref(jobs[i]);
    metrics_free(&m);
}

static void check_model(const char *path) {
    zn_model m;
    zn_tokenizer *tok = NULL;
    zn_err err;
    if (model_load(&m, path, &err) || tokenizer_load(&tok, &m.gguf, &err)) {
        CHECK_MSG(0, "%s: %s", path, err.msg);
        return;
    }
    zn_engine own, pooled;
    zn_engine_opts o = {.backend = "cpu", .be = {.n_threads = 2, .device = -1}};
    CHECK(engine_init(&own, &m, &o, &err) == ZN_OK);
    o.be.kv_pool_tokens = POOL;
    CHECK(engine_init(&pooled, &m, &o, &err) == ZN_OK);
    result a[N_JOBS], b[N_JOBS];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    zn_metrics_gauges ga, gb;
    char *ta = NULL, *tb = NULL;
    run_jobs(&own, tok, a, &ga, &ta, 4);
    run_jobs(&pooled, tok, b, &gb, &tb, 4);
    /* the tokens the sampling threads draw (two on a 2-core machine; the CPU backend's default is none) are
     * those of the engine thread alone */
    result c[N_JOBS];
    memset(c, 0, sizeof c);
    zn_metrics_gauges gc;
    char *tc = NULL;
    run_jobs(&own, tok, c, &gc, &tc, 1);
    free(tc);
    int need = 0;
    for (int i = 0; i < N_JOBS; i++) {
        need += JOBS[i].n_prompt + JOBS[i].n_gen;
        CHECK_EQ_INT(a[i].n_gen, JOBS[i].n_gen);
        CHECK_EQ_INT(b[i].n_gen, JOBS[i].n_gen);
        CHECK_EQ_STR(b[i].finish, "length");
        CHECK_MSG(!memcmp(a[i].ids, b[i].ids, sizeof(int32_t) * (size_t)JOBS[i].n_gen),
                  "%s job %d: other tokens on the pool", path, i);
        CHECK_MSG(!memcmp(a[i].ids, c[i].ids, sizeof(int32_t) * (size_t)JOBS[i].n_gen) &&
                      !memcmp(a[i].lps, c[i].lps, sizeof(float) * (size_t)JOBS[i].n_gen),
                  "%s job %d: other tokens or logprobs sampled on the engine thread alone", path, i);
    }
    CHECK_MSG(need > POOL, "the jobs need %d positions, the pool has %d: nothing to preempt", need, POOL);
    CHECK_EQ_INT(ga.preemptions, 0);
    CHECK_MSG(gb.preemptions >= 2, "%s: %llu preemptions", path, (unsigned long long)gb.preemptions);
    CHECK_EQ_INT(gb.kv_total, POOL);
    char want[96];
    snprintf(want, sizeof want, "zinc_kv_preemptions_total %llu\n", (unsigned long long)gb.preemptions);
    CHECK_MSG(tb && strstr(tb, want), "/metrics lacks '%s'", want);
    fprintf(stderr, "    %s: %d jobs needing %d positions on a pool of %d: the same tokens, %llu preemptions, %llu "
            "prefixes dropped\n", path, N_JOBS, need, POOL, (unsigned long long)gb.preemptions,
            (unsigned long long)gb.kv_evictions);
    free(ta);
    free(tb);
    engine_free(&own);
    engine_free(&pooled);
    tokenizer_free(tok);
    model_free(&m);
}

static void test_hybrid(void) { check_model("models/zinc-demo-qwen35.gguf"); }
static void test_dense(void) { check_model(shared_path("models/llama-2-tiny-random.gguf")); }

/* The tiny Llama with a real vocabulary, and its tokenizer. */
static bool load_llama(zn_model *m, zn_tokenizer **tok) {
    zn_err err;
    if (model_load(m, shared_path("models/llama-2-tiny-random.gguf"), &err) || tokenizer_load(tok, &m->gguf, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false;
    }
    return true;
}

/* The tiny Llama on the CPU with a KV pool of `pool` positions under a
 * scheduler of n_slots slots of 4 blocks each. */
typedef struct rig {
    zn_model m;
    zn_tokenizer *tok;
    zn_engine e;
    zn_sched s;
    zn_metrics mt;
} rig;

static bool rig_open(rig *r, int64_t pool, int n_slots) {
    zn_err err;
    r->tok = NULL;
    if (!load_llama(&r->m, &r->tok)) return false;
    zn_engine_opts o = {.backend = "cpu", .be = {.n_threads = 2, .device = -1, .kv_pool_tokens = pool}};
    metrics_init(&r->mt);
    if (engine_init(&r->e, &r->m, &o, &err) ||
        sched_init(&r->s, &r->e, r->tok, &(zn_sched_opts){.n_slots = n_slots, .n_ctx = 4 * ZN_KV_BLOCK}, &r->mt, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false; /* what was made is left to the process's end: the test has failed */
    }
    return true;
}

static void rig_close(rig *r) {
    sched_free(&r->s);
    metrics_free(&r->mt);
    engine_free(&r->e);
    tokenizer_free(r->tok);
    model_free(&r->m);
}

/* Waits until job j has made a token (its prompt's KV final) or ended. */
static void job_generating(zn_job *j) {
    for (bool gen = false; !gen;) {
        pthread_mutex_lock(&j->mu);
        gen = j->n_gen > 0 || j->state == ZN_JOB_DONE;
        pthread_mutex_unlock(&j->mu);
    }
}

/* A prompt the pool cannot hold is refused at submit; one that fits but
 * grows past the pool alone ends "length" where the pool ran out. */
static void test_too_large(void) {
    rig r;
    zn_err err;
    if (!rig_open(&r, 2 * ZN_KV_BLOCK, 2)) return;
    zn_sched *s = &r.s;
    zn_job *big = job_new();
    big->n_prompt = 2 * ZN_KV_BLOCK + 10;
    big->prompt = calloc((size_t)big->n_prompt, sizeof *big->prompt);
    CHECK_EQ_INT(sched_submit(s, big, &err), ZN_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "KV pool holds 512 positions"), "%s", err.msg);
    zn_job *grows = job_new();
    grows->n_prompt = 400;
    grows->prompt = calloc((size_t)grows->n_prompt, sizeof *grows->prompt);
    for (int t = 0; t < grows->n_prompt; t++) grows->prompt[t] = (int32_t)(t * 31 % r.m.hp.n_vocab);
    grows->ignore_eos = true;
    grows->max_tokens = 1000;
    grows->sp = sampler_default_params();
    grows->sp.temperature = 0;
    CHECK(sched_submit(s, grows, &err) == ZN_OK);
    pthread_mutex_lock(&grows->mu);
    while (grows->state != ZN_JOB_DONE) pthread_cond_wait(&grows->cv, &grows->mu);
    CHECK(!grows->failed);
    CHECK_EQ_STR(grows->finish, "length");
    /* positions 0..511 evaluated: the prompt and all but the last token made */
    CHECK_EQ_INT(grows->n_gen, 2 * ZN_KV_BLOCK - 400 + 1);
    pthread_mutex_unlock(&grows->mu);
    job_unref(big);
    job_unref(grows);
    rig_close(&r);
}

/* Job b starts while job a still generates on the other slot and shares
 * a's first 600 prompt tokens: b borrows them (prefix cache), holding a's
 * two whole blocks by reference and a copy of the third's 88 rows. At the
 * end a holds 4 blocks (1,000 positions), b one of its own: 5 of 8 used,
 * where copying would have used 7. b's tokens are those it makes alone. */
static zn_job *prefix_job(const zn_model *m, int n_prompt, int tail, int max_tokens) {
    zn_job *j = job_new();
    if (!j) return NULL;
    j->n_prompt = n_prompt;
    j->prompt = malloc(sizeof *j->prompt * (size_t)n_prompt);
    for (int t = 0; t < n_prompt; t++)
        j->prompt[t] = (int32_t)(((int64_t)(t < 600 ? t : t + tail) * 7919 + 12345) % m->hp.n_vocab);
    j->max_tokens = max_tokens;
    j->ignore_eos = true;
    j->top_logprobs = 0;
    j->sp = sampler_default_params();
    j->sp.temperature = 0;
    return j;
}

static void job_done(zn_job *j) {
    pthread_mutex_lock(&j->mu);
    while (j->state != ZN_JOB_DONE) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

static void test_shared_prefix(void) {
    zn_model m;
    zn_tokenizer *tok = NULL;
    zn_err err;
    if (!load_llama(&m, &tok)) return;
    const int pool = 8 * ZN_KV_BLOCK, a_gen = 4 * ZN_KV_BLOCK - 600;
    zn_engine e, alone;
    zn_engine_opts o = {.backend = "cpu", .be = {.n_threads = 2, .device = -1, .kv_pool_tokens = pool}};
    CHECK(engine_init(&e, &m, &o, &err) == ZN_OK);
    o.be.kv_pool_tokens = 0;
    CHECK(engine_init(&alone, &m, &o, &err) == ZN_OK);
    zn_sched s, s1;
    zn_metrics mt, mt1;
    metrics_init(&mt);
    metrics_init(&mt1);
    CHECK(sched_init(&s, &e, tok, &(zn_sched_opts){.n_slots = 2, .n_ctx = 4 * ZN_KV_BLOCK}, &mt, &err) == ZN_OK);
    CHECK(sched_init(&s1, &alone, tok, &(zn_sched_opts){.n_slots = 1, .n_ctx = 4 * ZN_KV_BLOCK}, &mt1, &err) == ZN_OK);
    zn_job *a = prefix_job(&m, 600, 0, a_gen), *b = prefix_job(&m, 610, 1, 20), *b1 = prefix_job(&m, 610, 1, 20);
    CHECK(sched_submit(&s, a, &err) == ZN_OK);
    /* b arrives once a generates (its prompt's KV final), long before a ends */
    job_generating(a);
    CHECK(sched_submit(&s, b, &err) == ZN_OK);
    CHECK(sched_submit(&s1, b1, &err) == ZN_OK);
    job_done(a);
    job_done(b);
    job_done(b1);
    CHECK(!a->failed && !b->failed && !b1->failed);
    CHECK_EQ_INT(a->n_gen, a_gen);
    CHECK_EQ_INT(b->n_gen, 20);
    CHECK_EQ_INT(b1->n_gen, 20);
    bool same = b->n_lp == 20 && b1->n_lp == 20;
    for (int i = 0; same && i < 20; i++) same = b->lp[i].id == b1->lp[i].id;
    CHECK_MSG(same, "the borrowing request made other tokens than alone");
    zn_metrics_gauges g;
    do sched_gauges(&s, &g);
    while (g.running > 0); /* running 0 and the last publish are one step of the engine thread */
    size_t len;
    char *text = metrics_render(&mt, &g, &len);
    CHECK_MSG(text && strstr(text, "zinc_prefix_cache_copied_tokens_total 600\n"), "b did not borrow a's prefix");
    CHECK(g.kv_pool);
    CHECK_EQ_INT(g.kv_pool_free, pool - 5 * ZN_KV_BLOCK);
    char want[64];
    snprintf(want, sizeof want, "zinc_kv_pool_tokens_free %d\n", pool - 5 * ZN_KV_BLOCK);
    CHECK_MSG(text && strstr(text, want), "/metrics lacks '%s'", want);
    free(text);
    sched_free(&s);
    sched_free(&s1);
    job_unref(a);
    job_unref(b);
    job_unref(b1);
    metrics_free(&mt);
    metrics_free(&mt1);
    engine_free(&e);
    engine_free(&alone);
    tokenizer_free(tok);
    model_free(&m);
}

/* Admission counts a borrowed prefix's whole blocks as shared: on a pool of
 * 6 blocks, while a (700 prompt tokens, 3 blocks) generates, b (710, the
 * first 600 a's) needs 1 new block beyond a's 2 whole ones and 1 to
 * spare, not 4: it starts at once and borrows from busy a (counting
 * copies, it would wait for a to end and then reuse a's slot, borrowing
 * nothing). */
static void test_admit_shared(void) {
    rig r;
    zn_err err;
    if (!rig_open(&r, 6 * ZN_KV_BLOCK, 2)) return;
    zn_job *a = prefix_job(&r.m, 700, 0, 60), *b = prefix_job(&r.m, 710, 1, 20);
    CHECK(sched_submit(&r.s, a, &err) == ZN_OK);
    job_generating(a);
    CHECK(sched_submit(&r.s, b, &err) == ZN_OK);
    job_done(a);
    job_done(b);
    CHECK(!a->failed && !b->failed);
    CHECK_EQ_INT(b->n_gen, 20);
    zn_metrics_gauges g;
    sched_gauges(&r.s, &g);
    size_t len;
    char *text = metrics_render(&r.mt, &g, &len);
    CHECK_MSG(text && strstr(text, "zinc_prefix_cache_copied_tokens_total 600\n"), "b did not start beside a");
    CHECK_EQ_INT(g.preemptions, 0);
    free(text);
    job_unref(a);
    job_unref(b);
    rig_close(&r);
}

int main(void) {
    RUN(test_hybrid);
    RUN(test_dense);
    RUN(test_too_large);
    RUN(test_shared_prefix);
    RUN(test_admit_shared);
    return harness_report("sched_kv");
}
