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
    case ZN_ERR_KV_FULL: return "KV cache full";
    }
    return "unknown status";
}

/* Messages quote names and text from files (keys, tensors, templates):
 * control bytes become \xNN, so a message stays one line and cannot drive
 * the terminal it is printed on. */
static void escape_controls(char msg[ZN_ERR_MSG_MAX]) {
    char out[ZN_ERR_MSG_MAX];
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 1 < sizeof out; p++) {
        if (*p >= 0x20 && *p != 0x7f) out[o++] = (char)*p;
        else if (o + 5 < sizeof out) o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", *p);
        else break;
    }
    out[o] = 0;
    memcpy(msg, out, o + 1);
}

zn_status zn_errf(zn_err *err, zn_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        escape_controls(err->msg);
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
    escape_controls(err->msg);
    return err->status;
}
