/* Streamed reply text, token by token: stop strings that are never returned
 * (also when one spans tokens), and a thinking model's reply split into
 * reasoning (<think>...</think>) and answer, as chat_split_thinking does for
 * a whole text. Both hold back only the bytes that might still turn into a
 * stop string or a tag, and allocate nothing after init. */
#ifndef ZINC_TEXTSTREAM_H
#define ZINC_TEXTSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "limits.h"
#include "tokenizer.h"

#define ZN_STOPPER_CAP (ZN_SRV_MAX_STOP_BYTES + ZN_DETOK_OUT_MAX)

typedef struct zn_stopper {
    const char *stop[ZN_SRV_MAX_STOP]; /* borrowed, NUL-terminated, non-empty */
    int n_stop;
    bool matched;                      /* a stop string was found: the reply ends */
    const char *hit;                   /* which one (Anthropic's stop_sequence), NULL before */
    size_t n_held;
    char held[ZN_STOPPER_CAP];
} zn_stopper;

void stopper_init(zn_stopper *s, const char *const *stop, int n_stop);
/* Adds text; copies what is certain not to belong to a stop string to out
 * (cap >= ZN_STOPPER_CAP) and returns its length. After a match, the text
 * before the stop string is returned, matched is set and later pushes
 * return 0. n <= ZN_DETOK_OUT_MAX. */
size_t stopper_push(zn_stopper *s, const char *text, size_t n, char *out);
/* The end of the reply: whatever is held (no stop string came). */
size_t stopper_flush(zn_stopper *s, char *out);

/* Channels of a reply: text, reasoning, and tool calls (toolcall.h): a
 * TOOL_NAME piece starts a call, TOOL_ARGS pieces are its arguments' JSON. */
enum { ZN_CH_CONTENT = 0, ZN_CH_REASONING = 1, ZN_CH_TOOL_NAME = 2, ZN_CH_TOOL_ARGS = 3, ZN_CH_COUNT = 4 };

typedef struct zn_think_out {
    int channel;        /* ZN_CH_* */
    const char *p;
    size_t n;
} zn_think_out;

#define ZN_THINK_HOLD 64  /* held whitespace beyond this is released (it is not trailing) */

typedef struct zn_thinker {
    int mode;           /* 0 before anything was seen, 1 reasoning, 2 answer */
    bool at_start;      /* nothing of the current channel released yet (leading whitespace is dropped) */
    size_t n_held;
    char held[ZN_STOPPER_CAP + ZN_THINK_HOLD + 16];
    char buf[2][ZN_STOPPER_CAP + ZN_THINK_HOLD + 16]; /* what one push returns, per channel */
} zn_thinker;

/* in_thinking: the prompt opened a <think> block (chat_prompt_opens_thinking);
 * enabled false passes everything through as answer. */
void thinker_init(zn_thinker *t, bool in_thinking, bool enabled);
/* Splits text into at most 2 pieces (reasoning then answer, or the other
 * way round never happens); returns the count written to out. The pieces
 * point into t and stay valid until the next call. n <= ZN_STOPPER_CAP. */
int thinker_push(zn_thinker *t, const char *text, size_t n, zn_think_out out[2]);
int thinker_flush(zn_thinker *t, zn_think_out out[2]);

/* usage.completion_tokens_details.reasoning_tokens: how many generated tokens
 * belong to the reasoning, from the opening tag through the closing one. It
 * runs a thinker of its own over each token's text as the detokenizer gives
 * it, before stop strings hold any back, so a token is counted when it is
 * generated; tokens before the reply shows whether it opens a <think> block
 * (leading whitespace, part of the tag) are counted once that is known. */
typedef struct zn_think_count {
    zn_thinker t;
    int pending;        /* tokens seen while undecided */
    int n;              /* reasoning tokens */
} zn_think_count;

void thinkcount_init(zn_think_count *c, bool in_thinking, bool enabled);
/* Whether the reply is inside its <think> block now (opened, not yet closed). */
bool thinkcount_in_reasoning(const zn_think_count *c);

/* What the server writes to close a <think> block whose budget is spent:
 * the text Qwen's templates put between reasoning and answer. */
#define ZN_THINK_CLOSE_TEXT "\n</think>\n\n"
/* One generated token's text (n <= ZN_DETOK_OUT_MAX; may be empty). */
void thinkcount_push(zn_think_count *c, const char *text, size_t n);

#endif
