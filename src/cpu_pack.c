/* Repacking of Q4_K matmul weights for the CPU backend (layout in cpu.h).
 * The model stays immutable and mapped; the packed copy belongs to the
 * backend context. Packing only moves bytes (scales and mins unpacked from
 * their 12-byte form), so the packed kernels compute the same integer dot
 * products as the row kernels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "quant_impl.h"

void cpu_pack_q4k(const void *rows, int64_t n_rows, int64_t n, cpu_q4k_x8 *out) {
    const int64_t nb = n / QK_K;
    const size_t wrow = zn_row_size(ZN_TYPE_Q4_K, n);
    for (int64_t g = 0; g < cpu_pack_groups(n_rows); g++)
        for (int64_t i = 0; i < nb; i++) {
            cpu_q4k_x8 *o = &out[g * nb + i];
            memset(o, 0, sizeof *o);
            for (int r = 0; r < CPU_PACK_ROWS && g * CPU_PACK_ROWS + r < n_rows; r++) {
                const block_q4_K *b =
                    (const block_q4_K *)((const uint8_t *)rows + (size_t)(g * CPU_PACK_ROWS + r) * wrow) + i;
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
}

/* Q4_K weights that matmuls read: everything but a token embedding that
 * only the embedding lookup uses. */
static bool packable(const zn_model *m, const gguf_tensor *t) {
    return t->type == ZN_TYPE_Q4_K && (t != m->tok_embd || m->tied_output);
}

zn_status cpu_pack_init(cpu_ctx *c, zn_err *err) {
    const zn_model *m = c->m;
    c->packed = NULL;
    c->packed_bytes = 0;
    if (!c->vec.q4k_x8) return ZN_OK;
    c->packed = calloc(m->gguf.n_tensors + 1, sizeof *c->packed);
    if (!c->packed) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory");
    for (uint64_t i = 0; i < m->gguf.n_tensors; i++) {
        const gguf_tensor *t = &m->gguf.tensors[i];
        if (!packable(m, t)) continue;
        const int64_t K = (int64_t)t->ne[0], N = (int64_t)t->ne[1], E = (int64_t)(t->ne[2] * t->ne[3]);
        const size_t expert = (size_t)cpu_pack_groups(N) * (size_t)(K / QK_K) * sizeof(cpu_q4k_x8);
        c->packed[i] = aligned_alloc(64, (expert * (size_t)E + 63) / 64 * 64);
        if (!c->packed[i]) return zn_errf(err, ZN_ERR_NOMEM, "cpu: out of memory packing '%s'", t->name);
        c->packed_bytes += expert * (size_t)E;
        const size_t src_expert = zn_row_size(t->type, K) * (size_t)N;
        for (int64_t e = 0; e < E; e++)
            cpu_pack_q4k((const uint8_t *)t->data + (size_t)e * src_expert, N, K,
                         (cpu_q4k_x8 *)((uint8_t *)c->packed[i] + (size_t)e * expert));
    }
    return ZN_OK;
}

void cpu_pack_free(cpu_ctx *c) {
    for (uint64_t i = 0; c->packed && i < c->m->gguf.n_tensors; i++) free(c->packed[i]);
    free(c->packed);
    c->packed = NULL;
}

const cpu_q4k_x8 *cpu_packed(const cpu_ctx *c, const gguf_tensor *w) {
    const uintptr_t p = (uintptr_t)w, t0 = (uintptr_t)c->m->gguf.tensors;
    if (!c->packed || p < t0 || p >= t0 + sizeof *w * c->m->gguf.n_tensors) return NULL;
    return c->packed[model_weight_id(c->m, w)];
}
