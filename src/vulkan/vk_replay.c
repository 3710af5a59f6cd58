/* The kept decode recording (see vk_replay.h). */
#include <stdlib.h>
#include <string.h>

#include "vk_replay.h"

zn_status vkreplay_init(vkreplay *r, vkdev *d, VkPipelineLayout layout, int cap_nodes, int cap_acts, zn_err *err) {
    memset(r, 0, sizeof *r);
    r->nodes = calloc((size_t)cap_nodes, sizeof *r->nodes);
    r->acts = calloc((size_t)cap_acts, sizeof *r->acts);
    zn_status st = !r->nodes || !r->acts ? zn_errf(err, ZN_ERR_NOMEM, "vulkan: out of memory") : ZN_OK;
    if (!st) st = vkcmd_init(&r->cmd, d, layout, false, err);
    if (st) {
        vkreplay_free(r);
        return st;
    }
    r->cmd.reusable = true;
    r->cap_nodes = cap_nodes;
    r->cap_acts = cap_acts;
    return ZN_OK;
}

void vkreplay_free(vkreplay *r) {
    vkcmd_free(&r->cmd);
    free(r->nodes);
    free(r->acts);
    memset(r, 0, sizeof *r);
}

bool vkreplay_fits(const vkreplay *r, uint64_t seq, uint32_t n_split, const zn_graph *g) {
    return r->valid && r->seq == seq && r->n_split == n_split && r->n_nodes == g->n_nodes && r->n_acts == g->n_acts &&
           r->logits == g->logits && r->all_logits == g->all_logits &&
           !memcmp(r->nodes, g->nodes, sizeof *g->nodes * (size_t)g->n_nodes) &&
           !memcmp(r->acts, g->acts, sizeof *g->acts * (size_t)g->n_acts);
}

void vkreplay_keep(vkreplay *r, uint64_t seq, uint32_t n_split, const zn_graph *g) {
    r->valid = g->n_nodes <= r->cap_nodes && g->n_acts <= r->cap_acts;
    if (!r->valid) return;
    r->seq = seq;
    r->n_split = n_split;
    r->n_nodes = g->n_nodes;
    r->n_acts = g->n_acts;
    r->logits = g->logits;
    r->all_logits = g->all_logits;
    memcpy(r->nodes, g->nodes, sizeof *g->nodes * (size_t)g->n_nodes);
    memcpy(r->acts, g->acts, sizeof *g->acts * (size_t)g->n_acts);
}
