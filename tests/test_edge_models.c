/* Valid but unusual files and broken weights, run on the CPU and on Vulkan
 * (fixtures derived from ../shared at test time, tests/gguf_edit.h):
 *  - general.alignment 1 and 2 (valid GGUF; the tensors are misaligned in
 *    the map and get copied): the same logits, bit for bit, as the aligned
 *    original on each backend;
 *  - a NaN output_norm.weight: the logits come back non-finite and the
 *    sampler still picks an id in range and says it saw them;
 *  - Gated DeltaNet head sizes at the loader's limits (ZN_SSM_MIN/MAX_HEAD_DIM):
 *    both backends run them (the CPU once overflowed its stack beyond 512)
 *    and agree. */
#include <unistd.h>

#include "engine.h"
#include "gguf_edit.h"
#include "harness.h"
#include "sampler.h"

#define NTOK 8

static const char *tiny(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s.gguf", shared_path("models/tiny"), name);
    return buf;
}

static const char *const backends[2] = {"cpu", "vulkan"};
static bool no_vulkan;

/* The logits of NTOK prompt tokens (all positions) on a backend into out
 * [NTOK][n_vocab] (malloc'ed); n_vocab in *nv. false (with a message) on
 * failure. */
static bool run(const char *path, const char *backend, float **out, int *nv, char *msg, size_t cap) {
    zn_model m;
    zn_engine e = {0};
    zn_seq s = {0};
    zn_err err = {0};
    *out = NULL;
    zn_status st = model_load(&m, path, &err);
    if (st) {
        snprintf(msg, cap, "%s", err.msg);
        return false;
    }
    *nv = m.hp.n_vocab;
    int32_t toks[NTOK];
    for (int i = 0; i < NTOK; i++) toks[i] = (int32_t)((i * 37 + 5) % m.hp.n_vocab);
    *out = malloc(sizeof **out * (size_t)NTOK * (size_t)*nv);
    zn_engine_opts o = engine_default_opts();
    o.backend = backend;
    o.be.n_threads = 1;
    st = engine_init(&e, &m, &o, &err);
    if (!st) st = seq_init(&s, &e, 2 * NTOK, &err);
    if (!st) st = engine_decode(&e, &s, toks, NTOK, *out, true, &err);
    snprintf(msg, cap, "%s", err.msg);
    seq_free(&s);
    engine_free(&e);
    model_free(&m);
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st == ZN_OK;
}

static char *temp_path(void) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/zn_test_edge_XXXXXX");
    int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    return fd >= 0 ? path : NULL;
}

static bool write_edit(const char *src, const gedit *e, const char *dst) {
    zn_err err = {0};
    int rc = gedit_write(src, e, dst, &err);
    CHECK_MSG(rc == 0, "%s: %s", src, err.msg);
    return rc == 0;
}

static void alignment(int b) {
    const char *const fix[] = {"qwen3-dense-f32", "qwen35-dense-f32", "llama-dense-q4_k_m"};
    for (size_t f = 0; f < sizeof fix / sizeof fix[0]; f++) {
            float *want = NULL;
            int nv = 0;
            char msg[ZN_ERR_MSG_MAX];
            bool ok = run(tiny(fix[f]), backends[b], &want, &nv, msg, sizeof msg);
            CHECK_MSG(ok, "%s %s: %s", fix[f], backends[b], msg);
            for (uint32_t align = 1; ok && align <= 2; align++) {
                char *p = temp_path();
                if (!p || !write_edit(tiny(fix[f]), &(gedit){.align = align}, p)) continue;
                /* the file must really leave tensor data misaligned, or this tests nothing */
                gguf_ctx g;
                zn_err err = {0};
                int misaligned = 0;
                if (gguf_open(&g, p, &err) == ZN_OK) {
                    CHECK_EQ_INT(g.alignment, align);
                    for (uint64_t i = 0; i < g.n_tensors; i++) {
                        misaligned += (g.data_offset + g.tensors[i].offset) % 4 != 0;
                        CHECK_MSG((uintptr_t)g.tensors[i].data % ZN_GGUF_DATA_ALIGN == 0, "%s: %s", fix[f],
                                  g.tensors[i].name);
                    }
                    gguf_close(&g);
                }
                CHECK_MSG(misaligned > 0, "%s align %u: every tensor aligned anyway", fix[f], align);
                float *got = NULL;
                int nv2 = 0;
                bool ok2 = run(p, backends[b], &got, &nv2, msg, sizeof msg);
                CHECK_MSG(ok2, "%s align %u %s: %s", fix[f], align, backends[b], msg);
                if (ok2) CHECK_MSG(nv == nv2 && !memcmp(want, got, sizeof *want * NTOK * (size_t)nv),
                                   "%s align %u %s: logits differ from the aligned file", fix[f], align, backends[b]);
                free(got);
                unlink(p);
            }
            free(want);
        }
}

static void nan_weights(int b) {
    const char *const fix[] = {"qwen3-dense-f32", "qwen35-dense-f32"};
    for (size_t f = 0; f < 2; f++) {
        char *p = temp_path();
        if (!p || !write_edit(tiny(fix[f]), &(gedit){.fill = "output_norm.weight", .fill_value = NAN}, p)) continue;
        {
            float *l = NULL;
            int nv = 0;
            char msg[ZN_ERR_MSG_MAX];
            bool ok = run(p, backends[b], &l, &nv, msg, sizeof msg);
            CHECK_MSG(ok, "%s %s: %s", fix[f], backends[b], msg);
            if (!ok) continue;
            int bad = 0;
            for (size_t i = 0; i < (size_t)NTOK * nv; i++) bad += !isfinite(l[i]);
            CHECK_MSG(bad > 0, "%s %s: NaN weights gave finite logits", fix[f], backends[b]);
            zn_sampler s;
            zn_sampler_params sp = sampler_default_params();
            CHECK(sampler_init(&s, &sp, nv, NULL) == ZN_OK);
            for (int k = 0; k < 20; k++) {
                int32_t id = sampler_sample(&s, l + (size_t)(NTOK - 1) * nv);
                CHECK(id >= 0 && id < nv && s.nonfinite);
            }
            int32_t g = sampler_argmax(l + (size_t)(NTOK - 1) * nv, nv);
            CHECK(g >= 0 && g < nv);
            sampler_free(&s);
            free(l);
        }
        unlink(p);
    }
}

static double nmse(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

static void gdn_head_sizes(void) {
    const int64_t sizes[] = {ZN_SSM_MIN_HEAD_DIM, ZN_SSM_MAX_HEAD_DIM};
    for (size_t k = 0; k < 2; k++) {
        char *p = temp_path();
        gedit e = {0};
        CHECK(gedit_qwen35_ssm(&e, tiny("qwen35-dense-f32"), sizes[k], 0) == 1);
        if (!p || !write_edit(tiny("qwen35-dense-f32"), &e, p)) continue;
        float *l[2] = {NULL, NULL};
        int nv = 0;
        for (int b = 0; b < 2; b++) {
            char msg[ZN_ERR_MSG_MAX];
            bool ok = run(p, backends[b], &l[b], &nv, msg, sizeof msg);
            CHECK_MSG(ok, "state %lld %s: %s", (long long)sizes[k], backends[b], msg);
            int bad = 0;
            for (size_t i = 0; ok && i < (size_t)NTOK * nv; i++) bad += !isfinite(l[b][i]);
            CHECK_MSG(bad == 0, "state %lld %s: %d non-finite logits", (long long)sizes[k], backends[b], bad);
        }
        if (l[0] && l[1]) {
            double d = nmse(l[1], l[0], (size_t)NTOK * nv);
            CHECK_MSG(d < 1e-5, "state %lld: Vulkan vs CPU nmse %.3g", (long long)sizes[k], d);
        }
        free(l[0]);
        free(l[1]);
        unlink(p);
    }
}

static void test_alignment_cpu(void) { alignment(0); }
static void test_alignment_vulkan(void) {
    if (no_vulkan) SKIP("no Vulkan device");
    alignment(1);
}
static void test_nan_weights_cpu(void) { nan_weights(0); }
static void test_nan_weights_vulkan(void) {
    if (no_vulkan) SKIP("no Vulkan device");
    nan_weights(1);
}
static void test_gdn_head_sizes_both(void) {
    if (no_vulkan) SKIP("no Vulkan device (the point is that both backends run them)");
    gdn_head_sizes();
}

int main(void) {
    zn_model m;
    zn_engine e = {0};
    zn_err err = {0};
    if (model_load(&m, tiny("qwen3-dense-f32"), &err) == ZN_OK) {
        zn_engine_opts o = engine_default_opts();
        o.backend = "vulkan";
        o.be.n_threads = 1;
        no_vulkan = engine_init(&e, &m, &o, &err) == ZN_ERR_DEVICE;
        engine_free(&e);
        model_free(&m);
    }
    RUN(test_alignment_cpu);
    RUN(test_alignment_vulkan);
    RUN(test_nan_weights_cpu);
    RUN(test_nan_weights_vulkan);
    RUN(test_gdn_head_sizes_both);
    return harness_report("edge_models");
}
