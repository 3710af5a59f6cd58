/* Seeds for fuzz_tokenizer, fuzz_jinja and fuzz_sampler (layouts in fuzz.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "make_seeds.h"

#define TOK_SPECIAL_SEEDS 6 /* control / user tokens of each vocab written into a text */

/* ---- tokenizer ---- */

static void tok_seed(size_t vocab, uint8_t flags, const char *text, size_t n) {
    uint8_t *b = malloc(n + 2);
    if (!b) return;
    b[0] = (uint8_t)vocab;
    b[1] = flags;
    memcpy(b + 2, text, n);
    write_bytes("tok", b, n + 2);
    free(b);
}

/* The strings of a test-vector file (separated by lines __ggml_vocab_test__). */
static void tok_inp(size_t vocab, const char *path, size_t max_strings) {
    size_t n = 0;
    char *p = (char *)slurp(path, &n);
    if (!p) return;
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *s = p, *end = p + n;
    for (size_t k = 0; s < end && k < max_strings; k++) {
        char *e = memmem(s, (size_t)(end - s), sep, sizeof sep - 1);
        if (!e) e = end;
        if (e > s) tok_seed(vocab, k % 7 == 3 ? FUZZ_TOK_FLAGS_ADD_SPECIAL : 0, s, (size_t)(e - s));
        s = e + sizeof sep - 1;
    }
    free(p);
}

/* Texts around a few special tokens of the vocab, parsed as specials. */
static void tok_specials(size_t vocab, const char *path) {
    gguf_ctx g;
    zn_err err;
    if (gguf_open(&g, path, &err) != ZN_OK) return;
    const gguf_arr *toks, *types;
    if (gguf_get_arr(&g, "tokenizer.ggml.tokens", &toks, &err) == ZN_OK && toks->type == GGUF_TYPE_STRING &&
        gguf_get_arr(&g, "tokenizer.ggml.token_type", &types, &err) == ZN_OK && types->n == toks->n) {
        int found = 0;
        for (uint64_t i = 0; i < toks->n && found < TOK_SPECIAL_SEEDS; i++) {
            int64_t ty = gguf_arr_int(types, i);
            if ((ty != 3 && ty != 4) || toks->strs[i].len == 0 || toks->strs[i].len > 64) continue;
            char text[160];
            int n = snprintf(text, sizeof text, "Hi %.*s there\n%.*s", (int)toks->strs[i].len, toks->strs[i].ptr,
                             (int)toks->strs[i].len, toks->strs[i].ptr);
            tok_seed(vocab, FUZZ_TOK_FLAGS_PARSE_SPECIAL | (found & 1 ? FUZZ_TOK_FLAGS_ADD_SPECIAL : 0), text,
                     (size_t)n);
            found++;
        }
    }
    gguf_close(&g);
}

int seeds_tokenizer(int n, char **args) {
    if (n < 1) {
        fprintf(stderr, "make_seeds tokenizer OUTDIR SHARED_DIR\n");
        return 2;
    }
    const char *shared = args[0];
    char path[4096], fallback[4096];
    snprintf(fallback, sizeof fallback, "%s/tokenizers/ggml-vocab/ggml-vocab-llama-spm.gguf.inp", shared);
    for (size_t v = 0; v < FUZZ_TOK_N_VOCABS; v++) {
        snprintf(path, sizeof path, "%s/%s.inp", shared, fuzz_tok_vocabs[v]);
        FILE *f = fopen(path, "rb");
        if (f) fclose(f);
        /* vocabs without test vectors get another vocab's strings */
        tok_inp(v, f ? path : fallback, f ? 1000 : 40);
        snprintf(path, sizeof path, "%s/%s", shared, fuzz_tok_vocabs[v]);
        tok_specials(v, path);
    }
    return 0;
}

/* ---- jinja ---- */

static void jinja_seed(const char *tmpl, size_t tn, uint8_t flags, const char *ctx, size_t cn, const char *tools,
                       size_t toln) {
    size_t n = tn + (ctx ? 2 + cn + (tools ? 1 + toln : 0) : 0);
    char *b = malloc(n + 1);
    if (!b) return;
    memcpy(b, tmpl, tn);
    if (ctx) {
        b[tn] = 0;
        b[tn + 1] = (char)flags;
        memcpy(b + tn + 2, ctx, cn);
        if (tools) {
            b[tn + 2 + cn] = 0;
            memcpy(b + tn + 3 + cn, tools, toln);
        }
    }
    write_bytes("jinja", b, n);
    free(b);
}

/* A small template per construct, each with a variables object. */
static const char *const jinja_small[][2] = {
    {"{% for x in items %}{{ loop.index }}:{{ x|upper }}{% if not loop.last %}, {% endif %}{% endfor %}",
     "{\"items\": [\"a\", \"b\", \"c\"]}"},
    {"{% set ns = namespace(n=0) %}{% for k, v in d.items() %}{% set ns.n = ns.n + v %}{% endfor %}{{ ns.n }}",
     "{\"d\": {\"x\": 1, \"y\": 2}}"},
    {"{% macro m(a, b='x') %}[{{ a }}|{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}{{ caller is defined }}", "{}"},
    {"{{ s|tojson }} {{ s|length }} {{ s[1:3] }} {{ s.split(',')|join('-') }} {{ '%s=%d' % ('n', 5) }}",
     "{\"s\": \"a,b\\u00e9,c\"}"},
    {"{% if x is none %}none{% elif x > 3 %}big{% else %}{{ x * 2 + 1 // 2 - 3 % 2 }}{% endif %}", "{\"x\": 2}"},
    {"{{ range(3)|list }} {{ [3,1,2]|sort|first }} {{ {'a': 1}|dictsort }} {{ (1, 2) }} {{ x|default('d') }}", "{}"},
    {"{%- for m in messages -%}{{ m.role }}: {{ m.content|trim }}\n{%- endfor -%}{{ raise_exception('no') if bad }}",
     "{\"messages\": [{\"role\": \"user\", \"content\": \" hi \"}], \"bad\": false}"},
    {"{{ strftime_now('%Y-%m-%d') }} {{ tools|tojson(indent=2) }} {{ 'x' ~ 1 ~ none }}", "{\"tools\": [1, 2.5, true, null]}"},
    {"{% filter upper %}{{ a.b.c }}{% endfilter %}{% raw %}{{ kept }}{% endraw %}{# comment #}",
     "{\"a\": {\"b\": {\"c\": \"deep\"}}}"},
    {"{{ x.startswith('a') }} {{ x.replace('a', 'b') }} {{ x|capitalize }} {{ x|title }} {{ x in 'zabc' }}",
     "{\"x\": \"abc\"}"},
};

static int jinja_cases(const char *path) {
    size_t n = 0;
    char *p = (char *)slurp(path, &n);
    if (!p) return 1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    else dir[0] = 0;
    /* name, template, agp, thinking, bos, eos, messages, tools, extra */
    for (char *line = p; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *col[9] = {0};
        int k = 0;
        for (char *c = line; c && k < 9; k++) {
            col[k] = c;
            c = strchr(c, '\t');
            if (c) *c++ = 0;
        }
        if (k >= 7) {
            char tp[4200];
            snprintf(tp, sizeof tp, "%s%s", dir, col[1]);
            size_t tn = 0;
            char *t = (char *)slurp(tp, &tn);
            if (t) {
                uint8_t flags = (uint8_t)(col[2][0] == '1') |
                                (uint8_t)((!strcmp(col[3], "off") ? 1 : !strcmp(col[3], "on") ? 2 : 0) << 1);
                const char *tools = k >= 8 && strcmp(col[7], "-") ? col[7] : NULL;
                jinja_seed(t, tn, flags, col[6], strlen(col[6]), tools, tools ? strlen(tools) : 0);
                free(t);
            }
        }
        line = next;
    }
    free(p);
    return 0;
}

static void jinja_gguf(const char *path) {
    gguf_ctx g;
    zn_err err;
    if (gguf_open(&g, path, &err) != ZN_OK) return;
    for (uint64_t i = 0; i < g.n_kv; i++) {
        const gguf_kv *kv = &g.kv[i];
        static const char key[] = "tokenizer.chat_template";
        if (kv->type == GGUF_TYPE_STRING && kv->key.len >= sizeof key - 1 && !memcmp(kv->key.ptr, key, sizeof key - 1))
            jinja_seed(kv->v.str.ptr, kv->v.str.len, 0, NULL, 0, NULL, 0);
    }
    gguf_close(&g);
}

int seeds_jinja(int n, char **args) {
    int rc = 0;
    for (size_t i = 0; i < sizeof jinja_small / sizeof jinja_small[0]; i++) {
        jinja_seed(jinja_small[i][0], strlen(jinja_small[i][0]), 0, jinja_small[i][1], strlen(jinja_small[i][1]),
                   NULL, 0);
        jinja_seed(jinja_small[i][0], strlen(jinja_small[i][0]), 0, NULL, 0, NULL, 0);
    }
    for (int i = 0; i < n; i++) {
        size_t len = strlen(args[i]);
        if (len > 5 && !strcmp(args[i] + len - 5, ".gguf")) {
            jinja_gguf(args[i]);
        } else if (len > 4 && !strcmp(args[i] + len - 4, ".tsv")) {
            rc |= jinja_cases(args[i]);
        } else {
            size_t tn = 0;
            char *t = (char *)slurp(args[i], &tn);
            if (!t) {
                fprintf(stderr, "make_seeds: cannot read %s\n", args[i]);
                rc = 1;
                continue;
            }
            jinja_seed(t, tn, 0, NULL, 0, NULL, 0);
            free(t);
        }
    }
    return rc;
}

/* ---- sampler ---- */

typedef struct {
    float temp;
    int32_t top_k;
    float top_p, min_p, rep, pres, freq;
    int32_t last_n;
} sparams;

static const sparams param_sets[] = {
    {0.8f, 40, 0.95f, 0.05f, 1.0f, 0.0f, 0.0f, 64},  /* llama.cpp's defaults */
    {0.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0},      /* greedy */
    {1.0f, 0, 1.0f, 0.0f, 1.1f, 0.5f, 0.25f, 16},    /* full distribution, penalties */
    {0.3f, 1, 0.5f, 0.5f, 1.3f, 0.0f, 0.0f, 4},
    {2.0f, 5, 0.99f, 0.0f, 1.0f, -1.0f, 0.0f, 8},
};

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
static void putf(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}

static void sampler_seed(const sparams *sp, uint64_t seed, const int32_t *hist, int n_hist, const float *logits,
                         int n) {
    size_t size = FUZZ_SAMPLER_HEADER + 4 * (size_t)n_hist + 4 * (size_t)n;
    uint8_t *b = calloc(size, 1);
    if (!b) return;
    putf(b, sp->temp);
    put32(b + 4, (uint32_t)sp->top_k);
    putf(b + 8, sp->top_p);
    putf(b + 12, sp->min_p);
    putf(b + 16, sp->rep);
    putf(b + 20, sp->pres);
    putf(b + 24, sp->freq);
    put32(b + 28, (uint32_t)sp->last_n);
    put32(b + 32, (uint32_t)seed);
    put32(b + 36, (uint32_t)(seed >> 32));
    b[40] = (uint8_t)n_hist;
    for (int i = 0; i < n_hist; i++) put32(b + FUZZ_SAMPLER_HEADER + 4 * i, (uint32_t)hist[i]);
    for (int i = 0; i < n; i++) putf(b + FUZZ_SAMPLER_HEADER + 4 * n_hist + 4 * i, logits[i]);
    write_bytes("sampler", b, size);
    free(b);
}

/* The first row of "prompt_logits" of a golden file: real logit shapes. */
static int golden_logits(const char *path, float *out, int cap) {
    size_t n = 0;
    char *p = (char *)slurp(path, &n);
    if (!p) return 0;
    char *s = strstr(p, "\"prompt_logits\"");
    int k = 0;
    if (s && (s = strchr(s, '[')) && (s = strchr(s + 1, '['))) {
        s++;
        while (k < cap) {
            char *e;
            float f = strtof(s, &e);
            if (e == s) break;
            out[k++] = f;
            s = e;
            while (*s == ' ' || *s == ',' || *s == '\n') s++;
            if (*s == ']') break;
        }
    }
    free(p);
    return k;
}

int seeds_sampler(int n, char **args) {
    static float logits[4096];
    const int32_t hist[] = {1, 2, 2, 5, 7, 0, -1, 3000000};
    /* hand-made logits: ties, a single spike, extreme and special values */
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-38f, 3.4e38f, -3.4e38f,
                             1.0f, 1.0f, 1.0f, 88.7f, -103.9f, 20.0f};
    for (size_t p = 0; p < sizeof param_sets / sizeof param_sets[0]; p++) {
        for (int i = 0; i < 64; i++) logits[i] = (float)((i * 37) % 64) / 8.0f - 4.0f;
        sampler_seed(&param_sets[p], p, hist, 6, logits, 64);
        for (int i = 0; i < 16; i++) logits[i] = 1.5f; /* all equal */
        sampler_seed(&param_sets[p], 42, hist, 0, logits, 16);
        sampler_seed(&param_sets[p], 7, hist, 8, special + 4 * (p % 2), 8);
        sampler_seed(&param_sets[p], 1, NULL, 0, special + 5, 1);
    }
    for (int i = 0; i < n; i++) {
        int k = golden_logits(args[i], logits, (int)(sizeof logits / sizeof logits[0]));
        if (k == 0) continue;
        sampler_seed(&param_sets[i % 5], (uint64_t)i, hist, 4, logits, k);
    }
    return 0;
}
