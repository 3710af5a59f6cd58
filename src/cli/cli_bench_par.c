/* zinc bench --parallel N | -npl 1,8,32 [-npp 128,...] [-ntg 128,...] [-m MODEL]
 *            [--backend B] [--threads N] [--json]
 *
 * Like llama-batched-bench: for every prompt length PP, generation length
 * TG and sequence count B, B sequences of PP distinct prompt tokens are
 * prefilled through batched engine steps (prompt chunks of several
 * sequences share a step, ZN_STEP_TOKENS tokens at most), then TG steps
 * decode one token of every sequence each. Reported: prefill tok/s over
 * all prompts, time to first token (a sequence's prompt done, its logits
 * read; mean and worst over the B), aggregate decode tok/s (B * TG over
 * the decode time) and per sequence, and the whole run's tok/s. Every
 * step reads its logits back, as generation does; tokens are a fixed
 * spread of ids (nothing is sampled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "timer.h"

#define PAR_MAX_LIST 16

typedef struct par_args {
    const char *model;
    long npp[PAR_MAX_LIST], ntg[PAR_MAX_LIST], npl[PAR_MAX_LIST];
    int n_pp, n_tg, n_pl;
    long threads;
    int json, no_replay;
    cli_engine_args ea;
} par_args;

static void usage(FILE *f) {
    fprintf(f, "usage: zinc bench --parallel N [-npp 128] [-ntg 128] [-m MODEL] [--backend %s] [--threads N] [--json]\n"
               "       zinc bench -npl 1,8,32,64 -npp 128 -ntg 128 ...   (lists: every combination, as llama-batched-bench)\n"
               "                  [--device N] [--tune KEY=VALUE,...] [--kv-type f16|q8_0|q4_0|q4_0r|q3_0r] [--profile] [--no-replay]\n",
            backend_names());
}

/* "1,8,32" -> out[]; 0 on an empty, bad or out-of-range item. */
static int parse_list(const char *s, long lo, long hi, long *out, int *n) {
    *n = 0;
    for (const char *p = s;; p++) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[32];
        if (*n == PAR_MAX_LIST || len == 0 || len >= sizeof item) return 0;
        memcpy(item, p, len);
        item[len] = 0;
        if (!cli_parse_long(item, lo, hi, &out[(*n)++])) return 0;
        if (!end) return 1;
        p = end;
    }
}

static int parse_args(int argc, char **argv, par_args *a) {
    *a = (par_args){.npp = {128}, .ntg = {128}, .npl = {1}, .n_pp = 1, .n_tg = 1, .n_pl = 1};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--json")) {
            a->json = 1;
            continue;
        }
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) return usage(stdout), 0;
        if (!strcmp(k, "--profile")) { /* GPU time per op of every step on stderr */
            a->ea.profile = true;
            continue;
        }
        if (!strcmp(k, "--no-replay")) { /* every decode step recorded anew: the host time replay saves */
            a->no_replay = 1;
            continue;
        }
        if (!v) return fprintf(stderr, "zinc bench: %s needs a value\n", k), usage(stderr), -1;
        i++;
        int ok = 1;
        if (!strcmp(k, "-m") || !strcmp(k, "--model")) a->model = v;
        else if (cli_engine_arg(k, v, &a->ea)) continue;
        else if (!strcmp(k, "--parallel") || !strcmp(k, "-npl")) ok = parse_list(v, 1, ZN_MAX_STEP_SEQS, a->npl, &a->n_pl);
        else if (!strcmp(k, "-npp")) ok = parse_list(v, 1, ZN_MAX_CTX / 2, a->npp, &a->n_pp);
        else if (!strcmp(k, "-ntg")) ok = parse_list(v, 1, ZN_MAX_CTX / 2, a->ntg, &a->n_tg);
        else if (!strcmp(k, "--threads") || !strcmp(k, "-t")) ok = cli_parse_long(v, 1, ZN_MAX_THREADS, &a->threads);
        else return fprintf(stderr, "zinc bench: unknown option '%s' with --parallel\n", k), usage(stderr), -1;
        if (!ok) {
            if (!strcmp(k, "--parallel") || !strcmp(k, "-npl"))
                fprintf(stderr, "zinc bench: bad %s '%s' (sequence counts 1 to %d, comma-separated, at most %d)\n", k,
                        v, ZN_MAX_STEP_SEQS, PAR_MAX_LIST);
            else if (!strcmp(k, "-npp") || !strcmp(k, "-ntg"))
                fprintf(stderr, "zinc bench: bad %s '%s' (lengths 1 to %d, comma-separated, at most %d)\n", k, v,
                        ZN_MAX_CTX / 2, PAR_MAX_LIST);
            else
                fprintf(stderr, "zinc bench: bad %s '%s' (1 to %d)\n", k, v, ZN_MAX_THREADS);
            return -1;
        }
    }
    return 1;
}

/* s as a JSON string (a model path may hold quotes or backslashes). */
static void put_json_str(const char *s) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if (*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

typedef struct par_result {
    long pp, tg, pl;
    double t_pp, t_tg, ttft_mean, ttft_max;
    zn_backend_mem mem; /* with the pl sequences allocated */
    zn_backend_stats st0, st1; /* the backend's counters around the decode steps (zeros: it keeps none) */
} par_result;

/* Where a decode step's wall time went, for the rows whose steps the
 * backend counts (vulkan: every row, a step of B sequences one token each):
 * waiting for the device vs the host's own work (preparing: recording the
 * step, or for a replayed one checking that its recording fits and
 * writing the positions; reading: copying the logits of the B sequences,
 * none where the backend has them in host memory (zn_backend.view); the rest:
 * the engine building the step's graph, sampling-free here), how many
 * replayed a recording and (B > 1) how many ran batched. */
static void print_steps(const par_result *all, int n) {
    for (int i = 0; i < n; i++) {
        const par_result *r = &all[i];
        const double steps = (double)(r->st1.steps - r->st0.steps);
        if (steps <= 0) continue;
        const double k = 1e6 / steps, wait = (r->st1.wait_s - r->st0.wait_s) * k;
        const double prep = (r->st1.prepare_s - r->st0.prepare_s) * k, sub = (r->st1.submit_s - r->st0.submit_s) * k;
        const double rd = (r->st1.read_s - r->st0.read_s) * k, wall = r->t_tg / (double)r->tg * 1e6;
        printf("steps    B %4ld: %.1f us per decode step = %.1f waiting for the device + %.1f preparing + %.1f "
               "submitting + %.1f reading + %.1f the rest; %.0f%% replayed", r->pl, wall, wait, prep, sub, rd,
               wall - wait - prep - sub - rd, 100.0 * (double)(r->st1.replayed - r->st0.replayed) / steps);
        if (r->pl > 1) printf(", %.0f%% batched", 100.0 * (double)(r->st1.batched - r->st0.batched) / steps);
        printf("\n");
    }
}

/* What each combination held: the same weights and scratch, the sequences'
 * states growing with their count and context (N_KV = PP + TG + 1 each). */
static void print_mem(const par_result *all, int n) {
    const double MiB = 1048576.0;
    if (n == 0 || all[0].mem.weights + all[0].mem.scratch + all[0].mem.seqs == 0) return;
    printf("\nmemory   weights %.1f MiB, scratch %.1f MiB (the same for every row)\n", all[0].mem.weights / MiB,
           all[0].mem.scratch / MiB);
    for (int i = 0; i < n; i++) {
        const par_result *r = &all[i];
        const int ns = r->mem.n_seqs > 0 ? r->mem.n_seqs : 1;
        printf("         B %4ld, %5ld positions each: sequences %.1f MiB (%.2f MiB each), total %.1f MiB\n", r->pl,
               r->pp + r->tg + 1, r->mem.seqs / MiB, r->mem.seqs / MiB / ns,
               (r->mem.weights + r->mem.scratch + r->mem.seqs) / MiB);
    }
}

/* One combination: pl sequences of pp prompt tokens and tg decode steps. */
static zn_status run_one(zn_engine *e, long pp, long tg, long pl, par_result *r, zn_err *err) {
    const int V = e->model->hp.n_vocab;
    const int n_ctx = (int)(pp + tg + 1);
    zn_seq *seqs = calloc((size_t)pl, sizeof *seqs);
    int32_t *toks = malloc(sizeof *toks * (size_t)pl * (size_t)n_ctx);
    float *logits = malloc(sizeof *logits * (size_t)pl * (size_t)V);
    /* decode steps take their logits in place where the backend has them in
     * host memory (as a server's sampler does), else copied to logits */
    const float *at = NULL;
    zn_step_item *items = malloc(sizeof *items * (size_t)pl);
    double *t_first = calloc((size_t)pl, sizeof *t_first);
    zn_status st = ZN_OK;
    int n_init = 0;
    if (!seqs || !toks || !logits || !items || !t_first) st = zn_errf(err, ZN_ERR_NOMEM, "out of memory for %ld sequences", pl);
    for (; !st && n_init < pl; n_init++) st = seq_init(&seqs[n_init], e, n_ctx, err);
    if (st) goto out;
    for (long i = 0; i < pl; i++)
        for (int j = 0; j < n_ctx; j++) toks[i * n_ctx + j] = (int32_t)(((long)j * 7919 + 13 + i * 104729) % V);
    *r = (par_result){.pp = pp, .tg = tg, .pl = pl, .mem = engine_mem(e)};
    /* prefill: sequence after sequence, as many prompt chunks per step as the budget takes */
    const double t0 = timer_now();
    long next = 0; /* the first sequence whose prompt is not all in */
    while (!st && next < pl) {
        int n = 0, budget = e->max_tokens;
        for (long i = next; i < pl && budget > 0 && n < e->max_seqs; i++) {
            const long have = seqs[i].n_past, c = pp - have < budget ? pp - have : budget;
            items[n++] = (zn_step_item){.seq = &seqs[i], .tokens = toks + i * n_ctx + have, .n = (int)c,
                                        .logits = have + c == pp ? logits + i * V : NULL};
            budget -= (int)c;
        }
        st = engine_step(e, items, n, err);
        const double now = timer_now();
        for (int k = 0; !st && k < n; k++)
            if (items[k].logits) t_first[items[k].seq - seqs] = now - t0;
        while (!st && next < pl && seqs[next].n_past == pp) next++;
    }
    const double t1 = timer_now();
    if (e->be->stats) e->be->stats(e->be_ctx, &r->st0);
    /* decode: every sequence one token per step */
    for (long s = 0; !st && s < tg; s++) {
        for (long i = 0; i < pl; i++)
            items[i] = (zn_step_item){.seq = &seqs[i], .tokens = toks + i * n_ctx + pp + s, .n = 1, .logits = logits + i * V,
                                      .logits_at = &at};
        st = engine_step(e, items, (int)pl, err);
    }
    const double t2 = timer_now();
    if (e->be->stats) e->be->stats(e->be_ctx, &r->st1);
    if (st) goto out;
    r->t_pp = t1 - t0;
    r->t_tg = t2 - t1;
    for (long i = 0; i < pl; i++) {
        r->ttft_mean += t_first[i] / (double)pl;
        if (t_first[i] > r->ttft_max) r->ttft_max = t_first[i];
    }
out:
    for (int i = 0; i < n_init; i++) seq_free(&seqs[i]);
    free(seqs);
    free(toks);
    free(logits);
    free(items);
    free(t_first);
    return st;
}

int cli_bench_parallel(int argc, char **argv) {
    par_args a;
    int pr = parse_args(argc, argv, &a);
    if (pr <= 0) return pr < 0 ? 2 : 0;
    const int threads = a.threads > 0 ? (int)a.threads : engine_default_threads();
    a.ea.threads = threads;
    zn_engine_opts eo;
    char tune[CLI_TUNE_MAX];
    if (cli_engine_opts("zinc bench", &a.ea, &eo, tune, sizeof tune)) return 2;
    eo.be.no_replay = a.no_replay;
    char resolved[ZN_PATH_MAX];
    if (!(a.model = cli_resolve_model(a.model, resolved))) return 1;
    zn_err err = {0};
    zn_model m;
    zn_engine e = {0};
    if (model_load(&m, a.model, &err) != ZN_OK) {
        fprintf(stderr, "zinc bench: %s\n", err.msg);
        return 1;
    }
    int rc = 1;
    par_result r;
    par_result *all = malloc(sizeof *all * (size_t)(a.n_pp * a.n_tg * a.n_pl));
    int n_all = 0;
    if (!all) {
        fprintf(stderr, "zinc bench: out of memory\n");
        model_free(&m);
        return 1;
    }
    if (engine_init(&e, &m, &eo, &err) != ZN_OK) goto fail;
    /* warm-up: page the weights in, start the threads, first submissions,
     * for ZN_BENCH_WARM_MS at least (a GPU idle for seconds runs its first
     * fraction of a second of work slowly: limits.h) */
    const double t_warm = timer_now();
    do {
        if (run_one(&e, 8, 8, a.npl[0], &r, &err) != ZN_OK) goto fail;
    } while (timer_now() - t_warm < ZN_BENCH_WARM_MS / 1e3);
    if (!a.json) {
        printf("model    %s (%s, %.1fM params, %.1f MiB)\n", a.model, model_arch_name(m.arch), m.n_params / 1e6,
               m.weight_bytes / 1048576.0);
        printf("backend  %s (%s), %d threads, step budget %d tokens\n\n", eo.backend,
               e.be->multi_seq ? "batched steps" : "one sequence per step", threads, e.max_tokens);
        printf("|    PP |    TG |    B |   N_KV |   T_PP s | S_PP t/s | TTFT s mean/max |   T_TG s | S_TG t/s | "
               "S_TG/seq t/s |      T s |    S t/s |\n");
        printf("|-------|-------|------|--------|----------|----------|-----------------|----------|----------|-"
               "-------------|----------|----------|\n");
    } else {
        printf("[");
    }
    int first = 1;
    for (int ip = 0; ip < a.n_pp; ip++)
        for (int it = 0; it < a.n_tg; it++)
            for (int il = 0; il < a.n_pl; il++) {
                const long pp = a.npp[ip], tg = a.ntg[it], pl = a.npl[il];
                if (run_one(&e, pp, tg, pl, &r, &err) != ZN_OK) goto fail;
                all[n_all++] = r;
                const double s_pp = (double)(pl * pp) / r.t_pp, s_tg = (double)(pl * tg) / r.t_tg;
                const double t = r.t_pp + r.t_tg, s = (double)(pl * (pp + tg)) / t;
                if (a.json) {
                    printf("%s\n  {\"model\": ", first ? "" : ",");
                    put_json_str(a.model);
                    printf(", \"arch\": \"%s\", \"backend\": \"%s\", \"batched\": %s, \"threads\": %d, "
                           "\"pp\": %ld, \"tg\": %ld, \"pl\": %ld, \"n_kv\": %ld, \"t_pp\": %.6f, \"speed_pp\": %.2f, "
                           "\"ttft_mean\": %.6f, \"ttft_max\": %.6f, \"t_tg\": %.6f, \"speed_tg\": %.2f, "
                           "\"speed_tg_seq\": %.2f, \"t\": %.6f, \"speed\": %.2f, \"mem_weights\": %llu, "
                           "\"mem_scratch\": %llu, \"mem_seqs\": %llu}",
                           model_arch_name(m.arch), eo.backend, e.be->multi_seq ? "true" : "false", threads, pp, tg,
                           pl, pl * (pp + tg), r.t_pp, s_pp, r.ttft_mean, r.ttft_max, r.t_tg, s_tg, s_tg / (double)pl,
                           t, s, (unsigned long long)r.mem.weights, (unsigned long long)r.mem.scratch,
                           (unsigned long long)r.mem.seqs);
                } else {
                    printf("| %5ld | %5ld | %4ld | %6ld | %8.3f | %8.2f | %7.3f/%7.3f | %8.3f | %8.2f | %12.2f | %8.3f | "
                           "%8.2f |\n",
                           pp, tg, pl, pl * (pp + tg), r.t_pp, s_pp, r.ttft_mean, r.ttft_max, r.t_tg, s_tg,
                           s_tg / (double)pl, t, s);
                }
                fflush(stdout);
                first = 0;
            }
    if (a.json) printf("\n]\n");
    else print_mem(all, n_all), print_steps(all, n_all);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "zinc bench: %s\n", err.msg);
done:
    free(all);
    engine_free(&e);
    model_free(&m);
    return rc;
}
