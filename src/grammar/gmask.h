/* Grammar-constrained sampling: one sequence's grammar (grammar.h) and its
 * matcher (gmatch.h) between the logits and the sampler (sampler.h).
 *
 * Each token is drawn among the tokens whose bytes the grammar accepts next
 * (end-of-generation ones only where the text is complete), then the matcher
 * advances over it. Greedy sampling first takes the unconstrained argmax and
 * keeps it when the grammar accepts it: the argmax over the allowed tokens
 * is that same token (penalties change logits token by token, ties go to the
 * lower id either way), so the result is the masked one and the mask, a walk
 * of the vocabulary trie, is computed only when the model strays. Sampling
 * with a temperature always masks first, since top-k / top-p / min-p
 * renormalize over what is left and the draw must see the allowed set.
 *
 * The vocabulary trie (zn_vocab_trie: every token's bytes) is built once per
 * model and shared; a zn_gmask is one request's, allocated when it starts
 * (gmask_init), and sampling with it allocates nothing.
 *
 * Once a token is accepted the state the next token is drawn in is known, so
 * its mask can be computed before that token's logits exist: gmask_prepare,
 * on another thread while the forward pass runs (scheduler.c), and the next
 * gmask_sample takes it instead of walking the trie. The tokens drawn are
 * the same either way: the greedy shortcut still takes the unconstrained
 * argmax first and checks it, against the prepared mask instead of the
 * matcher (the same set), and a masked draw sees the same mask.
 *
 * Threads: a zn_gmask has no lock; one thread at a time may call any of
 * these on it (the scheduler hands it to the mask thread for the step and
 * joins before sampling, which orders the memory). The vocabulary trie is
 * only read and may be shared. */
#ifndef ZINC_GMASK_H
#define ZINC_GMASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmatch.h"
#include "grammar.h"
#include "sampler.h"
#include "status.h"

typedef struct zn_gmask {
    zn_grammar g;
    zn_gmatch m;
    long n_tokens;      /* tokens sampled */
    long n_masked;      /* of them, the ones that needed the mask */
    long n_prepared;    /* masks gmask_prepare computed or took from the cache */
    long n_inline;      /* masks gmask_sample had to compute itself (none was prepared) */
    /* the prepared mask of the current state, valid until accept/reset */
    const uint64_t *ready;
    int n_ready;
    bool ready_failed;  /* gmask_prepare failed: gmask_sample returns ready_err */
    zn_err ready_err;
    zn_gmatch_pool *pool; /* where the matcher's tables go back (NULL: freed) */
} zn_gmask;

/* Compiles GBNF text[0..n) (root rule "root") for the vocabulary vt. */
zn_status gmask_init(zn_gmask *gm, const char *gbnf, size_t n, const zn_vocab_trie *vt, zn_err *err);
/* The same on the tables of a finished matcher from pool (gmatch.h), where
 * gmask_free puts them back. */
zn_status gmask_init_pooled(zn_gmask *gm, const char *gbnf, size_t n, const zn_vocab_trie *vt, zn_gmatch_pool *pool,
                            zn_err *err);
void gmask_free(zn_gmask *gm);
/* Back to the start of the grammar (the counters too). */
void gmask_reset(zn_gmask *gm);

/* The next token under the grammar, from logits [n_vocab] (not modified);
 * -1 with *err set when no token can go on (a grammar no token sequence of
 * this vocabulary completes, or one beyond the matcher's tables). Does not
 * advance: gmask_accept does. */
int32_t gmask_sample(zn_gmask *gm, zn_sampler *s, const float *logits, zn_err *err);
/* Computes (or takes from the matcher's per-state cache) the mask of the
 * current state for the next gmask_sample; idempotent until gmask_accept or
 * gmask_reset. On failure (the matcher's tables cannot hold the grammar) the
 * error is kept and the next gmask_sample returns it: the matcher is not
 * usable past that point either way. Allocates nothing. */
zn_status gmask_prepare(zn_gmask *gm, zn_err *err);
/* Advances over the token; false when the grammar rejects it. */
bool gmask_accept(zn_gmask *gm, int32_t id);
/* The text is a complete sentence and nothing may follow it. */
bool gmask_finished(const zn_gmask *gm);

#endif
