/* The HTTP layer, on libmicrohttpd with one thread per connection: a
 * handler may block (waiting for the engine) and a stream's reader may block
 * until its next bytes. Before a handler sees a request this layer has read
 * the whole body (413 above ZN_SRV_MAX_BODY), checked the Host header
 * against the bound address and --allowed-hosts (DNS rebinding), the API key
 * (constant time) unless the route is public, and answered CORS preflights
 * when --cors names an origin. No CORS header is ever sent otherwise. */
#ifndef ZINC_HTTP_H
#define ZINC_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "limits.h"
#include "status.h"

typedef struct zn_http_cfg {
    const char *host;          /* address to bind (numeric or a name); "127.0.0.1" by default */
    int port;                  /* 0: any free port (http_port says which) */
    const char *api_key;       /* NULL: no key */
    const char *cors;          /* NULL: no CORS headers; else the one allowed origin or "*" */
    const char *allowed_hosts[ZN_SRV_MAX_HOSTS]; /* Host header values accepted besides the bound address */
    int n_allowed_hosts;       /* an entry "*" accepts any Host */
    /* GET paths that need no API key (exact), NULL-terminated, or NULL */
    const char *const *public_paths;
    /* every GET outside /v1/ needs no key either (the UI's assets: the page asks for the key) */
    bool public_get_assets;
    /* 0: ZN_SRV_IDLE_TIMEOUT_S (a connection sending nothing for that long is
     * closed) and ZN_SRV_READ_TIMEOUT_S (a body still arriving that long after
     * the headers is cut: a trickling client) */
    unsigned idle_timeout_s;
    double read_timeout_s;
} zn_http_cfg;

typedef struct zn_http zn_http;

typedef struct zn_http_req {
    void *conn;                /* struct MHD_Connection */
    zn_http *http;
    const char *method, *path;
    const char *body;          /* NUL-terminated */
    size_t body_len;
    double t_arrival;
    int status;                /* what was sent (0: nothing yet) */
    bool close;                /* send Connection: close */
    const char *route;         /* metrics label the handler sets ("other" when unknown) */
} zn_http_req;

/* Called once per request with the whole body; must send one response
 * (http_send*); may block. */
typedef void (*zn_http_handler)(void *app, zn_http_req *req);
/* The metrics label of a request (a static string), asked before anything is
 * read, so rejected requests are counted by route too. */
typedef const char *(*zn_http_route)(void *app, const char *method, const char *path);
/* Called when a request is over (response sent or connection lost). */
typedef void (*zn_http_done)(void *app, const char *route, int status, double seconds);

zn_status http_start(zn_http **out, const zn_http_cfg *cfg, zn_http_route route, zn_http_handler fn,
                     zn_http_done done, void *app, zn_err *err);
int http_port(const zn_http *h);
void http_stop(zn_http *h);

/* A request header's value, NULL when absent. */
const char *http_header(const zn_http_req *r, const char *name);
/* Whether the client closed its side of the connection (a blocked handler
 * polls this to give up its work). */
bool http_client_gone(const zn_http_req *r);

/* Extra response headers: name/value pairs, NULL-terminated (may be NULL). */
void http_send(zn_http_req *r, int status, const char *content_type, const char *body, size_t len,
               const char *const *headers);
/* A streamed body (chunked): read fills buf with up to max bytes and
 * returns the count, -1 at the end, -2 on error (connection cut); it is
 * called in this connection's thread and may block. done(cls) runs when
 * the response is freed, also when the client went away. */
typedef ssize_t (*zn_http_read)(void *cls, char *buf, size_t max);
void http_send_stream(zn_http_req *r, int status, const char *content_type, const char *const *headers,
                      zn_http_read read, void *cls, void (*done)(void *cls));

#endif
