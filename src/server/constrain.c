/* Request -> grammar (see constrain.h). */
#include "constrain.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jschema.h"

static bool fail_st(zn_oai_error *e, zn_status st, const char *param, const zn_err *err) {
    if (st == ZN_ERR_NOMEM) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory for the grammar");
    return oai_fail(e, 400, "invalid_request_error", st == ZN_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, param,
                    "%s", err->msg);
}

/* A GBNF literal of the JSON string of s: "\"name\"" (malloc'd). */
static char *json_literal(const char *s) {
    json_t *j = json_string(s);
    char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!d) return NULL;
    size_t n = strlen(d);
    char *q = malloc(4 * n + 3);
    if (q) gbnf_quote(d, n, q);
    free(d);
    return q;
}

/* Rule "call" for one call of any tool (only tool `only` when >= 0);
 * any_args: arguments are any JSON object, not each tool's schema. */
static zn_status add_calls(zn_gbnf *b, const zn_toolset *ts, int fmt, int only, bool any_args, zn_err *err,
                           char *param, size_t param_cap) {
    size_t cap = 256, n = 0;
    char *alts = malloc(cap);
    if (!alts) return zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    alts[0] = 0;
    zn_status st = ZN_OK;
    const bool llama = fmt == ZN_TOOLFMT_LLAMA3;
    for (int i = 0; i < ts->n && !st; i++) {
        if (only >= 0 && i != only) continue;
        const zn_tool_def *d = &ts->t[i];
        const char *args;
        char where[96], rname[32];
        snprintf(where, sizeof where, "tools[%d].function.parameters", i);
        snprintf(rname, sizeof rname, "args-%d", i);
        if (any_args || !strcmp(d->params_json, "{}")) {
            args = gbnf_any_object(b);
        } else if ((st = gbnf_add_schema(b, rname, d->params_json, strlen(d->params_json), where, &args, err))) {
            snprintf(param, param_cap, "tools[%d]", i);
            break;
        }
        char *name = json_literal(d->name);
        if (!name) {
            st = zn_errf(err, ZN_ERR_NOMEM, "out of memory");
            break;
        }
        char cname[32];
        snprintf(cname, sizeof cname, "call-%d", i);
        size_t need = strlen(name) + strlen(args) + 128;
        char *body = malloc(need);
        if (!body) {
            free(name);
            st = zn_errf(err, ZN_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(body, need, "\"{\\\"name\\\": \" %s \", \\\"%s\\\": \" %s \"}\"", name, llama ? "parameters" : "arguments",
                 args);
        free(name);
        st = gbnf_add_rule(b, cname, body, err);
        free(body);
        if (n + strlen(cname) + 4 > cap) {
            cap = 2 * cap + strlen(cname) + 4;
            char *q = realloc(alts, cap);
            if (!q) {
                st = zn_errf(err, ZN_ERR_NOMEM, "out of memory");
                break;
            }
            alts = q;
        }
        n += (size_t)sprintf(alts + n, "%s%s", n ? " | " : "", cname);
    }
    if (!st) {
        size_t need = n + 64;
        char *body = malloc(need);
        if (!body) st = zn_errf(err, ZN_ERR_NOMEM, "out of memory");
        else if (llama) snprintf(body, need, "( %s )", alts);
        else snprintf(body, need, "\"<tool_call>\\n\" ( %s ) \"\\n</tool_call>\"", alts);
        if (body && !st) st = gbnf_add_rule(b, "call", body, err);
        free(body);
    }
    free(alts);
    return st;
}

bool constrain_gbnf(const zn_oai_req *r, const zn_toolset *ts, int tool_fmt, bool think_open, char **gbnf,
                    zn_oai_error *e) {
    *gbnf = NULL;
    const bool forced = r->tool_choice == ZN_TOOLS_REQUIRED || r->tool_choice == ZN_TOOLS_NAMED;
    if (r->format == ZN_FORMAT_TEXT && !forced) return true;
    zn_gbnf *b;
    zn_err err = {0};
    zn_status st = gbnf_new(&b, &err);
    if (st) return fail_st(e, st, NULL, &err);
    char param[48] = "response_format";
    const char *answer = NULL;
    if (r->format == ZN_FORMAT_JSON_OBJECT) answer = gbnf_any_object(b);
    else if (r->format == ZN_FORMAT_JSON_SCHEMA)
        st = gbnf_add_schema(b, "answer", r->schema, strlen(r->schema), "response_format.json_schema.schema", &answer,
                             &err);
    const bool calls = forced || (r->tool_choice == ZN_TOOLS_AUTO && ts && ts->n > 0);
    int only = -1;
    if (!st && r->tool_choice == ZN_TOOLS_NAMED) {
        only = toolset_find(ts, r->tool_name, strlen(r->tool_name));
        if (only < 0) st = zn_errf(&err, ZN_ERR_ARG, "'tool_choice' names '%.64s', which is not among 'tools'", r->tool_name);
        snprintf(param, sizeof param, "tool_choice");
    }
    if (!st && calls) st = add_calls(b, ts, tool_fmt, only, !forced, &err, param, sizeof param);
    if (!st) {
        /* more calls: Hermes-style blocks one per line, Llama 3 ones after ';' */
        char more[160] = "";
        if (r->tool_choice != ZN_TOOLS_NAMED && r->parallel_tool_calls)
            snprintf(more, sizeof more, " ( %s call ){0,%d}", tool_fmt == ZN_TOOLFMT_LLAMA3 ? "\";\"" : "\"\\n\"",
                     ZN_SRV_MAX_TOOL_CALLS - 1);
        char body[512];
        if (forced) snprintf(body, sizeof body, "call%s", more);
        else if (calls) snprintf(body, sizeof body, "%s | call%s", answer, more);
        else snprintf(body, sizeof body, "%s", answer);
        if (think_open) {
            st = gbnf_add_until(b, "reasoning", "</think>", &err);
            if (!st) st = gbnf_add_rule(b, "body", body, &err);
            if (!st) st = gbnf_add_rule(b, "root", "reasoning \"\\n\"{0,2} body", &err);
        } else {
            st = gbnf_add_rule(b, "root", body, &err);
        }
    }
    if (!st) {
        size_t len;
        const char *t = gbnf_text(b, &len);
        if (!(*gbnf = strndup(t, len))) st = zn_errf(&err, ZN_ERR_NOMEM, "out of memory");
    }
    gbnf_free(b);
    if (st) return fail_st(e, st, param, &err);
    return true;
}
