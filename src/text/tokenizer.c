/* Tokenizer: vocab loading, special-token handling, encode/decode dispatch
 * and the streaming detokenizer. The algorithms live in tokenizer_bpe.c,
 * tokenizer_spm.c and tokenizer_wpm.c. */
#include "tokenizer.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "utf8.h"

/* ---- small containers ---------------------------------------------- */

uint64_t tok_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

zn_status tok_map_init(tok_map *m, size_t n, const char *const *keys, const uint32_t *lens) {
    size_t size = 16;
    while (size < 2 * n) size *= 2;
    m->slots = calloc(size, sizeof *m->slots);
    m->mask = (uint32_t)(size - 1);
    m->keys = keys;
    m->lens = lens;
    return m->slots ? ZN_OK : ZN_ERR_NOMEM;
}

void tok_map_free(tok_map *m) {
    free(m->slots);
    m->slots = NULL;
}

static bool key_eq(const tok_map *m, uint32_t v, const char *s, size_t n) {
    return m->lens[v] == n && !memcmp(m->keys[v], s, n);
}

void tok_map_put(tok_map *m, uint32_t v, bool keep_first) {
    uint32_t i = (uint32_t)tok_hash(m->keys[v], m->lens[v]) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        uint32_t e = m->slots[i];
        if (!e) {
            m->slots[i] = v + 1;
            return;
        }
        if (key_eq(m, e - 1, m->keys[v], m->lens[v])) {
            if (!keep_first) m->slots[i] = v + 1;
            return;
        }
    }
}

int32_t tok_map_get(const tok_map *m, const char *s, size_t n) {
    if (!m->slots) return -1;
    for (uint32_t i = (uint32_t)tok_hash(s, n) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t e = m->slots[i];
        if (!e) return -1;
        if (key_eq(m, e - 1, s, n)) return (int32_t)(e - 1);
    }
}

void *tok_grow(void *v, size_t n, size_t *cap, size_t elem, size_t min) {
    if (n < *cap) return v;
    size_t c = *cap ? *cap * 2 : min;
    void *p = realloc(v, c * elem);
    if (p) *cap = c;
    return p;
}

zn_status tok_ids_push(tok_ids *o, int32_t id) {
    int32_t *p = tok_grow(o->v, o->n, &o->cap, sizeof *p, 256);
    if (!p) return ZN_ERR_NOMEM;
    o->v = p;
    o->v[o->n++] = id;
    return ZN_OK;
}

static bool bigram_less(const tok_bigram *a, const tok_bigram *b) {
    return a->prio < b->prio || (a->prio == b->prio && a->left < b->left);
}

zn_status tok_heap_push(tok_heap *h, tok_bigram b) {
    tok_bigram *p = tok_grow(h->v, h->n, &h->cap, sizeof *p, 64);
    if (!p) return ZN_ERR_NOMEM;
    h->v = p;
    size_t i = h->n++;
    while (i > 0 && bigram_less(&b, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = b;
    return ZN_OK;
}

tok_bigram tok_heap_pop(tok_heap *h) {
    tok_bigram top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && bigram_less(&h->v[c + 1], &h->v[c])) c++;
        if (!bigram_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

int32_t tok_merge(const char *w, size_t n, tok_sym *sy, tok_heap *h, tok_pair_fn pair, const void *ctx) {
    int32_t ns = 0;
    for (size_t off = 0; off < n; ns++) {
        size_t k = utf8_lead_len((uint8_t)w[off]);
        if (k > n - off) k = n - off;
        sy[ns] = (tok_sym){(uint32_t)off, (uint32_t)k, ns - 1, off + k == n ? -1 : ns + 1};
        off += k;
    }
    h->n = 0;
    for (int32_t i = 1; i < ns; i++)
        if (pair(ctx, sy, i - 1, i, h)) return -1;
    while (h->n) {
        tok_bigram b = tok_heap_pop(h);
        tok_sym *l = &sy[b.left], *r = &sy[b.right];
        /* Symbols only grow, so a pair whose sides kept their lengths is
         * still adjacent and unchanged; otherwise it is stale. */
        if (l->n != b.ln || r->n != b.rn) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sy[r->next].prev = b.left;
        if (pair(ctx, sy, l->prev, b.left, h) || pair(ctx, sy, b.left, l->next, h)) return -1;
    }
    return ns;
}

/* ---- loading --------------------------------------------------------- */

/* llama.cpp's tokenizer.ggml.token_type values */
enum { TT_UNDEFINED, TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER_DEFINED, TT_UNUSED, TT_BYTE };

static uint32_t attr_of_type(int64_t tt) {
    switch (tt) {
    case TT_NORMAL: return ZN_TOKEN_ATTR_NORMAL;
    case TT_UNKNOWN: return ZN_TOKEN_ATTR_UNKNOWN;
    case TT_CONTROL: return ZN_TOKEN_ATTR_CONTROL;
    case TT_USER_DEFINED: return ZN_TOKEN_ATTR_USER_DEFINED;
    case TT_UNUSED: return ZN_TOKEN_ATTR_UNUSED;
    case TT_BYTE: return ZN_TOKEN_ATTR_BYTE;
    default: return 0;
    }
}

static int32_t find_str(const zn_tokenizer *t, const char *s) { return tok_map_get(&t->tok_to_id, s, strlen(s)); }

static zn_status load_vocab(zn_tokenizer *t, const gguf_ctx *g, zn_err *err) {
    const gguf_arr *toks, *scores = NULL, *types = NULL;
    zn_status s = gguf_get_arr(g, "tokenizer.ggml.tokens", &toks, err);
    if (s == ZN_ERR_NOT_FOUND) return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.tokens missing", g->path);
    if (s) return s;
    if (toks->type != GGUF_TYPE_STRING)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.tokens: array of %s, want string", g->path,
                       gguf_type_name(toks->type));
    if (toks->n == 0 || toks->n > ZN_MAX_VOCAB)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.tokens: %llu entries (want 1..%d)", g->path,
                       (unsigned long long)toks->n, ZN_MAX_VOCAB);
    uint32_t n = (uint32_t)toks->n;
    if ((s = gguf_get_arr(g, "tokenizer.ggml.scores", &scores, err)) == ZN_ERR_NOT_FOUND) scores = NULL;
    else if (s) return s;
    else if ((scores->type != GGUF_TYPE_FLOAT32 && scores->type != GGUF_TYPE_INT32) || scores->n < n)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.scores: %llu of %s for %u tokens", g->path,
                       (unsigned long long)scores->n, gguf_type_name(scores->type), n);
    if ((s = gguf_get_arr(g, "tokenizer.ggml.token_type", &types, err)) == ZN_ERR_NOT_FOUND) types = NULL;
    else if (s) return s;
    else if (types->type != GGUF_TYPE_INT32 || types->n < n)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.token_type: %llu of %s for %u tokens", g->path,
                       (unsigned long long)types->n, gguf_type_name(types->type), n);

    size_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (toks->strs[i].len > ZN_MAX_TOKEN_BYTES)
            return zn_errf(err, ZN_ERR_FORMAT, "%s: token %u is %llu bytes (limit %d)", g->path, i,
                           (unsigned long long)toks->strs[i].len, ZN_MAX_TOKEN_BYTES);
        bytes += (toks->strs[i].len ? toks->strs[i].len : 24) + 1;
    }
    t->n_vocab = (int32_t)n;
    t->arena = malloc(bytes);
    t->text = malloc(n * sizeof *t->text);
    t->len = malloc(n * sizeof *t->len);
    t->score = malloc(n * sizeof *t->score);
    t->attr = malloc(n * sizeof *t->attr);
    if (!t->arena || !t->text || !t->len || !t->score || !t->attr || tok_map_init(&t->tok_to_id, n, t->text, t->len))
        return zn_errf(err, ZN_ERR_NOMEM, "%s: vocab of %u tokens: out of memory", g->path, n);
    char *p = t->arena;
    for (uint32_t i = 0; i < n; i++) {
        size_t k = toks->strs[i].len;
        if (k) memcpy(p, toks->strs[i].ptr, k);
        else k = (size_t)sprintf(p, "[EMPTY_%u]", i); /* as llama.cpp names empty entries */
        p[k] = 0;
        t->text[i] = p;
        t->len[i] = (uint32_t)k;
        p += k + 1;
        if (k > t->max_token_len) t->max_token_len = (uint32_t)k;
        t->score[i] = scores ? (float)gguf_arr_float(scores, i) : 0.0f;
        t->attr[i] = types ? attr_of_type(gguf_arr_int(types, i)) : ZN_TOKEN_ATTR_NORMAL;
        tok_map_put(&t->tok_to_id, i, false); /* a repeated entry maps to its last id */
    }
    return ZN_OK;
}

/* Finds a token by the first of several spellings, marks it control. */
static void detect_by_text(zn_tokenizer *t, int32_t *id, const char *const *names) {
    if (*id != ZN_TOKEN_NULL) return;
    for (; *names; names++) {
        int32_t v = find_str(t, *names);
        if (v >= 0) {
            *id = v;
            t->attr[v] |= ZN_TOKEN_ATTR_CONTROL;
            return;
        }
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static zn_status build_eog(zn_tokenizer *t, const int32_t *fim_extra, zn_err *err) {
    static const char *const eog_names[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~["};
    size_t cap = sizeof eog_names / sizeof eog_names[0] + 6;
    t->eog = malloc(cap * sizeof *t->eog);
    if (!t->eog) return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory");
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        if (fim_extra[i] >= 0) t->eog[n++] = fim_extra[i];
    for (size_t i = 0; i < sizeof eog_names / sizeof eog_names[0]; i++) {
        int32_t v = find_str(t, eog_names[i]);
        if (v < 0) continue;
        t->eog[n++] = v;
        t->attr[v] |= ZN_TOKEN_ATTR_CONTROL;
    }
    /* gpt-oss renders these even without special: plain user-defined */
    static const char *const shown[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        int32_t v = find_str(t, shown[i]);
        if (v >= 0) t->attr[v] = ZN_TOKEN_ATTR_USER_DEFINED;
    }
    if (t->eos >= 0) t->eog[n++] = t->eos;
    if (t->eot >= 0) t->eog[n++] = t->eot;
    if (t->eom >= 0) t->eog[n++] = t->eom;
    qsort(t->eog, n, sizeof *t->eog, cmp_i32);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || t->eog[u - 1] != t->eog[i]) t->eog[u++] = t->eog[i];
    t->n_eog = u;
    /* harmony / solar-open: "<|end|>" ends a message, not the generation */
    int32_t end = find_str(t, "<|end|>");
    bool two_stops = (tokenizer_is_eog(t, find_str(t, "<|return|>")) && tokenizer_is_eog(t, find_str(t, "<|call|>"))) ||
                     (tokenizer_is_eog(t, find_str(t, "<|calls|>")) && tokenizer_is_eog(t, find_str(t, "<|flush|>")));
    int32_t drop = ZN_TOKEN_NULL;
    if (two_stops && tokenizer_is_eog(t, end)) drop = end, t->attr[end] = ZN_TOKEN_ATTR_USER_DEFINED;
    /* gemma 4: "</s>" is ordinary text there */
    int32_t s_id = find_str(t, "</s>");
    if (drop < 0 && tokenizer_is_eog(t, find_str(t, "<|tool_response>")) && tokenizer_is_eog(t, s_id))
        drop = s_id, t->attr[s_id] = ZN_TOKEN_ATTR_NORMAL;
    if (drop >= 0) {
        size_t k = 0;
        for (size_t i = 0; i < t->n_eog; i++)
            if (t->eog[i] != drop) t->eog[k++] = t->eog[i];
        t->n_eog = k;
    }
    return ZN_OK;
}

/* longest first, so a longer special token wins over one it contains */
static int cmp_special(const void *a, const void *b, void *ctx) {
    const zn_tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static zn_status build_special(zn_tokenizer *t, const gguf_ctx *g, zn_err *err) {
    size_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (t->attr[i] & (ZN_TOKEN_ATTR_CONTROL | ZN_TOKEN_ATTR_USER_DEFINED | ZN_TOKEN_ATTR_UNKNOWN)) n++;
    t->special = malloc((n ? n : 1) * sizeof *t->special);
    if (!t->special) return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory");
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (t->attr[i] & (ZN_TOKEN_ATTR_CONTROL | ZN_TOKEN_ATTR_USER_DEFINED | ZN_TOKEN_ATTR_UNKNOWN))
            t->special[t->n_special++] = i;
    qsort_r(t->special, t->n_special, sizeof *t->special, cmp_special, t);

    /* Phi-3's special tokens swallow the spaces after them (its HF config
     * says rstrip); GGUF has no field for it, so llama.cpp keys it on the name. */
    char name[256];
    gguf_get_str_or(g, "general.name", name, sizeof name, "");
    for (char *c = name; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (strstr(name, "phi-3") || strstr(name, "phi3")) {
        for (size_t i = 0; i < t->n_special; i++) t->attr[t->special[i]] |= ZN_TOKEN_ATTR_RSTRIP;
        int32_t v = find_str(t, "</s>");
        if (v >= 0) t->attr[v] |= ZN_TOKEN_ATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t i = 0; i < 3; i++)
            if ((v = find_str(t, keep[i])) >= 0) t->attr[v] &= ~(uint32_t)ZN_TOKEN_ATTR_RSTRIP;
    }
    return ZN_OK;
}

static void set_id(const zn_tokenizer *t, const gguf_ctx *g, const char *key, int32_t *id) {
    int64_t v = gguf_get_int_or(g, key, -1);
    if (v >= 0 && v < t->n_vocab) *id = (int32_t)v; /* out of range: keep the default */
}

zn_status tokenizer_load(zn_tokenizer **out, const gguf_ctx *g, zn_err *err) {
    *out = NULL;
    char model[64], pre[64];
    if (!gguf_find_kv(g, "tokenizer.ggml.model"))
        return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.model missing (no vocab)", g->path);
    gguf_get_str_or(g, "tokenizer.ggml.model", model, sizeof model, "");
    gguf_get_str_or(g, "tokenizer.ggml.pre", pre, sizeof pre, "");
    zn_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory");
    t->bos = t->eos = t->eot = t->eom = t->unk = t->sep = t->pad = t->mask = ZN_TOKEN_NULL;
    zn_status s = load_vocab(t, g, err);
    if (s) goto fail;

    /* defaults per model type, as llama.cpp; metadata overrides below */
    if (!strcmp(model, "llama")) {
        t->kind = ZN_TOK_SPM;
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_space_prefix = true, t->add_bos = true;
    } else if (!strcmp(model, "gpt2")) {
        t->kind = ZN_TOK_BPE;
        t->bos = 11, t->eos = 11;
        if ((s = bpe_init(t, g, pre, err))) goto fail;
    } else if (!strcmp(model, "bert")) {
        t->kind = ZN_TOK_WPM;
        t->bos = 101, t->unk = 100, t->sep = 102, t->pad = 0, t->mask = 103;
        t->add_bos = true, t->add_sep = true, t->clean_spaces = true;
        t->wpm_lowercase = gguf_get_bool_or(g, "tokenizer.ggml.normalizer.lowercase", true);
        t->wpm_strip_accents = gguf_get_bool_or(g, "tokenizer.ggml.normalizer.strip_accents", t->wpm_lowercase);
    } else if (!strcmp(model, "test")) {
        t->kind = ZN_TOK_TEST;
    } else {
        s = zn_errf(err, ZN_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model = '%s' is not supported (llama, gpt2, bert, test)",
                    g->path, model);
        goto fail;
    }
    t->add_space_prefix = gguf_get_bool_or(g, "tokenizer.ggml.add_space_prefix", t->add_space_prefix);

    int32_t *ids[] = {&t->bos, &t->eos, &t->unk, &t->sep, &t->pad, &t->mask};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (*ids[i] >= t->n_vocab) *ids[i] = ZN_TOKEN_NULL;
    int32_t fim[6] = {ZN_TOKEN_NULL, ZN_TOKEN_NULL, ZN_TOKEN_NULL, ZN_TOKEN_NULL, ZN_TOKEN_NULL, ZN_TOKEN_NULL};
    set_id(t, g, "tokenizer.ggml.bos_token_id", &t->bos);
    set_id(t, g, "tokenizer.ggml.eos_token_id", &t->eos);
    set_id(t, g, "tokenizer.ggml.eot_token_id", &t->eot);
    set_id(t, g, "tokenizer.ggml.eom_token_id", &t->eom);
    set_id(t, g, "tokenizer.ggml.unknown_token_id", &t->unk);
    set_id(t, g, "tokenizer.ggml.seperator_token_id", &t->sep);
    set_id(t, g, "tokenizer.ggml.padding_token_id", &t->pad);
    set_id(t, g, "tokenizer.ggml.mask_token_id", &t->mask);
    static const char *const fim_keys[6][2] = {
        {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
        {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
        {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
        {"tokenizer.ggml.fim_pad_token_id", NULL},
        {"tokenizer.ggml.fim_rep_token_id", NULL},
        {"tokenizer.ggml.fim_sep_token_id", NULL}};
    for (int i = 0; i < 6; i++) {
        set_id(t, g, fim_keys[i][0], &fim[i]);
        if (fim_keys[i][1]) set_id(t, g, fim_keys[i][1], &fim[i]);
    }
    t->add_bos = gguf_get_bool_or(g, "tokenizer.ggml.add_bos_token", t->add_bos);
    t->add_eos = gguf_get_bool_or(g, "tokenizer.ggml.add_eos_token", t->add_eos);
    t->add_sep = gguf_get_bool_or(g, "tokenizer.ggml.add_sep_token", t->add_sep);

    /* Older conversions leave these ids out; llama.cpp finds them by text. */
    static const char *const eot_names[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
        "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "<end_of_utterance>", NULL};
    static const char *const eom_names[] = {"<|eom_id|>", NULL};
    static const char *const fim_names[6][9] = {
        {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
         "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL},
        {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
         "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL},
        {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
         "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL},
        {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL},
        {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL},
        {"<|file_sep|>", NULL}};
    detect_by_text(t, &t->eot, eot_names);
    detect_by_text(t, &t->eom, eom_names);
    for (int i = 0; i < 6; i++) detect_by_text(t, &fim[i], fim_names[i]);
    /* control tokens named "unused" are placeholders */
    for (int32_t i = 0; i < t->n_vocab; i++)
        if ((t->attr[i] & ZN_TOKEN_ATTR_CONTROL) && strstr(t->text[i], "unused")) t->attr[i] |= ZN_TOKEN_ATTR_UNUSED;
    if ((s = build_eog(t, fim + 3, err)) || (s = build_special(t, g, err))) goto fail;

    for (int b = 0; b < 256; b++) {
        char hex[8], raw[1] = {(char)b};
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        t->byte_tok[b] = find_str(t, hex);
        if (t->byte_tok[b] < 0) t->byte_tok[b] = tok_map_get(&t->tok_to_id, raw, 1);
    }
    *out = t;
    return ZN_OK;
fail:
    tokenizer_free(t);
    return s;
}

void tokenizer_free(zn_tokenizer *t) {
    if (!t) return;
    bpe_free(t);
    tok_map_free(&t->tok_to_id);
    free(t->arena);
    free(t->text);
    free(t->len);
    free(t->score);
    free(t->attr);
    free(t->special);
    free(t->eog);
    free(t);
}

/* ---- encoding -------------------------------------------------------- */

typedef struct frag {
    int32_t id; /* >= 0: a special token; else raw text [off, off + len) */
    size_t off, len;
} frag;

typedef struct frag_list {
    frag *v;
    size_t n, cap;
} frag_list;

static zn_status frag_push(frag_list *l, int32_t id, size_t off, size_t len) {
    if (id < 0 && !len) return ZN_OK;
    frag *p = tok_grow(l->v, l->n, &l->cap, sizeof *p, 16);
    if (!p) return ZN_ERR_NOMEM;
    l->v = p;
    l->v[l->n++] = (frag){id, off, len};
    return ZN_OK;
}

static bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Cuts the special tokens out of the text, longest token first over the
 * whole text (llama.cpp's tokenizer_st_partition), into *out. */
static zn_status partition(const zn_tokenizer *t, const char *text, size_t len, bool parse_special, frag_list *out) {
    frag_list tmp = {0};
    zn_status s = frag_push(out, -1, 0, len);
    for (size_t k = 0; k < t->n_special && !s; k++) {
        int32_t id = t->special[k];
        uint32_t a = t->attr[id];
        if (!parse_special && (a & (ZN_TOKEN_ATTR_CONTROL | ZN_TOKEN_ATTR_UNKNOWN))) continue;
        const char *tx = t->text[id];
        size_t tl = t->len[id];
        if (!memmem(text, len, tx, tl)) continue;
        tmp.n = 0;
        for (size_t f = 0; f < out->n && !s; f++) {
            frag fr = out->v[f];
            if (fr.id >= 0) {
                s = frag_push(&tmp, fr.id, 0, 0);
                continue;
            }
            size_t pos = fr.off, end = fr.off + fr.len;
            const char *m;
            while (!s && pos < end && (m = memmem(text + pos, end - pos, tx, tl))) {
                size_t at = (size_t)(m - text), left = at - pos;
                if (a & ZN_TOKEN_ATTR_LSTRIP)
                    while (left && is_ascii_space(text[pos + left - 1])) left--;
                s = frag_push(&tmp, -1, pos, left);
                if (!s) s = frag_push(&tmp, id, 0, 0);
                pos = at + tl;
                if (a & ZN_TOKEN_ATTR_RSTRIP)
                    while (pos < end && is_ascii_space(text[pos])) pos++;
            }
            if (!s) s = frag_push(&tmp, -1, pos, end - pos);
        }
        frag_list sw = *out;
        *out = tmp, tmp = sw;
    }
    free(tmp.v);
    return s;
}

static zn_status test_encode(const zn_tokenizer *t, const char *text, size_t len, tok_ids *o, zn_err *err) {
    for (size_t i = 0; i < len; i += 5) {
        uint64_t h = 0;
        for (size_t j = i; j < i + 5 && j < len; j++) h = h * 31 + (uint8_t)text[j];
        if (tok_ids_push(o, (int32_t)(h % (uint64_t)t->n_vocab)))
            return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    }
    return ZN_OK;
}

zn_status tokenizer_encode(const zn_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                           int32_t *ids, size_t cap, size_t *n, zn_err *err) {
    *n = 0;
    if (len > ZN_MAX_PROMPT_BYTES)
        return zn_errf(err, ZN_ERR_ARG, "tokenizer: text of %zu bytes exceeds %d", len, ZN_MAX_PROMPT_BYTES);
    frag_list fl = {0};
    tok_ids o = {0};
    zn_status s = len ? partition(t, text, len, parse_special, &fl) : ZN_OK;
    if (s) goto nomem;
    bool bos = add_special && (t->add_bos || t->kind == ZN_TOK_WPM) && t->bos >= 0;
    if (bos && (s = tok_ids_push(&o, t->bos))) goto nomem;
    bool prev_special = true; /* SentencePiece adds its space at the start and after special tokens */
    for (size_t i = 0; i < fl.n && !s; i++) {
        const frag *f = &fl.v[i];
        if (f->id >= 0) {
            s = tok_ids_push(&o, f->id);
            prev_special = true;
            continue;
        }
        switch (t->kind) {
        case ZN_TOK_SPM:
            s = spm_encode(t, text + f->off, f->len, t->add_space_prefix && prev_special, &o, err);
            break;
        case ZN_TOK_BPE: s = bpe_encode(t, text + f->off, f->len, &o, err); break;
        case ZN_TOK_WPM: s = wpm_encode(t, text + f->off, f->len, &o, err); break;
        case ZN_TOK_TEST: s = test_encode(t, text + f->off, f->len, &o, err); break;
        }
        prev_special = false;
    }
    if (s) goto done;
    if (add_special && t->kind == ZN_TOK_WPM && t->sep >= 0) s = tok_ids_push(&o, t->sep);
    else if (add_special && t->add_eos && t->eos >= 0) s = tok_ids_push(&o, t->eos);
    if (s) goto nomem;
    *n = o.n;
    if (o.n > cap) {
        s = zn_errf(err, ZN_ERR_NOMEM, "tokenizer: %zu tokens do not fit in %zu", o.n, cap);
        goto done;
    }
    if (o.n) memcpy(ids, o.v, o.n * sizeof *ids);
    goto done;
nomem:
    s = zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
done:
    free(fl.v);
    free(o.v);
    return s;
}

/* ---- decoding -------------------------------------------------------- */

size_t tokenizer_token_piece(const zn_tokenizer *t, int32_t id, bool special, char *buf, size_t cap) {
    if (id < 0 || id >= t->n_vocab) return 0;
    uint32_t a = t->attr[id];
    const char *tx = t->text[id];
    size_t n = t->len[id], o = 0;
    char tmp[ZN_MAX_TOKEN_BYTES];
    if (a & (ZN_TOKEN_ATTR_UNKNOWN | ZN_TOKEN_ATTR_CONTROL)) {
        if (!special) return 0;
        memcpy(tmp, tx, n), o = n;
    } else if (t->kind == ZN_TOK_TEST) {
        o = (size_t)snprintf(tmp, sizeof tmp, "%x", (unsigned)id);
    } else if (a & ZN_TOKEN_ATTR_USER_DEFINED) {
        memcpy(tmp, tx, n), o = n;
    } else if (a & ZN_TOKEN_ATTR_NORMAL) {
        if (t->kind == ZN_TOK_BPE) o = bpe_decode_token(tx, n, tmp);
        else
            for (size_t i = 0; i < n; i++) { /* U+2581 -> space */
                if (i + 2 < n && !memcmp(tx + i, "\xe2\x96\x81", 3)) tmp[o++] = ' ', i += 2;
                else tmp[o++] = tx[i];
            }
    } else if (a & ZN_TOKEN_ATTR_BYTE) {
        if (n < 6 || !isxdigit((unsigned char)tx[3]) || !isxdigit((unsigned char)tx[4])) return 0;
        char hex[3] = {tx[3], tx[4], 0};
        tmp[o++] = (char)strtol(hex, NULL, 16);
    }
    if (o > cap) o = cap;
    memcpy(buf, tmp, o);
    return o;
}

/* HF's clean_up_tokenization_spaces as llama.cpp applies it: drops the
 * space before ?!., and before the contractions 's 'm 're 've, and turns
 * " ' " into "'". Works in place; returns the new length. */
static size_t clean_spaces(char *s, size_t n) {
    size_t o = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) o--;
        s[o++] = x;
    }
    n = o, o = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            o--;
            s[++i] = 0; /* the space after is dropped (and no longer a space for the next check) */
        }
        s[o++] = x;
    }
    n = o, o = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            char x1 = s[i + 1], x2 = i + 2 < n ? s[i + 2] : 0;
            if (x1 == 's' || x1 == 'm' || (x2 && ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')))) o--;
        }
        s[o++] = x;
    }
    return o;
}

zn_status tokenizer_decode(const zn_tokenizer *t, const int32_t *ids, size_t n, bool special, char *out, size_t cap,
                           size_t *len, zn_err *err) {
    *len = 0;
    size_t total = 0;
    char piece[ZN_MAX_TOKEN_BYTES];
    for (size_t i = 0; i < n; i++) total += tokenizer_token_piece(t, ids[i], special, piece, sizeof piece);
    char *raw = malloc(total + 1), *fixed = malloc(3 * total + 1);
    if (!raw || !fixed) {
        free(raw), free(fixed);
        return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory decoding %zu tokens", n);
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = tokenizer_token_piece(t, ids[i], special, raw + o, total - o);
        if (i == 0 && t->add_space_prefix && k && raw[o] == ' ') memmove(raw + o, raw + o + 1, --k);
        o += k;
    }
    if (t->clean_spaces) o = clean_spaces(raw, o);
    o = utf8_sanitize(raw, o, fixed);
    free(raw);
    *len = o;
    zn_status s = ZN_OK;
    if (o > cap) s = zn_errf(err, ZN_ERR_NOMEM, "tokenizer: decoded text of %zu bytes does not fit in %zu", o, cap);
    else if (o) memcpy(out, fixed, o);
    free(fixed);
    return s;
}

void detok_init(zn_detok *d, const zn_tokenizer *tok, bool special, bool at_start) {
    d->tok = tok;
    d->special = special;
    d->first = at_start;
    d->n_held = 0;
}

size_t detok_push(zn_detok *d, int32_t id, char *out) {
    uint8_t buf[4 + ZN_MAX_TOKEN_BYTES];
    size_t n = (size_t)d->n_held;
    memcpy(buf, d->held, n);
    size_t k = tokenizer_token_piece(d->tok, id, d->special, (char *)buf + n, ZN_MAX_TOKEN_BYTES);
    if (d->first && d->tok->add_space_prefix && k && buf[n] == ' ') memmove(buf + n, buf + n + 1, --k);
    d->first = false;
    n += k;
    size_t i = 0, o = 0;
    d->n_held = 0;
    while (i < n) {
        int c = utf8_check(buf + i, n - i);
        if (c > 0) {
            memcpy(out + o, buf + i, (size_t)c);
            o += (size_t)c, i += (size_t)c;
        } else if (c < 0) {
            o += utf8_write(UTF8_REPLACEMENT, out + o);
            i += (size_t)-c;
        } else { /* a sequence that the next token may finish */
            d->n_held = (int)(n - i);
            memcpy(d->held, buf + i, n - i);
            break;
        }
    }
    return o;
}

size_t detok_flush(zn_detok *d, char *out) {
    size_t o = d->n_held ? utf8_write(UTF8_REPLACEMENT, out) : 0;
    d->n_held = 0;
    return o;
}

/* ---- accessors ------------------------------------------------------- */

const char *tokenizer_token_text(const zn_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->text[id] : NULL;
}

int32_t tokenizer_find(const zn_tokenizer *t, const char *text, size_t len) {
    return tok_map_get(&t->tok_to_id, text, len);
}

zn_tok_kind tokenizer_kind(const zn_tokenizer *t) { return t->kind; }
int32_t tokenizer_n_vocab(const zn_tokenizer *t) { return t->n_vocab; }
uint32_t tokenizer_token_attr(const zn_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->attr[id] : 0;
}
int32_t tokenizer_bos(const zn_tokenizer *t) { return t->bos; }
int32_t tokenizer_eos(const zn_tokenizer *t) { return t->eos; }
int32_t tokenizer_eot(const zn_tokenizer *t) { return t->eot; }
bool tokenizer_add_bos(const zn_tokenizer *t) { return t->add_bos && t->bos >= 0; }

bool tokenizer_is_eog(const zn_tokenizer *t, int32_t id) {
    if (id < 0 || !t->n_eog) return false;
    return bsearch(&id, t->eog, t->n_eog, sizeof *t->eog, cmp_i32) != NULL;
}
