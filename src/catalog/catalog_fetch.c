/* catalog_download(): libcurl into DEST.part, SHA-256 while streaming,
 * resume with a Range request, verify, then rename into place. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "catalog.h"
#include "file.h"
#include "timer.h"

#define DL_DISK_MARGIN (64ull << 20)  /* keep this much free after the download */

typedef struct dl {
    CURL *c;
    FILE *f;
    EVP_MD_CTX *md;
    const char *url, *part;
    uint64_t have;      /* bytes in .part before this transfer */
    uint64_t got;       /* bytes written by this transfer */
    uint64_t total;     /* expected final size, 0 if unknown */
    uint64_t size_hint;
    bool started;
    zn_status fail;     /* set by a callback that aborted the transfer */
    zn_err *err;
    FILE *progress;
    bool tty;
    double t0, last_line;
    int last_decile;
} dl;

static zn_status disk_check(dl *d, uint64_t need) {
    char dir[ZN_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", d->part);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    struct statvfs v;
    if (statvfs(*dir ? dir : "/", &v)) return zn_errf(d->err, ZN_ERR_IO, "%s: statvfs: %s", dir, strerror(errno));
    uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
    if (avail < need + DL_DISK_MARGIN)
        return zn_errf(d->err, ZN_ERR_IO, "%s: not enough disk space for %s: need %.1f MB (+%llu MB margin), %.1f MB free",
                       dir, d->url, need / 1e6, DL_DISK_MARGIN >> 20, avail / 1e6);
    return ZN_OK;
}

/* First bytes of a response: restart when the server ignored our Range,
 * learn the size, check the disk. */
static zn_status on_start(dl *d) {
    long code = 0;
    curl_off_t cl = -1;
    curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(d->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    if (d->have && code != 206) {
        if (fflush(d->f) || ftruncate(fileno(d->f), 0))
            return zn_errf(d->err, ZN_ERR_IO, "%s: cannot truncate: %s", d->part, strerror(errno));
        if (!EVP_DigestInit_ex(d->md, EVP_sha256(), NULL)) return zn_errf(d->err, ZN_ERR_IO, "sha256: OpenSSL failed");
        if (d->progress) fprintf(d->progress, "zinc: the server does not resume downloads; starting again\n");
        d->have = 0;
    }
    d->total = cl >= 0 ? d->have + (uint64_t)cl : 0;
    uint64_t need = cl >= 0 ? (uint64_t)cl : (d->size_hint > d->have ? d->size_hint - d->have : 0);
    return disk_check(d, need);
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    dl *d = ud;
    size_t len = sz * n;
    if (!d->started) {
        d->started = true;
        if ((d->fail = on_start(d))) return 0;
    }
    if (fwrite(p, 1, len, d->f) != len) {
        d->fail = zn_errf(d->err, ZN_ERR_IO, "%s: write: %s", d->part, strerror(errno));
        return 0;
    }
    if (!EVP_DigestUpdate(d->md, p, len)) {
        d->fail = zn_errf(d->err, ZN_ERR_IO, "sha256: OpenSSL failed");
        return 0;
    }
    d->got += len;
    return len;
}

static void fmt_eta(double s, char *out, size_t cap) {
    if (!(s >= 0) || s > 359999) snprintf(out, cap, "--:--");
    else snprintf(out, cap, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

static void show(dl *d, bool final) {
    double t = timer_now(), dt = t - d->t0;
    uint64_t done = d->have + d->got;
    double rate = dt > 0 ? d->got / dt : 0;
    char eta[32];
    fmt_eta(d->total && rate > 0 ? (d->total - done) / rate : -1, eta, sizeof eta);
    char line[160];
    if (d->total)
        snprintf(line, sizeof line, "%5.1f%%  %.1f / %.1f MB  %.2f MB/s  ETA %s", 100.0 * done / d->total, done / 1e6,
                 d->total / 1e6, rate / 1e6, eta);
    else
        snprintf(line, sizeof line, "%.1f MB  %.2f MB/s", done / 1e6, rate / 1e6);
    if (d->tty) {
        int w = 30, fill = d->total ? (int)((double)w * done / d->total) : 0;
        char bar[64];
        for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
        bar[w] = 0;
        fprintf(d->progress, "\r[%s] %s   %s", bar, line, final ? "\n" : "");
    } else {
        int decile = d->total ? (int)(10.0 * done / d->total) : 0;
        if (!final && decile == d->last_decile && t - d->last_line < 5) return;
        d->last_decile = decile;
        d->last_line = t;
        fprintf(d->progress, "zinc: download %s\n", line);
    }
    fflush(d->progress);
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    dl *d = ud;
    if (d->progress && d->started) show(d, false);
    return 0;
}

/* One transfer; returns the curl code. */
static CURLcode transfer(dl *d, char *curl_msg) {
    curl_easy_reset(d->c);
    curl_easy_setopt(d->c, CURLOPT_URL, d->url);
    curl_easy_setopt(d->c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(d->c, CURLOPT_MAXREDIRS, 10L);
    /* file://, ftp://, gopher://... would copy local files or talk to other
     * services: only the web, also where a redirect points */
    curl_easy_setopt(d->c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(d->c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(d->c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(d->c, CURLOPT_USERAGENT, "zinc");
    curl_easy_setopt(d->c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(d->c, CURLOPT_LOW_SPEED_LIMIT, 1L);  /* a stalled server: give up after 60 s */
    curl_easy_setopt(d->c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(d->c, CURLOPT_ERRORBUFFER, curl_msg);
    curl_easy_setopt(d->c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(d->c, CURLOPT_WRITEDATA, d);
    curl_easy_setopt(d->c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(d->c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(d->c, CURLOPT_XFERINFODATA, d);
    curl_easy_setopt(d->c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)d->have);
    d->started = false;
    d->got = 0;
    d->total = 0;
    d->fail = ZN_OK;
    d->t0 = d->last_line = timer_now();
    d->last_decile = -1;
    curl_msg[0] = 0;
    return curl_easy_perform(d->c);
}

/* Hashes what an earlier run left in the .part, so the digest continues. */
static zn_status hash_existing(dl *d) {
    unsigned char buf[1 << 14];
    rewind(d->f);
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, d->f)) > 0) {
        if (!EVP_DigestUpdate(d->md, buf, k)) return zn_errf(d->err, ZN_ERR_IO, "sha256: OpenSSL failed");
        d->have += k;
    }
    if (ferror(d->f)) return zn_errf(d->err, ZN_ERR_IO, "%s: read: %s", d->part, strerror(errno));
    return ZN_OK;
}

static void hex_of(EVP_MD_CTX *md, char hex[ZN_SHA256_HEX]) {
    unsigned char dg[32];
    unsigned int n = 0;
    if (!EVP_DigestFinal_ex(md, dg, &n) || n != 32) memset(dg, 0, sizeof dg);
    catalog_hex(dg, hex);
}

/* The transfers (a second one when the server refuses to resume a .part
 * that is already whole or corrupt), then the checks. */
static zn_status run(dl *d, const char *dest, const char *expect, char got_hex[ZN_SHA256_HEX]) {
    char msg[CURL_ERROR_SIZE];
    zn_status s = hash_existing(d);
    if (s) return s;
    if (d->have && d->progress) fprintf(d->progress, "zinc: resuming %s at %.1f MB\n", d->part, d->have / 1e6);
    CURLcode rc;
    long code = 0;
    for (int attempt = 0;; attempt++) {
        rc = transfer(d, msg);
        code = 0;
        curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &code);
        /* 416: the .part is already whole (or longer); RANGE_ERROR: the
         * server ignores Range. Either way: start again, once. */
        bool restart = (rc == CURLE_HTTP_RETURNED_ERROR && code == 416) || rc == CURLE_RANGE_ERROR;
        if (restart && d->have && attempt == 0) {
            if (d->progress) fprintf(d->progress, "zinc: the server cannot resume %s; starting again\n", d->part);
            if (fflush(d->f) || ftruncate(fileno(d->f), 0) || !EVP_DigestInit_ex(d->md, EVP_sha256(), NULL))
                return zn_errf(d->err, ZN_ERR_IO, "%s: cannot truncate: %s", d->part, strerror(errno));
            d->have = 0;
            continue;
        }
        break;
    }
    if (d->fail) return d->fail;
    if (d->progress && d->started) show(d, true);
    uint64_t size = d->have + d->got;
    if (fflush(d->f)) return zn_errf(d->err, ZN_ERR_IO, "%s: write: %s", d->part, strerror(errno));
    if (rc == CURLE_HTTP_RETURNED_ERROR)
        return zn_errf(d->err, ZN_ERR_NOT_FOUND, "%s: HTTP %ld (nothing saved to %s)", d->url, code, dest);
    if (rc != CURLE_OK || (d->total && size != d->total)) {
        if (size == 0) return zn_errf(d->err, ZN_ERR_IO, "%s: %s (nothing saved to %s)", d->url, *msg ? msg : curl_easy_strerror(rc), dest);
        char of[48] = "";
        if (d->total) snprintf(of, sizeof of, " of %.1f", d->total / 1e6);
        return zn_errf(d->err, ZN_ERR_IO,
                       "%s: download interrupted after %.1f%s MB (%s); %s kept: run the same command again to resume",
                       d->url, size / 1e6, of, rc ? (*msg ? msg : curl_easy_strerror(rc)) : "short body", d->part);
    }
    hex_of(d->md, got_hex);
    if (expect && strcasecmp(expect, got_hex)) {
        unlink(d->part);
        return zn_errf(d->err, ZN_ERR_FORMAT, "%s: SHA-256 mismatch: expected %s, got %s; deleted %s", d->url, expect,
                       got_hex, d->part);
    }
    if (fclose(d->f)) {
        d->f = NULL;
        return zn_errf(d->err, ZN_ERR_IO, "%s: close: %s", d->part, strerror(errno));
    }
    d->f = NULL;
    if (rename(d->part, dest)) return zn_errf(d->err, ZN_ERR_IO, "rename %s -> %s: %s", d->part, dest, strerror(errno));
    return ZN_OK;
}

zn_status catalog_download(const char *url, const char *dest, const char *expect, uint64_t size_hint, FILE *progress,
                           char got_hex[ZN_SHA256_HEX], zn_err *err) {
    char part[ZN_PATH_MAX];
    got_hex[0] = 0;
    if ((size_t)snprintf(part, sizeof part, "%s.part", dest) >= sizeof part) return zn_errf(err, ZN_ERR_ARG, "path too long: %s", dest);
    if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
        return zn_errf(err, ZN_ERR_ARG, "%s: only http:// and https:// URLs are downloaded", url);
    if (expect && !catalog_is_sha256(expect)) return zn_errf(err, ZN_ERR_ARG, "'%s' is not a SHA-256 (64 hex digits)", expect);
    dl d = {.url = url, .part = part, .size_hint = size_hint, .err = err, .progress = progress};
    d.tty = progress && isatty(fileno(progress));
    /* a FIFO there would be read forever when the .part is hashed */
    zn_status fs = zn_file_create_regular(part, O_RDWR | O_APPEND, "a+b", &d.f, err);
    if (fs) return fs;
    d.md = EVP_MD_CTX_new();
    d.c = curl_easy_init();
    zn_status s;
    if (!d.md || !EVP_DigestInit_ex(d.md, EVP_sha256(), NULL)) s = zn_errf(err, ZN_ERR_IO, "sha256: OpenSSL failed");
    else if (!d.c) s = zn_errf(err, ZN_ERR_IO, "libcurl: cannot start a transfer");
    else s = run(&d, dest, expect, got_hex);
    if (d.f) {
        /* an empty .part is no progress worth keeping */
        struct stat st;
        bool empty = fstat(fileno(d.f), &st) == 0 && st.st_size == 0;
        fclose(d.f);
        if (empty) unlink(part);
    }
    if (d.c) curl_easy_cleanup(d.c);
    EVP_MD_CTX_free(d.md);
    return s;
}
