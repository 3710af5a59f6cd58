/* The recurrent ops of Gated DeltaNet layers: the causal conv and the
 * gated delta rule. vk_gdn.c. */
#ifndef ZINC_VK_GDN_H
#define ZINC_VK_GDN_H

#include "vk_ops.h"

/* Causal depthwise conv1d + SiLU with state (gdn.h gdn_conv1d_silu); x and y
 * rows have stride ld, w is [n_ch][kernel], state [n_ch][kernel-1]. With
 * seqs (vk_ops.h vkop_seq_ent, the conv state in k): n_tok sequences of one
 * token each, at their rows of x and y, their states (state unused). */
zn_status vkop_conv1d(vkops *o, vkcmd *c, VkDeviceAddress x, VkDeviceAddress y, VkDeviceAddress w,
                      VkDeviceAddress state, VkDeviceAddress seqs, uint32_t n_tok, uint32_t n_ch, uint32_t ld,
                      uint32_t kernel, const char *name, zn_err *err);

/* Gated delta rule over T tokens (gdn.h gdn_args semantics, all heads).
 * With gate_raw, g/beta hold the raw alpha/beta projections and dt_bias/a
 * the per-head gate parameters (gdn_gates is applied in the kernel). With
 * seqs (vk_ops.h vkop_seq_ent, the delta state in v): n_tok sequences of
 * one token each, at their rows of the inputs and dst, their states (state
 * unused). */
typedef struct vkop_gdn {
    VkDeviceAddress q, k, v, g, beta, state, dst, dt_bias, a, seqs;
    uint32_t n_tok, h_k, h_v, d_k, d_v;
    uint32_t ld_qk, ld_v, ld_o, ld_g;
    bool gate_raw;
    bool l2;                  /* L2-normalise q and k (eps) first */
    float eps;
} vkop_gdn;
zn_status vkop_gdn_run(vkops *o, vkcmd *c, const vkop_gdn *a, const char *name, zn_err *err);

#endif
