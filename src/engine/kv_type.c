/* The KV cache's element types (--kv-type): names, storage and the models
 * they fit. Apart from backend.c so that builds without the Vulkan backend
 * (the fuzz targets) link the CPU backend alone. */
#include <string.h>

#include "backend.h"
#include "limits.h"
#include "quant.h"

static const char *const kv_names[ZN_KV_COUNT] = {"f16", "q8_0", "q4_0"};

const char *backend_kv_type_name(zn_kv_type t) { return t >= 0 && t < ZN_KV_COUNT ? kv_names[t] : "?"; }

int backend_kv_type_parse(const char *name) {
    for (int i = 0; name && i < ZN_KV_COUNT; i++)
        if (!strcmp(name, kv_names[i])) return i;
    return -1;
}

zn_type backend_kv_storage(zn_kv_type t) {
    return t == ZN_KV_Q8_0 ? ZN_TYPE_Q8_0 : t == ZN_KV_Q4_0 ? ZN_TYPE_Q4_0 : ZN_TYPE_F16;
}

size_t backend_kv_bytes(zn_kv_type t, int64_t n) { return zn_row_size(backend_kv_storage(t), n); }

void backend_kv_put(zn_kv_type t, const float *x, void *dst, int64_t n) {
    if (t == ZN_KV_Q8_0) quant_quantize_act(ZN_TYPE_Q8_0, x, dst, n);
    else quant_quantize_row(backend_kv_storage(t), x, dst, n);
}

zn_status backend_kv_check(const zn_model *m, zn_kv_type t, zn_err *err) {
    if (t < 0 || t >= ZN_KV_COUNT) return zn_errf(err, ZN_ERR_ARG, "KV cache type %d unknown", (int)t);
    if (t == ZN_KV_F16) return ZN_OK;
    /* a head's row must be whole blocks: attention reads one head at a time */
    const int blk = QK8_0;
    const zn_hparams *hp = &m->hp;
    if (hp->head_dim_k % blk || hp->head_dim_v % blk)
        return zn_errf(err, ZN_ERR_UNSUPPORTED,
                       "%s: --kv-type %s needs head dims that are multiples of %d; this model's are %d (keys) and %d (values)",
                       m->path, kv_names[t], blk, hp->head_dim_k, hp->head_dim_v);
    return ZN_OK;
}

zn_kv_layout backend_kv_layout(const zn_model *m, zn_kv_type t) {
    const zn_hparams *hp = &m->hp;
    zn_kv_layout l = {.k_bytes = backend_kv_bytes(t, (int64_t)hp->n_head_kv * hp->head_dim_k),
                      .v_bytes = backend_kv_bytes(t, (int64_t)hp->n_head_kv * hp->head_dim_v)};
    l.pos_bytes = (size_t)model_n_attn_layers(m) * (l.k_bytes + l.v_bytes);
    l.block_bytes = l.pos_bytes * ZN_KV_BLOCK;
    return l;
}
