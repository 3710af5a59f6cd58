/* The batched-step check shared by the CPU and Vulkan tests: sequences of
 * different lengths run through engine_step together -- prompt chunks and
 * decode tokens in one step, sequences joining late, leaving early, one
 * slot reused by a new sequence after a reset, a step budget that makes
 * some wait a step -- and every logits row a step returns is compared with
 * the same sequence's logits when it runs alone (engine_decode of all its
 * tokens in one go). Every other item takes its logits in place
 * (logits_at): those are compared the same way. */
#ifndef ZN_TEST_BATCH_CHECK_H
#define ZN_TEST_BATCH_CHECK_H

#include "engine.h"
#include "harness.h"

#define BC_SLOTS 5   /* sequence states */
#define BC_SEQS 7    /* logical sequences: two reuse a slot after its first one left */
#define BC_MAX_LEN 40
#define BC_BUDGET 24 /* tokens per step: below the sum of the chunks, so some wait */

typedef struct bc_seq {
    int slot;      /* its state */
    int prompt;    /* tokens fed in chunks first; the rest one per step (decode) */
    int len;       /* tokens in all */
    int join;      /* the step it joins at (or later, once its slot is free) */
} bc_seq;

/* Slots 1 and 3 are used twice: the first sequence leaves, the slot is
 * reset, the next one joins into it. */
static const bc_seq bc_plan[BC_SEQS] = {
    {0, 12, 40, 0}, {1, 5, 9, 0}, {2, 20, 25, 2}, {3, 1, 3, 1}, {4, 8, 30, 4}, {1, 13, 21, 3}, {3, 17, 17, 6},
};

typedef struct bc_result {
    long compared;       /* logits rows compared */
    long exact;          /* ... equal to the solo run bit for bit */
    double worst;        /* worst row NMSE */
    int multi_steps;     /* steps with more than one sequence */
    int mixed_steps;     /* ... holding a prompt chunk and a one-token item together */
    long allocs;         /* allocations counted during the batched steps (-1: not counted) */
    int in_place;        /* items that took their logits in place (zn_step_item.logits_at, not a copy) */
    /* with bc_hooks.keep: every logits row the batched steps returned,
     * [BC_SEQS][BC_MAX_LEN][n_vocab] (rows where have[q][i]); the caller
     * frees got */
    float *got;
    bool have[BC_SEQS][BC_MAX_LEN];
} bc_result;

static inline int32_t bc_token(int seq, int i, int n_vocab) {
    return (int32_t)(((uint32_t)seq * 2654435761u + (uint32_t)i * 40503u + 17u) % (uint32_t)n_vocab);
}

static inline double bc_nmse(const float *a, const float *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

/* Optional allocation counter around the batched loop (the CPU test sets
 * it; NULL: not counted). */
typedef struct bc_hooks {
    void (*count_start)(void);
    long (*count_stop)(void);
    bool keep;           /* keep the batched logits in bc_result.got (to compare engines) */
} bc_hooks;

/* Runs the plan on engine e (sequences of context BC_MAX_LEN); fills r.
 * Returns 0 when something failed (already reported). */
static inline int bc_run(zn_engine *e, const bc_hooks *hooks, bc_result *r) {
    const int V = e->model->hp.n_vocab;
    zn_err err = {0};
    memset(r, 0, sizeof *r);
    r->allocs = -1;
    int ok = 1;
    int32_t tok[BC_SEQS][BC_MAX_LEN];
    float *solo = malloc(sizeof *solo * (size_t)BC_SEQS * BC_MAX_LEN * V);
    float *got = malloc(sizeof *got * (size_t)BC_SEQS * BC_MAX_LEN * V);
    bool (*have)[BC_MAX_LEN] = r->have;
    zn_seq slots[BC_SLOTS];
    memset(slots, 0, sizeof slots);
    ok = solo && got;
    for (int i = 0; ok && i < BC_SLOTS; i++) ok = seq_init(&slots[i], e, BC_MAX_LEN, &err) == ZN_OK;
    /* alone: every position of each sequence, one engine_decode */
    for (int q = 0; ok && q < BC_SEQS; q++) {
        for (int i = 0; i < bc_plan[q].len; i++) tok[q][i] = bc_token(q, i, V);
        seq_reset(&slots[0]);
        ok = engine_decode(e, &slots[0], tok[q], bc_plan[q].len, solo + (size_t)q * BC_MAX_LEN * V, true, &err) == ZN_OK;
    }
    for (int i = 0; ok && i < BC_SLOTS; i++) seq_reset(&slots[i]);
    CHECK_MSG(ok, "alone: %s", err.msg);
    /* batched */
    static const int chunk[8] = {7, 12, 3, 1, 9, 2, 5, 11};
    int done[BC_SEQS] = {0}, owner[BC_SLOTS];
    for (int i = 0; i < BC_SLOTS; i++) owner[i] = -1;
    zn_step_item items[BC_SEQS];
    const float *at[BC_SEQS];
    int item_seq[BC_SEQS];
    if (ok && hooks && hooks->count_start) hooks->count_start();
    for (int k = 0; ok && k < 200; k++) {
        /* sequences leave (their slot is then free) and join */
        for (int q = 0; q < BC_SEQS; q++) {
            const int s = bc_plan[q].slot;
            if (owner[s] == q && done[q] == bc_plan[q].len) {
                owner[s] = -1;
                seq_reset(&slots[s]);
            }
        }
        for (int q = 0; q < BC_SEQS; q++) {
            const int s = bc_plan[q].slot;
            if (owner[s] < 0 && done[q] == 0 && k >= bc_plan[q].join) {
                bool first = true; /* slots take their sequences in plan order */
                for (int p = 0; p < q; p++)
                    if (bc_plan[p].slot == s && done[p] < bc_plan[p].len) first = false;
                if (first) owner[s] = q;
            }
        }
        int n = 0, budget = BC_BUDGET, n_one = 0, n_chunk = 0;
        for (int s = 0; s < BC_SLOTS; s++) {
            const int q = owner[s];
            if (q < 0 || done[q] == bc_plan[q].len) continue;
            int c = done[q] < bc_plan[q].prompt ? chunk[(k * 3 + q) % 8] : 1;
            if (done[q] < bc_plan[q].prompt && c > bc_plan[q].prompt - done[q]) c = bc_plan[q].prompt - done[q];
            if (c > budget) continue; /* waits for a step with room */
            budget -= c;
            const int mode = c == 1 ? 1 : (k + q) % 3; /* all rows, the last one, none; decode: its one row */
            items[n] = (zn_step_item){.seq = &slots[s], .tokens = tok[q] + done[q], .n = c,
                                      .logits = mode == 2 && c > 1 ? NULL : got + ((size_t)q * BC_MAX_LEN + done[q]) * V,
                                      .all_logits = mode == 0};
            if (items[n].logits && !items[n].all_logits) items[n].logits += (size_t)(c - 1) * V;
            at[n] = NULL;
            if ((k + q) % 2) items[n].logits_at = &at[n];
            item_seq[n++] = q;
            n_one += c == 1;
            n_chunk += c > 1;
        }
        if (n == 0) {
            bool all_done = true;
            for (int q = 0; q < BC_SEQS; q++) all_done = all_done && done[q] == bc_plan[q].len;
            if (all_done) break;
            continue;
        }
        r->multi_steps += n > 1;
        r->mixed_steps += n_one > 0 && n_chunk > 0;
        ok = engine_step(e, items, n, &err) == ZN_OK;
        CHECK_MSG(ok, "step %d: %s", k, err.msg);
        for (int i = 0; ok && i < n; i++) {
            const int q = item_seq[i];
            if (items[i].logits && items[i].logits_at) { /* where they are, or the copy in logits */
                CHECK_MSG(at[i] != NULL, "step %d: no logits_at", k);
                if (at[i] && at[i] != items[i].logits) {
                    memcpy(items[i].logits, at[i], sizeof *at[i] * (size_t)V * (items[i].all_logits ? items[i].n : 1));
                    r->in_place++;
                }
            }
            for (int j = 0; items[i].logits && j < items[i].n; j++)
                if (items[i].all_logits || j == items[i].n - 1) have[q][done[q] + j] = true;
            done[q] += items[i].n;
            CHECK_EQ_INT(items[i].seq->n_past, done[q]);
        }
    }
    if (hooks && hooks->count_stop) r->allocs = hooks->count_stop();
    for (int q = 0; ok && q < BC_SEQS; q++) {
        CHECK_MSG(done[q] == bc_plan[q].len, "sequence %d: %d of %d tokens", q, done[q], bc_plan[q].len);
        for (int i = 0; i < bc_plan[q].len; i++) {
            if (!have[q][i]) continue;
            const float *a = got + ((size_t)q * BC_MAX_LEN + i) * V, *b = solo + ((size_t)q * BC_MAX_LEN + i) * V;
            const double d = bc_nmse(a, b, V);
            r->worst = d > r->worst ? d : r->worst;
            r->compared++;
            r->exact += !memcmp(a, b, sizeof *a * (size_t)V);
        }
    }
    for (int i = 0; i < BC_SLOTS; i++) seq_free(&slots[i]);
    free(solo);
    if (ok && hooks && hooks->keep) r->got = got;
    else free(got);
    return ok;
}

/* engine_mem on backend eo of the hybrid fixture path (KV caches and
 * recurrent states): no sequence at first; three sequences (contexts 64,
 * 64, 128) counted with their bytes; a context twice as long adds exactly
 * its KV rows (f16: 2 bytes a value, K and V of every attention layer; the
 * CPU holds exactly that plus the recurrent states); freeing gives the
 * bytes back. */
static inline void bc_check_memory(const char *path, const zn_engine_opts *eo) {
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    zn_engine e;
    if (engine_init(&e, &m, eo, &err) != ZN_OK) {
        CHECK_MSG(0, "%s (%s): %s", path, eo->backend, err.msg);
        model_free(&m);
        return;
    }
    const zn_hparams *hp = &m.hp;
    const int n_attn = model_n_attn_layers(&m), n_recr = hp->n_layer - n_attn;
    const uint64_t row = 2ull * (uint64_t)hp->n_head_kv * (uint64_t)(hp->head_dim_k + hp->head_dim_v);
    const uint64_t recr = 4ull * ((2ull * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner) * (uint64_t)(hp->ssm_d_conv - 1) +
                                  (uint64_t)hp->ssm_d_inner * (uint64_t)hp->ssm_d_state);
    CHECK(n_attn > 0 && n_recr > 0);
    zn_backend_mem m0 = engine_mem(&e);
    CHECK_MSG(m0.weights > 0 && m0.scratch > 0 && m0.seqs == 0 && m0.n_seqs == 0, "%s: before any sequence: weights %llu, "
              "scratch %llu, %d sequences of %llu", eo->backend, (unsigned long long)m0.weights,
              (unsigned long long)m0.scratch, m0.n_seqs, (unsigned long long)m0.seqs);
    zn_seq a, b, c;
    CHECK(seq_init(&a, &e, 64, &err) == ZN_OK);
    const zn_backend_mem m1 = engine_mem(&e);
    CHECK(seq_init(&b, &e, 64, &err) == ZN_OK);
    CHECK(seq_init(&c, &e, 128, &err) == ZN_OK);
    const zn_backend_mem m3 = engine_mem(&e);
    const uint64_t one = m1.seqs, longer = m3.seqs - 2 * one;
    CHECK_EQ_INT(m1.n_seqs, 1);
    CHECK_EQ_INT(m3.n_seqs, 3);
    CHECK_MSG(one >= 64 * n_attn * row + n_recr * recr, "%s: a 64-token sequence holds %llu bytes, less than its "
              "caches and states (%llu)", eo->backend, (unsigned long long)one,
              (unsigned long long)(64 * n_attn * row + n_recr * recr));
    if (!strcmp(eo->backend, "cpu")) CHECK(one == 64 * n_attn * row + n_recr * recr);
    CHECK_MSG(longer - one == 64 * n_attn * row, "%s: 64 more positions hold %lld bytes more, not %llu", eo->backend,
              (long long)(longer - one), (unsigned long long)(64 * n_attn * row));
    CHECK(m3.weights == m0.weights);
    seq_free(&b);
    const zn_backend_mem m2 = engine_mem(&e);
    CHECK(m2.n_seqs == 2 && m2.seqs == m3.seqs - one);
    seq_free(&a);
    seq_free(&c);
    const zn_backend_mem mz = engine_mem(&e);
    CHECK(mz.n_seqs == 0 && mz.seqs == 0);
    engine_free(&e);
    model_free(&m);
}

#endif
