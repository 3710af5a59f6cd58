/* Jinja lexer and parser: template text -> AST (jnode).
 *
 * The lexer follows Jinja2's own rules with trim_blocks and lstrip_blocks on
 * (what transformers uses): newlines normalised to \n, one trailing newline
 * dropped, `-`/`+` whitespace control, a newline after `%}`/`#}` eaten,
 * whitespace before `{%`/`{#` at the start of a line dropped. The parser
 * mirrors jinja2/parser.py so precedence and oddities (filters bind tighter
 * than arithmetic, `not x is y` = `not (x is y)`) come out the same. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"

enum { TK_EOF, TK_TEXT, TK_VBEGIN, TK_VEND, TK_BBEGIN, TK_BEND, TK_NAME, TK_STR, TK_INT, TK_FLOAT, TK_OP };

/* Two-character operators, coded as one byte. */
enum { OP_FLOORDIV = 'F', OP_POW = 'P', OP_EQ = 'E', OP_NE = 'N', OP_GE = 'G', OP_LE = 'L' };

typedef struct jtok {
    uint8_t type;
    char op;
    uint32_t off;       /* byte offset in the (normalised) source */
    const char *s;      /* TEXT/NAME/STR: bytes (STR decoded) */
    size_t n;
    int64_t i;
    double f;
} jtok;

typedef struct jp {
    jarena *a;
    const char *src;    /* normalised copy */
    size_t n;
    uint32_t *lines;    /* offsets of line starts */
    size_t nlines;
    jtok *toks;
    size_t ntok, cap, pos;
    int depth;
    jmp_buf jmp;
    zn_err *err;
} jp;

static void line_col(const jp *P, uint32_t off, int *line, int *col) {
    size_t lo = 0, hi = P->nlines;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (P->lines[mid] <= off) lo = mid; else hi = mid;
    }
    *line = (int)lo + 1;
    *col = (int)(off - P->lines[lo]) + 1;
}

_Noreturn static void pfail(jp *P, uint32_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pfail(jp *P, uint32_t off, const char *fmt, ...) {
    char msg[ZN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = 0, col = 0;
    if (P->lines) line_col(P, off, &line, &col);
    zn_errf(P->err, ZN_ERR_FORMAT, "template:%d:%d: %s", line, col, msg);
    longjmp(P->jmp, 1);
}

static void *palloc(jp *P, size_t n) {
    void *p = ja_alloc(P->a, n);
    if (!p) pfail(P, 0, "out of memory");
    return p;
}

/* ---- lexer ---- */

static jtok *push_tok(jp *P, int type, size_t off) {
    if (P->ntok == P->cap) {
        size_t cap = P->cap ? P->cap * 2 : 256;
        jtok *nt = palloc(P, cap * sizeof *nt);
        if (P->ntok) memcpy(nt, P->toks, P->ntok * sizeof *nt);
        P->toks = nt;
        P->cap = cap;
    }
    jtok *t = &P->toks[P->ntok++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    t->off = (uint32_t)off;
    return t;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name(char c) { return is_name0(c) || is_digit(c); }

static size_t skip_ws(const jp *P, size_t i) {
    while (i < P->n && is_ws(P->src[i])) i++;
    return i;
}

static bool at(const jp *P, size_t i, const char *w) {
    size_t l = strlen(w);
    return P->n - i >= l && memcmp(P->src + i, w, l) == 0;
}

/* Text before a tag, with the tag's whitespace control applied. */
static void emit_text(jp *P, size_t start, size_t end, char sign, bool lstrip, bool line_starting) {
    if (sign == '-') {
        while (end > start && is_ws(P->src[end - 1])) end--;
    } else if (sign != '+' && lstrip) {
        size_t l = end;
        while (l > start && P->src[l - 1] != '\n') l--;
        bool all_ws = l < end;
        for (size_t i = l; i < end; i++)
            if (!is_ws(P->src[i])) all_ws = false;
        if ((l > start || line_starting) && all_ws) end = l;
    }
    if (end > start) {
        jtok *t = push_tok(P, TK_TEXT, start);
        t->s = P->src + start;
        t->n = end - start;
    }
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static size_t put_cp(char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* A string literal, unescaped the way Python's "unicode-escape" codec does
 * it (what Jinja applies): unknown escapes stay as written. */
static size_t lex_string(jp *P, size_t i) {
    char q = P->src[i];
    size_t start = i++;
    while (i < P->n && P->src[i] != q) i += P->src[i] == '\\' ? 2 : 1;
    if (i >= P->n) pfail(P, (uint32_t)start, "unterminated string");
    const char *s = P->src + start + 1;
    size_t n = i - start - 1;
    char *o = palloc(P, n + 1), *w = o;
    for (size_t k = 0; k < n; k++) {
        if (s[k] != '\\') { *w++ = s[k]; continue; }
        char e = s[++k];
        uint32_t cp;
        int digits = 0;
        switch (e) {
        case '\n': continue;
        case '\\': *w++ = '\\'; continue;
        case '\'': *w++ = '\''; continue;
        case '"': *w++ = '"'; continue;
        case 'a': *w++ = '\a'; continue;
        case 'b': *w++ = '\b'; continue;
        case 'f': *w++ = '\f'; continue;
        case 'n': *w++ = '\n'; continue;
        case 'r': *w++ = '\r'; continue;
        case 't': *w++ = '\t'; continue;
        case 'v': *w++ = '\v'; continue;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default:
            if (e >= '0' && e <= '7') {
                cp = 0;
                for (int d = 0; d < 3 && k < n && s[k] >= '0' && s[k] <= '7'; d++) cp = cp * 8 + (uint32_t)(s[k++] - '0');
                k--;
                w += put_cp(w, cp);
            } else {
                *w++ = '\\';
                *w++ = e;
            }
            continue;
        }
        cp = 0;
        for (int d = 0; d < digits; d++) {
            int h = k + 1 < n ? hexval(s[k + 1]) : -1;
            if (h < 0) pfail(P, (uint32_t)(start + 1 + k), "truncated \\%c escape in string", e);
            cp = cp * 16 + (uint32_t)h;
            k++;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) pfail(P, (uint32_t)start, "invalid code point in string");
        w += put_cp(w, cp);
    }
    *w = 0;
    jtok *t = push_tok(P, TK_STR, start);
    t->s = o;
    t->n = (size_t)(w - o);
    return i + 1;
}

static size_t lex_digits(jp *P, size_t i, char *buf, size_t *bn, size_t cap) {
    while (i < P->n && (is_digit(P->src[i]) || (P->src[i] == '_' && i + 1 < P->n && is_digit(P->src[i + 1])))) {
        if (P->src[i] != '_') {
            if (*bn + 1 >= cap) pfail(P, (uint32_t)i, "number literal too long");
            buf[(*bn)++] = P->src[i];
        }
        i++;
    }
    return i;
}

static size_t lex_number(jp *P, size_t i) {
    size_t start = i, bn = 0;
    char buf[80];
    bool isf = false;
    i = lex_digits(P, i, buf, &bn, 64);
    if (i + 1 < P->n && P->src[i] == '.' && is_digit(P->src[i + 1])) {
        isf = true;
        buf[bn++] = '.';
        i = lex_digits(P, i + 1, buf, &bn, 72);
    }
    if (i < P->n && (P->src[i] == 'e' || P->src[i] == 'E')) {
        size_t j = i + 1;
        if (j < P->n && (P->src[j] == '+' || P->src[j] == '-')) j++;
        if (j < P->n && is_digit(P->src[j])) {
            isf = true;
            buf[bn++] = 'e';
            if (P->src[i + 1] == '-') buf[bn++] = '-';
            i = lex_digits(P, j, buf, &bn, sizeof buf);
        }
    }
    buf[bn] = 0;
    jtok *t = push_tok(P, isf ? TK_FLOAT : TK_INT, start);
    if (isf) {
        t->f = strtod(buf, NULL);
    } else {
        errno = 0;
        t->i = strtoll(buf, NULL, 10);
        if (errno) pfail(P, (uint32_t)start, "integer literal out of range");
    }
    return i;
}

/* Tokens inside {{ }} or {% %} up to the end tag; returns the index after it. */
static size_t lex_tag(jp *P, size_t i, bool block, bool *line_starting) {
    int balance = 0;
    for (;;) {
        if (i >= P->n) pfail(P, (uint32_t)i, "unexpected end of template (unclosed %s)", block ? "{%" : "{{");
        if (balance == 0) {
            const char *end = block ? "%}" : "}}";
            size_t after = 0;
            bool ws = false, nl = false;
            if (P->src[i] == '-' && at(P, i + 1, end)) { after = i + 3; ws = true; }
            else if (block && P->src[i] == '+' && at(P, i + 1, end)) after = i + 3;
            else if (at(P, i, end)) { after = i + 2; nl = block; }
            if (after) {
                push_tok(P, block ? TK_BEND : TK_VEND, i);
                if (ws) after = skip_ws(P, after);
                else if (nl && after < P->n && P->src[after] == '\n') after++;
                *line_starting = P->src[after - 1] == '\n';
                return after;
            }
        }
        char c = P->src[i];
        if (is_ws(c)) { i++; continue; }
        if (is_digit(c)) { i = lex_number(P, i); continue; }
        if (is_name0(c)) {
            size_t s = i;
            while (i < P->n && is_name(P->src[i])) i++;
            jtok *t = push_tok(P, TK_NAME, s);
            t->s = P->src + s;
            t->n = i - s;
            continue;
        }
        if (c == '\'' || c == '"') { i = lex_string(P, i); continue; }
        static const struct { const char *s; char op; } two[] = {
            {"//", OP_FLOORDIV}, {"**", OP_POW}, {"==", OP_EQ}, {"!=", OP_NE}, {">=", OP_GE}, {"<=", OP_LE},
        };
        char op = 0;
        size_t len = 1;
        for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
            if (at(P, i, two[k].s)) { op = two[k].op; len = 2; break; }
        if (!op && strchr("+-/*%~[](){}><=.:|,;", c) && c) op = c;
        if (!op) pfail(P, (uint32_t)i, "unexpected character '%c'", c);
        if (op == '(' || op == '[' || op == '{') {
            if (++balance > ZN_JINJA_MAX_DEPTH) pfail(P, (uint32_t)i, "brackets nested too deeply");
        } else if (op == ')' || op == ']' || op == '}') {
            if (balance == 0) pfail(P, (uint32_t)i, "unexpected '%c'", op);
            balance--;
        }
        jtok *t = push_tok(P, TK_OP, i);
        t->op = op;
        i += len;
    }
}

static void lex(jp *P) {
    size_t i = 0;
    bool line_starting = true;
    while (i < P->n) {
        /* next tag start */
        size_t t = i;
        const char *hit = NULL;
        for (; t + 1 < P->n; t++) {
            if (P->src[t] != '{') continue;
            char k = P->src[t + 1];
            if (k == '{' || k == '%' || k == '#') { hit = P->src + t; break; }
        }
        if (!hit) {
            emit_text(P, i, P->n, 0, false, false);
            break;
        }
        char kind = P->src[t + 1];
        size_t j = t + 2;
        char sign = 0;
        if (j < P->n && (P->src[j] == '-' || P->src[j] == '+')) sign = P->src[j++];
        /* {% raw %} ... {% endraw %}: the text in between is literal. */
        if (kind == '%') {
            size_t r = skip_ws(P, j);
            if (at(P, r, "raw") && !(r + 3 < P->n && is_name(P->src[r + 3]))) {
                size_t e = skip_ws(P, r + 3), body;
                if (P->src[e] == '-' && at(P, e + 1, "%}")) body = skip_ws(P, e + 3);
                else if (at(P, e, "%}")) body = e + 2;
                else pfail(P, (uint32_t)e, "expected '%%}' after raw");
                emit_text(P, i, t, sign, true, line_starting);
                /* find {%[-+]? endraw [-+]?%} */
                size_t k = body;
                for (;; k++) {
                    if (k + 1 >= P->n) pfail(P, (uint32_t)t, "missing end of raw directive");
                    if (P->src[k] != '{' || P->src[k + 1] != '%') continue;
                    size_t m = k + 2;
                    char s2 = 0;
                    if (m < P->n && (P->src[m] == '-' || P->src[m] == '+')) s2 = P->src[m++];
                    m = skip_ws(P, m);
                    if (!at(P, m, "endraw")) continue;
                    m = skip_ws(P, m + 6);
                    size_t after;
                    if (P->src[m] == '-' && at(P, m + 1, "%}")) after = skip_ws(P, m + 3);
                    else if (P->src[m] == '+' && at(P, m + 1, "%}")) after = m + 3;
                    else if (at(P, m, "%}")) { after = m + 2; if (after < P->n && P->src[after] == '\n') after++; }
                    else continue;
                    emit_text(P, body, k, s2, true, P->src[body - 1] == '\n');
                    line_starting = P->src[after - 1] == '\n';
                    i = after;
                    break;
                }
                continue;
            }
        }
        emit_text(P, i, t, sign, kind != '{', line_starting);
        if (kind == '#') {
            size_t e = j;
            while (e + 1 < P->n && !(P->src[e] == '#' && P->src[e + 1] == '}')) e++;
            if (e + 1 >= P->n) pfail(P, (uint32_t)t, "missing end of comment tag");
            size_t after = e + 2;
            if (e > j && P->src[e - 1] == '-') after = skip_ws(P, after);
            else if (!(e > j && P->src[e - 1] == '+') && after < P->n && P->src[after] == '\n') after++;
            line_starting = P->src[after - 1] == '\n';
            i = after;
            continue;
        }
        push_tok(P, kind == '%' ? TK_BBEGIN : TK_VBEGIN, t);
        i = lex_tag(P, j, kind == '%', &line_starting);
    }
    push_tok(P, TK_EOF, P->n);
}

/* ---- parser ---- */

static jtok *cur(jp *P) { return &P->toks[P->pos]; }
static jtok *peek(jp *P, size_t k) { size_t i = P->pos + k; return &P->toks[i < P->ntok ? i : P->ntok - 1]; }
static jtok *next_tok(jp *P) { jtok *t = cur(P); if (P->pos + 1 < P->ntok) P->pos++; return t; }

static bool tok_is_name(const jtok *t, const char *w) {
    return t->type == TK_NAME && t->n == strlen(w) && memcmp(t->s, w, t->n) == 0;
}
static bool is_op(jp *P, char op) { return cur(P)->type == TK_OP && cur(P)->op == op; }
static bool skip_op(jp *P, char op) { if (is_op(P, op)) { next_tok(P); return true; } return false; }
static bool skip_name(jp *P, const char *w) { if (tok_is_name(cur(P), w)) { next_tok(P); return true; } return false; }

static const char *describe(const jtok *t) {
    switch (t->type) {
    case TK_EOF: return "end of template";
    case TK_TEXT: return "template data";
    case TK_VBEGIN: return "'{{'";
    case TK_VEND: return "end of print statement";
    case TK_BBEGIN: return "'{%'";
    case TK_BEND: return "end of statement block";
    case TK_NAME: return "name";
    case TK_STR: return "string";
    case TK_INT: return "integer";
    case TK_FLOAT: return "float";
    default: return "operator";
    }
}

static void expect_op(jp *P, char op) {
    if (!skip_op(P, op)) pfail(P, cur(P)->off, "expected '%c', got %s", op, describe(cur(P)));
}
static void expect_type(jp *P, int type, const char *what) {
    if (cur(P)->type != type) pfail(P, cur(P)->off, "expected %s, got %s", what, describe(cur(P)));
    next_tok(P);
}
static jtok *expect_name(jp *P) {
    if (cur(P)->type != TK_NAME) pfail(P, cur(P)->off, "expected a name, got %s", describe(cur(P)));
    return next_tok(P);
}

static jnode *mk(jp *P, int kind, const jtok *t) {
    jnode *n = palloc(P, sizeof *n);
    n->kind = (uint8_t)kind;
    line_col(P, t->off, &n->line, &n->col);
    return n;
}

static const char *tok_cstr(jp *P, const jtok *t) {
    char *s = palloc(P, t->n + 1);
    memcpy(s, t->s, t->n);
    return s;
}

/* A growable array of node pointers while parsing a list. */
typedef struct nvec { jnode **v; const char **names; uint32_t n, cap; } nvec;

static void nvec_push(jp *P, nvec *a, jnode *x, const char *name) {
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 4;
        jnode **nv = palloc(P, cap * sizeof *nv);
        const char **nn = palloc(P, cap * sizeof *nn);
        if (a->n) { memcpy(nv, a->v, a->n * sizeof *nv); memcpy(nn, a->names, a->n * sizeof *nn); }
        a->v = nv;
        a->names = nn;
        a->cap = cap;
    }
    a->v[a->n] = x;
    a->names[a->n] = name;
    a->n++;
}

static void enter(jp *P) {
    if (++P->depth > ZN_JINJA_MAX_DEPTH) pfail(P, cur(P)->off, "template nested too deeply");
}

static jnode *parse_expression(jp *P, bool with_condexpr);
static jnode *parse_tuple(jp *P, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_paren);
static jnode *parse_unary(jp *P, bool with_filter);
static jnode *parse_primary(jp *P);
static jnode *parse_postfix(jp *P, jnode *node);

/* (args, k=v, ...) into n->kids / n->names / n->npos. */
static void parse_call_args(jp *P, jnode *n) {
    expect_op(P, '(');
    nvec a = {0};
    uint32_t npos = 0;
    bool kw = false, first = true;
    while (!is_op(P, ')')) {
        if (!first) {
            expect_op(P, ',');
            if (is_op(P, ')')) break;
        }
        first = false;
        if (is_op(P, '*') || (cur(P)->type == TK_OP && cur(P)->op == OP_POW))
            pfail(P, cur(P)->off, "*args / **kwargs in calls are not supported");
        if (cur(P)->type == TK_NAME && peek(P, 1)->type == TK_OP && peek(P, 1)->op == '=') {
            const char *name = tok_cstr(P, next_tok(P));
            next_tok(P);
            nvec_push(P, &a, parse_expression(P, true), name);
            kw = true;
        } else {
            if (kw) pfail(P, cur(P)->off, "positional argument follows keyword argument");
            nvec_push(P, &a, parse_expression(P, true), NULL);
            npos++;
        }
    }
    expect_op(P, ')');
    n->kids = a.v;
    n->nkids = a.n;
    n->npos = npos;
    n->names = a.names;
}

/* A call is reported where its callee starts: `raise_exception(...)`. */
static jnode *parse_call(jp *P, jnode *callee) {
    jnode *n = mk(P, JN_CALL, cur(P));
    n->line = callee->line;
    n->col = callee->col;
    n->a = callee;
    parse_call_args(P, n);
    return n;
}

static jnode *parse_filter(jp *P, jnode *node, bool start_inline) {
    while (is_op(P, '|') || start_inline) {
        if (!start_inline) next_tok(P);
        start_inline = false;
        jtok *t = expect_name(P);
        jnode *f = mk(P, JN_FILTER, t);
        f->a = node;
        f->lit = jv_strn(tok_cstr(P, t), t->n);
        if (is_op(P, '(')) parse_call_args(P, f);
        node = f;
    }
    return node;
}

static jnode *parse_test(jp *P, jnode *node) {
    jtok *is = next_tok(P);
    bool negated = skip_name(P, "not");
    jtok *t = expect_name(P);
    jnode *n = mk(P, JN_TEST, is);
    n->a = node;
    n->negated = negated;
    n->lit = jv_strn(tok_cstr(P, t), t->n);
    jtok *c = cur(P);
    if (is_op(P, '(')) {
        parse_call_args(P, n);
    } else if ((c->type == TK_NAME || c->type == TK_STR || c->type == TK_INT || c->type == TK_FLOAT ||
                (c->type == TK_OP && (c->op == '(' || c->op == '[' || c->op == '{'))) &&
               !tok_is_name(c, "else") && !tok_is_name(c, "or") && !tok_is_name(c, "and")) {
        if (tok_is_name(c, "is")) pfail(P, c->off, "you cannot chain multiple tests with is");
        jnode *arg = parse_postfix(P, parse_primary(P));
        n->kids = palloc(P, sizeof(jnode *));
        n->kids[0] = arg;
        n->nkids = n->npos = 1;
    }
    return n;
}

static jnode *parse_subscribed(jp *P) {
    jtok *t = cur(P);
    jnode *parts[3] = {0};
    if (is_op(P, ':')) {
        next_tok(P);
    } else {
        jnode *e = parse_expression(P, true);
        if (!is_op(P, ':')) return e;
        next_tok(P);
        parts[0] = e;
    }
    if (!is_op(P, ':') && !is_op(P, ']') && !is_op(P, ',')) parts[1] = parse_expression(P, true);
    if (skip_op(P, ':'))
        if (!is_op(P, ']') && !is_op(P, ',')) parts[2] = parse_expression(P, true);
    jnode *s = mk(P, JN_SLICE, t);
    s->b = parts[0];
    s->c = parts[1];
    s->d = parts[2];
    return s;
}

static jnode *parse_postfix(jp *P, jnode *node) {
    for (;;) {
        jtok *t = cur(P);
        if (is_op(P, '.')) {
            next_tok(P);
            jtok *a = next_tok(P);
            if (a->type == TK_NAME) {
                jnode *n = mk(P, JN_ATTR, t);
                n->a = node;
                n->lit = jv_strn(tok_cstr(P, a), a->n);
                node = n;
            } else if (a->type == TK_INT) {
                jnode *n = mk(P, JN_ITEM, t), *k = mk(P, JN_LIT, a);
                k->lit = jv_int(a->i);
                n->a = node;
                n->b = k;
                node = n;
            } else {
                pfail(P, a->off, "expected name or number after '.'");
            }
        } else if (is_op(P, '[')) {
            next_tok(P);
            nvec a = {0};
            while (!is_op(P, ']')) {
                if (a.n) expect_op(P, ',');
                nvec_push(P, &a, parse_subscribed(P), NULL);
            }
            expect_op(P, ']');
            jnode *key = a.n ? a.v[0] : NULL;
            if (a.n != 1) {  /* x[a, b] and even x[] index with a tuple */
                /* (a slice there would be a slice object, which no value can be indexed with) */
                for (uint32_t i = 0; i < a.n; i++)
                    if (a.v[i]->kind == JN_SLICE) pfail(P, t->off, "a slice cannot be part of a tuple subscript");
                key = mk(P, JN_TUPLE, t);
                key->kids = a.v;
                key->nkids = a.n;
            }
            jnode *n;
            if (key->kind == JN_SLICE) {
                n = key;
                n->a = node;
            } else {
                n = mk(P, JN_ITEM, t);
                n->a = node;
                n->b = key;
            }
            node = n;
        } else if (is_op(P, '(')) {
            node = parse_call(P, node);
        } else {
            return node;
        }
    }
}

static jnode *parse_filter_expr(jp *P, jnode *node) {
    for (;;) {
        if (is_op(P, '|')) node = parse_filter(P, node, false);
        else if (tok_is_name(cur(P), "is")) node = parse_test(P, node);
        else if (is_op(P, '(')) node = parse_call(P, node);
        else return node;
    }
}

static jnode *parse_primary(jp *P) {
    jtok *t = cur(P);
    jnode *n;
    enter(P);
    if (t->type == TK_NAME) {
        next_tok(P);
        n = mk(P, JN_LIT, t);
        if (tok_is_name(t, "true") || tok_is_name(t, "True")) n->lit = jv_bool(true);
        else if (tok_is_name(t, "false") || tok_is_name(t, "False")) n->lit = jv_bool(false);
        else if (tok_is_name(t, "none") || tok_is_name(t, "None")) n->lit = jv_none();
        else {
            n->kind = JN_NAME;
            n->lit = jv_strn(tok_cstr(P, t), t->n);
        }
    } else if (t->type == TK_STR) {
        next_tok(P);
        n = mk(P, JN_LIT, t);
        n->lit = jv_strn(t->s, t->n);
        if (cur(P)->type == TK_STR) {  /* adjacent literals concatenate */
            size_t len = t->n;
            for (size_t k = P->pos; P->toks[k].type == TK_STR; k++) len += P->toks[k].n;
            char *s = palloc(P, len + 1);
            memcpy(s, t->s, t->n);
            size_t o = t->n;
            while (cur(P)->type == TK_STR) {
                jtok *u = next_tok(P);
                memcpy(s + o, u->s, u->n);
                o += u->n;
            }
            n->lit = jv_strn(s, len);
        }
    } else if (t->type == TK_INT || t->type == TK_FLOAT) {
        next_tok(P);
        n = mk(P, JN_LIT, t);
        n->lit = t->type == TK_INT ? jv_int(t->i) : jv_float(t->f);
    } else if (is_op(P, '(')) {
        next_tok(P);
        n = parse_tuple(P, false, true, NULL, true);
        expect_op(P, ')');
    } else if (is_op(P, '[')) {
        next_tok(P);
        n = mk(P, JN_LIST, t);
        nvec a = {0};
        while (!is_op(P, ']')) {
            if (a.n) expect_op(P, ',');
            if (is_op(P, ']')) break;
            nvec_push(P, &a, parse_expression(P, true), NULL);
        }
        expect_op(P, ']');
        n->kids = a.v;
        n->nkids = a.n;
    } else if (is_op(P, '{')) {
        next_tok(P);
        n = mk(P, JN_DICT, t);
        nvec a = {0};
        while (!is_op(P, '}')) {
            if (a.n) expect_op(P, ',');
            if (is_op(P, '}')) break;
            nvec_push(P, &a, parse_expression(P, true), NULL);
            expect_op(P, ':');
            nvec_push(P, &a, parse_expression(P, true), NULL);
        }
        expect_op(P, '}');
        n->kids = a.v;
        n->nkids = a.n;
    } else {
        pfail(P, t->off, "unexpected %s", describe(t));
    }
    P->depth--;
    return n;
}

static jnode *parse_unary(jp *P, bool with_filter) {
    jtok *t = cur(P);
    jnode *n;
    enter(P);
    if (is_op(P, '-') || is_op(P, '+')) {
        next_tok(P);
        n = mk(P, t->op == '-' ? JN_NEG : JN_POS, t);
        n->a = parse_unary(P, false);
    } else {
        n = parse_primary(P);
    }
    n = parse_postfix(P, n);
    if (with_filter) n = parse_filter_expr(P, n);
    P->depth--;
    return n;
}

static jnode *bin(jp *P, int kind, int op, const jtok *t, jnode *a, jnode *b) {
    jnode *n = mk(P, kind, t);
    n->op = (uint8_t)op;
    n->a = a;
    n->b = b;
    return n;
}

static int binop_of(const jtok *t, int level) {
    if (t->type != TK_OP) return 0;
    switch (level) {
    case 1: return t->op == '+' ? JO_ADD : t->op == '-' ? JO_SUB : 0;
    case 2: return t->op == '*' ? JO_MUL : t->op == '/' ? JO_DIV : t->op == OP_FLOORDIV ? JO_FLOORDIV : t->op == '%' ? JO_MOD : 0;
    default: return t->op == OP_POW ? JO_POW : 0;
    }
}

static jnode *parse_concat(jp *P);

/* Left-associative arithmetic: level 1 (+ -) over `~` concatenation over
 * level 2 (* / // %) over level 3 (**) over unary. */
static jnode *parse_math(jp *P, int level);

static jnode *math_operand(jp *P, int level) {
    return level == 1 ? parse_concat(P) : level == 2 ? parse_math(P, 3) : parse_unary(P, true);
}

static jnode *parse_math(jp *P, int level) {
    jnode *left = math_operand(P, level);
    int op;
    while ((op = binop_of(cur(P), level))) {
        jtok *t = next_tok(P);
        left = bin(P, JN_BIN, op, t, left, math_operand(P, level));
    }
    return left;
}

static jnode *parse_concat(jp *P) {
    jtok *t = cur(P);
    jnode *first = parse_math(P, 2);
    if (!is_op(P, '~')) return first;
    nvec a = {0};
    nvec_push(P, &a, first, NULL);
    while (skip_op(P, '~')) nvec_push(P, &a, parse_math(P, 2), NULL);
    jnode *n = mk(P, JN_CONCAT, t);
    n->kids = a.v;
    n->nkids = a.n;
    return n;
}

static jnode *parse_math1(jp *P) { return parse_math(P, 1); }

static jnode *parse_compare(jp *P) {
    jtok *t = cur(P);
    jnode *expr = parse_math1(P);
    nvec a = {0};
    uint8_t ops[64];
    for (;;) {
        jtok *c = cur(P);
        int op = 0;
        if (c->type == TK_OP) {
            switch (c->op) {
            case OP_EQ: op = JO_EQ; break;
            case OP_NE: op = JO_NE; break;
            case '<': op = JO_LT; break;
            case OP_LE: op = JO_LE; break;
            case '>': op = JO_GT; break;
            case OP_GE: op = JO_GE; break;
            }
            if (op) next_tok(P);
        } else if (tok_is_name(c, "in")) {
            op = JO_IN;
            next_tok(P);
        } else if (tok_is_name(c, "not") && tok_is_name(peek(P, 1), "in")) {
            op = JO_NOTIN;
            next_tok(P);
            next_tok(P);
        }
        if (!op) break;
        if (a.n == sizeof ops) pfail(P, c->off, "comparison chain too long");
        ops[a.n] = (uint8_t)op;
        nvec_push(P, &a, parse_math1(P), NULL);
    }
    if (!a.n) return expr;
    jnode *n = mk(P, JN_CMP, t);
    n->a = expr;
    n->kids = a.v;
    n->nkids = a.n;
    n->ops = palloc(P, a.n);
    memcpy(n->ops, ops, a.n);
    return n;
}

static jnode *parse_not(jp *P) {
    if (tok_is_name(cur(P), "not")) {
        jtok *t = next_tok(P);
        enter(P);
        jnode *n = mk(P, JN_NOT, t);
        n->a = parse_not(P);
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static jnode *parse_and(jp *P) {
    jnode *left = parse_not(P);
    while (tok_is_name(cur(P), "and")) {
        jtok *t = next_tok(P);
        left = bin(P, JN_AND, 0, t, left, parse_not(P));
    }
    return left;
}

static jnode *parse_or(jp *P) {
    jnode *left = parse_and(P);
    while (tok_is_name(cur(P), "or")) {
        jtok *t = next_tok(P);
        left = bin(P, JN_OR, 0, t, left, parse_and(P));
    }
    return left;
}

static jnode *parse_expression(jp *P, bool with_condexpr) {
    enter(P);
    jtok *t = cur(P);
    jnode *e = parse_or(P);
    if (with_condexpr) {
        while (skip_name(P, "if")) {
            jnode *n = mk(P, JN_COND, t);
            n->b = e;
            n->a = parse_or(P);
            if (skip_name(P, "else")) n->c = parse_expression(P, true);
            e = n;
            t = cur(P);
        }
    }
    P->depth--;
    return e;
}

static bool is_tuple_end(jp *P, const char *extra_end) {
    jtok *c = cur(P);
    if (c->type == TK_VEND || c->type == TK_BEND || (c->type == TK_OP && c->op == ')')) return true;
    return extra_end && tok_is_name(c, extra_end);
}

static jnode *parse_tuple(jp *P, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_paren) {
    jtok *t = cur(P);
    nvec a = {0};
    bool is_tuple = false;
    for (;;) {
        if (a.n) expect_op(P, ',');
        if (is_tuple_end(P, extra_end)) break;
        nvec_push(P, &a, simplified ? parse_primary(P) : parse_expression(P, with_condexpr), NULL);
        if (is_op(P, ',')) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (a.n) return a.v[0];
        if (!explicit_paren) pfail(P, cur(P)->off, "expected an expression, got %s", describe(cur(P)));
    }
    jnode *n = mk(P, JN_TUPLE, t);
    n->kids = a.v;
    n->nkids = a.n;
    return n;
}

/* ---- statements ---- */

static jnode *subparse(jp *P, const char *const *end_names);

static bool at_end_name(jp *P, const char *const *end_names) {
    if (!end_names) return false;
    for (; *end_names; end_names++)
        if (tok_is_name(cur(P), *end_names)) return true;
    return false;
}

static jnode *parse_statements(jp *P, const char *const *end_names, bool drop_needle) {
    skip_op(P, ':');
    expect_type(P, TK_BEND, "end of statement block");
    jnode *body = subparse(P, end_names);
    if (cur(P)->type == TK_EOF)
        pfail(P, cur(P)->off, "unexpected end of template, expected '%s'", end_names[0]);
    if (drop_needle) next_tok(P);
    return body;
}

/* Assignment target: one name or a tuple of names -> n->names/nnames. */
static void parse_targets(jp *P, jnode *n, const char *extra_end) {
    jnode *t = parse_tuple(P, true, false, extra_end, false);
    if (t->kind == JN_NAME) {
        n->names = palloc(P, sizeof(char *));
        n->names[0] = t->lit.s;
        n->nnames = 1;
        return;
    }
    if (t->kind != JN_TUPLE || t->nkids == 0) pfail(P, cur(P)->off, "can't assign to this expression");
    n->names = palloc(P, t->nkids * sizeof(char *));
    for (uint32_t i = 0; i < t->nkids; i++) {
        if (t->kids[i]->kind != JN_NAME) pfail(P, cur(P)->off, "can only assign to names");
        n->names[i] = t->kids[i]->lit.s;
    }
    n->nnames = t->nkids;
}

static jnode *parse_for(jp *P, jtok *kw) {
    static const char *const end1[] = {"endfor", "else", NULL}, *const end2[] = {"endfor", NULL};
    jnode *n = mk(P, JN_FOR, kw);
    parse_targets(P, n, "in");
    if (!skip_name(P, "in")) pfail(P, cur(P)->off, "expected 'in'");
    n->a = parse_tuple(P, false, false, "recursive", false);
    if (skip_name(P, "if")) n->d = parse_expression(P, true);
    if (tok_is_name(cur(P), "recursive")) pfail(P, cur(P)->off, "recursive loops are not supported");
    n->b = parse_statements(P, end1, false);
    if (tok_is_name(next_tok(P), "else")) n->c = parse_statements(P, end2, true);
    return n;
}

static jnode *parse_if(jp *P, jtok *kw) {
    static const char *const end1[] = {"elif", "else", "endif", NULL}, *const end2[] = {"endif", NULL};
    jnode *root = mk(P, JN_IF, kw), *n = root;
    for (;;) {
        n->a = parse_tuple(P, false, false, NULL, false);
        n->b = parse_statements(P, end1, false);
        jtok *t = next_tok(P);
        if (tok_is_name(t, "elif")) {  /* a chain, not nesting: elif lists may be long */
            n->c = mk(P, JN_IF, t);
            n = n->c;
            continue;
        }
        if (tok_is_name(t, "else")) n->c = parse_statements(P, end2, true);
        return root;
    }
}

static jnode *parse_set(jp *P, jtok *kw) {
    static const char *const end[] = {"endset", NULL};
    if (cur(P)->type == TK_NAME && peek(P, 1)->type == TK_OP && peek(P, 1)->op == '.') {
        jnode *n = mk(P, JN_SET_NS, kw);
        n->lit = jv_strn(tok_cstr(P, cur(P)), cur(P)->n);
        next_tok(P);
        next_tok(P);
        jtok *attr = expect_name(P);
        n->names = palloc(P, sizeof(char *));
        n->names[0] = tok_cstr(P, attr);
        n->nnames = 1;
        expect_op(P, '=');
        n->a = parse_tuple(P, false, true, NULL, false);
        return n;
    }
    jnode *n = mk(P, JN_SET, kw);
    parse_targets(P, n, NULL);
    if (skip_op(P, '=')) {
        n->a = parse_tuple(P, false, true, NULL, false);
        return n;
    }
    if (n->nnames != 1) pfail(P, cur(P)->off, "a set block assigns one name");
    n->kind = JN_SET_BLOCK;
    n->a = parse_filter(P, NULL, false);
    n->b = parse_statements(P, end, true);
    return n;
}

static jnode *parse_macro(jp *P, jtok *kw) {
    static const char *const end[] = {"endmacro", NULL};
    jnode *n = mk(P, JN_MACRO, kw);
    jtok *name = expect_name(P);
    n->lit = jv_strn(tok_cstr(P, name), name->n);
    expect_op(P, '(');
    nvec a = {0};
    bool have_default = false;
    while (!is_op(P, ')')) {
        if (a.n) expect_op(P, ',');
        jtok *pn = expect_name(P);
        jnode *def = NULL;
        if (skip_op(P, '=')) {
            def = parse_expression(P, true);
            have_default = true;
        } else if (have_default) {
            pfail(P, pn->off, "non-default argument follows default argument");
        }
        nvec_push(P, &a, def, tok_cstr(P, pn));
    }
    expect_op(P, ')');
    n->kids = a.v;
    n->names = a.names;
    n->nkids = n->nnames = a.n;
    n->b = parse_statements(P, end, true);
    return n;
}

static jnode *parse_statement(jp *P) {
    static const char *const end_filter[] = {"endfilter", NULL}, *const end_gen[] = {"endgeneration", NULL};
    jtok *t = cur(P);
    if (t->type != TK_NAME) pfail(P, t->off, "tag name expected");
    next_tok(P);
    enter(P);
    jnode *n;
    if (tok_is_name(t, "for")) n = parse_for(P, t);
    else if (tok_is_name(t, "if")) n = parse_if(P, t);
    else if (tok_is_name(t, "set")) n = parse_set(P, t);
    else if (tok_is_name(t, "macro")) n = parse_macro(P, t);
    else if (tok_is_name(t, "break")) n = mk(P, JN_BREAK, t);
    else if (tok_is_name(t, "continue")) n = mk(P, JN_CONTINUE, t);
    else if (tok_is_name(t, "filter")) {
        n = mk(P, JN_FILTER_BLOCK, t);
        n->a = parse_filter(P, NULL, true);
        n->b = parse_statements(P, end_filter, true);
    } else if (tok_is_name(t, "generation")) {
        /* transformers' assistant-mask marker: a call block that renders its body */
        n = mk(P, JN_CALL_BLOCK, t);
        n->b = parse_statements(P, end_gen, true);
    } else if (tok_is_name(t, "print")) {
        n = mk(P, JN_BODY, t);
        nvec a = {0};
        while (cur(P)->type != TK_BEND) {
            if (a.n) expect_op(P, ',');
            jnode *pr = mk(P, JN_PRINT, cur(P));
            pr->a = parse_expression(P, true);
            nvec_push(P, &a, pr, NULL);
        }
        n->kids = a.v;
        n->nkids = a.n;
    } else {
        pfail(P, t->off, "unknown or unsupported tag '%.*s'", (int)t->n, t->s);
    }
    P->depth--;
    return n;
}

static jnode *subparse(jp *P, const char *const *end_names) {
    jnode *body = mk(P, JN_BODY, cur(P));
    nvec a = {0};
    for (;;) {
        jtok *t = cur(P);
        if (t->type == TK_EOF) break;
        if (t->type == TK_TEXT) {
            jnode *n = mk(P, JN_TEXT, t);
            n->lit = jv_strn(t->s, t->n);
            nvec_push(P, &a, n, NULL);
            next_tok(P);
        } else if (t->type == TK_VBEGIN) {
            next_tok(P);
            jnode *n = mk(P, JN_PRINT, t);
            n->a = parse_tuple(P, false, true, NULL, false);
            expect_type(P, TK_VEND, "end of print statement");
            nvec_push(P, &a, n, NULL);
        } else if (t->type == TK_BBEGIN) {
            next_tok(P);
            if (at_end_name(P, end_names)) break;
            nvec_push(P, &a, parse_statement(P), NULL);
            expect_type(P, TK_BEND, "end of statement block");
        } else {
            pfail(P, t->off, "unexpected %s", describe(t));
        }
    }
    body->kids = a.v;
    body->nkids = a.n;
    return body;
}

zn_status jparse(jinja_template *t, const char *src, size_t len, zn_err *err) {
    jp P;
    memset(&P, 0, sizeof P);
    P.a = &t->arena;
    P.err = err;
    if (setjmp(P.jmp)) return err ? err->status : ZN_ERR_FORMAT;
    if (len > ZN_JINJA_MAX_SRC) pfail(&P, 0, "template too large (%zu bytes)", len);
    /* Normalise \r\n and \r to \n and drop one trailing newline, as Jinja does. */
    char *s = palloc(&P, len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n && s[n - 1] == '\n') n--;
    s[n] = 0;
    P.src = s;
    P.n = n;
    size_t nl = 1;
    for (size_t i = 0; i < n; i++) nl += s[i] == '\n';
    P.lines = palloc(&P, nl * sizeof *P.lines);
    P.lines[P.nlines++] = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n') P.lines[P.nlines++] = (uint32_t)(i + 1);
    lex(&P);
    t->root = subparse(&P, NULL);
    if (cur(&P)->type != TK_EOF) pfail(&P, cur(&P)->off, "unexpected %s", describe(cur(&P)));
    return ZN_OK;
}
