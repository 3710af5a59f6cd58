/* Server metrics in Prometheus' text format: request counts by route and
 * status, token counts, latency histograms, and gauges the scheduler fills
 * in when scraped (running/waiting requests, context use), also under the
 * vLLM names the Gateway API inference extension and llm-d read. Thread
 * safe; recording takes one mutex and allocates nothing. */
#ifndef ZINC_METRICS_H
#define ZINC_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

enum {
    ZN_HIST_TTFT,      /* time to first token (from arrival) */
    ZN_HIST_ITL,       /* between two generated tokens */
    ZN_HIST_QUEUE,     /* waiting for a slot */
    ZN_HIST_DURATION,  /* arrival to last byte of the response */
    ZN_HIST_COUNT
};

#define ZN_METRICS_BUCKETS 16
#define ZN_METRICS_MAX_SERIES 128  /* distinct (route, status) pairs kept; more are counted as route "other" */

typedef struct zn_hist {
    uint64_t counts[ZN_METRICS_BUCKETS + 1];  /* the last one is +Inf */
    uint64_t n;
    double sum;
} zn_hist;

typedef struct zn_metrics_gauges {
    int running, waiting;
    long kv_used, kv_total;  /* context tokens held by running requests / all slots' capacity */
    bool kv_pool;            /* a KV pool (--kv-mem): kv_total its positions, kv_pool_free those in free blocks */
    long kv_pool_free;
    int slots;
    uint64_t steps, batched_steps; /* engine steps, and those of several sequences in one forward pass */
    uint64_t replayed_steps;       /* engine steps that resubmitted a recorded forward pass (Vulkan decode steps) */
    double step_s, host_s;         /* the engine thread's time in steps, and between them (sampling, streaming) */
    uint64_t preemptions, kv_evictions; /* requests preempted for KV blocks, idle slots' prefixes dropped for them */
    uint64_t masks_ahead, masks_inline; /* grammar masks made during a step (mask thread) / while sampling */
} zn_metrics_gauges;

typedef struct zn_metrics {
    pthread_mutex_t mu;
    struct { char route[32]; int status; uint64_t n; } series[ZN_METRICS_MAX_SERIES];
    int n_series;
    uint64_t prompt_tokens, cached_tokens, gen_tokens, requests_finished;
    uint64_t prefix_hits, prefix_misses, prefix_reused, prefix_copied;  /* counted at admission */
    zn_hist h[ZN_HIST_COUNT];
} zn_metrics;

void metrics_init(zn_metrics *m);
void metrics_free(zn_metrics *m);
void metrics_request(zn_metrics *m, const char *route, int status);
void metrics_observe(zn_metrics *m, int hist, double seconds);
/* A finished generation: its prompt tokens, how many of them were reused
 * from a slot's cache instead of computed, and generated tokens. */
void metrics_tokens(zn_metrics *m, long prompt, long cached, long generated);
/* A request admitted to a slot with cache_prompt: the prompt tokens it
 * reused (0: a miss), and how many of them were copied from another slot. */
void metrics_prefix(zn_metrics *m, long reused, long copied);
/* The exposition text (malloc'd; caller frees), NULL when out of memory. */
char *metrics_render(zn_metrics *m, const zn_metrics_gauges *g, size_t *len);

#endif
