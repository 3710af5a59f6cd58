/* The backends zinc was built with, looked up by name. */
#include <string.h>

#include "backend.h"

static const zn_backend_ops *const backends[] = {
    &zn_backend_cpu,
    &zn_backend_vulkan,
};

const zn_backend_ops *backend_find(const char *name) {
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (!strcmp(backends[i]->name, name)) return backends[i];
    return NULL;
}

const char *backend_names(void) { return "cpu, vulkan"; }

zn_backend_opts backend_default_opts(void) { return (zn_backend_opts){.device = -1}; }
