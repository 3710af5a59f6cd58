/* Server-sent events with an event name ("event: NAME\ndata: JSON\n\n"), as
 * the Responses and Anthropic Messages APIs stream them, collected in a
 * growing buffer that the stream hands to the connection. */
#ifndef ZINC_EVBUF_H
#define ZINC_EVBUF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct zn_evbuf {
    char *p;
    size_t n, cap;
} zn_evbuf;

/* Appends one event; the JSON is released. false when out of memory (or
 * data is NULL: a failed json_pack). */
bool evbuf_add(zn_evbuf *b, const char *event, json_t *data);
void evbuf_free(zn_evbuf *b);

#endif
