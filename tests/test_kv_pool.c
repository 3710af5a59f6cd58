/* The paged KV cache (backend.h): sequences of one shared pool, whose
 * blocks are handed out as they grow and so are not adjacent, give the same
 * logits bit for bit as sequences with blocks of their own, in batched steps
 * of prefill chunks and decode tokens, across block boundaries, after being
 * cut back and grown again, and forked (seq_copy). A pool without free
 * blocks fails a step with ZN_ERR_KV_FULL before anything runs; cutting
 * back, resetting and freeing sequences gives the blocks back. A copy
 * shares the source's whole blocks (only the partial last one takes a
 * free block), and a sequence about to write a shared block gets a copy
 * of its own first: neither the donor nor the borrower, cut back into a
 * shared block and grown with other tokens, changes what the other
 * computes, bit for bit. On the CPU and (when there is a device) the
 * Vulkan backend. */
#include <string.h>

#include "engine.h"
#include "harness.h"
#include "limits.h"
#include "model.h"
#include "vk_absent.h"

#define N_CTX 900
#define N_TOK 1200

static int32_t T[N_TOK];
static const char *backend = "cpu";
static const char *vk_tune; /* the Vulkan engines' tuning (NULL: the device's) */

static bool init_engine(zn_engine *e, const zn_model *m, int64_t pool, zn_kv_type kvt) {
    zn_err err = {0};
    zn_engine_opts o = engine_default_opts();
    o.backend = backend;
    o.be.n_threads = 2;
    o.be.kv_type = kvt;
    o.be.kv_pool_tokens = pool;
    if (!strcmp(backend, "vulkan")) o.be.tune = vk_tune;
    if (engine_init(e, m, &o, &err) == ZN_OK) return true;
    CHECK_MSG(0, "%s: %s", backend, err.msg);
    return false;
}

/* One step of both engines: sequence i of each takes n[i] tokens (0: none)
 * from T at its position; the logits of every item must be equal. */
static void step_both(zn_engine *e, zn_seq *a, zn_seq *b, const int *n, float *la, float *lb, int nv,
                      const char *what) {
    zn_step_item ia[2], ib[2];
    int k = 0;
    for (int i = 0; i < 2; i++) {
        if (!n[i]) continue;
        ia[k] = (zn_step_item){.seq = &a[i], .tokens = T + a[i].n_past, .n = n[i], .logits = la + (size_t)k * nv};
        ib[k] = (zn_step_item){.seq = &b[i], .tokens = T + b[i].n_past, .n = n[i], .logits = lb + (size_t)k * nv};
        k++;
    }
    zn_err err = {0};
    zn_status sa = engine_step(e, ia, k, &err);
    CHECK_MSG(sa == ZN_OK, "%s: %s", what, err.msg);
    zn_status sb = engine_step(e + 1, ib, k, &err);
    CHECK_MSG(sb == ZN_OK, "%s (pool): %s", what, err.msg);
    if (sa == ZN_OK && sb == ZN_OK)
        CHECK_MSG(!memcmp(la, lb, sizeof *la * (size_t)nv * (size_t)k), "%s %s: pooled logits differ", backend, what);
}

/* Loads fixture rel (under ../shared) and fills T, the token spread every case feeds. */
static bool load_fixture(zn_model *m, const char *rel) {
    zn_err err = {0};
    if (model_load(m, shared_path(rel), &err)) {
        CHECK_MSG(0, "%s: %s", rel, err.msg);
        return false;
    }
    for (int i = 0; i < N_TOK; i++) T[i] = (int32_t)(((int64_t)i * 7919 + 13) % m->hp.n_vocab);
    return true;
}

static void pool_matches_own(const char *rel, zn_kv_type kvt) {
    zn_model m;
    zn_err err = {0};
    if (!load_fixture(&m, rel)) return;
    const int nv = m.hp.n_vocab;
    zn_engine e[2];
    if (!init_engine(&e[0], &m, 0, kvt) || !init_engine(&e[1], &m, 6 * ZN_KV_BLOCK, kvt)) {
        model_free(&m);
        return;
    }
    const bool recurrent = engine_is_recurrent(&e[0]);
    zn_seq a[2], b[2], fa, fb; /* a: own blocks (e[0]), b: the pool's (e[1]) */
    float *la = malloc(sizeof(float) * 2 * (size_t)nv), *lb = malloc(sizeof(float) * 2 * (size_t)nv);
    for (int i = 0; i < 2; i++) {
        CHECK(seq_init(&a[i], &e[0], N_CTX, &err) == ZN_OK);
        CHECK(seq_init(&b[i], &e[1], N_CTX, &err) == ZN_OK);
    }
    CHECK(seq_init(&fa, &e[0], N_CTX, &err) == ZN_OK);
    CHECK(seq_init(&fb, &e[1], N_CTX, &err) == ZN_OK);
    CHECK_EQ_INT(engine_kv_free(&e[0]), -1);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 6 * ZN_KV_BLOCK);
    /* 0 takes pool blocks 0 and 1, 1 takes 2 and 3, then 0 grows into 4:
     * sequence 0's third block is not beside its second */
    step_both(e, a, b, (int[]){300, 0}, la, lb, nv, "prefill 0");
    step_both(e, a, b, (int[]){0, 300}, la, lb, nv, "prefill 1");
    step_both(e, a, b, (int[]){250, 1}, la, lb, nv, "chunk + decode");
    for (int t = 0; t < 12; t++) step_both(e, a, b, (int[]){1, 1}, la, lb, nv, "decode"); /* 0 crosses 512 */
    CHECK_EQ_INT(engine_kv_free(&e[1]), 1 * ZN_KV_BLOCK);
    if (!recurrent) {
        /* a fork of sequence 0's first 200 positions takes the last free
         * block, and runs on from there alike (n_past is the source's: cut back) */
        CHECK(seq_copy(&fa, &a[0], 200, &err) == ZN_OK && seq_copy(&fb, &b[0], 200, &err) == ZN_OK);
        CHECK_EQ_INT(engine_kv_free(&e[1]), 0);
        CHECK(seq_truncate(&fa, 200, &err) == ZN_OK && seq_truncate(&fb, 200, &err) == ZN_OK);
        CHECK(engine_decode(&e[0], &fa, T + 200, 4, la, false, &err) == ZN_OK);
        CHECK(engine_decode(&e[1], &fb, T + 200, 4, lb, false, &err) == ZN_OK);
        CHECK_MSG(!memcmp(la, lb, sizeof *la * (size_t)nv), "%s: the fork's logits differ", backend);
        seq_free(&fb);
        CHECK_EQ_INT(engine_kv_free(&e[1]), 1 * ZN_KV_BLOCK);
        /* cut back below a block boundary and grown again: 1 gives its
         * second block back and takes one again */
        CHECK(seq_truncate(&a[1], 100, &err) == ZN_OK && seq_truncate(&b[1], 100, &err) == ZN_OK);
        CHECK_EQ_INT(engine_kv_free(&e[1]), 2 * ZN_KV_BLOCK);
        step_both(e, a, b, (int[]){1, 400}, la, lb, nv, "regrow");
    }
    CHECK_EQ_INT(engine_kv_free(&e[1]), 1 * ZN_KV_BLOCK);
    seq_reset(&b[0]);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 4 * ZN_KV_BLOCK);
    const zn_backend_mem mem = engine_mem(&e[1]);
    CHECK_EQ_INT(mem.kv_blocks, 6);
    CHECK(mem.kv_pool > 0 && engine_mem(&e[0]).kv_pool == 0);
    for (int i = 0; i < 2; i++) seq_free(&a[i]), seq_free(&b[i]);
    seq_free(&fa);
    seq_free(&fb);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 6 * ZN_KV_BLOCK);
    free(la);
    free(lb);
    engine_free(&e[0]);
    engine_free(&e[1]);
    model_free(&m);
}

/* A pool of 3 blocks: what does not fit fails with ZN_ERR_KV_FULL and
 * changes no position; blocks given back make it fit. */
static void test_full(void) {
    zn_model m;
    zn_err err = {0};
    if (!load_fixture(&m, "models/tiny/qwen3-dense-q8_0.gguf")) return;
    zn_engine e;
    if (!init_engine(&e, &m, 3 * ZN_KV_BLOCK - 10, ZN_KV_F16)) { /* rounded up to 3 blocks */
        model_free(&m);
        return;
    }
    zn_seq a, b;
    CHECK(seq_init(&a, &e, N_CTX, &err) == ZN_OK && seq_init(&b, &e, N_CTX, &err) == ZN_OK);
    CHECK(engine_decode(&e, &a, T, 600, NULL, false, &err) == ZN_OK);
    CHECK_EQ_INT(engine_kv_free(&e), 0);
    CHECK_EQ_INT(engine_decode(&e, &b, T, 1, NULL, false, &err), ZN_ERR_KV_FULL);
    CHECK(strstr(err.msg, "KV pool full") != NULL);
    CHECK_EQ_INT(b.n_past, 0);
    /* a step is refused whole: a's token does not run either */
    zn_step_item it[2] = {{.seq = &a, .tokens = T + 600, .n = 1}, {.seq = &b, .tokens = T, .n = 1}};
    CHECK_EQ_INT(engine_step(&e, it, 2, &err), ZN_ERR_KV_FULL);
    CHECK_EQ_INT(a.n_past, 600);
    /* past a's last block: more than the pool holds */
    CHECK_EQ_INT(engine_decode(&e, &a, T + 600, 200, NULL, false, &err), ZN_ERR_KV_FULL);
    CHECK_EQ_INT(a.n_past, 600);
    CHECK(seq_truncate(&a, 300, &err) == ZN_OK);
    CHECK_EQ_INT(engine_kv_free(&e), ZN_KV_BLOCK);
    CHECK(engine_step(&e, it, 2, &err) == ZN_OK);
    CHECK_EQ_INT(a.n_past, 301);
    CHECK_EQ_INT(b.n_past, 1);
    CHECK_EQ_INT(engine_kv_free(&e), 0);
    seq_free(&a);
    CHECK_EQ_INT(engine_kv_free(&e), 2 * ZN_KV_BLOCK);
    seq_reset(&b);
    CHECK_EQ_INT(engine_kv_free(&e), 3 * ZN_KV_BLOCK);
    seq_free(&b);
    engine_free(&e);
    model_free(&m);
}

/* Decodes tok[n_past, n_past + n) (tok indexed by position) on s of the
 * pool's engine e[1] and on r of e[0] (no pool), whose steps so far were
 * the same (shapes too: a row's bits may depend on its step's size), and
 * compares the last logits. */
static void both(zn_engine *e, zn_seq *s, zn_seq *r, const int32_t *tok, int n, float *ls, float *lr, int nv,
                 const char *what) {
    zn_err err = {0};
    zn_status st = engine_decode(&e[0], r, tok + r->n_past, n, lr, false, &err);
    CHECK_MSG(st == ZN_OK, "%s %s (reference): %s", backend, what, err.msg);
    zn_status ss = engine_decode(&e[1], s, tok + s->n_past, n, ls, false, &err);
    CHECK_MSG(ss == ZN_OK, "%s %s: %s", backend, what, err.msg);
    if (st == ZN_OK && ss == ZN_OK)
        CHECK_MSG(!memcmp(ls, lr, sizeof *ls * (size_t)nv), "%s %s: logits differ", backend, what);
}

/* r computes T[0, 600) itself, then is cut back to n. */
static void ref_prefix(zn_engine *e, zn_seq *r, int n) {
    zn_err err = {0};
    seq_reset(r);
    CHECK_MSG(engine_decode(e, r, T, 600, NULL, false, &err) == ZN_OK, "%s: %s", backend, err.msg);
    CHECK(seq_truncate(r, n, &err) == ZN_OK);
}

static int64_t blocks_free(const zn_engine *e) { return engine_mem(e).kv_blocks_free; }

/* Copy-on-write sharing: e[1] has a pool of 8 blocks, e[0] none; each
 * sequence of the pool's has a twin there that computed what it holds
 * itself (no copy), step for step. U: other tokens than T. */
static void share_case(const char *rel, zn_kv_type kvt) {
    zn_model m;
    zn_err err = {0};
    if (!load_fixture(&m, rel)) return;
    const int nv = m.hp.n_vocab;
    static int32_t U[N_TOK];
    for (int i = 0; i < N_TOK; i++) U[i] = (int32_t)(((int64_t)i * 104729 + 7) % nv);
    zn_engine e[2];
    if (!init_engine(&e[0], &m, 0, kvt) || !init_engine(&e[1], &m, 8 * ZN_KV_BLOCK, kvt)) {
        model_free(&m);
        return;
    }
    float *ls = malloc(sizeof(float) * (size_t)nv), *lr = malloc(sizeof(float) * (size_t)nv);
    zn_seq d, b, c, rd, rb, rc; /* donor d, borrowers b and c; their twins */
    CHECK(seq_init(&d, &e[1], N_CTX, &err) == ZN_OK && seq_init(&b, &e[1], N_CTX, &err) == ZN_OK);
    CHECK(seq_init(&c, &e[1], N_CTX, &err) == ZN_OK && seq_init(&rd, &e[0], N_CTX, &err) == ZN_OK);
    CHECK(seq_init(&rb, &e[0], N_CTX, &err) == ZN_OK && seq_init(&rc, &e[0], N_CTX, &err) == ZN_OK);
    /* d: 600 positions, 2 whole blocks and a partial one; b shares the
     * whole ones and copies the partial one only */
    CHECK(engine_decode(&e[1], &d, T, 600, NULL, false, &err) == ZN_OK);
    ref_prefix(&e[0], &rd, 600);
    ref_prefix(&e[0], &rb, 600);
    CHECK_EQ_INT(blocks_free(&e[1]), 5);
    CHECK(seq_copy(&b, &d, 600, &err) == ZN_OK);
    CHECK_EQ_INT(blocks_free(&e[1]), 4);
    both(e, &b, &rb, U, 4, ls, lr, nv, "borrower after the copy");
    /* the donor, cut back into a shared block (300: block 1) and grown
     * with U, copies that block first (and lets its partial one go) */
    CHECK(seq_truncate(&d, 300, &err) == ZN_OK && seq_truncate(&rd, 300, &err) == ZN_OK);
    CHECK_EQ_INT(blocks_free(&e[1]), 5);
    both(e, &d, &rd, U, 100, ls, lr, nv, "donor regrown");
    CHECK_EQ_INT(blocks_free(&e[1]), 4);
    /* b still reads T's rows 256..599 of its block 1 */
    both(e, &b, &rb, U, 1, ls, lr, nv, "borrower after the donor's write");
    /* b, cut back into block 0 (still shared with d) and grown with U,
     * copies it; d is unaffected */
    CHECK(seq_truncate(&b, 200, &err) == ZN_OK && seq_truncate(&rb, 200, &err) == ZN_OK);
    CHECK_EQ_INT(blocks_free(&e[1]), 6);
    both(e, &b, &rb, U, 50, ls, lr, nv, "borrower regrown");
    CHECK_EQ_INT(blocks_free(&e[1]), 5);
    both(e, &d, &rd, U, 1, ls, lr, nv, "donor after the borrower's write");
    /* c borrows d's 401 positions (its twin computes them itself, as d
     * did), then d is freed: the block c shares stays */
    CHECK(seq_copy(&c, &d, 401, &err) == ZN_OK);
    CHECK_EQ_INT(blocks_free(&e[1]), 4);
    ref_prefix(&e[0], &rc, 300);
    CHECK(engine_decode(&e[0], &rc, U + 300, 100, NULL, false, &err) == ZN_OK);
    CHECK(engine_decode(&e[0], &rc, U + 400, 1, NULL, false, &err) == ZN_OK);
    seq_free(&d);
    CHECK_EQ_INT(blocks_free(&e[1]), 5);
    both(e, &c, &rc, U, 3, ls, lr, nv, "borrower of a freed donor");
    seq_free(&c);
    seq_reset(&b);
    CHECK_EQ_INT(blocks_free(&e[1]), 8);
    seq_free(&b);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 8 * ZN_KV_BLOCK);
    seq_free(&rd);
    seq_free(&rb);
    seq_free(&rc);
    free(ls);
    free(lr);
    engine_free(&e[0]);
    engine_free(&e[1]);
    model_free(&m);
}

/* A pool of 4 blocks, b sharing a's first two: a copy-on-write that finds
 * no free block refuses the step whole, changing no position and no
 * block; a block given back lets it run, alike. On Vulkan the decode step
 * that copies replays b's recorded one (one attention shape for every
 * position: tuning), its block table naming the copy. */
static void test_cow_full(void) {
    zn_model m;
    zn_err err = {0};
    if (!load_fixture(&m, "models/tiny/qwen3-dense-q8_0.gguf")) return;
    const int nv = m.hp.n_vocab;
    zn_engine e[2];
    vk_tune = "attn_chunk=4096,attn_dec_min=4096";
    const bool ok = init_engine(&e[0], &m, 0, ZN_KV_F16) && init_engine(&e[1], &m, 4 * ZN_KV_BLOCK, ZN_KV_F16);
    vk_tune = NULL;
    if (!ok) {
        model_free(&m);
        return;
    }
    float *ls = malloc(sizeof(float) * (size_t)nv), *lr = malloc(sizeof(float) * (size_t)nv);
    zn_seq r, a, b;
    CHECK(seq_init(&r, &e[0], N_CTX, &err) == ZN_OK && seq_init(&a, &e[1], N_CTX, &err) == ZN_OK);
    CHECK(seq_init(&b, &e[1], N_CTX, &err) == ZN_OK);
    CHECK(engine_decode(&e[1], &a, T, 600, NULL, false, &err) == ZN_OK);
    CHECK(seq_copy(&b, &a, 512, &err) == ZN_OK); /* whole blocks only: nothing taken */
    CHECK(seq_truncate(&b, 512, &err) == ZN_OK);   /* n_past was a's */
    CHECK_EQ_INT(engine_kv_free(&e[1]), ZN_KV_BLOCK);
    ref_prefix(&e[0], &r, 512);
    both(e, &b, &r, T, 1, ls, lr, nv, "a decode step past the shared blocks");
    CHECK(seq_truncate(&b, 510, &err) == ZN_OK); /* into block 1, shared */
    CHECK(engine_decode(&e[1], &a, T + 600, 200, NULL, false, &err) == ZN_OK); /* a takes the last block */
    CHECK_EQ_INT(engine_kv_free(&e[1]), 0);
    CHECK_EQ_INT(engine_decode(&e[1], &b, T + 510, 1, NULL, false, &err), ZN_ERR_KV_FULL);
    CHECK(strstr(err.msg, "KV pool full") != NULL);
    CHECK_EQ_INT(b.n_past, 510);
    /* a's token needs no block, b's a copy: neither runs */
    zn_step_item it[2] = {{.seq = &a, .tokens = T + 800, .n = 1}, {.seq = &b, .tokens = T + 510, .n = 1}};
    CHECK_EQ_INT(engine_step(&e[1], it, 2, &err), ZN_ERR_KV_FULL);
    CHECK_EQ_INT(a.n_past, 800);
    CHECK_EQ_INT(b.n_past, 510);
    /* a's fourth block back: one free, but b's 300 more tokens want a
     * copy of block 1 (still shared) and two new blocks */
    CHECK(seq_truncate(&a, 700, &err) == ZN_OK);
    CHECK_EQ_INT(engine_kv_free(&e[1]), ZN_KV_BLOCK);
    CHECK_EQ_INT(engine_decode(&e[1], &b, T + 510, 300, NULL, false, &err), ZN_ERR_KV_FULL);
    CHECK_EQ_INT(b.n_past, 510);
    CHECK_EQ_INT(engine_kv_free(&e[1]), ZN_KV_BLOCK);
    ref_prefix(&e[0], &r, 510);
    zn_backend_stats s0 = {0}, s1 = {0};
    if (e[1].be->stats) e[1].be->stats(e[1].be_ctx, &s0);
    both(e, &b, &r, T, 1, ls, lr, nv, "after the copy-on-write");
    if (e[1].be->stats) e[1].be->stats(e[1].be_ctx, &s1);
    if (!strcmp(backend, "vulkan")) CHECK_EQ_INT(s1.replayed - s0.replayed, 1);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 0);
    /* block 1 is a's alone now: a writes it in place */
    CHECK(seq_truncate(&a, 500, &err) == ZN_OK);
    CHECK_EQ_INT(engine_kv_free(&e[1]), ZN_KV_BLOCK);
    ref_prefix(&e[0], &r, 500);
    both(e, &a, &r, T, 1, ls, lr, nv, "the donor after the copy-on-write");
    CHECK_EQ_INT(engine_kv_free(&e[1]), ZN_KV_BLOCK);
    seq_free(&a);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 2 * ZN_KV_BLOCK);
    seq_free(&b);
    CHECK_EQ_INT(engine_kv_free(&e[1]), 4 * ZN_KV_BLOCK);
    seq_free(&r);
    free(ls);
    free(lr);
    engine_free(&e[0]);
    engine_free(&e[1]);
    model_free(&m);
}

static void test_share_f16(void) { share_case("models/tiny/qwen3-dense-q8_0.gguf", ZN_KV_F16); }
static void test_share_q8(void) { share_case("models/tiny/llama-dense-q4_k_m.gguf", ZN_KV_Q8_0); }

static void test_dense_f16(void) { pool_matches_own("models/tiny/qwen3-dense-q8_0.gguf", ZN_KV_F16); }
static void test_dense_q8(void) { pool_matches_own("models/tiny/llama-dense-q4_k_m.gguf", ZN_KV_Q8_0); }
static void test_hybrid_q4(void) { pool_matches_own("models/tiny/qwen35-dense-q4_k_m.gguf", ZN_KV_Q4_0); }
static void test_hybrid_q4r(void) { pool_matches_own("models/tiny/qwen35-dense-q4_k_m.gguf", ZN_KV_Q4_0R); }
static void test_dense_q3r(void) { pool_matches_own("models/tiny/llama-dense-q4_k_m.gguf", ZN_KV_Q3_0R); }
static void test_moe(void) { pool_matches_own("models/tiny/qwen35moe-moe-q4_k_m.gguf", ZN_KV_F16); }

int main(void) {
    RUN(test_dense_f16);
    RUN(test_dense_q8);
    RUN(test_hybrid_q4);
    RUN(test_hybrid_q4r);
    RUN(test_dense_q3r);
    RUN(test_moe);
    RUN(test_full);
    RUN(test_share_f16);
    RUN(test_share_q8);
    RUN(test_cow_full);
    backend = "vulkan";
    char why[ZN_ERR_MSG_MAX + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("kv_pool (vulkan)", why);
        return harness_report("kv_pool");
    }
    RUN(test_dense_f16);
    RUN(test_dense_q8);
    RUN(test_hybrid_q4);
    RUN(test_hybrid_q4r);
    RUN(test_dense_q3r);
    RUN(test_moe);
    RUN(test_full);
    RUN(test_share_f16);
    RUN(test_share_q8);
    RUN(test_cow_full);
    return harness_report("kv_pool");
}
