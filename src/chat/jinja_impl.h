/* Internals shared by the jinja_*.c files (not part of the public API).
 *
 * Memory: everything a parse or a render makes lives in an arena that is
 * dropped at once, so values need no ownership rules. Errors inside the
 * parser and the evaluator longjmp back to the API entry point (like Lua),
 * which keeps the deeply recursive code free of status plumbing; nothing is
 * malloc'd outside the arena while a jump can happen. */
#ifndef ZINC_JINJA_IMPL_H
#define ZINC_JINJA_IMPL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "jinja.h"
#include "limits.h"
#include "status.h"

/* ---- arena ---- */
typedef struct jblock jblock;
typedef struct jarena {
    jblock *head;
    size_t total;  /* bytes obtained from malloc */
    size_t limit;  /* 0: no limit */
} jarena;

void *ja_alloc(jarena *a, size_t n);   /* zeroed, 16-aligned; NULL when over the limit or out of memory */
void ja_free(jarena *a);

/* ---- values ---- */
typedef enum jtype {
    JT_UNDEF, JT_NONE, JT_BOOL, JT_INT, JT_FLOAT, JT_STR,
    JT_LIST, JT_DICT, JT_NS, JT_MACRO, JT_FUNC, JT_LOOP, JT_METHOD,
} jtype;

#define JF_TUPLE 1  /* a list written as a tuple: prints as (a, b) */
#define JF_SAFE  2  /* a string marked safe (Markup): `+` escapes the other side */
/* Lists that stand for Python iterators and dict views, which behave
 * differently from lists (no len() for generators, no indexing, no JSON): */
#define JF_GEN    4   /* generator / iterator (map, select, items filter, ...) */
#define JF_KEYS   8   /* dict.keys() */
#define JF_VALUES 16  /* dict.values() */
#define JF_ITEMS  32  /* dict.items() */
#define JF_LAZY   (JF_GEN | JF_KEYS | JF_VALUES | JF_ITEMS)

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jnode jnode;
typedef struct jloop jloop;
typedef struct jmethod jmethod;

typedef struct jv {
    uint8_t t, flags;
    uint32_t n;                /* JT_STR: bytes; JT_UNDEF: length of the name in s */
    union {
        int64_t i;             /* JT_INT, JT_BOOL, JT_FUNC (builtin id) */
        double f;
        const char *s;         /* JT_STR (not NUL-terminated), JT_UNDEF (name or NULL) */
        jlist *l;
        jdict *d;              /* JT_DICT, JT_NS */
        const jnode *m;        /* JT_MACRO */
        jloop *lp;
        jmethod *bm;
    };
} jv;

struct jlist { jv *v; uint32_t n, cap; };
struct jdict { jv *k, *v; uint32_t n, cap; };
struct jmethod { jv self; const char *name; };
struct jloop {
    const jlist *items;
    uint32_t i, n;
    int depth;
};
struct jinja_obj { jv v; };  /* public handle: a JT_LIST or JT_DICT value */

static inline jv jv_undef(void) { jv v = {0}; return v; }
static inline jv jv_none(void) { jv v = {0}; v.t = JT_NONE; return v; }
static inline jv jv_bool(bool b) { jv v = {0}; v.t = JT_BOOL; v.i = b; return v; }
static inline jv jv_int(int64_t i) { jv v = {0}; v.t = JT_INT; v.i = i; return v; }
static inline jv jv_float(double f) { jv v = {0}; v.t = JT_FLOAT; v.f = f; return v; }
static inline jv jv_strn(const char *s, size_t n) { jv v = {0}; v.t = JT_STR; v.s = s; v.n = (uint32_t)n; return v; }

/* ---- growable byte buffer (arena-backed) ---- */
typedef struct jbuf { char *p; size_t n, cap; } jbuf;

/* ---- AST ---- */
typedef enum jkind {
    /* expressions */
    JN_LIT, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL,
    JN_FILTER, JN_TEST, JN_NEG, JN_POS, JN_NOT, JN_BIN, JN_AND, JN_OR, JN_CMP, JN_CONCAT, JN_COND,
    /* statements */
    JN_BODY, JN_TEXT, JN_PRINT, JN_IF, JN_FOR, JN_SET, JN_SET_NS, JN_SET_BLOCK, JN_MACRO,
    JN_BREAK, JN_CONTINUE, JN_FILTER_BLOCK, JN_CALL_BLOCK,
} jkind;

/* Binary / compare operators (jnode.op, jnode.ops[]). */
enum { JO_ADD = 1, JO_SUB, JO_MUL, JO_DIV, JO_FLOORDIV, JO_MOD, JO_POW,
       JO_EQ, JO_NE, JO_LT, JO_LE, JO_GT, JO_GE, JO_IN, JO_NOTIN };

struct jnode {
    uint8_t kind, op;
    uint8_t negated;          /* JN_TEST: `is not` */
    int line, col;
    jnode *a, *b, *c, *d;     /* operands / bodies, see the parser */
    jnode **kids;             /* items, args (positional first, then keyword values), statements */
    const char **names;       /* keyword names (kids[npos..]), targets, macro params */
    uint8_t *ops;             /* JN_CMP operators, one per kids[i] */
    uint32_t nkids, npos, nnames;
    jv lit;                   /* literal; name of a variable / attribute / filter / test / macro */
};

struct jinja_template {
    jarena arena;
    jnode *root;
};

/* ---- render state ---- */
typedef struct jscope jscope;
struct jscope {
    jscope *parent;
    jdict vars;
};

typedef struct jstate {
    jarena *arena;
    jmp_buf *jmp;
    zn_err *err;
    jbuf *out;                /* where output goes now (macros and set blocks redirect it) */
    jscope *root, *scope;
    const jdict *ctx_vars;
    struct tm now;
    uint64_t steps;
    size_t charged;           /* bytes of work not yet a whole step (jcharge) */
    int depth;                /* evaluation depth (bounds the C stack) */
    int loop_depth;
    size_t out_total;         /* bytes in every output buffer, against ZN_JINJA_MAX_OUTPUT */
} jstate;

/* Raises a render error at node n (may be NULL) and longjmps out. */
_Noreturn void jfail(jstate *st, const jnode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* values (jinja_value.c) */
void *jalloc(jstate *st, size_t n);
jv jstr(jstate *st, const char *s, size_t n);   /* copies */
jv jcstr(const char *s);                         /* static C string, no copy */
jlist *jlist_new(jstate *st, uint32_t cap);
void jlist_push(jstate *st, jlist *l, jv v);
jdict *jdict_new(jstate *st, uint32_t cap);
void jdict_set(jstate *st, jdict *d, jv k, jv v);
bool jdict_get(const jdict *d, jv k, jv *out);
bool jdict_gets(const jdict *d, const char *k, size_t kn, jv *out);
jv jv_list(jlist *l);
jv jv_dict(jdict *d);

void jbuf_put(jstate *st, jbuf *b, const char *s, size_t n);
void jbuf_putc(jstate *st, jbuf *b, char c);
void jbuf_fill(jstate *st, jbuf *b, char c, size_t n); /* n copies of c (padding) */
void jbuf_printf(jstate *st, jbuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
jv jbuf_str(jstate *st, jbuf *b);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
int jv_cmp(jstate *st, const jnode *n, jv a, jv b);   /* <0, 0, >0; fails on unorderable types */
const char *jv_type_name(jv v);
void jv_str_into(jstate *st, jbuf *b, jv v);          /* Python str() */
void jv_repr_into(jstate *st, jbuf *b, jv v);         /* Python repr() */
jv jv_to_str(jstate *st, jv v);                       /* str() as a value */
void jv_fmt_float(char *buf, size_t cap, double f);   /* Python repr of a float */

typedef struct jjson_opts {
    const char *indent;   /* NULL: single line */
    const char *item_sep, *key_sep;
    bool sort_keys, ensure_ascii;
} jjson_opts;
void jv_json_into(jstate *st, const jnode *n, jbuf *b, jv v, const jjson_opts *o, int level);
/* JSON text -> value; returns false and writes a message on malformed input. */
bool jv_from_json(jstate *st, const char *s, size_t n, jv *out, char *msg, size_t msgcap);

/* UTF-8 helpers: Python indexes strings by code point. */
size_t ju8_len(const char *s, size_t n);
size_t ju8_offset(const char *s, size_t n, size_t cp);  /* byte offset of code point cp (clamped) */
size_t ju8_next(const char *s, size_t n, size_t i);     /* byte index after the code point at i */
bool ju_isspace_at(const char *s, size_t n, size_t i, size_t *len);  /* Python str.isspace() */

/* parser (jinja_parse.c): fills t->root or fails with a message */
zn_status jparse(jinja_template *t, const char *src, size_t len, zn_err *err);

/* evaluator (jinja_eval.c) */
jv jeval(jstate *st, const jnode *n);
jv jcall_macro(jstate *st, const jnode *at, jv macro, const jv *args, uint32_t npos,
               const char **kwnames, const jv *kwvals, uint32_t nkw);
jv jgetattr(jstate *st, const jnode *at, jv obj, const char *name, size_t n);
jv jgetitem(jstate *st, const jnode *at, jv obj, jv key);
jlist *jiterate(jstate *st, const jnode *at, jv v);   /* a list of the items of any iterable */
void jcheck_steps(jstate *st, const jnode *at);
/* Work proportional to bytes (copying, scanning) costs steps too, so a
 * template cannot loop over huge strings for free. */
void jcharge(jstate *st, const jnode *at, size_t bytes);

/* builtins (jinja_builtins.c) */
typedef struct jargs {
    const jv *pos; uint32_t npos;
    const char **kwnames; const jv *kwvals; uint32_t nkw;
} jargs;
jv jbuiltin_filter(jstate *st, const jnode *at, const char *name, jv v, const jargs *a);
bool jbuiltin_test(jstate *st, const jnode *at, const char *name, jv v, const jargs *a);
bool jbuiltin_has_test(const char *name);
jv jbuiltin_method(jstate *st, const jnode *at, jv self, const char *name, const jargs *a);
bool jbuiltin_has_method(jv self, const char *name);
int jbuiltin_global(const char *name, size_t n);       /* builtin function id, or -1 */
jv jbuiltin_call(jstate *st, const jnode *at, int id, const jargs *a);

#endif
