/* The Vulkan backend's shared KV pool (backend.h zn_kv_layout,
 * zn_backend_opts.kv_pool_tokens): one schedule of engine steps on two
 * engines of one model, one with a pool of KP_BLOCKS blocks shared by
 * three sequences of KP_CTX positions (more than the pool holds), one
 * without (every sequence its own blocks). Two sequences grow in turns, so
 * their blocks alternate in the pool (one holds blocks 0, 2 and 3, the
 * other 1 and 4: a kernel reading past a block without the table reads
 * the other sequence's rows), prompt chunks and decode tokens mixed in
 * steps, batched and replayed decode steps, one of them crossing into a
 * new block; a fork (seq_copy: whole blocks shared, the partial one
 * copied; the batched decode steps after it read the shared block from
 * both sequences), a cut (seq_trim), resets
 * and frees giving blocks back. Every logits row must be bit for bit the
 * engine without a pool's: the arithmetic is the same, only the addresses
 * differ. On the pool engine only: requests the pool cannot serve (a
 * fork, steps of two sequences, one with a long prompt) fail with ZN_ERR_KV_FULL
 * and change no position; kv_blocks_free (engine_mem) after every
 * operation. Dense and hybrid (recurrent layers: reset rather than cut),
 * f16, Q8_0 and Q4_0 caches, the pool over several device allocations,
 * decode attention split or batched, prefill on the emulated matrix-
 * product kernel. A few seconds per case on lavapipe. No Vulkan device:
 * the suite is skipped. */
#include "harness.h"

#include "batch_check.h"
#include "limits.h"
#include "vk_absent.h"

#define KP_BLOCKS 6
#define KP_CTX 1024
#define KP_SEQS 3
#define KP_FORK 2      /* s2 is a fork of s1 */
#define KP_FORK_AT 259 /* at s1's position then */

typedef enum { OP_STEP, OP_FORK, OP_TRUNC, OP_RESET, OP_FREE } kp_kind;

/* One operation of the schedule: a step (items q:n), a fork of b into a,
 * a cut of a to n, a reset or free of a. pool_only: a request the pool
 * cannot serve (ZN_ERR_KV_FULL, nothing changes), not run without one.
 * dense / hybrid: only for models without / with recurrent layers. free:
 * the pool's free blocks after it. replayed: the step must resubmit the
 * previous step's recording (checked where the case says). */
typedef struct kp_op {
    kp_kind kind;
    int n_items, q[KP_SEQS], n[KP_SEQS];
    int a, b;
    bool pool_only;
    int only; /* 0: every model, 1: dense, 2: hybrid */
    int free;
    bool replayed;
} kp_op;

#define STEP2(q0, n0, q1, n1, f) {.kind = OP_STEP, .n_items = 2, .q = {q0, q1}, .n = {n0, n1}, .free = f}
static const kp_op kp_plan[] = {
    STEP2(0, 200, 1, 60, 4),
    STEP2(0, 100, 1, 1, 3),   /* s0 at 300: its second block */
    STEP2(1, 193, 0, 1, 3),   /* s1 at 254 */
    STEP2(0, 230, 1, 1, 2),   /* s0 at 531: its third block; s1 at 255 */
    STEP2(0, 1, 1, 1, 2),     /* decode steps: s1 writes position 255 */
    {.kind = OP_STEP, .n_items = 2, .q = {0, 1}, .n = {1, 1}, .free = 1, .replayed = true}, /* s1's second block */
    STEP2(0, 1, 1, 1, 1),
    STEP2(0, 1, 1, 1, 1),     /* s0 at 535, s1 at 259 */
    {.kind = OP_STEP, .n_items = 2, .q = {1, 0}, .n = {260, 250}, .pool_only = true, .free = 0}, /* s1 takes the last */
    {.kind = OP_FORK, .a = 2, .b = 1, .pool_only = true, .free = 0},       /* a block for the partial one, none free */
    {.kind = OP_TRUNC, .a = 0, .b = 200, .only = 1, .free = 2},            /* s0 back to one block */
    {.kind = OP_RESET, .a = 0, .only = 2, .free = 3},
    {.kind = OP_STEP, .n_items = 1, .q = {0}, .n = {40}, .only = 2, .free = 2},
    {.kind = OP_FORK, .a = 2, .b = 1, .free = 1},                          /* s2: s1's 259 positions, block 0 shared */
    {.kind = OP_STEP, .n_items = 3, .q = {0, 1, 2}, .n = {1, 1, 1}, .free = 1},
    {.kind = OP_STEP, .n_items = 3, .q = {0, 1, 2}, .n = {1, 1, 1}, .free = 1},
    {.kind = OP_STEP, .n_items = 3, .q = {0, 1, 2}, .n = {1, 1, 1}, .free = 1},
    /* s2 takes the last block, s0 (at 203 or 43) finds none */
    {.kind = OP_STEP, .n_items = 2, .q = {2, 0}, .n = {298, 214}, .pool_only = true, .free = 0},
    {.kind = OP_RESET, .a = 1, .free = 2},                                 /* s1's blocks but the shared one back */
    STEP2(2, 300, 0, 1, 2),   /* s2 at 562: its third block */
    {.kind = OP_FREE, .a = 2, .free = 5},                                  /* the shared block too, s2 its last holder */
    {.kind = OP_FREE, .a = 0, .free = 6},
};
#define KP_OPS (int)(sizeof kp_plan / sizeof *kp_plan)

/* Sequence q's token at position i: s2 is s1 up to the fork. */
static int32_t kp_token(int q, int i, int V) {
    return bc_token(q == KP_FORK && i < KP_FORK_AT ? 1 : q, i, V);
}

/* The plan on e (pool: with the pool's checks and its pool_only
 * operations); the logits of op k's item j into got[k][j]. */
typedef struct kp_run {
    float *got;         /* [KP_OPS][KP_SEQS][V] */
    bool have[KP_OPS][KP_SEQS];
    uint64_t replayed;  /* decode steps resubmitted */
} kp_run;

static bool kp_schedule(zn_engine *e, bool pool, zn_kv_type kvt, bool check_replay, const char *what, kp_run *r) {
    const zn_model *m = e->model;
    const int V = m->hp.n_vocab, kind = engine_is_recurrent(e) ? 2 : 1;
    static int32_t tok[KP_SEQS][KP_CTX];
    zn_seq s[KP_SEQS];
    bool live[KP_SEQS] = {false};
    zn_err err = {0};
    bool ok = true;
    for (int q = 0; q < KP_SEQS; q++)
        for (int i = 0; i < KP_CTX; i++) tok[q][i] = kp_token(q, i, V);
    for (int q = 0; ok && q < KP_SEQS; q++) {
        ok = seq_init(&s[q], e, KP_CTX, &err) == ZN_OK;
        live[q] = ok;
        CHECK_MSG(ok, "%s: %s", what, err.msg);
    }
    if (ok && pool) {
        const zn_backend_mem mem = engine_mem(e);
        const zn_kv_layout l = backend_kv_layout(m, kvt);
        CHECK_MSG(mem.kv_blocks == KP_BLOCKS && mem.kv_blocks_free == KP_BLOCKS, "%s: a pool of %lld blocks, %lld free",
                  what, (long long)mem.kv_blocks, (long long)mem.kv_blocks_free);
        CHECK_MSG(mem.kv_pool >= KP_BLOCKS * l.block_bytes && mem.kv_pool < (KP_BLOCKS + 1) * l.block_bytes,
                  "%s: a pool of %llu bytes for %d blocks of %zu", what, (unsigned long long)mem.kv_pool, KP_BLOCKS,
                  l.block_bytes);
        CHECK_EQ_INT(engine_kv_free(e), KP_BLOCKS * ZN_KV_BLOCK);
    } else if (ok) {
        const zn_backend_mem mem = engine_mem(e);
        CHECK_MSG(mem.kv_pool == 0 && mem.kv_blocks == 0 && engine_kv_free(e) == -1 && mem.seqs > 0,
                  "%s: no pool, but %llu bytes, %lld blocks, %lld positions free", what,
                  (unsigned long long)mem.kv_pool, (long long)mem.kv_blocks, (long long)engine_kv_free(e));
    }
    for (int k = 0; ok && k < KP_OPS; k++) {
        const kp_op *op = &kp_plan[k];
        if ((op->pool_only && !pool) || (op->only && op->only != kind)) continue;
        int past[KP_SEQS];
        for (int q = 0; q < KP_SEQS; q++) past[q] = s[q].n_past;
        zn_backend_stats s0 = {0}, s1 = {0};
        e->be->stats(e->be_ctx, &s0);
        zn_status st = ZN_OK;
        err.msg[0] = 0;
        switch (op->kind) {
        case OP_STEP: {
            zn_step_item items[KP_SEQS];
            for (int j = 0; j < op->n_items; j++) {
                const int q = op->q[j];
                items[j] = (zn_step_item){.seq = &s[q], .tokens = tok[q] + s[q].n_past, .n = op->n[j],
                                          .logits = r->got + ((size_t)k * KP_SEQS + (size_t)q) * (size_t)V};
            }
            st = engine_step(e, items, op->n_items, &err);
            for (int j = 0; st == ZN_OK && j < op->n_items; j++) r->have[k][op->q[j]] = true;
            break;
        }
        case OP_FORK:
            CHECK_EQ_INT(s[op->b].n_past, KP_FORK_AT);
            st = seq_copy(&s[op->a], &s[op->b], s[op->b].n_past, &err);
            break;
        case OP_TRUNC: st = seq_truncate(&s[op->a], op->b, &err); break;
        case OP_RESET: seq_reset(&s[op->a]); break;
        case OP_FREE:
            seq_free(&s[op->a]);
            live[op->a] = false;
            break;
        }
        e->be->stats(e->be_ctx, &s1);
        r->replayed += s1.replayed - s0.replayed;
        if (op->pool_only) {
            CHECK_MSG(st == ZN_ERR_KV_FULL && strstr(err.msg, "KV pool full"), "%s: op %d: status %d (%s), not KV full",
                      what, k, (int)st, err.msg);
            for (int q = 0; q < KP_SEQS; q++)
                CHECK_MSG(!live[q] || s[q].n_past == past[q], "%s: op %d: sequence %d moved from %d to %d", what, k, q,
                          past[q], s[q].n_past);
        } else {
            ok = st == ZN_OK;
            CHECK_MSG(ok, "%s: op %d: %s", what, k, err.msg);
        }
        if (pool) {
            const int64_t f = engine_mem(e).kv_blocks_free;
            CHECK_MSG(f == op->free, "%s: op %d: %lld blocks free, want %d", what, k, (long long)f, op->free);
        }
        if (check_replay && op->replayed)
            CHECK_MSG(s1.replayed - s0.replayed == 1, "%s: op %d (a new block) not replayed", what, k);
    }
    for (int q = 0; q < KP_SEQS; q++)
        if (live[q]) seq_free(&s[q]);
    if (pool && ok) CHECK_EQ_INT(engine_mem(e).kv_blocks_free, KP_BLOCKS);
    return ok;
}

/* The plan on `name` with options o, with and without a pool: every row
 * equal. */
static void check_pool(const char *name, zn_backend_opts o, bool check_replay, const char *what) {
    char path[1024], label[256];
    snprintf(path, sizeof path, "%s/%s.gguf", shared_path("models/tiny"), name);
    snprintf(label, sizeof label, "%s%s", name, what);
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    const int V = m.hp.n_vocab;
    const size_t rows = (size_t)KP_OPS * KP_SEQS * (size_t)V;
    kp_run r[2]; /* [0] pool, [1] none */
    memset(r, 0, sizeof r);
    bool ok = true;
    for (int i = 0; ok && i < 2; i++) {
        zn_engine e;
        zn_engine_opts eo = {.backend = "vulkan", .be = o};
        eo.be.n_threads = 2;
        eo.be.kv_pool_tokens = i == 0 ? KP_BLOCKS * ZN_KV_BLOCK - 100 : 0; /* rounded up to whole blocks */
        r[i].got = calloc(rows, sizeof(float));
        ok = r[i].got && engine_init(&e, &m, &eo, &err) == ZN_OK;
        CHECK_MSG(ok, "%s: %s", label, err.msg);
        if (!ok) break;
        ok = kp_schedule(&e, i == 0, o.kv_type, check_replay, label, &r[i]);
        engine_free(&e);
    }
    if (ok) {
        int compared = 0, differ = 0, first = -1;
        for (int k = 0; k < KP_OPS; k++)
            for (int q = 0; q < KP_SEQS; q++) {
                if (r[0].have[k][q] != r[1].have[k][q]) differ++;
                if (!r[0].have[k][q] || !r[1].have[k][q]) continue;
                const size_t off = ((size_t)k * KP_SEQS + (size_t)q) * (size_t)V;
                compared++;
                if (memcmp(r[0].got + off, r[1].got + off, sizeof(float) * (size_t)V)) {
                    if (first < 0) first = k;
                    differ++;
                }
            }
        CHECK_MSG(compared >= 25 && differ == 0, "%s: %d of %d rows differ from the engine without a pool (first at op %d)",
                  label, differ, compared, first);
        CHECK_MSG(r[0].replayed == r[1].replayed && r[0].replayed >= 3, "%s: %llu decode steps replayed with the pool, %llu without",
                  label, (unsigned long long)r[0].replayed, (unsigned long long)r[1].replayed);
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "  %-40s %d rows equal, %llu replayed\n", label, compared, (unsigned long long)r[0].replayed);
    }
    free(r[0].got);
    free(r[1].got);
    model_free(&m);
}

static void test_dense(void) {
    zn_backend_opts o = backend_default_opts();
    check_pool("llama-dense-q8_0", o, false, "");
    /* the pool in allocations of two blocks (the weights split the same way in both engines) */
    zn_model m;
    zn_err err = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/qwen3-dense-q4_k_m.gguf", shared_path("models/tiny"));
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    o.kv_type = ZN_KV_Q8_0;
    const uint64_t bb = backend_kv_layout(&m, o.kv_type).block_bytes;
    model_free(&m);
    o.max_alloc = 2 * bb > 200000 ? 2 * bb : 200000;
    CHECK_MSG(KP_BLOCKS * bb > 2 * o.max_alloc, "blocks of %llu bytes: the pool fits %llu-byte allocations",
              (unsigned long long)bb, (unsigned long long)o.max_alloc);
    check_pool("qwen3-dense-q4_k_m", o, false, " (q8_0 cache, small allocations)");
}

/* The hybrid: attention layers between recurrent ones (the pool's rows
 * hold the attention layers only). Decode batched and unsplit, attn_dec.comp
 * from the first key: every decode step of the same sequences replays,
 * also the one whose sequence takes a new block. */
static void test_hybrid(void) {
    zn_backend_opts o = backend_default_opts();
    o.tune = "attn_chunk=1024,attn_dec_min=0";
    check_pool("qwen35-dense-q4_k_m", o, true, " (batched decode)");
    o = backend_default_opts();
    o.kv_type = ZN_KV_Q4_0;
    check_pool("qwen35-dense-q8_0", o, false, " (q4_0 cache)");
}

/* Prefill attention on the emulated matrix-product kernel (attn_fa_cm.glsl),
 * its K/V tiles through the table. */
static void test_prefill_mm(void) {
    zn_backend_opts o = backend_default_opts();
    o.mm_emulate = true;
    check_pool("qwen3-dense-f32", o, false, " (emulated matrix products)");
}

/* A pool of one block (kv_pool_tokens 1, rounded up) through
 * engine_decode: a prompt past it is refused and moves nothing, a cut back
 * to 0 gives the block back; a negative pool size is an argument error. */
static void test_init(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/llama-dense-f32.gguf", shared_path("models/tiny"));
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    zn_engine e;
    zn_engine_opts eo = {.backend = "vulkan", .be = backend_default_opts()};
    eo.be.kv_pool_tokens = -1;
    CHECK(engine_init(&e, &m, &eo, &err) == ZN_ERR_ARG);
    eo.be.kv_pool_tokens = 1; /* one block */
    const bool up = engine_init(&e, &m, &eo, &err) == ZN_OK;
    CHECK_MSG(up, "%s", err.msg);
    if (up) {
        zn_seq s;
        CHECK(seq_init(&s, &e, 2 * ZN_KV_BLOCK, &err) == ZN_OK);
        int32_t t[ZN_KV_BLOCK + 1];
        for (int i = 0; i <= ZN_KV_BLOCK; i++) t[i] = bc_token(0, i, m.hp.n_vocab);
        CHECK(engine_decode(&e, &s, t, 3, NULL, false, &err) == ZN_OK);
        CHECK_EQ_INT(engine_kv_free(&e), 0);
        CHECK(engine_decode(&e, &s, t, ZN_KV_BLOCK, NULL, false, &err) == ZN_ERR_KV_FULL);
        CHECK_EQ_INT(s.n_past, 3);
        CHECK(seq_truncate(&s, 0, &err) == ZN_OK);
        CHECK_EQ_INT(engine_kv_free(&e), ZN_KV_BLOCK);
        CHECK(engine_decode(&e, &s, t, ZN_KV_BLOCK, NULL, false, &err) == ZN_OK);
        CHECK_EQ_INT(engine_kv_free(&e), 0);
        seq_free(&s);
        CHECK_EQ_INT(engine_kv_free(&e), ZN_KV_BLOCK);
        engine_free(&e);
    }
    model_free(&m);
}

int main(void) {
    char why[sizeof(zn_err) + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("vk_kvpool", why);
        return harness_report("vk_kvpool");
    }
    RUN(test_init);
    RUN(test_dense);
    RUN(test_hybrid);
    RUN(test_prefill_mm);
    return harness_report("vk_kvpool");
}
