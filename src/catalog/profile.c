/* Hardware profile names and the memory estimate (profile.h). */
#include "profile.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "model.h"

#define VENDOR_AMD    0x1002
#define VENDOR_APPLE  0x106B
#define VENDOR_INTEL  0x8086
#define VENDOR_NVIDIA 0x10DE

static bool has(const char *name, const char *word) { return strcasestr(name, word) != NULL; }

/* NVIDIA: the PCI device id says the chip family (ranges of the PCI ID
 * database), the marketing name where the ranges overlap. */
static const char *nvidia_arch(uint32_t id, const char *name) {
    if (has(name, "H100") || has(name, "H200") || has(name, "H800") || has(name, "H20") || has(name, "GH200") ||
        (id >= 0x2320 && id <= 0x234f))
        return "hopper";
    if (has(name, "B200") || has(name, "B100") || has(name, "GB200") || has(name, "Blackwell") || has(name, "RTX 50") ||
        (id >= 0x2900 && id <= 0x2fff))
        return "blackwell";
    if (has(name, " Ada") || has(name, "RTX 40") || has(name, "L40") || has(name, " L4") || (id >= 0x2600 && id <= 0x28ff))
        return "ada";
    if (has(name, "A100") || has(name, "A800") || has(name, "RTX 30") || has(name, "RTX A") || (id >= 0x2080 && id <= 0x25ff))
        return "ampere";
    if (has(name, "RTX 20") || has(name, "GTX 16") || has(name, "T4") || has(name, "Quadro RTX") ||
        (id >= 0x1e00 && id <= 0x2000))
        return "turing";
    if (has(name, "V100") || has(name, "TITAN V")) return "volta";
    return NULL;
}

/* AMD: RADV names the GFX IP ("AMD Radeon RX 9070 XT (RADV GFX1201)");
 * AMDVLK and the Windows driver only the product. */
static const char *amd_arch(const char *name) {
    if (has(name, "GFX12") || has(name, "RX 90") || has(name, "R9700") || has(name, "R9600")) return "rdna4";
    if (has(name, "GFX11") || has(name, "RX 7") || has(name, "W7") || has(name, "780M") || has(name, "890M") ||
        has(name, "8060S"))
        return "rdna3";
    if (has(name, "GFX103") || has(name, "RX 6") || has(name, "W6") || has(name, "680M")) return "rdna2";
    if (has(name, "GFX101") || has(name, "RX 5")) return "rdna1";
    if (has(name, "GFX94") || has(name, "MI300")) return "cdna3";
    if (has(name, "GFX90A") || has(name, "MI2")) return "cdna2";
    return NULL;
}

/* Sizes as GPU and RAM makers round them: 143,771 MiB (an H200) is
 * "141gb", a 32 GB card reporting 31.9 GiB is "32gb". */
static unsigned gb_of(uint64_t bytes) { return (unsigned)((bytes + (1ull << 30) - 1) >> 30); }

void profile_from_hw(const zn_hw *hw, zn_profile *p) {
    memset(p, 0, sizeof *p);
    p->mem_bytes = hw->mem_bytes;
    p->backend = hw->gpu ? "vulkan" : "cpu";
    unsigned gb = gb_of(hw->mem_bytes);
    if (!hw->gpu) {
        snprintf(p->name, sizeof p->name, "cpu-%ugb", gb);
    } else if (hw->vendor_id == VENDOR_APPLE || has(hw->name, "Apple M")) {
        snprintf(p->name, sizeof p->name, "apple-silicon");
    } else if (hw->vendor_id == VENDOR_NVIDIA) {
        const char *a = nvidia_arch(hw->device_id, hw->name);
        snprintf(p->name, sizeof p->name, "nvidia%s%s-%ugb", a ? "-" : "", a ? a : "", gb);
    } else if (hw->vendor_id == VENDOR_AMD) {
        const char *a = amd_arch(hw->name);
        snprintf(p->name, sizeof p->name, "amd%s%s-%ugb", a ? "-" : "", a ? a : "", gb);
    } else if (hw->vendor_id == VENDOR_INTEL) {
        snprintf(p->name, sizeof p->name, hw->integrated ? "intel-igpu-%ugb" : "intel-arc-%ugb", gb);
    } else {
        snprintf(p->name, sizeof p->name, "gpu-%ugb", gb);
    }
    p->budget = hw->mem_bytes / 100 * ZN_FIT_MEM_PERCENT;
    uint64_t gemm = 0;
    if (hw->gpu) {
        gemm = hw->mem_bytes / 64;
        if (gemm < ZN_VK_MM_SCRATCH) gemm = ZN_VK_MM_SCRATCH;
        if (gemm > ZN_VK_MM_SCRATCH_MAX) gemm = ZN_VK_MM_SCRATCH_MAX;
    }
    p->scratch = ZN_FIT_ACT_BYTES + gemm;
}

void profile_fit(const zn_profile *p, uint64_t weight_bytes, const zn_model_shape *sh, zn_fit *f) {
    memset(f, 0, sizeof *f);
    f->known = sh->n_attn || sh->state_bytes;
    if (!f->known) return;
    f->kv_per_token = (uint64_t)sh->n_attn * ((uint64_t)sh->kv_k + sh->kv_v) * ZN_FIT_KV_BYTES;
    f->fixed = weight_bytes + sh->state_bytes + p->scratch;
    if (f->fixed >= p->budget) return;
    uint64_t ctx = f->kv_per_token ? (p->budget - f->fixed) / f->kv_per_token : ZN_MAX_CTX;
    uint64_t cap = sh->ctx_train ? sh->ctx_train : ZN_MAX_CTX;
    if (cap > ZN_MAX_CTX) cap = ZN_MAX_CTX;
    if (ctx > cap) ctx = cap;
    if (ctx >= ZN_FIT_CTX_STEP) ctx -= ctx % ZN_FIT_CTX_STEP;
    f->ctx = (uint32_t)ctx;
    f->fits = ctx >= (cap < ZN_FIT_MIN_CTX ? cap : ZN_FIT_MIN_CTX);
}

zn_status profile_shape_of_file(const char *path, zn_model_shape *sh, uint64_t *weight_bytes, zn_err *err) {
    memset(sh, 0, sizeof *sh);
    zn_model m;
    zn_status s = model_load(&m, path, err);
    if (s) return s;
    const zn_hparams *hp = &m.hp;
    sh->n_attn = (uint32_t)model_n_attn_layers(&m);
    sh->kv_k = (uint32_t)(hp->n_head_kv * hp->head_dim_k);
    sh->kv_v = (uint32_t)(hp->n_head_kv * hp->head_dim_v);
    /* Gated DeltaNet layers: a conv window and a delta state, f32, as both backends keep them */
    uint64_t n_recr = (uint64_t)hp->n_layer - sh->n_attn;
    uint64_t conv = 4ull * (2ull * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner) *
                    (uint64_t)(hp->ssm_d_conv > 1 ? hp->ssm_d_conv - 1 : 0);
    uint64_t delta = 4ull * hp->ssm_d_inner * (uint64_t)hp->ssm_d_state;
    sh->state_bytes = n_recr * (conv + delta);
    sh->ctx_train = hp->n_ctx_train > 0 ? (uint32_t)hp->n_ctx_train : 0;
    *weight_bytes = m.gguf.size;
    model_free(&m);
    return ZN_OK;
}

void profile_fmt_bytes(uint64_t b, char *out, size_t cap) {
    if (b >= 1000000000ull) snprintf(out, cap, "%.1f GB", b / 1e9);
    else snprintf(out, cap, "%.0f MB", b / 1e6);
}

static void fmt_gb(uint64_t b, char *out, size_t cap) {
    if (b >= 1000000000ull) snprintf(out, cap, "%.1f GB", b / 1e9);
    else snprintf(out, cap, "%.0f MB", b / 1e6);
}

void profile_fit_text(const zn_fit *f, const zn_profile *p, char *out, size_t cap) {
    char need[32];
    if (!f->known) {
        snprintf(out, cap, "? (pull to know)");
        return;
    }
    fmt_gb(f->fixed + (uint64_t)ZN_FIT_MIN_CTX * f->kv_per_token, need, sizeof need);
    if (f->fits) snprintf(out, cap, "yes, ctx %u", f->ctx);
    else snprintf(out, cap, "no, needs %s", need);
}
