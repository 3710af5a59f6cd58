/* Jinja builtins: filters, tests, str/dict/list methods and globals, with the
 * semantics of Jinja2 3.1 + Python 3 (and transformers' tojson and
 * strftime_now). Only what chat templates use; anything else is an error,
 * never a silent guess. Case mapping is simple (one code point to one, so
 * ß stays ß), through the UCD lowercase table. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_impl.h"
#include "ucd.h"
#include "utf8.h"

/* ---- argument helpers ---- */

static bool arg_get(const jargs *a, uint32_t idx, const char *name, jv *out) {
    if (idx < a->npos) { *out = a->pos[idx]; return true; }
    for (uint32_t k = 0; k < a->nkw; k++)
        if (name && !strcmp(a->kwnames[k], name)) { *out = a->kwvals[k]; return true; }
    return false;
}

static jv arg(const jargs *a, uint32_t idx, const char *name, jv def) {
    jv v;
    return arg_get(a, idx, name, &v) ? v : def;
}

static void check_args(jstate *st, const jnode *at, const char *what, const jargs *a, uint32_t maxpos,
                       const char *const *kwnames) {
    if (a->npos > maxpos) jfail(st, at, "%s: too many arguments", what);
    for (uint32_t k = 0; k < a->nkw; k++) {
        const char *const *p = kwnames;
        while (p && *p && strcmp(*p, a->kwnames[k])) p++;
        if (!p || !*p) jfail(st, at, "%s: unexpected keyword argument '%s'", what, a->kwnames[k]);
    }
}

static bool is_int(jv v) { return v.t == JT_INT || v.t == JT_BOOL; }
static bool is_num(jv v) { return is_int(v) || v.t == JT_FLOAT; }

static int64_t want_int(jstate *st, const jnode *at, jv v, const char *what) {
    if (!is_int(v)) jfail(st, at, "%s: expected an integer, got %s", what, jv_type_name(v));
    return v.i;
}

static jv want_str(jstate *st, const jnode *at, jv v, const char *what) {
    if (v.t != JT_STR) jfail(st, at, "%s: expected a string, got %s", what, jv_type_name(v));
    return v;
}

static jv as_gen(jv v) { v.flags = JF_GEN; return v; }

static jv mk_tuple2(jstate *st, jv a, jv b) {
    jlist *l = jlist_new(st, 2);
    jlist_push(st, l, a);
    jlist_push(st, l, b);
    jv r = jv_list(l);
    r.flags = JF_TUPLE;
    return r;
}

/* ---- case mapping (simple, one code point to one) ---- */

static uint32_t cp_lower(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    return ucd_tolower(c);
}

/* No uppercase table: an uppercase partner sits at one of these distances
 * (Latin-1, Latin Extended-A/B, Greek, Cyrillic, Armenian...), and the
 * lowercase table confirms it. */
static uint32_t cp_upper(uint32_t c) {
    if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
    static const uint32_t delta[] = {32, 1, 80, 48, 8, 37, 63, 64, 2, 38, 16, 26};
    for (size_t k = 0; k < sizeof delta / sizeof delta[0]; k++)
        if (c >= delta[k] && cp_lower(c - delta[k]) == c) return c - delta[k];
    return c;
}

/* Lu/Ll/Lt, roughly: letters with a case partner, plus the Latin letters
 * without one (ß, ĸ). */
static bool cp_cased(uint32_t c) {
    return cp_lower(c) != c || cp_upper(c) != c || (c >= 0xdf && c <= 0x24f && c != 0xf7);
}

enum { CASE_LOWER, CASE_UPPER, CASE_CAPITALIZE, CASE_TITLE /* str.title */, CASE_JTITLE /* the title filter */ };

static jv str_case(jstate *st, jv s, int mode) {
    jbuf b = {0};
    bool in_word = false;
    for (size_t i = 0; i < s.n;) {
        size_t adv;
        uint32_t c = utf8_decode_lenient(s.s + i, s.n - i, &adv), o = c;
        switch (mode) {
        case CASE_LOWER: o = cp_lower(c); break;
        case CASE_UPPER: o = cp_upper(c); break;
        case CASE_CAPITALIZE: o = i == 0 ? cp_upper(c) : cp_lower(c); break;
        case CASE_TITLE:  /* a cased letter after an uncased one starts a word */
            o = in_word ? cp_lower(c) : cp_upper(c);
            in_word = cp_cased(c);
            break;
        default: {  /* Jinja: words are split on runs of [-\s({[<] */
            bool delim = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || ucd_is_space(c);
            if (!delim) o = in_word ? cp_lower(c) : cp_upper(c);
            in_word = !delim;
        }
        }
        if (o == c) {
            jbuf_put(st, &b, s.s + i, adv);
        } else {
            char enc[4];
            jbuf_put(st, &b, enc, utf8_write(o, enc));
        }
        i += adv;
    }
    return jbuf_str(st, &b);
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* ---- strip / split ---- */

static bool in_chars(const char *s, size_t n, size_t i, jv chars, size_t *len) {
    if (chars.t != JT_STR) return ju_isspace_at(s, n, i, len);
    *len = ju8_next(s, n, i) - i;
    for (size_t k = 0; k < chars.n;) {
        size_t kl = ju8_next(chars.s, chars.n, k) - k;
        if (kl == *len && !memcmp(chars.s + k, s + i, kl)) return true;
        k += kl;
    }
    return false;
}

static jv do_strip(jstate *st, const jnode *at, jv s, jv chars, bool left, bool right) {
    if (chars.t != JT_NONE && chars.t != JT_UNDEF) want_str(st, at, chars, "strip");
    size_t b = 0, e = s.n, len;
    if (left)
        while (b < e && in_chars(s.s, s.n, b, chars, &len)) b += len;
    if (right)
        while (e > b) {
            size_t p = e - 1;
            while (p > b && ((unsigned char)s.s[p] & 0xC0) == 0x80) p--;
            if (!in_chars(s.s, s.n, p, chars, &len)) break;
            e = p;
        }
    jv r = jv_strn(s.s + b, e - b);
    r.flags = s.flags & JF_SAFE;
    return r;
}

static jv bytes_reversed(jstate *st, jv s) {
    char *p = jalloc(st, s.n + 1);
    for (uint32_t i = 0; i < s.n; i++) p[i] = s.s[s.n - 1 - i];
    return jv_strn(p, s.n);
}

static jv do_split(jstate *st, const jnode *at, jv s, jv sep, int64_t maxsplit, bool from_right) {
    jlist *l = jlist_new(st, 0);
    if (sep.t == JT_NONE || sep.t == JT_UNDEF) {
        /* whitespace runs, no empty strings */
        size_t len;
        if (!from_right) {
            size_t i = 0;
            for (;;) {
                while (i < s.n && ju_isspace_at(s.s, s.n, i, &len)) i += len;
                if (i >= s.n) break;
                if (maxsplit >= 0 && (int64_t)l->n == maxsplit) {  /* the rest, as is */
                    jlist_push(st, l, jv_strn(s.s + i, s.n - i));
                    break;
                }
                size_t b = i;
                while (i < s.n && !ju_isspace_at(s.s, s.n, i, &len)) i = ju8_next(s.s, s.n, i);
                jlist_push(st, l, jv_strn(s.s + b, i - b));
            }
            return jv_list(l);
        }
        /* rsplit(None): collect words from the right */
        jlist *rev = jlist_new(st, 0);
        size_t e = s.n;
        for (;;) {
            while (e > 0) {
                size_t p = e - 1;
                while (p > 0 && ((unsigned char)s.s[p] & 0xC0) == 0x80) p--;
                if (!ju_isspace_at(s.s, s.n, p, &len)) break;
                e = p;
            }
            if (e == 0) break;
            if (maxsplit >= 0 && (int64_t)rev->n == maxsplit) {
                jlist_push(st, rev, jv_strn(s.s, e));
                break;
            }
            size_t b = e;
            while (b > 0) {
                size_t p = b - 1;
                while (p > 0 && ((unsigned char)s.s[p] & 0xC0) == 0x80) p--;
                if (ju_isspace_at(s.s, s.n, p, &len)) break;
                b = p;
            }
            jlist_push(st, rev, jv_strn(s.s + b, e - b));
            e = b;
        }
        for (uint32_t i = rev->n; i > 0; i--) jlist_push(st, l, rev->v[i - 1]);
        return jv_list(l);
    }
    want_str(st, at, sep, "split");
    if (!sep.n) jfail(st, at, "split: empty separator");
    if (!from_right) {
        size_t i = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || (int64_t)l->n < maxsplit) ? memmem(s.s + i, s.n - i, sep.s, sep.n) : NULL;
            if (!hit) { jlist_push(st, l, jv_strn(s.s + i, s.n - i)); break; }
            jlist_push(st, l, jv_strn(s.s + i, (size_t)(hit - s.s) - i));
            i = (size_t)(hit - s.s) + sep.n;
        }
        return jv_list(l);
    }
    /* rsplit(sep): split the byte-reversed string by the reversed separator
     * (finds matches from the right, like Python), then reverse back. */
    jlist *rev = do_split(st, at, bytes_reversed(st, s), bytes_reversed(st, sep), maxsplit, false).l;
    for (uint32_t i = rev->n; i > 0; i--) jlist_push(st, l, bytes_reversed(st, rev->v[i - 1]));
    return jv_list(l);
}

static jv do_replace(jstate *st, jv s, jv old, jv new_, int64_t count) {
    jbuf b = {0};
    size_t i = 0;
    int64_t done = 0;
    if (!old.n) {  /* Python inserts `new` before every code point and at the end */
        while (count < 0 || done < count) {
            jbuf_put(st, &b, new_.s, new_.n);
            done++;
            if (i >= s.n) break;
            size_t j = ju8_next(s.s, s.n, i);
            jbuf_put(st, &b, s.s + i, j - i);
            i = j;
        }
        jbuf_put(st, &b, s.s + i, s.n - i);
        return jbuf_str(st, &b);
    }
    while (count < 0 || done < count) {
        const char *hit = memmem(s.s + i, s.n - i, old.s, old.n);
        if (!hit) break;
        jbuf_put(st, &b, s.s + i, (size_t)(hit - s.s) - i);
        jbuf_put(st, &b, new_.s, new_.n);
        i = (size_t)(hit - s.s) + old.n;
        done++;
    }
    jbuf_put(st, &b, s.s + i, s.n - i);
    return jbuf_str(st, &b);
}

/* ---- formatting: printf-style (`%`, |format) and str.format ---- */

static jv to_pyint(jstate *st, const jnode *at, jv v, char conv) {
    if (is_int(v)) return jv_int(v.i);
    if (v.t == JT_FLOAT) {
        if (!isfinite(v.f) || fabs(v.f) >= 9.2e18) jfail(st, at, "format: cannot convert float to integer");
        return jv_int((int64_t)v.f);
    }
    jfail(st, at, "format: %%%c requires a number, not %s", conv, jv_type_name(v));
}

static jv printf_format(jstate *st, const jnode *at, jv fmt, const jargs *a) {
    jbuf b = {0};
    uint32_t next = 0;
    jv mapping = jv_undef();
    if (a->nkw) {
        jdict *d = jdict_new(st, a->nkw);
        for (uint32_t k = 0; k < a->nkw; k++) jdict_set(st, d, jcstr(a->kwnames[k]), a->kwvals[k]);
        mapping = jv_dict(d);
    } else if (a->npos == 1 && a->pos[0].t == JT_DICT) {
        mapping = a->pos[0];
    }
    for (uint32_t i = 0; i < fmt.n; i++) {
        if (fmt.s[i] != '%') { jbuf_putc(st, &b, fmt.s[i]); continue; }
        if (++i >= fmt.n) jfail(st, at, "format: incomplete format");
        if (fmt.s[i] == '%') { jbuf_putc(st, &b, '%'); continue; }
        jv v;
        if (fmt.s[i] == '(') {
            uint32_t e = i + 1;
            while (e < fmt.n && fmt.s[e] != ')') e++;
            if (e >= fmt.n || mapping.t != JT_DICT) jfail(st, at, "format: bad %%(name) use");
            if (!jdict_gets(mapping.d, fmt.s + i + 1, e - i - 1, &v)) jfail(st, at, "format: missing key '%.*s'", (int)(e - i - 1), fmt.s + i + 1);
            i = e + 1;
        } else {
            if (next >= a->npos) jfail(st, at, "format: not enough arguments for format string");
            v = a->pos[next++];
        }
        /* flags, width and precision as numbers, bounded: a width is output
         * the template did not have to write out (and it counts in the
         * output and step budgets through the buffer) */
        char flags[8];
        size_t nf = 0;
        while (i < fmt.n && strchr("-+ 0#", fmt.s[i])) {
            if (nf < sizeof flags - 1 && !memchr(flags, fmt.s[i], nf)) flags[nf++] = fmt.s[i];
            i++;
        }
        flags[nf] = 0;
        int64_t width = 0, prec = -1;
        while (i < fmt.n && fmt.s[i] >= '0' && fmt.s[i] <= '9') {
            width = width * 10 + (fmt.s[i++] - '0');
            if (width > ZN_JINJA_MAX_FORMAT_WIDTH)
                jfail(st, at, "format: width beyond the sandbox's limit of %d", ZN_JINJA_MAX_FORMAT_WIDTH);
        }
        if (i < fmt.n && fmt.s[i] == '.') {
            i++;
            prec = 0;
            while (i < fmt.n && fmt.s[i] >= '0' && fmt.s[i] <= '9') {
                prec = prec * 10 + (fmt.s[i++] - '0');
                if (prec > ZN_JINJA_MAX_FORMAT_WIDTH)
                    jfail(st, at, "format: precision beyond the sandbox's limit of %d", ZN_JINJA_MAX_FORMAT_WIDTH);
            }
        }
        if (i >= fmt.n) jfail(st, at, "format: incomplete format");
        char conv = fmt.s[i];
        bool leftj = strchr(flags, '-') != NULL;
        if (conv == 's' || conv == 'r' || conv == 'a' || conv == 'c') {
            jv sv;
            if (conv == 'c') {
                char u8[4];
                if (v.t == JT_STR) {
                    if (ju8_len(v.s, v.n) != 1) jfail(st, at, "format: %%c requires an int or a single character");
                    sv = v;
                } else {
                    jv iv = to_pyint(st, at, v, conv);
                    if (iv.i < 0 || iv.i > 0x10FFFF) jfail(st, at, "format: %%c arg not in range(0x110000)");
                    sv = jstr(st, u8, utf8_write((uint32_t)iv.i, u8));
                }
                prec = -1;
            } else {
                jbuf sb = {0};
                if (conv == 's') jv_str_into(st, &sb, v);
                else jv_repr_into(st, &sb, v);
                sv = jbuf_str(st, &sb);
            }
            /* width and precision count code points in Python; pad and cut by hand */
            size_t cps = ju8_len(sv.s, sv.n), keep = sv.n;
            if (prec >= 0 && cps > (size_t)prec) {
                keep = 0;
                for (int64_t k = 0; k < prec; k++) keep = ju8_next(sv.s, sv.n, keep);
                cps = (size_t)prec;
            }
            size_t pad = cps < (size_t)width ? (size_t)width - cps : 0;
            if (!leftj) jbuf_fill(st, &b, ' ', pad);
            jbuf_put(st, &b, sv.s, keep);
            if (leftj) jbuf_fill(st, &b, ' ', pad);
            continue;
        }
        /* widths and precisions up to the limit: room for them and a double's 309 digits */
        char spec[32], tmp[2 * ZN_JINJA_MAX_FORMAT_WIDTH + 400];
        int k = -1;
        if (strchr("diouxX", conv)) {
            jv iv = to_pyint(st, at, v, conv);
            if (conv == 'i' || conv == 'u') conv = 'd';
            if (conv == 'd' || iv.i >= 0) {
                snprintf(spec, sizeof spec, "%%%s*.*ll%c", flags, conv);
                k = snprintf(tmp, sizeof tmp, spec, (int)width, (int)prec, (long long)iv.i);
            } else {  /* Python prints -1f where C would print the two's complement */
                unsigned long long mag = (unsigned long long)(-(iv.i + 1)) + 1;
                char digits[32];
                snprintf(digits, sizeof digits, conv == 'o' ? "%llo" : conv == 'x' ? "%llx" : "%llX", mag);
                snprintf(spec, sizeof spec, "%%%s*s", leftj ? "-" : "");
                char neg[40];
                snprintf(neg, sizeof neg, "-%s", digits);
                k = snprintf(tmp, sizeof tmp, spec, (int)width, neg);
            }
        } else if (strchr("eEfFgG", conv)) {
            if (!is_num(v)) jfail(st, at, "format: %%%c requires a number, not %s", conv, jv_type_name(v));
            snprintf(spec, sizeof spec, "%%%s*.*%c", flags, conv);
            k = snprintf(tmp, sizeof tmp, spec, (int)width, (int)(prec < 0 ? 6 : prec), v.t == JT_FLOAT ? v.f : (double)v.i);
        }
        if (k >= 0) {
            if ((size_t)k >= sizeof tmp) jfail(st, at, "internal error: formatted number too long");
            jbuf_put(st, &b, tmp, (size_t)k);
            continue;
        }
        jfail(st, at, "format: unsupported format character '%c'", conv);
    }
    /* Python takes a lone non-tuple argument with __getitem__ (dict, list) as a mapping: no leftover check */
    bool mapping_like = a->npos == 1 && !a->nkw && (a->pos[0].t == JT_DICT || (a->pos[0].t == JT_LIST && !(a->pos[0].flags & JF_TUPLE)));
    if (!mapping_like && mapping.t != JT_DICT && next < a->npos)
        jfail(st, at, "format: not all arguments converted during string formatting");
    return jbuf_str(st, &b);
}

/* str.format: {} {0} {name}, {{ }}, !r/!s; format specs other than empty are rejected. */
static jv str_format(jstate *st, const jnode *at, jv fmt, const jargs *a) {
    jbuf b = {0};
    uint32_t autoidx = 0;
    for (uint32_t i = 0; i < fmt.n; i++) {
        char c = fmt.s[i];
        if (c == '}' ) {
            if (i + 1 < fmt.n && fmt.s[i + 1] == '}') { jbuf_putc(st, &b, '}'); i++; continue; }
            jfail(st, at, "format: single '}' encountered in format string");
        }
        if (c != '{') { jbuf_putc(st, &b, c); continue; }
        if (i + 1 < fmt.n && fmt.s[i + 1] == '{') { jbuf_putc(st, &b, '{'); i++; continue; }
        uint32_t e = i + 1;
        while (e < fmt.n && fmt.s[e] != '}') e++;
        if (e >= fmt.n) jfail(st, at, "format: single '{' encountered in format string");
        const char *f = fmt.s + i + 1;
        size_t fl = e - i - 1, nl = 0;
        while (nl < fl && f[nl] != '!' && f[nl] != ':') nl++;
        char conv = nl + 1 < fl && f[nl] == '!' ? f[nl + 1] : 's';
        const char *spec = memchr(f, ':', fl);
        if (spec && spec + 1 < f + fl) jfail(st, at, "format: format specs are not supported");
        jv v;
        if (nl == 0) {
            if (autoidx >= a->npos) jfail(st, at, "format: replacement index %u out of range", autoidx);
            v = a->pos[autoidx++];
        } else if (f[0] >= '0' && f[0] <= '9') {
            uint32_t idx = (uint32_t)atoi(f);
            if (idx >= a->npos) jfail(st, at, "format: replacement index %u out of range", idx);
            v = a->pos[idx];
        } else {
            bool found = false;
            for (uint32_t k = 0; k < a->nkw && !found; k++)
                if (strlen(a->kwnames[k]) == nl && !memcmp(a->kwnames[k], f, nl)) { v = a->kwvals[k]; found = true; }
            if (!found) jfail(st, at, "format: missing key '%.*s'", (int)nl, f);
        }
        if (conv == 'r') jv_repr_into(st, &b, v);
        else jv_str_into(st, &b, v);
        i = e;
    }
    return jbuf_str(st, &b);
}

/* ---- sorting (stable, like Python's sorted) ---- */

static jv lower_key(jstate *st, jv v, bool case_sensitive) {
    return !case_sensitive && v.t == JT_STR ? str_case(st, v, CASE_LOWER) : v;
}

static void stable_sort(jstate *st, const jnode *at, uint32_t *idx, const jv *keys, uint32_t n, bool reverse) {
    if (n < 2) return;
    uint32_t *tmp = jalloc(st, n * sizeof *tmp);
    for (uint32_t width = 1; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c = jv_cmp(st, at, keys[idx[i]], keys[idx[j]]);
                bool right_first = reverse ? c < 0 : c > 0;
                tmp[k++] = right_first ? idx[j++] : idx[i++];
            }
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

/* Attribute path "a.b.0" looked up with item semantics (make_attrgetter). */
static jv attr_path(jstate *st, const jnode *at, jv item, jv attr) {
    if (attr.t == JT_INT) return jgetitem(st, at, item, attr);
    want_str(st, at, attr, "attribute");
    size_t i = 0;
    while (i <= attr.n) {
        size_t e = i;
        while (e < attr.n && attr.s[e] != '.') e++;
        bool digits = e > i;
        for (size_t k = i; k < e; k++) digits &= attr.s[k] >= '0' && attr.s[k] <= '9';
        jv key = digits ? jv_int(strtoll(attr.s + i, NULL, 10)) : jv_strn(attr.s + i, e - i);
        item = jgetitem(st, at, item, key);
        i = e + 1;
    }
    return item;
}

static jv sorted_list(jstate *st, const jnode *at, jlist *items, const jv *keys, bool reverse) {
    uint32_t *idx = jalloc(st, (items->n + 1) * sizeof *idx);
    for (uint32_t i = 0; i < items->n; i++) idx[i] = i;
    stable_sort(st, at, idx, keys, items->n, reverse);
    jlist *l = jlist_new(st, items->n);
    for (uint32_t i = 0; i < items->n; i++) jlist_push(st, l, items->v[idx[i]]);
    return jv_list(l);
}

/* ---- filters ---- */

static jv f_length(jstate *st, const jnode *at, jv v) {
    switch (v.t) {
    case JT_UNDEF: return jv_int(0);
    case JT_STR: return jv_int((int64_t)ju8_len(v.s, v.n));
    case JT_LIST: if (!(v.flags & JF_GEN)) return jv_int(v.l->n); break;
    case JT_DICT: return jv_int(v.d->n);
    default: break;
    }
    jfail(st, at, "object of type '%s' has no len()", jv_type_name(v));
}

static jv f_indent(jstate *st, const jnode *at, jv s, const jargs *a) {
    jv width = arg(a, 0, "width", jv_int(4));
    bool first = jv_truthy(arg(a, 1, "first", jv_bool(false))), blank = jv_truthy(arg(a, 2, "blank", jv_bool(false)));
    jbuf ind = {0};
    if (width.t == JT_STR) jbuf_put(st, &ind, width.s, width.n);
    else {
        int64_t w = want_int(st, at, width, "indent");
        if (w > ZN_JINJA_MAX_OUTPUT) jfail(st, at, "indent: width too large");
        if (w > 0) jbuf_fill(st, &ind, ' ', (size_t)w);
    }
    if (s.t != JT_STR) jfail(st, at, "indent: expected a string, got %s", jv_type_name(s));
    jv text = s;
    /* s + "\n", then splitlines() (only \n here: other line breaks are rare in prompts) */
    jbuf b = {0};
    if (first) jbuf_put(st, &b, ind.p, ind.n);
    size_t i = 0;
    bool line0 = true;
    while (i < text.n) {
        const char *nl = memchr(text.s + i, '\n', text.n - i);
        size_t e = nl ? (size_t)(nl - text.s) : text.n;
        if (!line0) {
            jbuf_putc(st, &b, '\n');
            if (blank || e > i) jbuf_put(st, &b, ind.p, ind.n);
        }
        jbuf_put(st, &b, text.s + i, e - i);
        line0 = false;
        i = e + 1;
    }
    return jbuf_str(st, &b);
}

static jv f_tojson(jstate *st, const jnode *at, jv v, const jargs *a) {
    static const char *const kw[] = {"ensure_ascii", "indent", "separators", "sort_keys", NULL};
    check_args(st, at, "tojson", a, 4, kw);
    jjson_opts o = {0};
    o.ensure_ascii = jv_truthy(arg(a, 0, "ensure_ascii", jv_bool(false)));
    jv indent = arg(a, 1, "indent", jv_none()), seps = arg(a, 2, "separators", jv_none());
    o.sort_keys = jv_truthy(arg(a, 3, "sort_keys", jv_bool(false)));
    if (indent.t == JT_STR) {
        o.indent = jstr(st, indent.s, indent.n).s;
    } else if (indent.t != JT_NONE) {
        int64_t k = want_int(st, at, indent, "tojson indent");
        if (k < 0) k = 0;
        if (k > 64) jfail(st, at, "tojson: indent too large");
        char *p = jalloc(st, (size_t)k + 1);
        memset(p, ' ', (size_t)k);
        o.indent = p;
    }
    o.item_sep = o.indent ? "," : ", ";
    o.key_sep = ": ";
    if (seps.t == JT_LIST && seps.l->n == 2 && seps.l->v[0].t == JT_STR && seps.l->v[1].t == JT_STR) {
        o.item_sep = jstr(st, seps.l->v[0].s, seps.l->v[0].n).s;
        o.key_sep = jstr(st, seps.l->v[1].s, seps.l->v[1].n).s;
    } else if (seps.t != JT_NONE) {
        jfail(st, at, "tojson: separators must be a pair of strings");
    }
    jbuf b = {0};
    jv_json_into(st, at, &b, v, &o, 0);
    return jbuf_str(st, &b);
}

static jv f_int(jstate *st, const jnode *at, jv v, const jargs *a) {
    jv def = arg(a, 0, "default", jv_int(0));
    int64_t base = want_int(st, at, arg(a, 1, "base", jv_int(10)), "int base");
    switch (v.t) {
    case JT_INT: case JT_BOOL: return jv_int(v.i);
    case JT_FLOAT:
        if (!isfinite(v.f) || fabs(v.f) >= 9.2e18) return def;
        return jv_int((int64_t)v.f);
    case JT_UNDEF: jfail(st, at, "int: value is undefined");
    case JT_STR: {
        char buf[128];
        size_t b = 0, e = v.n, len;
        while (b < e && ju_isspace_at(v.s, v.n, b, &len)) b += len;
        while (e > b && (v.s[e - 1] == ' ' || v.s[e - 1] == '\t' || v.s[e - 1] == '\n' || v.s[e - 1] == '\r')) e--;
        size_t n = 0;
        for (size_t i = b; i < e && n < sizeof buf - 1; i++)
            if (v.s[i] != '_') buf[n++] = v.s[i];
        buf[n] = 0;
        if (n && e - b < sizeof buf) {
            char *end;
            errno = 0;
            long long r = strtoll(buf, &end, (int)base);
            if (!*end && !errno) return jv_int(r);
            double d = strtod(buf, &end);
            if (!*end && isfinite(d) && fabs(d) < 9.2e18 && !strpbrk(buf, "xXpP")) return jv_int((int64_t)d);
        }
        return def;
    }
    default: return def;
    }
}

static jv f_float(jstate *st, const jnode *at, jv v, const jargs *a) {
    jv def = arg(a, 0, "default", jv_float(0.0));
    if (is_num(v)) return jv_float(v.t == JT_FLOAT ? v.f : (double)v.i);
    if (v.t == JT_UNDEF) jfail(st, at, "float: value is undefined");
    if (v.t == JT_STR && v.n && v.n < 128) {
        char buf[128], *end;
        memcpy(buf, v.s, v.n);
        buf[v.n] = 0;
        double d = strtod(buf, &end);
        while (*end == ' ' || *end == '\t' || *end == '\n') end++;
        if (!*end && end != buf && !strpbrk(buf, "xXpP")) return jv_float(d);
    }
    return def;
}

static jv f_round(jstate *st, const jnode *at, jv v, const jargs *a) {
    int64_t prec = want_int(st, at, arg(a, 0, "precision", jv_int(0)), "round");
    jv method = arg(a, 1, "method", jcstr("common"));
    if (!is_num(v)) jfail(st, at, "round: expected a number, got %s", jv_type_name(v));
    want_str(st, at, method, "round method");
    double x = v.t == JT_FLOAT ? v.f : (double)v.i, scale = pow(10.0, (double)prec);
    if (method.n == 4 && !memcmp(method.s, "ceil", 4)) return jv_float(ceil(x * scale) / scale);
    if (method.n == 5 && !memcmp(method.s, "floor", 5)) return jv_float(floor(x * scale) / scale);
    if (!(method.n == 6 && !memcmp(method.s, "common", 6))) jfail(st, at, "round: method must be common, ceil or floor");
    if (v.t != JT_FLOAT && prec >= 0) return jv_int(v.i);
    if (prec >= 0 && prec < 300 && isfinite(x)) {
        /* printf rounds the exact binary value half-to-even, as Python's round does */
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
        return jv_float(strtod(buf, NULL));
    }
    return jv_float(nearbyint(x * scale) / scale);
}

static jv f_center(jstate *st, const jnode *at, jv s, const jargs *a) {
    int64_t width = want_int(st, at, arg(a, 0, "width", jv_int(80)), "center");
    int64_t len = (int64_t)ju8_len(s.s, s.n);
    if (width <= len) return s;
    if (width > ZN_JINJA_MAX_OUTPUT) jfail(st, at, "center: width too large");
    int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
    jbuf b = {0};
    jbuf_fill(st, &b, ' ', (size_t)left);
    jbuf_put(st, &b, s.s, s.n);
    jbuf_fill(st, &b, ' ', (size_t)(pad - left));
    return jbuf_str(st, &b);
}

/* select/reject/selectattr/rejectattr */
static jv f_select(jstate *st, const jnode *at, jv v, const jargs *a, bool want, bool by_attr) {
    jlist *out = jlist_new(st, 0);
    if (!jv_truthy(v)) return as_gen(jv_list(out));
    jlist *items = jiterate(st, at, v);
    uint32_t off = by_attr ? 1 : 0;
    jv attr = jv_undef(), test = jv_undef();
    if (by_attr && !arg_get(a, 0, NULL, &attr)) jfail(st, at, "missing parameter for attribute name");
    bool have_test = a->npos > off;
    if (have_test) test = want_str(st, at, a->pos[off], "select test");
    /* without a test there are no positional arguments left, and a->pos may be NULL (no pointer arithmetic on it) */
    jargs targs = {have_test ? a->pos + off + 1 : NULL, have_test ? a->npos - off - 1 : 0, a->kwnames, a->kwvals, a->nkw};
    for (uint32_t i = 0; i < items->n; i++) {
        jv x = by_attr ? attr_path(st, at, items->v[i], attr) : items->v[i];
        bool ok = have_test ? jbuiltin_test(st, at, test.s, x, &targs) : jv_truthy(x);
        if (ok == want) jlist_push(st, out, items->v[i]);
    }
    return as_gen(jv_list(out));
}

static jv f_map(jstate *st, const jnode *at, jv v, const jargs *a) {
    jlist *out = jlist_new(st, 0);
    if (!jv_truthy(v)) return as_gen(jv_list(out));
    jlist *items = jiterate(st, at, v);
    jv attr;
    if (a->npos == 0 && arg_get(a, 99, "attribute", &attr)) {
        jv def = arg(a, 99, "default", jv_none());
        for (uint32_t i = 0; i < items->n; i++) {
            jv x = attr_path(st, at, items->v[i], attr);
            if (x.t == JT_UNDEF && def.t != JT_NONE) x = def;
            jlist_push(st, out, x);
        }
        return as_gen(jv_list(out));
    }
    if (a->npos == 0) jfail(st, at, "map requires a filter argument");
    jv name = want_str(st, at, a->pos[0], "map filter");
    jargs fargs = {a->pos + 1, a->npos - 1, a->kwnames, a->kwvals, a->nkw};
    for (uint32_t i = 0; i < items->n; i++) jlist_push(st, out, jbuiltin_filter(st, at, name.s, items->v[i], &fargs));
    return as_gen(jv_list(out));
}

static jv f_unique_minmax(jstate *st, const jnode *at, jv v, const jargs *a, int which /* 0 unique, 1 min, 2 max */) {
    bool cs = jv_truthy(arg(a, 0, "case_sensitive", jv_bool(false)));
    jv attr = arg(a, 1, "attribute", jv_none());
    jlist *items = jiterate(st, at, v), *out = jlist_new(st, 0);
    jv *keys = jalloc(st, (items->n + 1) * sizeof(jv));
    for (uint32_t i = 0; i < items->n; i++)
        keys[i] = lower_key(st, attr.t == JT_NONE ? items->v[i] : attr_path(st, at, items->v[i], attr), cs);
    if (which == 0) {
        jlist *seen = jlist_new(st, 0);
        for (uint32_t i = 0; i < items->n; i++) {
            bool dup = false;
            for (uint32_t k = 0; k < seen->n && !dup; k++) dup = jv_equal(seen->v[k], keys[i]);
            if (dup) continue;
            jlist_push(st, seen, keys[i]);
            jlist_push(st, out, items->v[i]);
        }
        return as_gen(jv_list(out));
    }
    if (!items->n) return jv_undef();
    uint32_t best = 0;
    for (uint32_t i = 1; i < items->n; i++) {
        int c = jv_cmp(st, at, keys[i], keys[best]);
        if (which == 1 ? c < 0 : c > 0) best = i;
    }
    return items->v[best];
}

jv jbuiltin_filter(jstate *st, const jnode *at, const char *name, jv v, const jargs *a) {
    if (v.t == JT_STR) jcharge(st, at, v.n);
#define IS(x) (!strcmp(name, x))
    if (IS("tojson")) return f_tojson(st, at, v, a);
    if (IS("length") || IS("count")) return f_length(st, at, v);
    if (IS("trim")) return do_strip(st, at, jv_to_str(st, v), arg(a, 0, "chars", jv_none()), true, true);
    if (IS("string")) { jv r = jv_to_str(st, v); r.flags = v.t == JT_STR ? (v.flags & JF_SAFE) : 0; return r; }
    if (IS("default") || IS("d")) {
        jv def = arg(a, 0, "default_value", jcstr(""));
        bool boolean = jv_truthy(arg(a, 1, "boolean", jv_bool(false)));
        return v.t == JT_UNDEF || (boolean && !jv_truthy(v)) ? def : v;
    }
    if (IS("items")) {
        if (v.t == JT_UNDEF) return jv_list(jlist_new(st, 0));
        if (v.t != JT_DICT) jfail(st, at, "items: can only get item pairs from a mapping, not %s", jv_type_name(v));
        jlist *l = jlist_new(st, v.d->n);
        for (uint32_t i = 0; i < v.d->n; i++) jlist_push(st, l, mk_tuple2(st, v.d->k[i], v.d->v[i]));
        return as_gen(jv_list(l));
    }
    if (IS("join")) {
        jv sep = jv_to_str(st, arg(a, 0, "d", jcstr(""))), attr = arg(a, 1, "attribute", jv_none());
        jlist *items = jiterate(st, at, v);
        jbuf b = {0};
        for (uint32_t i = 0; i < items->n; i++) {
            if (i) jbuf_put(st, &b, sep.s, sep.n);
            jv_str_into(st, &b, attr.t == JT_NONE ? items->v[i] : attr_path(st, at, items->v[i], attr));
        }
        return jbuf_str(st, &b);
    }
    if (IS("first") || IS("last")) {
        if (v.t == JT_NONE) jfail(st, at, "%s: 'none' is not iterable", name);
        if (IS("last") && v.t == JT_LIST && (v.flags & JF_GEN)) jfail(st, at, "last: a generator is not reversible");
        jlist *items = jiterate(st, at, v);
        if (!items->n) return jv_undef();
        return items->v[IS("first") ? 0 : items->n - 1];
    }
    if (IS("list")) {
        jlist *items = jiterate(st, at, v), *l = jlist_new(st, items->n);
        for (uint32_t i = 0; i < items->n; i++) jlist_push(st, l, items->v[i]);
        return jv_list(l);
    }
    if (IS("upper") || IS("lower")) return str_case(st, jv_to_str(st, v), IS("upper") ? CASE_UPPER : CASE_LOWER);
    if (IS("capitalize")) return str_case(st, jv_to_str(st, v), CASE_CAPITALIZE);
    if (IS("title")) return str_case(st, jv_to_str(st, v), CASE_JTITLE);
    if (IS("replace")) {
        jv old = jv_to_str(st, arg(a, 0, "old", jv_undef())), nw = jv_to_str(st, arg(a, 1, "new", jv_undef()));
        jv cnt = arg(a, 2, "count", jv_none());
        return do_replace(st, jv_to_str(st, v), old, nw, cnt.t == JT_NONE ? -1 : want_int(st, at, cnt, "replace"));
    }
    if (IS("safe")) { jv r = jv_to_str(st, v); r.flags = JF_SAFE; return r; }
    if (IS("escape") || IS("e") || IS("forceescape")) {
        if (v.t == JT_STR && (v.flags & JF_SAFE) && !IS("forceescape")) return v;
        jv s = jv_to_str(st, v);
        jbuf b = {0};
        for (uint32_t i = 0; i < s.n; i++) {
            const char *r = s.s[i] == '&' ? "&amp;" : s.s[i] == '<' ? "&lt;" : s.s[i] == '>' ? "&gt;" :
                            s.s[i] == '"' ? "&#34;" : s.s[i] == '\'' ? "&#39;" : NULL;
            if (r) jbuf_put(st, &b, r, strlen(r)); else jbuf_putc(st, &b, s.s[i]);
        }
        jv r = jbuf_str(st, &b);
        r.flags = JF_SAFE;
        return r;
    }
    if (IS("indent")) return f_indent(st, at, v, a);
    if (IS("int")) return f_int(st, at, v, a);
    if (IS("float")) return f_float(st, at, v, a);
    if (IS("round")) return f_round(st, at, v, a);
    if (IS("abs")) {
        if (is_int(v)) { if (v.i == INT64_MIN) jfail(st, at, "integer overflow"); return jv_int(v.i < 0 ? -v.i : v.i); }
        if (v.t == JT_FLOAT) return jv_float(fabs(v.f));
        jfail(st, at, "abs: bad operand type '%s'", jv_type_name(v));
    }
    if (IS("center")) return f_center(st, at, jv_to_str(st, v), a);
    if (IS("format")) return printf_format(st, at, jv_to_str(st, v), a);
    if (IS("dictsort")) {
        bool cs = jv_truthy(arg(a, 0, "case_sensitive", jv_bool(false)));
        jv by = arg(a, 1, "by", jcstr("key"));
        bool rev = jv_truthy(arg(a, 2, "reverse", jv_bool(false)));
        if (v.t != JT_DICT) jfail(st, at, "dictsort: expected a mapping, got %s", jv_type_name(v));
        int pos = by.t == JT_STR && by.n == 5 && !memcmp(by.s, "value", 5) ? 1 : 0;
        if (!pos && !(by.t == JT_STR && by.n == 3 && !memcmp(by.s, "key", 3)))
            jfail(st, at, "dictsort: you can only sort by either \"key\" or \"value\"");
        jlist *pairs = jlist_new(st, v.d->n);
        jv *keys = jalloc(st, (v.d->n + 1) * sizeof(jv));
        for (uint32_t i = 0; i < v.d->n; i++) {
            jlist_push(st, pairs, mk_tuple2(st, v.d->k[i], v.d->v[i]));
            keys[i] = lower_key(st, pos ? v.d->v[i] : v.d->k[i], cs);
        }
        return sorted_list(st, at, pairs, keys, rev);
    }
    if (IS("sort")) {
        bool rev = jv_truthy(arg(a, 0, "reverse", jv_bool(false)));
        bool cs = jv_truthy(arg(a, 1, "case_sensitive", jv_bool(false)));
        jv attr = arg(a, 2, "attribute", jv_none());
        jlist *items = jiterate(st, at, v);
        jv *keys = jalloc(st, (items->n + 1) * sizeof(jv));
        for (uint32_t i = 0; i < items->n; i++)
            keys[i] = lower_key(st, attr.t == JT_NONE ? items->v[i] : attr_path(st, at, items->v[i], attr), cs);
        return sorted_list(st, at, items, keys, rev);
    }
    if (IS("unique")) return f_unique_minmax(st, at, v, a, 0);
    if (IS("min")) return f_unique_minmax(st, at, v, a, 1);
    if (IS("max")) return f_unique_minmax(st, at, v, a, 2);
    if (IS("reverse")) {
        if (v.t == JT_STR) {
            jbuf b = {0};
            for (size_t e = v.n; e > 0;) {
                size_t p = e - 1;
                while (p > 0 && ((unsigned char)v.s[p] & 0xC0) == 0x80) p--;
                jbuf_put(st, &b, v.s + p, e - p);
                e = p;
            }
            return jbuf_str(st, &b);
        }
        jlist *items = jiterate(st, at, v), *l = jlist_new(st, items->n);
        for (uint32_t i = items->n; i > 0; i--) jlist_push(st, l, items->v[i - 1]);
        return as_gen(jv_list(l));
    }
    if (IS("sum")) {
        jv attr = arg(a, 0, "attribute", jv_none()), acc = arg(a, 1, "start", jv_int(0));
        jlist *items = jiterate(st, at, v);
        for (uint32_t i = 0; i < items->n; i++) {
            jv x = attr.t == JT_NONE ? items->v[i] : attr_path(st, at, items->v[i], attr);
            if (!is_num(x) || !is_num(acc)) jfail(st, at, "sum: unsupported operand types");
            if (acc.t == JT_FLOAT || x.t == JT_FLOAT) acc = jv_float((acc.t == JT_FLOAT ? acc.f : (double)acc.i) + (x.t == JT_FLOAT ? x.f : (double)x.i));
            else if (__builtin_add_overflow(acc.i, x.i, &acc.i)) jfail(st, at, "sum: integer overflow");
            else acc.t = JT_INT;
        }
        return acc;
    }
    if (IS("map")) return f_map(st, at, v, a);
    if (IS("batch")) {
        int64_t size = want_int(st, at, arg(a, 0, "linecount", jv_undef()), "batch");
        jv fill = arg(a, 1, "fill_with", jv_none());
        if (size <= 0) jfail(st, at, "batch: size must be positive");
        jlist *items = jiterate(st, at, v), *out = jlist_new(st, 0), *cur = NULL;
        for (uint32_t i = 0; i < items->n; i++) {
            if (!cur || cur->n == (uint64_t)size) {
                cur = jlist_new(st, 0);
                jlist_push(st, out, jv_list(cur));
            }
            jlist_push(st, cur, items->v[i]);
        }
        while (cur && fill.t != JT_NONE && cur->n < (uint64_t)size) jlist_push(st, cur, fill);
        return as_gen(jv_list(out));
    }
    if (IS("select")) return f_select(st, at, v, a, true, false);
    if (IS("reject")) return f_select(st, at, v, a, false, false);
    if (IS("selectattr")) return f_select(st, at, v, a, true, true);
    if (IS("rejectattr")) return f_select(st, at, v, a, false, true);
    if (IS("attr")) {
        jv nm = want_str(st, at, arg(a, 0, "name", jv_undef()), "attr");
        if (v.t == JT_DICT && !jbuiltin_has_method(v, nm.s)) return jv_undef();
        return jgetattr(st, at, v, nm.s, nm.n);
    }
    if (IS("wordcount")) {
        jv s = jv_to_str(st, v);
        int64_t words = 0;
        bool in = false;
        for (uint32_t i = 0; i < s.n; i++) {
            bool w = is_alpha(s.s[i]) || (s.s[i] >= '0' && s.s[i] <= '9') || s.s[i] == '_' || (unsigned char)s.s[i] >= 0x80;
            if (w && !in) words++;
            in = w;
        }
        return jv_int(words);
    }
#undef IS
    jfail(st, at, "no filter named '%s'", name);
}

/* ---- tests ---- */

static const char *const test_names[] = {
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true", "false",
    "mapping", "iterable", "sequence", "callable", "equalto", "eq", "==", "ne", "!=", "lt", "<", "le", "<=",
    "gt", ">", "ge", ">=", "in", "odd", "even", "divisibleby", "lower", "upper", "sameas", "escaped",
    "filter", "test", NULL,
};

bool jbuiltin_has_test(const char *name) {
    for (const char *const *p = test_names; *p; p++)
        if (!strcmp(*p, name)) return true;
    return false;
}

/* str.isupper() / islower(): some cased character, none of the other case. */
static bool str_cased(jstate *st, jv v, bool upper) {
    jv s = jv_to_str(st, v);
    bool any = false;
    for (size_t i = 0; i < s.n;) {
        size_t adv;
        uint32_t c = utf8_decode_lenient(s.s + i, s.n - i, &adv);
        bool is_upper = cp_lower(c) != c, is_lower = cp_upper(c) != c;
        if ((upper && is_lower) || (!upper && is_upper)) return false;
        any |= is_upper || is_lower;
        i += adv;
    }
    return any;
}

bool jbuiltin_test(jstate *st, const jnode *at, const char *name, jv v, const jargs *a) {
    if (v.t == JT_STR) jcharge(st, at, v.n);
#define IS(x) (!strcmp(name, x))
    jv other = arg(a, 0, NULL, jv_undef());
    if (IS("defined")) return v.t != JT_UNDEF;
    if (IS("undefined")) return v.t == JT_UNDEF;
    if (IS("none")) return v.t == JT_NONE;
    if (IS("string")) return v.t == JT_STR;
    if (IS("number")) return is_num(v);
    if (IS("integer")) return v.t == JT_INT;
    if (IS("float")) return v.t == JT_FLOAT;
    if (IS("boolean")) return v.t == JT_BOOL;
    if (IS("true")) return v.t == JT_BOOL && v.i;
    if (IS("false")) return v.t == JT_BOOL && !v.i;
    if (IS("mapping")) return v.t == JT_DICT;
    if (IS("iterable")) return v.t == JT_UNDEF || v.t == JT_STR || v.t == JT_LIST || v.t == JT_DICT || v.t == JT_LOOP;
    if (IS("sequence")) return v.t == JT_UNDEF || v.t == JT_STR || (v.t == JT_LIST && !(v.flags & JF_LAZY)) || v.t == JT_DICT;
    if (IS("callable")) return v.t == JT_MACRO || v.t == JT_FUNC || v.t == JT_METHOD || v.t == JT_UNDEF;
    if (IS("escaped")) return v.t == JT_STR && (v.flags & JF_SAFE);
    if (IS("filter") || IS("test")) {
        if (v.t != JT_STR) return false;
        if (IS("test")) return jbuiltin_has_test(v.s);
        static const char *const filters[] = {"tojson", "length", "count", "trim", "string", "default", "d", "items",
            "join", "first", "last", "list", "upper", "lower", "capitalize", "title", "replace", "safe", "escape",
            "e", "forceescape", "indent", "int", "float", "round", "abs", "center", "format", "dictsort", "sort",
            "unique", "min", "max", "reverse", "sum", "map", "select", "reject", "selectattr", "rejectattr", "attr",
            "wordcount", "batch", NULL};
        for (const char *const *p = filters; *p; p++)
            if (!strcmp(*p, v.s)) return true;
        return false;
    }
    if (IS("equalto") || IS("eq") || IS("==")) return jv_equal(v, other);
    if (IS("ne") || IS("!=")) return !jv_equal(v, other);
    if (IS("lt") || IS("<")) return jv_cmp(st, at, v, other) < 0;
    if (IS("le") || IS("<=")) return jv_cmp(st, at, v, other) <= 0;
    if (IS("gt") || IS(">")) return jv_cmp(st, at, v, other) > 0;
    if (IS("ge") || IS(">=")) return jv_cmp(st, at, v, other) >= 0;
    if (IS("in")) {
        if (other.t == JT_STR) return v.t == JT_STR && (v.n == 0 || memmem(other.s, other.n, v.s, v.n));
        jlist *items = jiterate(st, at, other);
        for (uint32_t i = 0; i < items->n; i++)
            if (jv_equal(items->v[i], v)) return true;
        return false;
    }
    if (IS("odd") || IS("even") || IS("divisibleby")) {  /* value % n == (odd ? 1 : 0), Python's modulo */
        jv d = IS("divisibleby") ? other : jv_int(2);
        if (!is_num(v) || !is_num(d)) jfail(st, at, "%s: expected numbers, got %s", name, jv_type_name(is_num(v) ? d : v));
        if (is_int(v) && is_int(d)) {
            if (d.i == 0) jfail(st, at, "%s: division by zero", name);
            int64_t m = d.i == -1 ? 0 : v.i % d.i;
            if (m != 0 && ((m < 0) != (d.i < 0))) m += d.i;
            return m == (IS("odd") ? 1 : 0);
        }
        double x = v.t == JT_FLOAT ? v.f : (double)v.i, y = d.t == JT_FLOAT ? d.f : (double)d.i;
        if (y == 0) jfail(st, at, "%s: division by zero", name);
        double m = fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return m == (IS("odd") ? 1.0 : 0.0);
    }
    if (IS("lower")) return str_cased(st, v, false);
    if (IS("upper")) return str_cased(st, v, true);
    if (IS("sameas")) {
        if (v.t != other.t) return false;
        switch (v.t) {
        case JT_NONE: case JT_UNDEF: return v.t == JT_NONE;
        case JT_BOOL: return v.i == other.i;
        case JT_INT: return v.i == other.i && v.i >= -5 && v.i <= 256;  /* CPython's small-int cache */
        case JT_STR: return v.s == other.s && v.n == other.n;
        case JT_LIST: return v.l == other.l;
        case JT_DICT: case JT_NS: return v.d == other.d;
        default: return jv_equal(v, other);
        }
    }
#undef IS
    jfail(st, at, "no test named '%s'", name);
}

/* ---- methods ---- */

static const char *const str_methods[] = {
    "startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "replace", "upper", "lower",
    "title", "capitalize", "format", "find", "rfind", "count", "join", "isdigit", "isalpha", "isalnum",
    "isspace", "isupper", "islower", "splitlines", NULL,
};
static const char *const dict_methods[] = {"items", "keys", "values", "get", NULL};
static const char *const dict_unsafe[] = {"pop", "popitem", "update", "setdefault", "clear", NULL};
static const char *const list_methods[] = {"index", "count", NULL};
static const char *const list_unsafe[] = {"append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear", NULL};

static bool in_set(const char *const *set, const char *name) {
    for (; *set; set++)
        if (!strcmp(*set, name)) return true;
    return false;
}

bool jbuiltin_has_method(jv self, const char *name) {
    switch (self.t) {
    case JT_STR: return in_set(str_methods, name);
    case JT_DICT: return in_set(dict_methods, name) || in_set(dict_unsafe, name);
    case JT_LIST: return in_set(list_methods, name) || in_set(list_unsafe, name);
    default: return false;
    }
}

static bool affix_match(jv s, jv affix, bool end) {
    if (affix.n > s.n) return false;
    return !memcmp(s.s + (end ? s.n - affix.n : 0), affix.s, affix.n);
}

static jv str_method(jstate *st, const jnode *at, jv s, const char *name, const jargs *a) {
#define IS(x) (!strcmp(name, x))
    if (IS("startswith") || IS("endswith")) {
        jv x = arg(a, 0, NULL, jv_undef());
        if (a->npos > 1) jfail(st, at, "%s: start/end arguments are not supported", name);
        if (x.t == JT_LIST && (x.flags & JF_TUPLE)) {
            for (uint32_t i = 0; i < x.l->n; i++)
                if (affix_match(s, want_str(st, at, x.l->v[i], name), IS("endswith"))) return jv_bool(true);
            return jv_bool(false);
        }
        return jv_bool(affix_match(s, want_str(st, at, x, name), IS("endswith")));
    }
    if (IS("split") || IS("rsplit")) {
        jv sep = arg(a, 0, "sep", jv_none());
        int64_t maxsplit = want_int(st, at, arg(a, 1, "maxsplit", jv_int(-1)), name);
        return do_split(st, at, s, sep, maxsplit, IS("rsplit"));
    }
    if (IS("strip") || IS("lstrip") || IS("rstrip"))
        return do_strip(st, at, s, arg(a, 0, NULL, jv_none()), !IS("rstrip"), !IS("lstrip"));
    if (IS("replace")) {
        jv old = want_str(st, at, arg(a, 0, NULL, jv_undef()), name), nw = want_str(st, at, arg(a, 1, NULL, jv_undef()), name);
        return do_replace(st, s, old, nw, want_int(st, at, arg(a, 2, "count", jv_int(-1)), name));
    }
    if (IS("upper") || IS("lower")) return str_case(st, s, IS("upper") ? CASE_UPPER : CASE_LOWER);
    if (IS("capitalize")) return str_case(st, s, CASE_CAPITALIZE);
    if (IS("title")) return str_case(st, s, CASE_TITLE);
    if (IS("format")) return str_format(st, at, s, a);
    if (IS("find") || IS("rfind") || IS("count")) {
        jv sub = want_str(st, at, arg(a, 0, NULL, jv_undef()), name);
        if (IS("count")) {
            if (!sub.n) return jv_int((int64_t)ju8_len(s.s, s.n) + 1);
            int64_t k = 0;
            for (const char *p = s.s, *end = s.s + s.n; (p = memmem(p, (size_t)(end - p), sub.s, sub.n)); p += sub.n) k++;
            return jv_int(k);
        }
        int64_t found = -1;
        if (IS("find")) {
            const char *hit = memmem(s.s, s.n, sub.s, sub.n);
            if (hit) found = hit - s.s;
        } else {
            jv rs = bytes_reversed(st, s), rsub = bytes_reversed(st, sub);
            const char *hit = memmem(rs.s, rs.n, rsub.s, rsub.n);
            if (hit) found = (int64_t)s.n - (hit - rs.s) - (int64_t)sub.n;
        }
        return jv_int(found < 0 ? -1 : (int64_t)ju8_len(s.s, (size_t)found));
    }
    if (IS("join")) {
        jlist *items = jiterate(st, at, arg(a, 0, NULL, jv_undef()));
        jbuf b = {0};
        for (uint32_t i = 0; i < items->n; i++) {
            if (i) jbuf_put(st, &b, s.s, s.n);
            jv x = want_str(st, at, items->v[i], "join");
            jbuf_put(st, &b, x.s, x.n);
        }
        return jbuf_str(st, &b);
    }
    if (IS("isdigit") || IS("isalpha") || IS("isalnum") || IS("isspace")) {
        if (!s.n) return jv_bool(false);
        for (uint32_t i = 0; i < s.n; i++) {
            char c = s.s[i];
            bool d = c >= '0' && c <= '9', al = is_alpha(c), sp = c == ' ' || (c >= 9 && c <= 13);
            bool ok = IS("isdigit") ? d : IS("isalpha") ? al : IS("isalnum") ? d || al : sp;
            if (!ok) return jv_bool(false);
        }
        return jv_bool(true);
    }
    if (IS("isupper") || IS("islower")) return jv_bool(str_cased(st, s, IS("isupper")));
    if (IS("splitlines")) {
        jlist *l = jlist_new(st, 0);
        size_t i = 0, b = 0;
        while (i < s.n) {
            char c = s.s[i];
            if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
                jlist_push(st, l, jv_strn(s.s + b, i - b));
                i += (c == '\r' && i + 1 < s.n && s.s[i + 1] == '\n') ? 2 : 1;
                b = i;
            } else {
                i++;
            }
        }
        if (b < s.n) jlist_push(st, l, jv_strn(s.s + b, s.n - b));
        return jv_list(l);
    }
#undef IS
    jfail(st, at, "str has no method '%s'", name);
}

jv jbuiltin_method(jstate *st, const jnode *at, jv self, const char *name, const jargs *a) {
    if (self.t == JT_STR) jcharge(st, at, self.n);
    if (self.t == JT_STR) return str_method(st, at, self, name, a);
    if (self.t == JT_DICT) {
        if (in_set(dict_unsafe, name)) jfail(st, at, "dict.%s() is not allowed: the template sandbox is immutable", name);
        if (!strcmp(name, "get")) {
            jv r, def = arg(a, 1, "default", jv_none());
            return jdict_get(self.d, arg(a, 0, NULL, jv_undef()), &r) ? r : def;
        }
        jlist *l = jlist_new(st, self.d->n);
        for (uint32_t i = 0; i < self.d->n; i++)
            jlist_push(st, l, !strcmp(name, "keys") ? self.d->k[i] : !strcmp(name, "values") ? self.d->v[i]
                                                                                               : mk_tuple2(st, self.d->k[i], self.d->v[i]));
        jv r = jv_list(l);
        r.flags = !strcmp(name, "keys") ? JF_KEYS : !strcmp(name, "values") ? JF_VALUES : JF_ITEMS;
        return r;
    }
    if (self.t == JT_LIST) {
        if (in_set(list_unsafe, name)) jfail(st, at, "list.%s() is not allowed: the template sandbox is immutable", name);
        jv x = arg(a, 0, NULL, jv_undef());
        int64_t k = 0;
        for (uint32_t i = 0; i < self.l->n; i++) {
            if (!jv_equal(self.l->v[i], x)) continue;
            if (!strcmp(name, "index")) return jv_int(i);
            k++;
        }
        if (!strcmp(name, "index")) jfail(st, at, "list.index(x): x not in list");
        return jv_int(k);
    }
    if (self.t == JT_LOOP && !strcmp(name, "cycle")) {
        if (!a->npos) jfail(st, at, "no items for cycling given");
        return a->pos[self.lp->i % a->npos];
    }
    jfail(st, at, "'%s' object has no method '%s'", jv_type_name(self), name);
}

/* ---- globals ---- */

static const char *const global_names[] = {"raise_exception", "range", "namespace", "strftime_now", "dict", NULL};

int jbuiltin_global(const char *name, size_t n) {
    for (int i = 0; global_names[i]; i++)
        if (strlen(global_names[i]) == n && !memcmp(global_names[i], name, n)) return i;
    return -1;
}

jv jbuiltin_call(jstate *st, const jnode *at, int id, const jargs *a) {
    switch (id) {
    case 1: {  /* range */
        if (a->nkw || a->npos < 1 || a->npos > 3) jfail(st, at, "range expects 1 to 3 integer arguments");
        int64_t start = 0, stop, step = 1;
        if (a->npos == 1) stop = want_int(st, at, a->pos[0], "range");
        else {
            start = want_int(st, at, a->pos[0], "range");
            stop = want_int(st, at, a->pos[1], "range");
            if (a->npos == 3) step = want_int(st, at, a->pos[2], "range");
        }
        if (step == 0) jfail(st, at, "range() arg 3 must not be zero");
        /* the exact count in unsigned arithmetic: no double rounding, and no
         * i += step that could overflow past stop and bypass the limit */
        uint64_t span = step > 0 ? (stop > start ? (uint64_t)stop - (uint64_t)start : 0)
                                 : (start > stop ? (uint64_t)start - (uint64_t)stop : 0);
        uint64_t mag = step > 0 ? (uint64_t)step : (uint64_t)0 - (uint64_t)step, count = span ? (span - 1) / mag + 1 : 0;
        if (count > ZN_JINJA_MAX_RANGE) jfail(st, at, "range too big: the sandbox allows at most %d items", ZN_JINJA_MAX_RANGE);
        jlist *l = jlist_new(st, (uint32_t)count);
        for (uint64_t k = 0; k < count; k++)
            jlist_push(st, l, jv_int((int64_t)(step > 0 ? (uint64_t)start + k * mag : (uint64_t)start - k * mag)));
        return jv_list(l);
    }
    case 2: case 4: {  /* namespace(...), dict(...) */
        jdict *d = jdict_new(st, 0);
        if (a->npos > 1) jfail(st, at, "%s expects at most one positional argument", global_names[id]);
        if (a->npos == 1) {
            jv init = a->pos[0];
            if (init.t == JT_DICT) {
                for (uint32_t i = 0; i < init.d->n; i++) jdict_set(st, d, init.d->k[i], init.d->v[i]);
            } else {
                jlist *items = jiterate(st, at, init);
                for (uint32_t i = 0; i < items->n; i++) {
                    jv p = items->v[i];
                    if (p.t != JT_LIST || p.l->n != 2) jfail(st, at, "%s: sequence items must be pairs", global_names[id]);
                    jdict_set(st, d, p.l->v[0], p.l->v[1]);
                }
            }
        }
        for (uint32_t k = 0; k < a->nkw; k++) jdict_set(st, d, jcstr(a->kwnames[k]), a->kwvals[k]);
        jv r = jv_dict(d);
        if (id == 2) r.t = JT_NS;
        return r;
    }
    case 3: {  /* strftime_now(format) */
        jv fmt = want_str(st, at, arg(a, 0, "format", jv_undef()), "strftime_now");
        char f[256], buf[512];
        if (fmt.n >= sizeof f) jfail(st, at, "strftime_now: format too long");
        memcpy(f, fmt.s, fmt.n);
        f[fmt.n] = 0;
        size_t k = strftime(buf, sizeof buf, f, &st->now);
        return jstr(st, buf, k);
    }
    default: jfail(st, at, "internal error: unknown builtin %d", id);
    }
}
