/* The slot scheduler and its engine thread (see scheduler.h). */
#include "scheduler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "textstream.h"
#include "timer.h"

enum { SLOT_IDLE, SLOT_PREFILL, SLOT_GEN };

struct zn_slot {
    int id;
    zn_seq seq;
    zn_seq ckpt[ZN_SRV_CKPTS]; /* recurrent-state checkpoints (hybrid models only) */
    int ckpt_pos[ZN_SRV_CKPTS]; /* their positions (all <= n_cache), -1: none */
    int ckpt_from;            /* where the running job's prompt resumed (a prefix proven shared), 0: none */
    int32_t *cache;           /* [n_ctx]: the tokens seq holds */
    int n_cache;
    float *logits;            /* [n_vocab]: where the last evaluated token's logits are copied when the */
    const float *lg;          /* backend has them nowhere else; lg: where they are (valid until the next step) */
    zn_sampler smp;
    bool smp_ok;
    zn_detok detok;
    zn_stopper stopper;
    zn_thinker thinker;
    zn_think_count tcount;
    int n_forced;             /* tokens of the job's think_close fed so far (its budget was spent) */
    zn_toolparse tp;
    bool tp_on;
    zn_job *job;
    int state;
    int pos;                  /* prefill: prompt tokens in the state */
    int recomp;               /* > 0: preempted (its KV given back to the pool), recomputing cache[0, recomp)
                                 before generating on; pos counts them */
    uint64_t admitted;        /* tick when its job started: the latest admitted is preempted first */
    bool waiting;             /* preempted, waiting for the pool to have its blocks (kv_resumes) */
    int32_t next;             /* generating: the sampled token the next step evaluates */
    int32_t pre;              /* presampled this round (has_pre): the token sampler_sample drew from lg, */
    zn_tok_lp pre_lp;         /* and its logprobs when the job asks for them */
    bool has_pre;
    int n_step;               /* tokens of this slot in the step being built (0: none) */
    uint64_t last_used;
    double t_last;            /* when the last token was generated */
    zn_slot_info pub;         /* what sched_slots reports, refreshed under s->mu once per round */
    char raw[ZN_DETOK_OUT_MAX];
    char out[ZN_STOPPER_CAP];
};

/* ---- jobs ---- */

zn_job *job_new(void) {
    zn_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    for (int k = 0; k < ZN_SRV_CKPT_ASKED; k++) j->ckpt_at[k] = -1;
    j->top_logprobs = -1;
    j->max_tokens = -1;
    j->think_budget = -1;
    j->cache_prompt = true;
    j->slot = -1;
    atomic_init(&j->cancel, false);
    atomic_init(&j->refs, 1);
    return j;
}

void job_ref(zn_job *j) { atomic_fetch_add(&j->refs, 1); }

void job_unref(zn_job *j) {
    if (!j || atomic_fetch_sub(&j->refs, 1) != 1) return;
    free(j->prompt);
    for (int i = 0; i < j->n_stop; i++) free(j->stop[i]);
    for (int c = 0; c < ZN_CH_COUNT; c++) free(j->text[c].p);
    toolset_free(&j->tools);
    if (j->gm) gmask_free(j->gm);
    free(j->gm);
    free(j->pieces);
    free(j->lp);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

/* Appends released text of channel ch; false when out of memory. Under j->mu. */
bool job_append(zn_job *j, int ch, const char *p, size_t n) {
    if (!n) return true;
    zn_textbuf *b = &j->text[ch];
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 1024;
        while (c < b->n + n + 1) c *= 2;
        char *q = realloc(b->p, c);
        if (!q) return false;
        b->p = q;
        b->cap = c;
    }
    if (!grow((void **)&j->pieces, &j->cap_pieces, j->n_pieces + 1, sizeof *j->pieces)) return false;
    memcpy(b->p + b->n, p, n);
    j->pieces[j->n_pieces++] = (zn_piece){ch, b->n, n};
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

static bool tool_sink(void *ctx, int ch, const char *p, size_t n) {
    zn_job *j = ctx;
    if (ch == ZN_CH_TOOL_NAME) j->n_calls++;
    return job_append(j, ch, p, n);
}

/* Released text of the thinker: the answer goes through the tool-call parser
 * when the job has tools. Under j->mu. */
static bool slot_emit(zn_slot *sl, zn_job *j, const zn_think_out *o, int no) {
    bool ok = true;
    for (int i = 0; ok && i < no; i++) {
        if (sl->tp_on && o[i].channel == ZN_CH_CONTENT) ok = toolparse_push(&sl->tp, o[i].p, o[i].n, tool_sink, j);
        else ok = job_append(j, o[i].channel, o[i].p, o[i].n);
    }
    return ok;
}

/* ---- log-probabilities ---- */

void sched_logprobs(const float *logits, int n, int32_t chosen, int top_n, zn_tok_lp *out) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    const float lse = mx + (float)log(sum);
    out->id = chosen;
    out->lp = logits[chosen] - lse;
    if (top_n > ZN_SRV_MAX_TOP_LOGPROBS) top_n = ZN_SRV_MAX_TOP_LOGPROBS;
    if (top_n > n) top_n = n;
    int k = 0;
    for (int i = 0; i < n && top_n > 0; i++) {
        float v = logits[i];
        if (k == top_n && v <= logits[out->top_id[k - 1]]) continue;
        int at = k < top_n ? k++ : k - 1;
        while (at > 0 && logits[out->top_id[at - 1]] < v) {
            out->top_id[at] = out->top_id[at - 1];
            at--;
        }
        out->top_id[at] = i;
    }
    out->n_top = k;
    for (int i = 0; i < k; i++) out->top_lp[i] = logits[out->top_id[i]] - lse;
}

/* ---- slots ---- */

/* The checkpoints above position keep are gone (the state was cut back below them). */
static void slot_ckpt_cut(zn_slot *sl, int keep) {
    for (int k = 0; k < ZN_SRV_CKPTS; k++)
        if (sl->ckpt_pos[k] > keep) sl->ckpt_pos[k] = -1;
}

static void slot_forget(zn_sched *s, zn_slot *sl) {
    seq_reset(&sl->seq);
    sl->n_cache = 0;
    slot_ckpt_cut(sl, -1);
}

/* The slot's latest checkpoint within the first p tokens of j's prompt that
 * leaves one to evaluate: its index, -1 when none. */
static int slot_ckpt_best(const zn_slot *sl, int p, const zn_job *j) {
    int best = -1;
    for (int k = 0; k < ZN_SRV_CKPTS; k++) {
        int c = sl->ckpt_pos[k];
        if (c > 0 && c <= p && c < j->n_prompt && (best < 0 || c > sl->ckpt_pos[best])) best = k;
    }
    return best;
}

/* How many of j's prompt tokens slot sl can keep, and how (*mode). */
enum { REUSE_RESET, REUSE_CUT, REUSE_CONTINUE, REUSE_RESTORE };

static int plan_reuse(const zn_sched *s, const zn_slot *sl, const zn_job *j, int *mode) {
    *mode = REUSE_RESET;
    if (!j->cache_prompt) return 0;
    int p = 0;
    while (p < sl->n_cache && p < j->n_prompt && sl->cache[p] == j->prompt[p]) p++;
    if (!s->recurrent) {
        if (p >= j->n_prompt) p = j->n_prompt - 1; /* one token to evaluate for the logits */
        *mode = p ? REUSE_CUT : REUSE_RESET;
        return p;
    }
    if (p == sl->n_cache && p > 0 && p < j->n_prompt) {
        *mode = REUSE_CONTINUE;
        return p;
    }
    int k = slot_ckpt_best(sl, p, j);
    if (k >= 0) {
        *mode = REUSE_RESTORE;
        return sl->ckpt_pos[k];
    }
    return 0;
}

static void job_fail(zn_job *j, const zn_err *err) {
    pthread_mutex_lock(&j->mu);
    j->failed = true;
    j->err = *err;
    j->state = ZN_JOB_DONE;
    j->t_done = timer_now();
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Common prefix of j's prompt and the tokens slot o holds. */
static int common_prefix(const zn_slot *o, const zn_job *j) {
    int p = 0;
    while (p < o->n_cache && p < j->n_prompt && o->cache[p] == j->prompt[p]) p++;
    return p;
}

/* The slot slot_borrow would take j's prefix from (NULL: none holds more
 * than keep), the tokens it would lend (*best) and its checkpoint (*best_k,
 * hybrid models). */
static zn_slot *borrow_plan(zn_sched *s, const zn_slot *sl, const zn_job *j, int keep, int *best, int *best_k) {
    zn_slot *donor = NULL;
    *best = keep;
    *best_k = -1;
    if (!j->cache_prompt) return NULL;
    for (int i = 0; i < s->n_slots; i++) {
        zn_slot *o = &s->slots[i];
        if (o == sl) continue;
        int p = common_prefix(o, j), k = -1;
        if (!s->recurrent) {
            if (p >= j->n_prompt) p = j->n_prompt - 1;
        } else {
            k = slot_ckpt_best(o, p, j);
            p = k >= 0 ? o->ckpt_pos[k] : 0;
        }
        if (p > *best) {
            donor = o;
            *best = p;
            *best_k = k;
        }
    }
    return donor;
}

/* The prefix cache across slots: when another slot, idle or busy, holds more
 * of j's prompt than sl would keep of its own, sl takes that prefix from it
 * instead of computing it. Any slot's KV below its n_past is final (a busy
 * one only appends; the engine thread is between steps), so a busy donor is
 * safe. Dense models: the KV of the common prefix, one token left to
 * evaluate for the logits. Hybrid models cannot cut a recurrent state back,
 * so only a donor's checkpoints count, the latest that lies within the
 * common prefix: its KV below the checkpoint and the checkpoint's state.
 * Returns the tokens sl now keeps (> keep), 0 when no slot holds more, -1
 * when the copy failed (sl is then reset: the prompt is computed, nothing is
 * wrong). */
static int slot_borrow(zn_sched *s, zn_slot *sl, const zn_job *j, int keep) {
    int best, best_k;
    zn_slot *donor = borrow_plan(s, sl, j, keep, &best, &best_k);
    if (!donor) return 0;
    zn_err err = {0};
    zn_status st = seq_copy(&sl->seq, &donor->seq, best, &err);
    if (!st && !s->recurrent) st = seq_truncate(&sl->seq, best, &err);
    if (!st && s->recurrent) st = seq_copy(&sl->seq, &donor->ckpt[best_k], 0, &err); /* the state at the checkpoint */
    if (st) {
        slot_forget(s, sl);
        return -1;
    }
    memcpy(sl->cache, donor->cache, sizeof *sl->cache * (size_t)best);
    sl->n_cache = best;
    slot_ckpt_cut(sl, -1);
    /* the checkpoint comes along: a follow-up on this slot can restore it */
    if (s->recurrent && seq_copy(&sl->ckpt[0], &donor->ckpt[best_k], 0, &err) == ZN_OK) sl->ckpt_pos[0] = best;
    return best;
}

/* Puts job j into slot sl. Called by the engine thread. */
static void slot_start(zn_sched *s, zn_slot *sl, zn_job *j) {
    zn_err err = {0};
    int mode, keep = plan_reuse(s, sl, j, &mode);
    int borrowed = slot_borrow(s, sl, j, keep);
    if (borrowed < 0) mode = REUSE_RESET, keep = borrowed = 0;
    if (borrowed) keep = borrowed;
    zn_status st = ZN_OK;
    if (borrowed) {
        /* sl holds the borrowed prefix: nothing more to do */
    } else if (mode == REUSE_RESET) {
        slot_forget(s, sl);
    } else if (mode == REUSE_CUT) {
        st = seq_truncate(&sl->seq, keep, &err);
        sl->n_cache = keep;
    } else if (mode == REUSE_RESTORE) {
        int k = slot_ckpt_best(sl, keep, j);
        st = seq_copy(&sl->seq, &sl->ckpt[k], 0, &err);
        sl->n_cache = keep;
    }
    slot_ckpt_cut(sl, keep);
    sl->ckpt_from = s->recurrent ? keep : 0;
    if (!st && sl->smp_ok) st = sampler_set(&sl->smp, &j->sp, &err);
    else if (!st) st = sampler_init(&sl->smp, &j->sp, s->n_vocab, &err);
    if (st) {
        slot_forget(s, sl);
        sl->state = SLOT_IDLE;
        sl->job = NULL;
        job_fail(j, &err);
        job_unref(j);
        return;
    }
    sl->smp_ok = true;
    if (sl->tp_on) toolparse_free(&sl->tp);
    sl->tp_on = false;
    if (j->parse_tools) {
        if ((st = toolparse_init(&sl->tp, j->tool_fmt, &j->tools, &err))) {
            sl->state = SLOT_IDLE;
            sl->job = NULL;
            job_fail(j, &err);
            job_unref(j);
            return;
        }
        sl->tp_on = true;
    }
    for (int i = 0; i < j->n_prompt; i++) sampler_accept(&sl->smp, j->prompt[i]);
    detok_init(&sl->detok, s->tok, false, false);
    stopper_init(&sl->stopper, (const char *const *)j->stop, j->n_stop);
    thinker_init(&sl->thinker, j->think_open, j->split_think);
    thinkcount_init(&sl->tcount, j->think_open, j->split_think);
    sl->n_forced = 0;
    sl->job = j;
    sl->state = SLOT_PREFILL;
    sl->pos = keep;
    sl->recomp = 0;
    sl->waiting = false;
    sl->last_used = ++s->tick;
    sl->admitted = sl->last_used;
    double now = timer_now();
    pthread_mutex_lock(&j->mu);
    j->state = ZN_JOB_RUNNING;
    j->slot = sl->id;
    j->n_cached = keep;
    j->t_start = now;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    metrics_observe(s->metrics, ZN_HIST_QUEUE, now - j->t_arrival);
    if (j->cache_prompt) metrics_prefix(s->metrics, keep, borrowed);
}

/* Ends the slot's job: held text released (unless cancelled), counts recorded. */
static void slot_finish(zn_sched *s, zn_slot *sl, const char *why, const zn_err *err) {
    zn_job *j = sl->job;
    bool cancelled = atomic_load(&j->cancel);
    pthread_mutex_lock(&j->mu);
    bool ok = true;
    if (!err && !cancelled) {
        size_t k = detok_flush(&sl->detok, sl->raw);
        size_t m = stopper_push(&sl->stopper, sl->raw, k, sl->out);
        zn_think_out o[2];
        int no = thinker_push(&sl->thinker, sl->out, m, o);
        ok = slot_emit(sl, j, o, no);
        m = stopper_flush(&sl->stopper, sl->out);
        no = thinker_push(&sl->thinker, sl->out, m, o);
        ok = ok && slot_emit(sl, j, o, no);
        no = thinker_flush(&sl->thinker, o);
        ok = ok && slot_emit(sl, j, o, no);
        if (ok && sl->tp_on) ok = toolparse_flush(&sl->tp, tool_sink, j);
    }
    /* a reply that made calls ends for them (a cut one stays "length") */
    if (why && !strcmp(why, "stop") && j->n_calls > 0) why = "tool_calls";
    if (err || !ok) {
        j->failed = true;
        if (err) j->err = *err;
        else zn_errf(&j->err, ZN_ERR_NOMEM, "out of memory for the reply");
    }
    j->finish = why;
    j->state = ZN_JOB_DONE;
    j->t_done = timer_now();
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!err && !cancelled) {
        metrics_tokens(s->metrics, j->n_prompt, j->n_cached, j->n_gen);
        metrics_observe(s->metrics, ZN_HIST_DURATION, j->t_done - j->t_arrival);
    }
    if (sl->tp_on) toolparse_free(&sl->tp); /* it points into the job's tools */
    sl->tp_on = false;
    sl->job = NULL;
    sl->state = SLOT_IDLE;
    sl->last_used = ++s->tick;
    job_unref(j);
}

/* A prefilling slot's part of the next step: a chunk of the prompt within
 * the step's remaining budget, stopping at the next checkpoint position (one
 * the job asked for, or a block boundary) so the state there can be saved;
 * 0 when nothing fits. A chunk the budget cut short is not realigned: the
 * next one still stops at the boundary. */
static int slot_prefill_plan(const zn_sched *s, zn_slot *sl, int budget, zn_step_item *it) {
    const zn_job *j = sl->job;
    if (sl->recomp) { /* the tokens it held when preempted: its prompt and what it generated */
        int n = sl->recomp - sl->pos < ZN_SRV_PREFILL_CHUNK ? sl->recomp - sl->pos : ZN_SRV_PREFILL_CHUNK;
        if (n > budget) n = budget;
        if (n <= 0) return 0;
        const bool last = sl->pos + n == sl->recomp;
        *it = (zn_step_item){.seq = &sl->seq, .tokens = sl->cache + sl->pos, .n = n, .logits = last ? sl->logits : NULL,
                             .logits_at = &sl->lg};
        return n;
    }
    int end = j->n_prompt;
    if (s->recurrent) {
        const int block = (sl->pos / ZN_SRV_CKPT_BLOCK + 1) * ZN_SRV_CKPT_BLOCK;
        if (block < end) end = block;
    }
    for (int k = 0; s->recurrent && k < ZN_SRV_CKPT_ASKED; k++)
        if (j->ckpt_at[k] > sl->pos && j->ckpt_at[k] < end) end = j->ckpt_at[k];
    int n = end - sl->pos < ZN_SRV_PREFILL_CHUNK ? end - sl->pos : ZN_SRV_PREFILL_CHUNK;
    if (n > budget) n = budget;
    if (n <= 0) return 0;
    const bool last = sl->pos + n == j->n_prompt;
    *it = (zn_step_item){.seq = &sl->seq, .tokens = j->prompt + sl->pos, .n = n, .logits = last ? sl->logits : NULL,
                             .logits_at = &sl->lg};
    return n;
}

static bool job_asks(const zn_job *j, int pos) {
    for (int i = 0; i < ZN_SRV_CKPT_ASKED; i++)
        if (j->ckpt_at[i] == pos) return true;
    return false;
}

/* Which checkpoint gives its place to a new one when all are used. Kept
 * whatever: the ones the job asked for, the one its prompt resumed from (a
 * prefix another prompt did share) and the new one, the deepest. The rest
 * go in this order, the shallowest first within each tier: one at no block
 * boundary (a previous conversation's end), a block that is not a power of
 * two blocks in, a power of two. What a long prompt leaves is a geometric
 * ladder, blocks 2^i for the highest few i plus the deepest: a later prompt
 * that shares K tokens with it, K >= the lowest rung, resumes at more than
 * K/2 however long the prompt's own tail went on, where keeping only the
 * deepest few would lose a shared system prompt behind a long document, and
 * blocks spread evenly would lose short prefixes to long prompts. */
static int slot_ckpt_victim(const zn_slot *sl, const zn_job *j) {
    int v = -1, v_tier = 0;
    for (int k = 0; k < ZN_SRV_CKPTS; k++) {
        const int c = sl->ckpt_pos[k], b = c / ZN_SRV_CKPT_BLOCK;
        if (c <= 0 || c == sl->ckpt_from || job_asks(j, c)) continue;
        const int tier = c % ZN_SRV_CKPT_BLOCK ? 0 : (b & (b - 1)) ? 1 : 2;
        if (v < 0 || tier < v_tier || (tier == v_tier && c < sl->ckpt_pos[v])) {
            v = k;
            v_tier = tier;
        }
    }
    return v;
}

/* Saves the state when the prefill reached one of j's checkpoint positions
 * or a block boundary, in a free place or slot_ckpt_victim's. */
static void slot_ckpt_take(zn_slot *sl, const zn_job *j) {
    if (!job_asks(j, sl->pos) && sl->pos % ZN_SRV_CKPT_BLOCK) return;
    int v = -1;
    for (int k = 0; k < ZN_SRV_CKPTS; k++) {
        if (sl->ckpt_pos[k] == sl->pos) return; /* already held */
        if (v < 0 && sl->ckpt_pos[k] < 0) v = k;
    }
    if (v < 0) v = slot_ckpt_victim(sl, j);
    if (v < 0) return; /* cannot happen: more places than the job asks for plus the resumed one */
    zn_err err = {0};
    sl->ckpt_pos[v] = -1; /* on failure none: a later request recomputes, nothing is wrong */
    if (seq_copy(&sl->ckpt[v], &sl->seq, 0, &err) == ZN_OK) sl->ckpt_pos[v] = sl->pos;
}

/* After the step that evaluated the chunk. */
static void slot_prefill_done(zn_sched *s, zn_slot *sl, int n) {
    zn_job *j = sl->job;
    if (sl->recomp) { /* back where it was preempted: its next token is sampled from these logits */
        sl->pos += n;
        sl->n_cache = sl->pos;
        if (sl->pos == sl->recomp) sl->state = SLOT_GEN, sl->recomp = 0;
        return;
    }
    memcpy(sl->cache + sl->pos, j->prompt + sl->pos, sizeof *sl->cache * (size_t)n);
    sl->pos += n;
    sl->n_cache = sl->pos;
    if (s->recurrent) slot_ckpt_take(sl, j);
    if (sl->pos == j->n_prompt) {
        sl->state = SLOT_GEN;
        sl->t_last = 0;
    }
}

/* One turn of a generating slot: sample a token, publish its text; true
 * when the next step is to evaluate it (sl->next). */
/* Whether the next token is one of the job's think_close instead of a
 * sampled one: its reasoning has spent the budget, or the closing is under
 * way. Once closed the reply is an answer and stays one. */
static bool slot_forcing(const zn_slot *sl, const zn_job *j) {
    if (sl->n_forced > 0) return sl->n_forced < j->n_think_close;
    return j->think_budget >= 0 && j->n_think_close > 0 && thinkcount_in_reasoning(&sl->tcount) &&
           sl->tcount.n >= j->think_budget;
}

static bool slot_generate(zn_sched *s, zn_slot *sl) {
    zn_job *j = sl->job;
    zn_err gerr;
    const bool forced = slot_forcing(sl, j);
    int32_t id;
    if (forced) {
        id = j->think_close[sl->n_forced++];
    } else if (sl->has_pre) {
        id = sl->pre;
    } else if (j->gm) {
        const long inl = j->gm->n_inline;
        id = gmask_sample(j->gm, &sl->smp, sl->lg, &gerr);
        if (j->gm->n_inline != inl) atomic_fetch_add(&s->masks_inline, 1);
    } else {
        id = sampler_sample(&sl->smp, sl->lg);
    }
    if (id < 0) { /* the grammar cannot go on: a request error, not the server's */
        slot_finish(s, sl, NULL, &gerr);
        return false;
    }
    if (!forced && sl->smp.nonfinite) { /* sampling is defined, but the text would be noise */
        zn_err err;
        zn_errf(&err, ZN_ERR_FORMAT, "the model's logits are not finite (NaN or inf) at position %d: broken weights "
                "or hyper-parameters", sl->n_cache);
        slot_forget(s, sl);
        slot_finish(s, sl, NULL, &err);
        return false;
    }
    /* under a grammar an end-of-text token is allowed only where the answer is complete, which ends it */
    if (!forced && (!j->ignore_eos || j->gm) && tokenizer_is_eog(s->tok, id)) {
        slot_finish(s, sl, "stop", NULL);
        return false;
    }
    /* cannot happen: a sampled token was drawn among the allowed, and the grammar's reasoning
     * (constrain.h) runs up to </think> and the whitespace after it, which is all think_close is */
    if (j->gm && !gmask_accept(j->gm, id)) {
        zn_errf(&gerr, ZN_ERR_ARG, "grammar: the %s token %d is not allowed", forced ? "closing" : "sampled", id);
        slot_finish(s, sl, NULL, &gerr);
        return false;
    }
    zn_tok_lp lp;
    if (j->top_logprobs >= 0 && sl->has_pre) /* drawn on a sampling thread */
        lp = sl->pre_lp;
    else if (j->top_logprobs >= 0)
        sched_logprobs(sl->lg, s->n_vocab, id, j->top_logprobs, &lp);
    sampler_accept(&sl->smp, id);
    size_t k = detok_push(&sl->detok, id, sl->raw);
    thinkcount_push(&sl->tcount, sl->raw, k);
    size_t m = stopper_push(&sl->stopper, sl->raw, k, sl->out);
    zn_think_out o[2];
    int no = thinker_push(&sl->thinker, sl->out, m, o);
    double now = timer_now();
    pthread_mutex_lock(&j->mu);
    bool ok = true;
    ok = slot_emit(sl, j, o, no);
    if (j->top_logprobs >= 0 && ok) {
        ok = grow((void **)&j->lp, &j->cap_lp, j->n_lp + 1, sizeof *j->lp);
        if (ok) j->lp[j->n_lp++] = lp;
    }
    j->n_gen++;
    j->n_reasoning = sl->tcount.n;
    if (!j->t_first) j->t_first = now;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!ok) {
        zn_err err;
        zn_errf(&err, ZN_ERR_NOMEM, "out of memory for the reply");
        slot_finish(s, sl, NULL, &err);
        return false;
    }
    if (sl->t_last) metrics_observe(s->metrics, ZN_HIST_ITL, now - sl->t_last);
    else metrics_observe(s->metrics, ZN_HIST_TTFT, now - j->t_arrival);
    sl->t_last = now;
    if (sl->stopper.matched || (j->gm && gmask_finished(j->gm))) {
        if (sl->stopper.matched) j->stop_hit = sl->stopper.hit;  /* read once the job is done (under mu) */
        slot_finish(s, sl, "stop", NULL);
        return false;
    }
    if (j->max_tokens >= 0 && j->n_gen >= j->max_tokens) {
        slot_finish(s, sl, "length", NULL);
        return false;
    }
    if (sl->n_cache + 1 > s->n_ctx) { /* no room to evaluate it: the context is full */
        slot_finish(s, sl, "length", NULL);
        return false;
    }
    sl->next = id;
    return true;
}

/* The free slot that reuses most of j's prompt; the least recently used among equals. */
static zn_slot *pick_slot(zn_sched *s, const zn_job *j) {
    zn_slot *best = NULL;
    int best_keep = -1;
    for (int i = 0; i < s->n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        if (sl->state != SLOT_IDLE) continue;
        int mode, keep = plan_reuse(s, sl, j, &mode);
        if (keep > best_keep || (keep == best_keep && sl->last_used < best->last_used)) {
            best = sl;
            best_keep = keep;
        }
    }
    return best;
}

/* Under s->mu, by the engine thread: the state other threads may read. */
static void publish(zn_sched *s) {
    if (s->kv_pool_pos > 0) s->kv_pool_free = engine_kv_free(s->eng);
    for (int i = 0; i < s->n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        const zn_job *j = sl->job;
        int st = sl->state;
        sl->pub = (zn_slot_info){.id = i, .state = st == SLOT_IDLE ? "idle" : st == SLOT_PREFILL ? "prefill" : "generating",
                                 .n_ctx = s->n_ctx, .n_cached = sl->n_cache, .n_prompt = j ? j->n_prompt : 0,
                                 .n_gen = j ? j->n_gen : 0, .ckpt_pos = -1};
        for (int k = 0; k < ZN_SRV_CKPTS; k++)
            if (sl->ckpt_pos[k] > sl->pub.ckpt_pos) sl->pub.ckpt_pos = sl->ckpt_pos[k];
    }
}

/* The KV pool (kv_pool_tokens) is short: the least recently used idle
 * slot's cached prefix is dropped (its blocks go back). False when no idle
 * slot holds any. */
static bool evict_idle(zn_sched *s) {
    zn_slot *v = NULL;
    for (int i = 0; i < s->n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        if (sl->state == SLOT_IDLE && sl->n_cache > 0 && (!v || sl->last_used < v->last_used)) v = sl;
    }
    if (!v) return false;
    slot_forget(s, v);
    atomic_fetch_add(&s->kv_evictions, 1);
    return true;
}

/* Takes the slot's KV back to the pool; its job stays in it. A generating
 * slot recomputes what its state held (cache[], with the token of the step
 * that did not run) when blocks are free again and goes on where it was:
 * its sampler, text and grammar state are untouched, so the tokens are the
 * ones it would have made. A prefilling one starts its prompt again. */
static void slot_preempt(zn_sched *s, zn_slot *sl) {
    if (sl->n_cache > 0) atomic_fetch_add(&s->preemptions, 1);
    int n = sl->recomp;
    if (sl->state == SLOT_GEN) {
        n = sl->n_cache;
        if (sl->n_step) sl->cache[n++] = sl->next;
    }
    slot_forget(s, sl);
    sl->state = SLOT_PREFILL;
    sl->pos = 0;
    sl->recomp = n;
    sl->waiting = true;
}

#define BLOCKS(n) (((int64_t)(n) + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK) /* KV blocks that hold n positions */

/* Blocks the busy slots other than except have yet to take for their
 * prompts or recomputation (admitted, not yet reserved); they count as
 * taken when a request is admitted or a preempted one resumes, or all would
 * be let in at once and preempt one another. */
static int64_t kv_promised(const zn_sched *s, const zn_slot *except) {
    int64_t n = 0;
    for (int i = 0; i < s->n_slots; i++) {
        const zn_slot *sl = &s->slots[i];
        if (sl != except && sl->state == SLOT_PREFILL && sl->job)
            n += BLOCKS(sl->recomp ? sl->recomp : sl->job->n_prompt) - BLOCKS(sl->n_cache);
    }
    return n;
}

/* Whether the pool has need blocks beyond those promised (dropping idle
 * slots' cached prefixes for them), or all its blocks are free. */
static bool kv_room(zn_sched *s, const zn_slot *sl, int64_t need) {
    const int64_t promised = kv_promised(s, sl);
    for (;;) {
        const int64_t free = engine_kv_free(s->eng) / ZN_KV_BLOCK;
        if (free - promised >= need || free * ZN_KV_BLOCK == s->kv_pool_pos) return true;
        if (!evict_idle(s)) return false;
    }
}

/* Whether a preempted slot may start again: when the pool has the blocks
 * for all it is to recompute (its prompt, or what it held) and one to
 * spare, so that it does not take a few and be preempted again at once. */
static bool kv_resumes(zn_sched *s, zn_slot *sl) {
    if (!sl->waiting) return true;
    if (!kv_room(s, sl, BLOCKS(sl->recomp ? sl->recomp : sl->job->n_prompt) + 1)) return false;
    sl->waiting = false;
    return true;
}

/* engine_step over items, making room in the KV pool when it is short:
 * idle slots' cached prefixes go first, then the latest admitted busy slot
 * is preempted (slot_preempt; out of the step if it was in it) and the step
 * tried again. ZN_ERR_KV_FULL when the step's one slot holds all there is. */
static zn_status step_with_room(zn_sched *s, zn_step_item *items, zn_slot **owner, int *n, zn_err *err) {
    for (;;) {
        zn_status st = engine_step(s->eng, items, *n, err);
        if (st != ZN_ERR_KV_FULL) return st;
        if (evict_idle(s)) continue;
        zn_slot *v = NULL;
        for (int i = 0; i < s->n_slots; i++) {
            zn_slot *sl = &s->slots[i];
            if (sl->state == SLOT_IDLE || (!sl->n_step && !sl->n_cache) || (*n == 1 && sl == owner[0])) continue;
            if (!v || sl->admitted > v->admitted) v = sl;
        }
        if (!v) return st;
        slot_preempt(s, v);
        for (int i = 0; v->n_step && i < *n; i++) {
            if (owner[i] != v) continue;
            for (int k = i; k + 1 < *n; k++) items[k] = items[k + 1], owner[k] = owner[k + 1];
            (*n)--;
            break;
        }
        v->n_step = 0;
        if (*n == 0) return ZN_OK;
    }
}

/* The slots the sampling threads draw for this round. */
typedef struct presample_work {
    zn_slot *sl[ZN_SRV_MAX_PARALLEL];
    int n, n_vocab;
} presample_work;

static void presample_part(void *arg, int ith, int nth) {
    const presample_work *w = arg;
    for (int i = ith; i < w->n; i += nth) {
        zn_slot *sl = w->sl[i];
        sl->pre = sampler_sample(&sl->smp, sl->lg);
        if (sl->job->top_logprobs >= 0 && sl->pre >= 0)
            sched_logprobs(sl->lg, w->n_vocab, sl->pre, sl->job->top_logprobs, &sl->pre_lp);
        sl->has_pre = true;
    }
}

/* Draws the next tokens of the generating slots without a grammar on the
 * sampling threads, each slot's sampler (and seed) its own, so the tokens
 * are those slot_generate would draw one slot after another; their
 * logprobs too (a pass over the vocabulary with an exp per token). */
static void presample(zn_sched *s) {
    presample_work w = {.n = 0, .n_vocab = s->n_vocab};
    for (int i = 0; s->pool && i < s->n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        if (sl->state == SLOT_GEN && !sl->job->gm && !slot_forcing(sl, sl->job)) w.sl[w.n++] = sl;
    }
    if (w.n > 1) cpu_pool_run(s->pool, presample_part, &w);
}

/* One engine step for every active slot: the generating ones' sampled
 * tokens, then prompt chunks of the prefilling ones (starting from a
 * rotating slot, so none waits behind the others for long) while the step
 * budget lasts. Returns how many slots ended. */
static int sched_round(zn_sched *s) {
    zn_step_item items[ZN_SRV_MAX_PARALLEL];
    zn_slot *owner[ZN_SRV_MAX_PARALLEL];
    int n = 0, budget = s->eng->max_tokens, ended = 0;
    const double t0 = timer_now();
    presample(s);
    for (int i = 0; i < s->n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        sl->n_step = 0;
        if (sl->state == SLOT_IDLE) continue;
        if (atomic_load(&sl->job->cancel)) {
            zn_err e;
            zn_errf(&e, ZN_ERR_ARG, "cancelled");
            slot_finish(s, sl, NULL, &e);
        } else if (sl->state == SLOT_GEN && slot_generate(s, sl)) {
            items[n] = (zn_step_item){.seq = &sl->seq, .tokens = &sl->next, .n = 1, .logits = sl->logits,
                                      .logits_at = &sl->lg};
            owner[n++] = sl;
            sl->n_step = 1;
            budget--;
        }
        sl->has_pre = false;
        if (sl->state == SLOT_IDLE) ended++;
    }
    const int first = (int)(s->tick++ % (uint64_t)s->n_slots); /* tick only orders: a step may take one */
    for (int k = 0; k < s->n_slots && budget > 0; k++) {
        zn_slot *sl = &s->slots[(first + k) % s->n_slots];
        if (sl->state != SLOT_PREFILL || !sl->job || !kv_resumes(s, sl)) continue;
        const int c = slot_prefill_plan(s, sl, budget, &items[n]);
        if (!c) continue;
        owner[n++] = sl;
        sl->n_step = c;
        budget -= c;
    }
    if (n == 0) {
        atomic_fetch_add(&s->host_us, (unsigned long long)(1e6 * (timer_now() - t0)));
        return ended;
    }
    /* the slots that sample after this step know their grammar state now:
     * their masks are made while the step runs (the step touches no gmask) */
    zn_gmask *prep[ZN_SRV_MAX_PARALLEL];
    int n_prep = 0;
    for (int i = 0; s->overlap && i < n; i++)
        if (items[i].logits && owner[i]->job->gm) prep[n_prep++] = owner[i]->job->gm;
    maskpipe_start(&s->mp, prep, n_prep);
    zn_err err = {0};
    const double t1 = timer_now();
    const zn_status st = step_with_room(s, items, owner, &n, &err);
    const double t2 = timer_now();
    const int n_ahead = maskpipe_wait(&s->mp);
    if (n_ahead) atomic_fetch_add(&s->masks_ahead, (unsigned long long)n_ahead);
    if (!st && n) {
        atomic_fetch_add(&s->steps, 1);
        if (n > 1 && s->eng->be->multi_seq) atomic_fetch_add(&s->batched_steps, 1);
        if (s->eng->be->stats) { /* a copy of a few counters */
            zn_backend_stats bs;
            s->eng->be->stats(s->eng->be_ctx, &bs);
            atomic_store(&s->replayed_steps, bs.replayed);
        }
    }
    for (int i = 0; i < n; i++) {
        zn_slot *sl = owner[i];
        if (st == ZN_ERR_KV_FULL && (sl->state == SLOT_GEN || sl->recomp)) {
            /* alone it has grown to all the pool holds: as a full context */
            slot_forget(s, sl);
            slot_finish(s, sl, "length", NULL);
            ended++;
        } else if (st) {
            slot_forget(s, sl);
            slot_finish(s, sl, NULL, &err);
            ended++;
        } else if (sl->state == SLOT_GEN) {
            sl->cache[sl->n_cache++] = sl->next;
        } else {
            slot_prefill_done(s, sl, sl->n_step);
        }
    }
    atomic_fetch_add(&s->step_us, (unsigned long long)(1e6 * (t2 - t1)));
    atomic_fetch_add(&s->host_us, (unsigned long long)(1e6 * (timer_now() - t2 + t1 - t0)));
    return ended;
}

/* Whether job j may start on slot sl now. Without a KV pool always (each
 * slot has its context's blocks). With one: when the pool has the blocks
 * for the prompt's positions sl would not keep, one block to spare, after
 * dropping idle slots' cached prefixes, and no preempted slot waits for
 * blocks (it goes first); when nothing runs, always (sched_submit refused
 * what cannot fit an empty pool). */
static bool kv_admits(zn_sched *s, const zn_slot *sl, const zn_job *j) {
    if (s->kv_pool_pos <= 0 || s->running == 0) return true;
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].waiting) return false;
    int mode, lent, k;
    const int keep = plan_reuse(s, sl, j, &mode);
    /* a borrowed prefix's whole blocks are shared, not taken (backend.h) */
    const int64_t held = borrow_plan(s, sl, j, keep, &lent, &k) ? lent / ZN_KV_BLOCK : BLOCKS(keep);
    return kv_room(s, sl, BLOCKS(j->n_prompt + 1) - held + 1);
}

static void *worker(void *arg) {
    zn_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        /* start queued jobs on free slots; drop the ones whose client left */
        while (s->q_len > 0) {
            zn_job *j = s->queue[s->q_head];
            zn_slot *sl = atomic_load(&j->cancel) ? NULL : pick_slot(s, j);
            if (sl && !kv_admits(s, sl, j)) break; /* waits for blocks */
            if (!sl && !atomic_load(&j->cancel)) break;
            s->q_head = (s->q_head + 1) % ZN_SRV_MAX_QUEUE;
            s->q_len--;
            if (!sl) {
                zn_err e;
                zn_errf(&e, ZN_ERR_ARG, "cancelled");
                job_fail(j, &e);
                job_unref(j);
                continue;
            }
            sl->state = SLOT_PREFILL;  /* taken: pick_slot skips it */
            s->running++;
            pthread_mutex_unlock(&s->mu);
            slot_start(s, sl, j);
            pthread_mutex_lock(&s->mu);
            if (sl->state == SLOT_IDLE) s->running--;
        }
        publish(s);
        if (s->running == 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        const int ended = sched_round(s);
        pthread_mutex_lock(&s->mu);
        s->running -= ended;
    }
    /* shutting down: end whatever still runs or waits */
    zn_err e;
    zn_errf(&e, ZN_ERR_IO, "the server is shutting down");
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].state != SLOT_IDLE) slot_finish(s, &s->slots[i], NULL, &e);
    while (s->q_len > 0) {
        zn_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % ZN_SRV_MAX_QUEUE;
        s->q_len--;
        job_fail(j, &e);
        job_unref(j);
    }
    s->running = 0;
    publish(s);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* By backend: mask overlap and sampling threads. On a GPU the engine
 * thread only waits while the step runs, so masks made then are free, and
 * the device idles while the slots' tokens are drawn, so they are drawn on
 * ZN_SRV_SAMPLE_THREADS (bench/results/2026-12-07-s38.md). The CPU
 * backend's step keeps every core busy with its workers: a mask thread
 * would take one from the matmuls (bench/results/2026-12-02-cpu-grammar.md),
 * and sampling threads spinning down into the next step cost it about what
 * they save (a 1-layer 152k-vocabulary model on 2 cores, 32 slots). Backends
 * not listed: off, 1. */
static const struct { const char *backend; bool overlap; int sample_threads; } by_backend[] = {
    {"cpu", false, 1},
    {"vulkan", true, ZN_SRV_SAMPLE_THREADS},
};

static int backend_row(const char *backend) {
    for (size_t i = 0; backend && i < sizeof by_backend / sizeof by_backend[0]; i++)
        if (!strcmp(by_backend[i].backend, backend)) return (int)i;
    return -1;
}

bool sched_mask_overlap(const char *backend, int mask_overlap) {
    if (mask_overlap == ZN_OVERLAP_ON) return true;
    if (mask_overlap == ZN_OVERLAP_OFF) return false;
    const int r = backend_row(backend);
    return r >= 0 && by_backend[r].overlap;
}

zn_status sched_init(zn_sched *s, zn_engine *e, const zn_tokenizer *tok, const zn_sched_opts *o, zn_metrics *m,
                     zn_err *err) {
    memset(s, 0, sizeof *s);
    const int n_slots = o->n_slots, n_ctx = o->n_ctx;
    if (n_slots < 1 || n_slots > ZN_SRV_MAX_PARALLEL)
        return zn_errf(err, ZN_ERR_ARG, "%d slots: between 1 and %d", n_slots, ZN_SRV_MAX_PARALLEL);
    s->eng = e;
    s->tok = tok;
    s->metrics = m;
    s->n_slots = n_slots;
    s->n_ctx = n_ctx;
    s->n_vocab = e->model->hp.n_vocab;
    s->recurrent = engine_is_recurrent(e);
    s->kv_pool_pos = s->kv_pool_free = engine_mem(e).kv_blocks * ZN_KV_BLOCK;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->slots = calloc((size_t)n_slots, sizeof *s->slots);
    if (!s->slots) {
        sched_free(s);
        return zn_errf(err, ZN_ERR_NOMEM, "out of memory for %d slots", n_slots);
    }
    for (int i = 0; i < n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        sl->id = i;
        slot_ckpt_cut(sl, -1);
        zn_status st = seq_init(&sl->seq, e, n_ctx, err);
        for (int k = 0; !st && s->recurrent && k < ZN_SRV_CKPTS; k++) st = seq_init(&sl->ckpt[k], e, 1, err);
        sl->cache = malloc(sizeof *sl->cache * (size_t)n_ctx);
        sl->logits = malloc(sizeof *sl->logits * (size_t)s->n_vocab);
        if (!st && (!sl->cache || !sl->logits)) st = zn_errf(err, ZN_ERR_NOMEM, "out of memory for slot %d", i);
        if (st) {
            zn_err_prefix(err, "slot %d of %d (context %d)", i, n_slots, n_ctx);
            sched_free(s);
            return st;
        }
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const int row = backend_row(e->be->name);
    int nt = o->sample_threads > 0 ? o->sample_threads : row >= 0 ? by_backend[row].sample_threads : 1;
    if (nt > n_slots) nt = n_slots;
    if (ncpu > 0 && ncpu < nt) nt = (int)ncpu;
    if (nt > 1) {
        zn_status st = cpu_pool_init(&s->pool, nt, err);
        if (st) {
            sched_free(s);
            return st;
        }
    }
    if (sched_mask_overlap(e->be->name, o->mask_overlap)) {
        zn_status st = maskpipe_init(&s->mp, err);
        if (st) {
            sched_free(s);
            return st;
        }
        s->overlap = true;
    }
    publish(s);
    if (pthread_create(&s->thread, NULL, worker, s)) {
        sched_free(s);
        return zn_errf(err, ZN_ERR_NOMEM, "cannot start the engine thread");
    }
    s->started = true;
    return ZN_OK;
}

void sched_stop(zn_sched *s) {
    if (!s->started) return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->started = false;
}

void sched_free(zn_sched *s) {
    sched_stop(s);
    maskpipe_free(&s->mp);
    cpu_pool_free(s->pool);
    s->pool = NULL;
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        zn_slot *sl = &s->slots[i];
        if (sl->smp_ok) sampler_free(&sl->smp);
        if (sl->tp_on) toolparse_free(&sl->tp);
        seq_free(&sl->seq);
        for (int k = 0; k < ZN_SRV_CKPTS; k++) seq_free(&sl->ckpt[k]);
        free(sl->cache);
        free(sl->logits);
    }
    free(s->slots);
    if (s->eng) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    memset(s, 0, sizeof *s);
}

/* Removes the waiting jobs whose client left; under s->mu. */
static void queue_drop_cancelled(zn_sched *s) {
    int k = 0;
    for (int i = 0; i < s->q_len; i++) {
        zn_job *q = s->queue[(s->q_head + i) % ZN_SRV_MAX_QUEUE];
        if (atomic_load(&q->cancel)) {
            zn_err e;
            zn_errf(&e, ZN_ERR_ARG, "cancelled");
            job_fail(q, &e);
            job_unref(q);
        } else {
            s->queue[(s->q_head + k++) % ZN_SRV_MAX_QUEUE] = q;
        }
    }
    s->q_len = k;
}

zn_status sched_submit(zn_sched *s, zn_job *j, zn_err *err) {
    if (j->n_prompt < 1 || j->n_prompt >= s->n_ctx)
        return zn_errf(err, ZN_ERR_ARG, "%d prompt tokens: the context holds %d", j->n_prompt, s->n_ctx);
    if (s->kv_pool_pos > 0 && j->n_prompt + 1 > s->kv_pool_pos)
        return zn_errf(err, ZN_ERR_ARG, "%d prompt tokens: the KV pool holds %lld positions in all (--kv-mem)",
                       j->n_prompt, (long long)s->kv_pool_pos);
    for (int i = 0; i < j->n_prompt; i++) /* a bad id would fail the whole step it shares with others */
        if (j->prompt[i] < 0 || j->prompt[i] >= s->n_vocab)
            return zn_errf(err, ZN_ERR_ARG, "prompt token %d: id %d out of range [0, %d)", i, j->prompt[i], s->n_vocab);
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        return zn_errf(err, ZN_ERR_IO, "the server is shutting down");
    }
    if (s->q_len == ZN_SRV_MAX_QUEUE) queue_drop_cancelled(s); /* make room */
    if (s->q_len == ZN_SRV_MAX_QUEUE) {
        pthread_mutex_unlock(&s->mu);
        return zn_errf(err, ZN_ERR_NOMEM, "the server is busy: %d requests are waiting (the queue holds %d)",
                       ZN_SRV_MAX_QUEUE, ZN_SRV_MAX_QUEUE);
    }
    job_ref(j);
    j->state = ZN_JOB_QUEUED;
    s->queue[(s->q_head + s->q_len) % ZN_SRV_MAX_QUEUE] = j;
    s->q_len++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return ZN_OK;
}

/* The engine thread owns the slots; other threads read what it published
 * (at most one round old). */
int sched_slots(zn_sched *s, zn_slot_info *out, int cap) {
    pthread_mutex_lock(&s->mu);
    int n = s->n_slots < cap ? s->n_slots : cap;
    for (int i = 0; i < n; i++) out[i] = s->slots[i].pub;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void sched_gauges(zn_sched *s, zn_metrics_gauges *g) {
    pthread_mutex_lock(&s->mu);
    long used = 0;
    for (int i = 0; i < s->n_slots; i++)
        if (strcmp(s->slots[i].pub.state, "idle")) used += s->slots[i].pub.n_cached;
    *g = (zn_metrics_gauges){.running = s->running, .waiting = s->q_len, .kv_used = used,
                             .kv_total = s->kv_pool_pos > 0 ? (long)s->kv_pool_pos : (long)s->n_slots * s->n_ctx,
                             .kv_pool = s->kv_pool_pos > 0, .kv_pool_free = (long)s->kv_pool_free,
                             .slots = s->n_slots, .preemptions = atomic_load(&s->preemptions),
                             .kv_evictions = atomic_load(&s->kv_evictions),
                             .steps = atomic_load(&s->steps), .batched_steps = atomic_load(&s->batched_steps),
                             .replayed_steps = atomic_load(&s->replayed_steps),
                             .step_s = 1e-6 * (double)atomic_load(&s->step_us),
                             .host_s = 1e-6 * (double)atomic_load(&s->host_us),
                             .masks_ahead = atomic_load(&s->masks_ahead), .masks_inline = atomic_load(&s->masks_inline)};
    pthread_mutex_unlock(&s->mu);
}

void sched_cancel(zn_sched *s, zn_job *j) {
    atomic_store(&j->cancel, true);
    pthread_mutex_lock(&s->mu);
    queue_drop_cancelled(s);  /* a running job's slot is freed by the engine thread at its next turn */
    pthread_mutex_unlock(&s->mu);
}
