/* Sampler: each stage against hand-computed cases, the draw against its
 * distribution (fixed seed, so the counts are deterministic), and seeds. */
#include <math.h>
#include <string.h>

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

static void test_bad_params_nonfinite(void) {
    zn_sampler s;
    zn_err err = {0};
    float *fields[6];
    zn_sampler_params p = plain();
    fields[0] = &p.temperature, fields[1] = &p.top_p, fields[2] = &p.min_p;
    fields[3] = &p.repeat_penalty, fields[4] = &p.presence_penalty, fields[5] = &p.frequency_penalty;
    const char *names[6] = {"temperature", "top-p", "min-p", "repeat penalty", "presence penalty", "frequency penalty"};
    for (int f = 0; f < 6; f++)
        for (int v = 0; v < 3; v++) {
            p = plain();
            fields[0] = &p.temperature, fields[1] = &p.top_p, fields[2] = &p.min_p;
            fields[3] = &p.repeat_penalty, fields[4] = &p.presence_penalty, fields[5] = &p.frequency_penalty;
            *fields[f] = v == 0 ? NAN : v == 1 ? INFINITY : -INFINITY;
            CHECK_MSG(sampler_init(&s, &p, 10, &err) == ZN_ERR_ARG, "%s = %g accepted", names[f], *fields[f]);
            CHECK_MSG(strstr(err.msg, names[f]) != NULL, "'%s' lacks '%s'", err.msg, names[f]);
        }
}

/* The sampler's rule for non-finite logits (sampler.h), at every stage:
 * NaN counts as -inf, +inf logits share all the probability, all -inf/NaN
 * is a tie (greedy: the lowest id). Once a NaN pivot made the top-k
 * quickselect run off the end of the candidates (ASan catches that). */
static void test_nonfinite_logits(void) {
    enum { N = 3000 };
    static float l[N];
    zn_sampler_params cfg[8];
    for (int c = 0; c < 8; c++) cfg[c] = plain();
    cfg[0].temperature = 0.0f;                         /* greedy */
    cfg[1].top_k = 40;                                 /* quickselect */
    cfg[2].top_p = 0.5f;
    cfg[3].min_p = 0.1f;
    cfg[4] = sampler_default_params();                 /* the whole chain */
    cfg[5] = sampler_default_params(), cfg[5].repeat_penalty = 1.3f, cfg[5].presence_penalty = 1e30f,
    cfg[5].frequency_penalty = -3e38f;                 /* penalties that overflow to inf */
    cfg[6].temperature = 1e-30f, cfg[6].top_k = 5;     /* logits / temp overflow */
    cfg[7].temperature = 1e30f;
    uint32_t x = 777;
    for (int pattern = 0; pattern < 7; pattern++) {
        /* 0 all NaN, 1 NaN every other id, 2 NaN mostly + a few finite, 3 two +inf among NaN and finite,
         * 4 all -inf, 5 -inf and NaN, 6 random finite with NaN sprinkled */
        int inf_ids[2] = {1234, 2999}, finite_max = -1;
        for (int i = 0; i < N; i++) {
            x = x * 1664525u + 1013904223u;
            float r = (float)(x >> 8) / (float)(1u << 24) * 10.0f;
            float v = NAN;
            if (pattern == 1 && i % 2) v = r;
            if (pattern == 2 && i % 97 == 0) v = r;
            if (pattern == 3) v = i % 3 ? r : NAN;
            if (pattern == 4) v = -INFINITY;
            if (pattern == 5) v = i % 2 ? -INFINITY : NAN;
            if (pattern == 6) v = i % 7 == 3 ? NAN : r;
            if (pattern == 3 && (i == inf_ids[0] || i == inf_ids[1])) v = INFINITY;
            l[i] = v;
            if (!isnan(v) && (finite_max < 0 || v > l[finite_max])) finite_max = i;
        }
        for (int c = 0; c < 8; c++) {
            zn_sampler s;
            zn_err err = {0};
            CHECK_MSG(sampler_init(&s, &cfg[c], N, &err) == ZN_OK, "%s", err.msg);
            for (int t = 0; t < 50; t++) sampler_accept(&s, (int32_t)(t * 61 % N));
            bool all_neg = pattern == 0 || pattern == 4 || pattern == 5;
            for (int k = 0; k < 200; k++) {
                int32_t id = sampler_sample(&s, l);
                CHECK_MSG(id >= 0 && id < N, "pattern %d config %d: id %d", pattern, c, id);
                if (id < 0 || id >= N) break;
                CHECK(s.nonfinite); /* every pattern holds NaN or inf */
                if (!all_neg) CHECK_MSG(!isnan(l[id]) && l[id] != -INFINITY, "pattern %d config %d drew %d (%g)",
                                        pattern, c, id, l[id]);
                if (pattern == 3) CHECK_MSG(id == inf_ids[0] || id == inf_ids[1], "config %d: %d", c, id);
                if (all_neg && c == 0) CHECK_EQ_INT(id, 0);
                if (c == 0 && pattern != 3 && !all_neg) CHECK_EQ_INT(id, finite_max);
            }
            sampler_free(&s);
        }
    }
    /* +inf: both infinite ids come out, about equally often */
    zn_sampler s;
    zn_sampler_params p = plain();
    CHECK(sampler_init(&s, &p, N, NULL) == ZN_OK);
    int a = 0, b = 0;
    for (int i = 0; i < N; i++) l[i] = i == 10 || i == 20 ? INFINITY : (float)i;
    for (int k = 0; k < 2000; k++) {
        int32_t id = sampler_sample(&s, l);
        a += id == 10, b += id == 20;
    }
    CHECK_MSG(a + b == 2000 && a > 850 && b > 850, "%d / %d", a, b);
    for (int i = 0; i < N; i++) l[i] = (float)i;
    sampler_sample(&s, l);
    CHECK(!s.nonfinite);
    /* argmax: NaN ranks below every number */
    float m[4] = {NAN, -INFINITY, NAN, -1e30f};
    CHECK_EQ_INT(sampler_argmax(m, 4), 3);
    float n2[3] = {NAN, NAN, NAN};
    CHECK_EQ_INT(sampler_argmax(n2, 3), 0);
    float n3[3] = {NAN, INFINITY, 5.0f};
    CHECK_EQ_INT(sampler_argmax(n3, 3), 1);
    sampler_free(&s);
}

/* The one-pass scan that greedy and top-k take (top_fast) against the copy
 * of the whole vocabulary (full_path): the same token at every draw, seeds
 * equal, over logits with ties, NaN and infinities, with and without
 * penalties (tokens in the window that the scan ranks high or misses) and a
 * grammar's mask, and the same nonfinite flag. */
static void test_scan_matches_full(void) {
    enum { N = 3001, DRAWS = 60 };
    static float l[N];
    static uint64_t allow[(N + 63) / 64];
    zn_sampler_params cfg[8];
    for (int c = 0; c < 8; c++) cfg[c] = plain();
    cfg[0].temperature = 0.0f;                        /* greedy */
    cfg[1].top_k = 1;
    cfg[2].top_k = 40, cfg[2].top_p = 0.9f, cfg[2].min_p = 0.05f, cfg[2].temperature = 0.8f;
    cfg[3].top_k = 7, cfg[3].repeat_penalty = 1.5f;
    cfg[4].top_k = 40, cfg[4].presence_penalty = 3.0f, cfg[4].frequency_penalty = 0.7f; /* penalised out of the top */
    cfg[5].top_k = 12, cfg[5].repeat_penalty = 0.4f, cfg[5].presence_penalty = -6.0f; /* into it, from far below */
    cfg[6].temperature = 0.0f, cfg[6].repeat_penalty = 2.0f, cfg[6].presence_penalty = 1.0f;
    cfg[7].top_k = 300;
    uint32_t x = 4242;
    for (int pattern = 0; pattern < 6; pattern++) {
        /* 0 distinct, 1 eight levels (ties everywhere), 2 NaN and +-inf sprinkled, 3 all -inf but a few,
         * 4 / 5 distinct with one -inf / NaN late (the only non-finite logit, deep in what the scan skips) */
        for (int i = 0; i < N; i++) {
            x = x * 1664525u + 1013904223u;
            float r = (float)(x >> 8) / (float)(1u << 24) * 12.0f - 4.0f;
            l[i] = pattern == 1 ? floorf(r) : r;
            if (pattern == 2 && i % 211 == 5) l[i] = NAN;
            if (pattern == 2 && i % 401 == 7) l[i] = -INFINITY;
            if (pattern == 2 && i == 2000) l[i] = INFINITY;
            if (pattern == 3) l[i] = i % 500 == 9 ? r : -INFINITY;
            if (pattern >= 4 && i == N - 77) l[i] = pattern == 4 ? -INFINITY : NAN;
        }
        for (int masked = 0; masked < 2; masked++) {
            for (int w = 0; w < (N + 63) / 64; w++) {
                x = x * 1664525u + 1013904223u;
                allow[w] = masked ? (uint64_t)x * 0x9E3779B97F4A7C15ull : ~0ull;
            }
            for (int c = 0; c < 8; c++) {
                zn_sampler a, b;
                cfg[c].penalty_last_n = 24;
                CHECK(sampler_init(&a, &cfg[c], N, NULL) == ZN_OK && sampler_init(&b, &cfg[c], N, NULL) == ZN_OK);
                b.full_path = true;
                for (int d = 0; d < DRAWS; d++) {
                    /* the window: the best tokens of the last draw and a few far below */
                    const int32_t h = d % 3 ? (int32_t)(x % N) : (int32_t)((d * 977) % N);
                    x = x * 1664525u + 1013904223u;
                    const int32_t ta = masked ? sampler_sample_masked(&a, l, allow) : sampler_sample(&a, l);
                    const int32_t tb = masked ? sampler_sample_masked(&b, l, allow) : sampler_sample(&b, l);
                    CHECK_MSG(ta == tb, "pattern %d mask %d config %d draw %d: scan %d, full %d", pattern, masked, c,
                              d, ta, tb);
                    CHECK_MSG(a.nonfinite == b.nonfinite && a.nonfinite == (pattern >= 2),
                              "pattern %d config %d: nonfinite %d / %d", pattern, c, a.nonfinite, b.nonfinite);
                    if (ta != tb) break;
                    sampler_accept(&a, ta), sampler_accept(&b, tb);
                    sampler_accept(&a, h), sampler_accept(&b, h);
                }
                sampler_free(&a);
                sampler_free(&b);
            }
        }
    }
}

/* sampler_set: a used sampler given new parameters (a larger penalty
 * window too) draws what a new one with them draws; bad ones are refused
 * and leave it working. */
static void test_set_matches_init(void) {
    enum { N = 500 };
    static float l[N];
    for (int i = 0; i < N; i++) l[i] = (float)((i * 37) % 101) / 10.0f;
    zn_sampler_params p0 = plain(), p1 = plain();
    p0.penalty_last_n = 4;
    p1.top_k = 20, p1.temperature = 0.7f, p1.repeat_penalty = 1.3f, p1.penalty_last_n = 100, p1.seed = 99;
    zn_sampler a, b;
    CHECK(sampler_init(&a, &p0, N, NULL) == ZN_OK && sampler_init(&b, &p1, N, NULL) == ZN_OK);
    for (int i = 0; i < 30; i++) sampler_accept(&a, sampler_sample(&a, l));
    CHECK(sampler_set(&a, &p1, NULL) == ZN_OK);
    for (int i = 0; i < 200; i++) {
        const int32_t x = sampler_sample(&a, l), y = sampler_sample(&b, l);
        CHECK_MSG(x == y, "draw %d: %d after sampler_set, %d new", i, x, y);
        if (x != y) break;
        sampler_accept(&a, x), sampler_accept(&b, y);
    }
    zn_sampler_params bad = p1;
    bad.top_p = NAN;
    zn_err err = {0};
    CHECK(sampler_set(&a, &bad, &err) == ZN_ERR_ARG && strstr(err.msg, "top-p"));
    CHECK(a.p.seed == 99 && sampler_sample(&a, l) >= 0);
    sampler_free(&a);
    sampler_free(&b);
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
    RUN(test_bad_params_nonfinite);
    RUN(test_nonfinite_logits);
    RUN(test_scan_matches_full);
    RUN(test_set_matches_init);
    return harness_report("sampler");
}
