/* Internals of the CPU backend shared by backend_cpu.c and the cpu_*.c
 * kernel files. Not a public API. */
#ifndef ZINC_CPU_H
#define ZINC_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "model.h"
#include "backend.h"
#include "kv_blocks.h"
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

/* Q4_K, Q6_K and Q8_0 weights repacked at init (cpu_pack.c): 8 rows interleaved
 * per block, so one 32-byte load holds 4 weights of each of the 8 rows and
 * a GEMM step takes 8 rows x up to 4 tokens with each token's 4 activations
 * broadcast (no per-row unpacking or horizontal sums). A tensor's rows are
 * cut in groups of 8 (the last one padded with zero rows; per expert for
 * 3-D tensors); a group is its K / block-size packed blocks in a row. */
#define CPU_PACK_ROWS 8
#define CPU_PACK_TOKENS 4
typedef struct cpu_q4k_x8 {
    zn_half d[CPU_PACK_ROWS], dmin[CPU_PACK_ROWS];
    uint8_t sc[8][CPU_PACK_ROWS];      /* [sub-block j][row]: 6-bit scale */
    uint8_t mins[4][CPU_PACK_ROWS][2]; /* [p][row][j - 2p]: 6-bit mins of sub-blocks 2p, 2p+1 */
    /* [c][k][row][e]: low nibble = element 64c + 4k + e (sub-block 2c),
     * high nibble = the element 32 further (sub-block 2c+1): the original
     * Q4_K byte order, rows interleaved 4 bytes at a time */
    uint8_t qs[4][8][CPU_PACK_ROWS][4];
} cpu_q4k_x8;
/* Q6_K: the 6-bit codes (stored + 32) as Q4_K-ordered nibbles plus their
 * top two bits, four codes' worth per byte of qh. */
typedef struct cpu_q6k_x8 {
    zn_half d[CPU_PACK_ROWS];
    int8_t sc[8][CPU_PACK_ROWS][2];     /* [p][row][g - 2p]: scales of the 16-code groups 2p, 2p+1 */
    uint8_t ql[4][8][CPU_PACK_ROWS][4]; /* as cpu_q4k_x8.qs: low 4 bits of the codes */
    /* [p][k][row][e]: bits 2m, 2m+1 = top bits of element 128p + 32m + 4k + e */
    uint8_t qh[2][8][CPU_PACK_ROWS][4];
} cpu_q6k_x8;
/* Q8_0: the token's codes come as unsigned (code + 128, CPU_XQ_Q8_0_U) so
 * that vpdpbusd multiplies them with the signed weights directly; wsum
 * takes the 128 * sum of the row's codes back off. */
typedef struct cpu_q80_x8 {
    zn_half d[CPU_PACK_ROWS];
    int16_t wsum[CPU_PACK_ROWS];        /* sum of the row's 32 codes */
    int8_t qs[8][CPU_PACK_ROWS][4];     /* [k][row][e]: element 4k + e */
} cpu_q80_x8;
/* y[t][r] = row r . x[t] for the 8 rows of one packed group and nt >= 1
 * tokens x[t] = xq + (xi ? xi[t] : t) * xrow in the packed type's
 * activation format (cpu_xq_format); each result is computed the same way
 * whatever nt is, and bit for bit the same on AVX2 and AVX-VNNI. */
typedef void (*cpu_pack_tile_fn)(const void *w, const uint8_t *xq, size_t xrow, const int32_t *xi, int nt, int64_t n,
                                 float (*y)[CPU_PACK_ROWS]);
/* The same for two consecutive groups, w and w + gbytes (16 rows: y[t][r],
 * r < 8 the first group's), bit for bit what the 8-row kernel gives. */
typedef void (*cpu_pack_tile2_fn)(const void *w, size_t gbytes, const uint8_t *xq, size_t xrow, const int32_t *xi,
                                  int nt, int64_t n, float (*y)[2 * CPU_PACK_ROWS]);
/* Bytes of one packed group of rows of length n (0: t is not packed). */
size_t cpu_pack_group_bytes(zn_type t, int64_t n);
/* Packs rows [0, n_rows) of type-t data (row length n) into
 * ceil(n_rows / 8) groups at out (zero rows pad the last group). */
void cpu_pack_rows(zn_type t, const void *rows, int64_t n_rows, int64_t n, void *out);
static inline int64_t cpu_pack_groups(int64_t n_rows) { return (n_rows + CPU_PACK_ROWS - 1) / CPU_PACK_ROWS; }
/* Activation formats of the matmul inputs: a zn_type (the weight's vec-dot
 * type) or this one, Q8_0 blocks with the codes stored + 128. */
#define CPU_XQ_Q8_0_U ((int)ZN_TYPE_COUNT)

/* Attention of CPU_ATT_Q queries at a time sharing one KV head, so each
 * f16 key and value row is converted once for all of them. Per query the
 * arithmetic does not depend on the other queries (nor on nq), so results
 * do not depend on how queries are grouped.
 * scores: s[j][i] = scale * (K_j . q[i]) for keys j < n_keys, i < nq (the
 *   other slots of s[j] get scratch values); K_j = k + j * stride.
 * softmax: s[j][i] = exp(s[j][i] - max) / sum over j < n[i] (slots of
 *   keys j >= n[i] get scratch values).
 * values: y[i] = sum over j < n[i] of s[j][i] * V_j, j ascending; n is
 *   non-decreasing. */
#define CPU_ATT_Q 4
typedef void (*cpu_att_scores_fn)(const zn_half *k, size_t stride, int n_keys, const float *const *q, int nq, int d,
                                  float scale, float (*s)[CPU_ATT_Q]);
typedef void (*cpu_att_softmax_fn)(float (*s)[CPU_ATT_Q], const int *n, int nq);
typedef void (*cpu_att_values_fn)(const zn_half *v, size_t stride, const int *n, const float (*s)[CPU_ATT_Q], int nq,
                                  int d, float *const *y);

typedef struct cpu_vec {
    cpu_pack_tile_fn (*packed)(zn_type t); /* NULL result: no packed kernel, t is not packed */
    cpu_pack_tile2_fn (*packed2)(zn_type t); /* NULL (or a NULL result): no 16-row kernel, pairs take packed */
    cpu_att_scores_fn att_scores;
    cpu_att_softmax_fn att_softmax;
    cpu_att_values_fn att_values;
    void (*to_f16)(zn_half *dst, const float *src, int n);
    /* n values (whole blocks of 32) of a quantized KV format as f16: each
     * the float backend_kv_dequantize gives, rounded to nearest even */
    void (*kv_to_f16)(zn_kv_type t, const uint8_t *src, zn_half *dst, int n);
    void (*swiglu)(float *y, const float *g, const float *u, int64_t n); /* y = silu(g) * u */
    double (*sum_sq)(const float *x, int64_t n);                           /* in double, as ggml */
} cpu_vec;

void cpu_vec_select(cpu_vec *v); /* cpu_vec.c */
#ifdef __x86_64__
void cpu_att_scores_avx2(const zn_half *k, size_t stride, int n_keys, const float *const *q, int nq, int d,
                         float scale, float (*s)[CPU_ATT_Q]);
void cpu_att_softmax_avx2(float (*s)[CPU_ATT_Q], const int *n, int nq);
void cpu_att_values_avx2(const zn_half *v, size_t stride, const int *n, const float (*s)[CPU_ATT_Q], int nq, int d,
                         float *const *y);
void cpu_to_f16_avx2(zn_half *dst, const float *src, int n);
void cpu_kv_to_f16_avx2(zn_kv_type t, const uint8_t *src, zn_half *dst, int n);
void cpu_swiglu_avx2(float *y, const float *g, const float *u, int64_t n);
double cpu_sum_sq_avx2(const float *x, int64_t n);
cpu_pack_tile_fn cpu_packed_avx2(zn_type t);
cpu_pack_tile_fn cpu_packed_vnni(zn_type t);
cpu_pack_tile2_fn cpu_packed_avx512(zn_type t);
#endif

/* ---- backend state ---- */
#define CPU_KVQ_Y (2 * CPU_ATT_Q) /* rows of kvq_y per thread */

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
        int xq_format;      /* a zn_type or CPU_XQ_Q8_0_U */
        int moe_route;
    } *tls;                 /* [n_threads] */
    /* per-thread scratch: attention scores [att_stride][CPU_ATT_Q] (grown
     * by seq_init), rope table */
    float *att;
    size_t att_stride;
    float *rope;            /* [n_threads][head_dim] */
    int rope_stride;
    /* packed copies of the Q4_K / Q6_K / Q8_0 matmul weights, by weight id (NULL:
     * use the mapped rows), and their total size */
    void **packed;
    size_t packed_bytes;
    /* layer -> index among attention / recurrent layers */
    int *attn_index, *recr_index;
    /* KV cache format and block layout (backend.h); attention runs block
     * by block: per thread the values of a block ([CPU_ATT_Q][hd]), and
     * for a quantized format a block's rows of one head as f16 (kvq_rows,
     * for the f16 kernels) */
    zn_kv_type kv_type;
    zn_kv_layout kvl;
    zn_half *kvq_rows;      /* [n_threads][ZN_KV_BLOCK][kvq_hd] (quantized formats) */
    float *kvq_y;           /* [n_threads][CPU_KVQ_Y][kvq_hd]: a block's values, the queries rotated
                               (backend_kv_rotated formats) */
    int kvq_hd;
    /* the shared KV pool (kv_pool_tokens > 0): block i at kv_pool +
     * i * kvl.block_bytes, which are free and how many sequences hold each
     * (seq_copy shares whole blocks) counted by kv_blocks.h */
    uint8_t *kv_pool;
    kvb blocks;
    uint64_t seq_bytes;     /* the live sequences' caches and states (zinc bench -npl, serve) */
    int n_seqs;
} cpu_ctx;

typedef struct cpu_seq {
    int n_ctx;
    int n_attn, n_recr;
    /* the block table (backend.h): position p at row p % ZN_KV_BLOCK of
     * block bix[p / ZN_KV_BLOCK] from base, of which the first n_blk are
     * held; own: the sequence's own blocks (no pool: base, entry b naming
     * block b), else base is the pool's and the blocks may be shared with
     * other sequences (written only once held alone) */
    int32_t *bix;
    int n_blk;
    uint8_t *base, *own;
    float **conv, **delta;  /* per recurrent layer: conv [conv_dim][d_conv-1], delta [H_v][Dv][Dk] */
    uint64_t held;          /* bytes of its caches and states, counted in cpu_ctx.seq_bytes once made */
} cpu_seq;

/* Table entry b's block (every attention layer of its positions). */
static inline uint8_t *cpu_kv_block(const cpu_ctx *c, const cpu_seq *s, int64_t b) {
    return s->base + (size_t)s->bix[b] * c->kvl.block_bytes;
}
/* Where position pos of attention layer li keeps its K row (V: + kvl.k_bytes). */
static inline uint8_t *cpu_kv_row(const cpu_ctx *c, const cpu_seq *s, int li, int64_t pos) {
    return cpu_kv_block(c, s, pos / ZN_KV_BLOCK) + (size_t)(pos % ZN_KV_BLOCK) * c->kvl.pos_bytes +
           (size_t)li * (c->kvl.k_bytes + c->kvl.v_bytes);
}

typedef struct cpu_run {
    cpu_ctx *c;
    cpu_seq *const *s;      /* [g->n_seq]: the state of each sequence of the step */
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

/* Packs the model's matmul weights of the types vec has packed kernels for
 * (cpu_pack.c); cpu_packed: w's packed groups or NULL; cpu_xq_format: the
 * activation format a matmul with w reads. */
zn_status cpu_pack_init(cpu_ctx *c, zn_err *err);
void cpu_pack_free(cpu_ctx *c);
const uint8_t *cpu_packed(const cpu_ctx *c, const gguf_tensor *w);
int cpu_xq_format(const cpu_ctx *c, const gguf_tensor *w);

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
void cpu_op_gather_rows(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_matmul(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_moe_matmul(const cpu_run *r, const zn_node *n, int ith, int nth);
/* Qwen3.5 ops (cpu_gdn.c) */
void cpu_op_copy_cols(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_conv1d(const cpu_run *r, const zn_node *n, int ith, int nth);
void cpu_op_gdn(const cpu_run *r, const zn_node *n, int ith, int nth);

#endif
