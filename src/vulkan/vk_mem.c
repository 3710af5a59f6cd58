/* Buffers, arenas and transfers (see vk_mem.h). */
#include <string.h>

#include "vk_mem.h"

static int find_type(const vkdev *d, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) {
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = d->mem.memoryTypes[i].propertyFlags;
        if ((bits & (1u << i)) && (f & want) == want && !(f & avoid)) return (int)i;
    }
    return -1;
}

static int pick_type(const vkdev *d, uint32_t bits, vkmem_kind kind) {
    const VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    int t;
    if (kind == VKMEM_DEVICE) {
        /* Plain VRAM first: the host-visible device-local window (ReBAR) is
         * small on some systems. */
        if ((t = find_type(d, bits, DL, HV)) >= 0) return t;
        return find_type(d, bits, DL, 0);
    }
    if (kind == VKMEM_SHARED && (t = find_type(d, bits, DL | HV | HC, 0)) >= 0) return t;
    if ((t = find_type(d, bits, HV | HC | CA, 0)) >= 0) return t;
    return find_type(d, bits, HV | HC, 0);
}

zn_status vkbuf_create(vkdev *d, vkbuf *b, uint64_t size, vkmem_kind kind, zn_err *err) {
    memset(b, 0, sizeof *b);
    if (size == 0) size = 4;
    const zn_vk_fns *fn = &d->fn;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                                       VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    zn_status st = vkdev_check(fn->vkCreateBuffer(d->dev, &bci, NULL, &b->buf), err, "vkCreateBuffer");
    if (st) return st;
    VkMemoryRequirements req;
    fn->vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
    int type = pick_type(d, req.memoryTypeBits, kind);
    if (type < 0) {
        vkbuf_destroy(d, b);
        return zn_errf(err, ZN_ERR_DEVICE, "vulkan: no %s memory type for a buffer",
                       kind == VKMEM_DEVICE ? "device-local" : "host-visible");
    }
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &flags,
                                .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type};
    st = vkdev_check(fn->vkAllocateMemory(d->dev, &mai, NULL, &b->mem), err, "vkAllocateMemory");
    if (!st) st = vkdev_check(fn->vkBindBufferMemory(d->dev, b->buf, b->mem, 0), err, "vkBindBufferMemory");
    VkMemoryPropertyFlags pf = d->mem.memoryTypes[type].propertyFlags;
    if (!st && (pf & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
        void *p = NULL;
        st = vkdev_check(fn->vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &p), err, "vkMapMemory");
        b->map = p;
        b->coherent = (pf & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    }
    if (st) {
        if (st == ZN_ERR_NOMEM) zn_err_prefix(err, "allocating %.1f MiB", (double)size / (1 << 20));
        vkbuf_destroy(d, b);
        return st;
    }
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = b->buf};
    b->addr = fn->vkGetBufferDeviceAddress(d->dev, &ai);
    b->size = size;
    return ZN_OK;
}

void vkbuf_destroy(vkdev *d, vkbuf *b) {
    if (b->map) d->fn.vkUnmapMemory(d->dev, b->mem);
    if (b->buf) d->fn.vkDestroyBuffer(d->dev, b->buf, NULL);
    if (b->mem) d->fn.vkFreeMemory(d->dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

vkref vkbuf_ref(const vkbuf *b, uint64_t off, uint64_t size) {
    return (vkref){.buf = b->buf, .off = off, .size = size, .addr = b->addr + off, .map = b->map ? b->map + off : NULL};
}

vkref vkref_sub(vkref r, uint64_t off, uint64_t size) {
    return (vkref){.buf = r.buf, .off = r.off + off, .size = size, .addr = r.addr + off, .map = r.map ? r.map + off : NULL};
}

/* ---- arena ---- */

void vkarena_init(vkarena *a, vkdev *d, vkmem_kind kind, uint64_t block_bytes, uint64_t max_block) {
    memset(a, 0, sizeof *a);
    a->d = d;
    a->kind = kind;
    uint64_t lim = d->info.max_alloc;
    if (d->info.max_buffer && d->info.max_buffer < lim) lim = d->info.max_buffer;
    a->max_block = max_block && max_block < lim ? max_block : lim;
    a->block_bytes = block_bytes ? block_bytes : ZN_VK_BLOCK_BYTES;
    if (a->block_bytes > a->max_block) a->block_bytes = a->max_block;
}

zn_status vkarena_alloc(vkarena *a, uint64_t size, uint64_t align, vkref *out, zn_err *err) {
    if (align < 16) align = 16;
    if (size > a->max_block)
        return zn_errf(err, ZN_ERR_NOMEM, "vulkan: %llu bytes exceed one allocation (%llu)", (unsigned long long)size,
                       (unsigned long long)a->max_block);
    /* First fit over the open blocks: few blocks, and weights come in
     * decreasing-ish sizes, so the waste stays small. */
    for (int i = 0; i < a->n; i++) {
        uint64_t off = (a->used[i] + align - 1) / align * align;
        if (off + size <= a->blocks[i].size) {
            a->used[i] = off + size;
            a->total += size;
            *out = vkbuf_ref(&a->blocks[i], off, size);
            return ZN_OK;
        }
    }
    if (a->n == ZN_VK_MAX_BLOCKS) return zn_errf(err, ZN_ERR_NOMEM, "vulkan: more than %d memory blocks", ZN_VK_MAX_BLOCKS);
    uint64_t bs = size > a->block_bytes ? size : a->block_bytes;
    if (a->expect > a->total && a->expect - a->total < bs) bs = size > a->expect - a->total ? size : a->expect - a->total;
    zn_status st = vkbuf_create(a->d, &a->blocks[a->n], bs, a->kind, err);
    if (st) return st;
    a->used[a->n] = size;
    a->total += size;
    *out = vkbuf_ref(&a->blocks[a->n], 0, size);
    a->n++;
    return ZN_OK;
}

void vkarena_free(vkarena *a) {
    for (int i = 0; i < a->n; i++) vkbuf_destroy(a->d, &a->blocks[i]);
    a->n = 0;
    a->total = 0;
}

uint64_t vkarena_held(const vkarena *a) {
    uint64_t n = 0;
    for (int i = 0; i < a->n; i++) n += a->blocks[i].size;
    return n;
}

/* ---- transfers ---- */

zn_status vkxfer_init(vkxfer *x, vkdev *d, uint64_t stage_bytes, zn_err *err) {
    memset(x, 0, sizeof *x);
    x->d = d;
    const zn_vk_fns *fn = &d->fn;
    zn_status st = vkbuf_create(d, &x->stage, stage_bytes & ~7ull, VKMEM_HOST, err);
    if (st) return st;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    st = vkdev_check(fn->vkCreateCommandPool(d->dev, &pci, NULL, &x->pool), err, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = x->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 2};
    if (!st) st = vkdev_check(fn->vkAllocateCommandBuffers(d->dev, &cai, x->cb), err, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (int i = 0; i < 2 && !st; i++) st = vkdev_check(fn->vkCreateFence(d->dev, &fci, NULL, &x->fence[i]), err, "vkCreateFence");
    if (st) vkxfer_free(x);
    return st;
}

static zn_status slot_wait(vkxfer *x, int s, zn_err *err) {
    if (!x->pending[s]) return ZN_OK;
    const zn_vk_fns *fn = &x->d->fn;
    zn_status st = vkdev_check(fn->vkWaitForFences(x->d->dev, 1, &x->fence[s], VK_TRUE, UINT64_MAX), err, "vkWaitForFences");
    fn->vkResetFences(x->d->dev, 1, &x->fence[s]);
    x->pending[s] = false;
    return st;
}

zn_status vkxfer_flush(vkxfer *x, zn_err *err) {
    zn_status st = ZN_OK;
    for (int s = 0; s < 2; s++) {
        zn_status s2 = slot_wait(x, s, err);
        if (!st) st = s2;
    }
    return st;
}

void vkxfer_free(vkxfer *x) {
    if (!x->d) return;
    vkxfer_flush(x, NULL);
    const zn_vk_fns *fn = &x->d->fn;
    for (int i = 0; i < 2; i++)
        if (x->fence[i]) fn->vkDestroyFence(x->d->dev, x->fence[i], NULL);
    if (x->pool) fn->vkDestroyCommandPool(x->d->dev, x->pool, NULL);
    vkbuf_destroy(x->d, &x->stage);
    memset(x, 0, sizeof *x);
}

/* Records one copy (or fill) on slot s and submits it. */
static zn_status slot_submit(vkxfer *x, int s, VkBuffer src, uint64_t src_off, vkref dst, uint64_t n, bool fill,
                             uint32_t pattern, zn_err *err) {
    const zn_vk_fns *fn = &x->d->fn;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    zn_status st = vkdev_check(fn->vkBeginCommandBuffer(x->cb[s], &bi), err, "vkBeginCommandBuffer");
    if (st) return st;
    /* Earlier compute work may still read or write the range. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    fn->vkCmdPipelineBarrier(x->cb[s], VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                             NULL, 0, NULL);
    if (fill) {
        fn->vkCmdFillBuffer(x->cb[s], dst.buf, dst.off, n, pattern);
    } else {
        VkBufferCopy c = {.srcOffset = src_off, .dstOffset = dst.off, .size = n};
        fn->vkCmdCopyBuffer(x->cb[s], src, dst.buf, 1, &c);
    }
    VkMemoryBarrier mb2 = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                            VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT};
    fn->vkCmdPipelineBarrier(x->cb[s], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &mb2, 0, NULL, 0, NULL);
    st = vkdev_check(fn->vkEndCommandBuffer(x->cb[s]), err, "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &x->cb[s]};
    if (!st) st = vkdev_check(fn->vkQueueSubmit(x->d->queue, 1, &si, x->fence[s]), err, "vkQueueSubmit");
    if (!st) x->pending[s] = true;
    return st;
}

zn_status vkxfer_upload(vkxfer *x, vkref dst, const void *src, uint64_t n, zn_err *err) {
    if (n > dst.size) return zn_errf(err, ZN_ERR_ARG, "vulkan: upload of %llu bytes into %llu", (unsigned long long)n,
                                     (unsigned long long)dst.size);
    x->bytes += n;
    if (dst.map && !x->force_staging) {
        memcpy(dst.map, src, n);
        return ZN_OK;
    }
    const uint8_t *p = src;
    uint64_t half = x->stage.size / 2 & ~7ull, done = 0;
    while (done < n) {
        int s = x->cur;
        zn_status st = slot_wait(x, s, err);
        if (st) return st;
        uint64_t k = n - done < half ? n - done : half;
        memcpy(x->stage.map + (uint64_t)s * half, p + done, k);
        st = slot_submit(x, s, x->stage.buf, (uint64_t)s * half, vkref_sub(dst, done, k), k, false, 0, err);
        if (st) return st;
        done += k;
        x->cur ^= 1;
    }
    return ZN_OK;
}

zn_status vkxfer_download(vkxfer *x, vkref src, void *dst, uint64_t n, zn_err *err) {
    zn_status st = vkxfer_flush(x, err);
    if (st) return st;
    uint8_t *p = dst;
    uint64_t done = 0;
    while (done < n) {
        uint64_t k = n - done < x->stage.size ? n - done : x->stage.size;
        /* A copy from src into the staging buffer: swap roles via vkref. */
        vkref stage = vkbuf_ref(&x->stage, 0, k);
        const zn_vk_fns *fn = &x->d->fn;
        st = slot_submit(x, 0, src.buf, src.off + done, stage, k, false, 0, err);
        if (!st) st = slot_wait(x, 0, err);
        if (st) return st;
        if (!x->stage.coherent) {
            VkMappedMemoryRange r = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = x->stage.mem, .size = VK_WHOLE_SIZE};
            fn->vkInvalidateMappedMemoryRanges(x->d->dev, 1, &r);
        }
        memcpy(p + done, x->stage.map, k);
        done += k;
    }
    return ZN_OK;
}

zn_status vkxfer_fill(vkxfer *x, vkref dst, uint32_t pattern, zn_err *err) {
    zn_status st = slot_wait(x, 0, err);
    if (!st) st = slot_submit(x, 0, VK_NULL_HANDLE, 0, dst, dst.size & ~3ull, true, pattern, err);
    if (!st) st = slot_wait(x, 0, err);
    return st;
}

zn_status vkxfer_copy(vkxfer *x, vkref src, vkref dst, uint64_t n, zn_err *err) {
    if (n > src.size || n > dst.size)
        return zn_errf(err, ZN_ERR_ARG, "vulkan: copy of %llu bytes between ranges of %llu and %llu",
                       (unsigned long long)n, (unsigned long long)src.size, (unsigned long long)dst.size);
    if (!n) return ZN_OK;
    zn_status st = slot_wait(x, 0, err);
    if (!st) st = slot_submit(x, 0, src.buf, src.off, dst, n, false, 0, err);
    if (!st) st = slot_wait(x, 0, err);
    return st;
}
