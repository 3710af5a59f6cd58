/* zinc eval -m MODEL --tokens 1,5,9 [-n 16] [--backend cpu] [--threads N]
 * Evaluates the prompt as one batch and prints, as one JSON object with the
 * schema of the golden fixtures: n_vocab, prompt, prompt_logits (every
 * position) and greedy (n tokens continuing the prompt, one step each). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "sampler.h"

static void usage(FILE *f) {
    fprintf(f, "usage: zinc eval [-m MODEL] --tokens ID,ID,... [-n N] [--backend %s] [--threads N] [--device N]\n"
               "                 [--tune KEY=VALUE,...] [--kv-type f16|q8_0|q4_0|q4_0r|q3_0r]\n",
            backend_names());
}

/* "1,5,9" -> ids; returns the count, or -1 after saying what is wrong. */
static int parse_tokens(const char *s, int32_t *ids, int cap) {
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            int k = (int)strcspn(s, ",");
            fprintf(stderr, "zinc eval: --tokens: '%.*s' (id %d) is not a token id; want comma-separated ids, e.g. 1,5,9\n",
                    k > 40 ? 40 : k, s, n + 1);
            return -1;
        }
        if (n == cap) {
            int total = n;
            for (const char *p = s; *p; p++) total += *p == ',';
            fprintf(stderr, "zinc eval: --tokens: %d ids, at most %d\n", total + 1, cap);
            return -1;
        }
        ids[n++] = (int32_t)v;
        if (*end == ',') end++;
        s = end;
    }
    if (!n) fprintf(stderr, "zinc eval: --tokens: no ids; want comma-separated ids, e.g. 1,5,9\n");
    return n;
}

static void print_row(const float *x, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) printf(i ? ", %.9g" : "%.9g", x[i]);
    putchar(']');
}

int cli_eval(int argc, char **argv) {
    const char *model_path = NULL, *tokens_arg = NULL;
    cli_engine_args ea = {0};
    long n_gen = 16, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        /* the option is matched before its value is looked at, so an unknown
         * one is "unknown" even last; a missing value reads as "" until then */
        const bool missing = i + 1 >= argc;
        const char *v = missing ? "" : argv[++i];
        long *num = NULL, lo = 0, hi = ZN_MAX_CTX;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--tokens")) tokens_arg = v;
        else if (cli_engine_arg(a, v, &ea)) {}
        else if (!strcmp(a, "-n")) num = &n_gen;
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) num = &threads, lo = 1, hi = ZN_MAX_THREADS;
        else {
            fprintf(stderr, "zinc eval: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (missing) {
            fprintf(stderr, "zinc eval: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        if (num && !cli_parse_long(v, lo, hi, num)) {
            fprintf(stderr, "zinc eval: bad %s '%s'\n", a, v);
            return 2;
        }
    }
    if (!tokens_arg) {
        usage(stderr);
        return 2;
    }
    ea.threads = threads;
    zn_engine_opts eo;
    char tune[CLI_TUNE_MAX];
    if (cli_engine_opts("zinc eval", &ea, &eo, tune, sizeof tune)) return 2;
    char resolved[ZN_PATH_MAX];
    if (!(model_path = cli_resolve_model(model_path, resolved))) return 1;
    int32_t *prompt = malloc(sizeof *prompt * ZN_EVAL_MAX_TOKENS);
    int n_prompt = prompt ? parse_tokens(tokens_arg, prompt, ZN_EVAL_MAX_TOKENS) : -1;
    if (n_prompt < 1) {
        if (!prompt) fprintf(stderr, "zinc eval: out of memory\n");
        free(prompt);
        return 2;
    }

    int rc = 1;
    zn_err err = {0};
    zn_model m;
    zn_engine e = {0};
    zn_seq s = {0};
    float *logits = NULL, *step = NULL;
    int32_t *greedy = NULL;
    if (model_load(&m, model_path, &err) != ZN_OK) {
        fprintf(stderr, "zinc eval: %s\n", err.msg);
        free(prompt);
        return 1;
    }
    const int n_vocab = m.hp.n_vocab;
    logits = malloc(sizeof *logits * (size_t)n_vocab * (size_t)n_prompt);
    step = malloc(sizeof *step * (size_t)n_vocab);
    greedy = malloc(sizeof *greedy * (size_t)(n_gen + 1));
    if (!logits || !step || !greedy) {
        fprintf(stderr, "zinc eval: out of memory\n");
        goto done;
    }
    if (engine_init(&e, &m, &eo, &err) != ZN_OK ||
        seq_init(&s, &e, n_prompt + (int)n_gen, &err) != ZN_OK ||
        engine_decode(&e, &s, prompt, n_prompt, logits, true, &err) != ZN_OK)
        goto fail;

    /* greedy continuation: the last prompt position's argmax, then one
     * decode step per further token */
    const float *last = logits + (size_t)(n_prompt - 1) * n_vocab;
    int nonfinite_step = -1;
    for (int i = 0; i < n_gen; i++) {
        for (int v = 0; v < n_vocab && nonfinite_step < 0; v++)
            if (!isfinite(last[v])) nonfinite_step = i;
        greedy[i] = sampler_argmax(last, n_vocab);
        if (i + 1 == n_gen) break;
        if (engine_decode(&e, &s, &greedy[i], 1, step, false, &err) != ZN_OK) goto fail;
        last = step;
    }

    /* JSON has no NaN or inf: a model that produces them is reported, not printed */
    for (size_t i = 0; i < (size_t)n_prompt * n_vocab; i++)
        if (!isfinite(logits[i])) {
            zn_errf(&err, ZN_ERR_FORMAT, "%s: logit %g at prompt position %zu, token id %zu: the model's output "
                    "is not finite (broken weights or hyper-parameters)", model_path, logits[i], i / n_vocab,
                    i % n_vocab);
            goto fail;
        }
    if (nonfinite_step >= 0) {
        zn_errf(&err, ZN_ERR_FORMAT, "%s: non-finite logits at greedy step %d: the model's output is not finite "
                "(broken weights or hyper-parameters)", model_path, nonfinite_step);
        goto fail;
    }
    printf("{\"n_vocab\": %d, \"prompt\": [", n_vocab);
    for (int i = 0; i < n_prompt; i++) printf(i ? ", %d" : "%d", prompt[i]);
    printf("], \"prompt_logits\": [");
    for (int i = 0; i < n_prompt; i++) {
        if (i) printf(", ");
        print_row(logits + (size_t)i * n_vocab, n_vocab);
    }
    printf("], \"greedy\": [");
    for (int i = 0; i < n_gen; i++) printf(i ? ", %d" : "%d", greedy[i]);
    printf("]}\n");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "zinc eval: %s\n", err.msg);
done:
    seq_free(&s);
    engine_free(&e);
    model_free(&m);
    free(logits);
    free(step);
    free(greedy);
    free(prompt);
    return rc;
}
