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

static zn_status check_params(const zn_sampler_params *p, zn_err *err) {
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
    return ZN_OK;
}

zn_status sampler_init(zn_sampler *s, const zn_sampler_params *p, int n_vocab, zn_err *err) {
    memset(s, 0, sizeof *s);
    if (n_vocab <= 0 || n_vocab > ZN_MAX_VOCAB)
        return zn_errf(err, ZN_ERR_ARG, "sampler: vocabulary size %d out of range", n_vocab);
    zn_status st = check_params(p, err);
    if (st) return st;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->hist_cap = p->penalty_last_n > 0 ? p->penalty_last_n : 1;
    s->cand = malloc(sizeof *s->cand * (size_t)n_vocab);
    s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
    s->hist = malloc(sizeof *s->hist * (size_t)s->hist_cap);
    if (!s->cand || !s->counts || !s->hist) {
        sampler_free(s);
        return zn_errf(err, ZN_ERR_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
    }
    sampler_reset(s);
    return ZN_OK;
}

zn_status sampler_set(zn_sampler *s, const zn_sampler_params *p, zn_err *err) {
    zn_status st = check_params(p, err);
    if (st) return st;
    if (p->penalty_last_n > s->hist_cap) {
        int32_t *h = realloc(s->hist, sizeof *h * (size_t)p->penalty_last_n);
        if (!h) return zn_errf(err, ZN_ERR_NOMEM, "sampler: out of memory for a penalty window of %d", p->penalty_last_n);
        s->hist = h;
        s->hist_cap = p->penalty_last_n;
    }
    s->p = *p;
    s->nonfinite = false;
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

/* a (after penalties, NaN as -inf) ranks after b in cand_desc's order */
static bool worse(zn_sampler_cand a, zn_sampler_cand b) { return cand_desc(&a, &b) > 0; }

/* Restores the heap c[0..m) (the worst candidate at c[0]) below position i. */
static void sift_down(zn_sampler_cand *c, int m, int i) {
    for (;;) {
        int w = i, l = 2 * i + 1, r = l + 1;
        if (l < m && worse(c[l], c[w])) w = l;
        if (r < m && worse(c[r], c[w])) w = r;
        if (w == i) return;
        zn_sampler_cand t = c[i];
        c[i] = c[w];
        c[w] = t;
        i = w;
    }
}

static bool allowed(const uint64_t *allow, int i) { return !allow || ((allow[i >> 6] >> (i & 63)) & 1); }

static float penalised(const zn_sampler_params *p, float l, int count) {
    l = l > 0 ? l / p->repeat_penalty : l * p->repeat_penalty;
    l -= (float)count * p->frequency_penalty + p->presence_penalty;
    return isnan(l) ? -INFINITY : l; /* inf - inf: the same rule as a NaN logit */
}

#define SCAN_BLOCK 32 /* logits top_scan may skip at once */

/* The k best allowed tokens of logits before penalties, in c[0..m) as a
 * heap: one pass that costs a compare for a token that cannot make it, where
 * the full path copies and selects the whole vocabulary (152k tokens: 0.7 ms
 * a draw, paid for every sequence of a server's step). The scan's ids rise,
 * so a tie with the heap's worst is worse (cand_desc). */
static int top_scan(zn_sampler_cand *c, int k, const float *logits, int n, const uint64_t *allow, bool *bad) {
    int m = 0;
    bool nf = false;
    for (int i = 0; i < n; i++) {
        /* a block of SCAN_BLOCK logits none of which can enter the full heap
         * (all <= its worst) and none -inf, NaN (compares false) or +inf
         * (above it) is skipped with one branch; the test vectorises */
        if (m == k && (i & (SCAN_BLOCK - 1)) == 0 && n - i >= SCAN_BLOCK) {
            const float thr = c[0].logit;
            int hit = 0;
            for (int j = 0; j < SCAN_BLOCK; j++) hit |= !(logits[i + j] <= thr) | (logits[i + j] == -INFINITY);
            if (!hit) {
                i += SCAN_BLOCK - 1;
                continue;
            }
        }
        const float l = logits[i];
        nf |= !isfinite(l);
        if (m == k && !(l > c[0].logit)) continue;
        if (!allowed(allow, i)) continue;
        const zn_sampler_cand e = {i, isnan(l) ? -INFINITY : l};
        if (m < k) { /* sift up */
            int j = m++;
            while (j > 0 && worse(e, c[(j - 1) / 2])) {
                c[j] = c[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            c[j] = e;
        } else {
            c[0] = e;
            sift_down(c, m, 0);
        }
    }
    *bad = nf;
    return m;
}

/* The full path's candidates after penalties, mask and top-k, in c[0..ret)
 * sorted, from a scan of the k + h best before penalties (h: the window's
 * tokens): a token the penalties leave alone and that ranks among the k
 * best after them has fewer than k others before it and at most h
 * penalised ones, so the scan holds it; the penalised tokens are scored
 * again and those the scan missed added. -1 when it does not fit (the full
 * path then). */
static int top_fast(zn_sampler *s, const float *logits, const uint64_t *allow, int k) {
    const zn_sampler_params *p = &s->p;
    const int h = penalties_on(p) ? s->hist_n : 0, n = s->n_vocab;
    if (s->full_path || k + 2 * h > ZN_SAMPLER_SCAN || k + 2 * h > n) return -1;
    zn_sampler_cand *c = s->cand;
    int m = top_scan(c, k + h, logits, n, allow, &s->nonfinite);
    if (h) {
        for (int i = 0; i < h; i++)
            if (s->hist[i] >= 0 && s->hist[i] < n) s->counts[s->hist[i]]++;
        for (int j = 0; j < m; j++) { /* in the scan: scored again, marked done */
            int32_t *cnt = &s->counts[c[j].id];
            if (*cnt > 0) c[j].logit = penalised(p, c[j].logit, *cnt), *cnt = -*cnt;
        }
        for (int i = 0; i < h; i++) { /* missed by the scan: added; every count back to zero */
            const int32_t t = s->hist[i];
            if (t < 0 || t >= n || s->counts[t] == 0) continue;
            if (s->counts[t] > 0 && allowed(allow, t))
                c[m++] = (zn_sampler_cand){t, penalised(p, isnan(logits[t]) ? -INFINITY : logits[t], s->counts[t])};
            s->counts[t] = 0;
        }
    }
    qsort(c, (size_t)m, sizeof *c, cand_desc);
    return m < k ? m : k;
}

/* The candidates after penalties, mask and top-k (k <= 0: all), in
 * c[0..ret) sorted, by copying and selecting the whole vocabulary. */
static int top_full(zn_sampler *s, const float *logits, const uint64_t *allow, int k) {
    zn_sampler_cand *c = s->cand;
    int n = s->n_vocab;
    bool bad = false;
    for (int i = 0; i < n; i++) {
        float l = logits[i];
        bad |= !isfinite(l);
        c[i] = (zn_sampler_cand){i, isnan(l) ? -INFINITY : l};
    }
    s->nonfinite = bad;
    if (penalties_on(&s->p)) apply_penalties(s);
    if (allow) { /* after the penalties, which index cand[] by id */
        int m = 0;
        for (int i = 0; i < n; i++)
            if (allowed(allow, i)) c[m++] = c[i];
        n = m;
    }
    /* a full sort when top-k is off, as top-p needs the order */
    if (k <= 0 || k > n) k = n;
    keep_top(c, n, k);
    return k;
}

static int32_t sample(zn_sampler *s, const float *logits, const uint64_t *allow) {
    const zn_sampler_params *p = &s->p;
    zn_sampler_cand *c = s->cand;
    const int k = p->temperature <= 0.0f ? 1 : p->top_k;
    int n = k > 0 ? top_fast(s, logits, allow, k) : -1;
    if (n < 0) n = top_full(s, logits, allow, k);
    if (n == 0) return -1;
    if (p->temperature <= 0.0f) return c[0].id;

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
