/* The shared KV pool's bookkeeping, host side and over block indices, so
 * that every backend counts the same way and keeps only the bytes: which
 * blocks are free (a stack), how many sequences hold each (a block
 * shared by seq_copy is written only once held alone), and the block
 * tables' plans for a reserve and a copy. Everything is allocated at
 * kvb_init; nothing later allocates or fails for memory. */
#ifndef ZINC_KV_BLOCKS_H
#define ZINC_KV_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct kvb {
    int64_t n_blocks, n_free;
    int32_t *free;  /* [n_blocks]: the first n_free are free, taken from the top */
    int32_t *refs;  /* [n_blocks]: the holders of each block (0: free) */
} kvb;

/* Every block free, block 0 on top of the stack (taken first). */
zn_status kvb_init(kvb *p, int64_t n_blocks, zn_err *err);
void kvb_free(kvb *p);

/* A free block with one holder (the caller made sure one is free). */
int32_t kvb_take(kvb *p);
/* One more holder of a held block. */
void kvb_hold(kvb *p, int32_t i);
/* One holder fewer; the last one puts the block back on the stack. */
void kvb_drop(kvb *p, int32_t i);
bool kvb_shared(const kvb *p, int32_t i);
int64_t kvb_n_free(const kvb *p);

/* A sequence's table: entry b names the block of positions
 * [b * ZN_KV_BLOCK, (b + 1) * ZN_KV_BLOCK); the first *n_held are held.
 * kvb_release lets entries from n_keep on go. */
void kvb_release(kvb *p, int32_t *tab, int *n_held, int n_keep);

/* What making positions [n_from, n_pos) writable takes: `more` blocks
 * appended, `cow` shared ones in the written range replaced by copies;
 * entries [first, need) change (first == need: none). */
typedef struct kvb_plan {
    int need, more, cow, first;
} kvb_plan;

/* ZN_ERR_KV_FULL ("KV pool full: ...") when the pool lacks more + cow free
 * blocks. The caller checks the range against its context. */
zn_status kvb_plan_reserve(const kvb *p, const int32_t *tab, int n_held, int n_from, int n_pos, kvb_plan *pl,
                           zn_err *err);

/* Copies the first `rows` positions of block `from` into block `to`. */
typedef zn_status (*kvb_copy_fn)(void *arg, int32_t from, int32_t to, int rows, zn_err *err);

/* Plans and carries out a reserve, all or nothing: refused (KV full), the
 * table and the counts are unchanged. A copy-on-write calls copy for the
 * block's rows below n_from (the others are about to be written; none: no
 * call); a failed copy's status is returned, the table and the counts
 * updated all the same. */
zn_status kvb_reserve(kvb *p, int32_t *tab, int *n_held, int n_from, int n_pos, kvb_plan *pl, kvb_copy_fn copy,
                      void *arg, zn_err *err);

/* A copy of src's first n_kv positions into dst: dst's entries below
 * n_kv / ZN_KV_BLOCK name src's blocks (shared), its entry for the last,
 * partial block (*part; -1: none) a block dst holds alone, a new one
 * unless it has one, into which the caller copies the rows. Refused (KV
 * full: no block free for it), nothing changes. src holds the blocks of
 * n_kv positions. */
zn_status kvb_share(kvb *p, int32_t *dst, int *dst_held, const int32_t *src, int n_kv, int *part, zn_err *err);

#endif
