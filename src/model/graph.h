/* The forward pass as a list of backend-neutral ops.
 *
 * graph_build_step() describes one evaluation step -- the next tokens of
 * one or more sequences, each already holding some tokens -- as nodes
 * executed in order (graph_build(): the one-sequence case). Every backend
 * implements the ops below with exactly these semantics; the CPU backend is
 * the reference the others are tested against.
 *
 * Activations are f32, row-major [rows][cols], contiguous, one row per token
 * (or per token x expert slot for MoE). They live at g->acts[id].off floats
 * into one scratch arena whose size graph_init() computes for the largest
 * step (liveness-based reuse: two activations share memory when their live
 * ranges do not overlap). dst may equal src only where an op says so.
 *
 * Weights are gguf_tensor records of the model (any type quant.h computes);
 * "f32 [n]" means the tensor must be F32 with n elements (the loader checks).
 * Per-sequence state (KV cache, recurrent state) is owned by the backend and
 * addressed by node->layer; a run gets one state per sequence of the step,
 * in the order of g->seqs.
 *
 * Rows and positions: the step's rows are its sequences' tokens, sequence
 * after sequence (g->seqs[i] holds rows [row0, row0 + n_rows)), each
 * sequence's in order. Row r belongs to sequence row_seq[r] and sits at
 * position row_pos[r] = seqs[row_seq[r]].n_past + (r - row0) of it. Ops on
 * rows (norms, matmuls, MoE) do not care which sequence a row is of: the
 * batch is one matrix. Ops with per-sequence state (KV_STORE, ATTN,
 * CONV1D, GDN) use the state of each row's sequence. */
#ifndef ZINC_GRAPH_H
#define ZINC_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "status.h"

typedef enum zn_op {
    /* dst[r] = dequantized row tokens[r] of w[0] (token embedding).
     * dst: [n_tokens][n_embd]. */
    ZN_OP_EMBED,

    /* RMS norm over groups of norm.group elements (group == cols: whole
     * row; group == head_dim: per head, for q/k norm):
     *   y = x / sqrt(mean(x^2) + norm.eps),  then y *= w[0] (f32 [group]) if w[0].
     * src[0] -> dst, same shape; dst == src[0] allowed. */
    ZN_OP_RMSNORM,

    /* dst[r][o] = sum_i W[o][i] * src[0][r][i]      W = w[0], [rows][ne0]
     * then, with s = w[2] (f32 [1]) and b = w[1] (f32 [rows]), each optional:
     *   !matmul.bias_first: y = y * s + b    (llama.cpp build_lora_mm then bias)
     *   matmul.bias_first:  y = (y + b) * s  (llama.cpp build_ffn order)
     * dst: [src rows][W rows]. Backends may quantize src[0] to the weight's
     * vec-dot type first (quant_vec_dot_type), as ggml does. */
    ZN_OP_MATMUL,

    /* Rotary embedding, in place (dst == src[0]), on rows of heads of
     * rope.head_dim; the first rope.n_rot dims of each head rotate, the rest
     * pass through. rope.mode = zn_rope_mode; rope.sections (IMRoPE);
     * rope.freq_base, rope.freq_scale; w[0] = frequency factors
     * (f32 [n_rot/2]) or NULL. For pair i in [0, n_rot/2) at position p:
     *   theta_i = p * freq_scale * freq_base^(-2i/n_rot) / ff[i]
     * (ggml computes base^(-2i/n_rot) as a running product of
     * base^(-2/n_rot); do the same to match it bit for bit.)
     *   NORM:   (x[2i], x[2i+1])        <- rotate by theta_i
     *   NEOX:   (x[i],  x[i + n_rot/2]) <- rotate by theta_i
     *   IMROPE: as NEOX, but with S = sum(sections) and s = i % S, pair i uses
     *           position p when (s%3==0 && s<3*sec[0]) || (s%3==1 && s<3*sec[1])
     *           || (s%3==2 && s<3*sec[2]), else position 0 (text tokens: the
     *           t/h/w positions are all p, the 4th is 0).
     * rotate: (a, b) -> (a cos - b sin, a sin + b cos). */
    ZN_OP_ROPE,

    /* Stores K = src[0] [n_tokens][n_head_kv*head_dim_k] and V = src[1]
     * [n_tokens][n_head_kv*head_dim_v] in the KV cache of attention layer
     * node->layer: row r into sequence row_seq[r]'s cache at position
     * row_pos[r] (f16 cache). It writes no activation: dst is src[0], so the
     * planner keeps K alive. */
    ZN_OP_KV_STORE,

    /* Causal multi-head attention over the KV cache of node->layer (after
     * this step's KV_STORE). src[0] = Q [n_tokens][n_head*hd_k];
     * dst [n_tokens][n_head*hd_v]; attn = {n_head, n_head_kv, hd_k, hd_v,
     * scale (kq)}. Query row r at position p = row_pos[r], head h, uses
     * KV head h / (n_head / n_head_kv) and positions 0..p of the cache of
     * its sequence row_seq[r]:
     *   dst[r][h] = sum_j softmax_j(scale * q.k_j) * v_j. */
    ZN_OP_ATTN,

    /* dst = src[0] + src[1], same shape; dst may alias either. */
    ZN_OP_ADD,

    /* SwiGLU. src[1] >= 0: dst = silu(src[0]) * src[1] (same shape).
     * src[1] < 0: src[0] is [rows][2n] = [gate | up] halves and
     * dst[r][i] = silu(src[0][r][i]) * src[0][r][n + i], dst [rows][n].
     * silu(x) = x / (1 + exp(-x)). */
    ZN_OP_SWIGLU,

    /* dst = src[0] * sigmoid(src[1]). src[1] has the same shape, or one
     * column (one gate per row, broadcast). dst may alias src[0]. */
    ZN_OP_SIGMOID_MUL,

    /* MoE router. src[0] = logits [n_tokens][n_expert]; route.k (experts
     * used), route.normalise, route.w_scale (0 or 1: none).
     * p = softmax(logits row); the k largest p (ties: lower index first) in
     * descending order; w_j = p_j, then if normalise: w_j /= max(sum_j w_j,
     * 6.103515625e-5), then w_j *= w_scale if w_scale is not 0 or 1.
     * dst [n_tokens][2k]: dst[r][j] = expert index (as float), dst[r][k+j] = w_j. */
    ZN_OP_MOE_ROUTE,

    /* Expert matmul. w[0] = experts [n_expert][rows][ne0], w[2] = per-expert
     * output scale (f32 [n_expert]) or NULL; src[1] = MOE_ROUTE output.
     * dst [n_tokens*k][rows]; for token t and slot j with expert e:
     *   x = src[0][t] when src[0] has n_tokens rows, else src[0][t*k + j]
     *   dst[t*k + j] = W[e] . x  (* s[e]). */
    ZN_OP_MOE_MATMUL,

    /* dst[t] = sum_j w_tj * src[0][t*k + j]; src[1] = MOE_ROUTE output,
     * src[0] [n_tokens*k][n], dst [n_tokens][n]. */
    ZN_OP_MOE_SUM,

    /* dst = rows get_rows.first .. first+dst.rows-1 of src[0] (e.g. the
     * last row). */
    ZN_OP_GET_ROWS,

    /* dst[i] = src[0][out_rows[i]] for i < dst.rows = g->n_out: the rows a
     * step wants logits of, when they are not one contiguous run (the last
     * row of each of several sequences). */
    ZN_OP_GATHER_ROWS,

    /* ---- Qwen3.5 (qwen35, qwen35moe) ---- */

    /* Column gather: with copy_cols = {width, stride, off} (block width,
     * source stride between blocks, offset), dst [rows][n * width] with, for
     * block b < n and i < width,
     *   dst[r][b*width + i] = src[0][r][b*stride + off + i].
     * E.g. the query (offset 0) and gate (offset head_dim) halves of
     * qwen35's per-head [query | gate] projection (stride 2*head_dim). */
    ZN_OP_COPY_COLS,

    /* Causal depthwise conv1d + SiLU of recurrent layer node->layer, with its
     * conv state C [ch][K-1] (the last K-1 inputs of each channel, oldest
     * first; zero for a new sequence). src[0] = x [n_tokens][ch]; w[0] =
     * kernel f32 [ch][K] (ssm_conv1d.weight, ne0 = K); dst [n_tokens][ch],
     * dst != src[0]. Per sequence of the step, with its state C and its rows
     * x[0..n-1], xin = C[c][0..K-2] followed by x[0..n-1][c]:
     *   dst[t][c] = silu(sum_{j<K} w[c][j] * xin[t + j])
     * then C[c] = the last K-1 entries of xin (gdn_conv1d_silu). */
    ZN_OP_CONV1D,

    /* Gated DeltaNet of recurrent layer node->layer, with its delta state:
     * per value head h, S_h [d_v][d_k] (S[j][i]; zero for a new sequence).
     * gdn = {h_k (H_k), h_v (H_v), d_k, d_v, eps}.
     * src[0] = CONV1D output [n_tokens][2*H_k*d_k + H_v*d_v], each row
     *          q (H_k heads of d_k) | k (H_k heads of d_k) | v (H_v of d_v);
     * src[1] = alpha [n_tokens][H_v], src[2] = beta logits [n_tokens][H_v];
     * w[0] = ssm_dt.bias f32 [H_v], w[1] = ssm_a f32 [H_v].
     * dst [n_tokens][H_v*d_v]. Per sequence of the step, with its state,
     * its rows t in order; for each value head h,
     * key head hk = h % H_k (tiled, NOT h / (H_v/H_k)):
     *   q, k = head hk of row t's q and k parts, each scaled by
     *          1/sqrt(sum(x^2) + eps)
     *   g = softplus(alpha[t][h] + dt[h]) * a[h]  (softplus(x) = x if x > 20,
     *       else log(1 + exp(x))),   b = sigmoid(beta[t][h])
     *   S *= exp(g);  d[j] = (v[j] - sum_i S[j][i]*k[i]) * b;
     *   S[j][i] += k[i]*d[j];  dst[t][h*d_v + j] = sum_i S[j][i]*q[i] / sqrt(d_k)
     * (gdn_recurrent; heads are independent, tokens are sequential). */
    ZN_OP_GDN,

    ZN_OP_COUNT
} zn_op;

#define ZN_NODE_SRC 3
#define ZN_NODE_W   3

/* Op parameters, one struct per op family; a node holds the one of its op
 * (the union in zn_node), the formulas above say what each field means.
 * int rather than bool flags: no padding inside a struct (the Vulkan
 * replay compares recorded nodes byte for byte). */
typedef struct zn_norm_params { int group; float eps; } zn_norm_params;       /* RMSNORM */
typedef struct zn_matmul_params { int bias_first; } zn_matmul_params;         /* MATMUL */
typedef struct zn_rope_params {                                               /* ROPE */
    int head_dim, n_rot;
    zn_rope_mode mode;
    int sections[4];
    float freq_base, freq_scale;
} zn_rope_params;
typedef struct zn_attn_params { int n_head, n_head_kv, hd_k, hd_v; float scale; } zn_attn_params; /* ATTN */
typedef struct zn_route_params { int k, normalise; float w_scale; } zn_route_params;             /* MOE_ROUTE */
typedef struct zn_get_rows_params { int first; } zn_get_rows_params;                            /* GET_ROWS */
typedef struct zn_copy_cols_params { int width, stride, off; } zn_copy_cols_params;             /* COPY_COLS */
typedef struct zn_gdn_params { int h_k, h_v, d_k, d_v; float eps; } zn_gdn_params;              /* GDN */

typedef struct zn_node {
    zn_op op;
    int dst;                          /* activation id */
    int src[ZN_NODE_SRC];             /* activation ids, -1 when unused */
    const gguf_tensor *w[ZN_NODE_W];  /* weights, NULL when unused */
    int layer;                        /* block index, -1 outside blocks */
    union {                           /* by op; zero for ops without parameters */
        zn_norm_params norm;
        zn_matmul_params matmul;
        zn_rope_params rope;
        zn_attn_params attn;
        zn_route_params route;
        zn_get_rows_params get_rows;
        zn_copy_cols_params copy_cols;
        zn_gdn_params gdn;
    };
    const char *tag;                  /* static: "attn_q"; name = blk.<layer>.<tag> */
} zn_node;

/* Which logits a sequence of a step wants. */
typedef enum zn_out_mode { ZN_OUT_NONE, ZN_OUT_LAST, ZN_OUT_ALL } zn_out_mode;

/* One sequence of a step. The caller of graph_build_step sets n_rows,
 * n_past and out; the graph sets row0 and out0. */
typedef struct zn_step_seq {
    int n_rows;        /* its tokens in this step (>= 1) */
    int n_past;        /* tokens its state holds before the step */
    int out;           /* zn_out_mode */
    int row0;          /* its first row in the step */
    int out0;          /* its first row of the logits activation (-1: none) */
} zn_step_seq;

typedef struct zn_act {
    int rows, cols;
    size_t off;        /* in floats from the arena base */
} zn_act;

typedef struct zn_graph {
    const zn_model *model;
    int max_tokens;                   /* largest n_tokens graph_build accepts */
    size_t arena_floats;              /* arena size every build fits in */
    /* the current step */
    const int32_t *tokens;            /* [n_tokens], owned by the caller */
    int n_tokens;
    int n_past;                       /* seqs[0].n_past: backends that run one sequence read it here */
    bool all_logits;                  /* every row wants logits */
    int n_seq;                        /* sequences in the step, >= 1 */
    zn_step_seq *seqs;                /* [n_seq] */
    int32_t *row_seq, *row_pos;       /* [n_tokens]: each row's sequence and position */
    int n_out;                        /* rows of logits */
    int32_t *out_rows;                /* [n_out]: the step rows they are of, ascending */
    int max_seqs;                     /* capacity of seqs */
    int logits;                       /* act id: [n_out][n_vocab] */
    int n_nodes, n_acts;
    zn_node *nodes;
    zn_act *acts;
    int cap_nodes, cap_acts;
    void *plan;                       /* private: planner scratch */
} zn_graph;

/* Allocates node/activation tables and sizes the arena for steps of up to
 * max_tokens (<= ZN_MAX_BATCH). */
zn_status graph_init(zn_graph *g, const zn_model *m, int max_tokens, zn_err *err);
void graph_free(zn_graph *g);

/* Describes one step of one sequence; no allocation. tokens must stay
 * valid until the backend has run the graph. all_logits: logits for every
 * row, otherwise only the last. */
zn_status graph_build(zn_graph *g, const int32_t *tokens, int n_tokens, int n_past,
                      bool all_logits, zn_err *err);
/* Describes one step of n_seq sequences (1 <= n_seq <= ZN_MAX_STEP_SEQS):
 * tokens holds seqs[0]'s n_rows tokens, then seqs[1]'s, ...; seqs is
 * copied (row0 and out0 filled in, also in the caller's array). The
 * logits activation holds, sequence after sequence, every row of those with
 * ZN_OUT_ALL and the last row of those with ZN_OUT_LAST (when none wants
 * any: the step's last row, of no sequence's). No allocation. */
zn_status graph_build_step(zn_graph *g, const int32_t *tokens, zn_step_seq *seqs, int n_seq, zn_err *err);
/* Moves a one-sequence step to other tokens and position without
 * rebuilding its nodes (n_tokens rows at n_past): hand-built graphs set
 * their step with it, and a one-token step built before goes on to the
 * next position (no node depends on the position). */
void graph_set_step(zn_graph *g, const int32_t *tokens, int n_tokens, int n_past);
/* Whether the step description is whole (the rows of its sequences add up,
 * the per-row tables agree with them): backends check it before a run. */
zn_status graph_check_step(const zn_graph *g, zn_err *err);

/* Op tests ("does backend X compute op Y like the CPU?"): an empty graph
 * with room for cap_nodes/cap_acts, filled by hand with graph_act /
 * graph_input / graph_node (the caller sets the step with graph_set_step), then
 * graph_finish() places the activations, keeping `out` alive to the end,
 * and sets arena_floats to what they need. */
zn_status graph_init_empty(zn_graph *g, const zn_model *m, int max_tokens, int cap_nodes, int cap_acts,
                           zn_err *err);
zn_status graph_finish(zn_graph *g, int out, zn_err *err);

const char *graph_op_name(zn_op op);
/* "blk.3.attn_q" / "output". */
void graph_node_name(const zn_node *n, char *buf, size_t cap);
/* Is g a decode step: every sequence one token? */
bool graph_is_decode(const zn_graph *g);
/* Writes one line per node ("name op dst<-srcs [rows x cols]") for debugging. */
void graph_dump(const zn_graph *g, void *file /* FILE* */);

/* ---- for architecture builders (graph.c, graph_<arch>.c) ----
 * Each helper adds the node(s) and returns the new activation id; on
 * overflow of the node/activation tables they return a valid scratch id and
 * graph_build() fails afterwards, so builders need not check. */

/* One architecture's forward pass; registered in graph.c's table. */
typedef zn_status (*graph_builder)(zn_graph *g, zn_err *err);
zn_status graph_build_llama(zn_graph *g, zn_err *err); /* llama, qwen2, qwen3(moe), qwen35(moe) */
/* qwen35 token mixer of one block (graph_qwen35.c): Gated DeltaNet on
 * recurrent layers, gated attention on the others; x is the normed input. */
int graph_qwen35_mixer(zn_graph *g, int x, const zn_layer *L, int layer);

int graph_act(zn_graph *g, int rows, int cols);
/* An activation no node writes, filled by the caller through the backend's
 * write() before run (hand-built graphs). The planner places every such
 * activation before the first node and keeps it to its last reader. */
int graph_input(zn_graph *g, int rows, int cols);
/* Adds a node; all fields zero except op/dst/tag/layer, src[] = -1. */
zn_node *graph_node(zn_graph *g, zn_op op, int dst, const char *tag, int layer);

int graph_embed(zn_graph *g);
/* group: elements per norm group (cols for a whole row, head_dim per head). */
int graph_rmsnorm(zn_graph *g, int x, const gguf_tensor *w, int group, int layer, const char *tag);
/* bias_first: (Wx + b) * s (build_ffn order), else Wx * s + b. */
int graph_linear(zn_graph *g, int x, const zn_linear *lin, bool bias_first, int layer, const char *tag);
int graph_add(zn_graph *g, int a, int b, int layer, const char *tag);
/* up < 0: gate holds [gate | up] halves. */
int graph_swiglu(zn_graph *g, int gate, int up, int layer, const char *tag);
int graph_sigmoid_mul(zn_graph *g, int x, int gate, int layer, const char *tag);
/* In place, with the model's rope settings; heads of head_dim. */
void graph_rope(zn_graph *g, int x, int head_dim, int layer, const char *tag);
/* KV_STORE(k, v) then ATTN(q) for attention layer `layer`. */
int graph_attention(zn_graph *g, int q, int k, int v, int layer);
int graph_get_rows(zn_graph *g, int x, int first, int n, int layer, const char *tag);
/* The rows of x the step wants logits of (GET_ROWS when they are one run,
 * else GATHER_ROWS); x itself when that is every row. */
int graph_out_rows(zn_graph *g, int x, int layer, const char *tag);
/* Dense SwiGLU FFN of layer L (scales applied when use_scales). */
int graph_ffn(zn_graph *g, int x, const zn_layer *L, bool use_scales, int layer);
/* Routed experts (softmax top-k, renormalised) + the sigmoid-gated shared
 * expert when the layer has ffn_gate_inp_shexp. */
int graph_moe(zn_graph *g, int x, const zn_layer *L, int layer);

#endif
