/* Forward pass of the pre-norm attention + SwiGLU family: llama (dense and
 * Mixtral-style MoE), qwen2 (q/k/v biases), qwen3 and qwen3moe (q/k RMS
 * norm per head), and qwen35/qwen35moe, whose token mixers (gated attention,
 * Gated DeltaNet) are in graph_qwen35.c. Which optional tensors take part
 * follows llama.cpp's graphs: scales everywhere except qwen2's FFN, biases
 * wherever the loader bound them. */
#include "graph.h"

static int attention(zn_graph *g, int h, const zn_layer *L, int il) {
    const zn_hparams *hp = &g->model->hp;
    int q = graph_linear(g, h, &L->wq, false, il, "attn_q");
    int k = graph_linear(g, h, &L->wk, false, il, "attn_k");
    int v = graph_linear(g, h, &L->wv, false, il, "attn_v");
    if (L->q_norm) {
        q = graph_rmsnorm(g, q, L->q_norm, hp->head_dim_k, il, "attn_q_norm");
        k = graph_rmsnorm(g, k, L->k_norm, hp->head_dim_k, il, "attn_k_norm");
    }
    graph_rope(g, q, hp->head_dim_k, il, "rope_q");
    graph_rope(g, k, hp->head_dim_k, il, "rope_k");
    int a = graph_attention(g, q, k, v, il);
    return graph_linear(g, a, &L->wo, false, il, "attn_output");
}

zn_status graph_build_llama(zn_graph *g, zn_err *err) {
    (void)err;
    const zn_model *m = g->model;
    const zn_hparams *hp = &m->hp;
    const int last = hp->n_layer - 1;
    const bool q35 = m->arch == ZN_ARCH_QWEN35 || m->arch == ZN_ARCH_QWEN35MOE;

    int x = graph_embed(g); /* residual stream [T][n_embd] */
    for (int il = 0; il < hp->n_layer; il++) {
        const zn_layer *L = &m->layers[il];

        /* token mixer */
        int h = graph_rmsnorm(g, x, L->attn_norm, hp->n_embd, il, "attn_norm");
        int o = q35 ? graph_qwen35_mixer(g, h, L, il) : attention(g, h, L, il);
        if (il == last) { /* only the rows of logits go on */
            o = graph_out_rows(g, o, il, "out_rows");
            x = graph_out_rows(g, x, il, "inp_rows");
        }
        x = graph_add(g, x, o, il, "ffn_inp");

        /* feed-forward (qwen35 names its pre-FFN norm post_attention_norm) */
        h = graph_rmsnorm(g, x, q35 ? L->attn_post_norm : L->ffn_norm, hp->n_embd, il, "ffn_norm");
        int f = L->ffn_gate_inp.w ? graph_moe(g, h, L, il) : graph_ffn(g, h, L, m->arch != ZN_ARCH_QWEN2, il);
        x = graph_add(g, x, f, il, "l_out");
    }
    x = graph_rmsnorm(g, x, m->output_norm, hp->n_embd, -1, "output_norm");
    g->logits = graph_linear(g, x, &m->output, false, -1, "output");
    return ZN_OK;
}
