/* Synthetic models: real shapes, llama-quantize's type mix, random weights.
 *
 * Tensors are listed in the order llama-quantize writes them (non-block
 * tensors by name, then block by block, by name within a block), which is
 * also the order its per-layer type rules count in. Every tensor is written
 * through the GGUF writer's streaming fill, block by block from a PRNG
 * seeded per tensor, so memory stays bounded whatever the model size. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant_impl.h"
#include "synth.h"

#define WEIGHT_SIGMA 0.02f
#define MAX_LAYER_TENSORS 24 /* per block, any arch (qwen35moe recurrent: 19) */
#define MAX_GLOBAL_TENSORS 4

/* ---- model shapes -------------------------------------------------------
 * From the models' Hugging Face config.json (hidden_size, num_hidden_layers,
 * num_attention_heads, num_key_value_heads, head_dim, intermediate_size,
 * vocab_size, max_position_embeddings, rope_theta, rms_norm_eps,
 * tie_word_embeddings; Qwen3.5: layer_types / full_attention_interval,
 * linear_* sizes, partial_rotary_factor 0.25, mrope_section) as converted
 * by llama.cpp's convert_hf_to_gguf.py. qwen3-125m is not a released
 * model: a small Qwen3-style shape for quick runs. */
typedef struct shape {
    const char *like, *arch;
    int n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
    float rope_base, rms_eps;
    bool tied;
    int n_rot;             /* rotary dims per head */
    bool llama3_rope;      /* rope_freqs.weight from rope_scaling (llama3) */
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    bool gate_up;          /* the experts' gate and up merged (synth_opts.gate_up) */
    int full_attn_interval, ssm_conv, ssm_state, ssm_groups, ssm_v_heads; /* qwen35 */
    int sections[4];
} shape;

static const shape shapes[] = {
    {.like = "qwen3.5-2b", .arch = "qwen35", .n_embd = 2048, .n_layer = 24, .n_head = 8, .n_head_kv = 2,
     .head_dim = 256, .n_ff = 6144, .n_vocab = 248320, .n_ctx = 262144, .rope_base = 1e7f, .rms_eps = 1e-6f,
     .tied = true, .n_rot = 64, .full_attn_interval = 4, .ssm_conv = 4, .ssm_state = 128, .ssm_groups = 16,
     .ssm_v_heads = 16, .sections = {11, 11, 10, 0}},
    {.like = "qwen3.5-35b-a3b", .arch = "qwen35moe", .n_embd = 2048, .n_layer = 40, .n_head = 16, .n_head_kv = 2,
     .head_dim = 256, .n_ff = 512, .n_vocab = 248320, .n_ctx = 262144, .rope_base = 1e7f, .rms_eps = 1e-6f,
     .tied = false, .n_rot = 64, .n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512, .n_ff_shexp = 512,
     .full_attn_interval = 4, .ssm_conv = 4, .ssm_state = 128, .ssm_groups = 16, .ssm_v_heads = 32,
     .sections = {11, 11, 10, 0}},
    {.like = "qwen3-8b", .arch = "qwen3", .n_embd = 4096, .n_layer = 36, .n_head = 32, .n_head_kv = 8,
     .head_dim = 128, .n_ff = 12288, .n_vocab = 151936, .n_ctx = 40960, .rope_base = 1e6f, .rms_eps = 1e-6f,
     .tied = false, .n_rot = 128},
    {.like = "qwen3-0.6b", .arch = "qwen3", .n_embd = 1024, .n_layer = 28, .n_head = 16, .n_head_kv = 8,
     .head_dim = 128, .n_ff = 3072, .n_vocab = 151936, .n_ctx = 40960, .rope_base = 1e6f, .rms_eps = 1e-6f,
     .tied = true, .n_rot = 128},
    {.like = "llama-3.2-1b", .arch = "llama", .n_embd = 2048, .n_layer = 16, .n_head = 32, .n_head_kv = 8,
     .head_dim = 64, .n_ff = 8192, .n_vocab = 128256, .n_ctx = 131072, .rope_base = 5e5f, .rms_eps = 1e-5f,
     .tied = true, .n_rot = 64, .llama3_rope = true},
    {.like = "qwen3-125m", .arch = "qwen3", .n_embd = 768, .n_layer = 12, .n_head = 12, .n_head_kv = 4,
     .head_dim = 64, .n_ff = 2048, .n_vocab = 32000, .n_ctx = 4096, .rope_base = 1e6f, .rms_eps = 1e-6f,
     .tied = true, .n_rot = 64},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

const char *synth_model_list(void) {
    return "qwen3.5-2b, qwen3.5-35b-a3b, qwen3-8b, qwen3-0.6b, llama-3.2-1b, qwen3-125m";
}

/* ---- file types (llama_ftype ids for general.file_type) ---- */

typedef struct ftype_info {
    const char *name;
    zn_type base;
    uint32_t id;
} ftype_info;

enum { FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_M = 17 };

static const ftype_info ftypes[] = {
    {"f32", ZN_TYPE_F32, 0},     {"f16", ZN_TYPE_F16, 1},     {"bf16", ZN_TYPE_BF16, 32},
    {"q8_0", ZN_TYPE_Q8_0, 7},   {"q4_0", ZN_TYPE_Q4_0, 2},   {"q4_1", ZN_TYPE_Q4_1, 3},
    {"q5_0", ZN_TYPE_Q5_0, 8},   {"q5_1", ZN_TYPE_Q5_1, 9},   {"q4_k_s", ZN_TYPE_Q4_K, FT_Q4_K_S},
    {"q4_k_m", ZN_TYPE_Q4_K, FT_Q4_K_M}, {"q5_k_s", ZN_TYPE_Q5_K, 16}, {"q5_k_m", ZN_TYPE_Q5_K, FT_Q5_K_M},
    {"q6_k", ZN_TYPE_Q6_K, 18},
};

const char *synth_ftype_list(void) {
    return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k";
}

static const ftype_info *ftype_find(const char *name) {
    for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
        if (!strcmp(ftypes[i].name, name)) return &ftypes[i];
    return NULL;
}

/* ---- llama-quantize's type choice -------------------------------------- */

typedef enum { C_OTHER, C_OUTPUT, C_TOKEN_EMBD, C_ATTN_QKV, C_ATTN_V, C_ATTN_K, C_ATTN_Q, C_ATTN_OUT,
               C_FFN_UP, C_FFN_GATE, C_FFN_DOWN } category;

/* Substring tests in llama-quant.cpp's order (first match wins). */
static category category_of(const char *n) {
    if (!strcmp(n, "output.weight")) return C_OUTPUT;
    if (!strcmp(n, "token_embd.weight")) return C_TOKEN_EMBD;
    if (strstr(n, "attn_qkv.weight")) return C_ATTN_QKV;
    if (strstr(n, "attn_v.weight")) return C_ATTN_V;
    if (strstr(n, "attn_k.weight")) return C_ATTN_K;
    if (strstr(n, "attn_q.weight")) return C_ATTN_Q;
    if (strstr(n, "attn_output.weight")) return C_ATTN_OUT;
    if (strstr(n, "ffn_up")) return C_FFN_UP;
    if (strstr(n, "ffn_gate")) return C_FFN_GATE;
    if (strstr(n, "ffn_down")) return C_FFN_DOWN;
    return C_OTHER;
}

static int eff_dims(const synth_tensor *t) { /* ggml_n_dims: trailing 1s do not count */
    int d = 4;
    while (d > 1 && t->ne[d - 1] == 1) d--;
    return d;
}

static bool quantizable(const synth_tensor *t) {
    size_t len = strlen(t->name);
    return eff_dims(t) >= 2 && len >= 6 && !strcmp(t->name + len - 6, "weight") && !strstr(t->name, "_norm.weight") &&
           !strstr(t->name, "ffn_gate_inp.weight") && !strstr(t->name, "ssm_conv1d");
}

/* llama.cpp's use_more_bits: the first and last eighth, every third between */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static int layer_of(const char *name) {
    int il = -1;
    if (sscanf(name, "blk.%d.", &il) != 1) il = -1;
    return il;
}

/* llama.cpp's weight_name_comparer: block index (none first), then name */
static int tensor_order(const void *a, const void *b) {
    const synth_tensor *x = *(const synth_tensor *const *)a, *y = *(const synth_tensor *const *)b;
    int lx = layer_of(x->name), ly = layer_of(y->name);
    if (lx != ly) return lx < ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A 256-block type on a row that is not a multiple of 256 falls back as
 * llama-quantize does; if even 32 does not divide it, F16. */
static zn_type fallback(const synth_tensor *t, zn_type ty) {
    if (t->ne[0] % zn_type_get((uint32_t)ty)->blck == 0) return ty;
    if (ty == ZN_TYPE_Q4_K) ty = ZN_TYPE_Q5_0;
    else if (ty == ZN_TYPE_Q5_K) ty = ZN_TYPE_Q5_1;
    else if (ty == ZN_TYPE_Q6_K) ty = ZN_TYPE_Q8_0;
    return t->ne[0] % zn_type_get((uint32_t)ty)->blck == 0 ? ty : ZN_TYPE_F16;
}

typedef struct mix_state {
    const ftype_info *ft;
    bool tied;
    int n_layer_all, n_expert;
    int n_attn_wv, i_attn_wv, i_ffn_down;
} mix_state;

/* llama_tensor_get_type_impl, for the file types above (no imatrix). */
static zn_type mix_type(mix_state *st, const synth_tensor *t) {
    const uint32_t f = st->ft->id;
    zn_type ty = st->ft->base;
    category c = category_of(t->name);
    if (c == C_OUTPUT || (st->tied && c == C_TOKEN_EMBD)) {
        if (t->ne[0] % zn_type_get((uint32_t)ty)->blck) ty = ZN_TYPE_Q8_0;
        else if (ty != ZN_TYPE_Q8_0) ty = ZN_TYPE_Q6_K;
    } else if (c == C_ATTN_V || c == C_ATTN_QKV) {
        if ((f == FT_Q4_K_M || f == FT_Q5_K_M) && more_bits(st->i_attn_wv, st->n_attn_wv)) ty = ZN_TYPE_Q6_K;
        else if (f == FT_Q4_K_S && st->i_attn_wv < 4) ty = ZN_TYPE_Q5_K;
        if (st->n_expert == 8) ty = ZN_TYPE_Q8_0;
        st->i_attn_wv++;
    } else if (c == C_ATTN_K) {
        if (st->n_expert == 8) ty = ZN_TYPE_Q8_0;
    } else if (c == C_FFN_DOWN) {
        /* with experts the layer comes from the name (ggml's experts are
         * not one tensor per layer in every model), else from the count */
        int il = st->n_expert > 1 ? layer_of(t->name) : st->i_ffn_down, n = st->n_layer_all;
        if ((f == FT_Q4_K_M || f == FT_Q5_K_M) && more_bits(il, n)) ty = ZN_TYPE_Q6_K;
        else if (f == FT_Q4_K_S && il < n / 8) ty = ZN_TYPE_Q5_K;
        st->i_ffn_down++;
    } else if (c == C_ATTN_OUT) {
        if (st->n_expert == 8 && (f == FT_Q4_K_S || f == FT_Q4_K_M)) ty = ZN_TYPE_Q5_K;
    }
    return fallback(t, ty);
}

zn_status synth_assign_types(synth_tensor *t, size_t n, const char *ftype, int n_layer_all, int n_expert, zn_err *err) {
    const ftype_info *ft = ftype_find(ftype);
    if (!ft) return zn_errf(err, ZN_ERR_ARG, "synth: unknown type '%s' (%s)", ftype, synth_ftype_list());
    synth_tensor **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return zn_errf(err, ZN_ERR_NOMEM, "synth: out of memory");
    mix_state st = {.ft = ft, .tied = true, .n_layer_all = n_layer_all, .n_expert = n_expert};
    for (size_t i = 0; i < n; i++) {
        order[i] = &t[i];
        category c = category_of(t[i].name);
        st.n_attn_wv += c == C_ATTN_V || c == C_ATTN_QKV;
        if (c == C_OUTPUT) st.tied = false;
    }
    qsort(order, n, sizeof *order, tensor_order);
    bool quantized = ft->base != ZN_TYPE_F32 && ft->base != ZN_TYPE_F16 && ft->base != ZN_TYPE_BF16;
    for (size_t i = 0; i < n; i++) {
        synth_tensor *x = order[i];
        if (!quantizable(x)) x->type = ZN_TYPE_F32;
        else x->type = quantized ? mix_type(&st, x) : ft->base;
    }
    free(order);
    return ZN_OK;
}

/* ---- tensor list ------------------------------------------------------- */

typedef struct tlist {
    synth_tensor *t;
    size_t n, cap;
} tlist;

static void add(tlist *L, int il, const char *base, uint32_t n_dims, uint64_t ne0, uint64_t ne1, uint64_t ne2) {
    if (L->n >= L->cap) return; /* cap is sized for every arch; checked by the caller */
    synth_tensor *t = &L->t[L->n++];
    memset(t, 0, sizeof *t);
    if (il >= 0) snprintf(t->name, sizeof t->name, "blk.%d.%s", il, base);
    else snprintf(t->name, sizeof t->name, "%s", base);
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->ne[3] = 1;
}

static bool is_recurrent(const shape *s, int il) {
    return s->full_attn_interval > 0 && (il + 1) % s->full_attn_interval != 0;
}

static void add_layer(tlist *L, const shape *s, int il) {
    const uint64_t e = (uint64_t)s->n_embd, hd = (uint64_t)s->head_dim;
    const uint64_t nq = hd * (uint64_t)s->n_head, nkv = hd * (uint64_t)s->n_head_kv;
    const bool q35 = s->full_attn_interval > 0;
    add(L, il, "attn_norm.weight", 1, e, 1, 1);
    if (q35 && is_recurrent(s, il)) {
        const uint64_t key_dim = (uint64_t)s->ssm_state * (uint64_t)s->ssm_groups;
        const uint64_t value_dim = (uint64_t)s->ssm_state * (uint64_t)s->ssm_v_heads;
        const uint64_t conv_dim = 2 * key_dim + value_dim, vh = (uint64_t)s->ssm_v_heads;
        add(L, il, "attn_qkv.weight", 2, e, conv_dim, 1);
        add(L, il, "attn_gate.weight", 2, e, value_dim, 1);
        add(L, il, "ssm_conv1d.weight", 2, (uint64_t)s->ssm_conv, conv_dim, 1);
        add(L, il, "ssm_dt.bias", 1, vh, 1, 1);
        add(L, il, "ssm_a", 1, vh, 1, 1);
        add(L, il, "ssm_beta.weight", 2, e, vh, 1);
        add(L, il, "ssm_alpha.weight", 2, e, vh, 1);
        add(L, il, "ssm_norm.weight", 1, (uint64_t)s->ssm_state, 1, 1);
        add(L, il, "ssm_out.weight", 2, value_dim, e, 1);
    } else {
        add(L, il, "attn_q.weight", 2, e, q35 ? 2 * nq : nq, 1); /* qwen35: query and gate per head */
        add(L, il, "attn_k.weight", 2, e, nkv, 1);
        add(L, il, "attn_v.weight", 2, e, nkv, 1);
        add(L, il, "attn_output.weight", 2, nq, e, 1);
        if (strcmp(s->arch, "llama")) {
            add(L, il, "attn_q_norm.weight", 1, hd, 1, 1);
            add(L, il, "attn_k_norm.weight", 1, hd, 1, 1);
        }
    }
    add(L, il, q35 ? "post_attention_norm.weight" : "ffn_norm.weight", 1, e, 1, 1);
    if (s->n_expert > 0) {
        const uint64_t ne = (uint64_t)s->n_expert, fe = (uint64_t)s->n_ff_exp, fs = (uint64_t)s->n_ff_shexp;
        add(L, il, "ffn_gate_inp.weight", 2, e, ne, 1);
        if (s->gate_up) {
            add(L, il, "ffn_gate_up_exps.weight", 3, e, 2 * fe, ne);
        } else {
            add(L, il, "ffn_gate_exps.weight", 3, e, fe, ne);
            add(L, il, "ffn_up_exps.weight", 3, e, fe, ne);
        }
        add(L, il, "ffn_down_exps.weight", 3, fe, e, ne);
        if (fs) {
            add(L, il, "ffn_gate_inp_shexp.weight", 1, e, 1, 1);
            add(L, il, "ffn_gate_shexp.weight", 2, e, fs, 1);
            add(L, il, "ffn_up_shexp.weight", 2, e, fs, 1);
            add(L, il, "ffn_down_shexp.weight", 2, fs, e, 1);
        }
    } else {
        const uint64_t ff = (uint64_t)s->n_ff;
        add(L, il, "ffn_gate.weight", 2, e, ff, 1);
        add(L, il, "ffn_up.weight", 2, e, ff, 1);
        add(L, il, "ffn_down.weight", 2, ff, e, 1);
    }
}

/* All tensors of the model in file order. */
static zn_status build_tensors(const shape *s, tlist *L, zn_err *err) {
    L->cap = MAX_GLOBAL_TENSORS + (size_t)s->n_layer * MAX_LAYER_TENSORS;
    L->t = calloc(L->cap, sizeof *L->t);
    if (!L->t) return zn_errf(err, ZN_ERR_NOMEM, "synth: out of memory");
    const uint64_t e = (uint64_t)s->n_embd, v = (uint64_t)s->n_vocab;
    add(L, -1, "token_embd.weight", 2, e, v, 1);
    add(L, -1, "output_norm.weight", 1, e, 1, 1);
    if (!s->tied) add(L, -1, "output.weight", 2, e, v, 1);
    if (s->llama3_rope) add(L, -1, "rope_freqs.weight", 1, (uint64_t)s->n_rot / 2, 1, 1);
    for (int il = 0; il < s->n_layer; il++) add_layer(L, s, il);
    if (L->n >= L->cap) return zn_errf(err, ZN_ERR_NOMEM, "synth: tensor table overflow");
    synth_tensor **order = malloc(L->n * sizeof *order), *sorted = malloc(L->n * sizeof *sorted);
    if (!order || !sorted) {
        free(order);
        free(sorted);
        return zn_errf(err, ZN_ERR_NOMEM, "synth: out of memory");
    }
    for (size_t i = 0; i < L->n; i++) order[i] = &L->t[i];
    qsort(order, L->n, sizeof *order, tensor_order);
    for (size_t i = 0; i < L->n; i++) sorted[i] = *order[i];
    memcpy(L->t, sorted, L->n * sizeof *sorted);
    free(order);
    free(sorted);
    return ZN_OK;
}

/* ---- values ------------------------------------------------------------ */

typedef enum { R_WEIGHT, R_NORM, R_SSM_A, R_DT_BIAS, R_CONV, R_ROPE_FREQS } role;

static role role_of(const char *name) {
    size_t n = strlen(name);
    if (n >= 11 && !strcmp(name + n - 11, "norm.weight")) return R_NORM;
    if (strstr(name, "ssm_a") && n >= 5 && !strcmp(name + n - 5, "ssm_a")) return R_SSM_A;
    if (strstr(name, "ssm_dt.bias")) return R_DT_BIAS;
    if (strstr(name, "ssm_conv1d")) return R_CONV;
    if (!strcmp(name, "rope_freqs.weight")) return R_ROPE_FREQS;
    return R_WEIGHT;
}

typedef struct fill_ctx {
    const synth_tensor *t;
    const shape *s;
    role r;
    uint64_t rng;
} fill_ctx;

static inline uint64_t next_u64(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline float unif(uint64_t *s) { return (float)(next_u64(s) >> 40) * 0x1p-24f; }
/* ~N(0, 1): sum of four 16-bit uniforms (Irwin-Hall), scaled to unit variance */
static inline float normal(uint64_t *s) {
    uint64_t r = next_u64(s);
    float sum = (float)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) * (1.0f / 65536.0f);
    return (sum - 2.0f) * 1.7320508f;
}

/* llama 3 rope scaling (factor 32, low/high frequency factors 1 and 4,
 * original context 8192), as convert_hf_to_gguf.py computes rope_freqs */
static float llama3_rope_factor(const shape *s, int i) {
    const double factor = 32, lo = 1, hi = 4, old_ctx = 8192;
    double freq = 1.0 / pow(s->rope_base, 2.0 * i / s->n_rot), wavelen = 2 * M_PI / freq;
    if (wavelen < old_ctx / hi) return 1.0f;
    if (wavelen > old_ctx / lo) return (float)factor;
    double smooth = (old_ctx / wavelen - lo) / (hi - lo);
    return (float)(1.0 / ((1 - smooth) / factor + smooth));
}

static float value(fill_ctx *c, uint64_t i) {
    switch (c->r) {
    case R_NORM: return 1.0f + WEIGHT_SIGMA * normal(&c->rng);
    case R_SSM_A: return -(1.0f + 15.0f * unif(&c->rng)); /* -exp(A_log), A in [1, 16] */
    case R_DT_BIAS: { /* softplus(bias) = dt, dt log-uniform in [1e-3, 0.1] */
        float dt = expf(logf(1e-3f) + unif(&c->rng) * (logf(0.1f) - logf(1e-3f)));
        return logf(expm1f(dt));
    }
    case R_CONV: return unif(&c->rng) - 0.5f; /* kaiming-uniform bound 1/sqrt(4) */
    case R_ROPE_FREQS: return llama3_rope_factor(c->s, (int)i);
    default: return WEIGHT_SIGMA * normal(&c->rng);
    }
}

static void random_bytes(uint64_t *s, uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = next_u64(s);
        memcpy(p + i, &r, n - i < 8 ? n - i : 8);
    }
}

/* Per-block scale around d0 (x0.75..1.25) so blocks differ. */
static zn_half jitter(uint64_t *s, float d0) { return zn_f32_to_fp16(d0 * (0.75f + 0.5f * unif(s))); }

/* Code RMS of uniformly random codes: sqrt((L^2 - 1) / 12) for L levels */
#define RMS4 4.6098f   /* 16 levels */
#define RMS5 9.2331f   /* 32 levels */
#define RMS6 18.473f   /* 64 levels */
#define RMS8 73.610f   /* 255 levels */
#define RMS_SC32_63 48.29f  /* RMS of a 6-bit sub-block scale drawn from 32..63 */
#define RMS_SC64_127 97.58f /* RMS of |Q6_K scale| drawn from 64..127 */

/* One valid block of type t with random codes and scales chosen so the
 * values have RMS ~WEIGHT_SIGMA and mean ~0. */
static void random_block(zn_type t, uint8_t *p, uint64_t *s) {
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    random_bytes(s, p, ti->size);
    switch (t) {
    case ZN_TYPE_Q4_0: { block_q4_0 *b = (block_q4_0 *)p; b->d = jitter(s, WEIGHT_SIGMA / RMS4); break; }
    case ZN_TYPE_Q5_0: { block_q5_0 *b = (block_q5_0 *)p; b->d = jitter(s, WEIGHT_SIGMA / RMS5); break; }
    case ZN_TYPE_Q4_1: case ZN_TYPE_Q5_1: { /* min = -d * (levels-1)/2 centres the codes */
        bool five = t == ZN_TYPE_Q5_1;
        zn_half d = jitter(s, WEIGHT_SIGMA / (five ? RMS5 : RMS4));
        zn_half m = zn_f32_to_fp16(-zn_fp16_to_f32(d) * (five ? 15.5f : 7.5f));
        memcpy(p, &d, 2);
        memcpy(p + 2, &m, 2);
        break;
    }
    case ZN_TYPE_Q8_0: {
        block_q8_0 *b = (block_q8_0 *)p;
        b->d = jitter(s, WEIGHT_SIGMA / RMS8);
        for (int j = 0; j < QK8_0; j++)
            if (b->qs[j] == -128) b->qs[j] = -127; /* quantizers never write -128 */
        break;
    }
    case ZN_TYPE_Q4_K: case ZN_TYPE_Q5_K: {
        /* codes 0..L-1, sub-block scale sc in 32..63 and min m = sc*(L-1)/2
         * in units of dmin = (L/2) * d, so each sub-block is centred */
        bool five = t == ZN_TYPE_Q5_K;
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) {
            sc[j] = (uint8_t)(32 + (next_u64(s) & 31));
            m[j] = (uint8_t)(five ? (sc[j] * 31 + 16) / 32 : (sc[j] * 15 + 8) / 16);
        }
        zn_half dh[2];
        dh[0] = jitter(s, WEIGHT_SIGMA / ((five ? RMS5 : RMS4) * RMS_SC32_63));
        dh[1] = zn_f32_to_fp16(zn_fp16_to_f32(dh[0]) * (five ? 16.0f : 8.0f));
        memcpy(p, dh, 4); /* d, dmin lead both layouts */
        quant_k4_pack(p + 4, sc, m);
        break;
    }
    case ZN_TYPE_Q6_K: {
        block_q6_K *b = (block_q6_K *)p;
        for (int g = 0; g < QK_K / 16; g++) {
            uint64_t r = next_u64(s);
            int v = 64 + (int)(r & 63);
            b->scales[g] = (int8_t)((r >> 6) & 1 ? -v : v);
        }
        b->d = jitter(s, WEIGHT_SIGMA / (RMS6 * RMS_SC64_127));
        break;
    }
    default: break;
    }
}

static zn_status fill_tensor(void *user, uint8_t *buf, uint64_t offset, size_t n, zn_err *err) {
    fill_ctx *c = user;
    const zn_type t = c->t->type;
    const zn_type_info *ti = zn_type_get((uint32_t)t);
    if (t == ZN_TYPE_F32 || t == ZN_TYPE_F16 || t == ZN_TYPE_BF16) {
        uint64_t first = offset / ti->size;
        for (size_t k = 0; k < n / ti->size; k++) {
            float v = value(c, first + k);
            if (t == ZN_TYPE_F32) memcpy(buf + 4 * k, &v, 4);
            else {
                uint16_t h = t == ZN_TYPE_F16 ? zn_f32_to_fp16(v) : zn_f32_to_bf16(v);
                memcpy(buf + 2 * k, &h, 2);
            }
        }
        return ZN_OK;
    }
    if (c->r != R_WEIGHT || !quant_supported(t))
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "synth: tensor '%s': cannot make %s values", c->t->name, ti->name);
    for (size_t k = 0; k < n / ti->size; k++) random_block(t, buf + k * ti->size, &c->rng);
    return ZN_OK;
}

/* ---- metadata ---------------------------------------------------------- */

typedef struct kvw {
    gguf_writer *w;
    const char *arch;
    zn_status st;
    char bad[96];
} kvw;

static void note(kvw *k, zn_status s, const char *key) {
    if (s != ZN_OK && k->st == ZN_OK) {
        k->st = s;
        snprintf(k->bad, sizeof k->bad, "%s", key);
    }
}
static const char *akey(kvw *k, const char *key, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", k->arch, key);
    return buf;
}
static void kv_u32(kvw *k, const char *key, uint64_t v) {
    char b[128];
    note(k, gguf_writer_set_uint(k->w, akey(k, key, b, sizeof b), GGUF_TYPE_UINT32, v), b);
}
static void kv_f32(kvw *k, const char *key, float v) {
    char b[128];
    note(k, gguf_writer_set_f32(k->w, akey(k, key, b, sizeof b), v), b);
}

static zn_status write_tokenizer(gguf_writer *w, int n_vocab, kvw *k) {
    /* the tiny fixtures' dummy vocabulary: "tok_<i>", normal tokens, score 0 */
    char *text = malloc((size_t)n_vocab * 16);
    const char **strs = malloc((size_t)n_vocab * sizeof *strs);
    int32_t *types = malloc((size_t)n_vocab * sizeof *types);
    float *scores = calloc((size_t)n_vocab, sizeof *scores);
    zn_status s = ZN_ERR_NOMEM;
    if (text && strs && types && scores) {
        for (int i = 0; i < n_vocab; i++) {
            strs[i] = text + (size_t)i * 16;
            snprintf(text + (size_t)i * 16, 16, "tok_%d", i);
            types[i] = 1;
        }
        note(k, gguf_writer_set_str(w, "tokenizer.ggml.model", "test"), "tokenizer.ggml.model");
        note(k, gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, (uint64_t)n_vocab), "tokenizer.ggml.tokens");
        note(k, gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n_vocab),
             "tokenizer.ggml.token_type");
        note(k, gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, (uint64_t)n_vocab),
             "tokenizer.ggml.scores");
        note(k, gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", NULL, 0), "tokenizer.ggml.merges");
        note(k, gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false), "tokenizer.ggml.add_bos_token");
        note(k, gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false), "tokenizer.ggml.add_eos_token");
        s = ZN_OK;
    }
    free(text);
    free(strs);
    free(types);
    free(scores);
    return s;
}

static zn_status write_metadata(gguf_writer *w, const shape *s, const ftype_info *ft, zn_err *err) {
    kvw k = {.w = w, .arch = s->arch};
    char name[96];
    snprintf(name, sizeof name, "zinc synth %s", s->like);
    note(&k, gguf_writer_set_str(w, "general.architecture", s->arch), "general.architecture");
    note(&k, gguf_writer_set_str(w, "general.name", name), "general.name");
    note(&k, gguf_writer_set_uint(w, "general.file_type", GGUF_TYPE_UINT32, ft->id), "general.file_type");
    note(&k, gguf_writer_set_uint(w, "general.quantization_version", GGUF_TYPE_UINT32, 2), "general.quantization_version");
    kv_u32(&k, "vocab_size", (uint64_t)s->n_vocab);
    kv_u32(&k, "context_length", (uint64_t)s->n_ctx);
    kv_u32(&k, "embedding_length", (uint64_t)s->n_embd);
    kv_u32(&k, "block_count", (uint64_t)s->n_layer);
    kv_u32(&k, "feed_forward_length", (uint64_t)s->n_ff);
    kv_u32(&k, "attention.head_count", (uint64_t)s->n_head);
    kv_u32(&k, "attention.head_count_kv", (uint64_t)s->n_head_kv);
    kv_u32(&k, "attention.key_length", (uint64_t)s->head_dim);
    kv_u32(&k, "attention.value_length", (uint64_t)s->head_dim);
    kv_f32(&k, "attention.layer_norm_rms_epsilon", s->rms_eps);
    kv_f32(&k, "rope.freq_base", s->rope_base);
    kv_u32(&k, "rope.dimension_count", (uint64_t)s->n_rot);
    if (s->n_expert > 0) {
        kv_u32(&k, "expert_count", (uint64_t)s->n_expert);
        kv_u32(&k, "expert_used_count", (uint64_t)s->n_expert_used);
        kv_u32(&k, "expert_feed_forward_length", (uint64_t)s->n_ff_exp);
        if (s->n_ff_shexp) kv_u32(&k, "expert_shared_feed_forward_length", (uint64_t)s->n_ff_shexp);
    }
    if (s->full_attn_interval > 0) {
        char b[128];
        kv_u32(&k, "ssm.conv_kernel", (uint64_t)s->ssm_conv);
        kv_u32(&k, "ssm.state_size", (uint64_t)s->ssm_state);
        kv_u32(&k, "ssm.group_count", (uint64_t)s->ssm_groups);
        kv_u32(&k, "ssm.time_step_rank", (uint64_t)s->ssm_v_heads);
        kv_u32(&k, "ssm.inner_size", (uint64_t)s->ssm_state * (uint64_t)s->ssm_v_heads);
        kv_u32(&k, "full_attention_interval", (uint64_t)s->full_attn_interval);
        bool *rec = malloc((size_t)s->n_layer * sizeof *rec);
        if (!rec) return zn_errf(err, ZN_ERR_NOMEM, "synth: out of memory");
        for (int il = 0; il < s->n_layer; il++) rec[il] = is_recurrent(s, il);
        note(&k, gguf_writer_set_arr(w, akey(&k, "attention.recurrent_layers", b, sizeof b), GGUF_TYPE_BOOL, rec,
                                     (uint64_t)s->n_layer), b);
        free(rec);
        note(&k, gguf_writer_set_arr(w, akey(&k, "rope.dimension_sections", b, sizeof b), GGUF_TYPE_INT32, s->sections,
                                     4), b);
    }
    if (write_tokenizer(w, s->n_vocab, &k) != ZN_OK) return zn_errf(err, ZN_ERR_NOMEM, "synth: out of memory");
    if (k.st != ZN_OK) return zn_errf(err, k.st, "synth: cannot set metadata '%s'", k.bad);
    return ZN_OK;
}

/* ---- driver ------------------------------------------------------------ */

static zn_status resolve(const synth_opts *o, shape *s, const ftype_info **ft, zn_err *err) {
    const shape *base = NULL;
    for (size_t i = 0; o->like && i < N_SHAPES; i++)
        if (!strcmp(shapes[i].like, o->like)) base = &shapes[i];
    if (!base) return zn_errf(err, ZN_ERR_ARG, "synth: unknown model '%s' (--like: %s)", o->like ? o->like : "",
                              synth_model_list());
    *ft = ftype_find(o->ftype ? o->ftype : "q4_k_m");
    if (!*ft) return zn_errf(err, ZN_ERR_ARG, "synth: unknown type '%s' (--type: %s)", o->ftype, synth_ftype_list());
    *s = *base;
    if (o->n_layer < 0 || o->n_layer > ZN_MAX_LAYERS)
        return zn_errf(err, ZN_ERR_ARG, "synth: --layers %d is not in 1..%d", o->n_layer, ZN_MAX_LAYERS);
    if (o->n_layer) s->n_layer = o->n_layer;
    if (o->n_vocab < 0 || o->n_vocab > ZN_MAX_VOCAB)
        return zn_errf(err, ZN_ERR_ARG, "synth: --vocab %d is not in 1..%d", o->n_vocab, ZN_MAX_VOCAB);
    if (o->n_vocab) s->n_vocab = o->n_vocab;
    if (o->n_expert) {
        if (s->n_expert == 0) return zn_errf(err, ZN_ERR_ARG, "synth: %s has no experts (--experts)", s->like);
        if (o->n_expert < 1 || o->n_expert > ZN_MAX_EXPERTS)
            return zn_errf(err, ZN_ERR_ARG, "synth: --experts %d is not in 1..%d", o->n_expert, ZN_MAX_EXPERTS);
        s->n_expert = o->n_expert;
        if (s->n_expert_used > s->n_expert) s->n_expert_used = s->n_expert;
    }
    if (o->gate_up && s->n_expert == 0) return zn_errf(err, ZN_ERR_ARG, "synth: %s has no experts (--gate-up)", s->like);
    s->gate_up = o->gate_up;
    return ZN_OK;
}

/* Shape, file type and typed tensor list for o. */
static zn_status plan(const synth_opts *o, shape *s, const ftype_info **ft, tlist *L, zn_err *err) {
    zn_status st = resolve(o, s, ft, err);
    if (st == ZN_OK) st = build_tensors(s, L, err);
    if (st == ZN_OK) st = synth_assign_types(L->t, L->n, (*ft)->name, s->n_layer, s->n_expert, err);
    if (st != ZN_OK) {
        free(L->t);
        L->t = NULL;
    }
    return st;
}

zn_status synth_plan(const synth_opts *o, synth_tensor **t, size_t *n, zn_err *err) {
    shape s;
    const ftype_info *ft = NULL;
    tlist L = {0};
    zn_status st = plan(o, &s, &ft, &L, err);
    *t = L.t;
    *n = st == ZN_OK ? L.n : 0;
    return st;
}

zn_status synth_write(const synth_opts *o, const char *path, synth_summary *sum, zn_err *err) {
    shape s;
    const ftype_info *ft = NULL;
    tlist L = {0};
    zn_status st = plan(o, &s, &ft, &L, err);
    if (st != ZN_OK) return st;
    gguf_writer *w = NULL;
    fill_ctx *ctx = NULL;
    if ((st = gguf_writer_init(&w, 0, err)) != ZN_OK) goto done;
    if ((st = write_metadata(w, &s, ft, err)) != ZN_OK) goto done;
    ctx = calloc(L.n, sizeof *ctx);
    if (!ctx) {
        st = zn_errf(err, ZN_ERR_NOMEM, "synth: out of memory");
        goto done;
    }
    synth_summary local = {0}, *S = sum ? sum : &local;
    memset(S, 0, sizeof *S);
    for (size_t i = 0; i < L.n; i++) {
        const synth_tensor *t = &L.t[i];
        ctx[i] = (fill_ctx){.t = t, .s = &s, .r = role_of(t->name), .rng = o->seed * 0x100000001B3ull + i};
        next_u64(&ctx[i].rng); /* decorrelate neighbouring seeds */
        if ((st = gguf_writer_add_tensor_fill(w, t->name, t->type, t->n_dims, t->ne, fill_tensor, &ctx[i], err)) != ZN_OK)
            goto done;
        uint64_t nel = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        uint64_t bytes = zn_row_size(t->type, (int64_t)t->ne[0]) * (nel / t->ne[0]);
        S->n_tensors++;
        S->n_params += nel;
        S->data_bytes += bytes;
        S->bytes_by_type[t->type] += bytes;
    }
    st = gguf_writer_write(w, path, err);
done:
    gguf_writer_free(w);
    free(ctx);
    free(L.t);
    return st;
}
