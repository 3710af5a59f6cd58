/* POST /v1/responses (OpenAI's Responses API) and /v1/messages (Anthropic's
 * Messages API), whole or streamed as named server-sent events, over the chat
 * machinery of server_gen.c: each request is translated into a chat request
 * (oai_responses.c, anthropic.c), queued with server_submit, and its job's
 * pieces written in the API's own shapes (server_impl.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anthropic.h"
#include "oai_resp.h"
#include "oai_responses.h"
#include "server_impl.h"

enum { API_RESPONSES, API_MESSAGES };

static void send_body(zn_http_req *r, int status, json_t *j) {
    size_t n = 0;
    char *body = oai_dump(j, &n);
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
    http_send(r, body ? status : 500, "application/json", body ? body : oom, body ? n : sizeof oom - 1, NULL);
    free(body);
}

static void send_error(zn_http_req *r, int api, const zn_oai_error *e) {
    if (api == API_RESPONSES) {
        server_send_error(r, e);
        return;
    }
    size_t n = 0;
    char *body = oai_dump(anth_error_json(e), &n);
    const char *retry = e->status == 429 || e->status >= 500 ? "true" : "false";
    const char *h[] = {"x-should-retry", retry, e->status == 503 || e->status == 429 ? "Retry-After" : NULL, "1", NULL};
    http_send(r, e->status, "application/json", body ? body : "{}", body ? n : 2, h);
    free(body);
}

/* ---- streams ---- */

typedef struct api_stream {
    zn_server *srv;
    zn_job *job;
    zn_http_req req;          /* a copy: its connection, to notice the client leaving */
    int api;
    int stage;                /* 0 the opening events, 1 pieces, 2 finished */
    int next_piece;
    zn_evbuf out;
    size_t off;               /* of out, handed to the connection */
    zn_resp_ctx rc;
    zn_resp_stream rs;
    zn_anth_ctx ac;
    zn_anth_stream as;
} api_stream;

/* What the job produced since the last call, and its end once done; under j->mu. */
static bool take(api_stream *q) {
    zn_job *j = q->job;
    bool ok = true;
    for (int i = q->next_piece; ok && i < j->n_pieces; i++)
        ok = q->api == API_RESPONSES ? resp_stream_piece(&q->rs, j, i, &q->out) : anth_stream_piece(&q->as, j, i, &q->out);
    q->next_piece = j->n_pieces;
    if (ok && j->state == ZN_JOB_DONE) {
        ok = q->api == API_RESPONSES ? resp_stream_end(&q->rs, j, &q->out) : anth_stream_end(&q->as, j, &q->out);
        q->stage = 2;
    }
    return ok;
}

static ssize_t api_read(void *cls, char *buf, size_t max) {
    api_stream *q = cls;
    for (;;) {
        if (q->off < q->out.n) {
            size_t k = q->out.n - q->off < max ? q->out.n - q->off : max;
            memcpy(buf, q->out.p + q->off, k);
            q->off += k;
            if (q->off == q->out.n) q->off = q->out.n = 0;
            return (ssize_t)k;
        }
        if (q->stage == 2) return -1;
        zn_job *j = q->job;
        pthread_mutex_lock(&j->mu);
        if (q->stage == 0) {
            q->stage = 1;
            bool ok = q->api == API_RESPONSES ? resp_stream_begin(&q->rs, &q->out) : anth_stream_begin(&q->as, j, &q->out);
            pthread_mutex_unlock(&j->mu);
            if (!ok) return -2;
            continue;
        }
        if (!server_job_wait(q->srv, &q->req, j, q->next_piece)) return -2;
        bool ok = take(q);
        pthread_mutex_unlock(&j->mu);
        if (!ok) return -2;
    }
}

static void api_done(void *cls) {
    api_stream *q = cls;
    server_finish_job(q->srv, q->job);
    evbuf_free(&q->out);
    resp_stream_free(&q->rs);
    resp_ctx_free(&q->rc);
    free(q);
}

/* ---- the endpoints ---- */

static void run(zn_server *s, zn_http_req *r, int api, zn_oai_req *req, const char *echo) {
    zn_oai_error e;
    zn_job *j = NULL;
    if (!server_submit(s, r, req, &j, &e)) {
        /* (e.g. a schema the grammar cannot follow, found after parsing) */
        if (api == API_RESPONSES) resp_error_names(&e);
        else anth_error_names(&e);
        send_error(r, api, &e);
        return;
    }
    api_stream *q = calloc(1, sizeof *q);
    if (!q) {
        server_finish_job(s, j);
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        send_error(r, api, &e);
        return;
    }
    *q = (api_stream){.srv = s, .job = j, .req = *r, .api = api};
    if (api == API_RESPONSES) {
        resp_ctx_init(&q->rc, s->model_id, echo);
        resp_stream_init(&q->rs, &q->rc);
    } else {
        anth_ctx_init(&q->ac, s->model_id);
        anth_stream_init(&q->as, &q->ac);
    }
    if (req->stream) {
        static const char *const h[] = {"Cache-Control", "no-cache", "X-Accel-Buffering", "no", NULL};
        http_send_stream(r, 200, "text/event-stream", h, api_read, q, api_done);
        return;
    }
    if (!server_wait_job(s, r, j)) {
        oai_fail(&e, 499, "invalid_request_error", NULL, NULL, "the client closed the connection");
        send_error(r, api, &e);  /* nobody reads it; keeps the status for the metrics */
    } else if (j->failed) {
        server_job_error(j, &e);
        send_error(r, api, &e);
    } else {
        send_body(r, 200, api == API_RESPONSES ? resp_final(&q->rc, j) : anth_final(&q->ac, j));
    }
    api_done(q);
}

void server_responses(zn_server *s, zn_http_req *r) {
    zn_oai_req req;
    zn_oai_error e;
    char *echo = NULL;
    if (!resp_parse(r->body, r->body_len, &req, &echo, &e)) {
        send_error(r, API_RESPONSES, &e);
        return;
    }
    run(s, r, API_RESPONSES, &req, echo);
    free(echo);
    oai_req_free(&req);
}

void server_messages(zn_server *s, zn_http_req *r) {
    zn_oai_req req;
    zn_oai_error e;
    if (!anth_parse(r->body, r->body_len, false, &req, &e)) {
        send_error(r, API_MESSAGES, &e);
        return;
    }
    run(s, r, API_MESSAGES, &req, NULL);
    oai_req_free(&req);
}

void server_count_tokens(zn_server *s, zn_http_req *r) {
    zn_oai_req req;
    zn_oai_error e;
    if (!anth_parse(r->body, r->body_len, true, &req, &e)) {
        send_error(r, API_MESSAGES, &e);
        return;
    }
    int n = 0;
    bool ok = !(req.model && strcmp(req.model, s->model_id));
    if (!ok)
        oai_fail(&e, 404, "invalid_request_error", "model_not_found", "model",
                 "the model '%.200s' does not exist (this server has '%.200s')", req.model, s->model_id);
    else ok = server_prompt_tokens(s, &req, &n, &e);
    if (ok) send_body(r, 200, json_pack("{s:i}", "input_tokens", n));
    else send_error(r, API_MESSAGES, &e);
    oai_req_free(&req);
}
