/* WordPiece (tokenizer.ggml.model = "bert"), as llama.cpp: BERT's basic
 * normalization (lowercase, strip accents via the first NFD code point, drop
 * control characters, split on whitespace and around punctuation and CJK
 * ideographs), then per word the greedy longest vocab match, left to right,
 * with the word-start marker U+2581 in front. A word that cannot be covered
 * entirely becomes [UNK]. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "ucd.h"
#include "utf8.h"

static bool is_cjk(uint32_t c) {
    /* 0x2B920 (not 0x2B820) as in HF's Rust BertPreTokenizer */
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool is_ascii_symbol(uint32_t c) { return c < 0x7F && strchr("$+<=>^`|~", (int)c) && c; }

/* Tokenizes one normalized word w[0..n) (already prefixed with U+2581). */
static zn_status wpm_word(const zn_tokenizer *t, const char *w, size_t n, tok_ids *out) {
    size_t start = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = i + t->max_token_len < n ? i + t->max_token_len : n;
        int32_t id = -1;
        while (j > i && (id = tok_map_get(&t->tok_to_id, w + i, j - i)) < 0) j--;
        if (id < 0) { /* no piece fits: the whole word is unknown */
            out->n = start;
            break;
        }
        if (tok_ids_push(out, id)) return ZN_ERR_NOMEM;
        i = j;
    }
    if (out->n == start && t->unk >= 0) return tok_ids_push(out, t->unk);
    return ZN_OK;
}

zn_status wpm_encode(const zn_tokenizer *t, const char *text, size_t len, tok_ids *out, zn_err *err) {
    /* normalized text is at most 4 bytes per input byte, plus a 3-byte marker per word */
    char *w = malloc(7 * len + 4);
    if (!w) return zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    static const char mark[3] = {'\xe2', '\x96', '\x81'};
    size_t n = 3, i = 0;
    memcpy(w, mark, 3);
    zn_status s = ZN_OK;
    while (i < len && !s) {
        size_t adv;
        uint32_t cp = utf8_decode_lenient(text + i, len - i, &adv);
        i += adv;
        if (t->wpm_strip_accents) cp = ucd_nfd_first(cp);
        ucd_class c = ucd_class_of(cp);
        bool space = ucd_is_space(cp);
        bool alone = !space && (c == UCD_PUNCT || is_ascii_symbol(cp) || is_cjk(cp));
        if (space || alone) { /* ends the current word */
            if (n > 3) s = wpm_word(t, w, n, out);
            n = 3;
            if (space) continue;
        }
        if (cp == 0 || cp == UTF8_REPLACEMENT || c == UCD_CONTROL) continue;
        if (t->wpm_strip_accents && c == UCD_MARK) continue;
        n += utf8_write(t->wpm_lowercase ? ucd_tolower(cp) : cp, w + n);
        if (alone && !s) {
            s = wpm_word(t, w, n, out);
            n = 3;
        }
    }
    if (n > 3 && !s) s = wpm_word(t, w, n, out);
    free(w);
    if (s) return zn_errf(err, s, "tokenizer: out of memory encoding %zu bytes", len);
    return ZN_OK;
}
