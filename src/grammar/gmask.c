/* Grammar-constrained sampling (see gmask.h). */
#include "gmask.h"

#include <string.h>

zn_status gmask_init(zn_gmask *gm, const char *gbnf, size_t n, const zn_vocab_trie *vt, zn_err *err) {
    memset(gm, 0, sizeof *gm);
    zn_status st = grammar_parse(&gm->g, gbnf, n, NULL, err);
    if (st) return st;
    if ((st = gmatch_init(&gm->m, &gm->g, vt, err))) {
        grammar_free(&gm->g);
        memset(gm, 0, sizeof *gm);
    }
    return st;
}

void gmask_free(zn_gmask *gm) {
    if (gm->m.g) gmatch_free(&gm->m);
    grammar_free(&gm->g);
    memset(gm, 0, sizeof *gm);
}

void gmask_reset(zn_gmask *gm) {
    gmatch_reset(&gm->m);
    gm->n_tokens = gm->n_masked = 0;
}

int32_t gmask_sample(zn_gmask *gm, zn_sampler *s, const float *logits, zn_err *err) {
    gm->n_tokens++;
    if (s->p.temperature <= 0.0f) {
        int32_t id = sampler_sample(s, logits);
        if (gmatch_token_ok(&gm->m, id)) return id;
    }
    gm->n_masked++;
    int n_allowed = 0;
    const uint64_t *mask = gmatch_mask(&gm->m, &n_allowed, err);
    if (!mask) return -1;
    if (n_allowed == 0) {
        zn_errf(err, ZN_ERR_ARG, "grammar: no token of the vocabulary can continue the text here");
        return -1;
    }
    return sampler_sample_masked(s, logits, mask);
}

bool gmask_accept(zn_gmask *gm, int32_t id) { return gmatch_accept_token(&gm->m, id); }

bool gmask_finished(const zn_gmask *gm) { return gmatch_finished(&gm->m); }
