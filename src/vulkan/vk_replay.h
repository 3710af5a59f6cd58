/* A decode step recorded once and submitted again (backend_vulkan.c): its
 * reusable command buffer and the key it was recorded for. What changes
 * from one decode step to the next (token ids, the position in the step
 * block of vk_ops.h) is read by the shaders from host-written memory, so a
 * recording holds for every later step with the same key: the same
 * sequence (its KV cache and state addresses are in the commands), the same
 * attention split count (vkop_attn_splits) and the same graph, compared
 * node by node (cheap next to a recording). */
#ifndef ZINC_VK_REPLAY_H
#define ZINC_VK_REPLAY_H

#include "graph.h"
#include "vk_cmd.h"

typedef struct vkreplay {
    vkcmd cmd;                    /* reusable */
    bool valid;                   /* cmd holds a recording of the key below */
    uint64_t seq;                 /* the sequence's id */
    uint32_t n_split;
    int n_nodes, n_acts, logits;
    bool all_logits;
    int cap_nodes, cap_acts;
    zn_node *nodes;               /* [cap_nodes]: the recorded graph */
    zn_act *acts;                 /* [cap_acts] */
    uint64_t out_off, out_floats; /* the owner's: where the recording copies the logits from, how many */
} vkreplay;

/* Graphs of up to cap_nodes nodes / cap_acts activations. */
zn_status vkreplay_init(vkreplay *r, vkdev *d, VkPipelineLayout layout, int cap_nodes, int cap_acts, zn_err *err);
void vkreplay_free(vkreplay *r);
/* Can r->cmd run graph g for sequence seq at a position of n_split splits? */
bool vkreplay_fits(const vkreplay *r, uint64_t seq, uint32_t n_split, const zn_graph *g);
/* r->cmd now holds a recording of g for that key. */
void vkreplay_keep(vkreplay *r, uint64_t seq, uint32_t n_split, const zn_graph *g);

#endif
