/* The table of files built into the binary (embedded.h). */
#include "embedded.h"

#include <string.h>

/* embedded_data.S */
extern const uint8_t zn_embedded_demo[], zn_embedded_demo_end[];

typedef struct embedded_file {
    const char *name;
    const uint8_t *start, *end;
} embedded_file;

bool embedded_find(const char *path, const uint8_t **data, size_t *size) {
    const embedded_file files[] = {
        {"zinc-demo-qwen35.gguf", zn_embedded_demo, zn_embedded_demo_end},
    };
    const size_t pn = sizeof ZN_EMBEDDED_PREFIX - 1;
    if (!path || strncmp(path, ZN_EMBEDDED_PREFIX, pn)) return false;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (strcmp(path + pn, files[i].name)) continue;
        *data = files[i].start;
        *size = (size_t)(files[i].end - files[i].start);
        return true;
    }
    return false;
}

bool embedded_is(const char *path) {
    const uint8_t *d;
    size_t n;
    return embedded_find(path, &d, &n);
}
