/* Repacking of Q4_K, Q6_K and Q8_0 matmul weights for the CPU backend (layouts
 * in cpu.h).
 * The model stays immutable and mapped; the packed copy belongs to the
 * backend context. Packing only moves bytes (scales and mins unpacked from
 * their 12-byte form; Q8_0 row sums added), so the packed kernels compute
 * the same integer dot products as the row kernels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "quant_impl.h"

static void pack_q4k(const block_q4_K *const *rows, int nr, int64_t i, cpu_q4k_x8 *o) {
    for (int r = 0; r < nr; r++) {
        const block_q4_K *b = rows[r] + i;
        uint32_t u[4];
        uint8_t sm[16]; /* 8 scales, 8 mins */
        quant_k4_unpack(b->scales, u);
        memcpy(sm, u, sizeof sm);
        o->d[r] = b->d;
        o->dmin[r] = b->dmin;
        for (int j = 0; j < 8; j++) {
            o->sc[j][r] = sm[j];
            o->mins[j / 2][r][j % 2] = sm[8 + j];
        }
        for (int c = 0; c < 4; c++)
            for (int k = 0; k < 8; k++) memcpy(o->qs[c][k][r], b->qs + 32 * c + 4 * k, 4);
    }
}

/* The 256 6-bit codes (stored + 32) of a Q6_K block, in element order:
 * half h holds elements 128h + 32q + l, q = 0..3, from ql's low (q = 0, 1)
 * or high (q = 2, 3) nibbles and bits 2q, 2q+1 of qh. */
static void q6_codes(const block_q6_K *b, uint8_t c[QK_K]) {
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t q0 = b->ql[64 * h + l], q1 = b->ql[64 * h + 32 + l], hb = b->qh[32 * h + l];
            c[128 * h + l] = (uint8_t)((q0 & 0xF) | (hb & 3) << 4);
            c[128 * h + 32 + l] = (uint8_t)((q1 & 0xF) | (hb >> 2 & 3) << 4);
            c[128 * h + 64 + l] = (uint8_t)((q0 >> 4) | (hb >> 4 & 3) << 4);
            c[128 * h + 96 + l] = (uint8_t)((q1 >> 4) | (hb >> 6 & 3) << 4);
        }
}

static void pack_q6k(const block_q6_K *const *rows, int nr, int64_t i, cpu_q6k_x8 *o) {
    for (int r = 0; r < nr; r++) {
        const block_q6_K *b = rows[r] + i;
        uint8_t c[QK_K];
        q6_codes(b, c);
        o->d[r] = b->d;
        for (int g = 0; g < 16; g++) o->sc[g / 2][r][g % 2] = b->scales[g];
        for (int q = 0; q < 4; q++)
            for (int k = 0; k < 8; k++)
                for (int e = 0; e < 4; e++) {
                    const int at = 64 * q + 4 * k + e;
                    o->ql[q][k][r][e] = (uint8_t)((c[at] & 0xF) | (c[at + 32] & 0xF) << 4);
                }
        for (int p = 0; p < 2; p++)
            for (int k = 0; k < 8; k++)
                for (int e = 0; e < 4; e++) {
                    int v = 0;
                    for (int m = 0; m < 4; m++) v |= (c[128 * p + 32 * m + 4 * k + e] >> 4) << (2 * m);
                    o->qh[p][k][r][e] = (uint8_t)v;
                }
    }
}

static void pack_q80(const block_q8_0 *const *rows, int nr, int64_t i, cpu_q80_x8 *o) {
    for (int r = 0; r < nr; r++) {
        const block_q8_0 *b = rows[r] + i;
        int sum = 0;
        for (int e = 0; e < QK8_0; e++) sum += b->qs[e];
        o->d[r] = b->d;
        o->wsum[r] = (int16_t)sum;
        for (int k = 0; k < 8; k++) memcpy(o->qs[k][r], b->qs + 4 * k, 4);
    }
}

size_t cpu_pack_group_bytes(zn_type t, int64_t n) {
    switch (t) {
    case ZN_TYPE_Q4_K: return (size_t)(n / QK_K) * sizeof(cpu_q4k_x8);
    case ZN_TYPE_Q6_K: return (size_t)(n / QK_K) * sizeof(cpu_q6k_x8);
    case ZN_TYPE_Q8_0: return (size_t)(n / QK8_0) * sizeof(cpu_q80_x8);
    default: return 0;
    }
}

/* Groups [g0, g1) of cpu_pack_rows. */
static void pack_groups(zn_type t, const void *rows, int64_t n_rows, int64_t n, void *out, int64_t g0, int64_t g1) {
    const size_t wrow = zn_row_size(t, n), gbytes = cpu_pack_group_bytes(t, n);
    const int64_t nb = n / zn_type_get(t)->blck;
    for (int64_t g = g0; g < g1; g++) {
        const void *r8[CPU_PACK_ROWS];
        const int nr = n_rows - g * CPU_PACK_ROWS < CPU_PACK_ROWS ? (int)(n_rows - g * CPU_PACK_ROWS) : CPU_PACK_ROWS;
        for (int r = 0; r < nr; r++) r8[r] = (const uint8_t *)rows + (size_t)(g * CPU_PACK_ROWS + r) * wrow;
        uint8_t *o = (uint8_t *)out + (size_t)g * gbytes;
        memset(o, 0, gbytes);
        for (int64_t i = 0; i < nb; i++) {
            if (t == ZN_TYPE_Q4_K) pack_q4k((const block_q4_K *const *)r8, nr, i, (cpu_q4k_x8 *)o + i);
            else if (t == ZN_TYPE_Q6_K) pack_q6k((const block_q6_K *const *)r8, nr, i, (cpu_q6k_x8 *)o + i);
            else pack_q80((const block_q8_0 *const *)r8, nr, i, (cpu_q80_x8 *)o + i);
        }
    }
}

void cpu_pack_rows(zn_type t, const void *rows, int64_t n_rows, int64_t n, void *out) {
    pack_groups(t, rows, n_rows, n, out, 0, cpu_pack_groups(n_rows));
}

/* Weights that matmuls read, of a type with a packed kernel: everything
 * but a token embedding that only the embedding lookup uses. */
static bool packable(const cpu_ctx *c, const gguf_tensor *t) {
    return c->vec.packed(t->type) && cpu_pack_group_bytes(t->type, (int64_t)t->ne[0]) &&
           (t != c->m->tok_embd || c->m->tied_output);
}

/* Every thread packs its share of each tensor's groups (per expert). */
static void pack_thread(void *arg, int ith, int nth) {
    const cpu_ctx *c = arg;
    const zn_model *m = c->m;
    for (uint64_t i = 0; i < m->gguf.n_tensors; i++) {
        const gguf_tensor *t = &m->gguf.tensors[i];
        if (!c->packed[i]) continue;
        const int64_t K = (int64_t)t->ne[0], N = (int64_t)t->ne[1], E = (int64_t)(t->ne[2] * t->ne[3]);
        const size_t expert = (size_t)cpu_pack_groups(N) * cpu_pack_group_bytes(t->type, K);
        const size_t src_expert = zn_row_size(t->type, K) * (size_t)N;
        int64_t g0, g1;
        cpu_split(cpu_pack_groups(N), ith, nth, &g0, &g1);
        for (int64_t e = 0; e < E; e++)
            pack_groups(t->type, (const uint8_t *)t->data + (size_t)e * src_expert, N, K,
                        (uint8_t *)c->packed[i] + (size_t)e * expert, g0, g1);
    }
}

zn_status cpu_pack_init(cpu_ctx *c, zn_err *err) {
    const zn_model *m = c->m;
    c->packed = calloc(m->gguf.n_tensors + 1, sizeof *c->packed);
    c->packed_bytes = 0;
    if (!c->packed) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory");
    for (uint64_t i = 0; i < m->gguf.n_tensors; i++) {
        const gguf_tensor *t = &m->gguf.tensors[i];
        if (!packable(c, t)) continue;
        const int64_t K = (int64_t)t->ne[0], N = (int64_t)t->ne[1], E = (int64_t)(t->ne[2] * t->ne[3]);
        const size_t expert = (size_t)cpu_pack_groups(N) * cpu_pack_group_bytes(t->type, K);
        c->packed[i] = aligned_alloc(64, (expert * (size_t)E + 63) / 64 * 64);
        if (!c->packed[i]) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory packing '%s'", t->name);
        c->packed_bytes += expert * (size_t)E;
    }
    cpu_pool_run(c->pool, pack_thread, c); /* a multi-GB model packs in seconds on one thread */
    return ZN_OK;
}

void cpu_pack_free(cpu_ctx *c) {
    for (uint64_t i = 0; c->packed && i < c->m->gguf.n_tensors; i++) free(c->packed[i]);
    free(c->packed);
    c->packed = NULL;
}

const uint8_t *cpu_packed(const cpu_ctx *c, const gguf_tensor *w) {
    const uintptr_t p = (uintptr_t)w, t0 = (uintptr_t)c->m->gguf.tensors;
    if (!c->packed || p < t0 || p >= t0 + sizeof *w * c->m->gguf.n_tensors) return NULL;
    return c->packed[model_weight_id(c->m, w)];
}

int cpu_xq_format(const cpu_ctx *c, const gguf_tensor *w) {
    return w->type == ZN_TYPE_Q8_0 && cpu_packed(c, w) ? CPU_XQ_Q8_0_U : (int)quant_vec_dot_type(w->type);
}
