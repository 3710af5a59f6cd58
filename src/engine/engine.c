/* Engine: ties a model, a backend and a graph together and runs sequences
 * step by step. */
#include "engine.h"

#include <string.h>
#include <unistd.h>

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
    e->max_tokens = ZN_MAX_BATCH;
    e->graph_one = -1;
    zn_status st = graph_init(&e->graph, m, e->max_tokens, err);
    if (st != ZN_OK) return st;
    zn_backend_opts o = opts->be;
    o.n_threads = e->n_threads;
    o.max_tokens = e->max_tokens;
    o.arena_floats = e->graph.arena_floats;
    st = e->be->init(&e->be_ctx, m, &o, err);
    if (st != ZN_OK) {
        graph_free(&e->graph);
        memset(e, 0, sizeof *e);
    }
    return st;
}

void engine_free(zn_engine *e) {
    if (e->be && e->be_ctx) e->be->free(e->be_ctx);
    graph_free(&e->graph);
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
    s->n_past = n;
    return ZN_OK;
}

bool engine_is_recurrent(const zn_engine *e) { return model_n_attn_layers(e->model) < e->model->hp.n_layer; }

zn_status engine_decode(zn_engine *e, zn_seq *s, const int32_t *tokens, int n, float *logits, bool all_logits,
                        zn_err *err) {
    const int n_vocab = e->model->hp.n_vocab;
    if (n < 1) return zn_errf(err, ZN_ERR_ARG, "decode: no tokens");
    if (n > s->n_ctx - s->n_past)
        return zn_errf(err, ZN_ERR_ARG, "context full: %d tokens after %d do not fit in %d", n, s->n_past, s->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return zn_errf(err, ZN_ERR_ARG, "token id %d out of range [0, %d)", tokens[i], n_vocab);
    for (int done = 0; done < n;) {
        const int step = n - done < e->max_tokens ? n - done : e->max_tokens;
        const bool last_step = done + step == n;
        /* rows of logits this step produces: all of them, or the final one */
        const bool want = logits && (all_logits || last_step);
        zn_status st = ZN_OK;
        /* a graph's nodes do not depend on the position (graph_build checks its range) */
        if (step == 1 && e->graph_one == (int)all_logits && s->n_past < ZN_MAX_CTX) {
            e->graph.tokens = tokens + done;
            e->graph.n_past = s->n_past;
        } else {
            e->graph_one = -1;
            st = graph_build(&e->graph, tokens + done, step, s->n_past, all_logits, err);
            if (st == ZN_OK && step == 1) e->graph_one = (int)all_logits;
        }
        if (st == ZN_OK) st = e->be->run(e->be_ctx, s->state, &e->graph, err);
        if (st == ZN_OK && want)
            st = e->be->read(e->be_ctx, &e->graph, e->graph.logits,
                             all_logits ? logits + (size_t)done * n_vocab : logits, err);
        if (st != ZN_OK) return st;
        s->n_past += step;
        done += step;
    }
    return ZN_OK;
}
