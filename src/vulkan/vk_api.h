/* Vulkan entry points, loaded at run time: libvulkan.so.1 is dlopen()ed so
 * the zinc binary starts (and runs on the CPU) on machines without Vulkan.
 * VK_NO_PROTOTYPES keeps every call going through the tables below. */
#ifndef ZINC_VK_API_H
#define ZINC_VK_API_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

/* The build machine's headers (1.3.239) predate VK_KHR_cooperative_matrix;
 * the few definitions we need to detect it are spelled out here. */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define ZN_VK_STYPE_COOPMAT_FEATURES ((VkStructureType)1000506000)
#define ZN_VK_STYPE_COOPMAT_PROPERTIES ((VkStructureType)1000506001)
typedef enum VkComponentTypeKHR {
    VK_COMPONENT_TYPE_FLOAT16_KHR = 0, VK_COMPONENT_TYPE_FLOAT32_KHR = 1,
    VK_COMPONENT_TYPE_SINT8_KHR = 3, VK_COMPONENT_TYPE_SINT32_KHR = 5,
    VK_COMPONENT_TYPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkComponentTypeKHR;
typedef enum VkScopeKHR { VK_SCOPE_SUBGROUP_KHR = 3, VK_SCOPE_MAX_ENUM_KHR = 0x7FFFFFFF } VkScopeKHR;
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeKHR AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult (VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#else
#define ZN_VK_STYPE_COOPMAT_FEATURES VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
#define ZN_VK_STYPE_COOPMAT_PROPERTIES VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#endif

/* VK_NV_cooperative_matrix2 (workgroup-scope matrices, tensor addressing)
 * is newer than these headers too. */
#ifndef VK_NV_cooperative_matrix2
#define VK_NV_cooperative_matrix2 1
#define VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME "VK_NV_cooperative_matrix2"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV ((VkStructureType)1000593000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV ((VkStructureType)1000593001)
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV ((VkStructureType)1000593002)
typedef struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrixWorkgroupScope, cooperativeMatrixFlexibleDimensions, cooperativeMatrixReductions,
        cooperativeMatrixConversions, cooperativeMatrixPerElementOperations, cooperativeMatrixTensorAddressing,
        cooperativeMatrixBlockLoads;
} VkPhysicalDeviceCooperativeMatrix2FeaturesNV;
typedef struct VkPhysicalDeviceCooperativeMatrix2PropertiesNV {
    VkStructureType sType;
    void *pNext;
    uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize, cooperativeMatrixFlexibleDimensionsMaxDimension,
        cooperativeMatrixWorkgroupScopeReservedSharedMemory;
} VkPhysicalDeviceCooperativeMatrix2PropertiesNV;
typedef struct VkCooperativeMatrixFlexibleDimensionsPropertiesNV {
    VkStructureType sType;
    void *pNext;
    uint32_t MGranularity, NGranularity, KGranularity;
    VkComponentTypeKHR AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
    uint32_t workgroupInvocations;
} VkCooperativeMatrixFlexibleDimensionsPropertiesNV;
typedef VkResult (VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixFlexibleDimensionsPropertiesNV *);
#endif
#define ZN_VK_SCOPE_WORKGROUP 2 /* VK_SCOPE_WORKGROUP_KHR */

/* X-macro lists: each entry becomes one PFN member of zn_vk_fns. */
#define ZN_VK_GLOBAL_FNS(X) \
    X(vkCreateInstance) X(vkEnumerateInstanceVersion)

#define ZN_VK_INSTANCE_FNS(X) \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)

#define ZN_VK_DEVICE_FNS(X) \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) \
    X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) \
    X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory) \
    X(vkGetBufferDeviceAddress) X(vkInvalidateMappedMemoryRanges) \
    X(vkCreateShaderModule) X(vkDestroyShaderModule) \
    X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) \
    X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData) \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) \
    X(vkBeginCommandBuffer) X(vkEndCommandBuffer) \
    X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdDispatchIndirect) \
    X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) \
    X(vkCmdWriteTimestamp) X(vkCmdResetQueryPool) \
    X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults) \
    X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) \
    X(vkGetFenceStatus)

typedef struct zn_vk_fns {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define ZN_VK_MEMBER(name) PFN_##name name;
    ZN_VK_GLOBAL_FNS(ZN_VK_MEMBER)
    ZN_VK_INSTANCE_FNS(ZN_VK_MEMBER)
    ZN_VK_DEVICE_FNS(ZN_VK_MEMBER)
#undef ZN_VK_MEMBER
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR; /* optional */
    PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV
        vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV; /* optional */
} zn_vk_fns;

#endif
