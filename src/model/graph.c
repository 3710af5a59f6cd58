/* Graph construction, activation planning and the op helpers builders use. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16 /* floats: 64-byte aligned activations */

typedef struct free_blk {
    size_t off, size;
} free_blk;

typedef struct plan {
    int *first, *last;   /* per activation: defining node, last reading node */
    free_blk *free;      /* sorted by offset, below top */
    int n_free;
    size_t top, peak;
    bool overflow;
    int32_t *dummy_tokens; /* for sizing builds at init */
} plan;

static const graph_builder builders[ZN_ARCH_COUNT] = {
    [ZN_ARCH_LLAMA] = graph_build_llama,
    [ZN_ARCH_QWEN2] = graph_build_llama,
    [ZN_ARCH_QWEN3] = graph_build_llama,
    [ZN_ARCH_QWEN3MOE] = graph_build_llama,
    [ZN_ARCH_QWEN35] = graph_build_llama,
    [ZN_ARCH_QWEN35MOE] = graph_build_llama,
};

static const char *const op_names[ZN_OP_COUNT] = {
    [ZN_OP_EMBED] = "embed", [ZN_OP_RMSNORM] = "rmsnorm", [ZN_OP_MATMUL] = "matmul",
    [ZN_OP_ROPE] = "rope", [ZN_OP_KV_STORE] = "kv_store", [ZN_OP_ATTN] = "attn",
    [ZN_OP_ADD] = "add", [ZN_OP_SWIGLU] = "swiglu", [ZN_OP_SIGMOID_MUL] = "sigmoid_mul",
    [ZN_OP_MOE_ROUTE] = "moe_route", [ZN_OP_MOE_MATMUL] = "moe_matmul", [ZN_OP_MOE_SUM] = "moe_sum",
    [ZN_OP_GET_ROWS] = "get_rows", [ZN_OP_GATHER_ROWS] = "gather_rows",
    [ZN_OP_COPY_COLS] = "copy_cols", [ZN_OP_CONV1D] = "conv1d", [ZN_OP_GDN] = "gdn",
};

const char *graph_op_name(zn_op op) {
    return (unsigned)op < ZN_OP_COUNT && op_names[op] ? op_names[op] : "?";
}

bool graph_is_decode(const zn_graph *g) { return g->n_tokens == g->n_seq; }

void graph_node_name(const zn_node *n, char *buf, size_t cap) {
    if (n->layer >= 0) snprintf(buf, cap, "blk.%d.%s", n->layer, n->tag ? n->tag : "?");
    else snprintf(buf, cap, "%s", n->tag ? n->tag : "?");
}

void graph_dump(const zn_graph *g, void *file) {
    FILE *f = file;
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        char name[64];
        graph_node_name(n, name, sizeof name);
        const zn_act *a = &g->acts[n->dst];
        fprintf(f, "%4d %-24s %-12s %d <- %d %d %d  [%d x %d] @%zu\n", i, name, graph_op_name(n->op), n->dst,
                n->src[0], n->src[1], n->src[2], a->rows, a->cols, a->off);
    }
}

/* ---- tables ---- */

int graph_act(zn_graph *g, int rows, int cols) {
    plan *p = g->plan;
    if (g->n_acts >= g->cap_acts) {
        p->overflow = true;
        g->acts[g->cap_acts] = (zn_act){rows, cols, 0};
        return g->cap_acts; /* the spare slot */
    }
    g->acts[g->n_acts] = (zn_act){rows, cols, 0};
    return g->n_acts++;
}

int graph_input(zn_graph *g, int rows, int cols) { return graph_act(g, rows, cols); }

zn_node *graph_node(zn_graph *g, zn_op op, int dst, const char *tag, int layer) {
    plan *p = g->plan;
    zn_node *n;
    if (g->n_nodes >= g->cap_nodes) {
        p->overflow = true;
        n = &g->nodes[g->cap_nodes];
    } else {
        n = &g->nodes[g->n_nodes++];
    }
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dst = dst;
    n->tag = tag;
    n->layer = layer;
    for (int i = 0; i < ZN_NODE_SRC; i++) n->src[i] = -1;
    return n;
}

/* ---- planner: first-fit over a free list, live ranges from the node order ---- */

static size_t act_size(const zn_act *a) {
    size_t n = (size_t)a->rows * (size_t)a->cols;
    return (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

static size_t arena_alloc(plan *p, size_t size) {
    for (int i = 0; i < p->n_free; i++) {
        if (p->free[i].size < size) continue;
        size_t off = p->free[i].off;
        p->free[i].off += size;
        p->free[i].size -= size;
        if (p->free[i].size == 0) {
            memmove(&p->free[i], &p->free[i + 1], sizeof *p->free * (size_t)(p->n_free - i - 1));
            p->n_free--;
        }
        return off;
    }
    size_t off = p->top;
    p->top += size;
    if (p->top > p->peak) p->peak = p->top;
    return off;
}

static void arena_release(plan *p, size_t off, size_t size) {
    int i = 0;
    while (i < p->n_free && p->free[i].off < off) i++;
    memmove(&p->free[i + 1], &p->free[i], sizeof *p->free * (size_t)(p->n_free - i));
    p->free[i] = (free_blk){off, size};
    p->n_free++;
    if (i + 1 < p->n_free && p->free[i].off + p->free[i].size == p->free[i + 1].off) {
        p->free[i].size += p->free[i + 1].size;
        memmove(&p->free[i + 1], &p->free[i + 2], sizeof *p->free * (size_t)(p->n_free - i - 2));
        p->n_free--;
    }
    if (i > 0 && p->free[i - 1].off + p->free[i - 1].size == p->free[i].off) {
        p->free[i - 1].size += p->free[i].size;
        memmove(&p->free[i], &p->free[i + 1], sizeof *p->free * (size_t)(p->n_free - i - 1));
        p->n_free--;
        i--;
    }
    if (p->free[i].off + p->free[i].size == p->top) { /* give the tail back */
        p->top = p->free[i].off;
        p->n_free--;
    }
}

/* A decode step's attention may take in the ropes before it (the Vulkan
 * backend: vk_fuse.h): the ropes' inputs, those of the
 * per-head norms before them (or the projection q was gathered from) and
 * the KV store's V then are read by the attention, so they live until it. */
static void keep_rope_inputs(zn_graph *g, plan *p) {
    if (!graph_is_decode(g)) return;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].op != ZN_OP_ATTN) continue;
        for (int j = i - 1; j >= 0 && j >= i - 16 && g->nodes[j].layer == g->nodes[i].layer; j--) {
            const zn_node *n = &g->nodes[j];
            const bool head_norm = n->op == ZN_OP_RMSNORM && n->norm.group < g->acts[n->dst].cols;
            const int a = n->op == ZN_OP_KV_STORE ? n->src[1] : n->op == ZN_OP_ROPE || head_norm ? n->src[0] : -1;
            if (a < 0) continue;
            if (p->last[a] >= 0 && p->last[a] < i) p->last[a] = i;
            /* q gathered from a wider projection (qwen35's [q | gate] heads):
             * the attention may read it there */
            for (int c = j - 1; c >= 0 && c >= i - 16; c--)
                if (g->nodes[c].dst == a) {
                    const int w = g->nodes[c].src[0];
                    if (g->nodes[c].op == ZN_OP_COPY_COLS && p->last[w] >= 0 && p->last[w] < i) p->last[w] = i;
                    break;
                }
        }
    }
}

static void plan_arena(zn_graph *g) {
    plan *p = g->plan;
    for (int a = 0; a < g->n_acts; a++) p->first[a] = p->last[a] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        if (p->first[n->dst] < 0) p->first[n->dst] = i;
        p->last[n->dst] = i;
        for (int s = 0; s < ZN_NODE_SRC; s++)
            if (n->src[s] >= 0) p->last[n->src[s]] = i;
    }
    keep_rope_inputs(g, p);
    p->last[g->logits] = g->n_nodes; /* read after the run */
    p->n_free = 0;
    p->top = p->peak = 0;
    /* inputs (read before or where they are first written: graph_input,
     * also when an in-place op rewrites one) live from the start */
    for (int i = 0; i < g->n_nodes; i++)
        for (int s = 0; s < ZN_NODE_SRC; s++) {
            const int a = g->nodes[i].src[s];
            if (a < 0 || (p->first[a] >= 0 && p->first[a] < i) || p->first[a] == -2) continue;
            g->acts[a].off = arena_alloc(p, act_size(&g->acts[a]));
            p->first[a] = -2; /* placed */
        }
    /* Activations dying at node i are released only after node i +
     * ZN_GRAPH_FOLD's dst is placed: an op never writes over an input it is
     * still reading, nor over one of the ZN_GRAPH_FOLD nodes before it, so a
     * backend may fold the next nodes into a node. The Vulkan backend
     * stores a matmul + residual ADD in one go, with the SwiGLU before the
     * matmul folded into its x (3 nodes); runs a MoE layer's tail (the
     * shared expert's sigmoid gate, the ADD to the experts' sum, the
     * residual ADD: 3 nodes) in one dispatch that reads the gate until the
     * last; and, while graph_moe built the shared expert after the routed
     * ones, its grouped gate + up in the stage of the experts' down matmul,
     * whose x (the SwiGLU folded into it) the up output must not overwrite
     * (4 nodes after the SwiGLU). A 35B-A3B-shape decode step: 59 -> 48
     * barriers over 4 layers, arena +23 %. With the shared expert first
     * (c003d32) that last case is gone: 3 gives the same dispatches and
     * barriers on the 35B-A3B synth and the qwen35moe fixtures (lavapipe),
     * but is not yet checked on every fixture and shape. 5: the experts'
     * down matmul computes the layer's tail, whose residual ADD (its
     * output) comes 5 nodes after the SwiGLU whose inputs the down reads
     * (SwiGLU, down, sum, gate, ADD, ADD); arena +3.5 % for the 35B-A3B
     * shape at 512 tokens, +12.5 % for the 8B's. */
    for (int i = 0; i < g->n_nodes + ZN_GRAPH_FOLD; i++) {
        if (i < g->n_nodes) {
            int d = g->nodes[i].dst;
            if (p->first[d] == i) g->acts[d].off = arena_alloc(p, act_size(&g->acts[d]));
        }
        if (i < ZN_GRAPH_FOLD) continue;
        const zn_node *pn = &g->nodes[i - ZN_GRAPH_FOLD];
        for (int s = -1; s < ZN_NODE_SRC; s++) {
            int a = s < 0 ? pn->dst : pn->src[s];
            if (a < 0 || p->last[a] != i - ZN_GRAPH_FOLD) continue;
            p->last[a] = -2; /* released once even when read twice */
            arena_release(p, g->acts[a].off, act_size(&g->acts[a]));
        }
    }
}

/* ---- lifecycle ---- */

zn_status graph_init_empty(zn_graph *g, const zn_model *m, int max_tokens, int cap_nodes, int cap_acts,
                           zn_err *err) {
    memset(g, 0, sizeof *g);
    if (max_tokens < 1 || max_tokens > ZN_MAX_BATCH)
        return zn_errf(err, ZN_ERR_ARG, "graph: max tokens per step %d out of range [1, %d]", max_tokens,
                       ZN_MAX_BATCH);
    if (cap_nodes < 1 || cap_nodes > ZN_MAX_GRAPH_NODES || cap_acts < 1 || cap_acts > ZN_MAX_GRAPH_NODES)
        return zn_errf(err, ZN_ERR_ARG, "graph: capacity %d nodes / %d activations out of range", cap_nodes,
                       cap_acts);
    g->model = m;
    g->max_tokens = max_tokens;
    g->cap_nodes = cap_nodes;
    g->cap_acts = cap_acts;
    g->nodes = calloc((size_t)g->cap_nodes + 1, sizeof *g->nodes);
    g->acts = calloc((size_t)g->cap_acts + 1, sizeof *g->acts);
    g->max_seqs = max_tokens < ZN_MAX_STEP_SEQS ? max_tokens : ZN_MAX_STEP_SEQS;
    g->seqs = calloc((size_t)g->max_seqs, sizeof *g->seqs);
    g->row_seq = calloc((size_t)max_tokens, sizeof *g->row_seq);
    g->row_pos = calloc((size_t)max_tokens, sizeof *g->row_pos);
    g->out_rows = calloc((size_t)max_tokens, sizeof *g->out_rows);
    plan *p = g->plan = calloc(1, sizeof *p);
    if (p) {
        p->first = calloc((size_t)g->cap_acts + 1, sizeof *p->first);
        p->last = calloc((size_t)g->cap_acts + 1, sizeof *p->last);
        p->free = calloc((size_t)g->cap_acts + 2, sizeof *p->free);
        p->dummy_tokens = calloc((size_t)max_tokens, sizeof *p->dummy_tokens);
    }
    if (!g->nodes || !g->acts || !g->seqs || !g->row_seq || !g->row_pos || !g->out_rows || !p || !p->first ||
        !p->last || !p->free || !p->dummy_tokens) {
        graph_free(g);
        return zn_errf(err, ZN_ERR_NOMEM, "graph: out of memory");
    }
    g->logits = -1;
    return ZN_OK;
}

zn_status graph_finish(zn_graph *g, int out, zn_err *err) {
    plan *p = g->plan;
    if (p->overflow || out < 0 || out >= g->n_acts)
        return zn_errf(err, ZN_ERR_ARG, "graph: overflow or bad output activation %d", out);
    g->logits = out;
    plan_arena(g);
    g->arena_floats = p->peak;
    return ZN_OK;
}

zn_status graph_init(zn_graph *g, const zn_model *m, int max_tokens, zn_err *err) {
    if (!builders[m->arch]) {
        memset(g, 0, sizeof *g);
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "%s: no forward pass for architecture %s yet", m->path,
                       model_arch_name(m->arch));
    }
    int cap = 64 * m->hp.n_layer + 64;
    zn_status st = graph_init_empty(g, m, max_tokens, cap < ZN_MAX_GRAPH_NODES ? cap : ZN_MAX_GRAPH_NODES,
                                    cap < ZN_MAX_GRAPH_NODES ? cap : ZN_MAX_GRAPH_NODES, err);
    if (st != ZN_OK) return st;
    plan *p = g->plan;
    /* size the arena for the largest steps of every kind: all rows' logits,
     * the last row's, and max_tokens - 1 rows' of several sequences (shapes
     * grow with the rows kept, so that is the largest such step), and a
     * decode step of the most sequences (keep_rope_inputs keeps more alive) */
    const int sizes[5][2] = {{max_tokens, 1}, {max_tokens, 0}, {1, 0}, {max_tokens, 2}, {g->max_seqs, 3}};
    size_t arena = 0;
    g->arena_floats = (size_t)-1;
    for (int i = 0; i < 5; i++) {
        if (sizes[i][1] == 3) {
            zn_step_seq one[ZN_MAX_STEP_SEQS];
            for (int q = 0; q < g->max_seqs; q++) one[q] = (zn_step_seq){.n_rows = 1, .out = ZN_OUT_ALL};
            st = graph_build_step(g, p->dummy_tokens, one, g->max_seqs, err);
        } else if (sizes[i][1] == 2) {
            if (max_tokens < 2) continue;
            zn_step_seq two[2] = {{.n_rows = max_tokens - 1, .out = ZN_OUT_ALL}, {.n_rows = 1, .out = ZN_OUT_NONE}};
            st = graph_build_step(g, p->dummy_tokens, two, 2, err);
        } else {
            st = graph_build(g, p->dummy_tokens, sizes[i][0], 0, sizes[i][1], err);
        }
        if (st != ZN_OK) {
            graph_free(g);
            return st;
        }
        if (p->peak > arena) arena = p->peak;
    }
    g->arena_floats = arena;
    g->n_nodes = g->n_acts = 0;
    return ZN_OK;
}

void graph_free(zn_graph *g) {
    plan *p = g->plan;
    if (p) {
        free(p->first);
        free(p->last);
        free(p->free);
        free(p->dummy_tokens);
        free(p);
    }
    free(g->nodes);
    free(g->acts);
    free(g->seqs);
    free(g->row_seq);
    free(g->row_pos);
    free(g->out_rows);
    memset(g, 0, sizeof *g);
}

/* Row tables and logits rows from g->seqs (validated). */
static void fill_rows(zn_graph *g) {
    int r = 0, o = 0;
    for (int i = 0; i < g->n_seq; i++) {
        zn_step_seq *q = &g->seqs[i];
        q->row0 = r;
        q->out0 = q->out == ZN_OUT_NONE ? -1 : o;
        for (int j = 0; j < q->n_rows; j++, r++) {
            g->row_seq[r] = i;
            g->row_pos[r] = q->n_past + j;
            if (q->out == ZN_OUT_ALL || (q->out == ZN_OUT_LAST && j == q->n_rows - 1)) g->out_rows[o++] = r;
        }
    }
    g->n_tokens = r;
    if (o == 0) g->out_rows[o++] = r - 1; /* a graph always ends in logits */
    g->n_out = o;
    g->all_logits = o == r;
    g->n_past = g->seqs[0].n_past;
}

static zn_status build_nodes(zn_graph *g, zn_err *err) {
    const zn_model *m = g->model;
    plan *p = g->plan;
    for (int i = 0; i < g->n_tokens; i++)
        if (g->tokens[i] < 0 || g->tokens[i] >= m->hp.n_vocab)
            return zn_errf(err, ZN_ERR_ARG, "token id %d out of range [0, %d)", g->tokens[i], m->hp.n_vocab);
    g->n_nodes = g->n_acts = 0;
    g->logits = -1;
    p->overflow = false;
    zn_status st = builders[m->arch](g, err);
    if (st != ZN_OK) return st;
    if (p->overflow || g->logits < 0)
        return zn_errf(err, ZN_ERR_NOMEM, "graph: %s graph exceeds %d nodes / %d activations",
                       model_arch_name(m->arch), g->cap_nodes, g->cap_acts);
    plan_arena(g);
    if (p->peak > g->arena_floats)
        return zn_errf(err, ZN_ERR_NOMEM, "graph: step needs %zu arena floats, %zu planned", p->peak,
                       g->arena_floats);
    return ZN_OK;
}

zn_status graph_build_step(zn_graph *g, const int32_t *tokens, zn_step_seq *seqs, int n_seq, zn_err *err) {
    if (n_seq < 1 || n_seq > g->max_seqs)
        return zn_errf(err, ZN_ERR_ARG, "graph: %d sequences in one step (max %d)", n_seq, g->max_seqs);
    int total = 0;
    for (int i = 0; i < n_seq; i++) {
        const zn_step_seq *q = &seqs[i];
        if (q->n_rows < 1 || q->n_rows > g->max_tokens - total)
            return zn_errf(err, ZN_ERR_ARG, "graph: %d + %d tokens in one step (max %d)", total, q->n_rows,
                           g->max_tokens);
        total += q->n_rows;
        if (q->n_past < 0 || q->n_past > ZN_MAX_CTX - q->n_rows)
            return zn_errf(err, ZN_ERR_ARG, "graph: position %d out of range", q->n_past);
        if (q->out != ZN_OUT_NONE && q->out != ZN_OUT_LAST && q->out != ZN_OUT_ALL)
            return zn_errf(err, ZN_ERR_ARG, "graph: output mode %d", q->out);
    }
    memcpy(g->seqs, seqs, sizeof *seqs * (size_t)n_seq);
    g->n_seq = n_seq;
    g->tokens = tokens;
    fill_rows(g);
    for (int i = 0; i < n_seq; i++) {
        seqs[i].row0 = g->seqs[i].row0;
        seqs[i].out0 = g->seqs[i].out0;
    }
    return build_nodes(g, err);
}

zn_status graph_build(zn_graph *g, const int32_t *tokens, int n_tokens, int n_past, bool all_logits, zn_err *err) {
    if (n_tokens < 1 || n_tokens > g->max_tokens)
        return zn_errf(err, ZN_ERR_ARG, "graph: %d tokens in one step (max %d)", n_tokens, g->max_tokens);
    zn_step_seq one = {.n_rows = n_tokens, .n_past = n_past, .out = all_logits ? ZN_OUT_ALL : ZN_OUT_LAST};
    return graph_build_step(g, tokens, &one, 1, err);
}

void graph_set_step(zn_graph *g, const int32_t *tokens, int n_tokens, int n_past) {
    g->tokens = tokens;
    g->n_seq = 1;
    g->seqs[0] = (zn_step_seq){.n_rows = n_tokens, .n_past = n_past, .out = g->all_logits ? ZN_OUT_ALL : ZN_OUT_LAST};
    fill_rows(g);
}

zn_status graph_check_step(const zn_graph *g, zn_err *err) {
    if (g->n_seq < 1 || g->n_seq > g->max_seqs || g->n_tokens < 1 || g->n_tokens > g->max_tokens)
        return zn_errf(err, ZN_ERR_ARG, "graph: no step set (%d sequences, %d rows)", g->n_seq, g->n_tokens);
    int r = 0;
    for (int i = 0; i < g->n_seq; i++) {
        const zn_step_seq *q = &g->seqs[i];
        if (q->row0 != r || q->n_rows < 1 || q->n_rows > g->n_tokens - r || q->n_past < 0 ||
            q->n_past > ZN_MAX_CTX - q->n_rows)
            return zn_errf(err, ZN_ERR_ARG, "graph: sequence %d of the step has rows [%d, +%d) at %d", i, q->row0,
                           q->n_rows, q->n_past);
        for (int j = 0; j < q->n_rows; j++)
            if (g->row_seq[r + j] != i || g->row_pos[r + j] != q->n_past + j)
                return zn_errf(err, ZN_ERR_ARG, "graph: row %d's sequence and position disagree with the step", r + j);
        r += q->n_rows;
    }
    if (r != g->n_tokens || g->n_past != g->seqs[0].n_past)
        return zn_errf(err, ZN_ERR_ARG, "graph: the step's sequences hold %d of %d rows", r, g->n_tokens);
    if (g->n_out < 1 || g->n_out > g->n_tokens)
        return zn_errf(err, ZN_ERR_ARG, "graph: %d rows of logits in a step of %d", g->n_out, g->n_tokens);
    for (int i = 0; i < g->n_out; i++)
        if (g->out_rows[i] < (i ? g->out_rows[i - 1] + 1 : 0) || g->out_rows[i] >= g->n_tokens)
            return zn_errf(err, ZN_ERR_ARG, "graph: logits row %d of the step out of order", g->out_rows[i]);
    return ZN_OK;
}

/* ---- helpers for builders ---- */

int graph_embed(zn_graph *g) {
    int y = graph_act(g, g->n_tokens, g->model->hp.n_embd);
    zn_node *n = graph_node(g, ZN_OP_EMBED, y, "token_embd", -1);
    n->w[0] = g->model->tok_embd;
    return y;
}

int graph_rmsnorm(zn_graph *g, int x, const gguf_tensor *w, int group, int layer, const char *tag) {
    int y = graph_act(g, g->acts[x].rows, g->acts[x].cols);
    zn_node *n = graph_node(g, ZN_OP_RMSNORM, y, tag, layer);
    n->src[0] = x;
    n->w[0] = w;
    n->norm = (zn_norm_params){.group = group, .eps = g->model->hp.rms_eps};
    return y;
}

int graph_linear(zn_graph *g, int x, const zn_linear *lin, bool bias_first, int layer, const char *tag) {
    int y = graph_act(g, g->acts[x].rows, (int)lin->w->ne[1]);
    zn_node *n = graph_node(g, ZN_OP_MATMUL, y, tag, layer);
    n->src[0] = x;
    n->w[0] = lin->w;
    n->w[1] = lin->b;
    n->w[2] = lin->s;
    n->matmul.bias_first = bias_first;
    return y;
}

static int binary(zn_graph *g, zn_op op, int a, int b, int cols, int layer, const char *tag) {
    int y = graph_act(g, g->acts[a].rows, cols);
    zn_node *n = graph_node(g, op, y, tag, layer);
    n->src[0] = a;
    n->src[1] = b;
    return y;
}

int graph_add(zn_graph *g, int a, int b, int layer, const char *tag) {
    return binary(g, ZN_OP_ADD, a, b, g->acts[a].cols, layer, tag);
}

int graph_swiglu(zn_graph *g, int gate, int up, int layer, const char *tag) {
    return binary(g, ZN_OP_SWIGLU, gate, up, up >= 0 ? g->acts[gate].cols : g->acts[gate].cols / 2, layer, tag);
}

int graph_sigmoid_mul(zn_graph *g, int x, int gate, int layer, const char *tag) {
    return binary(g, ZN_OP_SIGMOID_MUL, x, gate, g->acts[x].cols, layer, tag);
}

void graph_rope(zn_graph *g, int x, int head_dim, int layer, const char *tag) {
    const zn_hparams *hp = &g->model->hp;
    zn_node *n = graph_node(g, ZN_OP_ROPE, x, tag, layer);
    n->src[0] = x;
    n->w[0] = g->model->rope_freqs;
    n->rope = (zn_rope_params){.head_dim = head_dim, .n_rot = hp->n_rot, .mode = hp->rope_mode,
                               .freq_base = hp->rope_freq_base, .freq_scale = hp->rope_freq_scale};
    for (int i = 0; i < 4; i++) n->rope.sections[i] = hp->rope_sections[i];
}

int graph_attention(zn_graph *g, int q, int k, int v, int layer) {
    const zn_hparams *hp = &g->model->hp;
    zn_node *n = graph_node(g, ZN_OP_KV_STORE, k, "kv_store", layer);
    n->src[0] = k;
    n->src[1] = v;
    int y = graph_act(g, g->acts[q].rows, hp->n_head * hp->head_dim_v);
    n = graph_node(g, ZN_OP_ATTN, y, "attn", layer);
    n->src[0] = q;
    n->attn = (zn_attn_params){.n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .hd_k = hp->head_dim_k,
                               .hd_v = hp->head_dim_v, .scale = hp->attn_scale};
    return y;
}

int graph_get_rows(zn_graph *g, int x, int first, int count, int layer, const char *tag) {
    int y = graph_act(g, count, g->acts[x].cols);
    zn_node *n = graph_node(g, ZN_OP_GET_ROWS, y, tag, layer);
    n->src[0] = x;
    n->get_rows.first = first;
    return y;
}

int graph_out_rows(zn_graph *g, int x, int layer, const char *tag) {
    if (g->n_out == g->acts[x].rows) return x;
    if (g->out_rows[g->n_out - 1] - g->out_rows[0] == g->n_out - 1)
        return graph_get_rows(g, x, g->out_rows[0], g->n_out, layer, tag);
    int y = graph_act(g, g->n_out, g->acts[x].cols);
    zn_node *n = graph_node(g, ZN_OP_GATHER_ROWS, y, tag, layer);
    n->src[0] = x;
    return y;
}

static zn_linear unscaled(zn_linear l) {
    l.s = NULL;
    return l;
}

int graph_ffn(zn_graph *g, int x, const zn_layer *L, bool use_scales, int layer) {
    zn_linear gate = L->ffn_gate, up = L->ffn_up, down = L->ffn_down;
    if (!use_scales) gate = unscaled(gate), up = unscaled(up), down = unscaled(down);
    int a = graph_linear(g, x, &gate, true, layer, "ffn_gate");
    int b = graph_linear(g, x, &up, true, layer, "ffn_up");
    int h = graph_swiglu(g, a, b, layer, "ffn_swiglu");
    return graph_linear(g, h, &down, true, layer, "ffn_down");
}

static int moe_matmul(zn_graph *g, int x, int route, const zn_linear *lin, int layer, const char *tag) {
    const int k = g->model->hp.n_expert_used;
    int y = graph_act(g, g->acts[route].rows * k, (int)lin->w->ne[1]);
    zn_node *n = graph_node(g, ZN_OP_MOE_MATMUL, y, tag, layer);
    n->src[0] = x;
    n->src[1] = route;
    n->w[0] = lin->w;
    n->w[2] = lin->s;
    return y;
}

int graph_moe(zn_graph *g, int x, const zn_layer *L, int layer) {
    const zn_hparams *hp = &g->model->hp;
    const int k = hp->n_expert_used;
    int logits = graph_linear(g, x, &L->ffn_gate_inp, false, layer, "ffn_moe_logits");
    /* the shared expert's gate reads x too: next to the router, a backend can
     * run both in one pass over x (Vulkan: one grouped mat-vec in decode) */
    const int sh_gate = L->ffn_gate_inp_shexp.w ? graph_linear(g, x, &L->ffn_gate_inp_shexp, false, layer, "ffn_gate_inp_shexp") : -1;
    /* the shared expert before the routed ones: its gate+up beside the
     * router and its down beside the routing, instead of both after the
     * experts (a Vulkan decode step: one barrier fewer per layer) */
    int sh = -1;
    if (L->ffn_gate_inp_shexp.w) {
        int a = graph_linear(g, x, &L->ffn_gate_shexp, true, layer, "ffn_gate_shexp");
        int b = graph_linear(g, x, &L->ffn_up_shexp, true, layer, "ffn_up_shexp");
        int h = graph_swiglu(g, a, b, layer, "ffn_swiglu_shexp");
        sh = graph_linear(g, h, &L->ffn_down_shexp, true, layer, "ffn_down_shexp");
    }
    int route = graph_act(g, g->acts[x].rows, 2 * k);
    zn_node *n = graph_node(g, ZN_OP_MOE_ROUTE, route, "ffn_moe_route", layer);
    n->src[0] = logits;
    n->route = (zn_route_params){.k = k, .normalise = 1, .w_scale = hp->expert_weights_scale};
    int act;
    if (L->ffn_gate_up_exps.w) {
        int gu = moe_matmul(g, x, route, &L->ffn_gate_up_exps, layer, "ffn_moe_gate_up");
        act = graph_swiglu(g, gu, -1, layer, "ffn_moe_swiglu");
    } else {
        int gate = moe_matmul(g, x, route, &L->ffn_gate_exps, layer, "ffn_moe_gate");
        int up = moe_matmul(g, x, route, &L->ffn_up_exps, layer, "ffn_moe_up");
        act = graph_swiglu(g, gate, up, layer, "ffn_moe_swiglu");
    }
    int down = moe_matmul(g, act, route, &L->ffn_down_exps, layer, "ffn_moe_down");
    int y = graph_act(g, g->acts[x].rows, hp->n_embd);
    n = graph_node(g, ZN_OP_MOE_SUM, y, "ffn_moe_out", layer);
    n->src[0] = down;
    n->src[1] = route;
    if (sh >= 0) {
        sh = graph_sigmoid_mul(g, sh, sh_gate, layer, "ffn_shexp_gated");
        y = graph_add(g, y, sh, layer, "ffn_out");
    }
    return y;
}
