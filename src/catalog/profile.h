/* Hardware profiles: a name for the machine zinc runs on, derived from the
 * device it would use (the default Vulkan GPU, else the CPU and its RAM):
 * "nvidia-hopper-141gb", "amd-rdna4-32gb", "apple-silicon", "cpu-24gb", ...
 * and whether a model fits it, with the context it would get:
 *
 *   weights (the file) + recurrent state + scratch + ctx * KV bytes per token
 *       <= ZN_FIT_MEM_PERCENT of the device's memory
 *
 * KV per token = attention layers x (K + V row) x ZN_FIT_KV_BYTES (f16, the
 * default KV type); scratch = activations (ZN_FIT_ACT_BYTES) plus, on a GPU,
 * the prefill GEMM's dequantisation buffer (1/64 of the memory, 128 MiB to
 * 1 GiB, as the Vulkan backend sizes it). The context is capped by the one
 * the model was trained for and by ZN_MAX_CTX. */
#ifndef ZINC_PROFILE_H
#define ZINC_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "status.h"

/* What was detected: the device zinc would run on. */
typedef struct zn_hw {
    bool gpu;              /* a GPU (not a CPU-emulated Vulkan device) */
    uint32_t vendor_id, device_id;
    char name[256];        /* the device's name ("NVIDIA H200", "cpu") */
    uint64_t mem_bytes;    /* its memory: the largest device-local heap, or the RAM */
    bool integrated;       /* memory shared with the CPU */
} zn_hw;

typedef struct zn_profile {
    char name[64];         /* "nvidia-hopper-141gb" */
    const char *backend;   /* "vulkan" or "cpu" */
    uint64_t mem_bytes;    /* the device's memory */
    uint64_t budget;       /* what models may use */
    uint64_t scratch;      /* what zinc itself needs besides weights, state and KV */
} zn_profile;

void profile_from_hw(const zn_hw *hw, zn_profile *p);

typedef struct zn_fit {
    bool known;            /* the shape is known (else nothing below is) */
    bool fits;             /* at least ZN_FIT_MIN_CTX tokens of context fit (or all it was trained for) */
    uint64_t fixed;        /* weights + state + scratch */
    uint64_t kv_per_token;
    uint32_t ctx;          /* the context it would get (0 when not even the weights fit) */
} zn_fit;

void profile_fit(const zn_profile *p, uint64_t weight_bytes, const zn_model_shape *sh, zn_fit *out);

/* The shape of an installed model, from its metadata (the file is opened
 * and validated with the loader); *weight_bytes = the file's size. */
zn_status profile_shape_of_file(const char *path, zn_model_shape *sh, uint64_t *weight_bytes, zn_err *err);

/* "yes, ctx 262144" / "no, needs 23.6 GB" / "? (pull to know)" */
void profile_fit_text(const zn_fit *f, const zn_profile *p, char *out, size_t cap);

/* "23.6 GB" / "512 MB" */
void profile_fmt_bytes(uint64_t b, char *out, size_t cap);

#endif
