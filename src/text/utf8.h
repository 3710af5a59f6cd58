/* UTF-8 helpers for text handling (tokenizer, text output). */
#ifndef ZINC_UTF8_H
#define ZINC_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT 0xFFFDu

/* Sequence length announced by a lead byte, the way llama.cpp splits text into
 * characters: continuation bytes and ASCII count as 1. */
size_t utf8_lead_len(uint8_t c);

/* Decodes one code point the lenient way llama.cpp does (continuation bytes
 * checked, overlong forms and surrogates accepted); an invalid byte yields
 * U+FFFD and *adv = 1. n must be > 0. */
uint32_t utf8_decode_lenient(const char *s, size_t n, size_t *adv);

/* Writes cp (<= 0x10FFFF) and returns 1..4. */
size_t utf8_write(uint32_t cp, char *out);

/* Strict check of the sequence at s: returns its length (1..4) when valid,
 * 0 when the bytes can only become valid with more input (a proper prefix),
 * and -k when the first k bytes form an invalid maximal subpart that should
 * become one U+FFFD (Unicode's recommended practice). n must be > 0. */
int utf8_check(const uint8_t *s, size_t n);

/* Copies in to out replacing every invalid subpart (and a truncated tail) by
 * U+FFFD; out must hold 3 * n bytes. Returns the length written. */
size_t utf8_sanitize(const char *in, size_t n, char *out);

#endif
