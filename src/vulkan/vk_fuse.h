/* The Vulkan backend's fusion planner: which graph nodes run inside
 * another node's dispatch, decided once per recorded step from the graph,
 * the kernel each matmul takes (vk_ops.h) and where the weights lie. It
 * only decides (no device, no allocation per plan); backend_vulkan.c
 * records what it decided:
 *
 *  - an RMS norm over whole rows (with a weight), a SwiGLU (of two
 *    inputs, or of one: gate and up halves of each row), or a sigmoid gate
 *    per value (SIGMOID_MUL of two inputs of one shape),
 *    computed by each matmul reading it as it loads x (vkop_mm.xmode):
 *    when every reader is a matmul on a kernel that takes that x mode and
 *    the producer's inputs are still intact when they run;
 *  - a ROPE with the per-head RMS norm that produced its input and the
 *    KV store after it (one dispatch for the three);
 *  - the ropes of a layer's q and K (with their norms and the KV store),
 *    taken in by the attention after them (vk_attn.h vkop_attn.rp) in the
 *    steps where it can (the recorder decides per sequence: one token),
 *    reading q where a COPY_COLS gathered its heads from (qwen35);
 *  - a matmul whose only reader is the next node, an ADD of a residual of
 *    its shape: the matmul stores the sum;
 *  - up to ZN_VK_GROUP_MAX matmuls of one input whose weights lie one after
 *    another in memory: one grouped mat-vec (or GEMM);
 *  - a MoE block's tail, computed by the residual ADD that ends the layer:
 *    the experts' weighted sum (MOE_SUM) and, with a shared expert, its
 *    sigmoid gate (SIGMOID_MUL) and the ADD of the two; each folded when
 *    its inputs are still intact at the final ADD;
 *  - that tail, computed by the experts' down mat-vec right before it
 *    instead (vkop_mm.tail), when every node in between is folded into
 *    the tail and the kernel takes it (vkops_moe_tail_takes);
 *  - in a one-token step or a batched decode step, a CONV1D computed by
 *    the grouped mat-vec that produced its input (vkop_group.conv; alone:
 *    a group of one);
 *  - an RMS norm by groups (with a weight) read only by a SwiGLU as its up,
 *    the SwiGLU folded into a matmul: the matmul norms the groups too
 *    (Qwen3.5's gated norm; vkops_gnorm_takes);
 *  - a MOE_ROUTE computed by the experts' matmuls that read it first
 *    (vkop_mm.route: gate and up, or gate_up), the first of them storing
 *    it for the later readers. */
#ifndef ZINC_VK_FUSE_H
#define ZINC_VK_FUSE_H

#include <stdbool.h>

#include "graph.h"
#include "vk_mm.h"

/* How a matmul reads an activation whose producer was folded into it. */
typedef struct vkfuse_x {
    int mode;                     /* vkop_mm.xmode: VKX_PLAIN (not fused), VKX_RMSNORM, VKX_SWIGLU, VKX_SIGMUL */
    int src, aux;                 /* the producer's inputs (aux: SwiGLU's "up" activation, SIGMOID_MUL's gate) */
    int aux_off;                  /* a SwiGLU of one input (gate and up halves of each row of src):
                                     up's first column; aux is src, and x's rows are src's */
    const gguf_tensor *w;         /* RMS norm weight */
    float eps;                    /* the RMS norm's or the gated norm's */
    /* a SwiGLU whose aux (up) an RMS norm by groups made, folded too
     * (vkop_mm.gn_w): aux is then the norm's input; -1: none */
    int gn_node;
} vkfuse_x;

/* The nodes a residual ADD (x + t) computes besides itself: t the ADD
 * `mid` of the MOE_SUM `sum`'s output and the SIGMOID_MUL `gate`'s, or t the
 * MOE_SUM's output itself (mid, gate -1). sum -1: not folded (mid's other
 * operand is read as it is). All -1: a plain ADD. */
typedef struct vkfuse_tail {
    int sum, gate, mid;
} vkfuse_tail;

/* What the planner asks of the backend besides the graph. */
typedef struct vkfuse_env {
    const vkops *o;               /* the kernel each matmul takes */
    bool no_fusion;               /* every node on its own */
    bool no_rope_kv;              /* no KV store into the rope (rope.comp writes f16 caches only) */
    bool no_attn_rope;            /* no ropes into the attention (tuning attn_rope off) */
    bool no_conv;                 /* no conv into the projection's mat-vec (tuning mv_conv off) */
    bool batch;                   /* a batched decode step (one token per sequence, rows in sequence
                                     order, states through the sequence tables) */
    int max_groups;               /* grouped matmuls one plan may hold (their blocks) */
    /* Does weight b lie in one piece right after weight a (a NULL: is b in
     * one piece)? Grouped matmuls read such weights as one matrix. */
    bool (*follows)(const void *ctx, const gguf_tensor *a, const gguf_tensor *b);
    const void *ctx;
} vkfuse_env;

/* A plan, sized once for the largest graph (vkfuse_init). */
typedef struct vkfuse {
    int cap_nodes, cap_acts;
    int *last_use;                /* [cap_acts]: last node reading each activation (n_nodes: the logits) */
    bool *skip;                   /* [cap_nodes]: node folded into another (not recorded itself) */
    int *rope_norm, *rope_kv;     /* [cap_nodes]: per ROPE node, the fused head norm / KV store node (-1: none) */
    int *rope_attn;               /* [cap_nodes]: per ROPE node, the ATTN that may take it in (-1: none) */
    int *attn_rq, *attn_rk;       /* [cap_nodes]: per ATTN node, the ROPE nodes of q and K it may take in */
    int *attn_qcopy, *copy_attn;  /* [cap_nodes]: per ATTN node, the COPY_COLS that gathered its q heads from a
                                     wider projection, read there instead (-1: none); per COPY_COLS, that ATTN */
    int *res_add;                 /* [cap_nodes]: per MATMUL node, the residual ADD folded into it (-1: none) */
    int *group;                   /* [cap_nodes]: matmuls from this node on that run as one (1: alone) */
    vkfuse_tail *tail;            /* [cap_nodes]: per ADD node, the MoE tail it computes */
    int *moe_tail;                /* [cap_nodes]: per MOE_MATMUL node, the ADD whose tail it computes instead
                                     (the ADD skipped; -1: none) */
    int n_groups;                 /* nodes with group > 1 */
    int n_tails;                  /* MOE_MATMUL nodes with a tail: a group block each, too */
    int *conv;                    /* [cap_nodes]: per MATMUL node, the CONV1D it computes (skipped; -1: none) */
    int n_solo;                   /* such matmuls outside groups: a group block each */
    int *route;                   /* [cap_nodes]: per MOE_MATMUL node, the MOE_ROUTE it computes (skipped; -1) */
    bool *route_w;                /* [cap_nodes]: ... and stores */
    int n_routes;                 /* MOE_MATMUL nodes with a route: a group block each */
    vkfuse_x *fx;                 /* [cap_acts] */
} vkfuse;

zn_status vkfuse_init(vkfuse *p, int cap_nodes, int cap_acts, zn_err *err);
void vkfuse_free(vkfuse *p);

/* The plan of g (n_nodes <= cap_nodes, n_acts <= cap_acts). */
void vkfuse_plan(vkfuse *p, const vkfuse_env *env, const zn_graph *g);

/* Nodes i .. i+n-1 (n >= 2) are matmuls of one input that can run as one
 * grouped matmul when their weights sit one after another in memory: same
 * type, row length and bias order. Returns n (1: no group). The upload
 * places such weights side by side. */
int vkfuse_matmul_run(const zn_graph *g, int i);

#endif
