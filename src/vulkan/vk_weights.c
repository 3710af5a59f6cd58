/* The Vulkan backend's weights (vk_backend.h): uploaded once at init, the
 * ones the model's graph uses, through a staging buffer into device-local
 * blocks, matrices in the GPU row layout of vk_quant.h; a 2-D weight larger
 * than one allocation is split by rows into chunks (its matmul becomes one
 * dispatch per chunk); matmuls of one input get their matrices side by side
 * (one grouped matmul, vk_fuse.h). Also sizes the scratch the matmuls need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk_backend.h"
#include "vk_quant.h"


uint64_t vkweights_rows(const gguf_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

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
    const uint64_t rows = matrix ? vkweights_rows(t) : 1, in_row = matrix ? gg : t->nbytes;
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
        if (a.n_tok < (a.ids ? c->o.t.moe_min_tok : c->o.t.mm_min_tok)) continue;
        if (t->type == ZN_TYPE_F32) { /* the tiled kernel's split-K partials, if it takes the matmul and splits */
            const bool tiled = vkops_mm_kernel(&c->o, t->type, a.n_tok, a.nrows, a.ids != 0) == VKMM_TILED;
            const uint64_t b = tiled ? vkops_mt_split_bytes(&c->o, &a) : 0;
            if (b > need) need = b;
            continue;
        }
        const uint64_t b = vkops_mm_scratch_bytes(&c->o, &a, cap);
        if (b > need) need = b;
    }
    return need;
}

/* The weights a model's graph reads: those of a one-token step (a prefill
 * step uses the same ones), or of the graph the caller gave (gin). */
zn_status vkweights_upload(vk_ctx *c, const zn_graph *gin, zn_err *err) {
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
    /* blocks as large as one allocation may be (or all the weights), the
     * last one only what is left: with the default 256 MiB blocks, first
     * fit left ~100 MB of every block empty beside an MoE's 151 MB expert
     * tensors (the 21 GB Qwen3.5-35B-A3B held 31 GB); total over-counts
     * shared weights, so the last block may keep some of that unused */
    if (!st) {
        if (total > c->wmem.block_bytes) c->wmem.block_bytes = c->wmem.max_block;
        c->wmem.expect = c->wmem.total + total;
    }
    /* the integer mat-vec's scratch: x of the largest matmul it runs, for
     * as many rows as a step can give it (every expert slot's own x) */
    for (int i = 0; i < g.n_nodes && !st; i++) {
        const zn_node *n = &g.nodes[i];
        uint32_t rows = 0;
        if (n->op == ZN_OP_MATMUL) {
            /* sized by token count: matrices of fewer than mm_min_rows rows
             * (routers, gates: small x) past that take the float kernel;
             * the int8 GEMM's steps up to mmi_max_tok */
            const uint32_t mt = (uint32_t)c->max_tokens, mmi = c->o.t.mmi_max_tok < mt ? c->o.t.mmi_max_tok : mt;
            rows = vkops_mm_kernel(&c->o, n->w[0]->type, mt, UINT32_MAX, false) == VKMM_MATVEC ? mt : c->o.t.mm_min_tok - 1;
            if (vkops_mmi_takes(&c->o, n->w[0]->type, mmi) && mmi > rows) rows = mmi;
        }
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
            bytes += vkq_row_bytes(t->type, (int64_t)t->ne[0]) * vkweights_rows(t);
            fresh &= !c->w[model_weight_id(c->m, t)].n_chunks;
        }
        vkref stack = {0};
        if (run > 1 && fresh && bytes <= c->wmem.max_block) st = vkarena_alloc(&c->wmem, bytes, 256, &stack, err);
        for (int k = 0; k < run && !st; k++) {
            const gguf_tensor *t = g.nodes[i + k].w[0];
            const uint64_t b = vkq_row_bytes(t->type, (int64_t)t->ne[0]) * vkweights_rows(t);
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

