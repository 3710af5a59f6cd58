/* Internals of the CPU backend shared by backend_cpu.c and the cpu_*.c
 * kernel files. Not a public API. */
#ifndef ZINC_CPU_H
#define ZINC_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "model.h"
#include "quant.h"

/* ---- thread pool: created once, runs one function on every thread ---- */
typedef struct cpu_pool cpu_pool;
typedef void (*cpu_pool_fn)(void *arg, int ith, int nth);

zn_status cpu_pool_init(cpu_pool **p, int n_threads, zn_err *err);
void cpu_pool_free(cpu_pool *p);
/* Runs fn(arg, ith, nth) on all threads (ith 0 is the caller); returns when
 * every thread has returned. */
void cpu_pool_run(cpu_pool *p, cpu_pool_fn fn, void *arg);
/* Waits for every thread of the running job; call from inside fn. */
void cpu_pool_barrier(cpu_pool *p);

/* ---- vector kernels (AVX2 or scalar, chosen at init) ---- */

/* Matmul tile: y[r][j] = W[r] . x[j] for the nr (1..CPU_TILE_ROWS) weight
 * rows at w + r * wrow and the nt (1..CPU_TILE) tokens x[j], the x[j] in the
 * weight's vec-dot format (cpu_tile_avx2.c, cpu_tile_vnni_avx2.c). Each
 * (row, token) result is computed the same way whatever nr and nt are. */
#define CPU_TILE 8
#define CPU_TILE_ROWS 4
typedef void (*cpu_tile_fn)(const void *w, size_t wrow, int nr, const void *const *x, int nt, int64_t n,
                            float (*y)[CPU_TILE]);

typedef struct cpu_vec {
    cpu_tile_fn (*tile)(zn_type t);  /* NULL result: no tile kernel for t */
    float (*dot_f16)(const zn_half *a, const float *b, int n);
    void (*axpy_f16)(float *y, const zn_half *x, float a, int n);  /* y += a*x */
    void (*to_f16)(zn_half *dst, const float *src, int n);
} cpu_vec;

void cpu_vec_select(cpu_vec *v); /* cpu_vec.c */
#ifdef __x86_64__
float cpu_dot_f16_avx2(const zn_half *a, const float *b, int n);
void cpu_axpy_f16_avx2(float *y, const zn_half *x, float a, int n);
void cpu_to_f16_avx2(zn_half *dst, const float *src, int n);
cpu_tile_fn cpu_tile_avx2(zn_type t);
cpu_tile_fn cpu_tile_vnni(zn_type t); /* the same on AVX-VNNI */
#endif

/* ---- backend state ---- */
typedef struct cpu_ctx {
    const zn_model *m;
    int n_threads;
    cpu_pool *pool;
    cpu_vec vec;
    float *arena;           /* activations, graph arena_floats */
    size_t arena_floats;
    int max_tokens;
    /* activations quantized for a matmul and MoE slots grouped by expert,
     * both reused by the next op with the same input; which input they hold
     * is tracked per thread (tls) so threads never race on the keys -- they
     * all see the same node sequence and so take the same decisions */
    uint8_t *xq;
    size_t xq_bytes;
    int32_t *moe_slots;     /* [n_expert][max_tokens * k] */
    int32_t *moe_count;     /* [n_expert] */
    struct cpu_tls {
        _Alignas(64) int xq_act;
        zn_type xq_type;
        int moe_route;
    } *tls;                 /* [n_threads] */
    /* per-thread scratch: attention scores (grown by seq_init), rope table */
    float *att;
    size_t att_stride;
    float *rope;            /* [n_threads][head_dim] */
    int rope_stride;
    /* layer -> index among attention / recurrent layers */
    int *attn_index, *recr_index;
} cpu_ctx;

typedef struct cpu_seq {
    int n_ctx;
    int n_attn, n_recr;
    zn_half **k, **v;       /* per attention layer: [n_ctx][n_head_kv * head_dim] */
    float **conv, **delta;  /* per recurrent layer: conv [conv_dim][d_conv-1], delta [H_v][Dv][Dk] */
    size_t kv_row_k, kv_row_v;
} cpu_seq;

typedef struct cpu_run {
    cpu_ctx *c;
    cpu_seq *s;
    const zn_graph *g;
} cpu_run;

typedef void (*cpu_kernel)(const cpu_run *r, const zn_node *n, int ith, int nth);

static inline float *cpu_act(const cpu_run *r, int id) { return r->c->arena + r->g->acts[id].off; }
static inline const zn_act *cpu_shape(const cpu_run *r, int id) { return &r->g->acts[id]; }
/* [i0, i1) of n items for thread ith of nth. */
static inline void cpu_split(int64_t n, int ith, int nth, int64_t *i0, int64_t *i1) {
    *i0 = n * ith / nth;
    *i1 = n * (ith + 1) / nth;
}

/* kernels (cpu_ops.c, cpu_matmul.c) */
void cpu_op_embed(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_rmsnorm(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_rope(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_kv_store(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_attn(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_add(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_swiglu(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_sigmoid_mul(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_moe_route(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_moe_sum(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_get_rows(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_matmul(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_moe_matmul(const cpu_run *r, const zn_node *n, int ith, int nth);
/* Qwen3.5 ops (cpu_ssm.c) */
void cpu_op_copy_cols(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_ssm_conv(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_gdn(const cpu_run *r, const zn_node *n, int ith, int nth);

#endif
