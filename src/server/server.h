/* zinc serve: an OpenAI-compatible HTTP server over one model.
 *
 *   server_start(&s, &cfg, &err);   // listening; /health says 503 (loading)
 *   server_load(s, &err);           // model, engine, slots; /health 200
 *   ... wait for SIGTERM ...
 *   server_drain(s, ZN_SRV_DRAIN_S);// new work gets 503, in-flight requests finish or are cut
 *   server_free(s);
 *
 * Routes: POST /v1/chat/completions, /v1/completions, /tokenize,
 * /detokenize; GET /v1/models, /health, /slots, /metrics, and the web UI's
 * assets (web_assets.h) at / . */
#ifndef ZINC_SERVER_H
#define ZINC_SERVER_H

#include "http.h"
#include "status.h"

#include "engine.h"

typedef struct zn_server_cfg {
    const char *model_path;
    const char *model_id;      /* the name /v1/models lists and requests may give; NULL: the file name without .gguf */
    zn_engine_opts engine;     /* backend, threads, device, tuning (strings outlive the server) */
    int n_ctx;                 /* per slot; 0: ZN_DEFAULT_CTX, or the model's training context when smaller */
    int n_parallel;            /* slots */
    int64_t kv_mem;            /* bytes of one KV pool the slots share (backend.h kv_pool_tokens); 0: none, each
                                  slot holds its whole context; ZN_KV_MEM_AUTO: ZN_KV_MEM_FRACTION of the memory
                                  the device has beyond the weights, at most what the slots' contexts take */
    int mask_overlap;          /* grammar masks during the step: ZN_OVERLAP_* (scheduler.h); 0: by backend */
    const char *chat_template; /* template text replacing the model's, or NULL */
    zn_http_cfg http;
} zn_server_cfg;

typedef struct zn_server zn_server;

zn_status server_start(zn_server **out, const zn_server_cfg *cfg, zn_err *err);
int server_port(const zn_server *s);
zn_status server_load(zn_server *s, zn_err *err);
/* From another thread while server_load runs (a signal came): /health and
 * new work get 503 at once and server_load stops before its next step
 * (model, tokenizer, engine, slots), failing with "stopped while loading". */
void server_stop_load(zn_server *s);
/* Stops taking work and waits up to deadline_s seconds for in-flight
 * generations; whatever still runs then is cut (streams get an in-band error). */
void server_drain(zn_server *s, double deadline_s);
void server_free(zn_server *s);
/* What the loaded server holds (weights, scratch, its slots' states), for
 * the ready line; all zero before server_load has made the slots. */
zn_backend_mem server_mem(const zn_server *s);

#endif
