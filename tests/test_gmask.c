/* Grammar-constrained sampling (gmask.h, sampler_sample_masked): the masked
 * draw equals drawing from logits with the left-out tokens at -inf; token
 * masks on the demo model's vocabulary equal a token-by-token check with a
 * matcher of its own; the greedy shortcut (sample, check, mask on a miss)
 * gives the tokens masking first gives; a prepared mask (gmask_prepare, the
 * scheduler's mask thread) is the mask of the state, is kept until the next
 * accept, and the draws that use it are the draws without it; a matcher on
 * the reused tables of another grammar (zn_gmatch_pool) masks and draws as
 * one on new tables; a constrained
 * run of the demo model yields JSON valid under its schema, greedy and
 * sampled. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "constrain.h"
#include "engine.h"
#include "gmask.h"
#include "harness.h"
#include "jschema.h"
#include "model.h"
#include "sampler.h"
#include "tokenizer.h"

#define DEMO "models/zinc-demo-qwen35.gguf"

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static bool bit(const uint64_t *m, int i) { return (m[i >> 6] >> (i & 63)) & 1; }

/* ---- the masked draw ---- */

static void test_sampler_masked(void) {
    enum { NV = 300 };
    const zn_sampler_params ps[] = {
        {.temperature = 0, .top_p = 1, .penalty_last_n = 0},
        {.temperature = 0, .top_p = 1, .repeat_penalty = 1.3f, .presence_penalty = 0.5f, .penalty_last_n = 16},
        {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1, .penalty_last_n = 64},
        {.temperature = 1.5f, .top_k = 0, .top_p = 1, .repeat_penalty = 1.1f, .frequency_penalty = 0.2f, .penalty_last_n = 8},
        {.temperature = 0.7f, .top_k = 5, .top_p = 0.5f, .repeat_penalty = 1, .penalty_last_n = 0},
    };
    float logits[NV], masked[NV];
    uint64_t mask[(NV + 63) / 64];
    for (size_t c = 0; c < sizeof ps / sizeof ps[0]; c++) {
        zn_sampler a, b;
        zn_err err;
        zn_sampler_params p = ps[c];
        if (p.repeat_penalty == 0) p.repeat_penalty = 1;
        p.seed = 1234 + c;
        CHECK(sampler_init(&a, &p, NV, &err) == ZN_OK);
        CHECK(sampler_init(&b, &p, NV, &err) == ZN_OK);
        int diff = 0, outside = 0;
        for (int it = 0; it < 400; it++) {
            memset(mask, 0, sizeof mask);
            int dens = 1 + (int)(rnd() % 100); /* from almost nothing allowed to almost everything */
            for (int i = 0; i < NV; i++) {
                logits[i] = (float)(rnd() % 64) / 8.0f - 4.0f; /* coarse: many ties */
                if ((int)(rnd() % 100) < dens) mask[i >> 6] |= 1ull << (i & 63);
            }
            mask[0] |= 1; /* never empty */
            for (int i = 0; i < NV; i++) masked[i] = bit(mask, i) ? logits[i] : -INFINITY;
            int32_t x = sampler_sample_masked(&a, logits, mask), y = sampler_sample(&b, masked);
            diff += x != y;
            outside += x < 0 || x >= NV || !bit(mask, x);
            CHECK(!a.nonfinite);
            sampler_accept(&a, x);
            sampler_accept(&b, y);
        }
        CHECK_MSG(diff == 0 && outside == 0, "params %zu: %d draws differ, %d outside the mask", c, diff, outside);
        memset(mask, 0, sizeof mask);
        CHECK(sampler_sample_masked(&a, logits, mask) == -1);
        sampler_free(&a);
        sampler_free(&b);
    }
}

/* ---- masks on the demo vocabulary ---- */

static const char *const SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"maxLength\":24},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},"
    "\"score\":{\"type\":\"number\"},"
    "\"alive\":{\"type\":\"boolean\"},"
    "\"side\":{\"enum\":[\"russian\",\"french\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":8},\"maxItems\":3},"
    "\"home\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":16},"
    "\"year\":{\"type\":\"integer\",\"minimum\":1700,\"maximum\":1900}},\"required\":[\"city\",\"year\"],"
    "\"additionalProperties\":false}},"
    "\"required\":[\"name\",\"age\",\"side\",\"tags\",\"home\"],\"additionalProperties\":false}";

static bool schema_gbnf(const char *schema, char **gbnf) {
    zn_err err;
    if (jschema_to_gbnf(schema, strlen(schema), "schema", gbnf, &err) == ZN_OK) return true;
    CHECK_MSG(0, "%s", err.msg);
    return false;
}

/* The demo model's tokenizer and its vocabulary trie. */
static bool demo_vocab(gguf_ctx *gg, zn_tokenizer **tok, zn_vocab_trie *vt) {
    zn_err err;
    if (gguf_open(gg, DEMO, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false;
    }
    if (tokenizer_load(tok, gg, &err) || vocab_trie_build(vt, *tok, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false;
    }
    return true;
}

static void test_masks_demo_vocab(void) {
    gguf_ctx gg;
    zn_err err;
    zn_tokenizer *tok;
    zn_vocab_trie vt;
    if (!demo_vocab(&gg, &tok, &vt)) return;
    const int nv = vt.n_vocab;
    char *gbnf;
    if (!schema_gbnf(SCHEMA, &gbnf)) return;
    zn_gmask gm;
    CHECK(gmask_init(&gm, gbnf, strlen(gbnf), &vt, &err) == ZN_OK);
    zn_grammar g2;
    zn_gmatch ref; /* the reference: no vocabulary, its own tables, fed the same bytes */
    CHECK(grammar_parse(&g2, gbnf, strlen(gbnf), NULL, &err) == ZN_OK);
    CHECK(gmatch_init(&ref, &g2, NULL, &err) == ZN_OK);
    float *logits = malloc(sizeof *logits * (size_t)nv), *masked = malloc(sizeof *masked * (size_t)nv);
    zn_sampler sa, sb;
    zn_sampler_params p = sampler_default_params();
    p.temperature = 0;
    CHECK(sampler_init(&sa, &p, nv, &err) == ZN_OK);
    CHECK(sampler_init(&sb, &p, nv, &err) == ZN_OK);
    char piece[ZN_MAX_TOKEN_BYTES];
    int bad = 0, walks_done = 0, steps = 0, fast_same = 0;
    for (int walk = 0; walk < 6; walk++) {
        gmask_reset(&gm);
        gmatch_reset(&ref);
        for (int step = 0; step < 120 && bad < 5; step++) {
            steps++;
            int n_allowed = 0;
            const uint64_t *mk = gmatch_mask(&gm.m, &n_allowed, &err);
            CHECK(mk != NULL);
            if (!mk) break;
            int cnt = 0;
            for (int t = 0; t < nv; t++) {
                bool want;
                if (tokenizer_is_eog(tok, t)) want = gmatch_accepting(&ref);
                else {
                    size_t k = tokenizer_token_piece(tok, t, false, piece, sizeof piece);
                    want = k > 0 && gmatch_bytes_ok(&ref, piece, k);
                }
                cnt += want;
                if (want != bit(mk, t) && bad++ < 5) CHECK_MSG(0, "walk %d step %d: token %d mask %d, one by one %d", walk, step, t, bit(mk, t), want);
            }
            CHECK(cnt == n_allowed);
            /* the greedy shortcut against masking first, on logits that favour a disallowed token half the time */
            for (int t = 0; t < nv; t++) logits[t] = (float)(rnd() % 1000) / 100.0f;
            if (rnd() % 2) logits[rnd() % nv] = 20;
            for (int t = 0; t < nv; t++) masked[t] = bit(mk, t) ? logits[t] : -INFINITY;
            int32_t x = gmask_sample(&gm, &sa, logits, &err), y = sampler_sample(&sb, masked);
            fast_same += x == y;
            CHECK_MSG(x == y, "step %d: shortcut %d, masked first %d", step, x, y);
            /* walk on with a random allowed token (an end-of-text one ends the walk) */
            int pick = (int)(rnd() % (unsigned)n_allowed), id = -1;
            for (int t = 0; t < nv && id < 0; t++)
                if (bit(mk, t) && pick-- == 0) id = t;
            if (tokenizer_is_eog(tok, id)) {
                CHECK(gmatch_accepting(&ref));
                walks_done++;
                break;
            }
            size_t k = tokenizer_token_piece(tok, id, false, piece, sizeof piece);
            CHECK(gmask_accept(&gm, id));
            CHECK(gmatch_accept_bytes(&ref, piece, k));
            if (gmask_finished(&gm)) {
                walks_done++;
                break;
            }
        }
    }
    CHECK(steps > 50 && fast_same == steps);
    fprintf(stderr, "    demo vocab (%d tokens): %d states checked token by token, %d walks completed, %ld of %ld "
            "greedy draws needed the mask\n", nv, steps, walks_done, gm.n_masked, gm.n_tokens);
    sampler_free(&sa);
    sampler_free(&sb);
    free(logits);
    free(masked);
    gmatch_free(&ref);
    grammar_free(&g2);
    gmask_free(&gm);
    free(gbnf);
    vocab_trie_free(&vt);
    tokenizer_free(tok);
    gguf_close(&gg);
}

/* ---- matcher tables reused (zn_gmatch_pool) ---- */

/* Walks gm (and fresh, when given: the same grammar on new tables) over
 * random logits, greedy then sampled; the draws and masks must agree.
 * Returns the tokens drawn. */
static int pool_walk(zn_gmask *gm, zn_gmask *fresh, const zn_tokenizer *tok, int nv, float *logits) {
    zn_err err;
    int n = 0;
    for (int walk = 0; walk < 2; walk++) {
        zn_sampler sa, sb;
        zn_sampler_params p = sampler_default_params();
        p.temperature = walk ? 0.9f : 0;
        p.seed = 5 + (uint64_t)walk;
        CHECK(sampler_init(&sa, &p, nv, &err) == ZN_OK);
        CHECK(sampler_init(&sb, &p, nv, &err) == ZN_OK);
        gmask_reset(gm);
        if (fresh) gmask_reset(fresh);
        for (int step = 0; step < 120; step++, n++) {
            for (int t = 0; t < nv; t++) logits[t] = (float)(rnd() % 1000) / 100.0f;
            int na = 0, nb = 0;
            const uint64_t *ma = gmatch_mask(&gm->m, &na, &err);
            CHECK(ma != NULL);
            if (fresh) {
                const uint64_t *mb = gmatch_mask(&fresh->m, &nb, &err);
                CHECK_MSG(mb && na == nb && !memcmp(ma, mb, sizeof *ma * (size_t)((nv + 63) / 64)),
                          "step %d: the reused tables' mask (%d tokens) is not the fresh one's (%d)", step, na, nb);
            }
            int32_t x = gmask_sample(gm, &sa, logits, &err);
            if (fresh) {
                int32_t y = gmask_sample(fresh, &sb, logits, &err);
                CHECK_MSG(x == y, "step %d: reused tables drew %d, fresh ones %d", step, x, y);
            }
            if (x < 0 || tokenizer_is_eog(tok, x)) break;
            CHECK(gmask_accept(gm, x));
            if (fresh) CHECK(gmask_accept(fresh, x));
            sampler_accept(&sa, x);
            sampler_accept(&sb, x);
            if (gmask_finished(gm)) break;
        }
        sampler_free(&sa);
        sampler_free(&sb);
    }
    return n;
}

static void test_pool(void) {
    gguf_ctx gg;
    zn_err err;
    zn_tokenizer *tok;
    zn_vocab_trie vt;
    if (!demo_vocab(&gg, &tok, &vt)) return;
    const int nv = vt.n_vocab;
    char *schema;
    if (!schema_gbnf(SCHEMA, &schema)) return;
    static const char other[] = "root ::= (\"yes\" | \"no\" | [0-9]+ \" apples\") \"\\n\"";
    float *logits = malloc(sizeof *logits * (size_t)nv);
    zn_gmatch_pool pool;
    gmatch_pool_init(&pool);
    /* the schema's tables, filled by a walk, then parked */
    zn_gmask a;
    CHECK(gmask_init_pooled(&a, schema, strlen(schema), &vt, &pool, &err) == ZN_OK);
    CHECK(pool_walk(&a, NULL, tok, nv, logits) > 20);
    const uint32_t *trans = a.m.trans;
    CHECK(a.m.n_states > 2);
    gmask_free(&a);
    CHECK(pool.n == 1);
    /* another grammar on them: the same masks and draws as on new tables */
    zn_gmask b, fresh;
    CHECK(gmask_init_pooled(&b, other, strlen(other), &vt, &pool, &err) == ZN_OK);
    CHECK_MSG(pool.n == 0 && b.m.trans == trans, "the parked tables were not taken");
    CHECK(gmask_init(&fresh, other, strlen(other), &vt, &err) == ZN_OK);
    CHECK(pool_walk(&b, &fresh, tok, nv, logits) > 5);
    gmask_free(&fresh);
    CHECK(pool.n == 0); /* a matcher without a pool frees its tables */
    gmask_free(&b);
    /* and the schema again, on the other grammar's tables */
    CHECK(gmask_init_pooled(&a, schema, strlen(schema), &vt, &pool, &err) == ZN_OK);
    CHECK(gmask_init(&fresh, schema, strlen(schema), &vt, &err) == ZN_OK);
    CHECK(pool.n == 0 && a.m.trans == trans);
    CHECK(pool_walk(&a, &fresh, tok, nv, logits) > 20);
    gmask_free(&fresh);
    gmask_free(&a);
    /* tables of another vocabulary size are not taken; the pool keeps at most ZN_GMATCH_SPARES */
    zn_grammar g;
    zn_gmatch m0;
    CHECK(grammar_parse(&g, other, strlen(other), NULL, &err) == ZN_OK);
    CHECK(gmatch_init_pooled(&m0, &g, NULL, &pool, &err) == ZN_OK); /* no vocabulary: the demo's size is not there */
    CHECK(pool.n == 1 && m0.trans != trans);
    gmatch_release(&m0, &pool);
    CHECK(pool.n == 2);
    CHECK(gmatch_init_pooled(&m0, &g, NULL, &pool, &err) == ZN_OK);
    CHECK(pool.n == 1 && m0.trans != trans); /* its own size's tables, the demo's stay */
    gmatch_release(&m0, &pool);
    zn_gmatch many[ZN_GMATCH_SPARES + 2];
    for (int i = 0; i < ZN_GMATCH_SPARES + 2; i++) CHECK(gmatch_init_pooled(&many[i], &g, NULL, &pool, &err) == ZN_OK);
    for (int i = 0; i < ZN_GMATCH_SPARES + 2; i++) gmatch_release(&many[i], &pool);
    CHECK(pool.n == ZN_GMATCH_SPARES);
    grammar_free(&g);
    gmatch_pool_free(&pool);
    free(logits);
    free(schema);
    vocab_trie_free(&vt);
    tokenizer_free(tok);
    gguf_close(&gg);
}

/* ---- prepared masks ---- */

static void test_prepare(void) {
    gguf_ctx gg;
    zn_err err;
    zn_tokenizer *tok;
    zn_vocab_trie vt;
    if (!demo_vocab(&gg, &tok, &vt)) return;
    const int nv = vt.n_vocab, nw = (nv + 63) / 64;
    char *gbnf;
    if (!schema_gbnf(SCHEMA, &gbnf)) return;
    /* pre: prepared before every draw; lazy: as the scheduler without the mask thread; ref: the mask itself */
    zn_gmask pre, lazy, ref;
    CHECK(gmask_init(&pre, gbnf, strlen(gbnf), &vt, &err) == ZN_OK);
    CHECK(gmask_init(&lazy, gbnf, strlen(gbnf), &vt, &err) == ZN_OK);
    CHECK(gmask_init(&ref, gbnf, strlen(gbnf), &vt, &err) == ZN_OK);
    float *logits = malloc(sizeof *logits * (size_t)nv);
    int bad = 0, steps = 0, strays = 0;
    for (int walk = 0; walk < 8 && bad < 5; walk++) {
        zn_sampler sa, sb;
        zn_sampler_params p = sampler_default_params();
        p.temperature = walk % 2 ? 0.9f : 0; /* greedy (the shortcut) and sampled (always masked) */
        p.seed = 99 + (uint64_t)walk;
        CHECK(sampler_init(&sa, &p, nv, &err) == ZN_OK);
        CHECK(sampler_init(&sb, &p, nv, &err) == ZN_OK);
        gmask_reset(&pre);
        gmask_reset(&lazy);
        gmask_reset(&ref);
        for (int step = 0; step < 150 && bad < 5; step++) {
            steps++;
            CHECK(gmask_prepare(&pre, &err) == ZN_OK);
            const uint64_t *r1 = pre.ready;
            const long np = pre.n_prepared;
            CHECK(gmask_prepare(&pre, &err) == ZN_OK); /* idempotent: the same mask, nothing recomputed */
            CHECK(pre.ready == r1 && pre.n_prepared == np);
            int na = 0;
            const uint64_t *want = gmatch_mask(&ref.m, &na, &err);
            if (!r1 || !want) {
                CHECK(0);
                break;
            }
            if (memcmp(r1, want, sizeof *want * (size_t)nw) || pre.n_ready != na)
                if (bad++ < 5) CHECK_MSG(0, "walk %d step %d: the prepared mask (%d tokens) is not the state's (%d)", walk, step, pre.n_ready, na);
            /* logits that favour a disallowed token half the time, so the greedy shortcut strays */
            for (int t = 0; t < nv; t++) logits[t] = (float)(rnd() % 1000) / 100.0f;
            if (rnd() % 2) logits[rnd() % nv] = 20;
            int32_t x = gmask_sample(&pre, &sa, logits, &err), y = gmask_sample(&lazy, &sb, logits, &err);
            if (x != y && bad++ < 5) CHECK_MSG(0, "walk %d step %d: prepared %d, without %d", walk, step, x, y);
            strays += p.temperature == 0 && x >= 0 && !gmatch_token_ok(&ref.m, (int32_t)sampler_argmax(logits, nv));
            if (x < 0 || tokenizer_is_eog(tok, x)) break;
            CHECK(gmask_accept(&pre, x) && gmask_accept(&lazy, x) && gmask_accept(&ref, x));
            CHECK(pre.ready == NULL); /* the next state's mask is not this one */
            sampler_accept(&sa, x);
            sampler_accept(&sb, x);
            if (gmask_finished(&pre)) break;
        }
        CHECK_MSG(pre.n_inline == 0, "walk %d: %ld masks computed while sampling despite a prepared one", walk, pre.n_inline);
        if (p.temperature > 0) CHECK(lazy.n_inline > 0);
        sampler_free(&sa);
        sampler_free(&sb);
    }
    CHECK(steps > 100 && strays > 10);
    fprintf(stderr, "    prepared: %d draws equal with and without, %d greedy ones strayed from the grammar\n", steps, strays);
    free(logits);
    gmask_free(&pre);
    gmask_free(&lazy);
    gmask_free(&ref);
    free(gbnf);
    vocab_trie_free(&vt);
    tokenizer_free(tok);
    gguf_close(&gg);
}

/* ---- a constrained run of the demo model ---- */

/* The subset of JSON Schema SCHEMA uses; NULL when valid, else what is wrong. */
static const char *validate(json_t *v, json_t *s) {
    const char *type = json_string_value(json_object_get(s, "type"));
    json_t *en = json_object_get(s, "enum");
    if (en) {
        size_t i;
        json_t *x;
        json_array_foreach(en, i, x) if (json_equal(x, v)) return NULL;
        return "not in enum";
    }
    if (!type) return NULL;
    if (!strcmp(type, "object")) {
        if (!json_is_object(v)) return "not an object";
        json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
        size_t i;
        json_t *x;
        json_array_foreach(req, i, x) if (!json_object_get(v, json_string_value(x))) return "a required property is missing";
        const char *k;
        json_object_foreach(v, k, x) {
            json_t *ps = json_object_get(props, k);
            if (!ps) return "a property not in the schema";
            const char *w = validate(x, ps);
            if (w) return w;
        }
    } else if (!strcmp(type, "array")) {
        if (!json_is_array(v)) return "not an array";
        json_t *mx = json_object_get(s, "maxItems");
        if (mx && json_array_size(v) > (size_t)json_integer_value(mx)) return "too many items";
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            const char *w = validate(x, json_object_get(s, "items"));
            if (w) return w;
        }
    } else if (!strcmp(type, "string")) {
        if (!json_is_string(v)) return "not a string";
        json_t *ml = json_object_get(s, "maxLength");
        size_t cps = 0;
        for (const unsigned char *p = (const unsigned char *)json_string_value(v); *p; p++) cps += (*p & 0xc0) != 0x80;
        if (ml && cps > (size_t)json_integer_value(ml)) return "string too long";
    } else if (!strcmp(type, "integer")) {
        if (!json_is_integer(v)) return "not an integer";
        json_t *lo = json_object_get(s, "minimum"), *hi = json_object_get(s, "maximum");
        if (lo && json_integer_value(v) < json_integer_value(lo)) return "below minimum";
        if (hi && json_integer_value(v) > json_integer_value(hi)) return "above maximum";
    } else if (!strcmp(type, "number")) {
        if (!json_is_number(v)) return "not a number";
    } else if (!strcmp(type, "boolean")) {
        if (!json_is_boolean(v)) return "not a boolean";
    }
    return NULL;
}

static void test_demo_run(void) {
    zn_model m;
    zn_err err;
    if (model_load(&m, DEMO, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    zn_tokenizer *tok;
    CHECK(tokenizer_load(&tok, &m.gguf, &err) == ZN_OK);
    zn_vocab_trie vt;
    CHECK(vocab_trie_build(&vt, tok, &err) == ZN_OK);
    zn_engine e;
    CHECK(engine_init(&e, &m, &(zn_engine_opts){.backend = "cpu", .be = {.n_threads = 2, .device = -1}}, &err) == ZN_OK);
    const int nv = m.hp.n_vocab;
    char *gbnf;
    if (!schema_gbnf(SCHEMA, &gbnf)) return;
    json_error_t je;
    json_t *schema = json_loads(SCHEMA, 0, &je);
    static const char prompt[] = "<|im_start|>user\nTell me about the old prince as JSON.<|im_end|>\n<|im_start|>assistant\n";
    int32_t ids[256];
    size_t n_ids = 0;
    CHECK(tokenizer_encode(tok, prompt, sizeof prompt - 1, false, true, ids, 256, &n_ids, &err) == ZN_OK);
    float *logits = malloc(sizeof *logits * (size_t)nv);
    int32_t first[512];
    int n_first = 0;
    for (int run = 0; run < 3; run++) { /* greedy, greedy with the mask always on, sampled */
        zn_gmask gm;
        CHECK(gmask_init(&gm, gbnf, strlen(gbnf), &vt, &err) == ZN_OK);
        zn_sampler smp;
        zn_sampler_params p = sampler_default_params();
        p.temperature = run == 2 ? 0.8f : 0;
        p.seed = 7;
        CHECK(sampler_init(&smp, &p, nv, &err) == ZN_OK);
        zn_seq sq;
        CHECK(seq_init(&sq, &e, 1024, &err) == ZN_OK);
        CHECK(engine_decode(&e, &sq, ids, (int)n_ids, logits, false, &err) == ZN_OK);
        char text[4096];
        size_t len = 0;
        bool ended = false;
        int n = 0;
        for (; n < 500 && !ended; n++) {
            int32_t id;
            if (run == 1) {
                int na;
                const uint64_t *mk = gmatch_mask(&gm.m, &na, &err);
                id = mk ? sampler_sample_masked(&smp, logits, mk) : -1;
            } else {
                id = gmask_sample(&gm, &smp, logits, &err);
            }
            CHECK_MSG(id >= 0, "%s", err.msg);
            if (id < 0) break;
            if (run == 0 && n_first < 512) first[n_first++] = id;
            if (run == 1) CHECK_MSG(n < n_first && first[n] == id, "token %d: %d, with the shortcut %d", n, id, n < n_first ? first[n] : -1);
            if (tokenizer_is_eog(tok, id)) {
                CHECK(gmatch_accepting(&gm.m));
                break;
            }
            CHECK(gmask_accept(&gm, id));
            sampler_accept(&smp, id);
            len += tokenizer_token_piece(tok, id, false, text + len, sizeof text - len - 1);
            if (gmask_finished(&gm)) ended = true;
            else CHECK(engine_decode(&e, &sq, &id, 1, logits, false, &err) == ZN_OK);
        }
        text[len] = 0;
        json_t *v = json_loads(text, 0, &je);
        CHECK_MSG(v != NULL, "run %d: not JSON (%s) after %d tokens: %s", run, je.text, n, text);
        const char *why = v ? validate(v, schema) : NULL;
        CHECK_MSG(!why, "run %d: %s: %s", run, why, text);
        if (run == 0) fprintf(stderr, "    greedy: %d tokens, %ld of %ld masked: %s\n", n, gm.n_masked, gm.n_tokens, text);
        json_decref(v);
        seq_free(&sq);
        sampler_free(&smp);
        gmask_free(&gm);
    }
    free(logits);
    json_decref(schema);
    free(gbnf);
    engine_free(&e);
    vocab_trie_free(&vt);
    tokenizer_free(tok);
    model_free(&m);
}

/* ---- request -> grammar (constrain.c) ---- */

/* Whether the request's grammar accepts text as a whole answer. */
static int gram_accepts(const char *gbnf, const char *text) {
    zn_grammar g;
    zn_gmatch m;
    zn_err err;
    if (grammar_parse(&g, gbnf, strlen(gbnf), NULL, &err) || gmatch_init(&m, &g, NULL, &err)) {
        CHECK_MSG(0, "%s\n%s", err.msg, gbnf);
        return -1;
    }
    int ok = gmatch_accept_bytes(&m, text, strlen(text)) && gmatch_accepting(&m);
    gmatch_free(&m);
    grammar_free(&g);
    return ok;
}

static const char *const TOOLS_JSON =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\",\"properties\":"
    "{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],\"additionalProperties\":false}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]";

/* body: the request's fields after "messages"; *gbnf NULL when unconstrained. */
static bool constrain_of(const char *fields, int fmt, bool think, char **gbnf, zn_oai_error *e) {
    char body[2048];
    snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s%s}", TOOLS_JSON, fields);
    zn_oai_req r;
    *gbnf = NULL;
    if (!oai_parse(body, strlen(body), true, &r, e)) {
        CHECK_MSG(0, "%s: %s", fields, e->message);
        return false;
    }
    zn_toolset ts;
    zn_err err;
    CHECK(toolset_parse(&ts, r.tools, strlen(r.tools), &err) == ZN_OK);
    bool ok = constrain_gbnf(&r, &ts, fmt, think, gbnf, e);
    toolset_free(&ts);
    oai_req_free(&r);
    return ok;
}

static void test_constrain(void) {
    char *g;
    zn_oai_error e;
    const char *w = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Moscow\"}}\n</tool_call>";
    const char *n = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    char two[512];
    snprintf(two, sizeof two, "%s\n%s", w, n);
    /* auto, no format: unconstrained */
    CHECK(constrain_of("", ZN_TOOLFMT_HERMES, false, &g, &e) && !g);
    /* required: a call of either tool, arguments under its schema; several only when parallel */
    CHECK(constrain_of(",\"tool_choice\":\"required\"", ZN_TOOLFMT_HERMES, false, &g, &e) && g);
    CHECK(gram_accepts(g, w) == 1 && gram_accepts(g, n) == 1 && gram_accepts(g, two) == 1);
    CHECK(gram_accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>") == 0); /* city required */
    CHECK(gram_accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>") == 0);
    CHECK(gram_accepts(g, "Sure.") == 0 && gram_accepts(g, "") == 0);
    free(g);
    CHECK(constrain_of(",\"tool_choice\":\"required\",\"parallel_tool_calls\":false", ZN_TOOLFMT_XML, false, &g, &e) && g);
    CHECK(gram_accepts(g, w) == 1 && gram_accepts(g, two) == 0);
    free(g);
    /* named: that function only */
    CHECK(constrain_of(",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"now\"}}", ZN_TOOLFMT_HERMES, false,
                       &g, &e) && g);
    CHECK(gram_accepts(g, n) == 1 && gram_accepts(g, w) == 0 && gram_accepts(g, two) == 0);
    free(g);
    /* Llama 3: bare JSON with "parameters", ';' between calls */
    CHECK(constrain_of(",\"tool_choice\":\"required\"", ZN_TOOLFMT_LLAMA3, false, &g, &e) && g);
    CHECK(gram_accepts(g, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Kyiv\"}}") == 1);
    CHECK(gram_accepts(g, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Kyiv\"}};{\"name\": \"now\", \"parameters\": {}}") == 1);
    CHECK(gram_accepts(g, w) == 0);
    free(g);
    /* a format with tools on auto: the answer, or calls with any object as arguments */
    const char *rf = ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\",\"schema\":"
                     "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}}}";
    CHECK(constrain_of(rf, ZN_TOOLFMT_HERMES, false, &g, &e) && g);
    CHECK(gram_accepts(g, "{\"n\": 5}") == 1 && gram_accepts(g, "{\"m\": 5}") == 0 && gram_accepts(g, w) == 1);
    CHECK(gram_accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"zip\": 1}}\n</tool_call>") == 1);
    free(g);
    /* after an opened <think>: free reasoning, then the answer */
    CHECK(constrain_of(",\"tool_choice\":\"none\",\"response_format\":{\"type\":\"json_object\"}", ZN_TOOLFMT_HERMES, true,
                       &g, &e) && g);
    CHECK(gram_accepts(g, "Hm, {\"not\": yet} an answer.</think>\n\n{\"a\": [1, \"b\"]}") == 1);
    CHECK(gram_accepts(g, "Hm.</think>\n\nSure.") == 0 && gram_accepts(g, "{\"a\": 1}") == 0);
    free(g);
    /* what the grammar cannot enforce: a 400 naming the keyword and the field */
    CHECK(!constrain_of(",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\",\"schema\":"
                        "{\"type\":\"object\",\"properties\":{\"z\":{\"type\":\"string\",\"pattern\":\"^a\"}}}}}",
                        ZN_TOOLFMT_HERMES, false, &g, &e) && !g);
    CHECK_MSG(e.status == 400 && !strcmp(e.param, "response_format") && strstr(e.message, "'pattern'") &&
              strstr(e.message, "#/properties/z"), "%d %s: %s", e.status, e.param, e.message);
}

int main(void) {
    RUN(test_sampler_masked);
    RUN(test_masks_demo_vocab);
    RUN(test_prepare);
    RUN(test_pool);
    RUN(test_demo_run);
    RUN(test_constrain);
    return harness_report("test_gmask");
}
