/* The token mixers of Qwen3.5 (qwen35, qwen35moe), after llama.cpp's
 * src/models/qwen35*.cpp: Gated DeltaNet on recurrent layers, gated full
 * attention on the others. The rest of the block (pre-norm, residuals, the
 * dense or MoE FFN with its sigmoid-gated shared expert) is the llama
 * family's, in graph_llama.c. */
#include "graph.h"

/* dst[r] = blocks of `width` columns of x taken every `stride`, from `off`. */
static int copy_cols(zn_graph *g, int x, int blocks, int width, int stride, int off, int layer,
                     const char *tag) {
    int y = graph_act(g, g->acts[x].rows, blocks * width);
    zn_node *n = graph_node(g, ZN_OP_COPY_COLS, y, tag, layer);
    n->src[0] = x;
    n->copy_cols = (zn_copy_cols_params){.width = width, .stride = stride, .off = off};
    return y;
}

/* Gated full attention: the query projection holds [query | gate] per head;
 * q/k RMS norm per head, IMRoPE, causal attention, output * sigmoid(gate). */
static int gated_attention(zn_graph *g, int x, const zn_layer *L, int il) {
    const zn_hparams *hp = &g->model->hp;
    const int hd = hp->head_dim_k;
    /* the three projections first: a backend can run them as one (Vulkan:
     * a grouped mat-vec), and a decode step's attention reads q from qg */
    int qg = graph_linear(g, x, &L->wq, false, il, "attn_q");
    int k = graph_linear(g, x, &L->wk, false, il, "attn_k");
    int v = graph_linear(g, x, &L->wv, false, il, "attn_v");
    int q = copy_cols(g, qg, hp->n_head, hd, 2 * hd, 0, il, "attn_q_split");
    int gate = copy_cols(g, qg, hp->n_head, hd, 2 * hd, hd, il, "attn_gate_split");
    q = graph_rmsnorm(g, q, L->q_norm, hd, il, "attn_q_norm");
    k = graph_rmsnorm(g, k, L->k_norm, hd, il, "attn_k_norm");
    graph_rope(g, q, hd, il, "rope_q");
    graph_rope(g, k, hd, il, "rope_k");
    int a = graph_attention(g, q, k, v, il);
    a = graph_sigmoid_mul(g, a, gate, il, "attn_gated");
    return graph_linear(g, a, &L->wo, false, il, "attn_output");
}

/* Gated DeltaNet: qkv projection -> causal conv + SiLU -> delta rule (L2
 * norm of q/k and the gates inside the op) -> RMS norm per value head times
 * silu(z) -> output projection. */
static int delta_net(zn_graph *g, int x, const zn_layer *L, int il) {
    const zn_hparams *hp = &g->model->hp;
    const int h_k = hp->ssm_n_group, h_v = hp->ssm_dt_rank, d_k = hp->ssm_d_state;
    const int d_v = hp->ssm_d_inner / h_v;
    int qkv = graph_linear(g, x, &L->wqkv, false, il, "attn_qkv");
    int z = graph_linear(g, x, &L->wqkv_gate, false, il, "attn_gate");
    int beta = graph_linear(g, x, &L->ssm_beta, false, il, "ssm_beta");
    int alpha = graph_linear(g, x, &L->ssm_alpha, false, il, "ssm_alpha");

    int c = graph_act(g, g->acts[qkv].rows, g->acts[qkv].cols);
    zn_node *n = graph_node(g, ZN_OP_CONV1D, c, "conv1d", il);
    n->src[0] = qkv;
    n->w[0] = L->ssm_conv1d;

    int o = graph_act(g, g->acts[qkv].rows, h_v * d_v);
    n = graph_node(g, ZN_OP_GDN, o, "gdn", il);
    n->src[0] = c;
    n->src[1] = alpha;
    n->src[2] = beta;
    n->w[0] = L->ssm_dt;
    n->w[1] = L->ssm_a;
    n->gdn = (zn_gdn_params){.h_k = h_k, .h_v = h_v, .d_k = d_k, .d_v = d_v, .eps = hp->rms_eps};

    o = graph_rmsnorm(g, o, L->ssm_norm, d_v, il, "ssm_norm");
    o = graph_swiglu(g, z, o, il, "gdn_gated");
    return graph_linear(g, o, &L->ssm_out, false, il, "ssm_out");
}

int graph_qwen35_mixer(zn_graph *g, int x, const zn_layer *L, int layer) {
    return L->recurrent ? delta_net(g, x, L, layer) : gated_attention(g, x, L, layer);
}
