#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *zn_file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a file";
}

/* d (opened O_NONBLOCK so that a FIFO does not wait in open()) is kept only
 * if it is a regular file, made blocking again; otherwise it is closed and
 * the message names path and what it is. */
static zn_status fd_regular(int d, const char *path, size_t *size, zn_err *err) {
    struct stat st;
    if (fstat(d, &st) != 0) {
        int e = errno;
        close(d);
        return zn_errf(err, ZN_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(d);
        return zn_errf(err, ZN_ERR_IO, "%s: not a regular file (%s)", path, zn_file_kind(st.st_mode));
    }
    int fl = fcntl(d, F_GETFL);
    if (fl < 0 || fcntl(d, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(d);
        return zn_errf(err, ZN_ERR_IO, "%s: %s", path, strerror(e));
    }
    if (size) *size = (size_t)st.st_size;
    return ZN_OK;
}

zn_status zn_file_open_regular(const char *path, int *fd, size_t *size, zn_err *err) {
    *fd = -1;
    int d = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (d < 0)
        return zn_errf(err, errno == ENOENT ? ZN_ERR_NOT_FOUND : ZN_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
    zn_status s = fd_regular(d, path, size, err);
    if (s == ZN_OK) *fd = d;
    return s;
}

zn_status zn_file_fopen_regular(const char *path, FILE **f, zn_err *err) {
    int fd;
    *f = NULL;
    zn_status s = zn_file_open_regular(path, &fd, NULL, err);
    if (s) return s;
    if (!(*f = fdopen(fd, "r"))) {
        int e = errno;
        close(fd);
        return zn_errf(err, ZN_ERR_IO, "%s: %s", path, strerror(e));
    }
    return ZN_OK;
}

zn_status zn_file_read_stream(FILE *f, const char *name, size_t max, char **buf, size_t *len, zn_err *err) {
    size_t cap = 1 << 16, n = 0;
    char *b = NULL;
    *buf = NULL;
    *len = 0;
    for (;;) {
        if (n + 1 >= cap || !b) {
            if (b) cap *= 2;
            char *p = realloc(b, cap);
            if (!p) {
                free(b);
                return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory after %zu bytes", name, n);
            }
            b = p;
        }
        size_t want = cap - 1 - n;
        if (want > max + 1 - n) want = max + 1 - n; /* one byte past the limit tells "too large" */
        size_t k = fread(b + n, 1, want, f);
        n += k;
        if (n > max) {
            free(b);
            return zn_errf(err, ZN_ERR_ARG, "%s: more than %zu bytes (the limit)", name, max);
        }
        if (k < want) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(b);
        return zn_errf(err, ZN_ERR_IO, "%s: read error: %s", name, e ? strerror(e) : "unknown");
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return ZN_OK;
}

zn_status zn_file_read_all(const char *path, size_t max, char **buf, size_t *len, zn_err *err) {
    FILE *f;
    *buf = NULL;
    *len = 0;
    zn_status s = zn_file_fopen_regular(path, &f, err);
    if (s) return s;
    s = zn_file_read_stream(f, path, max, buf, len, err);
    fclose(f);
    return s;
}

zn_status zn_file_create_regular(const char *path, int oflags, const char *mode, FILE **f, zn_err *err) {
    *f = NULL;
    struct stat st;
    /* what is there already is looked at first: a FIFO without a reader would
     * fail open() with a less clear ENXIO, a directory with EISDIR */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return zn_errf(err, ZN_ERR_IO, "%s: not a regular file (%s)", path, zn_file_kind(st.st_mode));
    int d = open(path, oflags | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (d < 0) return zn_errf(err, ZN_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    /* it may have been replaced between stat() and open() */
    zn_status s = fd_regular(d, path, NULL, err);
    if (s) return s;
    if (!(*f = fdopen(d, mode))) {
        int e = errno;
        close(d);
        return zn_errf(err, ZN_ERR_IO, "%s: %s", path, strerror(e));
    }
    return ZN_OK;
}
