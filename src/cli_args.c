/* Argument helpers shared by the sub-commands. */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}
