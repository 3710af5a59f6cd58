/* libmicrohttpd glue: limits, Host/API-key/CORS checks, responses (http.h). */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "timer.h"

struct zn_http {
    struct MHD_Daemon *d;
    zn_http_cfg cfg;
    zn_http_route route;
    zn_http_handler fn;
    zn_http_done done;
    void *app;
    char bound[300];          /* the bound host as a Host header names it ("[::1]" for IPv6) */
    bool bound_loopback, bound_any;
    unsigned char key_hash[SHA256_DIGEST_LENGTH];
    atomic_int n_conn;
    int port;
};

typedef struct rq {
    zn_http_req r;
    char *buf;
    size_t n, cap;
    bool too_big, rejected;
} rq;

/* ---- checks ---- */

/* The host part of a Host header value or an --allowed-hosts entry (port dropped). */
static size_t host_name(const char *h, const char **start) {
    *start = h;
    if (h[0] == '[') {
        const char *e = strchr(h, ']');
        return e ? (size_t)(e - h + 1) : strlen(h);
    }
    const char *c = strchr(h, ':');
    return c ? (size_t)(c - h) : strlen(h);
}

static bool name_eq(const char *a, size_t n, const char *b) { return strlen(b) == n && !strncasecmp(a, b, n); }

static bool is_ip_literal(const char *p, size_t n) {
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) return false;
    if (p[0] == '[') {
        if (n < 3 || p[n - 1] != ']') return false;
        memcpy(tmp, p + 1, n - 2);
        tmp[n - 2] = 0;
        struct in6_addr a6;
        return inet_pton(AF_INET6, tmp, &a6) == 1;
    }
    memcpy(tmp, p, n);
    tmp[n] = 0;
    struct in_addr a4;
    return inet_pton(AF_INET, tmp, &a4) == 1;
}

/* DNS rebinding: a page on evil.example that resolves to 127.0.0.1 reaches us
 * with "Host: evil.example"; only names we are known by get through. */
static bool host_allowed(const zn_http *h, const char *host) {
    if (!host) return true; /* HTTP/1.0 without Host: not a browser (browsers always send one) */
    const char *p;
    size_t n = host_name(host, &p);
    for (int i = 0; i < h->cfg.n_allowed_hosts; i++) {
        const char *a = h->cfg.allowed_hosts[i], *ap;
        if (!strcmp(a, "*")) return true;
        size_t an = host_name(a, &ap);
        if (an == n && !strncasecmp(ap, p, n)) return true;
    }
    if (name_eq(p, n, h->bound)) return true;
    if (h->bound_loopback || h->bound_any)
        if (name_eq(p, n, "localhost") || name_eq(p, n, "127.0.0.1") || name_eq(p, n, "[::1]")) return true;
    return h->bound_any && is_ip_literal(p, n); /* any of this machine's addresses */
}

static bool key_ok(const zn_http *h, const zn_http_req *r) {
    const char *a = http_header(r, "Authorization"), *tok = NULL;
    if (a && !strncasecmp(a, "Bearer ", 7)) tok = a + 7;
    if (!tok) tok = http_header(r, "x-api-key");
    if (!tok) return false;
    while (*tok == ' ') tok++;
    size_t n = strnlen(tok, ZN_SRV_MAX_KEY_BYTES + 1);
    /* comparing digests takes the same time wherever the first difference is */
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)tok, n, d);
    return CRYPTO_memcmp(d, h->key_hash, sizeof d) == 0;
}

static bool is_public(const zn_http *h, const char *method, const char *path) {
    if (!h->cfg.api_key) return true;
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) return false;
    for (const char *const *p = h->cfg.public_paths; p && *p; p++)
        if (!strcmp(path, *p)) return true;
    return h->cfg.public_get_assets && strncmp(path, "/v1/", 4) && strcmp(path, "/metrics") && strcmp(path, "/slots") &&
           strcmp(path, "/props");
}

static const char *cors_origin(const zn_http *h, const zn_http_req *r) {
    const char *o = http_header(r, "Origin");
    if (!h->cfg.cors || !o) return NULL;
    return !strcmp(h->cfg.cors, "*") ? "*" : !strcmp(h->cfg.cors, o) ? h->cfg.cors : NULL;
}

/* ---- responses ---- */

const char *http_header(const zn_http_req *r, const char *name) {
    return MHD_lookup_connection_value((struct MHD_Connection *)r->conn, MHD_HEADER_KIND, name);
}

bool http_client_gone(const zn_http_req *r) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info((struct MHD_Connection *)r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return true;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) < 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static void add_common(zn_http_req *r, struct MHD_Response *resp, const char *ctype, const char *const *headers) {
    if (ctype) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    for (const char *const *h = headers; h && h[0] && h[1]; h += 2) MHD_add_response_header(resp, h[0], h[1]);
    const char *o = cors_origin(r->http, r);
    if (o) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", o);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    if (r->close) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
}

void http_send(zn_http_req *r, int status, const char *ctype, const char *body, size_t len, const char *const *headers) {
    if (r->status) return;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp) return;
    add_common(r, resp, ctype, headers);
    if (MHD_queue_response((struct MHD_Connection *)r->conn, (unsigned)status, resp) == MHD_YES) r->status = status;
    MHD_destroy_response(resp);
}

typedef struct stream {
    zn_http_read read;
    void *cls;
    void (*done)(void *cls);
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream *s = cls;
    ssize_t n = s->read(s->cls, buf, max);
    return n == -1 ? MHD_CONTENT_READER_END_OF_STREAM : n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void stream_free(void *cls) {
    stream *s = cls;
    if (s->done) s->done(s->cls);
    free(s);
}

void http_send_stream(zn_http_req *r, int status, const char *ctype, const char *const *headers, zn_http_read read,
                      void *cls, void (*done)(void *cls)) {
    stream *s = r->status ? NULL : malloc(sizeof *s);
    if (!s) {
        if (done) done(cls);
        return;
    }
    *s = (stream){read, cls, done};
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return;
    }
    add_common(r, resp, ctype, headers);
    if (MHD_queue_response((struct MHD_Connection *)r->conn, (unsigned)status, resp) == MHD_YES) r->status = status;
    MHD_destroy_response(resp);  /* the stream is freed with the response (stream_free) */
}

static void reject(rq *q, int status, const char *type, const char *msg, const char *const *extra) {
    char body[ZN_ERR_MSG_MAX + 160];
    /* msg holds no characters that need JSON escaping (our own fixed texts) */
    snprintf(body, sizeof body, "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"param\":null,\"code\":null}}", msg, type);
    if (q->r.path && !strncmp(q->r.path, "/v1/messages", 12)) { /* Anthropic's clients read their own shape */
        const char *t = status == 413 ? "request_too_large" : status == 403 ? "permission_error"
                      : status == 429 ? "rate_limit_error" : status == 503 ? "overloaded_error" : type;
        snprintf(body, sizeof body, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"%s\"}}", t, msg);
    }
    const char *h[8] = {"x-should-retry", status == 503 || status == 429 ? "true" : "false", NULL};
    for (int i = 0; extra && extra[i] && i < 4; i++) h[2 + i] = extra[i];
    q->r.close = true;
    q->rejected = true;
    http_send(&q->r, status, "application/json", body, strlen(body), h);
}

/* ---- libmicrohttpd callbacks ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **con_cls) {
    zn_http *h = cls;
    rq *q = *con_cls;
    if (!q) {
        if (!(q = calloc(1, sizeof *q))) return MHD_NO;
        *con_cls = q;
        q->r = (zn_http_req){.conn = c, .http = h, .method = method, .path = url, .t_arrival = timer_now()};
        q->r.route = h->route(h->app, method, url);
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        if (!host_allowed(h, host)) {
            reject(q, 403, "invalid_request_error", "this Host is not allowed (zinc serve --allowed-hosts)", NULL);
            return MHD_YES;
        }
        if (atomic_load(&h->n_conn) > ZN_SRV_MAX_CONNECTIONS) {
            reject(q, 503, "server_error", "too many connections", NULL);
            return MHD_YES;
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > ZN_SRV_MAX_BODY) {
            reject(q, 413, "invalid_request_error", "the request body is too large", NULL);
            return MHD_YES;
        }
        /* CORS preflights carry no credentials */
        if (!strcmp(method, "OPTIONS") && h->cfg.cors && cors_origin(h, &q->r) &&
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Method")) {
            static const char *const pre[] = {"Access-Control-Allow-Methods", "GET, POST, OPTIONS",
                                              "Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta",
                                              "Access-Control-Max-Age", "600", NULL};
            q->rejected = true;
            http_send(&q->r, 204, NULL, "", 0, pre);
            return MHD_YES;
        }
        if (!is_public(h, method, url) && !key_ok(h, &q->r)) {
            static const char *const www[] = {"WWW-Authenticate", "Bearer", NULL};
            reject(q, 401, "authentication_error", "a valid API key is required (Authorization: Bearer KEY, or x-api-key: KEY)", www);
            return MHD_YES;
        }
        return MHD_YES;
    }
    if (q->rejected) {
        *data_size = 0;
        return MHD_YES;
    }
    if (*data_size) {
        if (timer_now() - q->r.t_arrival > h->cfg.read_timeout_s) return MHD_NO; /* a trickling client: cut */
        if (q->too_big || q->n + *data_size > ZN_SRV_MAX_BODY) {
            q->too_big = true;  /* chunked upload: keep reading, answer 413 at the end */
        } else {
            if (q->n + *data_size + 1 > q->cap) {
                size_t cap = q->cap ? q->cap : 4096;
                while (cap < q->n + *data_size + 1) cap *= 2;
                char *b = realloc(q->buf, cap);
                if (!b) return MHD_NO;
                q->buf = b;
                q->cap = cap;
            }
            memcpy(q->buf + q->n, data, *data_size);
            q->n += *data_size;
        }
        *data_size = 0;
        return MHD_YES;
    }
    if (q->too_big) {
        reject(q, 413, "invalid_request_error", "the request body is too large", NULL);
        return MHD_YES;
    }
    if (q->r.status) return MHD_YES;
    q->r.body = q->buf ? q->buf : "";
    if (q->buf) q->buf[q->n] = 0;
    q->r.body_len = q->n;
    h->fn(h->app, &q->r);
    if (!q->r.status) {
        static const char err[] = "{\"error\":{\"message\":\"no response\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        http_send(&q->r, 500, "application/json", err, sizeof err - 1, NULL);
    }
    return q->r.status ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    zn_http *h = cls;
    rq *q = *con_cls;
    if (!q) return;
    if (h->done) h->done(h->app, q->r.route ? q->r.route : "other", q->r.status ? q->r.status : 499,
                         timer_now() - q->r.t_arrival);
    free(q->buf);
    free(q);
    *con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode toe) {
    zn_http *h = cls;
    atomic_fetch_add(&h->n_conn, toe == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
}

static void on_log(void *cls, const char *fmt, va_list ap) {
    fprintf(stderr, "zinc: http: ");
    vfprintf(stderr, fmt, ap);
}

zn_status http_start(zn_http **out, const zn_http_cfg *cfg, zn_http_route route, zn_http_handler fn,
                     zn_http_done done, void *app, zn_err *err) {
    *out = NULL;
    const char *host = cfg->host ? cfg->host : "127.0.0.1";
    if (cfg->port < 0 || cfg->port > 65535) return zn_errf(err, ZN_ERR_ARG, "--port %d: between 0 and 65535", cfg->port);
    if (cfg->api_key && (!*cfg->api_key || strlen(cfg->api_key) > ZN_SRV_MAX_KEY_BYTES))
        return zn_errf(err, ZN_ERR_ARG, "the API key must have 1 to %d bytes", ZN_SRV_MAX_KEY_BYTES);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc || !ai) return zn_errf(err, ZN_ERR_ARG, "--host %s: %s", host, gai_strerror(rc));
    zn_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        return zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    }
    h->cfg = *cfg;
    if (!h->cfg.idle_timeout_s) h->cfg.idle_timeout_s = ZN_SRV_IDLE_TIMEOUT_S;
    if (!(h->cfg.read_timeout_s > 0)) h->cfg.read_timeout_s = ZN_SRV_READ_TIMEOUT_S;
    h->route = route;
    h->fn = fn;
    h->done = done;
    h->app = app;
    atomic_init(&h->n_conn, 0);
    if (cfg->api_key) SHA256((const unsigned char *)cfg->api_key, strlen(cfg->api_key), h->key_hash);
    bool v6 = ai->ai_family == AF_INET6;
    char numeric[INET6_ADDRSTRLEN] = "";
    getnameinfo(ai->ai_addr, ai->ai_addrlen, numeric, sizeof numeric, NULL, 0, NI_NUMERICHOST);
    snprintf(h->bound, sizeof h->bound, v6 && !strchr(host, '[') && strchr(host, ':') ? "[%s]" : "%s", host);
    h->bound_any = !strcmp(numeric, "0.0.0.0") || !strcmp(numeric, "::");
    h->bound_loopback = !strncmp(numeric, "127.", 4) || !strcmp(numeric, "::1");
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                     (v6 ? MHD_USE_IPv6 : 0);
    h->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, on_log, h,  /* first, or early messages bypass it */
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)ZN_SRV_MAX_HEADER,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)(ZN_SRV_MAX_CONNECTIONS + 16),
                            MHD_OPTION_CONNECTION_TIMEOUT, h->cfg.idle_timeout_s,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        free(h);
        return zn_errf(err, ZN_ERR_IO, "cannot listen on %s:%d (in use, or not an address of this machine)", host,
                       cfg->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : cfg->port;
    *out = h;
    return ZN_OK;
}

int http_port(const zn_http *h) { return h->port; }

void http_stop(zn_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
