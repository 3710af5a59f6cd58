/* The web chat UI, embedded in the binary: each asset gzip-compressed, with
 * its content type and an ETag. */
#ifndef ZINC_WEB_ASSETS_H
#define ZINC_WEB_ASSETS_H

#include <stddef.h>

typedef struct zn_web_asset {
    const char *path;          /* "/" for the page itself, "/app.js", ... */
    const char *content_type;
    const unsigned char *data; /* gzip */
    size_t len;
    const char *etag;          /* quoted, e.g. "\"3f2a...\"" */
} zn_web_asset;

/* NULL when there is no asset at path. */
const zn_web_asset *web_asset_find(const char *path);

#endif
