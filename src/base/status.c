#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *zn_status_str(zn_status s) {
    switch (s) {
    case ZN_OK: return "ok";
    case ZN_ERR_IO: return "i/o error";
    case ZN_ERR_FORMAT: return "malformed input";
    case ZN_ERR_UNSUPPORTED: return "unsupported";
    case ZN_ERR_NOMEM: return "out of memory";
    case ZN_ERR_ARG: return "invalid argument";
    case ZN_ERR_DEVICE: return "device error";
    case ZN_ERR_NOT_FOUND: return "not found";
    }
    return "unknown status";
}

zn_status zn_errf(zn_err *err, zn_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = s;
    }
    return s;
}

zn_status zn_err_prefix(zn_err *err, const char *fmt, ...) {
    if (!err) return ZN_OK;
    char pre[ZN_ERR_MSG_MAX], old[ZN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", pre, old);
    return err->status;
}
