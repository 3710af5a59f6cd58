/* Command recording: one command buffer per graph run (a whole decode step
 * or prefill), submitted once, or (reusable) recorded once and submitted
 * again for later steps (vkcmd_submit + vkcmd_wait without a new
 * recording). Dispatches take their push constants
 * directly (no descriptors); the caller places barriers where an op reads
 * what an earlier one wrote. With profiling on, a timestamp follows every
 * dispatch and vkcmd_profile() sums GPU time per dispatch name. */
#ifndef ZINC_VK_CMD_H
#define ZINC_VK_CMD_H

#include <stdbool.h>

#include "vk_mem.h"
#include "vk_pipeline.h"

#define ZN_VK_MAX_TIMESTAMPS 8192
#define ZN_VK_TRACE_BYTES    (1 << 16) /* --trace: a recording's dispatch names (the rest cut) */

typedef struct vkprof_entry {
    const char *name;
    const char *kernel; /* the shader, when entries are split by kernel */
    double ms;        /* summed GPU time */
    int count;        /* dispatches */
} vkprof_entry;

typedef struct vkcmd {
    vkdev *d;
    VkPipelineLayout layout;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
    bool reusable;                /* set by the owner before vkcmd_begin: may be submitted many times */
    bool poll;                    /* vkcmd_wait polls near the expected end (set by the owner) */
    double submit_s, expect_s;    /* when the last submit happened; how long the one before ran */
    bool recording, submitted;
    bool copied;                  /* a transfer since the last barrier */
    VkPipeline bound;
    /* profiling */
    bool profile;
    VkQueryPool qp;
    uint32_t n_ts;
    const char **ts_name;         /* [ZN_VK_MAX_TIMESTAMPS]: name of the dispatch ending at timestamp i */
    const char **ts_kernel;       /* [ZN_VK_MAX_TIMESTAMPS]: its shader */
    uint32_t n_dispatch, n_barrier;
    char *trace;                  /* [ZN_VK_TRACE_BYTES] or NULL: the recording's dispatch names, " |" at barriers */
    size_t trace_len;
} vkcmd;

zn_status vkcmd_init(vkcmd *c, vkdev *d, VkPipelineLayout layout, bool profile, zn_err *err);
void vkcmd_free(vkcmd *c);
zn_status vkcmd_begin(vkcmd *c, zn_err *err);
/* name is kept by pointer (a string literal or model-owned name). With c
 * NULL, dispatch, barrier, copy and fill record nothing: an op called so
 * only creates the pipelines it would use (the backend does it at init). */
void vkcmd_dispatch(vkcmd *c, const vkpipe *p, const void *push, uint32_t push_size, uint32_t gx, uint32_t gy,
                    uint32_t gz, const char *name);
/* Memory barrier between dispatches (and a copy recorded since the last one). */
void vkcmd_barrier(vkcmd *c);
/* Transfers; each is ordered after all earlier work, and vkcmd_barrier
 * orders later work after it. */
void vkcmd_copy(vkcmd *c, vkref src, vkref dst, uint64_t n);
void vkcmd_fill(vkcmd *c, vkref dst, uint64_t n, uint32_t pattern);
/* Ends recording, submits, and waits for completion. */
zn_status vkcmd_run(vkcmd *c, zn_err *err);
/* The three steps of vkcmd_run. vkcmd_end makes every write visible to the
 * host (mapped buffers are read after vkcmd_wait); a reusable buffer can be
 * submitted again after vkcmd_wait returned. With poll, vkcmd_wait sleeps
 * in the driver for 3/4 of the previous submission's run time, then polls
 * the fence (yielding the CPU in between) up to 5/4 of it, then sleeps
 * again: a sleeping wait can wake up tens of microseconds after the GPU is
 * done, a fraction of a short decode step (llama.cpp polls too). */
zn_status vkcmd_end(vkcmd *c, zn_err *err);
zn_status vkcmd_submit(vkcmd *c, zn_err *err);
zn_status vkcmd_wait(vkcmd *c, zn_err *err);
/* Per-name GPU time of the last run (profile mode), split by shader too
 * when by_kernel; returns entries used,
 * sorted by time, descending. */
int vkcmd_profile(const vkcmd *c, bool by_kernel, vkprof_entry *out, int cap, double *total_ms);

#endif
