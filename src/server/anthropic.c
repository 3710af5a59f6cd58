/* The Anthropic Messages API (see anthropic.h). */
#include "anthropic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "textstream.h"
#include "utf8.h"

#define BAD(param, ...) oai_fail(e, 400, "invalid_request_error", NULL, param, __VA_ARGS__)
#define OOM() oai_fail(e, 500, "server_error", NULL, NULL, "out of memory")

/* ---- the request ---- */

static bool present(json_t *v) { return v && !json_is_null(v); }

/* Text blocks [{type: "text", text}] (or a string) -> one string, joined by "\n". */
static bool blocks_text(json_t *c, const char *param, json_t **out, zn_oai_error *e) {
    if (json_is_string(c)) {
        *out = json_incref(c);
        return true;
    }
    if (!json_is_array(c)) return BAD(param, "%s: must be a string or an array of text blocks", param);
    size_t n = json_array_size(c);
    for (size_t k = 0; k < n; k++) {
        json_t *b = json_array_get(c, k), *type = json_object_get(b, "type"), *text = json_object_get(b, "text");
        if (!json_is_object(b) || !json_is_string(type) || strcmp(json_string_value(type), "text") || !json_is_string(text))
            return BAD(param, "%s.%zu: must be a text block {\"type\": \"text\", \"text\": ...} (other blocks are not "
                       "supported here)", param, k);
    }
    *out = oai_join_texts(c, NULL);
    return *out ? true : OOM();
}

/* Appends text to a growing string (a message's text blocks). */
static bool join(char **acc, size_t *n, const char *s, size_t sn) {
    char *p = realloc(*acc, *n + sn + 2);
    if (!p) return false;
    if (*n) p[(*n)++] = '\n';
    memcpy(p + *n, s, sn);
    *n += sn;
    p[*n] = 0;
    *acc = p;
    return true;
}

/* One message: user text and tool_result blocks (each result a "tool"
 * message, before the user's text), or assistant text, thinking and
 * tool_use blocks (one message with tool_calls). */
static bool message(json_t *m, size_t i, json_t *msgs, zn_oai_error *e) {
    char param[48];
    snprintf(param, sizeof param, "messages.%zu", i);
    json_t *role = json_is_object(m) ? json_object_get(m, "role") : NULL;
    const char *r = json_string_value(role);
    if (!r || (strcmp(r, "user") && strcmp(r, "assistant")))
        return BAD(param, "%s.role: must be \"user\" or \"assistant\"", param);
    bool user = !strcmp(r, "user");
    json_t *c = json_object_get(m, "content");
    if (json_is_string(c))
        return !json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", r, "content", c)) || OOM();
    if (!json_is_array(c)) return BAD(param, "%s.content: must be a string or an array of content blocks", param);
    char *text = NULL, *thinking = NULL;
    size_t tn = 0, hn = 0;
    json_t *calls = json_array();
    bool ok = calls != NULL || OOM();
    size_t k;
    json_t *b;
    json_array_foreach(c, k, b) {
        if (!ok) break;
        char bp[80];
        snprintf(bp, sizeof bp, "%s.content.%zu", param, k);
        json_t *type = json_object_get(b, "type");
        const char *t = json_is_object(b) ? json_string_value(type) : NULL;
        if (!t) {
            ok = BAD(bp, "%s: must be a content block with a string 'type'", bp);
        } else if (!strcmp(t, "text")) {
            json_t *s = json_object_get(b, "text");
            if (!json_is_string(s)) ok = BAD(bp, "%s.text: must be a string", bp);
            else if (!join(&text, &tn, json_string_value(s), json_string_length(s))) ok = OOM();
        } else if (!strcmp(t, "tool_result") && user) {
            json_t *id = json_object_get(b, "tool_use_id"), *rc = json_object_get(b, "content"), *err = json_object_get(b, "is_error");
            json_t *res = NULL;
            if (!json_is_string(id) || !json_string_length(id)) ok = BAD(bp, "%s.tool_use_id: must be a non-empty string", bp);
            else if (present(err) && !json_is_boolean(err)) ok = BAD(bp, "%s.is_error: must be true or false", bp);
            else if (!present(rc)) res = json_string("");
            else {
                char cp[96];
                snprintf(cp, sizeof cp, "%s.content", bp);
                ok = blocks_text(rc, cp, &res, e);
            }
            if (ok && json_is_true(err) && res) { /* the model should know the call failed */
                size_t rl = json_string_length(res);
                char *both = malloc(rl + 8);
                json_t *nr = NULL;
                if (both) {
                    memcpy(both, "Error: ", 7);
                    memcpy(both + 7, json_string_value(res), rl);
                    nr = json_stringn_nocheck(both, rl + 7);
                    free(both);
                }
                json_decref(res);
                if (!(res = nr)) ok = OOM();
            }
            if (ok && (!res || json_array_append_new(msgs, json_pack("{s:s,s:O,s:o}", "role", "tool", "tool_call_id", id,
                                                                     "content", res))))
                ok = OOM();
            else if (!ok) json_decref(res);
        } else if (!strcmp(t, "tool_use") && !user) {
            json_t *id = json_object_get(b, "id"), *name = json_object_get(b, "name"), *input = json_object_get(b, "input");
            if (!json_is_string(id) || !json_string_length(id)) ok = BAD(bp, "%s.id: must be a non-empty string", bp);
            else if (!json_is_string(name) || !json_string_length(name)) ok = BAD(bp, "%s.name: must be a non-empty string", bp);
            else if (!json_is_object(input)) ok = BAD(bp, "%s.input: must be an object", bp);
            else {
                char *args = json_dumps(input, JSON_COMPACT);
                if (!args || json_array_append_new(calls, json_pack("{s:O,s:s,s:{s:O,s:s}}", "id", id, "type", "function",
                                                                    "function", "name", name, "arguments", args)))
                    ok = OOM();
                free(args);
            }
        } else if (!strcmp(t, "thinking") && !user) {
            json_t *s = json_object_get(b, "thinking");
            if (!json_is_string(s)) ok = BAD(bp, "%s.thinking: must be a string", bp);
            else if (!join(&thinking, &hn, json_string_value(s), json_string_length(s))) ok = OOM();
        } else if (!strcmp(t, "redacted_thinking") && !user) {
            continue;
        } else {
            ok = oai_fail(e, 400, "invalid_request_error", "unsupported_parameter", bp,
                          "%s: content blocks of type '%.64s' are not supported in a%s message (text, %s)", bp, t,
                          user ? " user" : "n assistant", user ? "tool_result" : "tool_use, thinking");
        }
    }
    if (ok && (tn || (!json_array_size(calls) && !hn && !(user && json_array_size(c))))) {
        json_t *nm = json_pack("{s:s,s:s}", "role", r, "content", text ? text : "");
        if (!nm || json_array_append_new(msgs, nm)) ok = OOM();
    }
    if (ok && !user && (json_array_size(calls) || hn)) {
        json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
        if (!tn) { /* thinking or calls alone */
            last = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
            if (!last || json_array_append_new(msgs, last)) ok = OOM();
        }
        if (ok && json_array_size(calls) && json_object_set(last, "tool_calls", calls)) ok = OOM();
        if (ok && hn && json_object_set_new(last, "reasoning_content", json_string(thinking))) ok = OOM();
    }
    json_decref(calls);
    free(text);
    free(thinking);
    return ok;
}

/* Anthropic tools {name, description, input_schema} -> chat tools. */
static bool convert_tools(json_t *tools, json_t *chat, zn_oai_error *e) {
    if (!json_is_array(tools)) return BAD("tools", "tools: must be an array of {\"name\", \"description\", \"input_schema\"}");
    json_t *out = json_array();
    if (!out || json_object_set_new(chat, "tools", out)) return OOM();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        char param[32];
        snprintf(param, sizeof param, "tools.%zu", i);
        if (!json_is_object(t)) return BAD(param, "%s: must be an object", param);
        json_t *type = json_object_get(t, "type"), *name = json_object_get(t, "name");
        json_t *d = json_object_get(t, "description"), *s = json_object_get(t, "input_schema");
        if (present(type) && !(json_is_string(type) && !strcmp(json_string_value(type), "custom")))
            return oai_fail(e, 400, "invalid_request_error", "unsupported_parameter", param,
                            "%s: tools of type '%.64s' are not supported (client tools with an input_schema only)", param,
                            json_is_string(type) ? json_string_value(type) : "?");
        if (!json_is_string(name) || !json_string_length(name)) return BAD(param, "%s.name: must be a non-empty string", param);
        if (present(d) && !json_is_string(d)) return BAD(param, "%s.description: must be a string", param);
        if (!json_is_object(s)) return BAD(param, "%s.input_schema: must be a JSON Schema object", param);
        json_t *fn = json_pack("{s:O,s:O}", "name", name, "parameters", s);
        if (fn && present(d)) json_object_set(fn, "description", d);
        if (!fn || json_array_append_new(out, json_pack("{s:s,s:o}", "type", "function", "function", fn))) return OOM();
    }
    return true;
}

static bool convert_tool_choice(json_t *tc, json_t *chat, zn_oai_error *e) {
    json_t *type = json_object_get(tc, "type");
    const char *t = json_is_object(tc) ? json_string_value(type) : NULL;
    if (!t) return BAD("tool_choice", "tool_choice: must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    json_t *dp = json_object_get(tc, "disable_parallel_tool_use");
    if (present(dp)) {
        if (!json_is_boolean(dp)) return BAD("tool_choice", "tool_choice.disable_parallel_tool_use: must be true or false");
        if (json_object_set_new(chat, "parallel_tool_calls", json_boolean(!json_is_true(dp)))) return OOM();
    }
    json_t *v;
    if (!strcmp(t, "auto") || !strcmp(t, "none")) v = json_string(t);
    else if (!strcmp(t, "any")) v = json_string("required");
    else if (!strcmp(t, "tool")) {
        json_t *name = json_object_get(tc, "name");
        if (!json_is_string(name)) return BAD("tool_choice", "tool_choice.name: must be a string");
        v = json_pack("{s:s,s:{s:O}}", "type", "function", "function", "name", name);
    } else return BAD("tool_choice", "tool_choice.type: '%.64s'; expected auto, any, tool or none", t);
    return !json_object_set_new(chat, "tool_choice", v) || OOM();
}

static bool build(json_t *o, bool count, json_t *chat, zn_oai_error *e) {
    json_t *model = json_object_get(o, "model");
    if (!json_is_string(model)) return BAD("model", "model: Field required (a string)");
    json_t *mt = json_object_get(o, "max_tokens");
    if (!count && !present(mt)) return BAD("max_tokens", "max_tokens: Field required");
    if (!count && !json_is_integer(mt)) return BAD("max_tokens", "max_tokens: must be an integer");
    if (!count && json_integer_value(mt) < 1) return BAD("max_tokens", "max_tokens: must be at least 1");
    static const char *const nums[] = {"temperature", "top_p", NULL};
    for (int i = 0; nums[i]; i++) {
        json_t *v = json_object_get(o, nums[i]);
        if (!present(v)) continue;
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
            return BAD(nums[i], "%s: must be a number between 0 and 1", nums[i]);
        if (json_object_set(chat, nums[i], v)) return OOM();
    }
    static const char *const same[] = {"model", "stream", "top_k", NULL};
    for (int i = 0; same[i]; i++) {
        json_t *v = json_object_get(o, same[i]);
        if (v && json_object_set(chat, same[i], v)) return OOM();
    }
    if (!count && json_object_set(chat, "max_tokens", mt)) return OOM();
    json_t *ss = json_object_get(o, "stop_sequences");
    if (present(ss)) {
        if (!json_is_array(ss)) return BAD("stop_sequences", "stop_sequences: must be an array of strings");
        if (json_array_size(ss) && json_object_set(chat, "stop", ss)) return OOM();
    }
    json_t *msgs = json_array();
    if (!msgs || json_object_set_new(chat, "messages", msgs)) return OOM();
    json_t *sys = json_object_get(o, "system");
    if (present(sys)) {
        json_t *text;
        if (!blocks_text(sys, "system", &text, e)) return false;
        if (!json_string_length(text)) json_decref(text);
        else if (json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", "system", "content", text))) return OOM();
    }
    json_t *m = json_object_get(o, "messages");
    if (!json_is_array(m)) return BAD("messages", "messages: Field required (an array of messages)");
    if (!json_array_size(m)) return BAD("messages", "messages: at least one message is required");
    if (json_array_size(m) > ZN_SRV_MAX_MESSAGES)
        return BAD("messages", "messages: %zu messages; at most %d", json_array_size(m), ZN_SRV_MAX_MESSAGES);
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) if (!message(x, i, msgs, e)) return false;
    json_t *tools = json_object_get(o, "tools"), *tc = json_object_get(o, "tool_choice");
    if (present(tools) && !convert_tools(tools, chat, e)) return false;
    if (present(tc) && !convert_tool_choice(tc, chat, e)) return false;
    json_t *th = json_object_get(o, "thinking");
    if (present(th)) {
        json_t *type = json_object_get(th, "type");
        const char *t = json_is_object(th) ? json_string_value(type) : NULL;
        if (!t || (strcmp(t, "enabled") && strcmp(t, "disabled")))
            return BAD("thinking", "thinking: must be {\"type\": \"enabled\", \"budget_tokens\": N} or {\"type\": \"disabled\"}");
        if (json_object_set_new(chat, "chat_template_kwargs", json_pack("{s:b}", "enable_thinking", !strcmp(t, "enabled"))))
            return OOM();
        /* Anthropic requires 1024 <= budget_tokens < max_tokens; zinc takes any budget from 1 (a small
         * local model may be given a small one) and keeps the second rule, also leaving budget_tokens
         * out (no budget) */
        json_t *bt = json_object_get(th, "budget_tokens");
        if (!strcmp(t, "enabled") && present(bt)) {
            if (!json_is_integer(bt) || json_integer_value(bt) < 1)
                return BAD("thinking.budget_tokens", "thinking.budget_tokens: must be an integer of at least 1");
            if (!count && json_integer_value(bt) >= json_integer_value(mt))
                return BAD("thinking.budget_tokens", "thinking.budget_tokens: must be less than max_tokens (%lld)",
                           (long long)json_integer_value(mt));
            if (json_object_set(chat, "thinking_budget_tokens", bt)) return OOM();
        }
    }
    return true;
}

/* A chat-request error in this API's names (also for errors found after
 * parsing, by server_submit). */
void anth_error_names(zn_oai_error *e) {
    oai_error_rename(e, "stop", "stop_sequences");
    oai_error_rename(e, "thinking_budget_tokens", "thinking.budget_tokens");
}

bool anth_parse(const char *body, size_t len, bool count, zn_oai_req *r, zn_oai_error *e) {
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je);
    if (!o) return BAD(NULL, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    if (!json_is_object(o)) {
        json_decref(o);
        return BAD(NULL, "the body must be a JSON object");
    }
    json_t *chat = json_object();
    bool ok = chat ? build(o, count, chat, e) : OOM();
    char *text = ok ? json_dumps(chat, JSON_COMPACT) : NULL;
    if (ok && !text) ok = OOM();
    json_decref(chat);
    json_decref(o);
    if (ok && !(ok = oai_parse(text, strlen(text), true, r, e))) anth_error_names(e);
    free(text);
    return ok;
}

json_t *anth_error_json(const zn_oai_error *e) {
    int s = e->status;
    const char *t = s == 401 ? "authentication_error" : s == 403 ? "permission_error" : s == 404 ? "not_found_error"
                  : s == 413 ? "request_too_large" : s == 429 ? "rate_limit_error" : s == 503 || s == 529 ? "overloaded_error"
                  : s >= 500 ? "api_error" : "invalid_request_error";
    json_t *msg = json_string(e->message);
    return json_pack("{s:s,s:{s:s,s:o}}", "type", "error", "error", "type", t, "message",
                     msg ? msg : json_string("invalid UTF-8 in the error message"));
}

/* ---- the response ---- */

enum { ANTH_BLOCK_TEXT = 1, ANTH_BLOCK_THINKING, ANTH_BLOCK_TOOL };

void anth_ctx_init(zn_anth_ctx *c, const char *model) {
    memset(c, 0, sizeof *c);
    oai_random_hex(c->hex, c);
    snprintf(c->id, sizeof c->id, "msg_%s", c->hex);
    c->model = model;
}

const char *anth_stop_reason(const zn_job *j) {
    const char *f = j->finish ? j->finish : "stop";
    if (!strcmp(f, "tool_calls")) return "tool_use";
    if (!strcmp(f, "length")) return "max_tokens";
    return j->stop_hit ? "stop_sequence" : "end_turn";
}

static json_t *tool_id(const zn_anth_ctx *c, int k) {
    char id[80];
    snprintf(id, sizeof id, "toolu_%s_%d", c->hex, k);
    return json_string(id);
}

static int kind_of(int ch) {
    return ch == ZN_CH_CONTENT ? ANTH_BLOCK_TEXT : ch == ZN_CH_REASONING ? ANTH_BLOCK_THINKING : ANTH_BLOCK_TOOL;
}

/* A tool call's arguments as the input object ({} when they do not parse as one). */
static json_t *input_of(const char *p, size_t n) {
    json_t *v = n ? json_loadb(p, n, 0, NULL) : NULL;
    if (json_is_object(v)) return v;
    json_decref(v);
    return json_object();
}

json_t *anth_final(const zn_anth_ctx *c, const zn_job *j) {
    json_t *content = json_array();
    int kind = 0, n_calls = 0;
    size_t start = 0, end = 0, name_off = 0, name_len = 0;
    bool args = false;
    for (int i = 0; content && i <= j->n_pieces; i++) {
        const zn_piece *p = i < j->n_pieces ? &j->pieces[i] : NULL;
        if (p && p->ch == ZN_CH_TOOL_ARGS) {
            if (kind != ANTH_BLOCK_TOOL || !p->len) continue;
            if (!args) start = p->off;
            args = true;
            end = p->off + p->len;
            continue;
        }
        if (p && p->ch != ZN_CH_TOOL_NAME && !p->len) continue;
        int k = p ? kind_of(p->ch) : 0;
        if (p && k == kind && k != ANTH_BLOCK_TOOL) {
            end = p->off + p->len;
            continue;
        }
        json_t *b = NULL; /* the block that ends here */
        if (kind == ANTH_BLOCK_TEXT)
            b = json_pack("{s:s,s:o}", "type", "text", "text", oai_json_text(j->text[ZN_CH_CONTENT].p + start, end - start));
        else if (kind == ANTH_BLOCK_THINKING)
            b = json_pack("{s:s,s:o,s:s}", "type", "thinking", "thinking",
                          oai_json_text(j->text[ZN_CH_REASONING].p + start, end - start), "signature", "");
        else if (kind == ANTH_BLOCK_TOOL)
            b = json_pack("{s:s,s:o,s:o,s:o}", "type", "tool_use", "id", tool_id(c, n_calls - 1), "name",
                          oai_json_text(j->text[ZN_CH_TOOL_NAME].p + name_off, name_len), "input",
                          args ? input_of(j->text[ZN_CH_TOOL_ARGS].p + start, end - start) : json_object());
        if (kind && json_array_append_new(content, b)) {
            json_decref(content);
            return NULL;
        }
        if (!p) break;
        kind = k;
        start = p->off;
        end = p->off + p->len;
        args = false;
        if (k == ANTH_BLOCK_TOOL) name_off = p->off, name_len = p->len, n_calls++;
    }
    json_t *ss = j->stop_hit && !strcmp(anth_stop_reason(j), "stop_sequence") ? json_string(j->stop_hit) : json_null();
    return json_pack("{s:s,s:s,s:s,s:o,s:s,s:s,s:o,s:{s:I,s:I}}", "id", c->id, "type", "message", "role", "assistant",
                     "content", content, "model", c->model ? c->model : "", "stop_reason", anth_stop_reason(j),
                     "stop_sequence", ss, "usage", "input_tokens", (json_int_t)j->n_prompt, "output_tokens",
                     (json_int_t)j->n_gen);
}

static bool ev(zn_evbuf *out, const char *type, json_t *data) {
    if (!data || json_object_set_new(data, "type", json_string(type))) {
        json_decref(data);
        return false;
    }
    return evbuf_add(out, type, data);
}

void anth_stream_init(zn_anth_stream *st, const zn_anth_ctx *c) {
    memset(st, 0, sizeof *st);
    st->c = c;
}

bool anth_stream_begin(zn_anth_stream *st, const zn_job *j, zn_evbuf *out) {
    json_t *msg = json_pack("{s:s,s:s,s:s,s:[],s:s,s:n,s:n,s:{s:I,s:i}}", "id", st->c->id, "type", "message", "role",
                            "assistant", "content", "model", st->c->model ? st->c->model : "", "stop_reason",
                            "stop_sequence", "usage", "input_tokens", (json_int_t)j->n_prompt, "output_tokens", 0);
    return ev(out, "message_start", json_pack("{s:o}", "message", msg)) && ev(out, "ping", json_object());
}

static bool close_block(zn_anth_stream *st, zn_evbuf *out) {
    if (!st->kind) return true;
    st->kind = 0;
    return ev(out, "content_block_stop", json_pack("{s:i}", "index", st->n_blocks - 1));
}

bool anth_stream_piece(zn_anth_stream *st, const zn_job *j, int i, zn_evbuf *out) {
    const zn_piece *p = &j->pieces[i];
    const char *text = j->text[p->ch].p + p->off;
    if (p->ch == ZN_CH_TOOL_ARGS) {
        if (st->kind != ANTH_BLOCK_TOOL || !p->len) return true;
        return ev(out, "content_block_delta", json_pack("{s:i,s:{s:s,s:o}}", "index", st->n_blocks - 1, "delta", "type",
                                                       "input_json_delta", "partial_json", oai_json_text(text, p->len)));
    }
    int k = kind_of(p->ch);
    if (k != ANTH_BLOCK_TOOL && !p->len) return true;
    if (k == ANTH_BLOCK_TOOL || k != st->kind) {
        if (!close_block(st, out)) return false;
        st->kind = k;
        int at = st->n_blocks++;
        json_t *b;
        if (k == ANTH_BLOCK_TOOL)
            b = json_pack("{s:s,s:o,s:o,s:{}}", "type", "tool_use", "id", tool_id(st->c, st->n_calls++), "name",
                          oai_json_text(text, p->len), "input");
        else if (k == ANTH_BLOCK_TEXT) b = json_pack("{s:s,s:s}", "type", "text", "text", "");
        else b = json_pack("{s:s,s:s,s:s}", "type", "thinking", "thinking", "", "signature", "");
        if (!ev(out, "content_block_start", json_pack("{s:i,s:o}", "index", at, "content_block", b))) return false;
        if (k == ANTH_BLOCK_TOOL) return true;
    }
    bool txt = k == ANTH_BLOCK_TEXT;
    return ev(out, "content_block_delta", json_pack("{s:i,s:{s:s,s:o}}", "index", st->n_blocks - 1, "delta", "type",
                                                   txt ? "text_delta" : "thinking_delta", txt ? "text" : "thinking",
                                                   oai_json_text(text, p->len)));
}

bool anth_stream_end(zn_anth_stream *st, const zn_job *j, zn_evbuf *out) {
    if (j->failed) {
        zn_oai_error e;
        oai_fail(&e, j->err.status == ZN_ERR_IO ? 503 : 500, NULL, NULL, NULL, "%s", j->err.msg);
        json_t *body = anth_error_json(&e);
        json_object_del(body, "type");
        return ev(out, "error", body);
    }
    const char *why = anth_stop_reason(j);
    json_t *ss = j->stop_hit && !strcmp(why, "stop_sequence") ? json_string(j->stop_hit) : json_null();
    return close_block(st, out) &&
           ev(out, "message_delta", json_pack("{s:{s:s,s:o},s:{s:I,s:I}}", "delta", "stop_reason", why, "stop_sequence", ss,
                                              "usage", "input_tokens", (json_int_t)j->n_prompt, "output_tokens",
                                              (json_int_t)j->n_gen)) &&
           ev(out, "message_stop", json_object());
}
