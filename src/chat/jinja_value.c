/* Jinja values: arena, strings, lists, dicts, Python-compatible str()/repr(),
 * equality and ordering, and JSON in both directions (json.dumps/json.loads
 * semantics, since templates print tool schemas with tojson). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

/* ---- arena ---- */

struct jblock {
    jblock *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

#define JA_BLOCK (64u << 10)

void *ja_alloc(jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    jblock *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > JA_BLOCK ? n : JA_BLOCK;
        if (cap > SIZE_MAX / 2 || (a->limit && a->total + cap > a->limit)) return NULL;
        jblock *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->used = 0;
        a->total += cap;
        /* A big one-off block goes behind the current one so the rest of
         * the current block stays usable. */
        if (b && cap == n && b->cap - b->used >= 1024) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void ja_free(jarena *a) {
    for (jblock *b = a->head, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    a->head = NULL;
    a->total = 0;
}

void *jalloc(jstate *st, size_t n) {
    void *p = ja_alloc(st->arena, n);
    if (!p) jfail(st, NULL, "out of memory (a render may use at most %d MiB)", ZN_JINJA_MAX_MEM >> 20);
    return p;
}

jv jstr(jstate *st, const char *s, size_t n) {
    if (n > ZN_JINJA_MAX_OUTPUT) jfail(st, NULL, "string too long (%zu bytes)", n);
    jcharge(st, NULL, n);
    char *p = jalloc(st, n + 1);
    if (n) memcpy(p, s, n);
    return jv_strn(p, n);
}

jv jcstr(const char *s) { return jv_strn(s, strlen(s)); }

jlist *jlist_new(jstate *st, uint32_t cap) {
    jlist *l = jalloc(st, sizeof *l);
    if (cap) {
        l->v = jalloc(st, cap * sizeof(jv));
        l->cap = cap;
    }
    return l;
}

void jlist_push(jstate *st, jlist *l, jv v) {
    jcharge(st, NULL, sizeof v); /* a list built item by item is work too */
    if (l->n == l->cap) {
        if (l->cap >= ZN_JINJA_MAX_ITEMS) jfail(st, NULL, "list too long (more than %d items)", ZN_JINJA_MAX_ITEMS);
        uint32_t cap = l->cap ? l->cap * 2 : 8;
        jv *nv = jalloc(st, cap * sizeof(jv));
        if (l->n) memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}

jdict *jdict_new(jstate *st, uint32_t cap) {
    jdict *d = jalloc(st, sizeof *d);
    if (cap) {
        d->k = jalloc(st, cap * sizeof(jv));
        d->v = jalloc(st, cap * sizeof(jv));
        d->cap = cap;
    }
    return d;
}

static int jdict_find(const jdict *d, jv k) {
    for (uint32_t i = 0; i < d->n; i++)
        if (jv_equal(d->k[i], k)) return (int)i;
    return -1;
}

void jdict_set(jstate *st, jdict *d, jv k, jv v) {
    int i = jdict_find(d, k);
    if (i >= 0) {
        d->v[i] = v;
        return;
    }
    if (d->n == d->cap) {
        if (d->cap >= ZN_JINJA_MAX_ITEMS) jfail(st, NULL, "dict too large (more than %d items)", ZN_JINJA_MAX_ITEMS);
        uint32_t cap = d->cap ? d->cap * 2 : 4;
        jv *nk = jalloc(st, cap * sizeof(jv)), *nv = jalloc(st, cap * sizeof(jv));
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(jv));
            memcpy(nv, d->v, d->n * sizeof(jv));
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
}

bool jdict_get(const jdict *d, jv k, jv *out) {
    int i = jdict_find(d, k);
    if (i < 0) return false;
    *out = d->v[i];
    return true;
}

bool jdict_gets(const jdict *d, const char *k, size_t kn, jv *out) {
    for (uint32_t i = 0; i < d->n; i++) {
        jv key = d->k[i];
        if (key.t == JT_STR && key.n == kn && memcmp(key.s, k, kn) == 0) {
            *out = d->v[i];
            return true;
        }
    }
    return false;
}

jv jv_list(jlist *l) { jv v = {0}; v.t = JT_LIST; v.l = l; return v; }
jv jv_dict(jdict *d) { jv v = {0}; v.t = JT_DICT; v.d = d; return v; }

/* ---- buffers ---- */

void jbuf_put(jstate *st, jbuf *b, const char *s, size_t n) {
    if (!n) return;
    jcharge(st, NULL, n);
    if (b->cap - b->n < n + 1) {
        if (b->n + n > ZN_JINJA_MAX_OUTPUT)
            jfail(st, NULL, "output too large (more than %d bytes)", ZN_JINJA_MAX_OUTPUT);
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = jalloc(st, cap);
        if (b->n) memcpy(np, b->p, b->n);
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jbuf_putc(jstate *st, jbuf *b, char c) { jbuf_put(st, b, &c, 1); }

void jbuf_fill(jstate *st, jbuf *b, char c, size_t n) {
    char chunk[256];
    memset(chunk, c, sizeof chunk);
    for (; n > sizeof chunk; n -= sizeof chunk) jbuf_put(st, b, chunk, sizeof chunk);
    jbuf_put(st, b, chunk, n);
}

void jbuf_printf(jstate *st, jbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) jbuf_put(st, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

jv jbuf_str(jstate *st, jbuf *b) {
    (void)st;
    return b->n ? jv_strn(b->p, b->n) : jv_strn("", 0);
}

/* ---- UTF-8 ---- */

size_t ju8_len(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t ju8_next(const char *s, size_t n, size_t i) {
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    return i;
}

size_t ju8_offset(const char *s, size_t n, size_t cp) {
    size_t i = 0;
    while (cp-- > 0 && i < n) i = ju8_next(s, n, i);
    return i;
}

static uint32_t ju8_decode(const char *s, size_t n, size_t i, size_t *len) {
    const unsigned char *u = (const unsigned char *)s + i;
    size_t left = n - i;
    if (u[0] < 0x80 || left < 2) { *len = 1; return u[0]; }
    if ((u[0] & 0xE0) == 0xC0) { *len = 2; return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F); }
    if ((u[0] & 0xF0) == 0xE0 && left >= 3) {
        *len = 3;
        return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    }
    if ((u[0] & 0xF8) == 0xF0 && left >= 4) {
        *len = 4;
        return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) |
               (u[3] & 0x3F);
    }
    *len = 1;
    return u[0];
}

bool ju_isspace_at(const char *s, size_t n, size_t i, size_t *len) {
    size_t l;
    uint32_t c = ju8_decode(s, n, i, &l);
    *len = l;
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
    return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* ---- truth, equality, order ---- */

bool jv_truthy(jv v) {
    switch (v.t) {
    case JT_UNDEF: case JT_NONE: return false;
    case JT_BOOL: case JT_INT: return v.i != 0;
    case JT_FLOAT: return v.f != 0.0;
    case JT_STR: return v.n != 0;
    case JT_LIST: return (v.flags & JF_GEN) || v.l->n != 0;
    case JT_DICT: return v.d->n != 0;
    default: return true;
    }
}

static bool jv_isnum(jv v) { return v.t == JT_BOOL || v.t == JT_INT || v.t == JT_FLOAT; }
static double jv_num(jv v) { return v.t == JT_FLOAT ? v.f : (double)v.i; }

bool jv_equal(jv a, jv b) {
    if (jv_isnum(a) && jv_isnum(b)) {
        if (a.t != JT_FLOAT && b.t != JT_FLOAT) return a.i == b.i;
        return jv_num(a) == jv_num(b);
    }
    if (a.t != b.t) return false;
    switch (a.t) {
    case JT_UNDEF: case JT_NONE: return true;
    case JT_STR: return a.n == b.n && memcmp(a.s, b.s, a.n) == 0;
    case JT_LIST:
        if (a.flags != b.flags || a.l->n != b.l->n) return false;
        if (a.flags & JF_GEN) return a.l == b.l;
        for (uint32_t i = 0; i < a.l->n; i++)
            if (!jv_equal(a.l->v[i], b.l->v[i])) return false;
        return true;
    case JT_DICT:
        if (a.d->n != b.d->n) return false;
        for (uint32_t i = 0; i < a.d->n; i++) {
            jv other;
            if (!jdict_get(b.d, a.d->k[i], &other) || !jv_equal(a.d->v[i], other)) return false;
        }
        return true;
    case JT_NS: return a.d == b.d;
    case JT_MACRO: return a.m == b.m;
    case JT_FUNC: return a.i == b.i;
    case JT_LOOP: return a.lp == b.lp;
    default: return false;
    }
}

int jv_cmp(jstate *st, const jnode *n, jv a, jv b) {
    if (jv_isnum(a) && jv_isnum(b)) {
        if (a.t != JT_FLOAT && b.t != JT_FLOAT) return (a.i > b.i) - (a.i < b.i);
        double x = jv_num(a), y = jv_num(b);
        return (x > y) - (x < y);
    }
    if (a.t == JT_STR && b.t == JT_STR) {
        size_t m = a.n < b.n ? a.n : b.n;
        int c = memcmp(a.s, b.s, m);  /* UTF-8 byte order is code point order */
        if (c) return c < 0 ? -1 : 1;
        return (a.n > b.n) - (a.n < b.n);
    }
    if (a.t == JT_LIST && b.t == JT_LIST && a.flags == b.flags && !(a.flags & JF_LAZY)) {
        for (uint32_t i = 0; i < a.l->n && i < b.l->n; i++) {
            if (jv_equal(a.l->v[i], b.l->v[i])) continue;
            return jv_cmp(st, n, a.l->v[i], b.l->v[i]);
        }
        return (a.l->n > b.l->n) - (a.l->n < b.l->n);
    }
    jfail(st, n, "cannot compare %s with %s", jv_type_name(a), jv_type_name(b));
}

const char *jv_type_name(jv v) {
    switch (v.t) {
    case JT_UNDEF: return "undefined";
    case JT_NONE: return "none";
    case JT_BOOL: return "bool";
    case JT_INT: return "int";
    case JT_FLOAT: return "float";
    case JT_STR: return "string";
    case JT_LIST:
        return v.flags & JF_TUPLE ? "tuple" : v.flags & JF_GEN ? "generator" : v.flags & JF_KEYS ? "dict_keys"
             : v.flags & JF_VALUES ? "dict_values" : v.flags & JF_ITEMS ? "dict_items" : "list";
    case JT_DICT: return "dict";
    case JT_NS: return "namespace";
    case JT_MACRO: return "macro";
    case JT_FUNC: return "function";
    case JT_LOOP: return "loop";
    case JT_METHOD: return "method";
    }
    return "?";
}

/* ---- str() / repr() ---- */

void jv_fmt_float(char *buf, size_t cap, double f) {
    if (isnan(f)) { snprintf(buf, cap, "nan"); return; }
    if (isinf(f)) { snprintf(buf, cap, f < 0 ? "-inf" : "inf"); return; }
    /* Shortest digits that read back as f, laid out like Python's repr. */
    char tmp[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    char digits[24];
    int nd = 0, neg = 0;
    const char *p = tmp;
    if (*p == '-') { neg = 1; p++; }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    int e = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    char *o = buf, *end = buf + cap - 1;
#define PUT(c) do { if (o < end) *o++ = (c); } while (0)
    if (neg) PUT('-');
    if (e >= -4 && e < 16) {
        if (e >= 0) {
            for (int i = 0; i <= e; i++) PUT(i < nd ? digits[i] : '0');
            PUT('.');
            if (nd > e + 1) for (int i = e + 1; i < nd; i++) PUT(digits[i]);
            else PUT('0');
        } else {
            PUT('0'); PUT('.');
            for (int i = 0; i < -e - 1; i++) PUT('0');
            for (int i = 0; i < nd; i++) PUT(digits[i]);
        }
    } else {
        PUT(digits[0]);
        if (nd > 1) { PUT('.'); for (int i = 1; i < nd; i++) PUT(digits[i]); }
        char ex[16];
        snprintf(ex, sizeof ex, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
        for (char *q = ex; *q; q++) PUT(*q);
    }
#undef PUT
    *o = 0;
}

/* Python's repr() escapes code points that str.isprintable() rejects; this
 * covers the ones text realistically contains. */
static bool ju_printable(uint32_t c) {
    if (c < 0x20 || c == 0x7f) return false;
    if (c >= 0x80 && c <= 0xa0) return false;
    if (c == 0xad || c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
        (c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) ||
        (c >= 0xd800 && c <= 0xdfff) || (c >= 0xe000 && c <= 0xf8ff))
        return false;
    return true;
}

/* Writes s with some code points replaced: esc() returns the replacement
 * (in tmp or static) or NULL to keep the code point. */
typedef const char *(*escape_fn)(uint32_t c, char tmp[16], const void *arg);

static void escape_into(jstate *st, jbuf *b, const char *s, size_t n, escape_fn esc, const void *arg) {
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        size_t l;
        char tmp[16];
        const char *e = esc(ju8_decode(s, n, i, &l), tmp, arg);
        if (e) {
            jbuf_put(st, b, s + i - run, run);
            run = 0;
            jbuf_put(st, b, e, strlen(e));
        } else {
            run += l;
        }
        i += l;
    }
    jbuf_put(st, b, s + n - run, run);
}

static const char *repr_escape(uint32_t c, char tmp[16], const void *arg) {
    char q = *(const char *)arg;
    if (c == (uint32_t)q || c == '\\') { tmp[0] = '\\'; tmp[1] = (char)c; tmp[2] = 0; return tmp; }
    if (c == '\n') return "\\n";
    if (c == '\r') return "\\r";
    if (c == '\t') return "\\t";
    if (ju_printable(c)) return NULL;
    snprintf(tmp, 16, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x", (unsigned)c);
    return tmp;
}

static void repr_str(jstate *st, jbuf *b, const char *s, size_t n) {
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    jbuf_putc(st, b, q);
    escape_into(st, b, s, n, repr_escape, &q);
    jbuf_putc(st, b, q);
}

static void repr_into(jstate *st, jbuf *b, jv v, int depth);

static void str_into(jstate *st, jbuf *b, jv v, int depth) {
    char tmp[64];
    if (depth > ZN_JINJA_MAX_DEPTH) jfail(st, NULL, "value nested too deeply to print");
    switch (v.t) {
    case JT_UNDEF: return;
    case JT_NONE: jbuf_put(st, b, "None", 4); return;
    case JT_BOOL: if (v.i) jbuf_put(st, b, "True", 4); else jbuf_put(st, b, "False", 5); return;
    case JT_INT: jbuf_printf(st, b, "%lld", (long long)v.i); return;
    case JT_FLOAT: jv_fmt_float(tmp, sizeof tmp, v.f); jbuf_put(st, b, tmp, strlen(tmp)); return;
    case JT_STR: jbuf_put(st, b, v.s, v.n); return;
    case JT_LIST: {
        bool tup = v.flags & JF_TUPLE;
        if (v.flags & JF_GEN) { jbuf_put(st, b, "<generator object>", 18); return; }
        if (v.flags & JF_LAZY) {  /* dict_items([...]) */
            const char *name = jv_type_name(v);
            jbuf_put(st, b, name, strlen(name));
            jbuf_put(st, b, "(", 1);
        }
        jbuf_putc(st, b, tup ? '(' : '[');
        for (uint32_t i = 0; i < v.l->n; i++) {
            if (i) jbuf_put(st, b, ", ", 2);
            repr_into(st, b, v.l->v[i], depth + 1);
        }
        if (tup && v.l->n == 1) jbuf_putc(st, b, ',');
        jbuf_putc(st, b, tup ? ')' : ']');
        if (v.flags & JF_LAZY) jbuf_putc(st, b, ')');
        return;
    }
    case JT_DICT: case JT_NS:
        if (v.t == JT_NS) jbuf_put(st, b, "<Namespace ", 11);
        jbuf_putc(st, b, '{');
        for (uint32_t i = 0; i < v.d->n; i++) {
            if (i) jbuf_put(st, b, ", ", 2);
            repr_into(st, b, v.d->k[i], depth + 1);
            jbuf_put(st, b, ": ", 2);
            repr_into(st, b, v.d->v[i], depth + 1);
        }
        jbuf_putc(st, b, '}');
        if (v.t == JT_NS) jbuf_putc(st, b, '>');
        return;
    case JT_MACRO: jbuf_printf(st, b, "<Macro '%.*s'>", (int)v.m->lit.n, v.m->lit.s); return;
    case JT_LOOP: jbuf_printf(st, b, "<LoopContext %u/%u>", v.lp->i + 1, v.lp->n); return;
    case JT_FUNC: jbuf_put(st, b, "<built-in function>", 19); return;
    case JT_METHOD: jbuf_printf(st, b, "<built-in method %s>", v.bm->name); return;
    }
}

static void repr_into(jstate *st, jbuf *b, jv v, int depth) {
    if (v.t == JT_STR && (v.flags & JF_SAFE)) {
        jbuf_put(st, b, "Markup(", 7);
        repr_str(st, b, v.s, v.n);
        jbuf_putc(st, b, ')');
    } else if (v.t == JT_STR) repr_str(st, b, v.s, v.n);
    else if (v.t == JT_UNDEF) jbuf_put(st, b, "Undefined", 9);
    else str_into(st, b, v, depth);
}

void jv_str_into(jstate *st, jbuf *b, jv v) { str_into(st, b, v, 0); }
void jv_repr_into(jstate *st, jbuf *b, jv v) { repr_into(st, b, v, 0); }

jv jv_to_str(jstate *st, jv v) {
    if (v.t == JT_STR) return v;
    jbuf b = {0};
    str_into(st, &b, v, 0);
    return jbuf_str(st, &b);
}

/* ---- JSON out (json.dumps) ---- */

static const char *json_escape(uint32_t c, char tmp[16], const void *arg) {
    bool ascii = *(const bool *)arg;
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    }
    if (!(c < 0x20 || (ascii && c >= 0x7f))) return NULL;
    if (c >= 0x10000) {
        uint32_t u = c - 0x10000;
        snprintf(tmp, 16, "\\u%04x\\u%04x", 0xd800 + (u >> 10), 0xdc00 + (u & 0x3ff));
    } else {
        snprintf(tmp, 16, "\\u%04x", (unsigned)c);
    }
    return tmp;
}

static void json_str(jstate *st, jbuf *b, const char *s, size_t n, bool ascii) {
    jbuf_putc(st, b, '"');
    escape_into(st, b, s, n, json_escape, &ascii);
    jbuf_putc(st, b, '"');
}

static void json_newline(jstate *st, jbuf *b, const jjson_opts *o, int level) {
    jbuf_putc(st, b, '\n');
    for (int i = 0; i < level; i++) jbuf_put(st, b, o->indent, strlen(o->indent));
}

static int json_key_cmp(const void *x, const void *y) {
    const jv *a = *(const jv *const *)x, *c = *(const jv *const *)y;
    size_t m = a->n < c->n ? a->n : c->n;
    int r = memcmp(a->s, c->s, m);
    return r ? r : (a->n > c->n) - (a->n < c->n);
}

void jv_json_into(jstate *st, const jnode *n, jbuf *b, jv v, const jjson_opts *o, int level) {
    char tmp[64];
    if (level > ZN_JINJA_MAX_DEPTH) jfail(st, n, "tojson: value nested too deeply");
    switch (v.t) {
    case JT_NONE: jbuf_put(st, b, "null", 4); return;
    case JT_BOOL: if (v.i) jbuf_put(st, b, "true", 4); else jbuf_put(st, b, "false", 5); return;
    case JT_INT: jbuf_printf(st, b, "%lld", (long long)v.i); return;
    case JT_FLOAT:
        if (isnan(v.f)) jbuf_put(st, b, "NaN", 3);
        else if (isinf(v.f)) jbuf_put(st, b, v.f < 0 ? "-Infinity" : "Infinity", v.f < 0 ? 9 : 8);
        else { jv_fmt_float(tmp, sizeof tmp, v.f); jbuf_put(st, b, tmp, strlen(tmp)); }
        return;
    case JT_STR: json_str(st, b, v.s, v.n, o->ensure_ascii); return;
    case JT_LIST:
        if (v.flags & JF_LAZY) jfail(st, n, "tojson: object of type %s is not JSON serializable", jv_type_name(v));
        if (!v.l->n) { jbuf_put(st, b, "[]", 2); return; }
        jbuf_putc(st, b, '[');
        for (uint32_t i = 0; i < v.l->n; i++) {
            if (i) jbuf_put(st, b, o->item_sep, strlen(o->item_sep));
            if (o->indent) json_newline(st, b, o, level + 1);
            jv_json_into(st, n, b, v.l->v[i], o, level + 1);
        }
        if (o->indent) json_newline(st, b, o, level);
        jbuf_putc(st, b, ']');
        return;
    case JT_DICT: {
        if (!v.d->n) { jbuf_put(st, b, "{}", 2); return; }
        /* Keys become strings first (json.dumps turns 1/True/None keys into
         * "1"/"true"/"null"), then optionally sorted. */
        uint32_t cnt = v.d->n;
        jv *keys = jalloc(st, cnt * sizeof(jv));
        const jv **order = jalloc(st, cnt * sizeof(jv *));
        for (uint32_t i = 0; i < cnt; i++) {
            jv k = v.d->k[i];
            if (k.t == JT_STR) keys[i] = k;
            else if (k.t == JT_NONE) keys[i] = jcstr("null");
            else if (k.t == JT_BOOL) keys[i] = jcstr(k.i ? "true" : "false");
            else if (k.t == JT_INT || k.t == JT_FLOAT) {
                jbuf kb = {0};
                if (k.t == JT_FLOAT) jv_json_into(st, n, &kb, k, o, level);
                else jbuf_printf(st, &kb, "%lld", (long long)k.i);
                keys[i] = jbuf_str(st, &kb);
            } else {
                jfail(st, n, "tojson: keys must be str, int, float, bool or None, not %s", jv_type_name(k));
            }
            order[i] = &keys[i];
        }
        if (o->sort_keys) qsort(order, cnt, sizeof *order, json_key_cmp);
        jbuf_putc(st, b, '{');
        for (uint32_t j = 0; j < cnt; j++) {
            uint32_t i = (uint32_t)(order[j] - keys);
            if (j) jbuf_put(st, b, o->item_sep, strlen(o->item_sep));
            if (o->indent) json_newline(st, b, o, level + 1);
            json_str(st, b, keys[i].s, keys[i].n, o->ensure_ascii);
            jbuf_put(st, b, o->key_sep, strlen(o->key_sep));
            jv_json_into(st, n, b, v.d->v[i], o, level + 1);
        }
        if (o->indent) json_newline(st, b, o, level);
        jbuf_putc(st, b, '}');
        return;
    }
    default:
        jfail(st, n, "tojson: object of type %s is not JSON serializable", jv_type_name(v));
    }
}

/* ---- JSON in (json.loads) ---- */

typedef struct jparse_json {
    jstate *st;
    const char *s;
    size_t n, i;
    char *msg;
    size_t msgcap;
} jpj;

static bool jj_err(jpj *p, const char *what) {
    snprintf(p->msg, p->msgcap, "JSON: %s at offset %zu", what, p->i);
    return false;
}

static void jj_ws(jpj *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static bool jj_lit(jpj *p, const char *w) {
    size_t l = strlen(w);
    if (p->n - p->i >= l && memcmp(p->s + p->i, w, l) == 0) { p->i += l; return true; }
    return false;
}

static int jj_hex4(jpj *p) {
    if (p->n - p->i < 4) return -1;
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i + k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    p->i += 4;
    return v;
}

static void put_utf8(jstate *st, jbuf *b, uint32_t c) {
    char u[4];
    int l;
    if (c < 0x80) { u[0] = (char)c; l = 1; }
    else if (c < 0x800) { u[0] = (char)(0xC0 | (c >> 6)); u[1] = (char)(0x80 | (c & 0x3F)); l = 2; }
    else if (c < 0x10000) {
        u[0] = (char)(0xE0 | (c >> 12)); u[1] = (char)(0x80 | ((c >> 6) & 0x3F)); u[2] = (char)(0x80 | (c & 0x3F)); l = 3;
    } else {
        u[0] = (char)(0xF0 | (c >> 18)); u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((c >> 6) & 0x3F)); u[3] = (char)(0x80 | (c & 0x3F)); l = 4;
    }
    jbuf_put(st, b, u, (size_t)l);
}

static bool jj_string(jpj *p, jv *out) {
    jbuf b = {0};
    p->i++; /* opening quote */
    size_t run = p->i;
    for (;;) {
        if (p->i >= p->n) return jj_err(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') break;
        if (c < 0x20) return jj_err(p, "control character in string");
        if (c != '\\') { p->i++; continue; }
        jbuf_put(p->st, &b, p->s + run, p->i - run);
        p->i++;
        if (p->i >= p->n) return jj_err(p, "unterminated string");
        char e = p->s[p->i++];
        switch (e) {
        case '"': jbuf_putc(p->st, &b, '"'); break;
        case '\\': jbuf_putc(p->st, &b, '\\'); break;
        case '/': jbuf_putc(p->st, &b, '/'); break;
        case 'b': jbuf_putc(p->st, &b, '\b'); break;
        case 'f': jbuf_putc(p->st, &b, '\f'); break;
        case 'n': jbuf_putc(p->st, &b, '\n'); break;
        case 'r': jbuf_putc(p->st, &b, '\r'); break;
        case 't': jbuf_putc(p->st, &b, '\t'); break;
        case 'u': {
            int u = jj_hex4(p);
            if (u < 0) return jj_err(p, "bad \\u escape");
            uint32_t cp = (uint32_t)u;
            if (u >= 0xd800 && u < 0xdc00) {
                int lo = -1;
                if (p->n - p->i >= 2 && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                    p->i += 2;
                    lo = jj_hex4(p);
                }
                if (lo < 0xdc00 || lo > 0xdfff) return jj_err(p, "unpaired surrogate in \\u escape");
                cp = 0x10000 + (((uint32_t)u - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
            } else if (u >= 0xdc00 && u < 0xe000) {
                return jj_err(p, "unpaired surrogate in \\u escape");
            }
            put_utf8(p->st, &b, cp);
            break;
        }
        default: return jj_err(p, "bad escape");
        }
        run = p->i;
    }
    if (!b.n) {
        *out = jstr(p->st, p->s + run, p->i - run);
    } else {
        jbuf_put(p->st, &b, p->s + run, p->i - run);
        *out = jbuf_str(p->st, &b);
    }
    p->i++;
    return true;
}

static bool jj_number(jpj *p, jv *out) {
    size_t start = p->i;
    bool isf = false;
    if (p->s[p->i] == '-') p->i++;
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return jj_err(p, "bad number");
    if (p->s[p->i] == '0') p->i++;
    else while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    if (p->i < p->n && p->s[p->i] == '.') {
        isf = true;
        p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return jj_err(p, "bad number");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        isf = true;
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return jj_err(p, "bad number");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    char tmp[64];
    size_t l = p->i - start;
    if (l >= sizeof tmp) return jj_err(p, "number too long");
    memcpy(tmp, p->s + start, l);
    tmp[l] = 0;
    if (isf) {
        *out = jv_float(strtod(tmp, NULL));
    } else {
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno) return jj_err(p, "integer out of range");
        *out = jv_int(v);
    }
    return true;
}

static bool jj_value(jpj *p, jv *out, int depth) {
    if (depth > ZN_JINJA_MAX_DEPTH) return jj_err(p, "nested too deeply");
    jj_ws(p);
    if (p->i >= p->n) return jj_err(p, "unexpected end");
    char c = p->s[p->i];
    if (c == '{') {
        jdict *d = jdict_new(p->st, 0);
        p->i++;
        jj_ws(p);
        if (p->i < p->n && p->s[p->i] == '}') { p->i++; *out = jv_dict(d); return true; }
        for (;;) {
            jj_ws(p);
            if (p->i >= p->n || p->s[p->i] != '"') return jj_err(p, "expected a string key");
            jv k, v;
            if (!jj_string(p, &k)) return false;
            jj_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return jj_err(p, "expected ':'");
            p->i++;
            if (!jj_value(p, &v, depth + 1)) return false;
            jdict_set(p->st, d, k, v);
            jj_ws(p);
            if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
            if (p->i < p->n && p->s[p->i] == '}') { p->i++; break; }
            return jj_err(p, "expected ',' or '}'");
        }
        *out = jv_dict(d);
        return true;
    }
    if (c == '[') {
        jlist *l = jlist_new(p->st, 0);
        p->i++;
        jj_ws(p);
        if (p->i < p->n && p->s[p->i] == ']') { p->i++; *out = jv_list(l); return true; }
        for (;;) {
            jv v;
            if (!jj_value(p, &v, depth + 1)) return false;
            jlist_push(p->st, l, v);
            jj_ws(p);
            if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
            if (p->i < p->n && p->s[p->i] == ']') { p->i++; break; }
            return jj_err(p, "expected ',' or ']'");
        }
        *out = jv_list(l);
        return true;
    }
    if (c == '"') return jj_string(p, out);
    if (jj_lit(p, "true")) { *out = jv_bool(true); return true; }
    if (jj_lit(p, "false")) { *out = jv_bool(false); return true; }
    if (jj_lit(p, "null")) { *out = jv_none(); return true; }
    if (jj_lit(p, "NaN")) { *out = jv_float(NAN); return true; }
    if (jj_lit(p, "Infinity")) { *out = jv_float(INFINITY); return true; }
    if (jj_lit(p, "-Infinity")) { *out = jv_float(-INFINITY); return true; }
    if (c == '-' || (c >= '0' && c <= '9')) return jj_number(p, out);
    return jj_err(p, "unexpected character");
}

bool jv_from_json(jstate *st, const char *s, size_t n, jv *out, char *msg, size_t msgcap) {
    jpj p = {st, s, n, 0, msg, msgcap};
    if (!jj_value(&p, out, 0)) return false;
    jj_ws(&p);
    if (p.i != n) return jj_err(&p, "extra data after the value");
    return true;
}
