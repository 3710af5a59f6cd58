/* The embedded web UI's lookup table (generated: build/gen/web_embed.h). */
#include "web_assets.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

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

/* The q-value of one Accept-Encoding element's parameters (after the coding). */
static double qvalue(const char *p, const char *end) {
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t')) p++;
        if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            char num[16];
            size_t n = (size_t)(end - p - 2) < sizeof num - 1 ? (size_t)(end - p - 2) : sizeof num - 1;
            memcpy(num, p + 2, n);
            num[n] = 0;
            char *e;
            double q = strtod(num, &e);
            return e == num || q < 0 ? 0 : q;
        }
        while (p < end && *p != ';') p++;
    }
    return 1;
}

bool web_accepts_gzip(const char *ae) {
    if (!ae) return false;
    double gz = -1, any = -1;  /* -1: not listed */
    for (const char *p = ae; *p;) {
        while (*p == ',' || *p == ' ' || *p == '\t') p++;
        const char *end = p + strcspn(p, ",");
        size_t n = strcspn(p, "; \t");
        if (p + n > end) n = (size_t)(end - p);
        double q = qvalue(p + n, end);
        if ((n == 4 && !strncasecmp(p, "gzip", 4)) || (n == 6 && !strncasecmp(p, "x-gzip", 6))) gz = q;
        else if (n == 1 && *p == '*') any = q;
        p = end;
    }
    return gz >= 0 ? gz > 0 : any > 0;
}

unsigned char *web_asset_inflate(const zn_web_asset *a, size_t *len) {
    if (a->len < 18) return NULL;
    /* gzip's trailer ends with the input's size (mod 2^32; the assets are small) */
    const unsigned char *t = a->data + a->len - 4;
    size_t want = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    unsigned char *out = malloc(want ? want : 1);
    if (!out) return NULL;
    z_stream z = {0};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {  /* 16: a gzip wrapper */
        free(out);
        return NULL;
    }
    z.next_in = (unsigned char *)a->data;
    z.avail_in = (uInt)a->len;
    z.next_out = out;
    z.avail_out = (uInt)want;
    int rc = inflate(&z, Z_FINISH);
    size_t got = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != want) {
        free(out);
        return NULL;
    }
    *len = got;
    return out;
}
