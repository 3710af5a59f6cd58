/* GBNF parsing and compilation (see grammar.h). */
#include "grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ivec {
    int32_t *v;
    int n, cap;
} ivec;

typedef struct brule {
    char *name;
    bool defined;
    ivec *alts;
    int n_alt, cap_alt;
} brule;

typedef struct pstate {
    const char *src, *s, *end;
    brule *rules;
    int n_rules, cap_rules;
    int32_t *hash;            /* rule ids by name, open addressing; -1 empty */
    int hash_cap;
    uint64_t (*sets)[4];
    int n_sets, cap_sets;
    int32_t single[256];      /* set id of each one-byte set, -1: none yet */
    long n_elems;
    int any_rule;             /* the rule '.' refers to, -1 */
    int anon;                 /* counter for made-up rule names */
    int nest;
    zn_status st;
    zn_err *err;
} pstate;

/* ---- errors ---- */

__attribute__((format(printf, 2, 3))) static void fail(pstate *ps, const char *fmt, ...) {
    if (ps->st) return;
    int line = 1, col = 1;
    for (const char *p = ps->src; p < ps->s && p < ps->end; p++) {
        if (*p == '\n') line++, col = 1;
        else col++;
    }
    char msg[ZN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ps->st = zn_errf(ps->err, ZN_ERR_ARG, "grammar: line %d, column %d: %s", line, col, msg);
}

static void oom(pstate *ps) {
    if (!ps->st) ps->st = zn_errf(ps->err, ZN_ERR_NOMEM, "grammar: out of memory");
}

static void push(pstate *ps, ivec *v, int32_t x) {
    if (ps->st) return;
    if (++ps->n_elems > ZN_GRAMMAR_MAX_ELEMS) {
        fail(ps, "the grammar has more than %d elements", ZN_GRAMMAR_MAX_ELEMS);
        return;
    }
    if (v->n == v->cap) {
        int c = v->cap ? v->cap * 2 : 8;
        int32_t *q = realloc(v->v, sizeof *q * (size_t)c);
        if (!q) {
            oom(ps);
            return;
        }
        v->v = q;
        v->cap = c;
    }
    v->v[v->n++] = x;
}

static void append(pstate *ps, ivec *v, const ivec *w) {
    for (int i = 0; i < w->n && !ps->st; i++) push(ps, v, w->v[i]);
}

/* ---- rules ---- */

static uint32_t hash_name(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static bool rehash(pstate *ps, int cap) {
    int32_t *h = malloc(sizeof *h * (size_t)cap);
    if (!h) return false;
    memset(h, 0xff, sizeof *h * (size_t)cap);
    for (int r = 0; r < ps->n_rules; r++) {
        uint32_t k = hash_name(ps->rules[r].name, strlen(ps->rules[r].name)) & (uint32_t)(cap - 1);
        while (h[k] >= 0) k = (k + 1) & (uint32_t)(cap - 1);
        h[k] = r;
    }
    free(ps->hash);
    ps->hash = h;
    ps->hash_cap = cap;
    return true;
}

static int add_rule(pstate *ps, const char *name, size_t n, bool defined) {
    if (ps->st) return 0;
    if (ps->n_rules == ZN_GRAMMAR_MAX_RULES) {
        fail(ps, "the grammar has more than %d rules", ZN_GRAMMAR_MAX_RULES);
        return 0;
    }
    if (ps->n_rules == ps->cap_rules) {
        int c = ps->cap_rules ? ps->cap_rules * 2 : 32;
        brule *q = realloc(ps->rules, sizeof *q * (size_t)c);
        if (!q) {
            oom(ps);
            return 0;
        }
        ps->rules = q;
        ps->cap_rules = c;
    }
    if ((ps->n_rules + 1) * 2 > ps->hash_cap && !rehash(ps, ps->hash_cap ? ps->hash_cap * 2 : 64)) {
        oom(ps);
        return 0;
    }
    brule *r = &ps->rules[ps->n_rules];
    memset(r, 0, sizeof *r);
    r->name = strndup(name, n);
    r->defined = defined;
    if (!r->name) {
        oom(ps);
        return 0;
    }
    uint32_t k = hash_name(name, n) & (uint32_t)(ps->hash_cap - 1);
    while (ps->hash[k] >= 0) k = (k + 1) & (uint32_t)(ps->hash_cap - 1);
    ps->hash[k] = ps->n_rules;
    return ps->n_rules++;
}

static int find_rule(const pstate *ps, const char *name, size_t n) {
    if (!ps->hash_cap) return -1;
    uint32_t k = hash_name(name, n) & (uint32_t)(ps->hash_cap - 1);
    for (; ps->hash[k] >= 0; k = (k + 1) & (uint32_t)(ps->hash_cap - 1)) {
        const char *rn = ps->rules[ps->hash[k]].name;
        if (strlen(rn) == n && !memcmp(rn, name, n)) return ps->hash[k];
    }
    return -1;
}

/* A rule made up for a group or repetition inside rule `base`. */
static int anon_rule(pstate *ps, const char *base) {
    char name[96];
    int k = snprintf(name, sizeof name, "%.60s~%d", base, ++ps->anon);  /* '~' is no name character: no clash */
    return add_rule(ps, name, (size_t)k, true);
}

/* Adds an alternative (its elements copied) to rule r. */
static void add_alt(pstate *ps, int r, const ivec *seq) {
    if (ps->st) return;
    brule *b = &ps->rules[r];
    if (b->n_alt == b->cap_alt) {
        int c = b->cap_alt ? b->cap_alt * 2 : 4;
        ivec *q = realloc(b->alts, sizeof *q * (size_t)c);
        if (!q) {
            oom(ps);
            return;
        }
        b->alts = q;
        b->cap_alt = c;
    }
    ivec *a = &b->alts[b->n_alt++];
    memset(a, 0, sizeof *a);
    append(ps, a, seq);
}

/* ---- byte sets ---- */

static int32_t set_id(pstate *ps, const uint64_t s[4]) {
    for (int i = 0; i < ps->n_sets; i++)
        if (!memcmp(ps->sets[i], s, sizeof ps->sets[i])) return i;
    if (ps->n_sets == ps->cap_sets) {
        int c = ps->cap_sets ? ps->cap_sets * 2 : 64;
        uint64_t (*q)[4] = realloc(ps->sets, sizeof *q * (size_t)c);
        if (!q) {
            oom(ps);
            return 0;
        }
        ps->sets = q;
        ps->cap_sets = c;
    }
    memcpy(ps->sets[ps->n_sets], s, sizeof ps->sets[0]);
    return ps->n_sets++;
}

static int32_t range_set(pstate *ps, unsigned lo, unsigned hi) {
    if (lo == hi && ps->single[lo] >= 0) return ps->single[lo];
    uint64_t s[4] = {0};
    for (unsigned b = lo; b <= hi; b++) s[b >> 6] |= 1ull << (b & 63);
    int32_t id = set_id(ps, s);
    if (lo == hi && !ps->st) ps->single[lo] = id;
    return id;
}

/* ---- UTF-8 ---- */

static int cp_to_utf8(uint32_t c, unsigned char *o) {
    if (c < 0x80) return o[0] = (unsigned char)c, 1;
    if (c < 0x800) return o[0] = (unsigned char)(0xC0 | c >> 6), o[1] = (unsigned char)(0x80 | (c & 63)), 2;
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | c >> 12);
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 63));
        o[2] = (unsigned char)(0x80 | (c & 63));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | c >> 18);
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 63));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 63));
    o[3] = (unsigned char)(0x80 | (c & 63));
    return 4;
}

/* One code point of the source (UTF-8); invalid bytes stand for themselves. */
static uint32_t utf8_next(pstate *ps) {
    const unsigned char *p = (const unsigned char *)ps->s;
    size_t left = (size_t)(ps->end - ps->s);
    unsigned c = p[0];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n <= 1 || (size_t)n > left) {
        ps->s++;
        return c;
    }
    uint32_t v = c & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            ps->s++;
            return c;
        }
        v = v << 6 | (p[i] & 63);
    }
    ps->s += n;
    return v;
}

/* Alternatives of rule r matching the UTF-8 encodings of lo..hi (all >= 0x80),
 * split so each byte position is one range (RE2's construction). */
static void utf8_alts(pstate *ps, uint32_t lo, uint32_t hi, int r) {
    static const uint32_t lim[] = {0x7F, 0x7FF, 0xFFFF};
    for (int i = 0; i < 3; i++)
        if (lo <= lim[i] && hi > lim[i]) {
            utf8_alts(ps, lo, lim[i], r);
            utf8_alts(ps, lim[i] + 1, hi, r);
            return;
        }
    int len = hi < 0x800 ? 2 : hi < 0x10000 ? 3 : 4;
    for (int i = 1; i < len; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if (lo & m) {
                utf8_alts(ps, lo, lo | m, r);
                utf8_alts(ps, (lo | m) + 1, hi, r);
                return;
            }
            if ((hi & m) != m) {
                utf8_alts(ps, lo, (hi & ~m) - 1, r);
                utf8_alts(ps, hi & ~m, hi, r);
                return;
            }
        }
    }
    unsigned char a[4], b[4];
    cp_to_utf8(lo, a);
    cp_to_utf8(hi, b);
    ivec seq = {0};
    for (int k = 0; k < len; k++) push(ps, &seq, range_set(ps, a[k], b[k]));
    add_alt(ps, r, &seq);
    free(seq.v);
}

typedef struct crange {
    uint32_t lo, hi;
} crange;

static int crange_cmp(const void *a, const void *b) {
    const crange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The elements for a set of code points: one byte set when all are ASCII,
 * else a reference to a rule of alternatives. */
static void class_elems(pstate *ps, crange *r, int n, bool negate, const char *base, ivec *out) {
    qsort(r, (size_t)n, sizeof *r, crange_cmp);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && r[i].lo <= r[m - 1].hi + 1) {
            if (r[i].hi > r[m - 1].hi) r[m - 1].hi = r[i].hi;
        } else {
            r[m++] = r[i];
        }
    }
    crange *use = r;
    int nu = m;
    crange *neg = NULL;
    if (negate) {
        neg = malloc(sizeof *neg * (size_t)(m + 2));
        if (!neg) {
            oom(ps);
            return;
        }
        uint32_t at = 0;
        nu = 0;
        for (int i = 0; i < m; i++) {
            if (r[i].lo > at) neg[nu++] = (crange){at, r[i].lo - 1};
            at = r[i].hi + 1;
        }
        if (at <= 0x10FFFF) neg[nu++] = (crange){at, 0x10FFFF};
        use = neg;
    }
    uint64_t ascii[4] = {0};
    bool any_ascii = false, any_high = false;
    for (int i = 0; i < nu; i++) {
        for (uint32_t x = use[i].lo; x <= use[i].hi && x < 0x80; x++) ascii[x >> 6] |= 1ull << (x & 63), any_ascii = true;
        if (use[i].hi >= 0x80) any_high = true;
    }
    if (!any_high) {
        if (!any_ascii) fail(ps, "a character class that matches nothing");
        else push(ps, out, set_id(ps, ascii));
        free(neg);
        return;
    }
    int rule = anon_rule(ps, base);
    if (any_ascii) {
        ivec seq = {0};
        push(ps, &seq, set_id(ps, ascii));
        add_alt(ps, rule, &seq);
        free(seq.v);
    }
    for (int i = 0; i < nu && !ps->st; i++) {
        uint32_t lo = use[i].lo < 0x80 ? 0x80 : use[i].lo, hi = use[i].hi;
        if (hi < 0x80) continue;
        /* surrogates have no UTF-8 form */
        if (lo <= 0xDFFF && hi >= 0xD800) {
            if (lo < 0xD800) utf8_alts(ps, lo, 0xD7FF, rule);
            if (hi > 0xDFFF) utf8_alts(ps, 0xE000, hi, rule);
        } else {
            utf8_alts(ps, lo, hi, rule);
        }
    }
    free(neg);
    push(ps, out, ZN_GEL_REF(rule));
}

/* ---- the parser ---- */

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static void skip_ws(pstate *ps) {
    while (ps->s < ps->end) {
        char c = *ps->s;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') ps->s++;
        else if (c == '#') {
            while (ps->s < ps->end && *ps->s != '\n') ps->s++;
        } else break;
    }
}

static size_t name_len(const pstate *ps) {
    size_t n = 0;
    while (ps->s + n < ps->end && name_char(ps->s[n])) n++;
    return n;
}

/* Whether a rule definition ("name ::=") starts here. */
static bool at_definition(pstate *ps) {
    const char *save = ps->s;
    size_t n = name_len(ps);
    bool yes = false;
    if (n) {
        ps->s += n;
        skip_ws(ps);
        yes = ps->end - ps->s >= 3 && !memcmp(ps->s, "::=", 3);
    }
    ps->s = save;
    return yes;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One character of a literal or class: an escape or a code point. */
static uint32_t read_char(pstate *ps) {
    if (*ps->s != '\\') return utf8_next(ps);
    ps->s++;
    if (ps->s >= ps->end) {
        fail(ps, "an escape at the end of the text");
        return 0;
    }
    char c = *ps->s++;
    int digits = 0;
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '0': return 0;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default: return (unsigned char)c;  /* \\ \" \] \[ \- \^ and the like */
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        int h = ps->s < ps->end ? hexval(*ps->s) : -1;
        if (h < 0) {
            fail(ps, "\\%c needs %d hex digits", c, digits);
            return 0;
        }
        v = v << 4 | (uint32_t)h;
        ps->s++;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        fail(ps, "\\%c%0*X is not a Unicode scalar value", c, digits, v);
        return 0;
    }
    return v;
}

static void parse_alternatives(pstate *ps, int rule);

static void parse_literal(pstate *ps, ivec *item) {
    const char *open = ps->s++;
    while (!ps->st) {
        if (ps->s >= ps->end) {
            ps->s = open; /* the error names where the literal opened */
            fail(ps, "a literal without its closing '\"'");
            return;
        }
        if (*ps->s == '"') {
            ps->s++;
            return;
        }
        unsigned char b[4];
        int n = cp_to_utf8(read_char(ps), b);
        for (int i = 0; i < n; i++) push(ps, item, range_set(ps, b[i], b[i]));
    }
}

static void parse_class(pstate *ps, const char *base, ivec *item) {
    const char *open = ps->s++;
    bool negate = ps->s < ps->end && *ps->s == '^';
    if (negate) ps->s++;
    crange *r = NULL;
    int n = 0, cap = 0;
    while (!ps->st) {
        if (ps->s >= ps->end) {
            ps->s = open;
            fail(ps, "a character class without its closing ']'");
            break;
        }
        if (*ps->s == ']') {
            ps->s++;
            if (n == 0 && !negate) fail(ps, "an empty character class");
            else class_elems(ps, r, n, negate, base, item);
            break;
        }
        uint32_t lo = read_char(ps), hi = lo;
        if (ps->end - ps->s >= 2 && ps->s[0] == '-' && ps->s[1] != ']') {
            ps->s++;
            hi = read_char(ps);
            if (hi < lo) fail(ps, "a range from U+%04X down to U+%04X", lo, hi);
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            crange *q = realloc(r, sizeof *q * (size_t)cap);
            if (!q) {
                oom(ps);
                break;
            }
            r = q;
        }
        r[n++] = (crange){lo, hi};
    }
    free(r);
}

/* x* as R ::= x R | () */
static int star_rule(pstate *ps, const char *base, const ivec *x) {
    int r = anon_rule(ps, base);
    ivec a = {0}, e = {0};
    append(ps, &a, x);
    push(ps, &a, ZN_GEL_REF(r));
    add_alt(ps, r, &a);
    add_alt(ps, r, &e);
    free(a.v);
    return r;
}

/* Applies a postfix operator (if one follows) to item, appending the result to seq. */
static void postfix(pstate *ps, const char *base, ivec *item, ivec *seq) {
    skip_ws(ps);
    char c = ps->s < ps->end ? *ps->s : 0;
    if (c == '*') {
        ps->s++;
        push(ps, seq, ZN_GEL_REF(star_rule(ps, base, item)));
    } else if (c == '+') {
        ps->s++;
        append(ps, seq, item);
        push(ps, seq, ZN_GEL_REF(star_rule(ps, base, item)));
    } else if (c == '?') {
        ps->s++;
        int r = anon_rule(ps, base);
        ivec e = {0};
        add_alt(ps, r, item);
        add_alt(ps, r, &e);
        push(ps, seq, ZN_GEL_REF(r));
    } else if (c == '{') {
        ps->s++;
        long m = 0, n = -1;
        skip_ws(ps);
        if (ps->s >= ps->end || *ps->s < '0' || *ps->s > '9') {
            fail(ps, "'{' needs a count");
            return;
        }
        /* every digit is read (so the error is the count, not a missing '}'); the value stops growing past the limit */
        for (; ps->s < ps->end && *ps->s >= '0' && *ps->s <= '9'; ps->s++)
            if (m <= ZN_GRAMMAR_MAX_REPEAT) m = m * 10 + (*ps->s - '0');
        skip_ws(ps);
        n = m;
        if (ps->s < ps->end && *ps->s == ',') {
            ps->s++;
            skip_ws(ps);
            n = -1;
            if (ps->s < ps->end && *ps->s >= '0' && *ps->s <= '9') {
                n = 0;
                for (; ps->s < ps->end && *ps->s >= '0' && *ps->s <= '9'; ps->s++)
                    if (n <= ZN_GRAMMAR_MAX_REPEAT) n = n * 10 + (*ps->s - '0');
            }
            skip_ws(ps);
        }
        if (ps->s >= ps->end || *ps->s != '}') {
            fail(ps, "a repetition without its closing '}'");
            return;
        }
        ps->s++;
        if (m > ZN_GRAMMAR_MAX_REPEAT || n > ZN_GRAMMAR_MAX_REPEAT) {
            fail(ps, "a repetition count above %d", ZN_GRAMMAR_MAX_REPEAT);
            return;
        }
        if (n >= 0 && n < m) {
            fail(ps, "a repetition {%ld,%ld} with its maximum below its minimum", m, n);
            return;
        }
        for (long i = 0; i < m && !ps->st; i++) append(ps, seq, item);
        if (n < 0) {
            push(ps, seq, ZN_GEL_REF(star_rule(ps, base, item)));
        } else if (n > m) {
            /* O_1 ::= x | (),  O_k ::= x O_(k-1) | () */
            int prev = -1;
            for (long k = 1; k <= n - m && !ps->st; k++) {
                int r = anon_rule(ps, base);
                ivec a = {0}, e = {0};
                append(ps, &a, item);
                if (prev >= 0) push(ps, &a, ZN_GEL_REF(prev));
                add_alt(ps, r, &a);
                add_alt(ps, r, &e);
                free(a.v);
                prev = r;
            }
            push(ps, seq, ZN_GEL_REF(prev));
        }
    } else {
        append(ps, seq, item);
    }
}

static void parse_sequence(pstate *ps, const char *base, ivec *seq) {
    while (!ps->st) {
        skip_ws(ps);
        if (ps->s >= ps->end) return;
        char c = *ps->s;
        if (c == '|' || c == ')') return;
        if (name_char(c) && at_definition(ps)) return;
        ivec item = {0};
        if (c == '"') {
            parse_literal(ps, &item);
        } else if (c == '[') {
            parse_class(ps, base, &item);
        } else if (c == '.') {
            ps->s++;
            if (ps->any_rule < 0) {
                crange all = {0, 0x10FFFF};
                int k = 0;
                ivec tmp = {0};
                class_elems(ps, &all, 1, false, "any-char", &tmp);
                if (tmp.n == 1) k = ZN_GEL_RULE(tmp.v[0]);
                free(tmp.v);
                ps->any_rule = k;
            }
            push(ps, &item, ZN_GEL_REF(ps->any_rule));
        } else if (c == '(') {
            if (++ps->nest > ZN_GRAMMAR_MAX_NEST) {
                fail(ps, "parentheses nested deeper than %d", ZN_GRAMMAR_MAX_NEST);
                return;
            }
            ps->s++;
            int r = anon_rule(ps, base);
            parse_alternatives(ps, r);
            skip_ws(ps);
            if (!ps->st && (ps->s >= ps->end || *ps->s != ')')) fail(ps, "a '(' without its ')'");
            ps->s++;
            ps->nest--;
            /* a group of one alternative with no operator after it is inlined */
            const char *save = ps->s;
            skip_ws(ps);
            bool op = ps->s < ps->end && strchr("*+?{", *ps->s);
            ps->s = save;
            if (!ps->st && !op && ps->rules[r].n_alt == 1) append(ps, &item, &ps->rules[r].alts[0]);
            else push(ps, &item, ZN_GEL_REF(r));
        } else if (name_char(c)) {
            size_t n = name_len(ps);
            int r = find_rule(ps, ps->s, n);
            if (r < 0) r = add_rule(ps, ps->s, n, false);
            ps->s += n;
            push(ps, &item, ZN_GEL_REF(r));
        } else {
            fail(ps, "unexpected '%c'", c);
        }
        if (!ps->st) postfix(ps, base, &item, seq);
        free(item.v);
    }
}

static void parse_alternatives(pstate *ps, int rule) {
    for (;;) {
        ivec seq = {0};
        parse_sequence(ps, ps->st ? "" : ps->rules[rule].name, &seq);
        add_alt(ps, rule, &seq);
        free(seq.v);
        skip_ws(ps);
        if (ps->st || ps->s >= ps->end || *ps->s != '|') return;
        ps->s++;
    }
}

static void parse_grammar(pstate *ps) {
    for (;;) {
        skip_ws(ps);
        if (ps->st || ps->s >= ps->end) return;
        size_t n = name_len(ps);
        if (!n) {
            fail(ps, "expected a rule name");
            return;
        }
        int r = find_rule(ps, ps->s, n);
        if (r >= 0 && ps->rules[r].defined) {
            fail(ps, "rule '%.*s' is defined twice", (int)n, ps->s);
            return;
        }
        if (r < 0) r = add_rule(ps, ps->s, n, true);
        if (ps->st) return;
        ps->rules[r].defined = true;
        ps->s += n;
        skip_ws(ps);
        if (ps->end - ps->s < 3 || memcmp(ps->s, "::=", 3)) {
            fail(ps, "expected '::=' after the rule name");
            return;
        }
        ps->s += 3;
        parse_alternatives(ps, r);
        if (!ps->st && ps->s < ps->end && *ps->s == ')') fail(ps, "a ')' without its '('");
    }
}

/* ---- checks: undefined rules, left recursion ---- */

static zn_status check(pstate *ps) {
    int n = ps->n_rules;
    for (int r = 0; r < n; r++)
        if (!ps->rules[r].defined)
            return zn_errf(ps->err, ZN_ERR_ARG, "grammar: rule '%s' is used but not defined", ps->rules[r].name);
    size_t nr = (size_t)(n > 0 ? n : 1);
    bool *nullable = calloc(nr, 1);
    int *color = calloc(nr, sizeof *color);
    int *stack = malloc(sizeof *stack * nr * 2);
    if (!nullable || !color || !stack) {
        free(nullable);
        free(color);
        free(stack);
        return zn_errf(ps->err, ZN_ERR_NOMEM, "grammar: out of memory");
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < n; r++) {
            if (nullable[r]) continue;
            for (int a = 0; a < ps->rules[r].n_alt && !nullable[r]; a++) {
                const ivec *v = &ps->rules[r].alts[a];
                int i = 0;
                while (i < v->n && v->v[i] < 0 && nullable[ZN_GEL_RULE(v->v[i])]) i++;
                if (i == v->n) nullable[r] = changed = true;
            }
        }
    }
    /* depth-first over "r may begin with s": a cycle is left recursion */
    zn_status st = ZN_OK;
    for (int root = 0; root < n && !st; root++) {
        if (color[root]) continue;
        int sp = 0;
        stack[sp++] = root;
        stack[sp++] = 0;
        color[root] = 1;
        while (sp && !st) {
            int r = stack[sp - 2], k = stack[sp - 1]++;
            /* the k-th left corner of r: walk alternatives and their nullable prefixes */
            int child = -1, idx = 0;
            for (int a = 0; a < ps->rules[r].n_alt && child < 0; a++) {
                const ivec *v = &ps->rules[r].alts[a];
                for (int i = 0; i < v->n && v->v[i] < 0; i++) {
                    if (idx++ == k) {
                        child = ZN_GEL_RULE(v->v[i]);
                        break;
                    }
                    if (!nullable[ZN_GEL_RULE(v->v[i])]) break;
                }
            }
            if (child < 0) {
                color[r] = 2;
                sp -= 2;
            } else if (color[child] == 1) {
                st = zn_errf(ps->err, ZN_ERR_ARG, "grammar: rule '%s' is left-recursive (through '%s')",
                             ps->rules[child].name, ps->rules[r].name);
            } else if (!color[child]) {
                color[child] = 1;
                stack[sp++] = child;
                stack[sp++] = 0;
            }
        }
    }
    free(nullable);
    free(color);
    free(stack);
    return st;
}

/* ---- API ---- */

static void free_build(pstate *ps) {
    for (int r = 0; r < ps->n_rules; r++) {
        for (int a = 0; a < ps->rules[r].n_alt; a++) free(ps->rules[r].alts[a].v);
        free(ps->rules[r].alts);
        free(ps->rules[r].name);
    }
    free(ps->rules);
    free(ps->hash);
    free(ps->sets);
}

zn_status grammar_parse(zn_grammar *g, const char *text, size_t n, const char *root, zn_err *err) {
    memset(g, 0, sizeof *g);
    if (n > ZN_GRAMMAR_MAX_SRC) return zn_errf(err, ZN_ERR_ARG, "grammar: %zu bytes; at most %d", n, ZN_GRAMMAR_MAX_SRC);
    pstate ps = {.src = text, .s = text, .end = text + n, .any_rule = -1, .err = err};
    memset(ps.single, 0xff, sizeof ps.single);
    parse_grammar(&ps);
    if (!root) root = "root";
    int rr = ps.st ? -1 : find_rule(&ps, root, strlen(root));
    if (!ps.st && rr < 0) ps.st = zn_errf(err, ZN_ERR_ARG, "grammar: no rule '%s'", root);
    if (!ps.st) ps.st = check(&ps);
    if (ps.st) {
        free_build(&ps);
        return ps.st;
    }
    int n_alt = 0;
    long n_el = 0;
    for (int r = 0; r < ps.n_rules; r++) {
        n_alt += ps.rules[r].n_alt;
        for (int a = 0; a < ps.rules[r].n_alt; a++) n_el += ps.rules[r].alts[a].n + 1;
    }
    g->el = malloc(sizeof *g->el * (size_t)(n_el ? n_el : 1));
    g->alt = malloc(sizeof *g->alt * (size_t)(n_alt ? n_alt : 1));
    g->rule_alt = malloc(sizeof *g->rule_alt * (size_t)(ps.n_rules + 1));
    g->name = calloc((size_t)(ps.n_rules > 0 ? ps.n_rules : 1), sizeof *g->name);
    if (!g->el || !g->alt || !g->rule_alt || !g->name) {
        free_build(&ps);
        grammar_free(g);
        return zn_errf(err, ZN_ERR_NOMEM, "grammar: out of memory");
    }
    for (int r = 0; r < ps.n_rules; r++) {
        g->rule_alt[r] = g->n_alt;
        for (int a = 0; a < ps.rules[r].n_alt; a++) {
            const ivec *v = &ps.rules[r].alts[a];
            g->alt[g->n_alt++] = g->n_el;
            memcpy(g->el + g->n_el, v->v, sizeof *v->v * (size_t)v->n);
            g->n_el += v->n;
            g->el[g->n_el++] = ZN_GEL_END;
        }
        g->name[r] = ps.rules[r].name;
        ps.rules[r].name = NULL;
    }
    g->rule_alt[ps.n_rules] = g->n_alt;
    g->n_rules = ps.n_rules;
    g->root = rr;
    g->set = ps.sets;
    g->n_set = ps.n_sets;
    ps.sets = NULL;
    free_build(&ps);
    return ZN_OK;
}

void grammar_free(zn_grammar *g) {
    for (int r = 0; g->name && r < g->n_rules; r++) free(g->name[r]);
    free(g->name);
    free(g->el);
    free(g->alt);
    free(g->rule_alt);
    free(g->set);
    memset(g, 0, sizeof *g);
}
