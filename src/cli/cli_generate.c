/* zinc -m MODEL -p PROMPT [options]: generate text, streamed to stdout.
 *
 * Raw mode continues the prompt as written; --chat wraps it in the model's
 * chat template (ChatML when the model has none, said once on stderr); -i
 * holds a conversation, one user message per stdin line. Statistics (load
 * time, prompt and generation speed, why generation stopped) go to stderr,
 * so stdout carries only the generated text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chat.h"
#include "cli.h"
#include "engine.h"
#include "sampler.h"
#include "tokenizer.h"
#include "timer.h"

#define DEFAULT_N_PREDICT 256

typedef struct gen_opts {
    const char *model, *model_id, *prompt, *system, *backend;
    long n_predict, threads, n_ctx;
    cli_engine_args ea;   /* --backend, --device, --tune */
    zn_engine_opts eo;    /* what they resolve to */
    char tune[CLI_TUNE_MAX];
    bool chat, interactive, special, seed_given;
    int think;  /* ZN_THINK_* */
    zn_sampler_params sp;
} gen_opts;

static void usage(FILE *f) {
    zn_sampler_params d = sampler_default_params();
    fprintf(f,
            "usage: zinc -m MODEL -p PROMPT [options]   generate text, streamed to stdout\n"
            "       zinc -m MODEL -i [options]          chat: one user message per line of stdin\n"
            "\n"
            "  -m, --model PATH        GGUF model file (default: the active model, else the shipped demo model)\n"
            "  --model-id ID           an installed catalog model by id or alias (zinc model list)\n"
            "  -p, --prompt TEXT       the prompt; with --chat or -i, the (first) user message\n"
            "  -n, --n-predict N       generate at most N tokens; -1: until end of text or a full context (default %d)\n"
            "  --chat                  apply the model's chat template (ChatML if the model has none)\n"
            "  -i, --interactive       conversation: read user messages from stdin, one per line (implies --chat)\n"
            "  --system TEXT           system message in chat mode (default: none)\n"
            "  --think on|off          pass enable_thinking to the chat template (default: not passed)\n"
            "  --temp T                sampling temperature; 0 = greedy (default %g)\n"
            "  --top-k K               keep the K most likely tokens; 0 = off (default %d)\n"
            "  --top-p P               keep the smallest set with probability >= P; 1 = off (default %g)\n"
            "  --min-p P               drop tokens below P x the top probability; 0 = off (default %g)\n"
            "  --repeat-penalty R      penalise recent tokens; 1 = off (default %g)\n"
            "  --repeat-last-n N       how many recent tokens the penalties see (default %d)\n"
            "  --presence-penalty P    (default %g)\n"
            "  --frequency-penalty P   (default %g)\n"
            "  --seed S                sampler seed (default: random, printed on stderr)\n"
            "  --threads N             CPU threads (default: all %d cores)\n"
            "  --ctx N                 context size in tokens (default %d)\n"
            "  --backend NAME          %s (default: vulkan if a GPU is present, else cpu)\n"
            "  --device N              Vulkan device N of zinc --list-devices (implies --backend vulkan)\n"
            "  --tune KEY=VALUE,...    Vulkan tuning overrides, after ZN_TUNE's (README: Vulkan tuning)\n"
            "  --kv-type T             KV cache format: f16 (default), q8_0, q4_0, q4_0r or\n"
            "                          q3_0r (1/1.9, 1/3.6, 1/3.6, 1/4.6 of the f16 bytes; the r ones\n"
            "                          rotate heads before rounding; README: KV cache quantization)\n"
            "  --special               also print control tokens\n"
            "  -h, --help, --help-generate   this help\n"
            "\n"
            "stderr gets: load time, prompt tokens and prefill tok/s, generated tokens and decode tok/s,\n"
            "and why generation stopped (eos: end of text, length: -n reached, ctx: context full).\n",
            DEFAULT_N_PREDICT, d.temperature, d.top_k, d.top_p, d.min_p, d.repeat_penalty, d.penalty_last_n,
            d.presence_penalty, d.frequency_penalty, engine_default_threads(), ZN_DEFAULT_CTX, backend_names());
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_float(const char *s, float lo, float hi, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

/* Returns 0 to go on, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, gen_opts *o) {
    memset(o, 0, sizeof *o);
    o->backend = NULL;
    o->n_predict = DEFAULT_N_PREDICT;
    o->n_ctx = ZN_DEFAULT_CTX;
    o->sp = sampler_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "--help-generate")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--chat")) { o->chat = true; continue; }
        if (!strcmp(a, "-i") || !strcmp(a, "--interactive")) { o->interactive = o->chat = true; continue; }
        if (!strcmp(a, "--special")) { o->special = true; continue; }
        /* the option is matched before its value is looked at, so an unknown
         * one is "unknown" even last; a missing value reads as "" until then */
        const bool missing = i + 1 >= argc;
        const char *v = missing ? "" : argv[i + 1];
        i++;
        bool ok = true;
        long l;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--model-id")) o->model_id = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--system")) o->system = v;
        else if (cli_engine_arg(a, v, &o->ea)) {}
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) ok = parse_long(v, -1, ZN_MAX_CTX, &o->n_predict);
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) ok = parse_long(v, 1, ZN_MAX_THREADS, &o->threads);
        else if (!strcmp(a, "--ctx") || !strcmp(a, "-c")) ok = parse_long(v, 1, ZN_MAX_CTX, &o->n_ctx);
        else if (!strcmp(a, "--temp")) ok = parse_float(v, 0, 100, &o->sp.temperature);
        else if (!strcmp(a, "--top-k")) { ok = parse_long(v, 0, ZN_MAX_VOCAB, &l); o->sp.top_k = (int)l; }
        else if (!strcmp(a, "--top-p")) ok = parse_float(v, 0, 1, &o->sp.top_p);
        else if (!strcmp(a, "--min-p")) ok = parse_float(v, 0, 1, &o->sp.min_p);
        else if (!strcmp(a, "--repeat-penalty")) ok = parse_float(v, 0, 100, &o->sp.repeat_penalty);
        else if (!strcmp(a, "--repeat-last-n")) { ok = parse_long(v, 0, ZN_MAX_CTX, &l); o->sp.penalty_last_n = (int)l; }
        else if (!strcmp(a, "--presence-penalty")) ok = parse_float(v, -100, 100, &o->sp.presence_penalty);
        else if (!strcmp(a, "--frequency-penalty")) ok = parse_float(v, -100, 100, &o->sp.frequency_penalty);
        else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            ok = !errno && end != v && !*end && v[0] != '-';
            o->sp.seed = s;
            o->seed_given = true;
        } else if (!strcmp(a, "--think")) {
            ok = !strcmp(v, "on") || !strcmp(v, "off");
            o->think = !strcmp(v, "on") ? ZN_THINK_ON : ZN_THINK_OFF;
        } else {
            fprintf(stderr, "zinc: unknown option '%s' (zinc --help)\n", a);
            return 2;
        }
        if (missing) {
            fprintf(stderr, "zinc: %s needs a value (zinc --help)\n", a);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "zinc: bad value '%s' for %s (zinc --help)\n", v, a);
            return 2;
        }
    }
    if (o->model && o->model_id) {
        fprintf(stderr, "zinc: -m and --model-id both name a model; give one (zinc --help)\n");
        return 2;
    }
    if (!o->prompt && !o->interactive) {
        fprintf(stderr, "zinc: -p PROMPT is required (zinc --help)\n");
        return 2;
    }
    return 0;
}

/* ---- a generation session ---- */

typedef struct gen {
    const gen_opts *o;
    zn_model m;
    zn_tokenizer *tok;
    zn_engine e;
    zn_seq s;
    zn_sampler smp;
    float *logits;        /* [n_vocab] of the last evaluated token */
    int32_t *cache;       /* [n_ctx] the tokens in the sequence state */
    int32_t *input;       /* [n_ctx + 1] a tokenized prompt */
    int n_cache, n_ctx;
    char *tmpl;           /* the model's chat template, or NULL */
    bool said_fallback;
    zn_err err;
} gen;

static void gen_close(gen *g) {
    sampler_free(&g->smp);
    seq_free(&g->s);
    engine_free(&g->e);
    tokenizer_free(g->tok);
    model_free(&g->m);
    free(g->logits);
    free(g->cache);
    free(g->input);
    free(g->tmpl);
}

static int gen_open(gen *g, const gen_opts *o) {
    memset(g, 0, sizeof *g);
    g->o = o;
    double t0 = timer_now();
    if (model_load(&g->m, o->model, &g->err)) return 1;
    if (tokenizer_load(&g->tok, &g->m.gguf, &g->err) ||
        engine_init(&g->e, &g->m, &o->eo, &g->err) ||
        seq_init(&g->s, &g->e, (int)o->n_ctx, &g->err) ||
        sampler_init(&g->smp, &o->sp, g->m.hp.n_vocab, &g->err))
        return 1;
    g->n_ctx = (int)o->n_ctx;
    g->logits = malloc(sizeof *g->logits * (size_t)g->m.hp.n_vocab);
    g->cache = malloc(sizeof *g->cache * (size_t)g->n_ctx);
    g->input = malloc(sizeof *g->input * ((size_t)g->n_ctx + 1));
    if (!g->logits || !g->cache || !g->input) {
        zn_errf(&g->err, ZN_ERR_NOMEM, "out of memory for a %d-token context", g->n_ctx);
        return 1;
    }
    gguf_str t;
    if (gguf_get_str(&g->m.gguf, "tokenizer.chat_template", &t, NULL) == ZN_OK && t.len) {
        g->tmpl = malloc(t.len + 1);
        if (!g->tmpl) {
            zn_errf(&g->err, ZN_ERR_NOMEM, "out of memory");
            return 1;
        }
        memcpy(g->tmpl, t.ptr, t.len);
        g->tmpl[t.len] = 0;
    }
    const zn_kv_type kt = o->eo.be.kv_type;
    fprintf(stderr, "zinc: loaded %s (%s, %.1fM parameters) in %.2f s; backend %s, %d threads, context %d%s%s\n",
            o->model, model_arch_name(g->m.arch), (double)g->m.n_params / 1e6, timer_now() - t0, o->backend,
            g->e.n_threads, g->n_ctx, kt != ZN_KV_F16 ? ", KV cache " : "", kt != ZN_KV_F16 ? backend_kv_type_name(kt) : "");
    return 0;
}

/* Tokenizes text and evaluates what the sequence does not hold yet: when the
 * cached tokens are a prefix, only the rest; otherwise everything again (the
 * state of recurrent layers cannot be rolled back). */
static int gen_feed(gen *g, const char *text, size_t len, bool add_special) {
    size_t n;
    zn_status s = tokenizer_encode(g->tok, text, len, add_special, true, g->input, (size_t)g->n_ctx + 1, &n, &g->err);
    if (s == ZN_ERR_NOMEM || (s == ZN_OK && n + 1 >= (size_t)g->n_ctx)) {
        zn_errf(&g->err, ZN_ERR_ARG, "the prompt does not fit the context (%d tokens; --ctx)", g->n_ctx);
        return 1;
    }
    if (s) return 1;
    if (n == 0) {
        zn_errf(&g->err, ZN_ERR_ARG, "the prompt is empty");
        return 1;
    }
    int keep = g->n_cache;
    if ((size_t)keep >= n || memcmp(g->cache, g->input, (size_t)keep * sizeof *g->cache)) {
        seq_reset(&g->s);
        keep = 0;
    }
    double t0 = timer_now();
    if (engine_decode(&g->e, &g->s, g->input + keep, (int)n - keep, g->logits, false, &g->err)) return 1;
    double dt = timer_now() - t0;
    memcpy(g->cache, g->input, n * sizeof *g->cache);
    g->n_cache = (int)n;
    for (size_t i = (size_t)keep; i < n; i++) sampler_accept(&g->smp, g->input[i]);
    fprintf(stderr, "zinc: prompt: %zu tokens (%d new) in %.3f s, %.1f tok/s\n", n, (int)n - keep, dt,
            dt > 0 ? ((double)n - keep) / dt : 0.0);
    return 0;
}

/* Samples up to n_predict tokens, streaming their text. The reply's tokens
 * are g->cache[*first .. *first + *count); the last one may not have been
 * evaluated (generation stopped), so g->n_cache counts only those that were. */
static int gen_reply(gen *g, int *first, int *count) {
    zn_detok d;
    char piece[ZN_DETOK_OUT_MAX];
    detok_init(&d, g->tok, g->o->special, false);
    *first = g->n_cache;
    const char *why = "length";
    long produced = 0;
    double t0 = timer_now();
    const float *lg = g->logits; /* the prompt's, then each step's in place */
    while (g->o->n_predict < 0 || produced < g->o->n_predict) {
        int32_t id = sampler_sample(&g->smp, lg);
        if (g->smp.nonfinite) { /* sampling is defined, but the text would be noise */
            zn_errf(&g->err, ZN_ERR_FORMAT, "%s: the model's logits are not finite (NaN or inf) at position %d: "
                    "broken weights or hyper-parameters", g->o->model, g->n_cache);
            return 1;
        }
        if (tokenizer_is_eog(g->tok, id)) {
            why = "eos";
            break;
        }
        sampler_accept(&g->smp, id);
        size_t k = detok_push(&d, id, piece);
        fwrite(piece, 1, k, stdout);
        fflush(stdout);
        g->cache[g->n_cache] = id;  /* n_cache + 1 < n_ctx holds here */
        produced++;
        if (produced == g->o->n_predict) break;
        if (g->n_cache + 2 > g->n_ctx) {  /* keep a slot for the token this step would sample */
            why = "ctx";
            break;
        }
        if (engine_next(&g->e, &g->s, id, g->logits, &lg, &g->err)) return 1;
        g->n_cache++;
    }
    double dt = timer_now() - t0;
    size_t k = detok_flush(&d, piece);
    fwrite(piece, 1, k, stdout);
    putchar('\n');
    fflush(stdout);
    *count = (int)produced;
    fprintf(stderr, "zinc: generated: %ld tokens in %.3f s, %.1f tok/s\nzinc: stop: %s\n", produced, dt,
            dt > 0 ? (double)produced / dt : 0.0, why);
    return 0;
}

/* ---- chat ---- */

typedef struct convo {
    zn_chat_msg *msgs;
    char **owned;  /* strings the messages point to */
    size_t n, cap;
} convo;

static int convo_add(convo *c, const char *role, char *text_owned) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        zn_chat_msg *m = realloc(c->msgs, cap * sizeof *m);
        if (m) c->msgs = m;
        char **o = realloc(c->owned, cap * sizeof *o);
        if (o) c->owned = o;
        if (!m || !o) return 1;
        c->cap = cap;
    }
    c->msgs[c->n] = (zn_chat_msg){.role = role, .content = text_owned};
    c->owned[c->n] = text_owned;
    c->n++;
    return 0;
}

static void convo_free(convo *c) {
    for (size_t i = 0; i < c->n; i++) free(c->owned[i]);
    free(c->msgs);
    free(c->owned);
}

static const char *token_text(const zn_tokenizer *tok, int32_t id) {
    return id == ZN_TOKEN_NULL ? NULL : tokenizer_token_text(tok, id);
}

/* Renders the conversation (ending with a generation prompt), feeds it and
 * generates the assistant's reply, which is appended to the conversation. */
static int chat_turn(gen *g, convo *c) {
    const char *bos = token_text(g->tok, tokenizer_bos(g->tok));
    zn_chat_kwargs kw = {.enable_thinking = g->o->think, .bos_token = bos, .eos_token = token_text(g->tok, tokenizer_eos(g->tok))};
    char *prompt;
    size_t len;
    bool fallback;
    if (chat_render(g->tmpl, c->msgs, c->n, true, &kw, &prompt, &len, &fallback, &g->err)) return 1;
    if (fallback && !g->said_fallback) {
        fprintf(stderr, "zinc: the model has no chat template; using ChatML\n");
        g->said_fallback = true;
    }
    /* a template that writes BOS itself gets no second one */
    bool add_bos = !(bos && *bos && !strncmp(prompt, bos, strlen(bos)));
    int rc = gen_feed(g, prompt, len, add_bos);
    free(prompt);
    int first, count;
    if (rc || gen_reply(g, &first, &count)) return 1;
    size_t cap = (size_t)count * ZN_MAX_TOKEN_BYTES + 1, n = 0;
    char *reply = malloc(cap);
    if (!reply) {
        zn_errf(&g->err, ZN_ERR_NOMEM, "out of memory");
        return 1;
    }
    if (tokenizer_decode(g->tok, g->cache + first, (size_t)count, false, reply, cap, &n, &g->err)) {
        free(reply);
        return 1;
    }
    reply[n] = 0;
    if (convo_add(c, "assistant", reply)) {
        free(reply);
        zn_errf(&g->err, ZN_ERR_NOMEM, "out of memory");
        return 1;
    }
    return 0;
}

/* Appends a copy of text as a message; 1 when out of memory. */
static int convo_add_copy(convo *c, const char *role, const char *text) {
    size_t n = strlen(text);
    char *d = malloc(n + 1);
    if (!d) return 1;
    memcpy(d, text, n + 1);
    if (convo_add(c, role, d)) {
        free(d);
        return 1;
    }
    return 0;
}

/* One line of f into *line (NUL-terminated, without the newline), at most
 * max bytes: 1 read, 0 end of input, -1 a longer line (the rest of it is
 * not read), -2 a read error (errno), -3 out of memory. */
static int read_line(FILE *f, char **line, size_t *cap, size_t max, size_t *len) {
    size_t n = 0;
    for (;;) {
        if (n + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            if (nc > max + 2) nc = max + 2;
            if (n + 2 > nc) return -1;
            char *p = realloc(*line, nc);
            if (!p) return -3;
            *line = p, *cap = nc;
        }
        int c = getc(f);
        if (c == EOF) {
            if (ferror(f)) return -2;
            break;
        }
        if (c == '\n') break;
        if (n == max) return -1;
        (*line)[n++] = (char)c;
    }
    (*line)[n] = 0;
    *len = n;
    return n || !feof(f) ? 1 : 0;
}

static int run_chat(gen *g) {
    convo c = {0};
    int rc = 0;
    if (g->o->system && convo_add_copy(&c, "system", g->o->system)) rc = 2;
    if (!rc && g->o->prompt) rc = convo_add_copy(&c, "user", g->o->prompt) ? 2 : chat_turn(g, &c);
    char *line = NULL;
    size_t cap = 0;
    while (!rc && g->o->interactive) {
        if (isatty(STDIN_FILENO)) fprintf(stderr, "> ");
        size_t k;
        int r = read_line(stdin, &line, &cap, ZN_CHAT_MAX_LINE, &k);
        if (r == 0) break;
        if (r < 0) {
            rc = 1;
            if (r == -1) zn_errf(&g->err, ZN_ERR_ARG, "standard input: a line of more than %d bytes (the limit of one "
                                 "message)", ZN_CHAT_MAX_LINE);
            else if (r == -2) zn_errf(&g->err, ZN_ERR_IO, "standard input: read error: %s", strerror(errno));
            else zn_errf(&g->err, ZN_ERR_NOMEM, "standard input: out of memory for a line");
            break;
        }
        while (k > 0 && line[k - 1] == '\r') line[--k] = 0;
        if (k == 0) continue;
        rc = convo_add_copy(&c, "user", line) ? 2 : chat_turn(g, &c);
    }
    free(line);
    convo_free(&c);
    if (rc == 2) zn_errf(&g->err, ZN_ERR_NOMEM, "out of memory");
    return rc;
}

/* The seed's form: a model and no prompt starts the server. */
static bool wants_server(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--prompt") || !strcmp(argv[i], "-i") ||
            !strcmp(argv[i], "--interactive") || !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") ||
            !strcmp(argv[i], "--help-generate"))
            return false;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model") || !strcmp(argv[i], "--model-id")) return true;
    return false;
}

int cli_generate(int argc, char **argv) {
    gen_opts o;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (wants_server(argc, argv)) {
        fprintf(stderr, "zinc: a model and no prompt: starting the server (as zinc serve; -p PROMPT generates instead)\n");
        return cli_serve(argc, argv);
    }
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    o.ea.threads = o.threads;
    if (cli_engine_opts("zinc", &o.ea, &o.eo, o.tune, sizeof o.tune)) return 2;
    o.backend = o.eo.backend;
    char model_path[ZN_PATH_MAX];
    if (o.model_id) {
        if (!(o.model = cli_resolve_model_id(o.model_id, model_path))) return 1;
    } else if (!(o.model = cli_resolve_model(o.model, model_path))) {
        return 1;
    }
    if (!o.seed_given) {
        o.sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        fprintf(stderr, "zinc: seed %llu\n", (unsigned long long)o.sp.seed);
    }
    gen g;
    rc = gen_open(&g, &o);
    if (!rc) {
        if (o.chat) {
            rc = run_chat(&g);
        } else {
            int first, count;
            rc = gen_feed(&g, o.prompt, strlen(o.prompt), true) || gen_reply(&g, &first, &count);
        }
    }
    if (rc) fprintf(stderr, "zinc: %s\n", g.err.msg);
    gen_close(&g);
    return rc ? 1 : 0;
}
