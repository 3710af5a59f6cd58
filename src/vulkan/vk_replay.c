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

bool vkreplay_fits(const vkreplay *r, const uint64_t *ids, const uint32_t *shape, const zn_graph *g) {
    const size_t ns = (size_t)g->n_seq;
    return r->valid && r->n_seq == g->n_seq && !memcmp(r->ids, ids, sizeof *ids * ns) &&
           !memcmp(r->shape, shape, sizeof *shape * ns) && r->n_nodes == g->n_nodes && r->n_acts == g->n_acts &&
           r->logits == g->logits && r->all_logits == g->all_logits && r->n_out == g->n_out &&
           !memcmp(r->out_rows, g->out_rows, sizeof *g->out_rows * (size_t)g->n_out) &&
           !memcmp(r->nodes, g->nodes, sizeof *g->nodes * (size_t)g->n_nodes) &&
           !memcmp(r->acts, g->acts, sizeof *g->acts * (size_t)g->n_acts);
}

void vkreplay_keep(vkreplay *r, const uint64_t *ids, const uint32_t *shape, const zn_graph *g) {
    r->valid = g->n_nodes <= r->cap_nodes && g->n_acts <= r->cap_acts && g->n_seq <= ZN_MAX_STEP_SEQS &&
               g->n_out <= ZN_MAX_BATCH;
    if (!r->valid) return;
    r->n_seq = g->n_seq;
    memcpy(r->ids, ids, sizeof *ids * (size_t)g->n_seq);
    memcpy(r->shape, shape, sizeof *shape * (size_t)g->n_seq);
    r->n_nodes = g->n_nodes;
    r->n_acts = g->n_acts;
    r->logits = g->logits;
    r->all_logits = g->all_logits;
    r->n_out = g->n_out;
    memcpy(r->out_rows, g->out_rows, sizeof *g->out_rows * (size_t)g->n_out);
    memcpy(r->nodes, g->nodes, sizeof *g->nodes * (size_t)g->n_nodes);
    memcpy(r->acts, g->acts, sizeof *g->acts * (size_t)g->n_acts);
}

void vkreplay_forget(vkreplay *r, uint64_t id) {
    for (int q = 0; r->valid && q < r->n_seq; q++)
        if (r->ids[q] == id) r->valid = false;
}
