/* The KV cache's element types (--kv-type): names, storage and the models
 * they fit. Apart from backend.c so that builds without the Vulkan backend
 * (the fuzz targets) link the CPU backend alone. */
#include <math.h>
#include <string.h>

#include "backend.h"
#include "limits.h"
#include "quant.h"

static const char *const kv_names[ZN_KV_COUNT] = {"f16", "q8_0", "q4_0", "q4_0r", "q3_0r"};

const char *backend_kv_type_name(zn_kv_type t) { return t >= 0 && t < ZN_KV_COUNT ? kv_names[t] : "?"; }

int backend_kv_type_parse(const char *name) {
    for (int i = 0; name && i < ZN_KV_COUNT; i++)
        if (!strcmp(name, kv_names[i])) return i;
    return -1;
}

/* The GGUF block type a format stores (q3_0r: none, its own blocks). */
static zn_type kv_storage(zn_kv_type t) {
    return t == ZN_KV_Q8_0 ? ZN_TYPE_Q8_0 : t == ZN_KV_Q4_0 || t == ZN_KV_Q4_0R ? ZN_TYPE_Q4_0 : ZN_TYPE_F16;
}

bool backend_kv_rotated(zn_kv_type t) { return t == ZN_KV_Q4_0R || t == ZN_KV_Q3_0R; }

/* q3_0r: the Lloyd-Max levels of 8 for a unit Gaussian (what a rotated
 * head's values are close to), and the midpoints between them (kvq.glsl
 * and kv_store.comp have the same numbers). */
#define Q3_BLOCK 14
const float backend_kv_q3_level[8] = {-2.1520f, -1.3440f, -0.7560f, -0.2451f, 0.2451f, 0.7560f, 1.3440f, 2.1520f};
static const float q3_edge[7] = {-1.7480f, -1.0500f, -0.5006f, 0.0f, 0.5006f, 1.0500f, 1.7480f};

static void q3_put(const float *x, uint8_t *b) {
    float ss = 0;
    for (int j = 0; j < 32; j++) ss += x[j] * x[j];
    const float d = sqrtf(ss / 32.0f), id = d != 0.0f ? 1.0f / d : 0.0f;
    const zn_half h = zn_f32_to_fp16(d);
    memcpy(b, &h, 2);
    memset(b + 2, 0, Q3_BLOCK - 2);
    for (int j = 0; j < 32; j++) {
        const float v = x[j] * id;
        int c = 0;
        for (int e = 0; e < 7; e++) c += v > q3_edge[e];
        b[2 + j / 4] |= (uint8_t)((c & 3) << (2 * (j % 4)));
        b[10 + j / 8] |= (uint8_t)((c >> 2) << (j % 8));
    }
}

static void q3_get(const uint8_t *b, float *y) {
    zn_half h;
    memcpy(&h, b, 2);
    const float d = zn_fp16_to_f32(h);
    for (int j = 0; j < 32; j++) {
        const int c = ((b[2 + j / 4] >> (2 * (j % 4))) & 3) | (((b[10 + j / 8] >> (j % 8)) & 1) << 2);
        y[j] = d * backend_kv_q3_level[c];
    }
}

void backend_kv_quantize(zn_kv_type t, const float *x, void *dst, int64_t n) {
    if (t == ZN_KV_Q3_0R)
        for (int64_t b = 0; b < n / 32; b++) q3_put(x + 32 * b, (uint8_t *)dst + Q3_BLOCK * b);
    else if (t == ZN_KV_Q8_0) quant_quantize_act(ZN_TYPE_Q8_0, x, dst, n);
    else quant_quantize_row(kv_storage(t), x, dst, n);
}

void backend_kv_dequantize(zn_kv_type t, const void *src, float *y, int64_t n) {
    if (t == ZN_KV_Q3_0R)
        for (int64_t b = 0; b < n / 32; b++) q3_get((const uint8_t *)src + Q3_BLOCK * b, y + 32 * b);
    else quant_dequantize_row(kv_storage(t), src, y, n);
}

/* The rotation's sign of index i: a bit of a multiplicative hash (kv_rot.comp
 * kv_sign). Fixed, so caches written by one process read in another. */
static float kv_sign(uint32_t i) { return ((i * 2654435761u) >> 15) & 1u ? -1.0f : 1.0f; }

float backend_kv_rot_scale(int hd) { return (float)(1.0 / sqrt((double)hd)); }

void backend_kv_rotate(float *x, int hd, bool inverse) {
    if (!inverse)
        for (int i = 0; i < hd; i++) x[i] *= kv_sign((uint32_t)i);
    for (int len = 1; len < hd; len <<= 1)
        for (int i = 0; i < hd; i += 2 * len)
            for (int j = i; j < i + len; j++) {
                const float a = x[j], b = x[j + len];
                x[j] = a + b;
                x[j + len] = a - b;
            }
    const float s = backend_kv_rot_scale(hd);
    for (int i = 0; i < hd; i++) x[i] = inverse ? x[i] * s * kv_sign((uint32_t)i) : x[i] * s;
}

size_t backend_kv_bytes(zn_kv_type t, int64_t n) {
    return t == ZN_KV_Q3_0R ? (size_t)(n / 32) * Q3_BLOCK : zn_row_size(kv_storage(t), n);
}

void backend_kv_put(zn_kv_type t, const float *x, void *dst, int64_t n, int hd) {
    if (!backend_kv_rotated(t)) backend_kv_quantize(t, x, dst, n);
    else {
        float h[ZN_KV_ROT_MAX_HD];
        const size_t hb = backend_kv_bytes(t, hd);
        for (int64_t o = 0; o + hd <= n; o += hd) {
            memcpy(h, x + o, sizeof(float) * (size_t)hd);
            backend_kv_rotate(h, hd, false);
            backend_kv_quantize(t, h, (uint8_t *)dst + (size_t)(o / hd) * hb, hd);
        }
    }
}

zn_status backend_kv_check(const zn_model *m, zn_kv_type t, zn_err *err) {
    if (t < 0 || t >= ZN_KV_COUNT) return zn_errf(err, ZN_ERR_ARG, "KV cache type %d unknown", (int)t);
    if (t == ZN_KV_F16) return ZN_OK;
    const zn_hparams *hp = &m->hp;
    if (backend_kv_rotated(t))
        for (int i = 0; i < 2; i++) {
            const int hd = i ? hp->head_dim_v : hp->head_dim_k;
            if (hd < QK8_0 || hd > ZN_KV_ROT_MAX_HD || (hd & (hd - 1)))
                return zn_errf(err, ZN_ERR_UNSUPPORTED,
                               "%s: --kv-type %s rotates each head and needs head dims that are powers of two from %d to "
                               "%d; this model's are %d (keys) and %d (values)",
                               m->path, kv_names[t], QK8_0, ZN_KV_ROT_MAX_HD, hp->head_dim_k, hp->head_dim_v);
        }
    /* a head's row must be whole blocks: attention reads one head at a time */
    const int blk = QK8_0;
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
