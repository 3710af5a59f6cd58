/* Token sampling: penalties, top-k, top-p, min-p, temperature, and a seeded
 * PRNG (xoshiro256**) whose state lives in the sampler, so a given seed
 * gives the same tokens on every run. The chain is llama.cpp's default
 * order: penalties -> top-k -> top-p -> min-p -> temperature -> draw.
 * temperature <= 0 means greedy (argmax after penalties). All buffers are
 * allocated at init; sampling allocates nothing.
 *
 * Sampling is defined for any float logits: a NaN logit counts as -inf (it
 * is drawn only when every candidate is NaN or -inf); when some logits are
 * +inf they share all the probability equally; when all are -inf (or NaN)
 * the candidates left after top-k are equally likely; ties go to the lower
 * id (greedy included). Non-finite logits still mean a broken model, so the
 * sampler records that it saw them (nonfinite) for the caller to report.
 * Parameters must be finite (sampler_init refuses NaN and inf). */
#ifndef ZINC_SAMPLER_H
#define ZINC_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct zn_sampler_params {
    float temperature;       /* <= 0: greedy */
    int top_k;               /* <= 0: off */
    float top_p;             /* >= 1: off */
    float min_p;             /* <= 0: off */
    float repeat_penalty;    /* 1: off; logit > 0 ? l / rp : l * rp */
    float presence_penalty;  /* 0: off; l -= pp if the token occurred */
    float frequency_penalty; /* 0: off; l -= fp * count */
    int penalty_last_n;      /* window of recent tokens the penalties see */
    uint64_t seed;
} zn_sampler_params;

/* llama.cpp's defaults: temp 0.8, top-k 40, top-p 0.95, min-p 0.05,
 * penalties off (repeat 1.0, window 64), seed 0. */
zn_sampler_params sampler_default_params(void);

typedef struct zn_sampler_cand {
    int32_t id;
    float logit;   /* then probability */
} zn_sampler_cand;

typedef struct zn_sampler {
    zn_sampler_params p;
    int n_vocab;
    uint64_t rng[4];
    zn_sampler_cand *cand;   /* [n_vocab] */
    int32_t *counts;         /* [n_vocab], zero between calls */
    int32_t *hist;           /* ring [penalty_last_n] */
    int hist_n, hist_pos, hist_cap;
    bool nonfinite;          /* the last sampler_sample saw a NaN or inf logit */
    bool full_path;          /* tests: always copy and select the whole vocabulary (the reference for the one-pass
                                scan that greedy and top-k take, with the same results) */
} zn_sampler;

zn_status sampler_init(zn_sampler *s, const zn_sampler_params *p, int n_vocab, zn_err *err);
void sampler_free(zn_sampler *s);
/* New parameters for an initialised sampler (checked as sampler_init
 * checks them; on failure it keeps the old ones), then a reset: its
 * buffers are kept, so a server slot's sampler takes each request's
 * parameters without allocating a vocabulary's worth of memory. */
zn_status sampler_set(zn_sampler *s, const zn_sampler_params *p, zn_err *err);
/* Clears the history and reseeds with p.seed. */
void sampler_reset(zn_sampler *s);
/* Records a token the sequence now contains (prompt or generated) for the
 * penalties. */
void sampler_accept(zn_sampler *s, int32_t token);
/* Picks the next token from logits [n_vocab] (not modified). */
int32_t sampler_sample(zn_sampler *s, const float *logits);
/* The same among the tokens whose bit is set in allow [(n_vocab + 63) / 64]
 * (grammar-constrained sampling): the result is what sampler_sample gives on
 * logits with every other token at -inf, except that a token left out is
 * never drawn, not even by rounding; nonfinite still looks at every logit.
 * -1 when allow is empty. */
int32_t sampler_sample_masked(zn_sampler *s, const float *logits, const uint64_t *allow);

/* Index of the largest value (the lowest index among equals); NaN ranks
 * below every number. */
int32_t sampler_argmax(const float *logits, int n);
/* Uniform double in [0, 1) from the sampler's PRNG. */
double sampler_uniform(zn_sampler *s);

#endif
