/* zinc --check: the doctor. One line per check, [OK] / [WARN] / [FAIL] and
 * what to do; ends in "READY [OK]" when text can be generated on the CPU
 * (a missing GPU is a warning), else "NOT READY [FAIL]" naming what is
 * missing. Exit code 0 / 1. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "engine.h"
#include "profile.h"
#include "tokenizer.h"
#include "timer.h"

#define SMOKE_TOKENS 4
#define SMOKE_CTX 64

typedef struct doctor {
    int warns;
    char missing[1024];  /* what NOT READY lists */
} doctor;

static void say(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *tag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%-7s", tag);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
}

static void missing(doctor *d, const char *what) {
    size_t n = strlen(d->missing);
    snprintf(d->missing + n, sizeof d->missing - n, "%s%s", n ? ", " : "", what);
}

static void check_cpu(doctor *d) {
    bool avx2 = __builtin_cpu_supports("avx2"), fma = __builtin_cpu_supports("fma"), f16c = __builtin_cpu_supports("f16c");
    if (avx2 && fma && f16c) {
        say("[OK]", "cpu: AVX2 FMA F16C, %d cores", engine_default_threads());
    } else {
        d->warns++;
        say("[WARN]", "cpu: missing%s%s%s: the CPU backend uses its portable (slower) kernels, %d cores",
            avx2 ? "" : " AVX2", fma ? "" : " FMA", f16c ? "" : " F16C", engine_default_threads());
    }
}

static void check_ram(doctor *d) {
    double total = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / (1 << 30);
    double avail = (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / (1 << 30);
    FILE *f = fopen("/proc/meminfo", "r");  /* MemAvailable counts reclaimable cache, unlike _SC_AVPHYS_PAGES */
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (double)kb / (1 << 20);
    }
    if (f) fclose(f);
    if (avail >= 2) {
        say("[OK]", "ram: %.1f GiB total, %.1f GiB available", total, avail);
    } else {
        d->warns++;
        say("[WARN]", "ram: %.1f GiB total, only %.1f GiB available: large models will not fit", total, avail);
    }
}

static void check_vulkan(doctor *d) {
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        d->warns++;
        say("[WARN]", "vulkan: no loader (libvulkan.so.1): GPU backend off; install libvulkan1 and your GPU's driver "
                      "(Debian: apt install libvulkan1 mesa-vulkan-drivers)");
        return;
    }
    dlclose(lib);
    say("[OK]", "vulkan: loader libvulkan.so.1 found");
    const zn_backend_ops *vk = backend_find("vulkan");
    zn_device_info devs[ZN_MAX_DEVICES];
    int n = 0, def = -1;
    zn_err err = {0};
    if (!vk || !vk->devices || vk->devices(devs, ZN_MAX_DEVICES, &n, &def, &err) || n == 0) {
        d->warns++;
        say("[WARN]", "vulkan: no device (%s): GPU backend off; install your GPU's Vulkan driver", n ? "" : err.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        const zn_device_info *v = &devs[i];
        char what[768];
        snprintf(what, sizeof what, "vulkan device %d%s: %s (%s, driver %s, %.1f GiB, Vulkan %u.%u, cooperative matrix %s)",
                 i, i == def ? " (default)" : "", v->name, v->kind, *v->driver ? v->driver : "?", (double)v->vram_bytes / (1 << 30),
                 v->api_major, v->api_minor, v->coopmat ? (v->coopmat2 ? "yes, NV coopmat2" : "yes") : "no");
        if (!v->usable) {
            d->warns++;
            say("[WARN]", "%s: no bufferDeviceAddress, zinc cannot use it; update the driver", what);
        } else if (v->emulated) {
            d->warns++;
            bool lavapipe = strstr(v->name, "llvmpipe") || strstr(v->driver, "llvmpipe");
            say("[WARN]", "%s: %s, not a GPU: works, but --backend cpu is faster", what,
                lavapipe ? "lavapipe, Vulkan emulated on the CPU" : "Vulkan emulated on the CPU");
        } else {
            say("[OK]", "%s", what);
        }
    }
    /* what a run on the default device would use, ZN_TUNE included */
    const char *env = cli_tune_env();
    zn_tuning t;
    if (def < 0 || !devs[def].usable || !vk->tuning) return;
    if (vk->tuning(NULL, def, env, &t, &err)) {
        d->warns++;
        say("[WARN]", "vulkan tuning: ZN_TUNE='%s': %s; Vulkan runs will fail until it is fixed or unset", env, err.msg);
        return;
    }
    say("[OK]", "vulkan tuning of device %d: class %s (%u compute units)%s: %s", def, t.cls, t.units,
        env && *env ? ", ZN_TUNE applied" : "", t.spec);
}

static void check_home(doctor *d, char *home, size_t cap) {
    char dir[ZN_PATH_MAX], probe[ZN_PATH_MAX + 32];
    zn_err err = {0};
    if (catalog_home(home, cap, &err) || catalog_models_dir(home, true, dir, sizeof dir, &err)) {
        d->warns++;
        *home = 0;
        say("[WARN]", "models directory: %s: `zinc model pull` cannot work; set ZINC_HOME to a writable folder", err.msg);
        return;
    }
    snprintf(probe, sizeof probe, "%s/.zinc-check-%d", dir, (int)getpid());
    /* O_EXCL: whatever is there already (a FIFO would block) is not ours */
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        d->warns++;
        say("[WARN]", "models directory %s is not writable (%s): `zinc model pull` cannot work; set ZINC_HOME", dir,
            strerror(errno));
        return;
    }
    close(fd);
    unlink(probe);
    say("[OK]", "models directory %s is writable", dir);
}

/* Loads path; on success the model stays loaded in m. */
static bool check_load(const char *label, const char *path, zn_model *m, const char *fail_tag) {
    zn_err err = {0};
    if (model_load(m, path, &err)) {
        say(fail_tag, "%s %s does not load: %s", label, path, err.msg);
        return false;
    }
    say("[OK]", "%s %s loads (%s, %.1fM parameters)", label, path, model_arch_name(m->arch), (double)m->n_params / 1e6);
    return true;
}

/* A few greedy tokens on the CPU: the whole path a prompt takes. */
static bool smoke(const zn_model *m, zn_err *err, char *text, size_t cap, double *tps) {
    zn_tokenizer *tok = NULL;
    zn_engine e = {0};
    zn_seq s = {0};
    float *logits = malloc(sizeof *logits * (size_t)m->hp.n_vocab);
    int32_t ids[SMOKE_CTX], out[SMOKE_TOKENS];
    size_t n = 0, tn = 0;
    bool ok = false;
    *text = 0;
    if (!logits) {
        zn_errf(err, ZN_ERR_NOMEM, "out of memory");
        return false;
    }
    if (tokenizer_load(&tok, &m->gguf, err) || engine_init(&e, m, NULL, err) || seq_init(&s, &e, SMOKE_CTX, err) ||
        tokenizer_encode(tok, "The", 3, true, false, ids, SMOKE_CTX - SMOKE_TOKENS, &n, err))
        goto done;
    const double t0 = timer_now();
    const int32_t *in = ids;
    int n_in = (int)n;
    for (int k = 0; k < SMOKE_TOKENS; k++) {
        if (engine_decode(&e, &s, in, n_in, logits, false, err)) goto done;
        int best = 0;
        for (int v = 0; v < m->hp.n_vocab; v++) {
            if (!isfinite(logits[v])) {
                zn_errf(err, ZN_ERR_FORMAT, "logit %d is not finite", v);
                goto done;
            }
            if (logits[v] > logits[best]) best = v;
        }
        out[k] = best;
        in = &out[k];
        n_in = 1;
    }
    const double dt = timer_now() - t0;
    *tps = dt > 0 ? SMOKE_TOKENS / dt : 0;
    if (tokenizer_decode(tok, out, SMOKE_TOKENS, false, text, cap - 1, &tn, err)) goto done;
    text[tn] = 0;
    for (char *c = text; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    ok = true;
done:
    seq_free(&s);
    engine_free(&e);
    tokenizer_free(tok);
    free(logits);
    return ok;
}

/* The model zinc would run without -m, and a smoke test on the demo model
 * (or on the active one when the demo model is not there). */
static void check_models(doctor *d, const char *home) {
    char active[ZN_PATH_MAX], demo[ZN_PATH_MAX];
    zn_err err = {0};
    zn_model am, dm;
    bool have_active = *home && catalog_active_get(home, active, sizeof active, &err) == ZN_OK;
    bool active_ok = false, demo_ok = false;
    if (have_active) {
        active_ok = check_load("active model", active, &am, "[FAIL]");
        if (!active_ok) missing(d, "a loadable active model (zinc model use ID|PATH)");
    } else {
        say("[OK]", "active model: none set (zinc runs the demo model; zinc model use ID to change it)");
    }
    if (catalog_demo_path(NULL, demo, sizeof demo, &err) == ZN_OK) {
        demo_ok = check_load("demo model", demo, &dm, active_ok ? "[WARN]" : "[FAIL]");
        if (!demo_ok && active_ok) d->warns++;
        if (!demo_ok && !have_active) missing(d, "a loadable demo model (reinstall zinc)");
    } else if (active_ok) {
        d->warns++;
        say("[WARN]", "demo model: %s", err.msg);
    } else {
        say("[FAIL]", "demo model: %s; get a model: zinc model pull ID && zinc model use ID", err.msg);
        if (!have_active) missing(d, "a model (zinc model list; zinc model pull ID; zinc model use ID)");
    }
    const zn_model *sm = demo_ok ? &dm : active_ok ? &am : NULL;
    if (sm) {
        char text[SMOKE_TOKENS * ZN_MAX_TOKEN_BYTES + 1];
        double tps = 0;
        if (smoke(sm, &err, text, sizeof text, &tps))
            say("[OK]", "smoke test (%s, cpu): %d tokens after \"The\": \"%s\" (%.1f tok/s)", demo_ok ? "demo model" : "active model",
                SMOKE_TOKENS, text, tps);
        else {
            say("[FAIL]", "smoke test (cpu) on %s: %s", sm->path, err.msg);
            missing(d, "CPU generation (the smoke test failed)");
        }
    }
    if (demo_ok) model_free(&dm);
    if (active_ok) model_free(&am);
}

/* The backend zinc picks by default and this machine's hardware profile. */
static void check_profile(zn_profile *p) {
    zn_hw hw;
    cli_detect_profile(p, &hw);
    if (hw.gpu)
        say("[OK]", "backend: vulkan on %s; hardware profile %s (%.1f GiB)", hw.name, p->name, p->mem_bytes / 1073741824.0);
    else
        say("[OK]", "backend: cpu (no Vulkan GPU; zinc will use the CPU backend); hardware profile %s (%.1f GiB of RAM)",
            p->name, p->mem_bytes / 1073741824.0);
}

/* --model-id ID: installed? does it fit this profile, with what context? */
static void check_model_id(doctor *d, const char *home, const char *id, const zn_profile *p) {
    const zn_catalog_entry *e = catalog_find(id);
    char path[ZN_PATH_MAX], fit[64], need[32], budget[32];
    zn_err err = {0};
    if (!e) {
        say("[FAIL]", "model %s: not a catalog id (zinc model list)", id);
        missing(d, "the model named by --model-id (not in the catalog)");
        return;
    }
    zn_model_shape sh = e->shape;
    uint64_t weights = e->size;
    bool installed = (!e->url || *home) && catalog_locate(home, NULL, e->id, path, sizeof path, &err) == ZN_OK &&
                     catalog_model_exists(path);
    if (installed && profile_shape_of_file(path, &sh, &weights, &err)) {
        say("[FAIL]", "model %s: %s does not load: %s", id, path, err.msg);
        missing(d, "a loadable file for --model-id");
        return;
    }
    zn_fit f;
    profile_fit(p, weights, &sh, &f);
    profile_fit_text(&f, p, fit, sizeof fit);
    profile_fmt_bytes(f.fixed, need, sizeof need);
    profile_fmt_bytes(p->budget, budget, sizeof budget);
    char where[ZN_PATH_MAX + 32];
    snprintf(where, sizeof where, installed ? "installed: %s" : "not installed", path);
    if (!f.known) {
        say(installed ? "[OK]" : "[WARN]", "model %s (%s): its shape is known once it is pulled (zinc model pull %s)", id,
            where, id);
        if (!installed) d->warns++;
    } else if (f.fits) {
        say("[OK]", "model %s fits %s: %s of weights, state and scratch + %llu bytes of KV a token: up to %u tokens "
            "of context in %s (%s)", id, p->name, need, (unsigned long long)f.kv_per_token, f.ctx, budget, where);
    } else {
        char sneed[32];
        profile_fmt_bytes(f.fixed + (uint64_t)ZN_FIT_MIN_CTX * f.kv_per_token, sneed, sizeof sneed);
        say("[FAIL]", "model %s does not fit %s: needs %s (weights, state, scratch and %d tokens of KV), %s usable (%s)",
            id, p->name, sneed, ZN_FIT_MIN_CTX, budget, where);
        missing(d, "room for the --model-id model on this machine");
        return;
    }
    if (!installed) {
        say("[FAIL]", "model %s is not installed: zinc model pull %s", id, id);
        missing(d, "the --model-id model (zinc model pull ID)");
    }
}

int cli_check(int argc, char **argv) {
    const char *model_id = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model-id") && i + 1 < argc) {
            model_id = argv[++i];
            continue;
        }
        printf("usage: zinc --check [--model-id ID]   check this machine and zinc's setup (and whether catalog model\n"
               "                                     ID fits it, with what context); ends in READY [OK] or NOT READY [FAIL]\n");
        return strcmp(argv[i], "-h") && strcmp(argv[i], "--help") ? 2 : 0;
    }
    doctor d = {0};
    char home[ZN_PATH_MAX];
    zn_profile prof;
    check_cpu(&d);
    check_ram(&d);
    check_vulkan(&d);
    check_profile(&prof);
    check_home(&d, home, sizeof home);
    check_models(&d, home);
    if (model_id) check_model_id(&d, home, model_id, &prof);
    if (*d.missing) {
        printf("NOT READY [FAIL]: missing %s\n", d.missing);
        return 1;
    }
    if (d.warns) printf("(%d warning%s above: zinc works, with the limits they say)\n", d.warns, d.warns > 1 ? "s" : "");
    printf("READY [OK]\n");
    return 0;
}
