/* GPU ops: one function per shader family, recording dispatches into a
 * vkcmd. All tensors are passed as device addresses (f32 activations,
 * row-major, strides in elements). Pipelines are created on first use and
 * kept, so recording a step allocates nothing. Ops do not insert barriers
 * between each other: the caller orders dependent ops with vkcmd_barrier. */
#ifndef ZINC_VK_OPS_H
#define ZINC_VK_OPS_H

#include "quant.h"
#include "vk_cmd.h"

typedef enum vkop_kind {
    VKO_MATVEC, VKO_MATMUL,
    VKO_COUNT
} vkop_kind;

#define ZN_VK_NTYPES 8 /* F32 F16 BF16 Q4_0 Q8_0 Q4_K Q5_K Q6_K */

typedef struct vkops {
    vkdev *d;
    vkpipes ps;
    vkpipe pipes[VKO_COUNT][ZN_VK_NTYPES];
} vkops;

zn_status vkops_init(vkops *o, vkdev *d, const char *cache_path, zn_err *err);
void vkops_free(vkops *o);
/* Types the mat-vec / mat-mat / get_rows shaders read. */
bool vkops_type_ok(zn_type t);

/* y[t][slot][r] = (sum_k W_e[r][k] x[t][slot][k]) * scale[e] + bias[e][r] + res[t][slot][r]
 * where e = ids[t][slot] with ids, else 0 and n_slots = 1. Optional
 * addresses are 0 when absent. x_slot_stride 0 = every slot reads the same x. */
typedef struct vkop_mm {
    zn_type type;
    VkDeviceAddress w, x, y, bias, scale, res, ids;
    uint64_t expert_bytes;        /* bytes between experts' matrices */
    uint32_t ncols, nrows, row_bytes;
    uint32_t n_tok, n_slots;
    uint32_t x_stride, y_stride, x_slot_stride, y_slot_stride;
} vkop_mm;

/* Mat-vec kernel for few tokens, tiled mat-mat for many. */
zn_status vkop_matmul(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);
/* Forces one kernel (tests compare both). */
zn_status vkop_matvec(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);
zn_status vkop_matmat(vkops *o, vkcmd *c, const vkop_mm *a, const char *name, zn_err *err);

#endif
