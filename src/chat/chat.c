/* Chat prompts on top of the Jinja interpreter (see chat.h). */
#include "chat.h"

#include <string.h>

#include "jinja.h"

/* ChatML, as llama.cpp and most Qwen-style models write it; text parts are
 * concatenated, tool calls are not shown. */
const char chat_chatml_template[] =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' -}}\n"
    "{%- if message.content is string -%}{{- message.content -}}\n"
    "{%- else -%}{%- for part in message.content -%}{%- if part.type == 'text' -%}{{- part.text -}}{%- endif -%}{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";

#define TRY(x) do { zn_status s_ = (x); if (s_ != ZN_OK) return s_; } while (0)
#define OOM(x) do { if (!(x)) return zn_errf(err, ZN_ERR_NOMEM, "chat: out of memory"); } while (0)

static zn_status set_opt_str(jinja_ctx *ctx, jinja_obj *d, const char *key, const char *v, zn_err *err) {
    if (!v) return ZN_OK;
    if (jinja_set_str(ctx, d, key, v, strlen(v))) return zn_errf(err, ZN_ERR_NOMEM, "chat: out of memory");
    return ZN_OK;
}

/* content null -> "", tool call arguments given as JSON text -> object. */
static zn_status normalize_messages(jinja_ctx *ctx, jinja_obj *msgs, zn_err *err) {
    for (size_t i = 0; i < jinja_len(msgs); i++) {
        jinja_obj *m = jinja_get_obj(ctx, msgs, NULL, i);
        if (!m) return zn_errf(err, ZN_ERR_ARG, "chat: message %zu is not an object", i);
        size_t n;
        if (!jinja_get_str(m, "content", 0, &n) && !jinja_get_obj(ctx, m, "content", 0))
            OOM(!jinja_set_str(ctx, m, "content", "", 0));
        jinja_obj *calls = jinja_get_obj(ctx, m, "tool_calls", 0);
        for (size_t k = 0; calls && k < jinja_len(calls); k++) {
            jinja_obj *call = jinja_get_obj(ctx, calls, NULL, k);
            jinja_obj *fn = call ? jinja_get_obj(ctx, call, "function", 0) : NULL;
            const char *args = fn ? jinja_get_str(fn, "arguments", 0, &n) : NULL;
            if (!args) continue;
            zn_err ignore;
            /* Arguments that are not a JSON object stay the string they were. */
            size_t b = 0;
            while (b < n && (args[b] == ' ' || args[b] == '\n' || args[b] == '\t' || args[b] == '\r')) b++;
            if (b < n && args[b] == '{' && jinja_set_json(ctx, fn, "arguments", args, n, &ignore) == ZN_ERR_NOMEM)
                return zn_errf(err, ZN_ERR_NOMEM, "chat: out of memory");
        }
    }
    return ZN_OK;
}

static zn_status set_kwargs(jinja_ctx *ctx, bool add_generation_prompt, const zn_chat_kwargs *kw, zn_err *err) {
    jinja_obj *vars = jinja_ctx_vars(ctx);
    static const zn_chat_kwargs none = {0};
    if (!kw) kw = &none;
    if (kw->tools) {
        if (jinja_set_json(ctx, vars, "tools", kw->tools, strlen(kw->tools), err))
            return zn_err_prefix(err, "chat: tools");
    } else {
        OOM(!jinja_set_none(ctx, vars, "tools"));
    }
    OOM(!jinja_set_none(ctx, vars, "documents"));
    OOM(!jinja_set_bool(ctx, vars, "add_generation_prompt", add_generation_prompt));
    TRY(set_opt_str(ctx, vars, "bos_token", kw->bos_token, err));
    TRY(set_opt_str(ctx, vars, "eos_token", kw->eos_token, err));
    if (kw->enable_thinking != ZN_THINK_UNSET)
        OOM(!jinja_set_bool(ctx, vars, "enable_thinking", kw->enable_thinking == ZN_THINK_ON));
    if (kw->extra && jinja_set_json(ctx, vars, NULL, kw->extra, strlen(kw->extra), err))
        return zn_err_prefix(err, "chat: extra template variables");
    if (kw->now) jinja_ctx_set_time(ctx, kw->now);
    return ZN_OK;
}

static zn_status render(const char *tmpl, jinja_ctx *ctx, char **out, size_t *out_len, bool *used_fallback,
                        zn_err *err) {
    bool fallback = !tmpl || !*tmpl;
    if (used_fallback) *used_fallback = fallback;
    if (fallback) tmpl = chat_chatml_template;
    jinja_template *t;
    TRY(jinja_parse(tmpl, strlen(tmpl), &t, err));
    zn_status s = jinja_render(t, ctx, out, out_len, err);
    jinja_free(t);
    return s;
}

static zn_status build_msg(jinja_ctx *ctx, jinja_obj *list, const zn_chat_msg *m, size_t i, zn_err *err) {
    jinja_obj *d = jinja_set_dict(ctx, list, NULL);
    OOM(d);
    if (!m->role) return zn_errf(err, ZN_ERR_ARG, "chat: message %zu has no role", i);
    TRY(set_opt_str(ctx, d, "role", m->role, err));
    if (m->content_parts) {
        if (jinja_set_json(ctx, d, "content", m->content_parts, strlen(m->content_parts), err))
            return zn_err_prefix(err, "chat: message %zu content parts", i);
    } else {
        TRY(set_opt_str(ctx, d, "content", m->content ? m->content : "", err));
    }
    TRY(set_opt_str(ctx, d, "reasoning_content", m->reasoning_content, err));
    if (m->tool_calls && jinja_set_json(ctx, d, "tool_calls", m->tool_calls, strlen(m->tool_calls), err))
        return zn_err_prefix(err, "chat: message %zu tool_calls", i);
    TRY(set_opt_str(ctx, d, "tool_call_id", m->tool_call_id, err));
    TRY(set_opt_str(ctx, d, "name", m->name, err));
    return ZN_OK;
}

zn_status chat_render(const char *tmpl, const zn_chat_msg *msgs, size_t n, bool add_generation_prompt,
                      const zn_chat_kwargs *kw, char **out, size_t *out_len, bool *used_fallback, zn_err *err) {
    *out = NULL;
    jinja_ctx *ctx;
    TRY(jinja_ctx_new(&ctx, err));
    zn_status s = ZN_OK;
    jinja_obj *list = jinja_set_list(ctx, jinja_ctx_vars(ctx), "messages");
    if (!list) s = zn_errf(err, ZN_ERR_NOMEM, "chat: out of memory");
    for (size_t i = 0; s == ZN_OK && i < n; i++) s = build_msg(ctx, list, &msgs[i], i, err);
    if (s == ZN_OK) s = normalize_messages(ctx, list, err);
    if (s == ZN_OK) s = set_kwargs(ctx, add_generation_prompt, kw, err);
    if (s == ZN_OK) s = render(tmpl, ctx, out, out_len, used_fallback, err);
    jinja_ctx_free(ctx);
    return s;
}

zn_status chat_render_json(const char *tmpl, const char *messages_json, size_t len, bool add_generation_prompt,
                           const zn_chat_kwargs *kw, char **out, size_t *out_len, bool *used_fallback, zn_err *err) {
    *out = NULL;
    jinja_ctx *ctx;
    TRY(jinja_ctx_new(&ctx, err));
    jinja_obj *vars = jinja_ctx_vars(ctx);
    zn_status s = jinja_set_json(ctx, vars, "messages", messages_json, len, err);
    if (s != ZN_OK) zn_err_prefix(err, "chat: messages");
    jinja_obj *list = s == ZN_OK ? jinja_get_obj(ctx, vars, "messages", 0) : NULL;
    if (s == ZN_OK && (!list || !jinja_is_list(list))) s = zn_errf(err, ZN_ERR_ARG, "chat: messages must be a JSON array");
    if (s == ZN_OK) s = normalize_messages(ctx, list, err);
    if (s == ZN_OK) s = set_kwargs(ctx, add_generation_prompt, kw, err);
    if (s == ZN_OK) s = render(tmpl, ctx, out, out_len, used_fallback, err);
    jinja_ctx_free(ctx);
    return s;
}

/* ---- thinking ---- */

static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static const char *find(const char *s, size_t n, const char *w) {
    return memmem(s, n, w, strlen(w));
}

static zn_span trim(const char *p, size_t n, bool right) {
    while (n && is_space(*p)) { p++; n--; }
    while (right && n && is_space(p[n - 1])) n--;
    return (zn_span){p, n};
}

bool chat_prompt_opens_thinking(const char *prompt, size_t n) {
    while (n && is_space(prompt[n - 1])) n--;
    return n >= 7 && !memcmp(prompt + n - 7, "<think>", 7);
}

void chat_split_thinking(const char *text, size_t n, bool in_thinking, zn_span *reasoning, zn_span *answer) {
    const char *p = text;
    size_t len = n;
    if (!in_thinking) {
        zn_span t = trim(text, n, false);
        if (t.n >= 7 && !memcmp(t.p, "<think>", 7)) {
            p = t.p + 7;
            len = t.n - 7;
            in_thinking = true;
        }
    }
    const char *close = find(p, len, "</think>");
    if (!in_thinking && !close) {
        *reasoning = (zn_span){text + n, 0};
        *answer = (zn_span){text, n};
        return;
    }
    if (!close) {  /* still thinking when generation stopped */
        *reasoning = trim(p, len, true);
        *answer = (zn_span){text + n, 0};
        return;
    }
    *reasoning = trim(p, (size_t)(close - p), true);
    const char *after = close + 8;
    *answer = trim(after, (size_t)(text + n - after), false);
}
