/* zinc serve: lifecycle, routing and the small endpoints (server.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf.h"
#include "oai_resp.h"
#include "server_impl.h"
#include "timer.h"
#include "web_assets.h"

void server_send_error(zn_http_req *r, const zn_oai_error *e) {
    size_t n = 0;
    char *body = oai_dump(oai_error_json(e), &n);
    /* overload and loading pass; a bad request fails the same way again */
    const char *retry = e->status == 429 || e->status == 503 || e->status >= 500 ? "true" : "false";
    const char *h[] = {"x-should-retry", retry, e->status == 503 || e->status == 429 ? "Retry-After" : NULL, "1", NULL};
    http_send(r, e->status, "application/json", body ? body : "{}", body ? n : 2, h);
    free(body);
}

static void send_json(zn_http_req *r, int status, json_t *j) {
    size_t n = 0;
    char *body = oai_dump(j, &n);
    if (!body) {
        zn_oai_error e;
        oai_fail(&e, 500, "server_error", NULL, NULL, "out of memory");
        server_send_error(r, &e);
        return;
    }
    http_send(r, status, "application/json", body, n, NULL);
    free(body);
}

static void fail(zn_http_req *r, int status, const char *type, const char *code, const char *fmt, const char *arg) {
    zn_oai_error e;
    oai_fail(&e, status, type, code, NULL, fmt, arg);
    server_send_error(r, &e);
}

/* ---- endpoints ---- */

static void get_health(zn_server *s, zn_http_req *r) {
    if (atomic_load(&s->draining)) {
        r->close = true;
        fail(r, 503, "unavailable_error", NULL, "the server is shutting down%s", "");
    } else if (!atomic_load(&s->ready)) {
        fail(r, 503, "unavailable_error", NULL, "the model is loading%s", "");
    } else {
        static const char ok[] = "{\"status\":\"ok\"}";
        http_send(r, 200, "application/json", ok, sizeof ok - 1, NULL);
    }
}

static json_t *model_object(const zn_server *s) {
    json_t *o = json_pack("{s:s,s:s,s:I,s:s}", "id", s->model_id, "object", "model", "created", (json_int_t)s->created,
                          "owned_by", "zinc");
    if (o && atomic_load(&s->ready))
        json_object_set_new(o, "meta", json_pack("{s:s,s:I,s:i,s:i,s:I}", "architecture", model_arch_name(s->model.arch),
                                                 "n_params", (json_int_t)s->model.n_params, "n_ctx", s->cfg.n_ctx,
                                                 "n_ctx_train", s->model.hp.n_ctx_train, "n_vocab",
                                                 (json_int_t)s->model.hp.n_vocab));
    return o;
}

static void get_models(zn_server *s, zn_http_req *r) {
    send_json(r, 200, json_pack("{s:s,s:[o]}", "object", "list", "data", model_object(s)));
}

static void get_model(zn_server *s, zn_http_req *r, const char *id) {
    if (strcmp(id, s->model_id)) {
        fail(r, 404, "invalid_request_error", "model_not_found", "the model '%s' does not exist", id);
        return;
    }
    send_json(r, 200, model_object(s));
}

static bool need_ready(zn_server *s, zn_http_req *r) {
    if (atomic_load(&s->draining)) {
        r->close = true;
        fail(r, 503, "unavailable_error", NULL, "the server is shutting down%s", "");
        return false;
    }
    if (!atomic_load(&s->ready)) {
        fail(r, 503, "unavailable_error", NULL, "the model is loading%s", "");
        return false;
    }
    return true;
}

static void post_tokenize(zn_server *s, zn_http_req *r) {
    zn_oai_error e;
    char *text;
    size_t n;
    bool add_special;
    if (!oai_parse_tokenize(r->body, r->body_len, &text, &n, &add_special, &e)) {
        server_send_error(r, &e);
        return;
    }
    size_t cap = n + 16, got = 0;
    int32_t *ids = malloc(sizeof *ids * cap);
    zn_err err = {0};
    zn_status st = ids ? tokenizer_encode(s->tok, text, n, add_special, true, ids, cap, &got, &err) : ZN_ERR_NOMEM;
    if (st == ZN_ERR_NOMEM && ids && got > cap) {  /* more tokens than bytes: only with added specials */
        int32_t *more = realloc(ids, sizeof *ids * got);
        if (more) {
            ids = more;
            cap = got;
            st = tokenizer_encode(s->tok, text, n, add_special, true, ids, cap, &got, &err);
        }
    }
    free(text);
    if (st) {
        free(ids);
        fail(r, st == ZN_ERR_NOMEM ? 500 : 400, st == ZN_ERR_NOMEM ? "server_error" : "invalid_request_error", NULL,
             "%s", err.msg);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < got; i++) json_array_append_new(arr, json_integer(ids[i]));
    free(ids);
    send_json(r, 200, json_pack("{s:o}", "tokens", arr));
}

static void post_detokenize(zn_server *s, zn_http_req *r) {
    zn_oai_error e;
    int32_t *ids;
    size_t n;
    if (!oai_parse_detokenize(r->body, r->body_len, &ids, &n, &e)) {
        server_send_error(r, &e);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= tokenizer_n_vocab(s->tok)) {
            char msg[64];
            snprintf(msg, sizeof msg, "%d", ids[i]);
            free(ids);
            fail(r, 400, "invalid_request_error", NULL, "token id %s is out of the vocabulary", msg);
            return;
        }
    size_t cap = n * ZN_MAX_TOKEN_BYTES + 1, len = 0;
    char *out = malloc(cap);
    zn_err err = {0};
    zn_status st = out ? tokenizer_decode(s->tok, ids, n, false, out, cap, &len, &err) : ZN_ERR_NOMEM;
    free(ids);
    if (st) {
        free(out);
        fail(r, 500, "server_error", NULL, "%s", st == ZN_ERR_NOMEM ? "out of memory" : err.msg);
        return;
    }
    json_t *c = json_stringn(out, len);
    free(out);
    send_json(r, 200, json_pack("{s:o}", "content", c ? c : json_string("")));
}

static void get_slots(zn_server *s, zn_http_req *r) {
    zn_slot_info info[ZN_SRV_MAX_PARALLEL];
    int n = sched_slots(&s->sched, info, ZN_SRV_MAX_PARALLEL);
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_pack("{s:i,s:s,s:b,s:i,s:i,s:i,s:i,s:i}", "id", info[i].id, "state",
                                             info[i].state, "is_processing", strcmp(info[i].state, "idle") != 0,
                                             "n_ctx", info[i].n_ctx, "n_cached", info[i].n_cached, "n_prompt",
                                             info[i].n_prompt, "n_decoded", info[i].n_gen, "checkpoint",
                                             info[i].ckpt_pos));
    send_json(r, 200, arr);
}

static void get_metrics(zn_server *s, zn_http_req *r) {
    zn_metrics_gauges g = {0};
    if (atomic_load(&s->ready)) sched_gauges(&s->sched, &g);
    size_t n = 0;
    char *text = metrics_render(&s->metrics, &g, &n);
    if (!text) {
        fail(r, 500, "server_error", NULL, "out of memory%s", "");
        return;
    }
    http_send(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, n, NULL);
    free(text);
}

static void get_asset(zn_server *s, zn_http_req *r, const zn_web_asset *a) {
    const char *inm = http_header(r, "If-None-Match");
    bool gz = web_accepts_gzip(http_header(r, "Accept-Encoding"));
    const char *h[] = {"Cache-Control", "no-cache", "ETag", a->etag, "Content-Security-Policy", WEB_ASSET_CSP,
                       "X-Content-Type-Options", "nosniff", "Referrer-Policy", "no-referrer", "Vary",
                       "Accept-Encoding", gz ? "Content-Encoding" : NULL, "gzip", NULL};
    if (inm && a->etag && !strcmp(inm, a->etag)) {
        const char *h304[] = {"ETag", a->etag, "Cache-Control", "no-cache", "Vary", "Accept-Encoding", NULL};
        http_send(r, 304, NULL, "", 0, h304);
        return;
    }
    if (gz) {
        http_send(r, 200, a->content_type, (const char *)a->data, a->len, h);
        return;
    }
    size_t n = 0;
    unsigned char *raw = web_asset_inflate(a, &n);  /* rare (browsers take gzip), small: no cache */
    if (!raw) {
        fail(r, 500, "server_error", NULL, "cannot inflate %s", a->path);
        return;
    }
    http_send(r, 200, a->content_type, (const char *)raw, n, h);
    free(raw);
}

/* ---- routing ---- */

static const char *const routes[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/tokenize",
                                     "/detokenize", "/slots", "/metrics", "/v1/responses", "/v1/messages",
                                     "/v1/messages/count_tokens", NULL};

static const char *route_of(void *app, const char *method, const char *path) {
    for (int i = 0; routes[i]; i++)
        if (!strcmp(path, routes[i])) return routes[i];
    if (!strncmp(path, "/v1/models/", 11)) return "/v1/models/{id}";
    if (!strcmp(path, "/v1/health")) return "/health";
    return web_asset_find(path) ? "ui" : "other";
}

static void handle(void *app, zn_http_req *r) {
    zn_server *s = app;
    const char *m = r->method, *p = r->path;
    bool get = !strcmp(m, "GET") || !strcmp(m, "HEAD"), post = !strcmp(m, "POST");
    const char *route = r->route;
    if (!strcmp(route, "/health")) {
        if (get) return get_health(s, r);
    } else if (!strcmp(route, "/v1/models")) {
        if (get) return get_models(s, r);
    } else if (!strcmp(route, "/v1/models/{id}")) {
        if (get) return get_model(s, r, p + 11);
    } else if (!strcmp(route, "/metrics")) {
        if (get) return get_metrics(s, r);
    } else if (!strcmp(route, "/v1/chat/completions")) {
        if (post) {
            if (need_ready(s, r)) server_chat(s, r);
            return;
        }
    } else if (!strcmp(route, "/v1/completions")) {
        if (post) {
            if (need_ready(s, r)) server_completions(s, r);
            return;
        }
    } else if (!strcmp(route, "/v1/responses") || !strcmp(route, "/v1/messages") ||
               !strcmp(route, "/v1/messages/count_tokens")) {
        if (post) {
            if (!need_ready(s, r)) return;
            if (route[4] == 'r') server_responses(s, r);
            else if (strchr(route + 4, '/')) server_count_tokens(s, r);
            else server_messages(s, r);
            return;
        }
    } else if (!strcmp(route, "/tokenize")) {
        if (post) {
            if (need_ready(s, r)) post_tokenize(s, r);
            return;
        }
    } else if (!strcmp(route, "/detokenize")) {
        if (post) {
            if (need_ready(s, r)) post_detokenize(s, r);
            return;
        }
    } else if (!strcmp(route, "/slots")) {
        if (get) {
            if (need_ready(s, r)) get_slots(s, r);
            return;
        }
    } else if (!strcmp(route, "ui") && get) {
        return get_asset(s, r, web_asset_find(p));
    } else {
        char what[300];
        snprintf(what, sizeof what, "%.8s %.256s", m, p);
        fail(r, 404, "invalid_request_error", "not_found", "no such route: %s", what);
        return;
    }
    /* the route's method, whichever was used (a GET on a POST route was told "Allow: GET") */
    const char *allow[] = {"Allow", strstr(route, "/v1/c") || strstr(route, "tokenize") || strstr(route, "/v1/responses") ||
                                            strstr(route, "/v1/messages") ? "POST" : "GET", NULL};
    zn_oai_error e;
    oai_fail(&e, 405, "invalid_request_error", NULL, NULL, "%s does not take %s (use %s)", p, m, allow[1]);
    size_t n = 0;
    char *body = oai_dump(oai_error_json(&e), &n);
    const char *h[] = {"Allow", allow[1], "x-should-retry", "false", NULL};
    http_send(r, 405, "application/json", body ? body : "{}", body ? n : 2, h);
    free(body);
}

static void done(void *app, const char *route, int status, double seconds) {
    zn_server *s = app;
    metrics_request(&s->metrics, route, status);
}

/* ---- lifecycle ---- */

/* --kv-mem in positions of the model's KV layout (engine kv_pool_tokens):
 * the bytes given, or with auto ZN_KV_MEM_FRACTION of what the device has
 * beyond the weights (a Vulkan device's memory, the CPU's available RAM);
 * at most what every slot's whole context takes, and at least one context. */
static zn_status kv_pool_size(zn_server *s, zn_err *err) {
    const int64_t mem = s->cfg.kv_mem;
    if (!mem) return ZN_OK;
    const zn_kv_layout l = backend_kv_layout(&s->model, s->cfg.engine.be.kv_type);
    const int64_t all = (int64_t)s->cfg.n_parallel * s->cfg.n_ctx;
    if (!l.pos_bytes) return ZN_OK; /* no attention layers: nothing to pool */
    double bytes = (double)mem;
    if (mem == ZN_KV_MEM_AUTO) {
        const zn_backend_ops *be = backend_find(s->cfg.engine.backend ? s->cfg.engine.backend : "cpu");
        zn_device_info dev[ZN_MAX_DEVICES];
        int n = 0, def = -1;
        double have = (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
        if (be && be->devices && be->devices(dev, ZN_MAX_DEVICES, &n, &def, err) == ZN_OK) {
            const int d = s->cfg.engine.be.device >= 0 ? s->cfg.engine.be.device : def;
            if (d >= 0 && d < n && dev[d].vram_bytes) have = (double)dev[d].vram_bytes;
        }
        bytes = ZN_KV_MEM_FRACTION * (have - (double)s->model.weight_bytes);
    }
    int64_t pos = bytes > 0 ? (int64_t)(bytes / (double)l.pos_bytes) : 0;
    if (pos > all) pos = all;
    if (pos < s->cfg.n_ctx)
        return zn_errf(err, ZN_ERR_NOMEM, "--kv-mem: %.0f MiB hold %lld positions of %s (%zu bytes each), less than one "
                       "context of %d", bytes / 1048576.0, (long long)pos, s->cfg.model_path, l.pos_bytes, s->cfg.n_ctx);
    s->cfg.engine.be.kv_pool_tokens = pos;
    return ZN_OK;
}

static const char *const public_paths[] = {"/health", "/v1/health", NULL};

zn_status server_start(zn_server **out, const zn_server_cfg *cfg, zn_err *err) {
    *out = NULL;
    if (cfg->n_parallel < 1 || cfg->n_parallel > ZN_SRV_MAX_PARALLEL)
        return zn_errf(err, ZN_ERR_ARG, "--parallel %d: between 1 and %d", cfg->n_parallel, ZN_SRV_MAX_PARALLEL);
    if (cfg->n_ctx != 0 && (cfg->n_ctx < 2 || cfg->n_ctx > ZN_MAX_CTX))
        return zn_errf(err, ZN_ERR_ARG, "--ctx %d: between 2 and %d", cfg->n_ctx, ZN_MAX_CTX);
    zn_server *s = calloc(1, sizeof *s);
    if (!s) return zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    s->cfg = *cfg;
    s->created = (long)time(NULL);
    const char *base = strrchr(cfg->model_path, '/');
    base = base ? base + 1 : cfg->model_path;
    size_t bl = strlen(base);
    if (bl > 5 && !strcmp(base + bl - 5, ".gguf")) bl -= 5;
    snprintf(s->model_id, sizeof s->model_id, "%.*s", (int)bl, base);
    if (cfg->model_id) snprintf(s->model_id, sizeof s->model_id, "%s", cfg->model_id);
    metrics_init(&s->metrics);
    json_object_seed(0);  /* before any thread parses JSON */
    atomic_init(&s->ready, false);
    atomic_init(&s->draining, false);
    atomic_init(&s->in_flight, 0);
    atomic_init(&s->said_fallback, false);
    zn_http_cfg h = cfg->http;
    h.public_paths = public_paths;
    h.public_get_assets = true;
    zn_status st = http_start(&s->http, &h, route_of, handle, done, s, err);
    if (st) {
        metrics_free(&s->metrics);
        free(s);
        return st;
    }
    *out = s;
    return ZN_OK;
}

int server_port(const zn_server *s) { return http_port(s->http); }

void server_stop_load(zn_server *s) { atomic_store(&s->draining, true); }

static zn_status load_stopped(zn_server *s, zn_err *err) {
    return atomic_load(&s->draining) ? zn_errf(err, ZN_ERR_IO, "stopped while loading") : ZN_OK;
}

zn_status server_load(zn_server *s, zn_err *err) {
    zn_status st = load_stopped(s, err);
    if (st) return st;
    st = model_load(&s->model, s->cfg.model_path, err);
    if (st) return st;
    s->have_model = true;
    if ((st = load_stopped(s, err))) return st;
    st = tokenizer_load(&s->tok, &s->model.gguf, err);
    if (st) return st;
    st = vocab_trie_build(&s->vt, s->tok, err);
    if (st) return st;
    s->have_vt = true;
    gmatch_pool_init(&s->gpool);
    if (s->cfg.chat_template) {
        s->tmpl = strdup(s->cfg.chat_template);
    } else {
        gguf_str t;
        if (gguf_get_str(&s->model.gguf, "tokenizer.chat_template", &t, NULL) == ZN_OK && t.len)
            s->tmpl = strndup(t.ptr, t.len);
        else fprintf(stderr, "zinc: the model has no chat template; chat requests use ChatML\n");
    }
    if (s->cfg.n_ctx == 0) { /* past its training context a model degrades */
        int t = s->model.hp.n_ctx_train;
        s->cfg.n_ctx = t >= 2 && t < ZN_DEFAULT_CTX ? t : ZN_DEFAULT_CTX;
    }
    if ((st = load_stopped(s, err))) return st;
    if ((st = kv_pool_size(s, err))) return st;
    st = engine_init(&s->eng, &s->model, &s->cfg.engine, err);
    if (st) return st;
    s->have_engine = true;
    if ((st = load_stopped(s, err))) return st;
    const zn_sched_opts so = {.n_slots = s->cfg.n_parallel, .n_ctx = s->cfg.n_ctx, .mask_overlap = s->cfg.mask_overlap};
    st = sched_init(&s->sched, &s->eng, s->tok, &so, &s->metrics, err);
    if (st) return st;
    s->have_sched = true;
    atomic_store(&s->ready, true);
    return ZN_OK;
}

void server_drain(zn_server *s, double deadline_s) {
    atomic_store(&s->draining, true);
    double t0 = timer_now();
    while (atomic_load(&s->in_flight) > 0 && timer_now() - t0 < deadline_s) usleep(10000);
    int left = atomic_load(&s->in_flight);
    if (left) fprintf(stderr, "zinc: drain: %d requests still running after %.0f s; cutting them\n", left, deadline_s);
    /* stopping the scheduler ends what still runs; the handlers then answer */
    if (s->have_sched) sched_stop(&s->sched);
    t0 = timer_now();
    while (atomic_load(&s->in_flight) > 0 && timer_now() - t0 < 2.0) usleep(10000);
}

void server_free(zn_server *s) {
    if (!s) return;
    atomic_store(&s->draining, true);
    if (s->have_sched) sched_stop(&s->sched);
    http_stop(s->http);  /* joins the connection threads */
    if (s->have_sched) sched_free(&s->sched);
    if (s->have_engine) engine_free(&s->eng);
    if (s->have_vt) {
        gmatch_pool_free(&s->gpool); /* after the scheduler and the connections: no job holds a matcher now */
        vocab_trie_free(&s->vt);
    }
    tokenizer_free(s->tok);
    if (s->have_model) model_free(&s->model);
    free(s->tmpl);
    metrics_free(&s->metrics);
    free(s);
}

zn_backend_mem server_mem(const zn_server *s) {
    return s->have_sched ? engine_mem(&s->eng) : (zn_backend_mem){0};
}
