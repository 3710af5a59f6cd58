/* Grammar matcher and token masks (see gmatch.h). */
#include "gmatch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the vocabulary trie ---- */

typedef struct sort_ctx {
    const uint32_t *at;
    const char *pieces;
} sort_ctx;

static int piece_cmp(const void *a, const void *b, void *arg) {
    const sort_ctx *c = arg;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t nx = c->at[x + 1] - c->at[x], ny = c->at[y + 1] - c->at[y];
    int r = memcmp(c->pieces + c->at[x], c->pieces + c->at[y], nx < ny ? nx : ny);
    if (r) return r;
    if (nx != ny) return nx < ny ? -1 : 1;
    return (x > y) - (x < y);
}

zn_status vocab_trie_build(zn_vocab_trie *t, const zn_tokenizer *tok, zn_err *err) {
    memset(t, 0, sizeof *t);
    int nv = tokenizer_n_vocab(tok);
    t->n_vocab = nv;
    t->piece_at = malloc(sizeof *t->piece_at * ((size_t)nv + 1));
    t->eog = malloc(sizeof *t->eog * (size_t)(nv ? nv : 1));
    int32_t *order = malloc(sizeof *order * (size_t)(nv ? nv : 1));
    size_t cap = 1 << 20, len = 0;
    t->pieces = malloc(cap);
    if (!t->piece_at || !t->eog || !order || !t->pieces) goto nomem;
    char buf[ZN_MAX_TOKEN_BYTES];
    int n_order = 0;
    for (int i = 0; i < nv; i++) {
        t->piece_at[i] = (uint32_t)len;
        if (tokenizer_is_eog(tok, i)) {
            t->eog[t->n_eog++] = i;
            continue;
        }
        size_t k = tokenizer_token_piece(tok, i, false, buf, sizeof buf);
        if (!k) continue;
        if (len + k > cap) {
            while (len + k > cap) cap *= 2;
            char *q = realloc(t->pieces, cap);
            if (!q) goto nomem;
            t->pieces = q;
        }
        memcpy(t->pieces + len, buf, k);
        len += k;
        order[n_order++] = i;
    }
    t->piece_at[nv] = (uint32_t)len;
    sort_ctx sc = {t->piece_at, t->pieces};
    qsort_r(order, (size_t)n_order, sizeof *order, piece_cmp, &sc);
    size_t max_nodes = len + 1;
    t->byte = malloc(max_nodes);
    t->depth = malloc(sizeof *t->depth * max_nodes);
    t->skip = malloc(sizeof *t->skip * max_nodes);
    t->tok_at = malloc(sizeof *t->tok_at * (max_nodes + 1));
    t->toks = malloc(sizeof *t->toks * (size_t)(n_order ? n_order : 1));
    if (!t->byte || !t->depth || !t->skip || !t->tok_at || !t->toks) goto nomem;
    int n = 0, n_toks = 0;
    const char *prev = NULL;
    uint32_t prev_n = 0;
    for (int k = 0; k < n_order; k++) {
        int32_t id = order[k];
        const char *p = t->pieces + t->piece_at[id];
        uint32_t pn = t->piece_at[id + 1] - t->piece_at[id];
        uint32_t common = 0;
        while (prev && common < pn && common < prev_n && p[common] == prev[common]) common++;
        for (uint32_t d = common + 1; d <= pn; d++) {
            t->byte[n] = (uint8_t)p[d - 1];
            t->depth[n] = (uint16_t)d;
            t->tok_at[n] = n_toks;
            n++;
        }
        /* sorted order: a token's node is the last one made (or the previous token's, for equal pieces) */
        t->toks[n_toks++] = id;
        prev = p;
        prev_n = pn;
    }
    t->tok_at[n] = n_toks;
    t->n_nodes = n;
    int32_t *stack = malloc(sizeof *stack * (ZN_MAX_TOKEN_BYTES + 1));
    if (!stack) goto nomem;
    int sp = 0;
    for (int i = 0; i < n; i++) {
        while (sp && t->depth[stack[sp - 1]] >= t->depth[i]) t->skip[stack[--sp]] = i;
        stack[sp++] = i;
    }
    while (sp) t->skip[stack[--sp]] = n;
    free(stack);
    free(order);
    return ZN_OK;
nomem:
    free(order);
    vocab_trie_free(t);
    return zn_errf(err, ZN_ERR_NOMEM, "out of memory for the vocabulary trie (%d tokens)", nv);
}

void vocab_trie_free(zn_vocab_trie *t) {
    free(t->byte);
    free(t->depth);
    free(t->skip);
    free(t->tok_at);
    free(t->toks);
    free(t->piece_at);
    free(t->pieces);
    free(t->eog);
    memset(t, 0, sizeof *t);
}

/* ---- nodes and states ---- */

#define NODE_HASH (2 * ZN_GMATCH_MAX_NODES)
#define STATE_HASH (2 * ZN_GMATCH_MAX_STATES)

static uint32_t mix(uint32_t h, uint32_t x) {
    h ^= x + 0x9e3779b9u + (h << 6) + (h >> 2);
    return h;
}

/* The node (pos, next), made when new; -1 when the table is full. */
static int32_t node_get(zn_gmatch *m, int32_t pos, int32_t next) {
    uint32_t k = mix(mix(0, (uint32_t)pos), (uint32_t)next) & (NODE_HASH - 1);
    for (;; k = (k + 1) & (NODE_HASH - 1)) {
        int32_t v = m->nhash[k] - 1;
        if (v < 0) break;
        if (m->npos[v] == pos && m->nnext[v] == next) return v;
    }
    if (m->n_nodes == ZN_GMATCH_MAX_NODES) {
        m->full = true;
        return -1;
    }
    int32_t id = m->n_nodes++;
    m->npos[id] = pos;
    m->nnext[id] = next;
    m->mark[id] = 0;
    m->nhash[k] = id + 1;
    return id;
}

/* Expands what may come at pos with the stack `next` below: byte-set
 * positions become stack tops (scratch), rule references open their
 * alternatives, ends pop. Each node is expanded once per step. */
static void expand(zn_gmatch *m, int32_t pos, int32_t next) {
    if (m->full || m->broken) return;
    const zn_grammar *g = m->g;
    int32_t e = g->el[pos];
    if (e == ZN_GEL_END) {
        if (next < 0) {
            m->step_accept = true;
            return;
        }
        pos = m->npos[next];
        next = m->nnext[next];
        e = g->el[pos];
    }
    int32_t id = node_get(m, pos, next);
    if (id < 0 || m->mark[id] == m->stamp) return;
    m->mark[id] = m->stamp;
    if (e >= 0) {
        m->scratch[m->n_scratch++] = id;
        return;
    }
    if (++m->depth > ZN_GRAMMAR_MAX_DEPTH) {
        m->broken = true;
        return;
    }
    int r = ZN_GEL_RULE(e);
    int32_t cont = next;
    if (g->el[pos + 1] != ZN_GEL_END) { /* not a tail call: remember where to come back */
        cont = node_get(m, pos + 1, next);
        if (cont < 0) return;
    }
    for (int32_t a = g->rule_alt[r]; a < g->rule_alt[r + 1]; a++) expand(m, g->alt[a], cont);
    m->depth--;
}

static int id_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void step_begin(zn_gmatch *m) {
    if (++m->stamp == 0) { /* wrapped: no node may look seen */
        memset(m->mark, 0, sizeof *m->mark * ZN_GMATCH_MAX_NODES);
        m->stamp = 1;
    }
    m->n_scratch = 0;
    m->step_accept = false;
    m->depth = 0;
}

/* The state of the stack tops in scratch (only byte-set nodes end up
 * there), made when new; -1 when a table is full. */
static int state_of_scratch(zn_gmatch *m) {
    if (m->full || m->broken) return -1;
    if (m->n_scratch == 0 && !m->step_accept) return 0;
    qsort(m->scratch, (size_t)m->n_scratch, sizeof *m->scratch, id_cmp);
    uint32_t h = m->step_accept ? 1u : 2u;
    for (int i = 0; i < m->n_scratch; i++) h = mix(h, (uint32_t)m->scratch[i]);
    uint32_t k = h & (STATE_HASH - 1);
    for (;; k = (k + 1) & (STATE_HASH - 1)) {
        int32_t v = m->shash[k] - 1;
        if (v < 0) break;
        const zn_gstate *s = &m->st[v];
        if (s->hash == h && s->accept == m->step_accept && s->n == (uint32_t)m->n_scratch &&
            !memcmp(m->pool + s->at, m->scratch, sizeof *m->scratch * (size_t)m->n_scratch))
            return v;
    }
    if (m->n_states == ZN_GMATCH_MAX_STATES || m->n_pool + (uint32_t)m->n_scratch > ZN_GMATCH_MAX_POOL) {
        m->full = true;
        return -1;
    }
    int id = m->n_states++;
    m->st[id] = (zn_gstate){m->n_pool, (uint32_t)m->n_scratch, h, m->step_accept};
    memcpy(m->pool + m->n_pool, m->scratch, sizeof *m->scratch * (size_t)m->n_scratch);
    m->n_pool += (uint32_t)m->n_scratch;
    m->shash[k] = id + 1;
    return id;
}

static int advance(zn_gmatch *m, int s, unsigned char b) {
    step_begin(m);
    const zn_gstate *st = &m->st[s];
    for (uint32_t i = 0; i < st->n; i++) {
        int32_t id = m->pool[st->at + i];
        int32_t pos = m->npos[id];
        if (grammar_set_has(m->g, m->g->el[pos], b)) expand(m, pos + 1, m->nnext[id]);
    }
    return state_of_scratch(m);
}

/* The state after byte b: cached, else computed; -1 when a table is full. */
static inline int trans_get(zn_gmatch *m, int s, unsigned char b) {
    uint32_t v = m->trans[(size_t)s * 256 + b];
    if (v) return (int)v - 1;
    if (s == 0) return 0;
    int ns = advance(m, s, b);
    if (ns >= 0) m->trans[(size_t)s * 256 + b] = (uint32_t)ns + 1;
    return ns;
}

static void clear_tables(zn_gmatch *m) {
    memset(m->nhash, 0, sizeof *m->nhash * NODE_HASH);
    memset(m->shash, 0, sizeof *m->shash * STATE_HASH);
    memset(m->trans, 0, sizeof *m->trans * (size_t)m->n_states * 256);
    m->n_nodes = 0;
    m->n_pool = 0;
    m->st[0] = (zn_gstate){0, 0, 0, false};
    m->n_states = 1;
    for (int i = 0; i < ZN_GMATCH_MASK_CACHE; i++) m->mask_state[i] = -1;
    m->full = m->broken = false;
}

/* Starts the tables over, keeping the current state (its stacks are copied
 * into the fresh node table). false when even that does not fit. */
static bool compact(zn_gmatch *m) {
    m->n_compactions++;
    zn_gstate cs = m->st[m->cur];
    int n_old = m->n_nodes;
    memcpy(m->ctops, m->pool + cs.at, sizeof *m->ctops * cs.n);
    int32_t *t = m->npos;
    m->npos = m->opos, m->opos = t;
    t = m->nnext;
    m->nnext = m->onext, m->onext = t;
    clear_tables(m);
    for (int i = 0; i < n_old; i++) m->remap[i] = -1;
    for (uint32_t k = 0; k < cs.n; k++) {
        int sp = 0;
        m->cstack[sp++] = m->ctops[k];
        while (sp) {
            int32_t x = m->cstack[sp - 1];
            if (m->remap[x] >= 0) {
                sp--;
                continue;
            }
            int32_t nx = m->onext[x];
            if (nx >= 0 && m->remap[nx] < 0) {
                m->cstack[sp++] = nx;
                continue;
            }
            m->remap[x] = node_get(m, m->opos[x], nx < 0 ? -1 : m->remap[nx]);
            if (m->remap[x] < 0) return false;
            sp--;
        }
    }
    step_begin(m);
    for (uint32_t k = 0; k < cs.n; k++) m->scratch[m->n_scratch++] = m->remap[m->ctops[k]];
    m->step_accept = cs.accept;
    int c = state_of_scratch(m);
    if (c < 0) return false;
    m->cur = c;
    return true;
}

static int start_state(zn_gmatch *m) {
    step_begin(m);
    const zn_grammar *g = m->g;
    for (int32_t a = g->rule_alt[g->root]; a < g->rule_alt[g->root + 1]; a++) expand(m, g->alt[a], -1);
    return state_of_scratch(m);
}

/* ---- API ---- */

/* Tables cleared (those of an earlier grammar too), the start state made;
 * on failure the tables go (back to pool, or freed). */
static zn_status start(zn_gmatch *m, zn_gmatch_pool *pool, zn_err *err) {
    m->n_compactions = 0;
    clear_tables(m);
    m->cur = start_state(m);
    if (m->cur >= 0) return ZN_OK;
    bool deep = m->broken;
    gmatch_release(m, pool);
    return zn_errf(err, ZN_ERR_ARG, "grammar: its start %s", deep ? "nests rules too deeply" : "does not fit the matcher");
}

zn_status gmatch_init(zn_gmatch *m, const zn_grammar *g, const zn_vocab_trie *vt, zn_err *err) {
    memset(m, 0, sizeof *m);
    m->g = g;
    m->vt = vt;
    size_t N = ZN_GMATCH_MAX_NODES;
    m->npos = malloc(sizeof(int32_t) * N);
    m->nnext = malloc(sizeof(int32_t) * N);
    m->opos = malloc(sizeof(int32_t) * N);
    m->onext = malloc(sizeof(int32_t) * N);
    m->remap = malloc(sizeof(int32_t) * N);
    m->cstack = malloc(sizeof(int32_t) * N);
    m->ctops = malloc(sizeof(int32_t) * N);
    m->scratch = malloc(sizeof(int32_t) * N);
    m->mark = calloc(N, sizeof *m->mark);
    m->nhash = calloc(NODE_HASH, sizeof *m->nhash);
    m->st = malloc(sizeof *m->st * ZN_GMATCH_MAX_STATES);
    m->shash = calloc(STATE_HASH, sizeof *m->shash);
    m->pool = malloc(sizeof *m->pool * ZN_GMATCH_MAX_POOL);
    m->trans = calloc((size_t)ZN_GMATCH_MAX_STATES * 256, sizeof *m->trans);
    m->n_words = vt ? (vt->n_vocab + 63) / 64 : 0;
    m->masks = malloc(sizeof *m->masks * (size_t)(m->n_words ? m->n_words : 1) * ZN_GMATCH_MASK_CACHE);
    m->dfs = malloc(sizeof *m->dfs * (ZN_MAX_TOKEN_BYTES + 1));
    if (!m->npos || !m->nnext || !m->opos || !m->onext || !m->remap || !m->cstack || !m->ctops || !m->scratch ||
        !m->mark || !m->nhash || !m->st || !m->shash || !m->pool || !m->trans || !m->masks || !m->dfs) {
        gmatch_free(m);
        return zn_errf(err, ZN_ERR_NOMEM, "out of memory for the grammar matcher");
    }
    m->stamp = 1;
    return start(m, NULL, err);
}

void gmatch_free(zn_gmatch *m) {
    free(m->npos);
    free(m->nnext);
    free(m->opos);
    free(m->onext);
    free(m->remap);
    free(m->cstack);
    free(m->ctops);
    free(m->scratch);
    free(m->mark);
    free(m->nhash);
    free(m->st);
    free(m->shash);
    free(m->pool);
    free(m->trans);
    free(m->masks);
    free(m->dfs);
    memset(m, 0, sizeof *m);
}

void gmatch_pool_init(zn_gmatch_pool *p) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
}

void gmatch_pool_free(zn_gmatch_pool *p) {
    for (int i = 0; i < p->n; i++) gmatch_free(&p->spare[i]);
    pthread_mutex_destroy(&p->mu);
    memset(p, 0, sizeof *p);
}

zn_status gmatch_init_pooled(zn_gmatch *m, const zn_grammar *g, const zn_vocab_trie *vt, zn_gmatch_pool *pool,
                             zn_err *err) {
    const int n_words = vt ? (vt->n_vocab + 63) / 64 : 0;
    bool got = false;
    if (pool) {
        pthread_mutex_lock(&pool->mu);
        for (int i = pool->n - 1; i >= 0 && !got; i--)
            if (pool->spare[i].n_words == n_words) {
                *m = pool->spare[i];
                pool->spare[i] = pool->spare[--pool->n];
                got = true;
            }
        pthread_mutex_unlock(&pool->mu);
    }
    if (!got) return gmatch_init(m, g, vt, err);
    /* the stamp goes on from the last use: no node is marked with a later one */
    m->g = g;
    m->vt = vt;
    return start(m, pool, err);
}

void gmatch_release(zn_gmatch *m, zn_gmatch_pool *pool) {
    if (pool && m->npos) {
        pthread_mutex_lock(&pool->mu);
        const bool keep = pool->n < ZN_GMATCH_SPARES;
        if (keep) {
            m->g = NULL;
            m->vt = NULL;
            pool->spare[pool->n++] = *m;
        }
        pthread_mutex_unlock(&pool->mu);
        if (keep) {
            memset(m, 0, sizeof *m);
            return;
        }
    }
    gmatch_free(m);
}

void gmatch_reset(zn_gmatch *m) {
    clear_tables(m);
    m->cur = start_state(m);
    if (m->cur < 0) m->cur = 0;
}

bool gmatch_accepting(const zn_gmatch *m) { return m->st[m->cur].accept; }

bool gmatch_finished(const zn_gmatch *m) { return m->st[m->cur].accept && m->st[m->cur].n == 0; }

/* Walks bytes from the current state: the state reached (0: rejected), or
 * -1 when the tables could not hold the walk even after a compaction. */
static int walk(zn_gmatch *m, const unsigned char *p, size_t n) {
    for (int attempt = 0; attempt < 2; attempt++) {
        int s = m->cur;
        size_t i = 0;
        for (; i < n && s > 0; i++) s = trans_get(m, s, p[i]);
        if (s >= 0) return s;
        if (!compact(m)) break;
    }
    return -1;
}

bool gmatch_accept_bytes(zn_gmatch *m, const char *p, size_t n) {
    int s = walk(m, (const unsigned char *)p, n);
    if (s <= 0) return false;
    m->cur = s;
    return true;
}

bool gmatch_bytes_ok(zn_gmatch *m, const char *p, size_t n) { return walk(m, (const unsigned char *)p, n) > 0; }

static bool is_eog(const zn_vocab_trie *vt, int32_t id) {
    for (int i = 0; i < vt->n_eog; i++)
        if (vt->eog[i] == id) return true;
    return false;
}

bool gmatch_token_ok(zn_gmatch *m, int32_t id) {
    const zn_vocab_trie *vt = m->vt;
    if (id < 0 || id >= vt->n_vocab) return false;
    if (is_eog(vt, id)) return gmatch_accepting(m);
    uint32_t a = vt->piece_at[id], b = vt->piece_at[id + 1];
    if (a == b) return false;
    return walk(m, (const unsigned char *)vt->pieces + a, b - a) > 0;
}

bool gmatch_accept_token(zn_gmatch *m, int32_t id) {
    const zn_vocab_trie *vt = m->vt;
    if (id < 0 || id >= vt->n_vocab) return false;
    if (is_eog(vt, id)) return gmatch_accepting(m);
    uint32_t a = vt->piece_at[id], b = vt->piece_at[id + 1];
    return a != b && gmatch_accept_bytes(m, vt->pieces + a, b - a);
}

/* The mask of the current state into mk; false when a table filled up. */
static bool fill_mask(zn_gmatch *m, uint64_t *mk, int *count) {
    const zn_vocab_trie *vt = m->vt;
    memset(mk, 0, sizeof *mk * (size_t)m->n_words);
    int cnt = 0;
    int32_t *dfs = m->dfs;
    dfs[0] = m->cur;
    const uint8_t *byte = vt->byte;
    const uint16_t *depth = vt->depth;
    for (int i = 0; i < vt->n_nodes;) {
        int d = depth[i];
        int s = trans_get(m, dfs[d - 1], byte[i]);
        if (s < 0) return false;
        if (s == 0) {
            i = vt->skip[i];
            continue;
        }
        dfs[d] = s;
        for (int32_t k = vt->tok_at[i]; k < vt->tok_at[i + 1]; k++) {
            int32_t t = vt->toks[k];
            mk[t >> 6] |= 1ull << (t & 63);
            cnt++;
        }
        i++;
    }
    if (m->st[m->cur].accept)
        for (int i = 0; i < vt->n_eog; i++) {
            int32_t t = vt->eog[i];
            mk[t >> 6] |= 1ull << (t & 63);
            cnt++;
        }
    *count = cnt;
    return true;
}

const uint64_t *gmatch_mask(zn_gmatch *m, int *n_allowed, zn_err *err) {
    for (int attempt = 0; attempt < 2; attempt++) {
        int slot = m->cur % ZN_GMATCH_MASK_CACHE;
        uint64_t *mk = m->masks + (size_t)slot * (size_t)m->n_words;
        if (m->mask_state[slot] == m->cur) {
            *n_allowed = m->mask_count[slot];
            return mk;
        }
        int cnt = 0;
        if (fill_mask(m, mk, &cnt)) {
            m->mask_state[slot] = m->cur;
            m->mask_count[slot] = cnt;
            *n_allowed = cnt;
            return mk;
        }
        m->mask_state[slot] = -1;
        if (!compact(m)) break;
    }
    zn_errf(err, ZN_ERR_NOMEM, "the grammar needs more parser states than the matcher holds (%d states, %d nodes)",
            ZN_GMATCH_MAX_STATES, ZN_GMATCH_MAX_NODES);
    return NULL;
}

void gmatch_apply(const uint64_t *mask, float *logits, int n_vocab) {
    for (int w = 0; w * 64 < n_vocab; w++) {
        uint64_t keep = mask[w];
        if (keep == ~0ull) continue;
        int end = w * 64 + 64 < n_vocab ? w * 64 + 64 : n_vocab;
        for (int i = w * 64; i < end; i++)
            if (!((keep >> (i & 63)) & 1)) logits[i] = -INFINITY;
    }
}
