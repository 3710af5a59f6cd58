/* zinc bench -m MODEL [-p 512] [-n 128] [-r 3] [--depth D] [--backend B]
 *            [--threads N] [--json]
 * zinc bench --bandwidth [--threads N] [--json]
 * zinc bench --parallel N / -npl 1,8,32 -npp 128 -ntg 128: cli_bench_par.c
 *
 * Like llama-bench: after a warm-up, r repetitions of a p-token prefill (one
 * batch) and of n single-token decode steps, each from an empty sequence (or
 * after D untimed context tokens); prints tok/s mean +- sd. Decode steps
 * take their logits as generation does: in place where the backend leaves
 * them in host memory (Vulkan), else copied out. Decode is also given as GB/s
 * of weights read per token, against the memory bandwidth a STREAM-like
 * read probe measures in the same run, and, for backends that keep
 * zn_backend_stats (vulkan), as where a step's wall time goes: waiting for
 * the device versus host work (preparing = recording or replaying, submit,
 * read, and the rest: engine and graph). A backend with a tuning (vulkan)
 * prints it, in the syntax --tune takes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "timer.h"

#define PROBE_BYTES (512u << 20) /* well past any cache */
#define PROBE_REPS 5
#define MAX_REPS 100
#define FIRST_STEPS 32 /* the first repetition's decode steps timed one by one (--json tg_first_ms) */

/* ---- memory bandwidth: every thread sums its slice of a large buffer ---- */

typedef struct probe_part {
    const uint64_t *p;
    size_t n;
    uint64_t sink;
} probe_part;

/* Each repetition's tok/s in order, as a JSON array member: a slow first
 * one shows as such instead of only widening the standard deviation. */
static void print_reps(const char *key, const double *v, long n) {
    printf(", \"%s\": [", key);
    for (long i = 0; i < n; i++) printf("%s%.2f", i ? ", " : "", v[i]);
    printf("]");
}

static void *probe_read(void *arg) {
    probe_part *pp = arg;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i + 4 <= pp->n; i += 4) { /* independent chains: loads, not adds, limit */
        a0 += pp->p[i];
        a1 += pp->p[i + 1];
        a2 += pp->p[i + 2];
        a3 += pp->p[i + 3];
    }
    pp->sink = a0 ^ a1 ^ a2 ^ a3;
    return NULL;
}

/* Best read bandwidth in GB/s over PROBE_REPS passes; 0 on failure. */
static double probe_bandwidth(int threads) {
    const size_t n = PROBE_BYTES / sizeof(uint64_t);
    uint64_t *buf = aligned_alloc(64, PROBE_BYTES);
    pthread_t th[ZN_MAX_THREADS];
    probe_part parts[ZN_MAX_THREADS];
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i; /* fault every page in */
    double best = 0;
    for (int rep = 0; rep < PROBE_REPS; rep++) {
        double t0 = timer_now();
        int started = 0;
        for (int i = 0; i < threads; i++) {
            size_t a = n * (size_t)i / (size_t)threads, b = n * (size_t)(i + 1) / (size_t)threads;
            parts[i] = (probe_part){buf + a, b - a, 0};
            if (i > 0 && pthread_create(&th[i], NULL, probe_read, &parts[i]) == 0) started = i;
            else if (i > 0) break;
        }
        probe_read(&parts[0]);
        for (int i = 1; i <= started; i++) pthread_join(th[i], NULL);
        double dt = timer_now() - t0, gbs = PROBE_BYTES / dt / 1e9;
        if (started == threads - 1 && gbs > best) best = gbs;
        uint64_t s = 0;
        for (int i = 0; i < threads; i++) s ^= parts[i].sink;
        if (s == 1) best += 0; /* keeps the sums alive */
    }
    free(buf);
    return best;
}

/* ---- model benchmarks ---- */

/* Bytes of weights one decode step reads: every matmul weight (experts only
 * for the k of n used), one embedding row, the norms. */
static double decode_bytes(const zn_model *m) {
    double bytes = (double)m->weight_bytes;
    if (!m->tied_output) bytes -= (double)m->tok_embd->nbytes;
    bytes += (double)m->tok_embd->nbytes / m->hp.n_vocab;
    if (m->hp.n_expert > 0) {
        const double unused = 1.0 - (double)m->hp.n_expert_used / m->hp.n_expert;
        for (int i = 0; i < m->hp.n_layer; i++) {
            const zn_layer *L = &m->layers[i];
            const zn_linear *ex[4] = {&L->ffn_gate_exps, &L->ffn_up_exps, &L->ffn_down_exps, &L->ffn_gate_up_exps};
            for (int j = 0; j < 4; j++)
                if (ex[j]->w) bytes -= unused * (double)ex[j]->w->nbytes;
        }
    }
    return bytes;
}

typedef struct stats {
    double mean, sd;
} stats;

/* Per decode step, in microseconds: b - a of the backend's counters over
 * `steps` steps that took `wall` seconds. */
typedef struct step_cost {
    double wall, wait, prepare, submit, read, rest;
    double replayed; /* share of the steps */
} step_cost;

static step_cost step_costs(const zn_backend_stats *a, const zn_backend_stats *b, double wall, long steps) {
    const double k = 1e6 / (double)steps;
    step_cost c = {.wall = wall * k, .wait = (b->wait_s - a->wait_s) * k, .prepare = (b->prepare_s - a->prepare_s) * k,
                   .submit = (b->submit_s - a->submit_s) * k, .read = (b->read_s - a->read_s) * k,
                   .replayed = (double)(b->replayed - a->replayed) / (double)steps};
    c.rest = c.wall - c.wait - c.prepare - c.submit - c.read;
    return c;
}

static stats summarize(const double *x, int n) {
    stats s = {0, 0};
    for (int i = 0; i < n; i++) s.mean += x[i] / n;
    for (int i = 0; i < n && n > 1; i++) s.sd += (x[i] - s.mean) * (x[i] - s.mean) / (n - 1);
    s.sd = sqrt(s.sd);
    return s;
}

typedef struct bench_args {
    const char *model;
    long p, n, reps, depth, threads;
    int json, bandwidth_only, no_replay;
    cli_engine_args ea;
} bench_args;

static void usage(FILE *f) {
    fprintf(f, "usage: zinc bench [-m MODEL] [-p 512] [-n 128] [-r 3] [--depth D] [--backend %s] [--threads N] [--json]\n"
               "                  [--device N] [--tune KEY=VALUE,...] [--profile] [--no-replay] [--trace]\n"
               "                  [--kv-type f16|q8_0|q4_0|q4_0r|q3_0r]\n"
               "                  (vulkan: device of zinc --list-devices, tuning overrides after ZN_TUNE's, per-op GPU\n"
               "                  times, every decode step recorded anew, each recorded decode step's dispatches in order\n"
               "                  with | at barriers; --kv-type: the KV cache format)\n"
               "       zinc bench --bandwidth [--threads N] [--json]\n"
               "       zinc bench --parallel N | -npl 1,8,32 [-npp 128] [-ntg 128] ...  (zinc bench --parallel 1 --help)\n",
               backend_names());
}

static int parse_args(int argc, char **argv, bench_args *a) {
    *a = (bench_args){.p = 512, .n = 128, .reps = 3, .threads = 0};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        long *num = NULL, lo = 0, hi = ZN_MAX_CTX;
        if (!strcmp(k, "--json")) { a->json = 1; continue; }
        if (!strcmp(k, "--bandwidth")) { a->bandwidth_only = 1; continue; }
        if (!strcmp(k, "--profile")) { a->ea.profile = true; continue; }
        if (!strcmp(k, "--trace")) { a->ea.trace = true; continue; }
        if (!strcmp(k, "--no-replay")) { a->no_replay = 1; continue; }
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) return usage(stdout), 0;
        /* the option is matched before its value is looked at, so an unknown
         * one is "unknown" even last; a missing value reads as "" until then */
        const bool missing = i + 1 >= argc;
        const char *v = missing ? "" : argv[++i];
        if (!strcmp(k, "-m") || !strcmp(k, "--model")) a->model = v;
        else if (cli_engine_arg(k, v, &a->ea)) {}
        else if (!strcmp(k, "-p")) num = &a->p;
        else if (!strcmp(k, "-n")) num = &a->n;
        else if (!strcmp(k, "-r")) num = &a->reps, lo = 1, hi = MAX_REPS;
        else if (!strcmp(k, "--depth")) num = &a->depth;
        else if (!strcmp(k, "--threads") || !strcmp(k, "-t")) num = &a->threads, lo = 1, hi = ZN_MAX_THREADS;
        else return fprintf(stderr, "zinc bench: unknown option '%s'\n", k), usage(stderr), -1;
        if (missing) return fprintf(stderr, "zinc bench: %s needs a value\n", k), usage(stderr), -1;
        if (num && !cli_parse_long(v, lo, hi, num)) return fprintf(stderr, "zinc bench: bad %s '%s'\n", k, v), -1;
    }
    if (a->p + a->n + a->depth + 8 > ZN_MAX_CTX) return fprintf(stderr, "zinc bench: context too long\n"), -1;
    return 1;
}

/* Fills toks with a fixed spread of ids. */
static void fill_tokens(int32_t *toks, long n, int n_vocab) {
    for (long i = 0; i < n; i++) toks[i] = (int32_t)((i * 7919 + 13) % n_vocab);
}

static zn_status run_depth(zn_engine *e, zn_seq *s, const int32_t *toks, long depth, zn_err *err) {
    seq_reset(s);
    return depth > 0 ? engine_decode(e, s, toks, (int)depth, NULL, false, err) : ZN_OK;
}

int cli_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--parallel") || !strcmp(argv[i], "-npl") || !strcmp(argv[i], "-npp") ||
            !strcmp(argv[i], "-ntg"))
            return cli_bench_parallel(argc, argv);
    bench_args a;
    int pr = parse_args(argc, argv, &a);
    if (pr <= 0) return pr < 0 ? 2 : 0;
    const int threads = a.threads > 0 ? (int)a.threads : engine_default_threads();
    double bw = probe_bandwidth(threads);
    if (a.bandwidth_only) {
        if (a.json) printf("{\"threads\": %d, \"bandwidth_gbs\": %.2f}\n", threads, bw);
        else printf("memory read bandwidth: %.2f GB/s (%d threads, %u MiB buffer, best of %d)\n", bw, threads,
                    PROBE_BYTES >> 20, PROBE_REPS);
        return bw > 0 ? 0 : 1;
    }

    a.ea.threads = threads;
    zn_engine_opts eo;
    char tune[CLI_TUNE_MAX];
    if (cli_engine_opts("zinc bench", &a.ea, &eo, tune, sizeof tune)) return 2;
    eo.be.no_replay = a.no_replay;
    const char *backend = eo.backend;
    char resolved[ZN_PATH_MAX];
    if (!(a.model = cli_resolve_model(a.model, resolved))) return 1;
    zn_err err = {0};
    zn_model m;
    zn_engine e = {0};
    zn_seq s = {0};
    int rc = 1;
    if (model_load(&m, a.model, &err) != ZN_OK) {
        fprintf(stderr, "zinc bench: %s\n", err.msg);
        return 1;
    }
    const long n_need = a.depth + a.p + a.n + 8;
    const long n_toks = n_need + ZN_BENCH_WARM_STEPS < ZN_MAX_CTX ? n_need + ZN_BENCH_WARM_STEPS : ZN_MAX_CTX;
    int32_t *toks = malloc(sizeof *toks * (size_t)n_toks);
    float *logits = malloc(sizeof *logits * (size_t)m.hp.n_vocab);
    const float *at = NULL; /* each decode step's logits, in place where the backend has them in host memory */
    double pp[MAX_REPS], tg[MAX_REPS], tg_wall = 0, first[FIRST_STEPS];
    zn_backend_stats bs0 = {0}, bs1 = {0};
    if (!toks || !logits) goto done;
    fill_tokens(toks, n_toks, m.hp.n_vocab);
    if (engine_init(&e, &m, &eo, &err) != ZN_OK || seq_init(&s, &e, (int)n_toks, &err) != ZN_OK) goto fail;
    zn_tuning tn = {0};
    if (e.be->tuning && e.be->tuning(e.be_ctx, -1, NULL, &tn, &err) != ZN_OK) goto fail;
    const double t_warm = timer_now();
    /* warm-up: page the weights in, start the threads, and run one prefill
     * of the measured size (first runs of a shape pay for cold caches and
     * first submissions: not what a repetition should time) */
    if (engine_decode(&e, &s, toks, 8, NULL, false, &err) != ZN_OK ||
        engine_decode(&e, &s, toks + 8, 1, NULL, false, &err) != ZN_OK)
        goto fail;
    if (a.p > 0 && (run_depth(&e, &s, toks, 0, &err) != ZN_OK ||
                    engine_decode(&e, &s, toks, (int)a.p, NULL, false, &err) != ZN_OK))
        goto fail;
    /* and a decode step at the measured depth (long contexts take other
     * attention kernels) */
    if (a.depth > 0 && a.n > 0 &&
        (run_depth(&e, &s, toks, a.depth, &err) != ZN_OK ||
         engine_next(&e, &s, toks[a.depth], logits, &at, &err) != ZN_OK))
        goto fail;
    /* then decode on for ZN_BENCH_WARM_MS in all: a GPU idle for seconds
     * runs its first fraction of a second of work slowly (limits.h) */
    while (s.n_past < n_toks && timer_now() - t_warm < ZN_BENCH_WARM_MS / 1e3)
        if (engine_next(&e, &s, toks[s.n_past], logits, &at, &err) != ZN_OK) goto fail;
    if (e.be->stats) e.be->stats(e.be_ctx, &bs0);
    /* all prefill repetitions, then all decode ones, as llama-bench runs
     * its pp and tg tests */
    for (long r = 0; r < a.reps && a.p > 0; r++) {
        if (run_depth(&e, &s, toks, a.depth, &err) != ZN_OK) goto fail;
        double t0 = timer_now();
        if (engine_decode(&e, &s, toks + a.depth, (int)a.p, NULL, false, &err) != ZN_OK) goto fail;
        pp[r] = a.p / (timer_now() - t0);
    }
    for (long r = 0; r < a.reps; r++) {
        if (a.n > 0) {
            if (run_depth(&e, &s, toks, a.depth, &err) != ZN_OK) goto fail;
            double t0 = timer_now();
            for (long i = 0; i < a.n; i++) {
                const double ts = timer_now();
                if (engine_next(&e, &s, toks[a.depth + i], logits, &at, &err) != ZN_OK) goto fail;
                if (r == 0 && i < FIRST_STEPS) first[i] = 1e3 * (timer_now() - ts);
            }
            tg_wall += timer_now() - t0;
            tg[r] = a.n / (timer_now() - t0);
        }
    }
    if (e.be->stats) e.be->stats(e.be_ctx, &bs1);
    const bool costs = e.be->stats && a.n > 0;
    const step_cost sc = costs ? step_costs(&bs0, &bs1, tg_wall, a.n * a.reps) : (step_cost){0};
    stats sp = summarize(pp, (int)a.reps), sg = summarize(tg, (int)a.reps);
    const double gb_tok = decode_bytes(&m) / 1e9, dec_gbs = sg.mean * gb_tok;
    if (a.json) {
        printf("{\"model\": \"%s\", \"arch\": \"%s\", \"params\": %llu, \"weight_bytes\": %llu, \"backend\": \"%s\", "
               "\"threads\": %d, \"depth\": %ld, \"reps\": %ld",
               a.model, model_arch_name(m.arch), (unsigned long long)m.n_params,
               (unsigned long long)m.weight_bytes, backend, threads, a.depth, a.reps);
        if (a.p > 0) {
            printf(", \"pp\": %ld, \"pp_tps\": %.2f, \"pp_sd\": %.2f", a.p, sp.mean, sp.sd);
            print_reps("pp_each", pp, a.reps);
        }
        if (a.n > 0) {
            printf(", \"tg\": %ld, \"tg_tps\": %.2f, \"tg_sd\": %.2f, \"decode_gbs\": %.2f", a.n, sg.mean, sg.sd, dec_gbs);
            print_reps("tg_each", tg, a.reps);
            /* is a slow first repetition slow throughout or in a few steps? */
            print_reps("tg_first_ms", first, a.n < FIRST_STEPS ? a.n : FIRST_STEPS);
        }
        if (costs)
            printf(", \"tg_step_us\": %.1f, \"tg_wait_us\": %.1f, \"tg_prepare_us\": %.1f, \"tg_submit_us\": %.1f, "
                   "\"tg_read_us\": %.1f, \"tg_rest_us\": %.1f, \"tg_replayed\": %.3f",
                   sc.wall, sc.wait, sc.prepare, sc.submit, sc.read, sc.rest, sc.replayed);
        if (e.be->tuning)
            printf(", \"tuning_class\": \"%s\", \"tuning_units\": %u, \"tuning\": \"%s\"", tn.cls, tn.units, tn.spec);
        if (e.be->stats)
            printf(", \"pipelines\": %llu, \"pipelines_late\": %llu, \"step_dispatches\": %u, \"step_barriers\": %u",
                   (unsigned long long)bs1.pipelines, (unsigned long long)bs1.pipelines_late, bs1.step_dispatches,
                   bs1.step_barriers);
        printf(", \"bandwidth_gbs\": %.2f}\n", bw);
    } else {
        printf("model    %s (%s, %.1fM params, %.1f MiB)\n", a.model, model_arch_name(m.arch), m.n_params / 1e6,
               m.weight_bytes / 1048576.0);
        printf("backend  %s, %d threads, depth %ld, %ld reps\n", backend, threads, a.depth, a.reps);
        if (e.be->tuning) printf("tuning   %s (%u compute units): %s\n", tn.cls, tn.units, tn.spec);
        if (a.p > 0) printf("pp%-6ld %9.2f ± %.2f tok/s\n", a.p, sp.mean, sp.sd);
        if (a.n > 0) printf("tg%-6ld %9.2f ± %.2f tok/s\n", a.n, sg.mean, sg.sd);
        if (a.n > 0)
            printf("decode   %.2f GB/s of weights (%.1f MB/token) = %.0f%% of the measured %.2f GB/s read bandwidth\n",
                   dec_gbs, gb_tok * 1e3, bw > 0 ? 100 * dec_gbs / bw : 0, bw);
        if (costs)
            printf("step     %.1f us = %.1f us waiting for the device + %.1f us on the host (prepare %.1f, submit %.1f, "
                   "read %.1f, engine/graph %.1f); %.0f%% of steps replayed\n",
                   sc.wall, sc.wait, sc.wall - sc.wait, sc.prepare, sc.submit, sc.read, sc.rest, 100 * sc.replayed);
        if (costs && bs1.step_dispatches)
            printf("step     %u dispatches, %u barriers (the last decode step recorded)\n", bs1.step_dispatches,
                   bs1.step_barriers);
        if (e.be->stats)
            printf("pipelines %llu, %llu of them created after init (inside a timed step)\n",
                   (unsigned long long)bs1.pipelines, (unsigned long long)bs1.pipelines_late);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "zinc bench: %s\n", err.msg);
done:
    seq_free(&s);
    engine_free(&e);
    model_free(&m);
    free(toks);
    free(logits);
    return rc;
}
