/* The fusion planner (vk_fuse.h). Activations are compared by their arena
 * ranges (the graph planner's offsets): two overlap in device memory
 * exactly when their ranges do. */
#include "vk_fuse.h"

#include <stdlib.h>
#include <string.h>

zn_status vkfuse_init(vkfuse *p, int cap_nodes, int cap_acts, zn_err *err) {
    memset(p, 0, sizeof *p);
    p->cap_nodes = cap_nodes;
    p->cap_acts = cap_acts;
    p->last_use = calloc((size_t)cap_acts, sizeof *p->last_use);
    p->fx = calloc((size_t)cap_acts, sizeof *p->fx);
    p->skip = calloc((size_t)cap_nodes, sizeof *p->skip);
    p->rope_norm = calloc((size_t)cap_nodes, sizeof *p->rope_norm);
    p->rope_kv = calloc((size_t)cap_nodes, sizeof *p->rope_kv);
    p->rope_attn = calloc((size_t)cap_nodes, sizeof *p->rope_attn);
    p->attn_rq = calloc((size_t)cap_nodes, sizeof *p->attn_rq);
    p->attn_rk = calloc((size_t)cap_nodes, sizeof *p->attn_rk);
    p->attn_qcopy = calloc((size_t)cap_nodes, sizeof *p->attn_qcopy);
    p->copy_attn = calloc((size_t)cap_nodes, sizeof *p->copy_attn);
    p->res_add = calloc((size_t)cap_nodes, sizeof *p->res_add);
    p->group = calloc((size_t)cap_nodes, sizeof *p->group);
    p->tail = calloc((size_t)cap_nodes, sizeof *p->tail);
    p->moe_tail = calloc((size_t)cap_nodes, sizeof *p->moe_tail);
    p->conv = calloc((size_t)cap_nodes, sizeof *p->conv);
    p->route = calloc((size_t)cap_nodes, sizeof *p->route);
    p->route_w = calloc((size_t)cap_nodes, sizeof *p->route_w);
    if (!p->last_use || !p->fx || !p->skip || !p->rope_norm || !p->rope_kv || !p->rope_attn || !p->attn_rq ||
        !p->attn_rk || !p->attn_qcopy || !p->copy_attn || !p->res_add || !p->group || !p->tail || !p->moe_tail ||
        !p->conv || !p->route || !p->route_w) {
        vkfuse_free(p);
        return zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory");
    }
    return ZN_OK;
}

void vkfuse_free(vkfuse *p) {
    free(p->last_use);
    free(p->fx);
    free(p->skip);
    free(p->rope_norm);
    free(p->rope_kv);
    free(p->rope_attn);
    free(p->attn_rq);
    free(p->attn_rk);
    free(p->attn_qcopy);
    free(p->copy_attn);
    free(p->res_add);
    free(p->group);
    free(p->tail);
    free(p->moe_tail);
    free(p->conv);
    free(p->route);
    free(p->route_w);
    memset(p, 0, sizeof *p);
}

typedef struct range { size_t lo, hi; } range;

static range act_range(const zn_graph *g, int a) {
    return (range){g->acts[a].off, g->acts[a].off + (size_t)g->acts[a].rows * (size_t)g->acts[a].cols};
}

static bool overlap(range a, range b) { return a.lo < b.hi && b.lo < a.hi; }

/* Does r overlap what a matmul whose x is a (fx of a) reads as x? */
static bool overlaps_x(const vkfuse *p, const zn_graph *g, range r, int a) {
    const vkfuse_x *f = &p->fx[a];
    return overlap(r, act_range(g, f->mode ? f->src : a)) ||
           ((f->mode == VKX_SWIGLU || f->mode == VKX_SIGMUL) && overlap(r, act_range(g, f->aux)));
}

int vkfuse_matmul_run(const zn_graph *g, int i) {
    const zn_node *a = &g->nodes[i];
    if (a->op != ZN_OP_MATMUL) return 1;
    int n = 1;
    while (n < ZN_VK_GROUP_MAX && i + n < g->n_nodes) {
        const zn_node *b = &g->nodes[i + n];
        if (b->op != ZN_OP_MATMUL || b->src[0] != a->src[0] || b->w[0]->type != a->w[0]->type ||
            b->w[0]->ne[0] != a->w[0]->ne[0] || b->matmul.bias_first != a->matmul.bias_first || b->w[0] == a->w[0])
            break;
        n++;
    }
    return n;
}

/* Does matmul node m (of nrows rows: the group's when grouped) take x in
 * mode xmode on the kernel it runs on (vkops_mm_kernel, vkops_mm_takes)? */
static bool takes(const vkfuse_env *env, const zn_graph *g, const zn_node *m, uint32_t nrows, int xmode, bool group) {
    const bool moe = m->op == ZN_OP_MOE_MATMUL;
    const uint32_t n_tok = (uint32_t)g->acts[m->src[moe ? 1 : 0]].rows;
    return vkops_mm_takes(env->o, vkops_mm_kernel(env->o, m->w[0]->type, n_tok, nrows, moe), xmode, group, n_tok);
}

/* Can node i's result be computed inside each of its consumers instead? An
 * RMS norm over whole rows (with a weight), a SwiGLU (of two inputs, or of
 * one, the merged experts' gate_up: up then sits at a column offset in x's
 * own rows, read as aux + x's offset like a second input) or a sigmoid
 * gate per value (SIGMOID_MUL of a gate shaped like x) can, when every
 * reader is a matmul whose kernel reads x in that mode (vkops_mm_takes: the
 * mat-vec any, the f16 GEMM a SwiGLU, and a norm below mm_prep_tok
 * tokens), and the producer's inputs are
 * still intact when those matmuls run: the norm's input must outlive them
 * (the planner then keeps it), the SwiGLU's or gate's single reader must
 * come right after it and not write over its inputs. */
static bool fusable(const vkfuse *p, const vkfuse_env *env, const zn_graph *g, int i) {
    const zn_node *n = &g->nodes[i];
    const zn_act *y = &g->acts[n->dst];
    if (n->op == ZN_OP_RMSNORM) {
        if (!n->w[0] || n->norm.group != y->cols || p->last_use[n->src[0]] <= p->last_use[n->dst]) return false;
    } else if (n->op == ZN_OP_SWIGLU || n->op == ZN_OP_SIGMOID_MUL) {
        if (n->op == ZN_OP_SIGMOID_MUL && (g->acts[n->src[1]].rows != y->rows || g->acts[n->src[1]].cols != y->cols))
            return false;
        if (p->last_use[n->dst] != i + 1) return false;
        range out = act_range(g, g->nodes[i + 1].dst);
        if (overlap(out, act_range(g, n->src[0])) || (n->src[1] >= 0 && overlap(out, act_range(g, n->src[1]))))
            return false;
    } else {
        return false;
    }
    if (p->last_use[n->dst] <= i) return false;
    for (int j = i + 1; j <= p->last_use[n->dst]; j++) {
        const zn_node *m = &g->nodes[j];
        bool reads = false;
        for (int k = 0; k < ZN_NODE_SRC; k++) reads |= m->src[k] == n->dst;
        if (!reads) continue;
        if (m->src[0] != n->dst || m->src[1] == n->dst || m->src[2] == n->dst) return false;
        if (m->op != ZN_OP_MATMUL && m->op != ZN_OP_MOE_MATMUL) return false;
        const int mode = n->op == ZN_OP_RMSNORM ? VKX_RMSNORM : n->op == ZN_OP_SWIGLU ? VKX_SWIGLU : VKX_SIGMUL;
        if (!takes(env, g, m, (uint32_t)m->w[0]->ne[1], mode, false)) return false;
    }
    return true;
}

/* A matmul whose only reader is the next node, an ADD of a residual of the
 * same shape, stores the sum itself (mm_store adds res at y's index, so an
 * ADD that writes over the residual is fine). The ADD's output must not
 * overlap what the matmul reads as x: other workgroups still read it while
 * rows are stored. */
static void plan_res_add(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int i) {
    const zn_node *n = &g->nodes[i], *nx = i + 1 < g->n_nodes ? &g->nodes[i + 1] : NULL;
    if (env->no_fusion || !nx || nx->op != ZN_OP_ADD || p->last_use[n->dst] != i + 1) return;
    if ((nx->src[0] == n->dst) == (nx->src[1] == n->dst)) return; /* exactly one operand is the matmul's */
    const int r = nx->src[nx->src[0] == n->dst ? 1 : 0];
    const zn_act *y = &g->acts[n->dst], *ra = &g->acts[r], *o = &g->acts[nx->dst];
    if (ra->rows != y->rows || ra->cols != y->cols || o->rows != y->rows || o->cols != y->cols) return;
    if (overlaps_x(p, g, act_range(g, nx->dst), n->src[0])) return;
    p->res_add[i] = i + 1;
    p->skip[i + 1] = true;
}

/* ROPE i with the per-head norm that produced its input (a few nodes back;
 * the norm's input must survive until the rope: no node in between may
 * write over it) and the KV store right after it that is the only reader
 * of K. */
static void plan_rope(vkfuse *p, const zn_graph *g, int i, bool no_kv) {
    const zn_node *n = &g->nodes[i];
    const zn_node *nx = i + 1 < g->n_nodes ? &g->nodes[i + 1] : NULL;
    for (int j = i - 1; j >= 0 && j >= i - 4; j--) {
        const zn_node *pn = &g->nodes[j];
        if (pn->dst != n->src[0]) continue;
        if (pn->op != ZN_OP_RMSNORM || p->skip[j] || pn->norm.group != n->rope.head_dim || !pn->w[0] ||
            p->last_use[pn->dst] < i)
            break;
        bool clobbered = false;
        for (int m = j + 1; m < i; m++) clobbered |= overlap(act_range(g, g->nodes[m].dst), act_range(g, pn->src[0]));
        for (int m = j + 1; m < i; m++) /* nothing else may read the unrotated norm output */
            for (int q = 0; q < ZN_NODE_SRC; q++) clobbered |= g->nodes[m].src[q] == pn->dst;
        if (!clobbered) {
            p->rope_norm[i] = j;
            p->skip[j] = true;
        }
        break;
    }
    if (!no_kv && nx && nx->op == ZN_OP_KV_STORE && nx->src[0] == n->dst && p->last_use[n->dst] == i + 1 && nx->layer == n->layer) {
        p->rope_kv[i] = i + 1;
        p->skip[i + 1] = true;
    }
}

/* The node before `before` (at most 16 back) that writes activation a, if
 * it is one of op `op` that nothing folded away and `before` is the only
 * node after it that reads a; else -1. */
static int producer(const vkfuse *p, const zn_graph *g, int a, int before, zn_op op) {
    for (int j = before - 1; j >= 0 && j >= before - 16; j--) {
        const zn_node *m = &g->nodes[j];
        if (m->dst != a) {
            for (int k = 0; k < ZN_NODE_SRC; k++)
                if (m->src[k] == a) return -1;
            continue;
        }
        return m->op == op && !p->skip[j] && p->last_use[a] == before ? j : -1;
    }
    return -1;
}

/* Is activation a unwritten by the nodes strictly between `from` and `to`
 * other than the two named (folded away themselves)? Conservative: a node
 * counts as writing its dst even when a fold moved its work elsewhere. */
static bool intact(const zn_graph *g, int a, int from, int to, int fold1, int fold2) {
    for (int m = from + 1; m < to; m++)
        if (m != fold1 && m != fold2 && overlap(act_range(g, g->nodes[m].dst), act_range(g, a))) return false;
    return true;
}

/* The unrotated input of ROPE i: its norm's input where it took one in. */
static int rope_input(const vkfuse *p, const zn_graph *g, int i) {
    return p->rope_norm[i] >= 0 ? g->nodes[p->rope_norm[i]].src[0] : g->nodes[i].src[0];
}

/* ATTN i right after the KV store taken in by the ROPE of K, its q the
 * output of another ROPE of the layer that nothing else reads: the
 * attention can take both ropes in. The unrotated q, K and V must stay
 * intact from the first of those nodes to the attention, which must not
 * write over them either (its output is planned after their last reader,
 * the ropes). */
static void plan_attn_rope(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int i) {
    const zn_node *n = &g->nodes[i];
    if (env->no_fusion || env->no_rope_kv || env->no_attn_rope || i < 3) return;
    const int ik = i - 2, q = n->src[0];
    if (g->nodes[ik].op != ZN_OP_ROPE || p->rope_kv[ik] != i - 1 || g->nodes[ik].layer != n->layer) return;
    const int iq = producer(p, g, q, i, ZN_OP_ROPE);
    if (iq < 0 || p->rope_kv[iq] >= 0 || g->nodes[iq].layer != n->layer) return;
    int raw[3] = {rope_input(p, g, iq), rope_input(p, g, ik), g->nodes[i - 1].src[1]};
    int first = iq < ik ? iq : ik;
    if (p->rope_norm[iq] >= 0 && p->rope_norm[iq] < first) first = p->rope_norm[iq];
    if (p->rope_norm[ik] >= 0 && p->rope_norm[ik] < first) first = p->rope_norm[ik];
    /* q heads gathered from a wider projection (qwen35's [q | gate]) and
     * read by the norm or rope alone: the attention reads them there */
    int cq = producer(p, g, raw[0], p->rope_norm[iq] >= 0 ? p->rope_norm[iq] : iq, ZN_OP_COPY_COLS);
    if (cq >= 0) {
        const zn_node *c = &g->nodes[cq];
        if (c->layer == n->layer && c->copy_cols.width == n->attn.hd_k &&
            g->acts[c->dst].cols == n->attn.n_head * n->attn.hd_k) {
            raw[0] = c->src[0];
            first = cq;
        } else {
            cq = -1;
        }
    }
    for (int m = first; m <= i; m++) {
        if (m == iq || m == ik || m == i - 1 || m == p->rope_norm[iq] || m == p->rope_norm[ik] || m == cq) continue;
        for (int r = 0; r < 3; r++)
            if (overlap(act_range(g, g->nodes[m].dst), act_range(g, raw[r]))) return;
        for (int k = 0; k < ZN_NODE_SRC && m < i; k++)
            if (g->nodes[m].src[k] == q) return;
    }
    p->rope_attn[iq] = p->rope_attn[ik] = i;
    p->attn_rq[i] = iq;
    p->attn_rk[i] = ik;
    p->attn_qcopy[i] = cq;
    if (cq >= 0) p->copy_attn[cq] = i;
}

/* ADD l = x + t ending a MoE layer (vkfuse_tail). The fused dispatch reads
 * the folded nodes' inputs where they still are, so none may have been
 * written over since; its output must not overlap what other invocations
 * read at other indices (the experts' outputs and weights, the gate when
 * it is one per row). Operand order does not matter: float addition
 * commutes. */
static void plan_tail(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int l) {
    const zn_node *n = &g->nodes[l];
    p->tail[l] = (vkfuse_tail){-1, -1, -1};
    if (env->no_fusion || n->op != ZN_OP_ADD || p->skip[l] || n->src[0] == n->src[1]) return;
    const range out = act_range(g, n->dst);
    for (int side = 0; side < 2; side++) {
        const int t = n->src[side];
        vkfuse_tail tl = {-1, -1, -1};
        int sum = producer(p, g, t, l, ZN_OP_MOE_SUM), f = -1;
        if (sum < 0 && (f = producer(p, g, t, l, ZN_OP_ADD)) >= 0) {
            const zn_node *fn = &g->nodes[f];
            for (int fs = 0; fs < 2 && tl.gate < 0; fs++) {
                const int s = producer(p, g, fn->src[fs], f, ZN_OP_SIGMOID_MUL);
                if (s < 0) continue;
                const zn_node *sn = &g->nodes[s];
                const int y = fn->src[1 - fs];
                if (!intact(g, sn->src[0], s, l, f, -1) || !intact(g, sn->src[1], s, l, f, -1) ||
                    !intact(g, y, f, l, -1, -1) || overlap(out, act_range(g, sn->src[1])))
                    continue;
                tl = (vkfuse_tail){.sum = -1, .gate = s, .mid = f};
                sum = producer(p, g, y, f, ZN_OP_MOE_SUM);
            }
            if (tl.gate < 0) continue;
        }
        if (sum >= 0) {
            const zn_node *sm = &g->nodes[sum];
            bool ok = true;
            for (int k = 0; k < 2; k++)
                ok &= intact(g, sm->src[k], sum, l, tl.mid, tl.gate) && !overlap(out, act_range(g, sm->src[k]));
            if (ok) tl.sum = sum;
        }
        if (tl.sum < 0 && tl.gate < 0) continue;
        p->tail[l] = tl;
        if (tl.sum >= 0) p->skip[tl.sum] = true;
        if (tl.gate >= 0) p->skip[tl.gate] = p->skip[tl.mid] = true;
        return;
    }
}

/* The tail of ADD l (its MOE_SUM folded) computed by the experts' down
 * that produced the sum's input, when only nodes folded into the tail lie
 * between them (so everything else the tail reads is ready when the down
 * runs), the ADD's output does not overlap the down's x (read by other
 * workgroups while rows are stored), the kernel takes it and a block is
 * free. */
static void plan_moe_tail(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int l) {
    const vkfuse_tail *tl = &p->tail[l];
    if (tl->sum < 0 || p->n_tails >= env->max_groups) return;
    const zn_node *sm = &g->nodes[tl->sum];
    const int d = producer(p, g, sm->src[0], tl->sum, ZN_OP_MOE_MATMUL);
    if (d < 0) return;
    for (int j = d + 1; j < l; j++)
        if (j != tl->sum && j != tl->gate && j != tl->mid) return;
    const zn_node *dn = &g->nodes[d];
    const vkfuse_x *f = &p->fx[dn->src[0]];
    if (overlaps_x(p, g, act_range(g, g->nodes[l].dst), dn->src[0])) return;
    const zn_act *route = &g->acts[dn->src[1]];
    if (!vkops_moe_tail_takes(env->o, dn->w[0]->type, (uint32_t)dn->w[0]->ne[0], (uint32_t)route->cols / 2,
                              (uint32_t)route->rows, f->mode))
        return;
    p->moe_tail[d] = l;
    p->skip[l] = true;
    p->n_tails++;
}

/* SWIGLU s folded into the matmul right after it, its up an RMS norm by
 * groups (with a weight) that only it reads: the matmul norms the groups
 * as it loads x (vkop_mm.gn_w) when its kernel takes that, and the norm's
 * input stays intact while the matmul's output (or its folded ADD's) is
 * written. */
static void plan_gnorm(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int s) {
    const zn_node *sn = &g->nodes[s];
    if (env->no_fusion || sn->op != ZN_OP_SWIGLU || !p->skip[s] || sn->src[1] < 0 || s + 1 >= g->n_nodes) return;
    vkfuse_x *f = &p->fx[sn->dst];
    const int r = producer(p, g, sn->src[1], s, ZN_OP_RMSNORM);
    if (f->mode != VKX_SWIGLU || f->aux != sn->src[1] || r < 0) return;
    const zn_node *rn = &g->nodes[r], *mn = &g->nodes[s + 1];
    const int o = rn->src[0], group = rn->norm.group;
    if (!rn->w[0] || group >= g->acts[o].cols || (int)rn->w[0]->ne[0] != group || mn->op != ZN_OP_MATMUL) return;
    const int out = p->res_add[s + 1] >= 0 ? g->nodes[p->res_add[s + 1]].dst : mn->dst;
    if (!intact(g, o, r, s + 1, -1, -1) || overlap(act_range(g, out), act_range(g, o))) return;
    if (!vkops_gnorm_takes(env->o, mn->w[0]->type, (uint32_t)mn->w[0]->ne[0], (uint32_t)g->acts[o].rows,
                           (uint32_t)group))
        return;
    f->aux = o;
    f->gn_node = r;
    f->eps = rn->norm.eps;
    p->skip[r] = true;
}

/* MOE_ROUTE i computed by the experts' matmuls that read it first, those
 * of one x (gate and up, or gate_up) before any other reader, the first
 * of them storing it for the later ones (down, sum): when the logits stay
 * intact until the last of them (none of them writes over them either),
 * the routing's output overlaps neither the logits nor their x, every one
 * takes it (vkops_moe_route_takes) and a block each is free. */
static void plan_route(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int i) {
    const zn_node *n = &g->nodes[i];
    if (env->no_fusion || n->op != ZN_OP_MOE_ROUTE) return;
    const int r = n->dst, lg = n->src[0];
    int m[4], nm = 0, x = -1;
    for (int j = i + 1; j < g->n_nodes; j++) {
        const zn_node *b = &g->nodes[j];
        bool reads = false;
        for (int k = 0; k < ZN_NODE_SRC; k++) reads |= b->src[k] == r;
        if (!reads) continue;
        if (b->op != ZN_OP_MOE_MATMUL || b->src[1] != r || b->src[0] == r || (x >= 0 && b->src[0] != x)) break;
        if (nm == 4) return;
        x = b->src[0];
        m[nm++] = j;
    }
    if (!nm || p->n_tails + p->n_routes + nm > env->max_groups || !intact(g, lg, i, m[nm - 1] + 1, -1, -1)) return;
    const range rr = act_range(g, r);
    if (overlap(rr, act_range(g, lg)) || overlaps_x(p, g, rr, x)) return;
    const zn_act *la = &g->acts[lg];
    for (int k = 0; k < nm; k++)
        if (!vkops_moe_route_takes(env->o, g->nodes[m[k]].w[0]->type, (uint32_t)g->nodes[m[k]].w[0]->ne[0],
                                   p->fx[x].mode, (uint32_t)la->cols, (uint32_t)n->route.k,
                                   (uint32_t)la->rows))
            return;
    for (int k = 0; k < nm; k++) p->route[m[k]] = i;
    p->route_w[m[0]] = true;
    p->skip[i] = true;
    p->n_routes += nm;
}

/* Nodes i .. i+n-1 as one grouped matmul when vkfuse_matmul_run() found
 * them, their weights lie side by side, the kernel takes groups, none of
 * them is folded elsewhere or folds a residual, and a group block is
 * free; returns n, or 1 to run node i alone. */
static int group_size(const vkfuse *p, const vkfuse_env *env, const zn_graph *g, int i) {
    int n = vkfuse_matmul_run(g, i);
    if (n < 2 || env->no_fusion || p->n_groups + p->n_tails + p->n_routes >= env->max_groups) return 1;
    uint32_t rows = 0;
    for (int k = 0; k < n; k++) {
        const zn_node *b = &g->nodes[i + k];
        if (p->skip[i + k] || p->res_add[i + k] >= 0 || !env->follows(env->ctx, k ? b[-1].w[0] : NULL, b->w[0])) {
            n = k;
            break;
        }
        rows += (uint32_t)b->w[0]->ne[1];
    }
    if (n < 2) return 1;
    /* one matmul of the stacked rows: its kernel must take the group (and
     * the x mode every member reads) */
    const zn_node *a = &g->nodes[i];
    return takes(env, g, a, rows, p->fx[a->src[0]].mode, true) ? n : 1;
}

/* CONV1D i of a one-token step or a batched decode step, the only reader
 * of a matmul's output that folds no residual: the matmul's group stores
 * the conv's output instead (one conv per group; a matmul alone runs as a
 * group of one, if its kernel takes groups and a block is free), on the
 * mat-vec (whose epilogue is group_store's for every token). The conv's
 * output must not overlap the matmul's x, which other workgroups still
 * read. */
static void plan_conv(vkfuse *p, const vkfuse_env *env, const zn_graph *g, int i) {
    const zn_node *n = &g->nodes[i];
    if (env->no_fusion || env->no_conv || (g->n_tokens != 1 && !env->batch) || n->op != ZN_OP_CONV1D) return;
    const int m = producer(p, g, n->src[0], i, ZN_OP_MATMUL);
    if (m < 0 || p->res_add[m] >= 0) return;
    const zn_node *mn = &g->nodes[m];
    const vkfuse_x *f = &p->fx[mn->src[0]];
    if (overlaps_x(p, g, act_range(g, n->dst), mn->src[0])) return;
    int gs = 0; /* the first node of m's group (m itself when alone) */
    while (gs + p->group[gs] <= m) gs += p->group[gs];
    uint32_t rows = 0;
    for (int k = 0; k < p->group[gs]; k++) rows += (uint32_t)g->nodes[gs + k].w[0]->ne[1];
    if (vkops_mm_kernel(env->o, mn->w[0]->type, (uint32_t)g->n_tokens, rows, false) != VKMM_MATVEC) return;
    if (p->group[gs] > 1) {
        for (int k = 0; k < p->group[gs]; k++)
            if (p->conv[gs + k] >= 0) return;
    } else if (p->n_groups + p->n_tails + p->n_routes + p->n_solo >= env->max_groups ||
               !env->follows(env->ctx, NULL, mn->w[0]) ||
               !takes(env, g, mn, (uint32_t)mn->w[0]->ne[1], f->mode, true)) {
        return;
    } else {
        p->n_solo++;
    }
    p->conv[m] = i;
    p->skip[i] = true;
}

void vkfuse_plan(vkfuse *p, const vkfuse_env *env, const zn_graph *g) {
    for (int a = 0; a < g->n_acts; a++) {
        p->last_use[a] = -1;
        p->fx[a] = (vkfuse_x){.mode = VKX_PLAIN, .gn_node = -1};
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < ZN_NODE_SRC; j++)
            if (g->nodes[i].src[j] >= 0) p->last_use[g->nodes[i].src[j]] = i;
    p->last_use[g->logits] = g->n_nodes; /* read after the run */
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        p->skip[i] = !env->no_fusion && fusable(p, env, g, i);
        if (!p->skip[i]) continue;
        vkfuse_x *f = &p->fx[n->dst];
        f->src = n->src[0];
        if (n->op == ZN_OP_RMSNORM) f->mode = VKX_RMSNORM, f->w = n->w[0], f->eps = n->norm.eps;
        else if (n->op == ZN_OP_SIGMOID_MUL) f->mode = VKX_SIGMUL, f->aux = n->src[1];
        else if (n->src[1] >= 0) f->mode = VKX_SWIGLU, f->aux = n->src[1];
        else f->mode = VKX_SWIGLU, f->aux = n->src[0], f->aux_off = g->acts[n->dst].cols;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        p->rope_norm[i] = p->rope_kv[i] = p->res_add[i] = p->rope_attn[i] = p->attn_rq[i] = p->attn_rk[i] =
            p->attn_qcopy[i] = p->copy_attn[i] = -1;
        if (n->op == ZN_OP_MATMUL) plan_res_add(p, env, g, i);
        if (n->op == ZN_OP_ROPE && !env->no_fusion) plan_rope(p, g, i, env->no_rope_kv);
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == ZN_OP_ATTN) plan_attn_rope(p, env, g, i);
    for (int i = 0; i < g->n_nodes; i++) plan_gnorm(p, env, g, i);
    /* last first: the ADD ending a layer claims the whole tail before the
     * ADD inside it could claim the sum alone */
    for (int i = g->n_nodes - 1; i >= 0; i--) plan_tail(p, env, g, i);
    p->n_tails = 0;
    for (int i = 0; i < g->n_nodes; i++) p->moe_tail[i] = -1;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == ZN_OP_ADD && !p->skip[i]) plan_moe_tail(p, env, g, i);
    p->n_routes = 0;
    for (int i = 0; i < g->n_nodes; i++) p->route[i] = -1, p->route_w[i] = false;
    for (int i = 0; i < g->n_nodes; i++) plan_route(p, env, g, i);
    /* groups last, in recording order: they need the skips and residual
     * folds of every node they span */
    p->n_groups = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        p->group[i] = 1;
        if (p->skip[i]) continue;
        const int n = group_size(p, env, g, i);
        p->group[i] = n;
        if (n > 1) p->n_groups++;
        for (int k = 1; k < n; k++) p->group[i + k] = 1;
        i += n - 1;
    }
    /* convs after the groups they may land in */
    p->n_solo = 0;
    for (int i = 0; i < g->n_nodes; i++) p->conv[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) plan_conv(p, env, g, i);
}
