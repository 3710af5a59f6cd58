/* libFuzzer target for the server's request parsing (src/server/oai.c,
 * oai_responses.c, anthropic.c): arbitrary bytes as the body of
 * /v1/chat/completions, /v1/completions, /tokenize, /detokenize,
 * /v1/responses, /v1/messages and /v1/messages/count_tokens. Beyond "no crash, no sanitizer report": an
 * accepted request stays within every ZN_SRV_* limit, its normalized
 * messages are valid JSON again, and a rejection says why with a 4xx/5xx. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anthropic.h"
#include "chat.h"
#include "oai.h"
#include "oai_responses.h"

static void fail(const char *what) {
    fprintf(stderr, "fuzz_request: %s\n", what);
    abort();
}

static void check_error(const zn_oai_error *e) {
    if (e->status < 400 || e->status > 599 || !e->type || !e->message[0]) fail("a rejection without status/type/message");
}

static void check_req(const zn_oai_req *r) {
    if (r->n_stop < 0 || r->n_stop > ZN_SRV_MAX_STOP) fail("too many stop strings");
    for (int i = 0; i < r->n_stop; i++) {
        size_t n = strlen(r->stop[i]);
        if (n == 0 || n > ZN_SRV_MAX_STOP_BYTES) fail("stop string length");
    }
    if (r->max_tokens != -1 && (r->max_tokens < 1 || r->max_tokens > ZN_SRV_MAX_GEN_TOKENS)) fail("max_tokens");
    if (r->top_logprobs < -1 || r->top_logprobs > ZN_SRV_MAX_TOP_LOGPROBS) fail("top_logprobs");
    if (r->think_budget < -1 || r->think_budget > ZN_SRV_MAX_GEN_TOKENS) fail("think_budget");
    if (r->think_budget >= 0 && (!r->chat || r->think != ZN_THINK_ON)) fail("a reasoning budget with thinking not on");
    if (r->chat) {
        if (!r->messages || r->n_messages < 1 || r->n_messages > ZN_SRV_MAX_MESSAGES) fail("messages count");
        json_error_t je;
        json_t *m = json_loads(r->messages, 0, &je);
        if (!json_is_array(m) || json_array_size(m) != r->n_messages) fail("normalized messages are not the array");
        for (size_t i = 0; i < json_array_size(m); i++)
            if (!json_is_string(json_object_get(json_array_get(m, i), "content"))) fail("content not a string");
        json_decref(m);
    } else if (!r->prompt == !r->prompt_ids) {
        fail("a completion request needs exactly one prompt form");
    } else if (r->prompt_ids && (r->n_prompt_ids < 1 || r->n_prompt_ids > ZN_SRV_MAX_PROMPT_TOKENS)) {
        fail("prompt ids count");
    }
    if (r->template_kwargs) {
        json_t *k = json_loads(r->template_kwargs, 0, NULL);
        if (!json_is_object(k)) fail("chat_template_kwargs not an object");
        json_decref(k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *body = (const char *)data;
    for (int chat = 0; chat < 2; chat++) {
        zn_oai_req r;
        zn_oai_error e;
        if (oai_parse(body, size, chat, &r, &e)) {
            check_req(&r);
            oai_req_free(&r);
        } else {
            check_error(&e);
        }
    }
    /* the other APIs translate into chat requests: the same checks hold */
    {
        zn_oai_req r;
        zn_oai_error e;
        char *echo = NULL;
        if (resp_parse(body, size, &r, &echo, &e)) {
            if (!r.chat) fail("a Responses request that is not a chat request");
            check_req(&r);
            json_t *ej = json_loads(echo, 0, NULL);
            if (!json_is_object(ej)) fail("the Responses echo is not an object");
            json_decref(ej);
            free(echo);
            oai_req_free(&r);
        } else {
            check_error(&e);
            if (echo) fail("a rejected Responses request left its echo");
        }
        for (int count = 0; count < 2; count++) {
            if (anth_parse(body, size, count, &r, &e)) {
                if (!r.chat) fail("a Messages request that is not a chat request");
                check_req(&r);
                oai_req_free(&r);
            } else {
                check_error(&e);
                json_t *j = anth_error_json(&e);
                if (!j) fail("no Anthropic error body");
                json_decref(j);
            }
        }
    }
    char *content;
    size_t n;
    bool add;
    zn_oai_error e;
    if (oai_parse_tokenize(body, size, &content, &n, &add, &e)) free(content);
    else check_error(&e);
    int32_t *ids;
    if (oai_parse_detokenize(body, size, &ids, &n, &e)) {
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= ZN_MAX_VOCAB) fail("token id out of range");
        free(ids);
    } else {
        check_error(&e);
    }
    return 0;
}
