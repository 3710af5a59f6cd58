/* zinc model list|pull|use|active|rm: the model catalog from the command
 * line (catalog.h), and the default-model resolution every model-running
 * command shares (cli_resolve_model). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "embedded.h"
#include "cli.h"
#include "file.h"
#include "model.h"
#include "profile.h"

static const char *const usage_text[] = {
    "usage: zinc model list                      the catalog, what is installed, * = active",
    "       zinc model pull ID|URL|hf:ORG/REPO[:QUANT]|ORG/REPO/FILE.gguf [--sha256 HEX] [--hub-url URL]",
    "                                             download a model into the models directory; checked against",
    "                                             the catalog's hash, --sha256 or the hub's before it is installed",
    "                                             [--deadline S] [--min-rate BYTES/S] [--min-rate-window S]",
    "       zinc model use ID|PATH                make a model the default (checked with the loader)",
    "       zinc model active                     print the active model",
    "       zinc model rm ID|FILE                 delete a downloaded model",
    "",
    "Models directory: $ZINC_HOME, else $XDG_DATA_HOME/zinc, else ~/.local/share/zinc (models/, active).",
    "Without -m, zinc runs the active model, else the demo model shipped with zinc.",
    NULL,
};

/* All of it, or (only = "pull", ...) that command's line and the notes. */
static int usage(FILE *f, const char *only) {
    char key[32];
    snprintf(key, sizeof key, "model %s ", only ? only : "");
    bool in = true;  /* continuation lines (indented) go with the command above them */
    for (int i = 0; usage_text[i]; i++) {
        const char *l = usage_text[i];
        if (strstr(l, "zinc model")) in = !only || strstr(l, key);
        else if (strncmp(l, "        ", 8)) in = true;
        if (in) fprintf(f, "%s\n", l);
    }
    return f == stdout ? 0 : 2;
}

static bool wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
    return false;
}

static int fail(const zn_err *err) {
    fprintf(stderr, "zinc: %s\n", err->msg);
    return 1;
}

static bool exists(const char *p) { return catalog_model_exists(p); }

static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (embedded_is(a) || embedded_is(b)) return !strcmp(a, b);
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void fmt_size(uint64_t b, char *out, size_t cap) {
    if (b >= 1000000000ull) snprintf(out, cap, "%.1f GB", b / 1e9);
    else snprintf(out, cap, "%.1f MB", b / 1e6);
}

/* "installed, verified" / "installed, unverified" / "not installed" */
static const char *state_of(const char *path) {
    if (!exists(path)) return "not installed";
    char hex[ZN_SHA256_HEX];
    zn_hash_src src = ZN_HASH_NONE;
    zn_err e = {0};
    if (catalog_hash_record_read(path, hex, &src, &e)) return "installed";
    return src == ZN_HASH_HUB ? "installed, verified (hub hash)"
           : src             ? "installed, sha256 verified"
                             : "installed, sha256 unverified";
}

/* Whether the model fits the profile: from the file when it is there,
 * else from the catalog's shape and size. */
static void fit_of(const zn_profile *p, const char *path, const zn_catalog_entry *e, char *out, size_t cap) {
    zn_model_shape sh = {0};
    uint64_t weights = e ? e->size : 0;
    zn_err err = {0};
    if (exists(path)) {
        if (profile_shape_of_file(path, &sh, &weights, &err)) {
            snprintf(out, cap, "? (does not load)");
            return;
        }
    } else if (e) {
        sh = e->shape;
    }
    zn_fit f;
    profile_fit(p, weights, &sh, &f);
    profile_fit_text(&f, p, out, cap);
}

static void list_row(const char *active, const char *id, const char *path, uint64_t size, const char *quant,
                     const char *state, const char *fit, const char *name) {
    char sz[32];
    struct stat st;
    fmt_size(stat(path, &st) == 0 ? (uint64_t)st.st_size : size, sz, sizeof sz);
    printf("%s %-19s %9s  %-10s %-30s %-18s %s\n", *active && same_file(active, path) ? "*" : " ", id, sz, quant, state,
           fit, name);
}

static int cmd_list(const char *home) {
    char dir[ZN_PATH_MAX], active[ZN_PATH_MAX] = "", path[ZN_PATH_MAX], fit[64], mem[32], budget[32];
    zn_err err = {0};
    if (catalog_models_dir(home, false, dir, sizeof dir, &err)) return fail(&err);
    catalog_active_get(home, active, sizeof active, &err);
    zn_profile prof;
    zn_hw hw;
    cli_detect_profile(&prof, &hw);
    profile_fmt_bytes(prof.budget, budget, sizeof budget);
    if (hw.gpu)
        printf("hardware profile: %s (vulkan: %s, %.1f GiB; models may use %s)\n", prof.name, hw.name,
               prof.mem_bytes / 1073741824.0, budget);
    else
        printf("hardware profile: %s (cpu backend, %.1f GiB of RAM; models may use %s)\n", prof.name,
               prof.mem_bytes / 1073741824.0, budget);
    printf("  %-19s %9s  %-10s %-30s %-18s %s\n", "ID", "SIZE", "QUANT", "STATE", "FITS", "NAME");
    size_t n;
    const zn_catalog_entry *e = catalog_entries(&n);
    for (size_t i = 0; i < n; i++) {
        const char *state;
        if (catalog_locate(home, NULL, e[i].id, path, sizeof path, &err) == ZN_OK) {
            state = !e[i].url && exists(path) ? "shipped with zinc" : state_of(path);
        } else {
            snprintf(path, sizeof path, "%s", e[i].file);
            state = "missing (not shipped here)";
        }
        fit_of(&prof, path, &e[i], fit, sizeof fit);
        list_row(active, e[i].id, path, e[i].size, e[i].quant, state, fit, e[i].name);
    }
    /* files pulled by URL (not in the table) */
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".gguf")) continue;
        bool known = false;
        for (size_t i = 0; i < n && !known; i++) known = !strcmp(e[i].file, de->d_name);
        if (known || (size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path) continue;
        fit_of(&prof, path, NULL, fit, sizeof fit);
        list_row(active, de->d_name, path, 0, "", state_of(path), fit, "(downloaded by URL)");
    }
    if (d) closedir(d);
    if (*active) {
        bool shown = strncmp(active, dir, strlen(dir)) == 0;
        for (size_t i = 0; i < n && !shown; i++)
            shown = !e[i].url && catalog_locate(home, NULL, e[i].id, path, sizeof path, &err) == ZN_OK &&
                    same_file(active, path);
        if (!shown) printf("* %s%s\n", active, exists(active) ? "" : "  (missing!)");
    } else {
        printf("no active model: zinc runs %s (zinc model use ID to change it)\n", ZN_DEMO_MODEL_ID);
    }
    printf("models directory: %s\n", dir);
    profile_fmt_bytes(prof.scratch, mem, sizeof mem);
    printf("FITS: weights + state + %s of scratch + an f16 KV cache for the context shown fit in %s (%d%% of "
           "the memory)\n", mem, budget, ZN_FIT_MEM_PERCENT);
    return 0;
}

/* Seconds / bytes-per-second options of pull. */
static bool parse_pos(const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) return false;
    *out = x;
    return true;
}

static int cmd_pull(const char *home, int argc, char **argv) {
    const char *what = NULL;
    zn_pull_opts o = {.home = home};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        bool val = true;
        if (!strcmp(a, "--sha256") && v) o.sha256 = v;
        else if (!strcmp(a, "--hub-url") && v) o.hub_url = v;
        else if (!strcmp(a, "--deadline") && v) val = parse_pos(v, 0.001, 1e7, &o.fetch.deadline_s);
        else if (!strcmp(a, "--min-rate") && v) {
            val = parse_pos(v, 1, 1e12, &x);
            o.fetch.min_rate = (uint64_t)x;
        } else if (!strcmp(a, "--min-rate-window") && v) {
            val = parse_pos(v, 1, 86400, &x);
            o.fetch.min_rate_window_s = (long)x;
        } else if (!what && a[0] != '-') {
            what = a;
            continue;
        } else {
            return usage(stderr, "pull");
        }
        if (!val) {
            fprintf(stderr, "zinc: bad value '%s' for %s (zinc model pull --help)\n", v, a);
            return 2;
        }
        i++;
    }
    if (!what) return usage(stderr, "pull");
    if (o.sha256 && !catalog_is_sha256(o.sha256)) {
        fprintf(stderr, "zinc: --sha256 '%s' is not 64 hex digits\n", o.sha256);
        return 2;
    }
    o.fetch.progress = stderr;
    zn_pull_result r;
    zn_err err = {0};
    if (catalog_pull(what, &o, &r, &err)) {
        fprintf(stderr, "zinc: %s\n", err.msg);
        return err.status == ZN_ERR_ARG ? 2 : 1;
    }
    if (r.shipped) {
        printf("%s ships with zinc: %s (nothing to download)\n", r.id, r.path);
        return 0;
    }
    if (r.already) {
        printf("already installed: %s (zinc model rm %s to download it again)\n", r.path, r.id);
        return 0;
    }
    printf("installed %s\n", r.path);
    if (r.f.verified)
        printf("sha256 %s (verified against %s)\n", r.f.sha256, catalog_hash_src_text(r.f.verified));
    else
        printf("sha256 %s (UNVERIFIED: neither the catalog, --sha256 nor the server gave a hash; compare it with the "
               "publisher's, or pull again with --sha256 HEX)\n", r.f.sha256);
    printf("next: zinc model use %s\n", r.id);
    return 0;
}

static int cmd_use(const char *home, const char *what) {
    char path[ZN_PATH_MAX];
    zn_err err = {0};
    if (catalog_locate(home, NULL, what, path, sizeof path, &err)) return fail(&err);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "zinc: %s: not a regular file (%s)\n", path, zn_file_kind(st.st_mode));
        return 1;
    }
    size_t pl = strlen(path);
    if ((pl > 5 && !strcmp(path + pl - 5, ".part")) || (pl > 10 && !strcmp(path + pl - 10, ".part.info"))) {
        fprintf(stderr, "zinc: %s is an unfinished download, not made active (zinc model pull to finish it)\n", path);
        return 1;
    }
    if (!exists(path)) {
        if (catalog_find(what)) fprintf(stderr, "zinc: %s is not installed (%s): zinc model pull %s\n", what, path, what);
        else fprintf(stderr, "zinc: %s: no such model file or catalog id (zinc model list)\n", path);
        return 1;
    }
    zn_model m;
    if (model_load(&m, path, &err)) {
        fprintf(stderr, "zinc: %s does not load, not made active: %s\n", path, err.msg);
        return 1;
    }
    zn_arch arch = m.arch;
    double mparams = (double)m.n_params / 1e6;
    model_free(&m);
    if (catalog_active_set(home, path, &err)) return fail(&err); /* say "active" only once it is */
    printf("active model: %s (%s, %.1fM parameters)\n", path, model_arch_name(arch), mparams);
    return 0;
}

static int cmd_active(const char *home) {
    char path[ZN_PATH_MAX];
    zn_err err = {0};
    if (catalog_active_get(home, path, sizeof path, &err)) {
        char demo[ZN_PATH_MAX];
        zn_err e2 = {0};
        if (catalog_demo_path(NULL, demo, sizeof demo, &e2) == ZN_OK)
            fprintf(stderr, "zinc: no active model; zinc runs the demo model %s\n", demo);
        else
            fprintf(stderr, "zinc: no active model and no demo model (zinc model list)\n");
        return 1;
    }
    printf("%s\n", path);
    if (!exists(path)) {
        fprintf(stderr, "zinc: the active model %s is missing (zinc model use ID|PATH)\n", path);
        return 1;
    }
    return 0;
}

static int cmd_rm(const char *home, const char *what) {
    char dir[ZN_PATH_MAX], path[ZN_PATH_MAX], side[ZN_PATH_MAX + 8], active[ZN_PATH_MAX];
    zn_err err = {0};
    if (!strcmp(what, ZN_DEMO_MODEL_ID)) {
        fprintf(stderr, "zinc: %s ships with zinc and is not removed\n", what);
        return 1;
    }
    if (strchr(what, '/') || !strcmp(what, ".") || !strcmp(what, "..")) {
        fprintf(stderr, "zinc: rm takes a catalog id or a file name in the models directory, not a path\n");
        return 2;
    }
    if (catalog_models_dir(home, false, dir, sizeof dir, &err)) return fail(&err);
    const zn_catalog_entry *e = catalog_find(what);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e ? e->file : what) >= sizeof path) {
        fprintf(stderr, "zinc: path too long: %s/%s\n", dir, what);
        return 1;
    }
    bool had = exists(path), was_active = false;
    if (catalog_active_get(home, active, sizeof active, &err) == ZN_OK)
        was_active = had ? same_file(active, path) : !strcmp(active, path);
    int removed = 0;
    static const char *const suffixes[] = {"", ".sha256", ".part", ".part.info"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(side, sizeof side, "%s%s", path, suffixes[i]);
        if (unlink(side) == 0) removed++;
        else if (errno != ENOENT) fprintf(stderr, "zinc: %s: cannot remove: %s\n", side, strerror(errno));
    }
    if (was_active) {
        if (catalog_active_clear(home, &err)) return fail(&err);
        printf("the active model was %s; none is active now\n", path);
    }
    if (!removed) {
        fprintf(stderr, "zinc: %s is not installed (%s)\n", what, path);
        return 1;
    }
    printf("removed %s\n", path);
    return exists(path) ? 1 : 0;
}

int cli_model(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) return usage(argc < 2 ? stderr : stdout, NULL);
    const char *sub = argv[1];
    static const char *const subs[] = {"list", "pull", "use", "active", "rm"};
    bool known = false;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) known |= !strcmp(sub, subs[i]);
    if (!known) {
        fprintf(stderr, "zinc: unknown model command '%s'\n", sub);
        return usage(stderr, NULL);
    }
    if (wants_help(argc - 1, argv + 1)) return usage(stdout, sub);
    char home[ZN_PATH_MAX];
    zn_err err = {0};
    if (catalog_home(home, sizeof home, &err)) return fail(&err);
    bool one_arg = !strcmp(sub, "use") || !strcmp(sub, "rm");
    if ((one_arg && argc != 3) || ((!strcmp(sub, "list") || !strcmp(sub, "active")) && argc != 2)) return usage(stderr, sub);
    if (!strcmp(sub, "list")) return cmd_list(home);
    if (!strcmp(sub, "pull")) return cmd_pull(home, argc - 1, argv + 1);
    if (!strcmp(sub, "use")) return cmd_use(home, argv[2]);
    if (!strcmp(sub, "active")) return cmd_active(home);
    return cmd_rm(home, argv[2]);
}

const char *cli_resolve_model(const char *m, char buf[ZN_PATH_MAX]) {
    zn_model_source src;
    char note[ZN_ERR_MSG_MAX];
    zn_err err = {0};
    if (catalog_resolve(NULL, NULL, m, buf, ZN_PATH_MAX, &src, note, &err)) {
        fprintf(stderr, "zinc: %s\n", err.msg);
        return NULL;
    }
    if (*note) fprintf(stderr, "zinc: warning: %s\n", note);
    if (src == ZN_SRC_ACTIVE) fprintf(stderr, "zinc: no -m given; using the active model %s\n", buf);
    if (src == ZN_SRC_DEMO) fprintf(stderr, "zinc: no -m given and no active model; using the built-in demo model %s\n", buf);
    return buf;
}

const char *cli_resolve_model_id(const char *id, char buf[ZN_PATH_MAX]) {
    char home[ZN_PATH_MAX] = "";
    zn_err err = {0};
    const zn_catalog_entry *e = catalog_find(id);
    if (!e) {
        fprintf(stderr, "zinc: --model-id %s: not a catalog id (zinc model list)\n", id);
        return NULL;
    }
    if ((e->url && catalog_home(home, sizeof home, &err)) || catalog_locate(home, NULL, e->id, buf, ZN_PATH_MAX, &err)) {
        fprintf(stderr, "zinc: --model-id %s: %s\n", id, err.msg);
        return NULL;
    }
    if (!exists(buf)) {
        fprintf(stderr, "zinc: --model-id %s: not installed (%s): zinc model pull %s\n", id, buf, id);
        return NULL;
    }
    return buf;
}
