/* Command buffer recording and submission (see vk_cmd.h). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_cmd.h"
#include "timer.h"

zn_status vkcmd_init(vkcmd *c, vkdev *d, VkPipelineLayout layout, bool profile, zn_err *err) {
    memset(c, 0, sizeof *c);
    c->d = d;
    c->layout = layout;
    const zn_vk_fns *fn = &d->fn;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    zn_status st = vkdev_check(fn->vkCreateCommandPool(d->dev, &pci, NULL, &c->pool), err, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = c->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    if (!st) st = vkdev_check(fn->vkAllocateCommandBuffers(d->dev, &cai, &c->cb), err, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (!st) st = vkdev_check(fn->vkCreateFence(d->dev, &fci, NULL, &c->fence), err, "vkCreateFence");
    if (!st && profile) {
        if (!d->info.timestamps) {
            st = zn_errf(err, ZN_ERR_UNSUPPORTED, "vulkan: '%s' has no compute timestamps for --profile", d->info.name);
        } else {
            VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                         .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = ZN_VK_MAX_TIMESTAMPS};
            st = vkdev_check(fn->vkCreateQueryPool(d->dev, &qci, NULL, &c->qp), err, "vkCreateQueryPool");
            c->ts_name = calloc(ZN_VK_MAX_TIMESTAMPS, sizeof *c->ts_name);
            c->ts_kernel = calloc(ZN_VK_MAX_TIMESTAMPS, sizeof *c->ts_kernel);
            if (!st && (!c->ts_name || !c->ts_kernel)) st = zn_errf(err, ZN_ERR_NOMEM, "vulkan: profile names");
            c->profile = true;
        }
    }
    if (st) vkcmd_free(c);
    return st;
}

void vkcmd_free(vkcmd *c) {
    if (!c->d) return;
    const zn_vk_fns *fn = &c->d->fn;
    if (c->submitted) fn->vkWaitForFences(c->d->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
    if (c->fence) fn->vkDestroyFence(c->d->dev, c->fence, NULL);
    if (c->qp) fn->vkDestroyQueryPool(c->d->dev, c->qp, NULL);
    if (c->pool) fn->vkDestroyCommandPool(c->d->dev, c->pool, NULL);
    free(c->ts_name);
    free(c->ts_kernel);
    free(c->trace);
    memset(c, 0, sizeof *c);
}

zn_status vkcmd_begin(vkcmd *c, zn_err *err) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = c->reusable ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    zn_status st = vkdev_check(c->d->fn.vkBeginCommandBuffer(c->cb, &bi), err, "vkBeginCommandBuffer");
    if (st) return st;
    c->recording = true;
    c->copied = false;
    c->bound = VK_NULL_HANDLE;
    c->n_dispatch = c->n_barrier = 0;
    c->trace_len = 0;
    if (c->trace) c->trace[0] = 0;
    c->n_ts = 0;
    if (c->profile) {
        c->d->fn.vkCmdResetQueryPool(c->cb, c->qp, 0, ZN_VK_MAX_TIMESTAMPS);
        c->d->fn.vkCmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, c->qp, c->n_ts++);
    }
    return ZN_OK;
}

static void trace_add(vkcmd *c, const char *s) {
    if (!c->trace || c->trace_len + 1 >= ZN_VK_TRACE_BYTES) return;
    const int n = snprintf(c->trace + c->trace_len, ZN_VK_TRACE_BYTES - c->trace_len, " %s", s);
    if (n > 0) c->trace_len += (size_t)n < ZN_VK_TRACE_BYTES - c->trace_len ? (size_t)n : ZN_VK_TRACE_BYTES - c->trace_len - 1;
}

void vkcmd_dispatch(vkcmd *c, const vkpipe *p, const void *push, uint32_t push_size, uint32_t gx, uint32_t gy,
                    uint32_t gz, const char *name) {
    if (!c) return;
    const zn_vk_fns *fn = &c->d->fn;
    if (c->bound != p->pipe) {
        fn->vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
        c->bound = p->pipe;
    }
    if (push_size) fn->vkCmdPushConstants(c->cb, c->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
    fn->vkCmdDispatch(c->cb, gx, gy, gz);
    c->n_dispatch++;
    trace_add(c, name ? name : p->shader);
    if (c->profile && c->n_ts < ZN_VK_MAX_TIMESTAMPS) {
        c->ts_name[c->n_ts] = name ? name : p->shader;
        c->ts_kernel[c->n_ts] = p->shader;
        fn->vkCmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, c->qp, c->n_ts++);
    }
}

/* Compute-to-compute in the common case; the transfer stage joins in only
 * around copies (a heavier synchronisation on some drivers). */
static void barrier(vkcmd *c, bool transfer) {
    VkAccessFlags acc = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    if (transfer) {
        acc |= VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        stages |= VK_PIPELINE_STAGE_TRANSFER_BIT;
    }
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | (transfer ? VK_ACCESS_TRANSFER_WRITE_BIT : 0),
                          .dstAccessMask = acc};
    c->d->fn.vkCmdPipelineBarrier(c->cb, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
    c->n_barrier++;
    trace_add(c, "|");
    c->copied = false;
}

void vkcmd_barrier(vkcmd *c) {
    if (c) barrier(c, c->copied);
}

void vkcmd_copy(vkcmd *c, vkref src, vkref dst, uint64_t n) {
    if (!c) return;
    barrier(c, true); /* whatever the hazards: orders the copy against the compute stage */
    VkBufferCopy r = {.srcOffset = src.off, .dstOffset = dst.off, .size = n};
    c->d->fn.vkCmdCopyBuffer(c->cb, src.buf, dst.buf, 1, &r);
    c->copied = true;
}

void vkcmd_fill(vkcmd *c, vkref dst, uint64_t n, uint32_t pattern) {
    if (!c) return;
    barrier(c, true);
    c->d->fn.vkCmdFillBuffer(c->cb, dst.buf, dst.off, n, pattern);
    c->copied = true;
}

zn_status vkcmd_end(vkcmd *c, zn_err *err) {
    const zn_vk_fns *fn = &c->d->fn;
    /* Make shader writes visible to the host (readback of mapped buffers). */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    fn->vkCmdPipelineBarrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    c->recording = false;
    return vkdev_check(fn->vkEndCommandBuffer(c->cb), err, "vkEndCommandBuffer");
}

zn_status vkcmd_submit(vkcmd *c, zn_err *err) {
    c->submit_s = timer_now();
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->cb};
    zn_status st = vkdev_check(c->d->fn.vkQueueSubmit(c->d->queue, 1, &si, c->fence), err, "vkQueueSubmit");
    if (!st) c->submitted = true;
    return st;
}

zn_status vkcmd_wait(vkcmd *c, zn_err *err) {
    const zn_vk_fns *fn = &c->d->fn;
    VkResult r = VK_TIMEOUT;
    if (c->poll && c->expect_s > 0) {
        const double sleep = 0.75 * c->expect_s - (timer_now() - c->submit_s);
        if (sleep > 0) r = fn->vkWaitForFences(c->d->dev, 1, &c->fence, VK_TRUE, (uint64_t)(sleep * 1e9));
        while (r == VK_TIMEOUT && timer_now() - c->submit_s < 1.25 * c->expect_s) {
            r = fn->vkGetFenceStatus(c->d->dev, c->fence);
            if (r == VK_NOT_READY) {
                r = VK_TIMEOUT;
                sched_yield();
            }
        }
    }
    if (r == VK_TIMEOUT) r = fn->vkWaitForFences(c->d->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
    c->expect_s = timer_now() - c->submit_s;
    zn_status st = vkdev_check(r, err, "vkWaitForFences");
    fn->vkResetFences(c->d->dev, 1, &c->fence);
    c->submitted = false;
    return st;
}

zn_status vkcmd_run(vkcmd *c, zn_err *err) {
    zn_status st = vkcmd_end(c, err);
    if (!st) st = vkcmd_submit(c, err);
    return st ? st : vkcmd_wait(c, err);
}

static int by_ms_desc(const void *a, const void *b) {
    double x = ((const vkprof_entry *)a)->ms, y = ((const vkprof_entry *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

int vkcmd_profile(const vkcmd *c, bool by_kernel, vkprof_entry *out, int cap, double *total_ms) {
    *total_ms = 0;
    if (!c->profile || c->n_ts < 2) return 0;
    uint64_t *ts = malloc(sizeof *ts * c->n_ts);
    if (!ts) return 0;
    int n = 0;
    if (c->d->fn.vkGetQueryPoolResults(c->d->dev, c->qp, 0, c->n_ts, sizeof *ts * c->n_ts, ts, sizeof *ts,
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
        double per = c->d->info.timestamp_period_ns * 1e-6;
        *total_ms = (double)(ts[c->n_ts - 1] - ts[0]) * per;
        for (uint32_t i = 1; i < c->n_ts; i++) {
            double ms = (double)(ts[i] - ts[i - 1]) * per;
            const char *k = by_kernel ? c->ts_kernel[i] : NULL;
            int j = 0;
            while (j < n && (strcmp(out[j].name, c->ts_name[i]) || (k && strcmp(out[j].kernel, k)))) j++;
            if (j == n) {
                if (n == cap) continue;
                out[n++] = (vkprof_entry){.name = c->ts_name[i], .kernel = k};
            }
            out[j].ms += ms;
            out[j].count++;
        }
        qsort(out, (size_t)n, sizeof *out, by_ms_desc);
    }
    free(ts);
    return n;
}
