/* The generation endpoints: /v1/chat/completions and /v1/completions, whole
 * or streamed as server-sent events (server_impl.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat.h"
#include "constrain.h"
#include "oai_resp.h"
#include "server_impl.h"
#include "textstream.h"
#include "timer.h"

static bool fail_e(zn_oai_error *e, int status, const char *type, const char *code, const char *fmt, const char *arg) {
    return oai_fail(e, status, type, code, NULL, fmt, arg);
}

static const char *token_text(const zn_tokenizer *tok, int32_t id) {
    return id == ZN_TOKEN_NULL ? NULL : tokenizer_token_text(tok, id);
}

/* Tokenizes text into a new array (parse_special: control tokens written in
 * it count); false when it does not fit the context. */
static bool tokenize(zn_server *s, const char *text, size_t len, bool add_special, int32_t **ids, int *n,
                     zn_oai_error *e) {
    size_t cap = (size_t)s->cfg.n_ctx + 1, got = 0;
    *ids = malloc(sizeof **ids * cap);
    if (!*ids) return fail_e(e, 500, "server_error", NULL, "out of memory%s", "");
    zn_err err = {0};
    zn_status st = tokenizer_encode(s->tok, text, len, add_special, true, *ids, cap, &got, &err);
    if (st == ZN_OK && got < cap) {
        *n = (int)got;
        return true;
    }
    free(*ids);
    *ids = NULL;
    if (st && st != ZN_ERR_NOMEM) return fail_e(e, 400, "invalid_request_error", NULL, "%s", err.msg);
    char msg[160];
    snprintf(msg, sizeof msg, "the prompt has more tokens than the context holds (%d; zinc serve --ctx)", s->cfg.n_ctx);
    return fail_e(e, 400, "invalid_request_error", "context_length_exceeded", "%s", msg);
}

/* A template that never mentions tools (the demo model's, ChatML) would drop
 * them and the calls in the history: the tools are described in the system
 * message in the Hermes form Qwen2.5's template uses (the form the parser
 * reads, toolcall_format_of), and earlier calls become <tool_call> markup in
 * their assistant message. Returns the messages to render (malloc'd JSON),
 * NULL when out of memory. */
static char *describe_tools(const char *messages, const char *tools) {
    json_error_t je;
    json_t *m = json_loads(messages, 0, &je), *t = json_loads(tools, 0, &je);
    char *out = NULL;
    if (!json_is_array(m) || !json_is_array(t)) goto done;
    size_t cap = strlen(tools) + 1024, n = 0;
    char *d = malloc(cap);
    if (!d) goto done;
    n += (size_t)snprintf(d + n, cap - n, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                          "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
    size_t i;
    json_t *x;
    json_array_foreach(t, i, x) {
        char *one = json_dumps(x, JSON_COMPACT);
        if (!one) continue;
        size_t k = strlen(one);
        if (n + k + 2 < cap) n += (size_t)snprintf(d + n, cap - n, "\n%s", one);
        free(one);
    }
    snprintf(d + n, cap - n, "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
             "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
             "<args-json-object>}\n</tool_call>");
    json_t *first = json_array_get(m, 0);
    const char *role = json_string_value(json_object_get(first, "role"));
    if (role && !strcmp(role, "system")) {
        const char *c = json_string_value(json_object_get(first, "content"));
        size_t cl = c ? strlen(c) : 0, dl = strlen(d);
        char *both = malloc(cl + dl + 3);
        if (both) {
            snprintf(both, cl + dl + 3, "%s%s%s", c ? c : "", cl ? "\n\n" : "", d);
            json_object_set_new(first, "content", json_string(both));
            free(both);
        }
    } else {
        json_array_insert_new(m, 0, json_pack("{s:s,s:s}", "role", "system", "content", d));
    }
    free(d);
    json_array_foreach(m, i, x) {
        json_t *calls = json_object_get(x, "tool_calls");
        if (!json_is_array(calls) || !json_array_size(calls)) continue;
        const char *c = json_string_value(json_object_get(x, "content"));
        char *acc = strdup(c ? c : "");
        size_t k;
        json_t *call;
        json_array_foreach(calls, k, call) {
            json_t *fn = json_object_get(call, "function");
            json_t *args = json_object_get(fn, "arguments");
            json_t *parsed = json_is_string(args) ? json_loads(json_string_value(args), 0, &je) : json_incref(args);
            json_t *obj = json_pack("{s:O,s:o}", "name", json_object_get(fn, "name"), "arguments",
                                    parsed ? parsed : json_object());
            char *one = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
            json_decref(obj);
            if (!one || !acc) {
                free(one);
                continue;
            }
            size_t al = strlen(acc), ol = strlen(one);
            char *nx = realloc(acc, al + ol + 32);
            if (nx) {
                acc = nx;
                snprintf(acc + al, ol + 32, "%s<tool_call>\n%s\n</tool_call>", al ? "\n" : "", one);
            }
            free(one);
        }
        if (acc) json_object_set_new(x, "content", json_string(acc));
        free(acc);
        json_object_del(x, "tool_calls");
    }
    out = json_dumps(m, JSON_COMPACT);
done:
    json_decref(m);
    json_decref(t);
    return out;
}

/* Renders r's messages, or the messages msgs (a JSON array) with r's tools and options. */
static bool render(zn_server *s, const zn_oai_req *r, const char *msgs, bool gen_prompt, char **out, size_t *len,
                   zn_oai_error *e) {
    zn_chat_kwargs kw = {.enable_thinking = r->think,
                         .bos_token = token_text(s->tok, tokenizer_bos(s->tok)),
                         .eos_token = token_text(s->tok, tokenizer_eos(s->tok)),
                         .extra = r->template_kwargs,
                         /* "none": the model is not told of the tools, so it has no reason to call them */
                         .tools = r->tool_choice != ZN_TOOLS_NONE ? r->tools : NULL};
    bool fallback = false;
    zn_err err = {0};
    if (!msgs) msgs = r->messages;
    char *described = NULL;
    if (kw.tools && !(s->tmpl && strstr(s->tmpl, "tools"))) {
        if (!(described = describe_tools(msgs, r->tools)))
            return fail_e(e, 500, "server_error", NULL, "out of memory%s", "");
        msgs = described;
        kw.tools = NULL;
    }
    zn_status st = chat_render_json(s->tmpl, msgs, strlen(msgs), gen_prompt, &kw, out, len, &fallback, &err);
    free(described);
    if (st) return fail_e(e, st == ZN_ERR_NOMEM ? 500 : 400, st == ZN_ERR_NOMEM ? "server_error" : "invalid_request_error",
                          NULL, "the chat template failed on these messages: %s", err.msg);
    if (fallback && !atomic_exchange(&s->said_fallback, true))
        fprintf(stderr, "zinc: the model has no chat template; using ChatML\n");
    return true;
}

/* The leading system/developer messages of a chat (malloc'd JSON array), NULL
 * when there are none or nothing follows them. */
static char *leading_system(const char *messages) {
    json_error_t je;
    json_t *m = json_loads(messages, 0, &je), *lead = json_array();
    char *out = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) {
        const char *role = json_string_value(json_object_get(x, "role"));
        if (!role || (strcmp(role, "system") && strcmp(role, "developer"))) break;
        json_array_append(lead, x);
    }
    if (json_is_array(m) && lead && i > 0 && i < json_array_size(m)) out = json_dumps(lead, JSON_COMPACT);
    json_decref(lead);
    json_decref(m);
    return out;
}

/* Where msgs (NULL: all of r's messages) end in j's prompt: the tokens of
 * their rendering without a generation prompt, when those are a strict
 * prefix of the prompt; -1 otherwise. */
static int rendered_prefix(zn_server *s, const zn_oai_req *r, const char *msgs, bool add_bos, const zn_job *j) {
    char *h;
    size_t hl;
    int32_t *ids;
    int n, at = -1;
    zn_oai_error ignore;
    if (!render(s, r, msgs, false, &h, &hl, &ignore)) return -1;
    if (tokenize(s, h, hl, add_bos, &ids, &n, &ignore)) {
        if (n > 0 && n < j->n_prompt && !memcmp(ids, j->prompt, sizeof *ids * (size_t)n)) at = n;
        free(ids);
    }
    free(h);
    return at;
}

/* The prompt of a chat request, and where its recurrent state is checkpointed:
 * at the end of the conversation before the generation prompt, which is where
 * the next turn's history diverges from this one at the earliest (templates
 * rewrite the assistant's turn: reasoning dropped, tags), and at the end of
 * the leading system messages, which other conversations share. */
static bool chat_prompt(zn_server *s, const zn_oai_req *r, zn_job *j, zn_oai_error *e) {
    char *p;
    size_t len;
    if (!render(s, r, NULL, true, &p, &len, e)) return false;
    const char *bos = token_text(s->tok, tokenizer_bos(s->tok));
    bool add_bos = !(bos && *bos && !strncmp(p, bos, strlen(bos)));  /* the template wrote it */
    bool ok = tokenize(s, p, len, add_bos, &j->prompt, &j->n_prompt, e);
    j->think_open = chat_prompt_opens_thinking(p, len);
    free(p);
    if (!ok) return false;
    if (engine_is_recurrent(&s->eng)) {
        j->ckpt_at[1] = rendered_prefix(s, r, NULL, add_bos, j);
        char *sys = leading_system(r->messages);
        if (sys) j->ckpt_at[0] = rendered_prefix(s, r, sys, add_bos, j);
        free(sys);
    }
    j->split_think = true;
    if (r->tool_choice != ZN_TOOLS_NONE) {
        zn_err err = {0};
        zn_status st = toolset_parse(&j->tools, r->tools, strlen(r->tools), &err);
        if (st) return fail_e(e, st == ZN_ERR_NOMEM ? 500 : 400, st == ZN_ERR_NOMEM ? "server_error" : "invalid_request_error",
                              NULL, "%s", err.msg);
        j->tool_fmt = toolcall_format_of(s->tmpl);
        j->parse_tools = true;
    }
    return true;
}

static bool completion_prompt(zn_server *s, const zn_oai_req *r, zn_job *j, zn_oai_error *e) {
    if (r->prompt_ids) {
        if (r->n_prompt_ids >= (size_t)s->cfg.n_ctx)
            return fail_e(e, 400, "invalid_request_error", "context_length_exceeded",
                          "the prompt has more tokens than the context holds%s", "");
        for (size_t i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] >= tokenizer_n_vocab(s->tok))
                return fail_e(e, 400, "invalid_request_error", NULL, "a prompt token id is out of the vocabulary%s", "");
        j->prompt = malloc(sizeof *j->prompt * r->n_prompt_ids);
        if (!j->prompt) return fail_e(e, 500, "server_error", NULL, "out of memory%s", "");
        memcpy(j->prompt, r->prompt_ids, sizeof *j->prompt * r->n_prompt_ids);
        j->n_prompt = (int)r->n_prompt_ids;
    } else if (!tokenize(s, r->prompt, r->prompt_len, true, &j->prompt, &j->n_prompt, e)) {
        return false;
    }
    if (j->n_prompt == 0) return fail_e(e, 400, "invalid_request_error", NULL, "the prompt has no tokens%s", "");
    /* the same prompt again reuses all but its last token */
    if (j->n_prompt > 1) j->ckpt_at[1] = j->n_prompt - 1;
    return true;
}

/* The grammar of a request that constrains its answer (constrain.h),
 * compiled with its matcher before the job is queued: a schema it cannot
 * follow is the client's 400, and the engine thread allocates nothing. */
static bool constrain_job(zn_server *s, const zn_oai_req *r, zn_job *j, zn_oai_error *e) {
    char *gbnf;
    if (!constrain_gbnf(r, &j->tools, j->tool_fmt ? j->tool_fmt : ZN_TOOLFMT_HERMES, j->think_open, &gbnf, e))
        return false;
    if (!gbnf) return true;
    zn_err err = {0};
    zn_status st = ZN_ERR_NOMEM;
    if ((j->gm = malloc(sizeof *j->gm))) st = gmask_init_pooled(j->gm, gbnf, strlen(gbnf), &s->vt, &s->gpool, &err);
    free(gbnf);
    if (st) {
        free(j->gm);
        j->gm = NULL;
        if (st == ZN_ERR_NOMEM) return fail_e(e, 500, "server_error", NULL, "out of memory for the grammar%s", "");
        return oai_fail(e, 400, "invalid_request_error", NULL, r->format != ZN_FORMAT_TEXT ? "response_format" : "tool_choice",
                        "%s", err.msg);
    }
    return true;
}

/* The budget of a chat request's reasoning and the tokens that close it,
 * tokenized here so the engine thread only copies them. */
static bool think_close(zn_server *s, const zn_oai_req *r, zn_job *j, zn_oai_error *e) {
    size_t got = 0;
    zn_err err = {0};
    zn_status st = tokenizer_encode(s->tok, ZN_THINK_CLOSE_TEXT, strlen(ZN_THINK_CLOSE_TEXT), false, true, j->think_close,
                                    ZN_SRV_THINK_CLOSE_TOKENS, &got, &err);
    if (st || got == 0 || got > ZN_SRV_THINK_CLOSE_TOKENS)
        return fail_e(e, 500, "server_error", NULL, "cannot tokenize the end of the reasoning: %s",
                      st ? err.msg : "no room for its tokens");
    j->n_think_close = (int)got;
    j->think_budget = r->think_budget;
    return true;
}

/* ---- whole responses ---- */

bool server_job_wait(zn_server *s, zn_http_req *r, zn_job *j, int seen) {
    while ((seen < 0 || j->n_pieces == seen) && j->state != ZN_JOB_DONE) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += ZN_SRV_POLL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        if ((seen < 0 || j->n_pieces == seen) && j->state != ZN_JOB_DONE && http_client_gone(r)) {
            pthread_mutex_unlock(&j->mu);
            sched_cancel(&s->sched, j);
            return false;
        }
    }
    return true;
}

/* Waits for the job, giving it up when the client leaves. false: gone. */
static bool wait_done(zn_server *s, zn_http_req *r, zn_job *j) {
    pthread_mutex_lock(&j->mu);
    if (!server_job_wait(s, r, j, -1)) return false;
    pthread_mutex_unlock(&j->mu);
    return true;
}

static void job_error(const zn_job *j, zn_oai_error *e) {
    bool shutting = j->err.status == ZN_ERR_IO;
    oai_fail(e, shutting ? 503 : 500, shutting ? "unavailable_error" : "server_error", NULL, NULL, "%s", j->err.msg);
}

static void respond_whole(zn_server *s, zn_http_req *r, zn_job *j, const zn_oai_ctx *c) {
    if (!wait_done(s, r, j)) {
        zn_oai_error e;
        oai_fail(&e, 499, "invalid_request_error", NULL, NULL, "the client closed the connection");
        server_send_error(r, &e);  /* nobody reads it; keeps the status for the metrics */
        return;
    }
    if (j->failed) {
        zn_oai_error e;
        job_error(j, &e);
        server_send_error(r, &e);
        return;
    }
    size_t n = 0;
    char *body = oai_dump(oai_final(c, j), &n);
    if (!body) {
        zn_oai_error e;
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        server_send_error(r, &e);
        return;
    }
    http_send(r, 200, "application/json", body, n, NULL);
    free(body);
}

/* ---- streams ---- */

typedef struct sse {
    zn_server *srv;
    zn_job *job;
    zn_http_req req;          /* a copy: its connection, to notice the client leaving */
    zn_oai_ctx c;
    bool include_usage;
    int stage;                /* 0 role chunk, 1 content, 2 finished */
    int next_piece, next_lp;
    int n_calls;              /* tool calls sent (delta.tool_calls[].index of the next one) */
    char *out;                /* events formatted, not yet handed to the connection */
    size_t out_n, out_off, out_cap;
} sse;

static bool out_add(sse *q, char *ev, size_t n) {
    if (!ev) return false;
    if (q->out_n + n > q->out_cap) {
        size_t cap = q->out_cap ? q->out_cap * 2 : 4096;
        while (cap < q->out_n + n) cap *= 2;
        char *b = realloc(q->out, cap);
        if (!b) {
            free(ev);
            return false;
        }
        q->out = b;
        q->out_cap = cap;
    }
    memcpy(q->out + q->out_n, ev, n);
    q->out_n += n;
    free(ev);
    return true;
}

static bool add_event(sse *q, json_t *j) {
    size_t n = 0;
    char *ev = oai_sse(j, &n);
    return out_add(q, ev, n);
}

/* Formats what the job has produced since the last call; under j->mu. */
static bool take_pieces(sse *q) {
    zn_job *j = q->job;
    bool ok = true;
    int last = j->n_pieces - 1;
    for (int i = q->next_piece; ok && i < j->n_pieces; i++) {
        const zn_piece *p = &j->pieces[i];
        /* logprobs of the tokens seen so far ride on the batch's last chunk */
        int n_lp = i == last ? j->n_lp - q->next_lp : 0;
        if (p->ch == ZN_CH_TOOL_NAME || p->ch == ZN_CH_TOOL_ARGS) {
            if (p->ch == ZN_CH_TOOL_NAME) q->n_calls++;
            ok = add_event(q, oai_tool_chunk(&q->c, q->n_calls - 1, p->ch == ZN_CH_TOOL_NAME, j->text[p->ch].p + p->off,
                                             p->len, j->lp + q->next_lp, n_lp, j->top_logprobs));
        } else {
            ok = add_event(q, oai_chunk(&q->c, false, p->ch, j->text[p->ch].p + p->off, p->len, j->lp + q->next_lp,
                                        n_lp, j->top_logprobs, NULL));
        }
        if (n_lp) q->next_lp = j->n_lp;
    }
    q->next_piece = j->n_pieces;
    return ok;
}

static bool take_end(sse *q) {
    zn_job *j = q->job;
    if (j->failed) {
        zn_oai_error e;
        job_error(j, &e);
        return add_event(q, oai_error_json(&e));
    }
    bool ok = true;
    if (j->n_lp > q->next_lp) { /* tokens whose text never came (held, then dropped with a stop string) */
        ok = add_event(q, oai_chunk(&q->c, false, ZN_CH_CONTENT, "", 0, j->lp + q->next_lp, j->n_lp - q->next_lp,
                                    j->top_logprobs, NULL));
        q->next_lp = j->n_lp;
    }
    ok = ok && add_event(q, oai_chunk(&q->c, false, ZN_CH_CONTENT, "", 0, NULL, 0, 0, j->finish ? j->finish : "stop"));
    if (ok && q->include_usage)
        ok = add_event(q, oai_usage_chunk(&q->c, oai_usage(j->n_prompt, j->n_gen, j->n_cached, j->n_reasoning)));
    static const char done[] = "data: [DONE]\n\n";
    if (ok) {
        char *d = strdup(done);
        ok = out_add(q, d, sizeof done - 1);
    }
    return ok;
}

static ssize_t sse_read(void *cls, char *buf, size_t max) {
    sse *q = cls;
    for (;;) {
        if (q->out_off < q->out_n) {
            size_t k = q->out_n - q->out_off < max ? q->out_n - q->out_off : max;
            memcpy(buf, q->out + q->out_off, k);
            q->out_off += k;
            if (q->out_off == q->out_n) q->out_off = q->out_n = 0;
            return (ssize_t)k;
        }
        if (q->stage == 2) return -1;
        if (q->stage == 0) {
            q->stage = 1;
            if (q->c.chat && !add_event(q, oai_chunk(&q->c, true, ZN_CH_CONTENT, "", 0, NULL, 0, 0, NULL))) return -2;
            continue;
        }
        zn_job *j = q->job;
        pthread_mutex_lock(&j->mu);
        if (!server_job_wait(q->srv, &q->req, j, q->next_piece)) return -2;
        bool ok = take_pieces(q);
        if (ok && j->state == ZN_JOB_DONE && q->next_piece == j->n_pieces) {
            ok = take_end(q);
            q->stage = 2;
        }
        pthread_mutex_unlock(&j->mu);
        if (!ok) return -2;
    }
}

static void sse_done(void *cls) {
    sse *q = cls;
    sched_cancel(&q->srv->sched, q->job);  /* a no-op when it had finished; frees its place when the client left */
    job_unref(q->job);
    atomic_fetch_sub(&q->srv->in_flight, 1);
    free(q->out);
    free(q);
}

/* ---- the endpoints ---- */

bool server_submit(zn_server *s, zn_http_req *r, zn_oai_req *req, zn_job **out, zn_oai_error *e) {
    *out = NULL;
    bool chat = req->chat;
    zn_job *j = NULL;
    if (req->model && strcmp(req->model, s->model_id)) {
        oai_fail(e, 404, "invalid_request_error", "model_not_found", "model", "the model '%.200s' does not exist (this server has '%.200s')",
                 req->model, s->model_id);
        goto fail;
    }
    if (!(j = job_new())) {
        oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    if (!(chat ? chat_prompt(s, req, j, e) : completion_prompt(s, req, j, e))) goto fail;
    if (!constrain_job(s, req, j, e)) goto fail;
    j->cache_prompt = req->cache_prompt;
    j->ignore_eos = req->ignore_eos;
    j->max_tokens = req->max_tokens;
    j->sp = req->sp;
    if (!req->seed_given) j->sp.seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)(uintptr_t)j ^ (uint64_t)(timer_now() * 1e9);
    for (int i = 0; i < req->n_stop; i++) j->stop[i] = req->stop[i], req->stop[i] = NULL;
    j->n_stop = req->n_stop;
    req->n_stop = 0;
    j->top_logprobs = req->top_logprobs;
    if (chat && req->think_budget >= 0 && !think_close(s, req, j, e)) goto fail;
    j->t_arrival = r->t_arrival;
    zn_err err = {0};
    atomic_fetch_add(&s->in_flight, 1);
    zn_status st = sched_submit(&s->sched, j, &err);
    if (st) {
        atomic_fetch_sub(&s->in_flight, 1);
        if (st == ZN_ERR_NOMEM) oai_fail(e, 429, "rate_limit_error", "queue_full", NULL, "%s", err.msg);
        else if (st == ZN_ERR_IO) oai_fail(e, 503, "unavailable_error", NULL, NULL, "%s", err.msg);
        else oai_fail(e, 400, "invalid_request_error", "context_length_exceeded", NULL, "%s", err.msg);
        goto fail;
    }
    *out = j;
    return true;
fail:
    job_unref(j);
    return false;
}

void server_finish_job(zn_server *s, zn_job *j) {
    sched_cancel(&s->sched, j);  /* a no-op when it had finished; frees its place when the client left */
    job_unref(j);
    atomic_fetch_sub(&s->in_flight, 1);
}

bool server_prompt_tokens(zn_server *s, const zn_oai_req *req, int *n, zn_oai_error *e) {
    zn_job *j = job_new();
    if (!j) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    bool ok = chat_prompt(s, req, j, e);
    if (ok) *n = j->n_prompt;
    job_unref(j);
    return ok;
}

bool server_wait_job(zn_server *s, zn_http_req *r, zn_job *j) { return wait_done(s, r, j); }

void server_job_error(const zn_job *j, zn_oai_error *e) { job_error(j, e); }

static void generate(zn_server *s, zn_http_req *r, bool chat) {
    zn_oai_req req;
    zn_oai_error e;
    if (!oai_parse(r->body, r->body_len, chat, &req, &e)) {
        server_send_error(r, &e);
        return;
    }
    zn_job *j = NULL;
    if (!server_submit(s, r, &req, &j, &e)) goto fail;
    zn_oai_ctx c;
    oai_ctx_init(&c, chat, s->model_id, s->tok);
    if (!req.stream) {
        respond_whole(s, r, j, &c);
        server_finish_job(s, j);
        oai_req_free(&req);
        return;
    }
    sse *q = calloc(1, sizeof *q);
    if (!q) {
        server_finish_job(s, j);
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    c.usage_null = req.include_usage;
    *q = (sse){.srv = s, .job = j, .req = *r, .c = c, .include_usage = req.include_usage};
    static const char *const h[] = {"Cache-Control", "no-cache", "X-Accel-Buffering", "no", NULL};
    http_send_stream(r, 200, "text/event-stream", h, sse_read, q, sse_done);
    oai_req_free(&req);
    return;
fail:
    oai_req_free(&req);
    server_send_error(r, &e);
}

void server_chat(zn_server *s, zn_http_req *r) { generate(s, r, true); }
void server_completions(zn_server *s, zn_http_req *r) { generate(s, r, false); }
