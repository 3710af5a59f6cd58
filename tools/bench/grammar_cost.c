/* The cost of grammar-constrained sampling per token on the CPU (gmask.h):
 * a token loop over synthetic logits under a JSON-schema grammar, against
 * the same loop unconstrained, for a vocabulary from a GGUF file.
 *
 *   make && cc -O2 -std=c11 -D_GNU_SOURCE -Isrc/base -Isrc/engine -Isrc/format -Isrc/grammar -Isrc/text \
 *       -o build/grammar_cost tools/bench/grammar_cost.c build/libzinc.a -lm -lpthread -ldl -ljansson -lpcre2-8
 *   build/grammar_cost GGUF [TOKENS]    (default 20000)
 *
 * Modes, each over TOKENS sampled tokens (the grammar starts over when a
 * sentence completes):
 *   sample   temperature 0.8, top-k 40 etc.: the mask is computed for every token
 *   greedy   temperature 0 on random logits: the argmax is almost never allowed, so mask + resample
 *   follow   temperature 0 on logits whose argmax is the grammar's next token (a model that follows
 *            the format): the shortcut, no mask
 * Prints us per token for each mode and for sampler_sample alone on the same
 * logits, the grammar's compile + matcher init (once per request) and the
 * vocabulary trie (once per model). The logits are synthetic so the numbers
 * are the sampler's, without a model's forward pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "gmask.h"
#include "jschema.h"
#include "sampler.h"
#include "timer.h"
#include "tokenizer.h"

static const char SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},\"score\":{\"type\":\"number\"},"
    "\"side\":{\"enum\":[\"russian\",\"french\",\"austrian\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":12},\"maxItems\":4},"
    "\"home\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":24},"
    "\"year\":{\"type\":\"integer\"}},\"required\":[\"city\",\"year\"]}},"
    "\"required\":[\"name\",\"age\",\"score\",\"side\",\"tags\",\"home\"]}";

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static void fill(float *l, int nv) {
    for (int i = 0; i < nv; i++) l[i] = (float)(rnd() % 2000) / 200.0f;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s GGUF [TOKENS]\n", argv[0]);
        return 2;
    }
    const int T = argc > 2 ? atoi(argv[2]) : 20000;
    zn_err err;
    gguf_ctx gg;
    zn_tokenizer *tok;
    if (gguf_open(&gg, argv[1], &err) || tokenizer_load(&tok, &gg, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double t0 = timer_now();
    zn_vocab_trie vt;
    if (vocab_trie_build(&vt, tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const double t_trie = timer_now() - t0;
    const int nv = vt.n_vocab;
    t0 = timer_now();
    char *gbnf;
    zn_gmask gm;
    if (jschema_to_gbnf(SCHEMA, sizeof SCHEMA - 1, "schema", &gbnf, &err) ||
        gmask_init(&gm, gbnf, strlen(gbnf), &vt, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const double t_init = timer_now() - t0;
    /* the logits of every step, made before timing */
    enum { NL = 64 };
    float *logits = malloc(sizeof *logits * (size_t)nv * NL);
    for (int k = 0; k < NL; k++) fill(logits + (size_t)k * nv, nv);
    int32_t *seq = malloc(sizeof *seq * (size_t)T);
    printf("vocabulary: %s, %d tokens; trie %.1f ms (once per model); grammar + matcher %.2f ms (once per request)\n",
           argv[1], nv, t_trie * 1e3, t_init * 1e3);
    printf("%-8s %12s %12s %12s %10s %9s\n", "mode", "us/token", "unconstr.", "overhead", "masked", "sentences");
    for (int mode = 0; mode < 3; mode++) {
        zn_sampler_params p = sampler_default_params();
        if (mode > 0) p.temperature = 0;
        zn_sampler s;
        if (sampler_init(&s, &p, nv, &err)) return 1;
        gmask_reset(&gm);
        int sentences = 0;
        double a = timer_now();
        for (int t = 0; t < T; t++) {
            float *l = logits + (size_t)(t % NL) * nv;
            float keep = 0;
            int32_t want = mode == 2 ? seq[t] : -1;
            if (want >= 0) keep = l[want], l[want] = 100;
            int32_t id = gmask_sample(&gm, &s, l, &err);
            if (want >= 0) l[want] = keep;
            if (id < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            if (mode == 0) seq[t] = id;
            if (tokenizer_is_eog(tok, id) || (gmask_accept(&gm, id) && gmask_finished(&gm))) {
                gmatch_reset(&gm.m); /* the matcher's caches stay warm across sentences only within a request */
                sentences++;
            }
        }
        double per = (timer_now() - a) / T;
        /* the same logits unconstrained */
        sampler_reset(&s);
        a = timer_now();
        long sink = 0;
        for (int t = 0; t < T; t++) sink += sampler_sample(&s, logits + (size_t)(t % NL) * nv);
        double base = (timer_now() - a) / T;
        static const char *const names[] = {"sample", "greedy", "follow"};
        printf("%-8s %12.2f %12.2f %12.2f %9.1f%% %9d%s\n", names[mode], per * 1e6, base * 1e6, (per - base) * 1e6,
               100.0 * (double)gm.n_masked / (double)(gm.n_tokens ? gm.n_tokens : 1), sentences, sink == -1 ? "!" : "");
        sampler_free(&s);
    }
    free(seq);
    free(logits);
    free(gbnf);
    gmask_free(&gm);
    vocab_trie_free(&vt);
    tokenizer_free(tok);
    gguf_close(&gg);
    return 0;
}
