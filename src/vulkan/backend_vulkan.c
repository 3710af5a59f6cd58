/* The Vulkan backend: every graph op as a compute dispatch, a whole step
 * (decode tokens or prefill batch) recorded into one command buffer and
 * submitted once. A decode step (one token of one sequence, or of each of
 * several) is recorded once and replayed: what changes from one step to
 * the next is read by the shaders from host-written memory (the token ids,
 * the positions in the step blocks and sequence tables of vk_ops.h), so
 * later steps only write those and submit (see vk_run and vk_replay.h).
 *
 * This file: init (device, tuning, ops, the weights through vk_weights.c,
 * buffers, the KV pool, pipelines through vk_record.c), sequences (each
 * with its paged KV cache, f16 or Q8_0 / Q4_0 rows, its blocks its own or
 * the pool's, and recurrent state), runs, reads and writes of activations.
 * Activations live in one device arena laid out by the graph planner
 * (g->acts[i].off). vk_record.c turns a step into dispatches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timer.h"
#include "vk_backend.h"

static void vk_free(void *ctx);

/* The shared KV pool (kv_pool_tokens > 0): whole blocks, as many to one
 * device allocation as the allocation limit (opts.max_alloc, else the
 * device's) allows; every block starts on the free stack, block 0 on top. */
static zn_status pool_init(vk_ctx *c, int64_t tokens, uint64_t max_alloc, zn_err *err) {
    const uint64_t bb = c->kvl.block_bytes;
    const int64_t nb = (tokens + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK;
    vkarena_init(&c->pool, &c->d, VKMEM_DEVICE, 0, max_alloc);
    if (!bb) return zn_errf(err, ZN_ERR_ARG, "vulkan: a KV pool for a model without attention layers");
    if (bb > c->pool.max_block)
        return zn_errf(err, ZN_ERR_NOMEM, "vulkan: a KV block of %.1f MiB exceeds one allocation (%.1f MiB)",
                       (double)bb / (1 << 20), (double)c->pool.max_block / (1 << 20));
    const uint64_t per = c->pool.max_block / bb;
    c->pool.block_bytes = (per < (uint64_t)nb ? per : (uint64_t)nb) * bb;
    c->pool.expect = (uint64_t)nb * bb;
    c->pool_blk = calloc((size_t)nb, sizeof *c->pool_blk);
    if (!c->pool_blk) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    for (int64_t i = 0; i < nb; i++) {
        /* 256-byte aligned: the kernels' 16-byte row loads (vk_attn.c) */
        zn_status st = vkarena_alloc(&c->pool, bb, 256, &c->pool_blk[i], err);
        if (st) return zn_err_prefix(err, "KV pool of %lld blocks", (long long)nb);
    }
    return kvb_init(&c->blocks, nb, err) ? zn_err_prefix(err, "vulkan") : ZN_OK;
}

/* ---- init / free ---- */

static zn_status vk_init(void **out, const zn_model *m, const zn_backend_opts *opt, zn_err *err) {
    *out = NULL;
    if (opt->device < -1) return zn_errf(err, ZN_ERR_ARG, "vulkan: no device %d", opt->device);
    zn_status st0 = backend_kv_check(m, opt->kv_type, err);
    if (st0) return st0;
    vk_ctx *c = calloc(1, sizeof *c);
    if (!c) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    c->m = m;
    c->max_tokens = opt->max_tokens;
    c->no_fusion = opt->no_fusion;
    c->profile_kernels = opt->profile_kernels;
    c->build_threads = opt->n_threads;
    zn_status st = vkdev_open(&c->d, opt->device, err);
    if (st) {
        free(c);
        return st;
    }
    char cache[ZN_PATH_MAX];
    vkpipes_default_cache_path(&c->d, cache, sizeof cache);
    vktune t;
    st = vktune_init(&t, &c->d.info, opt->tune, err);
    if (st) zn_err_prefix(err, "vulkan");
    if (!st) st = vkops_init(&c->o, &c->d, &t, cache, err);
    c->o.n_head_kv = (uint32_t)m->hp.n_head_kv;
    c->kv_type = opt->kv_type;
    c->kvl = backend_kv_layout(m, opt->kv_type);
    c->kv_off = calloc((size_t)m->hp.n_layer, sizeof *c->kv_off);
    if (!st && !c->kv_off) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    /* the push constants carry a row's bytes as 32 bits */
    if (!st && c->kvl.pos_bytes > UINT32_MAX / 2)
        st = zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %zu bytes of KV cache per position", c->kvl.pos_bytes);
    for (int il = 0, li = 0; !st && il < m->hp.n_layer; il++)
        if (!m->layers[il].recurrent) c->kv_off[il] = (uint32_t)(li++ * (c->kvl.k_bytes + c->kvl.v_bytes));
    if (!st && opt->kv_type != ZN_KV_F16) c->o.kvq = vkops_kvq(opt->kv_type);
    /* profiling times ops (every step recorded anew) */
    if (!st) st = vkcmd_init(&c->c, &c->d, c->o.ps.layout, opt->profile, err);
    if (!st) st = vkxfer_init(&c->x, &c->d, 64ull << 20, err);
    if (st) {
        vk_free(c);
        return st;
    }
    /* the f16 GEMM path from 2 tokens on, emulated where there are no
     * cooperative matrices (tests on lavapipe) */
    if (opt->mm_emulate) {
        c->o.mm_emulate = !c->o.coopmat;
        c->o.t.mm_min_tok = c->o.t.moe_min_tok = 2;
    }
    c->o.refuse_kinds = opt->refuse_kinds;
    if (opt->profile) {
        char spec[ZN_TUNE_TEXT_MAX];
        vktune_describe(&c->o.t, spec, sizeof spec);
        fprintf(stderr, "vulkan: %s, tuning %s (%u compute units): %s\n", c->d.info.name, c->o.t.cls, c->o.t.units, spec);
    }
    vkarena_init(&c->wmem, &c->d, VKMEM_DEVICE, 0, opt->max_alloc);
    vkarena_init(&c->smem, &c->d, VKMEM_DEVICE, 0, 0);
    if (opt->kv_pool_tokens < 0) st = zn_errf(err, ZN_ERR_ARG, "vulkan: a KV pool of %lld positions", (long long)opt->kv_pool_tokens);
    if (!st && opt->kv_pool_tokens > 0) st = pool_init(c, opt->kv_pool_tokens, opt->max_alloc, err);
    c->w = calloc(m->gguf.n_tensors, sizeof *c->w);
    if (!st && !c->w) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    if (!st) st = vkweights_upload(c, opt->graph, err);
    if (!st) st = vkarena_alloc(&c->smem, (opt->arena_floats ? opt->arena_floats : 1) * sizeof(float), 256, &c->act, err);
    if (!st && c->mm_need) st = vkarena_alloc(&c->smem, c->mm_need, 256, &c->mm_scratch, err);
    if (!st && c->mm_need) c->o.mm_scratch = c->mm_scratch.addr, c->o.mm_scratch_bytes = c->mm_need;
    vkref xq = {0};
    if (!st && c->o.intdot && c->xq_bytes) st = vkarena_alloc(&c->smem, c->xq_bytes, 256, &xq, err);
    if (!st) vkops_set_xq(&c->o, xq.addr, xq.buf ? c->xq_bytes : 0);
    if (!st) st = vkbuf_create(&c->d, &c->io, sizeof(int32_t) * (size_t)opt->max_tokens, VKMEM_HOST, err);
    if (!st) st = vkbuf_create(&c->d, &c->step, sizeof(vkop_step) * ZN_MAX_STEP_SEQS * VK_REGIONS, VKMEM_SHARED, err);
    if (!st)
        st = vkbuf_create(&c->d, &c->seqtab,
                          sizeof(vkop_seq_ent) * ZN_MAX_STEP_SEQS * (size_t)m->hp.n_layer * VK_REGIONS, VKMEM_SHARED,
                          err);
    if (!st) st = vkbuf_create(&c->d, &c->ropep, sizeof(vkop_rope_p) * (size_t)m->hp.n_layer, VKMEM_SHARED, err);
    /* logits of every row of the largest step */
    if (!st) st = vkbuf_create(&c->d, &c->out, sizeof(float) * (size_t)m->hp.n_vocab * (size_t)opt->max_tokens, VKMEM_HOST, err);
    c->cap_groups = (uint32_t)m->hp.n_layer * 7 + 16; /* q/k/v, gate/up, shared expert, MoE tail and routes, ... */
    if (!st) st = vkbuf_create(&c->d, &c->groups, VK_REGIONS * sizeof(vkop_group) * c->cap_groups, VKMEM_SHARED, err);
    for (int i = 0; i < VK_REPLAYS && !st && !c->c.profile && !opt->no_replay; i++)
        st = vkreplay_init(&c->rp[i], &c->d, c->o.ps.layout, c->cap_nodes, c->cap_acts, err);
    /* poll for the end of a step (vkcmd_wait) or block on the fence */
    c->c.poll = c->o.t.poll;
    for (int i = 0; i < VK_REPLAYS; i++) c->rp[i].cmd.poll = c->o.t.poll;
    /* --trace: each recording's dispatch names */
    for (int i = -1; i < VK_REPLAYS && !st && opt->trace; i++) {
        vkcmd *k = i < 0 ? &c->c : &c->rp[i].cmd;
        if (k->d && !(k->trace = calloc(ZN_VK_TRACE_BYTES, 1))) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    }
    if (!st && (!c->step.map || !c->seqtab.map || !c->ropep.map || !c->out.map))
        st = zn_errf(err, ZN_ERR_DEVICE, "vulkan: host-visible buffers are not mapped");
    if (st) {
        vk_free(c);
        return st;
    }
    const double tp = timer_now();
    /* a hand-built graph (opts.graph: the op conformance test) has no step
     * shapes to walk: its pipelines are created on first use */
    if (!opt->lazy_pipelines && !opt->graph) st = vkrecord_prepare_pipelines(c, err);
    if (st) {
        vk_free(c);
        return st;
    }
    if (opt->profile)
        fprintf(stderr, "vulkan: %d pipelines created at init (%.3f s for the shapes of every step)\n", c->o.ps.n_created,
                timer_now() - tp);
    c->pipes_at_init = c->o.ps.n_created;
    *out = c;
    return ZN_OK;
}

static void vk_free(void *ctx) {
    vk_ctx *c = ctx;
    if (!c) return;
    if (c->d.dev) {
        c->d.fn.vkDeviceWaitIdle(c->d.dev);
        vkbuf_destroy(&c->d, &c->io);
        vkbuf_destroy(&c->d, &c->step);
        vkbuf_destroy(&c->d, &c->seqtab);
        vkbuf_destroy(&c->d, &c->ropep);
        vkbuf_destroy(&c->d, &c->out);
        vkbuf_destroy(&c->d, &c->groups);
        vkarena_free(&c->smem);
        vkarena_free(&c->wmem);
        vkarena_free(&c->pool);
        vkxfer_free(&c->x);
        vkcmd_free(&c->c);
        for (int i = 0; i < VK_REPLAYS; i++) vkreplay_free(&c->rp[i]);
        vkops_free(&c->o);
    }
    vkdev_close(&c->d);
    free(c->w);
    free(c->kv_off);
    free(c->pool_blk);
    kvb_free(&c->blocks);
    vkfuse_free(&c->plan);
    free(c);
}

/* ---- sequences ---- */

static void vk_seq_free(void *ctx, void *state);

/* Zeroes the recurrent state (attention needs nothing: positions past n_past
 * are never read). */
static zn_status seq_zero(vk_ctx *c, vk_seq *s, zn_err *err) {
    zn_status st = ZN_OK;
    for (int il = 0; il < c->m->hp.n_layer && !st; il++) {
        if (!s->conv[il].buf) continue;
        st = vkxfer_fill(&c->x, s->conv[il], 0, err);
        if (!st) st = vkxfer_fill(&c->x, s->delta[il], 0, err);
    }
    return st;
}

/* Table entry b's block: the sequence's own, or the pool's. */
static vkref seq_blk(const vk_ctx *c, const vk_seq *s, int b) {
    return c->blocks.n_blocks ? c->pool_blk[s->bix[b]] : s->blk[b];
}

/* Writes table entries [b0, b1). Runs are synchronous (vk_run
 * waits), so no submit reads the table while it changes, and the next one
 * (a replayed recording too: it keeps the table's address only) sees the
 * new blocks. */
static zn_status seq_write_tab(vk_ctx *c, vk_seq *s, int b0, int b1, zn_err *err) {
    if (b1 <= b0) return ZN_OK;
    uint64_t addr[64];
    zn_status st = ZN_OK;
    for (int b = b0; b < b1 && !st; b += 64) {
        const int n = b1 - b < 64 ? b1 - b : 64;
        for (int i = 0; i < n; i++) addr[i] = seq_blk(c, s, b + i).addr;
        st = vkxfer_upload(&c->x, vkref_sub(s->tab, 8ull * (uint64_t)b, 8ull * (uint64_t)n), addr, 8ull * (uint64_t)n, err);
    }
    return st ? st : vkxfer_flush(&c->x, err);
}

/* Pool blocks from n_keep on are let go (none without a pool). */
static void seq_release(vk_ctx *c, vk_seq *s, int n_keep) {
    if (c->blocks.n_blocks) kvb_release(&c->blocks, s->bix, &s->n_blk, n_keep);
}

#define ALIGN256(n) (((n) + 255) & ~255ull)

static zn_status vk_seq_init(void *ctx, void **out, int n_ctx, zn_err *err) {
    vk_ctx *c = ctx;
    const zn_hparams *hp = &c->m->hp;
    *out = NULL;
    if (n_ctx < 1 || n_ctx > ZN_MAX_CTX) return zn_errf(err, ZN_ERR_ARG, "vulkan: a context of %d", n_ctx);
    vk_seq *s = calloc(1, sizeof *s);
    if (!s) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    s->id = ++c->next_seq;
    s->n_ctx = n_ctx;
    s->n_tab = (n_ctx + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK;
    s->blk = calloc((size_t)s->n_tab, sizeof *s->blk);
    s->bix = calloc((size_t)s->n_tab, sizeof *s->bix);
    s->conv = calloc((size_t)hp->n_layer, sizeof *s->conv);
    s->delta = calloc((size_t)hp->n_layer, sizeof *s->delta);
    zn_status st = !s->blk || !s->bix || !s->conv || !s->delta ? zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory") : ZN_OK;
    /* recurrent layers (qwen35): conv [conv_dim][d_conv-1], delta [H_v][d_v][d_k] */
    const uint64_t conv_b = 4ull * (2ull * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner) * (uint64_t)(hp->ssm_d_conv - 1);
    const uint64_t delta_b = 4ull * hp->ssm_d_inner * (uint64_t)hp->ssm_d_state;
    /* without a pool, the sequence's own blocks: the last one holds only
     * the context's rows (a checkpoint's: 1 position) */
    const bool own = !c->blocks.n_blocks && c->kvl.pos_bytes;
#define BLK_B(b) ((uint64_t)c->kvl.pos_bytes * (uint64_t)(n_ctx - (b) * ZN_KV_BLOCK < ZN_KV_BLOCK ? n_ctx - (b) * ZN_KV_BLOCK : ZN_KV_BLOCK))
    /* one allocation of exactly what the sequence needs: the arena's
     * default block (256 MiB) would be held by every sequence, also a
     * 0.5 MiB one */
    uint64_t need = ALIGN256(8ull * (uint64_t)s->n_tab);
    for (int b = 0; own && b < s->n_tab; b++) need += ALIGN256(BLK_B(b));
    for (int il = 0; il < hp->n_layer; il++)
        if (c->m->layers[il].recurrent) need += ALIGN256(conv_b) + ALIGN256(delta_b);
    vkarena_init(&s->mem, &c->d, VKMEM_DEVICE, need, 0);
    s->mem.expect = need;
    if (!st) st = vkarena_alloc(&s->mem, 8ull * (uint64_t)s->n_tab, 256, &s->tab, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        if (!c->m->layers[il].recurrent) continue;
        st = vkarena_alloc(&s->mem, conv_b, 256, &s->conv[il], err);
        if (!st) st = vkarena_alloc(&s->mem, delta_b, 256, &s->delta[il], err);
    }
    /* 256-byte aligned: the kernels' 16-byte row loads (vk_attn.c) */
    for (int b = 0; own && b < s->n_tab && !st; b++) st = vkarena_alloc(&s->mem, BLK_B(b), 256, &s->blk[b], err);
#undef BLK_B
    if (!st && own) {
        s->n_blk = s->n_tab;
        st = seq_write_tab(c, s, 0, s->n_tab, err);
    }
    /* the split-K scratch must cover the longest context any sequence has */
    uint64_t pf = vkop_attn_part_floats(&c->o, 1, (uint32_t)n_ctx, (uint32_t)hp->n_head, (uint32_t)hp->head_dim_v);
    if (!st && pf > c->part_floats) {
        st = vkarena_alloc(&c->smem, pf * sizeof(float), 256, &c->part, err);
        if (!st) c->part_floats = pf;
    }
    *out = s;
    if (!st) st = seq_zero(c, s, err);
    if (st) {
        vk_seq_free(c, s);
        *out = NULL;
        return st;
    }
    s->held = vkarena_held(&s->mem);
    c->seq_bytes += s->held;
    c->n_seqs++;
    return ZN_OK;
}

static void vk_seq_free(void *ctx, void *state) {
    vk_ctx *c = ctx;
    vk_seq *s = state;
    if (!s) return;
    c->d.fn.vkDeviceWaitIdle(c->d.dev);
    for (int i = 0; i < VK_REPLAYS; i++) vkreplay_forget(&c->rp[i], s->id);
    if (s->held) {
        c->seq_bytes -= s->held;
        c->n_seqs--;
    }
    seq_release(c, s, 0);
    vkarena_free(&s->mem);
    free(s->blk);
    free(s->bix);
    free(s->conv);
    free(s->delta);
    free(s);
}

static void vk_seq_reset(void *ctx, void *state) {
    zn_err err;
    seq_release(ctx, state, 0);
    /* the interface has no status here; a failed fill leaves the device lost,
     * which the next run reports */
    seq_zero(ctx, state, &err);
}

/* A shared block about to be written, copied on the device (synchronous:
 * done before the step): its rows below n_from (kvb_reserve). */
static zn_status cow_copy(void *arg, int32_t from, int32_t to, int rows, zn_err *err) {
    vk_ctx *c = arg;
    return vkxfer_copy(&c->x, c->pool_blk[from], c->pool_blk[to], (uint64_t)rows * c->kvl.pos_bytes, err);
}

/* All or nothing: short of blocks, the sequence keeps what it held. A
 * shared block about to be written is copied and its table entry
 * rewritten; the recordings read the table at run time, so a replay sees
 * the copy. A failed copy leaves the device lost (the next run reports
 * it); the counts stay right. */
static zn_status vk_seq_reserve(void *ctx, void *state, int n_from, int n_pos, zn_err *err) {
    vk_ctx *c = ctx;
    vk_seq *s = state;
    if (n_pos < 0 || n_pos > s->n_ctx || n_from < 0 || n_from > n_pos)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: KV positions [%d, %d) in a context of %d", n_from, n_pos, s->n_ctx);
    if (!c->blocks.n_blocks) return ZN_OK;
    const int held = s->n_blk;
    kvb_plan pl;
    zn_status st = kvb_reserve(&c->blocks, s->bix, &s->n_blk, n_from, n_pos, &pl, cow_copy, c, err);
    if (st == ZN_ERR_KV_FULL) return zn_err_prefix(err, "vulkan");
    if (!st && pl.first < pl.need) st = seq_write_tab(c, s, pl.first, pl.need, err); /* else nothing changed */
    if (st) seq_release(c, s, held); /* its table still names only those */
    return st;
}

static void vk_seq_trim(void *ctx, void *state, int n_keep) {
    vk_seq *s = state;
    if (n_keep < 0) n_keep = 0;
    if (n_keep > s->n_ctx) n_keep = s->n_ctx;
    seq_release(ctx, s, (n_keep + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK);
}

/* dst's table entries [0, n_kv / ZN_KV_BLOCK) name src's blocks (shared),
 * entry `part` (the last, partial block: -1 for none) a block of dst's
 * own, a new one unless it holds one alone there. */
static zn_status seq_share(vk_ctx *c, vk_seq *d, const vk_seq *s, int n_kv, zn_err *err) {
    int part;
    if (kvb_share(&c->blocks, d->bix, &d->n_blk, s->bix, n_kv, &part, err)) return zn_err_prefix(err, "vulkan");
    return seq_write_tab(c, d, 0, part >= 0 ? part + 1 : n_kv / ZN_KV_BLOCK, err);
}

/* The blocks are not adjacent (a pool's): [0, n_kv) block by block, each
 * block's first rows, every attention layer's at once (position-major);
 * with a pool only the last partial block, the others shared (seq_share). */
static zn_status vk_seq_copy(void *ctx, void *dst, const void *src, int n_kv, zn_err *err) {
    vk_ctx *c = ctx;
    vk_seq *d = dst;
    const vk_seq *s = src;
    const zn_hparams *hp = &c->m->hp;
    if (n_kv < 0 || n_kv > d->n_ctx || n_kv > s->n_ctx)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: copy of %d KV positions between contexts of %d and %d", n_kv, s->n_ctx, d->n_ctx);
    if (d == s) return ZN_OK;
    const int nb = c->kvl.pos_bytes ? (n_kv + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK : 0;
    if (nb > s->n_blk || (!c->blocks.n_blocks && nb > d->n_blk))
        return zn_errf(err, ZN_ERR_ARG, "vulkan: copy of %d KV positions between sequences holding %d and %d blocks",
                       n_kv, s->n_blk, d->n_blk);
    zn_status st = c->blocks.n_blocks && nb ? seq_share(c, d, s, n_kv, err) : ZN_OK;
    const int b0 = c->blocks.n_blocks ? n_kv / ZN_KV_BLOCK : 0;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        if (!s->conv[il].buf) continue;
        st = vkxfer_copy(&c->x, s->conv[il], d->conv[il], s->conv[il].size, err);
        if (!st) st = vkxfer_copy(&c->x, s->delta[il], d->delta[il], s->delta[il].size, err);
    }
    for (int b = b0; b < nb && !st; b++) {
        const int rows = n_kv - b * ZN_KV_BLOCK < ZN_KV_BLOCK ? n_kv - b * ZN_KV_BLOCK : ZN_KV_BLOCK;
        st = vkxfer_copy(&c->x, seq_blk(c, s, b), seq_blk(c, d, b), (uint64_t)rows * c->kvl.pos_bytes, err);
    }
    return st;
}

/* A decode step (every sequence of it one token) replays the recording
 * kept for its kind (rp[0]: one sequence, rp[1]: several) when its key
 * fits (vk_replay.h), else is recorded into that replay buffer; other
 * steps (and all of them with replay off) are recorded into c->c. Either
 * way the host writes only the token ids and the positions before
 * submitting, and waits for the end before returning (so the next step's
 * writes find nothing in flight: vkrecord_positions). A step of several
 * sequences runs its matmuls over all its rows at once, the per-sequence
 * ops once per sequence with that sequence's state and position, or (rope,
 * the KV store, attention, the recurrent conv and delta rule) once for all
 * when each sequence decodes one token (vk_record.c). */
static zn_status vk_run(void *ctx, void *const *states, const zn_graph *g, zn_err *err) {
    vk_ctx *c = ctx;
    vk_seq *const *seqs = (vk_seq *const *)states;
    zn_status cst = graph_check_step(g, err);
    if (cst) return cst;
    if (g->n_tokens > c->max_tokens) return zn_errf(err, ZN_ERR_ARG, "vulkan: %d tokens in a step", g->n_tokens);
    if (g->n_seq > ZN_MAX_STEP_SEQS) return zn_errf(err, ZN_ERR_ARG, "vulkan: %d sequences in a step", g->n_seq);
    for (int i = 0; i < g->n_seq; i++) {
        if (g->seqs[i].n_past + g->seqs[i].n_rows > seqs[i]->n_ctx)
            return zn_errf(err, ZN_ERR_ARG, "vulkan: context of %d exceeded", seqs[i]->n_ctx);
        /* the kernels would follow table entries naming no block */
        if (c->kvl.pos_bytes && (g->seqs[i].n_past + g->seqs[i].n_rows + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK > seqs[i]->n_blk)
            return zn_errf(err, ZN_ERR_ARG, "vulkan: positions up to %d of a sequence holding %d KV blocks (seq_reserve first)",
                           g->seqs[i].n_past + g->seqs[i].n_rows, seqs[i]->n_blk);
        for (int j = 0; j < i; j++)
            if (seqs[j] == seqs[i]) return zn_errf(err, ZN_ERR_ARG, "vulkan: one sequence twice in a step");
    }
    if (g->n_nodes > c->cap_nodes || g->n_acts > c->cap_acts)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: graph of %d nodes / %d activations", g->n_nodes, g->n_acts);
    const double t0 = timer_now();
    const bool decode = graph_is_decode(g);
    vkreplay *rp = decode && c->rp[0].cmd.d ? &c->rp[g->n_seq > 1] : NULL;
    const uint32_t region = rp ? 1 + (uint32_t)(rp - c->rp) : 0;
    vkcmd *cmd = rp ? &rp->cmd : &c->c;
    bool replay = false;
    if (rp) {
        for (int q = 0; q < g->n_seq; q++) c->key_ids[q] = seqs[q]->id;
        vkrecord_step_shape(c, g, c->key_shape);
        replay = vkreplay_fits(rp, c->key_ids, c->key_shape, g);
    }
    memcpy(c->io.map, g->tokens, sizeof(int32_t) * (size_t)g->n_tokens);
    zn_status st = ZN_OK;
    if (replay) {
        c->out_off = rp->out_off;
        c->out_floats = rp->out_floats;
        c->batch = rp->batch;
    } else {
        if (rp) rp->valid = false; /* about to be re-recorded */
        st = vkrecord_step(c, seqs, g, cmd, region, err);
        if (!st && rp) {
            vkreplay_keep(rp, c->key_ids, c->key_shape, g);
            rp->batch = c->batch;
            rp->out_off = c->out_off;
            rp->out_floats = c->out_floats;
        }
    }
    if (!st && decode && !replay) {
        c->stats.step_dispatches = cmd->n_dispatch;
        c->stats.step_barriers = cmd->n_barrier;
        if (cmd->trace)
            fprintf(stderr, "vulkan trace: decode step of %d sequence(s), %u dispatches, %u barriers:%s\n", g->n_seq,
                    cmd->n_dispatch, cmd->n_barrier, cmd->trace);
    }
    if (!st) vkrecord_positions(c, g, region, c->batch);
    const double t1 = timer_now();
    if (!st) st = vkcmd_submit(cmd, err);
    const double t2 = timer_now();
    if (!st) st = vkcmd_wait(cmd, err);
    if (st) c->out_floats = 0;
    c->decode = decode;
    if (decode) {
        const double t3 = timer_now();
        c->stats.steps++;
        c->stats.replayed += replay;
        c->stats.batched += !st && c->batch;
        c->stats.prepare_s += t1 - t0;
        c->stats.submit_s += t2 - t1;
        c->stats.wait_s += t3 - t2;
    }
    if (!st && c->c.profile) vkrecord_print_profile(c, g);
    return st;
}

/* The logits of the last run in host memory, where record copied them. */
static const float *vk_view(void *ctx, const zn_graph *g, int act, int row0, int n_rows) {
    const vk_ctx *c = ctx;
    if (act < 0 || act >= g->n_acts) return NULL;
    const zn_act *a = &g->acts[act];
    if (row0 < 0 || n_rows < 0 || n_rows > a->rows - row0) return NULL;
    const uint64_t nf = (uint64_t)a->rows * (uint64_t)a->cols;
    if (!c->out_floats || a->off != c->out_off || nf != c->out_floats) return NULL;
    return (const float *)c->out.map + (uint64_t)row0 * (uint64_t)a->cols;
}

/* The logits of the last run are already in host memory (record copied
 * them); anything else is downloaded. */
static zn_status vk_read(void *ctx, const zn_graph *g, int act, int row0, int n_rows, float *out, zn_err *err) {
    vk_ctx *c = ctx;
    const double t0 = timer_now();
    if (act < 0 || act >= g->n_acts) return zn_errf(err, ZN_ERR_ARG, "vulkan: no activation %d", act);
    const zn_act *a = &g->acts[act];
    if (row0 < 0 || n_rows < 0 || n_rows > a->rows - row0)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: rows [%d, +%d) of an activation of %d", row0, n_rows, a->rows);
    const uint64_t skip = (uint64_t)row0 * (uint64_t)a->cols, want = (uint64_t)n_rows * (uint64_t)a->cols;
    const float *v = vk_view(ctx, g, act, row0, n_rows);
    zn_status st = ZN_OK;
    if (v)
        memcpy(out, v, sizeof(float) * want);
    else
        st = vkxfer_download(&c->x, vkref_sub(c->act, sizeof(float) * (a->off + skip), sizeof(float) * want), out,
                             sizeof(float) * want, err);
    if (c->decode) c->stats.read_s += timer_now() - t0;
    return st;
}

static zn_status vk_write(void *ctx, const zn_graph *g, int act, const float *in, zn_err *err) {
    vk_ctx *c = ctx;
    if (act < 0 || act >= g->n_acts) return zn_errf(err, ZN_ERR_ARG, "vulkan: no activation %d", act);
    const uint64_t off = sizeof(float) * g->acts[act].off, n = sizeof(float) * (uint64_t)g->acts[act].rows * (uint64_t)g->acts[act].cols;
    if (off > c->act.size || n > c->act.size - off)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: activation %d outside the arena", act);
    zn_status st = vkxfer_upload(&c->x, vkref_sub(c->act, off, n), in, n, err);
    return st ? st : vkxfer_flush(&c->x, err);
}

static void vk_stats(void *ctx, zn_backend_stats *out) {
    vk_ctx *c = ctx;
    *out = c->stats;
    out->pipelines = (uint64_t)c->o.ps.n_created;
    out->pipelines_late = (uint64_t)(c->o.ps.n_created - c->pipes_at_init);
}

static zn_status vk_devices(zn_device_info *out, int cap, int *n, int *def, zn_err *err) {
    vkdev_info in[ZN_VK_MAX_DEVICES];
    *n = 0;
    *def = -1;
    zn_status st = vkdev_list(in, ZN_VK_MAX_DEVICES, n, err);
    if (st) return st;
    if (*n > cap) *n = cap;
    *def = vkdev_default_index(in, *n);
    for (int i = 0; i < *n; i++) {
        zn_device_info *o = &out[i];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", in[i].name);
        snprintf(o->driver, sizeof o->driver, "%s", in[i].driver);
        o->kind = in[i].kind;
        o->usable = in[i].bda;
        o->emulated = !strcmp(in[i].kind, "cpu");
        o->coopmat = in[i].coopmat;
        o->coopmat2 = in[i].coopmat2;
        o->vram_bytes = in[i].vram_bytes;
        o->api_major = VK_API_VERSION_MAJOR(in[i].api_version);
        o->api_minor = VK_API_VERSION_MINOR(in[i].api_version);
        o->compute_units = in[i].compute_units;
        o->vendor_id = in[i].vendor_id;
        o->device_id = in[i].device_id;
        vkdev_describe(&in[i], i, i == *def, o->line, sizeof o->line);
    }
    return ZN_OK;
}

static void tuning_out(const vktune *t, zn_tuning *out) {
    snprintf(out->cls, sizeof out->cls, "%s", t->cls);
    out->units = t->units;
    vktune_describe(t, out->spec, sizeof out->spec);
}

static zn_status vk_tuning(void *ctx, int device, const char *tune, zn_tuning *out, zn_err *err) {
    if (ctx) {
        tuning_out(&((vk_ctx *)ctx)->o.t, out);
        return ZN_OK;
    }
    vkdev_info in[ZN_VK_MAX_DEVICES];
    int n = 0;
    zn_status st = vkdev_list(in, ZN_VK_MAX_DEVICES, &n, err);
    if (st) return st;
    if (device < 0) device = vkdev_default_index(in, n);
    if (device < 0 || device >= n) return zn_errf(err, ZN_ERR_ARG, "vulkan: no device %d (%d present)", device, n);
    vktune t;
    st = vktune_init(&t, &in[device], tune, err);
    if (st) return zn_err_prefix(err, "vulkan");
    tuning_out(&t, out);
    return ZN_OK;
}

static void vk_mem(void *ctx, zn_backend_mem *out) {
    const vk_ctx *c = ctx;
    *out = (zn_backend_mem){.weights = vkarena_held(&c->wmem), .scratch = vkarena_held(&c->smem),
                            .seqs = c->seq_bytes, .n_seqs = c->n_seqs, .kv_pool = vkarena_held(&c->pool),
                            .kv_blocks = c->blocks.n_blocks, .kv_blocks_free = kvb_n_free(&c->blocks)};
}

const zn_backend_ops zn_backend_vulkan = {
    .name = "vulkan",
    .multi_seq = true,
    .init = vk_init,
    .free = vk_free,
    .seq_init = vk_seq_init,
    .seq_free = vk_seq_free,
    .seq_reset = vk_seq_reset,
    .seq_reserve = vk_seq_reserve,
    .seq_trim = vk_seq_trim,
    .seq_copy = vk_seq_copy,
    .run = vk_run,
    .read = vk_read,
    .view = vk_view,
    .write = vk_write,
    .stats = vk_stats,
    .mem = vk_mem,
    .devices = vk_devices,
    .tuning = vk_tuning,
};

