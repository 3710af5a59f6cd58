/* Internals shared by tokenizer*.c; not part of the public API. */
#ifndef ZINC_TOKENIZER_IMPL_H
#define ZINC_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

#define TOK_MAX_REGEX 8 /* pre-tokenizer regexes applied in sequence */

/* Open-addressing string -> int32 map; slots hold value+1, 0 = empty. Keys
 * are (ptr,len) pairs owned by the caller and must outlive the map. */
typedef struct tok_map {
    uint32_t *slots;
    uint32_t mask;
    const char *const *keys; /* keys[v] / lens[v]: the key of value v */
    const uint32_t *lens;
} tok_map;

uint64_t tok_hash(const char *s, size_t n);
zn_status tok_map_init(tok_map *m, size_t n, const char *const *keys, const uint32_t *lens);
void tok_map_free(tok_map *m);
/* keep_first: on a duplicate key keep the existing value (else replace). */
void tok_map_put(tok_map *m, uint32_t v, bool keep_first);
int32_t tok_map_get(const tok_map *m, const char *s, size_t n); /* -1 when absent */

/* Room for element n of a growing array: returns v when n < *cap, else
 * the array reallocated to twice the capacity (min when empty) with *cap
 * updated, or NULL (v still valid) when out of memory. */
void *tok_grow(void *v, size_t n, size_t *cap, size_t elem, size_t min);

/* Growable id list (encode output). */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;

zn_status tok_ids_push(tok_ids *o, int32_t id);

/* Min-heap of candidate merges: smaller prio first, then smaller left. */
typedef struct tok_bigram {
    double prio;
    int32_t left, right;
    uint32_t ln, rn; /* symbol lengths when queued; stale if they changed */
} tok_bigram;

typedef struct tok_heap {
    tok_bigram *v;
    size_t n, cap;
} tok_heap;

zn_status tok_heap_push(tok_heap *h, tok_bigram b);
tok_bigram tok_heap_pop(tok_heap *h);

/* A symbol in a merge chain: a byte range of the word being tokenized. */
typedef struct tok_sym {
    uint32_t off, n;
    int32_t prev, next;
} tok_sym;

/* Queues the pair (l, r) on h if it may merge; ctx is the caller's. */
typedef zn_status (*tok_pair_fn)(const void *ctx, const tok_sym *sy, int32_t l, int32_t r, tok_heap *h);

/* Splits w[0..n) into UTF-8 characters (as llama.cpp: by lead byte, clipped
 * at the end), then merges the best queued pair until none is left. The
 * merged symbols form a chain from index 0 along next; returns the number of
 * characters (0 for empty w), or -1 when out of memory. sy needs n entries
 * (one per byte of w: invalid or truncated UTF-8 can make every byte a
 * character). */
int32_t tok_merge(const char *w, size_t n, tok_sym *sy, tok_heap *h, tok_pair_fn pair, const void *ctx);

struct zn_tokenizer {
    zn_tok_kind kind;
    int32_t n_vocab;
    char *arena;          /* all token texts, NUL-terminated */
    const char **text;    /* text[id] into arena */
    uint32_t *len;
    float *score;
    uint32_t *attr;
    tok_map tok_to_id;
    uint32_t max_token_len;

    int32_t *special; /* control/user-defined/unknown ids, longest first */
    size_t n_special;
    int32_t *eog;     /* sorted */
    size_t n_eog;

    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    int32_t byte_tok[256]; /* id of each raw byte (byte fallback), -1 if none */
    bool add_bos, add_eos, add_sep;
    bool add_space_prefix, clean_spaces, ignore_merges;
    bool wpm_lowercase, wpm_strip_accents;

    /* BPE */
    char *merge_arena;
    const char **merge_text;
    uint32_t *merge_len;
    tok_map merge_rank;
    void *re[TOK_MAX_REGEX]; /* pcre2_code_8 * */
    int n_re;
    char pre[64];
};

/* tokenizer_bpe.c */
zn_status bpe_init(zn_tokenizer *t, const gguf_ctx *g, const char *pre, zn_err *err);
void bpe_free(zn_tokenizer *t);
zn_status bpe_encode(const zn_tokenizer *t, const char *text, size_t len, tok_ids *out, zn_err *err);
/* Maps the GPT-2 byte-level characters of a token back to bytes. */
size_t bpe_decode_token(const char *text, size_t len, char *out);

/* tokenizer_spm.c */
/* space_prefix: add SentencePiece's leading space (add_space_prefix). */
zn_status spm_encode(const zn_tokenizer *t, const char *text, size_t len, bool space_prefix, tok_ids *out,
                     zn_err *err);

/* tokenizer_wpm.c */
zn_status wpm_encode(const zn_tokenizer *t, const char *text, size_t len, tok_ids *out, zn_err *err);

#endif
