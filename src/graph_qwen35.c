/* Forward pass of Qwen3.5 (qwen35: dense FFN; qwen35moe: routed experts +
 * sigmoid-gated shared expert), after llama.cpp's src/models/qwen35*.cpp.
 * Each block is pre-norm: a token mixer (Gated DeltaNet on recurrent layers,
 * gated full attention on the others), a residual add, a second RMS norm
 * ("post_attention_norm", which is really the pre-FFN norm), the FFN and a
 * residual add. */
#include "graph.h"

/* dst[r] = blocks of `width` columns of x taken every `stride`, from `off`. */
static int copy_cols(zn_graph *g, int x, int blocks, int width, int stride, int off, int layer,
                     const char *tag) {
    int y = graph_act(g, g->acts[x].rows, blocks * width);
    zn_node *n = graph_node(g, ZN_OP_COPY_COLS, y, tag, layer);
    n->src[0] = x;
    n->ip[0] = width;
    n->ip[1] = stride;
    n->ip[2] = off;
    return y;
}

/* Gated full attention: the query projection holds [query | gate] per head;
 * q/k RMS norm per head, IMRoPE, causal attention, output * sigmoid(gate). */
static int gated_attention(zn_graph *g, int x, const zn_layer *L, int il) {
    const zn_hparams *hp = &g->model->hp;
    const int hd = hp->head_dim_k;
    int qg = graph_linear(g, x, &L->wq, false, il, "attn_q");
    int q = copy_cols(g, qg, hp->n_head, hd, 2 * hd, 0, il, "attn_q_split");
    int gate = copy_cols(g, qg, hp->n_head, hd, 2 * hd, hd, il, "attn_gate_split");
    int k = graph_linear(g, x, &L->wk, false, il, "attn_k");
    int v = graph_linear(g, x, &L->wv, false, il, "attn_v");
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
    zn_node *n = graph_node(g, ZN_OP_SSM_CONV, c, "ssm_conv", il);
    n->src[0] = qkv;
    n->w[0] = L->ssm_conv1d;

    int o = graph_act(g, g->acts[qkv].rows, h_v * d_v);
    n = graph_node(g, ZN_OP_GDN, o, "ssm_gdn", il);
    n->src[0] = c;
    n->src[1] = alpha;
    n->src[2] = beta;
    n->w[0] = L->ssm_dt;
    n->w[1] = L->ssm_a;
    n->ip[0] = h_k;
    n->ip[1] = h_v;
    n->ip[2] = d_k;
    n->ip[3] = d_v;
    n->fp[0] = hp->rms_eps;

    o = graph_rmsnorm(g, o, L->ssm_norm, d_v, il, "ssm_norm");
    o = graph_swiglu(g, z, o, il, "ssm_gated");
    return graph_linear(g, o, &L->ssm_out, false, il, "ssm_out");
}

zn_status graph_build_qwen35(zn_graph *g, zn_err *err) {
    (void)err;
    const zn_model *m = g->model;
    const zn_hparams *hp = &m->hp;
    const int T = g->n_tokens, last = hp->n_layer - 1;
    const bool trim = !g->all_logits && T > 1;

    int x = graph_embed(g); /* residual stream [T][n_embd] */
    for (int il = 0; il < hp->n_layer; il++) {
        const zn_layer *L = &m->layers[il];
        int h = graph_rmsnorm(g, x, L->attn_norm, hp->n_embd, il, "attn_norm");
        int o = L->recurrent ? delta_net(g, h, L, il) : gated_attention(g, h, L, il);
        if (il == last && trim) { /* only the last row feeds the logits */
            o = graph_get_rows(g, o, T - 1, 1, il, "out_rows");
            x = graph_get_rows(g, x, T - 1, 1, il, "inp_rows");
        }
        x = graph_add(g, x, o, il, "attn_residual");
        h = graph_rmsnorm(g, x, L->attn_post_norm, hp->n_embd, il, "attn_post_norm");
        int f = L->ffn_gate_inp.w ? graph_moe(g, h, L, il) : graph_ffn(g, h, L, true, il);
        x = graph_add(g, x, f, il, "l_out");
    }
    x = graph_rmsnorm(g, x, m->output_norm, hp->n_embd, -1, "output_norm");
    g->logits = graph_linear(g, x, &m->output, false, -1, "output");
    return ZN_OK;
}
