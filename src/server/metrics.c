/* Prometheus text exposition of the server's counters and histograms. */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds; one set for every histogram: from a fast token to a long request. */
static const double bounds[ZN_METRICS_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                  0.5,   1,      2.5,   5,    10,    30,   60,  300};

static const struct { const char *name, *help; } hists[ZN_HIST_COUNT] = {
    [ZN_HIST_TTFT] = {"zinc_time_to_first_token_seconds", "Time from a request's arrival to its first generated token."},
    [ZN_HIST_ITL] = {"zinc_inter_token_latency_seconds", "Time between two generated tokens of a request."},
    [ZN_HIST_QUEUE] = {"zinc_queue_time_seconds", "Time a request waited for a free slot."},
    [ZN_HIST_DURATION] = {"zinc_request_duration_seconds", "Time from a generation request's arrival to its end."},
};

void metrics_init(zn_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void metrics_free(zn_metrics *m) { pthread_mutex_destroy(&m->mu); }

void metrics_request(zn_metrics *m, const char *route, int status) {
    pthread_mutex_lock(&m->mu);
    int i = 0;
    while (i < m->n_series && (m->series[i].status != status || strcmp(m->series[i].route, route))) i++;
    if (i == m->n_series) {
        if (m->n_series == ZN_METRICS_MAX_SERIES) {
            route = "other";
            for (i = 0; i < m->n_series && (m->series[i].status != status || strcmp(m->series[i].route, route));) i++;
        }
        if (i == m->n_series && m->n_series < ZN_METRICS_MAX_SERIES) {
            snprintf(m->series[i].route, sizeof m->series[i].route, "%s", route);
            m->series[i].status = status;
            m->n_series++;
        }
    }
    if (i < m->n_series) m->series[i].n++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_observe(zn_metrics *m, int hist, double s) {
    if (hist < 0 || hist >= ZN_HIST_COUNT || !(s >= 0)) return;
    pthread_mutex_lock(&m->mu);
    zn_hist *h = &m->h[hist];
    int b = 0;
    while (b < ZN_METRICS_BUCKETS && s > bounds[b]) b++;
    h->counts[b]++;
    h->n++;
    h->sum += s;
    pthread_mutex_unlock(&m->mu);
}

void metrics_tokens(zn_metrics *m, long prompt, long cached, long generated) {
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)prompt;
    m->cached_tokens += (uint64_t)cached;
    m->gen_tokens += (uint64_t)generated;
    m->requests_finished++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_prefix(zn_metrics *m, long reused, long copied) {
    pthread_mutex_lock(&m->mu);
    if (reused > 0) m->prefix_hits++;
    else m->prefix_misses++;
    m->prefix_reused += (uint64_t)reused;
    m->prefix_copied += (uint64_t)copied;
    pthread_mutex_unlock(&m->mu);
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if ((size_t)k < b->cap - b->n) { b->n += (size_t)k; return; }
        size_t cap = b->cap * 2 + (size_t)k + 256;
        char *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
}

static void gauge(sbuf *b, const char *name, const char *help, double v) {
    put(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

static void counter(sbuf *b, const char *name, const char *help, uint64_t v) {
    put(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static void counter_s(sbuf *b, const char *name, const char *help, double v) {
    put(b, "# HELP %s %s\n# TYPE %s counter\n%s %.6f\n", name, help, name, name, v);
}

char *metrics_render(zn_metrics *m, const zn_metrics_gauges *g, size_t *len) {
    sbuf b = {malloc(8192), 0, 8192, 0};
    if (!b.p) return NULL;
    b.p[0] = 0;
    pthread_mutex_lock(&m->mu);
    put(&b, "# HELP zinc_requests_total HTTP requests by route and status.\n# TYPE zinc_requests_total counter\n");
    for (int i = 0; i < m->n_series; i++)
        put(&b, "zinc_requests_total{route=\"%s\",status=\"%d\"} %llu\n", m->series[i].route, m->series[i].status,
            (unsigned long long)m->series[i].n);
    counter(&b, "zinc_prompt_tokens_total", "Prompt tokens of finished generations (as rendered by the template).",
            m->prompt_tokens);
    counter(&b, "zinc_prompt_tokens_cached_total",
            "Prompt tokens reused from a slot's cache (KV or recurrent-state checkpoint) instead of computed.",
            m->cached_tokens);
    counter(&b, "zinc_prompt_tokens_computed_total", "Prompt tokens evaluated by the engine.",
            m->prompt_tokens - m->cached_tokens);
    counter(&b, "zinc_prefix_cache_hits_total",
            "Requests admitted to a slot that reused a cached prompt prefix (its own or another slot's).",
            m->prefix_hits);
    counter(&b, "zinc_prefix_cache_misses_total", "Requests admitted with cache_prompt that reused nothing.",
            m->prefix_misses);
    counter(&b, "zinc_prefix_cache_reused_tokens_total", "Prompt tokens reused at admission instead of computed.",
            m->prefix_reused);
    counter(&b, "zinc_prefix_cache_copied_tokens_total",
            "Of the reused tokens, those copied from another slot's cache.", m->prefix_copied);
    counter(&b, "zinc_generation_tokens_total", "Generated tokens.", m->gen_tokens);
    counter(&b, "zinc_generations_total", "Finished generation requests.", m->requests_finished);
    for (int h = 0; h < ZN_HIST_COUNT; h++) {
        const zn_hist *x = &m->h[h];
        put(&b, "# HELP %s %s\n# TYPE %s histogram\n", hists[h].name, hists[h].help, hists[h].name);
        uint64_t cum = 0;
        for (int i = 0; i < ZN_METRICS_BUCKETS; i++) {
            cum += x->counts[i];
            put(&b, "%s_bucket{le=\"%g\"} %llu\n", hists[h].name, bounds[i], (unsigned long long)cum);
        }
        cum += x->counts[ZN_METRICS_BUCKETS];
        put(&b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", hists[h].name, (unsigned long long)cum,
            hists[h].name, x->sum, hists[h].name, (unsigned long long)x->n);
    }
    pthread_mutex_unlock(&m->mu);
    double use = g->kv_total > 0 ? (double)g->kv_used / (double)g->kv_total : 0;
    gauge(&b, "zinc_requests_running", "Requests in a slot (prefilling or generating).", g->running);
    gauge(&b, "zinc_requests_waiting", "Requests queued for a free slot.", g->waiting);
    gauge(&b, "zinc_slots", "Slots (--parallel).", g->slots);
    gauge(&b, "zinc_kv_cache_tokens_used", "Context positions held by running requests.", (double)g->kv_used);
    gauge(&b, "zinc_kv_cache_tokens_capacity", "Context positions of all slots (with --kv-mem: of the KV pool).",
          (double)g->kv_total);
    if (g->kv_pool)
        gauge(&b, "zinc_kv_pool_tokens_free",
              "Positions in the KV pool's free blocks (--kv-mem); a block shared by several requests (prefix cache) "
              "counts once.",
              (double)g->kv_pool_free);
    counter(&b, "zinc_kv_preemptions_total",
            "Requests whose KV blocks went back to the pool for others' (--kv-mem); each recomputes them later.",
            g->preemptions);
    counter(&b, "zinc_kv_evictions_total", "Idle slots' cached prefixes dropped for KV blocks (--kv-mem).",
            g->kv_evictions);
    counter(&b, "zinc_engine_steps_total", "Engine steps (forward passes) run.", g->steps);
    counter(&b, "zinc_engine_batched_steps_total",
            "Engine steps that evaluated several sequences in one forward pass (the weights read once for all).",
            g->batched_steps);
    counter(&b, "zinc_engine_replayed_steps_total",
            "Engine steps that resubmitted the recorded forward pass of an earlier one, with only token ids and "
            "positions rewritten (Vulkan decode steps of the same sequences as the step before; 0 on the CPU).",
            g->replayed_steps);
    counter_s(&b, "zinc_engine_step_seconds_total",
              "Time the engine thread spent in engine steps (forward passes, the wait for the GPU included).",
              g->step_s);
    counter_s(&b, "zinc_engine_host_seconds_total",
              "Time the engine thread spent between the steps of running requests: sampling, detokenising, stop "
              "strings, handing tokens to the streams (the device idles meanwhile).",
              g->host_s);
    counter(&b, "zinc_grammar_masks_prepared_total",
            "Grammar token masks made on the mask thread while an engine step ran (or found in the per-state cache there).",
            g->masks_ahead);
    counter(&b, "zinc_grammar_masks_inline_total",
            "Grammar token masks made on the sampling path after a step, while the engine waited.", g->masks_inline);
    gauge(&b, "vllm:num_requests_running", "Requests running (vLLM's name, read by inference gateways).", g->running);
    gauge(&b, "vllm:num_requests_waiting", "Requests waiting (vLLM's name, read by inference gateways).", g->waiting);
    gauge(&b, "vllm:kv_cache_usage_perc", "KV cache use, 0-1 (vLLM's name, read by inference gateways).", use);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}
