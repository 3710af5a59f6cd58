/* OpenAI-style request parsing (jansson): the body of /v1/chat/completions
 * or /v1/completions -> a zn_oai_req, or an error naming the field, with the
 * HTTP status it gets. Unknown fields are ignored (clients send many); a
 * known field of the wrong type or out of range is a 400. Every limit is a
 * ZN_SRV_* constant (limits.h). Fuzzed by fuzz/fuzz_request.c. */
#ifndef ZINC_OAI_H
#define ZINC_OAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "limits.h"
#include "sampler.h"

typedef struct zn_oai_error {
    int status;                /* HTTP status */
    const char *type;          /* "invalid_request_error", "authentication_error", ... */
    const char *code;          /* NULL, or e.g. "context_length_exceeded", "model_not_found" */
    char param[96];            /* the offending field ("" when none) */
    char message[ZN_ERR_MSG_MAX];
} zn_oai_error;

/* Fills e and returns false, for `return oai_fail(e, 400, ...)`. */
bool oai_fail(zn_oai_error *e, int status, const char *type, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Renames the field from (and from[...], from.x) to `to` in e->param and
 * where e->message quotes it ('from'): errors of a chat request that was
 * translated from another API, in that API's names. */
void oai_error_rename(zn_oai_error *e, const char *from, const char *to);
/* 24 random hex digits and a NUL (ids: chatcmpl-, resp_, msg_, call ids);
 * salt varies them when the kernel has no entropy yet. */
void oai_random_hex(char hex[25], const void *salt);
/* A JSON string of text that should be UTF-8; repaired (U+FFFD) when not.
 * NULL only when out of memory. */
json_t *oai_json_text(const char *p, size_t n);

/* The texts of an array of content parts, already checked to be strings,
 * joined by "\n" (text_of NULL: each part's "text"). NULL when out of memory. */
json_t *oai_join_texts(json_t *parts, json_t *(*text_of)(json_t *part));

/* tool_choice */
enum { ZN_TOOLS_AUTO = 0, ZN_TOOLS_NONE, ZN_TOOLS_REQUIRED, ZN_TOOLS_NAMED };

/* The form the answer must take (chat's response_format; the Responses
 * API's text.format maps onto the same fields). */
enum { ZN_FORMAT_TEXT = 0, ZN_FORMAT_JSON_OBJECT, ZN_FORMAT_JSON_SCHEMA };

typedef struct zn_oai_req {
    bool chat;                 /* /v1/chat/completions (else /v1/completions) */
    char *model;               /* NULL: not given */
    bool stream, include_usage;
    long max_tokens;           /* -1: not given */
    zn_sampler_params sp;
    bool seed_given;
    char *stop[ZN_SRV_MAX_STOP];
    int n_stop;
    int top_logprobs;          /* -1: no logprobs */
    int think;                 /* ZN_THINK_* from chat_template_kwargs.enable_thinking */
    char *template_kwargs;     /* chat_template_kwargs as JSON text, or NULL */
    long think_budget;         /* chat: reasoning tokens before the server closes the <think> block itself
                                  (reasoning_effort, thinking_budget_tokens); -1: no budget */
    bool cache_prompt;         /* llama-server's extension; default true */
    bool ignore_eos;           /* llama-server's extension: generate past end-of-text tokens */
    char *tools;               /* chat: the 'tools' array as JSON text (checked), or NULL when none */
    int n_tools;
    int tool_choice;           /* ZN_TOOLS_* (NONE when there are no tools) */
    char *tool_name;           /* ZN_TOOLS_NAMED: the function */
    bool parallel_tool_calls;  /* default true */
    int format;                /* ZN_FORMAT_*: TEXT unconstrained; JSON_OBJECT any JSON object; JSON_SCHEMA:
                                  JSON valid under `schema` (grammar-constrained sampling either way) */
    char *schema;              /* ZN_FORMAT_JSON_SCHEMA: the JSON Schema as JSON text (an object, not yet compiled:
                                  unsupported keywords are found by the server, jschema.h) */
    char *schema_name;         /* ZN_FORMAT_JSON_SCHEMA: json_schema.name, or NULL */
    char *messages;            /* chat: the messages as a normalized JSON array */
    size_t n_messages;
    char *prompt;              /* completions: a text prompt (NUL-terminated), or NULL */
    size_t prompt_len;
    int32_t *prompt_ids;       /* completions: a prompt of token ids, or NULL */
    size_t n_prompt_ids;
} zn_oai_req;

/* Parses body[0..len) of a chat (chat = true) or completions request. On
 * false, e says why and *r holds nothing to free. */
bool oai_parse(const char *body, size_t len, bool chat, zn_oai_req *r, zn_oai_error *e);
void oai_req_free(zn_oai_req *r);

/* {"content": str} of /tokenize (also llama-server's "add_special",
 * "with_pieces" are not supported: add_special false) and {"tokens": [...]}
 * of /detokenize. */
bool oai_parse_tokenize(const char *body, size_t len, char **content, size_t *n, bool *add_special, zn_oai_error *e);
bool oai_parse_detokenize(const char *body, size_t len, int32_t **ids, size_t *n, zn_oai_error *e);

#endif
