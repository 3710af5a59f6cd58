/* The browser chat UI (src/server/web/), packed into the binary at build
 * time by scripts/embed_web.sh: each file gzip-compressed, with its content
 * type and an ETag (a quoted hash of the uncompressed file).
 *
 * Serving it (what the UI expects of the server):
 *   Content-Type: asset->content_type, Content-Encoding: gzip (the file
 *   itself, web_asset_inflate, to a client whose Accept-Encoding does not
 *   take gzip: web_accepts_gzip), Vary: Accept-Encoding, ETag:
 *   asset->etag (If-None-Match equal to it -> 304), Cache-Control: no-cache
 *   (the paths carry no hash, so the browser revalidates; a 304 is cheap),
 *   X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer, and
 *   Content-Security-Policy: WEB_ASSET_CSP on every asset. The UI has no
 *   inline script or style, loads nothing from other origins and only
 *   fetches /v1/models and /v1/chat/completions on its own origin. */
#ifndef ZINC_WEB_ASSETS_H
#define ZINC_WEB_ASSETS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct zn_web_asset {
    const char *path;          /* URL path, "/index.html" */
    const char *content_type;  /* "text/html; charset=utf-8" */
    const unsigned char *data; /* gzip-compressed file */
    size_t len;                /* bytes at data */
    const char *etag;          /* with its quotes: "\"0123abcd...\"" */
} zn_web_asset;

#define WEB_ASSET_CSP                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "    \
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "     \
    "frame-ancestors 'none'"

/* The asset at a URL path ("/" is the index page; a query string or
 * fragment after the path is ignored); NULL when there is none. */
const zn_web_asset *web_asset_find(const char *path);

/* Whether a response to a request with this Accept-Encoding value may be
 * gzip-compressed: "gzip" (or "x-gzip"), else "*", listed with a q-value
 * above 0 (RFC 9110 12.5.3). No header (NULL): no; a client that sends none
 * is not a browser and gets the file as it is. */
bool web_accepts_gzip(const char *accept_encoding);

/* The asset's file, uncompressed (malloc'd, *len bytes); NULL when out of
 * memory or when the embedded data does not inflate to its stated size. */
unsigned char *web_asset_inflate(const zn_web_asset *a, size_t *len);

/* Every asset, *n of them (tests; a listing). */
const zn_web_asset *web_asset_list(size_t *n);

#endif
