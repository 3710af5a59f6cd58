/* Grammar-constrained decoding: which tokens may come next under a
 * grammar (grammar.h), as a bit mask over the vocabulary.
 *
 * The parser state is a set of stacks (a pushdown automaton run on every
 * alternative at once, as llama.cpp's grammar sampler does): each stack's
 * top is a byte set still to match, below it where to continue after the
 * rules that opened. Stack nodes are shared and interned (same position and
 * same rest: same node), so a set of stacks is a sorted list of node ids,
 * and sets are interned as states. A state's transitions on each byte are
 * computed once and cached; inside a JSON string or a digit run the state
 * after a character is the one before, so most steps are cache hits.
 *
 * The token mask of a state walks the vocabulary trie (zn_vocab_trie, built
 * once per tokenizer) in preorder: a subtree whose prefix is rejected is
 * skipped whole, every visited node costs one cached transition. Masks of
 * recent states are cached as well. End-of-generation tokens are allowed
 * exactly when some stack is empty (the grammar accepts).
 *
 * All memory is allocated by gmatch_init; when its tables fill up, the
 * matcher starts them over from the current state (a compaction), so a long
 * generation keeps working in bounded memory. */
#ifndef ZINC_GMATCH_H
#define ZINC_GMATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "grammar.h"
#include "limits.h"
#include "status.h"
#include "tokenizer.h"

typedef struct zn_vocab_trie {
    int n_vocab;
    int n_nodes;
    uint8_t *byte;      /* [n_nodes]: the byte of the edge into node i (preorder) */
    uint16_t *depth;    /* [n_nodes]: 1 for the root's children */
    int32_t *skip;      /* [n_nodes]: the next node outside i's subtree */
    int32_t *tok_at;    /* [n_nodes + 1]: tokens ending at node i are toks[tok_at[i] .. tok_at[i+1]) */
    int32_t *toks;
    uint32_t *piece_at; /* [n_vocab + 1]: token t's bytes are pieces[piece_at[t] .. piece_at[t+1]) */
    char *pieces;
    int32_t *eog;       /* end-of-generation tokens */
    int n_eog;
} zn_vocab_trie;

/* The trie of every token's bytes (control tokens have none and are left
 * out; end-of-generation tokens are listed apart). */
zn_status vocab_trie_build(zn_vocab_trie *t, const zn_tokenizer *tok, zn_err *err);
void vocab_trie_free(zn_vocab_trie *t);

typedef struct zn_gstate {
    uint32_t at;        /* its stack tops: pool[at .. at+n) */
    uint32_t n;
    uint32_t hash;
    bool accept;        /* some stack is empty: the text so far is complete */
} zn_gstate;

typedef struct zn_gmatch {
    const zn_grammar *g;
    const zn_vocab_trie *vt;
    /* stack nodes: position of a byte-set element (or the one after a rule
     * reference), and the node below (-1: bottom) */
    int32_t *npos, *nnext;
    int n_nodes;
    int32_t *opos, *onext, *remap, *cstack, *ctops; /* compaction: the old nodes and their copy */
    int32_t *nhash;     /* [2 * ZN_GMATCH_MAX_NODES] open addressing */
    /* states; 0 is the dead state (no stack left, not accepting) */
    zn_gstate *st;
    int n_states;
    int32_t *shash;     /* [2 * ZN_GMATCH_MAX_STATES] */
    int32_t *pool;
    uint32_t n_pool;
    uint32_t *trans;    /* [ZN_GMATCH_MAX_STATES * 256]: 0 unknown, else next state + 1 */
    /* scratch of one step */
    int32_t *scratch;
    int n_scratch;
    uint32_t *mark;     /* [ZN_GMATCH_MAX_NODES]: node seen in this step (== stamp) */
    uint32_t stamp;
    bool step_accept;
    int depth;
    bool full;          /* a table filled up during this operation */
    bool broken;        /* expansion deeper than ZN_GRAMMAR_MAX_DEPTH */
    /* masks */
    int n_words;
    uint64_t *masks;    /* [ZN_GMATCH_MASK_CACHE][n_words] */
    int32_t mask_state[ZN_GMATCH_MASK_CACHE];
    int mask_count[ZN_GMATCH_MASK_CACHE];
    int32_t *dfs;       /* [ZN_MAX_TOKEN_BYTES + 1] states along the trie path */
    int cur;            /* the current state */
    long n_compactions;
} zn_gmatch;

zn_status gmatch_init(zn_gmatch *m, const zn_grammar *g, const zn_vocab_trie *vt, zn_err *err);
void gmatch_free(zn_gmatch *m);

/* The tables of finished matchers, kept for the next ones: a matcher's
 * ~23 MiB freshly mapped cost every request its page faults (tens of ms on
 * a loaded machine, several on an idle one: bench/results/
 * 2026-12-02-h200-serve-load2.md). Shared by threads (a mutex). */
typedef struct zn_gmatch_pool {
    pthread_mutex_t mu;
    int n;
    zn_gmatch spare[ZN_GMATCH_SPARES];
} zn_gmatch_pool;

void gmatch_pool_init(zn_gmatch_pool *p);
void gmatch_pool_free(zn_gmatch_pool *p);
/* gmatch_init on a spare's tables when the pool (may be NULL) has one for
 * this vocabulary's size. */
zn_status gmatch_init_pooled(zn_gmatch *m, const zn_grammar *g, const zn_vocab_trie *vt, zn_gmatch_pool *pool,
                             zn_err *err);
/* gmatch_free, the tables kept in the pool (NULL, or full: freed). */
void gmatch_release(zn_gmatch *m, zn_gmatch_pool *pool);
/* Back to the start of the grammar. */
void gmatch_reset(zn_gmatch *m);

/* Advances over bytes; false (state unchanged) when the grammar rejects them. */
bool gmatch_accept_bytes(zn_gmatch *m, const char *p, size_t n);
/* Advances over a token (an end-of-generation token: only when accepting;
 * it does not move the state). */
bool gmatch_accept_token(zn_gmatch *m, int32_t id);
/* Whether these bytes may come next, without moving. */
bool gmatch_bytes_ok(zn_gmatch *m, const char *p, size_t n);
/* Whether the token may come next, without moving. */
bool gmatch_token_ok(zn_gmatch *m, int32_t id);
/* The text so far is a complete sentence of the grammar. */
bool gmatch_accepting(const zn_gmatch *m);
/* Accepting and nothing may follow: only an end-of-generation token. */
bool gmatch_finished(const zn_gmatch *m);

/* The tokens allowed next ([n_words] bits, valid until the next call), and
 * how many. NULL with *err set when the matcher cannot go on (a grammar
 * needing more than ZN_GMATCH_* holds). */
const uint64_t *gmatch_mask(zn_gmatch *m, int *n_allowed, zn_err *err);
/* Sets logits[i] = -INFINITY for every token the mask leaves out. */
void gmatch_apply(const uint64_t *mask, float *logits, int n_vocab);

#endif
