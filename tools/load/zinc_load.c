/* zinc-load: a bounded load run against an OpenAI-compatible server on this
 * machine (zinc serve, llama-server): N concurrent clients, each streaming
 * requests one after another, for each concurrency level given; per level
 * requests/s, generated tokens/s, time to first token, inter-token latency
 * and request latency (p50/p90/p99).
 *
 *   zinc-load --url http://127.0.0.1:8080 --concurrency 1,8,32 --requests 64 --max-tokens 64 [--json out.json]
 *
 * Loopback only: the URL must name 127.0.0.0/8, ::1 or localhost (it never
 * resolves a name). Bounded: each level sends a fixed number of requests
 * (--requests; default 4 per client, at least 16; at least one per client)
 * and stops issuing new ones after --max-seconds. Plain C and POSIX (sockets, threads) so it builds anywhere
 * with a C compiler (make load: a static binary that can be copied).
 *
 * Streaming: POST with "stream": true and stream_options.include_usage; the
 * HTTP/1.1 response body (chunked or not) is read as it arrives and split
 * into server-sent events. An event with non-empty text ("text", "content" or
 * "reasoning_content") is a token event; TTFT is the time from sending the
 * request to the first one, inter-token latency the gaps between later ones
 * (events delivered by one read share a time stamp). Generated tokens are
 * the usage chunk's completion_tokens (the count of token events when the
 * server sends no usage). Every request gets its own prompt (its number
 * first), so no request reuses another's prompt cache. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, strcasestr */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_LEVELS 16
#define MAX_CLIENTS 1024
#define RESP_MAX (64u << 20) /* bytes of one response: a runaway stream is cut */

typedef struct cfg {
    int family;                 /* AF_INET / AF_INET6 */
    char host[64];              /* numeric, as the Host header names it */
    struct sockaddr_storage addr;
    socklen_t addr_len;
    const char *path, *model, *api_key, *json_out;
    const char *response_format;  /* chat: a JSON object sent as response_format, or NULL */
    bool chat;
    int levels[MAX_LEVELS], n_levels;
    int requests, max_tokens, prompt_words, timeout_s, max_seconds;
    int system_words;           /* a shared prefix of this many words before every prompt (prefix cache) */
    double temperature;
} cfg;

typedef struct result {
    bool ok;
    int status;
    double ttft, e2e;           /* seconds */
    int tokens;                 /* generated (usage, else token events) */
    char err[160];
} result;

typedef struct samples {
    double *v;
    size_t n, cap;
} samples;

typedef struct level {
    const cfg *c;
    int conc;
    atomic_int next;            /* the next request number to take */
    int total;
    double deadline;            /* no new request after this (monotonic seconds) */
    pthread_mutex_t mu;
    result *res;                /* [total] */
    samples itl;
} level;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool push(samples *s, double x) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v) return false;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return true;
}

/* ---- one request ---- */

/* Growable byte buffer. */
typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static bool buf_add(buf *b, const char *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        if (cap > RESP_MAX) return false;
        char *q = realloc(b->p, cap);
        if (!q) return false;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

static bool buf_str(buf *b, const char *s) { return buf_add(b, s, strlen(s)); }

static void buf_drop(buf *b, size_t n) {
    memmove(b->p, b->p + n, b->n - n);
    b->n -= n;
    b->p[b->n] = 0;
}

static const char WORDS[] =
    "the old prince looked at his son and said that the river was high this year and the roads were long "
    "but the horses were strong and the people of the town would wait for them at the gate until the evening ";

/* Appends n words of WORDS, round and round. */
static bool add_words(buf *b, int n) {
    const char *w = WORDS;
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        const char *e = strchr(w, ' ');
        ok = buf_add(b, i ? " " : "", i ? 1 : 0) && buf_add(b, w, (size_t)(e - w));
        w = e[1] ? e + 1 : WORDS;
    }
    return ok;
}

/* Request n: the shared system words (chat: a system message; completions:
 * the prompt's first line), then "Request n:" and the prompt words, which
 * differ from the first token after the shared part. */
static char *request_body(const cfg *c, int n, size_t *len) {
    buf b = {0};
    char tmp[256];
    int k = snprintf(tmp, sizeof tmp, "{%s%s%s\"%s", c->model ? "\"model\":\"" : "", c->model ? c->model : "",
                     c->model ? "\"," : "", c->chat ? "messages\":[" : "prompt\":\"");
    bool ok = buf_add(&b, tmp, (size_t)k);
    if (c->system_words > 0) {
        if (c->chat) ok = ok && buf_str(&b, "{\"role\":\"system\",\"content\":\"");
        ok = ok && add_words(&b, c->system_words) && buf_str(&b, c->chat ? "\"}," : "\\n");
    }
    if (c->chat) ok = ok && buf_str(&b, "{\"role\":\"user\",\"content\":\"");
    k = snprintf(tmp, sizeof tmp, "Request %d: ", n);
    ok = ok && buf_add(&b, tmp, (size_t)k) && add_words(&b, c->prompt_words);
    k = snprintf(tmp, sizeof tmp,
                 "\"%s,\"max_tokens\":%d,\"temperature\":%g,\"ignore_eos\":true,\"stream\":true,"
                 "\"stream_options\":{\"include_usage\":true}",
                 c->chat ? "}]" : "", c->max_tokens, c->temperature);
    ok = ok && buf_add(&b, tmp, (size_t)k);
    if (c->response_format)
        ok = ok && buf_str(&b, ",\"response_format\":") && buf_str(&b, c->response_format);
    ok = ok && buf_str(&b, "}");
    if (!ok) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}

/* Whether a JSON text has key "name" with a non-empty string value. */
static bool has_text(const char *j, const char *name) {
    char pat[48];
    snprintf(pat, sizeof pat, "\"%s\":\"", name);
    for (const char *p = j; (p = strstr(p, pat)); p += strlen(pat))
        if (p[strlen(pat)] != '"') return true;
    return false;
}

static int int_after(const char *j, const char *key) {
    const char *p = strstr(j, key);
    return p ? atoi(p + strlen(key)) : -1;
}

enum { CH_SIZE, CH_DATA, CH_CRLF, CH_END };

typedef struct stream_state {
    buf sse;                    /* de-chunked body not yet split into events */
    bool chunked;
    int ch;                     /* CH_*: where the chunked decoder is */
    long chunk_left;            /* bytes left in the current chunk */
    buf raw;                    /* undecoded chunked bytes */
    int events, usage_tokens;
    double t_first, t_last;
    bool done, error;
    char err[160];
} stream_state;

/* Splits complete events off st->sse; t: when their bytes arrived. */
static void take_events(stream_state *st, level *lv, double t) {
    char *e;
    while ((e = strstr(st->sse.p ? st->sse.p : "", "\n\n"))) {
        size_t n = (size_t)(e - st->sse.p) + 2;
        *e = 0;
        const char *d = strncmp(st->sse.p, "data: ", 6) ? NULL : st->sse.p + 6;
        if (d && !strcmp(d, "[DONE]")) {
            st->done = true;
        } else if (d && !strncmp(d, "{\"error\"", 8)) {
            st->error = true;
            snprintf(st->err, sizeof st->err, "in-band error: %.120s", d);
        } else if (d) {
            int u = int_after(d, "\"completion_tokens\":");
            if (u >= 0) st->usage_tokens = u;
            if (has_text(d, "text") || has_text(d, "content") || has_text(d, "reasoning_content")) {
                if (st->events == 0) {
                    st->t_first = t;
                } else {
                    pthread_mutex_lock(&lv->mu);
                    push(&lv->itl, t - st->t_last);
                    pthread_mutex_unlock(&lv->mu);
                }
                st->t_last = t;
                st->events++;
            }
        }
        buf_drop(&st->sse, n);
    }
}

/* Feeds body bytes (chunked decoding when needed); false on a framing error. */
static bool feed_body(stream_state *st, const char *p, size_t n) {
    if (!st->chunked) return buf_add(&st->sse, p, n);
    if (!buf_add(&st->raw, p, n)) return false;
    for (;;) {
        switch (st->ch) {
        case CH_SIZE: {
            char *eol = memmem(st->raw.p, st->raw.n, "\r\n", 2);
            if (!eol) return st->raw.n < 1024;
            char *end;
            long sz = strtol(st->raw.p, &end, 16);
            if (end == st->raw.p || sz < 0) return false;
            buf_drop(&st->raw, (size_t)(eol - st->raw.p) + 2);
            if (sz == 0) {
                st->ch = CH_END;
                return true;
            }
            st->chunk_left = sz;
            st->ch = CH_DATA;
            break;
        }
        case CH_DATA: {
            if (!st->raw.n) return true;
            size_t k = st->raw.n < (size_t)st->chunk_left ? st->raw.n : (size_t)st->chunk_left;
            if (!buf_add(&st->sse, st->raw.p, k)) return false;
            buf_drop(&st->raw, k);
            st->chunk_left -= (long)k;
            if (!st->chunk_left) st->ch = CH_CRLF;
            break;
        }
        case CH_CRLF:
            if (st->raw.n < 2) return true;
            if (memcmp(st->raw.p, "\r\n", 2)) return false;
            buf_drop(&st->raw, 2);
            st->ch = CH_SIZE;
            break;
        default:
            return true;  /* after the last chunk: trailers, ignored */
        }
    }
}

static void run_request(level *lv, int num, result *r) {
    const cfg *c = lv->c;
    memset(r, 0, sizeof *r);
    size_t blen = 0;
    char *body = request_body(c, num, &blen);
    if (!body) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return;
    }
    char head[1024];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
                      "Content-Length: %zu\r\n%s%s%sConnection: close\r\n\r\n",
                      c->path, c->host, blen, c->api_key ? "Authorization: Bearer " : "", c->api_key ? c->api_key : "",
                      c->api_key ? "\r\n" : "");
    int fd = socket(c->family, SOCK_STREAM, 0);
    stream_state st = {.ch = CH_SIZE};
    buf hdr = {0};
    double t_send = now_s();
    if (fd < 0) {
        snprintf(r->err, sizeof r->err, "socket: %s", strerror(errno));
        goto out;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {c->timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (const struct sockaddr *)&c->addr, c->addr_len) != 0) {
        snprintf(r->err, sizeof r->err, "connect: %s", strerror(errno));
        goto out;
    }
    t_send = now_s();
    if (send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl || send(fd, body, blen, MSG_NOSIGNAL) != (ssize_t)blen) {
        snprintf(r->err, sizeof r->err, "send: %s", strerror(errno));
        goto out;
    }
    bool in_body = false;
    char b[65536];
    for (;;) {
        ssize_t k = recv(fd, b, sizeof b, 0);
        double t = now_s();
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            snprintf(r->err, sizeof r->err, "recv: %s", errno == EAGAIN ? "timed out" : strerror(errno));
            goto out;
        }
        if (k == 0) break;
        if (!in_body) {
            if (!buf_add(&hdr, b, (size_t)k)) {
                snprintf(r->err, sizeof r->err, "headers too large");
                goto out;
            }
            char *e = strstr(hdr.p, "\r\n\r\n");
            if (!e) continue;
            *e = 0;
            if (sscanf(hdr.p, "HTTP/1.%*d %d", &r->status) != 1) {
                snprintf(r->err, sizeof r->err, "not an HTTP response");
                goto out;
            }
            for (char *l = hdr.p; l && *l; l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL)
                if (!strncasecmp(l, "transfer-encoding:", 18) && strcasestr(l, "chunked")) st.chunked = true;
            size_t off = (size_t)(e + 4 - hdr.p);
            in_body = true;
            if (!feed_body(&st, hdr.p + off, hdr.n - off)) goto framing;
        } else if (!feed_body(&st, b, (size_t)k)) {
            goto framing;
        }
        take_events(&st, lv, t);
        if (st.done || st.error || st.ch == CH_END) break;
    }
    r->e2e = now_s() - t_send;
    r->tokens = st.usage_tokens > 0 ? st.usage_tokens : st.events;
    if (r->status != 200) {
        snprintf(r->err, sizeof r->err, "HTTP %d: %.120s", r->status, st.sse.p ? st.sse.p : "");
    } else if (st.error) {
        snprintf(r->err, sizeof r->err, "%s", st.err);
    } else if (!st.done) {
        snprintf(r->err, sizeof r->err, "the stream ended without data: [DONE]");
    } else if (!st.events) {
        snprintf(r->err, sizeof r->err, "no token events");
    } else {
        r->ok = true;
        r->ttft = st.t_first - t_send;
    }
    goto out;
framing:
    snprintf(r->err, sizeof r->err, "bad chunked framing");
out:
    if (fd >= 0) close(fd);
    free(body);
    free(hdr.p);
    free(st.sse.p);
    free(st.raw.p);
}

static void *client(void *arg) {
    level *lv = arg;
    for (;;) {
        int i = atomic_fetch_add(&lv->next, 1);
        if (i >= lv->total) break;
        if (now_s() > lv->deadline) {
            snprintf(lv->res[i].err, sizeof lv->res[i].err, "not sent: past --max-seconds");
            continue;
        }
        run_request(lv, i, &lv->res[i]);
    }
    return NULL;
}

/* ---- statistics ---- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank on sorted v. */
static double pct(const double *v, size_t n, double p) {
    if (!n) return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

typedef struct summary {
    int conc, sent, ok, errors;
    double wall, rps, tok_s, tokens;
    double ttft[3], itl[3], e2e[3];   /* p50, p90, p99 (ms) */
    char first_err[160];
} summary;

static void summarize(level *lv, double wall, summary *s) {
    memset(s, 0, sizeof *s);
    s->conc = lv->conc;
    s->wall = wall;
    samples ttft = {0}, e2e = {0};
    for (int i = 0; i < lv->total; i++) {
        result *r = &lv->res[i];
        if (strncmp(r->err, "not sent", 8)) s->sent++;
        if (r->ok) {
            s->ok++;
            s->tokens += r->tokens;
            push(&ttft, r->ttft);
            push(&e2e, r->e2e);
        } else {
            s->errors++;
            if (!s->first_err[0]) snprintf(s->first_err, sizeof s->first_err, "%s", r->err);
        }
    }
    s->rps = wall > 0 ? s->ok / wall : 0;
    s->tok_s = wall > 0 ? s->tokens / wall : 0;
    samples *all[3] = {&ttft, &lv->itl, &e2e};
    double *out[3] = {s->ttft, s->itl, s->e2e};
    static const double ps[3] = {50, 90, 99};
    for (int m = 0; m < 3; m++) {
        if (all[m]->n) qsort(all[m]->v, all[m]->n, sizeof(double), cmp_d);
        for (int k = 0; k < 3; k++) out[m][k] = 1000 * pct(all[m]->v, all[m]->n, ps[k]);
    }
    free(ttft.v);
    free(e2e.v);
}

/* ---- command line ---- */

static int usage(FILE *f) {
    fprintf(f,
            "usage: zinc-load --url http://127.0.0.1:PORT [options]\n"
            "  --url URL            the server (loopback only: 127.0.0.0/8, [::1], localhost)\n"
            "  --endpoint E         completions (default: /v1/completions) or chat (/v1/chat/completions)\n"
            "  --concurrency LIST   clients per level, e.g. 1,8,32 (default)\n"
            "  --requests N         requests per level (default 4 x clients, at least 16; at least one per client)\n"
            "  --max-tokens N       generated tokens per request (default 64; ignore_eos)\n"
            "  --prompt-words N     prompt length in words (default 64)\n"
            "  --system-words N     a system prompt of N words shared by every request, before its own words\n"
            "                       (chat: a system message; default 0: none)\n"
            "  --response-format J  chat: the JSON object J sent as response_format (constrained output), e.g.\n"
            "                       '{\"type\":\"json_object\"}'\n"
            "  --temperature T      (default 0)\n"
            "  --model NAME         the model field (default: none)\n"
            "  --api-key KEY        sent as Authorization: Bearer KEY\n"
            "  --timeout S          seconds one read may wait (default 300)\n"
            "  --max-seconds S      no new request of a level after S seconds (default 600)\n"
            "  --json FILE          the results as JSON too\n");
    return f == stdout ? 0 : 2;
}

static bool parse_url(cfg *c, const char *url) {
    if (strncmp(url, "http://", 7)) return false;
    const char *h = url + 7, *port_at;
    char host[64];
    if (*h == '[') {
        const char *e = strchr(h, ']');
        if (!e || (size_t)(e - h - 1) >= sizeof host) return false;
        memcpy(host, h + 1, (size_t)(e - h - 1));
        host[e - h - 1] = 0;
        port_at = e + 1;
    } else {
        size_t n = strcspn(h, ":/");
        if (n >= sizeof host) return false;
        memcpy(host, h, n);
        host[n] = 0;
        port_at = h + n;
    }
    int port = 80;
    if (*port_at == ':') port = atoi(port_at + 1);
    if (port <= 0 || port > 65535) return false;
    if (!strcmp(host, "localhost")) strcpy(host, "127.0.0.1");
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        if ((ntohl(a4.sin_addr.s_addr) >> 24) != 127) return false;
        c->family = AF_INET;
        memcpy(&c->addr, &a4, sizeof a4);
        c->addr_len = sizeof a4;
        snprintf(c->host, sizeof c->host, "%s:%d", host, port);
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        if (!IN6_IS_ADDR_LOOPBACK(&a6.sin6_addr)) return false;
        c->family = AF_INET6;
        memcpy(&c->addr, &a6, sizeof a6);
        c->addr_len = sizeof a6;
        snprintf(c->host, sizeof c->host, "[%s]:%d", host, port);
    } else {
        return false;
    }
    return true;
}

static bool parse_int(const char *s, int lo, int hi, int *out) {
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || *e || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv) {
    cfg c = {.path = "/v1/completions", .requests = 0, .max_tokens = 64, .prompt_words = 64, .timeout_s = 300,
             .max_seconds = 600, .levels = {1, 8, 32}, .n_levels = 3};
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (!v) {
            fprintf(stderr, "zinc-load: %s needs a value\n", a);
            return 2;
        }
        i++;
        bool ok = true;
        if (!strcmp(a, "--url")) url = v;
        else if (!strcmp(a, "--endpoint")) {
            c.chat = !strcmp(v, "chat");
            ok = c.chat || !strcmp(v, "completions");
            c.path = c.chat ? "/v1/chat/completions" : "/v1/completions";
        } else if (!strcmp(a, "--concurrency")) {
            c.n_levels = 0;
            char tmp[256];
            snprintf(tmp, sizeof tmp, "%s", v);
            for (char *sv = NULL, *t = strtok_r(tmp, ",", &sv); ok && t; t = strtok_r(NULL, ",", &sv))
                ok = c.n_levels < MAX_LEVELS && parse_int(t, 1, MAX_CLIENTS, &c.levels[c.n_levels++]);
            ok = ok && c.n_levels > 0;
        } else if (!strcmp(a, "--requests")) ok = parse_int(v, 1, 1000000, &c.requests);
        else if (!strcmp(a, "--max-tokens")) ok = parse_int(v, 1, 1 << 20, &c.max_tokens);
        else if (!strcmp(a, "--prompt-words")) ok = parse_int(v, 0, 1 << 20, &c.prompt_words);
        else if (!strcmp(a, "--system-words")) ok = parse_int(v, 0, 1 << 20, &c.system_words);
        else if (!strcmp(a, "--response-format")) ok = *v == '{', c.response_format = v;
        else if (!strcmp(a, "--timeout")) ok = parse_int(v, 1, 86400, &c.timeout_s);
        else if (!strcmp(a, "--max-seconds")) ok = parse_int(v, 1, 86400, &c.max_seconds);
        else if (!strcmp(a, "--temperature")) {
            char *e;
            c.temperature = strtod(v, &e);
            ok = e != v && !*e && c.temperature >= 0;
        } else if (!strcmp(a, "--model")) ok = !strpbrk(v, "\"\\"), c.model = v;
        else if (!strcmp(a, "--api-key")) ok = !strpbrk(v, "\r\n"), c.api_key = v;
        else if (!strcmp(a, "--json")) c.json_out = v;
        else {
            fprintf(stderr, "zinc-load: unknown option '%s' (zinc-load --help)\n", a);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "zinc-load: bad value '%s' for %s\n", v, a);
            return 2;
        }
    }
    if (!url) return usage(stderr);
    if (!parse_url(&c, url)) {
        fprintf(stderr, "zinc-load: --url %s: an http:// URL of this machine's loopback (127.0.0.1, [::1], localhost)\n",
                url);
        return 2;
    }
    summary sums[MAX_LEVELS];
    /* one request first: the server is up and warm */
    {
        level w = {.c = &c, .conc = 1, .total = 1, .deadline = now_s() + c.max_seconds};
        result r;
        pthread_mutex_init(&w.mu, NULL);
        run_request(&w, -1, &r);
        free(w.itl.v);
        pthread_mutex_destroy(&w.mu);
        if (!r.ok) {
            fprintf(stderr, "zinc-load: the warm-up request failed: %s\n", r.err);
            return 1;
        }
    }
    printf("%5s %6s %5s %8s %8s %9s %9s %9s %9s %9s %9s %9s\n", "conc", "reqs", "errs", "wall_s", "req/s", "tok/s",
           "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50", "e2e_p99");
    int rc = 0;
    for (int L = 0; L < c.n_levels; L++) {
        level lv = {.c = &c, .conc = c.levels[L]};
        lv.total = c.requests ? c.requests : 4 * lv.conc > 16 ? 4 * lv.conc : 16;
        if (lv.total < lv.conc) lv.total = lv.conc;
        lv.res = calloc((size_t)lv.total, sizeof *lv.res);
        pthread_t th[MAX_CLIENTS];
        pthread_mutex_init(&lv.mu, NULL);
        atomic_init(&lv.next, 0);
        if (!lv.res) {
            fprintf(stderr, "zinc-load: out of memory\n");
            return 1;
        }
        double t0 = now_s();
        lv.deadline = t0 + c.max_seconds;
        int started = 0;
        for (; started < lv.conc; started++)
            if (pthread_create(&th[started], NULL, client, &lv)) break;
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        summarize(&lv, now_s() - t0, &sums[L]);
        summary *s = &sums[L];
        printf("%5d %6d %5d %8.2f %8.2f %9.1f %9.1f %9.1f %9.2f %9.2f %9.1f %9.1f\n", s->conc, s->ok, s->errors, s->wall,
               s->rps, s->tok_s, s->ttft[0], s->ttft[2], s->itl[0], s->itl[2], s->e2e[0], s->e2e[2]);
        fflush(stdout);
        if (s->errors) {
            fprintf(stderr, "zinc-load: %d clients: %d requests failed; the first: %s\n", s->conc, s->errors,
                    s->first_err);
            rc = 1;
        }
        free(lv.res);
        free(lv.itl.v);
        pthread_mutex_destroy(&lv.mu);
    }
    if (c.json_out) {
        FILE *f = fopen(c.json_out, "w");
        if (!f) {
            fprintf(stderr, "zinc-load: --json %s: %s\n", c.json_out, strerror(errno));
            return 1;
        }
        fprintf(f, "{\"url\":\"http://%s%s\",\"max_tokens\":%d,\"prompt_words\":%d,\"system_words\":%d,"
                "\"response_format\":%s,\"temperature\":%g,\"levels\":[",
                c.host, c.path, c.max_tokens, c.prompt_words, c.system_words,
                c.response_format ? c.response_format : "null", c.temperature);
        for (int L = 0; L < c.n_levels; L++) {
            summary *s = &sums[L];
            /* read by programs: enough digits that tokens_per_s * wall_s gives back the token count */
            fprintf(f,
                    "%s{\"concurrency\":%d,\"requests\":%d,\"errors\":%d,\"wall_s\":%.6f,\"requests_per_s\":%.3f,"
                    "\"tokens_per_s\":%.3f,\"ttft_ms\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f},"
                    "\"itl_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f},\"e2e_ms\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f}}",
                    L ? "," : "", s->conc, s->ok, s->errors, s->wall, s->rps, s->tok_s, s->ttft[0], s->ttft[1],
                    s->ttft[2], s->itl[0], s->itl[1], s->itl[2], s->e2e[0], s->e2e[1], s->e2e[2]);
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return rc;
}
