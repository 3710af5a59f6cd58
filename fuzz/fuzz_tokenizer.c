/* libFuzzer target for the tokenizers: every vocabulary kind (SentencePiece,
 * byte-level BPE with each pre-tokenizer, WordPiece, llama.cpp's test
 * tokenizer) on arbitrary bytes. Layout (fuzz.h): byte 0 picks the vocab,
 * byte 1 the encode flags, the rest is the text. Vocabs are loaded once, on
 * first use, from $ZN_SHARED (default ../shared).
 *
 * Checked for every input:
 *   - encode succeeds (any bytes are text), reports the count it needs when
 *     the buffer is short, and every id is in [0, n_vocab);
 *   - decode succeeds, reports the size it needs, and its output is valid
 *     UTF-8; the streaming detokenizer emits valid UTF-8, never more than
 *     ZN_DETOK_OUT_MAX per call, and (without the clean-up of spaces, which
 *     it does not do) the same text as decode;
 *   - the round trip detok(encode(text)) == text where the tokenizer
 *     guarantees it: valid UTF-8 text, no special tokens added or parsed, a
 *     byte-level BPE or a SentencePiece vocab with byte fallback, and no
 *     user tokens that strip spaces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gguf.h"
#include "tokenizer.h"
#include "tokenizer_impl.h"
#include "utf8.h"

typedef struct vocab {
    zn_tokenizer *tok;
    bool tried, roundtrip;
} vocab;

static vocab vocabs[FUZZ_TOK_N_VOCABS];

static void fail(const char *what, const vocab *v, size_t i) {
    fprintf(stderr, "fuzz_tokenizer: %s (%s)\n", what, fuzz_tok_vocabs[i]);
    (void)v;
    abort();
}

static bool valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int c = utf8_check((const uint8_t *)s + i, n - i);
        if (c <= 0) return false;
        i += (size_t)c;
    }
    return true;
}

/* Where the detokenized ids of a text must give the text back: NULL, else
 * why not. */
static const char *no_roundtrip(const zn_tokenizer *t) {
    if (t->kind == ZN_TOK_SPM) {
        for (int b = 0; b < 256; b++)
            if (t->byte_tok[b] < 0) return "no byte fallback";
    } else if (t->kind == ZN_TOK_BPE) {
        /* GPT-2's byte-to-character map: printable Latin-1 bytes stand for
         * themselves, the others for U+0100 on, in order. A byte whose
         * character is not a token is dropped (as llama.cpp does). */
        for (int b = 0, k = 0; b < 256; b++) {
            bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            char c[4];
            size_t n = utf8_write(self ? (uint32_t)b : 256u + (uint32_t)k++, c);
            if (tokenizer_find(t, c, n) < 0) return "not every byte is a token";
        }
    } else {
        return "not byte-level";
    }
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->attr[id] & (ZN_TOKEN_ATTR_LSTRIP | ZN_TOKEN_ATTR_RSTRIP)) return "user tokens strip spaces";
    return NULL;
}

static vocab *get_vocab(size_t i) {
    vocab *v = &vocabs[i];
    if (v->tried) return v->tok ? v : NULL;
    v->tried = true;
    const char *shared = getenv("ZN_SHARED");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", shared && *shared ? shared : "../shared", fuzz_tok_vocabs[i]);
    gguf_ctx g;
    zn_err err;
    if (gguf_open(&g, path, &err) != ZN_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        return NULL;
    }
    if (tokenizer_load(&v->tok, &g, &err) != ZN_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        v->tok = NULL;
    }
    gguf_close(&g);
    if (v->tok) {
        const char *why = no_roundtrip(v->tok);
        v->roundtrip = !why;
        static const char *const kinds[] = {"spm", "bpe", "wpm", "test"};
        fprintf(stderr, "fuzz_tokenizer: %s: %s, %d tokens, round trip: %s\n", fuzz_tok_vocabs[i],
                kinds[tokenizer_kind(v->tok)], tokenizer_n_vocab(v->tok), why ? why : "checked");
    }
    return v->tok ? v : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t vi = data[0] % FUZZ_TOK_N_VOCABS;
    vocab *v = get_vocab(vi);
    if (!v) return 0; /* a missing fixture: nothing to fuzz with */
    const zn_tokenizer *t = v->tok;
    bool add_special = data[1] & FUZZ_TOK_FLAGS_ADD_SPECIAL, parse_special = data[1] & FUZZ_TOK_FLAGS_PARSE_SPECIAL;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    zn_err err;

    /* a short buffer first: it must report what it needs */
    int32_t small[4];
    size_t n = 0;
    zn_status st = tokenizer_encode(t, text, len, add_special, parse_special, small, 4, &n, &err);
    if (st != ZN_OK && st != ZN_ERR_NOMEM) fail(err.msg, v, vi);
    if (st == ZN_ERR_NOMEM && n <= 4) fail("encode: out of memory for a count that fits", v, vi);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t n2 = 0;
    if (!ids) return 0;
    if (tokenizer_encode(t, text, len, add_special, parse_special, ids, n, &n2, &err) != ZN_OK) fail(err.msg, v, vi);
    if (n2 != n) fail("encode: a different count the second time", v, vi);
    if (st == ZN_OK && memcmp(ids, small, n * sizeof *ids)) fail("encode: different ids the second time", v, vi);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tokenizer_n_vocab(t)) fail("encode: id out of range", v, vi);

    for (int special = 0; special < 2; special++) {
        size_t need = 0, got = 0;
        char one;
        st = tokenizer_decode(t, ids, n, special, &one, 0, &need, &err);
        if (st != ZN_OK && st != ZN_ERR_NOMEM) fail(err.msg, v, vi);
        char *out = malloc(need + 1);
        if (!out) break;
        if (tokenizer_decode(t, ids, n, special, out, need + 1, &got, &err) != ZN_OK) fail(err.msg, v, vi);
        if (got != need) fail("decode: a different length the second time", v, vi);
        if (!valid_utf8(out, got)) fail("decode: invalid UTF-8", v, vi);

        /* the streaming detokenizer */
        char *stream = malloc((n + 1) * ZN_DETOK_OUT_MAX);
        if (stream) {
            zn_detok d;
            size_t o = 0;
            detok_init(&d, t, special, true);
            for (size_t i = 0; i < n; i++) {
                size_t k = detok_push(&d, ids[i], stream + o);
                if (k > ZN_DETOK_OUT_MAX) fail("detok_push: more than ZN_DETOK_OUT_MAX", v, vi);
                o += k;
            }
            o += detok_flush(&d, stream + o);
            if (!valid_utf8(stream, o)) fail("detok: invalid UTF-8", v, vi);
            if (!t->clean_spaces && (o != got || memcmp(stream, out, o))) fail("detok: differs from decode", v, vi);
            /* no clean-up in the stream: the round trip holds for every vocab that keeps all bytes */
            if (special && v->roundtrip && !add_special && !parse_special && valid_utf8(text, len) &&
                /* SentencePiece's space: U+2581 in the text comes back as ' ' */
                !(t->kind == ZN_TOK_SPM && memmem(text, len, "\xe2\x96\x81", 3)) && (o != len || memcmp(stream, text, len))) {
                fprintf(stderr, "fuzz_tokenizer: round trip of %zu bytes gave %zu: '%.*s' -> '%.*s'\n", len, o,
                        (int)len, text, (int)o, stream);
                fail("detok(encode(text)) != text", v, vi);
            }
            free(stream);
        }
        free(out);
    }
    for (size_t i = 0; i < n; i++) {
        char piece[ZN_MAX_TOKEN_BYTES];
        if (tokenizer_token_piece(t, ids[i], true, piece, sizeof piece) > sizeof piece)
            fail("token_piece: longer than its buffer", v, vi);
    }
    free(ids);
    return 0;
}
