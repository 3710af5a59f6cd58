/* Matmuls of the CPU backend. The activations are quantized once to the
 * weight's vec-dot type (kept while the same activation feeds the next
 * matmul, e.g. q/k/v), then each thread takes a contiguous band of weight
 * rows and, block by block (a packed group of 8, or ROW_BLOCK unpacked
 * rows), dots every row of the block with every token, so a prefill reads
 * each weight row from memory once. */
#include <string.h>

#include "cpu.h"

#define ROW_BLOCK 16 /* weight rows kept hot in cache while the tokens go by */

/* Returns the activation rows in the matmul's format (cpu_xq_format; all
 * threads call it; it ends with a barrier when it had to quantize). */
static const uint8_t *prepare_x(const cpu_run *r, int act, int fmt, int ith, int nth) {
    cpu_ctx *c = r->c;
    const zn_act *a = cpu_shape(r, act);
    const float *x = cpu_act(r, act);
    if (fmt == ZN_TYPE_F32) return (const uint8_t *)x;
    const zn_type vt = fmt == CPU_XQ_Q8_0_U ? ZN_TYPE_Q8_0 : (zn_type)fmt;
    const size_t row = zn_row_size(vt, a->cols);
    struct cpu_tls *tls = &c->tls[ith];
    if (tls->xq_act != act || tls->xq_format != fmt) {
        int64_t t0, t1;
        cpu_split(a->rows, ith, nth, &t0, &t1);
        for (int64_t t = t0; t < t1; t++) {
            uint8_t *q = c->xq + (size_t)t * row;
            quant_quantize_act(vt, x + t * a->cols, q, a->cols);
            for (int64_t b = 0; fmt == CPU_XQ_Q8_0_U && b < a->cols / QK8_0; b++) {
                block_q8_0 *blk = (block_q8_0 *)q + b;
                for (int e = 0; e < QK8_0; e++) blk->qs[e] = (int8_t)((uint8_t)blk->qs[e] ^ 0x80);
            }
        }
        cpu_pool_barrier(c->pool);
        tls->xq_act = act;
        tls->xq_format = fmt;
    }
    return c->xq;
}

/* Bytes of one activation row in format fmt. */
static size_t xq_row(int fmt, int64_t cols) {
    if (fmt == ZN_TYPE_F32) return sizeof(float) * (size_t)cols;
    return zn_row_size(fmt == CPU_XQ_Q8_0_U ? ZN_TYPE_Q8_0 : (zn_type)fmt, cols);
}

/* The rows [o0, o1) thread ith computes: whole groups when w is packed. */
static void band(const cpu_run *r, const gguf_tensor *w, int ith, int nth, int64_t *o0, int64_t *o1) {
    const int64_t N = (int64_t)w->ne[1];
    if (!cpu_packed(r->c, w)) {
        cpu_split(N, ith, nth, o0, o1);
        return;
    }
    int64_t g0, g1;
    cpu_split(cpu_pack_groups(N), ith, nth, &g0, &g1);
    *o0 = g0 * CPU_PACK_ROWS < N ? g0 * CPU_PACK_ROWS : N;
    *o1 = g1 * CPU_PACK_ROWS < N ? g1 * CPU_PACK_ROWS : N;
}

#define PACK_CHUNK 16 /* tokens per call of the packed kernel */

/* dot_band for packed weights (pw: the groups of this expert; o0 is a
 * multiple of CPU_PACK_ROWS). */
static void dot_packed(const cpu_run *r, zn_type type, const uint8_t *pw, int64_t K, int64_t o0, int64_t o1,
                       const uint8_t *xq, size_t xrow, const int32_t *xi, int n_x, float *y, const int32_t *yi,
                       int64_t ld) {
    const size_t gbytes = cpu_pack_group_bytes(type, K);
    const cpu_pack_tile_fn fn = r->c->vec.packed(type);
    /* one token (decode) reads the weights from memory at the 8-row kernel's pace already: the 16-row one
     * (twice the products an instruction) is for prompts and batches */
    const cpu_pack_tile2_fn fn2 = r->c->vec.packed2 && n_x > 1 ? r->c->vec.packed2(type) : NULL;
    int64_t o = o0;
    for (; fn2 && o1 - o >= 2 * CPU_PACK_ROWS; o += 2 * CPU_PACK_ROWS) { /* two whole groups at once */
        const uint8_t *grp = pw + (size_t)(o / CPU_PACK_ROWS) * gbytes;
        for (int i = 0; i < n_x; i += PACK_CHUNK) {
            const int nt = n_x - i < PACK_CHUNK ? n_x - i : PACK_CHUNK;
            float out[PACK_CHUNK][2 * CPU_PACK_ROWS];
            fn2(grp, gbytes, xi ? xq : xq + (size_t)i * xrow, xrow, xi ? xi + i : NULL, nt, K, out);
            for (int j = 0; j < nt; j++) memcpy(y + (int64_t)(yi ? yi[i + j] : i + j) * ld + o, out[j], sizeof out[j]);
        }
    }
    for (; o < o1; o += CPU_PACK_ROWS) {
        const uint8_t *grp = pw + (size_t)(o / CPU_PACK_ROWS) * gbytes;
        const int nr = o1 - o < CPU_PACK_ROWS ? (int)(o1 - o) : CPU_PACK_ROWS;
        for (int i = 0; i < n_x; i += PACK_CHUNK) {
            const int nt = n_x - i < PACK_CHUNK ? n_x - i : PACK_CHUNK;
            float out[PACK_CHUNK][CPU_PACK_ROWS];
            fn(grp, xi ? xq : xq + (size_t)i * xrow, xrow, xi ? xi + i : NULL, nt, K, out);
            for (int j = 0; j < nt; j++) {
                float *dst = y + (int64_t)(yi ? yi[i + j] : i + j) * ld + o;
                if (nr == CPU_PACK_ROWS) memcpy(dst, out[j], sizeof out[j]); /* inlined: a full group */
                else memcpy(dst, out[j], sizeof(float) * (size_t)nr);
            }
        }
    }
}

/* y[t*ld + o] = W[o] . x[t] for rows o in [o0, o1) and the listed tokens
 * (xi: activation rows, yi: output rows; NULL: 0..n_x-1); pw: W's packed
 * copy or NULL. */
static void dot_band(const cpu_run *r, const gguf_tensor *w, const uint8_t *wdata, const uint8_t *pw, int64_t o0,
                     int64_t o1, const uint8_t *xq, size_t xrow, const int32_t *xi, int n_x, float *y,
                     const int32_t *yi, int64_t ld) {
    const int64_t K = (int64_t)w->ne[0];
    if (pw) {
        dot_packed(r, w->type, pw, K, o0, o1, xq, xrow, xi, n_x, y, yi, ld);
        return;
    }
    const size_t wrow = zn_row_size(w->type, K);
    for (int64_t ob = o0; ob < o1; ob += ROW_BLOCK) {
        const int64_t oe = ob + ROW_BLOCK < o1 ? ob + ROW_BLOCK : o1;
        for (int i = 0; i < n_x; i++) {
            const uint8_t *x = xq + (size_t)(xi ? xi[i] : i) * xrow;
            float *yr = y + (int64_t)(yi ? yi[i] : i) * ld;
            for (int64_t o = ob; o < oe; o++) yr[o] = quant_dot_act(w->type, wdata + (size_t)o * wrow, x, K);
        }
    }
}

void cpu_op_matmul(const cpu_run *r, const zn_node *n, int ith, int nth) {
    const gguf_tensor *w = n->w[0];
    const zn_act *xa = cpu_shape(r, n->src[0]);
    const int fmt = cpu_xq_format(r->c, w);
    const uint8_t *xq = prepare_x(r, n->src[0], fmt, ith, nth);
    const int64_t N = (int64_t)w->ne[1];
    const size_t xrow = xq_row(fmt, xa->cols);
    float *y = cpu_act(r, n->dst);
    int64_t o0, o1;
    band(r, w, ith, nth, &o0, &o1);
    dot_band(r, w, w->data, cpu_packed(r->c, w), o0, o1, xq, xrow, NULL, xa->rows, y, NULL, N);

    const float *b = n->w[1] ? (const float *)n->w[1]->data : NULL;
    const float s = n->w[2] ? *(const float *)n->w[2]->data : 1.0f;
    if (!b && !n->w[2]) return;
    for (int64_t t = 0; t < xa->rows; t++) {
        float *yr = y + t * N;
        if (n->matmul.bias_first) /* (Wx + b) * s */
            for (int64_t o = o0; o < o1; o++) yr[o] = (yr[o] + (b ? b[o] : 0.0f)) * s;
        else
            for (int64_t o = o0; o < o1; o++) yr[o] = yr[o] * s + (b ? b[o] : 0.0f);
    }
}

/* Groups the token x slot pairs by expert (thread 0; cached per route). */
static void moe_lists(const cpu_run *r, int route_act, int ith) {
    cpu_ctx *c = r->c;
    if (c->tls[ith].moe_route == route_act) return;
    const zn_act *ra = cpu_shape(r, route_act);
    const int k = ra->cols / 2, n_exp = c->m->hp.n_expert, cap = c->max_tokens * k;
    if (ith == 0) {
        const float *route = cpu_act(r, route_act);
        memset(c->moe_count, 0, sizeof *c->moe_count * (size_t)n_exp);
        for (int t = 0; t < ra->rows; t++)
            for (int j = 0; j < k; j++) {
                const int e = (int)route[t * 2 * k + j];
                c->moe_slots[(size_t)e * cap + c->moe_count[e]++] = t * k + j;
            }
    }
    cpu_pool_barrier(c->pool);
    c->tls[ith].moe_route = route_act;
}

void cpu_op_moe_matmul(const cpu_run *r, const zn_node *n, int ith, int nth) {
    cpu_ctx *c = r->c;
    const gguf_tensor *w = n->w[0];
    const zn_act *xa = cpu_shape(r, n->src[0]), *ra = cpu_shape(r, n->src[1]);
    const int k = ra->cols / 2, n_exp = (int)w->ne[2], cap = c->max_tokens * k;
    const bool per_slot = xa->rows != ra->rows; /* x has a row per token x slot */
    const int fmt = cpu_xq_format(c, w);
    moe_lists(r, n->src[1], ith);
    const uint8_t *xq = prepare_x(r, n->src[0], fmt, ith, nth);
    const size_t xrow = xq_row(fmt, xa->cols);
    const int64_t N = (int64_t)w->ne[1];
    const size_t expert_bytes = zn_row_size(w->type, (int64_t)w->ne[0]) * (size_t)N;
    float *y = cpu_act(r, n->dst);
    const float *scale = n->w[2] ? (const float *)n->w[2]->data : NULL;
    int32_t xi[ZN_MAX_BATCH * ZN_MAX_EXPERTS_USED];
    const uint8_t *pw = cpu_packed(c, w);
    const size_t packed_expert = (size_t)cpu_pack_groups(N) * cpu_pack_group_bytes(w->type, (int64_t)w->ne[0]);
    int64_t o0, o1;
    band(r, w, ith, nth, &o0, &o1);
    for (int e = 0; e < n_exp; e++) {
        const int cnt = c->moe_count[e];
        if (!cnt) continue;
        const int32_t *slots = c->moe_slots + (size_t)e * cap;
        for (int i = 0; i < cnt; i++) xi[i] = per_slot ? slots[i] : slots[i] / k;
        dot_band(r, w, w->data + (size_t)e * expert_bytes, pw ? pw + (size_t)e * packed_expert : NULL, o0, o1, xq,
                 xrow, xi, cnt, y, slots, N);
        if (scale)
            for (int i = 0; i < cnt; i++)
                for (int64_t o = o0; o < o1; o++) y[(int64_t)slots[i] * N + o] *= scale[e];
    }
}
