/* Status codes and error messages shared by every library module.
 * Library functions return a zn_status and fill a zn_err with one line that
 * names the file/field/tensor and the problem; only main() exits. */
#ifndef ZINC_STATUS_H
#define ZINC_STATUS_H

#include <stddef.h>
#include "limits.h"

typedef enum zn_status {
    ZN_OK = 0,
    ZN_ERR_IO,          /* open/read/mmap/write failed */
    ZN_ERR_FORMAT,      /* malformed input file or data */
    ZN_ERR_UNSUPPORTED, /* valid but not supported (arch, type, feature) */
    ZN_ERR_NOMEM,       /* allocation failed or a limit was exceeded */
    ZN_ERR_ARG,         /* bad argument from the caller/user */
    ZN_ERR_DEVICE,      /* GPU / driver failure */
    ZN_ERR_NOT_FOUND,   /* key, tensor or file not present */
    ZN_ERR_KV_FULL,     /* the shared KV pool has no free block (backend.h): wait or preempt, then retry */
} zn_status;

typedef struct zn_err {
    zn_status status;
    char msg[ZN_ERR_MSG_MAX];
} zn_err;

const char *zn_status_str(zn_status s);

/* Formats the message into err (if non-NULL) and returns s, so callers can
 * write `return zn_errf(err, ZN_ERR_FORMAT, "%s: ...", path);`. */
zn_status zn_errf(zn_err *err, zn_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message: "ctx: old message". */
zn_status zn_err_prefix(zn_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
