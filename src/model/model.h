/* A loaded model: architecture, hyper-parameters and weights.
 *
 * The model is immutable after model_load() and shared by every engine and
 * sequence. Weights are the GGUF reader's tensor records (gguf_tensor: name,
 * type, ne[], data pointer into the read-only map); nothing is copied. A
 * weight's stable id, for backends that upload weights, is its index in
 * model->gguf.tensors (model_weight_id()).
 *
 * Shapes follow GGUF: ne[0] is the row length (the input dimension of a
 * matmul), ne[1] the number of rows (outputs), ne[2] the expert index. */
#ifndef ZINC_MODEL_H
#define ZINC_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf.h"
#include "limits.h"
#include "status.h"

typedef enum zn_arch {
    ZN_ARCH_LLAMA,     /* dense or Mixtral-style MoE */
    ZN_ARCH_QWEN2,
    ZN_ARCH_QWEN3,
    ZN_ARCH_QWEN3MOE,
    ZN_ARCH_QWEN35,    /* Gated DeltaNet + gated full attention, dense FFN */
    ZN_ARCH_QWEN35MOE, /* the same with MoE + shared expert */
    ZN_ARCH_COUNT
} zn_arch;

const char *model_arch_name(zn_arch a);    /* "llama", ... (the GGUF name) */
/* "llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe" for error messages. */
const char *model_arch_list(void);

/* Rotary embedding variants (ggml's rope modes). */
typedef enum zn_rope_mode {
    ZN_ROPE_NORM,   /* rotate adjacent pairs (x[2i], x[2i+1]) -- llama */
    ZN_ROPE_NEOX,   /* rotate halves (x[i], x[i + n_rot/2]) -- qwen2/qwen3 */
    ZN_ROPE_IMROPE, /* NEOX pairs, interleaved multi-section positions -- qwen35 */
} zn_rope_mode;

typedef struct zn_hparams {
    int n_vocab;
    int n_ctx_train;
    int n_embd;
    int n_layer;          /* decoder blocks run (MTP/NextN blocks excluded) */
    int n_ff;             /* dense FFN width */
    int n_head, n_head_kv;
    int head_dim_k, head_dim_v;
    int n_rot;            /* rotary dims per head (<= head_dim_k) */
    float rms_eps;
    float attn_scale;     /* kq scale, 1/sqrt(head_dim_k) unless the file says */
    /* rope */
    zn_rope_mode rope_mode;
    float rope_freq_base;
    float rope_freq_scale; /* 1 / rope.scaling.factor (linear scaling) */
    int rope_sections[4];  /* IMRoPE: dims per section (t, h, w, e) */
    /* MoE */
    int n_expert, n_expert_used;
    int n_ff_exp;          /* expert FFN width */
    int n_ff_shexp;        /* shared-expert FFN width (0: none) */
    float expert_weights_scale; /* 0 or 1: none */
    /* Gated DeltaNet (qwen35) */
    int ssm_d_conv;        /* conv kernel size */
    int ssm_d_inner;       /* value dim total = head_v_dim * n_v_heads */
    int ssm_d_state;       /* head_k_dim (= head_v_dim) */
    int ssm_dt_rank;       /* number of value heads */
    int ssm_n_group;       /* number of key heads */
} zn_hparams;

/* A projection: weight plus optional bias and output scale. */
typedef struct zn_linear {
    const gguf_tensor *w;  /* [rows][ne0]; NULL when the projection is absent */
    const gguf_tensor *b;  /* f32 [rows] or NULL */
    const gguf_tensor *s;  /* f32 [1] (or [n_expert] for _exps) or NULL: y *= s */
} zn_linear;

/* Every tensor any supported architecture may use; absent ones are NULL.
 * ".input_scale" tensors are recognised but unused (as in llama.cpp). */
typedef struct zn_layer {
    bool recurrent;                /* qwen35: Gated DeltaNet layer */
    const gguf_tensor *attn_norm;  /* [n_embd] */
    const gguf_tensor *attn_post_norm; /* qwen35: pre-FFN norm ([n_embd]) */
    zn_linear wq, wk, wv, wo;      /* wq is [2*n_head*hd] on qwen35 (query+gate per head) */
    zn_linear wqkv;                /* qwen35 linear attention: fused q,k,v [2*key_dim+value_dim] */
    zn_linear wqkv_gate;           /* qwen35 linear attention: z [value_dim] ("attn_gate") */
    const gguf_tensor *q_norm, *k_norm; /* [head_dim] */
    const gguf_tensor *ffn_norm;   /* [n_embd] */
    zn_linear ffn_gate, ffn_up, ffn_down;
    /* MoE */
    zn_linear ffn_gate_inp;        /* router [n_expert][n_embd] */
    zn_linear ffn_gate_exps, ffn_up_exps, ffn_down_exps; /* [n_expert][rows][ne0] */
    zn_linear ffn_gate_up_exps;    /* fused: rows 0..n_ff_exp-1 gate, then up */
    zn_linear ffn_gate_inp_shexp;  /* [1][n_embd] shared-expert gate */
    zn_linear ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp;
    /* Gated DeltaNet */
    const gguf_tensor *ssm_conv1d; /* [conv_dim][d_conv] */
    const gguf_tensor *ssm_dt;     /* [n_v_heads] bias */
    const gguf_tensor *ssm_a;      /* [n_v_heads] */
    zn_linear ssm_beta, ssm_alpha; /* [n_v_heads][n_embd] */
    const gguf_tensor *ssm_norm;   /* [head_v_dim] */
    zn_linear ssm_out;             /* [n_embd][value_dim] */
} zn_layer;

typedef struct zn_model {
    char path[ZN_PATH_MAX];
    zn_arch arch;
    zn_hparams hp;
    gguf_ctx gguf;                 /* owns the map every weight points into */
    const gguf_tensor *tok_embd;   /* [n_vocab][n_embd] */
    const gguf_tensor *rope_freqs; /* llama3 frequency factors [n_rot/2] or NULL */
    const gguf_tensor *output_norm;
    zn_linear output;              /* == tok_embd when tied */
    bool tied_output;
    zn_layer *layers;              /* [hp.n_layer] */
    uint64_t n_params;             /* elements of the weights used */
    uint64_t weight_bytes;         /* bytes of those weights */
} zn_model;

/* Opens and validates the GGUF, reads the hyper-parameters and binds every
 * tensor by name with shape checks. Unsupported architectures, missing or
 * mis-shaped tensors and tensor types zinc cannot compute fail with a
 * message naming the file and the tensor/key. */
zn_status model_load(zn_model *m, const char *path, zn_err *err);
void model_free(zn_model *m);

static inline uint32_t model_weight_id(const zn_model *m, const gguf_tensor *t) {
    return (uint32_t)(t - m->gguf.tensors);
}
/* Number of attention (KV-cached) layers. */
int model_n_attn_layers(const zn_model *m);

#endif
