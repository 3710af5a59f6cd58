/* SentencePiece BPE (tokenizer.ggml.model = "llama"): spaces become U+2581,
 * then the adjacent pair whose concatenation is the highest-scoring vocab
 * entry is merged until none is left; characters that never became a token
 * fall back to <0xXX> byte tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

typedef struct spm_ctx {
    const zn_tokenizer *t;
    const char *w;
} spm_ctx;

static zn_status spm_pair(const void *ctx, const tok_sym *sy, int32_t l, int32_t r, tok_heap *h) {
    const spm_ctx *c = ctx;
    if (l < 0 || r < 0) return ZN_OK;
    /* adjacent symbols are contiguous in w, so the pair is one range */
    int32_t id = tok_map_get(&c->t->tok_to_id, c->w + sy[l].off, sy[l].n + sy[r].n);
    if (id < 0) return ZN_OK;
    return tok_heap_push(h, (tok_bigram){-(double)c->t->score[id], l, r, sy[l].n, sy[r].n});
}

zn_status spm_encode(const zn_tokenizer *t, const char *text, size_t len, bool space_prefix, tok_ids *out,
                     zn_err *err) {
    static const char sp[3] = {'\xe2', '\x96', '\x81'}; /* U+2581, SentencePiece's space */
    size_t cap = 3 * (len + 1);
    char *w = malloc(cap);
    /* one symbol per byte of w at most: a lead byte before U+2581 splits it,
     * so w can hold more characters than text has bytes */
    tok_sym *sy = malloc(cap * sizeof *sy);
    tok_heap h = {0};
    zn_status s = ZN_OK;
    if (!w || !sy) goto nomem;
    size_t n = 0;
    if (space_prefix) memcpy(w, sp, 3), n = 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') memcpy(w + n, sp, 3), n += 3;
        else w[n++] = text[i];
    }
    spm_ctx c = {t, w};
    int32_t ns = tok_merge(w, n, sy, &h, spm_pair, &c);
    if (ns < 0) goto nomem;
    for (int32_t i = 0; i >= 0 && ns; i = sy[i].next) {
        int32_t id = tok_map_get(&t->tok_to_id, w + sy[i].off, sy[i].n);
        if (id >= 0) {
            if (tok_ids_push(out, id)) goto nomem;
            continue;
        }
        for (uint32_t j = 0; j < sy[i].n; j++) {
            id = t->byte_tok[(uint8_t)w[sy[i].off + j]];
            if (id < 0) id = t->unk;
            if (id < 0) {
                s = zn_errf(err, ZN_ERR_FORMAT, "tokenizer: byte 0x%02X has no token and there is no <unk>",
                            (uint8_t)w[sy[i].off + j]);
                goto done;
            }
            if (tok_ids_push(out, id)) goto nomem;
        }
    }
    goto done;
nomem:
    s = zn_errf(err, ZN_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
done:
    free(w);
    free(sy);
    free(h.v);
    return s;
}
