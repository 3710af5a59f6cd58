/* catalog_download(): libcurl into DEST.part under a lock on DEST, resume
 * with Range + If-Range, then size, GGUF and SHA-256 checks of the bytes on
 * disk before the part is renamed into place (catalog.h says the rules).
 *
 * Status codes are judged here, not by libcurl: CURLOPT_FAILONERROR treats
 * a 416 to a resumed request as success (the stale part would be kept), and
 * a 206 must start where the part ends. The body of anything but a 200 or
 * a 206 is never written. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "catalog.h"
#include "gguf.h"
#include "timer.h"

#define HDR_VALUE_MAX 256

/* Why a transfer stopped early (set by a callback). */
typedef enum stop_why { STOP_NONE, STOP_HTTP, STOP_RESTART, STOP_DISK, STOP_SPACE, STOP_OTHER } stop_why;

/* What the headers of the response being received say. */
typedef struct resp {
    long code;
    int64_t length;             /* Content-Length, -1 when absent */
    int64_t range_start, range_total; /* Content-Range of a 206 (-1: absent, total "*": -1) */
    bool accept_ranges;
    char etag[HDR_VALUE_MAX], last_modified[HDR_VALUE_MAX];
} resp;

typedef struct dl {
    CURL *c;
    int fd, dirfd;
    const char *url, *dest, *base;
    char part[ZN_PATH_MAX], part_base[ZN_PATH_MAX], info_base[ZN_PATH_MAX + 8];
    const zn_fetch_opts *o;
    zn_err *err;
    uint64_t have;        /* bytes in the part before this transfer */
    uint64_t got;         /* bytes written by this transfer */
    uint64_t total;       /* the file's size as the server says it, 0 if unknown */
    resp r;               /* the response being received */
    int hops;             /* responses seen in this transfer */
    char linked_etag[HDR_VALUE_MAX]; /* the hub's X-Linked-Etag / -Size (first seen) */
    uint64_t linked_size;
    bool hub_differs;   /* the hub announced another hash than the expected one */
    char validator[HDR_VALUE_MAX];   /* strong ETag or Last-Modified of the content in the part */
    bool resumable;       /* the server can resume this content (ranges + validator + size) */
    bool started;
    stop_why stop;
    zn_status fail;
    double t0, t_start, last_line;
    int last_decile;
    bool tty;
} dl;

/* ---- small helpers ---------------------------------------------------- */

static double opt_deadline(const zn_fetch_opts *o) { return o->deadline_s > 0 ? o->deadline_s : ZN_DL_DEADLINE_S; }
static uint64_t opt_min_rate(const zn_fetch_opts *o) { return o->min_rate ? o->min_rate : ZN_DL_MIN_RATE; }
static long opt_window(const zn_fetch_opts *o) {
    return o->min_rate_window_s > 0 ? o->min_rate_window_s : ZN_DL_MIN_RATE_WINDOW_S;
}

static zn_status free_space_statvfs(void *ud, const char *dir, uint64_t *free_bytes, zn_err *err) {
    struct statvfs v;
    if (statvfs(dir, &v)) return zn_errf(err, ZN_ERR_IO, "%s: statvfs: %s", dir, strerror(errno));
    *free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
    return ZN_OK;
}

static void dir_of(const char *path, char *out, size_t cap) {
    snprintf(out, cap, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash) snprintf(out, cap, ".");
    else if (slash == out) out[1] = 0;
    else *slash = 0;
}

/* Checks that `need` more bytes fit with the margin to spare. */
static zn_status disk_check(dl *d, uint64_t need) {
    char dir[ZN_PATH_MAX];
    dir_of(d->dest, dir, sizeof dir);
    uint64_t avail = 0;
    zn_free_space_fn fn = d->o->free_space ? d->o->free_space : free_space_statvfs;
    zn_status s = fn(d->o->free_space_ud, dir, &avail, d->err);
    if (s) return s;
    if (avail < need || avail - need < ZN_DL_DISK_MARGIN)
        return zn_errf(d->err, ZN_ERR_IO,
                       "%s: not enough disk space for %s: need %.1f MB (+%llu MB margin), %.1f MB free; nothing written",
                       dir, d->url, need / 1e6, ZN_DL_DISK_MARGIN >> 20, avail / 1e6);
    return ZN_OK;
}

/* Header value with surrounding blanks and CR/LF removed, truncated. */
static void hdr_value(const char *v, size_t n, char *out, size_t cap) {
    while (n && (*v == ' ' || *v == '\t')) v++, n--;
    while (n && strchr(" \t\r\n", v[n - 1])) n--;
    if (n >= cap) n = cap - 1;
    memcpy(out, v, n);
    out[n] = 0;
}

static bool parse_u64(const char *s, int64_t *out) {
    if (!*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > INT64_MAX) return false;
    *out = (int64_t)v;
    return true;
}

/* "bytes START-END/TOTAL" (TOTAL may be "*"). */
static bool parse_content_range(const char *v, int64_t *start, int64_t *total) {
    if (strncasecmp(v, "bytes ", 6)) return false;
    char buf[HDR_VALUE_MAX];
    snprintf(buf, sizeof buf, "%s", v + 6);
    char *dash = strchr(buf, '-'), *slash = strchr(buf, '/');
    if (!dash || !slash || slash < dash) return false;
    *dash = *slash = 0;
    int64_t end;
    if (!parse_u64(buf, start) || !parse_u64(dash + 1, &end) || end < *start) return false;
    if (!strcmp(slash + 1, "*")) *total = -1;
    else if (!parse_u64(slash + 1, total) || end >= *total) return false;
    return true;
}

/* ---- the .part and its record ------------------------------------------ *
 * DEST.part.info holds what a resumed request must match: the validator
 * (If-Range) and the hub's announced hash of the content in the part. */

/* DEST.part.info opened as a plain file only: O_NONBLOCK so that a FIFO put
 * there is not waited on (no effect on a regular file). -1 otherwise. */
static int info_open(dl *d, int flags) {
    int fd = openat(d->dirfd, d->info_base, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
        close(fd);
        return -1;
    }
    return fd;
}

static void info_write(dl *d) {
    char text[HDR_VALUE_MAX * 2 + 64];
    int n = snprintf(text, sizeof text, "%s\n%s\n%" PRIu64 "\n", d->validator, d->linked_etag, d->total);
    int fd = info_open(d, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) return;  /* without it the part is only restarted, never trusted */
    bool ok = write(fd, text, (size_t)n) == n;
    close(fd);
    if (!ok) unlinkat(d->dirfd, d->info_base, 0);
}

/* The validator recorded with the part; false when none can be trusted. */
static bool info_read(dl *d, char *validator, char *linked, uint64_t *total) {
    int fd = info_open(d, O_RDONLY);
    if (fd < 0) return false;
    char text[HDR_VALUE_MAX * 2 + 64];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return false;
    text[n] = 0;
    char *l1 = text, *l2 = strchr(l1, '\n');
    if (!l2) return false;
    *l2++ = 0;
    char *l3 = strchr(l2, '\n');
    if (!l3) return false;
    *l3++ = 0;
    l3[strcspn(l3, "\n")] = 0;
    int64_t t;
    if (!*l1 || strlen(l1) >= HDR_VALUE_MAX || strlen(l2) >= HDR_VALUE_MAX || !parse_u64(l3, &t) || t <= 0) return false;
    strcpy(validator, l1);
    strcpy(linked, l2);
    *total = (uint64_t)t;
    return true;
}

static void part_remove(dl *d) {
    unlinkat(d->dirfd, d->part_base, 0);
    unlinkat(d->dirfd, d->info_base, 0);
}

static zn_status part_truncate(dl *d) {
    if (ftruncate(d->fd, 0) || lseek(d->fd, 0, SEEK_SET) < 0)
        return zn_errf(d->err, ZN_ERR_IO, "%s: cannot truncate: %s", d->part, strerror(errno));
    unlinkat(d->dirfd, d->info_base, 0);
    d->have = 0;
    return ZN_OK;
}

/* Opens DEST.part without following a link: a new one exclusively, an
 * existing one only when it is a plain file with one link. */
static zn_status part_open(dl *d) {
    d->fd = openat(d->dirfd, d->part_base, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (d->fd < 0 && errno == ENOENT)
        d->fd = openat(d->dirfd, d->part_base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (d->fd < 0) {
        if (errno == ELOOP)
            return zn_errf(d->err, ZN_ERR_IO, "%s is a symbolic link: not following it (remove it and pull again)", d->part);
        return zn_errf(d->err, ZN_ERR_IO, "%s: cannot open for writing: %s", d->part, strerror(errno));
    }
    struct stat st;
    if (fstat(d->fd, &st)) return zn_errf(d->err, ZN_ERR_IO, "%s: cannot stat: %s", d->part, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
        return zn_errf(d->err, ZN_ERR_IO, "%s is not a plain file with one link: not writing to it (remove it)", d->part);
    d->have = (uint64_t)st.st_size;
    return ZN_OK;
}

/* ---- the lock ------------------------------------------------------------
 * .DEST.lock, flock()ed for the whole download; removed while still held,
 * so a process that opened the old inode sees it is gone and retries. */

static zn_status lock_take(int dirfd, const char *lock_base, const char *dest, int *out, zn_err *err) {
    for (int tries = 0; tries < 16; tries++) {
        int fd = openat(dirfd, lock_base, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) return zn_errf(err, ZN_ERR_IO, "%s: cannot create the lock %s: %s", dest, lock_base, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB)) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                return zn_errf(err, ZN_ERR_IO, "%s: another zinc is downloading it now; wait for it to finish", dest);
            return zn_errf(err, ZN_ERR_IO, "%s: cannot lock: %s", dest, strerror(e));
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && fstatat(dirfd, lock_base, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            *out = fd;
            return ZN_OK;
        }
        close(fd);  /* removed by its holder meanwhile: take the new one */
    }
    return zn_errf(err, ZN_ERR_IO, "%s: cannot take the download lock", dest);
}

static void lock_drop(int dirfd, const char *lock_base, int fd) {
    if (fd < 0) return;
    unlinkat(dirfd, lock_base, 0);
    close(fd);
}

/* ---- libcurl callbacks -------------------------------------------------- */

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
    dl *d = ud;
    size_t len = sz * n;
    if (len >= 5 && !strncmp(p, "HTTP/", 5)) {  /* a new response (after a redirect or a 100) */
        d->r = (resp){.length = -1, .range_start = -1, .range_total = -1};
        const char *sp = memchr(p, ' ', len);
        if (sp) d->r.code = strtol(sp + 1, NULL, 10);
        d->hops++;
        return len;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon) return len;
    size_t kn = (size_t)(colon - p);
    char v[HDR_VALUE_MAX];
    hdr_value(colon + 1, len - kn - 1, v, sizeof v);
#define IS(k) (kn == sizeof(k) - 1 && !strncasecmp(p, k, kn))
    if (IS("content-length")) {
        if (!parse_u64(v, &d->r.length)) d->r.length = -1;
    } else if (IS("content-range")) {
        if (!parse_content_range(v, &d->r.range_start, &d->r.range_total)) d->r.range_start = -2;  /* malformed */
    } else if (IS("accept-ranges")) {
        d->r.accept_ranges = !strcasecmp(v, "bytes");
    } else if (IS("etag")) {
        snprintf(d->r.etag, sizeof d->r.etag, "%s", v);
    } else if (IS("last-modified")) {
        snprintf(d->r.last_modified, sizeof d->r.last_modified, "%s", v);
    } else if (IS("x-linked-etag")) {
        /* the hub's answer to the resolve request comes first; a later
         * response (the CDN's) does not replace it */
        if (!*d->linked_etag) {
            const char *q = v;
            size_t qn = strlen(q);
            if (qn >= 2 && q[0] == '"' && q[qn - 1] == '"') q++, qn -= 2;
            if (qn < sizeof d->linked_etag) memcpy(d->linked_etag, q, qn), d->linked_etag[qn] = 0;
        }
    } else if (IS("x-linked-size")) {
        int64_t s;
        if (!d->linked_size && parse_u64(v, &s)) d->linked_size = (uint64_t)s;
    }
#undef IS
    return len;
}

static void show(dl *d, bool final);

/* The first body bytes of the final response: is it what we asked for? */
static zn_status on_start(dl *d) {
    const resp *r = &d->r;
    /* the hub says which file it serves before its first byte: one that
     * cannot match the expected hash is not downloaded */
    if (d->o->expect && catalog_is_sha256(d->linked_etag) && strcasecmp(d->o->expect, d->linked_etag)) {
        d->stop = STOP_OTHER;
        d->hub_differs = true;
        return zn_errf(d->err, ZN_ERR_FORMAT, "%s: the hub announces SHA-256 %s, but %s is %s: another file than the one "
                       "expected (replaced upstream?); nothing saved", d->url, d->linked_etag,
                       catalog_hash_src_text(d->o->expect_src ? d->o->expect_src : ZN_HASH_USER), d->o->expect);
    }
    const char *validator = *r->etag && strncmp(r->etag, "W/", 2) ? r->etag : r->last_modified;
    if (r->code == 200) {
        if (d->have) {
            if (d->o->progress) fprintf(d->o->progress, "zinc: the server sent the whole file; starting again\n");
            zn_status s = part_truncate(d);
            if (s) return s;
        }
        d->total = r->length >= 0 ? (uint64_t)r->length : 0;
    } else if (r->code == 206) {
        if (r->range_start < 0) {
            d->stop = STOP_RESTART;
            return zn_errf(d->err, ZN_ERR_FORMAT, "%s: a 206 without a valid Content-Range", d->url);
        }
        if ((uint64_t)r->range_start != d->have) {
            if (r->range_start != 0) {
                d->stop = STOP_RESTART;
                return zn_errf(d->err, ZN_ERR_FORMAT, "%s: asked for bytes from %" PRIu64 ", the server sent from %" PRId64,
                               d->url, d->have, r->range_start);
            }
            /* a 206 from byte 0 is the whole file */
            if (d->o->progress) fprintf(d->o->progress, "zinc: the server sent the file from its start; starting again\n");
            zn_status s = part_truncate(d);
            if (s) return s;
        }
        /* the content must be what the part holds: the same validator */
        if (d->have && *d->validator && *validator && strcmp(validator, d->validator)) {
            d->stop = STOP_RESTART;
            return zn_errf(d->err, ZN_ERR_FORMAT, "%s: the file changed on the server since %s was started", d->url, d->part);
        }
        d->total = r->range_total > 0 ? (uint64_t)r->range_total
                   : r->length >= 0   ? d->have + (uint64_t)r->length
                                      : 0;
    } else {
        d->stop = STOP_HTTP;
        return ZN_ERR_IO;
    }
    if (!d->have || !*d->validator) snprintf(d->validator, sizeof d->validator, "%s", validator);
    d->resumable = d->total && *d->validator && (r->accept_ranges || r->code == 206);
    if (d->resumable) info_write(d);
    if (d->total) {
        uint64_t need = d->total > d->have ? d->total - d->have : 0;
        zn_status s = disk_check(d, need);
        if (s) {
            d->stop = STOP_SPACE;
            return s;
        }
    }
    d->t_start = timer_now();
    return ZN_OK;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    dl *d = ud;
    size_t len = sz * n;
    if (!d->started) {
        d->started = true;
        if ((d->fail = on_start(d))) return 0;
    }
    if (d->total && d->have + d->got + len > d->total) {
        d->stop = STOP_OTHER;
        d->fail = zn_errf(d->err, ZN_ERR_FORMAT, "%s: the server sent more than the %" PRIu64 " bytes it announced", d->url,
                          d->total);
        return 0;
    }
    for (size_t off = 0; off < len;) {
        ssize_t k = write(d->fd, p + off, len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            d->stop = STOP_DISK;
            d->fail = zn_errf(d->err, ZN_ERR_IO, "%s: cannot write after %.1f MB: %s", d->part,
                              (d->have + d->got + off) / 1e6, strerror(e));
            return 0;
        }
        off += (size_t)k;
    }
    d->got += len;
    return len;
}

static void fmt_eta(double s, char *out, size_t cap) {
    if (!(s >= 0) || s > 359999) snprintf(out, cap, "--:--");
    else snprintf(out, cap, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

static void show(dl *d, bool final) {
    FILE *f = d->o->progress;
    double t = timer_now(), dt = t - d->t_start;
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
        fprintf(f, "\r[%s] %s   %s", bar, line, final ? "\n" : "");
    } else {
        int decile = d->total ? (int)(10.0 * done / d->total) : 0;
        if (!final && decile == d->last_decile && t - d->last_line < 5) return;
        d->last_decile = decile;
        d->last_line = t;
        fprintf(f, "zinc: download %s\n", line);
    }
    fflush(f);
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    dl *d = ud;
    if (d->o->progress && d->started && !d->stop) show(d, false);
    return 0;
}

/* ---- one transfer --------------------------------------------------------- */

static CURLcode transfer(dl *d, char *curl_msg, double left_s) {
    struct curl_slist *hdrs = NULL;
    char range[64], ifr[HDR_VALUE_MAX + 16];
    curl_easy_reset(d->c);
    curl_easy_setopt(d->c, CURLOPT_URL, d->url);
    curl_easy_setopt(d->c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(d->c, CURLOPT_MAXREDIRS, (long)ZN_DL_MAX_REDIRS);
    /* file://, ftp://, gopher://... would copy local files or talk to other
     * services: only the web, also where a redirect points */
    curl_easy_setopt(d->c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(d->c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(d->c, CURLOPT_USERAGENT, "zinc");
    curl_easy_setopt(d->c, CURLOPT_CONNECTTIMEOUT, d->o->connect_s > 0 ? d->o->connect_s : (long)ZN_DL_CONNECT_S);
    curl_easy_setopt(d->c, CURLOPT_LOW_SPEED_LIMIT, (long)opt_min_rate(d->o));
    curl_easy_setopt(d->c, CURLOPT_LOW_SPEED_TIME, opt_window(d->o));
    long ms = (long)(left_s * 1000);
    curl_easy_setopt(d->c, CURLOPT_TIMEOUT_MS, ms > 1 ? ms : 1L);
    curl_easy_setopt(d->c, CURLOPT_ERRORBUFFER, curl_msg);
    curl_easy_setopt(d->c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(d->c, CURLOPT_HEADERDATA, d);
    curl_easy_setopt(d->c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(d->c, CURLOPT_WRITEDATA, d);
    curl_easy_setopt(d->c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(d->c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(d->c, CURLOPT_XFERINFODATA, d);
    if (d->have) {
        snprintf(range, sizeof range, "%" PRIu64 "-", d->have);
        curl_easy_setopt(d->c, CURLOPT_RANGE, range);
        /* the rest only if the content is still the one the part holds;
         * else a 200 with the new content */
        snprintf(ifr, sizeof ifr, "If-Range: %s", d->validator);
        hdrs = curl_slist_append(hdrs, ifr);
        curl_easy_setopt(d->c, CURLOPT_HTTPHEADER, hdrs);
    }
    d->started = false;
    d->got = 0;
    d->total = 0;
    d->hops = 0;
    d->stop = STOP_NONE;
    d->fail = ZN_OK;
    /* a part an earlier response said could be resumed stays resumable when
     * this request fails before answering (the network is down) */
    d->resumable = d->have && *d->validator;
    d->r = (resp){.length = -1, .range_start = -1, .range_total = -1};
    d->t_start = d->last_line = timer_now();
    d->last_decile = -1;
    curl_msg[0] = 0;
    CURLcode rc = curl_easy_perform(d->c);
    curl_easy_setopt(d->c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    return rc;
}

/* ---- checks of the finished part ---------------------------------------- */

/* What a file that is not GGUF looks like, for the message. */
static const char *looks_like(const uint8_t *p, uint64_t n) {
    size_t k = n < 512 ? (size_t)n : 512;
    if (k >= 2 && p[0] == 0x1f && p[1] == 0x8b) return " (it is gzip data)";
    for (size_t i = 0; i + 5 <= k; i++)
        if (!strncasecmp((const char *)p + i, "<html", 5) || !strncasecmp((const char *)p + i, "<!doc", 5))
            return " (it is an HTML page: an error or login page?)";
    return "";
}

/* Size, GGUF validation and SHA-256 of what is on disk. */
static zn_status verify(dl *d, zn_fetch_result *res) {
    struct stat st;
    if (fsync(d->fd) || fstat(d->fd, &st)) return zn_errf(d->err, ZN_ERR_IO, "%s: %s", d->part, strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    uint64_t want = d->o->expect_size ? d->o->expect_size : d->linked_size;
    if (d->total && size != d->total)
        return zn_errf(d->err, ZN_ERR_FORMAT, "%s: got %" PRIu64 " bytes, the server announced %" PRIu64, d->url, size,
                       d->total);
    if (want && size != want)
        return zn_errf(d->err, ZN_ERR_FORMAT, "%s: got %" PRIu64 " bytes, the hub says the file has %" PRIu64, d->url, size,
                       want);
    if (size == 0) return zn_errf(d->err, ZN_ERR_FORMAT, "%s: the server sent an empty file", d->url);
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, d->fd, 0);
    if (map == MAP_FAILED) return zn_errf(d->err, ZN_ERR_IO, "%s: cannot map: %s", d->part, strerror(errno));
    gguf_ctx g;
    zn_err ge = {0};
    zn_status s = gguf_open_mem(&g, map, (size_t)size, d->url, &ge);
    if (s) {
        zn_errf(d->err, ZN_ERR_FORMAT, "not a valid GGUF file%s: %s", looks_like(map, size), ge.msg);
    } else {
        /* a GGUF ends with its last tensor's data, padded to the alignment */
        uint64_t end = g.data_offset;
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            uint64_t e = g.data_offset + g.tensors[i].offset + g.tensors[i].nbytes;
            if (e > end) end = e;
        }
        uint64_t padded = (end + g.alignment - 1) / g.alignment * g.alignment;
        if (g.n_tensors && size > padded)
            s = zn_errf(d->err, ZN_ERR_FORMAT, "%s: %" PRIu64 " bytes after the end of the tensor data: not one GGUF file",
                        d->url, size - padded);
        gguf_close(&g);
    }
    if (!s) s = catalog_sha256_buf(map, (size_t)size, res->sha256, d->err);
    munmap(map, (size_t)size);
    if (s) return s;
    res->size = size;
    const char *expect = d->o->expect;
    zn_hash_src src = d->o->expect_src ? d->o->expect_src : ZN_HASH_USER;
    if (!expect && catalog_is_sha256(d->linked_etag)) expect = d->linked_etag, src = ZN_HASH_HUB;
    if (expect && strcasecmp(expect, res->sha256))
        return zn_errf(d->err, ZN_ERR_FORMAT, "%s: SHA-256 mismatch against %s: expected %s, got %s", d->url,
                       catalog_hash_src_text(src), expect, res->sha256);
    res->verified = expect ? src : ZN_HASH_NONE;
    return ZN_OK;
}

/* The record, then the part renamed into place, never over a file. */
static zn_status install(dl *d, const zn_fetch_result *res) {
    zn_status s = catalog_hash_record_write(d->dest, res->sha256, res->verified, d->err);
    if (s) return s;
    if (renameat2(d->dirfd, d->part_base, d->dirfd, d->base, RENAME_NOREPLACE) &&
        (errno != EINVAL || faccessat(d->dirfd, d->base, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
         renameat(d->dirfd, d->part_base, d->dirfd, d->base))) {
        int e = errno;
        char rec[ZN_PATH_MAX + 8];
        snprintf(rec, sizeof rec, "%s.sha256", d->dest);
        unlink(rec);
        return zn_errf(d->err, ZN_ERR_IO, "rename %s -> %s: %s", d->part, d->dest, strerror(e));
    }
    unlinkat(d->dirfd, d->info_base, 0);
    fsync(d->dirfd);
    return ZN_OK;
}

/* ---- the whole download --------------------------------------------------- */

static zn_status run(dl *d, zn_fetch_result *res) {
    char msg[CURL_ERROR_SIZE];
    zn_status s = part_open(d);
    if (s) return s;
    if (d->have) {
        char linked[HDR_VALUE_MAX];
        uint64_t total = 0;
        if (!info_read(d, d->validator, linked, &total) || d->have >= total) {
            /* nothing says which content these bytes are, or the part is
             * already as long as the file: they cannot be trusted */
            if (d->o->progress) fprintf(d->o->progress, "zinc: %s cannot be resumed; starting again\n", d->part);
            if ((s = part_truncate(d))) return s;
            *d->validator = 0;
        } else if (lseek(d->fd, 0, SEEK_END) < 0) {
            return zn_errf(d->err, ZN_ERR_IO, "%s: %s", d->part, strerror(errno));
        } else {
            snprintf(d->linked_etag, sizeof d->linked_etag, "%s", linked);
            if (d->o->progress) fprintf(d->o->progress, "zinc: resuming %s at %.1f MB\n", d->part, d->have / 1e6);
            res->resumed = true;
        }
    }
    if (d->o->size_hint && !d->have && (s = disk_check(d, d->o->size_hint))) return s;
    const double deadline = opt_deadline(d->o);
    CURLcode rc = CURLE_OK;
    for (int attempt = 0;; attempt++) {
        /* each request says the hub's hash again; a resumed one must say
         * the same as the request that started the part */
        char hub_etag[HDR_VALUE_MAX];
        uint64_t hub_size = d->linked_size;
        snprintf(hub_etag, sizeof hub_etag, "%s", d->linked_etag);
        *d->linked_etag = 0;
        d->linked_size = 0;
        double left = deadline - (timer_now() - d->t0);
        rc = transfer(d, msg, left);
        if (d->have && *hub_etag && *d->linked_etag && strcmp(hub_etag, d->linked_etag)) {
            d->stop = STOP_RESTART;
            zn_errf(d->err, ZN_ERR_FORMAT, "%s: the hub's hash changed since %s was started", d->url, d->part);
        }
        if (!*d->linked_etag) snprintf(d->linked_etag, sizeof d->linked_etag, "%s", hub_etag);
        if (!d->linked_size) d->linked_size = hub_size;
        long code = d->r.code;
        /* 416: the part is as long as the file or longer, or another file's */
        bool restart = d->stop == STOP_RESTART || (code == 416 && d->have);
        if (restart && attempt == 0) {
            if (d->o->progress) fprintf(d->o->progress, "zinc: the server cannot resume %s; starting again\n", d->part);
            if ((s = part_truncate(d))) return s;
            *d->validator = 0;
            res->resumed = false;
            continue;
        }
        if (restart) return d->fail ? d->fail : zn_errf(d->err, ZN_ERR_IO, "%s: the server cannot resume", d->url);
        break;
    }
    if (d->o->progress && d->started && !d->stop) show(d, true);
    uint64_t size = d->have + d->got;
    long code = d->r.code;
    if (d->stop == STOP_DISK || d->stop == STOP_SPACE) {
        part_remove(d);
        if (d->stop == STOP_DISK) zn_err_prefix(d->err, "disk full? removed %s", d->part);
        return d->fail;
    }
    if (d->stop == STOP_HTTP || (rc == CURLE_OK && code != 200 && code != 206)) {
        if (!d->have) part_remove(d);
        return zn_errf(d->err, code == 404 ? ZN_ERR_NOT_FOUND : ZN_ERR_IO, "%s: HTTP %ld (nothing saved to %s)", d->url,
                       code, d->dest);
    }
    if (d->fail) {
        part_remove(d);
        return d->fail;
    }
    if (rc != CURLE_OK) {
        const char *why = *msg ? msg : curl_easy_strerror(rc);
        char what[CURL_ERROR_SIZE + 128];
        if (rc == CURLE_OPERATION_TIMEDOUT && timer_now() - d->t0 >= deadline - 0.05)
            snprintf(what, sizeof what, "the download took longer than the deadline of %g s", deadline);
        else if (rc == CURLE_OPERATION_TIMEDOUT && d->started)
            snprintf(what, sizeof what, "the server sent less than %" PRIu64 " bytes/s for %ld s", opt_min_rate(d->o),
                     opt_window(d->o));
        else if (rc == CURLE_TOO_MANY_REDIRECTS)
            snprintf(what, sizeof what, "more than %d redirects (a redirect loop?)", ZN_DL_MAX_REDIRS);
        else if (rc == CURLE_UNSUPPORTED_PROTOCOL)
            snprintf(what, sizeof what, "%s: only http:// and https:// URLs are downloaded, also where a redirect points", why);
        else
            snprintf(what, sizeof what, "%s", why);
        if (size == 0) {
            part_remove(d);
            return zn_errf(d->err, ZN_ERR_IO, "%s: %s (nothing saved to %s)", d->url, what, d->dest);
        }
        char of[48] = "";
        if (d->total) snprintf(of, sizeof of, " of %.1f", d->total / 1e6);
        if (d->resumable)
            return zn_errf(d->err, ZN_ERR_IO, "%s: download interrupted after %.1f%s MB (%s); %s kept: run the same command "
                           "again to resume", d->url, size / 1e6, of, what, d->part);
        part_remove(d);
        return zn_errf(d->err, ZN_ERR_IO, "%s: download interrupted after %.1f%s MB (%s); the server cannot resume it, so "
                       "the partial file was removed", d->url, size / 1e6, of, what);
    }
    if ((s = verify(d, res))) {
        part_remove(d);
        zn_err_prefix(d->err, "deleted the download");
        return s;
    }
    return install(d, res);
}

zn_status catalog_download(const char *url, const char *dest, const zn_fetch_opts *o, zn_fetch_result *res, zn_err *err) {
    static const zn_fetch_opts none;
    if (!o) o = &none;
    memset(res, 0, sizeof *res);
    if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
        return zn_errf(err, ZN_ERR_ARG, "%s: only http:// and https:// URLs are downloaded", url);
    if (o->expect && !catalog_is_sha256(o->expect))
        return zn_errf(err, ZN_ERR_ARG, "'%s' is not a SHA-256 (64 hex digits)", o->expect);
    dl *d = calloc(1, sizeof *d);
    if (!d) return zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    *d = (dl){.fd = -1, .dirfd = -1, .url = url, .dest = dest, .o = o, .err = err, .t0 = timer_now()};
    d->tty = o->progress && isatty(fileno(o->progress));
    const char *slash = strrchr(dest, '/');
    d->base = slash ? slash + 1 : dest;
    char dir[ZN_PATH_MAX], lock_base[ZN_PATH_MAX + 8];
    dir_of(dest, dir, sizeof dir);
    zn_status s = ZN_OK;
    int lock = -1;
    if (!*d->base || (size_t)snprintf(d->part, sizeof d->part, "%s.part", dest) >= sizeof d->part ||
        (size_t)snprintf(d->part_base, sizeof d->part_base, "%s.part", d->base) >= sizeof d->part_base)
        s = zn_errf(err, ZN_ERR_ARG, "bad destination: %s", dest);
    snprintf(d->info_base, sizeof d->info_base, "%s.info", d->part_base);
    snprintf(lock_base, sizeof lock_base, ".%s.lock", d->base);
    if (!s && (d->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        s = zn_errf(err, ZN_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!s) s = lock_take(d->dirfd, lock_base, dest, &lock, err);
    if (!s && faccessat(d->dirfd, d->base, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        s = zn_errf(err, ZN_ERR_IO, "%s exists already (zinc model rm to download it again)", dest);
    if (!s && !(d->c = curl_easy_init())) s = zn_errf(err, ZN_ERR_IO, "libcurl: cannot start a transfer");
    if (!s) s = run(d, res);
    res->hub_differs = d->hub_differs;
    if (d->fd >= 0) {
        /* an empty part is no progress worth keeping */
        struct stat st;
        if (fstat(d->fd, &st) == 0 && st.st_size == 0) part_remove(d);
        close(d->fd);
    }
    if (d->c) curl_easy_cleanup(d->c);
    lock_drop(d->dirfd, lock_base, lock);
    if (d->dirfd >= 0) close(d->dirfd);
    free(d);
    return s;
}
