/* Streaming tool-call parsers (see toolcall.h). Everything goes through
 * one byte at a time, so where the text was cut between pushes cannot
 * change what comes out; tags that may still be completing are held in a
 * zn_delim, and what one push produces is gathered per channel. */
#include "toolcall.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- formats and tool sets ---- */

int toolcall_format_of(const char *tmpl) {
    if (!tmpl) return ZN_TOOLFMT_HERMES;
    if (strstr(tmpl, "<function=")) return ZN_TOOLFMT_XML;
    if (strstr(tmpl, "<tool_call>")) return ZN_TOOLFMT_HERMES;
    if (strstr(tmpl, "<|python_tag|>") || strstr(tmpl, "\"parameters\": dictionary of argument name"))
        return ZN_TOOLFMT_LLAMA3;
    return ZN_TOOLFMT_HERMES;
}

const char *toolcall_format_name(int fmt) {
    return fmt == ZN_TOOLFMT_XML ? "qwen3.5-xml" : fmt == ZN_TOOLFMT_LLAMA3 ? "llama3-json" : "hermes-json";
}

static int param_type(json_t *prop) {
    json_t *t = json_is_object(prop) ? json_object_get(prop, "type") : NULL;
    if (json_is_string(t)) return strcmp(json_string_value(t), "string") ? ZN_PARAM_JSON : ZN_PARAM_STRING;
    if (json_is_array(t)) {
        bool str = false, other = false;
        for (size_t i = 0; i < json_array_size(t); i++) {
            const char *s = json_string_value(json_array_get(t, i));
            if (s && !strcmp(s, "string")) str = true;
            else other = true;
        }
        return str && !other ? ZN_PARAM_STRING : !str && other ? ZN_PARAM_JSON : ZN_PARAM_UNKNOWN;
    }
    json_t *e = json_is_object(prop) ? json_object_get(prop, "enum") : NULL;
    if (json_is_array(e) && json_array_size(e)) {
        for (size_t i = 0; i < json_array_size(e); i++)
            if (!json_is_string(json_array_get(e, i))) return ZN_PARAM_UNKNOWN;
        return ZN_PARAM_STRING;
    }
    return ZN_PARAM_UNKNOWN;
}

zn_status toolset_parse(zn_toolset *ts, const char *tools_json, size_t len, zn_err *err) {
    memset(ts, 0, sizeof *ts);
    json_error_t je;
    json_t *arr = json_loadb(tools_json, len, 0, &je);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return zn_errf(err, ZN_ERR_ARG, "tools: not a JSON array");
    }
    size_t n = json_array_size(arr);
    ts->t = calloc(n ? n : 1, sizeof *ts->t);
    zn_status st = ts->t ? ZN_OK : zn_errf(err, ZN_ERR_NOMEM, "tools: out of memory");
    for (size_t i = 0; !st && i < n; i++) {
        json_t *o = json_array_get(arr, i);
        json_t *fn = json_object_get(o, "function");
        if (!json_is_object(fn)) fn = o;
        json_t *name = json_object_get(fn, "name");
        if (!json_is_string(name)) {
            st = zn_errf(err, ZN_ERR_ARG, "tools[%zu]: no function name", i);
            break;
        }
        json_t *params = json_object_get(fn, "parameters");
        zn_tool_def *d = &ts->t[ts->n++];
        d->name = strdup(json_string_value(name));
        d->params_json = json_is_object(params) ? json_dumps(params, JSON_COMPACT) : strdup("{}");
        json_t *props = json_is_object(params) ? json_object_get(params, "properties") : NULL;
        size_t np = json_is_object(props) ? json_object_size(props) : 0;
        d->param = calloc(np ? np : 1, sizeof *d->param);
        d->ptype = calloc(np ? np : 1, 1);
        if (!d->name || !d->params_json || !d->param || !d->ptype) {
            st = zn_errf(err, ZN_ERR_NOMEM, "tools: out of memory");
            break;
        }
        const char *key;
        json_t *v;
        json_object_foreach(props, key, v) {
            if (!(d->param[d->n_params] = strdup(key))) {
                st = zn_errf(err, ZN_ERR_NOMEM, "tools: out of memory");
                break;
            }
            d->ptype[d->n_params++] = (unsigned char)param_type(v);
        }
    }
    json_decref(arr);
    if (st) toolset_free(ts);
    return st;
}

void toolset_free(zn_toolset *ts) {
    for (int i = 0; ts->t && i < ts->n; i++) {
        zn_tool_def *d = &ts->t[i];
        for (int k = 0; k < d->n_params; k++) free(d->param[k]);
        free(d->param);
        free(d->ptype);
        free(d->name);
        free(d->params_json);
    }
    free(ts->t);
    memset(ts, 0, sizeof *ts);
}

int toolset_find(const zn_toolset *ts, const char *name, size_t n) {
    for (int i = 0; ts && i < ts->n; i++)
        if (strlen(ts->t[i].name) == n && !memcmp(ts->t[i].name, name, n)) return i;
    return -1;
}

/* ---- delimiters ---- */

static void delim_set(zn_delim *d, const char *const *list, int n) {
    d->d = list;
    d->n = n;
    d->n_held = 0;
}

/* Feeds c: returns the delimiter it completed (the match is consumed), or
 * -1; bytes that can no longer start a match go to rel (*n_rel of them,
 * at most sizeof held). */
static int delim_push(zn_delim *d, char c, char *rel, size_t *n_rel) {
    *n_rel = 0;
    d->held[d->n_held++] = c;
    for (;;) {
        bool prefix = false;
        for (int i = 0; i < d->n; i++) {
            size_t L = strlen(d->d[i]);
            if (d->n_held <= L && !memcmp(d->held, d->d[i], d->n_held)) {
                if (d->n_held == L) {
                    d->n_held = 0;
                    return i;
                }
                prefix = true;
            }
        }
        if (prefix || d->n_held == 0) return -1;
        rel[(*n_rel)++] = d->held[0];
        memmove(d->held, d->held + 1, --d->n_held);
    }
}

/* ---- output ---- */

enum { M_CONTENT, M_OPEN, M_JSON, M_XML, M_CLOSE, M_BETWEEN };
enum { J_KEY_OR_END, J_KEY, J_COLON, J_VAL, J_NAME, J_ARGS, J_SKIP, J_AFTER };
enum { X_NAME, X_BODY, X_TAG, X_PNAME, X_VALUE };
enum { K_OTHER, K_NAME, K_ARGS };

static const char *const OPENERS[] = {"<tool_call>", "<function="};
static const char *const CLOSE_CALL[] = {"</tool_call>"};
static const char *const VALUE_END[] = {"</parameter>", "</function>"};

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static void flush_run(zn_toolparse *p) {
    if (p->n_run && !p->failed && !p->sink(p->sink_ctx, p->run_ch, p->run, p->n_run)) p->failed = true;
    p->n_run = 0;
}

static void out(zn_toolparse *p, int ch, const char *s, size_t n) {
    if (!n || p->failed) return;
    if (p->n_run && ch != p->run_ch) flush_run(p);
    p->run_ch = ch;
    while (n) {
        size_t k = sizeof p->run - p->n_run < n ? sizeof p->run - p->n_run : n;
        memcpy(p->run + p->n_run, s, k);
        p->n_run += k;
        s += k;
        n -= k;
        if (p->n_run == sizeof p->run) flush_run(p);
    }
}

/* A JSON string's inside, escaped. */
static void out_escaped(zn_toolparse *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        size_t k = 2;
        e[0] = '\\';
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        default:
            if (c < 0x20) {
                static const char hex[] = "0123456789abcdef";
                memcpy(e, "\\u00", 4);
                e[4] = hex[c >> 4];
                e[5] = hex[c & 15];
                k = 6;
            } else {
                e[0] = (char)c;
                k = 1;
            }
        }
        out(p, ZN_CH_TOOL_ARGS, e, k);
    }
}

static void release_ws(zn_toolparse *p) {
    out(p, ZN_CH_CONTENT, p->ws, p->n_ws);
    p->n_ws = 0;
}

/* A byte of content, after the tag search: whitespace waits (a call may follow). */
static void content_emit(zn_toolparse *p, char c) {
    if (is_ws(c) && p->n_ws < sizeof p->ws) {
        p->ws[p->n_ws++] = c;
        return;
    }
    release_ws(p);
    out(p, ZN_CH_CONTENT, &c, 1);
}

static void feed(zn_toolparse *p, char c);

static void to_content(zn_toolparse *p) {
    p->mode = M_CONTENT;
    delim_set(&p->dl, OPENERS, 2);
}

/* The call was not one: its text is content, the byte that showed it is fed again. */
static void abort_call(zn_toolparse *p, bool refeed, char c) {
    release_ws(p);
    out(p, ZN_CH_CONTENT, p->raw, p->n_raw);
    p->n_raw = 0;
    to_content(p);
    if (p->fmt == ZN_TOOLFMT_LLAMA3) p->llama_start = false;
    if (refeed) feed(p, c);
}

static bool raw_add(zn_toolparse *p, char c) {
    if (p->committed) return true;
    if (p->n_raw == ZN_SRV_TOOL_HOLD) return false;
    p->raw[p->n_raw++] = c;
    return true;
}

static void begin_call(zn_toolparse *p, bool tagged) {
    p->committed = false;
    p->n_raw = 0;
    p->n_name = p->n_hold = 0;
    p->name_done = p->args_done = p->args_str = p->hold_over = false;
    p->n_xparams = 0;
    p->tagged = tagged;
}

static void commit(zn_toolparse *p) {
    p->n_ws = 0;  /* whitespace before a call is not content */
    flush_run(p);
    out(p, ZN_CH_TOOL_NAME, p->name, p->n_name);
    flush_run(p);
    p->committed = true;
    p->n_raw = 0;
    p->n_calls++;
}

static void call_done(zn_toolparse *p) {
    p->n_done++;
    p->mode = p->tagged ? M_CLOSE : p->fmt == ZN_TOOLFMT_LLAMA3 ? M_BETWEEN : M_CONTENT;
    if (p->mode == M_CLOSE) delim_set(&p->dl, CLOSE_CALL, 1);
    if (p->mode == M_CONTENT) to_content(p);
}

/* ---- the JSON form ---- */

/* Scans a JSON value: 0 continues, 1 ends with c, 2 ended before c. */
static int scan(zn_toolparse *p, char c) {
    if (p->in_str) {
        if (p->esc) p->esc = false;
        else if (c == '\\') p->esc = true;
        else if (c == '"') {
            p->in_str = false;
            if (p->depth == 0) return 1;
        }
        return 0;
    }
    if (p->scalar) return is_ws(c) || c == ',' || c == '}' || c == ']' ? 2 : 0;
    switch (c) {
    case '"': p->in_str = true; return 0;
    case '{': case '[': p->depth++; return 0;
    case '}': case ']':
        if (p->depth == 0) return 2;
        return --p->depth == 0 ? 1 : 0;
    default:
        if (p->depth == 0 && !is_ws(c)) p->scalar = true;
        return 0;
    }
}

static void scan_start(zn_toolparse *p) {
    p->depth = 0;
    p->in_str = p->esc = p->scalar = false;
}

static void args_out(zn_toolparse *p, const char *s, size_t n) {
    if (p->committed) {
        out(p, ZN_CH_TOOL_ARGS, s, n);
        return;
    }
    if (p->n_hold + n > ZN_SRV_TOOL_HOLD) {
        p->hold_over = true;
        return;
    }
    memcpy(p->hold + p->n_hold, s, n);
    p->n_hold += n;
}

/* Arguments given as a JSON string (the held literal): its decoded text. */
static void args_string_out(zn_toolparse *p) {
    json_t *s = json_loadb(p->hold, p->n_hold, JSON_DECODE_ANY, NULL);
    if (json_is_string(s)) out(p, ZN_CH_TOOL_ARGS, json_string_value(s), json_string_length(s));
    else out(p, ZN_CH_TOOL_ARGS, "{}", 2);
    json_decref(s);
    p->n_hold = 0;
}

static void name_complete(zn_toolparse *p) {
    p->name_done = true;
    if (p->committed) return;
    commit(p);
    if (p->args_done) {
        if (p->args_str) args_string_out(p);
        else out(p, ZN_CH_TOOL_ARGS, p->hold, p->n_hold);
        p->n_hold = 0;
    }
}

static void json_done(zn_toolparse *p, char c) {
    if (!p->committed) {
        abort_call(p, false, c);
        return;
    }
    if (!p->args_done) out(p, ZN_CH_TOOL_ARGS, "{}", 2);
    call_done(p);
}

static void json_step(zn_toolparse *p, char c);

/* A byte of a value (arguments, or one skipped). */
static void json_value(zn_toolparse *p, char c) {
    int r = scan(p, c);
    if (p->jstate == J_SKIP) {
        if (r) p->jstate = J_AFTER;
        if (r == 2) json_step(p, c);
        return;
    }
    if (r == 2) {
        p->args_done = true;
        p->jstate = J_AFTER;
        json_step(p, c);
        return;
    }
    if (p->args_str) {
        if (p->n_hold < ZN_SRV_TOOL_HOLD) p->hold[p->n_hold++] = c;
        else p->hold_over = true;
    } else {
        args_out(p, &c, 1);
    }
    if (p->hold_over && !p->committed) {
        abort_call(p, false, c);
        return;
    }
    if (r == 1) {
        p->args_done = true;
        p->jstate = J_AFTER;
        if (p->args_str && p->committed) args_string_out(p);
    }
}

/* Not a call after all, or (committed) a malformed end: the call ends here. */
static void json_bad(zn_toolparse *p, char c) {
    if (p->committed) json_done(p, c);
    else abort_call(p, false, c);
}

static void json_step(zn_toolparse *p, char c) {
    switch (p->jstate) {
    case J_KEY_OR_END:
        if (is_ws(c) || c == ',') return;
        if (c == '"') {
            p->jstate = J_KEY;
            p->n_key = 0;
            p->esc = false;
        } else if (c == '}') {
            json_done(p, c);
        } else {
            json_bad(p, c);
        }
        return;
    case J_KEY:
        if (p->esc) {
            p->esc = false;
        } else if (c == '\\') {
            p->esc = true;
            return;
        } else if (c == '"') {
            bool fit = p->n_key < sizeof p->key;
            p->key[fit ? p->n_key : sizeof p->key - 1] = 0;
            p->key_kind = !fit ? K_OTHER : !strcmp(p->key, "name") ? K_NAME
                        : !strcmp(p->key, "arguments") || !strcmp(p->key, "parameters") ? K_ARGS : K_OTHER;
            if (p->key_kind == K_NAME && p->name_done) p->key_kind = K_OTHER;
            if (p->key_kind == K_ARGS && p->args_done) p->key_kind = K_OTHER;
            p->jstate = J_COLON;
            return;
        }
        if (p->n_key < sizeof p->key) p->key[p->n_key] = c;
        p->n_key++;
        return;
    case J_COLON:
        if (c == ':') p->jstate = J_VAL;
        else if (!is_ws(c)) json_bad(p, c);
        return;
    case J_VAL:
        if (is_ws(c)) return;
        scan_start(p);
        if (p->key_kind == K_NAME && c == '"') {
            p->jstate = J_NAME;
            p->n_name = 0;
            p->esc = false;
            return;
        }
        if (p->key_kind == K_ARGS) {
            p->jstate = J_ARGS;
            p->args_str = c == '"';
            p->n_hold = 0;
        } else {
            p->jstate = J_SKIP;
        }
        json_value(p, c);
        return;
    case J_NAME:
        if (p->esc) {
            p->esc = false;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else if (c == '\\') {
            p->esc = true;
            return;
        } else if (c == '"') {
            p->jstate = J_AFTER;
            if (p->fmt == ZN_TOOLFMT_LLAMA3 && !p->tagged && toolset_find(p->tools, p->name, p->n_name) < 0) {
                abort_call(p, false, c);
                return;
            }
            name_complete(p);
            return;
        }
        if (p->n_name == ZN_SRV_TOOL_NAME_MAX) {
            abort_call(p, false, c);
            return;
        }
        p->name[p->n_name++] = c;
        return;
    case J_ARGS:
    case J_SKIP:
        json_value(p, c);
        return;
    case J_AFTER:
        if (is_ws(c)) return;
        if (c == ',') p->jstate = J_KEY_OR_END;
        else if (c == '}') json_done(p, c);
        else if (p->committed) {
            json_done(p, c);
            feed(p, c);
        } else abort_call(p, false, c);
        return;
    }
}

static void json_byte(zn_toolparse *p, char c) {
    if (!raw_add(p, c)) {
        abort_call(p, true, c);
        return;
    }
    json_step(p, c);
}

/* ---- the XML form ---- */

static void value_emit(zn_toolparse *p, char c) {
    if (p->ptype == ZN_PARAM_STRING) {
        out_escaped(p, &c, 1);
        return;
    }
    if (p->n_hold < ZN_SRV_TOOL_HOLD) {
        p->hold[p->n_hold++] = c;
        return;
    }
    /* too long to hold: a string after all */
    p->ptype = ZN_PARAM_STRING;
    out(p, ZN_CH_TOOL_ARGS, "\"", 1);
    out_escaped(p, p->hold, p->n_hold);
    p->n_hold = 0;
    out_escaped(p, &c, 1);
}

static void value_byte(zn_toolparse *p, char c) {
    if (p->xfirst) {
        p->xfirst = false;
        if (c == '\n') return;
    }
    if (p->xnl) {
        p->xnl = false;
        value_emit(p, '\n');
    }
    if (c == '\n') {
        p->xnl = true;
        return;
    }
    value_emit(p, c);
}

static void value_end(zn_toolparse *p) {
    p->xnl = false;
    if (p->ptype == ZN_PARAM_STRING) {
        out(p, ZN_CH_TOOL_ARGS, "\"", 1);
    } else {
        size_t b = 0, e = p->n_hold;
        while (b < e && is_ws(p->hold[b])) b++;
        while (e > b && is_ws(p->hold[e - 1])) e--;
        json_t *v = e > b ? json_loadb(p->hold + b, e - b, JSON_DECODE_ANY, NULL) : NULL;
        if (v) {
            out(p, ZN_CH_TOOL_ARGS, p->hold + b, e - b);
        } else {
            out(p, ZN_CH_TOOL_ARGS, "\"", 1);
            out_escaped(p, p->hold, p->n_hold);
            out(p, ZN_CH_TOOL_ARGS, "\"", 1);
        }
        json_decref(v);
    }
    p->n_hold = 0;
    p->n_xparams++;
}

static void func_done(zn_toolparse *p) {
    out(p, ZN_CH_TOOL_ARGS, p->n_xparams ? "}" : "{}", p->n_xparams ? 1 : 2);
    call_done(p);
}

static const char PARAM_OPEN[] = "<parameter=", FUNC_CLOSE[] = "</function>", CALL_CLOSE[] = "</tool_call>";

static bool tag_prefix(const zn_toolparse *p, const char *t) {
    return p->n_tag <= strlen(t) && !memcmp(p->tag, t, p->n_tag);
}

static void xml_byte(zn_toolparse *p, char c) {
    switch (p->xstate) {
    case X_NAME:
        if (c == '>' && p->n_name > 0) {
            commit(p);
            p->xstate = X_BODY;
            return;
        }
        if (c == '\n' || c == '<' || c == '>' || p->n_name == ZN_SRV_TOOL_NAME_MAX || !raw_add(p, c)) {
            abort_call(p, true, c);
            return;
        }
        p->name[p->n_name++] = c;
        return;
    case X_BODY:
        if (c == '<') {
            p->xstate = X_TAG;
            p->tag[0] = c;
            p->n_tag = 1;
        }
        return;  /* anything else between parameters is markup noise */
    case X_TAG:
        p->tag[p->n_tag++] = c;
        if (p->n_tag == sizeof PARAM_OPEN - 1 && !memcmp(p->tag, PARAM_OPEN, p->n_tag)) {
            p->xstate = X_PNAME;
            p->n_tag = 0;
        } else if (p->n_tag == sizeof FUNC_CLOSE - 1 && !memcmp(p->tag, FUNC_CLOSE, p->n_tag)) {
            func_done(p);
        } else if (p->n_tag == sizeof CALL_CLOSE - 1 && !memcmp(p->tag, CALL_CLOSE, p->n_tag)) {
            bool tagged = p->tagged;
            p->tagged = false;  /* the close is consumed here */
            func_done(p);
            p->tagged = tagged;
        } else if (!tag_prefix(p, PARAM_OPEN) && !tag_prefix(p, FUNC_CLOSE) && !tag_prefix(p, CALL_CLOSE)) {
            p->xstate = X_BODY;
            if (c == '<') xml_byte(p, c);
        }
        return;
    case X_PNAME:
        if (c != '>') {
            if (p->n_tag < ZN_SRV_TOOL_NAME_MAX) p->tag[p->n_tag++] = c;
            return;
        }
        out(p, ZN_CH_TOOL_ARGS, p->n_xparams ? "," : "{", 1);
        out(p, ZN_CH_TOOL_ARGS, "\"", 1);
        out_escaped(p, p->tag, p->n_tag);
        out(p, ZN_CH_TOOL_ARGS, "\":", 2);
        p->ptype = ZN_PARAM_UNKNOWN;
        int t = toolset_find(p->tools, p->name, p->n_name);
        for (int k = 0; t >= 0 && k < p->tools->t[t].n_params; k++)
            if (strlen(p->tools->t[t].param[k]) == p->n_tag && !memcmp(p->tools->t[t].param[k], p->tag, p->n_tag))
                p->ptype = p->tools->t[t].ptype[k];
        if (p->ptype == ZN_PARAM_STRING) out(p, ZN_CH_TOOL_ARGS, "\"", 1);
        p->n_hold = 0;
        p->xfirst = true;
        p->xnl = false;
        delim_set(&p->dl, VALUE_END, 2);
        p->xstate = X_VALUE;
        return;
    case X_VALUE: {
        char rel[sizeof p->dl.held];
        size_t nr;
        int hit = delim_push(&p->dl, c, rel, &nr);
        for (size_t i = 0; i < nr; i++) value_byte(p, rel[i]);
        if (hit >= 0) {
            value_end(p);
            p->xstate = X_BODY;
            if (hit == 1) func_done(p);
        }
        return;
    }
    }
}

/* ---- modes ---- */

static void feed(zn_toolparse *p, char c) {
    switch (p->mode) {
    case M_CONTENT: {
        if (p->llama_start) {
            if (is_ws(c)) {
                content_emit(p, c);
                return;
            }
            p->llama_start = false;
            if (c == '{') {
                begin_call(p, false);
                raw_add(p, c);
                p->mode = M_JSON;
                p->jstate = J_KEY_OR_END;
                return;
            }
        }
        char rel[sizeof p->dl.held];
        size_t nr;
        int hit = delim_push(&p->dl, c, rel, &nr);
        for (size_t i = 0; i < nr; i++) content_emit(p, rel[i]);
        if (hit < 0) return;
        begin_call(p, hit == 0);
        const char *tag = OPENERS[hit];
        for (size_t i = 0; tag[i]; i++) raw_add(p, tag[i]);
        if (hit == 0) {
            p->mode = M_OPEN;
            p->n_tag = 0;
        } else {
            p->mode = M_XML;
            p->xstate = X_NAME;
        }
        return;
    }
    case M_OPEN:
        if (p->n_tag == 0 && is_ws(c)) {
            if (!raw_add(p, c)) abort_call(p, true, c);
            return;
        }
        if (!raw_add(p, c)) {
            abort_call(p, true, c);
            return;
        }
        if (p->n_tag == 0 && c == '{') {
            p->mode = M_JSON;
            p->jstate = J_KEY_OR_END;
            return;
        }
        p->tag[p->n_tag++] = c;
        if (!tag_prefix(p, OPENERS[1])) {
            abort_call(p, false, c);
            return;
        }
        if (p->n_tag == strlen(OPENERS[1])) {
            p->mode = M_XML;
            p->xstate = X_NAME;
        }
        return;
    case M_JSON:
        json_byte(p, c);
        return;
    case M_XML:
        xml_byte(p, c);
        return;
    case M_CLOSE: {
        if (p->dl.n_held == 0 && is_ws(c)) return;
        char rel[sizeof p->dl.held];
        size_t nr;
        int hit = delim_push(&p->dl, c, rel, &nr);
        if (hit >= 0) {
            to_content(p);
        } else if (nr) {  /* no closing tag: the rest is content */
            to_content(p);
            for (size_t i = 0; i < nr; i++) feed(p, rel[i]);
        }
        return;
    }
    case M_BETWEEN:
        if (is_ws(c) || c == ';') return;
        if (c == '{') {
            begin_call(p, false);
            raw_add(p, c);
            p->mode = M_JSON;
            p->jstate = J_KEY_OR_END;
            return;
        }
        to_content(p);
        feed(p, c);
        return;
    }
}

/* ---- API ---- */

zn_status toolparse_init(zn_toolparse *p, int fmt, const zn_toolset *tools, zn_err *err) {
    memset(p, 0, sizeof *p);
    p->fmt = fmt;
    p->tools = tools;
    p->raw = malloc(ZN_SRV_TOOL_HOLD);
    p->hold = malloc(ZN_SRV_TOOL_HOLD);
    if (!p->raw || !p->hold) {
        toolparse_free(p);
        return zn_errf(err, ZN_ERR_NOMEM, "out of memory for the tool-call parser");
    }
    to_content(p);
    p->llama_start = fmt == ZN_TOOLFMT_LLAMA3;
    return ZN_OK;
}

void toolparse_free(zn_toolparse *p) {
    free(p->raw);
    free(p->hold);
    p->raw = p->hold = NULL;
}

bool toolparse_push(zn_toolparse *p, const char *text, size_t n, zn_text_sink sink, void *ctx) {
    p->sink = sink;
    p->sink_ctx = ctx;
    for (size_t i = 0; i < n && !p->failed; i++) feed(p, text[i]);
    flush_run(p);
    return !p->failed;
}

bool toolparse_flush(zn_toolparse *p, zn_text_sink sink, void *ctx) {
    p->sink = sink;
    p->sink_ctx = ctx;
    switch (p->mode) {
    case M_CONTENT:
        for (size_t i = 0; i < p->dl.n_held; i++) content_emit(p, p->dl.held[i]);
        p->dl.n_held = 0;
        break;
    case M_OPEN:
    case M_JSON:
    case M_XML:
        if (!p->committed) {
            abort_call(p, false, 0);
        } else if (p->mode == M_XML) { /* close what the reply left open, so the arguments parse */
            if (p->xstate == X_VALUE) {
                for (size_t i = 0; i < p->dl.n_held; i++) value_byte(p, p->dl.held[i]);
                p->dl.n_held = 0;
                value_end(p);
            }
            func_done(p);
        }
        break;
    default:
        break;
    }
    if (p->mode == M_JSON && p->committed && !p->args_done && !p->n_hold && p->jstate != J_ARGS)
        out(p, ZN_CH_TOOL_ARGS, "{}", 2);  /* named, no arguments yet: none */
    if (p->n_calls == 0) release_ws(p);
    p->n_ws = 0;
    flush_run(p);
    return !p->failed;
}
