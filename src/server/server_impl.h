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

#endif
