/* CPU kernels of the graph ops other than the matmuls (graph.h has the
 * semantics). Each splits its rows (or heads) across the threads. */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "gdn.h"

void cpu_op_embed(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const gguf_tensor *w = n->w[0];
    const int64_t cols = cpu_shape(r, n->dst)->cols;
    const size_t row_bytes = zn_row_size(w->type, cols);
    float *y = cpu_act(r, n->dst);
    int64_t t0, t1;
    cpu_split(r->g->n_tokens, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++)
        quant_dequantize_row(w->type, w->data + (size_t)r->g->tokens[t] * row_bytes, y + t * cols, cols);
}

void cpu_op_rmsnorm(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *a = cpu_shape(r, n->src[0]);
    const int64_t group = n->norm.group, groups = (int64_t)a->rows * a->cols / group;
    const float *x = cpu_act(r, n->src[0]);
    float *y = cpu_act(r, n->dst);
    const float *w = n->w[0] ? (const float *)n->w[0]->data : NULL;
    const float eps = n->norm.eps;
    int64_t g0, g1;
    cpu_split(groups, ith, nth, &g0, &g1);
    for (int64_t gi = g0; gi < g1; gi++) {
        const float *xg = x + gi * group;
        float *yg = y + gi * group;
        const double sum = r->c->vec.sum_sq(xg, group); /* ggml accumulates in double */
        const float scale = 1.0f / sqrtf((float)(sum / (double)group) + eps);
        if (w)
            for (int64_t i = 0; i < group; i++) yg[i] = (xg[i] * scale) * w[i];
        else
            for (int64_t i = 0; i < group; i++) yg[i] = xg[i] * scale;
    }
}

/* cos/sin per rotation pair at position p (ggml's rope cache, no YaRN). */
static void rope_table(float *cs, int n_rot, float p, float base, float freq_scale, const float *ff) {
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = p;
    for (int i = 0; i < n_rot / 2; i++) {
        const float th = freq_scale * (theta / (ff ? ff[i] : 1.0f));
        cs[2 * i] = cosf(th);
        cs[2 * i + 1] = sinf(th);
        theta *= theta_scale;
    }
}

void cpu_op_rope(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *a = cpu_shape(r, n->src[0]);
    const zn_rope_params *rp = &n->rope;
    const int hd = rp->head_dim, n_rot = rp->n_rot, mode = rp->mode, n_heads = a->cols / hd;
    const float *ff = n->w[0] ? (const float *)n->w[0]->data : NULL;
    float *x = cpu_act(r, n->src[0]);
    float *cs = r->c->rope + (size_t)ith * r->c->rope_stride;
    int64_t t0, t1;
    cpu_split(a->rows, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        const int32_t p = r->g->row_pos[t];
        float *row = x + t * a->cols;
        if (mode == ZN_ROPE_IMROPE) {
            const int32_t pos[4] = {p, p, p, 0};
            gdn_imrope_cache(cs, n_rot, rp->sections, pos, rp->freq_base, rp->freq_scale);
        } else {
            rope_table(cs, n_rot, (float)p, rp->freq_base, rp->freq_scale, ff);
        }
        if (mode != ZN_ROPE_NORM) {
            gdn_rope_neox_apply(row, n_heads, hd, n_rot, cs);
            continue;
        }
        for (int h = 0; h < n_heads; h++) {
            float *xh = row + (size_t)h * hd;
            for (int i = 0; i < n_rot / 2; i++) {
                const float c = cs[2 * i], s = cs[2 * i + 1], x0 = xh[2 * i], x1 = xh[2 * i + 1];
                xh[2 * i] = x0 * c - x1 * s;
                xh[2 * i + 1] = x0 * s + x1 * c;
            }
        }
    }
}

/* One K or V row (heads of hd) into the cache in its format
 * (backend_kv_put, whose bytes kv_store.comp repeats); f16 by the SIMD
 * conversion. */
static void kv_put(const cpu_ctx *c, uint8_t *dst, const float *x, int64_t n, int hd) {
    if (c->kv_type == ZN_KV_F16) c->vec.to_f16((zn_half *)dst, x, (int)n);
    else backend_kv_put(c->kv_type, x, dst, n, hd);
}

void cpu_op_kv_store(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const int li = r->c->attn_index[n->layer];
    const zn_act *ka = cpu_shape(r, n->src[0]), *va = cpu_shape(r, n->src[1]);
    const float *k = cpu_act(r, n->src[0]), *v = cpu_act(r, n->src[1]);
    int64_t t0, t1;
    cpu_split(ka->rows, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        uint8_t *row = cpu_kv_row(r->c, r->s[r->g->row_seq[t]], li, r->g->row_pos[t]);
        kv_put(r->c, row, k + t * ka->cols, ka->cols, r->c->m->hp.head_dim_k);
        kv_put(r->c, row + r->c->kvl.k_bytes, v + t * va->cols, va->cols, r->c->m->hp.head_dim_v);
    }
}

/* n rows of one head (hd values at byte off of each row_bytes row) of a
 * quantized cache as f16 rows of hd: the f16 kernels then run on them. */
static void kvq_rows(const cpu_ctx *c, const uint8_t *base, size_t row_bytes, size_t off, int n, int hd, zn_half *out) {
    for (int j = 0; j < n; j++) c->vec.kv_to_f16(c->kv_type, base + (size_t)j * row_bytes + off, out + (size_t)j * hd, hd);
}

/* The attention of one group of queries (cpu_op_attn) over the cache,
 * block by block of the paged cache (backend.h): the scores of a block are
 * independent of the others; the values of the first block go to ys, the
 * others' are added (a context within one block: one call, as unpaged). A
 * quantized cache's rows of the head are dequantized to f16 a block at a
 * time, so the scratch does not grow with the context. */
static void attn_blocks(const cpu_run *r, const cpu_seq *s, int li, int kvh, int hd_k, int hd_v, float scale,
                        const float *const *qs, float *const *ys, const int *nk, int nq, float (*sc)[CPU_ATT_Q], int ith) {
    const cpu_ctx *c = r->c;
    const cpu_vec *vec = &c->vec;
    const bool f16 = c->kv_type == ZN_KV_F16;
    zn_half *rows = f16 ? NULL : c->kvq_rows + (size_t)ith * ZN_KV_BLOCK * c->kvq_hd;
    float *yc = c->kvq_y + (size_t)ith * CPU_KVQ_Y * c->kvq_hd;
    const size_t koff = (size_t)li * (c->kvl.k_bytes + c->kvl.v_bytes), voff = koff + c->kvl.k_bytes;
    const size_t khead = backend_kv_bytes(c->kv_type, (int64_t)kvh * hd_k);
    const size_t vhead = backend_kv_bytes(c->kv_type, (int64_t)kvh * hd_v);
    const size_t stride = c->kvl.pos_bytes / sizeof(zn_half); /* f16: a row's values apart */
    const int n_keys = nk[nq - 1];
    for (int j0 = 0; j0 < n_keys; j0 += ZN_KV_BLOCK) {
        const int n = n_keys - j0 < ZN_KV_BLOCK ? n_keys - j0 : ZN_KV_BLOCK;
        const uint8_t *b = cpu_kv_block(c, s, j0 / ZN_KV_BLOCK) + koff;
        if (f16) {
            vec->att_scores((const zn_half *)(b + khead), stride, n, qs, nq, hd_k, scale, sc + j0);
            continue;
        }
        kvq_rows(c, b, c->kvl.pos_bytes, khead, n, hd_k, rows);
        vec->att_scores(rows, (size_t)hd_k, n, qs, nq, hd_k, scale, sc + j0);
    }
    vec->att_softmax(sc, nk, nq);
    float *yp[CPU_ATT_Q];
    for (int i = 0; i < nq; i++) yp[i] = yc + (size_t)i * hd_v;
    for (int j0 = 0; j0 < n_keys; j0 += ZN_KV_BLOCK) {
        const int n = n_keys - j0 < ZN_KV_BLOCK ? n_keys - j0 : ZN_KV_BLOCK;
        int nc[CPU_ATT_Q];
        for (int i = 0; i < nq; i++) nc[i] = nk[i] - j0 < 0 ? 0 : nk[i] - j0 > n ? n : nk[i] - j0;
        const uint8_t *b = cpu_kv_block(c, s, j0 / ZN_KV_BLOCK) + voff;
        float *const *out = j0 == 0 ? ys : yp;
        if (f16) {
            vec->att_values((const zn_half *)(b + vhead), stride, nc, (const float (*)[CPU_ATT_Q])(sc + j0), nq, hd_v,
                            out);
        } else {
            kvq_rows(c, b, c->kvl.pos_bytes, vhead, n, hd_v, rows);
            vec->att_values(rows, (size_t)hd_v, nc, (const float (*)[CPU_ATT_Q])(sc + j0), nq, hd_v, out);
        }
        for (int i = 0; j0 > 0 && i < nq; i++)
            for (int e = 0; e < hd_v; e++) ys[i][e] += yp[i][e];
    }
}

/* Work item: one KV head and CPU_ATT_Q consecutive tokens of one
 * sequence, i.e. their queries of every head sharing that KV head,
 * CPU_ATT_Q at a time (token major, so the key counts do not decrease).
 * Blocks are counted sequence after sequence (a sequence's last block may
 * be short), so a query's arithmetic is the same in any batch. */
void cpu_op_attn(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_graph *g = r->g;
    const int li = r->c->attn_index[n->layer];
    const int n_head = n->attn.n_head, n_head_kv = n->attn.n_head_kv, hd_k = n->attn.hd_k, hd_v = n->attn.hd_v;
    const int group = n_head / n_head_kv;
    const float scale = n->attn.scale;
    const zn_act *qa = cpu_shape(r, n->src[0]);
    const float *q = cpu_act(r, n->src[0]);
    float *y = cpu_act(r, n->dst);
    float (*sc)[CPU_ATT_Q] = (float (*)[CPU_ATT_Q])(r->c->att + (size_t)ith * r->c->att_stride * CPU_ATT_Q);
    /* a rotated cache: the queries rotated like its keys, the output back */
    const bool rot = backend_kv_rotated(r->c->kv_type);
    float *qr = r->c->kvq_y + ((size_t)ith * CPU_KVQ_Y + CPU_ATT_Q) * r->c->kvq_hd;
    int n_blocks = 0;
    for (int i = 0; i < g->n_seq; i++) n_blocks += (g->seqs[i].n_rows + CPU_ATT_Q - 1) / CPU_ATT_Q;
    /* interleaved so early tokens (short histories) and late ones mix; a
     * thread's blocks only go up, so the sequence is found by walking on */
    int si = 0, si_block = 0; /* sequence si's first block */
    for (int it = ith; it < n_blocks * n_head_kv; it += nth) {
        const int kvh = it % n_head_kv, b = it / n_head_kv;
        while (b >= si_block + (g->seqs[si].n_rows + CPU_ATT_Q - 1) / CPU_ATT_Q)
            si_block += (g->seqs[si++].n_rows + CPU_ATT_Q - 1) / CPU_ATT_Q;
        const zn_step_seq *sq = &g->seqs[si];
        const cpu_seq *s = r->s[si];
        const int j0 = (b - si_block) * CPU_ATT_Q, t0 = sq->row0 + j0;
        const int n_tok = sq->n_rows - j0 < CPU_ATT_Q ? sq->n_rows - j0 : CPU_ATT_Q;
        for (int q0 = 0; q0 < n_tok * group; q0 += CPU_ATT_Q) {
            const int nq = n_tok * group - q0 < CPU_ATT_Q ? n_tok * group - q0 : CPU_ATT_Q;
            const float *qs[CPU_ATT_Q];
            float *ys[CPU_ATT_Q];
            int nk[CPU_ATT_Q];
            for (int i = 0; i < nq; i++) {
                const int t = t0 + (q0 + i) / group, h = kvh * group + (q0 + i) % group;
                qs[i] = q + (int64_t)t * qa->cols + (size_t)h * hd_k;
                ys[i] = y + (int64_t)t * n_head * hd_v + (size_t)h * hd_v;
                nk[i] = g->row_pos[t] + 1;
                if (rot) {
                    float *qi = qr + (size_t)i * hd_k;
                    memcpy(qi, qs[i], sizeof(float) * (size_t)hd_k);
                    backend_kv_rotate(qi, hd_k, false);
                    qs[i] = qi;
                }
            }
            attn_blocks(r, s, li, kvh, hd_k, hd_v, scale, qs, ys, nk, nq, sc, ith);
            for (int i = 0; rot && i < nq; i++) backend_kv_rotate(ys[i], hd_v, true);
        }
    }
}

/* Element ranges of a [rows][cols] activation for this thread. */
static void elem_range(const cpu_run *r, int act, int ith, int nth, int64_t *i0, int64_t *i1) {
    const zn_act *a = cpu_shape(r, act);
    cpu_split((int64_t)a->rows * a->cols, ith, nth, i0, i1);
}

void cpu_op_add(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const float *a = cpu_act(r, n->src[0]), *b = cpu_act(r, n->src[1]);
    float *y = cpu_act(r, n->dst);
    int64_t i0, i1;
    elem_range(r, n->dst, ith, nth, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) y[i] = a[i] + b[i];
}

void cpu_op_swiglu(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *d = cpu_shape(r, n->dst);
    const float *g = cpu_act(r, n->src[0]);
    float *y = cpu_act(r, n->dst);
    int64_t r0, r1;
    cpu_split(d->rows, ith, nth, &r0, &r1);
    if (n->src[1] >= 0) {
        const float *u = cpu_act(r, n->src[1]);
        r->c->vec.swiglu(y + r0 * d->cols, g + r0 * d->cols, u + r0 * d->cols, (r1 - r0) * d->cols);
        return;
    }
    for (int64_t row = r0; row < r1; row++) { /* [gate | up] halves */
        const float *gr = g + row * 2 * d->cols;
        float *yr = y + row * d->cols;
        r->c->vec.swiglu(yr, gr, gr + d->cols, d->cols);
    }
}

void cpu_op_sigmoid_mul(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *d = cpu_shape(r, n->dst), *ga = cpu_shape(r, n->src[1]);
    const float *x = cpu_act(r, n->src[0]), *g = cpu_act(r, n->src[1]);
    float *y = cpu_act(r, n->dst);
    int64_t r0, r1;
    cpu_split(d->rows, ith, nth, &r0, &r1);
    for (int64_t row = r0; row < r1; row++)
        for (int64_t i = 0; i < d->cols; i++) {
            const float gv = ga->cols == 1 ? g[row] : g[row * d->cols + i];
            y[row * d->cols + i] = x[row * d->cols + i] * (1.0f / (1.0f + expf(-gv)));
        }
}

void cpu_op_moe_route(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *la = cpu_shape(r, n->src[0]);
    const int n_exp = la->cols, k = n->route.k;
    const float *logits = cpu_act(r, n->src[0]);
    float *y = cpu_act(r, n->dst);
    float p[ZN_MAX_EXPERTS];
    int64_t t0, t1;
    cpu_split(la->rows, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        const float *l = logits + t * n_exp;
        float mx = -INFINITY;
        for (int e = 0; e < n_exp; e++) mx = l[e] > mx ? l[e] : mx;
        double sum = 0;
        for (int e = 0; e < n_exp; e++) sum += p[e] = expf(l[e] - mx);
        for (int e = 0; e < n_exp; e++) p[e] = (float)(p[e] / sum);
        float *yt = y + t * 2 * k;
        float wsum = 0;
        for (int j = 0; j < k; j++) { /* selection: k is small */
            int best = -1;
            for (int e = 0; e < n_exp; e++) {
                if (p[e] < 0) continue; /* taken */
                if (best < 0 || p[e] > p[best]) best = e;
            }
            yt[j] = (float)best;
            yt[k + j] = p[best];
            wsum += p[best];
            p[best] = -1.0f;
        }
        if (n->route.normalise) {
            if (wsum < 6.103515625e-5f) wsum = 6.103515625e-5f;
            for (int j = 0; j < k; j++) yt[k + j] /= wsum;
        }
        const float ws = n->route.w_scale;
        if (ws != 0.0f && ws != 1.0f)
            for (int j = 0; j < k; j++) yt[k + j] *= ws;
    }
}

void cpu_op_moe_sum(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *d = cpu_shape(r, n->dst), *ra = cpu_shape(r, n->src[1]);
    const int k = ra->cols / 2;
    const float *x = cpu_act(r, n->src[0]), *route = cpu_act(r, n->src[1]);
    float *y = cpu_act(r, n->dst);
    int64_t t0, t1;
    cpu_split(d->rows, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        float *yt = y + t * d->cols;
        const float *w = route + t * 2 * k + k;
        for (int64_t i = 0; i < d->cols; i++) yt[i] = w[0] * x[(t * k) * d->cols + i];
        for (int j = 1; j < k; j++)
            for (int64_t i = 0; i < d->cols; i++) yt[i] += w[j] * x[(t * k + j) * d->cols + i];
    }
}

void cpu_op_get_rows(const cpu_run *r, const zn_node *n, int ith, int nth) {
    if (ith) return;
    const zn_act *d = cpu_shape(r, n->dst);
    memcpy(cpu_act(r, n->dst), cpu_act(r, n->src[0]) + (size_t)n->get_rows.first * d->cols,
           sizeof(float) * (size_t)d->rows * d->cols);
}

void cpu_op_gather_rows(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const zn_act *d = cpu_shape(r, n->dst);
    const float *x = cpu_act(r, n->src[0]);
    float *y = cpu_act(r, n->dst);
    int64_t i0, i1;
    cpu_split(d->rows, ith, nth, &i0, &i1);
    for (int64_t i = i0; i < i1; i++)
        memcpy(y + i * d->cols, x + (size_t)r->g->out_rows[i] * d->cols, sizeof(float) * (size_t)d->cols);
}
