/* Compute pipelines from the SPIR-V embedded at build time (zn_spv_blobs).
 * Every zinc shader reads and writes memory through buffer device
 * addresses passed in push constants, so one pipeline layout (push
 * constants only, no descriptor sets) serves them all. Specialisation
 * constants 0..n-1 are uint32 (constant 0 is the workgroup size by
 * convention); a required subgroup size is set when the device allows it.
 * The driver's pipeline cache is kept on disk when a path is given. */
#ifndef ZINC_VK_PIPELINE_H
#define ZINC_VK_PIPELINE_H

#include "vk_device.h"

#define ZN_VK_PUSH_MAX 128   /* bytes: the Vulkan minimum, and lavapipe's limit */
#define ZN_VK_MAX_SPEC 16
#define ZN_VK_BUILD_THREADS 16 /* vkpipe_create_all's threads at most */

typedef struct vkpipe {
    VkPipeline pipe;
    const char *shader;
} vkpipe;

typedef struct vkpipes {
    vkdev *d;
    VkPipelineLayout layout;
    VkPipelineCache cache;
    char cache_path[ZN_PATH_MAX]; /* "" = no disk cache */
    int n_created;
} vkpipes;

zn_status vkpipes_init(vkpipes *ps, vkdev *d, const char *cache_path, zn_err *err);
/* Writes the cache file (best effort) and destroys the layout and cache. */
void vkpipes_free(vkpipes *ps);
/* subgroup: 0 = the driver's choice, else a required size (only honoured
 * when the device supports subgroup size control and the size is in range). */
zn_status vkpipe_create(vkpipes *ps, vkpipe *p, const char *shader, const uint32_t *spec, uint32_t n_spec,
                        uint32_t subgroup, zn_err *err);
/* One pipeline of vkpipe_create_all: vkpipe_create's arguments. */
typedef struct vkpipe_job {
    vkpipe *p;
    const char *shader;
    uint32_t spec[ZN_VK_MAX_SPEC], n_spec, subgroup;
} vkpipe_job;
/* Creates the jobs' pipelines on up to `threads` threads at once: a cold
 * driver cache compiles each, seconds apiece for the large GEMM kernels
 * (the pipeline cache is synchronised by the driver). A job that fails
 * leaves its pipeline empty; the caller's vkpipe_create of it says why. */
void vkpipe_create_all(vkpipes *ps, vkpipe_job *jobs, int n, int threads);
void vkpipe_destroy(vkpipes *ps, vkpipe *p);
/* The default cache path: $XDG_CACHE_HOME/zinc or ~/.cache/zinc, keyed by
 * device; "" when neither is set. */
void vkpipes_default_cache_path(const vkdev *d, char *buf, size_t cap);

#endif
