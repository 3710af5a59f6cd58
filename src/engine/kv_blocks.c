/* The KV pool's blocks by index (kv_blocks.h). Apart from backend.c so
 * that builds without the Vulkan backend (the fuzz targets) link the CPU
 * backend alone. */
#include <stdlib.h>

#include "kv_blocks.h"

zn_status kvb_init(kvb *p, int64_t n_blocks, zn_err *err) {
    *p = (kvb){0};
    if (n_blocks < 0 || n_blocks > INT32_MAX)
        return zn_errf(err, ZN_ERR_ARG, "a KV pool of %lld blocks", (long long)n_blocks);
    if (!n_blocks) return ZN_OK;
    p->free = malloc(sizeof *p->free * (size_t)n_blocks);
    p->refs = calloc((size_t)n_blocks, sizeof *p->refs);
    if (!p->free || !p->refs) {
        kvb_free(p);
        return zn_errf(err, ZN_ERR_NOMEM, "out of memory for the counts of %lld KV blocks", (long long)n_blocks);
    }
    /* the first blocks first: the lowest addresses of a pool in one piece */
    for (int64_t i = 0; i < n_blocks; i++) p->free[i] = (int32_t)(n_blocks - 1 - i);
    p->n_blocks = p->n_free = n_blocks;
    return ZN_OK;
}

void kvb_free(kvb *p) {
    free(p->free);
    free(p->refs);
    *p = (kvb){0};
}

int32_t kvb_take(kvb *p) {
    const int32_t i = p->free[--p->n_free];
    p->refs[i] = 1;
    return i;
}

void kvb_hold(kvb *p, int32_t i) { p->refs[i]++; }

void kvb_drop(kvb *p, int32_t i) {
    if (--p->refs[i] == 0) p->free[p->n_free++] = i;
}

bool kvb_shared(const kvb *p, int32_t i) { return p->refs[i] > 1; }

int64_t kvb_n_free(const kvb *p) { return p->n_free; }

void kvb_release(kvb *p, int32_t *tab, int *n_held, int n_keep) {
    while (*n_held > n_keep) kvb_drop(p, tab[--*n_held]);
}

zn_status kvb_plan_reserve(const kvb *p, const int32_t *tab, int n_held, int n_from, int n_pos, kvb_plan *pl,
                           zn_err *err) {
    const int need = (n_pos + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK, b0 = n_from / ZN_KV_BLOCK;
    const int b1 = n_pos > n_from ? (need < n_held ? need : n_held) : b0; /* held blocks written */
    *pl = (kvb_plan){.need = need, .more = need > n_held ? need - n_held : 0, .first = n_held};
    for (int b = b0; b < b1; b++)
        if (kvb_shared(p, tab[b])) pl->cow++, pl->first = pl->first < b ? pl->first : b;
    if (pl->more + pl->cow == 0) pl->first = need;
    if (pl->more + pl->cow > p->n_free)
        return zn_errf(err, ZN_ERR_KV_FULL,
                       "KV pool full: %d positions need %d more blocks of %d (%d to copy shared ones), %lld of %lld free",
                       n_pos, pl->more + pl->cow, ZN_KV_BLOCK, pl->cow, (long long)p->n_free, (long long)p->n_blocks);
    return ZN_OK;
}

zn_status kvb_reserve(kvb *p, int32_t *tab, int *n_held, int n_from, int n_pos, kvb_plan *pl, kvb_copy_fn copy,
                      void *arg, zn_err *err) {
    zn_status st = kvb_plan_reserve(p, tab, *n_held, n_from, n_pos, pl, err);
    if (st) return st;
    /* copy-on-write: a shared block's other holders keep it (its data
     * stays), this sequence writes a copy */
    const int end = pl->need < *n_held ? pl->need : *n_held;
    for (int b = pl->first; pl->cow && b < end; b++) {
        const int32_t old = tab[b];
        if (!kvb_shared(p, old)) continue;
        const int rows = n_from - b * ZN_KV_BLOCK < ZN_KV_BLOCK ? n_from - b * ZN_KV_BLOCK : ZN_KV_BLOCK;
        tab[b] = kvb_take(p);
        if (!st && rows > 0) st = copy(arg, old, tab[b], rows, err);
        kvb_drop(p, old);
    }
    while (*n_held < pl->need) tab[(*n_held)++] = kvb_take(p);
    return st;
}

zn_status kvb_share(kvb *p, int32_t *dst, int *dst_held, const int32_t *src, int n_kv, int *part, zn_err *err) {
    const int full = n_kv / ZN_KV_BLOCK;
    *part = n_kv % ZN_KV_BLOCK ? full : -1;
    const bool fresh = *part >= 0 && (*dst_held <= *part || kvb_shared(p, dst[*part]));
    if (fresh && p->n_free < 1)
        return zn_errf(err, ZN_ERR_KV_FULL, "KV pool full: a block of %d positions wanted for a copy, 0 of %lld free",
                       ZN_KV_BLOCK, (long long)p->n_blocks);
    for (int b = 0; b < full; b++) {
        kvb_hold(p, src[b]); /* before the drop: dst may hold it already */
        if (b < *dst_held) kvb_drop(p, dst[b]);
        dst[b] = src[b];
    }
    if (*dst_held < full) *dst_held = full;
    if (fresh) {
        const int32_t i = kvb_take(p);
        if (*part < *dst_held) kvb_drop(p, dst[*part]);
        dst[*part] = i;
        if (*dst_held <= *part) *dst_held = *part + 1;
    }
    return ZN_OK;
}
