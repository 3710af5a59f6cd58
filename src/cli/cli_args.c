/* Argument helpers shared by the sub-commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vk_device.h"

int cli_opt_in(const char *a, const char *const *names) {
    for (; *names; names++)
        if (!strcmp(a, *names)) return 1;
    return 0;
}

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
    vkdev_info infos[ZN_VK_MAX_DEVICES];
    int n = 0;
    zn_err err = {0};
    if (vkdev_list(infos, ZN_VK_MAX_DEVICES, &n, &err) != ZN_OK) {
        fprintf(stderr, "zinc: backend cpu (no Vulkan: %s)\n", err.msg);
        return "cpu";
    }
    int best = vkdev_default_index(infos, n);
    if (best < 0 || !strcmp(infos[best].kind, "cpu") || !infos[best].bda) {
        fprintf(stderr, "zinc: backend cpu (no usable Vulkan GPU%s%s)\n", best >= 0 ? "; found only " : "",
                best >= 0 ? infos[best].name : "");
        return "cpu";
    }
    fprintf(stderr, "zinc: backend vulkan (%s)\n", infos[best].name);
    return "vulkan";
}
