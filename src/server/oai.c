/* Parsing of OpenAI-style request bodies (see oai.h). */
#include "oai.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "chat.h"
#include "utf8.h"

bool oai_fail(zn_oai_error *e, int status, const char *type, const char *code, const char *param, const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return false;
}


/* The field from (and its sub-fields, from[...] and from.x) named to instead,
 * in e->param and where the message quotes it: for the APIs translated into
 * a chat request. */
void oai_error_rename(zn_oai_error *e, const char *from, const char *to) {
    size_t fl = strlen(from);
    if (!strncmp(e->param, from, fl) && (!e->param[fl] || e->param[fl] == '[' || e->param[fl] == '.')) {
        char p[sizeof e->param];
        snprintf(p, sizeof p, "%s%s", to, e->param + fl);
        snprintf(e->param, sizeof e->param, "%s", p);
    }
    char q[100], m[sizeof e->message];
    /* a message that starts with the field's path ("from.x: ...") */
    if (!strncmp(e->message, from, fl) && strchr(".[: ", e->message[fl]) && e->message[fl]) {
        snprintf(m, sizeof m, "%s%s", to, e->message + fl);
        snprintf(e->message, sizeof e->message, "%s", m);
    }
    snprintf(q, sizeof q, "'%s'", from);
    char *at = strstr(e->message, q);
    if (at) {
        snprintf(m, sizeof m, "%.*s'%s'%s", (int)(at - e->message), e->message, to, at + strlen(q));
        snprintf(e->message, sizeof e->message, "%s", m);
    }
}

void oai_random_hex(char hex[25], const void *salt) {
    unsigned char r[12];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        /* (no entropy yet: ids need only be unlikely to repeat) */
        uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)salt;
        memcpy(r, &t, 8);
        memset(r + 8, 0, 4);
    }
    for (size_t i = 0; i < sizeof r; i++) snprintf(hex + 2 * i, 25 - 2 * i, "%02x", r[i]);
}

/* A JSON string of text that should be UTF-8; repaired (U+FFFD) when not. */
json_t *oai_json_text(const char *p, size_t n) {
    json_t *s = json_stringn(p, n);
    if (s || !n) return s ? s : json_string("");
    char *fix = malloc(3 * n);
    if (!fix) return NULL;
    size_t m = utf8_sanitize(p, n, fix);
    s = json_stringn(fix, m);
    free(fix);
    return s;
}

#define BAD(param, ...) oai_fail(e, 400, "invalid_request_error", NULL, param, __VA_ARGS__)
#define OOM() oai_fail(e, 500, "server_error", NULL, NULL, "out of memory")

static json_t *load(const char *body, size_t len, zn_oai_error *e) {
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root) {
        BAD(NULL, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        BAD(NULL, "the body must be a JSON object");
        return NULL;
    }
    return root;
}

/* A number field in [lo, hi] (absent or null: untouched). */
static bool get_num(json_t *o, const char *key, double lo, double hi, float *out, zn_oai_error *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_number(v)) return BAD(key, "'%s' must be a number", key);
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return BAD(key, "'%s' is %g; it must be between %g and %g", key, d, lo, hi);
    *out = (float)d;
    return true;
}

/* An integer field in [lo, hi]; *given set when present. */
static bool get_int(json_t *o, const char *key, long long lo, long long hi, long long *out, bool *given,
                    zn_oai_error *e) {
    json_t *v = json_object_get(o, key);
    if (given) *given = false;
    if (!v || json_is_null(v)) return true;
    if (!json_is_integer(v)) return BAD(key, "'%s' must be an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return BAD(key, "'%s' is %lld; it must be between %lld and %lld", key, x, lo, hi);
    *out = x;
    if (given) *given = true;
    return true;
}

static bool get_bool(json_t *o, const char *key, bool *out, zn_oai_error *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) return BAD(key, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return true;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static bool parse_stop(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    json_t *v = json_object_get(o, "stop");
    if (!v || json_is_null(v)) return true;
    json_t *one[1] = {v};
    json_t **items = one;
    size_t n = 1;
    if (json_is_array(v)) {
        n = json_array_size(v);
        if (n > ZN_SRV_MAX_STOP) return BAD("stop", "'stop' has %zu strings; at most %d", n, ZN_SRV_MAX_STOP);
        items = NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *s = items ? items[i] : json_array_get(v, i);
        if (!json_is_string(s)) return BAD("stop", "'stop' must be a string or an array of strings");
        size_t len = json_string_length(s);
        if (len == 0) return BAD("stop", "'stop' strings must not be empty");
        if (len > ZN_SRV_MAX_STOP_BYTES)
            return BAD("stop", "a 'stop' string has %zu bytes; at most %d", len, ZN_SRV_MAX_STOP_BYTES);
        if (memchr(json_string_value(s), 0, len)) return BAD("stop", "'stop' strings must not contain NUL");
        if (!(r->stop[r->n_stop] = dup_n(json_string_value(s), len))) return OOM();
        r->n_stop++;
    }
    return true;
}

json_t *oai_join_texts(json_t *parts, json_t *(*text_of)(json_t *part)) {
    size_t n = json_array_size(parts), total = 1;
    for (size_t k = 0; k < n; k++) {
        json_t *p = json_array_get(parts, k), *t = text_of ? text_of(p) : json_object_get(p, "text");
        total += json_string_length(t) + 1;
    }
    char *buf = malloc(total);
    if (!buf) return NULL;
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        json_t *p = json_array_get(parts, k), *t = text_of ? text_of(p) : json_object_get(p, "text");
        if (k) buf[at++] = '\n';
        memcpy(buf + at, json_string_value(t), json_string_length(t));
        at += json_string_length(t);
    }
    json_t *out = json_stringn_nocheck(buf, at);  /* the parts were valid UTF-8 strings, so is the join */
    free(buf);
    return out;
}

/* content: a string, null, or text parts -> one string (parts joined by "\n"). */
static bool content_text(json_t *c, size_t i, json_t **out, zn_oai_error *e) {
    char param[96];
    snprintf(param, sizeof param, "messages[%zu].content", i);
    if (!c || json_is_null(c)) {
        *out = json_string("");
    } else if (json_is_string(c)) {
        *out = json_incref(c);
        return true;
    } else if (json_is_array(c)) {
        size_t n = json_array_size(c);
        for (size_t k = 0; k < n; k++) {
            json_t *p = json_array_get(c, k);
            json_t *type = json_is_object(p) ? json_object_get(p, "type") : NULL;
            json_t *text = json_is_object(p) ? json_object_get(p, "text") : NULL;
            if (!json_is_string(type)) return BAD(param, "%s[%zu] must be an object with a 'type'", param, k);
            if (strcmp(json_string_value(type), "text"))
                return BAD(param, "%s[%zu]: content parts of type '%s' are not supported (text only)", param, k,
                           json_string_value(type));
            if (!json_is_string(text)) return BAD(param, "%s[%zu].text must be a string", param, k);
        }
        *out = oai_join_texts(c, NULL);
    } else {
        return BAD(param, "%s must be a string or an array of text parts", param);
    }
    return *out ? true : OOM();
}

static bool parse_messages(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    json_t *v = json_object_get(o, "messages");
    if (!json_is_array(v)) return BAD("messages", "'messages' must be an array of messages");
    size_t n = json_array_size(v);
    if (n == 0) return BAD("messages", "'messages' is empty");
    if (n > ZN_SRV_MAX_MESSAGES) return BAD("messages", "%zu messages; at most %d", n, ZN_SRV_MAX_MESSAGES);
    json_t *out = json_array();
    if (!out) return OOM();
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(v, i);
        char param[96];
        snprintf(param, sizeof param, "messages[%zu]", i);
        json_t *role = json_is_object(m) ? json_object_get(m, "role") : NULL;
        if (!json_is_string(role)) {
            json_decref(out);
            return BAD(param, "%s must be an object with a string 'role'", param);
        }
        const char *rs = json_string_value(role);
        size_t ri = 0;
        while (ri < 5 && strcmp(rs, roles[ri])) ri++;
        if (ri == 5) {
            json_decref(out);
            return BAD(param, "%s has role '%.64s'; expected system, developer, user, assistant or tool", param, rs);
        }
        json_t *text = NULL;
        if (!content_text(json_object_get(m, "content"), i, &text, e)) {
            json_decref(out);
            return false;
        }
        json_t *nm = json_object();
        /* templates know "system"; "developer" is OpenAI's newer name for it */
        if (!nm || json_object_set_new(nm, "role", json_string(ri == 1 ? "system" : rs)) ||
            json_object_set_new(nm, "content", text) || json_array_append_new(out, nm)) {
            json_decref(nm);
            json_decref(out);
            return OOM();
        }
        static const char *const pass[] = {"name", "tool_call_id", "reasoning_content", "tool_calls"};
        for (int k = 0; k < 4; k++) {
            json_t *x = json_object_get(m, pass[k]);
            if (!x || json_is_null(x)) continue;
            if (k < 3 && !json_is_string(x)) {
                json_decref(out);
                return BAD(param, "%s.%s must be a string", param, pass[k]);
            }
            if (k == 3 && !json_is_array(x)) {
                json_decref(out);
                return BAD(param, "%s.tool_calls must be an array", param);
            }
            if (json_object_set(nm, pass[k], x)) {
                json_decref(out);
                return OOM();
            }
        }
    }
    r->messages = json_dumps(out, JSON_COMPACT);
    r->n_messages = n;
    json_decref(out);
    return r->messages ? true : OOM();
}

static bool parse_prompt(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    json_t *v = json_object_get(o, "prompt");
    if (json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0))) v = json_array_get(v, 0);
    if (json_is_array(v) && json_array_size(v) == 1 && json_is_array(json_array_get(v, 0))) v = json_array_get(v, 0);
    if (json_is_string(v)) {
        size_t n = json_string_length(v);
        if (n == 0) return BAD("prompt", "'prompt' is empty");
        if (n > ZN_MAX_PROMPT_BYTES) return BAD("prompt", "'prompt' has %zu bytes; at most %d", n, ZN_MAX_PROMPT_BYTES);
        if (!(r->prompt = dup_n(json_string_value(v), n))) return OOM();
        r->prompt_len = n;
        return true;
    }
    if (!json_is_array(v))
        return BAD("prompt", "'prompt' must be a string or an array of token ids (one prompt per request)");
    size_t n = json_array_size(v);
    if (n == 0) return BAD("prompt", "'prompt' is empty");
    if (n > ZN_SRV_MAX_PROMPT_TOKENS) return BAD("prompt", "'prompt' has %zu tokens; at most %d", n, ZN_SRV_MAX_PROMPT_TOKENS);
    if (!(r->prompt_ids = malloc(sizeof *r->prompt_ids * n))) return OOM();
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(v, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= ZN_MAX_VOCAB)
            return BAD("prompt", "'prompt' must be a string or an array of token ids (item %zu is not one)", i);
        r->prompt_ids[i] = (int32_t)json_integer_value(t);
    }
    r->n_prompt_ids = n;
    return true;
}

/* tools, tool_choice, parallel_tool_calls (chat). The tools array is kept as
 * checked JSON text: the template renders it, the tool-call parser reads its
 * names and parameter types. */
static bool parse_tools(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    json_t *tools = json_object_get(o, "tools"), *choice = json_object_get(o, "tool_choice");
    r->parallel_tool_calls = true;
    if (!get_bool(o, "parallel_tool_calls", &r->parallel_tool_calls, e)) return false;
    r->tool_choice = ZN_TOOLS_NONE;
    if (tools && !json_is_null(tools)) {
        if (!r->chat) return BAD("tools", "'tools' is for /v1/chat/completions");
        if (!json_is_array(tools)) return BAD("tools", "'tools' must be an array of {\"type\": \"function\", \"function\": {...}}");
        size_t n = json_array_size(tools);
        if (n > ZN_SRV_MAX_TOOLS) return BAD("tools", "%zu tools; at most %d", n, ZN_SRV_MAX_TOOLS);
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_array_get(tools, i);
            char param[64];
            snprintf(param, sizeof param, "tools[%zu]", i);
            json_t *type = json_object_get(t, "type"), *fn = json_object_get(t, "function");
            if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function"))
                return BAD(param, "%s must be an object with \"type\": \"function\" (other tool types are not supported)", param);
            json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters");
            if (!json_is_object(fn) || !json_is_string(name) || json_string_length(name) == 0)
                return BAD(param, "%s.function must be an object with a non-empty string 'name'", param);
            if (json_string_length(name) > ZN_SRV_TOOL_NAME_MAX)
                return BAD(param, "%s.function.name has %zu bytes; at most %d", param, json_string_length(name),
                           ZN_SRV_TOOL_NAME_MAX);
            if (params && !json_is_null(params) && !json_is_object(params))
                return BAD(param, "%s.function.parameters must be a JSON Schema object", param);
            for (size_t k = 0; k < i; k++)
                if (json_equal(json_object_get(json_object_get(json_array_get(tools, k), "function"), "name"), name))
                    return BAD(param, "%s: a second function named '%.64s'", param, json_string_value(name));
        }
        if (n) {
            if (!(r->tools = json_dumps(tools, JSON_COMPACT))) return OOM();
            r->n_tools = (int)n;
            r->tool_choice = ZN_TOOLS_AUTO;
        }
    }
    if (!choice || json_is_null(choice)) return true;
    if (json_is_string(choice)) {
        const char *c = json_string_value(choice);
        if (!strcmp(c, "none")) r->tool_choice = ZN_TOOLS_NONE;
        else if (!strcmp(c, "auto")) r->tool_choice = r->n_tools ? ZN_TOOLS_AUTO : ZN_TOOLS_NONE;
        else if (!strcmp(c, "required")) r->tool_choice = ZN_TOOLS_REQUIRED;
        else return BAD("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    } else {
        json_t *name = json_object_get(json_object_get(choice, "function"), "name");
        if (!json_is_object(choice) || !json_is_string(name))
            return BAD("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        bool found = false;
        for (size_t k = 0; k < json_array_size(tools) && !found; k++)
            found = json_equal(json_object_get(json_object_get(json_array_get(tools, k), "function"), "name"), name);
        if (!found) return BAD("tool_choice", "'tool_choice' names '%.64s', which is not among 'tools'", json_string_value(name));
        if (!(r->tool_name = dup_n(json_string_value(name), json_string_length(name)))) return OOM();
        r->tool_choice = ZN_TOOLS_NAMED;
    }
    if (r->tool_choice != ZN_TOOLS_NONE && !r->n_tools)
        return BAD("tool_choice", "'tool_choice' asks for a tool call but 'tools' is empty");
    return true;
}

/* response_format: {"type": "text"}, {"type": "json_object"} or
 * {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": ...}}.
 * The schema is compiled by the server (its grammar needs the model's
 * vocabulary anyway); here only its shape is checked. */
static bool parse_format(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    json_t *rf = json_object_get(o, "response_format");
    if (!rf || json_is_null(rf)) return true;
    json_t *t = json_is_object(rf) ? json_object_get(rf, "type") : NULL;
    if (!json_is_string(t))
        return BAD("response_format", "'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}");
    const char *type = json_string_value(t);
    if (!strcmp(type, "text")) return true;
    if (!strcmp(type, "json_object")) {
        r->format = ZN_FORMAT_JSON_OBJECT;
        return true;
    }
    if (strcmp(type, "json_schema"))
        return BAD("response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\" (got '%.64s')", type);
    json_t *js = json_object_get(rf, "json_schema");
    if (!json_is_object(js))
        return BAD("response_format", "'response_format.json_schema' must be an object {\"name\": ..., \"schema\": {...}}");
    json_t *name = json_object_get(js, "name"), *schema = json_object_get(js, "schema"), *strict = json_object_get(js, "strict");
    if (name && !json_is_null(name) && !json_is_string(name))
        return BAD("response_format", "'response_format.json_schema.name' must be a string");
    if (strict && !json_is_null(strict) && !json_is_boolean(strict))
        return BAD("response_format", "'response_format.json_schema.strict' must be true or false");
    if (!json_is_object(schema))
        return BAD("response_format", "'response_format.json_schema.schema' must be a JSON Schema object");
    if (!(r->schema = json_dumps(schema, JSON_COMPACT))) return OOM();
    if (json_is_string(name) && !(r->schema_name = dup_n(json_string_value(name), json_string_length(name)))) return OOM();
    r->format = ZN_FORMAT_JSON_SCHEMA;
    return true;
}

/* reasoning_effort (OpenAI) and thinking_budget_tokens (zinc's): thinking
 * on or off, and the reasoning's budget in tokens. An explicit budget
 * overrides the effort's; thinking turned on one way and off the other
 * (chat_template_kwargs.enable_thinking) is a 400 rather than a guess. */
static bool parse_reasoning(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    r->think_budget = -1;
    json_t *eff = json_object_get(o, "reasoning_effort"), *bt = json_object_get(o, "thinking_budget_tokens");
    bool has_eff = eff && !json_is_null(eff), has_bt = bt && !json_is_null(bt);
    if (!has_eff && !has_bt) return true;
    if (!r->chat) return BAD(has_eff ? "reasoning_effort" : "thinking_budget_tokens", "'%s' is for /v1/chat/completions",
                             has_eff ? "reasoning_effort" : "thinking_budget_tokens");
    int think = ZN_THINK_ON;
    if (has_eff) {
        static const char *const names[] = {"none", "minimal", "low", "medium", "high"};
        static const long budgets[] = {-1, ZN_SRV_THINK_BUDGET_MINIMAL, ZN_SRV_THINK_BUDGET_LOW,
                                       ZN_SRV_THINK_BUDGET_MEDIUM, -1};
        const char *v = json_string_value(eff);
        int k = 0;
        while (v && k < 5 && strcmp(v, names[k])) k++;
        if (!v || k == 5)
            return BAD("reasoning_effort", "'reasoning_effort' must be \"none\", \"minimal\", \"low\", \"medium\" or \"high\"");
        if (k == 0) think = ZN_THINK_OFF;
        r->think_budget = budgets[k];
    }
    if (has_bt) {
        long long x = 0;
        if (!get_int(o, "thinking_budget_tokens", 0, ZN_SRV_MAX_GEN_TOKENS, &x, NULL, e)) return false;
        if (think == ZN_THINK_OFF)
            return BAD("thinking_budget_tokens", "'thinking_budget_tokens' is set but 'reasoning_effort' is \"none\" (thinking off)");
        r->think_budget = (long)x;
    }
    if (r->think != ZN_THINK_UNSET && r->think != think)
        return BAD(has_eff ? "reasoning_effort" : "thinking_budget_tokens",
                   "'%s' turns thinking %s but 'chat_template_kwargs.enable_thinking' is %s",
                   has_eff ? "reasoning_effort" : "thinking_budget_tokens", think == ZN_THINK_ON ? "on" : "off",
                   r->think == ZN_THINK_ON ? "true" : "false");
    r->think = think;
    return true;
}

static bool parse_common(json_t *o, zn_oai_req *r, zn_oai_error *e) {
    json_t *model = json_object_get(o, "model");
    if (model && !json_is_null(model)) {
        if (!json_is_string(model)) return BAD("model", "'model' must be a string");
        if (!(r->model = dup_n(json_string_value(model), json_string_length(model)))) return OOM();
    }
    if (!get_bool(o, "stream", &r->stream, e)) return false;
    json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return BAD("stream_options", "'stream_options' must be an object");
        if (!get_bool(so, "include_usage", &r->include_usage, e)) return false;
    }
    long long x = 0;
    bool given;
    if (!get_int(o, "n", 1, 1, &x, NULL, e)) {
        snprintf(e->message, sizeof e->message, "'n' must be 1: one choice per request is supported");
        return false;
    }
    if (!get_int(o, "max_tokens", 1, ZN_SRV_MAX_GEN_TOKENS, &x, &given, e)) return false;
    if (given) r->max_tokens = (long)x;
    if (r->chat) {
        if (!get_int(o, "max_completion_tokens", 1, ZN_SRV_MAX_GEN_TOKENS, &x, &given, e)) return false;
        if (given) r->max_tokens = (long)x;
    }
    if (!get_num(o, "temperature", 0, 100, &r->sp.temperature, e) || !get_num(o, "top_p", 0, 1, &r->sp.top_p, e) ||
        !get_num(o, "min_p", 0, 1, &r->sp.min_p, e) ||
        !get_num(o, "presence_penalty", -2, 2, &r->sp.presence_penalty, e) ||
        !get_num(o, "frequency_penalty", -2, 2, &r->sp.frequency_penalty, e) ||
        !get_num(o, "repetition_penalty", 1e-6, 100, &r->sp.repeat_penalty, e) ||
        !get_num(o, "repeat_penalty", 1e-6, 100, &r->sp.repeat_penalty, e))
        return false;
    if (!get_int(o, "top_k", 0, ZN_MAX_VOCAB, &x, &given, e)) return false;
    if (given) r->sp.top_k = (int)x;
    json_t *seed = json_object_get(o, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed)) return BAD("seed", "'seed' must be an integer");
        r->sp.seed = (uint64_t)json_integer_value(seed);
        r->seed_given = true;
    }
    if (!parse_stop(o, r, e)) return false;
    if (!get_bool(o, "cache_prompt", &r->cache_prompt, e) || !get_bool(o, "ignore_eos", &r->ignore_eos, e)) return false;
    /* logprobs: chat has a bool plus top_logprobs, completions an integer */
    json_t *lp = json_object_get(o, "logprobs");
    if (r->chat) {
        bool want = false;
        if (!get_bool(o, "logprobs", &want, e)) return false;
        if (!get_int(o, "top_logprobs", 0, ZN_SRV_MAX_TOP_LOGPROBS, &x, &given, e)) return false;
        if (given && !want) return BAD("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        if (want) r->top_logprobs = given ? (int)x : 0;
    } else if (lp && !json_is_null(lp)) {
        if (!get_int(o, "logprobs", 0, ZN_SRV_MAX_TOP_LOGPROBS, &x, NULL, e)) return false;
        r->top_logprobs = (int)x;
    }
    if (!parse_tools(o, r, e) || !parse_format(o, r, e)) return false;
    if (r->format != ZN_FORMAT_TEXT && (r->tool_choice == ZN_TOOLS_REQUIRED || r->tool_choice == ZN_TOOLS_NAMED))
        return BAD("response_format", "'response_format' %s and a forced tool call ('tool_choice') exclude each other",
                   r->format == ZN_FORMAT_JSON_OBJECT ? "json_object" : "json_schema");
    /* Accepted and ignored, these would silently change what the client gets:
     * better a clear 400 until they are implemented. */
    json_t *lb = json_object_get(o, "logit_bias");
    if (json_object_size(lb) > 0)
        return oai_fail(e, 400, "invalid_request_error", "unsupported_parameter", "logit_bias",
                        "'logit_bias' is not supported");
    json_t *best = json_object_get(o, "best_of");
    if (best && !json_is_null(best) && !(json_is_integer(best) && json_integer_value(best) == 1))
        return BAD("best_of", "'best_of' must be 1");
    json_t *kw = json_object_get(o, "chat_template_kwargs");
    if (kw && !json_is_null(kw)) {
        if (!json_is_object(kw)) return BAD("chat_template_kwargs", "'chat_template_kwargs' must be an object");
        json_t *th = json_object_get(kw, "enable_thinking");
        if (th && !json_is_boolean(th))
            return BAD("chat_template_kwargs", "'chat_template_kwargs.enable_thinking' must be true or false");
        if (th) r->think = json_is_true(th) ? ZN_THINK_ON : ZN_THINK_OFF;
        if (json_object_size(kw) && !(r->template_kwargs = json_dumps(kw, JSON_COMPACT))) return OOM();
    }
    return parse_reasoning(o, r, e);
}

bool oai_parse(const char *body, size_t len, bool chat, zn_oai_req *r, zn_oai_error *e) {
    memset(r, 0, sizeof *r);
    r->chat = chat;
    r->max_tokens = -1;
    r->top_logprobs = -1;
    r->think_budget = -1;
    r->cache_prompt = true;
    r->sp = sampler_default_params();
    json_t *o = load(body, len, e);
    if (!o) return false;
    bool ok = parse_common(o, r, e) && (chat ? parse_messages(o, r, e) : parse_prompt(o, r, e));
    json_decref(o);
    if (!ok) oai_req_free(r);
    return ok;
}

void oai_req_free(zn_oai_req *r) {
    free(r->model);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    free(r->template_kwargs);
    free(r->tools);
    free(r->tool_name);
    free(r->schema);
    free(r->schema_name);
    free(r->messages);
    free(r->prompt);
    free(r->prompt_ids);
    memset(r, 0, sizeof *r);
}

bool oai_parse_tokenize(const char *body, size_t len, char **content, size_t *n, bool *add_special, zn_oai_error *e) {
    *content = NULL;
    *add_special = false;
    json_t *o = load(body, len, e);
    if (!o) return false;
    json_t *c = json_object_get(o, "content");
    bool ok = json_is_string(c) ? true : BAD("content", "'content' must be a string");
    if (ok && json_string_length(c) > ZN_MAX_PROMPT_BYTES)
        ok = BAD("content", "'content' has %zu bytes; at most %d", json_string_length(c), ZN_MAX_PROMPT_BYTES);
    if (ok) ok = get_bool(o, "add_special", add_special, e);
    if (ok && !(*content = dup_n(json_string_value(c), json_string_length(c)))) ok = OOM();
    if (ok) *n = json_string_length(c);
    json_decref(o);
    return ok;
}

bool oai_parse_detokenize(const char *body, size_t len, int32_t **ids, size_t *n, zn_oai_error *e) {
    *ids = NULL;
    json_t *o = load(body, len, e);
    if (!o) return false;
    json_t *t = json_object_get(o, "tokens");
    bool ok = json_is_array(t) ? true : BAD("tokens", "'tokens' must be an array of token ids");
    size_t k = ok ? json_array_size(t) : 0;
    if (ok && k > ZN_SRV_MAX_PROMPT_TOKENS) ok = BAD("tokens", "%zu tokens; at most %d", k, ZN_SRV_MAX_PROMPT_TOKENS);
    if (ok && !(*ids = malloc(sizeof **ids * (k ? k : 1)))) ok = OOM();
    for (size_t i = 0; ok && i < k; i++) {
        json_t *x = json_array_get(t, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= ZN_MAX_VOCAB)
            ok = BAD("tokens", "tokens[%zu] is not a token id", i);
        else (*ids)[i] = (int32_t)json_integer_value(x);
    }
    if (ok) *n = k;
    else {
        free(*ids);
        *ids = NULL;
    }
    json_decref(o);
    return ok;
}
