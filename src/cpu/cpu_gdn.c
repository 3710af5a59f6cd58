/* CPU kernels of the Qwen3.5 ops (graph.h: COPY_COLS, CONV1D, GDN); the
 * arithmetic is gdn.c's, here only the split across threads and the
 * lookup of the sequence's recurrent state. */
#include <string.h>

#include "cpu.h"
#include "gdn.h"

void cpu_op_copy_cols(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *sa = cpu_shape(r, n->src[0]), *da = cpu_shape(r, n->dst);
    const int64_t width = n->copy_cols.width, stride = n->copy_cols.stride, off = n->copy_cols.off, blocks = da->cols / width;
    const float *x = cpu_act(r, n->src[0]);
    float *y = cpu_act(r, n->dst);
    int64_t r0, r1;
    cpu_split(da->rows, ith, nth, &r0, &r1);
    for (int64_t row = r0; row < r1; row++)
        for (int64_t b = 0; b < blocks; b++)
            memcpy(y + row * da->cols + b * width, x + row * sa->cols + b * stride + off,
                   sizeof(float) * (size_t)width);
}

void cpu_op_conv1d(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *a = cpu_shape(r, n->src[0]);
    const int kernel = (int)n->w[0]->ne[0], ri = r->c->recr_index[n->layer];
    const float *x = cpu_act(r, n->src[0]), *w = (const float *)n->w[0]->data;
    float *y = cpu_act(r, n->dst);
    /* channels are independent: each thread takes a slice of every row,
     * sequence by sequence (each with its own state) */
    int64_t c0, c1;
    cpu_split(a->cols, ith, nth, &c0, &c1);
    if (c1 <= c0) return;
    for (int i = 0; i < r->g->n_seq; i++) {
        const zn_step_seq *q = &r->g->seqs[i];
        const int64_t off = (int64_t)q->row0 * a->cols + c0;
        gdn_conv1d_silu(y + off, x + off, q->n_rows, c1 - c0, a->cols, w + c0 * kernel, kernel,
                        r->s[i]->conv[ri] + c0 * (kernel - 1));
    }
}

/* Work: (sequence, value head) pairs, heads of one sequence together. */
void cpu_op_gdn(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_graph *g = r->g;
    const int64_t h_k = n->gdn.h_k, h_v = n->gdn.h_v, d_k = n->gdn.d_k, d_v = n->gdn.d_v;
    const zn_act *xa = cpu_shape(r, n->src[0]);
    const int ri = r->c->recr_index[n->layer];
    const float *x = cpu_act(r, n->src[0]), *alpha = cpu_act(r, n->src[1]), *beta = cpu_act(r, n->src[2]);
    float *out = cpu_act(r, n->dst);
    int64_t w0, w1;
    cpu_split((int64_t)g->n_seq * h_v, ith, nth, &w0, &w1);
    for (int64_t i = w0 / h_v; i < g->n_seq && i * h_v < w1; i++) {
        const zn_step_seq *q = &g->seqs[i];
        const int64_t h0 = w0 > i * h_v ? w0 - i * h_v : 0, h1 = w1 < (i + 1) * h_v ? w1 - i * h_v : h_v;
        const float *xs = x + (int64_t)q->row0 * xa->cols;
        const gdn_args args = {
            .q = xs,
            .k = xs + h_k * d_k,
            .v = xs + 2 * h_k * d_k,
            .g = alpha + (int64_t)q->row0 * h_v,
            .beta = beta + (int64_t)q->row0 * h_v,
            .dt_bias = (const float *)n->w[0]->data,
            .a = (const float *)n->w[1]->data,
            .state = r->s[i]->delta[ri],
            .out = out + (int64_t)q->row0 * h_v * d_v,
            .n_tokens = q->n_rows,
            .h_k = h_k,
            .h_v = h_v,
            .d_k = d_k,
            .d_v = d_v,
            .ld_qk = xa->cols,
            .ld_v = xa->cols,
            .ld_o = h_v * d_v,
            .ld_g = h_v,
            .l2_qk = true,
            .l2_eps = n->gdn.eps,
            .kernel = gdn_kernel_best(),
        };
        if (h1 > h0) gdn_recurrent(&args, h0, h1);
    }
}
