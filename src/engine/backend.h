/* A compute backend: runs graphs (graph.h) for a model.
 *
 * A backend is a table of functions chosen once by name ("cpu", "vulkan").
 * Its context owns whatever it prepared at init (device copies of the
 * weights, the activation arena sized g->arena_floats, kernel scratch, the
 * thread pool); each sequence's state (KV cache for attention layers, conv +
 * delta state for recurrent layers) is a separate object it allocates.
 * Nothing is allocated in run(). To add a backend: implement the table and
 * add it to the list in backend.c. */
#ifndef ZINC_BACKEND_H
#define ZINC_BACKEND_H

#include "graph.h"
#include "model.h"
#include "status.h"

/* How the KV cache of attention layers stores keys and values: f16 (the
 * default), or the Q8_0 / Q4_0 blocks of quant.h (32 values and an f16
 * scale per block, quantized per head row on store: 8.5 / 4.5 bits per
 * value instead of 16). Quantized caches need head dims that are multiples
 * of 32 (backend_kv_check). */
/* ZN_KV_Q4_0R: Q4_0 blocks of each head's K and V after a fixed orthogonal
 * rotation (random signs, then a Walsh-Hadamard transform: backend_kv_rotate),
 * the queries rotated alike and the attention output rotated back.
 * ZN_KV_Q3_0R: the same rotation, then blocks of 32 3-bit codes of a
 * Gaussian codebook scaled by the block's RMS (backend_kv_quantize). */
typedef enum zn_kv_type { ZN_KV_F16 = 0, ZN_KV_Q8_0, ZN_KV_Q4_0, ZN_KV_Q4_0R, ZN_KV_Q3_0R, ZN_KV_COUNT } zn_kv_type;

/* The paged KV cache. A sequence's keys and values live in blocks of
 * ZN_KV_BLOCK positions (limits.h); one block holds those positions of
 * every attention layer, position-major: position p of the sequence is
 * row p % ZN_KV_BLOCK of block table[p / ZN_KV_BLOCK], and a row is each
 * attention layer's K row then V row (backend_kv_layout). Blocks need not
 * be adjacent: the kernels go through the table.
 *   kv_pool_tokens 0: seq_init allocates the blocks for all n_ctx positions
 *     of the sequence (a context shorter than a block: a block of n_ctx
 *     rows), so a sequence never waits for memory;
 *   kv_pool_tokens > 0: init allocates one pool of that many positions
 *     (rounded up to whole blocks) shared by the context's sequences;
 *     seq_reserve takes blocks from it as a sequence grows, seq_trim,
 *     seq_reset and seq_free give them back. A sequence may then be
 *     created for more positions than the pool has free (admission is the
 *     caller's: engine_kv_free). seq_copy shares blocks instead of
 *     copying them: a block is held by every sequence whose table names
 *     it (counted) and is free when none does; a sequence writes only
 *     blocks it holds alone, seq_reserve replacing shared ones it is about
 *     to write by private copies (copy-on-write). */
typedef struct zn_kv_layout {
    size_t k_bytes, v_bytes; /* one position's K row / V row of one layer (n_head_kv * head_dim in the format) */
    size_t pos_bytes;        /* one position of every attention layer: n_attn * (k_bytes + v_bytes) */
    size_t block_bytes;      /* ZN_KV_BLOCK positions */
} zn_kv_layout;

/* How a backend is set up: configuration is data, one struct per engine
 * (nothing is read from the environment), so engines in one process can
 * differ. Start from backend_default_opts(). */
typedef struct zn_backend_opts {
    int n_threads;        /* CPU worker threads (>= 1) */
    int max_tokens;       /* largest step (graph max_tokens) */
    size_t arena_floats;  /* activation arena size (graph arena_floats) */
    int device;           /* index into the backend's devices(); -1: the best one */
    zn_kv_type kv_type;   /* KV cache format (--kv-type) */
    int64_t kv_pool_tokens; /* > 0: one KV pool of this many positions shared by the sequences (see above) */
    const char *tune;     /* tuning overrides "key=value,..." (vulkan: the keys of vk_tune.c); NULL: none */
    bool profile;         /* GPU time per op on stderr after every step (each step recorded anew) */
    bool profile_kernels; /* ... split by shader too */
    bool trace;           /* vulkan: each decode step recorded, its dispatches in order on stderr, "|" at barriers */
    /* test hooks (vulkan) */
    bool no_fusion;       /* every graph node on its own */
    bool no_replay;       /* record every decode step anew instead of replaying the recorded one */
    bool mm_emulate;      /* the f16 GEMM path from 2 tokens on, on a scalar emulation of
                             cooperative matrices where the device has none */
    uint64_t max_alloc;   /* bytes per device allocation at most (0: the device's limit) */
    bool lazy_pipelines;  /* create pipelines on first use, not all at init (what the
                             pipeline counter sees without the init pass; with graph
                             set they always are) */
    uint64_t refuse_kinds; /* pipelines of these kinds (bit k: vk_ops.h vkop_kind k) fail to
                             build, as when a driver refuses one */
    /* The graph whose weights init prepares, and whose node/activation
     * capacities bound later runs; NULL: the model's own step (graph_build).
     * Hand-built graphs (graph_init_empty; the op conformance test) pass
     * one; every graph run later may read only weights it reads. */
    const zn_graph *graph;
} zn_backend_opts;

/* A device a backend can run on, for listings and --device. */
typedef struct zn_device_info {
    char name[256];
    char driver[256];
    const char *kind;     /* "discrete", "integrated", "virtual", "cpu", "other" */
    bool usable;          /* zinc can open it */
    bool emulated;        /* the API implemented on the CPU (lavapipe): slower than the cpu backend */
    bool coopmat, coopmat2;
    uint64_t vram_bytes;
    uint32_t api_major, api_minor;
    uint32_t compute_units; /* SMs / CUs (0: unknown) */
    uint32_t vendor_id, device_id; /* PCI ids (0: none), for the hardware profile */
    char line[1024];      /* one line of capabilities (zinc --list-devices) */
} zn_device_info;

/* A backend's active tuning: its class (the table row chosen for the
 * device), the compute units its counts were scaled to, and every key in
 * the override syntax. */
typedef struct zn_tuning {
    char cls[64];
    uint32_t units;
    char spec[ZN_TUNE_TEXT_MAX];
} zn_tuning;

/* Host-side cost of the decode steps a backend ran since init (every
 * sequence of the step one token: one sequence's, or several's), for zinc
 * bench: prepare = walking the graph and recording commands (or,
 * replaying, checking the recording still fits and writing the positions),
 * submit = handing the work to the device, wait = blocked until it
 * finished, read = copying results out after such a step. */
typedef struct zn_backend_stats {
    uint64_t steps, replayed;     /* decode steps; those that reused a recording */
    uint64_t pipelines, pipelines_late; /* compute pipelines created in all, and after init
                                           (inside a step: 0 when init built them all) */
    double prepare_s, submit_s, wait_s, read_s;
    uint64_t batched;             /* decode steps of several sequences whose per-sequence ops ran once for
                                     all of them (vulkan: vk_record.c batch_step), replayed or not */
    uint32_t step_dispatches, step_barriers; /* the last decode step recorded: its dispatches and the
                                                barriers between them (vulkan; 0 elsewhere) */
} zn_backend_stats;

/* Memory a backend context holds now, in bytes (zinc bench -npl, zinc
 * serve's ready line): what serving N sequences costs. */
typedef struct zn_backend_mem {
    uint64_t weights;   /* the model's tensors as the backend reads them (CPU: the mapped file's
                           weights plus repacked copies; Vulkan: its device copies) */
    uint64_t scratch;   /* activations and work buffers, shared by every sequence */
    uint64_t seqs;      /* the live sequences' states: KV caches and recurrent states (not the pool) */
    int n_seqs;
    uint64_t kv_pool;   /* the shared KV pool (0: none, each sequence holds its own blocks) */
    int64_t kv_blocks, kv_blocks_free; /* the pool's blocks, and those no sequence holds */
} zn_backend_mem;

typedef struct zn_backend_ops {
    const char *name;
    /* run() takes steps of several sequences; otherwise the engine runs
     * such a step one sequence after the other (same results, the weights
     * read once per sequence) */
    bool multi_seq;
    zn_status (*init)(void **ctx, const zn_model *m, const zn_backend_opts *o, zn_err *err);
    void (*free)(void *ctx);
    /* Per-sequence state for up to n_ctx positions, zeroed. */
    zn_status (*seq_init)(void *ctx, void **state, int n_ctx, zn_err *err);
    void (*seq_free)(void *ctx, void *state);
    /* Forgets the sequence (recurrent state zeroed; KV need not be; its
     * pool blocks go back). */
    void (*seq_reset)(void *ctx, void *state);
    /* Makes the sequence hold the blocks of positions [0, n_pos) (n_pos <=
     * its n_ctx), taking missing ones from the pool, and hold alone those
     * of [n_from, n_pos), the positions about to be written (0 <= n_from
     * <= n_pos): a shared one is replaced by a new block with a copy of
     * its rows below n_from. ZN_ERR_KV_FULL when the pool has too few
     * free for both, changing nothing. Allocates nothing. Without a pool
     * it only checks the range. run() needs the blocks its positions fall
     * in to be held, those it writes alone (the engine reserves [n_past,
     * n_past + n) first). */
    zn_status (*seq_reserve)(void *ctx, void *state, int n_from, int n_pos, zn_err *err);
    /* The blocks holding no position below n_keep go back to the pool (the
     * sequence was cut back to n_keep). Without a pool nothing happens. */
    void (*seq_trim)(void *ctx, void *state, int n_keep);
    /* Copies src's recurrent state (conv + delta of every recurrent layer)
     * and its KV entries for positions [0, n_kv) into dst, both sequences
     * of this context; n_kv <= both contexts, src holding the blocks of
     * [0, n_kv). Without a pool the bytes are copied; with one dst then
     * holds src's blocks wholly below n_kv (shared, its own ones there let
     * go) and a block of its own with a copy of the rest, taken from the
     * pool when dst holds none alone there (ZN_ERR_KV_FULL when none is
     * free, changing nothing). dst's other KV entries stay as they were.
     * What a checkpoint (save: a small sequence, n_kv 0) and its restore,
     * or a fork of a sequence, are made of. */
    zn_status (*seq_copy)(void *ctx, void *dst, const void *src, int n_kv, zn_err *err);
    /* Runs every node of g: states[i] is the state of the step's sequence
     * g->seqs[i] (g->n_seq distinct states; graph_check_step holds). A
     * backend that cannot run steps of several sequences fails those with
     * ZN_ERR_UNSUPPORTED. */
    zn_status (*run)(void *ctx, void *const *states, const zn_graph *g, zn_err *err);
    /* Copies rows [row0, row0 + n_rows) of activation act of the last run
     * to out ([n_rows][cols] f32). */
    zn_status (*read)(void *ctx, const zn_graph *g, int act, int row0, int n_rows, float *out, zn_err *err);
    /* Optional: rows [row0, row0 + n_rows) of activation act of the last
     * run where they already are in host memory, valid until the next run
     * or free; NULL where they are not (read copies them then). Saves the
     * copy of a batched step's logits: 64 rows of a 151,936-word vocab are
     * 39 MB, 5.5 ms of a 27 ms step on an H100 host. */
    const float *(*view)(void *ctx, const zn_graph *g, int act, int row0, int n_rows);
    /* Copies in ([rows][cols] f32) into activation act of g, an input no
     * node writes (graph_input), for the next run of g. */
    zn_status (*write)(void *ctx, const zn_graph *g, int act, const float *in, zn_err *err);
    /* Optional (NULL: the backend keeps none). */
    void (*stats)(void *ctx, zn_backend_stats *out);
    /* Optional (NULL: not known): the memory this context holds now. */
    void (*mem)(void *ctx, zn_backend_mem *out);
    /* Optional (NULL: no devices to choose): up to cap devices in the order
     * opts.device counts them; *def = the one device -1 picks (-1: none). */
    zn_status (*devices)(zn_device_info *out, int cap, int *n, int *def, zn_err *err);
    /* Optional (NULL: nothing to tune): the tuning of this context, or with
     * ctx NULL what device `device` would get with overrides `tune`. */
    zn_status (*tuning)(void *ctx, int device, const char *tune, zn_tuning *out, zn_err *err);
} zn_backend_ops;

/* Options with every field at its default (device -1, no overrides). */
zn_backend_opts backend_default_opts(void);

/* "f16", "q8_0", "q4_0", "q4_0r", "q3_0r"; backend_kv_type_parse: -1 for another name. */
const char *backend_kv_type_name(zn_kv_type t);
int backend_kv_type_parse(const char *name);
/* The bytes of n values in KV format t (n a multiple of its block size). */
size_t backend_kv_bytes(zn_kv_type t, int64_t n);
/* n values (a multiple of 32) in format t's blocks, rotated or not: Q8_0
 * rounded as the matmuls' activations are, Q4_0 by the reference quantizer
 * (ggml's arithmetic), f16 to nearest even; q3_0r's blocks are
 * {f16 d; uint8 lo[8]; uint8 hi[4]}, d the RMS of the 32 values, code c of
 * value j (2 low bits in lo[j / 4] at bit 2 (j % 4), the high bit in
 * hi[j / 8] at bit j % 8) the nearest of 8 Lloyd-Max levels for a unit
 * Gaussian, value d * level[c]. kv_store.comp writes the same bytes. */
void backend_kv_quantize(zn_kv_type t, const float *x, void *dst, int64_t n);
/* Back to n floats. */
void backend_kv_dequantize(zn_kv_type t, const void *src, float *y, int64_t n);
/* q3_0r's 8 levels, code order (for kernels that dequantize themselves). */
extern const float backend_kv_q3_level[8];
/* n values (a multiple of the block size) in format t as every backend
 * stores them: backend_kv_quantize, a rotated format rotating each head
 * of hd values first (the Vulkan backend in place, by kv_rot.comp, before
 * kv_store.comp: the same floats, so the same bytes). */
void backend_kv_put(zn_kv_type t, const float *x, void *dst, int64_t n, int hd);
/* Does format t rotate heads (ZN_KV_Q4_0R, ZN_KV_Q3_0R)? */
bool backend_kv_rotated(zn_kv_type t);
/* One head of hd values (a power of two, at most ZN_KV_ROT_MAX_HD) in
 * place: x <- H D x / sqrt(hd), D the fixed signs (a hash bit of the
 * index), H the Walsh-Hadamard matrix; inverse: x <- D H x / sqrt(hd).
 * Orthogonal, so q.k is unchanged when both are rotated, while a head's
 * outlier channels spread over all of it before 4-bit rounding. kv_rot.comp
 * does the same float operations in the same order. */
void backend_kv_rotate(float *x, int hd, bool inverse);
/* 1 / sqrt(hd) as both backends scale by it. */
float backend_kv_rot_scale(int hd);
/* Whether model m can keep its KV cache in format t: ZN_ERR_UNSUPPORTED
 * naming the model and the head dim that is not a multiple of 32 (q4_0r:
 * not a power of two up to ZN_KV_ROT_MAX_HD). */
zn_status backend_kv_check(const zn_model *m, zn_kv_type t, zn_err *err);

/* The block layout of model m's KV cache in format t. */
zn_kv_layout backend_kv_layout(const zn_model *m, zn_kv_type t);

/* NULL when no backend has that name. */
const zn_backend_ops *backend_find(const char *name);
/* "cpu, vulkan" for usage and error messages. */
const char *backend_names(void);

extern const zn_backend_ops zn_backend_cpu;  /* backend_cpu.c */
extern const zn_backend_ops zn_backend_vulkan; /* backend_vulkan.c */

#endif
