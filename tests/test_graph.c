/* Graph building and activation planning: every node reads activations
 * defined before it, shapes chain correctly, and no two activations that are
 * live at the same time share arena memory (live ranges recomputed here from
 * the node list, independently of the planner). */
#include "graph.h"
#include "harness.h"

static const char *tiny(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s.gguf", shared_path("models/tiny"), name);
    return buf;
}

static void check_graph(const zn_graph *g) {
    int n_acts = g->n_acts;
    int *first = calloc((size_t)n_acts, sizeof *first), *last = calloc((size_t)n_acts, sizeof *last);
    for (int a = 0; a < n_acts; a++) first[a] = last[a] = -1;
    int bad_order = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const zn_node *n = &g->nodes[i];
        for (int s = 0; s < ZN_NODE_SRC; s++) {
            int a = n->src[s];
            if (a < 0) continue;
            if (first[a] < 0 || a >= n_acts) bad_order++;
            else last[a] = i;
        }
        if (first[n->dst] < 0) first[n->dst] = i;
        last[n->dst] = i;
    }
    CHECK_EQ_INT(bad_order, 0);
    last[g->logits] = g->n_nodes;
    int overlaps = 0, out_of_arena = 0;
    for (int a = 0; a < n_acts; a++) {
        size_t a0 = g->acts[a].off, a1 = a0 + (size_t)g->acts[a].rows * g->acts[a].cols;
        if (a1 > g->arena_floats) out_of_arena++;
        for (int b = a + 1; b < n_acts; b++) {
            size_t b0 = g->acts[b].off, b1 = b0 + (size_t)g->acts[b].rows * g->acts[b].cols;
            bool live_together = first[a] <= last[b] && first[b] <= last[a];
            if (live_together && a0 < b1 && b0 < a1) overlaps++;
        }
    }
    CHECK_EQ_INT(overlaps, 0);
    CHECK_EQ_INT(out_of_arena, 0);
    free(first);
    free(last);
}

static void check_model(const char *name) {
    zn_model m;
    zn_err err = {0};
    zn_status st = model_load(&m, tiny(name), &err);
    CHECK_MSG(st == ZN_OK, "%s", err.msg);
    if (st) return;
    zn_graph g;
    st = graph_init(&g, &m, 32, &err);
    CHECK_MSG(st == ZN_OK, "%s", err.msg);
    if (st == ZN_OK) {
        int32_t toks[32];
        for (int i = 0; i < 32; i++) toks[i] = (i * 7) % m.hp.n_vocab;
        const int cases[4][3] = {{32, 0, 1}, {17, 5, 0}, {1, 40, 0}, {3, 0, 1}};
        for (int c = 0; c < 4; c++) {
            st = graph_build(&g, toks, cases[c][0], cases[c][1], cases[c][2], &err);
            CHECK_MSG(st == ZN_OK, "%s", err.msg);
            if (st) continue;
            const zn_act *lg = &g.acts[g.logits];
            CHECK_EQ_INT(lg->cols, m.hp.n_vocab);
            CHECK_EQ_INT(lg->rows, cases[c][2] ? cases[c][0] : 1);
            check_graph(&g);
        }
        /* several sequences: logits rows sequence after sequence, gathered
         * when they are not one run */
        zn_step_seq q[3] = {{.n_rows = 5, .n_past = 3, .out = ZN_OUT_ALL}, {.n_rows = 1, .n_past = 9, .out = ZN_OUT_LAST},
                            {.n_rows = 4, .n_past = 0, .out = ZN_OUT_NONE}};
        st = graph_build_step(&g, toks, q, 3, &err);
        CHECK_MSG(st == ZN_OK, "%s", err.msg);
        if (!st) {
            CHECK_EQ_INT(g.n_tokens, 10);
            CHECK_EQ_INT(g.n_out, 6);
            CHECK_EQ_INT(g.acts[g.logits].rows, 6);
            CHECK_EQ_INT(q[1].row0, 5);
            CHECK_EQ_INT(q[1].out0, 5);
            CHECK_EQ_INT(q[2].out0, -1);
            CHECK_EQ_INT(g.row_seq[6], 2);
            CHECK_EQ_INT(g.row_pos[4], 7);
            CHECK(graph_check_step(&g, &err) == ZN_OK);
            check_graph(&g);
        }
        q[2].out = ZN_OUT_LAST; /* rows 0-5 and 9: a gather */
        st = graph_build_step(&g, toks, q, 3, &err);
        int gathers = 0;
        for (int i = 0; !st && i < g.n_nodes; i++) gathers += g.nodes[i].op == ZN_OP_GATHER_ROWS;
        CHECK(!st && gathers == 2 && g.n_out == 7);
        if (!st) check_graph(&g);
        zn_step_seq ones[3] = {{.n_rows = 1, .out = ZN_OUT_LAST}, {.n_rows = 1, .n_past = 4, .out = ZN_OUT_LAST},
                               {.n_rows = 1, .n_past = 2, .out = ZN_OUT_ALL}};
        st = graph_build_step(&g, toks, ones, 3, &err); /* every row: nothing to pick */
        for (int i = 0; !st && i < g.n_nodes; i++)
            CHECK(g.nodes[i].op != ZN_OP_GATHER_ROWS && g.nodes[i].op != ZN_OP_GET_ROWS);
        CHECK(!st && g.n_out == 3 && g.all_logits);
        ones[1].n_rows = 0;
        CHECK(graph_build_step(&g, toks, ones, 3, &err) == ZN_ERR_ARG);
        ones[1].n_rows = 31; /* 33 rows */
        CHECK(graph_build_step(&g, toks, ones, 3, &err) == ZN_ERR_ARG);
        ones[1].n_rows = 1;
        ones[1].out = 7;
        CHECK(graph_build_step(&g, toks, ones, 3, &err) == ZN_ERR_ARG);
        toks[3] = m.hp.n_vocab; /* out of range */
        CHECK(graph_build(&g, toks, 4, 0, true, &err) == ZN_ERR_ARG);
        CHECK(graph_build(&g, toks, 33, 0, true, &err) == ZN_ERR_ARG);
        graph_free(&g);
    }
    model_free(&m);
}

static void test_llama(void) { check_model("llama-dense-f32"); }
static void test_llama_moe(void) { check_model("llama-moe-q8_0"); }
static void test_qwen3(void) { check_model("qwen3-dense-q8_0"); }
static void test_qwen3moe(void) { check_model("qwen3moe-moe-q8_0"); }

static bool overlap(const zn_act *a, const zn_act *b) {
    size_t sa = (size_t)a->rows * a->cols, sb = (size_t)b->rows * b->cols;
    return a->off < b->off + sb && b->off < a->off + sa;
}

/* The arena is reused: far smaller than the sum of all activations (2.5x:
 * inputs are held ZN_GRAPH_FOLD nodes past their last reader, see
 * plan_arena; 3.5x when it was one node), and no node writes over an input
 * of its own or of the ZN_GRAPH_FOLD nodes before it. The arena covers a
 * decode step of ZN_MAX_STEP_SEQS sequences too, whose ropes' inputs live
 * until the attention (keep_rope_inputs): with 512 tokens a step, the
 * prompt graph measured here is the largest. */
static void test_reuse(void) {
    zn_model m;
    zn_err err = {0};
    if (model_load(&m, tiny("llama-dense-f32"), &err) != ZN_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    zn_graph g;
    CHECK(graph_init(&g, &m, 512, &err) == ZN_OK);
    int32_t toks[512] = {0};
    CHECK(graph_build(&g, toks, 512, 0, true, &err) == ZN_OK);
    size_t total = 0;
    for (int a = 0; a < g.n_acts; a++) total += (size_t)g.acts[a].rows * g.acts[a].cols;
    CHECK_MSG(g.arena_floats * 5 < total * 2, "arena %zu floats, activations %zu", g.arena_floats, total);
    int clobbers = 0;
    for (int i = 0; i < g.n_nodes; i++)
        for (int back = 0; back <= ZN_GRAPH_FOLD && back <= i; back++) {
            const zn_node *rd = &g.nodes[i - back];
            for (int s = 0; s < ZN_NODE_SRC; s++) {
                int a = rd->src[s];
                if (a >= 0 && a != g.nodes[i].dst && !(back == 0 && g.nodes[i].op == ZN_OP_ROPE) &&
                    overlap(&g.acts[a], &g.acts[g.nodes[i].dst]))
                    clobbers++;
            }
        }
    CHECK_MSG(clobbers == 0, "%d node outputs overlap an input of the node or the ones before", clobbers);
    char name[64];
    graph_node_name(&g.nodes[1], name, sizeof name);
    CHECK_EQ_STR(name, "blk.0.attn_norm");
    graph_free(&g);
    model_free(&m);
}

int main(void) {
    RUN(test_llama);
    RUN(test_llama_moe);
    RUN(test_qwen3);
    RUN(test_qwen3moe);
    RUN(test_reuse);
    return harness_report("graph");
}
