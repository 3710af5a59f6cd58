/* The Vulkan backend: every graph op as a compute dispatch, a whole step
 * (decode token or prefill batch) recorded into one command buffer and
 * submitted once. A one-token (decode) step is recorded once and replayed:
 * what changes from one step to the next is read by the shaders from
 * host-written memory (the token ids, the step block of vk_ops.h with the
 * position), so later steps only write those and submit (see vk_run and
 * vk_replay.h).
 *
 * Weights are uploaded once at init (the ones the model's graph uses),
 * through a staging buffer, into device-local blocks; a 2-D weight larger
 * than one allocation is split by rows into chunks and its matmul becomes
 * one dispatch per chunk. Activations live in one device arena laid out by
 * the graph planner (g->acts[i].off). Each sequence owns its f16 KV cache
 * and recurrent state. Barriers are placed only where a node touches memory
 * an earlier node of the same barrier interval wrote (or writes memory it
 * read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "vk_fuse.h"
#include "vk_ops.h"
#include "vk_quant.h"
#include "vk_replay.h"
#include "timer.h"

#define VK_MAX_CHUNKS 16
#define VK_HAZARDS 64

typedef struct vk_weight {
    uint32_t n_chunks;            /* 0 = not on the device */
    uint32_t chunk_rows;          /* rows per chunk (the last may hold fewer) */
    uint32_t row_bytes;
    VkDeviceAddress addr[VK_MAX_CHUNKS];
} vk_weight;

typedef struct range { uint64_t lo, hi; } range;

typedef struct vk_ctx {
    const zn_model *m;
    vkdev d;
    vkops o;
    vkcmd c;                      /* per-step recordings (prefill, profiling, replay off) */
    vkreplay rp;                  /* the decode step kept for replay; rp.cmd.d == NULL: replay off */
    vkcmd *rec;                   /* the command buffer being recorded */
    vkxfer x;
    vkarena wmem;                 /* weights */
    vkarena smem;                 /* activations, scratch */
    vkbuf io;                     /* host-visible: token ids in */
    vkbuf step;                   /* host-written vkop_step of the current run */
    vkbuf out;                    /* host-visible: the logits of a run, copied at its end */
    uint64_t out_off, out_floats; /* which activation out holds now (0 floats: none) */
    vkbuf groups;                 /* host-written vkop_group blocks: [0, cap) per-step recordings, [cap, 2 cap) the replay's */
    uint32_t n_groups, cap_groups, group_base;
    uint64_t next_seq;            /* vk_seq ids */
    int pipes_at_init;            /* pipelines created when init returned */
    zn_backend_stats stats;
    vk_weight *w;                 /* [gguf n_tensors], by model_weight_id */
    vkref act;                    /* the activation arena */
    vkref part;                   /* split-K attention partials */
    vkref mm_scratch;             /* f16 GEMM operands (vkops.mm_scratch) */
    uint64_t mm_need;
    bool profile_kernels;         /* --profile splits each op's time by shader */
    uint64_t xq_bytes;            /* the integer mat-vec's x scratch (vkops_set_xq) */
    bool x_reuse;                 /* recording: the node's x is the previous matmul's, unchanged */
    uint64_t part_floats;
    int max_tokens;
    /* the fusion plan of the graph being recorded (vk_fuse.h), sized for the model's graphs */
    int cap_nodes, cap_acts;
    bool no_fusion;               /* every node on its own (tests) */
    vkfuse plan;
    /* hazard tracking since the last barrier */
    range rd[VK_HAZARDS], wr[VK_HAZARDS];
    int n_rd, n_wr;
} vk_ctx;

typedef struct vk_seq {
    uint64_t id;                  /* unique in its context: keys the replay */
    vkarena mem;
    int n_ctx;
    VkDeviceAddress *k, *v;       /* [n_layer]: KV caches of attention layers */
    vkref *kr, *vr;               /* [n_layer]: the same as ranges (copies) */
    vkref *conv, *delta;          /* [n_layer]: recurrent state (zero for a new sequence) */
} vk_seq;

static void vk_free(void *ctx);
static zn_status prepare_pipelines(vk_ctx *c, zn_err *err);

/* ---- weights ---- */

static uint64_t weight_rows(const gguf_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

#define REPACK_BYTES (32ull << 20) /* host buffer for rewriting rows before upload */

/* Rows rewritten and sent per round: at most a quarter of an allocation, so
 * a test that shrinks allocations (opts.max_alloc) also takes several
 * rounds per chunk. */
static uint64_t repack_rows(const vk_ctx *c, uint64_t rb) {
    uint64_t b = c->wmem.max_block / 4 < REPACK_BYTES ? c->wmem.max_block / 4 : REPACK_BYTES;
    return b / rb ? b / rb : 1;
}

/* Uploads one weight: matrices (matmul / embedding operands) in the GPU
 * row layout of vk_quant.h, split by rows into chunks when larger than one
 * allocation; everything else (norms, biases, conv kernels) as stored. */
static zn_status upload_weight(vk_ctx *c, const gguf_tensor *t, bool matrix, const vkref *dst, uint8_t *tmp,
                               uint64_t *done, uint64_t total, bool progress, zn_err *err) {
    vk_weight *w = &c->w[model_weight_id(c->m, t)];
    if (w->n_chunks) return ZN_OK;
    const uint64_t gg = zn_row_size(t->type, (int64_t)t->ne[0]);
    const uint64_t rows = matrix ? weight_rows(t) : 1, in_row = matrix ? gg : t->nbytes;
    const uint64_t rb = matrix ? vkq_row_bytes(t->type, (int64_t)t->ne[0]) : t->nbytes;
    if (!rb || rb > REPACK_BYTES) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %s: rows of %llu bytes", t->name, (unsigned long long)rb);
    uint64_t per = c->wmem.max_block / rb;
    if (rows * rb <= c->wmem.max_block) per = rows;
    else if (t->ne[2] > 1) /* expert stacks are addressed from one base */
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %s: %llu bytes of experts exceed one allocation (%llu)",
                       t->name, (unsigned long long)(rows * rb), (unsigned long long)c->wmem.max_block);
    if (!per || (rows + per - 1) / per > VK_MAX_CHUNKS)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %s: %llu bytes need more than %d allocations", t->name,
                       (unsigned long long)(rows * rb), VK_MAX_CHUNKS);
    w->chunk_rows = (uint32_t)per;
    w->row_bytes = (uint32_t)rb;
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        const uint64_t nr = rows - r0 < per ? rows - r0 : per;
        vkref ref = dst && per == rows ? *dst : (vkref){0};
        zn_status st = ref.buf ? ZN_OK : vkarena_alloc(&c->wmem, nr * rb, 256, &ref, err);
        for (uint64_t r = 0; r < nr && !st;) { /* rewrite and send a few MiB of rows at a time */
            const uint64_t k = nr - r < repack_rows(c, rb) ? nr - r : repack_rows(c, rb);
            const uint8_t *src = t->data + (r0 + r) * in_row;
            if (matrix) vkq_repack(t->type, src, tmp, (int64_t)t->ne[0], (int64_t)k);
            else memcpy(tmp, src, k * rb);
            /* the staging copy is asynchronous: wait before tmp is reused */
            st = vkxfer_upload(&c->x, vkref_sub(ref, r * rb, k * rb), tmp, k * rb, err);
            if (!st) st = vkxfer_flush(&c->x, err);
            r += k;
            *done += k * in_row;
        }
        if (st) return zn_err_prefix(err, "uploading %s", t->name);
        w->addr[w->n_chunks++] = ref.addr;
        if (progress)
            fprintf(stderr, "\rvulkan: uploading weights %3d%% (%.2f / %.2f GiB)", (int)(100.0 * (double)*done / (double)total),
                    (double)*done / (1 << 30), (double)total / (1 << 30));
    }
    return ZN_OK;
}

/* Is weight slot j of node n a matrix operand (GPU row layout)? */
static bool is_matrix(const zn_node *n, int j) {
    return j == 0 && (n->op == ZN_OP_MATMUL || n->op == ZN_OP_MOE_MATMUL || n->op == ZN_OP_EMBED);
}

/* Scratch of the f16 GEMM path (vk_ops.h): the most any matmul of the
 * graph needs at max_tokens, with at most the tuning's mm_scratch_mb of
 * weights per chunk (0 turns the path off). */
static uint64_t mm_scratch_need(const vk_ctx *c, const zn_graph *g) {
    const uint64_t cap = (uint64_t)c->o.t.mm_scratch_mb << 20;
    uint64_t need = 0;
    if (!(c->o.coopmat || c->o.mm_emulate) || !cap) return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        if (n->op != ZN_OP_MATMUL && n->op != ZN_OP_MOE_MATMUL) continue;
        const gguf_tensor *t = n->w[0];
        vkop_mm a = {.type = t->type, .ncols = (uint32_t)t->ne[0], .nrows = (uint32_t)t->ne[1],
                     .n_tok = (uint32_t)c->max_tokens, .n_slots = 1};
        if (n->op == ZN_OP_MOE_MATMUL) {
            const zn_act *x = &g->acts[n->src[0]], *route = &g->acts[n->src[1]];
            a.ids = 1; /* any non-zero: grouped */
            a.n_expert = (uint32_t)t->ne[2];
            a.n_slots = (uint32_t)route->cols / 2;
            a.x_slot_stride = x->rows == route->rows ? 0 : a.ncols;
        }
        if (t->type == ZN_TYPE_F32 || a.n_tok < (a.ids ? c->o.t.moe_min_tok : c->o.t.mm_min_tok)) continue;
        const uint64_t b = vkops_mm_scratch_bytes(&c->o, &a, cap);
        if (b > need) need = b;
    }
    return need;
}

/* The weights a model's graph reads: those of a one-token step (a prefill
 * step uses the same ones), or of the graph the caller gave (gin). */
static zn_status upload_weights(vk_ctx *c, const zn_graph *gin, zn_err *err) {
    zn_graph own = {0};
    zn_status st = ZN_OK;
    if (!gin) {
        st = graph_init(&own, c->m, 1, err);
        int32_t tok = 0;
        if (!st) st = graph_build(&own, &tok, 1, 0, false, err);
    }
    const zn_graph g = gin ? *gin : own; /* read only */
    uint8_t *tmp = st ? NULL : malloc(REPACK_BYTES);
    /* every graph of this model has the same table capacities */
    c->cap_nodes = g.cap_nodes + 1;
    c->cap_acts = g.cap_acts + 1;
    if (!st) st = vkfuse_init(&c->plan, c->cap_nodes, c->cap_acts, err);
    if (!st && !tmp) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    uint64_t total = 0, done = 0;
    for (int i = 0; i < g.n_nodes && !st; i++)
        for (int j = 0; j < ZN_NODE_W; j++)
            if (g.nodes[i].w[j]) total += g.nodes[i].w[j]->nbytes; /* counts shared weights twice: fine for a bar */
    bool progress = total >= (256ull << 20) && isatty(2);
    /* the integer mat-vec's scratch: x of the largest matmul it runs, for
     * as many rows as a step can give it (every expert slot's own x) */
    for (int i = 0; i < g.n_nodes && !st; i++) {
        const zn_node *n = &g.nodes[i];
        uint32_t rows = 0;
        if (n->op == ZN_OP_MATMUL)
            rows = vkops_matvec_for(&c->o, n->w[0]->type, (uint32_t)c->max_tokens, false) ? (uint32_t)c->max_tokens
                                                                                     : c->o.t.mm_min_tok - 1;
        else if (n->op == ZN_OP_MOE_MATMUL)
            rows = (uint32_t)c->max_tokens * (uint32_t)(c->m->hp.n_expert_used > 1 ? c->m->hp.n_expert_used : 1);
        const uint64_t b = rows ? vkops_xq_bytes((uint32_t)n->w[0]->ne[0], rows) : 0;
        if (b > c->xq_bytes) c->xq_bytes = b;
    }
    for (int i = 0; i < g.n_nodes && !st; i++) {
        /* matmuls of one input get their matrices side by side (grouped
         * mat-vec, see run_group) when they fit one allocation together */
        const int run = g.nodes[i].op == ZN_OP_MATMUL ? vkfuse_matmul_run(&g, i) : 0;
        uint64_t bytes = 0;
        bool fresh = true;
        for (int k = 0; k < run; k++) {
            const gguf_tensor *t = g.nodes[i + k].w[0];
            bytes += vkq_row_bytes(t->type, (int64_t)t->ne[0]) * weight_rows(t);
            fresh &= !c->w[model_weight_id(c->m, t)].n_chunks;
        }
        vkref stack = {0};
        if (run > 1 && fresh && bytes <= c->wmem.max_block) st = vkarena_alloc(&c->wmem, bytes, 256, &stack, err);
        for (int k = 0; k < run && !st; k++) {
            const gguf_tensor *t = g.nodes[i + k].w[0];
            const uint64_t b = vkq_row_bytes(t->type, (int64_t)t->ne[0]) * weight_rows(t);
            vkref slice = stack.buf ? vkref_sub(stack, 0, b) : (vkref){0};
            if (!vkops_type_ok(t->type))
                st = zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %s: type %s", t->name, zn_type_name(t->type));
            else st = upload_weight(c, t, true, stack.buf ? &slice : NULL, tmp, &done, total, progress, err);
            if (stack.buf) stack = vkref_sub(stack, b, stack.size - b);
        }
        for (int j = 0; j < ZN_NODE_W && !st; j++) {
            const gguf_tensor *t = g.nodes[i].w[j];
            if (!t) continue;
            if (!vkops_type_ok(t->type))
                st = zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: %s: type %s", t->name, zn_type_name(t->type));
            else st = upload_weight(c, t, is_matrix(&g.nodes[i], j), NULL, tmp, &done, total, progress, err);
        }
    }
    if (!st) st = vkxfer_flush(&c->x, err);
    if (progress) fprintf(stderr, "\n");
    if (!st) c->mm_need = mm_scratch_need(c, &g);
    free(tmp);
    graph_free(&own);
    return st;
}

/* ---- init / free ---- */

static zn_status vk_init(void **out, const zn_model *m, const zn_backend_opts *opt, zn_err *err) {
    *out = NULL;
    if (opt->device < -1) return zn_errf(err, ZN_ERR_ARG, "vulkan: no device %d", opt->device);
    vk_ctx *c = calloc(1, sizeof *c);
    if (!c) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    c->m = m;
    c->max_tokens = opt->max_tokens;
    c->no_fusion = opt->no_fusion;
    c->profile_kernels = opt->profile_kernels;
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
    if (opt->profile) {
        char spec[ZN_TUNE_TEXT_MAX];
        vktune_describe(&c->o.t, spec, sizeof spec);
        fprintf(stderr, "vulkan: %s, tuning %s (%u compute units): %s\n", c->d.info.name, c->o.t.cls, c->o.t.units, spec);
    }
    vkarena_init(&c->wmem, &c->d, VKMEM_DEVICE, 0, opt->max_alloc);
    vkarena_init(&c->smem, &c->d, VKMEM_DEVICE, 0, 0);
    c->w = calloc(m->gguf.n_tensors, sizeof *c->w);
    if (!c->w) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    if (!st) st = upload_weights(c, opt->graph, err);
    if (!st) st = vkarena_alloc(&c->smem, (opt->arena_floats ? opt->arena_floats : 1) * sizeof(float), 256, &c->act, err);
    if (!st && c->mm_need) st = vkarena_alloc(&c->smem, c->mm_need, 256, &c->mm_scratch, err);
    if (!st && c->mm_need) c->o.mm_scratch = c->mm_scratch.addr, c->o.mm_scratch_bytes = c->mm_need;
    vkref xq = {0};
    if (!st && c->o.intdot && c->xq_bytes) st = vkarena_alloc(&c->smem, c->xq_bytes, 256, &xq, err);
    if (!st) vkops_set_xq(&c->o, xq.addr, xq.buf ? c->xq_bytes : 0);
    if (!st) st = vkbuf_create(&c->d, &c->io, sizeof(int32_t) * (size_t)opt->max_tokens, VKMEM_HOST, err);
    if (!st) st = vkbuf_create(&c->d, &c->step, sizeof(vkop_step), VKMEM_SHARED, err);
    /* logits of every row of the largest step */
    if (!st) st = vkbuf_create(&c->d, &c->out, sizeof(float) * (size_t)m->hp.n_vocab * (size_t)opt->max_tokens, VKMEM_HOST, err);
    c->cap_groups = (uint32_t)m->hp.n_layer * 4 + 16; /* q/k/v, gate/up, shared expert, ... per layer */
    if (!st) st = vkbuf_create(&c->d, &c->groups, 2 * sizeof(vkop_group) * c->cap_groups, VKMEM_SHARED, err);
    if (!st && !c->c.profile && !opt->no_replay)
        st = vkreplay_init(&c->rp, &c->d, c->o.ps.layout, c->cap_nodes, c->cap_acts, err);
    /* poll for the end of a step (vkcmd_wait) or block on the fence */
    c->c.poll = c->rp.cmd.poll = c->o.t.poll;
    if (!st && (!c->step.map || !c->out.map)) st = zn_errf(err, ZN_ERR_DEVICE, "vulkan: host-visible buffers are not mapped");
    if (st) {
        vk_free(c);
        return st;
    }
    const double tp = timer_now();
    /* a hand-built graph (opts.graph: the op conformance test) has no step
     * shapes to walk: its pipelines are created on first use */
    if (!opt->lazy_pipelines && !opt->graph) st = prepare_pipelines(c, err);
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
        vkbuf_destroy(&c->d, &c->out);
        vkbuf_destroy(&c->d, &c->groups);
        vkarena_free(&c->smem);
        vkarena_free(&c->wmem);
        vkxfer_free(&c->x);
        vkcmd_free(&c->c);
        vkreplay_free(&c->rp);
        vkops_free(&c->o);
    }
    vkdev_close(&c->d);
    free(c->w);
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

static zn_status vk_seq_init(void *ctx, void **out, int n_ctx, zn_err *err) {
    vk_ctx *c = ctx;
    const zn_hparams *hp = &c->m->hp;
    *out = NULL;
    vk_seq *s = calloc(1, sizeof *s);
    if (!s) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    s->id = ++c->next_seq;
    s->n_ctx = n_ctx;
    s->k = calloc((size_t)hp->n_layer, sizeof *s->k);
    s->v = calloc((size_t)hp->n_layer, sizeof *s->v);
    s->conv = calloc((size_t)hp->n_layer, sizeof *s->conv);
    s->delta = calloc((size_t)hp->n_layer, sizeof *s->delta);
    s->kr = calloc((size_t)hp->n_layer, sizeof *s->kr);
    s->vr = calloc((size_t)hp->n_layer, sizeof *s->vr);
    vkarena_init(&s->mem, &c->d, VKMEM_DEVICE, 0, 0);
    zn_status st = !s->k || !s->v || !s->conv || !s->delta || !s->kr || !s->vr ? zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory") : ZN_OK;
    /* recurrent layers (qwen35): conv [conv_dim][d_conv-1], delta [H_v][d_v][d_k] */
    const uint64_t conv_b = 4ull * (2ull * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner) * (uint64_t)(hp->ssm_d_conv - 1);
    const uint64_t delta_b = 4ull * hp->ssm_d_inner * (uint64_t)hp->ssm_d_state;
    const uint64_t kdim = (uint64_t)hp->n_head_kv * hp->head_dim_k, vdim = (uint64_t)hp->n_head_kv * hp->head_dim_v;
    if (!st && (uint64_t)n_ctx * (kdim > vdim ? kdim : vdim) >= (1ull << 32))
        st = zn_errf(err, ZN_ERR_ARG, "vulkan: context %d too long for the KV cache indexing", n_ctx);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        if (c->m->layers[il].recurrent) {
            st = vkarena_alloc(&s->mem, conv_b, 256, &s->conv[il], err);
            if (!st) st = vkarena_alloc(&s->mem, delta_b, 256, &s->delta[il], err);
            continue;
        }
        vkref k, v;
        st = vkarena_alloc(&s->mem, 2 * kdim * (uint64_t)n_ctx, 256, &k, err);
        if (!st) st = vkarena_alloc(&s->mem, 2 * vdim * (uint64_t)n_ctx, 256, &v, err);
        if (!st) s->k[il] = k.addr, s->v[il] = v.addr, s->kr[il] = k, s->vr[il] = v;
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
    }
    return st;
}

static void vk_seq_free(void *ctx, void *state) {
    vk_ctx *c = ctx;
    vk_seq *s = state;
    if (!s) return;
    c->d.fn.vkDeviceWaitIdle(c->d.dev);
    if (c->rp.seq == s->id) c->rp.valid = false;
    vkarena_free(&s->mem);
    free(s->k);
    free(s->v);
    free(s->kr);
    free(s->vr);
    free(s->conv);
    free(s->delta);
    free(s);
}

static void vk_seq_reset(void *ctx, void *state) {
    zn_err err;
    /* the interface has no status here; a failed fill leaves the device lost,
     * which the next run reports */
    seq_zero(ctx, state, &err);
}

static zn_status vk_seq_copy(void *ctx, void *dst, const void *src, int n_kv, zn_err *err) {
    vk_ctx *c = ctx;
    vk_seq *d = dst;
    const vk_seq *s = src;
    const zn_hparams *hp = &c->m->hp;
    if (n_kv < 0 || n_kv > d->n_ctx || n_kv > s->n_ctx)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: copy of %d KV positions between contexts of %d and %d", n_kv, s->n_ctx, d->n_ctx);
    if (d == s) return ZN_OK;
    const uint64_t kb = 2ull * hp->n_head_kv * hp->head_dim_k * (uint64_t)n_kv;
    const uint64_t vb = 2ull * hp->n_head_kv * hp->head_dim_v * (uint64_t)n_kv;
    zn_status st = ZN_OK;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        if (s->conv[il].buf) {
            st = vkxfer_copy(&c->x, s->conv[il], d->conv[il], s->conv[il].size, err);
            if (!st) st = vkxfer_copy(&c->x, s->delta[il], d->delta[il], s->delta[il].size, err);
        } else if (n_kv > 0) {
            st = vkxfer_copy(&c->x, s->kr[il], d->kr[il], kb, err);
            if (!st) st = vkxfer_copy(&c->x, s->vr[il], d->vr[il], vb, err);
        }
    }
    return st;
}

/* ---- hazards ---- */

static bool overlaps(const range *set, int n, range r) {
    for (int i = 0; i < n; i++)
        if (r.lo < set[i].hi && set[i].lo < r.hi) return true;
    return false;
}

/* Declares what the next dispatch reads and writes; inserts a barrier when
 * it conflicts with what was touched since the last one. */
static void hazard(vk_ctx *c, const range *rd, int n_rd, const range *wr, int n_wr) {
    bool need = c->n_rd + n_rd > VK_HAZARDS || c->n_wr + n_wr > VK_HAZARDS;
    for (int i = 0; i < n_rd && !need; i++) need = overlaps(c->wr, c->n_wr, rd[i]);
    for (int i = 0; i < n_wr && !need; i++) need = overlaps(c->wr, c->n_wr, wr[i]) || overlaps(c->rd, c->n_rd, wr[i]);
    if (need) {
        vkcmd_barrier(c->rec);
        c->n_rd = c->n_wr = 0;
    }
    for (int i = 0; i < n_rd; i++) c->rd[c->n_rd++] = rd[i];
    for (int i = 0; i < n_wr; i++) c->wr[c->n_wr++] = wr[i];
}

/* ---- running a graph ---- */

static VkDeviceAddress act_addr(const vk_ctx *c, const zn_graph *g, int a) {
    return c->act.addr + sizeof(float) * g->acts[a].off;
}

static range act_range(const vk_ctx *c, const zn_graph *g, int a) {
    uint64_t lo = act_addr(c, g, a);
    return (range){lo, lo + sizeof(float) * (uint64_t)g->acts[a].rows * (uint64_t)g->acts[a].cols};
}

static VkDeviceAddress waddr(const vk_ctx *c, const gguf_tensor *t) {
    return t ? c->w[model_weight_id(c->m, t)].addr[0] : 0;
}

/* The x operand of a matmul node: its src[0], or the inputs of the skipped
 * RMS norm / SwiGLU that produced it (plan_fusions). */
static void matmul_x(const vk_ctx *c, const zn_graph *g, const zn_node *n, vkop_mm *a) {
    const vkfuse_x *f = &c->plan.fx[n->src[0]];
    a->x = act_addr(c, g, f->mode ? f->src : n->src[0]);
    a->xmode = f->mode;
    a->aux = f->mode == VKX_RMSNORM ? waddr(c, f->w) : f->mode == VKX_SWIGLU ? act_addr(c, g, f->aux) : 0;
    a->eps = f->eps;
    a->x_reuse = c->x_reuse;
}

static zn_status run_matmul(vk_ctx *c, const zn_graph *g, const zn_node *n, zn_err *err) {
    const gguf_tensor *t = n->w[0];
    const vk_weight *w = &c->w[model_weight_id(c->m, t)];
    const zn_act *x = &g->acts[n->src[0]], *y = &g->acts[n->dst];
    const uint32_t rows = (uint32_t)t->ne[1];
    /* a folded residual ADD: the sum goes straight to the ADD's output */
    const int ra = c->plan.res_add[n - g->nodes];
    const zn_node *add = ra >= 0 ? &g->nodes[ra] : NULL;
    const VkDeviceAddress ya = act_addr(c, g, add ? add->dst : n->dst);
    const VkDeviceAddress res = add ? act_addr(c, g, add->src[add->src[0] == n->dst ? 1 : 0]) : 0;
    for (uint32_t ch = 0; ch < w->n_chunks; ch++) {
        const uint32_t r0 = ch * w->chunk_rows, nr = rows - r0 < w->chunk_rows ? rows - r0 : w->chunk_rows;
        vkop_mm a = {.type = t->type, .w = w->addr[ch], .y = ya + sizeof(float) * r0,
                     .res = res ? res + sizeof(float) * r0 : 0,
                     .bias = n->w[1] ? waddr(c, n->w[1]) + sizeof(float) * r0 : 0, .scale = waddr(c, n->w[2]),
                     .ncols = (uint32_t)t->ne[0], .nrows = nr, .row_bytes = w->row_bytes, .n_tok = (uint32_t)x->rows,
                     .n_slots = 1, .x_stride = (uint32_t)x->cols, .y_stride = (uint32_t)y->cols,
                     .bias_first = n->matmul.bias_first != 0};
        matmul_x(c, g, n, &a);
        a.x_reuse |= ch > 0;
        zn_status st = vkop_matmul(&c->o, c->rec, &a, n->tag, err);
        if (st) return st;
    }
    return ZN_OK;
}

static zn_status run_group(vk_ctx *c, const zn_graph *g, int i, int n, zn_err *err) {
    const zn_node *a = &g->nodes[i];
    const vk_weight *w0 = &c->w[model_weight_id(c->m, a->w[0])];
    const uint32_t slot = c->group_base + c->n_groups;
    vkop_group *gb = (vkop_group *)c->groups.map + slot;
    memset(gb, 0, sizeof *gb);
    uint32_t rows = 0;
    for (int k = 0; k < n; k++) {
        const zn_node *b = &g->nodes[i + k];
        rows += (uint32_t)b->w[0]->ne[1];
        gb->y[k] = act_addr(c, g, b->dst);
        gb->bias[k] = waddr(c, b->w[1]);
        gb->scale[k] = waddr(c, b->w[2]);
        gb->row_end[k] = rows;
        gb->y_stride[k] = (uint32_t)g->acts[b->dst].cols;
    }
    gb->n_seg = (uint32_t)n;
    const zn_act *x = &g->acts[a->src[0]];
    vkop_mm m = {.type = a->w[0]->type, .w = w0->addr[0], .ncols = (uint32_t)a->w[0]->ne[0], .nrows = rows,
                 .row_bytes = w0->row_bytes, .n_tok = (uint32_t)x->rows, .n_slots = 1, .x_stride = (uint32_t)x->cols,
                 .bias_first = a->matmul.bias_first != 0, .group = c->groups.addr + sizeof(vkop_group) * slot};
    c->n_groups++;
    matmul_x(c, g, a, &m);
    return vkop_matmul(&c->o, c->rec, &m, a->tag, err);
}

static zn_status run_moe_matmul(vk_ctx *c, const zn_graph *g, const zn_node *n, zn_err *err) {
    const gguf_tensor *t = n->w[0];
    const vk_weight *w = &c->w[model_weight_id(c->m, t)];
    const zn_act *x = &g->acts[n->src[0]], *route = &g->acts[n->src[1]];
    const uint32_t k = (uint32_t)route->cols / 2, T = (uint32_t)route->rows, cols = (uint32_t)x->cols;
    const uint32_t rows = (uint32_t)t->ne[1];
    const bool shared = (uint32_t)x->rows == T;
    vkop_mm a = {.type = t->type, .w = w->addr[0], .y = act_addr(c, g, n->dst),
                 .scale = waddr(c, n->w[2]), .ids = act_addr(c, g, n->src[1]),
                 .expert_bytes = (uint64_t)w->row_bytes * rows, .n_expert = (uint32_t)t->ne[2],
                 .ncols = (uint32_t)t->ne[0], .nrows = rows,
                 .row_bytes = w->row_bytes, .n_tok = T, .n_slots = k, .x_stride = shared ? cols : k * cols,
                 .x_slot_stride = shared ? 0 : cols, .y_stride = k * rows, .y_slot_stride = rows, .ids_stride = 2 * k};
    matmul_x(c, g, n, &a);
    return vkop_matmul(&c->o, c->rec, &a, n->tag, err);
}

static zn_status run_node(vk_ctx *c, vk_seq *s, const zn_graph *g, const zn_node *n, zn_err *err) {
    const zn_act *y = &g->acts[n->dst];
    const zn_act *x = n->src[0] >= 0 ? &g->acts[n->src[0]] : NULL;
    const uint32_t ny = (uint32_t)(y->rows * y->cols);
    VkDeviceAddress dst = act_addr(c, g, n->dst), a0 = n->src[0] >= 0 ? act_addr(c, g, n->src[0]) : 0;
    VkDeviceAddress a1 = n->src[1] >= 0 ? act_addr(c, g, n->src[1]) : 0;
    const int L = n->layer;
    switch (n->op) {
    case ZN_OP_EMBED: {
        const gguf_tensor *t = n->w[0];
        const vk_weight *w = &c->w[model_weight_id(c->m, t)];
        if (w->n_chunks != 1) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: split embedding table %s", t->name);
        return vkop_embed(&c->o, c->rec, t->type, w->addr[0], w->row_bytes, (uint32_t)t->ne[0], c->io.addr,
                          (uint32_t)g->n_tokens, dst, err);
    }
    case ZN_OP_RMSNORM:
        return vkop_norm(&c->o, c->rec, VKNORM_RMS, a0, dst, waddr(c, n->w[0]), 0, (uint32_t)n->norm.group,
                         ny / (uint32_t)n->norm.group, n->norm.eps, n->tag, err);
    case ZN_OP_MATMUL: return run_matmul(c, g, n, err);
    case ZN_OP_ROPE: {
        const zn_rope_params *rp = &n->rope;
        vkop_rope a = {.x = dst, .ff = waddr(c, n->w[0]), .n_tok = (uint32_t)y->rows,
                       .n_heads = (uint32_t)(y->cols / rp->head_dim), .head_dim = (uint32_t)rp->head_dim,
                       .n_rot = (uint32_t)rp->n_rot, .row_stride = (uint32_t)y->cols, .mode = (uint32_t)rp->mode,
                       .n_past = (uint32_t)g->n_past, .step = c->step.addr,
                       .sections = {rp->sections[0], rp->sections[1], rp->sections[2], rp->sections[3]},
                       .freq_base = rp->freq_base, .freq_scale = rp->freq_scale};
        const int i = (int)(n - g->nodes);
        if (c->plan.rope_norm[i] >= 0) {
            const zn_node *nn = &g->nodes[c->plan.rope_norm[i]];
            a.src = act_addr(c, g, nn->src[0]);
            a.nw = waddr(c, nn->w[0]);
            a.eps = nn->norm.eps;
        }
        if (c->plan.rope_kv[i] >= 0) {
            const zn_node *kv = &g->nodes[c->plan.rope_kv[i]];
            a.kc = s->k[L];
            a.v = act_addr(c, g, kv->src[1]);
            a.vc = s->v[L];
            a.vdim = (uint32_t)g->acts[kv->src[1]].cols;
        }
        return vkop_rope_run(&c->o, c->rec, &a, n->tag, err);
    }
    case ZN_OP_KV_STORE:
        return vkop_kv_store(&c->o, c->rec, a0, a1, s->k[L], s->v[L], (uint32_t)x->rows, (uint32_t)x->cols,
                             (uint32_t)g->acts[n->src[1]].cols, (uint32_t)g->n_past, c->step.addr, n->tag, err);
    case ZN_OP_ATTN: {
        vkop_attn a = {.q = a0, .ck = s->k[L], .cv = s->v[L], .dst = dst, .part = c->part.addr, .step = c->step.addr,
                       .n_tok = (uint32_t)x->rows, .n_past = (uint32_t)g->n_past, .n_head = (uint32_t)n->attn.n_head,
                       .n_head_kv = (uint32_t)n->attn.n_head_kv, .hd_k = (uint32_t)n->attn.hd_k,
                       .hd_v = (uint32_t)n->attn.hd_v, .scale = n->attn.scale};
        return vkop_attn_run(&c->o, c->rec, &a, n->tag, err);
    }
    case ZN_OP_ADD: {
        vkop_elt e = {.mode = VKELT_ADD, .a = a0, .b = a1, .dst = dst, .n = ny, .cols = (uint32_t)y->cols};
        return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
    }
    case ZN_OP_SWIGLU: {
        vkop_elt e = {.mode = n->src[1] >= 0 ? VKELT_SWIGLU : VKELT_SWIGLU_CAT, .a = a0, .b = a1, .dst = dst, .n = ny,
                      .cols = (uint32_t)y->cols};
        return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
    }
    case ZN_OP_SIGMOID_MUL: {
        vkop_elt e = {.mode = VKELT_SIGMOID_MUL, .a = a0, .b = a1, .dst = dst, .n = ny, .cols = (uint32_t)y->cols,
                      .b_cols = (uint32_t)g->acts[n->src[1]].cols};
        return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
    }
    case ZN_OP_MOE_ROUTE:
        return vkop_moe_route(&c->o, c->rec, a0, dst, (uint32_t)x->rows, (uint32_t)x->cols, (uint32_t)n->route.k,
                              n->route.normalise != 0, n->route.w_scale, n->tag, err);
    case ZN_OP_MOE_MATMUL: return run_moe_matmul(c, g, n, err);
    case ZN_OP_MOE_SUM: {
        vkop_elt e = {.mode = VKELT_MOE_SUM, .a = a0, .dst = dst, .route = a1, .n = ny, .cols = (uint32_t)y->cols,
                      .k = (uint32_t)g->acts[n->src[1]].cols / 2};
        return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
    }
    case ZN_OP_COPY_COLS: {
        vkop_elt e = {.mode = VKELT_COPY_COLS, .a = a0, .dst = dst, .n = ny, .cols = (uint32_t)y->cols,
                      .b_cols = (uint32_t)x->cols, .k = (uint32_t)n->copy_cols.width,
                      .aux = (uint32_t)n->copy_cols.stride, .aux2 = (uint32_t)n->copy_cols.off};
        return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
    }
    case ZN_OP_SSM_CONV:
        return vkop_conv1d(&c->o, c->rec, a0, dst, waddr(c, n->w[0]), s->conv[L].addr, (uint32_t)x->rows,
                           (uint32_t)x->cols, (uint32_t)x->cols, (uint32_t)n->w[0]->ne[0], n->tag, err);
    case ZN_OP_GDN: {
        const uint32_t hk = (uint32_t)n->gdn.h_k, hv = (uint32_t)n->gdn.h_v, dk = (uint32_t)n->gdn.d_k,
                       dv = (uint32_t)n->gdn.d_v;
        vkop_gdn a = {.q = a0, .k = a0 + 4ull * hk * dk, .v = a0 + 8ull * hk * dk, .g = a1,
                      .beta = act_addr(c, g, n->src[2]), .state = s->delta[L].addr, .dst = dst,
                      .dt_bias = waddr(c, n->w[0]), .a = waddr(c, n->w[1]), .n_tok = (uint32_t)x->rows, .h_k = hk,
                      .h_v = hv, .d_k = dk, .d_v = dv, .ld_qk = (uint32_t)x->cols, .ld_v = (uint32_t)x->cols,
                      .ld_o = (uint32_t)y->cols, .ld_g = hv, .gate_raw = true, .l2 = true, .eps = n->gdn.eps};
        return vkop_gdn_run(&c->o, c->rec, &a, n->tag, err);
    }
    case ZN_OP_GATHER_ROWS: { /* a copy per row: steps of several sequences, recorded anew each time */
        const uint64_t rb = sizeof(float) * (uint64_t)y->cols, src = sizeof(float) * g->acts[n->src[0]].off;
        for (int i = 0; i < y->rows; i++)
            vkcmd_copy(c->rec, vkref_sub(c->act, src + rb * (uint64_t)g->out_rows[i], rb),
                       vkref_sub(c->act, sizeof(float) * y->off + rb * (uint64_t)i, rb), rb);
        return ZN_OK;
    }
    case ZN_OP_GET_ROWS: {
        vkref src = vkref_sub(c->act, sizeof(float) * (g->acts[n->src[0]].off + (size_t)n->get_rows.first * (size_t)x->cols),
                              sizeof(float) * ny);
        vkcmd_copy(c->rec, src, vkref_sub(c->act, sizeof(float) * y->off, sizeof(float) * ny), sizeof(float) * ny);
        return ZN_OK;
    }
    default:
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: op %s not implemented", graph_op_name(n->op));
    }
}

/* What node n reads and writes, for the barrier placement. */
static void node_hazards(vk_ctx *c, vk_seq *s, const zn_graph *g, const zn_node *n) {
    range rd[2 * ZN_NODE_SRC + 2], wr[3];
    int nr = 0, nw = 0;
    for (int i = 0; i < ZN_NODE_SRC; i++) {
        if (n->src[i] < 0) continue;
        const vkfuse_x *f = &c->plan.fx[n->src[i]];
        rd[nr++] = act_range(c, g, f->mode ? f->src : n->src[i]);
        if (f->mode == VKX_SWIGLU) rd[nr++] = act_range(c, g, f->aux);
    }
    wr[nw++] = act_range(c, g, n->dst);
    const zn_hparams *hp = &c->m->hp;
    const int i = (int)(n - g->nodes);
    if (n->op == ZN_OP_MATMUL && c->plan.res_add[i] >= 0) { /* reads the residual, writes the ADD's output */
        const zn_node *add = &g->nodes[c->plan.res_add[i]];
        rd[nr++] = act_range(c, g, add->src[add->src[0] == n->dst ? 1 : 0]);
        wr[0] = act_range(c, g, add->dst);
    }
    if (n->op == ZN_OP_ROPE && c->plan.rope_norm[i] >= 0) rd[0] = act_range(c, g, g->nodes[c->plan.rope_norm[i]].src[0]);
    if (n->op == ZN_OP_ROPE && c->plan.rope_kv[i] >= 0) { /* reads V, writes the caches instead of x */
        const zn_node *kv = &g->nodes[c->plan.rope_kv[i]];
        rd[nr++] = act_range(c, g, kv->src[1]);
        nw = 0;
        wr[nw++] = (range){s->k[n->layer], s->k[n->layer] + 2ull * s->n_ctx * hp->n_head_kv * hp->head_dim_k};
        wr[nw++] = (range){s->v[n->layer], s->v[n->layer] + 2ull * s->n_ctx * hp->n_head_kv * hp->head_dim_v};
    }
    if (n->op == ZN_OP_KV_STORE || n->op == ZN_OP_ATTN) {
        /* the layer's whole cache, conservatively */
        range kr = {s->k[n->layer], s->k[n->layer] + 2ull * s->n_ctx * hp->n_head_kv * hp->head_dim_k};
        range vr = {s->v[n->layer], s->v[n->layer] + 2ull * s->n_ctx * hp->n_head_kv * hp->head_dim_v};
        if (n->op == ZN_OP_KV_STORE) {
            nw = 0; /* dst is K itself, only read */
            wr[nw++] = kr;
            wr[nw++] = vr;
        } else {
            rd[nr++] = kr;
            rd[nr++] = vr;
        }
    }
    const vkref *st = n->op == ZN_OP_SSM_CONV ? s->conv : n->op == ZN_OP_GDN ? s->delta : NULL;
    if (st) { /* read and written in place */
        range r = {st[n->layer].addr, st[n->layer].addr + st[n->layer].size};
        rd[nr++] = r;
        wr[nw++] = r;
    }
    hazard(c, rd, nr, wr, nw);
}

/* --profile: GPU time per op tag of this run, from timestamp queries. */
static void print_profile(vk_ctx *c, const zn_graph *g) {
    vkprof_entry e[256];
    double total;
    int n = vkcmd_profile(&c->c, c->profile_kernels, e, 256, &total);
    fprintf(stderr, "vulkan profile: %s of %d token(s) at position %d: %.3f ms GPU, %u dispatches, %u barriers\n",
            g->n_tokens == 1 ? "decode" : "prefill", g->n_tokens, g->n_past, total, c->c.n_dispatch, c->c.n_barrier);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %-22s %-10s %5d x %9.3f ms %5.1f%%\n", e[i].name, e[i].kernel ? e[i].kernel : "",
                e[i].count, e[i].ms, total > 0 ? 100.0 * e[i].ms / total : 0.0);
}

/* Does weight b lie in one piece right after weight a (vkfuse_env.follows)? */
static bool weight_follows(const void *ctx, const gguf_tensor *a, const gguf_tensor *b) {
    const vk_ctx *c = ctx;
    const vk_weight *wb = &c->w[model_weight_id(c->m, b)];
    if (wb->n_chunks != 1) return false;
    if (!a) return true;
    const vk_weight *wa = &c->w[model_weight_id(c->m, a)];
    return wa->n_chunks == 1 && wb->addr[0] == wa->addr[0] + (uint64_t)wa->row_bytes * weight_rows(a);
}

static void plan_fusions(vk_ctx *c, const zn_graph *g) {
    const vkfuse_env env = {.o = &c->o, .no_fusion = c->no_fusion, .max_groups = c->groups.map ? (int)c->cap_groups : 0,
                            .follows = weight_follows, .ctx = c};
    vkfuse_plan(&c->plan, &env, g);
}

/* Every node of g for sequence s into c->rec (NULL: nothing recorded, the
 * ops only create their pipelines), after plan_fusions. */
static zn_status record_nodes(vk_ctx *c, vk_seq *s, const zn_graph *g, uint32_t group_base, zn_err *err) {
    zn_status st = ZN_OK;
    c->n_rd = c->n_wr = 0;
    c->n_groups = 0;
    c->group_base = group_base;
    int xq_src = -1; /* the x activation the last matmul read (its quantised copy may serve the next) */
    for (int i = 0; i < g->n_nodes && !st; i++) {
        if (c->plan.skip[i]) continue;
        const int n = c->plan.group[i];
        for (int k = 0; k < n; k++) node_hazards(c, s, g, &g->nodes[i + k]);
        const zn_node *nd = &g->nodes[i];
        const bool mm = nd->op == ZN_OP_MATMUL || nd->op == ZN_OP_MOE_MATMUL;
        c->x_reuse = mm && nd->src[0] == xq_src;
        xq_src = mm ? nd->src[0] : -1;
        st = n > 1 ? run_group(c, g, i, n, err) : run_node(c, s, g, &g->nodes[i], err);
        i += n - 1;
        if (st) {
            char name[64];
            graph_node_name(&g->nodes[i], name, sizeof name);
            zn_err_prefix(err, "%s", name);
        }
    }
    return st;
}

/* Records g for sequence s into cmd: every node, then a copy of the logits
 * into host-visible memory (so reading them needs no second submit). Ends
 * the recording, also after a failure. */
static zn_status record(vk_ctx *c, vk_seq *s, const zn_graph *g, vkcmd *cmd, uint32_t group_base, zn_err *err) {
    plan_fusions(c, g);
    zn_status st = vkcmd_begin(cmd, err);
    if (st) return st;
    c->rec = cmd;
    st = record_nodes(c, s, g, group_base, err);
    const zn_act *lg = &g->acts[g->logits];
    const uint64_t nl = (uint64_t)lg->rows * (uint64_t)lg->cols;
    c->out_floats = 0;
    if (!st && sizeof(float) * nl <= c->out.size) {
        vkcmd_copy(cmd, vkref_sub(c->act, sizeof(float) * lg->off, sizeof(float) * nl),
                   vkbuf_ref(&c->out, 0, sizeof(float) * nl), sizeof(float) * nl);
        c->out_off = lg->off;
        c->out_floats = nl;
    }
    zn_status st2 = vkcmd_end(cmd, err);
    return st ? st : st2;
}

/* ---- pipelines at init ---- */

/* What the kernels a step of n tokens takes depend on besides the model:
 * the token-count thresholds (mat-vec or GEMM, dense and grouped; prefill
 * attention; the split-K decode sizes, each of its token counts its own
 * attn_dec.comp row count) and the GEMM tile choice, which counts tokens
 * in whole tiles (grain: the narrowest tile width of the configs it picks
 * from; grouped: the tokens per expert). Steps of equal keys take the same
 * pipelines. */
typedef struct tok_key { bool mv, moe_mv, fa; uint32_t small, tiles, moe_tiles; } tok_key;

static uint32_t gcd32(uint32_t a, uint32_t b) { return b ? gcd32(b, a % b) : a; }

static tok_key tok_key_of(const vk_ctx *c, uint32_t n, uint32_t grain) {
    const zn_hparams *hp = &c->m->hp;
    const vktune *t = &c->o.t;
    const uint32_t E = (uint32_t)hp->n_expert, k = (uint32_t)(hp->n_expert_used > 1 ? hp->n_expert_used : 1);
    const uint32_t moe_toks = E ? (n * k + E - 1) / E : 0;
    return (tok_key){.mv = n < t->mm_min_tok, .moe_mv = n < t->moe_min_tok, .fa = n >= t->fa_min_tok,
                     .small = n <= ZN_VK_ATTN_SPLIT_TOK ? n : 0, .tiles = (n + grain - 1) / grain,
                     .moe_tiles = (moe_toks + grain - 1) / grain};
}

#define PREP_ADDR (1ull << 44) /* stand-in cache addresses: aligned, never dereferenced */
static zn_status prepare_pipelines(vk_ctx *c, zn_err *err) {
    const zn_hparams *hp = &c->m->hp;
    zn_graph g;
    zn_status st = graph_init(&g, c->m, c->max_tokens, err);
    if (st) return st;
    int32_t *toks = calloc((size_t)c->max_tokens, sizeof *toks);
    VkDeviceAddress *kv = calloc(2 * (size_t)hp->n_layer, sizeof *kv);
    vkref *rs = calloc(2 * (size_t)hp->n_layer, sizeof *rs);
    if (!toks || !kv || !rs) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    vk_seq s = {.n_ctx = ZN_MAX_CTX, .k = kv, .v = kv ? kv + hp->n_layer : NULL, .conv = rs,
                .delta = rs ? rs + hp->n_layer : NULL};
    for (int i = 0; !st && i < 2 * hp->n_layer; i++) {
        kv[i] = PREP_ADDR + ((uint64_t)i << 32);
        rs[i] = (vkref){.addr = PREP_ADDR + ((uint64_t)(2 * hp->n_layer + i) << 32), .size = 256};
    }
    const vkref part = c->part;
    if (!c->part.addr) c->part.addr = PREP_ADDR - (1ull << 32); /* split-K partials (sized per sequence) */
    c->rec = NULL;
    uint32_t grain = 0;
    for (int i = 0; i < ZN_VK_MM_NCFG; i++) grain = gcd32(grain, zn_vk_mm_cfgs[i].bn);
    for (int i = 0; i < ZN_VK_CM2_NCFG; i++) grain = gcd32(grain, zn_vk_cm2_cfgs[i].bn);
    const uint32_t past[] = {0, c->o.t.attn_chunk, c->o.t.attn_dec_min, ZN_MAX_CTX / 2};
    for (int pass = 0; pass < 3 && !st; pass++) {
        const bool flags[4] = {c->o.intdot, c->o.mvx, c->o.fa_cm, c->o.mm_cm2};
        for (int all = 0; all < 2; all++) {
            tok_key last = {0};
            for (int n = 1; n <= c->max_tokens; n++) {
                const tok_key key = tok_key_of(c, (uint32_t)n, grain);
                if (n > 1 && n < c->max_tokens && !memcmp(&key, &last, sizeof key)) continue;
                last = key;
                for (size_t p = 0; p < sizeof past / sizeof *past; p++) {
                    if (p && n > ZN_VK_ATTN_SPLIT_TOK) break;
                    const int np = past[p] > (uint32_t)(ZN_MAX_CTX - n) ? ZN_MAX_CTX - n : (int)past[p];
                    zn_err e2 = {0};
                    if (graph_build(&g, toks, n, np, all, &e2) || g.n_nodes > c->cap_nodes || g.n_acts > c->cap_acts)
                        continue; /* the step fails the same way (vk_run checks the capacities) */
                    plan_fusions(c, &g);
                    record_nodes(c, &s, &g, 0, &e2);
                }
            }
        }
        if (flags[0] == c->o.intdot && flags[1] == c->o.mvx && flags[2] == c->o.fa_cm && flags[3] == c->o.mm_cm2) break;
    }
    c->part = part;
    vkops_forget(&c->o);
    free(toks);
    free(kv);
    free(rs);
    graph_free(&g);
    return st;
}

/* A one-token step replays the kept recording when it fits, else records
 * into the replay buffer; other steps (and all of them with replay off) are
 * recorded into c->c. Either way the host writes only the token ids and the
 * step block before submitting. */
static zn_status vk_run(void *ctx, void *const *states, const zn_graph *g, zn_err *err) {
    vk_ctx *c = ctx;
    vk_seq *s = states[0];
    zn_status cst = graph_check_step(g, err);
    if (cst) return cst;
    if (g->n_seq != 1)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: a step of %d sequences (one at a time so far)", g->n_seq);
    if (g->n_tokens > c->max_tokens) return zn_errf(err, ZN_ERR_ARG, "vulkan: %d tokens in a step", g->n_tokens);
    if (g->n_past + g->n_tokens > s->n_ctx) return zn_errf(err, ZN_ERR_ARG, "vulkan: context of %d exceeded", s->n_ctx);
    if (g->n_nodes > c->cap_nodes || g->n_acts > c->cap_acts)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: graph of %d nodes / %d activations", g->n_nodes, g->n_acts);
    const double t0 = timer_now();
    const bool decode = g->n_tokens == 1, use_rp = decode && c->rp.cmd.d;
    vkcmd *cmd = use_rp ? &c->rp.cmd : &c->c;
    const uint32_t n_split = vkop_attn_splits(&c->o, 1, (uint32_t)g->n_past + 1);
    const bool replay = use_rp && vkreplay_fits(&c->rp, s->id, n_split, g);
    memcpy(c->io.map, g->tokens, sizeof(int32_t) * (size_t)g->n_tokens);
    *(vkop_step *)c->step.map = (vkop_step){.n_past = (uint32_t)g->n_past};
    zn_status st = ZN_OK;
    if (replay) {
        c->out_off = c->rp.out_off;
        c->out_floats = c->rp.out_floats;
    } else {
        c->rp.valid &= !use_rp; /* about to be re-recorded */
        st = record(c, s, g, cmd, use_rp ? c->cap_groups : 0, err);
        if (!st && use_rp) {
            vkreplay_keep(&c->rp, s->id, n_split, g);
            c->rp.out_off = c->out_off;
            c->rp.out_floats = c->out_floats;
        }
    }
    const double t1 = timer_now();
    if (!st) st = vkcmd_submit(cmd, err);
    const double t2 = timer_now();
    if (!st) st = vkcmd_wait(cmd, err);
    if (st) c->out_floats = 0;
    if (decode) {
        const double t3 = timer_now();
        c->stats.steps++;
        c->stats.replayed += replay;
        c->stats.prepare_s += t1 - t0;
        c->stats.submit_s += t2 - t1;
        c->stats.wait_s += t3 - t2;
    }
    if (!st && c->c.profile) print_profile(c, g);
    return st;
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
    const uint64_t nf = (uint64_t)a->rows * (uint64_t)a->cols, skip = (uint64_t)row0 * (uint64_t)a->cols;
    const uint64_t want = (uint64_t)n_rows * (uint64_t)a->cols;
    zn_status st = ZN_OK;
    if (c->out_floats && a->off == c->out_off && nf == c->out_floats)
        memcpy(out, (const float *)c->out.map + skip, sizeof(float) * want);
    else
        st = vkxfer_download(&c->x, vkref_sub(c->act, sizeof(float) * (a->off + skip), sizeof(float) * want), out,
                             sizeof(float) * want, err);
    if (g->n_tokens == 1) c->stats.read_s += timer_now() - t0;
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

const zn_backend_ops zn_backend_vulkan = {
    .name = "vulkan",
    .init = vk_init,
    .free = vk_free,
    .seq_init = vk_seq_init,
    .seq_free = vk_seq_free,
    .seq_reset = vk_seq_reset,
    .seq_copy = vk_seq_copy,
    .run = vk_run,
    .read = vk_read,
    .write = vk_write,
    .stats = vk_stats,
    .devices = vk_devices,
    .tuning = vk_tuning,
};
