/* Model loading: architecture, hyper-parameters (with the defaults real GGUF
 * files rely on, as llama.cpp applies them) and tensors bound by name with
 * shape and type checks. Weights stay in the map. */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const arch_names[ZN_ARCH_COUNT] = {
    [ZN_ARCH_LLAMA] = "llama",   [ZN_ARCH_QWEN2] = "qwen2",   [ZN_ARCH_QWEN3] = "qwen3",
    [ZN_ARCH_QWEN3MOE] = "qwen3moe", [ZN_ARCH_QWEN35] = "qwen35", [ZN_ARCH_QWEN35MOE] = "qwen35moe",
};

const char *model_arch_name(zn_arch a) { return (unsigned)a < ZN_ARCH_COUNT ? arch_names[a] : "?"; }
const char *model_arch_list(void) { return "llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe"; }

int model_n_attn_layers(const zn_model *m) {
    int n = 0;
    for (int i = 0; i < m->hp.n_layer; i++) n += !m->layers[i].recurrent;
    return n;
}

/* ---- metadata ---- */

typedef struct loader {
    zn_model *m;
    zn_err *err;
    const char *arch; /* key prefix */
} loader;

/* Reads "<arch>.<key>" as an int. Absent: def, or an error when required
 * (def < 0). Present but not an integer that fits: error. */
static zn_status hp_int(loader *L, const char *key, int64_t def, int64_t lo, int64_t hi, int *out) {
    char full[256];
    snprintf(full, sizeof full, "%s.%s", L->arch, key);
    int64_t v;
    zn_status st = gguf_get_int(&L->m->gguf, full, &v, L->err);
    if (st == ZN_ERR_NOT_FOUND) {
        if (def < 0) return zn_errf(L->err, ZN_ERR_FORMAT, "%s: missing metadata key '%s'", L->m->path, full);
        v = def;
    } else if (st != ZN_OK) {
        return zn_err_prefix(L->err, "%s", L->m->path);
    }
    if (v < lo || v > hi)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' = %lld out of range [%lld, %lld]", L->m->path, full,
                       (long long)v, (long long)lo, (long long)hi);
    *out = (int)v;
    return ZN_OK;
}

/* Reads "<arch>.<key>" as a float (absent: def, or an error when required);
 * present, it must be finite as a float and >= lo (> lo when lo_open):
 * hyper-parameters outside their domain make NaN logits, not a model. */
static zn_status hp_float(loader *L, const char *key, double def, bool required, double lo, bool lo_open,
                          float *out) {
    char full[256];
    snprintf(full, sizeof full, "%s.%s", L->arch, key);
    double v;
    zn_status st = gguf_get_float(&L->m->gguf, full, &v, L->err);
    if (st == ZN_ERR_NOT_FOUND) {
        if (required) return zn_errf(L->err, ZN_ERR_FORMAT, "%s: missing metadata key '%s'", L->m->path, full);
        v = def;
    } else if (st != ZN_OK) {
        return zn_err_prefix(L->err, "%s", L->m->path);
    }
    if (!isfinite((float)v))
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' = %g is not a finite float", L->m->path, full, v);
    if (lo_open ? !(v > lo) : !(v >= lo))
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' = %g out of range (must be %s %g)", L->m->path, full, v,
                       lo_open ? ">" : ">=", lo);
    *out = (float)v;
    return ZN_OK;
}

#define TRY(x) do { zn_status _s = (x); if (_s != ZN_OK) return _s; } while (0)
#define BIG 1000000000LL

static zn_status load_hparams(loader *L) {
    zn_model *m = L->m;
    zn_hparams *hp = &m->hp;
    char buf[64];
    TRY(hp_int(L, "context_length", 0, 0, BIG, &hp->n_ctx_train));
    TRY(hp_int(L, "embedding_length", -1, 1, 1 << 20, &hp->n_embd));
    int n_all, n_nextn;
    TRY(hp_int(L, "block_count", -1, 1, ZN_MAX_LAYERS, &n_all));
    TRY(hp_int(L, "nextn_predict_layers", 0, 0, n_all - 1, &n_nextn));
    hp->n_layer = n_all - n_nextn; /* MTP blocks come last and are not run */
    TRY(hp_int(L, "feed_forward_length", 0, 0, 1 << 24, &hp->n_ff));
    TRY(hp_int(L, "attention.head_count", -1, 1, 1 << 16, &hp->n_head));
    TRY(hp_int(L, "attention.head_count_kv", hp->n_head, 1, hp->n_head, &hp->n_head_kv));
    if (hp->n_head % hp->n_head_kv)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: head_count %d is not a multiple of head_count_kv %d", m->path,
                       hp->n_head, hp->n_head_kv);
    int hd = hp->n_embd / hp->n_head;
    TRY(hp_int(L, "attention.key_length", hd, 1, 1 << 16, &hp->head_dim_k));
    TRY(hp_int(L, "attention.value_length", hd, 1, 1 << 16, &hp->head_dim_v));
    TRY(hp_int(L, "rope.dimension_count", hp->head_dim_k, 0, hp->head_dim_k, &hp->n_rot));
    if (hp->n_rot % 2)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: rope.dimension_count %d is odd", m->path, hp->n_rot);
    TRY(hp_float(L, "attention.layer_norm_rms_epsilon", 0, true, 0.0, false, &hp->rms_eps));
    TRY(hp_float(L, "rope.freq_base", 10000.0, false, 0.0, true, &hp->rope_freq_base));
    float factor = 0; /* 0: none */
    TRY(hp_float(L, "rope.scaling.factor", 0.0, false, 0.0, false, &factor));
    if (factor == 0) TRY(hp_float(L, "rope.scale_linear", 0.0, false, 0.0, false, &factor));
    hp->rope_freq_scale = factor == 0 ? 1.0f : 1.0f / factor;

    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", L->arch);
    gguf_get_str_or(&m->gguf, key, buf, sizeof buf, "linear");
    if (strcmp(buf, "linear") && strcmp(buf, "none"))
        return zn_errf(L->err, ZN_ERR_UNSUPPORTED, "%s: rope scaling type '%s' is not supported (linear, none)",
                       m->path, buf);

    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);

    TRY(hp_int(L, "expert_count", 0, 0, ZN_MAX_EXPERTS, &hp->n_expert));
    TRY(hp_int(L, "expert_used_count", 0, 0, hp->n_expert < ZN_MAX_EXPERTS_USED ? hp->n_expert : ZN_MAX_EXPERTS_USED,
                &hp->n_expert_used));
    if (hp->n_expert > 0 && hp->n_expert_used == 0)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: %d experts but expert_used_count is 0", m->path, hp->n_expert);
    TRY(hp_int(L, "expert_feed_forward_length", 0, 0, 1 << 24, &hp->n_ff_exp));
    TRY(hp_int(L, "expert_shared_feed_forward_length", 0, 0, 1 << 24, &hp->n_ff_shexp));
    hp->expert_weights_scale = 0;

    hp->rope_mode = ZN_ROPE_NEOX;
    if (m->arch == ZN_ARCH_LLAMA) hp->rope_mode = ZN_ROPE_NORM;
    if (m->arch == ZN_ARCH_QWEN35 || m->arch == ZN_ARCH_QWEN35MOE) hp->rope_mode = ZN_ROPE_IMROPE;
    return ZN_OK;
}

/* qwen35: rope sections, DeltaNet sizes and which layers are recurrent. */
static zn_status load_hparams_qwen35(loader *L) {
    zn_model *m = L->m;
    zn_hparams *hp = &m->hp;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", L->arch);
    const gguf_arr *a;
    zn_status st = gguf_get_arr(&m->gguf, key, &a, L->err);
    if (st != ZN_OK) return st == ZN_ERR_NOT_FOUND ? zn_errf(L->err, ZN_ERR_FORMAT, "%s: missing metadata key '%s'",
                                                              m->path, key)
                                                   : zn_err_prefix(L->err, "%s", m->path);
    if (a->n < 3 || a->n > 4 || a->type == GGUF_TYPE_STRING || a->type == GGUF_TYPE_ARRAY)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' must hold 3 or 4 integers", m->path, key);
    int64_t total = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        int64_t v = gguf_arr_int(a, i);
        if (v < 0 || v > hp->n_rot)
            return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' entry %llu = %lld out of range [0, %d]", m->path, key,
                           (unsigned long long)i, (long long)v, hp->n_rot);
        hp->rope_sections[i] = (int)v;
        total += v;
    }
    /* every rotated pair belongs to a section (ggml divides by the sum) */
    if (total == 0) return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' is all zero", m->path, key);
    TRY(hp_int(L, "ssm.conv_kernel", -1, 1, ZN_GDN_MAX_CONV, &hp->ssm_d_conv));
    TRY(hp_int(L, "ssm.inner_size", -1, 1, 1 << 20, &hp->ssm_d_inner));
    TRY(hp_int(L, "ssm.state_size", -1, ZN_SSM_MIN_HEAD_DIM, ZN_SSM_MAX_HEAD_DIM, &hp->ssm_d_state));
    if (hp->ssm_d_state & (hp->ssm_d_state - 1))
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s.ssm.state_size' = %d is not a power of two (the delta-rule "
                       "kernels' head sizes: %d..%d)", m->path, L->arch, hp->ssm_d_state, ZN_SSM_MIN_HEAD_DIM,
                       ZN_SSM_MAX_HEAD_DIM);
    TRY(hp_int(L, "ssm.time_step_rank", -1, 1, 4096, &hp->ssm_dt_rank));
    TRY(hp_int(L, "ssm.group_count", -1, 1, 4096, &hp->ssm_n_group));
    if (hp->ssm_dt_rank % hp->ssm_n_group || hp->ssm_d_inner != hp->ssm_d_state * hp->ssm_dt_rank)
        return zn_errf(L->err, ZN_ERR_FORMAT,
                       "%s: inconsistent ssm sizes (inner %d, state %d, value heads %d, key heads %d)", m->path,
                       hp->ssm_d_inner, hp->ssm_d_state, hp->ssm_dt_rank, hp->ssm_n_group);

    snprintf(key, sizeof key, "%s.attention.recurrent_layers", L->arch);
    st = gguf_get_arr(&m->gguf, key, &a, L->err);
    if (st == ZN_OK) {
        if (a->n < (uint64_t)hp->n_layer || a->type == GGUF_TYPE_STRING || a->type == GGUF_TYPE_ARRAY)
            return zn_errf(L->err, ZN_ERR_FORMAT, "%s: '%s' needs %d numeric entries", m->path, key, hp->n_layer);
        for (int i = 0; i < hp->n_layer; i++) m->layers[i].recurrent = gguf_arr_int(a, (uint64_t)i) != 0;
    } else if (st == ZN_ERR_NOT_FOUND) {
        int interval;
        TRY(hp_int(L, "full_attention_interval", 4, 1, ZN_MAX_LAYERS, &interval));
        for (int i = 0; i < hp->n_layer; i++) m->layers[i].recurrent = (i + 1) % interval != 0;
    } else {
        return zn_err_prefix(L->err, "%s", m->path);
    }
    return ZN_OK;
}

/* ---- tensors ---- */

enum { REQ = 1, F32_ONLY = 2 };

/* Finds "name" (printf-style, e.g. "blk.%d.attn_q.weight") and checks its
 * shape against ne0..ne2 (unused dims 1) and its type. Absent: NULL, or an
 * error when REQ. */
static zn_status bind(loader *L, const gguf_tensor **out, int flags, int64_t ne0, int64_t ne1, int64_t ne2,
                      const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static zn_status bind(loader *L, const gguf_tensor **out, int flags, int64_t ne0, int64_t ne1, int64_t ne2,
                      const char *fmt, ...) {
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const gguf_tensor *t = gguf_find_tensor(&L->m->gguf, name);
    *out = t;
    if (!t) {
        if (flags & REQ)
            return zn_errf(L->err, ZN_ERR_FORMAT, "%s: missing tensor '%s' (arch %s)", L->m->path, name,
                           model_arch_name(L->m->arch));
        return ZN_OK;
    }
    int64_t want[4] = {ne0, ne1, ne2, 1};
    for (int d = 0; d < 4; d++)
        if ((int64_t)t->ne[d] != want[d])
            return zn_errf(L->err, ZN_ERR_FORMAT,
                           "%s: tensor '%s' has shape [%llu, %llu, %llu, %llu], expected [%lld, %lld, %lld, 1]",
                           L->m->path, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                           (unsigned long long)t->ne[2], (unsigned long long)t->ne[3], (long long)ne0,
                           (long long)ne1, (long long)ne2);
    const zn_type_info *ti = zn_type_get((uint32_t)t->type);
    if ((flags & F32_ONLY) && t->type != ZN_TYPE_F32)
        return zn_errf(L->err, ZN_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, zinc needs F32 here", L->m->path, name,
                       zn_type_name(t->type));
    if (!ti || !ti->compute)
        return zn_errf(L->err, ZN_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which zinc cannot compute",
                       L->m->path, name, zn_type_name(t->type));
    L->m->n_params += t->ne[0] * t->ne[1] * t->ne[2];
    L->m->weight_bytes += t->nbytes;
    return ZN_OK;
}

/* "blk.<il>.<base>.weight" [rows][in] (x n_expert) plus optional .bias and
 * .scale (shape [1], or [n_expert] for expert tensors). */
static zn_status bind_linear(loader *L, zn_linear *lin, int flags, int il, const char *base, int64_t in,
                             int64_t rows, int64_t n_exp, bool with_bias) {
    char pre[64];
    if (il >= 0) snprintf(pre, sizeof pre, "blk.%d.%s", il, base);
    else snprintf(pre, sizeof pre, "%s", base);
    TRY(bind(L, &lin->w, flags, in, rows, n_exp ? n_exp : 1, "%s.weight", pre));
    if (!lin->w) return ZN_OK;
    if (with_bias) TRY(bind(L, &lin->b, F32_ONLY, rows, 1, 1, "%s.bias", pre));
    TRY(bind(L, &lin->s, F32_ONLY, n_exp ? n_exp : 1, 1, 1, "%s.scale", pre));
    return ZN_OK;
}

static zn_status bind_norm(loader *L, const gguf_tensor **out, int il, const char *base, int64_t n) {
    return bind(L, out, REQ | F32_ONLY, n, 1, 1, "blk.%d.%s.weight", il, base);
}

/* Full attention block (every arch; qwen35's query holds query + gate). */
static zn_status bind_attention(loader *L, zn_layer *ly, int il) {
    const zn_model *m = L->m;
    const zn_hparams *hp = &m->hp;
    const int64_t e = hp->n_embd, nq = (int64_t)hp->n_head * hp->head_dim_k;
    const int64_t nk = (int64_t)hp->n_head_kv * hp->head_dim_k, nv = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const bool q35 = m->arch == ZN_ARCH_QWEN35 || m->arch == ZN_ARCH_QWEN35MOE;
    TRY(bind_linear(L, &ly->wq, REQ, il, "attn_q", e, q35 ? 2 * nq : nq, 0, true));
    TRY(bind_linear(L, &ly->wk, REQ, il, "attn_k", e, nk, 0, true));
    TRY(bind_linear(L, &ly->wv, REQ, il, "attn_v", e, nv, 0, true));
    /* llama.cpp binds an output bias only for llama */
    TRY(bind_linear(L, &ly->wo, REQ, il, "attn_output", (int64_t)hp->n_head * hp->head_dim_v, e, 0,
                    m->arch == ZN_ARCH_LLAMA));
    if (m->arch != ZN_ARCH_LLAMA && m->arch != ZN_ARCH_QWEN2) {
        TRY(bind_norm(L, &ly->q_norm, il, "attn_q_norm", hp->head_dim_k));
        TRY(bind_norm(L, &ly->k_norm, il, "attn_k_norm", hp->head_dim_k));
    }
    return ZN_OK;
}

static zn_status bind_delta_net(loader *L, zn_layer *ly, int il) {
    const zn_hparams *hp = &L->m->hp;
    const int64_t e = hp->n_embd, key_dim = (int64_t)hp->ssm_d_state * hp->ssm_n_group;
    const int64_t value_dim = hp->ssm_d_inner, conv_dim = 2 * key_dim + value_dim;
    TRY(bind_linear(L, &ly->wqkv, REQ, il, "attn_qkv", e, conv_dim, 0, false));
    TRY(bind_linear(L, &ly->wqkv_gate, REQ, il, "attn_gate", e, value_dim, 0, false));
    TRY(bind(L, &ly->ssm_conv1d, REQ | F32_ONLY, hp->ssm_d_conv, conv_dim, 1, "blk.%d.ssm_conv1d.weight", il));
    TRY(bind(L, &ly->ssm_dt, REQ | F32_ONLY, hp->ssm_dt_rank, 1, 1, "blk.%d.ssm_dt.bias", il));
    TRY(bind(L, &ly->ssm_a, REQ | F32_ONLY, hp->ssm_dt_rank, 1, 1, "blk.%d.ssm_a", il));
    TRY(bind_linear(L, &ly->ssm_beta, REQ, il, "ssm_beta", e, hp->ssm_dt_rank, 0, false));
    TRY(bind_linear(L, &ly->ssm_alpha, REQ, il, "ssm_alpha", e, hp->ssm_dt_rank, 0, false));
    TRY(bind_norm(L, &ly->ssm_norm, il, "ssm_norm", hp->ssm_d_state));
    TRY(bind_linear(L, &ly->ssm_out, REQ, il, "ssm_out", value_dim, e, 0, false));
    return ZN_OK;
}

static zn_status bind_ffn(loader *L, zn_layer *ly, int il) {
    const zn_model *m = L->m;
    const zn_hparams *hp = &m->hp;
    const int64_t e = hp->n_embd, ne = hp->n_expert;
    const bool llama = m->arch == ZN_ARCH_LLAMA;
    if (ne == 0) {
        if (hp->n_ff <= 0) return zn_errf(L->err, ZN_ERR_FORMAT, "%s: feed_forward_length missing", m->path);
        TRY(bind_linear(L, &ly->ffn_gate, REQ, il, "ffn_gate", e, hp->n_ff, 0, llama));
        TRY(bind_linear(L, &ly->ffn_up, REQ, il, "ffn_up", e, hp->n_ff, 0, llama));
        TRY(bind_linear(L, &ly->ffn_down, REQ, il, "ffn_down", hp->n_ff, e, 0, llama));
        return ZN_OK;
    }
    const int64_t ff = hp->n_ff_exp;
    TRY(bind_linear(L, &ly->ffn_gate_inp, REQ, il, "ffn_gate_inp", e, ne, 0, false));
    ly->ffn_gate_inp.s = NULL; /* llama.cpp never scales the router */
    TRY(bind_linear(L, &ly->ffn_down_exps, REQ, il, "ffn_down_exps", ff, e, ne, false));
    TRY(bind_linear(L, &ly->ffn_gate_up_exps, 0, il, "ffn_gate_up_exps", e, 2 * ff, ne, false));
    ly->ffn_gate_up_exps.s = NULL; /* llama.cpp scales the fused tensor only by ffn_up_exps.scale */
    if (!ly->ffn_gate_up_exps.w) {
        TRY(bind_linear(L, &ly->ffn_up_exps, REQ, il, "ffn_up_exps", e, ff, ne, false));
        TRY(bind_linear(L, &ly->ffn_gate_exps, REQ, il, "ffn_gate_exps", e, ff, ne, false));
    }
    if (hp->n_ff_shexp > 0 || m->arch == ZN_ARCH_QWEN35MOE) {
        const int64_t fs = hp->n_ff_shexp ? hp->n_ff_shexp : hp->n_ff;
        if (m->arch == ZN_ARCH_QWEN35MOE) TRY(bind_linear(L, &ly->ffn_gate_inp_shexp, REQ, il, "ffn_gate_inp_shexp", e, 1, 0, false));
        ly->ffn_gate_inp_shexp.s = NULL;
        TRY(bind_linear(L, &ly->ffn_gate_shexp, REQ, il, "ffn_gate_shexp", e, fs, 0, false));
        TRY(bind_linear(L, &ly->ffn_up_shexp, REQ, il, "ffn_up_shexp", e, fs, 0, false));
        TRY(bind_linear(L, &ly->ffn_down_shexp, REQ, il, "ffn_down_shexp", fs, e, 0, false));
    }
    return ZN_OK;
}

static zn_status bind_tensors(loader *L) {
    zn_model *m = L->m;
    zn_hparams *hp = &m->hp;
    const gguf_tensor *te = gguf_find_tensor(&m->gguf, "token_embd.weight");
    if (!te) return zn_errf(L->err, ZN_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", m->path);
    if (te->ne[1] < 1 || te->ne[1] > ZN_MAX_VOCAB)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: token_embd.weight has %llu rows", m->path,
                       (unsigned long long)te->ne[1]);
    hp->n_vocab = (int)te->ne[1];
    /* ids index both the vocabulary and the embedding/output rows: sizes that
     * differ would drop or refuse ids at run time (as llama.cpp, GGUF pads the
     * vocabulary to the rows) */
    const gguf_kv *tk = gguf_find_kv(&m->gguf, "tokenizer.ggml.tokens");
    if (tk && tk->type == GGUF_TYPE_ARRAY && tk->v.arr.n != (uint64_t)hp->n_vocab)
        return zn_errf(L->err, ZN_ERR_FORMAT,
                       "%s: the vocabulary has %llu tokens (tokenizer.ggml.tokens) but token_embd.weight has %d rows",
                       m->path, (unsigned long long)tk->v.arr.n, hp->n_vocab);
    TRY(bind(L, &m->tok_embd, REQ, hp->n_embd, hp->n_vocab, 1, "token_embd.weight"));
    TRY(bind(L, &m->output_norm, REQ | F32_ONLY, hp->n_embd, 1, 1, "output_norm.weight"));
    TRY(bind_linear(L, &m->output, 0, -1, "output", hp->n_embd, hp->n_vocab, 0, m->arch == ZN_ARCH_QWEN2));
    m->output.s = NULL; /* llama.cpp reads output.scale only for NVFP4 files */
    if (!m->output.w) {
        m->output = (zn_linear){.w = m->tok_embd};
        m->tied_output = true;
    }
    if (m->arch == ZN_ARCH_LLAMA)
        TRY(bind(L, &m->rope_freqs, F32_ONLY, hp->n_rot / 2, 1, 1, "rope_freqs.weight"));

    const bool q35 = m->arch == ZN_ARCH_QWEN35 || m->arch == ZN_ARCH_QWEN35MOE;
    for (int il = 0; il < hp->n_layer; il++) {
        zn_layer *ly = &m->layers[il];
        TRY(bind_norm(L, &ly->attn_norm, il, "attn_norm", hp->n_embd));
        if (q35) TRY(bind_norm(L, &ly->attn_post_norm, il, "post_attention_norm", hp->n_embd));
        else TRY(bind_norm(L, &ly->ffn_norm, il, "ffn_norm", hp->n_embd));
        TRY(ly->recurrent ? bind_delta_net(L, ly, il) : bind_attention(L, ly, il));
        TRY(bind_ffn(L, ly, il));
    }
    return ZN_OK;
}

static zn_status arch_hparams(loader *L) {
    zn_model *m = L->m;
    zn_hparams *hp = &m->hp;
    bool moe_arch = m->arch == ZN_ARCH_QWEN3MOE || m->arch == ZN_ARCH_QWEN35MOE;
    if (moe_arch && hp->n_expert == 0)
        return zn_errf(L->err, ZN_ERR_FORMAT, "%s: %s needs expert_count > 0", m->path, L->arch);
    if (!moe_arch && m->arch != ZN_ARCH_LLAMA && hp->n_expert > 0)
        return zn_errf(L->err, ZN_ERR_UNSUPPORTED, "%s: %s with experts is not supported", m->path, L->arch);
    if (hp->n_expert > 0) {
        /* llama (Mixtral) experts use feed_forward_length; qwen MoE fall back
         * to n_ff / n_expert_used like llama.cpp */
        if (m->arch == ZN_ARCH_LLAMA) hp->n_ff_exp = hp->n_ff;
        else if (hp->n_ff_exp == 0) hp->n_ff_exp = hp->n_ff / hp->n_expert_used;
        if (hp->n_ff_exp <= 0) return zn_errf(L->err, ZN_ERR_FORMAT, "%s: expert FFN width is 0", m->path);
    }
    if (m->arch != ZN_ARCH_QWEN35 && m->arch != ZN_ARCH_QWEN35MOE) {
        if (hp->head_dim_k != hp->head_dim_v || hp->n_rot != hp->head_dim_k)
            return zn_errf(L->err, ZN_ERR_UNSUPPORTED,
                           "%s: %s needs key_length == value_length == rope dims (got %d, %d, %d)", m->path,
                           L->arch, hp->head_dim_k, hp->head_dim_v, hp->n_rot);
        return ZN_OK;
    }
    if (hp->head_dim_k != hp->head_dim_v)
        return zn_errf(L->err, ZN_ERR_UNSUPPORTED, "%s: key_length != value_length", m->path);
    return load_hparams_qwen35(L);
}

zn_status model_load(zn_model *m, const char *path, zn_err *err) {
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    zn_status st = gguf_open(&m->gguf, path, err);
    if (st != ZN_OK) return st;

    char arch[64];
    gguf_get_str_or(&m->gguf, "general.architecture", arch, sizeof arch, "");
    m->arch = ZN_ARCH_COUNT;
    for (int a = 0; a < ZN_ARCH_COUNT; a++)
        if (!strcmp(arch, arch_names[a])) m->arch = (zn_arch)a;
    if (m->arch == ZN_ARCH_COUNT) {
        st = zn_errf(err, arch[0] ? ZN_ERR_UNSUPPORTED : ZN_ERR_FORMAT,
                     "%s: architecture '%s' is not supported (supported: %s)", path,
                     arch[0] ? arch : "(general.architecture missing)", model_arch_list());
        goto fail;
    }
    loader L = {m, err, arch_names[m->arch]};
    if ((st = load_hparams(&L)) != ZN_OK) goto fail;
    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) {
        st = zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if ((st = arch_hparams(&L)) != ZN_OK) goto fail;
    if ((st = bind_tensors(&L)) != ZN_OK) goto fail;
    return ZN_OK;
fail:
    model_free(m);
    return st;
}

void model_free(zn_model *m) {
    free(m->layers);
    gguf_close(&m->gguf);
    memset(m, 0, sizeof *m);
}
