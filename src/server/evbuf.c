/* Named server-sent events (see evbuf.h). */
#include "evbuf.h"

#include <stdlib.h>
#include <string.h>

static bool grow(zn_evbuf *b, size_t more) {
    if (b->n + more <= b->cap) return true;
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->n + more) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

bool evbuf_add(zn_evbuf *b, const char *event, json_t *data) {
    if (!data) return false;
    char *s = json_dumps(data, JSON_COMPACT);
    json_decref(data);
    if (!s) return false;
    size_t en = strlen(event), sn = strlen(s);
    bool ok = grow(b, en + sn + 16);
    if (ok) {
        memcpy(b->p + b->n, "event: ", 7);
        memcpy(b->p + b->n + 7, event, en);
        memcpy(b->p + b->n + 7 + en, "\ndata: ", 7);
        memcpy(b->p + b->n + 14 + en, s, sn);
        memcpy(b->p + b->n + 14 + en + sn, "\n\n", 2);
        b->n += en + sn + 16;
    }
    free(s);
    return ok;
}

void evbuf_free(zn_evbuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}
