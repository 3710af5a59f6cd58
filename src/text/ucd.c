#include "ucd.h"

#include <stddef.h>

#include "ucd_tables.h"

ucd_class ucd_class_of(uint32_t cp) {
    size_t lo = 0, hi = sizeof ucd_class_start / sizeof ucd_class_start[0];
    while (hi - lo > 1) { /* last range starting at or before cp */
        size_t mid = (lo + hi) / 2;
        if (ucd_class_start[mid] <= cp) lo = mid;
        else hi = mid;
    }
    return (ucd_class)ucd_class_value[lo];
}

uint32_t ucd_tolower(uint32_t cp) {
    size_t lo = 0, hi = sizeof ucd_lower / sizeof ucd_lower[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ucd_lower[mid][0] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof ucd_lower / sizeof ucd_lower[0] && ucd_lower[lo][0] == cp ? ucd_lower[lo][1] : cp;
}

uint32_t ucd_nfd_first(uint32_t cp) {
    size_t lo = 0, hi = sizeof ucd_nfd / sizeof ucd_nfd[0];
    while (lo < hi) { /* first run whose last >= cp */
        size_t mid = (lo + hi) / 2;
        if (ucd_nfd[mid][1] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof ucd_nfd / sizeof ucd_nfd[0] && ucd_nfd[lo][0] <= cp ? ucd_nfd[lo][2] : cp;
}

bool ucd_is_space(uint32_t cp) {
    return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}
