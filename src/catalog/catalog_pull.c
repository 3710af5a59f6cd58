/* catalog_pull(): what `zinc model pull WHAT` downloads, from where, checked
 * against which hash (catalog.h). Hugging Face shorthands are resolved
 * through the hub's API: GET HUB/api/models/ORG/REPO/tree/main?recursive=true
 * lists the files with their LFS SHA-256 and size (the JSON is parsed with
 * jansson); the file itself is HUB/ORG/REPO/resolve/main/PATH, whose
 * response announces the same hash in X-Linked-Etag. */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"

#define QUANT_DEFAULT "Q4_K_M"  /* what llama.cpp's -hf picks too */
#define HUB_MAX_MATCHES 8

static bool repo_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("._-+", c);
}

/* Each '/'-separated part non-empty, not "." or "..", of repo_char only. */
static bool repo_path_ok(const char *p, int min_parts) {
    int parts = 0;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return false;
        for (size_t i = 0; i < n; i++)
            if (!repo_char(p[i])) return false;
        parts++;
        p += n;
        if (*p == '/') {
            p++;
            if (!*p) return false;
        }
    }
    return parts >= min_parts;
}

static const char *hub_of(const zn_pull_opts *o) {
    const char *h = o->hub_url && *o->hub_url ? o->hub_url : ZN_HUB_URL;
    return h;
}

zn_status catalog_hub_url(const char *hub, const char *repo_file, char *out, size_t cap, zn_err *err) {
    if (!repo_path_ok(repo_file, 3))
        return zn_errf(err, ZN_ERR_ARG, "'%s' is not ORG/REPO/FILE (letters, digits, . _ - + between slashes)", repo_file);
    const char *s1 = strchr(repo_file, '/'), *s2 = strchr(s1 + 1, '/');
    size_t hn = strlen(hub);
    while (hn && hub[hn - 1] == '/') hn--;
    if ((size_t)snprintf(out, cap, "%.*s/%.*s/resolve/main/%s", (int)hn, hub, (int)(s2 - repo_file), repo_file, s2 + 1) >= cap)
        return zn_errf(err, ZN_ERR_ARG, "URL too long for %s", repo_file);
    return ZN_OK;
}

/* ---- the hub's file listing ------------------------------------------------ */

typedef struct membuf {
    char *p;
    size_t n;
    bool too_big;
} membuf;

static size_t mem_write(char *p, size_t sz, size_t n, void *ud) {
    membuf *b = ud;
    size_t len = sz * n;
    if (b->n + len > ZN_HUB_MAX_REPLY) {
        b->too_big = true;
        return 0;
    }
    char *q = realloc(b->p, b->n + len + 1);
    if (!q) return 0;
    memcpy(q + b->n, p, len);
    b->p = q;
    b->n += len;
    b->p[b->n] = 0;
    return len;
}

static zn_status hub_get(const zn_pull_opts *o, const char *url, membuf *b, zn_err *err) {
    CURL *c = curl_easy_init();
    if (!c) return zn_errf(err, ZN_ERR_IO, "libcurl: cannot start a transfer");
    char msg[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)ZN_DL_MAX_REDIRS);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "zinc");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->fetch.connect_s > 0 ? o->fetch.connect_s : (long)ZN_DL_CONNECT_S);
    long deadline = o->fetch.deadline_s > 0 && o->fetch.deadline_s < ZN_DL_CONNECT_S * 4 ? (long)(o->fetch.deadline_s * 1000)
                                                                                        : ZN_DL_CONNECT_S * 4000L;
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, deadline);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, msg);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    if (b->too_big) return zn_errf(err, ZN_ERR_FORMAT, "%s: the reply is over %u MB", url, ZN_HUB_MAX_REPLY >> 20);
    if (rc != CURLE_OK) return zn_errf(err, ZN_ERR_IO, "%s: %s", url, *msg ? msg : curl_easy_strerror(rc));
    if (code == 401 || code == 404)
        return zn_errf(err, ZN_ERR_NOT_FOUND, "%s: HTTP %ld: no such repository on the hub (or it is private or gated)",
                       url, code);
    if (code != 200) return zn_errf(err, ZN_ERR_IO, "%s: HTTP %ld", url, code);
    return ZN_OK;
}

/* Does the file name (no folders, ".gguf" cut off) say this quant? The
 * name ends in -QUANT, _QUANT or .QUANT, or a folder of the path is QUANT. */
static bool quant_matches(const char *path, const char *quant) {
    size_t qn = strlen(quant);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bn = strlen(base);
    if (bn > 5 && !strcasecmp(base + bn - 5, ".gguf")) bn -= 5;
    /* the parts of a split model: NAME-00001-of-00003 */
    if (bn > 15 && !strncmp(base + bn - 9, "-of-", 4) && base[bn - 15] == '-') {
        bool digits = true;
        for (size_t i = bn - 14; i < bn; i++) digits &= (i >= bn - 9 && i < bn - 5) || (base[i] >= '0' && base[i] <= '9');
        if (digits) bn -= 15;
    }
    if (bn > qn && !strncasecmp(base + bn - qn, quant, qn) && strchr("-_.", base[bn - qn - 1])) return true;
    for (const char *p = path; p < base;) {
        const char *e = strchr(p, '/');
        if ((size_t)(e - p) == qn && !strncasecmp(p, quant, qn)) return true;
        p = e + 1;
    }
    return false;
}

/* hf:ORG/REPO[:QUANT] -> the one GGUF of that quant, its hash and size. */
static zn_status hub_pick(const zn_pull_opts *o, const char *spec, char *path, size_t pcap, char *sha, uint64_t *size,
                          zn_err *err) {
    char repo[512], quant[64];
    const char *colon = strchr(spec, ':');
    size_t rn = colon ? (size_t)(colon - spec) : strlen(spec);
    if (rn >= sizeof repo) return zn_errf(err, ZN_ERR_ARG, "hf:%s: repository name too long", spec);
    memcpy(repo, spec, rn);
    repo[rn] = 0;
    snprintf(quant, sizeof quant, "%s", colon ? colon + 1 : QUANT_DEFAULT);
    bool quant_ok = *quant && strlen(quant) < sizeof quant - 1;
    for (const char *q = quant; *q && quant_ok; q++) quant_ok = repo_char(*q);
    if (!repo_path_ok(repo, 2) || strchr(strchr(repo, '/') + 1, '/') || !quant_ok)
        return zn_errf(err, ZN_ERR_ARG, "hf:%s: want hf:ORG/REPO[:QUANT] (e.g. hf:unsloth/Qwen3.5-2B-GGUF:Q4_K_M)", spec);
    char url[ZN_PATH_MAX];
    size_t hn = strlen(hub_of(o));
    while (hn && hub_of(o)[hn - 1] == '/') hn--;
    snprintf(url, sizeof url, "%.*s/api/models/%s/tree/main?recursive=true", (int)hn, hub_of(o), repo);
    membuf b = {0};
    zn_status s = hub_get(o, url, &b, err);
    if (s) {
        free(b.p);
        return s;
    }
    json_error_t je;
    json_t *root = json_loadb(b.p ? b.p : "", b.n, 0, &je);
    free(b.p);
    if (!json_is_array(root)) {
        json_decref(root);
        return zn_errf(err, ZN_ERR_FORMAT, "%s: not a file listing (JSON array): %s", url, root ? "other JSON" : je.text);
    }
    const char *match[HUB_MAX_MATCHES];
    json_t *mobj[HUB_MAX_MATCHES];
    int nm = 0, ggufs = 0;
    size_t i;
    json_t *it;
    json_array_foreach(root, i, it) {
        const char *p = json_string_value(json_object_get(it, "path"));
        const char *type = json_string_value(json_object_get(it, "type"));
        if (!p || (type && strcmp(type, "file"))) continue;
        size_t pn = strlen(p);
        if (pn < 6 || strcasecmp(p + pn - 5, ".gguf")) continue;
        const char *base = strrchr(p, '/');
        base = base ? base + 1 : p;
        if (!strncasecmp(base, "mmproj", 6)) continue;  /* vision projectors, not models */
        ggufs++;
        if (quant_matches(p, quant) && nm < HUB_MAX_MATCHES) match[nm] = p, mobj[nm] = it, nm++;
    }
    if (nm == 0) {
        s = zn_errf(err, ZN_ERR_NOT_FOUND, "hf:%s: no GGUF file for %s in the repository (%d GGUF files; "
                    "name one: zinc model pull %s/FILE.gguf)", spec, quant, ggufs, repo);
    } else if (nm > 1) {
        char list[ZN_ERR_MSG_MAX / 2] = "";
        for (int k = 0; k < nm; k++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", match[k]);
        }
        bool split = strstr(list, "-of-") != NULL;
        s = zn_errf(err, split ? ZN_ERR_UNSUPPORTED : ZN_ERR_ARG, "hf:%s: %s: %s", spec,
                    split ? "the model is split in several files, which zinc does not load" : "several files match; pull one",
                    list);
    } else {
        json_t *lfs = json_object_get(mobj[0], "lfs");
        const char *oid = json_string_value(json_object_get(lfs, "oid"));
        json_t *sz = json_object_get(lfs, "size");
        if (!sz) sz = json_object_get(mobj[0], "size");
        *sha = 0;
        if (oid && catalog_is_sha256(oid)) snprintf(sha, ZN_SHA256_HEX, "%s", oid);
        *size = json_is_integer(sz) && json_integer_value(sz) > 0 ? (uint64_t)json_integer_value(sz) : 0;
        if (!repo_path_ok(match[0], 1) || (size_t)snprintf(path, pcap, "%s/%s", repo, match[0]) >= pcap)
            s = zn_errf(err, ZN_ERR_FORMAT, "hf:%s: the hub lists an unusable path '%s'", spec, match[0]);
    }
    json_decref(root);
    return s;
}

/* ---- the pull --------------------------------------------------------------- */

static const zn_catalog_entry *find_in(const zn_pull_opts *o, const char *id) {
    if (!o->catalog) return catalog_find(id);
    for (size_t i = 0; i < o->n_catalog; i++) {
        if (!strcmp(o->catalog[i].id, id)) return &o->catalog[i];
        for (int k = 0; k < ZN_CATALOG_MAX_ALIASES && o->catalog[i].aliases[k]; k++)
            if (!strcmp(o->catalog[i].aliases[k], id)) return &o->catalog[i];
    }
    return NULL;
}

static bool is_gguf_name(const char *s) {
    size_t n = strlen(s);
    return n > 5 && !strcasecmp(s + n - 5, ".gguf");
}

zn_status catalog_pull(const char *what, const zn_pull_opts *o, zn_pull_result *r, zn_err *err) {
    memset(r, 0, sizeof *r);
    zn_fetch_opts f = o->fetch;
    char file[256] = "", sha[ZN_SHA256_HEX] = "", dir[ZN_PATH_MAX];
    if (o->sha256 && !catalog_is_sha256(o->sha256))
        return zn_errf(err, ZN_ERR_ARG, "--sha256 '%s' is not 64 hex digits", o->sha256);
    const zn_catalog_entry *e = find_in(o, what);
    r->entry = e;
    if (e && !e->url) {
        r->shipped = true;
        snprintf(r->id, sizeof r->id, "%s", e->id);
        return catalog_demo_path(NULL, r->path, sizeof r->path, err);
    }
    zn_status s = ZN_OK;
    if (e) {
        /* catalog files live on the hub: --hub-url moves them with it */
        size_t hl = strlen(ZN_HUB_URL);
        if (o->hub_url && !strncmp(e->url, ZN_HUB_URL "/", hl + 1))
            snprintf(r->url, sizeof r->url, "%s%s", hub_of(o), e->url + hl);
        else
            snprintf(r->url, sizeof r->url, "%s", e->url);
        snprintf(file, sizeof file, "%s", e->file);
        snprintf(r->id, sizeof r->id, "%s", e->id);
        f.size_hint = e->size;
        if (e->sha256) f.expect = e->sha256, f.expect_src = ZN_HASH_CATALOG;
    } else if (strstr(what, "://")) {
        snprintf(r->url, sizeof r->url, "%s", what);
        catalog_url_filename(what, file, sizeof file);
        if (!*file) return zn_errf(err, ZN_ERR_ARG, "%s: the URL does not end in a usable file name", what);
    } else if (!strncmp(what, "hf:", 3) || (strchr(what, '/') && is_gguf_name(what))) {
        const char *spec = !strncmp(what, "hf:", 3) ? what + 3 : what;
        char path[ZN_PATH_MAX];
        uint64_t size = 0;
        if (is_gguf_name(spec)) {
            snprintf(path, sizeof path, "%s", spec);  /* ORG/REPO/FILE.gguf: the resolve request says the hash */
        } else if ((s = hub_pick(o, spec, path, sizeof path, sha, &size, err))) {
            return s;
        }
        if ((s = catalog_hub_url(hub_of(o), path, r->url, sizeof r->url, err))) return s;
        catalog_url_filename(path, file, sizeof file);
        if (!*file) return zn_errf(err, ZN_ERR_ARG, "%s: no usable file name", what);
        if (*sha) f.expect = sha, f.expect_src = ZN_HASH_HUB;
        f.expect_size = size;
        f.size_hint = size;
    } else {
        return zn_errf(err, ZN_ERR_ARG, "'%s' is neither a catalog id, a URL nor hf:ORG/REPO[:QUANT] or ORG/REPO/FILE.gguf "
                       "(zinc model list)", what);
    }
    if (!r->id[0]) snprintf(r->id, sizeof r->id, "%s", file);
    if (o->sha256) f.expect = o->sha256, f.expect_src = ZN_HASH_USER;
    if ((s = catalog_models_dir(o->home, true, dir, sizeof dir, err))) return s;
    if ((size_t)snprintf(r->path, sizeof r->path, "%s/%s", dir, file) >= sizeof r->path)
        return zn_errf(err, ZN_ERR_ARG, "path too long: %s/%s", dir, file);
    struct stat st;
    if (lstat(r->path, &st) == 0) {
        r->already = true;
        zn_hash_src src = ZN_HASH_NONE;
        zn_err e2 = {0};
        if (catalog_hash_record_read(r->path, r->f.sha256, &src, &e2) == ZN_OK) r->f.verified = src;
        r->f.size = (uint64_t)st.st_size;
        return ZN_OK;
    }
    if (f.progress) fprintf(f.progress, "zinc: downloading %s\nzinc:   to %s\n", r->url, r->path);
    s = catalog_download(r->url, r->path, &f, &r->f, err);
    /* the hub has replaced a catalog file: its own hash can verify the new one */
    const size_t hl = strlen(ZN_HUB_URL "/");
    if (s && r->f.hub_differs && e && f.expect_src == ZN_HASH_CATALOG && !strncmp(e->url, ZN_HUB_URL "/", hl)) {
        char repo_file[ZN_PATH_MAX];
        const char *rm = strstr(e->url + hl, "/resolve/main/");
        if (rm && (size_t)snprintf(repo_file, sizeof repo_file, "%.*s/%s", (int)(rm - e->url - hl), e->url + hl,
                                   rm + strlen("/resolve/main/")) < sizeof repo_file) {
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof err->msg - n, "; `zinc model pull %s` takes the hub's file, verified against "
                     "the hub's hash", repo_file);
        }
    }
    return s;
}
