/* The embedded web UI's lookup table (generated: build/gen/web_embed.h). */
#include "web_assets.h"

#include <string.h>

#include "web_embed.h"

#define WEB_N (sizeof zn_web_assets / sizeof zn_web_assets[0])

const zn_web_asset *web_asset_find(const char *path) {
    if (!path || path[0] != '/') return NULL;
    size_t n = strcspn(path, "?#");
    if (n == 1) {
        path = "/index.html";
        n = strlen(path);
    }
    for (size_t i = 0; i < WEB_N; i++) {
        const char *p = zn_web_assets[i].path;
        if (strlen(p) == n && memcmp(p, path, n) == 0) return &zn_web_assets[i];
    }
    return NULL;
}

const zn_web_asset *web_asset_list(size_t *n) {
    *n = WEB_N;
    return zn_web_assets;
}
