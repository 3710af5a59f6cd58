/* Random-weight GGUF files with the exact tensor names, shapes and
 * per-tensor quantization types of real models, for benchmarks and
 * loader tests. Weights are valid quantized blocks drawn from a seeded PRNG
 * (effective values ~ N(0, 0.02), no zero blocks) and streamed to disk, so
 * a 20 GB model needs no more than a few MB of memory. */
#ifndef ZINC_SYNTH_H
#define ZINC_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "status.h"

#define SYNTH_NAME_MAX 64

typedef struct synth_opts {
    const char *like;   /* "qwen3.5-2b", ... (synth_model_list()) */
    const char *ftype;  /* "q4_k_m", ... (synth_ftype_list()); NULL: q4_k_m */
    int n_layer;        /* 0: the model's */
    int n_expert;       /* 0: the model's (MoE only) */
    int n_vocab;        /* 0: the model's */
    bool gate_up;       /* MoE: the experts' gate and up as one ffn_gate_up_exps (llama.cpp's merged layout) */
    uint64_t seed;
} synth_opts;

typedef struct synth_summary {
    uint64_t n_tensors, n_params, data_bytes;
    uint64_t bytes_by_type[ZN_TYPE_COUNT];
} synth_summary;

const char *synth_model_list(void); /* "qwen3.5-2b, qwen3.5-35b-a3b, ..." */
const char *synth_ftype_list(void); /* "f32, f16, bf16, q8_0, ..." */

/* Writes the file; fills *sum (may be NULL). Errors name the option or the
 * path. */
zn_status synth_write(const synth_opts *o, const char *path, synth_summary *sum, zn_err *err);

typedef struct synth_tensor {
    char name[SYNTH_NAME_MAX];
    uint32_t n_dims;
    uint64_t ne[4];
    zn_type type;
} synth_tensor;

/* The tensors synth_write writes, in file order, with their types. *t is
 * malloc'ed: free() it. */
zn_status synth_plan(const synth_opts *o, synth_tensor **t, size_t *n, zn_err *err);

/* llama-quantize's type choice: sets t[i].type to what `llama-quantize --type ftype` picks for each tensor
 * of an F32 model with these tensors (the whole model: names decide the
 * role, block index and tying), n_layer_all blocks and n_expert experts. */
zn_status synth_assign_types(synth_tensor *t, size_t n, const char *ftype, int n_layer_all, int n_expert, zn_err *err);

#endif
