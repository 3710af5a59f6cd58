/* What the server's files share (server.c: lifecycle, routing, small
 * endpoints; server_gen.c: the generation endpoints). */
#ifndef ZINC_SERVER_IMPL_H
#define ZINC_SERVER_IMPL_H

#include <stdatomic.h>

#include "engine.h"
#include "gmatch.h"
#include "http.h"
#include "metrics.h"
#include "model.h"
#include "oai.h"
#include "scheduler.h"
#include "server.h"
#include "tokenizer.h"

struct zn_server {
    zn_server_cfg cfg;
    char model_id[256];
    zn_http *http;
    zn_metrics metrics;
    zn_model model;
    zn_tokenizer *tok;
    zn_vocab_trie vt;          /* every token's bytes, for grammar-constrained sampling (built once at load) */
    zn_gmatch_pool gpool;      /* finished grammar matchers' tables, for the next constrained requests */
    bool have_vt;
    zn_engine eng;
    zn_sched sched;
    char *tmpl;                /* chat template text, or NULL (ChatML) */
    bool have_model, have_engine, have_sched;
    atomic_bool ready;         /* loaded: generation endpoints open */
    atomic_bool draining;
    atomic_int in_flight;      /* generation requests between submit and their last byte */
    atomic_bool said_fallback;
    long created;
};

/* Sends the error body with its status (x-should-retry on every error). */
void server_send_error(zn_http_req *r, const zn_oai_error *e);
void server_chat(zn_server *s, zn_http_req *r);        /* POST /v1/chat/completions */
void server_completions(zn_server *s, zn_http_req *r); /* POST /v1/completions */

/* The generation machinery the other APIs (server_api.c) share with chat:
 * server_submit builds the job of a parsed request (model check, prompt
 * through the chat template, sampling, stop strings) and queues it; *out
 * holds one reference and counts in in_flight until server_finish_job. */
bool server_submit(zn_server *s, zn_http_req *r, zn_oai_req *req, zn_job **out, zn_oai_error *e);
void server_finish_job(zn_server *s, zn_job *j);
/* Waits for the job to finish; false when the client left (the job cancelled). */
bool server_wait_job(zn_server *s, zn_http_req *r, zn_job *j);
/* With j->mu held: waits until the job has more than `seen` pieces (seen < 0:
 * until it is done) or is done, every ZN_SRV_POLL_MS asking whether the
 * client left. false: it left; the job is cancelled and j->mu released. */
bool server_job_wait(zn_server *s, zn_http_req *r, zn_job *j, int seen);
/* The error of a failed job (503 when the server is stopping, else 500). */
void server_job_error(const zn_job *j, zn_oai_error *e);
/* The prompt of a parsed chat request as the template renders it, in tokens. */
bool server_prompt_tokens(zn_server *s, const zn_oai_req *req, int *n, zn_oai_error *e);
/* POST /v1/responses, /v1/messages, /v1/messages/count_tokens (server_api.c) */
void server_responses(zn_server *s, zn_http_req *r);
void server_messages(zn_server *s, zn_http_req *r);
void server_count_tokens(zn_server *s, zn_http_req *r);

#endif
