/* Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens):
 * the request translated into the chat request /v1/chat/completions parses
 * (oai.h), so it renders through the same template, tools and sampling; the
 * message object and its stream events written from the job's pieces; errors
 * in Anthropic's shape. Parsing is fuzzed by fuzz/fuzz_request.c. */
#ifndef ZINC_ANTHROPIC_H
#define ZINC_ANTHROPIC_H

#include <jansson.h>
#include <stdbool.h>

#include "evbuf.h"
#include "oai.h"
#include "scheduler.h"

/* Parses body[0..len) into a chat request. count: the body of count_tokens
 * (max_tokens not required). On false, e names the field. */
bool anth_parse(const char *body, size_t len, bool count, zn_oai_req *r, zn_oai_error *e);

/* {"type": "error", "error": {"type", "message"}}, the type from e->status
 * (invalid_request_error, authentication_error, not_found_error,
 * rate_limit_error, api_error, overloaded_error, ...). */
json_t *anth_error_json(const zn_oai_error *e);

typedef struct zn_anth_ctx {
    char id[48];               /* "msg_<hex>" */
    char hex[32];
    const char *model;
} zn_anth_ctx;

void anth_ctx_init(zn_anth_ctx *c, const char *model);

/* stop_reason of a finished job: end_turn, max_tokens, stop_sequence or tool_use. */
const char *anth_stop_reason(const zn_job *j);
/* The message object of a finished, successful job. */
json_t *anth_final(const zn_anth_ctx *c, const zn_job *j);

/* The stream: message_start and a ping, per piece content_block_start /
 * content_block_delta (text_delta, thinking_delta, input_json_delta) /
 * content_block_stop, then message_delta (stop_reason, usage) and
 * message_stop; a failed job ends with an error event. */
typedef struct zn_anth_stream {
    const zn_anth_ctx *c;
    int kind;                  /* the open block: 0 none, else ANTH_BLOCK_* */
    int n_blocks, n_calls;
} zn_anth_stream;

void anth_stream_init(zn_anth_stream *st, const zn_anth_ctx *c);
bool anth_stream_begin(zn_anth_stream *st, const zn_job *j, zn_evbuf *out);
bool anth_stream_piece(zn_anth_stream *st, const zn_job *j, int i, zn_evbuf *out);
bool anth_stream_end(zn_anth_stream *st, const zn_job *j, zn_evbuf *out);

#endif
