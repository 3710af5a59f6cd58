/* libFuzzer target for the Jinja interpreter: arbitrary templates rendered
 * with arbitrary variables. Layout (fuzz.h): TEMPLATE, then optionally a NUL,
 * a flag byte and a context (a JSON array of messages, optionally followed by
 * a NUL and a JSON array of tools; or a JSON object of variables). Without a
 * context the template renders a fixed conversation with tools, so a plain
 * chat template file is a seed as it stands.
 *
 * The render limits of limits.h (steps, memory, output, recursion, range)
 * keep every execution bounded; a render that runs past libFuzzer's timeout
 * is a bug. Checked: a failure carries a message; a success gives text of the
 * length it reports, within ZN_JINJA_MAX_OUTPUT, a parsed template renders the
 * same vars to the same text twice, and chat_split_thinking's spans of the
 * text lie inside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat.h"
#include "fuzz.h"
#include "jinja.h"
#include "limits.h"

static const zn_chat_msg conversation[] = {
    {.role = "system", .content = "You are a helpful assistant."},
    {.role = "user", .content = "What's the weather in Paris? R\xc3\xa9ponds en fran\xc3\xa7" "ais."},
    {.role = "assistant", .content = "", .reasoning_content = "Use the tool.",
     .tool_calls = "[{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                   "\"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]"},
    {.role = "tool", .content = "{\"temp\": 21}", .tool_call_id = "call_1", .name = "get_weather"},
    {.role = "assistant", .content = "<think>\nIt is warm.\n</think>\n\nIt is 21 \xc2\xb0" "C."},
    {.role = "user", .content_parts = "[{\"type\": \"text\", \"text\": \"Thanks!\"}]"},
};

static const char tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current weather\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
    "\"required\": [\"city\"]}}}]";

static void check(zn_status st, const char *out, size_t out_len, const zn_err *err) {
    if (st != ZN_OK) {
        if (out || !err->msg[0]) {
            fprintf(stderr, "fuzz_jinja: a failed render without a message or with output\n");
            abort();
        }
        return;
    }
    if (!out || out_len > ZN_JINJA_MAX_OUTPUT || out[out_len] != 0) {
        fprintf(stderr, "fuzz_jinja: bad output (length %zu)\n", out_len);
        abort();
    }
    /* the reply splitter on rendered text: spans inside it */
    for (int in_thinking = 0; in_thinking < 2; in_thinking++) {
        zn_span r, a;
        chat_split_thinking(out, out_len, in_thinking || chat_prompt_opens_thinking(out, out_len), &r, &a);
        if (r.p < out || r.p + r.n > out + out_len || a.p < out || a.p + a.n > out + out_len) {
            fprintf(stderr, "fuzz_jinja: chat_split_thinking span outside the text\n");
            abort();
        }
    }
}

/* Renders t with vars from JSON twice; the two renders must agree. */
static void render_vars(const char *tmpl, size_t tlen, const char *json, size_t jlen, const struct tm *now) {
    jinja_template *t;
    zn_err err;
    if (jinja_parse(tmpl, tlen, &t, &err) != ZN_OK) {
        check(ZN_ERR_FORMAT, NULL, 0, &err);
        return;
    }
    char *out[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    zn_status st[2] = {ZN_ERR_ARG, ZN_ERR_ARG};
    for (int r = 0; r < 2; r++) {
        jinja_ctx *ctx;
        if (jinja_ctx_new(&ctx, &err) != ZN_OK) break;
        jinja_ctx_set_time(ctx, now);
        if (jinja_set_json(ctx, jinja_ctx_vars(ctx), NULL, json, jlen, &err) == ZN_OK) {
            st[r] = jinja_render(t, ctx, &out[r], &len[r], &err);
            check(st[r], out[r], len[r], &err);
        }
        jinja_ctx_free(ctx);
        if (st[0] != ZN_OK) break;
    }
    if (st[0] == ZN_OK && (st[1] != ZN_OK || len[0] != len[1] || memcmp(out[0], out[1], len[0]))) {
        fprintf(stderr, "fuzz_jinja: the same template and variables rendered differently\n");
        abort();
    }
    free(out[0]);
    free(out[1]);
    jinja_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > ZN_JINJA_MAX_SRC) return 0;
    /* chat_render takes a C string: the template ends at the first NUL */
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    size_t tlen = strlen(buf);
    const struct tm now = {.tm_year = 126, .tm_mon = 10, .tm_mday = 30, .tm_hour = 12};
    char *out = NULL;
    size_t out_len = 0;
    zn_err err;
    if (tlen == size) {
        zn_chat_kwargs kw = {.tools = tools, .bos_token = "<s>", .eos_token = "</s>", .now = &now,
                             .enable_thinking = ZN_THINK_ON};
        zn_status st = chat_render(buf, conversation, sizeof conversation / sizeof conversation[0], true, &kw, &out,
                                   &out_len, NULL, &err);
        check(st, out, out_len, &err);
    } else if (tlen + 1 < size) {
        uint8_t flags = (uint8_t)buf[tlen + 1];
        char *ctx = buf + tlen + 2;
        size_t clen = size - tlen - 2;
        if (ctx[0] == '[') {
            size_t mlen = strlen(ctx);
            zn_chat_kwargs kw = {.bos_token = "<s>", .eos_token = "</s>", .now = &now,
                                 .enable_thinking = (flags >> 1) % 3,
                                 .tools = mlen < clen ? ctx + mlen + 1 : NULL};
            zn_status st = chat_render_json(buf, ctx, mlen, flags & 1, &kw, &out, &out_len, NULL, &err);
            check(st, out, out_len, &err);
        } else {
            render_vars(buf, tlen, ctx, clen, &now);
        }
    }
    free(out);
    free(buf);
    return 0;
}
