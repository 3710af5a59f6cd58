/* Sampler: each stage against hand-computed cases, the draw against its
 * distribution (fixed seed, so the counts are deterministic), and seeds. */
#include <math.h>

#include "harness.h"
#include "sampler.h"

static zn_sampler_params plain(void) {
    zn_sampler_params p = sampler_default_params();
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    return p;
}

/* Draws n tokens and returns the frequency of each of the first 8 ids. */
static void histogram(zn_sampler *s, const float *logits, int n, double *freq) {
    int counts[8] = {0};
    for (int i = 0; i < n; i++) {
        int32_t t = sampler_sample(s, logits);
        if (t >= 0 && t < 8) counts[t]++;
    }
    for (int i = 0; i < 8; i++) freq[i] = (double)counts[i] / n;
}

static void test_argmax(void) {
    float l[5] = {0.1f, 3.0f, -2.0f, 3.0f, 1.0f};
    CHECK_EQ_INT(sampler_argmax(l, 5), 1);
    float m[3] = {-5.0f, -4.0f, -4.5f};
    CHECK_EQ_INT(sampler_argmax(m, 3), 1);
}

static void test_greedy_ignores_rng(void) {
    zn_sampler s;
    zn_sampler_params p = plain();
    p.temperature = 0.0f;
    CHECK(sampler_init(&s, &p, 4, NULL) == ZN_OK);
    float l[4] = {0.5f, 0.2f, 2.5f, 2.4f};
    for (int i = 0; i < 20; i++) CHECK_EQ_INT(sampler_sample(&s, l), 2);
    sampler_free(&s);
}

/* Penalties with top_k = 1 so the result shows which logit ended up largest. */
static int32_t pick_after(float rep, float freq, float pres, const int32_t *hist, int n_hist,
                          const float *l, int n) {
    zn_sampler s;
    zn_sampler_params p = plain();
    p.top_k = 1;
    p.repeat_penalty = rep;
    p.frequency_penalty = freq;
    p.presence_penalty = pres;
    p.penalty_last_n = 4;
    if (sampler_init(&s, &p, n, NULL) != ZN_OK) return -1;
    for (int i = 0; i < n_hist; i++) sampler_accept(&s, hist[i]);
    int32_t t = sampler_sample(&s, l);
    sampler_free(&s);
    return t;
}

static void test_penalties(void) {
    const float l[3] = {2.0f, 1.5f, -1.0f};
    const int32_t h0[1] = {0};
    /* repeat: 2.0 / 2 = 1.0 < 1.5 */
    CHECK_EQ_INT(pick_after(2.0f, 0, 0, h0, 1, l, 3), 1);
    CHECK_EQ_INT(pick_after(1.2f, 0, 0, h0, 1, l, 3), 0); /* 1.67 > 1.5 */
    /* presence: 2.0 - 0.6 = 1.4 < 1.5; 2.0 - 0.4 = 1.6 > 1.5 */
    CHECK_EQ_INT(pick_after(1.0f, 0, 0.6f, h0, 1, l, 3), 1);
    CHECK_EQ_INT(pick_after(1.0f, 0, 0.4f, h0, 1, l, 3), 0);
    /* frequency counts occurrences: 2.0 - 3 * 0.2 = 1.4 < 1.5, but 2.0 - 1 * 0.2 > 1.5 */
    const int32_t h3[3] = {0, 0, 0};
    CHECK_EQ_INT(pick_after(1.0f, 0.2f, 0, h3, 3, l, 3), 1);
    CHECK_EQ_INT(pick_after(1.0f, 0.2f, 0, h0, 1, l, 3), 0);
    /* the window (4) forgets old tokens: 0 fell out after four others */
    const int32_t h5[5] = {0, 2, 2, 2, 2};
    CHECK_EQ_INT(pick_after(4.0f, 0, 0, h5, 5, l, 3), 0);
    CHECK_EQ_INT(pick_after(4.0f, 0, 0, h5, 4, l, 3), 1);
    /* a negative logit is multiplied: token 2 at -1 * 2 = -2 stays last, token 1
     * penalised to 0.75 loses to 0 */
    const float n[3] = {1.0f, 1.5f, -1.0f};
    const int32_t h1[2] = {1, 2};
    CHECK_EQ_INT(pick_after(2.0f, 0, 0, h1, 2, n, 3), 0);
}

static void test_distribution(void) {
    zn_sampler s;
    zn_sampler_params p = plain();
    CHECK(sampler_init(&s, &p, 3, NULL) == ZN_OK);
    const float l[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
    double f[8];
    histogram(&s, l, 40000, f);
    CHECK_NEAR(f[0], 0.5, 0.01);
    CHECK_NEAR(f[1], 0.3, 0.01);
    CHECK_NEAR(f[2], 0.2, 0.01);
    sampler_free(&s);

    /* temperature 0.5 squares the probabilities: .25 .09 .04 over .38 */
    p.temperature = 0.5f;
    CHECK(sampler_init(&s, &p, 3, NULL) == ZN_OK);
    histogram(&s, l, 40000, f);
    CHECK_NEAR(f[0], 0.25 / 0.38, 0.01);
    CHECK_NEAR(f[1], 0.09 / 0.38, 0.01);
    CHECK_NEAR(f[2], 0.04 / 0.38, 0.01);
    sampler_free(&s);
}

static void test_truncation(void) {
    const float l[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    double f[8];
    zn_sampler s;
    zn_sampler_params p = plain();

    p.top_k = 2; /* renormalised 0.625 / 0.375 */
    CHECK(sampler_init(&s, &p, 4, NULL) == ZN_OK);
    histogram(&s, l, 40000, f);
    CHECK_NEAR(f[0], 0.625, 0.01);
    CHECK_NEAR(f[1], 0.375, 0.01);
    CHECK(f[2] == 0 && f[3] == 0);
    sampler_free(&s);

    p = plain();
    p.top_p = 0.9f; /* 0.5 + 0.3 < 0.9 <= 0.95: keeps three */
    CHECK(sampler_init(&s, &p, 4, NULL) == ZN_OK);
    histogram(&s, l, 40000, f);
    CHECK_NEAR(f[2], 0.15 / 0.95, 0.01);
    CHECK(f[3] == 0);
    sampler_free(&s);

    p.top_p = 0.5f; /* the first alone reaches 0.5 */
    CHECK(sampler_init(&s, &p, 4, NULL) == ZN_OK);
    histogram(&s, l, 1000, f);
    CHECK(f[0] == 1.0);
    sampler_free(&s);

    p = plain();
    p.min_p = 0.5f; /* p >= 0.25 */
    CHECK(sampler_init(&s, &p, 4, NULL) == ZN_OK);
    histogram(&s, l, 40000, f);
    CHECK_NEAR(f[0], 0.625, 0.01);
    CHECK(f[2] == 0 && f[3] == 0);
    sampler_free(&s);
}

/* top-k on a large random vocabulary: only the k best ids ever come out. */
static void test_top_k_large(void) {
    enum { N = 5000, K = 37 };
    static float l[N];
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        l[i] = (float)(x >> 8) / (float)(1u << 24) * 8.0f;
    }
    int rank_ok = 1;
    zn_sampler s;
    zn_sampler_params p = plain();
    p.top_k = K;
    CHECK(sampler_init(&s, &p, N, NULL) == ZN_OK);
    for (int i = 0; i < 2000; i++) {
        int32_t t = sampler_sample(&s, l);
        int better = 0;
        for (int j = 0; j < N; j++) better += l[j] > l[t];
        if (better >= K) rank_ok = 0;
    }
    CHECK(rank_ok);
    sampler_free(&s);
}

static void test_seeds(void) {
    const float l[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    zn_sampler a, b;
    zn_sampler_params p = plain();
    CHECK(sampler_init(&a, &p, 6, NULL) == ZN_OK);
    CHECK(sampler_init(&b, &p, 6, NULL) == ZN_OK);
    int32_t first[64];
    int same = 1;
    for (int i = 0; i < 64; i++) {
        first[i] = sampler_sample(&a, l);
        same &= first[i] == sampler_sample(&b, l);
    }
    CHECK(same);
    sampler_reset(&a); /* back to the seed's start */
    same = 1;
    for (int i = 0; i < 64; i++) same &= first[i] == sampler_sample(&a, l);
    CHECK(same);
    sampler_free(&b);
    p.seed = 99;
    CHECK(sampler_init(&b, &p, 6, NULL) == ZN_OK);
    int diff = 0;
    for (int i = 0; i < 64; i++) diff += first[i] != sampler_sample(&b, l);
    CHECK(diff > 10);
    sampler_free(&a);
    sampler_free(&b);
}

static void test_bad_params(void) {
    zn_sampler s;
    zn_err err;
    zn_sampler_params p = plain();
    CHECK(sampler_init(&s, &p, 0, &err) == ZN_ERR_ARG);
    p.repeat_penalty = 0.0f;
    CHECK(sampler_init(&s, &p, 10, &err) == ZN_ERR_ARG);
}

int main(void) {
    RUN(test_argmax);
    RUN(test_greedy_ignores_rng);
    RUN(test_penalties);
    RUN(test_distribution);
    RUN(test_truncation);
    RUN(test_top_k_large);
    RUN(test_seeds);
    RUN(test_bad_params);
    return harness_report("sampler");
}
