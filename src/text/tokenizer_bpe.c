/* Byte-level BPE (tokenizer.ggml.model = "gpt2"): a pre-tokenizer splits the
 * text with the regexes chosen by tokenizer.ggml.pre (PCRE2, UTF + UCP, JIT),
 * each piece is mapped byte -> printable character (GPT-2's bytes_to_unicode),
 * then adjacent symbols are merged by merge rank, lowest first. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "utf8.h"

/* llama.cpp's "\s": its whitespace table (Unicode White_Space). PCRE2's \s
 * with UCP differs by version (U+0085), so the patterns spell it out. */
#define WS_CLASS "\\x{9}-\\x{D} \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

/* The case-insensitive contractions are spelled [sS] on purpose: (?i) with
 * UCP would also accept U+017F and U+212A, which the reference does not. */
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3 CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN35 CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_CJK "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"
#define RE_BLOOM " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"
#define RE_DEEPSEEK_LLM_LATIN                                                                                         \
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-"     \
    "\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-"      \
    "\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-"         \
    "\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}"          \
    "\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-"         \
    "\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"            \
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-"        \
    "\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"            \
    "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}"           \
    "\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"            \
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-"         \
    "\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"        \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"        \
    "\\x{1E900}-\\x{1E943}]+"

enum {
    PRE_IGNORE_MERGES = 1, /* a piece that is a whole token is not merged */
    PRE_ADD_BOS = 2,
    PRE_NO_CLEAN = 4,      /* clean_up_tokenization_spaces off */
    PRE_NO_BOS = 8,
};

typedef struct pre_def {
    const char *names; /* '|'-separated values of tokenizer.ggml.pre */
    unsigned flags;
    const char *re[TOK_MAX_REGEX]; /* applied in order, each to the pieces of the last */
} pre_def;

static const pre_def pre_defs[] = {
    {"default", 0, {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano",
     PRE_IGNORE_MERGES | PRE_ADD_BOS, {RE_LLAMA3}},
    {"dbrx|smaug-bpe", 0, {RE_LLAMA3}},
    {"glm4|chatglm-bpe", PRE_NO_BOS, {RE_LLAMA3}},
    {"qwen2|deepseek-r1-qwen|kormo|f2llmv2|megrez|hunyuan|solar-open|grok-2", PRE_NO_CLEAN, {RE_QWEN2}},
    {"stablelm2", 0, {RE_QWEN2}},
    {"qwen35", PRE_NO_CLEAN, {RE_QWEN35}},
    {"gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|modern-bert|exaone4|mpt|olmo|jais",
     0, {RE_GPT2}},
    {"trillion|granite-docling", PRE_NO_CLEAN, {RE_GPT2}},
    {"starcoder|refact|codeshell|exaone|minerva-7b|mellum2", 0, {"\\p{N}", RE_GPT2}},
    {"command-r|smollm", PRE_NO_CLEAN, {"\\p{N}", RE_GPT2}},
    {"falcon", 0, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {"deepseek-llm", PRE_NO_CLEAN,
     {"[\\r\\n]", RE_DEEPSEEK_LLM_LATIN,
      "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$", RE_CJK,
      "\\p{N}+"}},
    {"deepseek-coder", PRE_NO_CLEAN, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}"}},
    {"deepseek-v3|hunyuan-dense|joyai-llm|hy_v4", PRE_NO_CLEAN,
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
      " ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"bloom|gpt3-finnish", 0, {RE_BLOOM}},
    {"poro-chat", PRE_NO_CLEAN, {RE_BLOOM}},
    {"viking", PRE_NO_CLEAN, {RE_BLOOM, "\\p{N}"}},
    {"bailingmoe|bailingmoe2|llada-moe", PRE_NO_CLEAN,
     {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
    {"seed-coder", PRE_NO_CLEAN,
     {CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"ufakzeka", PRE_NO_CLEAN,
     {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
};

static bool name_in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list;;) {
        const char *bar = strchr(p, '|');
        size_t k = bar ? (size_t)(bar - p) : strlen(p);
        if (k == n && !memcmp(p, name, n)) return true;
        if (!bar) return false;
        p = bar + 1;
    }
}

/* Replaces \s and \S by explicit classes; other escapes pass through. */
static char *rewrite_ws(const char *re) {
    size_t cap = strlen(re) * 4 + 256, o = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    bool in_class = false;
    for (size_t i = 0; re[i]; i++) {
        if (o + sizeof WS_CLASS + 8 > cap) {
            char *p = realloc(out, cap *= 2);
            if (!p) return free(out), NULL;
            out = p;
        }
        char c = re[i];
        if (c == '\\' && (re[i + 1] == 's' || re[i + 1] == 'S')) {
            bool neg = re[i + 1] == 'S';
            if (in_class && neg) return free(out), NULL; /* not expressible; none of ours needs it */
            o += (size_t)sprintf(out + o, in_class ? "%s" : neg ? "[^%s]" : "[%s]", WS_CLASS);
            i++;
            continue;
        }
        if (c == '\\' && re[i + 1]) {
            out[o++] = c;
            out[o++] = re[++i];
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out[o++] = c;
            if (re[i + 1] == '^') out[o++] = re[++i];
            if (re[i + 1] == ']') out[o++] = re[++i]; /* a leading ] is literal */
            continue;
        }
        if (in_class && c == ']') in_class = false;
        out[o++] = c;
    }
    out[o] = 0;
    return out;
}

static zn_status compile_pre(zn_tokenizer *t, const pre_def *d, zn_err *err) {
    for (int i = 0; i < TOK_MAX_REGEX && d->re[i]; i++) {
        char *src = rewrite_ws(d->re[i]);
        if (!src) return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: pre-tokenizer '%s': regex rewrite failed", t->pre);
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &ec, &eo, NULL);
        free(src);
        if (!re) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(ec, msg, sizeof msg);
            return zn_errf(err, ZN_ERR_FORMAT, "tokenizer: pre-tokenizer '%s': regex %d: %s at %zu", t->pre, i,
                           (const char *)msg, (size_t)eo);
        }
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is unavailable */
        t->re[t->n_re++] = re;
    }
    return ZN_OK;
}

static zn_status load_merges(zn_tokenizer *t, const gguf_ctx *g, zn_err *err) {
    const gguf_arr *a;
    zn_status s = gguf_get_arr(g, "tokenizer.ggml.merges", &a, err);
    if (s == ZN_ERR_NOT_FOUND) return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.merges missing (BPE)", g->path);
    if (s) return s;
    if (a->type != GGUF_TYPE_STRING)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: tokenizer.ggml.merges: array of %s, want string", g->path,
                       gguf_type_name(a->type));
    if (a->n > ZN_MAX_VOCAB * 4ull) return zn_errf(err, ZN_ERR_NOMEM, "%s: %llu merges: too many", g->path,
                                                   (unsigned long long)a->n);
    size_t n = a->n, bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += a->strs[i].len + 1;
    t->merge_arena = malloc(bytes ? bytes : 1);
    t->merge_text = malloc((n ? n : 1) * sizeof *t->merge_text);
    t->merge_len = malloc((n ? n : 1) * sizeof *t->merge_len);
    if (!t->merge_arena || !t->merge_text || !t->merge_len)
        return zn_errf(err, ZN_ERR_NOMEM, "%s: merges: out of memory", g->path);
    char *p = t->merge_arena;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, a->strs[i].ptr, a->strs[i].len);
        p[a->strs[i].len] = 0;
        t->merge_text[i] = p;
        t->merge_len[i] = (uint32_t)a->strs[i].len;
        p += a->strs[i].len + 1;
    }
    if ((s = tok_map_init(&t->merge_rank, n, t->merge_text, t->merge_len)))
        return zn_errf(err, s, "%s: merges: out of memory", g->path);
    for (size_t i = 0; i < n; i++) {
        /* "left right", split at the first space after the first byte */
        const char *sp = t->merge_len[i] > 1 ? memchr(t->merge_text[i] + 1, ' ', t->merge_len[i] - 1) : NULL;
        if (sp) tok_map_put(&t->merge_rank, (uint32_t)i, true); /* the first rank of a duplicate wins */
    }
    return ZN_OK;
}

zn_status bpe_init(zn_tokenizer *t, const gguf_ctx *g, const char *pre, zn_err *err) {
    const pre_def *d = NULL;
    snprintf(t->pre, sizeof t->pre, "%s", pre[0] ? pre : "default");
    for (size_t i = 0; i < sizeof pre_defs / sizeof pre_defs[0] && !d; i++)
        if (name_in_list(pre_defs[i].names, t->pre)) d = &pre_defs[i];
    if (!d) return zn_errf(err, ZN_ERR_UNSUPPORTED, "%s: unknown pre-tokenizer tokenizer.ggml.pre = '%s'", g->path, pre);
    t->ignore_merges = d->flags & PRE_IGNORE_MERGES;
    t->add_bos = d->flags & PRE_ADD_BOS;
    t->clean_spaces = !(d->flags & PRE_NO_CLEAN);
    if (d->flags & PRE_NO_BOS) t->bos = ZN_TOKEN_NULL;
    zn_status s = compile_pre(t, d, err);
    if (s) return s;
    return load_merges(t, g, err);
}

void bpe_free(zn_tokenizer *t) {
    for (int i = 0; i < t->n_re; i++) pcre2_code_free(t->re[i]);
    t->n_re = 0;
    tok_map_free(&t->merge_rank);
    free(t->merge_arena);
    free(t->merge_text);
    free(t->merge_len);
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the other 68 are moved to U+0100.. in byte order. */
static uint32_t byte_cp(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 256u + b;
    if (b <= 0xA0) return 256u + 33u + (b - 0x7Fu);
    return 256u + 67u; /* 0xAD */
}

static int cp_byte(uint32_t cp) {
    if (cp < 256) return byte_cp((uint8_t)cp) == cp ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(cp - 256 - 33 + 0x7F);
    return cp == 256 + 67 ? 0xAD : -1;
}

size_t bpe_decode_token(const char *text, size_t len, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t adv;
        uint32_t cp = utf8_decode_lenient(text + i, len - i, &adv);
        int b = cp_byte(cp);
        if (b >= 0) out[o++] = (char)b;
        else { /* not a byte character: pass it through unchanged */
            memcpy(out + o, text + i, adv);
            o += adv;
        }
        i += adv;
    }
    return o;
}

typedef struct span {
    uint32_t off, len;
} span;

typedef struct span_list {
    span *v;
    size_t n, cap;
} span_list;

static zn_status span_push(span_list *l, size_t off, size_t len) {
    if (!len) return ZN_OK;
    span *p = tok_grow(l->v, l->n, &l->cap, sizeof *p, 64);
    if (!p) return ZN_ERR_NOMEM;
    l->v = p;
    l->v[l->n++] = (span){(uint32_t)off, (uint32_t)len};
    return ZN_OK;
}

/* Splits every piece of *in by one regex into matches and the gaps between
 * them (both kept, in order), like llama.cpp's unicode_regex_split. Each
 * piece is matched as a whole subject, so look-arounds stop at its ends. */
static zn_status split_by(const pcre2_code *re, pcre2_match_data *md, const char *subj, const span_list *in,
                          span_list *out) {
    out->n = 0;
    for (size_t k = 0; k < in->n; k++) {
        PCRE2_SPTR s = (PCRE2_SPTR)subj + in->v[k].off;
        size_t n = in->v[k].len, pos = 0, gap = 0;
        while (pos < n) {
            int rc = pcre2_match(re, s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) return ZN_ERR_FORMAT;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (ov[1] == ov[0]) { /* none of our patterns match empty; step over it */
                pos = ov[0] + utf8_lead_len(s[ov[0]]);
                continue;
            }
            if (span_push(out, in->v[k].off + gap, ov[0] - gap) ||
                span_push(out, in->v[k].off + ov[0], ov[1] - ov[0]))
                return ZN_ERR_NOMEM;
            pos = gap = ov[1];
        }
        if (span_push(out, in->v[k].off + gap, n - gap)) return ZN_ERR_NOMEM;
    }
    return ZN_OK;
}

typedef struct bpe_ctx {
    const zn_tokenizer *t;
    const char *w;
    char *key; /* scratch for "left right" */
} bpe_ctx;

static zn_status bpe_pair(const void *ctx, const tok_sym *sy, int32_t l, int32_t r, tok_heap *h) {
    const bpe_ctx *c = ctx;
    if (l < 0 || r < 0) return ZN_OK;
    memcpy(c->key, c->w + sy[l].off, sy[l].n);
    c->key[sy[l].n] = ' ';
    memcpy(c->key + sy[l].n + 1, c->w + sy[r].off, sy[r].n);
    int32_t rank = tok_map_get(&c->t->merge_rank, c->key, sy[l].n + 1 + sy[r].n);
    if (rank < 0) return ZN_OK;
    return tok_heap_push(h, (tok_bigram){rank, l, r, sy[l].n, sy[r].n});
}

/* Merges one byte-encoded word and appends its tokens. */
static zn_status bpe_word(const zn_tokenizer *t, const char *w, size_t n, tok_sym *sy, char *key, tok_heap *h,
                          tok_ids *out) {
    if (t->ignore_merges) {
        int32_t id = tok_map_get(&t->tok_to_id, w, n);
        if (id >= 0) return tok_ids_push(out, id);
    }
    bpe_ctx c = {t, w, key};
    int32_t ns = tok_merge(w, n, sy, h, bpe_pair, &c);
    if (ns < 0) return ZN_ERR_NOMEM;
    zn_status s;
    for (int32_t i = 0; i >= 0 && ns; i = sy[i].next) {
        int32_t id = tok_map_get(&t->tok_to_id, w + sy[i].off, sy[i].n);
        if (id >= 0) {
            if ((s = tok_ids_push(out, id))) return s;
            continue;
        }
        /* a symbol that is no token (inconsistent vocab): its bytes, where they are tokens */
        for (uint32_t j = 0; j < sy[i].n; j++) {
            id = tok_map_get(&t->tok_to_id, w + sy[i].off + j, 1);
            if (id >= 0 && (s = tok_ids_push(out, id))) return s;
        }
    }
    return ZN_OK;
}

zn_status bpe_encode(const zn_tokenizer *t, const char *text, size_t len, tok_ids *out, zn_err *err) {
    zn_status s = ZN_OK;
    /* Re-encode the text the way the reference sees it: invalid bytes become
     * U+FFFD (3 bytes each). subj is the same text with surrogates (which the
     * lenient decoder accepts but PCRE2 rejects) shown as U+FFFD, same length. */
    char *clean = malloc(3 * len + 1), *subj = malloc(3 * len + 1);
    span_list a = {0}, b = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    char *word = NULL, *key = NULL;
    tok_sym *sy = NULL;
    tok_heap h = {0};
    if (!clean || !subj || !md) goto nomem;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t adv;
        uint32_t cp = utf8_decode_lenient(text + i, len - i, &adv);
        size_t k = utf8_write(cp, clean + n);
        if (cp >= 0xD800 && cp <= 0xDFFF) utf8_write(UTF8_REPLACEMENT, subj + n);
        else memcpy(subj + n, clean + n, k);
        n += k;
        i += adv;
    }
    if (span_push(&a, 0, n)) goto nomem;
    for (int r = 0; r < t->n_re; r++) {
        if ((s = split_by(t->re[r], md, subj, &a, &b))) {
            if (s == ZN_ERR_NOMEM) goto nomem;
            s = zn_errf(err, s, "tokenizer: pre-tokenizer '%s': regex %d failed", t->pre, r);
            goto done;
        }
        span_list tmp = a;
        a = b, b = tmp;
    }
    size_t maxw = 0;
    for (size_t i = 0; i < a.n; i++)
        if (a.v[i].len > maxw) maxw = a.v[i].len;
    /* byte-encoded: at most 2 bytes per input byte; one symbol per character */
    word = malloc(2 * maxw + 1);
    key = malloc(4 * maxw + 2);
    sy = malloc((2 * maxw + 1) * sizeof *sy);
    if (!word || !key || !sy) goto nomem;
    for (size_t i = 0; i < a.n; i++) {
        size_t wn = 0;
        for (uint32_t j = 0; j < a.v[i].len; j++)
            wn += utf8_write(byte_cp((uint8_t)clean[a.v[i].off + j]), word + wn);
        if ((s = bpe_word(t, word, wn, sy, key, &h, out))) {
            if (s == ZN_ERR_NOMEM) goto nomem;
            goto done;
        }
    }
    goto done;
nomem:
    s = zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
done:
    pcre2_match_data_free(md);
    free(clean);
    free(subj);
    free(a.v);
    free(b.v);
    free(word);
    free(key);
    free(sy);
    free(h.v);
    return s;
}
