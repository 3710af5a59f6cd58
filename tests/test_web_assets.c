/* The embedded web UI: every file under src/server/web/ is found at its URL
 * path with the right content type and an ETag, its data is gzip that
 * inflates (gzip -dc) to the file byte for byte, nothing else is embedded,
 * "/" is the index page, and unknown or malformed paths give NULL.
 * Run from the repository root (as make test does). */
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "web_assets.h"

#define WEB_ROOT "src/server/web"
#define MAX_FILES 256

static char *files[MAX_FILES];
static int n_files;

static void walk(const char *dir, const char *rel) {
    DIR *d = opendir(dir);
    CHECK_MSG(d, "cannot open %s (run from the repository root)", dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        char path[4096], r[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(r, sizeof r, "%s/%s", rel, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) walk(path, r);
        else if (n_files < MAX_FILES) files[n_files++] = strdup(r);
    }
    closedir(d);
}

/* gzip -dc of the bytes; NULL when gzip fails. */
static unsigned char *inflate_gzip(const unsigned char *data, size_t len, size_t *out_len) {
    char in[] = "/tmp/zn-web-gz-XXXXXX";
    int fd = mkstemp(in);
    if (fd < 0) return NULL;
    int ok = write(fd, data, len) == (ssize_t)len;
    close(fd);
    unsigned char *buf = NULL;
    if (ok) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "gzip -dc < %s", in);
        FILE *p = popen(cmd, "r");
        if (p) {
            size_t cap = 1 << 16, n = 0;
            buf = malloc(cap);
            size_t got;
            while (buf && (got = fread(buf + n, 1, cap - n, p)) > 0) {
                n += got;
                if (n == cap) buf = realloc(buf, cap *= 2);
            }
            if (pclose(p) != 0) {
                free(buf);
                buf = NULL;
            }
            *out_len = n;
        }
    }
    unlink(in);
    return buf;
}

static const char *type_for(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return "";
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(dot, ".js") || !strcmp(dot, ".mjs")) return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".svg")) return "image/svg+xml";
    if (!strcmp(dot, ".png")) return "image/png";
    if (!strcmp(dot, ".json") || !strcmp(dot, ".webmanifest")) return "application/json";
    if (!strcmp(dot, ".txt")) return "text/plain; charset=utf-8";
    return "";
}

static void test_every_file_embedded(void) {
    CHECK_MSG(n_files >= 5, "only %d files under %s", n_files, WEB_ROOT);
    for (int i = 0; i < n_files; i++) {
        const zn_web_asset *a = web_asset_find(files[i]);
        CHECK_MSG(a, "%s is not embedded", files[i]);
        if (!a) continue;
        CHECK_EQ_STR(a->path, files[i]);
        CHECK_EQ_STR(a->content_type, type_for(files[i]));
        CHECK_MSG(a->etag && strlen(a->etag) > 10 && a->etag[0] == '"' && a->etag[strlen(a->etag) - 1] == '"',
                  "%s: etag %s is not a quoted hash", files[i], a->etag ? a->etag : "(null)");
        CHECK_MSG(a->len > 18 && a->data[0] == 0x1f && a->data[1] == 0x8b, "%s: not gzip data", files[i]);
        char src[4096];
        snprintf(src, sizeof src, "%s%s", WEB_ROOT, files[i]);
        size_t want_n = 0, got_n = 0;
        char *want = harness_read_file(src, &want_n);
        unsigned char *got = inflate_gzip(a->data, a->len, &got_n);
        CHECK_MSG(want && got, "%s: cannot read the source or inflate the asset", files[i]);
        if (want && got) {
            CHECK_EQ_INT(got_n, want_n);
            CHECK_MSG(got_n == want_n && memcmp(got, want, want_n) == 0, "%s: inflated data differs from %s", files[i], src);
        }
        free(want);
        free(got);
    }
}

/* web_asset_inflate (what a client that takes no gzip gets) is the file too */
static void test_identity_form(void) {
    for (int i = 0; i < n_files; i++) {
        const zn_web_asset *a = web_asset_find(files[i]);
        if (!a) continue;
        char src[4096];
        snprintf(src, sizeof src, "%s%s", WEB_ROOT, files[i]);
        size_t want_n = 0, got_n = 0;
        char *want = harness_read_file(src, &want_n);
        unsigned char *got = web_asset_inflate(a, &got_n);
        CHECK_MSG(want && got, "%s: cannot read the source or web_asset_inflate it", files[i]);
        if (want && got)
            CHECK_MSG(got_n == want_n && memcmp(got, want, want_n) == 0, "%s: web_asset_inflate differs from %s",
                      files[i], src);
        free(want);
        free(got);
    }
    /* broken data (a truncated copy) gives NULL, not a short file */
    const zn_web_asset *a = web_asset_find("/app.js");
    if (!a) return;
    zn_web_asset cut = *a;
    cut.len = a->len / 2;
    size_t n = 0;
    unsigned char *got = web_asset_inflate(&cut, &n);
    CHECK(got == NULL);
    free(got);
}

static void test_accept_encoding(void) {
    static const struct { const char *ae; bool gz; } cases[] = {
        {"gzip", true}, {"gzip, deflate, br, zstd", true}, {"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
        {"GZIP", true}, {"x-gzip", true}, {"*", true}, {"deflate, *;q=0.5", true}, {"  gzip ; q=0.5 ", true},
        {"identity", false}, {"", false}, {"br", false}, {"gzip;q=0", false}, {"gzip;q=0.000", false},
        {"*;q=0", false}, {"gzip;q=0, *", false}, {"*, gzip;q=0", false}, {"gzipx", false}, {"x-gzipper", false},
        {"deflate;q=0.5, br", false}, {"gzip;q=", false}, {",,,", false}, {"; q=1", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(web_accepts_gzip(cases[i].ae) == cases[i].gz, "Accept-Encoding '%s': want %s", cases[i].ae,
                  cases[i].gz ? "gzip" : "identity");
    CHECK(!web_accepts_gzip(NULL));
}

static void test_nothing_else_embedded(void) {
    size_t n = 0;
    const zn_web_asset *all = web_asset_list(&n);
    CHECK_EQ_INT(n, n_files);
    for (size_t i = 0; i < n; i++) {
        CHECK(web_asset_find(all[i].path) == &all[i]);
        for (size_t j = 0; j < i; j++) CHECK_MSG(strcmp(all[i].path, all[j].path), "%s twice", all[i].path);
        for (size_t j = 0; j < i; j++)
            CHECK_MSG(strcmp(all[i].etag, all[j].etag) || !strcmp(all[i].path, all[j].path),
                      "%s and %s share an etag", all[i].path, all[j].path);
    }
}

static void test_index_and_queries(void) {
    const zn_web_asset *index = web_asset_find("/index.html");
    CHECK(index != NULL);
    CHECK(web_asset_find("/") == index);
    CHECK(web_asset_find("/?utm=x") == index);
    CHECK(web_asset_find("/#frag") == index);
    CHECK(web_asset_find("/app.js?v=2") == web_asset_find("/app.js"));
    CHECK(web_asset_find("/app.js") != NULL);
    CHECK(web_asset_find("/style.css") != NULL);
}

static void test_not_found(void) {
    const char *bad[] = {"", "index.html", "/index.htm", "/index.html/", "//", "/../Makefile", "/vendor",
                         "/vendor/", "/APP.JS", "/app.js\x01", "/v1/models", "/favicon.ico"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(web_asset_find(bad[i]) == NULL, "'%s' found", bad[i]);
    CHECK(web_asset_find(NULL) == NULL);
}

/* The page needs nothing the policy forbids: no inline script or style
 * attribute and no other origin in the HTML. */
static void test_index_fits_csp(void) {
    char *html = harness_read_file(WEB_ROOT "/index.html", NULL);
    CHECK(html != NULL);
    if (!html) return;
    CHECK_MSG(!strstr(html, "style="), "index.html has an inline style attribute");
    CHECK_MSG(!strstr(html, "<style"), "index.html has an inline <style>");
    for (const char *p = html; (p = strstr(p, " on")); p++) { /* an attribute on...= */
        const char *q = p + 3;
        while (*q >= 'a' && *q <= 'z') q++;
        CHECK_MSG(q == p + 3 || *q != '=', "index.html has an inline event handler: %.30s", p);
    }
    CHECK_MSG(!strstr(html, "http:") && !strstr(html, "https:"), "index.html names another origin");
    for (const char *p = html; (p = strstr(p, "<script")); p++)
        CHECK_MSG(strncmp(p, "<script type=\"module\" src=\"/", 28) == 0, "inline or foreign script: %.60s", p);
    free(html);
    CHECK(strstr(WEB_ASSET_CSP, "script-src 'self'") && !strstr(WEB_ASSET_CSP, "unsafe"));
}

int main(void) {
    walk(WEB_ROOT, "");
    RUN(test_every_file_embedded);
    RUN(test_identity_form);
    RUN(test_accept_encoding);
    RUN(test_nothing_else_embedded);
    RUN(test_index_and_queries);
    RUN(test_not_found);
    RUN(test_index_fits_csp);
    for (int i = 0; i < n_files; i++) free(files[i]);
    return harness_report("web_assets");
}
