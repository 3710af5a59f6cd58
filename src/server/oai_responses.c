/* The Responses API (see oai_responses.h). */
#include "oai_responses.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "textstream.h"
#include "utf8.h"

#define BAD(param, ...) oai_fail(e, 400, "invalid_request_error", NULL, param, __VA_ARGS__)
#define UNSUPPORTED(param, ...) oai_fail(e, 400, "invalid_request_error", "unsupported_parameter", param, __VA_ARGS__)
#define OOM() oai_fail(e, 500, "server_error", NULL, NULL, "out of memory")

/* ---- the request ---- */

static bool present(json_t *v) { return v && !json_is_null(v); }

/* A part's text: "text", or a refusal part's "refusal" (an assistant turn the client sends back). */
static json_t *part_text(json_t *p) {
    const char *t = json_string_value(json_object_get(p, "type"));
    return json_object_get(p, t && !strcmp(t, "refusal") ? "refusal" : "text");
}

/* Text of content: a string, or an array of parts whose type is one of
 * types (NULL-terminated), joined by "\n". Other part types are refused by
 * name (images, files, audio: text only). */
static bool parts_text(json_t *c, const char *param, const char *const *types, json_t **out, zn_oai_error *e) {
    if (json_is_string(c)) {
        *out = json_incref(c);
        return true;
    }
    if (!json_is_array(c)) return BAD(param, "'%s' must be a string or an array of text parts", param);
    size_t n = json_array_size(c);
    for (size_t k = 0; k < n; k++) {
        json_t *p = json_array_get(c, k), *type = json_object_get(p, "type"), *text = part_text(p);
        if (!json_is_object(p) || !json_is_string(type))
            return BAD(param, "'%s[%zu]' must be an object with a string 'type'", param, k);
        const char *t = json_string_value(type);
        int i = 0;
        while (types[i] && strcmp(t, types[i])) i++;
        if (!types[i])
            return UNSUPPORTED(param, "'%s[%zu]': content of type '%.64s' is not supported (%s)", param, k, t,
                               strstr(t, "image") || strstr(t, "file") || strstr(t, "audio") ? "text only" : "unknown type");
        if (!json_is_string(text)) return BAD(param, "'%s[%zu].text' must be a string", param, k);
    }
    *out = oai_join_texts(c, part_text);
    return *out ? true : OOM();
}

static bool need_string(json_t *o, const char *key, const char *param, bool nonempty, zn_oai_error *e) {
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || (nonempty && !json_string_length(v)))
        return BAD(param, "'%s.%s' must be a%s string", param, key, nonempty ? " non-empty" : "");
    return true;
}

/* The assistant message a function_call item joins: the last message when it
 * is the assistant's (its text, or calls before this one), else a new one. */
static json_t *assistant_for_call(json_t *msgs) {
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const char *role = json_string_value(json_object_get(last, "role"));
    if (!(role && !strcmp(role, "assistant"))) {
        last = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
        if (!last || json_array_append_new(msgs, last)) return NULL;
    }
    json_t *calls = json_object_get(last, "tool_calls");
    if (!calls) {
        calls = json_array();
        if (!calls || json_object_set_new(last, "tool_calls", calls)) return NULL;
    }
    return calls;
}

static bool input_items(json_t *in, json_t *msgs, zn_oai_error *e) {
    static const char *const text_parts[] = {"input_text", "output_text", "text", "refusal", NULL};
    static const char *const roles[] = {"user", "assistant", "system", "developer", NULL};
    if (json_is_string(in)) {
        if (!json_string_length(in)) return BAD("input", "'input' is empty");
        return !json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "user", "content", in)) || OOM();
    }
    if (!json_is_array(in)) return BAD("input", "'input' must be a string or an array of input items");
    size_t n = json_array_size(in);
    if (n == 0) return BAD("input", "'input' is empty");
    if (n > ZN_SRV_MAX_MESSAGES) return BAD("input", "'input' has %zu items; at most %d", n, ZN_SRV_MAX_MESSAGES);
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(in, i);
        char param[64], cparam[80];
        snprintf(param, sizeof param, "input[%zu]", i);
        if (!json_is_object(it)) return BAD(param, "'%s' must be an object", param);
        json_t *type = json_object_get(it, "type");
        if (present(type) && !json_is_string(type)) return BAD(param, "'%s.type' must be a string", param);
        const char *t = present(type) ? json_string_value(type) : "message";
        if (!strcmp(t, "message")) {
            json_t *role = json_object_get(it, "role");
            int r = 0;
            while (json_is_string(role) && roles[r] && strcmp(json_string_value(role), roles[r])) r++;
            if (!json_is_string(role) || !roles[r])
                return BAD(param, "'%s.role' must be \"user\", \"assistant\", \"system\" or \"developer\"", param);
            snprintf(cparam, sizeof cparam, "%s.content", param);
            json_t *text;
            if (!parts_text(json_object_get(it, "content"), cparam, text_parts, &text, e)) return false;
            if (json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", roles[r], "content", text))) return OOM();
        } else if (!strcmp(t, "function_call")) {
            if (!need_string(it, "call_id", param, true, e) || !need_string(it, "name", param, true, e) ||
                !need_string(it, "arguments", param, false, e))
                return false;
            json_t *calls = assistant_for_call(msgs);
            if (!calls || json_array_append_new(calls, json_pack("{s:O,s:s,s:{s:O,s:O}}", "id", json_object_get(it, "call_id"),
                                                                 "type", "function", "function", "name",
                                                                 json_object_get(it, "name"), "arguments",
                                                                 json_object_get(it, "arguments"))))
                return OOM();
        } else if (!strcmp(t, "function_call_output")) {
            if (!need_string(it, "call_id", param, true, e)) return false;
            snprintf(cparam, sizeof cparam, "%s.output", param);
            json_t *text;
            if (!parts_text(json_object_get(it, "output"), cparam, text_parts, &text, e)) return false;
            if (json_array_append_new(msgs, json_pack("{s:s,s:O,s:o}", "role", "tool", "tool_call_id",
                                                      json_object_get(it, "call_id"), "content", text)))
                return OOM();
        } else if (!strcmp(t, "reasoning")) {
            continue; /* templates drop earlier turns' reasoning */
        } else if (!strcmp(t, "item_reference")) {
            return UNSUPPORTED(param, "'%s': item references need stored responses; this server is stateless "
                               "(send the items themselves)", param);
        } else {
            return UNSUPPORTED(param, "'%s': items of type '%.64s' are not supported (message, function_call, "
                               "function_call_output, reasoning)", param, t);
        }
    }
    return true;
}

/* Responses tools {type: "function", name, description, parameters, strict}
 * -> chat tools {type: "function", function: {name, description, parameters}}. */
static bool convert_tools(json_t *tools, json_t *chat, zn_oai_error *e) {
    if (!json_is_array(tools)) return BAD("tools", "'tools' must be an array of {\"type\": \"function\", \"name\": ...}");
    json_t *out = json_array();
    if (!out || json_object_set_new(chat, "tools", out)) return OOM();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        char param[32];
        snprintf(param, sizeof param, "tools[%zu]", i);
        json_t *type = json_object_get(t, "type");
        if (!json_is_object(t) || !json_is_string(type)) return BAD(param, "'%s' must be an object with a 'type'", param);
        if (strcmp(json_string_value(type), "function"))
            return UNSUPPORTED(param, "'%s': tools of type '%.64s' are not supported (function tools only)", param,
                               json_string_value(type));
        if (!need_string(t, "name", param, true, e)) return false;
        json_t *fn = json_pack("{s:O}", "name", json_object_get(t, "name"));
        if (!fn || json_array_append_new(out, json_pack("{s:s,s:o}", "type", "function", "function", fn))) return OOM();
        json_t *d = json_object_get(t, "description"), *p = json_object_get(t, "parameters");
        if (present(d) && !json_is_string(d)) return BAD(param, "'%s.description' must be a string", param);
        if (present(p) && !json_is_object(p)) return BAD(param, "'%s.parameters' must be a JSON Schema object", param);
        if (present(d)) json_object_set(fn, "description", d);
        if (present(p)) json_object_set(fn, "parameters", p);
    }
    return true;
}

static bool convert_tool_choice(json_t *tc, json_t *chat, zn_oai_error *e) {
    if (json_is_string(tc)) return !json_object_set(chat, "tool_choice", tc) || OOM();
    json_t *type = json_object_get(tc, "type");
    if (!json_is_object(tc) || !json_is_string(type))
        return BAD("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}");
    if (strcmp(json_string_value(type), "function"))
        return UNSUPPORTED("tool_choice", "'tool_choice' of type '%.64s' is not supported", json_string_value(type));
    json_t *name = json_object_get(tc, "name");
    if (!json_is_string(name)) return BAD("tool_choice", "'tool_choice.name' must be a string");
    return !json_object_set_new(chat, "tool_choice", json_pack("{s:s,s:{s:O}}", "type", "function", "function", "name", name)) ||
           OOM();
}

/* text.format -> response_format, in the shape /v1/chat/completions takes. */
static bool convert_text(json_t *text, json_t *chat, zn_oai_error *e) {
    if (!json_is_object(text)) return BAD("text", "'text' must be an object");
    json_t *f = json_object_get(text, "format");
    if (!present(f)) return true;
    json_t *type = json_object_get(f, "type");
    if (!json_is_object(f) || !json_is_string(type))
        return BAD("text.format", "'text.format' must be an object with a 'type' (text, json_object or json_schema)");
    const char *t = json_string_value(type);
    json_t *rf;
    if (!strcmp(t, "text") || !strcmp(t, "json_object")) {
        rf = json_pack("{s:s}", "type", t);
    } else if (!strcmp(t, "json_schema")) {
        json_t *name = json_object_get(f, "name"), *schema = json_object_get(f, "schema");
        json_t *strict = json_object_get(f, "strict"), *desc = json_object_get(f, "description");
        if (!json_is_string(name) || !json_string_length(name))
            return BAD("text.format", "'text.format.name' must be a non-empty string");
        if (!json_is_object(schema)) return BAD("text.format", "'text.format.schema' must be a JSON Schema object");
        if (present(strict) && !json_is_boolean(strict)) return BAD("text.format", "'text.format.strict' must be true or false");
        if (present(desc) && !json_is_string(desc)) return BAD("text.format", "'text.format.description' must be a string");
        json_t *js = json_pack("{s:O,s:O}", "name", name, "schema", schema);
        if (js && present(strict)) json_object_set(js, "strict", strict);
        if (js && present(desc)) json_object_set(js, "description", desc);
        rf = json_pack("{s:s,s:o}", "type", "json_schema", "json_schema", js);
    } else {
        return BAD("text.format", "'text.format.type' is '%.64s'; expected text, json_object or json_schema", t);
    }
    return !json_object_set_new(chat, "response_format", rf) || OOM();
}

/* A chat-request error in this API's names (also for errors found after
 * parsing, by server_submit). */
void resp_error_names(zn_oai_error *e) {
    oai_error_rename(e, "max_tokens", "max_output_tokens");
    /* (chat's schema sits at response_format.json_schema.schema, this API's at text.format.schema) */
    oai_error_rename(e, "response_format.json_schema", "text.format");
    oai_error_rename(e, "response_format", "text.format");
    oai_error_rename(e, "messages", "input");
    oai_error_rename(e, "reasoning_effort", "reasoning.effort");
}

static bool build(json_t *o, json_t *chat, json_t *echo, zn_oai_error *e) {
    static const char *const refused[] = {"previous_response_id", "conversation", "prompt", NULL};
    for (int i = 0; refused[i]; i++)
        if (present(json_object_get(o, refused[i])))
            return UNSUPPORTED(refused[i], "'%s' needs stored state; this server is stateless (send the whole "
                               "conversation in 'input')", refused[i]);
    json_t *bg = json_object_get(o, "background");
    if (present(bg) && !json_is_false(bg)) return UNSUPPORTED("background", "'background' responses are not supported");
    json_t *tlp = json_object_get(o, "top_logprobs");
    if (present(tlp) && !(json_is_integer(tlp) && json_integer_value(tlp) == 0))
        return UNSUPPORTED("top_logprobs", "'top_logprobs' is not supported on /v1/responses (use /v1/chat/completions)");
    /* same names, checked by the chat parser */
    static const char *const same[] = {"model", "stream", "temperature", "top_p", "parallel_tool_calls", NULL};
    for (int i = 0; same[i]; i++) {
        json_t *v = json_object_get(o, same[i]);
        if (v && json_object_set(chat, same[i], v)) return OOM();
    }
    json_t *mot = json_object_get(o, "max_output_tokens");
    if (mot && json_object_set(chat, "max_tokens", mot)) return OOM();
    json_t *msgs = json_array();
    if (!msgs || json_object_set_new(chat, "messages", msgs)) return OOM();
    json_t *ins = json_object_get(o, "instructions");
    if (present(ins)) {
        if (!json_is_string(ins)) return BAD("instructions", "'instructions' must be a string");
        if (json_string_length(ins) && json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "system", "content", ins)))
            return OOM();
    }
    json_t *in = json_object_get(o, "input");
    if (!present(in)) return BAD("input", "'input' is required");
    if (!input_items(in, msgs, e)) return false;
    json_t *tools = json_object_get(o, "tools"), *tc = json_object_get(o, "tool_choice"), *text = json_object_get(o, "text");
    if (present(tools) && !convert_tools(tools, chat, e)) return false;
    if (present(tc) && !convert_tool_choice(tc, chat, e)) return false;
    if (present(text) && !convert_text(text, chat, e)) return false;
    /* reasoning.effort: chat's reasoning_effort (summaries are not made: the reasoning is returned whole) */
    json_t *rs = json_object_get(o, "reasoning"), *effort = NULL;
    if (present(rs)) {
        if (!json_is_object(rs)) return BAD("reasoning", "'reasoning' must be an object {\"effort\": ...}");
        effort = json_object_get(rs, "effort");
        if (present(effort) && json_object_set(chat, "reasoning_effort", effort)) return OOM();
    }
    /* what the response object repeats */
    json_t *pt = json_object_get(o, "parallel_tool_calls"), *md = json_object_get(o, "metadata");
    if (json_object_set_new(echo, "instructions", present(ins) ? json_incref(ins) : json_null()) ||
        json_object_set_new(echo, "max_output_tokens", present(mot) ? json_incref(mot) : json_null()) ||
        json_object_set_new(echo, "temperature", json_is_number(json_object_get(o, "temperature")) ? json_incref(json_object_get(o, "temperature")) : json_null()) ||
        json_object_set_new(echo, "top_p", json_is_number(json_object_get(o, "top_p")) ? json_incref(json_object_get(o, "top_p")) : json_null()) ||
        json_object_set_new(echo, "tools", json_is_array(tools) ? json_incref(tools) : json_array()) ||
        json_object_set_new(echo, "tool_choice", present(tc) ? json_incref(tc) : json_string("auto")) ||
        json_object_set_new(echo, "parallel_tool_calls", json_is_boolean(pt) ? json_incref(pt) : json_true()) ||
        json_object_set_new(echo, "text", present(text) ? json_incref(text) : json_pack("{s:{s:s}}", "format", "type", "text")) ||
        json_object_set_new(echo, "metadata", json_is_object(md) ? json_incref(md) : json_object()) ||
        json_object_set_new(echo, "reasoning", json_pack("{s:O,s:n}", "effort", present(effort) ? effort : json_null(),
                                                         "summary")) ||
        json_object_set_new(echo, "previous_response_id", json_null()) ||
        json_object_set_new(echo, "store", json_false()))
        return OOM();
    return true;
}

bool resp_parse(const char *body, size_t len, zn_oai_req *r, char **echo, zn_oai_error *e) {
    memset(r, 0, sizeof *r);
    *echo = NULL;
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je);
    if (!o) return BAD(NULL, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    if (!json_is_object(o)) {
        json_decref(o);
        return BAD(NULL, "the body must be a JSON object");
    }
    json_t *chat = json_object(), *ej = json_object();
    bool ok = chat && ej ? build(o, chat, ej, e) : OOM();
    char *text = ok ? json_dumps(chat, JSON_COMPACT) : NULL;
    if (ok && !text) ok = OOM();
    json_decref(chat);
    json_decref(o);
    if (ok) {
        ok = oai_parse(text, strlen(text), true, r, e);
        if (!ok) resp_error_names(e);
    }
    free(text);
    if (ok && !(*echo = json_dumps(ej, JSON_COMPACT))) {
        oai_req_free(r);
        ok = OOM();
    }
    json_decref(ej);
    return ok;
}

/* ---- the response ---- */

enum { RESP_ITEM_MSG = 1, RESP_ITEM_REASONING, RESP_ITEM_CALL };

void resp_ctx_init(zn_resp_ctx *c, const char *model, const char *echo) {
    memset(c, 0, sizeof *c);
    oai_random_hex(c->hex, c);
    snprintf(c->id, sizeof c->id, "resp_%s", c->hex);
    c->created = (long)time(NULL);
    c->model = model;
    if (echo) c->echo = json_loads(echo, 0, NULL);
}

void resp_ctx_free(zn_resp_ctx *c) {
    json_decref(c->echo);
    c->echo = NULL;
}

static json_t *usage_json(const zn_job *j) {
    return json_pack("{s:I,s:{s:I},s:I,s:{s:I},s:I}", "input_tokens", (json_int_t)j->n_prompt, "input_tokens_details",
                     "cached_tokens", (json_int_t)j->n_cached, "output_tokens", (json_int_t)j->n_gen,
                     "output_tokens_details", "reasoning_tokens", (json_int_t)j->n_reasoning, "total_tokens",
                     (json_int_t)(j->n_prompt + j->n_gen));
}

/* The response object; output and usage are taken (NULL: [] / null). */
static json_t *response_object(const zn_resp_ctx *c, const char *status, json_t *output, json_t *usage, json_t *error,
                               json_t *incomplete) {
    json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:o,s:o,s:s,s:o,s:o}", "id", c->id, "object", "response", "created_at",
                          (json_int_t)c->created, "status", status, "error", error ? error : json_null(),
                          "incomplete_details", incomplete ? incomplete : json_null(), "model", c->model ? c->model : "",
                          "output", output ? output : json_array(), "usage", usage ? usage : json_null());
    if (o && c->echo) json_object_update_missing(o, c->echo);
    return o;
}

static void item_id(const zn_resp_stream *st, int kind, int index, char *buf, size_t cap) {
    snprintf(buf, cap, "%s_%s_%d", kind == RESP_ITEM_MSG ? "msg" : kind == RESP_ITEM_CALL ? "fc" : "rs", st->c->hex, index);
}

/* Adds type and sequence_number; out NULL (the whole response): nothing sent. */
static bool emit(zn_resp_stream *st, zn_evbuf *out, const char *type, json_t *ev) {
    long seq = st->seq++;
    if (!out) {
        json_decref(ev);
        return true;
    }
    if (!ev || json_object_set_new(ev, "type", json_string(type)) ||
        json_object_set_new(ev, "sequence_number", json_integer(seq))) {
        json_decref(ev);
        return false;
    }
    return evbuf_add(out, type, ev);
}

/* The open item as JSON: in_progress and empty when it opens, else its text. */
static json_t *item_json(const zn_resp_stream *st, const zn_job *j, bool done, const char *status) {
    char id[80];
    item_id(st, st->kind, st->n_items - 1, id, sizeof id);
    if (st->kind == RESP_ITEM_CALL) {
        char cid[80];
        snprintf(cid, sizeof cid, "call_%s_%d", st->c->hex, st->n_calls - 1);
        const zn_textbuf *a = &j->text[ZN_CH_TOOL_ARGS], *nm = &j->text[ZN_CH_TOOL_NAME];
        return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "id", id, "type", "function_call", "status", status, "call_id", cid,
                         "name", oai_json_text(nm->p + st->name_off, st->name_len), "arguments",
                         done && st->have_text ? oai_json_text(a->p + st->start, st->end - st->start) : json_string(""));
    }
    const zn_textbuf *t = &j->text[st->kind == RESP_ITEM_MSG ? ZN_CH_CONTENT : ZN_CH_REASONING];
    json_t *text = done ? oai_json_text(t->p + st->start, st->end - st->start) : NULL;
    if (st->kind == RESP_ITEM_MSG)
        return json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", id, "type", "message", "status", status, "role", "assistant",
                         "content", text ? json_pack("[{s:s,s:o,s:[],s:[]}]", "type", "output_text", "text", text,
                                                     "annotations", "logprobs")
                                         : json_array());
    return json_pack("{s:s,s:s,s:[],s:o}", "id", id, "type", "reasoning", "summary", "content",
                     text ? json_pack("[{s:s,s:o}]", "type", "reasoning_text", "text", text) : json_array());
}

static json_t *text_part(const zn_resp_stream *st, const zn_job *j, bool done) {
    const zn_textbuf *t = &j->text[st->kind == RESP_ITEM_MSG ? ZN_CH_CONTENT : ZN_CH_REASONING];
    json_t *text = done ? oai_json_text(t->p + st->start, st->end - st->start) : json_string("");
    if (st->kind == RESP_ITEM_MSG) return json_pack("{s:s,s:o,s:[]}", "type", "output_text", "text", text, "annotations");
    return json_pack("{s:s,s:o}", "type", "reasoning_text", "text", text);
}

static bool close_item(zn_resp_stream *st, const zn_job *j, zn_evbuf *out, const char *status) {
    if (!st->kind) return true;
    char id[80];
    item_id(st, st->kind, st->n_items - 1, id, sizeof id);
    int at = st->n_items - 1;
    bool ok = true;
    if (st->kind == RESP_ITEM_CALL) {
        const zn_textbuf *a = &j->text[ZN_CH_TOOL_ARGS], *nm = &j->text[ZN_CH_TOOL_NAME];
        ok = emit(st, out, "response.function_call_arguments.done",
                  json_pack("{s:s,s:i,s:o,s:o}", "item_id", id, "output_index", at, "name",
                            oai_json_text(nm->p + st->name_off, st->name_len), "arguments",
                            st->have_text ? oai_json_text(a->p + st->start, st->end - st->start) : json_string("")));
    } else {
        const zn_textbuf *t = &j->text[st->kind == RESP_ITEM_MSG ? ZN_CH_CONTENT : ZN_CH_REASONING];
        const char *done = st->kind == RESP_ITEM_MSG ? "response.output_text.done" : "response.reasoning_text.done";
        json_t *ev = json_pack("{s:s,s:i,s:i,s:o}", "item_id", id, "output_index", at, "content_index", 0, "text",
                               oai_json_text(t->p + st->start, st->end - st->start));
        if (ev && st->kind == RESP_ITEM_MSG) json_object_set_new(ev, "logprobs", json_array());
        ok = emit(st, out, done, ev) &&
             emit(st, out, "response.content_part.done",
                  json_pack("{s:s,s:i,s:i,s:o}", "item_id", id, "output_index", at, "content_index", 0, "part",
                            text_part(st, j, true)));
    }
    json_t *item = item_json(st, j, true, status);
    ok = ok && item && !json_array_append(st->output, item);
    ok = ok && emit(st, out, "response.output_item.done", json_pack("{s:i,s:o}", "output_index", at, "item", item));
    if (!ok) json_decref(item);
    st->kind = 0;
    return ok;
}

static bool open_item(zn_resp_stream *st, const zn_job *j, int kind, const zn_piece *p, zn_evbuf *out) {
    st->kind = kind;
    st->n_items++;
    st->have_text = false;
    st->start = st->end = p->off;
    if (kind == RESP_ITEM_CALL) {
        st->n_calls++;
        st->name_off = p->off;
        st->name_len = p->len;
    }
    int at = st->n_items - 1;
    bool ok = emit(st, out, "response.output_item.added",
                   json_pack("{s:i,s:o}", "output_index", at, "item", item_json(st, j, false, "in_progress")));
    if (ok && kind != RESP_ITEM_CALL) {
        char id[80];
        item_id(st, kind, at, id, sizeof id);
        ok = emit(st, out, "response.content_part.added",
                  json_pack("{s:s,s:i,s:i,s:o}", "item_id", id, "output_index", at, "content_index", 0, "part",
                            text_part(st, j, false)));
    }
    return ok;
}

void resp_stream_init(zn_resp_stream *st, const zn_resp_ctx *c) {
    memset(st, 0, sizeof *st);
    st->c = c;
    st->output = json_array();
}

void resp_stream_free(zn_resp_stream *st) {
    json_decref(st->output);
    st->output = NULL;
}

bool resp_stream_begin(zn_resp_stream *st, zn_evbuf *out) {
    return emit(st, out, "response.created",
                json_pack("{s:o}", "response", response_object(st->c, "in_progress", NULL, NULL, NULL, NULL))) &&
           emit(st, out, "response.in_progress",
                json_pack("{s:o}", "response", response_object(st->c, "in_progress", NULL, NULL, NULL, NULL)));
}

bool resp_stream_piece(zn_resp_stream *st, const zn_job *j, int i, zn_evbuf *out) {
    if (!st->output) return false;
    const zn_piece *p = &j->pieces[i];
    char id[80];
    if (p->ch == ZN_CH_TOOL_ARGS) {
        if (st->kind != RESP_ITEM_CALL || !p->len) return true;
        if (!st->have_text) st->start = p->off;
        st->have_text = true;
        st->end = p->off + p->len;
        item_id(st, st->kind, st->n_items - 1, id, sizeof id);
        return emit(st, out, "response.function_call_arguments.delta",
                    json_pack("{s:s,s:i,s:o}", "item_id", id, "output_index", st->n_items - 1, "delta",
                              oai_json_text(j->text[p->ch].p + p->off, p->len)));
    }
    int kind = p->ch == ZN_CH_CONTENT ? RESP_ITEM_MSG : p->ch == ZN_CH_REASONING ? RESP_ITEM_REASONING : RESP_ITEM_CALL;
    if (kind != RESP_ITEM_CALL && !p->len) return true;
    if (kind == RESP_ITEM_CALL || kind != st->kind)
        if (!close_item(st, j, out, "completed") || !open_item(st, j, kind, p, out)) return false;
    if (kind == RESP_ITEM_CALL) return true;
    st->end = p->off + p->len;
    item_id(st, kind, st->n_items - 1, id, sizeof id);
    json_t *ev = json_pack("{s:s,s:i,s:i,s:o}", "item_id", id, "output_index", st->n_items - 1, "content_index", 0,
                           "delta", oai_json_text(j->text[p->ch].p + p->off, p->len));
    if (ev && kind == RESP_ITEM_MSG) json_object_set_new(ev, "logprobs", json_array());
    return emit(st, out, kind == RESP_ITEM_MSG ? "response.output_text.delta" : "response.reasoning_text.delta", ev);
}

static json_t *failed_error(const zn_job *j) {
    return json_pack("{s:s,s:s}", "code", "server_error", "message", j->err.msg);
}

bool resp_stream_end(zn_resp_stream *st, const zn_job *j, zn_evbuf *out) {
    if (!st->output) return false;
    if (j->failed) {
        bool ok = emit(st, out, "error",
                       json_pack("{s:s,s:s,s:n}", "code", "server_error", "message", j->err.msg, "param"));
        return ok && emit(st, out, "response.failed",
                          json_pack("{s:o}", "response", response_object(st->c, "failed", json_incref(st->output), NULL,
                                                                         failed_error(j), NULL)));
    }
    bool cut = j->finish && !strcmp(j->finish, "length");
    if (!close_item(st, j, out, cut ? "incomplete" : "completed")) return false;
    json_t *resp = response_object(st->c, cut ? "incomplete" : "completed", json_incref(st->output), usage_json(j), NULL,
                                   cut ? json_pack("{s:s}", "reason", "max_output_tokens") : NULL);
    return emit(st, out, cut ? "response.incomplete" : "response.completed", json_pack("{s:o}", "response", resp));
}

json_t *resp_final(const zn_resp_ctx *c, const zn_job *j) {
    zn_resp_stream st;
    resp_stream_init(&st, c);
    bool ok = st.output != NULL;
    json_t *o = NULL;
    if (j->failed) {
        o = response_object(c, "failed", NULL, NULL, failed_error(j), NULL);
    } else {
        for (int i = 0; ok && i < j->n_pieces; i++) ok = resp_stream_piece(&st, j, i, NULL);
        bool cut = j->finish && !strcmp(j->finish, "length");
        ok = ok && close_item(&st, j, NULL, cut ? "incomplete" : "completed");
        if (ok)
            o = response_object(c, cut ? "incomplete" : "completed", json_incref(st.output), usage_json(j), NULL,
                                cut ? json_pack("{s:s}", "reason", "max_output_tokens") : NULL);
    }
    resp_stream_free(&st);
    return o;
}
