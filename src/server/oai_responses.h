/* OpenAI's Responses API (POST /v1/responses), stateless: the request
 * translated into the chat request that /v1/chat/completions parses (oai.h),
 * so it renders through the same chat template, tools and sampling; and the
 * response object and its typed stream events written from the job's pieces.
 * Parsing is fuzzed by fuzz/fuzz_request.c. */
#ifndef ZINC_OAI_RESPONSES_H
#define ZINC_OAI_RESPONSES_H

#include <jansson.h>
#include <stdbool.h>

#include "evbuf.h"
#include "oai.h"
#include "scheduler.h"

/* Parses body[0..len): on true *r is a chat request (r->chat) and *echo the
 * request fields the response object repeats (malloc'd JSON object text).
 * On false, e names the field (the Responses API's name for it). */
bool resp_parse(const char *body, size_t len, zn_oai_req *r, char **echo, zn_oai_error *e);

typedef struct zn_resp_ctx {
    char id[48];               /* "resp_<hex>" */
    char hex[32];              /* its random part: item and call ids derive from it */
    long created;
    const char *model;
    json_t *echo;              /* owned; NULL when none */
} zn_resp_ctx;

/* echo: resp_parse's text, or NULL. */
void resp_ctx_init(zn_resp_ctx *c, const char *model, const char *echo);
void resp_ctx_free(zn_resp_ctx *c);

/* The response object of a finished job (status completed, or incomplete
 * when cut by max_output_tokens; failed with its error when it failed). */
json_t *resp_final(const zn_resp_ctx *c, const zn_job *j);

/* The stream: response.created and .in_progress, then per piece the item
 * events (output_item.added, content_part.added, output_text.delta,
 * function_call_arguments.delta, ... .done), then response.completed (or
 * .incomplete, or error + response.failed). Every event has the next
 * sequence_number. */
typedef struct zn_resp_stream {
    const zn_resp_ctx *c;
    long seq;
    int kind;                  /* the open output item: 0 none, else RESP_ITEM_* */
    int n_items;               /* items opened (output_index of the next) */
    int n_calls;
    size_t start, end;         /* the open item's text (arguments) in text[its channel] */
    size_t name_off, name_len; /* a call's name in text[ZN_CH_TOOL_NAME] */
    bool have_text;
    json_t *output;            /* the items closed so far */
} zn_resp_stream;

void resp_stream_init(zn_resp_stream *st, const zn_resp_ctx *c);
void resp_stream_free(zn_resp_stream *st);
bool resp_stream_begin(zn_resp_stream *st, zn_evbuf *out);
/* Piece i of the job (under j->mu). */
bool resp_stream_piece(zn_resp_stream *st, const zn_job *j, int i, zn_evbuf *out);
/* The job is done (under j->mu or after). */
bool resp_stream_end(zn_resp_stream *st, const zn_job *j, zn_evbuf *out);

#endif
