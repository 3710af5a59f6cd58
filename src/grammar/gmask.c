/* Grammar-constrained sampling (see gmask.h). */
#include "gmask.h"

#include <string.h>

zn_status gmask_init_pooled(zn_gmask *gm, const char *gbnf, size_t n, const zn_vocab_trie *vt, zn_gmatch_pool *pool,
                            zn_err *err) {
    memset(gm, 0, sizeof *gm);
    zn_status st = grammar_parse(&gm->g, gbnf, n, NULL, err);
    if (st) return st;
    if ((st = gmatch_init_pooled(&gm->m, &gm->g, vt, pool, err))) {
        grammar_free(&gm->g);
        memset(gm, 0, sizeof *gm);
        return st;
    }
    gm->pool = pool;
    return ZN_OK;
}

zn_status gmask_init(zn_gmask *gm, const char *gbnf, size_t n, const zn_vocab_trie *vt, zn_err *err) {
    return gmask_init_pooled(gm, gbnf, n, vt, NULL, err);
}

void gmask_free(zn_gmask *gm) {
    if (gm->m.g) gmatch_release(&gm->m, gm->pool);
    grammar_free(&gm->g);
    memset(gm, 0, sizeof *gm);
}

static void unprepare(zn_gmask *gm) {
    gm->ready = NULL;
    gm->n_ready = 0;
    gm->ready_failed = false;
}

void gmask_reset(zn_gmask *gm) {
    gmatch_reset(&gm->m);
    unprepare(gm);
    gm->n_tokens = gm->n_masked = gm->n_prepared = gm->n_inline = 0;
}

zn_status gmask_prepare(zn_gmask *gm, zn_err *err) {
    if (gm->ready_failed) {
        if (err) *err = gm->ready_err;
        return gm->ready_err.status ? gm->ready_err.status : ZN_ERR_NOMEM;
    }
    if (gm->ready) return ZN_OK;
    int n = 0;
    const uint64_t *mk = gmatch_mask(&gm->m, &n, &gm->ready_err);
    if (!mk) {
        gm->ready_failed = true;
        if (err) *err = gm->ready_err;
        return gm->ready_err.status ? gm->ready_err.status : ZN_ERR_NOMEM;
    }
    gm->ready = mk;
    gm->n_ready = n;
    gm->n_prepared++;
    return ZN_OK;
}

static bool bit(const uint64_t *m, int n, int32_t i) { return i >= 0 && i < n && ((m[i >> 6] >> (i & 63)) & 1); }

int32_t gmask_sample(zn_gmask *gm, zn_sampler *s, const float *logits, zn_err *err) {
    gm->n_tokens++;
    if (gm->ready_failed) {
        *err = gm->ready_err;
        return -1;
    }
    if (s->p.temperature <= 0.0f) {
        int32_t id = sampler_sample(s, logits);
        /* the prepared mask is the set gmatch_token_ok tests, so the same token passes */
        if (gm->ready ? bit(gm->ready, gm->m.vt->n_vocab, id) : gmatch_token_ok(&gm->m, id)) return id;
    }
    gm->n_masked++;
    int n_allowed = gm->n_ready;
    const uint64_t *mask = gm->ready;
    if (!mask) {
        gm->n_inline++;
        mask = gmatch_mask(&gm->m, &n_allowed, err);
        if (!mask) return -1;
    }
    if (n_allowed == 0) {
        zn_errf(err, ZN_ERR_ARG, "grammar: no token of the vocabulary can continue the text here");
        return -1;
    }
    return sampler_sample_masked(s, logits, mask);
}

bool gmask_accept(zn_gmask *gm, int32_t id) {
    unprepare(gm);
    return gmatch_accept_token(&gm->m, id);
}

bool gmask_finished(const zn_gmask *gm) { return gmatch_finished(&gm->m); }
