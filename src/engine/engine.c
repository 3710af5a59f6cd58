/* Engine: ties a model, a backend and a graph together and runs sequences
 * step by step. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limits.h"

int engine_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > ZN_MAX_THREADS ? ZN_MAX_THREADS : (int)n;
}

zn_engine_opts engine_default_opts(void) { return (zn_engine_opts){.backend = NULL, .be = backend_default_opts()}; }

zn_status engine_init(zn_engine *e, const zn_model *m, const zn_engine_opts *opts, zn_err *err) {
    memset(e, 0, sizeof *e);
    const zn_engine_opts def = engine_default_opts();
    if (!opts) opts = &def;
    const char *backend = opts->backend ? opts->backend : "cpu";
    const int n_threads = opts->be.n_threads;
    e->be = backend_find(backend);
    if (!e->be)
        return zn_errf(err, ZN_ERR_ARG, "unknown backend '%s' (available: %s)", backend, backend_names());
    if (opts->be.tune && strspn(opts->be.tune, ", \t") < strlen(opts->be.tune) && !e->be->tuning)
        return zn_errf(err, ZN_ERR_ARG, "the %s backend has no tuning keys ('%s')", backend, opts->be.tune);
    e->model = m;
    e->n_threads = n_threads > 0 ? n_threads : engine_default_threads();
    if (e->n_threads > ZN_MAX_THREADS)
        return zn_errf(err, ZN_ERR_ARG, "%d threads: at most %d", e->n_threads, ZN_MAX_THREADS);
    e->max_tokens = ZN_STEP_TOKENS;
    e->max_seqs = ZN_MAX_STEP_SEQS;
    e->graph_one = -1;
    e->step_tokens = malloc(sizeof *e->step_tokens * (size_t)e->max_tokens);
    e->step_seqs = malloc(sizeof *e->step_seqs * (size_t)e->max_seqs);
    e->step_states = malloc(sizeof *e->step_states * (size_t)e->max_seqs);
    if (!e->step_tokens || !e->step_seqs || !e->step_states) {
        engine_free(e);
        return zn_errf(err, ZN_ERR_NOMEM, "engine: out of memory");
    }
    zn_status st = graph_init(&e->graph, m, e->max_tokens, err);
    if (st != ZN_OK) {
        engine_free(e);
        return st;
    }
    zn_backend_opts o = opts->be;
    o.n_threads = e->n_threads;
    o.max_tokens = e->max_tokens;
    o.arena_floats = e->graph.arena_floats;
    st = e->be->init(&e->be_ctx, m, &o, err);
    if (st != ZN_OK) {
        e->be_ctx = NULL;
        engine_free(e);
    }
    return st;
}

void engine_free(zn_engine *e) {
    if (e->be && e->be_ctx) e->be->free(e->be_ctx);
    graph_free(&e->graph);
    free(e->step_tokens);
    free(e->step_seqs);
    free(e->step_states);
    memset(e, 0, sizeof *e);
}

zn_status seq_init(zn_seq *s, zn_engine *e, int n_ctx, zn_err *err) {
    memset(s, 0, sizeof *s);
    zn_status st = e->be->seq_init(e->be_ctx, &s->state, n_ctx, err);
    if (st != ZN_OK) return st;
    s->eng = e;
    s->n_ctx = n_ctx;
    return ZN_OK;
}

void seq_free(zn_seq *s) {
    if (s->eng && s->state) s->eng->be->seq_free(s->eng->be_ctx, s->state);
    memset(s, 0, sizeof *s);
}

void seq_reset(zn_seq *s) {
    s->eng->be->seq_reset(s->eng->be_ctx, s->state);
    s->n_past = 0;
}

zn_status seq_copy(zn_seq *dst, const zn_seq *src, int n_kv, zn_err *err) {
    if (!dst->eng || dst->eng != src->eng) return zn_errf(err, ZN_ERR_ARG, "seq_copy: sequences of different engines");
    if (n_kv < 0 || n_kv > src->n_past || n_kv > dst->n_ctx)
        return zn_errf(err, ZN_ERR_ARG, "seq_copy: %d KV positions of a sequence at %d into a context of %d", n_kv,
                       src->n_past, dst->n_ctx);
    /* the backend takes (or shares) dst's blocks itself */
    zn_status st = dst->eng->be->seq_copy(dst->eng->be_ctx, dst->state, src->state, n_kv, err);
    if (st == ZN_OK) dst->n_past = src->n_past;
    return st;
}

zn_status seq_truncate(zn_seq *s, int n, zn_err *err) {
    if (n < 0 || n > s->n_past) return zn_errf(err, ZN_ERR_ARG, "seq_truncate: %d of %d tokens", n, s->n_past);
    if (n == s->n_past) return ZN_OK;
    if (n == 0) {
        seq_reset(s);
        return ZN_OK;
    }
    if (engine_is_recurrent(s->eng))
        return zn_errf(err, ZN_ERR_ARG, "seq_truncate: a recurrent state cannot be cut back (%d -> %d tokens)", s->n_past, n);
    s->eng->be->seq_trim(s->eng->be_ctx, s->state, n);
    s->n_past = n;
    return ZN_OK;
}

bool engine_is_recurrent(const zn_engine *e) { return model_n_attn_layers(e->model) < e->model->hp.n_layer; }

/* Rows [row0, +n_rows) of the last run's logits for an item: in place
 * when it takes them so (logits_at) and the backend has them in host
 * memory, else copied to logits. */
static zn_status read_logits(zn_engine *e, int row0, int n_rows, float *logits, const float **logits_at, zn_err *err) {
    const float *v = logits_at && e->be->view ? e->be->view(e->be_ctx, &e->graph, e->graph.logits, row0, n_rows) : NULL;
    if (logits_at) *logits_at = v ? v : logits;
    return v ? ZN_OK : e->be->read(e->be_ctx, &e->graph, e->graph.logits, row0, n_rows, logits, err);
}

/* One step of one sequence: n <= max_tokens tokens; logits: NULL, or
 * all_logits ? [n][n_vocab] : [n_vocab] (logits_at: as zn_step_item's). */
static zn_status step_one(zn_engine *e, zn_seq *s, const int32_t *tokens, int n, float *logits, bool all_logits,
                          const float **logits_at, zn_err *err) {
    zn_status st = ZN_OK;
    /* a graph's nodes do not depend on the position (graph_build checks its range) */
    if (n == 1 && e->graph_one == (int)all_logits && s->n_past < ZN_MAX_CTX) {
        graph_set_step(&e->graph, tokens, 1, s->n_past);
    } else {
        e->graph_one = -1;
        st = graph_build(&e->graph, tokens, n, s->n_past, all_logits, err);
        if (st == ZN_OK && n == 1) e->graph_one = (int)all_logits;
    }
    if (st == ZN_OK) st = e->be->run(e->be_ctx, &s->state, &e->graph, err);
    if (st == ZN_OK && logits) st = read_logits(e, 0, e->graph.n_out, logits, logits_at, err);
    if (st == ZN_OK) s->n_past += n;
    return st;
}

zn_status engine_decode(zn_engine *e, zn_seq *s, const int32_t *tokens, int n, float *logits, bool all_logits,
                        zn_err *err) {
    const int n_vocab = e->model->hp.n_vocab;
    if (n < 1) return zn_errf(err, ZN_ERR_ARG, "decode: no tokens");
    if (n > s->n_ctx - s->n_past)
        return zn_errf(err, ZN_ERR_ARG, "context full: %d tokens after %d do not fit in %d", n, s->n_past, s->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return zn_errf(err, ZN_ERR_ARG, "token id %d out of range [0, %d)", tokens[i], n_vocab);
    zn_status st = e->be->seq_reserve(e->be_ctx, s->state, s->n_past, s->n_past + n, err);
    if (st != ZN_OK) return st;
    for (int done = 0; done < n;) {
        const int step = n - done < e->max_tokens ? n - done : e->max_tokens;
        const bool last_step = done + step == n;
        /* rows of logits this step produces: all of them, or the final one */
        float *out = !logits ? NULL : all_logits ? logits + (size_t)done * n_vocab : last_step ? logits : NULL;
        st = step_one(e, s, tokens + done, step, out, all_logits, NULL, err);
        if (st != ZN_OK) return st;
        done += step;
    }
    return ZN_OK;
}

zn_status engine_step(zn_engine *e, const zn_step_item *items, int n_items, zn_err *err) {
    const int n_vocab = e->model->hp.n_vocab;
    if (n_items < 1 || n_items > e->max_seqs)
        return zn_errf(err, ZN_ERR_ARG, "step: %d sequences (1 to %d)", n_items, e->max_seqs);
    int total = 0;
    for (int i = 0; i < n_items; i++) {
        const zn_step_item *it = &items[i];
        const zn_seq *s = it->seq;
        if (!s || s->eng != e) return zn_errf(err, ZN_ERR_ARG, "step: item %d is not a sequence of this engine", i);
        if (it->n < 1 || it->n > e->max_tokens - total)
            return zn_errf(err, ZN_ERR_ARG, "step: %d + %d tokens (a step takes at most %d)", total, it->n,
                           e->max_tokens);
        total += it->n;
        if (it->n > s->n_ctx - s->n_past)
            return zn_errf(err, ZN_ERR_ARG, "context full: %d tokens after %d do not fit in %d", it->n, s->n_past,
                           s->n_ctx);
        for (int j = 0; j < it->n; j++)
            if (it->tokens[j] < 0 || it->tokens[j] >= n_vocab)
                return zn_errf(err, ZN_ERR_ARG, "token id %d out of range [0, %d)", it->tokens[j], n_vocab);
        for (int j = 0; j < i; j++)
            if (items[j].seq == s) return zn_errf(err, ZN_ERR_ARG, "step: items %d and %d are one sequence", j, i);
    }
    for (int i = 0; i < n_items; i++) {
        const zn_seq *s = items[i].seq;
        zn_status st = e->be->seq_reserve(e->be_ctx, s->state, s->n_past, s->n_past + items[i].n, err);
        if (st != ZN_OK) return st;
    }
    if (n_items == 1 || !e->be->multi_seq) { /* the one-sequence step (backends record and replay it) */
        for (int i = 0; i < n_items; i++) {
            const zn_step_item *it = &items[i];
            zn_status st = step_one(e, it->seq, it->tokens, it->n, it->logits, it->all_logits, it->logits_at, err);
            if (st != ZN_OK) return st;
        }
        return ZN_OK;
    }
    int row = 0;
    for (int i = 0; i < n_items; i++) {
        const zn_step_item *it = &items[i];
        memcpy(e->step_tokens + row, it->tokens, sizeof *it->tokens * (size_t)it->n);
        row += it->n;
        e->step_seqs[i] = (zn_step_seq){.n_rows = it->n, .n_past = it->seq->n_past,
                                        .out = !it->logits ? ZN_OUT_NONE : it->all_logits ? ZN_OUT_ALL : ZN_OUT_LAST};
        e->step_states[i] = it->seq->state;
    }
    e->graph_one = -1;
    zn_status st = graph_build_step(&e->graph, e->step_tokens, e->step_seqs, n_items, err);
    if (st == ZN_OK) st = e->be->run(e->be_ctx, e->step_states, &e->graph, err);
    for (int i = 0; st == ZN_OK && i < n_items; i++) {
        const zn_step_item *it = &items[i];
        if (it->logits)
            st = read_logits(e, e->step_seqs[i].out0, it->all_logits ? it->n : 1, it->logits, it->logits_at, err);
    }
    if (st != ZN_OK) return st;
    for (int i = 0; i < n_items; i++) items[i].seq->n_past += items[i].n;
    return ZN_OK;
}

zn_status engine_next(zn_engine *e, zn_seq *s, int32_t token, float *logits, const float **at, zn_err *err) {
    const zn_step_item it = {.seq = s, .tokens = &token, .n = 1, .logits = logits, .logits_at = at};
    return engine_step(e, &it, 1, err);
}

int64_t engine_kv_free(const zn_engine *e) {
    const zn_backend_mem m = engine_mem(e);
    return m.kv_pool ? m.kv_blocks_free * ZN_KV_BLOCK : -1;
}

zn_backend_mem engine_mem(const zn_engine *e) {
    zn_backend_mem m = {0};
    if (e->be->mem) e->be->mem(e->be_ctx, &m);
    return m;
}
