/* libFuzzer target for the sampler: arbitrary logits (NaN, inf, denormals,
 * anything four bytes make) and parameters. Input layout (fuzz.h):
 * a fixed header of parameters, a token history, then the logits, one f32
 * per vocabulary entry. Checks what must hold for any input: init either
 * succeeds or fails with a message; every sampled id is in range; the same
 * parameters, history and logits give the same ids again (the seed fixes
 * the draw); with finite logits and no penalties, top-k 1 picks the argmax
 * (the lowest id among equals), as greedy does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sampler.h"

#define DRAWS 4 /* tokens sampled per input, each accepted into the history */

static uint32_t rd32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static float rdf(const uint8_t *p) {
    uint32_t u = rd32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int run(const zn_sampler_params *p, int n_vocab, const int32_t *hist, int n_hist, const float *logits,
               int32_t *out) {
    zn_sampler s;
    zn_err err;
    if (sampler_init(&s, p, n_vocab, &err) != ZN_OK) {
        if (!err.msg[0]) abort(); /* an error must say what is wrong */
        return -1;
    }
    for (int i = 0; i < n_hist; i++) sampler_accept(&s, hist[i]);
    for (int d = 0; d < DRAWS; d++) {
        int32_t id = sampler_sample(&s, logits);
        if (id < 0 || id >= n_vocab) {
            fprintf(stderr, "fuzz_sampler: id %d out of [0, %d)\n", id, n_vocab);
            abort();
        }
        out[d] = id;
        sampler_accept(&s, id);
    }
    sampler_free(&s);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < FUZZ_SAMPLER_HEADER) return 0;
    zn_sampler_params p;
    p.temperature = rdf(data + 0);
    p.top_k = (int32_t)rd32(data + 4);
    p.top_p = rdf(data + 8);
    p.min_p = rdf(data + 12);
    p.repeat_penalty = rdf(data + 16);
    p.presence_penalty = rdf(data + 20);
    p.frequency_penalty = rdf(data + 24);
    p.penalty_last_n = (int32_t)rd32(data + 28);
    /* a valid window beyond a few thousand only costs allocation time */
    if (p.penalty_last_n > FUZZ_SAMPLER_MAX_WINDOW && p.penalty_last_n <= ZN_MAX_CTX)
        p.penalty_last_n %= FUZZ_SAMPLER_MAX_WINDOW + 1;
    p.seed = (uint64_t)rd32(data + 32) | (uint64_t)rd32(data + 36) << 32;
    size_t n_hist = data[40];
    size_t off = FUZZ_SAMPLER_HEADER;
    if (n_hist * 4 > size - off) n_hist = (size - off) / 4;
    int32_t hist[256];
    for (size_t i = 0; i < n_hist; i++, off += 4) hist[i] = (int32_t)rd32(data + off);
    size_t n_vocab = (size - off) / 4;
    if (n_vocab == 0) return 0;
    if (n_vocab > FUZZ_SAMPLER_MAX_VOCAB) n_vocab = FUZZ_SAMPLER_MAX_VOCAB;
    float *logits = malloc(n_vocab * sizeof *logits);
    if (!logits) return 0;
    bool finite = true;
    for (size_t i = 0; i < n_vocab; i++, off += 4) {
        logits[i] = rdf(data + off);
        finite &= isfinite(logits[i]) != 0;
    }

    int32_t a[DRAWS], b[DRAWS];
    if (run(&p, (int)n_vocab, hist, (int)n_hist, logits, a) == 0) {
        if (run(&p, (int)n_vocab, hist, (int)n_hist, logits, b) != 0 || memcmp(a, b, sizeof a)) {
            fprintf(stderr, "fuzz_sampler: the same input sampled differently\n");
            abort();
        }
        /* top-k 1 is greedy: without penalties every draw is the argmax */
        zn_sampler_params q = p;
        q.top_k = 1;
        q.repeat_penalty = 1.0f;
        q.presence_penalty = q.frequency_penalty = 0.0f;
        if (finite && q.temperature > 0 && run(&q, (int)n_vocab, hist, (int)n_hist, logits, b) == 0) {
            int32_t am = sampler_argmax(logits, (int)n_vocab);
            for (int d = 0; d < DRAWS; d++)
                if (b[d] != am) {
                    fprintf(stderr, "fuzz_sampler: top-k 1 drew %d, argmax is %d\n", b[d], am);
                    abort();
                }
        }
    }
    free(logits);
    return 0;
}
