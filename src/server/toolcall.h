/* Tool calls in a model's reply, parsed as the text streams in: the markup
 * never reaches the content, also when a tag is split across tokens or
 * pushes. The formats our model families emit:
 *
 *   ZN_TOOLFMT_HERMES  Qwen3 / Qwen2.5 / Hermes:
 *                      <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
 *   ZN_TOOLFMT_XML     Qwen3.5 / Qwen3-Coder:
 *                      <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
 *   ZN_TOOLFMT_LLAMA3  Llama 3.x: the reply is JSON, {"name": "f", "parameters": {...}}
 *                      (several separated by ';' or new lines)
 *
 * Inside <tool_call> both the JSON and the XML form are understood, whatever
 * the format, since models of either family slip into the other's. What
 * comes out goes to a sink as channels: ZN_CH_CONTENT text, ZN_CH_TOOL_NAME
 * (starts the next call: its name), ZN_CH_TOOL_ARGS (a piece of the current
 * call's arguments, JSON text: concatenated they form one JSON object).
 * Arguments stream as they arrive; a string parameter of the XML form is
 * escaped into JSON on the way; XML values of other or unknown types are
 * held until complete and then passed as JSON if they parse, else as a
 * string. Markup that turns out not to be a call (no name, overflow of
 * ZN_SRV_TOOL_HOLD before the name is known) is released as content.
 * Whitespace just before a call and between calls is dropped. Reasoning is
 * not this parser's business: it sees the content channel only.
 *
 * Buffers are allocated at init; push and flush allocate nothing. */
#ifndef ZINC_TOOLCALL_H
#define ZINC_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>

#include "limits.h"
#include "status.h"
#include "textstream.h"

enum { ZN_TOOLFMT_HERMES = 1, ZN_TOOLFMT_XML, ZN_TOOLFMT_LLAMA3 };

/* The format a chat template teaches (its tool-call markup); HERMES for a
 * template that shows none (NULL: ChatML), which zinc then describes itself. */
int toolcall_format_of(const char *tmpl);
const char *toolcall_format_name(int fmt);

enum { ZN_PARAM_UNKNOWN = 0, ZN_PARAM_STRING, ZN_PARAM_JSON };

typedef struct zn_tool_def {
    char *name;
    char *params_json;        /* parameters schema as JSON text ("{}" when none) */
    int n_params;
    char **param;             /* property names of the parameters schema */
    unsigned char *ptype;     /* ZN_PARAM_* of each */
} zn_tool_def;

/* The request's functions. */
typedef struct zn_toolset {
    zn_tool_def *t;
    int n;
} zn_toolset;

/* tools_json: an OpenAI tools array, [{"type":"function","function":{"name",
 * "description","parameters"}}, ...] (checked by the request parser). */
zn_status toolset_parse(zn_toolset *ts, const char *tools_json, size_t len, zn_err *err);
void toolset_free(zn_toolset *ts);
/* The index of a function by name, -1 when absent. */
int toolset_find(const zn_toolset *ts, const char *name, size_t n);

/* Receives output: false when it failed (out of memory); the parser then stops. */
typedef bool (*zn_text_sink)(void *ctx, int ch, const char *p, size_t n);

typedef struct zn_delim {
    const char *const *d;     /* NUL-terminated delimiters, none a prefix of another */
    int n;
    size_t n_held;
    char held[32];            /* a partial match (a prefix of some delimiter) */
} zn_delim;

typedef struct zn_toolparse {
    int fmt;
    const zn_toolset *tools;  /* may be NULL */
    int mode;                 /* M_* in toolcall.c */
    int jstate, xstate;       /* sub-states of the JSON and XML call forms */
    zn_delim dl;              /* the tags the current mode looks for */
    bool llama_start;         /* LLAMA3: nothing of the reply seen yet (a call may begin) */
    /* whitespace held in content: dropped when a call follows */
    char ws[ZN_THINK_HOLD];
    size_t n_ws;
    /* the text of a call that is not committed yet (no name emitted) */
    char *raw;
    size_t n_raw;
    bool committed;
    bool tagged;              /* it began with <tool_call> (a </tool_call> may follow) */
    /* the JSON form */
    char key[32];
    size_t n_key;
    int key_kind;             /* K_* */
    bool esc;
    char name[ZN_SRV_TOOL_NAME_MAX + 1];
    size_t n_name;
    bool name_done, args_done, args_str;
    int depth;                /* of the value being scanned */
    bool in_str, scalar;
    /* arguments seen before the name (JSON form), or an XML value held */
    char *hold;
    size_t n_hold;
    bool hold_over;
    /* the XML form */
    int n_xparams;
    int ptype;                /* ZN_PARAM_* of the parameter being read */
    bool xnl;                 /* a '\n' of the value held (dropped before </parameter>) */
    bool xfirst;              /* the value's first byte not yet seen (one leading '\n' is dropped) */
    char tag[ZN_SRV_TOOL_NAME_MAX + 16];
    size_t n_tag;
    int n_calls;              /* calls started (ZN_CH_TOOL_NAME sent) */
    int n_done;               /* calls whose arguments are complete */
    bool failed;              /* a sink returned false */
    /* output gathered per channel run, handed to the sink in one piece */
    zn_text_sink sink;
    void *sink_ctx;
    int run_ch;
    size_t n_run;
    char run[1024];
} zn_toolparse;

zn_status toolparse_init(zn_toolparse *p, int fmt, const zn_toolset *tools, zn_err *err);
void toolparse_free(zn_toolparse *p);
/* Feeds content text; false when the sink failed. */
bool toolparse_push(zn_toolparse *p, const char *text, size_t n, zn_text_sink sink, void *ctx);
/* The end of the reply: what is held is released (an unfinished call that
 * was committed keeps what it sent; one that was not becomes content). */
bool toolparse_flush(zn_toolparse *p, zn_text_sink sink, void *ctx);

#endif
