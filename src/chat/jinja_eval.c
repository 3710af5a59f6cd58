/* Jinja evaluator: statements, expressions, scopes, macros, and the public
 * jinja.h API (parse, ctx building, render).
 *
 * Scoping follows Jinja2: the top level has one scope; each for-loop
 * iteration starts a fresh scope (a `set` inside a loop is gone after the
 * iteration, which is why templates use namespace()); a macro call gets a
 * scope whose parent is the top level, looked up when it is called. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

enum { EX_NORMAL = 0, EX_BREAK, EX_CONTINUE };

_Noreturn static void jfail_v(jstate *st, const jnode *n, zn_status s, const char *fmt, va_list ap) {
    char msg[ZN_ERR_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (n) zn_errf(st->err, s, "template:%d:%d: %s", n->line, n->col, msg);
    else zn_errf(st->err, s, "template: %s", msg);
    longjmp(*st->jmp, 1);
}

void jfail(jstate *st, const jnode *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jfail_v(st, n, strncmp(fmt, "out of memory", 13) ? ZN_ERR_FORMAT : ZN_ERR_NOMEM, fmt, ap);
}

/* raise_exception(): the template rejects its input, so ZN_ERR_ARG. */
_Noreturn static void jraise(jstate *st, const jnode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void jraise(jstate *st, const jnode *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jfail_v(st, n, ZN_ERR_ARG, fmt, ap);
}

void jcheck_steps(jstate *st, const jnode *at) {
    if (++st->steps > ZN_JINJA_MAX_STEPS) jfail(st, at, "template takes too many steps (more than %d)", ZN_JINJA_MAX_STEPS);
}

void jcharge(jstate *st, const jnode *at, size_t bytes) {
    /* every byte counts: a loop of one-byte writes (padding, repetition) adds up */
    size_t t = st->charged + (bytes > ZN_JINJA_MAX_MEM ? (size_t)ZN_JINJA_MAX_MEM : bytes);
    st->charged = t & 63;
    if (!(t >> 6)) return;
    st->steps += t >> 6;
    if (st->steps > ZN_JINJA_MAX_STEPS) jfail(st, at, "template takes too many steps (more than %d)", ZN_JINJA_MAX_STEPS);
}

/* ---- scopes ---- */

static jscope *scope_push(jstate *st, jscope *parent) {
    jscope *s = jalloc(st, sizeof *s);
    s->parent = parent;
    st->scope = s;
    return s;
}

static void scope_set(jstate *st, const char *name, jv v) {
    jdict_set(st, &st->scope->vars, jcstr(name), v);
}

static jv lookup(jstate *st, const char *name, size_t n) {
    jv v;
    for (jscope *s = st->scope; s; s = s->parent)
        if (jdict_gets(&s->vars, name, n, &v)) return v;
    if (jdict_gets(st->ctx_vars, name, n, &v)) return v;
    int id = jbuiltin_global(name, n);
    if (id >= 0) {
        v = jv_undef();
        v.t = JT_FUNC;
        v.i = id;
        return v;
    }
    v = jv_undef();
    v.s = name;
    v.n = (uint32_t)n;
    return v;
}

_Noreturn static void fail_undefined(jstate *st, const jnode *at, jv u) {
    if (u.s) jfail(st, at, "'%.*s' is undefined", (int)u.n, u.s);
    jfail(st, at, "value is undefined");
}

static void out(jstate *st, const char *s, size_t n) { jbuf_put(st, st->out, s, n); }

/* ---- attribute and item access ---- */

static jv loop_attr(jstate *st, const jnode *at, jloop *lp, const char *name) {
    uint32_t i = lp->i, n = lp->n;
    if (!strcmp(name, "index")) return jv_int(i + 1);
    if (!strcmp(name, "index0")) return jv_int(i);
    if (!strcmp(name, "revindex")) return jv_int(n - i);
    if (!strcmp(name, "revindex0")) return jv_int(n - i - 1);
    if (!strcmp(name, "first")) return jv_bool(i == 0);
    if (!strcmp(name, "last")) return jv_bool(i + 1 == n);
    if (!strcmp(name, "length")) return jv_int(n);
    if (!strcmp(name, "depth")) return jv_int(lp->depth);
    if (!strcmp(name, "depth0")) return jv_int(lp->depth - 1);
    if (!strcmp(name, "previtem")) return i > 0 ? lp->items->v[i - 1] : jv_undef();
    if (!strcmp(name, "nextitem")) return i + 1 < n ? lp->items->v[i + 1] : jv_undef();
    if (!strcmp(name, "cycle")) {
        jv self = {0};
        self.t = JT_LOOP;
        self.lp = lp;
        jmethod *m = jalloc(st, sizeof *m);
        m->self = self;
        m->name = "cycle";
        jv v = {0};
        v.t = JT_METHOD;
        v.bm = m;
        return v;
    }
    (void)at;
    return jv_undef();
}

jv jgetattr(jstate *st, const jnode *at, jv obj, const char *name, size_t n) {
    jv v;
    switch (obj.t) {
    case JT_UNDEF: fail_undefined(st, at, obj);
    case JT_NS:
        if (jdict_gets(obj.d, name, n, &v)) return v;
        break;
    case JT_LOOP: return loop_attr(st, at, obj.lp, name);
    case JT_DICT:
        /* Python attributes win over keys: d.items is the method. */
        if (!jbuiltin_has_method(obj, name) && jdict_gets(obj.d, name, n, &v)) return v;
        break;
    default: break;
    }
    if (obj.t != JT_NS && jbuiltin_has_method(obj, name)) {
        jmethod *m = jalloc(st, sizeof *m);
        m->self = obj;
        m->name = name;
        v = jv_undef();
        v.t = JT_METHOD;
        v.bm = m;
        return v;
    }
    v = jv_undef();  /* remember the name for "'x' is undefined" */
    v.s = name;
    v.n = (uint32_t)n;
    return v;
}

static int64_t as_index(jstate *st, const jnode *at, jv k) {
    if (k.t == JT_INT || k.t == JT_BOOL) return k.i;
    jfail(st, at, "indices must be integers, not %s", jv_type_name(k));
}

jv jgetitem(jstate *st, const jnode *at, jv obj, jv key) {
    jv v;
    switch (obj.t) {
    case JT_UNDEF: fail_undefined(st, at, obj);
    case JT_DICT:
        if (jdict_get(obj.d, key, &v)) return v;
        break;
    case JT_LIST:
        if (obj.flags & JF_LAZY) return jv_undef();  /* iterators and views are not subscriptable */
        if (key.t == JT_INT || key.t == JT_BOOL) {
            int64_t i = key.i, len = obj.l->n;
            if (i < 0) i += len;
            return i >= 0 && i < len ? obj.l->v[i] : jv_undef();
        }
        break;
    case JT_STR:
        if (key.t == JT_INT || key.t == JT_BOOL) {
            jcharge(st, at, obj.n);
            int64_t i = as_index(st, at, key), len = (int64_t)ju8_len(obj.s, obj.n);
            if (i < 0) i += len;
            if (i < 0 || i >= len) return jv_undef();
            size_t b = ju8_offset(obj.s, obj.n, (size_t)i);
            return jv_strn(obj.s + b, ju8_next(obj.s, obj.n, b) - b);
        }
        break;
    default: break;
    }
    if (key.t == JT_STR) return jgetattr(st, at, obj, key.s, key.n);
    return jv_undef();
}

/* Python slice semantics (slice.indices) over list items or code points. */
static jv eval_slice(jstate *st, const jnode *n, jv obj) {
    jv parts[3];
    const jnode *pn[3] = {n->b, n->c, n->d};
    for (int k = 0; k < 3; k++) {
        parts[k] = pn[k] ? jeval(st, pn[k]) : jv_none();
        if (parts[k].t != JT_NONE && parts[k].t != JT_INT && parts[k].t != JT_BOOL)
            jfail(st, n, "slice indices must be integers or none");
    }
    if (obj.t == JT_UNDEF) fail_undefined(st, n, obj);
    if ((obj.t != JT_LIST && obj.t != JT_STR) || (obj.t == JT_LIST && (obj.flags & JF_LAZY))) return jv_undef();
    int64_t step = parts[2].t == JT_NONE ? 1 : parts[2].i;
    if (step == 0) jfail(st, n, "slice step cannot be zero");
    if (obj.t == JT_STR) jcharge(st, n, obj.n);
    bool ascii = obj.t == JT_STR && ju8_len(obj.s, obj.n) == obj.n;
    int64_t len = obj.t == JT_LIST ? obj.l->n : ascii ? obj.n : (int64_t)ju8_len(obj.s, obj.n);
    int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? len - 1 : len, idx[2];
    for (int k = 0; k < 2; k++) {
        if (parts[k].t == JT_NONE) {
            idx[k] = (k == 0) == (step < 0) ? upper : lower;
            continue;
        }
        int64_t x = parts[k].i;
        if (x < 0) { x += len; if (x < lower) x = lower; }
        else if (x > upper) x = upper;
        idx[k] = x;
    }
    /* items taken, counted without forming an index past the ends (i += step could overflow) */
    uint64_t span = step > 0 ? (idx[1] > idx[0] ? (uint64_t)(idx[1] - idx[0]) : 0)
                             : (idx[0] > idx[1] ? (uint64_t)(idx[0] - idx[1]) : 0);
    uint64_t mag = step > 0 ? (uint64_t)step : (uint64_t)0 - (uint64_t)step, count = span ? (span - 1) / mag + 1 : 0;
#define SLICE_AT(k) (idx[0] + (step > 0 ? (int64_t)((k) * mag) : -(int64_t)((k) * mag)))
    if (obj.t == JT_LIST) {
        jlist *l = jlist_new(st, 0);
        for (uint64_t k = 0; k < count; k++) jlist_push(st, l, obj.l->v[SLICE_AT(k)]);
        jv r = jv_list(l);
        r.flags = obj.flags & JF_TUPLE;
        return r;
    }
    if (ascii && step == 1) return idx[1] > idx[0] ? jv_strn(obj.s + idx[0], (size_t)(idx[1] - idx[0])) : jv_strn("", 0);
    /* code point start offsets, then pick */
    size_t *off = ascii ? NULL : jalloc(st, ((size_t)len + 1) * sizeof *off);
    if (off) {
        size_t b = 0;
        for (int64_t i = 0; i < len; i++) { off[i] = b; b = ju8_next(obj.s, obj.n, b); }
        off[len] = obj.n;
    }
    jbuf b = {0};
    for (uint64_t k = 0; k < count; k++) {
        int64_t i = SLICE_AT(k);
        if (off) jbuf_put(st, &b, obj.s + off[i], off[i + 1] - off[i]);
        else jbuf_putc(st, &b, obj.s[i]);
    }
#undef SLICE_AT
    return jbuf_str(st, &b);
}

jlist *jiterate(jstate *st, const jnode *at, jv v) {
    jlist *l;
    switch (v.t) {
    case JT_UNDEF: return jlist_new(st, 0);
    case JT_LIST: return v.l;
    case JT_DICT:
        l = jlist_new(st, v.d->n);
        for (uint32_t i = 0; i < v.d->n; i++) jlist_push(st, l, v.d->k[i]);
        return l;
    case JT_STR:
        jcharge(st, at, (size_t)v.n * 16);  /* one list item per code point */
        l = jlist_new(st, 0);
        for (size_t i = 0; i < v.n;) {
            size_t j = ju8_next(v.s, v.n, i);
            jlist_push(st, l, jv_strn(v.s + i, j - i));
            i = j;
        }
        return l;
    default: jfail(st, at, "'%s' object is not iterable", jv_type_name(v));
    }
}

/* ---- operators ---- */

static bool isnum(jv v) { return v.t == JT_INT || v.t == JT_BOOL || v.t == JT_FLOAT; }
static double num(jv v) { return v.t == JT_FLOAT ? v.f : (double)v.i; }

static const char *op_name(int op) {
    static const char *names[] = {"?", "+", "-", "*", "/", "//", "%", "**"};
    return op >= JO_ADD && op <= JO_POW ? names[op] : "?";
}

/* Markup semantics: `safe + str` HTML-escapes the plain side. */
static jv escape_html(jstate *st, jv s) {
    jbuf b = {0};
    for (uint32_t i = 0; i < s.n; i++) {
        switch (s.s[i]) {
        case '&': jbuf_put(st, &b, "&amp;", 5); break;
        case '<': jbuf_put(st, &b, "&lt;", 4); break;
        case '>': jbuf_put(st, &b, "&gt;", 4); break;
        case '"': jbuf_put(st, &b, "&#34;", 5); break;
        case '\'': jbuf_put(st, &b, "&#39;", 5); break;
        default: jbuf_putc(st, &b, s.s[i]);
        }
    }
    jv r = jbuf_str(st, &b);
    r.flags = JF_SAFE;
    return r;
}

static jv concat2(jstate *st, jv a, jv b) {
    jbuf buf = {0};
    jbuf_put(st, &buf, a.s, a.n);
    jbuf_put(st, &buf, b.s, b.n);
    return jbuf_str(st, &buf);
}

static jv binop(jstate *st, const jnode *n, int op, jv a, jv b) {
    if (a.t == JT_UNDEF) fail_undefined(st, n->a, a);
    if (b.t == JT_UNDEF) fail_undefined(st, n->b, b);
    if (isnum(a) && isnum(b)) {
        bool ints = a.t != JT_FLOAT && b.t != JT_FLOAT;
        int64_t r;
        switch (op) {
        case JO_ADD:
            if (!ints) return jv_float(num(a) + num(b));
            if (__builtin_add_overflow(a.i, b.i, &r)) break;
            return jv_int(r);
        case JO_SUB:
            if (!ints) return jv_float(num(a) - num(b));
            if (__builtin_sub_overflow(a.i, b.i, &r)) break;
            return jv_int(r);
        case JO_MUL:
            if (!ints) return jv_float(num(a) * num(b));
            if (__builtin_mul_overflow(a.i, b.i, &r)) break;
            return jv_int(r);
        case JO_DIV:
            if (num(b) == 0) jfail(st, n, "division by zero");
            return jv_float(num(a) / num(b));
        case JO_FLOORDIV: case JO_MOD:
            if (num(b) == 0) jfail(st, n, "integer division or modulo by zero");
            if (ints) {
                if (a.i == INT64_MIN && b.i == -1) break;
                int64_t q = a.i / b.i, m = a.i % b.i;
                if (m != 0 && ((m < 0) != (b.i < 0))) { q--; m += b.i; }
                return jv_int(op == JO_FLOORDIV ? q : m);
            } else {
                double x = num(a), y = num(b), m = fmod(x, y);
                if (m != 0 && ((m < 0) != (y < 0))) m += y;
                return jv_float(op == JO_FLOORDIV ? floor((x - m) / y + 0.5) : m);
            }
        case JO_POW:
            if (ints && b.i >= 0) {
                int64_t acc = 1, base = a.i, e = b.i;
                bool ovf = false;
                while (e > 0 && !ovf) {
                    if (e & 1) ovf |= __builtin_mul_overflow(acc, base, &acc);
                    e >>= 1;
                    if (e) ovf |= __builtin_mul_overflow(base, base, &base);
                }
                if (ovf) break;
                return jv_int(acc);
            }
            return jv_float(pow(num(a), num(b)));
        }
        jfail(st, n, "integer overflow in '%s'", op_name(op));
    }
    if (op == JO_ADD && a.t == JT_STR && b.t == JT_STR) {
        bool sa = a.flags & JF_SAFE, sb = b.flags & JF_SAFE;
        if (sa && !sb) b = escape_html(st, b);
        if (sb && !sa) a = escape_html(st, a);
        jv r = concat2(st, a, b);
        r.flags = (sa || sb) ? JF_SAFE : 0;
        return r;
    }
    if (op == JO_ADD && a.t == JT_LIST && b.t == JT_LIST && a.flags == b.flags && !(a.flags & JF_LAZY)) {
        jlist *l = jlist_new(st, a.l->n + b.l->n);
        for (uint32_t i = 0; i < a.l->n; i++) jlist_push(st, l, a.l->v[i]);
        for (uint32_t i = 0; i < b.l->n; i++) jlist_push(st, l, b.l->v[i]);
        jv r = jv_list(l);
        r.flags = a.flags & JF_TUPLE;
        return r;
    }
    if (op == JO_MUL && ((a.t == JT_STR || (a.t == JT_LIST && !(a.flags & JF_LAZY))) && (b.t == JT_INT || b.t == JT_BOOL))) {
        int64_t k = b.i < 0 ? 0 : b.i;
        if (a.t == JT_STR) {
            if (a.n && (uint64_t)k > ZN_JINJA_MAX_OUTPUT / a.n) jfail(st, n, "string repetition too large");
            size_t total = (size_t)k * a.n;
            if (!total) return jv_strn("", 0);
            jcharge(st, n, total);
            char *p = jalloc(st, total + 1);
            memcpy(p, a.s, a.n);
            for (size_t have = a.n; have < total; have *= 2) /* doubling copies */
                memcpy(p + have, p, have < total - have ? have : total - have);
            p[total] = 0;
            return jv_strn(p, total);
        }
        if (a.l->n && (uint64_t)k > ZN_JINJA_MAX_ITEMS / a.l->n) jfail(st, n, "list repetition too large");
        jlist *l = jlist_new(st, 0);
        for (int64_t i = 0; i < k; i++)
            for (uint32_t j = 0; j < a.l->n; j++) jlist_push(st, l, a.l->v[j]);
        jv r = jv_list(l);
        r.flags = a.flags & JF_TUPLE;
        return r;
    }
    if (op == JO_MUL && (a.t == JT_INT || a.t == JT_BOOL) && (b.t == JT_STR || b.t == JT_LIST)) return binop(st, n, op, b, a);
    if (op == JO_MOD && a.t == JT_STR) {
        /* printf-style formatting: a tuple gives several arguments */
        jargs args = {0};
        if (b.t == JT_LIST && (b.flags & JF_TUPLE)) { args.pos = b.l->v; args.npos = b.l->n; }
        else { args.pos = &b; args.npos = 1; }
        return jbuiltin_filter(st, n, "format", a, &args);
    }
    jfail(st, n, "unsupported operand types for %s: '%s' and '%s'", op_name(op), jv_type_name(a), jv_type_name(b));
}

static bool contains(jstate *st, const jnode *at, jv needle, jv hay) {
    switch (hay.t) {
    case JT_UNDEF: return false;
    case JT_STR:
        if (needle.t != JT_STR) jfail(st, at, "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
        if (!needle.n) return true;
        return memmem(hay.s, hay.n, needle.s, needle.n) != NULL;
    case JT_LIST:
        for (uint32_t i = 0; i < hay.l->n; i++)
            if (jv_equal(hay.l->v[i], needle)) return true;
        return false;
    case JT_DICT: {
        jv v;
        if ((needle.t == JT_LIST && !(needle.flags & JF_TUPLE)) || needle.t == JT_DICT)
            jfail(st, at, "unhashable type: '%s'", jv_type_name(needle));
        return jdict_get(hay.d, needle, &v);
    }
    default: jfail(st, at, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

static bool compare(jstate *st, const jnode *at, int op, jv a, jv b) {
    if (a.t == JT_STR) jcharge(st, at, a.n);
    if (b.t == JT_STR) jcharge(st, at, b.n);
    switch (op) {
    case JO_EQ: return jv_equal(a, b);
    case JO_NE: return !jv_equal(a, b);
    case JO_IN: return contains(st, at, a, b);
    case JO_NOTIN: return !contains(st, at, a, b);
    }
    if (a.t == JT_UNDEF) fail_undefined(st, at, a);
    if (b.t == JT_UNDEF) fail_undefined(st, at, b);
    int c = jv_cmp(st, at, a, b);
    switch (op) {
    case JO_LT: return c < 0;
    case JO_LE: return c <= 0;
    case JO_GT: return c > 0;
    default: return c >= 0;
    }
}

/* ---- calls ---- */

static void eval_args(jstate *st, const jnode *n, jargs *a) {
    uint32_t nk = n->nkids - n->npos;
    jv *pos = n->npos ? jalloc(st, n->npos * sizeof(jv)) : NULL;
    jv *kw = nk ? jalloc(st, nk * sizeof(jv)) : NULL;
    for (uint32_t i = 0; i < n->npos; i++) pos[i] = jeval(st, n->kids[i]);
    for (uint32_t i = 0; i < nk; i++) kw[i] = jeval(st, n->kids[n->npos + i]);
    a->pos = pos;
    a->npos = n->npos;
    a->kwnames = n->names ? n->names + n->npos : NULL;
    a->kwvals = kw;
    a->nkw = nk;
}

static int exec_body(jstate *st, const jnode *body);

jv jcall_macro(jstate *st, const jnode *at, jv macro, const jv *args, uint32_t npos, const char **kwnames,
               const jv *kwvals, uint32_t nkw) {
    const jnode *m = macro.m;
    const char *mname = m->lit.s;
    if (npos > m->nnames) jfail(st, at, "macro '%s' takes not more than %u argument(s)", mname, m->nnames);
    for (uint32_t k = 0; k < nkw; k++) {
        uint32_t p = 0;
        while (p < m->nnames && strcmp(m->names[p], kwnames[k])) p++;
        if (p == m->nnames) jfail(st, at, "macro '%s' takes no keyword argument '%s'", mname, kwnames[k]);
        if (p < npos) jfail(st, at, "macro '%s' got multiple values for argument '%s'", mname, kwnames[k]);
    }
    jscope *saved_scope = st->scope;
    jbuf *saved_out = st->out;
    int saved_loops = st->loop_depth;
    scope_push(st, st->root);
    for (uint32_t p = 0; p < m->nnames; p++) {
        jv v = jv_undef();
        bool have = false;
        if (p < npos) { v = args[p]; have = true; }
        for (uint32_t k = 0; k < nkw && !have; k++)
            if (!strcmp(m->names[p], kwnames[k])) { v = kwvals[k]; have = true; }
        if (!have && m->kids[p]) v = jeval(st, m->kids[p]);
        else if (!have) { v.s = m->names[p]; v.n = (uint32_t)strlen(m->names[p]); }
        scope_set(st, m->names[p], v);
    }
    jbuf buf = {0};
    st->out = &buf;
    st->loop_depth = 0;
    exec_body(st, m->b);
    st->out = saved_out;
    st->scope = saved_scope;
    st->loop_depth = saved_loops;
    return jbuf_str(st, &buf);
}

static jv call_value(jstate *st, const jnode *n, jv f, const jargs *a) {
    switch (f.t) {
    case JT_MACRO: return jcall_macro(st, n, f, a->pos, a->npos, a->kwnames, a->kwvals, a->nkw);
    case JT_FUNC:
        if (f.i == 0) {  /* raise_exception(msg) */
            jv msg = a->npos ? jv_to_str(st, a->pos[0]) : jcstr("");
            jraise(st, n, "%.*s", (int)msg.n, msg.s);
        }
        return jbuiltin_call(st, n, (int)f.i, a);
    case JT_METHOD: return jbuiltin_method(st, n, f.bm->self, f.bm->name, a);
    case JT_UNDEF: fail_undefined(st, n->a, f);
    default: jfail(st, n, "'%s' object is not callable", jv_type_name(f));
    }
}

static jv eval_call(jstate *st, const jnode *n) {
    jargs a;
    const jnode *callee = n->a;
    if (callee->kind == JN_ATTR) {
        /* obj.method(...) without materialising a bound method */
        jv obj = jeval(st, callee->a);
        if (obj.t != JT_UNDEF && obj.t != JT_NS && obj.t != JT_LOOP && jbuiltin_has_method(obj, callee->lit.s)) {
            eval_args(st, n, &a);
            return jbuiltin_method(st, n, obj, callee->lit.s, &a);
        }
        jv f = jgetattr(st, callee, obj, callee->lit.s, callee->lit.n);
        eval_args(st, n, &a);
        return call_value(st, n, f, &a);
    }
    jv f = jeval(st, callee);
    eval_args(st, n, &a);
    return call_value(st, n, f, &a);
}

/* ---- expressions ---- */

static jv eval_filter(jstate *st, const jnode *n, jv input) {
    jv v = n->a ? (n->a->kind == JN_FILTER ? eval_filter(st, n->a, input) : jeval(st, n->a)) : input;
    jargs a;
    eval_args(st, n, &a);
    return jbuiltin_filter(st, n, n->lit.s, v, &a);
}

jv jeval(jstate *st, const jnode *n) {
    if (++st->depth > ZN_JINJA_MAX_EVAL) jfail(st, n, "template recursion too deep");
    jcheck_steps(st, n);
    jv r;
    switch (n->kind) {
    case JN_LIT: r = n->lit; break;
    case JN_NAME: r = lookup(st, n->lit.s, n->lit.n); break;
    case JN_LIST: case JN_TUPLE: {
        jlist *l = jlist_new(st, n->nkids);
        for (uint32_t i = 0; i < n->nkids; i++) jlist_push(st, l, jeval(st, n->kids[i]));
        r = jv_list(l);
        if (n->kind == JN_TUPLE) r.flags = JF_TUPLE;
        break;
    }
    case JN_DICT: {
        jdict *d = jdict_new(st, n->nkids / 2);
        for (uint32_t i = 0; i + 1 < n->nkids; i += 2) {
            jv k = jeval(st, n->kids[i]);
            if (k.t == JT_LIST && !(k.flags & JF_TUPLE)) jfail(st, n->kids[i], "unhashable type: 'list'");
            if (k.t == JT_DICT || k.t == JT_UNDEF) jfail(st, n->kids[i], "unhashable dict key");
            jdict_set(st, d, k, jeval(st, n->kids[i + 1]));
        }
        r = jv_dict(d);
        break;
    }
    case JN_ATTR: r = jgetattr(st, n, jeval(st, n->a), n->lit.s, n->lit.n); break;
    case JN_ITEM: {
        jv obj = jeval(st, n->a);
        r = jgetitem(st, n, obj, jeval(st, n->b));
        break;
    }
    case JN_SLICE: r = eval_slice(st, n, jeval(st, n->a)); break;
    case JN_CALL: r = eval_call(st, n); break;
    case JN_FILTER: r = eval_filter(st, n, jv_undef()); break;
    case JN_TEST: {
        jv v = jeval(st, n->a);
        jargs a;
        eval_args(st, n, &a);
        r = jv_bool(jbuiltin_test(st, n, n->lit.s, v, &a) != n->negated);
        break;
    }
    case JN_NEG: case JN_POS: {
        jv v = jeval(st, n->a);
        if (v.t == JT_UNDEF) fail_undefined(st, n->a, v);
        if (!isnum(v)) jfail(st, n, "bad operand type for unary %c: '%s'", n->kind == JN_NEG ? '-' : '+', jv_type_name(v));
        if (n->kind == JN_POS) r = v.t == JT_BOOL ? jv_int(v.i) : v;
        else if (v.t == JT_FLOAT) r = jv_float(-v.f);
        else if (v.i == INT64_MIN) jfail(st, n, "integer overflow");
        else r = jv_int(-v.i);
        break;
    }
    case JN_NOT: r = jv_bool(!jv_truthy(jeval(st, n->a))); break;
    case JN_AND: r = jeval(st, n->a); if (jv_truthy(r)) r = jeval(st, n->b); break;
    case JN_OR: r = jeval(st, n->a); if (!jv_truthy(r)) r = jeval(st, n->b); break;
    case JN_BIN: {
        jv a = jeval(st, n->a);
        r = binop(st, n, n->op, a, jeval(st, n->b));
        break;
    }
    case JN_CMP: {
        jv left = jeval(st, n->a);
        r = jv_bool(true);
        for (uint32_t i = 0; i < n->nkids; i++) {
            jv right = jeval(st, n->kids[i]);
            if (!compare(st, n, n->ops[i], left, right)) { r = jv_bool(false); break; }
            left = right;
        }
        break;
    }
    case JN_CONCAT: {
        jbuf b = {0};
        for (uint32_t i = 0; i < n->nkids; i++) jv_str_into(st, &b, jeval(st, n->kids[i]));
        r = jbuf_str(st, &b);
        break;
    }
    case JN_COND:
        if (jv_truthy(jeval(st, n->a))) r = jeval(st, n->b);
        else r = n->c ? jeval(st, n->c) : jv_undef();
        break;
    default: jfail(st, n, "internal error: node %d is not an expression", n->kind);
    }
    st->depth--;
    return r;
}

/* ---- statements ---- */

static void bind_targets(jstate *st, const jnode *n, jv item) {
    if (n->nnames == 1) {
        scope_set(st, n->names[0], item);
        return;
    }
    if (item.t == JT_UNDEF) fail_undefined(st, n, item);
    jlist *l = jiterate(st, n, item);
    if (l->n != n->nnames)
        jfail(st, n, "%s values to unpack (expected %u, got %u)", l->n > n->nnames ? "too many" : "not enough", n->nnames, l->n);
    for (uint32_t i = 0; i < n->nnames; i++) scope_set(st, n->names[i], l->v[i]);
}

static void exec_for(jstate *st, const jnode *n) {
    jlist *items = jiterate(st, n->a, jeval(st, n->a));
    jscope *saved = st->scope;
    jscope *sc = scope_push(st, saved);
    if (n->d) {  /* `for x in xs if cond`: filter first, so loop.length etc. count kept items */
        jlist *kept = jlist_new(st, 0);
        for (uint32_t i = 0; i < items->n; i++) {
            sc->vars.n = 0;
            bind_targets(st, n, items->v[i]);
            if (jv_truthy(jeval(st, n->d))) jlist_push(st, kept, items->v[i]);
        }
        items = kept;
    }
    jloop *lp = jalloc(st, sizeof *lp);
    lp->items = items;
    lp->n = items->n;
    lp->depth = 1;  /* only recursive loops (unsupported) go deeper */
    jv loopv = jv_undef();
    loopv.t = JT_LOOP;
    loopv.lp = lp;
    st->loop_depth++;
    for (uint32_t i = 0; i < items->n; i++) {
        jcheck_steps(st, n);  /* an empty body must still cost something */
        lp->i = i;
        sc->vars.n = 0;
        scope_set(st, "loop", loopv);
        bind_targets(st, n, items->v[i]);
        if (exec_body(st, n->b) == EX_BREAK) break;
    }
    st->loop_depth--;
    st->scope = saved;
    if (items->n == 0 && n->c) exec_body(st, n->c);
}

static jv render_to_string(jstate *st, const jnode *body) {
    jbuf *saved = st->out, buf = {0};
    st->out = &buf;
    exec_body(st, body);
    st->out = saved;
    return jbuf_str(st, &buf);
}

static int exec_stmt(jstate *st, const jnode *n) {
    if (++st->depth > ZN_JINJA_MAX_EVAL) jfail(st, n, "template recursion too deep");
    jcheck_steps(st, n);
    int rc = EX_NORMAL;
    switch (n->kind) {
    case JN_TEXT: out(st, n->lit.s, n->lit.n); break;
    case JN_PRINT: {
        jv v = jeval(st, n->a);
        if (v.t == JT_STR) out(st, v.s, v.n);
        else jv_str_into(st, st->out, v);
        break;
    }
    case JN_BODY: rc = exec_body(st, n); break;
    case JN_IF:
        for (;;) {
            if (jv_truthy(jeval(st, n->a))) { rc = exec_body(st, n->b); break; }
            if (!n->c) break;
            if (n->c->kind != JN_IF) { rc = exec_body(st, n->c); break; }
            n = n->c;
        }
        break;
    case JN_FOR: exec_for(st, n); break;
    case JN_SET: bind_targets(st, n, jeval(st, n->a)); break;
    case JN_SET_NS: {
        jv ns = lookup(st, n->lit.s, n->lit.n);
        if (ns.t != JT_NS) jfail(st, n, "cannot assign attribute on non-namespace object");
        jdict_set(st, ns.d, jcstr(n->names[0]), jeval(st, n->a));
        break;
    }
    case JN_SET_BLOCK: {
        jv v = render_to_string(st, n->b);
        if (n->a) v = eval_filter(st, n->a, v);
        scope_set(st, n->names[0], v);
        break;
    }
    case JN_FILTER_BLOCK: {
        jv v = eval_filter(st, n->a, render_to_string(st, n->b));
        jv_str_into(st, st->out, v);
        break;
    }
    case JN_CALL_BLOCK: {  /* {% generation %}: the body runs as a macro, in its own scope */
        jscope *saved = st->scope;
        scope_push(st, saved);
        jv v = render_to_string(st, n->b);
        st->scope = saved;
        out(st, v.s, v.n);
        break;
    }
    case JN_MACRO: {
        jv m = jv_undef();
        m.t = JT_MACRO;
        m.m = n;
        scope_set(st, n->lit.s, m);
        break;
    }
    case JN_BREAK: case JN_CONTINUE:
        if (!st->loop_depth) jfail(st, n, "'%s' outside of a loop", n->kind == JN_BREAK ? "break" : "continue");
        rc = n->kind == JN_BREAK ? EX_BREAK : EX_CONTINUE;
        break;
    default: jfail(st, n, "internal error: node %d is not a statement", n->kind);
    }
    st->depth--;
    return rc;
}

static int exec_body(jstate *st, const jnode *body) {
    if (body->kind != JN_BODY) return exec_stmt(st, body);
    for (uint32_t i = 0; i < body->nkids; i++) {
        int rc = exec_stmt(st, body->kids[i]);
        if (rc != EX_NORMAL) return rc;
    }
    return EX_NORMAL;
}

/* ---- public API ---- */

struct jinja_ctx {
    jarena arena;
    jinja_obj vars;
    struct tm tm;
    bool has_tm;
};

zn_status jinja_parse(const char *src, size_t len, jinja_template **out, zn_err *err) {
    *out = NULL;
    jinja_template *t = calloc(1, sizeof *t);
    if (!t) return zn_errf(err, ZN_ERR_NOMEM, "template: out of memory");
    t->arena.limit = ZN_JINJA_MAX_MEM;
    zn_status s = jparse(t, src, len, err);
    if (s != ZN_OK) {
        jinja_free(t);
        return s;
    }
    *out = t;
    return ZN_OK;
}

void jinja_free(jinja_template *t) {
    if (!t) return;
    ja_free(&t->arena);
    free(t);
}

zn_status jinja_ctx_new(jinja_ctx **out, zn_err *err) {
    *out = NULL;
    jinja_ctx *c = calloc(1, sizeof *c);
    if (!c) return zn_errf(err, ZN_ERR_NOMEM, "template: out of memory");
    c->arena.limit = ZN_JINJA_MAX_MEM;
    jdict *d = ja_alloc(&c->arena, sizeof *d);
    if (!d) {
        free(c);
        return zn_errf(err, ZN_ERR_NOMEM, "template: out of memory");
    }
    c->vars.v = jv_dict(d);
    *out = c;
    return ZN_OK;
}

void jinja_ctx_free(jinja_ctx *ctx) {
    if (!ctx) return;
    ja_free(&ctx->arena);
    free(ctx);
}

jinja_obj *jinja_ctx_vars(jinja_ctx *ctx) { return &ctx->vars; }

void jinja_ctx_set_time(jinja_ctx *ctx, const struct tm *tm) {
    ctx->tm = *tm;
    ctx->has_tm = true;
}

/* Building values runs the same code as rendering, so it needs a state whose
 * failures (only out-of-memory here) jump back to the API call. */
#define CTX_STATE(ctx, errp)                                   \
    jstate st_;                                                \
    jmp_buf jb_;                                               \
    memset(&st_, 0, sizeof st_);                               \
    st_.arena = &(ctx)->arena;                                 \
    st_.jmp = &jb_;                                            \
    st_.err = (errp);                                          \
    if (setjmp(jb_)) return (errp)->status

static void obj_store(jstate *st, jinja_obj *obj, const char *key, jv v) {
    if (obj->v.t == JT_LIST) jlist_push(st, obj->v.l, v);
    else jdict_set(st, obj->v.d, jstr(st, key, strlen(key)), v);
}

static zn_status set_value(jinja_ctx *ctx, jinja_obj *obj, const char *key, jv v, bool copy) {
    zn_err e;
    CTX_STATE(ctx, &e);
    if (copy) v = jstr(&st_, v.s, v.n);
    obj_store(&st_, obj, key, v);
    return ZN_OK;
}

zn_status jinja_set_str(jinja_ctx *ctx, jinja_obj *obj, const char *key, const char *s, size_t n) {
    return set_value(ctx, obj, key, jv_strn(s, n), true);
}
zn_status jinja_set_int(jinja_ctx *ctx, jinja_obj *obj, const char *key, int64_t v) {
    return set_value(ctx, obj, key, jv_int(v), false);
}
zn_status jinja_set_bool(jinja_ctx *ctx, jinja_obj *obj, const char *key, bool v) {
    return set_value(ctx, obj, key, jv_bool(v), false);
}
zn_status jinja_set_none(jinja_ctx *ctx, jinja_obj *obj, const char *key) {
    return set_value(ctx, obj, key, jv_none(), false);
}

zn_status jinja_set_json(jinja_ctx *ctx, jinja_obj *obj, const char *key, const char *json, size_t n, zn_err *err) {
    zn_err e;
    CTX_STATE(ctx, &e);
    jv v;
    char msg[ZN_ERR_MSG_MAX / 2];
    if (!jv_from_json(&st_, json, n, &v, msg, sizeof msg)) return zn_errf(err, ZN_ERR_FORMAT, "%s", msg);
    if (!key && obj->v.t == JT_DICT) {
        if (v.t != JT_DICT) return zn_errf(err, ZN_ERR_ARG, "JSON: expected an object to merge");
        for (uint32_t i = 0; i < v.d->n; i++) jdict_set(&st_, obj->v.d, v.d->k[i], v.d->v[i]);
        return ZN_OK;
    }
    obj_store(&st_, obj, key, v);
    return ZN_OK;
}

static jinja_obj *set_container(jinja_ctx *ctx, jinja_obj *obj, const char *key, bool list) {
    zn_err e;
    jstate st_;
    jmp_buf jb_;
    memset(&st_, 0, sizeof st_);
    st_.arena = &ctx->arena;
    st_.jmp = &jb_;
    st_.err = &e;
    if (setjmp(jb_)) return NULL;
    jinja_obj *h = jalloc(&st_, sizeof *h);
    h->v = list ? jv_list(jlist_new(&st_, 0)) : jv_dict(jdict_new(&st_, 0));
    obj_store(&st_, obj, key, h->v);
    return h;
}

jinja_obj *jinja_set_list(jinja_ctx *ctx, jinja_obj *obj, const char *key) { return set_container(ctx, obj, key, true); }
jinja_obj *jinja_set_dict(jinja_ctx *ctx, jinja_obj *obj, const char *key) { return set_container(ctx, obj, key, false); }

bool jinja_is_list(const jinja_obj *obj) { return obj->v.t == JT_LIST; }

size_t jinja_len(const jinja_obj *obj) { return obj->v.t == JT_LIST ? obj->v.l->n : obj->v.d->n; }

static bool obj_get(jinja_obj *obj, const char *key, size_t i, jv *v) {
    if (obj->v.t == JT_LIST) {
        if (i >= obj->v.l->n) return false;
        *v = obj->v.l->v[i];
        return true;
    }
    return jdict_gets(obj->v.d, key, strlen(key), v);
}

jinja_obj *jinja_get_obj(jinja_ctx *ctx, jinja_obj *obj, const char *key, size_t i) {
    jv v;
    if (!obj_get(obj, key, i, &v) || (v.t != JT_LIST && v.t != JT_DICT)) return NULL;
    jinja_obj *h = ja_alloc(&ctx->arena, sizeof *h);
    if (h) h->v = v;
    return h;
}

const char *jinja_get_str(jinja_obj *obj, const char *key, size_t i, size_t *n) {
    jv v;
    if (!obj_get(obj, key, i, &v) || v.t != JT_STR) return NULL;
    *n = v.n;
    return v.s;
}

static int render_protected(jstate *st, const jnode *root) {
    jmp_buf jb;
    st->jmp = &jb;
    if (setjmp(jb)) return 1;
    exec_body(st, root);
    return 0;
}

zn_status jinja_render(const jinja_template *t, jinja_ctx *ctx, char **out, size_t *out_len, zn_err *err) {
    zn_err local;
    if (!err) err = &local;
    *out = NULL;
    if (out_len) *out_len = 0;
    jarena arena = {.limit = ZN_JINJA_MAX_MEM};
    jscope root = {0};
    jbuf buf = {0};
    jstate st;
    memset(&st, 0, sizeof st);
    st.arena = &arena;
    st.err = err;
    st.root = st.scope = &root;
    st.ctx_vars = ctx->vars.v.d;
    st.out = &buf;
    if (ctx->has_tm) {
        st.now = ctx->tm;
    } else {
        time_t now = time(NULL);
        localtime_r(&now, &st.now);
    }
    if (render_protected(&st, t->root)) {
        ja_free(&arena);
        return err->status;
    }
    char *s = malloc(buf.n + 1);
    if (!s) {
        ja_free(&arena);
        return zn_errf(err, ZN_ERR_NOMEM, "template: out of memory");
    }
    if (buf.n) memcpy(s, buf.p, buf.n);
    s[buf.n] = 0;
    ja_free(&arena);
    *out = s;
    if (out_len) *out_len = buf.n;
    return ZN_OK;
}
