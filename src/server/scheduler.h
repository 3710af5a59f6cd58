/* The slot scheduler: a queue of generation jobs feeding n slots, each with
 * its own sequence state (KV + recurrent), sampler and token cache, run by
 * one engine thread. Each engine step serves every active slot at once
 * (engine_step): the generating slots' next tokens and prompt chunks of the
 * prefilling ones, within the step's token budget, so a long prompt never
 * stalls the others' decode and a new request starts at the next step.
 *
 * A slot keeps the tokens its state holds after a job, and a new job goes to
 * the free slot that can reuse the longest prefix of its prompt: attention
 * caches are cut back to the shared prefix; a hybrid model's recurrent state
 * cannot be cut back, so each slot also keeps up to ZN_SRV_CKPTS checkpoints
 * of it taken where the job asked (where the system prompt ended, where the
 * assistant's turn began) and at every ZN_SRV_CKPT_BLOCK tokens of a prompt
 * (any endpoint), and returns to the latest one within the prefix.
 *
 * Jobs are reference counted (the HTTP thread and the engine thread each hold
 * one); results are appended under the job's mutex and its condition
 * variable is signalled on every change. */
#ifndef ZINC_SCHEDULER_H
#define ZINC_SCHEDULER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "gmask.h"
#include "limits.h"
#include "maskpipe.h"
#include "metrics.h"
#include "sampler.h"
#include "status.h"
#include "tokenizer.h"
#include "toolcall.h"

typedef struct zn_tok_lp {
    int32_t id;
    float lp;
    int n_top;
    int32_t top_id[ZN_SRV_MAX_TOP_LOGPROBS];
    float top_lp[ZN_SRV_MAX_TOP_LOGPROBS];
} zn_tok_lp;

/* A run of released text of one channel (textstream.h ZN_CH_*), in order. */
typedef struct zn_piece {
    int ch;
    size_t off, len;  /* into text[ch] */
} zn_piece;

typedef struct zn_textbuf {
    char *p;
    size_t n, cap;
} zn_textbuf;

enum { ZN_JOB_QUEUED, ZN_JOB_RUNNING, ZN_JOB_DONE };

typedef struct zn_job {
    /* the request: set before sched_submit, read-only after */
    int32_t *prompt;
    int n_prompt;
    int ckpt_at[ZN_SRV_CKPT_ASKED]; /* checkpoint the recurrent state at these positions (0 < p < n_prompt), -1:
                                      none (the end of the leading system messages, the end of the conversation);
                                      block checkpoints come on top (ZN_SRV_CKPT_BLOCK) */
    bool think_open;          /* the prompt opened a <think> block */
    bool split_think;         /* route <think> text to the reasoning channel (chat) */
    bool cache_prompt;        /* may reuse a slot's cached prefix (default true) */
    bool ignore_eos;          /* end-of-generation tokens do not end it */
    long max_tokens;          /* < 0: until end of text or a full context */
    zn_sampler_params sp;
    char *stop[ZN_SRV_MAX_STOP];
    int n_stop;
    int top_logprobs;         /* < 0: no logprobs; else how many alternatives per token */
    long think_budget;        /* < 0: none; else the reasoning tokens after which the server closes the <think>
                                 block itself, feeding think_close instead of sampling (the answer follows) */
    int32_t think_close[ZN_SRV_THINK_CLOSE_TOKENS]; /* the tokens of ZN_THINK_CLOSE_TEXT (textstream.h) */
    int n_think_close;
    double t_arrival;         /* timer_now() when the request arrived */
    bool parse_tools;         /* tool calls in the answer go to the TOOL_* channels (toolcall.h) */
    int tool_fmt;             /* ZN_TOOLFMT_* */
    zn_toolset tools;         /* owned by the job */
    zn_gmask *gm;             /* grammar-constrained sampling (owned by the job, compiled before submit), or NULL;
                                 the engine thread alone uses it once the job runs */

    /* results, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;                /* ZN_JOB_* */
    zn_textbuf text[ZN_CH_COUNT]; /* released content / reasoning / tool names / tool arguments */
    zn_piece *pieces;
    int n_pieces, cap_pieces;
    zn_tok_lp *lp;
    int n_lp, cap_lp;
    const char *finish;       /* "stop", "length" or "tool_calls" once done without error */
    const char *stop_hit;     /* finish "stop" by a stop string: which one (in stop[]), else NULL */
    int n_calls;              /* tool calls started (TOOL_NAME pieces) */
    int n_cached;             /* prompt tokens reused instead of computed */
    int n_gen;                /* tokens generated */
    int n_reasoning;          /* of them, inside <think>...</think> (thinkcount_push) */
    int slot;                 /* -1 until running */
    bool failed;
    zn_err err;
    double t_start, t_first, t_done;

    atomic_bool cancel;       /* the client is gone: the engine thread frees its slot */
    atomic_int refs;
} zn_job;

/* A new job with one reference, or NULL when out of memory. */
zn_job *job_new(void);
void job_ref(zn_job *j);
void job_unref(zn_job *j);
/* Appends released text of channel ch (a new piece); false when out of
 * memory. Under j->mu (exposed for tests). */
bool job_append(zn_job *j, int ch, const char *p, size_t n);

typedef struct zn_slot_info {
    int id;
    const char *state;        /* "idle", "prefill", "generating" */
    int n_ctx, n_cached;      /* context size; tokens its state holds */
    int n_prompt, n_gen;      /* the running job's */
    int ckpt_pos;             /* the latest checkpoint's position, -1: none */
} zn_slot_info;

typedef struct zn_slot zn_slot;
typedef struct cpu_pool cpu_pool; /* cpu.h: the sampling threads */

/* Whether grammar masks are prepared on the mask thread while the engine
 * step runs (maskpipe.h). */
enum { ZN_OVERLAP_AUTO, ZN_OVERLAP_OFF, ZN_OVERLAP_ON };

typedef struct zn_sched_opts {
    int n_slots, n_ctx;
    int mask_overlap;         /* ZN_OVERLAP_*; AUTO: the backend's row of scheduler.c's table */
    int sample_threads;       /* threads drawing the generating slots' tokens after a step; 0: the backend's row of
                                 scheduler.c's table; at most the cores and the slots (1: the engine thread alone) */
} zn_sched_opts;

typedef struct zn_sched {
    zn_engine *eng;
    const zn_tokenizer *tok;
    zn_metrics *metrics;
    int n_slots, n_ctx, n_vocab;
    bool recurrent;
    zn_slot *slots;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zn_job *queue[ZN_SRV_MAX_QUEUE];
    int q_head, q_len;
    int running;
    bool stop, started;
    pthread_t thread;
    uint64_t tick;            /* for least-recently-used slot choice */
    /* engine steps run, those of several sequences in one forward pass
     * (a backend with multi_seq), and the backend's replayed ones
     * (zn_backend_stats.replayed); written by the engine thread, read by
     * sched_gauges */
    atomic_ullong steps, batched_steps, replayed_steps;
    /* microseconds of the engine thread's rounds in engine steps, and in
     * the rest of them (sampling, detokenising, streaming: the device idles) */
    atomic_ullong step_us, host_us;
    cpu_pool *pool;           /* the sampling threads (NULL: one core, or one slot) */
    /* the KV pool's positions (0: none, each slot holds its context), slots
     * preempted for its blocks and idle slots' cached prefixes dropped for them */
    int64_t kv_pool_pos;
    int64_t kv_pool_free;     /* its free positions as publish() last saw them (blocks shared by several
                                 slots, the prefix cache's, count once) */
    atomic_ullong preemptions, kv_evictions;
    /* grammar masks: the mask thread's (prepared during a step) and those
     * the engine thread computed while sampling */
    bool overlap;
    zn_maskpipe mp;
    atomic_ullong masks_ahead, masks_inline;
} zn_sched;

zn_status sched_init(zn_sched *s, zn_engine *e, const zn_tokenizer *tok, const zn_sched_opts *o, zn_metrics *m,
                     zn_err *err);
/* Whether a scheduler on backend `backend` overlaps mask preparation with
 * the step under setting mask_overlap (ZN_OVERLAP_*). */
bool sched_mask_overlap(const char *backend, int mask_overlap);
/* Stops the engine thread: running and queued jobs end with an error, new
 * ones are refused; sched_slots/sched_gauges still work. Idempotent. */
void sched_stop(zn_sched *s);
/* sched_stop, then frees everything. */
void sched_free(zn_sched *s);
/* Queues the job (the scheduler takes its own reference). ZN_ERR_NOMEM when
 * the queue is full, ZN_ERR_IO after sched_stop, ZN_ERR_ARG when the prompt
 * is empty or does not fit the context. */
zn_status sched_submit(zn_sched *s, zn_job *j, zn_err *err);
/* The job's client is gone: a waiting job leaves the queue at once (its
 * place and the waiting gauge freed), a running one frees its slot at the
 * engine thread's next turn, a finished one is unaffected. Not under j->mu. */
void sched_cancel(zn_sched *s, zn_job *j);
/* Snapshot for the slots endpoint and metrics; returns the slot count. */
int sched_slots(zn_sched *s, zn_slot_info *out, int cap);
void sched_gauges(zn_sched *s, zn_metrics_gauges *g);

/* Log-probabilities of logits [n] (log-softmax): the chosen token's and the
 * top_n largest, best first (exposed for tests). */
void sched_logprobs(const float *logits, int n, int32_t chosen, int top_n, zn_tok_lp *out);

#endif
