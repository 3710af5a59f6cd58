/* The Vulkan backend's decode replay (backend_vulkan.c vk_run): a one-token
 * step recorded once and submitted again at later positions must give
 * bit-identical logits to the same step recorded anew (opts.no_replay),
 * through the engine, on tiny fixtures of three architectures: many
 * positions, the attention split count changing (with 16-key chunks, so
 * that short contexts cross 1 -> 2 -> 4 splits at 17 and 33 keys), two
 * sequences taking turns, a reset, and a one-token step with all logits.
 * The backend's counters must show exactly the expected replays (and none
 * with replay off). No Vulkan device: the suite is skipped. */
#include <stdint.h>

#include "engine.h"
#include "harness.h"
#include "model.h"
#include "vk_absent.h"

/* split-K decode attention from 17 keys on (16 keys per split), on
 * attn_dec.comp at every length */
#define TUNE "attn_chunk=16,attn_dec_min=0"
#define PREFIX 12
#define N_TOK 64

/* No Vulkan device to open here: the suite is skipped (any failure after
 * a device opened is a failure). */
typedef struct pair {
    zn_engine e[2];   /* [0] replay, [1] recorded every step */
    zn_seq a[2], b[2];
    float *out[2];
    int n_vocab;
    int steps, mismatched;
} pair;

static bool pair_init(pair *p, const zn_model *m) {
    zn_err err = {0};
    memset(p, 0, sizeof *p);
    p->n_vocab = m->hp.n_vocab;
    for (int i = 0; i < 2; i++) {
        /* the replaying engine also polls for the end of each step
         * (vkcmd_wait), the other sleeps */
        zn_engine_opts o = engine_default_opts();
        o.backend = "vulkan";
        o.be.n_threads = 1;
        o.be.no_replay = i == 1;
        o.be.tune = i ? TUNE ",poll=off" : TUNE ",poll=on";
        zn_status st = engine_init(&p->e[i], m, &o, &err);
        if (!st) st = seq_init(&p->a[i], &p->e[i], N_TOK + 8, &err);
        if (!st) st = seq_init(&p->b[i], &p->e[i], N_TOK + 8, &err);
        p->out[i] = malloc(sizeof(float) * (size_t)p->n_vocab);
        if (st || !p->out[i]) {
            CHECK_MSG(false, "%s", err.msg);
            return false;
        }
    }
    return true;
}

static void pair_free(pair *p) {
    for (int i = 0; i < 2; i++) {
        seq_free(&p->a[i]);
        seq_free(&p->b[i]);
        engine_free(&p->e[i]);
        free(p->out[i]);
    }
}

/* n tokens into sequence `which` ('a' or 'b') of both engines; the last
 * row's logits must match bit for bit. */
static void step(pair *p, char which, const int32_t *toks, int n, bool all_logits) {
    zn_err err = {0};
    float *all = all_logits ? malloc(sizeof(float) * (size_t)n * (size_t)p->n_vocab) : NULL;
    for (int i = 0; i < 2; i++) {
        zn_seq *s = which == 'a' ? &p->a[i] : &p->b[i];
        float *dst = all ? all : p->out[i];
        zn_status st = engine_decode(&p->e[i], s, toks, n, dst, all_logits, &err);
        CHECK_MSG(!st, "%s", err.msg);
        if (all) memcpy(p->out[i], all + (size_t)(n - 1) * (size_t)p->n_vocab, sizeof(float) * (size_t)p->n_vocab);
    }
    free(all);
    p->steps++;
    p->mismatched += memcmp(p->out[0], p->out[1], sizeof(float) * (size_t)p->n_vocab) != 0;
}

static void replay_case(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%smodels/tiny/%s.gguf", shared_path(""), name);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err)) {
        CHECK_MSG(false, "%s", err.msg);
        return;
    }
    int32_t toks[N_TOK];
    for (int i = 0; i < N_TOK; i++) toks[i] = (int32_t)((i * 37 + 11) % m.hp.n_vocab);
    pair p;
    if (pair_init(&p, &m)) {
        step(&p, 'a', toks, PREFIX, false);        /* prefill: recorded per step in both */
        int pos = PREFIX;
        for (int k = 0; k < 3; k++, pos++) step(&p, 'a', toks + pos, 1, false);
        step(&p, 'b', toks + 40, 5, false);        /* a second sequence, taking turns with the first */
        for (int k = 0; k < 3; k++) {              /* a at 16 .. 18 keys: 1 -> 2 splits */
            step(&p, 'b', toks + 45 + k, 1, false);
            step(&p, 'a', toks + pos++, 1, false);
        }
        while (pos < PREFIX + 24) step(&p, 'a', toks + pos, 1, false), pos++; /* 19 .. 36 keys: 2 -> 4 splits */
        step(&p, 'a', toks + pos++, 1, true);      /* one-token step, all logits */
        step(&p, 'a', toks + pos++, 1, false);
        for (int i = 0; i < 2; i++) seq_reset(&p.a[i]);
        for (int k = 0; k < 4; k++) step(&p, 'a', toks + 50 + k, 1, false); /* from position 0 again */
        CHECK_MSG(p.mismatched == 0, "%s: %d of %d steps differ between replayed and re-recorded", name,
                  p.mismatched, p.steps);
        zn_backend_stats st[2];
        for (int i = 0; i < 2; i++) p.e[i].be->stats(p.e[i].be_ctx, &st[i]);
        /* 33 one-token steps; recorded: the first, each change of sequence
         * (6, the 17-key split change among them) and of the split count
         * (2: at 33 keys, after the reset). The all-logits one-token step
         * is the same graph as the others (its one row is the last row:
         * graph_build_step), so it replays too. */
        CHECK_MSG(st[0].steps == 33 && st[0].replayed == 24, "%s: %llu of %llu steps replayed", name,
                  (unsigned long long)st[0].replayed, (unsigned long long)st[0].steps);
        CHECK_EQ_INT(st[1].replayed, 0);
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-20s %llu of %llu one-token steps replayed\n", name, (unsigned long long)st[0].replayed,
                    (unsigned long long)st[0].steps);
    }
    pair_free(&p);
    model_free(&m);
}

static void test_qwen3(void) { replay_case("qwen3-dense-f32"); }
static void test_qwen35(void) { replay_case("qwen35-dense-q4_k_m"); }
static void test_llama_moe(void) { replay_case("llama-moe-q8_0"); }

int main(void) {
    char why[sizeof(zn_err) + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("vk_replay", why);
        return harness_report("vk_replay");
    }
    RUN(test_qwen3);
    RUN(test_qwen35);
    RUN(test_llama_moe);
    return harness_report("vk_replay");
}
