/* OpenAI-style response bodies (see oai_resp.h). */
#include "oai_resp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "textstream.h"
#include "utf8.h"

void oai_ctx_init(zn_oai_ctx *c, bool chat, const char *model, const zn_tokenizer *tok) {
    memset(c, 0, sizeof *c);
    char hex[25];
    oai_random_hex(hex, c);
    snprintf(c->id, sizeof c->id, "%s%s", chat ? "chatcmpl-" : "cmpl-", hex);
    c->created = (long)time(NULL);
    c->model = model;
    c->chat = chat;
    c->tok = tok;
}

json_t *oai_error_json(const zn_oai_error *e) {
    json_t *param = e->param[0] ? json_string(e->param) : json_null();
    json_t *code = e->code ? json_string(e->code) : json_null();
    return json_pack("{s:{s:o,s:s,s:o,s:o}}", "error", "message", oai_json_text(e->message, strlen(e->message)), "type",
                     e->type ? e->type : "server_error", "param", param, "code", code);
}

json_t *oai_usage(long prompt, long completion, long cached, long reasoning) {
    return json_pack("{s:I,s:I,s:I,s:{s:I},s:{s:I}}", "prompt_tokens", (json_int_t)prompt, "completion_tokens",
                     (json_int_t)completion, "total_tokens", (json_int_t)(prompt + completion), "prompt_tokens_details",
                     "cached_tokens", (json_int_t)cached, "completion_tokens_details", "reasoning_tokens",
                     (json_int_t)reasoning);
}

/* A token's text and bytes as OpenAI's logprobs show it. */
static json_t *tok_entry(const zn_tokenizer *tok, int32_t id, float lp, bool with_bytes) {
    char piece[ZN_MAX_TOKEN_BYTES];
    size_t n = tokenizer_token_piece(tok, id, true, piece, sizeof piece);
    json_t *o = json_pack("{s:o,s:f}", "token", oai_json_text(piece, n), "logprob", (double)lp);
    if (o && with_bytes) {
        json_t *b = json_array();
        for (size_t i = 0; b && i < n; i++) json_array_append_new(b, json_integer((unsigned char)piece[i]));
        json_object_set_new(o, "bytes", b ? b : json_null());
    }
    return o;
}

static json_t *chat_logprobs(const zn_tokenizer *tok, const zn_tok_lp *lp, int n_lp, int top_n) {
    json_t *content = json_array();
    for (int i = 0; content && i < n_lp; i++) {
        json_t *e = tok_entry(tok, lp[i].id, lp[i].lp, true);
        json_t *top = json_array();
        for (int k = 0; top && k < lp[i].n_top && k < top_n; k++)
            json_array_append_new(top, tok_entry(tok, lp[i].top_id[k], lp[i].top_lp[k], true));
        if (e) json_object_set_new(e, "top_logprobs", top ? top : json_array());
        json_array_append_new(content, e);
    }
    return json_pack("{s:o}", "content", content ? content : json_array());
}

/* The legacy completions form: parallel arrays, text_offset from base. */
static json_t *text_logprobs(const zn_tokenizer *tok, const zn_tok_lp *lp, int n_lp, int top_n, size_t base) {
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t off = base;
    for (int i = 0; i < n_lp; i++) {
        char piece[ZN_MAX_TOKEN_BYTES];
        size_t n = tokenizer_token_piece(tok, lp[i].id, true, piece, sizeof piece);
        json_array_append_new(toks, oai_json_text(piece, n));
        json_array_append_new(lps, json_real(lp[i].lp));
        json_array_append_new(offs, json_integer((json_int_t)off));
        off += n;
        json_t *t = json_object();
        for (int k = 0; t && k < lp[i].n_top && k < top_n; k++) {
            size_t m = tokenizer_token_piece(tok, lp[i].top_id[k], true, piece, sizeof piece);
            char key[3 * ZN_MAX_TOKEN_BYTES + 1];
            size_t km = utf8_sanitize(piece, m, key);
            key[km] = 0;
            json_object_set_new(t, key, json_real(lp[i].top_lp[k]));
        }
        json_array_append_new(tops, t ? t : json_null());
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops, "text_offset", offs);
}

static json_t *envelope(const zn_oai_ctx *c, const char *object, json_t *choice) {
    json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", c->id, "object", object, "created", (json_int_t)c->created,
                          "model", c->model, "choices", choice);
    return o;
}

json_t *oai_chunk(const zn_oai_ctx *c, bool role, int ch, const char *text, size_t n, const zn_tok_lp *lp, int n_lp,
                  int top_n, const char *finish) {
    json_t *choice;
    json_t *fin = finish ? json_string(finish) : json_null();
    json_t *lps = n_lp > 0 ? (c->chat ? chat_logprobs(c->tok, lp, n_lp, top_n) : text_logprobs(c->tok, lp, n_lp, top_n, 0))
                           : json_null();
    if (c->chat) {
        json_t *delta = json_object();
        if (role) {
            json_object_set_new(delta, "role", json_string("assistant"));
            json_object_set_new(delta, "content", json_string(""));
        }
        if (n && ch == ZN_CH_CONTENT) json_object_set_new(delta, "content", oai_json_text(text, n));
        if (n && ch == ZN_CH_REASONING) {
            json_object_set_new(delta, "reasoning_content", oai_json_text(text, n));
            json_object_set_new(delta, "reasoning", oai_json_text(text, n));
        }
        choice = json_pack("{s:i,s:o,s:o,s:o}", "index", 0, "delta", delta, "logprobs", lps, "finish_reason", fin);
    } else {
        choice = json_pack("{s:o,s:i,s:o,s:o}", "text", oai_json_text(text, n), "index", 0, "logprobs", lps, "finish_reason", fin);
    }
    json_t *o = envelope(c, c->chat ? "chat.completion.chunk" : "text_completion", choice);
    if (o && c->usage_null) json_object_set_new(o, "usage", json_null());
    return o;
}

/* The id of call `index` of this response: the same in the stream and the whole form. */
static json_t *call_id(const zn_oai_ctx *c, int index) {
    char id[80];
    const char *dash = strchr(c->id, '-');
    snprintf(id, sizeof id, "call_%s_%d", dash ? dash + 1 : c->id, index);
    return json_string(id);
}

json_t *oai_tool_chunk(const zn_oai_ctx *c, int index, bool start, const char *text, size_t n, const zn_tok_lp *lp,
                       int n_lp, int top_n) {
    json_t *call;
    if (start)
        call = json_pack("{s:i,s:o,s:s,s:{s:o,s:s}}", "index", index, "id", call_id(c, index), "type", "function",
                         "function", "name", oai_json_text(text, n), "arguments", "");
    else
        call = json_pack("{s:i,s:{s:o}}", "index", index, "function", "arguments", oai_json_text(text, n));
    json_t *lps = n_lp > 0 ? chat_logprobs(c->tok, lp, n_lp, top_n) : json_null();
    json_t *choice = json_pack("{s:i,s:{s:[o]},s:o,s:n}", "index", 0, "delta", "tool_calls", call, "logprobs", lps,
                               "finish_reason");
    json_t *o = envelope(c, "chat.completion.chunk", choice);
    if (o && c->usage_null) json_object_set_new(o, "usage", json_null());
    return o;
}

/* message.tool_calls from the job's pieces: a TOOL_NAME piece opens a call,
 * TOOL_ARGS pieces append to its arguments. */
static json_t *final_tool_calls(const zn_oai_ctx *c, const zn_job *j) {
    json_t *calls = json_array();
    int k = -1;
    size_t a_off = 0, a_len = 0; /* the current call's arguments: consecutive in text[TOOL_ARGS] */
    const zn_textbuf *names = &j->text[ZN_CH_TOOL_NAME], *args = &j->text[ZN_CH_TOOL_ARGS];
    for (int i = 0; calls && i <= j->n_pieces; i++) {
        const zn_piece *p = i < j->n_pieces ? &j->pieces[i] : NULL;
        if (!p || p->ch == ZN_CH_TOOL_NAME) {
            if (k >= 0) {
                json_t *call = json_array_get(calls, (size_t)k);
                json_object_set_new(json_object_get(call, "function"), "arguments", oai_json_text(args->p ? args->p + a_off : "", a_len));
            }
            if (!p) break;
            k++;
            json_array_append_new(calls, json_pack("{s:o,s:s,s:{s:o}}", "id", call_id(c, k), "type", "function",
                                                   "function", "name", oai_json_text(names->p + p->off, p->len)));
            a_len = 0;
            a_off = args->n;
            for (int m = i + 1; m < j->n_pieces; m++) /* where its arguments start */
                if (j->pieces[m].ch == ZN_CH_TOOL_ARGS) { a_off = j->pieces[m].off; break; }
                else if (j->pieces[m].ch == ZN_CH_TOOL_NAME) break;
        } else if (p->ch == ZN_CH_TOOL_ARGS && k >= 0) {
            a_len = p->off + p->len - a_off;
        }
    }
    return calls;
}

json_t *oai_usage_chunk(const zn_oai_ctx *c, json_t *usage) {
    return json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", c->id, "object",
                     c->chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)c->created, "model",
                     c->model, "choices", "usage", usage);
}

json_t *oai_final(const zn_oai_ctx *c, const zn_job *j) {
    const zn_textbuf *t = &j->text[ZN_CH_CONTENT], *r = &j->text[ZN_CH_REASONING];
    json_t *lps = j->top_logprobs >= 0
                      ? (c->chat ? chat_logprobs(c->tok, j->lp, j->n_lp, j->top_logprobs)
                                 : text_logprobs(c->tok, j->lp, j->n_lp, j->top_logprobs, 0))
                      : json_null();
    json_t *choice;
    if (c->chat) {
        json_t *content = j->n_calls && !t->n ? json_null() : oai_json_text(t->p ? t->p : "", t->n);
        json_t *msg = json_pack("{s:s,s:o}", "role", "assistant", "content", content);
        if (msg && j->n_calls) json_object_set_new(msg, "tool_calls", final_tool_calls(c, j));
        if (msg && r->n) {
            json_object_set_new(msg, "reasoning_content", oai_json_text(r->p, r->n));
            json_object_set_new(msg, "reasoning", oai_json_text(r->p, r->n));
        }
        choice = json_pack("{s:i,s:o,s:o,s:s}", "index", 0, "message", msg, "logprobs", lps, "finish_reason",
                           j->finish ? j->finish : "stop");
    } else {
        choice = json_pack("{s:o,s:i,s:o,s:s}", "text", oai_json_text(t->p ? t->p : "", t->n), "index", 0, "logprobs", lps,
                           "finish_reason", j->finish ? j->finish : "stop");
    }
    json_t *o = envelope(c, c->chat ? "chat.completion" : "text_completion", choice);
    if (o) json_object_set_new(o, "usage", oai_usage(j->n_prompt, j->n_gen, j->n_cached, j->n_reasoning));
    return o;
}

char *oai_dump(json_t *j, size_t *len) {
    if (!j) return NULL;
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (s) *len = strlen(s);
    return s;
}

char *oai_sse(json_t *j, size_t *len) {
    size_t n;
    char *s = oai_dump(j, &n);
    if (!s) return NULL;
    char *out = malloc(n + 9);
    if (out) {
        memcpy(out, "data: ", 6);
        memcpy(out + 6, s, n);
        memcpy(out + 6 + n, "\n\n", 3);
        *len = n + 8;
    }
    free(s);
    return out;
}
