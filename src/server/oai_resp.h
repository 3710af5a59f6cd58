/* OpenAI-style response bodies (jansson): chat completions and text
 * completions, whole or as stream chunks, usage, logprobs, errors. */
#ifndef ZINC_OAI_RESP_H
#define ZINC_OAI_RESP_H

#include <jansson.h>
#include <stdbool.h>

#include "oai.h"
#include "scheduler.h"
#include "tokenizer.h"

typedef struct zn_oai_ctx {
    char id[48];               /* "chatcmpl-..." / "cmpl-...": one per request, on every chunk */
    long created;              /* unix seconds */
    const char *model;
    bool chat;
    bool usage_null;           /* stream with include_usage: every chunk carries "usage": null */
    const zn_tokenizer *tok;
} zn_oai_ctx;

void oai_ctx_init(zn_oai_ctx *c, bool chat, const char *model, const zn_tokenizer *tok);

/* {"error": {"message", "type", "param", "code"}} */
json_t *oai_error_json(const zn_oai_error *e);
/* usage, with prompt_tokens_details.cached_tokens and
 * completion_tokens_details.reasoning_tokens */
json_t *oai_usage(long prompt, long completion, long cached, long reasoning);

/* A stream chunk: role (chat's first chunk) and/or text of channel ch
 * (ZN_CH_*; n may be 0), logprobs of lp[0..n_lp) (top_n alternatives each),
 * finish ("stop"/"length") or NULL. */
json_t *oai_chunk(const zn_oai_ctx *c, bool role, int ch, const char *text, size_t n, const zn_tok_lp *lp, int n_lp,
                  int top_n, const char *finish);
/* A stream chunk of tool call `index` (delta.tool_calls): start: its id,
 * type and name (text), with "arguments": ""; else a piece of its arguments. */
json_t *oai_tool_chunk(const zn_oai_ctx *c, int index, bool start, const char *text, size_t n, const zn_tok_lp *lp,
                       int n_lp, int top_n);
/* The last chunk when usage was asked: "choices": [] and the usage. */
json_t *oai_usage_chunk(const zn_oai_ctx *c, json_t *usage);
/* The whole response of a finished job (j->mu held or the job done): tool
 * calls in message.tool_calls (content null when it is empty). */
json_t *oai_final(const zn_oai_ctx *c, const zn_job *j);

/* "data: <compact json>\n\n" (malloc'd), the JSON released; NULL when out of memory. */
char *oai_sse(json_t *j, size_t *len);
/* Compact JSON text (malloc'd), the JSON released. */
char *oai_dump(json_t *j, size_t *len);

#endif
