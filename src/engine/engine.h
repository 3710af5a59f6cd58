/* The inference engine: a model + a backend + a graph, and sequences.
 *
 *   zn_engine_opts o = engine_default_opts(); o.backend = "vulkan";
 *   zn_engine e; engine_init(&e, &model, &o, &err);
 *   zn_seq s;    seq_init(&s, &e, n_ctx, &err);
 *   engine_decode(&e, &s, tokens, n, logits, false, &err); // logits [n_vocab]
 *   ... seq_free(&s); engine_free(&e);
 *
 * One engine runs one step at a time (its scratch is shared by its
 * sequences); each sequence owns its KV/recurrent state and position. A
 * step may serve several sequences at once (engine_step: one forward over
 * the decode tokens of some and prompt chunks of others, the weights read
 * once for all of them).
 * Engines are independent: one process may hold several, each with its own
 * backend, device and tuning. */
#ifndef ZINC_ENGINE_H
#define ZINC_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "graph.h"
#include "model.h"
#include "status.h"

typedef struct zn_engine {
    const zn_model *model;
    const zn_backend_ops *be;
    void *be_ctx;
    zn_graph graph;
    /* graph holds a one-token step built with this all_logits (-1: no):
     * the next such step only changes its token and position */
    int graph_one;
    int max_tokens;     /* tokens per step (ZN_STEP_TOKENS); longer inputs are split */
    int max_seqs;       /* sequences per step */
    int n_threads;
    /* engine_step's scratch, allocated at init */
    int32_t *step_tokens;      /* [max_tokens] */
    zn_step_seq *step_seqs;    /* [max_seqs] */
    void **step_states;        /* [max_seqs] */
} zn_engine;

typedef struct zn_seq {
    zn_engine *eng;
    void *state;
    int n_ctx;
    int n_past;         /* tokens already in the state */
} zn_seq;

typedef struct zn_engine_opts {
    const char *backend;  /* a name from backend_names() (NULL: "cpu") */
    zn_backend_opts be;   /* be.n_threads <= 0: all cores; be.max_tokens and be.arena_floats
                             are set by engine_init */
} zn_engine_opts;

/* The cpu backend on all cores, the backend's defaults. */
zn_engine_opts engine_default_opts(void);
/* o NULL: engine_default_opts(). */
zn_status engine_init(zn_engine *e, const zn_model *m, const zn_engine_opts *o, zn_err *err);
void engine_free(zn_engine *e);

zn_status seq_init(zn_seq *s, zn_engine *e, int n_ctx, zn_err *err);
void seq_free(zn_seq *s);
void seq_reset(zn_seq *s);

/* dst takes src's place: its recurrent state, its KV entries for positions
 * [0, n_kv), and its position (n_past). Entries of dst in [n_kv, src->n_past)
 * are not copied: the caller knows they already hold the same tokens (a
 * restore), or n_kv = src->n_past (a fork). A checkpoint of a hybrid
 * model's sequence s is a sequence of n_ctx 1, ck: seq_copy(&ck, &s, 0) saves
 * it, seq_copy(&s, &ck, 0) returns s to that position (its KV below it is
 * still valid as long as s was not reset or cut back below it since).
 * With a KV pool, dst shares src's blocks wholly below n_kv instead of
 * copying them (each copied on its first write: backend.h), so only the
 * last partial block takes a free one (ZN_ERR_KV_FULL when there is none). */
zn_status seq_copy(zn_seq *dst, const zn_seq *src, int n_kv, zn_err *err);
/* Cuts the sequence back to its first n tokens (0 <= n <= n_past): the KV
 * entries after n are forgotten. With recurrent layers only n == n_past or
 * n == 0 (a reset) can be honoured; anything else is ZN_ERR_ARG. */
zn_status seq_truncate(zn_seq *s, int n, zn_err *err);
/* Whether the model has recurrent layers: then a sequence cannot be cut back
 * to an earlier position (n_past = k), only restored from a checkpoint. */
bool engine_is_recurrent(const zn_engine *e);

/* Evaluates n tokens after the sequence's n_past ones (split into steps of at
 * most max_tokens). logits (may be NULL): all_logits ? [n][n_vocab] : the
 * last token's [n_vocab]. Token ids outside the vocab or a full context fail
 * with ZN_ERR_ARG, a KV pool without the blocks for them with
 * ZN_ERR_KV_FULL, and leave the sequence unchanged. */
zn_status engine_decode(zn_engine *e, zn_seq *s, const int32_t *tokens, int n,
                        float *logits, bool all_logits, zn_err *err);

/* One sequence's part of an engine_step. */
typedef struct zn_step_item {
    zn_seq *seq;
    const int32_t *tokens;    /* its next n tokens */
    int n;                    /* >= 1 */
    float *logits;            /* NULL: none; all_logits ? [n][n_vocab] : its last token's [n_vocab] */
    bool all_logits;
    /* Optional, with logits: set to where the step left them, the
     * backend's host memory in place when it has them there (no copy;
     * valid until e's next step), else logits, which they were copied to. */
    const float **logits_at;
} zn_step_item;

/* One step over several sequences: every item's n tokens evaluated in one
 * forward (the rows of each sequence in order, attention over its own
 * cache, its own recurrent state), each sequence's logits as if it had run
 * alone. 1 <= n_items <= e->max_seqs, each sequence of this engine at most
 * once, at most e->max_tokens tokens in all; any violation, a token id
 * outside the vocab or a full context fails with ZN_ERR_ARG, and a KV
 * pool without the blocks for them with ZN_ERR_KV_FULL, before anything
 * runs, leaving every sequence's position unchanged (blocks reserved for
 * some stay with them). A failed run leaves the
 * sequences' positions unchanged (their states may hold part of the step).
 * On a backend without multi_seq the items run one after the other (a
 * failure there leaves the items before it done). Allocates nothing. */
zn_status engine_step(zn_engine *e, const zn_step_item *items, int n_items, zn_err *err);

/* One decode step of one sequence (an engine_step of one item): its
 * logits in *at, in place in the backend's host memory when it has them
 * there (valid until e's next step), else copied to logits [n_vocab]. */
zn_status engine_next(zn_engine *e, zn_seq *s, int32_t token, float *logits, const float **at, zn_err *err);

/* The memory e's backend holds now (all zero where the backend does not
 * say). */
zn_backend_mem engine_mem(const zn_engine *e);

/* Positions the shared KV pool (zn_backend_opts.kv_pool_tokens) has free
 * now, in whole blocks; -1 without a pool. */
int64_t engine_kv_free(const zn_engine *e);
/* Number of online CPUs (>= 1). */
int engine_default_threads(void);

#endif
