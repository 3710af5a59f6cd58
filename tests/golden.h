/* The golden fixtures of ../shared/models/tiny (X.golden.json, made by
 * llama.cpp): the 16-token prompt, its logits at every position and the
 * greedy continuation; a reader for just that JSON, and the comparisons
 * the Vulkan tests make. */
#ifndef ZN_TEST_GOLDEN_H
#define ZN_TEST_GOLDEN_H

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>

#include "harness.h"

#define NPOS 16

typedef struct golden {
    int n_vocab;
    int prompt[NPOS], greedy[NPOS];
    float *logits; /* [NPOS][n_vocab] */
} golden;


/* Reads up to cap numbers following "key": (nested arrays flattened). */
static inline int numbers(const char *json, const char *key, float *out, int cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p) return -1;
    p += strlen(pat);
    int n = 0, depth = 0;
    do {
        if (*p == '[') depth++, p++;
        else if (*p == ']') depth--, p++;
        else if (*p == ',' || isspace((unsigned char)*p)) p++;
        else {
            char *end;
            double v = strtod(p, &end);
            if (end == p) return -1;
            if (n < cap) out[n] = (float)v;
            n++;
            p = end;
        }
    } while (depth > 0 && *p);
    return n;
}

static inline bool golden_load(golden *gd, const char *path) {
    char *s = harness_read_file(path, NULL);
    if (!s) return false;
    float tmp[NPOS], nv = 0;
    bool ok = numbers(s, "n_vocab", &nv, 1) == 1;
    gd->n_vocab = (int)nv;
    ok = ok && numbers(s, "prompt", tmp, NPOS) == NPOS;
    for (int i = 0; ok && i < NPOS; i++) gd->prompt[i] = (int)tmp[i];
    ok = ok && numbers(s, "greedy", tmp, NPOS) == NPOS;
    for (int i = 0; ok && i < NPOS; i++) gd->greedy[i] = (int)tmp[i];
    gd->logits = ok ? malloc(sizeof(float) * NPOS * (size_t)gd->n_vocab) : NULL;
    ok = ok && gd->logits && numbers(s, "prompt_logits", gd->logits, NPOS * gd->n_vocab) == NPOS * gd->n_vocab;
    free(s);
    return ok;
}

static inline double nmse(const float *y, const float *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        if (y[i] != y[i]) return INFINITY;
        double e = (double)y[i] - ref[i];
        num += e * e;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

static inline int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* ../shared/models/tiny/NAME.gguf and .golden.json */
static inline void golden_paths(const char *name, char *model, char *gold, size_t cap) {
    snprintf(model, cap, "%smodels/tiny/%s.gguf", shared_path(""), name);
    snprintf(gold, cap, "%smodels/tiny/%s.golden.json", shared_path(""), name);
}

#endif
