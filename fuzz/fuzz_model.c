/* libFuzzer target for model loading: the input is a GGUF file, loaded with
 * model_load() (hyper-parameters and tensor binding with shape and type
 * checks) through a memfd, so the real open/mmap path runs. When the model
 * loads, what the loader promised is checked (every tensor a layer needs is
 * bound inside the file) and the graph of a few steps is built and planned:
 * every node's activations in range and inside the planned arena, every
 * matmul's weight matching its input and output. Then the CPU backend (one
 * thread) runs a prompt step and a decode step: whatever the loader accepts,
 * the kernels must compute without a fault (values may be anything). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "graph.h"
#include "model.h"

static int mfd = -1;
static char mpath[64];

static void fail(const char *what, const zn_model *m, int i) {
    fprintf(stderr, "fuzz_model: %s (arch %s, node/layer %d)\n", what, model_arch_name(m->arch), i);
    abort();
}

static void check_weight(const zn_model *m, const gguf_tensor *t, int il) {
    if (!t) return;
    if (t < m->gguf.tensors || t >= m->gguf.tensors + m->gguf.n_tensors) fail("a weight outside the tensor table", m, il);
    if (!gguf_data_in_bounds(&m->gguf, t->data, t->nbytes)) fail("weight data outside the file", m, il);
}

static void check_linear(const zn_model *m, const zn_linear *l, int il) {
    check_weight(m, l->w, il);
    check_weight(m, l->b, il);
    check_weight(m, l->s, il);
    if (!l->w && (l->b || l->s)) fail("a bias or scale without its weight", m, il);
}

static void check_model(const zn_model *m) {
    const zn_hparams *hp = &m->hp;
    if (hp->n_layer < 1 || hp->n_layer > ZN_MAX_LAYERS || hp->n_embd < 1 || hp->n_vocab < 1 || hp->n_head < 1 ||
        hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv || hp->n_rot > hp->head_dim_k)
        fail("hyper-parameters out of range", m, -1);
    if (!m->tok_embd || !m->output_norm || !m->output.w) fail("a global tensor missing", m, -1);
    check_weight(m, m->tok_embd, -1);
    check_weight(m, m->output_norm, -1);
    check_weight(m, m->rope_freqs, -1);
    check_linear(m, &m->output, -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const zn_layer *L = &m->layers[il];
        if (!L->attn_norm) fail("attn_norm missing", m, il);
        const zn_linear *lins[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->wqkv, &L->wqkv_gate, &L->ffn_gate, &L->ffn_up,
                                   &L->ffn_down, &L->ffn_gate_inp, &L->ffn_gate_exps, &L->ffn_up_exps,
                                   &L->ffn_down_exps, &L->ffn_gate_up_exps, &L->ffn_gate_inp_shexp,
                                   &L->ffn_gate_shexp, &L->ffn_up_shexp, &L->ffn_down_shexp, &L->ssm_beta,
                                   &L->ssm_alpha, &L->ssm_out};
        for (size_t k = 0; k < sizeof lins / sizeof lins[0]; k++) check_linear(m, lins[k], il);
        const gguf_tensor *ts[] = {L->attn_norm, L->attn_post_norm, L->q_norm, L->k_norm, L->ffn_norm,
                                   L->ssm_conv1d, L->ssm_dt, L->ssm_a, L->ssm_norm};
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) check_weight(m, ts[k], il);
        if (L->recurrent ? !L->wqkv.w || !L->ssm_out.w || !L->ssm_conv1d : !L->wq.w || !L->wk.w || !L->wv.w || !L->wo.w)
            fail("a token mixer tensor missing", m, il);
        if (hp->n_expert ? !L->ffn_gate_inp.w || !L->ffn_down_exps.w : !L->ffn_gate.w || !L->ffn_up.w || !L->ffn_down.w)
            fail("an FFN tensor missing", m, il);
    }
}

/* The CPU backend over the steps of check_steps(); a model the loader and
 * the graph accepted must run. */
static void run_cpu(const zn_model *m, const zn_graph *g0, const int32_t *tokens) {
    zn_err err;
    void *ctx = NULL, *state = NULL;
    zn_graph g = *g0;
    zn_backend_opts o = {.n_threads = 1, .max_tokens = g.max_tokens, .arena_floats = g.arena_floats};
    if (zn_backend_cpu.init(&ctx, m, &o, &err) != ZN_OK) {
        fprintf(stderr, "fuzz_model: the CPU backend refuses a loaded model: %s\n", err.msg);
        abort();
    }
    if (zn_backend_cpu.seq_init(ctx, &state, 8, &err) != ZN_OK) {
        fprintf(stderr, "fuzz_model: seq_init: %s\n", err.msg);
        abort();
    }
    float *logits = malloc(sizeof *logits * (size_t)m->hp.n_vocab * 4);
    static const struct { int n, past; bool all; } steps[] = {{4, 0, true}, {1, 4, false}};
    for (size_t s = 0; logits && s < sizeof steps / sizeof steps[0]; s++) {
        if (graph_build(&g, tokens, steps[s].n, steps[s].past, steps[s].all, &err) != ZN_OK ||
            zn_backend_cpu.run(ctx, &state, &g, &err) != ZN_OK ||
            zn_backend_cpu.read(ctx, &g, g.logits, 0, g.n_out, logits, &err) != ZN_OK) {
            fprintf(stderr, "fuzz_model: step %zu: %s\n", s, err.msg);
            abort();
        }
    }
    free(logits);
    zn_backend_cpu.seq_free(ctx, state);
    zn_backend_cpu.free(ctx);
}

static void check_graph(const zn_graph *g) {
    const zn_model *m = g->model;
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        if ((unsigned)n->op >= ZN_OP_COUNT || n->dst < 0 || n->dst >= g->n_acts) fail("bad node", m, i);
        for (int s = 0; s < ZN_NODE_SRC; s++)
            if (n->src[s] >= g->n_acts) fail("source activation out of range", m, i);
        for (int s = -1; s < ZN_NODE_SRC; s++) {
            int a = s < 0 ? n->dst : n->src[s];
            if (a < 0) continue;
            const zn_act *x = &g->acts[a];
            if (x->rows < 1 || x->cols < 1 || x->off + (size_t)x->rows * (size_t)x->cols > g->arena_floats)
                fail("activation outside the planned arena", m, i);
        }
        for (int w = 0; w < ZN_NODE_W; w++) check_weight(m, n->w[w], i);
        if (n->op == ZN_OP_MATMUL || n->op == ZN_OP_MOE_MATMUL) {
            const gguf_tensor *w = n->w[0];
            const zn_act *x = &g->acts[n->src[0]], *y = &g->acts[n->dst];
            if (!w || n->src[0] < 0 || (int64_t)w->ne[0] != x->cols || (int64_t)w->ne[1] != y->cols)
                fail("matmul shapes disagree", m, i);
        }
    }
    if (g->logits < 0 || g->logits >= g->n_acts || g->acts[g->logits].cols != m->hp.n_vocab)
        fail("logits activation", m, -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (mfd < 0) {
        mfd = memfd_create("fuzz_model.gguf", 0);
        if (mfd < 0) abort();
        snprintf(mpath, sizeof mpath, "/proc/self/fd/%d", mfd);
    }
    if (ftruncate(mfd, 0) || pwrite(mfd, data, size, 0) != (ssize_t)size) abort();
    zn_model m;
    zn_err err;
    if (model_load(&m, mpath, &err) != ZN_OK) {
        if (!err.msg[0]) abort();
        return 0;
    }
    check_model(&m);
    zn_graph g;
    const int max_tokens = 4;
    if (graph_init(&g, &m, max_tokens, &err) == ZN_OK) {
        int32_t tokens[4];
        for (int i = 0; i < max_tokens; i++) tokens[i] = (int32_t)((uint32_t)(i * 7919) % (uint32_t)m.hp.n_vocab);
        static const struct { int n, past; bool all; } steps[] = {{4, 0, true}, {1, 4, false}, {3, 100, false}};
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            if (graph_build(&g, tokens, steps[s].n, steps[s].past, steps[s].all, &err) != ZN_OK) {
                fprintf(stderr, "fuzz_model: a loaded model's graph fails: %s\n", err.msg);
                abort();
            }
            check_graph(&g);
        }
        run_cpu(&m, &g, tokens);
        graph_free(&g);
    } else if (!err.msg[0]) {
        abort();
    }
    model_free(&m);
    return 0;
}
