/* GPU memory: buffers with device addresses, an arena that sub-allocates
 * large blocks (weights, state, scratch), and a transfer helper that
 * uploads through a double-buffered staging buffer (or a plain memcpy when
 * the device memory is host-visible) and reads results back. */
#ifndef ZINC_VK_MEM_H
#define ZINC_VK_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "vk_device.h"

typedef enum vkmem_kind {
    VKMEM_DEVICE,   /* device-local; mapped too when the driver makes it host-visible */
    VKMEM_HOST,     /* host-visible, coherent, cached when possible: staging + readback */
    VKMEM_SHARED,   /* host-written, GPU-read small data: device-local + host-visible when
                       the device has it (resizable BAR), else like VKMEM_HOST */
} vkmem_kind;

typedef struct vkbuf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceAddress addr;
    uint64_t size;
    uint8_t *map;           /* non-NULL when host-visible */
    bool coherent;
} vkbuf;

/* A sub-range of a buffer: what ops and copies take. */
typedef struct vkref {
    VkBuffer buf;
    uint64_t off, size;
    VkDeviceAddress addr;   /* buffer address + off */
    uint8_t *map;           /* host pointer of the range, or NULL */
} vkref;

zn_status vkbuf_create(vkdev *d, vkbuf *b, uint64_t size, vkmem_kind kind, zn_err *err);
void vkbuf_destroy(vkdev *d, vkbuf *b);
vkref vkbuf_ref(const vkbuf *b, uint64_t off, uint64_t size);
/* The sub-range [off, off + size) of r (offset, address and mapping moved together). */
vkref vkref_sub(vkref r, uint64_t off, uint64_t size);

#define ZN_VK_MAX_BLOCKS 256
#define ZN_VK_BLOCK_BYTES (256ull << 20)  /* default arena block */

typedef struct vkarena {
    vkdev *d;
    vkmem_kind kind;
    uint64_t block_bytes, max_block; /* max_block: largest single allocation */
    int n;
    vkbuf blocks[ZN_VK_MAX_BLOCKS];
    uint64_t used[ZN_VK_MAX_BLOCKS];
    uint64_t total;                  /* bytes handed out */
    uint64_t expect;                 /* bytes the owner will ask for in all (0: unknown): the last
                                        block is sized to what is left, not to block_bytes */
} vkarena;

/* max_block 0 = the device's limit (min of maxMemoryAllocationSize and
 * maxBufferSize); tests lower it to exercise split tensors. */
void vkarena_init(vkarena *a, vkdev *d, vkmem_kind kind, uint64_t block_bytes, uint64_t max_block);
/* ZN_ERR_NOMEM when size > max_block: callers split such tensors by rows. */
zn_status vkarena_alloc(vkarena *a, uint64_t size, uint64_t align, vkref *out, zn_err *err);
void vkarena_free(vkarena *a);
/* Device memory the arena's blocks hold (its allocations may use less). */
uint64_t vkarena_held(const vkarena *a);

typedef struct vkxfer {
    vkdev *d;
    vkbuf stage;
    VkCommandPool pool;
    VkCommandBuffer cb[2];
    VkFence fence[2];
    bool pending[2];
    int cur;
    bool force_staging;     /* test knob: never memcpy into mapped device memory */
    uint64_t bytes;         /* uploaded so far */
} vkxfer;

zn_status vkxfer_init(vkxfer *x, vkdev *d, uint64_t stage_bytes, zn_err *err);
void vkxfer_free(vkxfer *x);
/* Copies host memory into dst (asynchronously through staging: call
 * vkxfer_flush before dst is used). */
zn_status vkxfer_upload(vkxfer *x, vkref dst, const void *src, uint64_t n, zn_err *err);
zn_status vkxfer_flush(vkxfer *x, zn_err *err);
/* Synchronous read of n bytes of src into host memory. */
zn_status vkxfer_download(vkxfer *x, vkref src, void *dst, uint64_t n, zn_err *err);
/* Synchronous device-to-device copy of n bytes (n <= both sizes). */
zn_status vkxfer_copy(vkxfer *x, vkref src, vkref dst, uint64_t n, zn_err *err);
/* Synchronous fill of a range with a 32-bit pattern (size multiple of 4). */
zn_status vkxfer_fill(vkxfer *x, vkref dst, uint32_t pattern, zn_err *err);

#endif
