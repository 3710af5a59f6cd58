/* JSON Schema -> GBNF (see jschema.h). */
#include "jschema.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 256;
        while (c < b->n + n + 1) c *= 2;
        char *q = realloc(b->p, c);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void sb_fmt(sbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k < sizeof tmp) {
        sb_add(b, tmp, (size_t)k);
        return;
    }
    char *big = malloc((size_t)k + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    sb_add(b, big, (size_t)k);
    free(big);
}

struct zn_gbnf {
    sbuf text;
    json_t *names;    /* rule names taken (a set) */
    json_t *refs;     /* $ref -> rule name, for the schema being added */
    json_t *root;     /* that schema's document */
    const char *where;
    char **owned;     /* names handed out */
    int n_owned, cap_owned;
    int depth;
    zn_status st;
    zn_err *err;
};

__attribute__((format(printf, 3, 4))) static void unsupported(zn_gbnf *b, const char *path, const char *fmt, ...) {
    if (b->st) return;
    char msg[ZN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    b->st = zn_errf(b->err, ZN_ERR_UNSUPPORTED, "%s: %s (at %s)", b->where, msg, path);
}

static void oom(zn_gbnf *b) {
    if (!b->st) b->st = zn_errf(b->err, ZN_ERR_NOMEM, "%s: out of memory", b->where ? b->where : "grammar");
}

static char *dup_s(zn_gbnf *b, const char *s) {
    char *d = strdup(s);
    if (!d) oom(b);
    return d;
}

/* ---- names and rules ---- */

static char *unique_name(zn_gbnf *b, const char *base) {
    char clean[80];
    size_t k = 0;
    for (const char *p = base; *p && k < 60; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        clean[k++] = ok ? c : '-';
    }
    if (!k) clean[k++] = 'r';
    clean[k] = 0;
    char name[96];
    snprintf(name, sizeof name, "%s", clean);
    for (int i = 2; json_object_get(b->names, name); i++) snprintf(name, sizeof name, "%s-%d", clean, i);
    if (json_object_set_new(b->names, name, json_true())) {
        oom(b);
        return NULL;
    }
    return dup_s(b, name);
}

static void define(zn_gbnf *b, const char *name, const char *body) {
    if (b->st) return;
    sb_str(&b->text, name);
    sb_str(&b->text, " ::= ");
    sb_str(&b->text, body);
    sb_str(&b->text, "\n");
    if (b->text.oom) oom(b);
}

zn_status gbnf_add_rule(zn_gbnf *b, const char *name, const char *body, zn_err *err) {
    b->err = err;
    if (json_object_get(b->names, name)) return zn_errf(err, ZN_ERR_ARG, "grammar: rule '%s' added twice", name);
    if (json_object_set_new(b->names, name, json_true())) return zn_errf(err, ZN_ERR_NOMEM, "grammar: out of memory");
    define(b, name, body);
    return b->st;
}

size_t gbnf_quote(const char *s, size_t n, char *out) {
    size_t k = 0;
    out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') out[k++] = '\\', out[k++] = (char)c;
        else if (c == '\n') out[k++] = '\\', out[k++] = 'n';
        else if (c == '\r') out[k++] = '\\', out[k++] = 'r';
        else if (c == '\t') out[k++] = '\\', out[k++] = 't';
        else if (c < 0x20 || c == 0x7f) k += (size_t)sprintf(out + k, "\\x%02X", c);
        else out[k++] = (char)c;
    }
    out[k++] = '"';
    out[k] = 0;
    return k;
}

static void sb_quote(zn_gbnf *b, sbuf *o, const char *s, size_t n) {
    char *q = malloc(4 * n + 3);
    if (!q) {
        oom(b);
        return;
    }
    size_t k = gbnf_quote(s, n, q);
    sb_add(o, q, k);
    free(q);
}

/* ---- primitives ---- */

static const struct prim {
    const char *name, *body;
} PRIMS[] = {
    {"space", "( \" \" | \"\\n\" [ \\t]{0,16} )?"},
    {"json-char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )"},
    {"json-string", "\"\\\"\" json-char* \"\\\"\""},
    {"json-int", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} )"},
    {"json-number", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?"},
    {"json-bool", "\"true\" | \"false\""},
    {"json-null", "\"null\""},
    {"json-kv", "json-string \":\" space json-value"},
    {"json-object", "\"{\" space ( json-kv ( \",\" space json-kv )* space )? \"}\""},
    {"json-array", "\"[\" space ( json-value ( \",\" space json-value )* space )? \"]\""},
    {"json-value", "json-object | json-array | json-string | json-number | json-bool | json-null"},
    {"json-date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )"},
    {"json-time", "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? "
                  "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"},
    {"json-uuid", "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}"},
};

/* Refers to a primitive, adding it (and what it uses) on first use. */
static const char *prim(zn_gbnf *b, const char *name) {
    for (size_t i = 0; i < sizeof PRIMS / sizeof PRIMS[0]; i++) {
        if (strcmp(PRIMS[i].name, name)) continue;
        if (!json_object_get(b->names, name)) {
            json_object_set_new(b->names, name, json_true());
            define(b, name, PRIMS[i].body);
            /* dependencies: every primitive named in the body */
            for (size_t k = 0; k < sizeof PRIMS / sizeof PRIMS[0]; k++) {
                const char *at = strstr(PRIMS[i].body, PRIMS[k].name);
                size_t L = strlen(PRIMS[k].name);
                while (at) {
                    char after = at[L];
                    bool word = !(after == '-' || (after >= 'a' && after <= 'z')) && (at == PRIMS[i].body || at[-1] == ' ');
                    if (word) {
                        prim(b, PRIMS[k].name);
                        break;
                    }
                    at = strstr(at + 1, PRIMS[k].name);
                }
            }
        }
        return PRIMS[i].name;
    }
    return "json-value";
}

const char *gbnf_any_value(zn_gbnf *b) { return prim(b, "json-value"); }
const char *gbnf_any_object(zn_gbnf *b) { return prim(b, "json-object"); }

/* ---- integers in a range ---- */

/* Same-length digit strings f <= t: every number between, as GBNF. */
static void digit_range(sbuf *o, const char *f, const char *t, int n) {
    if (n <= 0) return;
    if (f[0] == t[0]) {
        sb_fmt(o, "\"%c\"", f[0]);
        if (n > 1) {
            sb_str(o, " ");
            digit_range(o, f + 1, t + 1, n - 1);
        }
        return;
    }
    bool fz = true, tn = true;
    for (int i = 1; i < n; i++) fz &= f[i] == '0', tn &= t[i] == '9';
    char nines[24], zeros[24];
    memset(nines, '9', sizeof nines);
    memset(zeros, '0', sizeof zeros);
    int lo = f[0], hi = t[0];
    bool first = true;
    sb_str(o, "(");
    if (!fz) {
        sb_fmt(o, "\"%c\" (", f[0]);
        digit_range(o, f + 1, nines, n - 1);
        sb_str(o, ")");
        lo++;
        first = false;
    }
    int hi2 = tn ? hi : hi - 1;
    if (lo <= hi2) {
        if (!first) sb_str(o, " | ");
        if (lo == hi2) sb_fmt(o, "\"%c\"", lo);
        else sb_fmt(o, "[%c-%c]", lo, hi2);
        if (n > 1) sb_fmt(o, " [0-9]{%d}", n - 1);
        first = false;
    }
    if (!tn) {
        if (!first) sb_str(o, " | ");
        sb_fmt(o, "\"%c\" (", t[0]);
        digit_range(o, zeros, t + 1, n - 1);
        sb_str(o, ")");
    }
    sb_str(o, ")");
}

#define INT_DIGITS 16 /* as json-int */

static int ndigits(long long v) {
    int d = 1;
    while (v >= 10) v /= 10, d++;
    return d;
}

/* a..b (0 <= a; b < 0: unbounded), canonical decimal. */
static void nonneg_range(sbuf *o, long long a, long long b) {
    int la = ndigits(a), lb = b < 0 ? INT_DIGITS : ndigits(b);
    sb_str(o, "(");
    bool first = true;
    for (int L = la; L <= lb; L++) {
        if (b < 0 && L > la) { /* every longer number */
            sb_str(o, " | [1-9]");
            if (la < INT_DIGITS) sb_fmt(o, " [0-9]{%d,%d}", la, INT_DIGITS - 1);
            break;
        }
        long long p = 1;
        for (int i = 1; i < L; i++) p *= 10;
        long long lo = L == la ? a : p, hi = (L == lb && b >= 0) ? b : p * 10 - 1;
        char f[24], t[24];
        snprintf(f, sizeof f, "%lld", lo);
        snprintf(t, sizeof t, "%lld", hi);
        if (!first) sb_str(o, " | ");
        digit_range(o, f, t, L);
        first = false;
    }
    sb_str(o, ")");
}

#define BIG 1000000000000000LL /* 1e15: bounds beyond are the digit cap's business */

static void int_range(sbuf *o, bool has_lo, long long lo, bool has_hi, long long hi) {
    if (has_lo && lo <= -BIG) has_lo = false;
    if (has_hi && hi >= BIG) has_hi = false;
    bool first = true;
    sb_str(o, "(");
    if (!has_lo || lo < 0) { /* negatives: "-" and a magnitude */
        long long mlo = has_hi && hi < 0 ? -hi : 1, mhi = has_lo ? -lo : -1;
        sb_str(o, "\"-\" ");
        nonneg_range(o, mlo, mhi);
        first = false;
    }
    if (!has_hi || hi >= 0) {
        if (!first) sb_str(o, " | ");
        nonneg_range(o, has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1);
    }
    sb_str(o, ")");
}

/* ---- schemas ---- */

static char *expr_of(zn_gbnf *b, json_t *s, const char *name, const char *path);

/* The expression as a rule of its own (unless it is one already). */
static char *as_rule(zn_gbnf *b, char *expr, const char *name) {
    if (!expr || b->st) {
        free(expr);
        return NULL;
    }
    bool simple = true;
    for (const char *p = expr; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            simple = false;
    if (simple) return expr;
    char *r = unique_name(b, name);
    if (r) define(b, r, expr);
    free(expr);
    return r;
}

static char *sub_path(const char *path, const char *a, const char *k) {
    size_t n = strlen(path) + strlen(a) + (k ? strlen(k) : 0) + 3;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s%s%s", path, a, k ? "/" : "", k ? k : "");
    return p;
}

static char *literal_of(zn_gbnf *b, json_t *v) {
    char *txt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!txt) {
        oom(b);
        return NULL;
    }
    sbuf o = {0};
    sb_quote(b, &o, txt, strlen(txt));
    free(txt);
    if (o.oom) oom(b);
    return o.p;
}

static const char *const IGNORED[] = {"title", "description", "default", "examples", "example", "$schema", "$id",
                                      "$comment", "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
                                      "strict", "name", "nullable", "$anchor", "discriminator", "format", "additionalItems",
                                      NULL};
static const char *const KNOWN[] = {"type", "properties", "required", "additionalProperties", "items", "prefixItems",
                                    "minItems", "maxItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
                                    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
                                    "exclusiveMaximum", NULL};

static bool in_list(const char *const *l, const char *k) {
    for (; *l; l++)
        if (!strcmp(*l, k)) return true;
    return false;
}

/* Resolves a local JSON pointer ("#", "#/a/b~1c"). */
static json_t *resolve(json_t *root, const char *ref) {
    if (strcmp(ref, "#") == 0) return root;
    if (strncmp(ref, "#/", 2)) return NULL;
    json_t *cur = root;
    const char *p = ref + 2;
    while (cur && *p) {
        char seg[256];
        size_t k = 0;
        for (; *p && *p != '/' && k < sizeof seg - 1; p++) {
            if (*p == '~' && p[1] == '0') seg[k++] = '~', p++;
            else if (*p == '~' && p[1] == '1') seg[k++] = '/', p++;
            else seg[k++] = *p;
        }
        seg[k] = 0;
        if (*p == '/') p++;
        if (json_is_object(cur)) cur = json_object_get(cur, seg);
        else if (json_is_array(cur)) {
            char *end;
            long i = strtol(seg, &end, 10);
            cur = *end || i < 0 ? NULL : json_array_get(cur, (size_t)i);
        } else cur = NULL;
    }
    return cur;
}

static bool get_count(zn_gbnf *b, json_t *s, const char *key, const char *path, long *out) {
    json_t *v = json_object_get(s, key);
    if (!v) return false;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > ZN_GRAMMAR_MAX_REPEAT) {
        unsupported(b, path, "'%s' must be an integer from 0 to %d", key, ZN_GRAMMAR_MAX_REPEAT);
        return false;
    }
    *out = (long)json_integer_value(v);
    return true;
}

/* "{m,n}" or "*" for a repetition count range (n < 0: unbounded). */
static void sb_rep(sbuf *o, long m, long n) {
    if (m == 0 && n < 0) sb_str(o, "*");
    else if (n < 0) sb_fmt(o, "{%ld,}", m);
    else if (m == n) sb_fmt(o, "{%ld}", m);
    else sb_fmt(o, "{%ld,%ld}", m, n);
}

static char *string_expr(zn_gbnf *b, json_t *s, const char *path) {
    json_t *fmt = json_object_get(s, "format");
    if (fmt) {
        const char *f = json_string_value(fmt);
        const char *p = !f ? NULL : !strcmp(f, "date") ? "json-date" : !strcmp(f, "time") ? "json-time"
                      : !strcmp(f, "uuid") ? "json-uuid" : !strcmp(f, "date-time") ? "date-time" : NULL;
        if (!p) {
            unsupported(b, path, "'format': '%.40s' is not supported (date, time, date-time, uuid are)", f ? f : "?");
            return NULL;
        }
        sbuf o = {0};
        if (!strcmp(p, "date-time")) sb_fmt(&o, "\"\\\"\" %s \"T\" %s \"\\\"\"", prim(b, "json-date"), prim(b, "json-time"));
        else sb_fmt(&o, "\"\\\"\" %s \"\\\"\"", prim(b, p));
        return o.p;
    }
    long mn = 0, mx = -1;
    get_count(b, s, "minLength", path, &mn);
    get_count(b, s, "maxLength", path, &mx);
    if (b->st) return NULL;
    if (mx >= 0 && mx < mn) {
        unsupported(b, path, "'maxLength' below 'minLength'");
        return NULL;
    }
    if (mn == 0 && mx < 0) return dup_s(b, prim(b, "json-string"));
    sbuf o = {0};
    sb_fmt(&o, "\"\\\"\" %s", prim(b, "json-char"));
    sb_rep(&o, mn, mx);
    sb_str(&o, " \"\\\"\"");
    return o.p;
}

static bool num_bound(json_t *s, const char *key, double *v) {
    json_t *x = json_object_get(s, key);
    if (!json_is_number(x)) return false;
    *v = json_number_value(x);
    return true;
}

static char *number_expr(zn_gbnf *b, json_t *s, bool integer, const char *path) {
    double mn = 0, mx = 0, xmn = 0, xmx = 0;
    bool has_mn = num_bound(s, "minimum", &mn), has_mx = num_bound(s, "maximum", &mx);
    bool has_xmn = num_bound(s, "exclusiveMinimum", &xmn), has_xmx = num_bound(s, "exclusiveMaximum", &xmx);
    if (json_is_boolean(json_object_get(s, "exclusiveMinimum")) || json_is_boolean(json_object_get(s, "exclusiveMaximum"))) {
        unsupported(b, path, "boolean 'exclusiveMinimum'/'exclusiveMaximum' (draft 4) is not supported; give the bound itself");
        return NULL;
    }
    if (!has_mn && !has_mx && !has_xmn && !has_xmx) return dup_s(b, prim(b, integer ? "json-int" : "json-number"));
    if (!integer) {
        if (has_mn && mn == 0 && !has_mx && !has_xmn && !has_xmx)
            return dup_s(b, "( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?");
        unsupported(b, path, "bounds on a 'number' are not supported (only 'minimum': 0; 'integer' takes any bounds)");
        return NULL;
    }
    bool has_lo = has_mn || has_xmn, has_hi = has_mx || has_xmx;
    double lo = -INFINITY, hi = INFINITY;
    if (has_mn) lo = ceil(mn);
    if (has_xmn && floor(xmn) + 1 > lo) lo = floor(xmn) + 1;
    if (has_mx) hi = floor(mx);
    if (has_xmx && ceil(xmx) - 1 < hi) hi = ceil(xmx) - 1;
    if (has_lo && has_hi && lo > hi) {
        unsupported(b, path, "no integer lies within the bounds");
        return NULL;
    }
    sbuf o = {0};
    long long L = !has_lo ? 0 : lo < -1e18 ? -(long long)1e18 : (long long)lo;
    long long H = !has_hi ? 0 : hi > 1e18 ? (long long)1e18 : (long long)hi;
    int_range(&o, has_lo, L, has_hi, H);
    return o.p;
}

/* A property "key": value, as a rule. */
static char *kv_rule(zn_gbnf *b, const char *key, json_t *schema, const char *name, const char *path) {
    char *pp = sub_path(path, "properties", key);
    size_t nl = strlen(name) + strlen(key) + 2;
    char *sub = malloc(nl);
    if (!pp || !sub) {
        free(pp);
        free(sub);
        oom(b);
        return NULL;
    }
    snprintf(sub, nl, "%s-%s", name, key);
    char *v = as_rule(b, expr_of(b, schema ? schema : json_true(), sub, pp), sub);
    free(pp);
    json_t *k = json_string(key);
    char *klit = k ? literal_of(b, k) : NULL;
    json_decref(k);
    char *r = NULL;
    if (v && klit) {
        sbuf o = {0};
        sb_fmt(&o, "%s \":\" %s %s", klit, prim(b, "space"), v);
        char *kv = malloc(strlen(sub) + 4);
        if (kv) {
            sprintf(kv, "%s-kv", sub);
            r = as_rule(b, o.p, kv);
            free(kv);
        } else {
            free(o.p);
        }
    }
    free(v);
    free(klit);
    free(sub);
    return r;
}

static char *object_expr(zn_gbnf *b, json_t *s, const char *name, const char *path) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *ap = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) {
        unsupported(b, path, "'properties' must be an object");
        return NULL;
    }
    if (req && !json_is_array(req)) {
        unsupported(b, path, "'required' must be an array of names");
        return NULL;
    }
    const char *sp = prim(b, "space");
    /* extra properties: only when additionalProperties allows them, or nothing is declared */
    char *extra = NULL;
    bool declared = json_object_size(props) > 0 || json_array_size(req) > 0;
    if (json_is_object(ap) && json_object_size(ap) > 0) {
        char *ep = sub_path(path, "additionalProperties", NULL);
        char *en = malloc(strlen(name) + 8);
        if (en) sprintf(en, "%s-extra", name);
        char *v = ep && en ? as_rule(b, expr_of(b, ap, en, ep), en) : NULL;
        if (v) {
            sbuf o = {0};
            sb_fmt(&o, "%s \":\" %s %s", prim(b, "json-string"), sp, v);
            sprintf(en, "%s-xkv", name);
            extra = as_rule(b, o.p, en);
        }
        free(v);
        free(ep);
        free(en);
    } else if (json_is_true(ap) || (!ap && !declared) || (json_is_object(ap) && !json_object_size(ap))) {
        extra = dup_s(b, prim(b, "json-kv"));
    } else if (ap && !json_is_false(ap)) {
        unsupported(b, path, "'additionalProperties' must be a boolean or a schema");
    }
    if (b->st) {
        free(extra);
        return NULL;
    }
    /* required first (schema order, then required names not declared), then optional */
    int n = (int)json_object_size(props) + (int)json_array_size(req);
    char **kv = calloc((size_t)(n ? n : 1), sizeof *kv);
    bool *is_req = calloc((size_t)(n ? n : 1), 1);
    int nk = 0, nreq = 0;
    if (!kv || !is_req) {
        oom(b);
        free(kv);
        free(is_req);
        free(extra);
        return NULL;
    }
    for (int pass = 0; pass < 2 && !b->st; pass++) {
        const char *key;
        json_t *v;
        json_object_foreach(props, key, v) {
            bool r = false;
            for (size_t i = 0; i < json_array_size(req); i++)
                if (json_is_string(json_array_get(req, i)) && !strcmp(json_string_value(json_array_get(req, i)), key)) r = true;
            if (r != (pass == 0)) continue;
            kv[nk] = kv_rule(b, key, v, name, path);
            is_req[nk++] = r;
            nreq += r;
        }
        if (pass == 0)
            for (size_t i = 0; i < json_array_size(req) && !b->st; i++) {
                const char *k = json_string_value(json_array_get(req, i));
                if (!k) {
                    unsupported(b, path, "'required' must be an array of names");
                    break;
                }
                if (props && json_object_get(props, k)) continue;
                kv[nk] = kv_rule(b, k, NULL, name, path);
                is_req[nk++] = true;
                nreq++;
            }
    }
    sbuf o = {0};
    if (!b->st) {
        sb_fmt(&o, "\"{\" %s ", sp);
        if (nreq > 0) {
            for (int i = 0; i < nk; i++) {
                if (is_req[i]) sb_fmt(&o, "%s%s ", i ? "\",\" space " : "", kv[i]);
                else sb_fmt(&o, "( \",\" %s %s )? ", sp, kv[i]);
            }
            if (extra) sb_fmt(&o, "( \",\" %s %s )* ", sp, extra);
            sb_fmt(&o, "%s \"}\"", sp);
        } else if (nk == 0 && !extra) {
            sb_str(&o, "\"}\"");
        } else {
            /* nothing required: whichever comes first has no comma before it */
            char **tail = calloc((size_t)nk + 2, sizeof *tail);
            if (!tail) oom(b);
            for (int i = nk; tail && i >= 0 && !b->st; i--) {
                sbuf t = {0};
                if (i == nk) {
                    if (extra) sb_fmt(&t, "( \",\" %s %s )*", sp, extra);
                    else sb_str(&t, "\"\"");
                } else {
                    sb_fmt(&t, "( \",\" %s %s )? %s", sp, kv[i], tail[i + 1]);
                }
                char tn[120];
                snprintf(tn, sizeof tn, "%.80s-t%d", name, i);
                tail[i] = as_rule(b, t.p, tn);
            }
            sbuf alts = {0};
            for (int i = 0; tail && i < nk; i++) sb_fmt(&alts, "%s%s %s", i ? " | " : "", kv[i], tail[i + 1]);
            if (extra && tail) sb_fmt(&alts, "%s%s %s", nk ? " | " : "", extra, tail[nk]);
            o.n = 0;
            if (alts.p) sb_fmt(&o, "\"{\" %s ( ( %s ) %s )? \"}\"", sp, alts.p, sp);
            if (alts.oom) oom(b);
            free(alts.p);
            for (int i = 0; tail && i <= nk; i++) free(tail[i]);
            free(tail);
        }
        if (o.oom) oom(b);
    }
    for (int i = 0; i < nk; i++) free(kv[i]);
    free(kv);
    free(is_req);
    free(extra);
    if (b->st) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

static char *array_expr(zn_gbnf *b, json_t *s, const char *name, const char *path) {
    const char *sp = prim(b, "space");
    json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    long mn = 0, mx = -1;
    get_count(b, s, "minItems", path, &mn);
    get_count(b, s, "maxItems", path, &mx);
    if (b->st) return NULL;
    if (mx >= 0 && mx < mn) {
        unsupported(b, path, "'maxItems' below 'minItems'");
        return NULL;
    }
    if (json_is_array(items)) {
        unsupported(b, path, "'items' as an array (draft 4 tuples): use 'prefixItems'");
        return NULL;
    }
    sbuf o = {0};
    sb_fmt(&o, "\"[\" %s ", sp);
    char *it = NULL;
    if (!json_is_false(items)) {
        char *ip = sub_path(path, "items", NULL);
        char *in = malloc(strlen(name) + 6);
        if (in) sprintf(in, "%s-item", name);
        it = ip && in ? as_rule(b, expr_of(b, items ? items : json_true(), in, ip), in) : NULL;
        free(ip);
        free(in);
    }
    if (json_is_array(prefix)) {
        size_t np = json_array_size(prefix);
        if ((long)np < mn) mn = (long)np;
        for (size_t i = 0; i < np && !b->st; i++) {
            char idx[24];
            snprintf(idx, sizeof idx, "%zu", i);
            char *ip = sub_path(path, "prefixItems", idx);
            char *in = malloc(strlen(name) + 24);
            if (in) sprintf(in, "%s-%zu", name, i);
            char *e = ip && in ? as_rule(b, expr_of(b, json_array_get(prefix, i), in, ip), in) : NULL;
            if (e) sb_fmt(&o, "%s%s ", i ? "\",\" space " : "", e);
            free(e);
            free(ip);
            free(in);
        }
        long more_max = mx < 0 ? -1 : mx - (long)np;
        if (it && more_max != 0 && items) { /* items after the tuple only when 'items' says what they are */
            sb_fmt(&o, "( \",\" %s %s )", sp, it);
            sb_rep(&o, 0, more_max);
            sb_str(&o, " ");
        }
        if (np) sb_fmt(&o, "%s ", sp);
        sb_str(&o, "\"]\"");
    } else if (!it || mx == 0) {
        sb_str(&o, "\"]\"");
    } else {
        bool opt = mn == 0;
        if (opt) sb_str(&o, "( ");
        sb_fmt(&o, "%s ( \",\" %s %s )", it, sp, it);
        sb_rep(&o, mn > 0 ? mn - 1 : 0, mx < 0 ? -1 : mx - 1);
        sb_fmt(&o, " %s ", sp);
        if (opt) sb_str(&o, ")? ");
        sb_str(&o, "\"]\"");
    }
    free(it);
    if (o.oom) oom(b);
    if (b->st) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

/* allOf of object schemas: one object schema with every property and requirement. */
static json_t *merge_all_of(zn_gbnf *b, json_t *all, const char *path) {
    json_t *m = json_pack("{s:s,s:o,s:o}", "type", "object", "properties", json_object(), "required", json_array());
    if (!m) {
        oom(b);
        return NULL;
    }
    json_t *props = json_object_get(m, "properties"), *req = json_object_get(m, "required");
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *x = json_array_get(all, i);
        json_t *r = json_object_get(x, "$ref");
        if (json_is_string(r)) x = resolve(b->root, json_string_value(r));
        json_t *t = json_object_get(x, "type");
        if (!json_is_object(x) || (t && !(json_is_string(t) && !strcmp(json_string_value(t), "object"))) ||
            !(json_object_get(x, "properties") || json_object_get(x, "required"))) {
            json_decref(m);
            unsupported(b, path, "'allOf' is supported for object schemas only");
            return NULL;
        }
        json_object_update(props, json_object_get(x, "properties"));
        json_array_extend(req, json_is_array(json_object_get(x, "required")) ? json_object_get(x, "required") : json_array());
        json_t *ap = json_object_get(x, "additionalProperties");
        if (ap) json_object_set(m, "additionalProperties", ap);
    }
    return m;
}

static char *alternatives(zn_gbnf *b, json_t *list, const char *key, const char *name, const char *path) {
    if (!json_is_array(list) || !json_array_size(list)) {
        unsupported(b, path, "'%s' must be a non-empty array", key);
        return NULL;
    }
    sbuf o = {0};
    sb_str(&o, "( ");
    for (size_t i = 0; i < json_array_size(list) && !b->st; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        char *ip = sub_path(path, key, idx);
        char *in = malloc(strlen(name) + 24);
        if (in) sprintf(in, "%s-%zu", name, i);
        char *e = ip && in ? as_rule(b, expr_of(b, json_array_get(list, i), in, ip), in) : NULL;
        if (e) sb_fmt(&o, "%s%s", i ? " | " : "", e);
        free(e);
        free(ip);
        free(in);
    }
    sb_str(&o, " )");
    if (o.oom) oom(b);
    if (b->st) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

static char *typed_expr(zn_gbnf *b, json_t *s, const char *type, const char *name, const char *path) {
    if (!strcmp(type, "object")) return object_expr(b, s, name, path);
    if (!strcmp(type, "array")) return array_expr(b, s, name, path);
    if (!strcmp(type, "string")) return string_expr(b, s, path);
    if (!strcmp(type, "integer")) return number_expr(b, s, true, path);
    if (!strcmp(type, "number")) return number_expr(b, s, false, path);
    if (!strcmp(type, "boolean")) return dup_s(b, prim(b, "json-bool"));
    if (!strcmp(type, "null")) return dup_s(b, prim(b, "json-null"));
    unsupported(b, path, "unknown 'type' '%.40s'", type);
    return NULL;
}

static char *expr_of(zn_gbnf *b, json_t *s, const char *name, const char *path) {
    if (b->st) return NULL;
    if (json_is_true(s) || (json_is_object(s) && json_object_size(s) == 0)) return dup_s(b, prim(b, "json-value"));
    if (json_is_false(s)) {
        unsupported(b, path, "the schema 'false' matches nothing");
        return NULL;
    }
    if (!json_is_object(s)) {
        unsupported(b, path, "a schema must be an object or a boolean");
        return NULL;
    }
    if (++b->depth > ZN_GRAMMAR_MAX_NEST) {
        unsupported(b, path, "schemas nested deeper than %d", ZN_GRAMMAR_MAX_NEST);
        return NULL;
    }
    char *r = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(s, key, v) {
        if (in_list(KNOWN, key) || in_list(IGNORED, key) || !strncmp(key, "x-", 2)) continue;
        if (!strcmp(key, "uniqueItems") && !json_is_true(v)) continue;
        unsupported(b, path, "'%.60s' is not supported", key);
        goto out;
    }
    json_t *nullable = json_object_get(s, "nullable");
    if (json_is_true(nullable)) {
        json_t *c = json_copy(s);
        if (!c) {
            oom(b);
            goto out;
        }
        json_object_del(c, "nullable");
        char *e = expr_of(b, c, name, path);
        json_decref(c);
        if (e) {
            sbuf o = {0};
            sb_fmt(&o, "( %s | %s )", e, prim(b, "json-null"));
            r = o.p;
        }
        free(e);
        goto out;
    }
    json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        const char *rs = json_string_value(ref);
        if (!rs || rs[0] != '#') {
            unsupported(b, path, "'$ref' to another document (%.60s)", rs ? rs : "not a string");
            goto out;
        }
        json_t *known = json_object_get(b->refs, rs);
        if (known) {
            r = dup_s(b, json_string_value(known));
            goto out;
        }
        json_t *target = resolve(b->root, rs);
        if (!target) {
            unsupported(b, path, "'$ref' %.80s points at nothing", rs);
            goto out;
        }
        const char *last = strrchr(rs, '/');
        char base[96];
        snprintf(base, sizeof base, "%s-%s", b->where && strstr(b->where, "tool") ? name : "ref", last ? last + 1 : "root");
        char *rn = unique_name(b, base);
        if (!rn || json_object_set_new(b->refs, rs, json_string(rn))) {
            free(rn);
            oom(b);
            goto out;
        }
        char *e = expr_of(b, target, rn, rs);
        if (e) define(b, rn, e);
        free(e);
        r = rn;
        goto out;
    }
    json_t *cst = json_object_get(s, "const");
    if (cst) {
        r = literal_of(b, cst);
        goto out;
    }
    json_t *en = json_object_get(s, "enum");
    if (en) {
        if (!json_is_array(en) || !json_array_size(en)) {
            unsupported(b, path, "'enum' must be a non-empty array");
            goto out;
        }
        sbuf o = {0};
        sb_str(&o, "( ");
        for (size_t i = 0; i < json_array_size(en) && !b->st; i++) {
            char *l = literal_of(b, json_array_get(en, i));
            if (l) sb_fmt(&o, "%s%s", i ? " | " : "", l);
            free(l);
        }
        sb_str(&o, " )");
        r = o.p;
        goto out;
    }
    json_t *any = json_object_get(s, "anyOf");
    if (!any) any = json_object_get(s, "oneOf");
    if (any) {
        r = alternatives(b, any, json_object_get(s, "anyOf") ? "anyOf" : "oneOf", name, path);
        goto out;
    }
    json_t *all = json_object_get(s, "allOf");
    if (all) {
        if (json_array_size(all) == 1) {
            r = expr_of(b, json_array_get(all, 0), name, path);
        } else {
            json_t *m = merge_all_of(b, all, path);
            if (m) r = expr_of(b, m, name, path);
            json_decref(m);
        }
        goto out;
    }
    json_t *type = json_object_get(s, "type");
    if (json_is_string(type)) {
        r = typed_expr(b, s, json_string_value(type), name, path);
    } else if (json_is_array(type)) {
        sbuf o = {0};
        sb_str(&o, "( ");
        for (size_t i = 0; i < json_array_size(type) && !b->st; i++) {
            const char *t = json_string_value(json_array_get(type, i));
            if (!t) {
                unsupported(b, path, "'type' must be a string or an array of strings");
                break;
            }
            char in[120];
            snprintf(in, sizeof in, "%.80s-%s", name, t);
            char *e = as_rule(b, typed_expr(b, s, t, in, path), in);
            if (e) sb_fmt(&o, "%s%s", i ? " | " : "", e);
            free(e);
        }
        sb_str(&o, " )");
        if (b->st) free(o.p);
        else r = o.p;
    } else if (type) {
        unsupported(b, path, "'type' must be a string or an array of strings");
    } else if (json_object_get(s, "properties") || json_object_get(s, "required") ||
               json_object_get(s, "additionalProperties")) {
        r = object_expr(b, s, name, path);
    } else if (json_object_get(s, "items") || json_object_get(s, "prefixItems")) {
        r = array_expr(b, s, name, path);
    } else {
        r = dup_s(b, prim(b, "json-value"));
    }
out:
    b->depth--;
    if (b->st) {
        free(r);
        return NULL;
    }
    return r;
}

/* ---- API ---- */

zn_status gbnf_new(zn_gbnf **out, zn_err *err) {
    zn_gbnf *b = calloc(1, sizeof *b);
    if (b) b->names = json_object();
    if (!b || !b->names) {
        free(b);
        return zn_errf(err, ZN_ERR_NOMEM, "grammar: out of memory");
    }
    *out = b;
    return ZN_OK;
}

void gbnf_free(zn_gbnf *b) {
    if (!b) return;
    json_decref(b->names);
    for (int i = 0; i < b->n_owned; i++) free(b->owned[i]);
    free(b->owned);
    free(b->text.p);
    free(b);
}

zn_status gbnf_add_schema(zn_gbnf *b, const char *name, const char *schema, size_t n, const char *where,
                          const char **rule, zn_err *err) {
    b->err = err;
    b->where = where;
    b->st = ZN_OK;
    *rule = NULL;
    json_error_t je;
    json_t *s = json_loadb(schema, n, JSON_DECODE_ANY, &je);
    if (!s) return zn_errf(err, ZN_ERR_ARG, "%s: not valid JSON: %s", where, je.text);
    b->root = s;
    b->refs = json_object();
    char *e = b->refs ? expr_of(b, s, name, "#") : NULL;
    if (!b->refs) oom(b);
    char *r = as_rule(b, e, name);
    json_decref(b->refs);
    json_decref(s);
    b->refs = b->root = NULL;
    if (b->st) {
        free(r);
        return b->st;
    }
    if (b->n_owned == b->cap_owned) {
        int c = b->cap_owned ? b->cap_owned * 2 : 8;
        char **q = realloc(b->owned, sizeof *q * (size_t)c);
        if (!q) {
            free(r);
            return zn_errf(err, ZN_ERR_NOMEM, "grammar: out of memory");
        }
        b->owned = q;
        b->cap_owned = c;
    }
    b->owned[b->n_owned++] = r;
    *rule = r;
    return ZN_OK;
}

zn_status gbnf_add_until(zn_gbnf *b, const char *name, const char *delim, zn_err *err) {
    size_t n = strlen(delim);
    if (n == 0 || n > 64) return zn_errf(err, ZN_ERR_ARG, "grammar: a delimiter of %zu bytes", n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)delim[i] >= 0x80 || delim[i] == 0)
            return zn_errf(err, ZN_ERR_ARG, "grammar: delimiters must be ASCII");
    /* KMP: fail[i] = length of the longest proper border of delim[0..i] */
    int fail[65] = {0};
    for (size_t i = 1, k = 0; i < n; i++) {
        while (k && delim[i] != delim[k]) k = (size_t)fail[k - 1];
        if (delim[i] == delim[k]) k++;
        fail[i] = (int)k;
    }
    char chars[65];
    size_t nc = 0;
    for (size_t i = 0; i < n; i++)
        if (!memchr(chars, delim[i], nc)) chars[nc++] = delim[i];
    sbuf cls = {0};
    sb_str(&cls, "[^");
    for (size_t i = 0; i < nc; i++) {
        char c = chars[i];
        if (c == ']' || c == '\\' || c == '^' || c == '-') sb_fmt(&cls, "\\%c", c);
        else if (c == '\n') sb_str(&cls, "\\n");
        else if (c == '\t') sb_str(&cls, "\\t");
        else if (c == '\r') sb_str(&cls, "\\r");
        else if ((unsigned char)c < 0x20) sb_fmt(&cls, "\\x%02X", c);
        else sb_add(&cls, &c, 1);
    }
    sb_str(&cls, "]");
    b->err = err;
    b->st = ZN_OK;
    for (size_t i = 0; i < n && !b->st; i++) {
        sbuf o = {0};
        sb_fmt(&o, "%s %s", cls.p, name);
        for (size_t c = 0; c < nc; c++) {
            /* the state after chars[c] in state i */
            size_t j = i;
            while (j && delim[j] != chars[c]) j = (size_t)fail[j - 1];
            if (delim[j] == chars[c]) j++;
            char lit[8];
            gbnf_quote(&chars[c], 1, lit);
            if (j == n) sb_fmt(&o, " | %s", lit);
            else if (j == 0) sb_fmt(&o, " | %s %s", lit, name);
            else sb_fmt(&o, " | %s %s-%zu", lit, name, j);
        }
        char rn[160];
        if (i == 0) snprintf(rn, sizeof rn, "%s", name);
        else snprintf(rn, sizeof rn, "%s-%zu", name, i);
        if (o.oom || cls.oom) oom(b);
        else gbnf_add_rule(b, rn, o.p, err);
        free(o.p);
    }
    free(cls.p);
    return b->st;
}

const char *gbnf_text(zn_gbnf *b, size_t *len) {
    if (len) *len = b->text.n;
    return b->text.p ? b->text.p : "";
}

zn_status jschema_to_gbnf(const char *schema, size_t n, const char *where, char **gbnf, zn_err *err) {
    *gbnf = NULL;
    zn_gbnf *b;
    zn_status st = gbnf_new(&b, err);
    if (st) return st;
    const char *r;
    st = gbnf_add_schema(b, "root-value", schema, n, where, &r, err);
    if (!st) {
        char body[128];
        snprintf(body, sizeof body, "%s", r);
        st = gbnf_add_rule(b, "root", body, err);
    }
    if (!st) {
        size_t len;
        const char *t = gbnf_text(b, &len);
        *gbnf = strndup(t, len);
        if (!*gbnf) st = zn_errf(err, ZN_ERR_NOMEM, "grammar: out of memory");
    }
    gbnf_free(b);
    return st;
}
