/* Tokenizers built from GGUF metadata (tokenizer.ggml.*): byte-level BPE
 * (model "gpt2", pre-tokenizer chosen by tokenizer.ggml.pre), SentencePiece
 * BPE (model "llama", byte fallback) and WordPiece (model "bert").
 * Semantics follow llama.cpp of 2026-09-28, which produced the test vectors.
 *
 * A zn_tokenizer is immutable after tokenizer_load() and may be shared by
 * threads; each call allocates its own scratch. The streaming detokenizer
 * (zn_detok) is per sequence and never allocates. */
#ifndef ZINC_TOKENIZER_H
#define ZINC_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "status.h"

typedef struct zn_tokenizer zn_tokenizer;

#define ZN_TOKEN_NULL (-1)

/* Per-token attributes (bit set), from tokenizer.ggml.token_type plus the
 * fix-ups llama.cpp applies by token text. */
enum {
    ZN_TOKEN_ATTR_UNKNOWN = 1 << 0,
    ZN_TOKEN_ATTR_UNUSED = 1 << 1,
    ZN_TOKEN_ATTR_NORMAL = 1 << 2,
    ZN_TOKEN_ATTR_CONTROL = 1 << 3,
    ZN_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    ZN_TOKEN_ATTR_BYTE = 1 << 5,
    ZN_TOKEN_ATTR_LSTRIP = 1 << 7, /* eat ASCII spaces left of it when parsed out of text */
    ZN_TOKEN_ATTR_RSTRIP = 1 << 8, /* ... and right of it */
};

/* ZN_TOK_TEST is llama.cpp's dummy tokenizer of its random test models (the
 * shared tiny fixtures): 5-byte chunks hashed to ids, ids printed in hex. */
typedef enum zn_tok_kind { ZN_TOK_SPM, ZN_TOK_BPE, ZN_TOK_WPM, ZN_TOK_TEST } zn_tok_kind;

/* Builds the tokenizer from g's tokenizer.ggml.* metadata; everything is
 * copied, so g may be closed afterwards. */
zn_status tokenizer_load(zn_tokenizer **out, const gguf_ctx *g, zn_err *err);
void tokenizer_free(zn_tokenizer *tok);

/* Text -> ids. add_special: BOS/EOS (CLS/SEP for WordPiece) as the model's
 * metadata asks (tokenizer.ggml.add_bos_token ...). parse_special: control
 * tokens written in the text (e.g. "<|im_start|>") become their ids (longest
 * first); when false they are tokenized as plain text. User-defined tokens are
 * always parsed out, as in HF tokenizers. On ZN_ERR_NOMEM (cap too small) *n is
 * the count needed. */
zn_status tokenizer_encode(const zn_tokenizer *tok, const char *text, size_t len, bool add_special,
                           bool parse_special, int32_t *ids, size_t cap, size_t *n, zn_err *err);

/* Ids -> text as llama.cpp's detokenize: control tokens rendered only when
 * special; the first token loses one leading space when the model adds one
 * (SentencePiece; a BOS first keeps the space after it); HF's clean-up of spaces
 * before punctuation applied when the model asks for it (clean_spaces).
 * Broken UTF-8 comes out as U+FFFD. On ZN_ERR_NOMEM *len is the size needed. */
zn_status tokenizer_decode(const zn_tokenizer *tok, const int32_t *ids, size_t n, bool special,
                           char *out, size_t cap, size_t *len, zn_err *err);

/* Raw bytes one token stands for (no clean-up, no UTF-8 repair); returns the
 * length (at most ZN_MAX_TOKEN_BYTES), 0 for an out-of-range id or a control
 * token when !special. */
size_t tokenizer_token_piece(const zn_tokenizer *tok, int32_t id, bool special, char *buf, size_t cap);

/* The vocab entry as stored in the GGUF (NUL-terminated), NULL if out of range. */
const char *tokenizer_token_text(const zn_tokenizer *tok, int32_t id);
/* Id of an exact vocab entry, ZN_TOKEN_NULL if absent. */
int32_t tokenizer_find(const zn_tokenizer *tok, const char *text, size_t len);

zn_tok_kind tokenizer_kind(const zn_tokenizer *tok);
int32_t tokenizer_n_vocab(const zn_tokenizer *tok);
uint32_t tokenizer_token_attr(const zn_tokenizer *tok, int32_t id);
int32_t tokenizer_bos(const zn_tokenizer *tok); /* ZN_TOKEN_NULL when none */
int32_t tokenizer_eos(const zn_tokenizer *tok);
int32_t tokenizer_eot(const zn_tokenizer *tok);
bool tokenizer_add_bos(const zn_tokenizer *tok);
/* End of generation: EOS, EOT, EOM and the end-of-turn tokens found by text. */
bool tokenizer_is_eog(const zn_tokenizer *tok, int32_t id);

/* ---- streaming detokenizer ------------------------------------------
 * Push tokens one at a time; each push returns the bytes that are ready.
 * A token that ends inside a UTF-8 sequence is held back until the sequence
 * completes; invalid bytes come out as U+FFFD, so the output is always valid
 * UTF-8. The punctuation clean-up of tokenizer_decode does not apply (it
 * needs look-ahead). */
#define ZN_DETOK_OUT_MAX (3 * (ZN_MAX_TOKEN_BYTES + 4)) /* bytes one push or flush can return */

typedef struct zn_detok {
    const zn_tokenizer *tok;
    bool special;
    bool first;
    uint8_t held[4];
    int n_held;
} zn_detok;

/* at_start: the tokens begin a text, so SentencePiece's added leading space
 * is dropped (as tokenizer_decode does); false when they continue a prompt. */
void detok_init(zn_detok *d, const zn_tokenizer *tok, bool special, bool at_start);
/* out must hold ZN_DETOK_OUT_MAX bytes; returns the count written (no NUL). */
size_t detok_push(zn_detok *d, int32_t id, char *out);
/* Ends the stream: held bytes of an unfinished sequence become U+FFFD. */
size_t detok_flush(zn_detok *d, char *out);

#endif
