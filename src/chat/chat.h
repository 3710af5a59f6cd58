/* Chat prompts: render a conversation with the model's own chat template
 * (tokenizer.chat_template, Jinja) the way transformers' apply_chat_template
 * does, and split a thinking model's reply into reasoning and answer.
 *
 * Variables the template sees (as in transformers): messages, tools (none
 * when absent), documents (none), add_generation_prompt, bos_token and
 * eos_token when given, enable_thinking when set, plus kw->extra.
 * Before rendering, every message gets the two adjustments OpenAI-style
 * input needs for real templates: content null/absent -> "" (Qwen3 tests
 * `'</think>' in message.content`), and tool_calls[].function.arguments
 * given as a JSON string -> the parsed object (templates iterate it). */
#ifndef ZINC_CHAT_H
#define ZINC_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "status.h"

typedef struct zn_chat_msg {
    const char *role;              /* "system", "user", "assistant", "tool" */
    const char *content;           /* text; NULL (with no parts) renders as "" */
    const char *content_parts;     /* JSON array of parts, e.g. [{"type":"text","text":"hi"}], or NULL */
    const char *reasoning_content; /* NULL: absent */
    const char *tool_calls;        /* JSON array, OpenAI form, or NULL */
    const char *tool_call_id;      /* NULL: absent */
    const char *name;              /* NULL: absent */
} zn_chat_msg;

enum { ZN_THINK_UNSET = 0, ZN_THINK_OFF, ZN_THINK_ON };

typedef struct zn_chat_kwargs {
    int enable_thinking;           /* ZN_THINK_*: UNSET passes no enable_thinking at all */
    const char *tools;             /* JSON array of tool schemas, or NULL */
    const char *bos_token;         /* NULL: not passed */
    const char *eos_token;
    const char *extra;             /* JSON object of more template variables, or NULL */
    const struct tm *now;          /* what strftime_now() sees; NULL: local time */
} zn_chat_kwargs;

/* The template used when a model has none: ChatML. */
extern const char chat_chatml_template[];

/* Renders msgs[0..n) into *out (malloc'd, NUL-terminated; caller frees).
 * tmpl NULL or "" uses ChatML and sets *used_fallback (may be NULL) so the
 * caller can say so once in its log. kw may be NULL. */
zn_status chat_render(const char *tmpl, const zn_chat_msg *msgs, size_t n, bool add_generation_prompt,
                      const zn_chat_kwargs *kw, char **out, size_t *out_len, bool *used_fallback, zn_err *err);

/* The same with the messages as a JSON array of OpenAI-style message objects
 * (what an HTTP server receives). */
zn_status chat_render_json(const char *tmpl, const char *messages_json, size_t len, bool add_generation_prompt,
                           const zn_chat_kwargs *kw, char **out, size_t *out_len, bool *used_fallback, zn_err *err);

typedef struct zn_span { const char *p; size_t n; } zn_span;

/* Whether a rendered prompt leaves the model inside a <think> block (it ends
 * with "<think>" and optional whitespace), so the reply starts with reasoning. */
bool chat_prompt_opens_thinking(const char *prompt, size_t n);

/* Splits a reply into reasoning (inside <think>...</think>, trimmed) and the
 * answer (after </think>, leading whitespace dropped). in_thinking: the
 * prompt opened the block (chat_prompt_opens_thinking). No tags and not
 * in_thinking: all answer. An unclosed block: all reasoning. Spans point
 * into text. */
void chat_split_thinking(const char *text, size_t n, bool in_thinking, zn_span *reasoning, zn_span *answer);

#endif
