/* A decode step recorded once and submitted again (backend_vulkan.c): its
 * reusable command buffer and the key it was recorded for. A decode step
 * is one token of each of its sequences: one sequence's (graph_build), or
 * several's (graph_build_step; vk_record.c runs it batched through the
 * sequence tables or per sequence). What changes from one such step to
 * the next is read by the shaders from host-written memory that the host
 * rewrites before every submit, replayed or not (vk_record.c
 * vkrecord_positions): the token ids, each sequence's position in its step
 * block and in the sequence tables (vk_ops.h). So a recording holds for
 * every later step with the same key:
 *  - the same sequences in the same order (their ids: the addresses of
 *    their KV block tables and recurrent states are in the commands and in
 *    the tables written when recording; ids are never reused, so a freed
 *    sequence's recording never fits again). A block table's entries are
 *    read at run time: blocks a sequence takes after the recording (its
 *    pool's, seq_reserve, or a copy-on-write one replacing a shared block)
 *    are seen by the replay,
 *  - the same attention shape per sequence (vkrecord_step_shape: what the
 *    recording fixed of the positions: batched or not, split counts,
 *    kernels),
 *  - the same graph, compared node by node with its logits rows (cheap
 *    next to a recording). */
#ifndef ZINC_VK_REPLAY_H
#define ZINC_VK_REPLAY_H

#include "graph.h"
#include "limits.h"
#include "vk_cmd.h"

typedef struct vkreplay {
    vkcmd cmd;                    /* reusable */
    bool valid;                   /* cmd holds a recording of the key below */
    bool batch;                   /* recorded as a batched step (vk_record.c batch_step) */
    int n_seq;
    uint64_t ids[ZN_MAX_STEP_SEQS];    /* the sequences' ids, in the step's order */
    uint32_t shape[ZN_MAX_STEP_SEQS];  /* their attention shapes (vkrecord_step_shape) */
    int n_nodes, n_acts, logits, n_out;
    bool all_logits;
    int32_t out_rows[ZN_MAX_BATCH];
    int cap_nodes, cap_acts;
    zn_node *nodes;               /* [cap_nodes]: the recorded graph */
    zn_act *acts;                 /* [cap_acts] */
    uint64_t out_off, out_floats; /* the owner's: where the recording copies the logits from, how many */
} vkreplay;

/* Graphs of up to cap_nodes nodes / cap_acts activations. */
zn_status vkreplay_init(vkreplay *r, vkdev *d, VkPipelineLayout layout, int cap_nodes, int cap_acts, zn_err *err);
void vkreplay_free(vkreplay *r);
/* Can r->cmd run graph g for the sequences ids[g->n_seq] of attention
 * shapes shape[g->n_seq]? */
bool vkreplay_fits(const vkreplay *r, const uint64_t *ids, const uint32_t *shape, const zn_graph *g);
/* r->cmd now holds a recording of g for that key. */
void vkreplay_keep(vkreplay *r, const uint64_t *ids, const uint32_t *shape, const zn_graph *g);
/* Sequence id is gone: a recording of it is dropped. */
void vkreplay_forget(vkreplay *r, uint64_t id);

#endif
