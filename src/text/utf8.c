#include "utf8.h"

size_t utf8_lead_len(uint8_t c) {
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

static int is_cont(uint8_t c) { return (c & 0xC0) == 0x80; }

uint32_t utf8_decode_lenient(const char *str, size_t n, size_t *adv) {
    const uint8_t *s = (const uint8_t *)str;
    uint32_t cp = UTF8_REPLACEMENT;
    size_t k = 1;
    if (s[0] < 0x80) {
        cp = s[0];
    } else if ((s[0] & 0xE0) == 0xC0) {
        if (n >= 2 && is_cont(s[1])) cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F), k = 2;
    } else if ((s[0] & 0xF0) == 0xE0) {
        if (n >= 3 && is_cont(s[1]) && is_cont(s[2]))
            cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F), k = 3;
    } else if ((s[0] & 0xF8) == 0xF0) {
        if (n >= 4 && is_cont(s[1]) && is_cont(s[2]) && is_cont(s[3])) {
            cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                 ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
            k = 4;
            /* llama.cpp cannot re-encode these and throws; we call them invalid */
            if (cp > 0x10FFFF) cp = UTF8_REPLACEMENT, k = 1;
        }
    }
    *adv = k;
    return cp;
}

size_t utf8_write(uint32_t cp, char *out) {
    uint8_t *o = (uint8_t *)out;
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

int utf8_check(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    int len;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte (Table 3-7) */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return -1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return 0;
        uint8_t b = s[i];
        if (i == 1 ? (b < lo || b > hi) : !is_cont(b)) return -i;
    }
    return len;
}

size_t utf8_sanitize(const char *in, size_t n, char *out) {
    const uint8_t *s = (const uint8_t *)in;
    size_t i = 0, o = 0;
    while (i < n) {
        int k = utf8_check(s + i, n - i);
        if (k > 0) {
            for (int j = 0; j < k; j++) out[o++] = (char)s[i + j];
            i += (size_t)k;
        } else {
            o += utf8_write(UTF8_REPLACEMENT, out + o);
            i += k < 0 ? (size_t)-k : n - i; /* a truncated tail is one subpart */
        }
    }
    return o;
}
