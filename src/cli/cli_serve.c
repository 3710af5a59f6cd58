/* zinc serve / zinc chat: the OpenAI-compatible server (src/server) from the
 * command line. SIGINT/SIGTERM drain it (new work gets 503, in-flight
 * requests get ZN_SRV_DRAIN_S seconds) and it exits 0. The model loads in a
 * thread of its own, so a signal during the load is acted on at once too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "engine.h"
#include "scheduler.h"
#include "server.h"

extern char **environ;

#define SERVE_PORT 8080
#define CHAT_PORT 9090

static void usage(FILE *f, const char *cmd, int port) {
    fprintf(f,
            "usage: zinc %s [-m MODEL | --model-id ID] [options]\n"
            "An OpenAI-compatible server: POST /v1/chat/completions, /v1/completions, /tokenize, /detokenize;\n"
            "GET /v1/models, /health, /slots, /metrics; the chat UI at /.%s\n"
            "\n"
            "  -m, --model PATH         GGUF model (default: the active model, else the shipped demo model)\n"
            "  --model-id ID            a catalog model (zinc model list), also the name clients give\n"
            "  --alias NAME             the model name /v1/models lists (default: the file name without .gguf)\n"
            "  --host ADDR              address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)\n"
            "  --port N                 port (default %d; 0: any free port, printed)\n"
            "  --api-key KEY            require 'Authorization: Bearer KEY' (not for /health and the UI's files)\n"
            "  --api-key-file F         the same, the key read from the first line of F\n"
            "  --ctx N                  context tokens per slot (default: %d or the model's training context if smaller)\n"
            "  --parallel N             slots: requests generated at once, each with its own state (default 1, at most %d)\n"
            "  --kv-mem SIZE|auto       one KV cache pool of SIZE bytes (K, M, G suffixes) the slots share, taken\n"
            "                           in blocks as contexts grow: admission waits and the newest request is\n"
            "                           preempted (recomputed later) when it is short; auto: 85%% of the device's\n"
            "                           memory beyond the weights (default: none, each slot holds its --ctx)\n"
            "  --backend NAME           %s (default: vulkan if a GPU is present, else cpu)\n"
            "  --device N               Vulkan device N of zinc --list-devices (implies --backend vulkan)\n"
            "  --tune KEY=VALUE,...     Vulkan tuning overrides, after ZN_TUNE's (README: Vulkan tuning)\n"
            "  --kv-type T              KV cache format: f16 (default), q8_0, q4_0, q4_0r or\n"
            "                           q3_0r (1/1.9, 1/3.6, 1/3.6, 1/4.6 of the f16 bytes; the r ones\n"
            "                           rotate heads before rounding; README: KV cache quantization)\n"
            "  --threads N              CPU threads (default: all cores)\n"
            "  --mask-overlap auto|on|off  make grammar masks on a thread of their own while the step runs\n"
            "                           (auto: on for vulkan, off for cpu, whose step uses every core)\n"
            "  --cors ORIGIN            send CORS headers for this origin ('*': any); none by default\n"
            "  --allowed-hosts LIST     comma-separated Host names accepted besides the bound address\n"
            "                           (DNS-rebinding protection; '*' accepts any, e.g. behind a proxy)\n"
            "  --chat-template-file F   use this Jinja chat template instead of the model's\n"
            "  --drain-timeout S        seconds in-flight requests get after SIGTERM/SIGINT (default %d)\n"
            "%s"
            "  -h, --help               this help\n",
            cmd, !strcmp(cmd, "chat") ? "\nzinc chat prints the URL and opens it in the browser." : "", port,
            ZN_DEFAULT_CTX, ZN_SRV_MAX_PARALLEL, backend_names(), ZN_SRV_DRAIN_S,
            !strcmp(cmd, "chat") ? "  --no-browser             do not open the browser\n" : "");
}

/* The key: the first line of a regular file, at most max bytes; NULL with
 * a message in err otherwise (a FIFO, a read error, an empty or long line). */
static char *read_key_file(const char *path, size_t max, zn_err *err) {
    FILE *f;
    if (zn_file_fopen_regular(path, &f, err)) return NULL;
    char *buf = malloc(max + 2);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    bool rerr = ferror(f);
    fclose(f);
    if (!buf) return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory", path), NULL;
    buf[n] = 0;
    size_t k = strcspn(buf, "\r\n");
    const char *why = rerr ? "read error" : k == 0 ? "empty first line" : k > max ? "first line too long" : NULL;
    if (why) {
        zn_errf(err, ZN_ERR_ARG, "%s: %s (a key of 1..%zu bytes)", path, why, max);
        free(buf);
        return NULL;
    }
    buf[k] = 0;
    return buf;
}

static void open_browser(const char *url) {
    if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")) {
#ifndef __APPLE__
        fprintf(stderr, "zinc: no display; open %s in a browser\n", url);
        return;
#endif
    }
#ifdef __APPLE__
    const char *opener = "open";
#else
    const char *opener = "xdg-open";
#endif
    char *argv[] = {(char *)opener, (char *)url, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, opener, NULL, NULL, argv, environ)) {
        fprintf(stderr, "zinc: could not run %s; open %s in a browser\n", opener, url);
        return;
    }
    /* xdg-open returns at once; reaping it keeps no zombie */
    waitpid(pid, NULL, 0);
}

typedef struct loader {
    zn_server *srv;
    pthread_t waiter;          /* told with SIGUSR1 when the load is over */
    atomic_bool done;
    zn_status st;
    zn_err err;
} loader;

static void *load_main(void *arg) {
    loader *l = arg;
    l->st = server_load(l->srv, &l->err);
    atomic_store(&l->done, true);
    pthread_kill(l->waiter, SIGUSR1);
    return NULL;
}

/* Waits up to max_s seconds for the loader's SIGUSR1 (other signals of the
 * set are dropped: a second SIGTERM changes nothing). */
static bool wait_loaded(loader *l, const sigset_t *sigs, double max_s) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&l->done)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = max_s - ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9);
        if (left <= 0) return false;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        sigtimedwait(sigs, NULL, &ts);
    }
    return true;
}

/* "auto" or bytes with an optional K/M/G (binary) suffix, at least 1 MiB. */
static int parse_kv_mem(const char *v, int64_t *out) {
    if (!strcmp(v, "auto")) {
        *out = ZN_KV_MEM_AUTO;
        return 1;
    }
    char *end;
    errno = 0;
    const double x = strtod(v, &end);
    const double mul = !*end ? 1 : !strcmp(end, "K") ? 1 << 10 : !strcmp(end, "M") ? 1 << 20 : !strcmp(end, "G") ? 1 << 30 : 0;
    if (errno || end == v || mul == 0 || !(x * mul >= 1 << 20) || x * mul > 9e18) return 0;
    *out = (int64_t)(x * mul);
    return 1;
}

static int serve_main(int argc, char **argv, const char *cmd, int default_port) {
    zn_server_cfg cfg = {.n_parallel = 1, .n_ctx = 0};
    cli_engine_args ea = {0};
    char tune[CLI_TUNE_MAX];
    cfg.http.host = "127.0.0.1";
    cfg.http.port = default_port;
    const char *model = NULL, *model_id = NULL, *key_file = NULL, *tmpl_file = NULL, *hosts = NULL;
    bool browser = !strcmp(cmd, "chat");
    long drain_s = ZN_SRV_DRAIN_S;
    long l;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, cmd, default_port);
            return 0;
        }
        if (!strcmp(a, "--no-browser")) {
            browser = false;
            continue;
        }
        /* the option is matched before its value is looked at, so an unknown
         * one is "unknown" even last; a missing value reads as "" until then */
        const bool missing = i + 1 >= argc;
        const char *v = missing ? "" : argv[++i];
        int ok = 1;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--model-id")) model_id = v;
        else if (!strcmp(a, "--alias")) cfg.model_id = v;
        else if (!strcmp(a, "--host")) cfg.http.host = v;
        else if (!strcmp(a, "--port")) ok = cli_parse_long(v, 0, 65535, &l), cfg.http.port = (int)l;
        else if (!strcmp(a, "--api-key")) cfg.http.api_key = v;
        else if (!strcmp(a, "--api-key-file")) key_file = v;
        else if (!strcmp(a, "--ctx") || !strcmp(a, "-c")) ok = cli_parse_long(v, 2, ZN_MAX_CTX, &l), cfg.n_ctx = (int)l;
        else if (!strcmp(a, "--kv-mem")) ok = parse_kv_mem(v, &cfg.kv_mem);
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-np"))
            ok = cli_parse_long(v, 1, ZN_SRV_MAX_PARALLEL, &l), cfg.n_parallel = (int)l;
        else if (cli_engine_arg(a, v, &ea)) {}
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t"))
            ok = cli_parse_long(v, 1, ZN_MAX_THREADS, &ea.threads);
        else if (!strcmp(a, "--cors")) cfg.http.cors = v;
        else if (!strcmp(a, "--allowed-hosts")) hosts = v;
        else if (!strcmp(a, "--chat-template-file")) tmpl_file = v;
        else if (!strcmp(a, "--drain-timeout")) ok = cli_parse_long(v, 0, ZN_SRV_MAX_DRAIN_S, &drain_s);
        else if (!strcmp(a, "--mask-overlap")) {
            ok = !strcmp(v, "auto") || !strcmp(v, "on") || !strcmp(v, "off");
            cfg.mask_overlap = !strcmp(v, "on") ? ZN_OVERLAP_ON : !strcmp(v, "off") ? ZN_OVERLAP_OFF : ZN_OVERLAP_AUTO;
        } else {
            fprintf(stderr, "zinc %s: unknown option '%s' (zinc %s --help)\n", cmd, a, cmd);
            return 2;
        }
        if (missing) {
            fprintf(stderr, "zinc %s: %s needs a value (zinc %s --help)\n", cmd, a, cmd);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "zinc %s: bad value '%s' for %s (zinc %s --help)\n", cmd, v, a, cmd);
            return 2;
        }
    }
    if (model && model_id) {
        fprintf(stderr, "zinc %s: give -m or --model-id, not both\n", cmd);
        return 2;
    }
    char who[32];
    snprintf(who, sizeof who, "zinc %s", cmd);
    if (cli_engine_opts(who, &ea, &cfg.engine, tune, sizeof tune)) return 2;
    char hosts_buf[4096];
    if (hosts) {
        if (strlen(hosts) >= sizeof hosts_buf) {
            fprintf(stderr, "zinc %s: --allowed-hosts is too long\n", cmd);
            return 2;
        }
        strcpy(hosts_buf, hosts);
        for (char *save = NULL, *t = strtok_r(hosts_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ') t++;
            if (!*t) continue;
            if (cfg.http.n_allowed_hosts == ZN_SRV_MAX_HOSTS) {
                fprintf(stderr, "zinc %s: --allowed-hosts: at most %d names\n", cmd, ZN_SRV_MAX_HOSTS);
                return 2;
            }
            cfg.http.allowed_hosts[cfg.http.n_allowed_hosts++] = t;
        }
    }
    char *key = NULL, *tmpl = NULL;
    int rc = 1;
    if (key_file) {
        if (cfg.http.api_key) {
            fprintf(stderr, "zinc %s: give --api-key or --api-key-file, not both\n", cmd);
            return 2;
        }
        zn_err kerr = {0};
        if (!(key = read_key_file(key_file, ZN_SRV_MAX_KEY_BYTES, &kerr))) {
            fprintf(stderr, "zinc %s: --api-key-file: %s\n", cmd, kerr.msg);
            return 1;
        }
        cfg.http.api_key = key;
    }
    size_t tmpl_len;
    zn_err terr = {0};
    if (tmpl_file && zn_file_read_all(tmpl_file, ZN_JINJA_MAX_SRC, &tmpl, &tmpl_len, &terr)) {
        fprintf(stderr, "zinc %s: --chat-template-file: %s\n", cmd, terr.msg);
        free(key);
        return 1;
    }
    if (tmpl && strlen(tmpl) != tmpl_len) {
        fprintf(stderr, "zinc %s: --chat-template-file: %s holds a NUL byte (not a template)\n", cmd, tmpl_file);
        free(key);
        free(tmpl);
        return 1;
    }
    cfg.chat_template = tmpl;
    char path[ZN_PATH_MAX];
    zn_err err = {0};
    if (model_id) {
        if (!(cfg.model_path = cli_resolve_model_id(model_id, path))) goto out;
        if (!cfg.model_id) cfg.model_id = model_id;
    } else if (!(cfg.model_path = cli_resolve_model(model, path))) {
        goto out;
    }

    /* Signals go to sigwait below, not to whichever thread runs; SIGUSR1 is
     * the loader saying it is done. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    zn_server *srv = NULL;
    if (server_start(&srv, &cfg, &err)) {
        fprintf(stderr, "zinc %s: %s\n", cmd, err.msg);
        goto out;
    }
    const char *h = cfg.http.host;
    bool v6 = strchr(h, ':') != NULL;
    char url[512];
    snprintf(url, sizeof url, "http://%s%s%s:%d/", v6 ? "[" : "", !strcmp(h, "0.0.0.0") ? "127.0.0.1" : h, v6 ? "]" : "",
             server_port(srv));
    fprintf(stderr, "zinc: listening on %s (loading %s)\n", url, cfg.model_path);
    loader ld = {.srv = srv, .waiter = pthread_self()};
    atomic_init(&ld.done, false);
    pthread_t lt;
    int sig = 0;
    if (pthread_create(&lt, NULL, load_main, &ld)) {
        load_main(&ld);  /* no thread: load here; a signal waits for the end of the load */
        lt = pthread_self();
    }
    while (!atomic_load(&ld.done)) {
        sigwait(&sigs, &sig);
        if (sig == SIGUSR1) continue;
        /* stopped while loading: nothing is in flight; the load ends at its
         * next step, or is abandoned after the drain deadline */
        fprintf(stderr, "zinc: %s while loading: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        server_stop_load(srv);
        if (!wait_loaded(&ld, &sigs, (double)drain_s)) {
            fprintf(stderr, "zinc: still loading after %ld s (--drain-timeout); exiting without waiting\n", drain_s);
            /* _exit: the loader thread still uses the model and the device;
             * exit() would run the drivers' atexit handlers under it */
            _exit(0);
        }
        if (!pthread_equal(lt, pthread_self())) pthread_join(lt, NULL);
        server_free(srv);
        fprintf(stderr, "zinc: stopped\n");
        rc = 0;
        goto out;
    }
    if (!pthread_equal(lt, pthread_self())) pthread_join(lt, NULL);
    if (ld.st) {
        fprintf(stderr, "zinc %s: %s\n", cmd, ld.err.msg);
        server_free(srv);
        goto out;
    }
    fprintf(stderr, "zinc: ready: %s, %d slot%s; API at %sv1 (OpenAI-compatible)%s\n", cfg.model_path, cfg.n_parallel,
            cfg.n_parallel == 1 ? "" : "s", url, cfg.http.api_key ? ", API key required" : "");
    const zn_backend_mem mem = server_mem(srv);
    if (mem.weights + mem.scratch + mem.seqs)
        fprintf(stderr, "zinc: memory: weights %.1f MiB, scratch %.1f MiB, %d sequence states %.1f MiB (slots and "
                        "checkpoints), %.1f MiB in all\n",
                mem.weights / 1048576.0, mem.scratch / 1048576.0, mem.n_seqs, mem.seqs / 1048576.0,
                (mem.weights + mem.scratch + mem.seqs + mem.kv_pool) / 1048576.0);
    if (mem.kv_pool)
        fprintf(stderr, "zinc: KV pool: %.1f MiB, %lld blocks of %d positions shared by the %d slots (--kv-mem)\n",
                mem.kv_pool / 1048576.0, (long long)mem.kv_blocks, ZN_KV_BLOCK, cfg.n_parallel);
    if (!strcmp(cmd, "chat")) {
        printf("%s\n", url);
        fflush(stdout);
        if (browser) open_browser(url);
    }
    do sigwait(&sigs, &sig);
    while (sig == SIGUSR1);  /* the loader's, late */
    fprintf(stderr, "zinc: %s: draining (at most %ld s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
    server_drain(srv, (double)drain_s);
    server_free(srv);
    fprintf(stderr, "zinc: stopped\n");
    rc = 0;
out:
    free(key);
    free(tmpl);
    return rc;
}

int cli_serve(int argc, char **argv) { return serve_main(argc, argv, "serve", SERVE_PORT); }
int cli_chat(int argc, char **argv) { return serve_main(argc, argv, "chat", CHAT_PORT); }
