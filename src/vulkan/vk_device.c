/* Vulkan loader, device listing and device creation (see vk_device.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "vk_device.h"

/* Under LeakSanitizer only (its runtime in the process: an ASan build, or
 * a test linked with it), what the driver allocates while it enumerates its
 * devices is not reported as lost. On AMD CPUs lavapipe's CPU detection
 * keeps 128-byte L3 cache affinity masks in its globals; once
 * vkDestroyInstance has unloaded the driver LeakSanitizer no longer sees
 * those globals and reports the block from "<unknown module>", which no
 * suppression can name (CI's failures of 2026-12-02). zinc allocates
 * nothing in that call, and an object zinc forgets to destroy is allocated
 * elsewhere: still found (the ASan pass found forgotten pipelines so). */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));
static void lsan_pause(bool off) {
    if (!__lsan_disable || !__lsan_enable) return;
    if (off) __lsan_disable();
    else __lsan_enable();
}

static const char *vk_result_str(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    default: return "VkResult";
    }
}

zn_status vkdev_check(VkResult r, zn_err *err, const char *what) {
    if (r == VK_SUCCESS) return ZN_OK;
    return zn_errf(err, r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? ZN_ERR_NOMEM : ZN_ERR_DEVICE,
                   "vulkan: %s failed: %s (%d)", what, vk_result_str(r), (int)r);
}

static zn_status loader_open(vkdev *d, zn_err *err) {
    const char *names[] = {"libvulkan.so.1", "libvulkan.so"};
    for (size_t i = 0; i < 2 && !d->lib; i++) d->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) return zn_errf(err, ZN_ERR_DEVICE, "vulkan: cannot load libvulkan.so.1 (%s)", dlerror());
    /* dlsym returns void*; the cast to a function pointer goes through memcpy to stay ISO C. */
    void *sym = dlsym(d->lib, "vkGetInstanceProcAddr");
    if (!sym) return zn_errf(err, ZN_ERR_DEVICE, "vulkan: libvulkan has no vkGetInstanceProcAddr");
    memcpy(&d->fn.vkGetInstanceProcAddr, &sym, sizeof sym);
#define LOAD_GLOBAL(name) d->fn.name = (PFN_##name)d->fn.vkGetInstanceProcAddr(NULL, #name);
    ZN_VK_GLOBAL_FNS(LOAD_GLOBAL)
#undef LOAD_GLOBAL
    if (!d->fn.vkCreateInstance) return zn_errf(err, ZN_ERR_DEVICE, "vulkan: loader has no vkCreateInstance");
    return ZN_OK;
}

static zn_status instance_open(vkdev *d, zn_err *err) {
    zn_status st = loader_open(d, err);
    if (st) return st;
    uint32_t ver = VK_API_VERSION_1_0;
    if (d->fn.vkEnumerateInstanceVersion) d->fn.vkEnumerateInstanceVersion(&ver);
    if (ver < VK_API_VERSION_1_2)
        return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: instance version %u.%u < 1.2", VK_API_VERSION_MAJOR(ver),
                       VK_API_VERSION_MINOR(ver));
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "zinc",
                             .pEngineName = "zinc", .apiVersion = ver >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : ver};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    st = vkdev_check(d->fn.vkCreateInstance(&ci, NULL, &d->inst), err, "vkCreateInstance");
    if (st) return st;
#define LOAD_INST(name) d->fn.name = (PFN_##name)d->fn.vkGetInstanceProcAddr(d->inst, #name); \
    if (!d->fn.name) return zn_errf(err, ZN_ERR_DEVICE, "vulkan: no entry point %s", #name);
    ZN_VK_INSTANCE_FNS(LOAD_INST)
#undef LOAD_INST
    d->fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)
        d->fn.vkGetInstanceProcAddr(d->inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    d->fn.vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)d->fn.vkGetInstanceProcAddr(
            d->inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
    return ZN_OK;
}

static bool has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return true;
    return false;
}

/* The queried capabilities, kept for device creation. */
typedef struct dev_caps {
    VkPhysicalDeviceFeatures2 f;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceVulkan13Features f13;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR fcm;
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV fcm2;
    bool is13, has_coopmat_ext, has_coopmat2_ext;
    uint32_t queue_family;
} dev_caps;

/* Whether mmf_cm2.comp can run: the features it uses, workgroups of
 * ZN_VK_CM2_WG threads, and f16 x f16 -> f32 workgroup-scope matrices whose
 * granularities divide ZN_VK_CM2_GRAIN; gran: the finest such entry's M, N
 * and K (--list-devices shows them: the tiles that failed on Hopper were
 * within them, vk_gemm.c zn_vk_cm2_cfgs). */
static bool coopmat2_usable(const vkdev *d, VkPhysicalDevice pd, const dev_caps *caps,
                            const VkPhysicalDeviceCooperativeMatrix2PropertiesNV *props, uint32_t gran[3]) {
    const VkPhysicalDeviceCooperativeMatrix2FeaturesNV *f = &caps->fcm2;
    if (!f->cooperativeMatrixWorkgroupScope || !f->cooperativeMatrixFlexibleDimensions ||
        !f->cooperativeMatrixPerElementOperations || !f->cooperativeMatrixTensorAddressing ||
        !f->cooperativeMatrixBlockLoads /* decode functions: the MoE gather */ ||
        !caps->f12.vulkanMemoryModel || !caps->f13.maintenance4 /* SPIR-V 1.6 LocalSizeId */ ||
        props->cooperativeMatrixWorkgroupScopeMaxWorkgroupSize < ZN_VK_CM2_WG ||
        props->cooperativeMatrixFlexibleDimensionsMaxDimension < 256)
        return false;
    VkCooperativeMatrixFlexibleDimensionsPropertiesNV fl[64];
    uint32_t n = 64;
    for (uint32_t i = 0; i < n; i++)
        fl[i] = (VkCooperativeMatrixFlexibleDimensionsPropertiesNV){
            .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV};
    VkResult r = d->fn.vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(pd, &n, fl);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return false;
    bool ok = false;
    for (uint32_t i = 0; i < n; i++) {
        const VkCooperativeMatrixFlexibleDimensionsPropertiesNV *p = &fl[i];
        if (p->AType == VK_COMPONENT_TYPE_FLOAT16_KHR && p->BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
            p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR && p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
            !p->saturatingAccumulation && (int)p->scope == ZN_VK_SCOPE_WORKGROUP &&
            p->workgroupInvocations == ZN_VK_CM2_WG && p->MGranularity && ZN_VK_CM2_GRAIN % p->MGranularity == 0 &&
            p->NGranularity && ZN_VK_CM2_GRAIN % p->NGranularity == 0 && p->KGranularity &&
            ZN_VK_CM2_GRAIN % p->KGranularity == 0 &&
            (!ok || p->MGranularity * p->NGranularity < gran[0] * gran[1])) {
            gran[0] = p->MGranularity, gran[1] = p->NGranularity, gran[2] = p->KGranularity;
            ok = true;
        }
    }
    return ok;
}

static void query_device(const vkdev *d, VkPhysicalDevice pd, vkdev_info *info, dev_caps *caps) {
    const zn_vk_fns *fn = &d->fn;
    memset(info, 0, sizeof *info);
    memset(caps, 0, sizeof *caps);
    VkPhysicalDeviceProperties base;
    fn->vkGetPhysicalDeviceProperties(pd, &base);
    caps->is13 = base.apiVersion >= VK_API_VERSION_1_3;

    uint32_t n_ext = 0;
    fn->vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, NULL);
    VkExtensionProperties exts[512];
    if (n_ext > 512) n_ext = 512;
    fn->vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, exts);
    caps->has_coopmat_ext = has_ext(exts, n_ext, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                            fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR;
    /* SPIR-V 1.6 (Vulkan 1.3) carries the NV extension's shaders */
    caps->has_coopmat2_ext = caps->has_coopmat_ext && caps->is13 &&
                             has_ext(exts, n_ext, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME) &&
                             fn->vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV;

    VkPhysicalDeviceVulkan11Properties p11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
    VkPhysicalDeviceVulkan13Properties p13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties pm3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
                                                  .pNext = &p11};
    VkPhysicalDeviceDriverProperties pdrv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    void **ptail = &p11.pNext;
    if (base.apiVersion >= VK_API_VERSION_1_2) { *ptail = &pdrv; ptail = &pdrv.pNext; }
    if (caps->is13) { *ptail = &p13; ptail = &p13.pNext; }
    VkPhysicalDeviceCooperativeMatrix2PropertiesNV pcm2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    if (caps->has_coopmat2_ext) { *ptail = &pcm2; ptail = &pcm2.pNext; }
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV psm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD pamd = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceShaderCoreProperties2AMD pamd2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
    VkPhysicalDeviceShaderIntegerDotProductProperties pdot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    const bool has_sm = has_ext(exts, n_ext, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
    const bool has_amd = has_ext(exts, n_ext, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
    const bool has_amd2 = has_ext(exts, n_ext, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
    if (has_sm) { *ptail = &psm; ptail = &psm.pNext; }
    if (has_amd) { *ptail = &pamd; ptail = &pamd.pNext; }
    if (has_amd2) { *ptail = &pamd2; ptail = &pamd2.pNext; }
    if (caps->is13) { *ptail = &pdot; ptail = &pdot.pNext; }
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &pm3};
    fn->vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceLimits *lim = &p2.properties.limits;

    caps->f13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
    caps->fcm.sType = ZN_VK_STYPE_COOPMAT_FEATURES;
    caps->fcm2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV;
    caps->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    caps->f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    caps->f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    caps->f.pNext = &caps->f11;
    caps->f11.pNext = &caps->f12;
    void **tail = &caps->f12.pNext;
    if (caps->is13) { *tail = &caps->f13; tail = &caps->f13.pNext; }
    if (caps->has_coopmat_ext) { *tail = &caps->fcm; tail = &caps->fcm.pNext; }
    if (caps->has_coopmat2_ext) { *tail = &caps->fcm2; tail = &caps->fcm2.pNext; }
    fn->vkGetPhysicalDeviceFeatures2(pd, &caps->f);

    snprintf(info->name, sizeof info->name, "%s", p2.properties.deviceName);
    snprintf(info->driver, sizeof info->driver, "%s%s%s", pdrv.driverName, *pdrv.driverInfo ? " " : "", pdrv.driverInfo);
    switch (base.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info->kind = "discrete"; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info->kind = "integrated"; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info->kind = "virtual"; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info->kind = "cpu"; break;
    default: info->kind = "other";
    }
    info->vendor_id = base.vendorID;
    info->device_id = base.deviceID;
    info->api_version = base.apiVersion;

    VkPhysicalDeviceMemoryProperties mem;
    fn->vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
        if ((mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mem.memoryHeaps[i].size > info->vram_bytes)
            info->vram_bytes = mem.memoryHeaps[i].size;

    info->subgroup_size = p11.subgroupSize;
    info->subgroup_min = info->subgroup_max = p11.subgroupSize;
    info->subgroup_arith = (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                           (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                           (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    if (caps->is13) {
        info->subgroup_min = p13.minSubgroupSize;
        info->subgroup_max = p13.maxSubgroupSize;
        info->subgroup_size_control = caps->f13.subgroupSizeControl && caps->f13.computeFullSubgroups &&
                                      (p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
        info->int_dot = caps->f13.shaderIntegerDotProduct;
        info->max_buffer = p13.maxBufferSize;
    }
    info->fp16 = caps->f12.shaderFloat16;
    info->int8 = caps->f12.shaderInt8;
    info->int64 = caps->f.features.shaderInt64;
    info->storage8 = caps->f12.storageBuffer8BitAccess;
    info->storage16 = caps->f11.storageBuffer16BitAccess;
    info->bda = caps->f12.bufferDeviceAddress;
    info->max_storage_range = lim->maxStorageBufferRange;
    info->max_alloc = pm3.maxMemoryAllocationSize;
    if (!info->max_buffer) info->max_buffer = info->max_alloc;
    info->max_shared = lim->maxComputeSharedMemorySize;
    info->max_push = lim->maxPushConstantsSize;
    info->max_wg_invocations = lim->maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) info->max_wg_count[i] = lim->maxComputeWorkGroupCount[i];
    info->timestamp_period_ns = lim->timestampPeriod;
    if (has_sm) info->compute_units = psm.shaderSMCount, info->warps_per_cu = psm.shaderWarpsPerSM;
    else if (has_amd2 && pamd2.activeComputeUnitCount) info->compute_units = pamd2.activeComputeUnitCount;
    else if (has_amd)
        info->compute_units = pamd.shaderEngineCount * pamd.shaderArraysPerEngineCount * pamd.computeUnitsPerShaderArray;
    info->int_dot_mixed_fast = caps->is13 && pdot.integerDotProduct4x8BitPackedMixedSignednessAccelerated;

    /* Compute queue: prefer a compute-only family (async compute on discrete
     * GPUs), else any family with compute. */
    VkQueueFamilyProperties qf[32];
    uint32_t nq = 32;
    fn->vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < nq; i++) {
        if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (best == UINT32_MAX || (!(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) && qf[i].timestampValidBits)) best = i;
    }
    caps->queue_family = best;
    info->timestamps = best != UINT32_MAX && qf[best].timestampValidBits > 0 && lim->timestampComputeAndGraphics;

    if (caps->has_coopmat_ext && caps->fcm.cooperativeMatrix) {
        VkCooperativeMatrixPropertiesKHR props[64];
        uint32_t n = 64;
        for (uint32_t i = 0; i < n; i++) props[i] = (VkCooperativeMatrixPropertiesKHR){.sType = ZN_VK_STYPE_COOPMAT_PROPERTIES};
        if (fn->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, props) == VK_SUCCESS) {
            for (uint32_t i = 0; i < n; i++) {
                const VkCooperativeMatrixPropertiesKHR *p = &props[i];
                if (p->AType == VK_COMPONENT_TYPE_FLOAT16_KHR && p->BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                    p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR && p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
                    p->scope == VK_SCOPE_SUBGROUP_KHR && p->MSize == 16 && p->NSize == 16) {
                    info->coopmat = true;
                    info->coopmat_m = p->MSize; info->coopmat_n = p->NSize; info->coopmat_k = p->KSize;
                    break;
                }
            }
        }
    }
    info->coopmat2 = info->coopmat && caps->has_coopmat2_ext && coopmat2_usable(d, pd, caps, &pcm2, info->cm2_gran);
}

static int kind_rank(const char *k) {
    return !strcmp(k, "discrete") ? 4 : !strcmp(k, "integrated") ? 3 : !strcmp(k, "virtual") ? 2 : !strcmp(k, "cpu") ? 1 : 0;
}

static void instance_close(vkdev *d) {
    if (d->inst) d->fn.vkDestroyInstance(d->inst, NULL);
    if (d->lib) dlclose(d->lib);
    memset(d, 0, sizeof *d);
}

static zn_status enumerate(vkdev *d, VkPhysicalDevice *pds, uint32_t *n, zn_err *err) {
    *n = ZN_VK_MAX_DEVICES;
    lsan_pause(true); /* the loader opens the drivers here */
    VkResult r = d->fn.vkEnumeratePhysicalDevices(d->inst, n, pds);
    lsan_pause(false);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vkdev_check(r, err, "vkEnumeratePhysicalDevices");
    if (*n == 0) return zn_errf(err, ZN_ERR_DEVICE, "vulkan: no physical device (is a driver installed?)");
    return ZN_OK;
}

zn_status vkdev_list(vkdev_info *out, int cap, int *n, zn_err *err) {
    vkdev d = {0};
    *n = 0;
    zn_status st = instance_open(&d, err);
    VkPhysicalDevice pds[ZN_VK_MAX_DEVICES];
    uint32_t np = 0;
    if (!st) st = enumerate(&d, pds, &np, err);
    for (uint32_t i = 0; !st && i < np && (int)i < cap; i++) {
        dev_caps caps;
        query_device(&d, pds[i], &out[i], &caps);
        *n = (int)i + 1;
    }
    instance_close(&d);
    return st;
}

static int pick_default(const vkdev_info *infos, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        int a = kind_rank(infos[i].kind), b = kind_rank(infos[best].kind);
        if (a > b || (a == b && infos[i].vram_bytes > infos[best].vram_bytes)) best = i;
    }
    return best;
}

static zn_status create_device(vkdev *d, dev_caps *caps, zn_err *err) {
    const vkdev_info *in = &d->info;
    if (!in->bda || !in->int64 || !in->storage16 || !in->storage8 || !in->fp16 || !in->int8)
        return zn_errf(err, ZN_ERR_UNSUPPORTED,
                       "vulkan: device '%s' lacks a required feature (bufferDeviceAddress %d, shaderInt64 %d, "
                       "16-bit storage %d, 8-bit storage %d, shaderFloat16 %d, shaderInt8 %d)",
                       in->name, in->bda, in->int64, in->storage16, in->storage8, in->fp16, in->int8);
    if (caps->queue_family == UINT32_MAX) return zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: '%s' has no compute queue", in->name);

    /* Enable exactly what the shaders use; everything else off. */
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.features.shaderInt64 = VK_TRUE;
    f.features.shaderInt16 = caps->f.features.shaderInt16;
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = VK_TRUE;
    f11.uniformAndStorageBuffer16BitAccess = caps->f11.uniformAndStorageBuffer16BitAccess;
    f11.storagePushConstant16 = caps->f11.storagePushConstant16;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.bufferDeviceAddress = VK_TRUE;
    f12.shaderFloat16 = VK_TRUE;
    f12.shaderInt8 = VK_TRUE;
    f12.storageBuffer8BitAccess = VK_TRUE;
    f12.uniformAndStorageBuffer8BitAccess = caps->f12.uniformAndStorageBuffer8BitAccess;
    f12.storagePushConstant8 = caps->f12.storagePushConstant8;
    f12.shaderSubgroupExtendedTypes = caps->f12.shaderSubgroupExtendedTypes;
    f12.scalarBlockLayout = caps->f12.scalarBlockLayout;
    f12.vulkanMemoryModel = caps->f12.vulkanMemoryModel;
    f12.vulkanMemoryModelDeviceScope = caps->f12.vulkanMemoryModelDeviceScope;
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    f13.subgroupSizeControl = caps->f13.subgroupSizeControl;
    f13.computeFullSubgroups = caps->f13.computeFullSubgroups;
    f13.shaderIntegerDotProduct = caps->f13.shaderIntegerDotProduct;
    f13.maintenance4 = caps->f13.maintenance4;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR fcm = {.sType = ZN_VK_STYPE_COOPMAT_FEATURES};
    fcm.cooperativeMatrix = in->coopmat;
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV fcm2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
        .cooperativeMatrixWorkgroupScope = VK_TRUE, .cooperativeMatrixFlexibleDimensions = VK_TRUE,
        .cooperativeMatrixPerElementOperations = VK_TRUE, .cooperativeMatrixTensorAddressing = VK_TRUE,
        .cooperativeMatrixBlockLoads = VK_TRUE};
    f.pNext = &f11;
    f11.pNext = &f12;
    void **tail = &f12.pNext;
    if (caps->is13) { *tail = &f13; tail = &f13.pNext; }
    const char *exts[4];
    uint32_t n_ext = 0;
    if (in->coopmat) { *tail = &fcm; tail = &fcm.pNext; exts[n_ext++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME; }
    if (in->coopmat2) { *tail = &fcm2; tail = &fcm2.pNext; exts[n_ext++] = VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME; }

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = caps->queue_family, .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci, .enabledExtensionCount = n_ext, .ppEnabledExtensionNames = exts};
    zn_status st = vkdev_check(d->fn.vkCreateDevice(d->phys, &dci, NULL, &d->dev), err, "vkCreateDevice");
    if (st) return st;
#define LOAD_DEV(name) d->fn.name = (PFN_##name)d->fn.vkGetDeviceProcAddr(d->dev, #name); \
    if (!d->fn.name) return zn_errf(err, ZN_ERR_DEVICE, "vulkan: no device entry point %s", #name);
    ZN_VK_DEVICE_FNS(LOAD_DEV)
#undef LOAD_DEV
    d->queue_family = caps->queue_family;
    d->fn.vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    d->fn.vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
    return ZN_OK;
}

zn_status vkdev_open(vkdev *d, int index, zn_err *err) {
    memset(d, 0, sizeof *d);
    zn_status st = instance_open(d, err);
    VkPhysicalDevice pds[ZN_VK_MAX_DEVICES];
    uint32_t np = 0;
    if (!st) st = enumerate(d, pds, &np, err);
    if (st) { instance_close(d); return st; }
    vkdev_info infos[ZN_VK_MAX_DEVICES];
    dev_caps caps[ZN_VK_MAX_DEVICES];
    for (uint32_t i = 0; i < np; i++) query_device(d, pds[i], &infos[i], &caps[i]);
    if (index < 0) index = pick_default(infos, (int)np);
    if (index >= (int)np) {
        instance_close(d);
        return zn_errf(err, ZN_ERR_ARG, "vulkan: no device %d (%u present; see zinc --list-devices)", index, np);
    }
    d->index = index;
    d->phys = pds[index];
    d->info = infos[index];
    st = create_device(d, &caps[index], err);
    if (st) vkdev_close(d);
    return st;
}

void vkdev_close(vkdev *d) {
    if (d->dev) {
        d->fn.vkDeviceWaitIdle(d->dev);
        d->fn.vkDestroyDevice(d->dev, NULL);
    }
    instance_close(d);
}

void vkdev_describe(const vkdev_info *in, int index, bool sel, char *buf, size_t cap) {
    char cm2[64] = "";
    if (in->coopmat2)
        snprintf(cm2, sizeof cm2, " (+NV coopmat2 %ux%ux%u)", in->cm2_gran[0], in->cm2_gran[1], in->cm2_gran[2]);
    snprintf(buf, cap,
             "%c %d: %s (%s, Vulkan %u.%u, %.1f GiB) subgroup %u [%u..%u]%s fp16 %s, int-dot %s, coopmat %s%s, "
             "storage range %.0f MiB, max alloc %.0f MiB%s",
             sel ? '*' : ' ', index, in->name, in->kind, VK_API_VERSION_MAJOR(in->api_version),
             VK_API_VERSION_MINOR(in->api_version), (double)in->vram_bytes / (1 << 30), in->subgroup_size,
             in->subgroup_min, in->subgroup_max, in->subgroup_size_control ? " (controllable)," : ",",
             in->fp16 ? "yes" : "no", in->int_dot ? "yes" : "no", in->coopmat ? "yes" : "no", cm2,
             (double)in->max_storage_range / (1 << 20), (double)in->max_alloc / (1 << 20),
             in->bda ? "" : " [unusable: no bufferDeviceAddress]");
}

int vkdev_default_index(const vkdev_info *infos, int n) { return n > 0 ? pick_default(infos, n) : -1; }
