/* The CPU backend: the reference implementation of every graph op.
 * Weights are read in place from the map; all buffers are allocated at init
 * or seq_init; a run walks the nodes on every thread with a barrier after
 * each op. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu.h"

/* The op table: one kernel per op (add new ops here). */
static const cpu_kernel kernels[ZN_OP_COUNT] = {
    [ZN_OP_EMBED] = cpu_op_embed,
    [ZN_OP_RMSNORM] = cpu_op_rmsnorm,
    [ZN_OP_MATMUL] = cpu_op_matmul,
    [ZN_OP_ROPE] = cpu_op_rope,
    [ZN_OP_KV_STORE] = cpu_op_kv_store,
    [ZN_OP_ATTN] = cpu_op_attn,
    [ZN_OP_ADD] = cpu_op_add,
    [ZN_OP_SWIGLU] = cpu_op_swiglu,
    [ZN_OP_SIGMOID_MUL] = cpu_op_sigmoid_mul,
    [ZN_OP_MOE_ROUTE] = cpu_op_moe_route,
    [ZN_OP_MOE_MATMUL] = cpu_op_moe_matmul,
    [ZN_OP_MOE_SUM] = cpu_op_moe_sum,
    [ZN_OP_GET_ROWS] = cpu_op_get_rows,
    [ZN_OP_GATHER_ROWS] = cpu_op_gather_rows,
    [ZN_OP_COPY_COLS] = cpu_op_copy_cols,
    [ZN_OP_CONV1D] = cpu_op_conv1d,
    [ZN_OP_GDN] = cpu_op_gdn,
};

static void cpu_free(void *ctx);

/* Widest matmul input and quantized-row size over the model's weights. */
static size_t max_xq_row(const zn_model *m, int64_t *max_cols) {
    size_t best = 0;
    *max_cols = 0;
    for (uint64_t i = 0; i < m->gguf.n_tensors; i++) {
        const gguf_tensor *t = &m->gguf.tensors[i];
        if (!zn_type_get(t->type) || !zn_type_get(t->type)->compute) continue;
        int64_t n = (int64_t)t->ne[0];
        if (n > *max_cols) *max_cols = n;
        zn_type vt = quant_vec_dot_type(t->type);
        size_t row = vt == ZN_TYPE_F32 ? 0 : zn_row_size(vt, n); /* f32 input is used in place */
        if (row > best) best = row;
    }
    return best;
}

static zn_status cpu_init(void **out, const zn_model *m, const zn_backend_opts *o, zn_err *err) {
    *out = NULL;
    zn_status st = backend_kv_check(m, o->kv_type, err);
    if (st != ZN_OK) return st;
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory");
    c->m = m;
    c->n_threads = o->n_threads;
    c->max_tokens = o->max_tokens;
    c->kv_type = o->kv_type;
    cpu_vec_select(&c->vec);
    st = cpu_pool_init(&c->pool, o->n_threads, err);
    if (st != ZN_OK) {
        free(c);
        return st;
    }
    const zn_hparams *hp = &m->hp;
    const int k = hp->n_expert_used > 0 ? hp->n_expert_used : 1;
    int64_t max_cols;
    size_t xq_row = max_xq_row(m, &max_cols);
    c->arena_floats = o->arena_floats;
    c->arena = aligned_alloc(64, (o->arena_floats * sizeof(float) + 63) / 64 * 64 + 64);
    c->xq_bytes = xq_row * (size_t)o->max_tokens * (size_t)k;
    c->xq = aligned_alloc(64, (c->xq_bytes + 63) / 64 * 64 + 64);
    c->tls = aligned_alloc(64, sizeof *c->tls * (size_t)o->n_threads);
    c->rope_stride = (hp->head_dim_k + 15) / 16 * 16;
    c->rope = calloc((size_t)o->n_threads * (size_t)c->rope_stride, sizeof *c->rope);
    c->attn_index = calloc((size_t)hp->n_layer, sizeof *c->attn_index);
    c->recr_index = calloc((size_t)hp->n_layer, sizeof *c->recr_index);
    if (hp->n_expert > 0) {
        c->moe_slots = calloc((size_t)hp->n_expert * (size_t)o->max_tokens * (size_t)k, sizeof *c->moe_slots);
        c->moe_count = calloc((size_t)hp->n_expert, sizeof *c->moe_count);
    }
    c->kvl = backend_kv_layout(m, c->kv_type);
    c->kvq_hd = hp->head_dim_k > hp->head_dim_v ? hp->head_dim_k : hp->head_dim_v;
    if (c->kv_type != ZN_KV_F16)
        c->kvq_rows = malloc(sizeof *c->kvq_rows * (size_t)o->n_threads * ZN_KV_BLOCK * (size_t)c->kvq_hd);
    c->kvq_y = malloc(sizeof *c->kvq_y * (size_t)o->n_threads * CPU_KVQ_Y * (size_t)c->kvq_hd);
    if (!c->arena || !c->xq || !c->tls || !c->rope || !c->attn_index || !c->recr_index || !c->kvq_y ||
        (c->kv_type != ZN_KV_F16 && !c->kvq_rows) || (hp->n_expert > 0 && (!c->moe_slots || !c->moe_count))) {
        cpu_free(c);
        return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory for %zu activation floats", o->arena_floats);
    }
    if (o->kv_pool_tokens < 0 || o->kv_pool_tokens > (int64_t)ZN_MAX_CTX * ZN_MAX_STEP_SEQS) {
        cpu_free(c);
        return zn_errf(err, ZN_ERR_ARG, "cpu: a KV pool of %lld positions", (long long)o->kv_pool_tokens);
    }
    if (o->kv_pool_tokens > 0 && c->kvl.pos_bytes > 0) {
        const int64_t nb = (o->kv_pool_tokens + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK;
        c->kv_pool = malloc(c->kvl.block_bytes * (size_t)nb);
        if (!c->kv_pool || kvb_init(&c->blocks, nb, err) != ZN_OK) {
            cpu_free(c);
            return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory for a KV pool of %lld blocks (%.1f MiB)",
                           (long long)o->kv_pool_tokens, (double)c->kvl.block_bytes * (double)nb / 1048576.0);
        }
    }
    st = cpu_pack_init(c, err);
    if (st != ZN_OK) {
        cpu_free(c);
        return st;
    }
    int na = 0, nr = 0;
    for (int i = 0; i < hp->n_layer; i++) {
        c->attn_index[i] = m->layers[i].recurrent ? -1 : na++;
        c->recr_index[i] = m->layers[i].recurrent ? nr++ : -1;
    }
    *out = c;
    return ZN_OK;
}

static void cpu_free(void *ctx) {
    cpu_ctx *c = ctx;
    if (!c) return;
    cpu_pool_free(c->pool);
    cpu_pack_free(c);
    free(c->arena);
    free(c->xq);
    free(c->tls);
    free(c->rope);
    free(c->att);
    free(c->attn_index);
    free(c->recr_index);
    free(c->kvq_rows);
    free(c->kvq_y);
    free(c->kv_pool);
    kvb_free(&c->blocks);
    free(c->moe_slots);
    free(c->moe_count);
    free(c);
}

/* ---- sequences ---- */

/* Pool blocks of s from block n_keep on are let go. */
static void blocks_give_back(cpu_ctx *c, cpu_seq *s, int n_keep) {
    if (!s->own) kvb_release(&c->blocks, s->bix, &s->n_blk, n_keep);
}

static void seq_release(cpu_ctx *c, cpu_seq *s, int n_recr) {
    blocks_give_back(c, s, 0);
    for (int i = 0; s->conv && i < n_recr; i++) {
        free(s->conv[i]);
        free(s->delta[i]);
    }
    free(s->own);
    free(s->bix);
    free(s->conv);
    free(s->delta);
    free(s);
}

static void cpu_seq_free(void *ctx, void *state) {
    cpu_ctx *c = ctx;
    cpu_seq *s = state;
    if (!s) return;
    c->seq_bytes -= s->held;
    c->n_seqs--;
    seq_release(c, s, s->n_recr);
}

/* Recurrent state sizes (qwen35): conv [conv_dim][d_conv-1], delta [H_v][Dv][Dk]. */
static size_t conv_floats(const zn_hparams *hp) {
    return (size_t)(2 * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner) * (size_t)(hp->ssm_d_conv - 1);
}
static size_t delta_floats(const zn_hparams *hp) {
    return (size_t)hp->ssm_dt_rank * (size_t)hp->ssm_d_state * (size_t)hp->ssm_d_state;
}

static zn_status cpu_seq_init(void *ctx, void **out, int n_ctx, zn_err *err) {
    cpu_ctx *c = ctx;
    const zn_model *m = c->m;
    const zn_hparams *hp = &m->hp;
    *out = NULL;
    if (n_ctx < 1 || n_ctx > ZN_MAX_CTX)
        return zn_errf(err, ZN_ERR_ARG, "context of %d tokens out of range [1, %d]", n_ctx, ZN_MAX_CTX);
    /* the per-thread score rows must hold the longest context of any sequence */
    if ((size_t)n_ctx > c->att_stride) {
        size_t stride = ((size_t)n_ctx + 15) / 16 * 16;
        float *att = realloc(c->att, sizeof *att * stride * CPU_ATT_Q * (size_t)c->n_threads);
        if (!att) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory for attention scores");
        c->att = att;
        c->att_stride = stride;
    }
    cpu_seq *s = calloc(1, sizeof *s);
    if (!s) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory");
    s->n_ctx = n_ctx;
    int n_attn = model_n_attn_layers(m), n_recr = hp->n_layer - n_attn;
    const int n_blk = (n_ctx + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK;
    s->bix = calloc((size_t)n_blk, sizeof *s->bix);
    s->base = c->kv_pool;
    s->conv = calloc((size_t)n_recr + 1, sizeof *s->conv);
    s->delta = calloc((size_t)n_recr + 1, sizeof *s->delta);
    bool ok = s->bix && s->conv && s->delta;
    /* without a pool the sequence's blocks are one allocation of exactly
     * n_ctx positions (the last block short), its table fixed; the sizes
     * allocated are the sizes reported (zn_backend_mem) */
    const size_t kv_bytes = c->kv_pool ? 0 : c->kvl.pos_bytes * (size_t)n_ctx;
    const size_t n_conv = conv_floats(hp), n_delta = delta_floats(hp);
    if (ok && kv_bytes) {
        s->own = malloc(kv_bytes);
        ok = s->own != NULL;
        s->base = s->own;
        for (int b = 0; ok && b < n_blk; b++) s->bix[b] = b;
        s->n_blk = ok ? n_blk : 0;
    }
    for (int i = 0; ok && i < n_recr; i++) {
        s->conv[i] = calloc(n_conv, sizeof(float));
        s->delta[i] = calloc(n_delta, sizeof(float));
        ok = s->conv[i] && s->delta[i];
    }
    s->n_attn = n_attn;
    s->n_recr = n_recr;
    if (!ok) {
        seq_release(c, s, n_recr);
        return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory for a %d-token KV cache", n_ctx);
    }
    s->held = kv_bytes + (uint64_t)n_recr * sizeof(float) * (n_conv + n_delta);
    c->seq_bytes += s->held;
    c->n_seqs++;
    *out = s;
    return ZN_OK;
}

static void cpu_seq_reset(void *ctx, void *state) {
    cpu_ctx *c = ctx;
    const zn_hparams *hp = &c->m->hp;
    cpu_seq *s = state;
    blocks_give_back(c, s, 0);
    for (int i = 0; i < s->n_recr; i++) {
        memset(s->conv[i], 0, sizeof(float) * conv_floats(hp));
        memset(s->delta[i], 0, sizeof(float) * delta_floats(hp));
    }
}

/* A shared block about to be written: its rows below n_from (kvb_reserve). */
static zn_status cow_copy(void *arg, int32_t from, int32_t to, int rows, zn_err *err) {
    const cpu_ctx *c = arg;
    const size_t bb = c->kvl.block_bytes;
    memcpy(c->kv_pool + bb * (size_t)to, c->kv_pool + bb * (size_t)from, c->kvl.pos_bytes * (size_t)rows);
    return ZN_OK;
}

static zn_status cpu_seq_reserve(void *ctx, void *state, int n_from, int n_pos, zn_err *err) {
    cpu_ctx *c = ctx;
    cpu_seq *s = state;
    if (n_pos < 0 || n_pos > s->n_ctx || n_from < 0 || n_from > n_pos)
        return zn_errf(err, ZN_ERR_ARG, "cpu: KV positions [%d, %d) in a context of %d", n_from, n_pos, s->n_ctx);
    if (!c->kv_pool) return ZN_OK;
    kvb_plan pl;
    return kvb_reserve(&c->blocks, s->bix, &s->n_blk, n_from, n_pos, &pl, cow_copy, c, err);
}

static void cpu_seq_trim(void *ctx, void *state, int n_keep) {
    cpu_seq *s = state;
    blocks_give_back(ctx, s, n_keep < 0 ? 0 : (n_keep + ZN_KV_BLOCK - 1) / ZN_KV_BLOCK);
}

static zn_status cpu_seq_copy(void *ctx, void *dst, const void *src, int n_kv, zn_err *err) {
    cpu_ctx *c = ctx;
    const zn_hparams *hp = &c->m->hp;
    cpu_seq *d = dst;
    const cpu_seq *s = src;
    if (n_kv < 0 || n_kv > d->n_ctx || n_kv > s->n_ctx)
        return zn_errf(err, ZN_ERR_ARG, "cpu: copy of %d KV positions between contexts of %d and %d", n_kv, s->n_ctx, d->n_ctx);
    if (c->kvl.pos_bytes && (n_kv > s->n_blk * ZN_KV_BLOCK || (!c->kv_pool && n_kv > d->n_blk * ZN_KV_BLOCK)))
        return zn_errf(err, ZN_ERR_ARG, "cpu: copy of %d KV positions: blocks of %d / %d held", n_kv, s->n_blk, d->n_blk);
    if (d == s) return ZN_OK;
    /* pool: dst shares src's whole blocks and copies the last partial one
     * into a block it holds alone (kvb_share) */
    int part = -1;
    zn_status st = c->kv_pool ? kvb_share(&c->blocks, d->bix, &d->n_blk, s->bix, n_kv, &part, err) : ZN_OK;
    if (st) return st;
    for (int i = 0; i < s->n_recr; i++) {
        memcpy(d->conv[i], s->conv[i], sizeof(float) * conv_floats(hp));
        memcpy(d->delta[i], s->delta[i], sizeof(float) * delta_floats(hp));
    }
    /* a block holds every layer of its positions: one copy per block (with
     * a pool only the partial one, `part`) */
    for (int b = c->kv_pool ? n_kv / ZN_KV_BLOCK : 0; c->kvl.pos_bytes && b * ZN_KV_BLOCK < n_kv; b++) {
        const int n = n_kv - b * ZN_KV_BLOCK < ZN_KV_BLOCK ? n_kv - b * ZN_KV_BLOCK : ZN_KV_BLOCK;
        memcpy(cpu_kv_block(c, d, b), cpu_kv_block(c, s, b), c->kvl.pos_bytes * (size_t)n);
    }
    return ZN_OK;
}

/* ---- running ---- */

/* Whether b may start before every thread has finished a: not when both
 * are matmuls of the same input (q/k/v, gate/up) whose activations are
 * quantized the same way -- each reads only that input (already quantized,
 * shared) and writes its own output -- so one barrier per group is enough. */
static bool needs_barrier(const cpu_ctx *c, const zn_node *a, const zn_node *b) {
    if (!b || a->op != ZN_OP_MATMUL || b->op != ZN_OP_MATMUL || a->src[0] != b->src[0]) return true;
    if (a->dst == b->dst || a->dst == b->src[0] || b->dst == a->src[0]) return true;
    return cpu_xq_format(c, a->w[0]) != cpu_xq_format(c, b->w[0]);
}

static void run_nodes(void *arg, int ith, int nth) {
    const cpu_run *r = arg;
    struct cpu_tls *tls = &r->c->tls[ith];
    for (int i = 0; i < r->g->n_nodes; i++) {
        const zn_node *n = &r->g->nodes[i];
        kernels[n->op](r, n, ith, nth);
        if (n->dst == tls->xq_act) tls->xq_act = -1; /* rewritten in place */
        if (needs_barrier(r->c, n, i + 1 < r->g->n_nodes ? n + 1 : NULL)) cpu_pool_barrier(r->c->pool);
    }
}

static zn_status cpu_run_graph(void *ctx, void *const *states, const zn_graph *g, zn_err *err) {
    cpu_ctx *c = ctx;
    cpu_seq *const *s = (cpu_seq *const *)states;
    if (g->arena_floats > c->arena_floats || g->n_tokens > c->max_tokens)
        return zn_errf(err, ZN_ERR_ARG, "cpu: graph larger than the backend was prepared for");
    zn_status st = graph_check_step(g, err);
    if (st != ZN_OK) return st;
    for (int i = 0; i < g->n_seq; i++) {
        const zn_step_seq *q = &g->seqs[i];
        if (!s[i]) return zn_errf(err, ZN_ERR_ARG, "cpu: no state for sequence %d of the step", i);
        if (q->n_past + q->n_rows > s[i]->n_ctx)
            return zn_errf(err, ZN_ERR_ARG, "context full: %d + %d tokens > %d", q->n_past, q->n_rows, s[i]->n_ctx);
        if (q->n_past + q->n_rows > s[i]->n_blk * ZN_KV_BLOCK && c->kvl.pos_bytes > 0)
            return zn_errf(err, ZN_ERR_ARG, "cpu: positions up to %d in %d KV blocks (not reserved)", q->n_past + q->n_rows,
                           s[i]->n_blk);
        for (int j = 0; j < i; j++)
            if (s[j] == s[i]) return zn_errf(err, ZN_ERR_ARG, "cpu: sequences %d and %d of the step share a state", j, i);
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (!kernels[g->nodes[i].op])
            return zn_errf(err, ZN_ERR_UNSUPPORTED, "cpu: op %s not implemented", graph_op_name(g->nodes[i].op));
    for (int i = 0; i < c->n_threads; i++) c->tls[i] = (struct cpu_tls){.xq_act = -1, .moe_route = -1};
    cpu_run r = {c, s, g};
    cpu_pool_run(c->pool, run_nodes, &r);
    return ZN_OK;
}

static const float *cpu_view(void *ctx, const zn_graph *g, int act, int row0, int n_rows) {
    const cpu_ctx *c = ctx;
    if (act < 0 || act >= g->n_acts) return NULL;
    const zn_act *a = &g->acts[act];
    if (row0 < 0 || n_rows < 0 || n_rows > a->rows - row0) return NULL;
    return c->arena + a->off + (size_t)row0 * a->cols;
}

static zn_status cpu_read(void *ctx, const zn_graph *g, int act, int row0, int n_rows, float *out, zn_err *err) {
    const float *p = cpu_view(ctx, g, act, row0, n_rows);
    if (!p && (act < 0 || act >= g->n_acts)) return zn_errf(err, ZN_ERR_ARG, "cpu: no activation %d", act);
    if (!p)
        return zn_errf(err, ZN_ERR_ARG, "cpu: rows [%d, +%d) of an activation of %d", row0, n_rows, g->acts[act].rows);
    memcpy(out, p, sizeof(float) * (size_t)n_rows * g->acts[act].cols);
    return ZN_OK;
}

static zn_status cpu_write(void *ctx, const zn_graph *g, int act, const float *in, zn_err *err) {
    cpu_ctx *c = ctx;
    if (act < 0 || act >= g->n_acts) return zn_errf(err, ZN_ERR_ARG, "cpu: no activation %d", act);
    const zn_act *a = &g->acts[act];
    const size_t n = (size_t)a->rows * (size_t)a->cols;
    if (a->off > c->arena_floats || n > c->arena_floats - a->off)
        return zn_errf(err, ZN_ERR_ARG, "cpu: activation %d outside the arena", act);
    memcpy(c->arena + a->off, in, sizeof(float) * n);
    return ZN_OK;
}

/* Weights: the mapped file's (read where they are) and the repacked copies
 * beside them; scratch: every buffer cpu_init and seq_init size for the
 * steps. */
static void cpu_mem(void *ctx, zn_backend_mem *out) {
    const cpu_ctx *c = ctx;
    const zn_hparams *hp = &c->m->hp;
    const uint64_t T = (uint64_t)c->n_threads, k = hp->n_expert_used > 0 ? (uint64_t)hp->n_expert_used : 1;
    uint64_t scratch = c->arena_floats * sizeof(float) + c->xq_bytes + c->att_stride * CPU_ATT_Q * T * sizeof(float) +
                       T * (uint64_t)c->rope_stride * sizeof(float);
    if (hp->n_expert > 0) scratch += (uint64_t)hp->n_expert * ((uint64_t)c->max_tokens * k + 1) * sizeof(int32_t);
    scratch += T * (uint64_t)c->kvq_hd * CPU_KVQ_Y * sizeof(float);
    if (c->kv_type != ZN_KV_F16) scratch += T * (uint64_t)c->kvq_hd * ZN_KV_BLOCK * sizeof(zn_half);
    *out = (zn_backend_mem){.weights = c->m->weight_bytes + c->packed_bytes, .scratch = scratch, .seqs = c->seq_bytes,
                            .n_seqs = c->n_seqs, .kv_pool = c->kvl.block_bytes * (uint64_t)c->blocks.n_blocks,
                            .kv_blocks = c->blocks.n_blocks, .kv_blocks_free = kvb_n_free(&c->blocks)};
}

const zn_backend_ops zn_backend_cpu = {
    .name = "cpu",
    .multi_seq = true,
    .init = cpu_init,
    .free = cpu_free,
    .seq_init = cpu_seq_init,
    .seq_free = cpu_seq_free,
    .seq_reset = cpu_seq_reset,
    .seq_reserve = cpu_seq_reserve,
    .seq_trim = cpu_seq_trim,
    .seq_copy = cpu_seq_copy,
    .run = cpu_run_graph,
    .read = cpu_read,
    .view = cpu_view,
    .write = cpu_write,
    .mem = cpu_mem,
};
