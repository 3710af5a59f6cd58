/* Argument helpers shared by the sub-commands: numbers, and the engine
 * options of every command that runs a model (backend, device, tuning),
 * checked against what the backends report through backend.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "profile.h"

int cli_parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* The default backend: Vulkan when a real GPU is there (lavapipe and other
 * CPU-emulated devices are slower than the CPU backend, so they don't
 * count), else the CPU. The choice and its reason go to stderr once. */
const char *cli_backend_or_default(const char *opt) {
    if (opt && strcmp(opt, "auto")) return opt;
    const zn_backend_ops *vk = backend_find("vulkan");
    zn_device_info devs[ZN_MAX_DEVICES];
    int n = 0, best = -1;
    zn_err err = {0};
    if (!vk || !vk->devices || vk->devices(devs, ZN_MAX_DEVICES, &n, &best, &err) != ZN_OK) {
        fprintf(stderr, "zinc: backend cpu (no Vulkan: %s)\n", err.msg);
        return "cpu";
    }
    if (best < 0 || devs[best].emulated || !devs[best].usable) {
        fprintf(stderr, "zinc: backend cpu (no usable Vulkan GPU%s%s)\n", best >= 0 ? "; found only " : "",
                best >= 0 ? devs[best].name : "");
        return "cpu";
    }
    fprintf(stderr, "zinc: backend vulkan (%s)\n", devs[best].name);
    return "vulkan";
}

/* The device the default backend would run on, as a hardware profile: the
 * default Vulkan device when it is a GPU (the rule above), else the CPU and
 * its RAM. */
void cli_detect_profile(zn_profile *p, zn_hw *hw) {
    memset(hw, 0, sizeof *hw);
    const zn_backend_ops *vk = backend_find("vulkan");
    zn_device_info devs[ZN_MAX_DEVICES];
    int n = 0, best = -1;
    zn_err err = {0};
    if (!vk || !vk->devices || vk->devices(devs, ZN_MAX_DEVICES, &n, &best, &err) != ZN_OK) best = -1;
    if (best >= 0 && !devs[best].emulated && devs[best].usable) {
        const zn_device_info *v = &devs[best];
        hw->gpu = true;
        hw->vendor_id = v->vendor_id;
        hw->device_id = v->device_id;
        hw->mem_bytes = v->vram_bytes;
        hw->integrated = !strcmp(v->kind, "integrated");
        snprintf(hw->name, sizeof hw->name, "%s", v->name);
    } else {
        hw->mem_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
        snprintf(hw->name, sizeof hw->name, "cpu");
    }
    profile_from_hw(hw, p);
}

/* The one variable zinc reads for configuration: the Vulkan tuning
 * overrides; --tune applies after it. */
const char *cli_tune_env(void) { return getenv("ZN_TUNE"); }

int cli_engine_arg(const char *a, const char *v, cli_engine_args *ea) {
    if (!strcmp(a, "--backend")) ea->backend = v;
    else if (!strcmp(a, "--device")) ea->device = v;
    else if (!strcmp(a, "--tune")) ea->tune = v;
    else if (!strcmp(a, "--kv-type")) ea->kv_type = v;
    else return 0;
    return 1;
}

/* "0: NAME (kind), 1: ..." for messages. */
static void device_names(const zn_device_info *d, int n, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < cap; i++) {
        int w = snprintf(buf + k, cap - k, "%s%d: %s (%s%s)", i ? ", " : "", i, d[i].name, d[i].kind,
                         d[i].usable ? "" : ", unusable");
        if (w < 0) break;
        k += (size_t)w;
    }
}

/* --device: an index of the backend's devices, checked against the list. */
static int check_device(const char *cmd, const zn_backend_ops *be, const char *v, int *out) {
    zn_device_info devs[ZN_MAX_DEVICES];
    int n = 0, def = -1;
    zn_err err = {0};
    if (!be->devices) {
        fprintf(stderr, "%s: --device %s: the %s backend has no devices to choose\n", cmd, v, be->name);
        return 2;
    }
    if (be->devices(devs, ZN_MAX_DEVICES, &n, &def, &err) != ZN_OK || n == 0) {
        fprintf(stderr, "%s: --device %s: no %s device (%s)\n", cmd, v, be->name, err.msg[0] ? err.msg : "none found");
        return 2;
    }
    char names[1024];
    device_names(devs, n, names, sizeof names);
    long idx;
    if (!cli_parse_long(v, 0, n - 1, &idx)) {
        fprintf(stderr, "%s: --device '%s': %s; the %s devices are %s (zinc --list-devices)\n", cmd, v,
                cli_parse_long(v, 0, 1l << 30, &idx) ? "no such device" : "not a device index", be->name, names);
        return 2;
    }
    if (!devs[idx].usable) {
        fprintf(stderr, "%s: --device %ld: %s cannot run zinc (%s); the %s devices are %s\n", cmd, idx, devs[idx].name,
                devs[idx].line, be->name, names);
        return 2;
    }
    *out = (int)idx;
    return 0;
}

/* One source of tuning overrides, checked against the device it will run on. */
static int check_tune(const char *cmd, const zn_backend_ops *be, int device, const char *what, const char *spec) {
    zn_tuning t;
    zn_err err = {0};
    if (be->tuning(NULL, device, spec, &t, &err) == ZN_OK) return 0;
    fprintf(stderr, "%s: %s '%s': %s\n", cmd, what, spec, err.msg);
    return 2;
}

int cli_engine_opts(const char *cmd, const cli_engine_args *ea, zn_engine_opts *o, char *tune, size_t tune_cap) {
    *o = engine_default_opts();
    /* a device index means the device's backend */
    o->backend = ea->device && (!ea->backend || !strcmp(ea->backend, "auto")) ? "vulkan" : cli_backend_or_default(ea->backend);
    o->be.n_threads = (int)ea->threads;
    o->be.profile = ea->profile;
    o->be.trace = ea->trace;
    if (ea->kv_type) {
        const int kt = backend_kv_type_parse(ea->kv_type);
        if (kt < 0) {
            fprintf(stderr, "%s: --kv-type '%s': not a KV cache type (f16, q8_0, q4_0, q4_0r, q3_0r)\n", cmd, ea->kv_type);
            return 2;
        }
        o->be.kv_type = (zn_kv_type)kt;
    }
    const zn_backend_ops *be = backend_find(o->backend);
    if (!be) {
        fprintf(stderr, "%s: unknown backend '%s' (available: %s)\n", cmd, o->backend, backend_names());
        return 2;
    }
    if (ea->device && check_device(cmd, be, ea->device, &o->be.device)) return 2;
    const char *env = cli_tune_env();
    if (!be->tuning) {
        if (ea->tune) {
            fprintf(stderr, "%s: --tune: the %s backend has no tuning keys\n", cmd, be->name);
            return 2;
        }
        return 0;
    }
    if (env && *env && check_tune(cmd, be, o->be.device, "ZN_TUNE", env)) return 2;
    if (ea->tune && check_tune(cmd, be, o->be.device, "--tune", ea->tune)) return 2;
    const int n = snprintf(tune, tune_cap, "%s%s%s", env ? env : "", env && ea->tune ? "," : "", ea->tune ? ea->tune : "");
    if (n < 0 || (size_t)n >= tune_cap) {
        fprintf(stderr, "%s: ZN_TUNE and --tune: more than %zu bytes of tuning\n", cmd, tune_cap - 1);
        return 2;
    }
    o->be.tune = tune;
    return 0;
}
