/* Grammar masks prepared on the scheduler's mask thread while the engine
 * step runs (scheduler.c, maskpipe.c): constrained requests of the demo
 * model give the same bytes with the overlap on and off, greedy and
 * sampled, on the CPU backend and on Vulkan (lavapipe in CI; skipped
 * without a device); with it on every draw finds its mask prepared (the
 * counters /metrics shows), with it off none does; several constrained
 * slots at once all get theirs; and the by-backend default (off for cpu,
 * on for vulkan). */
#include <string.h>

#include "backend.h"
#include "engine.h"
#include "gmask.h"
#include "harness.h"
#include "jschema.h"
#include "model.h"
#include "scheduler.h"
#include "textstream.h"
#include "tokenizer.h"

#define DEMO "models/zinc-demo-qwen35.gguf"

static const char *const SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"maxLength\":24},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},"
    "\"side\":{\"enum\":[\"russian\",\"french\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":8},\"maxItems\":3}},"
    "\"required\":[\"name\",\"age\",\"side\",\"tags\"],\"additionalProperties\":false}";

typedef struct fixture {
    zn_model m;
    zn_tokenizer *tok;
    zn_vocab_trie vt;
    char *gbnf;
    int32_t prompt[2][256];
    int n_prompt[2];
    bool ok;
} fixture;

static fixture F;

static bool fixture_open(void) {
    zn_err err;
    static const char *const prompts[2] = {
        "<|im_start|>user\nTell me about the old prince as JSON.<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\nDescribe Natasha in JSON, please.<|im_end|>\n<|im_start|>assistant\n",
    };
    if (model_load(&F.m, DEMO, &err) || tokenizer_load(&F.tok, &F.m.gguf, &err) || vocab_trie_build(&F.vt, F.tok, &err) ||
        jschema_to_gbnf(SCHEMA, strlen(SCHEMA), "schema", &F.gbnf, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false;
    }
    for (int i = 0; i < 2; i++) {
        size_t n = 0;
        if (tokenizer_encode(F.tok, prompts[i], strlen(prompts[i]), false, true, F.prompt[i], 256, &n, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            return false;
        }
        F.n_prompt[i] = (int)n;
    }
    return F.ok = true;
}

static void fixture_close(void) {
    free(F.gbnf);
    vocab_trie_free(&F.vt);
    tokenizer_free(F.tok);
    model_free(&F.m);
}

/* What a job produced: its answer text and how it ended. */
typedef struct result {
    char text[4096];
    int n_gen;
    char finish[16];
    bool failed;
} result;

/* A constrained job (or an unconstrained one: gm false) on prompt p. */
static zn_job *job_make(int p, float temperature, uint64_t seed, bool gm, int n_gen) {
    zn_job *j = job_new();
    zn_err err;
    if (!j) return NULL;
    j->prompt = malloc(sizeof *j->prompt * (size_t)F.n_prompt[p]);
    memcpy(j->prompt, F.prompt[p], sizeof *j->prompt * (size_t)F.n_prompt[p]);
    j->n_prompt = F.n_prompt[p];
    j->max_tokens = n_gen;
    j->sp = sampler_default_params();
    j->sp.temperature = temperature;
    j->sp.seed = seed;
    if (gm) {
        j->gm = malloc(sizeof *j->gm);
        if (gmask_init(j->gm, F.gbnf, strlen(F.gbnf), &F.vt, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            free(j->gm);
            j->gm = NULL;
        }
    }
    return j;
}

static void job_wait(zn_job *j, result *r) {
    pthread_mutex_lock(&j->mu);
    while (j->state != ZN_JOB_DONE) pthread_cond_wait(&j->cv, &j->mu);
    const zn_textbuf *b = &j->text[ZN_CH_CONTENT];
    snprintf(r->text, sizeof r->text, "%.*s", (int)b->n, b->p ? b->p : "");
    r->n_gen = j->n_gen;
    snprintf(r->finish, sizeof r->finish, "%s", j->finish ? j->finish : "");
    r->failed = j->failed;
    if (j->failed) CHECK_MSG(0, "job failed: %s", j->err.msg);
    pthread_mutex_unlock(&j->mu);
}

enum { N_JOBS = 3 };
/* greedy constrained, sampled constrained, sampled unconstrained (a slot without a grammar beside them) */
static const struct { int prompt; float temp; uint64_t seed; bool gm; } JOBS[N_JOBS] = {
    {0, 0.0f, 1, true},
    {1, 0.8f, 42, true},
    {0, 0.8f, 7, false},
};

/* Runs the jobs on a 2-slot scheduler over e, one after the other (the step
 * compositions, and so the logits, are the same in every run) or all at
 * once; their results and the mask counters. */
static bool run_jobs(zn_engine *e, int n_gen, int overlap, bool together, result *res, uint64_t *ahead, uint64_t *inl) {
    zn_sched s;
    zn_metrics m;
    zn_err err;
    metrics_init(&m);
    if (sched_init(&s, e, F.tok, &(zn_sched_opts){.n_slots = 2, .n_ctx = 512, .mask_overlap = overlap}, &m, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        metrics_free(&m);
        return false;
    }
    zn_job *jobs[N_JOBS] = {0};
    for (int i = 0; i < N_JOBS; i++) {
        jobs[i] = job_make(JOBS[i].prompt, JOBS[i].temp, JOBS[i].seed, JOBS[i].gm, n_gen);
        CHECK(jobs[i] && sched_submit(&s, jobs[i], &err) == ZN_OK);
        if (!together) job_wait(jobs[i], &res[i]);
    }
    for (int i = 0; together && i < N_JOBS; i++) job_wait(jobs[i], &res[i]);
    zn_metrics_gauges g;
    sched_gauges(&s, &g);
    *ahead = g.masks_ahead;
    *inl = g.masks_inline;
    size_t len = 0;
    char *text = metrics_render(&m, &g, &len);
    char want[128];
    snprintf(want, sizeof want, "zinc_grammar_masks_prepared_total %llu\n", (unsigned long long)g.masks_ahead);
    CHECK_MSG(text && strstr(text, want), "/metrics lacks '%s'", want);
    snprintf(want, sizeof want, "zinc_grammar_masks_inline_total %llu\n", (unsigned long long)g.masks_inline);
    CHECK_MSG(text && strstr(text, want), "/metrics lacks '%s'", want);
    free(text);
    sched_free(&s);
    for (int i = 0; i < N_JOBS; i++) job_unref(jobs[i]);
    metrics_free(&m);
    return true;
}

/* n_gen: tokens per job, enough to cross several grammar states */
static void check_backend(const char *backend, int n_gen) {
    zn_engine e;
    zn_err err;
    zn_engine_opts o = {.backend = backend, .be = {.n_threads = 2, .device = -1}};
    if (engine_init(&e, &F.m, &o, &err)) {
        CHECK_MSG(0, "%s: %s", backend, err.msg);
        return;
    }
    result off[N_JOBS], on[N_JOBS], both[N_JOBS];
    uint64_t a_off, i_off, a_on, i_on, a_both, i_both;
    memset(off, 0, sizeof off);
    memset(on, 0, sizeof on);
    memset(both, 0, sizeof both);
    if (run_jobs(&e, n_gen, ZN_OVERLAP_OFF, false, off, &a_off, &i_off) && run_jobs(&e, n_gen, ZN_OVERLAP_ON, false, on, &a_on, &i_on)) {
        int constrained_draws = 0;
        for (int i = 0; i < N_JOBS; i++) {
            CHECK_MSG(!strcmp(off[i].text, on[i].text) && off[i].n_gen == on[i].n_gen && !strcmp(off[i].finish, on[i].finish),
                      "%s job %d: overlap off gave (%d tokens, %s) '%s', on (%d, %s) '%s'", backend, i, off[i].n_gen,
                      off[i].finish, off[i].text, on[i].n_gen, on[i].finish, on[i].text);
            CHECK(off[i].n_gen > 0 && !off[i].failed && !on[i].failed);
            if (JOBS[i].gm) constrained_draws += on[i].n_gen;
        }
        CHECK_MSG(a_off == 0 && i_off > 0, "%s off: %llu prepared, %llu inline", backend, (unsigned long long)a_off,
                  (unsigned long long)i_off);
        /* every constrained draw found its mask ready; one more per job when an end-of-text token ended it */
        CHECK_MSG(i_on == 0 && a_on >= (uint64_t)constrained_draws && a_on <= (uint64_t)constrained_draws + N_JOBS,
                  "%s on: %llu prepared, %llu inline, %d constrained draws", backend, (unsigned long long)a_on,
                  (unsigned long long)i_on, constrained_draws);
        fprintf(stderr, "    %s: same %d + %d + %d tokens with and without the overlap; masks prepared %llu / inline %llu "
                "(off: 0 / %llu)\n", backend, on[0].n_gen, on[1].n_gen, on[2].n_gen, (unsigned long long)a_on,
                (unsigned long long)i_on, (unsigned long long)i_off);
    }
    /* two constrained slots in one step: each has its mask prepared */
    if (run_jobs(&e, n_gen, ZN_OVERLAP_ON, true, both, &a_both, &i_both)) {
        for (int i = 0; i < N_JOBS; i++) CHECK(!both[i].failed && both[i].n_gen > 0);
        CHECK_MSG(i_both == 0 && a_both >= (uint64_t)(both[0].n_gen + both[1].n_gen), "%s together: %llu prepared, %llu inline",
                  backend, (unsigned long long)a_both, (unsigned long long)i_both);
    }
    engine_free(&e);
}

static void test_overlap_cpu(void) {
    if (!F.ok) SKIP("no fixture");
    check_backend("cpu", 40);
}

static void test_overlap_vulkan(void) {
    if (!F.ok) SKIP("no fixture");
    zn_device_info d[16];
    int n = 0, def = -1;
    zn_err err = {0};
    if (zn_backend_vulkan.devices(d, 16, &n, &def, &err) || def < 0 || !d[def].usable) SKIP("no usable Vulkan device");
    check_backend("vulkan", 20); /* lavapipe: slower steps */
}

static void test_overlap_default(void) {
    CHECK(!sched_mask_overlap("cpu", ZN_OVERLAP_AUTO));
    CHECK(sched_mask_overlap("vulkan", ZN_OVERLAP_AUTO));
    CHECK(!sched_mask_overlap("other", ZN_OVERLAP_AUTO));
    CHECK(sched_mask_overlap("cpu", ZN_OVERLAP_ON));
    CHECK(!sched_mask_overlap("vulkan", ZN_OVERLAP_OFF));
}

int main(void) {
    fixture_open();
    RUN(test_overlap_default);
    RUN(test_overlap_cpu);
    RUN(test_overlap_vulkan);
    if (F.ok) fixture_close();
    return harness_report("test_sched_mask");
}
