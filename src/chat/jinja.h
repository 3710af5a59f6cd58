/* A small Jinja2 interpreter for chat templates.
 *
 * Renders the subset of Jinja that real `tokenizer.chat_template`s use, with
 * the environment Hugging Face transformers uses (trim_blocks, lstrip_blocks,
 * loop controls, `raise_exception`, `strftime_now`, a `tojson` that keeps
 * non-ASCII text and takes indent/separators/sort_keys), so renders match
 * transformers byte for byte. Templates come from untrusted model files:
 * every error is a zn_err naming line and column, and recursion, steps,
 * memory and output size are bounded (ZN_JINJA_* in limits.h).
 *
 * Usage: jinja_parse() once; per render, jinja_ctx_new(), fill variables with
 * jinja_set_*() on jinja_ctx_vars(ctx) (and nested lists/dicts), then
 * jinja_render(); jinja_ctx_free(). */
#ifndef ZINC_JINJA_H
#define ZINC_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "status.h"

typedef struct jinja_template jinja_template;
typedef struct jinja_ctx jinja_ctx;  /* variables of one render and the memory they live in */
typedef struct jinja_obj jinja_obj;  /* a list or dict inside a ctx */

zn_status jinja_parse(const char *src, size_t len, jinja_template **out, zn_err *err);
void jinja_free(jinja_template *t);

zn_status jinja_ctx_new(jinja_ctx **out, zn_err *err);
void jinja_ctx_free(jinja_ctx *ctx);
/* The top-level variables (a dict). */
jinja_obj *jinja_ctx_vars(jinja_ctx *ctx);
/* What strftime_now() formats; default: the local time when rendering. */
void jinja_ctx_set_time(jinja_ctx *ctx, const struct tm *tm);

/* Set dict[key] (obj a dict) or append (obj a list, key NULL). A key set
 * twice keeps its first position, like a Python dict. */
zn_status jinja_set_str(jinja_ctx *ctx, jinja_obj *obj, const char *key, const char *s, size_t n);
zn_status jinja_set_int(jinja_ctx *ctx, jinja_obj *obj, const char *key, int64_t v);
zn_status jinja_set_bool(jinja_ctx *ctx, jinja_obj *obj, const char *key, bool v);
zn_status jinja_set_none(jinja_ctx *ctx, jinja_obj *obj, const char *key);
/* Parses JSON text into a value (objects keep key order). With obj a dict and
 * key NULL, the JSON must be an object whose members are all set in obj. */
zn_status jinja_set_json(jinja_ctx *ctx, jinja_obj *obj, const char *key, const char *json, size_t n,
                         zn_err *err);
/* New empty list/dict stored at obj[key] (or appended); NULL when out of memory. */
jinja_obj *jinja_set_list(jinja_ctx *ctx, jinja_obj *obj, const char *key);
jinja_obj *jinja_set_dict(jinja_ctx *ctx, jinja_obj *obj, const char *key);
/* Read access, for callers that adjust what they built: dict[key] (or
 * list[i]) when it is a list/dict, resp. a string (*n = its length); else NULL. */
size_t jinja_len(const jinja_obj *obj);
bool jinja_is_list(const jinja_obj *obj);
jinja_obj *jinja_get_obj(jinja_ctx *ctx, jinja_obj *obj, const char *key, size_t i);
const char *jinja_get_str(jinja_obj *obj, const char *key, size_t i, size_t *n);

/* Renders into a malloc'd NUL-terminated string (*out, *out_len); the caller
 * frees it. The ctx may be rendered again; the template is not modified. */
zn_status jinja_render(const jinja_template *t, jinja_ctx *ctx, char **out, size_t *out_len, zn_err *err);

#endif
