/* Recording a step (vk_backend.h): every graph op as compute dispatches
 * into one command buffer, after the fusion plan (vk_fuse.h); barriers only
 * where a node touches memory an earlier node of the same barrier interval
 * wrote (or writes memory it read); and, at init, the same walk with no
 * command buffer over every step shape, to create the pipelines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timer.h"
#include "vk_backend.h"

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

/* One sequence's part of a step: its state, its rows, its position, and
 * the step block the position-dependent shaders read it from (host-written
 * before each submit: vkrecord_positions), so that a decode step's
 * recording is replayed at later positions; n_past only picks kernels and
 * split counts (what vkrecord_step_shape keys). batch: all the sequences of
 * a batched decode step at once (batch_step), their states and positions
 * in the sequence tables; s the first one's, n_past the largest. */
typedef struct vk_seg {
    vk_seq *s;
    uint32_t row0, n_rows, n_past;
    VkDeviceAddress step;
    bool batch;
} vk_seg;

static VkDeviceAddress act_addr(const vk_ctx *c, const zn_graph *g, int a) {
    return c->act.addr + sizeof(float) * g->acts[a].off;
}

static range act_range(const vk_ctx *c, const zn_graph *g, int a) {
    uint64_t lo = act_addr(c, g, a);
    return (range){lo, lo + sizeof(float) * (uint64_t)g->acts[a].rows * (uint64_t)g->acts[a].cols};
}

/* The operand of ADD n other than activation t. */
static int other_src(const zn_node *n, int t) { return n->src[n->src[0] == t ? 1 : 0]; }

static VkDeviceAddress waddr(const vk_ctx *c, const gguf_tensor *t) {
    return t ? c->w[model_weight_id(c->m, t)].addr[0] : 0;
}

/* The activation a matmul node reads as x: its src[0], or the input of the
 * skipped RMS norm / SwiGLU that produced it, whose rows x's stride counts
 * (a SwiGLU of one input: twice src[0]'s). */
static const zn_act *x_act(const vk_ctx *c, const zn_graph *g, const zn_node *n) {
    const vkfuse_x *f = &c->plan.fx[n->src[0]];
    return &g->acts[f->mode ? f->src : n->src[0]];
}

/* The x operand of a matmul node: its src[0], or the inputs of the skipped
 * RMS norm / SwiGLU that produced it (plan_fusions). */
static void matmul_x(const vk_ctx *c, const zn_graph *g, const zn_node *n, vkop_mm *a) {
    const vkfuse_x *f = &c->plan.fx[n->src[0]];
    a->x = act_addr(c, g, f->mode ? f->src : n->src[0]);
    a->xmode = f->mode;
    a->aux = f->mode == VKX_RMSNORM ? waddr(c, f->w)
             : f->mode == VKX_SWIGLU || f->mode == VKX_SIGMUL ? act_addr(c, g, f->aux) + sizeof(float) * (uint64_t)f->aux_off
                                     : 0;
    a->eps = f->eps;
    if (f->gn_node >= 0) {
        const zn_node *r = &g->nodes[f->gn_node];
        a->gn_w = waddr(c, r->w[0]);
        a->gn_group = (uint32_t)r->norm.group;
    }
    a->x_reuse = c->x_reuse;
}

static void node_hazards(vk_ctx *c, const vk_seg *sg, const zn_graph *g, const zn_node *n);

/* a reads the output of the gated norm folded into matmul n's x, as x's
 * aux, with no norm of its own. */
static void gn_output_as_aux(vk_ctx *c, const zn_graph *g, const zn_node *n, vkop_mm *a) {
    a->aux = act_addr(c, g, g->nodes[c->plan.fx[n->src[0]].gn_node].dst);
    a->gn_w = 0;
    a->gn_group = 0;
}

/* The gated norm folded into matmul n's x (vkfuse_x.gn_node) on its own
 * after all, its kernel having refused it: the norm's dispatch and a
 * barrier; a reads the norm's output from then on. */
static zn_status gnorm_apart(vk_ctx *c, const zn_graph *g, const zn_node *n, vkop_mm *a, zn_err *err) {
    const zn_node *r = &g->nodes[c->plan.fx[n->src[0]].gn_node];
    const zn_act *y = &g->acts[r->dst];
    *err = (zn_err){0};
    zn_status st = vkop_norm(&c->o, c->rec, VKNORM_RMS, act_addr(c, g, r->src[0]), act_addr(c, g, r->dst),
                             waddr(c, r->w[0]), 0, (uint32_t)r->norm.group,
                             (uint32_t)(y->rows * y->cols / r->norm.group), r->norm.eps, r->tag, err);
    if (st) return st;
    vkcmd_barrier(c->rec);
    c->n_rd = c->n_wr = 0;
    node_hazards(c, &(vk_seg){0}, g, n);
    const range rr = act_range(c, g, r->dst);
    hazard(c, &rr, 1, NULL, 0);
    gn_output_as_aux(c, g, n, a);
    return ZN_OK;
}

/* vkop_matmul of matmul node n, the gated norm of its x apart when the
 * kernel refuses it (*apart: done; later calls for n read its output). */
static zn_status matmul_gn(vk_ctx *c, const zn_graph *g, const zn_node *n, vkop_mm *a, bool *apart, zn_err *err) {
    if (*apart) gn_output_as_aux(c, g, n, a);
    zn_status st = vkop_matmul(&c->o, c->rec, a, n->tag, err);
    if (st != ZN_ERR_UNSUPPORTED || !a->gn_w) return st;
    if ((st = gnorm_apart(c, g, n, a, err))) return st;
    *apart = true;
    return vkop_matmul(&c->o, c->rec, a, n->tag, err);
}

static zn_status run_matmul(vk_ctx *c, const zn_graph *g, const zn_node *n, zn_err *err) {
    const gguf_tensor *t = n->w[0];
    const vk_weight *w = &c->w[model_weight_id(c->m, t)];
    const zn_act *x = x_act(c, g, n), *y = &g->acts[n->dst];
    const uint32_t rows = (uint32_t)t->ne[1];
    /* a folded residual ADD: the sum goes straight to the ADD's output */
    const int ra = c->plan.res_add[n - g->nodes];
    const zn_node *add = ra >= 0 ? &g->nodes[ra] : NULL;
    const VkDeviceAddress ya = act_addr(c, g, add ? add->dst : n->dst);
    const VkDeviceAddress res = add ? act_addr(c, g, other_src(add, n->dst)) : 0;
    bool apart = false;
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
        zn_status st = matmul_gn(c, g, n, &a, &apart, err);
        if (st) return st;
    }
    return ZN_OK;
}

static VkDeviceAddress seq_table(const vk_ctx *c, int L);

/* A block of this region's pool (group, tail and route blocks, a
 * vkop_group's size each), zeroed; *addr its device address. */
static void *pool_block(vk_ctx *c, VkDeviceAddress *addr) {
    const uint32_t slot = c->region * c->cap_groups + c->n_groups++;
    *addr = c->groups.addr + sizeof(vkop_group) * slot;
    return memset((vkop_group *)c->groups.map + slot, 0, sizeof(vkop_group));
}

/* Matmuls i .. i+n-1 as one grouped matmul (n 1: a matmul computing a
 * conv, vkfuse.conv); s the sequence whose conv state a folded CONV1D
 * rolls. */
static zn_status run_group(vk_ctx *c, vk_seq *s, const zn_graph *g, int i, int n, zn_err *err) {
    const zn_node *a = &g->nodes[i];
    const vk_weight *w0 = &c->w[model_weight_id(c->m, a->w[0])];
    VkDeviceAddress ga;
    vkop_group *gb = pool_block(c, &ga);
    uint32_t rows = 0;
    for (int k = 0; k < n; k++) {
        const zn_node *b = &g->nodes[i + k];
        rows += (uint32_t)b->w[0]->ne[1];
        gb->y[k] = act_addr(c, g, b->dst);
        gb->bias[k] = waddr(c, b->w[1]);
        gb->scale[k] = waddr(c, b->w[2]);
        gb->row_end[k] = rows;
        gb->y_stride[k] = (uint32_t)g->acts[b->dst].cols;
        const int cv = c->plan.conv[i + k];
        if (cv >= 0) {
            const zn_node *cn = &g->nodes[cv];
            gb->y[k] = act_addr(c, g, cn->dst);
            gb->conv_seg = (uint32_t)k;
            gb->conv_k = (uint32_t)cn->w[0]->ne[0];
            gb->conv_w = waddr(c, cn->w[0]);
            if (c->batch) gb->conv_seqs = seq_table(c, cn->layer);
            else gb->conv_state = s->conv[cn->layer].addr;
        }
    }
    gb->n_seg = (uint32_t)n;
    const zn_act *x = x_act(c, g, a);
    vkop_mm m = {.type = a->w[0]->type, .w = w0->addr[0], .ncols = (uint32_t)a->w[0]->ne[0], .nrows = rows,
                 .row_bytes = w0->row_bytes, .n_tok = (uint32_t)x->rows, .n_slots = 1, .x_stride = (uint32_t)x->cols,
                 .bias_first = a->matmul.bias_first != 0, .group = ga};
    m.group_conv = gb->conv_w != 0;
    matmul_x(c, g, a, &m);
    bool apart = false;
    return matmul_gn(c, g, a, &m, &apart, err);
}

/* The arguments of MOE_MATMUL node n. */
static vkop_mm moe_args(vk_ctx *c, const zn_graph *g, const zn_node *n) {
    const gguf_tensor *t = n->w[0];
    const vk_weight *w = &c->w[model_weight_id(c->m, t)];
    const zn_act *x = x_act(c, g, n), *route = &g->acts[n->src[1]];
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
    return a;
}

/* Rows [row0, row0 + n_rows) of activation a (a sequence's part of a step). */
static VkDeviceAddress seg_addr(const vk_ctx *c, const zn_graph *g, int a, const vk_seg *sg) {
    return act_addr(c, g, a) + sizeof(float) * (uint64_t)sg->row0 * (uint64_t)g->acts[a].cols;
}

static range seg_range(const vk_ctx *c, const zn_graph *g, int a, const vk_seg *sg) {
    uint64_t lo = seg_addr(c, g, a, sg);
    return (range){lo, lo + sizeof(float) * (uint64_t)sg->n_rows * (uint64_t)g->acts[a].cols};
}

/* Ops with per-sequence state or positions: run once per sequence of the
 * step, on its rows, with its state and position; in a batched decode step
 * (batch_step) once for all its sequences, through the sequence tables. */
static bool per_seq(zn_op op) {
    return op == ZN_OP_ROPE || op == ZN_OP_KV_STORE || op == ZN_OP_ATTN || op == ZN_OP_CONV1D || op == ZN_OP_GDN;
}

/* Entry 0 of layer L's sequence table in region r (vk_ops.h
 * vkop_seq_ent; vk_backend.h VK_REGIONS). */
static size_t seq_ent(const vk_ctx *c, uint32_t r, int L) {
    return ZN_MAX_STEP_SEQS * ((size_t)r * (size_t)c->m->hp.n_layer + (size_t)L);
}

static VkDeviceAddress seq_table(const vk_ctx *c, int L) {
    return c->seqtab.addr + sizeof(vkop_seq_ent) * seq_ent(c, c->region, L);
}

/* Sequence q's step block in region r. */
static VkDeviceAddress step_block(const vk_ctx *c, uint32_t r, int q) {
    return c->step.addr + sizeof(vkop_step) * ((uint64_t)r * ZN_MAX_STEP_SEQS + (uint64_t)q);
}

/* Whether step g can run batched: several sequences, one token each, their
 * attention unsplit (vkop_attn_batch_ok; else it stays per sequence, and
 * so do the other per_seq ops, since the states' hazards are declared one
 * way or the other for the whole step); *max_past their largest position. */
static bool batch_ok(const vk_ctx *c, const zn_graph *g, uint32_t *max_past) {
    if (g->n_seq < 2 || !c->seqtab.map) return false;
    uint32_t mp = 0;
    for (int q = 0; q < g->n_seq; q++) {
        if (g->seqs[q].n_rows != 1) return false;
        if ((uint32_t)g->seqs[q].n_past > mp) mp = (uint32_t)g->seqs[q].n_past;
    }
    *max_past = mp;
    return vkop_attn_batch_ok(&c->o, (uint32_t)g->n_seq, mp + 1);
}

/* batch_ok, and then writes the sequence tables of c->region (attention
 * layers: the KV block table in a; recurrent ones: the conv state in a,
 * the delta state in b), the positions too (vkrecord_positions rewrites
 * them before every submit). */
static bool batch_step(vk_ctx *c, vk_seq *const *states, const zn_graph *g, uint32_t *max_past) {
    if (!batch_ok(c, g, max_past)) return false;
    vkop_seq_ent *t = (vkop_seq_ent *)c->seqtab.map;
    for (int L = 0; L < c->m->hp.n_layer; L++) {
        const bool rec = c->m->layers[L].recurrent;
        vkop_seq_ent *e = t + seq_ent(c, c->region, L);
        for (int q = 0; q < g->n_seq; q++) {
            const vk_seq *s = states[q];
            e[q] = (vkop_seq_ent){.a = rec ? s->conv[L].addr : s->tab.addr, .b = rec ? s->delta[L].addr : 0,
                                  .row = (uint32_t)g->seqs[q].row0, .n_past = (uint32_t)g->seqs[q].n_past};
        }
    }
    return true;
}

bool vkrecord_step_shape(const vk_ctx *c, const zn_graph *g, uint32_t *shape) {
    uint32_t mp = 0;
    const bool batch = batch_ok(c, g, &mp);
    for (int q = 0; q < g->n_seq; q++) {
        const uint32_t n = (uint32_t)g->seqs[q].n_rows, kv = batch ? mp + 1 : (uint32_t)g->seqs[q].n_past + n;
        shape[q] = vkop_attn_shape(&c->o, n, kv, batch);
    }
    return batch;
}

/* The host writes while no submit reads: vk_run waits for each step's end
 * before it returns, so the next step's writes find every region idle
 * (a step overlapping the next one's host work would need a second set of
 * regions to write into instead). */
void vkrecord_positions(vk_ctx *c, const zn_graph *g, uint32_t region, bool batch) {
    vkop_step *sb = (vkop_step *)c->step.map + (size_t)region * ZN_MAX_STEP_SEQS;
    for (int q = 0; q < g->n_seq; q++) sb[q] = (vkop_step){.n_past = (uint32_t)g->seqs[q].n_past};
    if (!batch) return;
    vkop_seq_ent *t = (vkop_seq_ent *)c->seqtab.map;
    for (int L = 0; L < c->m->hp.n_layer; L++) {
        if (c->m->layers[L].recurrent) continue; /* their tables hold no positions the shaders read */
        vkop_seq_ent *e = t + seq_ent(c, region, L);
        for (int q = 0; q < g->n_seq; q++) e[q].n_past = (uint32_t)g->seqs[q].n_past;
    }
}

/* Stand-in ranges, of addresses no memory has (above any device address),
 * for state that has no one range of its own. In a batched step, layer L's
 * K (v = 0) or V (v = 1) caches of all its sequences (recurrent layers:
 * the conv and delta states): every access the step's recording makes to
 * them is one of its batched ops, so those order among themselves exactly
 * as they would on the states' own ranges, which are too many to declare
 * (VK_HAZARDS). The same for one sequence's layer L K or V rows, which lie
 * in blocks all over the cache (its id above the layers: never reused, and
 * a sequence writes only blocks it holds alone; blocks shared by
 * seq_copy are only read, copied before a write by seq_reserve); only the
 * KV ops touch them (seq_copy and seq_reserve run outside steps). */
#define VK_KV_STANDIN (1ull << 62)
static range batch_kv_range(int L, int v) {
    const uint64_t lo = VK_KV_STANDIN + 2ull * (uint64_t)L + (uint64_t)v;
    return (range){lo, lo + 1};
}

/* Layer L's K (v = 0) or V (v = 1) rows of sg's sequence; batched: the
 * stand-in of all of them. */
static range kv_range(const vk_seg *sg, int L, int v) {
    if (sg->batch) return batch_kv_range(L, v);
    const uint64_t lo = VK_KV_STANDIN + (sg->s->id << 24) + 2ull * (uint64_t)L + (uint64_t)v;
    return (range){lo, lo + 1};
}

/* The residual ADD n with the MoE tail folded into it (vk_fuse.h). */
static zn_status run_tail(vk_ctx *c, const zn_graph *g, const zn_node *n, const vkfuse_tail *t, zn_err *err) {
    const zn_act *y = &g->acts[n->dst];
    const int inner = t->mid >= 0 ? g->nodes[t->mid].dst : g->nodes[t->sum].dst; /* what the residual is added to */
    vkop_elt e = {.mode = VKELT_MOE_TAIL, .dst = act_addr(c, g, n->dst), .res = act_addr(c, g, other_src(n, inner)),
                  .n = (uint32_t)(y->rows * y->cols), .cols = (uint32_t)y->cols};
    if (t->sum >= 0) {
        const zn_node *sm = &g->nodes[t->sum];
        e.a = act_addr(c, g, sm->src[0]);
        e.route = act_addr(c, g, sm->src[1]);
        e.k = (uint32_t)g->acts[sm->src[1]].cols / 2;
    }
    if (t->gate >= 0) {
        const zn_node *sg = &g->nodes[t->gate];
        e.b = act_addr(c, g, sg->src[0]);
        e.gate = act_addr(c, g, sg->src[1]);
        e.b_cols = (uint32_t)g->acts[sg->src[1]].cols;
        if (t->sum < 0) e.a = act_addr(c, g, other_src(&g->nodes[t->mid], sg->dst));
    }
    return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
}

/* MOE_MATMUL n (arguments a) picking its experts itself (vkfuse.route),
 * storing the routing if it is the first. A kernel that cannot (the
 * driver refused its pipeline) leaves the routing's own dispatch (by the
 * first), a barrier and the matmul. */
static zn_status run_routed(vk_ctx *c, const zn_graph *g, const zn_node *n, const vkop_mm *a, zn_err *err) {
    const int i = (int)(n - g->nodes);
    const zn_node *rn = &g->nodes[c->plan.route[i]];
    const zn_act *lg = &g->acts[rn->src[0]];
    const bool write = c->plan.route_w[i];
    vkop_mm ar = *a;
    vkop_route *rb = pool_block(c, &ar.route);
    *rb = (vkop_route){.logits = act_addr(c, g, rn->src[0]), .dst = act_addr(c, g, rn->dst),
                       .n_expert = (uint32_t)lg->cols, .k = (uint32_t)rn->route.k, .norm = rn->route.normalise != 0,
                       .write = write, .wscale = rn->route.w_scale};
    zn_status st = vkop_matmul(&c->o, c->rec, &ar, n->tag, err);
    if (st != ZN_ERR_UNSUPPORTED) return st;
    *err = (zn_err){0};
    if (write && (st = vkop_moe_route(&c->o, c->rec, rb->logits, rb->dst, (uint32_t)lg->rows, rb->n_expert, rb->k,
                                      rb->norm, rb->wscale, rn->tag, err)))
        return st;
    vkcmd_barrier(c->rec);
    c->n_rd = c->n_wr = 0;
    node_hazards(c, &(vk_seg){0}, g, n);
    return vkop_matmul(&c->o, c->rec, a, n->tag, err);
}

/* MOE_MATMUL node n; with a tail (vkfuse.moe_tail) the ADD's output
 * instead of n's, through a tail block from the pool. A kernel that
 * cannot take the tail (the driver refused its pipeline) leaves the down,
 * a barrier and the tail's own dispatch. */
static zn_status run_moe_matmul(vk_ctx *c, const zn_graph *g, const zn_node *n, zn_err *err) {
    const vkop_mm a = moe_args(c, g, n);
    if (c->plan.route[n - g->nodes] >= 0) return run_routed(c, g, n, &a, err);
    const int l = c->plan.moe_tail[n - g->nodes];
    if (l < 0) return vkop_matmul(&c->o, c->rec, &a, n->tag, err);
    const zn_node *add = &g->nodes[l];
    const vkfuse_tail *t = &c->plan.tail[l];
    vkop_mm at = a;
    vkop_tail *tb = pool_block(c, &at.tail);
    tb->route = act_addr(c, g, n->src[1]);
    if (t->gate >= 0) {
        const zn_node *sg = &g->nodes[t->gate];
        tb->b = act_addr(c, g, sg->src[0]);
        tb->gate = act_addr(c, g, sg->src[1]);
        tb->b_cols = (uint32_t)g->acts[sg->src[1]].cols;
    }
    at.y = act_addr(c, g, add->dst);
    at.y_stride = (uint32_t)g->acts[add->dst].cols;
    at.res = act_addr(c, g, other_src(add, t->mid >= 0 ? g->nodes[t->mid].dst : g->nodes[t->sum].dst));
    zn_status st = vkop_matmul(&c->o, c->rec, &at, n->tag, err);
    if (st != ZN_ERR_UNSUPPORTED) return st;
    *err = (zn_err){0};
    if ((st = vkop_matmul(&c->o, c->rec, &a, n->tag, err))) return st;
    vkcmd_barrier(c->rec);
    c->n_rd = c->n_wr = 0;
    node_hazards(c, &(vk_seg){0}, g, add);
    return run_tail(c, g, add, t, err);
}

/* ROPE node i's arguments, with the norm and KV store it takes in. */
static vkop_rope rope_args(const vk_ctx *c, const vk_seg *sg, const zn_graph *g, int i) {
    const zn_node *n = &g->nodes[i];
    const zn_rope_params *rp = &n->rope;
    const zn_act *y = &g->acts[n->dst];
    const int L = n->layer;
    /* batched: kv.tab (s the first sequence's) only says "store" */
    vkop_rope a = {.x = seg_addr(c, g, n->dst, sg), .ff = waddr(c, n->w[0]), .n_tok = sg->n_rows,
                   .n_heads = (uint32_t)(y->cols / rp->head_dim), .head_dim = (uint32_t)rp->head_dim,
                   .n_rot = (uint32_t)rp->n_rot, .row_stride = (uint32_t)y->cols, .mode = (uint32_t)rp->mode,
                   .n_past = sg->n_past, .step = sg->step, .seqs = sg->batch ? seq_table(c, L) : 0,
                   .sections = {rp->sections[0], rp->sections[1], rp->sections[2], rp->sections[3]},
                   .freq_base = rp->freq_base, .freq_scale = rp->freq_scale};
    if (c->plan.rope_norm[i] >= 0) {
        const zn_node *nn = &g->nodes[c->plan.rope_norm[i]];
        a.src = seg_addr(c, g, nn->src[0], sg);
        a.nw = waddr(c, nn->w[0]);
        a.eps = nn->norm.eps;
    }
    if (c->plan.rope_kv[i] >= 0) {
        const zn_node *kv = &g->nodes[c->plan.rope_kv[i]];
        a.kv = vkseq_kv(c, sg->s, L);
        a.v = seg_addr(c, g, kv->src[1], sg);
        a.vdim = (uint32_t)g->acts[kv->src[1]].cols;
    }
    return a;
}

/* Does ATTN node i take in the ropes before it (vk_fuse.h attn_rq) for
 * segment sg? Decode only: one token per sequence. */
static bool attn_takes_ropes(const vk_ctx *c, int i, const vk_seg *sg) {
    return c->plan.attn_rq[i] >= 0 && (sg->batch || sg->n_rows == 1);
}

/* Does COPY_COLS node i go unrun, its ATTN reading q from its source? In
 * a decode step (every sequence one token), where every segment's
 * attention takes the ropes in. */
static bool copy_in_attn(const vk_ctx *c, const zn_graph *g, int i) {
    return c->plan.copy_attn[i] >= 0 && graph_is_decode(g);
}

/* Does ROPE node i run inside the attention after it for segment sg? */
static bool rope_in_attn(const vk_ctx *c, int i, const vk_seg *sg) {
    return c->plan.rope_attn[i] >= 0 && attn_takes_ropes(c, c->plan.rope_attn[i], sg);
}

/* Node n for segment sg (per_seq ops: sg's rows and state; the others: the
 * whole step, sg unused). */
static zn_status run_node(vk_ctx *c, const vk_seg *sg, const zn_graph *g, const zn_node *n, zn_err *err) {
    vk_seq *s = sg->s;
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
        if (rope_in_attn(c, (int)(n - g->nodes), sg)) return ZN_OK;
        const vkop_rope a = rope_args(c, sg, g, (int)(n - g->nodes));
        return vkop_rope_run(&c->o, c->rec, &a, n->tag, err);
    }
    case ZN_OP_KV_STORE: {
        const vkop_kv kv = vkseq_kv(c, s, L);
        const zn_act *va = &g->acts[n->src[1]];
        if (backend_kv_rotated(c->kv_type)) { /* K and V in place: nothing else reads them */
            const uint32_t hk = (uint32_t)c->m->hp.head_dim_k, hv = (uint32_t)c->m->hp.head_dim_v;
            zn_status st = vkop_kv_rot(&c->o, c->rec, seg_addr(c, g, n->src[0], sg), sg->n_rows,
                                       (uint32_t)x->cols / hk, hk, (uint32_t)x->cols, false, n->tag, err);
            if (!st) st = vkop_kv_rot(&c->o, c->rec, seg_addr(c, g, n->src[1], sg), sg->n_rows,
                                      (uint32_t)va->cols / hv, hv, (uint32_t)va->cols, false, n->tag, err);
            if (st) return st;
            vkcmd_barrier(c->rec);
        }
        return vkop_kv_store(&c->o, c->rec, seg_addr(c, g, n->src[0], sg), seg_addr(c, g, n->src[1], sg), &kv,
                             sg->n_rows, (uint32_t)x->cols, (uint32_t)va->cols, sg->n_past, sg->step,
                             sg->batch ? seq_table(c, L) : 0, n->tag, err);
    }
    case ZN_OP_ATTN: {
        vkop_attn a = {.q = seg_addr(c, g, n->src[0], sg), .kv = vkseq_kv(c, s, L),
                       .dst = seg_addr(c, g, n->dst, sg), .part = c->part.addr, .step = sg->step,
                       .seqs = sg->batch ? seq_table(c, L) : 0, .n_seq = sg->batch ? sg->n_rows : 0,
                       .n_tok = sg->batch ? 1 : sg->n_rows, .n_past = sg->n_past, .n_head = (uint32_t)n->attn.n_head,
                       .n_head_kv = (uint32_t)n->attn.n_head_kv, .hd_k = (uint32_t)n->attn.hd_k,
                       .hd_v = (uint32_t)n->attn.hd_v, .scale = n->attn.scale};
        const int i = (int)(n - g->nodes);
        if (attn_takes_ropes(c, i, sg)) { /* q before its rope, K and V from the ropes' inputs */
            const vkop_rope rq = rope_args(c, sg, g, c->plan.attn_rq[i]), rk = rope_args(c, sg, g, c->plan.attn_rk[i]);
            vkop_rope_p rp;
            zn_status st = vkop_rope_params(&rq, &rk, &rp, err);
            if (st) return st;
            memcpy(c->ropep.map + sizeof rp * (size_t)L, &rp, sizeof rp);
            a.rp = c->ropep.addr + sizeof rp * (uint64_t)L;
            a.q = rq.src ? rq.src : rq.x;
            const int cq = c->plan.attn_qcopy[i];
            if (cq >= 0) { /* the q heads where the COPY_COLS would have gathered them */
                const zn_node *cp = &g->nodes[cq];
                a.q = seg_addr(c, g, cp->src[0], sg) + sizeof(float) * (uint64_t)cp->copy_cols.off;
                a.q_hs = (uint32_t)cp->copy_cols.stride;
                a.q_rs = (uint32_t)g->acts[cp->src[0]].cols;
            }
            a.kraw = rk.src ? rk.src : rk.x;
            a.vraw = rk.v;
        }
        if (!backend_kv_rotated(c->kv_type)) return vkop_attn_run(&c->o, c->rec, &a, n->tag, err);
        /* the queries rotated as the cache's keys were (in place: only the
         * attention reads them), the output rotated back */
        zn_status st = vkop_kv_rot(&c->o, c->rec, a.q, sg->n_rows, a.n_head, a.hd_k, (uint32_t)x->cols, false,
                                   n->tag, err);
        if (st) return st;
        vkcmd_barrier(c->rec);
        if ((st = vkop_attn_run(&c->o, c->rec, &a, n->tag, err))) return st;
        vkcmd_barrier(c->rec);
        return vkop_kv_rot(&c->o, c->rec, a.dst, sg->n_rows, a.n_head, a.hd_v, (uint32_t)y->cols, true, n->tag, err);
    }
    case ZN_OP_ADD: {
        const vkfuse_tail *t = &c->plan.tail[n - g->nodes];
        if (t->sum >= 0 || t->gate >= 0) return run_tail(c, g, n, t, err);
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
        if (copy_in_attn(c, g, (int)(n - g->nodes))) return ZN_OK;
        vkop_elt e = {.mode = VKELT_COPY_COLS, .a = a0, .dst = dst, .n = ny, .cols = (uint32_t)y->cols,
                      .b_cols = (uint32_t)x->cols, .k = (uint32_t)n->copy_cols.width,
                      .aux = (uint32_t)n->copy_cols.stride, .aux2 = (uint32_t)n->copy_cols.off};
        return vkop_eltwise(&c->o, c->rec, &e, n->tag, err);
    }
    case ZN_OP_CONV1D:
        return vkop_conv1d(&c->o, c->rec, seg_addr(c, g, n->src[0], sg), seg_addr(c, g, n->dst, sg),
                           waddr(c, n->w[0]), s->conv[L].addr, sg->batch ? seq_table(c, L) : 0, sg->n_rows,
                           (uint32_t)x->cols, (uint32_t)x->cols, (uint32_t)n->w[0]->ne[0], n->tag, err);
    case ZN_OP_GDN: {
        const uint32_t hk = (uint32_t)n->gdn.h_k, hv = (uint32_t)n->gdn.h_v, dk = (uint32_t)n->gdn.d_k,
                       dv = (uint32_t)n->gdn.d_v;
        const VkDeviceAddress qkv = seg_addr(c, g, n->src[0], sg);
        vkop_gdn a = {.q = qkv, .k = qkv + 4ull * hk * dk, .v = qkv + 8ull * hk * dk, .g = seg_addr(c, g, n->src[1], sg),
                      .beta = seg_addr(c, g, n->src[2], sg), .state = s->delta[L].addr, .dst = seg_addr(c, g, n->dst, sg),
                      .dt_bias = waddr(c, n->w[0]), .a = waddr(c, n->w[1]), .n_tok = sg->n_rows, .h_k = hk,
                      .h_v = hv, .d_k = dk, .d_v = dv, .ld_qk = (uint32_t)x->cols, .ld_v = (uint32_t)x->cols,
                      .ld_o = (uint32_t)y->cols, .ld_g = hv, .gate_raw = true, .l2 = true, .eps = n->gdn.eps,
                      .seqs = sg->batch ? seq_table(c, L) : 0};
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

/* What node n reads and writes (per_seq ops: for segment sg, its rows and
 * state), for the barrier placement. */
static void node_hazards(vk_ctx *c, const vk_seg *sg, const zn_graph *g, const zn_node *n) {
    range rd[2 * ZN_NODE_SRC + 6], wr[5];
    int nr = 0, nw = 0;
    vk_seq *s = sg->s;
    const bool ps = per_seq(n->op);
#define NODE_RANGE(a) (ps ? seg_range(c, g, (a), sg) : act_range(c, g, (a)))
    const int i = (int)(n - g->nodes);
    if ((n->op == ZN_OP_ROPE && rope_in_attn(c, i, sg)) || (n->op == ZN_OP_COPY_COLS && copy_in_attn(c, g, i)))
        return; /* not run */
    const int rt = n->op == ZN_OP_MOE_MATMUL ? c->plan.route[i] : -1; /* picks its experts from the logits */
    for (int k = 0; k < ZN_NODE_SRC; k++) {
        if (n->src[k] < 0) continue;
        const int a = k == 1 && rt >= 0 ? g->nodes[rt].src[0] : n->src[k];
        const vkfuse_x *f = &c->plan.fx[a];
        rd[nr++] = NODE_RANGE(f->mode ? f->src : a);
        if (f->mode == VKX_SWIGLU || f->mode == VKX_SIGMUL) rd[nr++] = NODE_RANGE(f->aux);
    }
    wr[nw++] = NODE_RANGE(n->dst);
    if (rt >= 0 && c->plan.route_w[i]) wr[nw++] = act_range(c, g, g->nodes[rt].dst);
    const int cv = n->op == ZN_OP_MATMUL ? c->plan.conv[i] : -1;
    if (cv >= 0) { /* writes the conv's output instead, reads and writes the sequence's conv state */
        const zn_node *cn = &g->nodes[cv];
        const range r = c->batch ? batch_kv_range(cn->layer, 0)
                                 : (range){s->conv[cn->layer].addr, s->conv[cn->layer].addr + s->conv[cn->layer].size};
        wr[0] = act_range(c, g, cn->dst);
        rd[nr++] = r;
        wr[nw++] = r;
    }
    if (n->op == ZN_OP_MATMUL && c->plan.res_add[i] >= 0) { /* reads the residual, writes the ADD's output */
        const zn_node *add = &g->nodes[c->plan.res_add[i]];
        rd[nr++] = act_range(c, g, other_src(add, n->dst));
        wr[0] = act_range(c, g, add->dst);
    }
    const int mt = n->op == ZN_OP_MOE_MATMUL ? c->plan.moe_tail[i] : -1;
    if (mt >= 0) { /* the tail's ADD: its output instead, and what it reads */
        const zn_node *add = &g->nodes[mt];
        wr[0] = act_range(c, g, add->dst);
        for (int k = 0; k < 2; k++) rd[nr++] = act_range(c, g, add->src[k]);
    }
    const vkfuse_tail *tl = n->op == ZN_OP_ADD ? &c->plan.tail[i] : mt >= 0 ? &c->plan.tail[mt] : NULL;
    if (tl && tl->sum >= 0) /* the experts' outputs and the routing */
        for (int k = 0; k < 2; k++) rd[nr++] = act_range(c, g, g->nodes[tl->sum].src[k]);
    if (tl && tl->gate >= 0) { /* the shared expert's output and gate, and the sum if not folded */
        for (int k = 0; k < 2; k++) rd[nr++] = act_range(c, g, g->nodes[tl->gate].src[k]);
        rd[nr++] = act_range(c, g, other_src(&g->nodes[tl->mid], g->nodes[tl->gate].dst));
    }
    if (n->op == ZN_OP_ROPE && c->plan.rope_norm[i] >= 0) rd[0] = NODE_RANGE(g->nodes[c->plan.rope_norm[i]].src[0]);
    if (n->op == ZN_OP_ROPE && c->plan.rope_kv[i] >= 0) { /* reads V, writes the caches instead of x */
        const zn_node *kv = &g->nodes[c->plan.rope_kv[i]];
        rd[nr++] = NODE_RANGE(kv->src[1]);
        nw = 0;
        wr[nw++] = kv_range(sg, n->layer, 0);
        wr[nw++] = kv_range(sg, n->layer, 1);
    }
#undef NODE_RANGE
    if (n->op == ZN_OP_KV_STORE || n->op == ZN_OP_ATTN) {
        /* the layer's whole cache, conservatively */
        const range kr = kv_range(sg, n->layer, 0), vr = kv_range(sg, n->layer, 1);
        if (n->op == ZN_OP_KV_STORE) {
            nw = 0; /* dst is K itself, only read */
            wr[nw++] = kr;
            wr[nw++] = vr;
        } else {
            rd[nr++] = kr;
            rd[nr++] = vr;
            if (attn_takes_ropes(c, i, sg)) { /* the ropes' inputs; stores the new K and V rows */
                const zn_node *rq = &g->nodes[c->plan.attn_rq[i]], *rk = &g->nodes[c->plan.attn_rk[i]];
                const int nq = c->plan.rope_norm[rq - g->nodes], nk = c->plan.rope_norm[rk - g->nodes];
                const int cq = c->plan.attn_qcopy[i];
                rd[0] = seg_range(c, g, cq >= 0 ? g->nodes[cq].src[0] : nq >= 0 ? g->nodes[nq].src[0] : rq->src[0], sg);
                rd[nr++] = seg_range(c, g, nk >= 0 ? g->nodes[nk].src[0] : rk->src[0], sg);
                rd[nr++] = seg_range(c, g, g->nodes[c->plan.rope_kv[rk - g->nodes]].src[1], sg);
                wr[nw++] = kr;
                wr[nw++] = vr;
            }
        }
    }
    /* split-K partials: one scratch for all the step's sequences, so a
     * second sequence's split waits for the first one's merge (one
     * sequence: the op's own barrier orders its split and merge) */
    if (n->op == ZN_OP_ATTN && g->n_seq > 1 && !sg->batch &&
        vkop_attn_splits(&c->o, sg->n_rows, sg->n_past + sg->n_rows) > 1) {
        const range pr = {c->part.addr, c->part.addr + sizeof(float) * c->part_floats};
        rd[nr++] = pr;
        wr[nw++] = pr;
    }
    const vkref *st = n->op == ZN_OP_CONV1D ? s->conv : n->op == ZN_OP_GDN ? s->delta : NULL;
    if (st) { /* read and written in place */
        const range r = sg->batch ? batch_kv_range(n->layer, n->op == ZN_OP_GDN)
                                  : (range){st[n->layer].addr, st[n->layer].addr + st[n->layer].size};
        rd[nr++] = r;
        wr[nw++] = r;
    }
    hazard(c, rd, nr, wr, nw);
}

/* --profile: GPU time per op tag of this run, from timestamp queries. */
void vkrecord_print_profile(vk_ctx *c, const zn_graph *g) {
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
    return wa->n_chunks == 1 && wb->addr[0] == wa->addr[0] + (uint64_t)wa->row_bytes * vkweights_rows(a);
}

static void plan_fusions(vk_ctx *c, const zn_graph *g) {
    uint32_t mp;
    bool batch = batch_ok(c, g, &mp); /* as batch_step will find; its rows in sequence order for group_conv */
    for (int q = 0; q < g->n_seq && batch; q++) batch = g->seqs[q].row0 == q;
    const vkfuse_env env = {.o = &c->o, .no_fusion = c->no_fusion, .no_rope_kv = c->o.kvq != 0,
                            .no_attn_rope = !c->o.t.attn_rope, .no_conv = !c->o.t.mv_conv, .batch = batch,
                            .max_groups = c->groups.map ? (int)c->cap_groups : 0, .follows = weight_follows, .ctx = c};
    vkfuse_plan(&c->plan, &env, g);
}

/* Every node of g for the step's sequences (states[i]: g->seqs[i]'s) into
 * c->rec (NULL: nothing recorded, the ops only create their pipelines),
 * after plan_fusions. Ops on rows run once over the whole step (the
 * weights read once); per_seq ops once per sequence, its dispatches
 * after one another without barriers between them (they touch disjoint
 * rows and states), but in a batched decode step (batch_step) once for
 * all. */
static zn_status record_nodes(vk_ctx *c, vk_seq *const *states, const zn_graph *g, uint32_t region, zn_err *err) {
    zn_status st = ZN_OK;
    c->n_rd = c->n_wr = 0;
    c->n_groups = 0;
    c->region = region;
    const vk_seg whole = {.s = states[0], .row0 = 0, .n_rows = (uint32_t)g->n_tokens, .n_past = (uint32_t)g->n_past,
                          .step = step_block(c, region, 0)};
    uint32_t max_past = 0;
    const bool batch = batch_step(c, states, g, &max_past);
    c->batch = batch;
    const vk_seg all = {.s = states[0], .row0 = 0, .n_rows = (uint32_t)g->n_tokens, .n_past = max_past, .batch = true};
    int xq_src = -1; /* the x activation the last matmul read (its quantised copy may serve the next) */
    for (int i = 0; i < g->n_nodes && !st; i++) {
        if (c->plan.skip[i]) continue;
        const int n = c->plan.group[i];
        const zn_node *nd = &g->nodes[i];
        const bool mm = nd->op == ZN_OP_MATMUL || nd->op == ZN_OP_MOE_MATMUL;
        c->x_reuse = mm && nd->src[0] == xq_src;
        xq_src = mm ? nd->src[0] : -1;
        if (n > 1 || (nd->op == ZN_OP_MATMUL && c->plan.conv[i] >= 0)) {
            for (int k = 0; k < n; k++) node_hazards(c, &whole, g, &g->nodes[i + k]);
            st = run_group(c, states[0], g, i, n, err);
        } else if (batch && per_seq(nd->op)) { /* all sequences in one dispatch */
            node_hazards(c, &all, g, nd);
            st = run_node(c, &all, g, nd, err);
        } else if (g->n_seq > 1 && per_seq(nd->op)) {
            for (int q = 0; q < g->n_seq && !st; q++) {
                const zn_step_seq *ss = &g->seqs[q];
                const vk_seg sg = {.s = states[q], .row0 = (uint32_t)ss->row0, .n_rows = (uint32_t)ss->n_rows,
                                   .n_past = (uint32_t)ss->n_past, .step = step_block(c, region, q)};
                node_hazards(c, &sg, g, nd);
                st = run_node(c, &sg, g, nd, err);
            }
        } else {
            node_hazards(c, &whole, g, nd);
            st = run_node(c, &whole, g, nd, err);
        }
        i += n - 1;
        if (st) {
            char name[64];
            graph_node_name(&g->nodes[i], name, sizeof name);
            zn_err_prefix(err, "%s", name);
        }
    }
    return st;
}

/* Records g for the step's sequences into cmd: every node, then a copy of
 * the logits into host-visible memory (so reading them needs no second
 * submit). Ends the recording, also after a failure. */
zn_status vkrecord_step(vk_ctx *c, vk_seq *const *states, const zn_graph *g, vkcmd *cmd, uint32_t region,
                        zn_err *err) {
    plan_fusions(c, g);
    zn_status st = vkcmd_begin(cmd, err);
    if (st) return st;
    c->rec = cmd;
    st = record_nodes(c, states, g, region, err);
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
typedef struct tok_key { bool mv, moe_mv, fa, mmi; uint32_t small, tiles, moe_tiles; } tok_key;

static uint32_t gcd32(uint32_t a, uint32_t b) { return b ? gcd32(b, a % b) : a; }

static tok_key tok_key_of(const vk_ctx *c, uint32_t n, uint32_t grain) {
    const zn_hparams *hp = &c->m->hp;
    const vktune *t = &c->o.t;
    const uint32_t E = (uint32_t)hp->n_expert, k = (uint32_t)(hp->n_expert_used > 1 ? hp->n_expert_used : 1);
    const uint32_t moe_toks = E ? (n * k + E - 1) / E : 0;
    return (tok_key){.mv = n < t->mm_min_tok, .moe_mv = n < t->moe_min_tok, .fa = n >= t->fa_min_tok,
                     .mmi = n >= t->mmi_min_tok && n <= t->mmi_max_tok,
                     .small = n <= ZN_VK_ATTN_SPLIT_TOK ? n : 0, .tiles = (n + grain - 1) / grain,
                     .moe_tiles = (moe_toks + grain - 1) / grain};
}

#define PREP_ADDR (1ull << 44) /* stand-in state addresses: aligned, never dereferenced */
enum { WALK_PAST = 5 }; /* the positions walk_steps records each step at */
/* Records, without a command buffer, every step shape vkrecord_prepare
 * _pipelines walks: steps of 1 .. max_tokens tokens (one per token key),
 * all logits or the last, at the positions in past (the last only when
 * not 0: where it picks another attention config). */
static void walk_steps(vk_ctx *c, zn_graph *g, int32_t *toks, vk_seq *s, uint32_t grain,
                       const uint32_t past[WALK_PAST]) {
    for (int all = 0; all < 2; all++) {
        tok_key last = {0};
        for (int n = 1; n <= c->max_tokens; n++) {
            const tok_key key = tok_key_of(c, (uint32_t)n, grain);
            if (n > 1 && n < c->max_tokens && !memcmp(&key, &last, sizeof key)) continue;
            last = key;
            for (size_t p = 0; p < WALK_PAST; p++) {
                const bool sg_p = p == WALK_PAST - 1;
                if (sg_p ? !past[p] : p && n > ZN_VK_ATTN_SPLIT_TOK) continue;
                const int np = past[p] > (uint32_t)(ZN_MAX_CTX - n) ? ZN_MAX_CTX - n : (int)past[p];
                zn_err e2 = {0};
                if (graph_build(g, toks, n, np, all, &e2) || g->n_nodes > c->cap_nodes || g->n_acts > c->cap_acts)
                    continue; /* the step fails the same way (vk_run checks the capacities) */
                plan_fusions(c, g);
                vk_seq *one = s;
                record_nodes(c, &one, g, 0, &e2);
            }
        }
    }
}

zn_status vkrecord_prepare_pipelines(vk_ctx *c, zn_err *err) {
    const zn_hparams *hp = &c->m->hp;
    zn_graph g;
    zn_status st = graph_init(&g, c->m, c->max_tokens, err);
    if (st) return st;
    int32_t *toks = calloc((size_t)c->max_tokens, sizeof *toks);
    vkref *rs = calloc(2 * (size_t)hp->n_layer, sizeof *rs);
    if (!toks || !rs) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    vk_seq s = {.n_ctx = ZN_MAX_CTX, .tab = {.addr = PREP_ADDR}, .conv = rs, .delta = rs ? rs + hp->n_layer : NULL};
    for (int i = 0; !st && i < 2 * hp->n_layer; i++)
        rs[i] = (vkref){.addr = PREP_ADDR + ((uint64_t)(i + 1) << 32), .size = 256};
    const vkref part = c->part;
    if (!c->part.addr) c->part.addr = PREP_ADDR - (1ull << 32); /* split-K partials (sized per sequence) */
    c->rec = NULL;
    uint32_t grain = 0;
    for (int i = 0; i < ZN_VK_MM_NCFG; i++) grain = gcd32(grain, zn_vk_mm_cfgs[i].bn);
    for (int i = 0; i < ZN_VK_CM2_NCFG; i++) grain = gcd32(grain, zn_vk_cm2_cfgs[i].bn);
    /* the positions that pick other kernels: split decode, attn_dec.comp,
     * long splits; prompts from fa_sg_kv keys on, where that picks another
     * attention config (attn_fa_sg.glsl) */
    const uint32_t hd = (uint32_t)hp->head_dim_k, sg_kv = c->o.t.fa_sg_kv;
    const bool sg_other = sg_kv != ZN_VK_OFF && c->o.fa_cm && (c->o.coopmat || c->o.mm_emulate) &&
                          vkops_fa_cfg_for(&c->o, hd, sg_kv) != vkops_fa_cfg_for(&c->o, hd, 0);
    const uint32_t sg_past = sg_other ? sg_kv : 0;
    const uint32_t past[WALK_PAST] = {0, c->o.t.attn_chunk, c->o.t.attn_dec_min, ZN_MAX_CTX / 2, sg_past};
    /* First the pipelines the walk asks for, listed and built at once on
     * the CPU's threads (a cold driver cache compiles each); then the walk
     * again, which finds them built and builds what the first walk did not
     * reach (a refused pipeline's fallback). */
    if (!st && c->build_threads > 1) {
        vkops_collect(&c->o);
        walk_steps(c, &g, toks, &s, grain, past);
        vkops_build(&c->o, c->build_threads);
        vkops_forget(&c->o);
    }
    for (int pass = 0; pass < 3 && !st; pass++) {
        const bool flags[5] = {c->o.intdot, c->o.mvx, c->o.fa_cm, c->o.mm_cm2, c->o.mmi};
        const uint32_t refused = c->o.fa_refused;
        walk_steps(c, &g, toks, &s, grain, past);
        if (flags[0] == c->o.intdot && flags[1] == c->o.mvx && flags[2] == c->o.fa_cm && flags[3] == c->o.mm_cm2 &&
            flags[4] == c->o.mmi && refused == c->o.fa_refused)
            break;
    }
    c->part = part;
    vkops_forget(&c->o);
    free(toks);
    free(rs);
    graph_free(&g);
    return st;
}

