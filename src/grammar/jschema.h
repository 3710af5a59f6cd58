/* JSON Schema -> GBNF (grammar.h): a grammar whose sentences are JSON texts
 * that validate against the schema, for structured output and tool calls.
 *
 * Enforced: type (and lists of types), properties / required /
 * additionalProperties, items / prefixItems / minItems / maxItems, enum,
 * const, anyOf / oneOf (as alternatives), allOf of object schemas (merged),
 * $ref into the same document (#, #/$defs/..., #/definitions/..., any
 * pointer; recursion allowed), nullable, string minLength / maxLength and
 * the formats date, time, date-time and uuid, integer minimum / maximum /
 * exclusiveMinimum / exclusiveMaximum, number minimum 0. Annotations
 * (title, description, default, examples, $schema, ...) are ignored.
 * Anything else that constrains instances is refused with ZN_ERR_UNSUPPORTED
 * and a message naming the keyword and where it is ("'pattern' at
 * #/properties/zip"), rather than producing output that might not validate.
 *
 * Choices that keep small models on track: required properties come first,
 * in schema order, then the optional ones; whitespace is at most one space
 * or a newline and some indentation where JSON allows it; numbers have at
 * most 16 integer and 16 fraction digits; properties beyond those declared
 * only when additionalProperties says so. */
#ifndef ZINC_JSCHEMA_H
#define ZINC_JSCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef struct zn_gbnf zn_gbnf;

zn_status gbnf_new(zn_gbnf **out, zn_err *err);
void gbnf_free(zn_gbnf *b);

/* Adds the rules of a schema (JSON text); *rule gets the name to refer to
 * it by (owned by b). name: the rule's name (made unique); where: how
 * errors name the schema ("response_format.json_schema.schema"). */
zn_status gbnf_add_schema(zn_gbnf *b, const char *name, const char *schema, size_t n, const char *where,
                          const char **rule, zn_err *err);
/* Adds "name ::= body" (body GBNF, name exactly as given). */
zn_status gbnf_add_rule(zn_gbnf *b, const char *name, const char *body, zn_err *err);
/* Adds a rule matching any text not containing delim, then delim. */
zn_status gbnf_add_until(zn_gbnf *b, const char *name, const char *delim, zn_err *err);
/* The rule for any JSON value / any JSON object (added on first use). */
const char *gbnf_any_value(zn_gbnf *b);
const char *gbnf_any_object(zn_gbnf *b);
/* The grammar so far, NUL-terminated (owned by b). */
const char *gbnf_text(zn_gbnf *b, size_t *len);

/* s[0..n) as a GBNF literal ("..." with escapes), NUL-terminated in out
 * (cap >= 4 * n + 3); returns its length. */
size_t gbnf_quote(const char *s, size_t n, char *out);

/* One schema as a whole grammar, root rule "root" (malloc'd text). */
zn_status jschema_to_gbnf(const char *schema, size_t n, const char *where, char **gbnf, zn_err *err);

#endif
