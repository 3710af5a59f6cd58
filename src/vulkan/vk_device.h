/* Vulkan instance and device: the loader is dlopen()ed at run time, the
 * physical devices are listed with the capabilities zinc cares about, and
 * one is opened with a compute queue and the features its shaders use.
 *
 * zinc addresses all GPU memory through buffer device addresses (64-bit
 * pointers in push constants), so no descriptor sets exist at all and
 * tensors are not limited by maxStorageBufferRange. Devices without
 * bufferDeviceAddress are listed but cannot be opened. */
#ifndef ZINC_VK_DEVICE_H
#define ZINC_VK_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"
#include "vk_api.h"

#define ZN_VK_MAX_DEVICES 16
#define ZN_VK_NAME_MAX 256
#define ZN_VK_CM2_WG 256         /* workgroup of mmf_cm2.comp */
#define ZN_VK_CM2_GRAIN 32       /* its tiles are multiples of this in M, N and K */

typedef struct vkdev_info {
    char name[ZN_VK_NAME_MAX];
    char driver[ZN_VK_NAME_MAX];  /* driver name and version text ("" before Vulkan 1.2) */
    const char *kind;            /* "discrete", "integrated", "virtual", "cpu", "other" */
    uint32_t vendor_id, device_id, api_version;
    uint64_t vram_bytes;         /* largest device-local heap */
    uint32_t subgroup_size, subgroup_min, subgroup_max;
    bool subgroup_size_control;  /* requiredSubgroupSize usable in compute */
    bool subgroup_arith;         /* subgroupAdd & co in compute shaders */
    bool fp16, int8, int64, storage8, storage16, int_dot;
    bool bda;                    /* bufferDeviceAddress: required by zinc */
    bool coopmat;                /* VK_KHR_cooperative_matrix with f16 x f16 -> f32 */
    uint32_t coopmat_m, coopmat_n, coopmat_k; /* its subgroup tile */
    bool coopmat2;               /* VK_NV_cooperative_matrix2: workgroup-scope f16 x f16 -> f32
                                    matrices of ZN_VK_CM2_WG threads with tensor-addressed loads
                                    and per-element ops (mmf_cm2.comp) */
    uint32_t cm2_gran[3];        /* ... its finest M, N, K granularity at ZN_VK_CM2_WG threads */
    bool timestamps;             /* compute queue writes timestamps */
    float timestamp_period_ns;
    uint64_t max_storage_range, max_alloc, max_buffer;
    uint32_t max_shared, max_push, max_wg_invocations, max_wg_count[3];
    /* What the tuning table (vk_tune.c) tells devices apart by: the shader
     * cores (NVIDIA SMs from VK_NV_shader_sm_builtins, AMD CUs from
     * VK_AMD_shader_core_properties(2); 0: the driver does not say), NVIDIA's
     * warps per SM (32 on Turing, 48 or 64 later), and whether 4x8-bit
     * mixed-signedness dot products are accelerated (AMD: RDNA3 and later). */
    uint32_t compute_units, warps_per_cu;
    bool int_dot_mixed_fast;
} vkdev_info;

typedef struct vkdev {
    void *lib;                   /* dlopen handle of the loader */
    zn_vk_fns fn;
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    int index;                   /* position in the device list */
    vkdev_info info;
    VkPhysicalDeviceMemoryProperties mem;
} vkdev;

/* Lists the Vulkan devices (up to cap). ZN_ERR_DEVICE when there is no
 * loader or no device; err says which. */
zn_status vkdev_list(vkdev_info *out, int cap, int *n, zn_err *err);
/* Opens device `index` of vkdev_list's order; -1 picks the best one
 * (discrete > integrated > virtual > cpu, then most VRAM). */
zn_status vkdev_open(vkdev *d, int index, zn_err *err);
void vkdev_close(vkdev *d);
/* The index vkdev_open(-1) would pick from a list; -1 when n == 0. */
int vkdev_default_index(const vkdev_info *infos, int n);
/* ZN_OK for VK_SUCCESS, else fills err ("vulkan: WHAT failed: VK_ERROR_...");
 * shared by every vk_*.c file. */
zn_status vkdev_check(VkResult r, zn_err *err, const char *what);
/* One line per device for `zinc --list-devices`; `sel` marks the default. */
void vkdev_describe(const vkdev_info *info, int index, bool sel, char *buf, size_t cap);

#endif
