/* The backend's seq_copy (engine.h seq_copy): a recurrent-state checkpoint
 * and its restore, and a fork, on the CPU and Vulkan backends, for the
 * hybrid demo model (Gated DeltaNet + attention) and a dense model (KV
 * only). Returning to a checkpoint and evaluating the same tokens again must
 * give bit-identical logits to the first time (the same computation from the
 * same state), also after the sequence went elsewhere in between. No Vulkan
 * device: its half is skipped. */
#include <string.h>

#include "engine.h"
#include "harness.h"
#include "model.h"
#include "vk_absent.h"

#define N_CTX 64

static int32_t T[24], U[6];

static bool same(const float *a, const float *b, int n) { return !memcmp(a, b, sizeof *a * (size_t)n); }

static void one_model(const char *path, const char *backend, bool want_recurrent) {
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, path, &err)) {
        CHECK_MSG(0, "%s: %s", path, err.msg);
        return;
    }
    zn_engine e;
    zn_engine_opts o = engine_default_opts();
    o.backend = backend;
    o.be.n_threads = 2;
    if (engine_init(&e, &m, &o, &err)) {
        CHECK_MSG(0, "%s: %s", backend, err.msg);
        model_free(&m);
        return;
    }
    const int nv = m.hp.n_vocab;
    for (int i = 0; i < 24; i++) T[i] = (int32_t)((i * 7919 + 13) % nv);
    for (int i = 0; i < 6; i++) U[i] = (int32_t)((i * 104729 + 5) % nv);
    CHECK_EQ_INT(engine_is_recurrent(&e), want_recurrent);
    float *l1 = malloc(sizeof(float) * (size_t)nv), *l2 = malloc(sizeof(float) * (size_t)nv);
    float *l3 = malloc(sizeof(float) * (size_t)nv);
    zn_seq a, b, ck;
    CHECK(seq_init(&a, &e, N_CTX, &err) == ZN_OK);
    CHECK(seq_init(&b, &e, N_CTX, &err) == ZN_OK);
    CHECK(seq_init(&ck, &e, 1, &err) == ZN_OK);
    /* first time: 10 tokens, checkpoint, 14 more */
    CHECK(engine_decode(&e, &a, T, 10, NULL, false, &err) == ZN_OK);
    CHECK(seq_copy(&ck, &a, 0, &err) == ZN_OK);
    CHECK_EQ_INT(ck.n_past, 10);
    CHECK(engine_decode(&e, &a, T + 10, 14, l1, false, &err) == ZN_OK);
    /* go elsewhere from the checkpoint, then come back and redo the 14 */
    CHECK(seq_copy(&a, &ck, 0, &err) == ZN_OK);
    CHECK_EQ_INT(a.n_past, 10);
    CHECK(engine_decode(&e, &a, U, 6, l3, false, &err) == ZN_OK);
    CHECK(!same(l1, l3, nv));
    CHECK(seq_copy(&a, &ck, 0, &err) == ZN_OK);
    CHECK(engine_decode(&e, &a, T + 10, 14, l2, false, &err) == ZN_OK);
    CHECK_MSG(same(l1, l2, nv), "%s %s: restored checkpoint gives other logits", path, backend);
    /* a fork: b takes a's whole state and both continue alike */
    CHECK(seq_copy(&b, &a, a.n_past, &err) == ZN_OK);
    CHECK_EQ_INT(b.n_past, 24);
    CHECK(engine_decode(&e, &a, U, 3, l1, false, &err) == ZN_OK);
    CHECK(engine_decode(&e, &b, U, 3, l2, false, &err) == ZN_OK);
    CHECK_MSG(same(l1, l2, nv), "%s %s: fork differs", path, backend);
    /* without the copy the state matters: a fresh sequence fed only U differs */
    seq_reset(&b);
    CHECK(engine_decode(&e, &b, U, 3, l2, false, &err) == ZN_OK);
    CHECK(!same(l1, l2, nv));
    /* cutting back: only attention-only models can */
    zn_status st = seq_truncate(&a, 5, &err);
    CHECK_EQ_INT(st, want_recurrent ? ZN_ERR_ARG : ZN_OK);
    if (!want_recurrent) {
        /* a cut to 10 then the 14 again: the KV below 10 was kept */
        CHECK(engine_decode(&e, &a, T + 5, 5, NULL, false, &err) == ZN_OK);
        CHECK(engine_decode(&e, &a, T + 10, 14, l3, false, &err) == ZN_OK);
        seq_reset(&b);
        CHECK(engine_decode(&e, &b, T, 5, NULL, false, &err) == ZN_OK);
        CHECK(engine_decode(&e, &b, T + 5, 5, NULL, false, &err) == ZN_OK);
        CHECK(engine_decode(&e, &b, T + 10, 14, l2, false, &err) == ZN_OK);
        CHECK_MSG(same(l2, l3, nv), "%s %s: cut-back KV differs", path, backend);
    }
    /* bad arguments fail and change nothing */
    CHECK_EQ_INT(seq_copy(&ck, &a, 2, &err), ZN_ERR_ARG);  /* 2 positions into a 1-position context */
    CHECK_EQ_INT(seq_copy(&b, &a, a.n_past + 1, &err), ZN_ERR_ARG);
    seq_free(&a);
    seq_free(&b);
    seq_free(&ck);
    free(l1);
    free(l2);
    free(l3);
    engine_free(&e);
    model_free(&m);
}

static const char *backend = "cpu";

static void test_hybrid(void) { one_model("models/zinc-demo-qwen35.gguf", backend, true); }
static void test_dense(void) { one_model(shared_path("models/tiny/qwen3-dense-f32.gguf"), backend, false); }
static void test_hybrid_fixture(void) { one_model(shared_path("models/tiny/qwen35-dense-f32.gguf"), backend, true); }

int main(void) {
    RUN(test_hybrid);
    RUN(test_dense);
    RUN(test_hybrid_fixture);
    backend = "vulkan";
    char why[ZN_ERR_MSG_MAX + 32];
    if (vk_absent(why, sizeof why)) {
        harness_skip_suite("seq_copy (vulkan)", why);
        return harness_report("seq_copy");
    }
    RUN(test_hybrid);
    RUN(test_dense);
    RUN(test_hybrid_fixture);
    return harness_report("seq_copy");
}
