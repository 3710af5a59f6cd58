/* Sampler: penalties, top-k/top-p/min-p, temperature and a seeded draw. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

zn_sampler_params sampler_default_params(void) {
    return (zn_sampler_params){
        .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
        .repeat_penalty = 1.0f, .presence_penalty = 0.0f, .frequency_penalty = 0.0f,
        .penalty_last_n = 64, .seed = 0,
    };
}

/* ---- xoshiro256** seeded through splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t s[4]) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

double sampler_uniform(zn_sampler *s) { return (double)(rng_next(s->rng) >> 11) * 0x1.0p-53; }

void sampler_reset(zn_sampler *s) {
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    s->hist_n = s->hist_pos = 0;
}

zn_status sampler_init(zn_sampler *s, const zn_sampler_params *p, int n_vocab, zn_err *err) {
    memset(s, 0, sizeof *s);
    if (n_vocab <= 0 || n_vocab > ZN_MAX_VOCAB)
        return zn_errf(err, ZN_ERR_ARG, "sampler: vocabulary size %d out of range", n_vocab);
    if (p->penalty_last_n < 0 || p->penalty_last_n > ZN_MAX_CTX)
        return zn_errf(err, ZN_ERR_ARG, "sampler: penalty window %d out of range", p->penalty_last_n);
    /* every parameter finite, so only the logits can bring NaN or inf */
    const struct { const char *name; float v; } fl[] = {
        {"temperature", p->temperature}, {"top-p", p->top_p}, {"min-p", p->min_p},
        {"repeat penalty", p->repeat_penalty}, {"presence penalty", p->presence_penalty},
        {"frequency penalty", p->frequency_penalty}};
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
        if (!isfinite(fl[i].v))
            return zn_errf(err, ZN_ERR_ARG, "sampler: %s must be a finite number (got %g)", fl[i].name, (double)fl[i].v);
    if (!(p->repeat_penalty > 0.0f))
        return zn_errf(err, ZN_ERR_ARG, "sampler: repeat penalty must be > 0 (got %g)", p->repeat_penalty);
    s->p = *p;
    s->n_vocab = n_vocab;
    s->cand = malloc(sizeof *s->cand * (size_t)n_vocab);
    s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
    s->hist = malloc(sizeof *s->hist * (size_t)(p->penalty_last_n > 0 ? p->penalty_last_n : 1));
    if (!s->cand || !s->counts || !s->hist) {
        sampler_free(s);
        return zn_errf(err, ZN_ERR_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
    }
    sampler_reset(s);
    return ZN_OK;
}

void sampler_free(zn_sampler *s) {
    free(s->cand);
    free(s->counts);
    free(s->hist);
    memset(s, 0, sizeof *s);
}

void sampler_accept(zn_sampler *s, int32_t token) {
    int w = s->p.penalty_last_n;
    if (w <= 0) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % w;
    if (s->hist_n < w) s->hist_n++;
}

int32_t sampler_argmax(const float *logits, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best] || (isnan(logits[best]) && !isnan(logits[i]))) best = i;
    return best;
}

static int cand_desc(const void *a, const void *b) {
    const zn_sampler_cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static bool penalties_on(const zn_sampler_params *p) {
    return p->penalty_last_n > 0 &&
           (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f);
}

static void apply_penalties(zn_sampler *s) {
    const zn_sampler_params *p = &s->p;
    for (int i = 0; i < s->hist_n; i++) {
        int32_t t = s->hist[i];
        if (t >= 0 && t < s->n_vocab) s->counts[t]++;
    }
    for (int i = 0; i < s->hist_n; i++) {
        int32_t t = s->hist[i];
        if (t < 0 || t >= s->n_vocab || s->counts[t] == 0) continue;
        float *l = &s->cand[t].logit; /* cand[] is still indexed by id here */
        *l = *l > 0 ? *l / p->repeat_penalty : *l * p->repeat_penalty;
        *l -= (float)s->counts[t] * p->frequency_penalty + p->presence_penalty;
        if (isnan(*l)) *l = -INFINITY; /* inf - inf: the same rule as a NaN logit */
        s->counts[t] = 0; /* once per token, and leaves counts zeroed */
    }
}

/* Moves the k largest candidates to the front, sorted descending. */
static void keep_top(zn_sampler_cand *c, int n, int k) {
    if (k < n) {
        /* quickselect so the k best are in c[0..k) */
        int lo = 0, hi = n - 1;
        while (lo < hi) {
            zn_sampler_cand pivot = c[(lo + hi) / 2];
            int i = lo, j = hi;
            while (i <= j) {
                while (cand_desc(&c[i], &pivot) < 0) i++;
                while (cand_desc(&c[j], &pivot) > 0) j--;
                if (i <= j) {
                    zn_sampler_cand t = c[i];
                    c[i++] = c[j];
                    c[j--] = t;
                }
            }
            if (k - 1 <= j) hi = j;
            else if (k - 1 >= i) lo = i;
            else break;
        }
    }
    qsort(c, (size_t)(k < n ? k : n), sizeof *c, cand_desc);
}

/* exp((l - mx) / temp) for l <= mx, the weight of l relative to the
 * largest logit mx; a logit equal to mx weighs 1 even when both are
 * infinite, so +inf logits share all the probability and an all -inf list
 * is uniform. The difference comes first: dividing first by a tiny
 * temperature would turn unequal finite logits into equal infinities. */
static double rel_weight(float l, float mx, float temp) {
    return l == mx ? 1.0 : exp(((double)l - mx) / temp);
}

/* logits -> probabilities over c[0..n) (sorted descending, so c[0] is max). */
static void softmax_sorted(zn_sampler_cand *c, int n, float temp) {
    float mx = c[0].logit;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        c[i].logit = (float)rel_weight(c[i].logit, mx, temp);
        sum += c[i].logit;
    }
    for (int i = 0; i < n; i++) c[i].logit = (float)(c[i].logit / sum);
}

static int32_t sample(zn_sampler *s, const float *logits, const uint64_t *allow) {
    const zn_sampler_params *p = &s->p;
    int n = s->n_vocab;
    zn_sampler_cand *c = s->cand;
    bool bad = false;
    for (int i = 0; i < n; i++) {
        float l = logits[i];
        bad |= !isfinite(l);
        c[i] = (zn_sampler_cand){i, isnan(l) ? -INFINITY : l};
    }
    s->nonfinite = bad;
    if (penalties_on(p)) apply_penalties(s);
    if (allow) { /* after the penalties, which index cand[] by id */
        int k = 0;
        for (int i = 0; i < n; i++)
            if ((allow[i >> 6] >> (i & 63)) & 1) c[k++] = c[i];
        if (k == 0) return -1;
        n = k;
    }

    if (p->temperature <= 0.0f) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (c[i].logit > c[best].logit) best = i;
        return c[best].id;
    }

    /* top-k (a full sort when off, as top-p needs the order) */
    int k = p->top_k > 0 && p->top_k < n ? p->top_k : n;
    keep_top(c, n, k);
    n = k;

    /* top-p on the probabilities of what is left: smallest prefix >= p */
    if (p->top_p < 1.0f) {
        float mx = c[0].logit;
        double sum = 0, acc = 0;
        for (int i = 0; i < n; i++) sum += rel_weight(c[i].logit, mx, 1.0f);
        for (int i = 0; i < n; i++) {
            acc += rel_weight(c[i].logit, mx, 1.0f) / sum;
            if (acc >= p->top_p) {
                n = i + 1;
                break;
            }
        }
    }

    /* min-p: p_i >= min_p * p_max  <=>  l_i >= l_max + log(min_p) */
    if (p->min_p > 0.0f) {
        float cut = c[0].logit + logf(p->min_p);
        int m = 1;
        while (m < n && c[m].logit >= cut) m++;
        n = m;
    }

    softmax_sorted(c, n, p->temperature);

    double u = sampler_uniform(s), acc = 0;
    for (int i = 0; i < n; i++) {
        acc += c[i].logit;
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id; /* rounding left u just above the total */
}

int32_t sampler_sample(zn_sampler *s, const float *logits) { return sample(s, logits, NULL); }

int32_t sampler_sample_masked(zn_sampler *s, const float *logits, const uint64_t *allow) {
    return sample(s, logits, allow);
}
