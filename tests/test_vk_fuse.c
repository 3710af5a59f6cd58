/* The Vulkan fusion planner's decisions (vk_fuse.h), without a device: on
 * the graphs of the tiny fixtures (decode and prefill steps), under the
 * kernel choices of a CPU device (lavapipe: mat-vec for every token count)
 * and of a GPU (the GEMM from a few tokens on), with fusion off, and on
 * hand-built graphs where a fusion must not happen. Results of the fused
 * dispatches are test_backend_ops' (fusion on and off against the CPU). */
#include <stdint.h>

#include "graph.h"
#include "harness.h"
#include "model.h"
#include "vk_fuse.h"

/* ---- kernel choices without a device ---- */

enum policy { CPU_DEV, GPU_DEV, GPU_INT };

/* The tuning of lavapipe (mat-vec for every step) and of an NVIDIA GPU
 * with cooperative matrices (the f16 GEMM from a few tokens on), from the
 * device-class table; the f16 path has scratch. GPU_INT: that GPU with the
 * integer mat-vec quantising x in its workgroups (what the MoE tail
 * needs), its limits those of an H100. */
static vkdev int_dev;
static void set_policy(vkops *o, enum policy p) {
    memset(o, 0, sizeof *o);
    vkdev_info d = {.kind = p == CPU_DEV ? "cpu" : "discrete", .vendor_id = p == CPU_DEV ? 0x10005 : 0x10de,
                    .subgroup_size = p == CPU_DEV ? 8 : 32, .subgroup_min = 8, .subgroup_max = 32, .compute_units = 132,
                    .vram_bytes = 80ull << 30, .coopmat = p != CPU_DEV, .max_shared = 49152,
                    .max_wg_invocations = 1024};
    zn_err err = {0};
    CHECK_MSG(!vktune_init(&o->t, &d, NULL, &err), "%s", err.msg);
    o->t.mv_conv = o->t.mv_gnorm = true; /* off by default: the planner's decisions when on */
    if (p != CPU_DEV) {
        o->coopmat = true;
        o->mm_scratch = 1ull << 40; /* any: the f16 path has scratch */
        o->mm_scratch_bytes = 1ull << 27;
    }
    if (p == GPU_INT) { /* and the MoE tail and routing in the mat-vecs (tuning off by default) */
        int_dev.info = d;
        o->d = &int_dev;
        o->intdot = o->mvx = o->mvxk = true;
        o->mvx_max_cols = vkmm_mvx_cap(o, VKO_MATVEC_QX_L);
        o->t.moe_tail = o->t.moe_route = true;
    }
}

/* The kernel choice the planner and vkop_matmul share: lavapipe runs
 * every matmul on the mat-vec; a GPU takes the f16 GEMM from mm_min_tok
 * tokens for matrices of mm_min_rows rows or more (F32: the tiled kernel),
 * the grouped GEMM from moe_min_tok tokens; what each kernel takes. */
static void test_kernel_choice(void) {
    vkops o;
    set_policy(&o, CPU_DEV);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, 512, 4096, false), VKMM_MATVEC);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, 512, 4096, true), VKMM_MATVEC);
    set_policy(&o, GPU_DEV);
    const uint32_t tok = o.t.mm_min_tok, rows = o.t.mm_min_rows, moe = o.t.moe_min_tok;
    CHECK(tok > 1 && rows > 1 && moe > 1);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, tok - 1, 4096, false), VKMM_MATVEC);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, tok, 4096, false), VKMM_GEMM);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, 512, rows - 1, false), VKMM_MATVEC);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, 512, rows, false), VKMM_GEMM);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_F32, 512, 4096, false), VKMM_TILED);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q6_K, moe - 1, 16, true), VKMM_MATVEC);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q6_K, moe, 16, true), VKMM_GEMM);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_F32, 512, 4096, true), VKMM_MATVEC); /* no grouped f32 GEMM */
    o.mm_scratch = 0;                                                              /* no f16 path */
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, 512, 4096, false), VKMM_TILED);
    CHECK_EQ_INT(vkops_mm_kernel(&o, ZN_TYPE_Q4_K, 512, 4096, true), VKMM_MATVEC);
    /* the experts' down takes the MoE tail on the integer mat-vec (not
     * without it, nor on the grouped GEMM), up to ZN_VK_TAIL_SLOTS slots
     * whose x rows fit ZN_VK_TAIL_COLS */
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, 512, 8, 1, VKX_SWIGLU));
    set_policy(&o, GPU_INT);
    const uint32_t cols = ZN_VK_TAIL_COLS / ZN_VK_TAIL_SLOTS;
    CHECK(vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, cols, ZN_VK_TAIL_SLOTS, 1, VKX_SWIGLU));
    CHECK(vkops_moe_tail_takes(&o, ZN_TYPE_Q6_K, 512, 3, moe - 1, VKX_PLAIN));
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q6_K, 512, 3, moe, VKX_PLAIN));
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, cols + 256, ZN_VK_TAIL_SLOTS, 1, VKX_SWIGLU));
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, 256, ZN_VK_TAIL_SLOTS + 1, 1, VKX_SWIGLU));
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_F16, 256, 2, 1, VKX_SWIGLU));
    o.t.mvx_modes = 1u << VKX_PLAIN;
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, 256, 2, 1, VKX_SWIGLU));
    set_policy(&o, GPU_INT);
    o.t.moe_tail = false;
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, 256, 2, 1, VKX_SWIGLU));
    set_policy(&o, GPU_INT);
    o.mvxk = false; /* after the driver refused the pipeline */
    CHECK(!vkops_moe_tail_takes(&o, ZN_TYPE_Q4_K, 256, 2, 1, VKX_SWIGLU));
    set_policy(&o, GPU_DEV);
    /* the f16 GEMM takes a norm only where it dequantises its tiles (below
     * mm_prep_tok), a sigmoid gate never */
    const uint32_t prep = o.t.mm_prep_tok;
    CHECK(prep > 1 && prep != ZN_VK_OFF);
    for (int x = VKX_PLAIN; x <= VKX_SIGMUL; x++) {
        CHECK(vkops_mm_takes(&o, VKMM_MATVEC, x, true, 512));
        CHECK_EQ_INT(vkops_mm_takes(&o, VKMM_GEMM, x, true, prep - 1), x != VKX_SIGMUL);
        CHECK_EQ_INT(vkops_mm_takes(&o, VKMM_GEMM, x, true, prep), x == VKX_PLAIN || x == VKX_SWIGLU);
        CHECK_EQ_INT(vkops_mm_takes(&o, VKMM_TILED, x, false, 512), x == VKX_PLAIN);
        CHECK(!vkops_mm_takes(&o, VKMM_TILED, x, true, 512));
    }
}

/* ---- weights side by side, as the upload stacks them ---- */

typedef struct stack {
    const zn_model *m;
    int *next; /* [n_tensors]: weight stacked right after this one, -1: none */
} stack;

static bool follows(const void *ctx, const gguf_tensor *a, const gguf_tensor *b) {
    const stack *s = ctx;
    return !a || s->next[model_weight_id(s->m, a)] == (int)model_weight_id(s->m, b);
}

/* The upload's stacking: matmul runs of the model's one-token graph. */
static void stack_init(stack *s, const zn_model *m) {
    s->m = m;
    s->next = malloc(sizeof *s->next * (m->gguf.n_tensors + 1));
    for (uint64_t i = 0; i <= m->gguf.n_tensors; i++) s->next[i] = -1;
    zn_graph g;
    zn_err err = {0};
    int32_t tok = 0;
    if (graph_init(&g, m, 1, &err) || graph_build(&g, &tok, 1, 0, false, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    for (int i = 0; i < g.n_nodes; i++) {
        const int n = g.nodes[i].op == ZN_OP_MATMUL ? vkfuse_matmul_run(&g, i) : 1;
        for (int k = 0; k + 1 < n; k++)
            s->next[model_weight_id(m, g.nodes[i + k].w[0])] = (int)model_weight_id(m, g.nodes[i + k + 1].w[0]);
        i += n - 1;
    }
    graph_free(&g);
}

/* ---- a model's step and its plan ---- */

typedef struct fixture {
    zn_model m;
    stack st;
    zn_graph g;
    vkfuse p;
    vkops o;
    bool ok;
} fixture;

static bool fx_open(fixture *f, const char *name, int max_tokens) {
    memset(f, 0, sizeof *f);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", shared_path("models/tiny"), name);
    zn_err err = {0};
    if (model_load(&f->m, path, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false;
    }
    stack_init(&f->st, &f->m);
    f->ok = !graph_init(&f->g, &f->m, max_tokens, &err) && !vkfuse_init(&f->p, f->g.cap_nodes, f->g.cap_acts, &err);
    CHECK_MSG(f->ok, "%s", err.msg);
    return f->ok;
}

static void fx_close(fixture *f) {
    vkfuse_free(&f->p);
    graph_free(&f->g);
    free(f->st.next);
    model_free(&f->m);
}

static int32_t toks[128];

/* Builds the step of n tokens and plans it (fx_batch: as a batched decode step). */
static bool fx_batch;
static void fx_plan(fixture *f, int n, enum policy pol, bool no_fusion, int max_groups) {
    zn_err err = {0};
    CHECK_MSG(!graph_build(&f->g, toks, n, 0, false, &err), "%s", err.msg);
    set_policy(&f->o, pol);
    const vkfuse_env env = {.o = &f->o, .no_fusion = no_fusion, .batch = fx_batch, .max_groups = max_groups,
                            .follows = follows, .ctx = &f->st};
    vkfuse_plan(&f->p, &env, &f->g);
}

/* Node `tag` of layer il (-1: outside blocks); -1 when absent. */
static int node(const fixture *f, int il, const char *tag) {
    for (int i = 0; i < f->g.n_nodes; i++)
        if (f->g.nodes[i].layer == il && !strcmp(f->g.nodes[i].tag, tag)) return i;
    return -1;
}

/* How many nodes are skipped, grouped, folded. */
typedef struct counts { int skip, groups, grouped, res_add, rope_norm, rope_kv; } counts;
static counts count(const fixture *f) {
    counts c = {0};
    for (int i = 0; i < f->g.n_nodes; i++) {
        c.skip += f->p.skip[i];
        c.groups += f->p.group[i] > 1;
        c.grouped += f->p.group[i] > 1 ? f->p.group[i] : 0;
        c.res_add += f->p.res_add[i] >= 0;
        c.rope_norm += f->p.rope_norm[i] >= 0;
        c.rope_kv += f->p.rope_kv[i] >= 0;
    }
    return c;
}

/* The x mode a matmul node reads its input with. */
static int xmode(const fixture *f, int i) { return i < 0 ? -1 : f->p.fx[f->g.nodes[i].src[0]].mode; }

static bool acts_overlap(const zn_graph *g, int a, int b) {
    const zn_act *x = &g->acts[a], *y = &g->acts[b];
    return x->off < y->off + (size_t)y->rows * y->cols && y->off < x->off + (size_t)x->rows * x->cols;
}

/* ---- a qwen3 block (q/k norms): every fusion of decode ---- */

static void check_qwen3_layer(const fixture *f, int il, bool norm_fused, bool swiglu_fused) {
    const int an = node(f, il, "attn_norm"), q = node(f, il, "attn_q"), k = node(f, il, "attn_k");
    const int qn = node(f, il, "attn_q_norm"), kn = node(f, il, "attn_k_norm");
    const int rq = node(f, il, "rope_q"), rk = node(f, il, "rope_k"), kv = node(f, il, "kv_store");
    const int wo = node(f, il, "attn_output"), res = node(f, il, "ffn_inp"), fnorm = node(f, il, "ffn_norm");
    const int gate = node(f, il, "ffn_gate"), sw = node(f, il, "ffn_swiglu"), down = node(f, il, "ffn_down");
    const int lout = node(f, il, "l_out");
    CHECK(an >= 0 && q >= 0 && k >= 0 && qn >= 0 && kn >= 0 && rq >= 0 && rk >= 0 && kv >= 0 && wo >= 0 && res >= 0 &&
          fnorm >= 0 && gate >= 0 && sw >= 0 && down >= 0 && lout >= 0);
    if (an < 0 || q < 0 || k < 0 || qn < 0 || kn < 0 || rq < 0 || rk < 0 || kv < 0 || wo < 0 || res < 0 || fnorm < 0 ||
        gate < 0 || sw < 0 || down < 0 || lout < 0)
        return;
    /* the pre-norms into the q/k/v and gate/up groups' x */
    CHECK_EQ_INT(f->p.skip[an], norm_fused);
    CHECK_EQ_INT(xmode(f, q), norm_fused ? VKX_RMSNORM : VKX_PLAIN);
    CHECK_EQ_INT(f->p.skip[fnorm], norm_fused);
    CHECK_EQ_INT(xmode(f, gate), norm_fused ? VKX_RMSNORM : VKX_PLAIN);
    /* q/k/v and gate/up of one weight type (Q4_K_M mixes in Q6_K) */
    CHECK_EQ_INT(f->p.group[q], vkfuse_matmul_run(&f->g, q));
    CHECK(vkfuse_matmul_run(&f->g, q) >= 2);
    CHECK_EQ_INT(f->p.group[gate], vkfuse_matmul_run(&f->g, gate));
    /* per-head norms into the ropes, the KV store after rope k */
    CHECK_EQ_INT(f->p.rope_norm[rq], qn);
    CHECK_EQ_INT(f->p.rope_norm[rk], kn);
    CHECK(f->p.skip[qn] && f->p.skip[kn]);
    CHECK_EQ_INT(f->p.rope_kv[rk], kv);
    CHECK_EQ_INT(f->p.rope_kv[rq], -1);
    CHECK(f->p.skip[kv]);
    /* residual adds into the output projections, also into the down
     * projection that reads gate and up itself (fused SwiGLU): they died
     * one node before it, and the arena keeps their memory from the sum
     * (ZN_GRAPH_FOLD) */
    CHECK_EQ_INT(f->p.res_add[wo], res);
    CHECK(f->p.skip[res]);
    const zn_node *s = &f->g.nodes[sw];
    CHECK(!acts_overlap(&f->g, f->g.nodes[lout].dst, s->src[0]) && !acts_overlap(&f->g, f->g.nodes[lout].dst, s->src[1]));
    CHECK_EQ_INT(f->p.res_add[down], lout);
    CHECK(f->p.skip[lout]);
    /* SwiGLU into the down projection's x */
    CHECK_EQ_INT(f->p.skip[sw], swiglu_fused);
    CHECK_EQ_INT(xmode(f, down), swiglu_fused ? VKX_SWIGLU : VKX_PLAIN);
    CHECK(!f->p.skip[q] && !f->p.skip[wo] && !f->p.skip[down] && !f->p.skip[rq] && !f->p.skip[rk]);
}

static void test_qwen3_decode(void) {
    fixture f;
    if (!fx_open(&f, "qwen3-dense-q4_k_m", 32)) return;
    for (int pol = CPU_DEV; pol <= GPU_DEV; pol++) {
        fx_plan(&f, 1, (enum policy)pol, false, 1000);
        for (int il = 0; il < f.m.hp.n_layer; il++) check_qwen3_layer(&f, il, true, true);
        /* not the final norm: nothing reads its input after it, so the
         * arena may reuse that before the output matmul runs */
        CHECK(!f.p.skip[node(&f, -1, "output_norm")]);
        CHECK_EQ_INT(xmode(&f, node(&f, -1, "output")), VKX_PLAIN);
        const counts c = count(&f);
        CHECK_EQ_INT(c.groups, 2 * f.m.hp.n_layer);
        CHECK_EQ_INT(c.rope_norm, 2 * f.m.hp.n_layer);
        CHECK_EQ_INT(c.rope_kv, f.m.hp.n_layer);
    }
    fx_close(&f);
}

/* Prefill: on a GPU the GEMM takes the matmuls of mm_min_tok (32)+ tokens; it converts
 * x with a SwiGLU applied, with an RMS norm below mm_prep_tok (128) tokens,
 * and takes groups. On lavapipe everything stays on the mat-vec. */
static void test_qwen3_prefill(void) {
    fixture f;
    if (!fx_open(&f, "qwen3-dense-q4_k_m", 128)) return;
    fx_plan(&f, 32, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer - 1; il++) check_qwen3_layer(&f, il, true, true);
    fx_plan(&f, 128, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer - 1; il++) check_qwen3_layer(&f, il, false, true);
    fx_plan(&f, 32, CPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer - 1; il++) check_qwen3_layer(&f, il, true, true);
    /* 4 tokens: still the mat-vec on the GPU */
    fx_plan(&f, 4, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer - 1; il++) check_qwen3_layer(&f, il, true, true);
    fx_close(&f);
}

/* F32 weights never take the f16 GEMM: a SwiGLU before an F32 matmul of
 * many tokens stays a node of its own on a GPU (the tiled f32 kernel reads
 * plain x). */
static void test_f32_gemm_no_swiglu(void) {
    fixture f;
    if (!fx_open(&f, "qwen3-dense-f32", 32)) return;
    fx_plan(&f, 32, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer - 1; il++) {
        CHECK(!f.p.skip[node(&f, il, "ffn_swiglu")]);
        CHECK(!f.p.skip[node(&f, il, "attn_norm")]);
        CHECK_EQ_INT(f.p.group[node(&f, il, "attn_q")], 1); /* the tiled kernel takes no groups */
    }
    fx_plan(&f, 1, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer; il++) check_qwen3_layer(&f, il, true, true);
    fx_close(&f);
}

static void test_no_fusion(void) {
    fixture f;
    if (!fx_open(&f, "qwen3-dense-q4_k_m", 32)) return;
    for (int n = 1; n <= 32; n += 31) {
        fx_plan(&f, n, CPU_DEV, true, 1000);
        const counts c = count(&f);
        CHECK_EQ_INT(c.skip, 0);
        CHECK_EQ_INT(c.groups, 0);
        CHECK_EQ_INT(c.res_add + c.rope_norm + c.rope_kv, 0);
        for (int a = 0; a < f.g.n_acts; a++) CHECK_EQ_INT(f.p.fx[a].mode, VKX_PLAIN);
    }
    fx_close(&f);
}

/* Groups take a block each: no more than the backend has; none when the
 * weights do not lie side by side. */
static void test_group_limits(void) {
    fixture f;
    if (!fx_open(&f, "qwen3-dense-q4_k_m", 32)) return;
    fx_plan(&f, 1, CPU_DEV, false, 3);
    CHECK_EQ_INT(count(&f).groups, 3);
    CHECK(f.p.group[node(&f, 0, "attn_q")] > 1);
    CHECK(f.p.group[node(&f, 0, "ffn_gate")] > 1);
    CHECK(f.p.group[node(&f, 1, "attn_q")] > 1);
    CHECK_EQ_INT(f.p.group[node(&f, 1, "ffn_gate")], 1);
    for (uint64_t i = 0; i <= f.m.gguf.n_tensors; i++) f.st.next[i] = -1;
    fx_plan(&f, 1, CPU_DEV, false, 1000);
    CHECK_EQ_INT(count(&f).groups, 0);
    fx_close(&f);
}

/* MoE decode (llama-moe): the FFN norm into the router and the expert
 * mat-vecs; the experts' SwiGLU into the down experts. Prefill on a GPU:
 * 128 tokens (beyond moe_min_tok) take the grouped GEMM, which converts x
 * with a SwiGLU applied but at 128 tokens (mm_prep_tok) not a norm. */
static void test_moe(void) {
    fixture f;
    if (!fx_open(&f, "llama-moe-q4_k_m", 128)) return;
    fx_plan(&f, 1, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer; il++) {
        CHECK(f.p.skip[node(&f, il, "ffn_norm")]);
        CHECK_EQ_INT(xmode(&f, node(&f, il, "ffn_moe_logits")), VKX_RMSNORM);
        CHECK(f.p.skip[node(&f, il, "ffn_moe_swiglu")]);
        CHECK_EQ_INT(xmode(&f, node(&f, il, "ffn_moe_down")), VKX_SWIGLU);
    }
    fx_plan(&f, 128, GPU_DEV, false, 1000);
    for (int il = 0; il < f.m.hp.n_layer - 1; il++) {
        CHECK(!f.p.skip[node(&f, il, "ffn_norm")]);
        CHECK_EQ_INT(xmode(&f, node(&f, il, "ffn_moe_gate")), VKX_PLAIN);
        CHECK(f.p.skip[node(&f, il, "ffn_moe_swiglu")]);
    }
    fx_close(&f);
}

/* The merged experts' gate_up (qwen35moe): the SwiGLU of one input goes
 * into the down experts' matmul, which reads up at column n_ff of each
 * gate_up row: the mat-vec in decode on either device, the grouped GEMM in
 * a GPU prefill (its x conversion, mm_prep.comp, reads aux like x). */
static void test_moe_merged_swiglu(void) {
    fixture f;
    if (!fx_open(&f, "qwen35moe-moe-q4_k_m", 128)) return;
    const struct { int n; enum policy pol; } at[] = {{1, CPU_DEV}, {1, GPU_DEV}, {128, GPU_DEV}};
    for (int c = 0; c < 3; c++) {
        fx_plan(&f, at[c].n, at[c].pol, false, 1000);
        for (int il = 0; il < f.m.hp.n_layer; il++) {
            const int sw = node(&f, il, "ffn_moe_swiglu"), down = node(&f, il, "ffn_moe_down");
            CHECK(sw >= 0 && down >= 0 && f.g.nodes[sw].src[1] < 0);
            if (sw < 0 || down < 0) continue;
            CHECK(f.p.skip[sw]);
            const vkfuse_x *x = &f.p.fx[f.g.nodes[down].src[0]];
            CHECK_EQ_INT(x->mode, VKX_SWIGLU);
            CHECK_EQ_INT(x->src, f.g.nodes[sw].src[0]);
            CHECK_EQ_INT(x->aux, f.g.nodes[sw].src[0]);
            CHECK_EQ_INT(x->aux_off, f.g.acts[f.g.nodes[sw].dst].cols);
        }
    }
    /* the prefill's down experts took the grouped GEMM */
    const zn_node *d0 = &f.g.nodes[node(&f, 0, "ffn_moe_down")];
    CHECK_EQ_INT(vkops_mm_kernel(&f.o, d0->w[0]->type, (uint32_t)f.g.acts[d0->src[1]].rows, (uint32_t)d0->w[0]->ne[1], true),
                 VKMM_GEMM);
    fx_close(&f);
}

/* Whether the MoE tail's weighted sum can fold into the layer's last ADD
 * l: no node between them (but the folded mid / gate) writes over the
 * experts' outputs or the routing, and l's output overlaps neither. */
static bool sum_foldable(const fixture *f, int sum, int l, int mid, int gate) {
    const zn_graph *g = &f->g;
    for (int k = 0; k < 2; k++) {
        const int a = g->nodes[sum].src[k];
        if (acts_overlap(g, g->nodes[l].dst, a)) return false;
        for (int m = sum + 1; m < l; m++)
            if (m != mid && m != gate && acts_overlap(g, g->nodes[m].dst, a)) return false;
    }
    return true;
}

/* The MoE tail in decode: qwen35moe's shared-expert gate, the ADD of the
 * two and the experts' weighted sum go into the residual ADD ending the
 * layer (l_out); qwen3moe (no shared expert) the sum alone. Fusion off:
 * none. */
static void test_moe_tail(void) {
    const char *names[2] = {"qwen35moe-moe-q4_k_m", "qwen3moe-moe-q4_k_m"};
    for (int mi = 0; mi < 2; mi++) {
        fixture f;
        if (!fx_open(&f, names[mi], 32)) return;
        for (int off = 0; off < 2; off++) {
            fx_plan(&f, 1, GPU_DEV, off, 1000);
            int folded = 0;
            for (int il = 0; il < f.m.hp.n_layer; il++) {
                const int l = node(&f, il, "l_out"), sum = node(&f, il, "ffn_moe_out");
                const int gate = node(&f, il, "ffn_shexp_gated"), mid = node(&f, il, "ffn_out");
                CHECK(l >= 0 && sum >= 0 && (mi == 1 || (gate >= 0 && mid >= 0)));
                if (l < 0 || sum < 0) continue;
                const vkfuse_tail *t = &f.p.tail[l];
                if (off) {
                    CHECK(t->sum < 0 && t->gate < 0 && t->mid < 0 && !f.p.skip[sum] && !f.p.skip[l]);
                    continue;
                }
                CHECK_EQ_INT(t->gate, (mi == 0 ? gate : -1));
                CHECK_EQ_INT(t->mid, (mi == 0 ? mid : -1));
                const bool fold = sum_foldable(&f, sum, l, t->mid, t->gate);
                CHECK(fold || mi == 1); /* qwen35moe: the whole tail at every layer (ZN_GRAPH_FOLD) */
                CHECK_EQ_INT(t->sum, (fold ? sum : -1));
                CHECK_EQ_INT(f.p.skip[sum], fold);
                CHECK(!f.p.skip[l] && (mi == 1 || (f.p.skip[gate] && f.p.skip[mid])));
                folded += fold;
            }
            CHECK(off || folded > 0);
            for (int i = 0; i < f.g.n_nodes; i++) /* a node that folds others runs itself */
                CHECK(!(f.p.skip[i] && (f.p.tail[i].sum >= 0 || f.p.tail[i].gate >= 0)));
        }
        /* with the integer mat-vec the experts' down computes the tail and
         * the ADD is not run: where the sum folds, and no node lies between
         * the down and the ADD but the tail's own */
        fx_plan(&f, 1, GPU_INT, false, 1000);
        int by_down = 0;
        for (int il = 0; il < f.m.hp.n_layer; il++) {
            const int l = node(&f, il, "l_out"), dn = node(&f, il, "ffn_moe_down");
            if (l < 0 || dn < 0) continue;
            const vkfuse_tail *t = &f.p.tail[l];
            bool only_tail = t->sum >= 0;
            for (int j = dn + 1; j < l; j++) only_tail &= j == t->sum || j == t->gate || j == t->mid;
            CHECK_EQ_INT(f.p.moe_tail[dn], (only_tail ? l : -1));
            CHECK_EQ_INT(f.p.skip[l], only_tail);
            by_down += only_tail;
        }
        CHECK(by_down == f.m.hp.n_layer || mi == 1); /* qwen35moe: every layer */
        CHECK(by_down > 0);
        for (int i = 0; i < f.g.n_nodes; i++) { /* a skipped tail ADD is some down's */
            int owner = 0;
            for (int j = 0; j < f.g.n_nodes; j++) owner += f.p.moe_tail[j] == i;
            CHECK_EQ_INT(owner, (f.p.skip[i] && f.p.tail[i].sum >= 0 ? 1 : 0));
        }
        /* ... and the experts' gate and up (or gate_up) pick the experts
         * themselves, the first storing the routing for the down */
        int routed = 0;
        for (int il = 0; il < f.m.hp.n_layer; il++) {
            const int rt = node(&f, il, "ffn_moe_route"), gu = node(&f, il, "ffn_moe_gate_up");
            const int ga = gu >= 0 ? gu : node(&f, il, "ffn_moe_gate"), up = gu >= 0 ? -1 : node(&f, il, "ffn_moe_up");
            if (rt < 0) continue;
            routed++;
            CHECK(f.p.skip[rt] && ga >= 0 && f.p.route[ga] == rt && f.p.route_w[ga]);
            CHECK(up < 0 || (f.p.route[up] == rt && !f.p.route_w[up]));
            CHECK_EQ_INT(f.p.route[node(&f, il, "ffn_moe_down")], -1);
        }
        CHECK(routed > 0);
        fx_plan(&f, 1, GPU_INT, false, 0); /* no group block free */
        for (int i = 0; i < f.g.n_nodes; i++) CHECK(f.p.moe_tail[i] < 0 && f.p.route[i] < 0);
        fx_plan(&f, 1, GPU_DEV, false, 1000); /* no integer mat-vec */
        for (int i = 0; i < f.g.n_nodes; i++) CHECK(f.p.route[i] < 0);
        fx_close(&f);
    }
}

/* qwen35: a recurrent block's four projections of the normed input are one
 * group of 4 in decode, which computes the conv too; the gated norm's
 * SwiGLU goes into ssm_out, the residual ADD into its store. In a prompt
 * the conv runs on its own; in a decode step without a group block free,
 * too. A gated attention layer's sigmoid gate goes into its output
 * projection's x. */
static void test_qwen35(void) {
    fixture f;
    if (!fx_open(&f, "qwen35-dense-f16", 32)) return;
    fx_plan(&f, 2, GPU_DEV, false, 1000);
    for (int i = 0; i < f.g.n_nodes; i++) CHECK(f.p.conv[i] < 0);
    fx_batch = true; /* two sequences' decode step: each token's state in the table */
    fx_plan(&f, 2, GPU_DEV, false, 1000);
    int batched = 0;
    for (int i = 0; i < f.g.n_nodes; i++) batched += f.p.conv[i] >= 0;
    CHECK(batched > 0);
    fx_plan(&f, 2, GPU_DEV, true, 1000);
    for (int i = 0; i < f.g.n_nodes; i++) CHECK(f.p.conv[i] < 0);
    fx_batch = false;
    fx_plan(&f, 1, GPU_DEV, false, 0);
    for (int i = 0; i < f.g.n_nodes; i++) CHECK(f.p.conv[i] < 0);
    fx_plan(&f, 1, GPU_INT, false, 1000); /* the gated norm in ssm_out's x too (quantised types only) */
    for (int il = 0; il < f.m.hp.n_layer; il++) {
        if (!f.m.layers[il].recurrent) continue;
        const int so = node(&f, il, "ssm_out");
        const bool q = f.g.nodes[so].w[0]->type != ZN_TYPE_F16 && f.g.nodes[so].w[0]->type != ZN_TYPE_F32;
        CHECK_EQ_INT(f.p.skip[node(&f, il, "ssm_norm")], q);
        CHECK_EQ_INT(f.p.fx[f.g.nodes[so].src[0]].gn_node, (q ? node(&f, il, "ssm_norm") : -1));
    }
    fx_plan(&f, 1, GPU_DEV, false, 1000);
    int recurrent = 0;
    for (int il = 0; il < f.m.hp.n_layer; il++) {
        if (!f.m.layers[il].recurrent) continue;
        recurrent++;
        CHECK(f.p.skip[node(&f, il, "attn_norm")]);
        CHECK_EQ_INT(f.p.group[node(&f, il, "attn_qkv")], 4);
        CHECK_EQ_INT(f.p.conv[node(&f, il, "attn_qkv")], node(&f, il, "conv1d"));
        CHECK(f.p.skip[node(&f, il, "conv1d")]);
        CHECK(f.p.skip[node(&f, il, "gdn_gated")]);
        CHECK_EQ_INT(xmode(&f, node(&f, il, "ssm_out")), VKX_SWIGLU);
        CHECK(!f.p.skip[node(&f, il, "ssm_norm")]); /* no integer mat-vec */
        /* and the residual ADD after it into its store (ZN_GRAPH_FOLD keeps
         * the gated norm's inputs from the sum) */
        CHECK_EQ_INT(f.p.res_add[node(&f, il, "ssm_out")], node(&f, il, "ffn_inp"));
    }
    int gated = 0;
    for (int il = 0; il < f.m.hp.n_layer; il++) {
        if (f.m.layers[il].recurrent) continue;
        gated++;
        CHECK(f.p.skip[node(&f, il, "attn_gated")]);
        CHECK_EQ_INT(xmode(&f, node(&f, il, "attn_output")), VKX_SIGMUL);
    }
    CHECK(gated > 0);
    CHECK(recurrent > 0);
    fx_close(&f);
}

/* ---- hand-built graphs: where a fusion must not happen ---- */

typedef struct hand {
    zn_model m;
    gguf_tensor t[8];
    zn_graph g;
    vkfuse p;
    vkops o;
} hand;

static gguf_tensor *hand_w(hand *h, zn_type type, int ne0, int ne1) {
    gguf_tensor *t = &h->t[h->m.gguf.n_tensors++];
    *t = (gguf_tensor){.name = "w", .n_dims = 2, .ne = {(uint64_t)ne0, (uint64_t)ne1, 1, 1}, .type = type};
    return t;
}

static void hand_init(hand *h, int n_tok) {
    memset(h, 0, sizeof *h);
    h->m.gguf.tensors = h->t;
    h->m.hp.n_vocab = 8;
    zn_err err = {0};
    CHECK(!graph_init_empty(&h->g, &h->m, 8, 16, 16, &err));
    CHECK(!vkfuse_init(&h->p, 16, 16, &err));
    h->g.n_tokens = n_tok;
    h->g.tokens = toks;
}

static bool always(const void *ctx, const gguf_tensor *a, const gguf_tensor *b) {
    (void)ctx, (void)a, (void)b;
    return true;
}

static void hand_plan_pol(hand *h, int out, enum policy pol) {
    zn_err err = {0};
    CHECK(!graph_finish(&h->g, out, &err));
    set_policy(&h->o, pol);
    const vkfuse_env env = {.o = &h->o, .max_groups = 100, .follows = always};
    vkfuse_plan(&h->p, &env, &h->g);
}

static void hand_plan(hand *h, int out) { hand_plan_pol(h, out, CPU_DEV); }

static void hand_free(hand *h) {
    vkfuse_free(&h->p);
    graph_free(&h->g);
}

static zn_node *hnode(hand *h, zn_op op, int dst, int a, int b) {
    zn_node *n = graph_node(&h->g, op, dst, graph_op_name(op), 0);
    n->src[0] = a;
    n->src[1] = b;
    return n;
}

/* A norm whose output a non-matmul also reads, or whose input dies with
 * it (nothing reads x afterwards: the arena may reuse it), is computed on
 * its own. */
static void test_norm_not_fused(void) {
    hand h;
    hand_init(&h, 1);
    gguf_tensor *nw = hand_w(&h, ZN_TYPE_F32, 64, 1), *w = hand_w(&h, ZN_TYPE_Q4_K, 64, 8);
    int x = graph_input(&h.g, 1, 64), y = graph_act(&h.g, 1, 64), m = graph_act(&h.g, 1, 8), o = graph_act(&h.g, 1, 64);
    zn_node *n = hnode(&h, ZN_OP_RMSNORM, y, x, -1);
    n->w[0] = nw;
    n->norm = (zn_norm_params){.group = 64, .eps = 1e-6f};
    hnode(&h, ZN_OP_MATMUL, m, y, -1)->w[0] = w;
    hnode(&h, ZN_OP_ADD, o, y, x); /* a second reader, not a matmul */
    hand_plan(&h, o);
    CHECK(!h.p.skip[0]);
    hand_free(&h);

    hand_init(&h, 1);
    nw = hand_w(&h, ZN_TYPE_F32, 64, 1), w = hand_w(&h, ZN_TYPE_Q4_K, 64, 8);
    x = graph_input(&h.g, 1, 64), y = graph_act(&h.g, 1, 64), m = graph_act(&h.g, 1, 8);
    n = hnode(&h, ZN_OP_RMSNORM, y, x, -1);
    n->w[0] = nw;
    n->norm = (zn_norm_params){.group = 64, .eps = 1e-6f};
    hnode(&h, ZN_OP_MATMUL, m, y, -1)->w[0] = w; /* x's last reader is the norm */
    hand_plan(&h, m);
    CHECK(!h.p.skip[0]);
    hand_free(&h);
}

/* Many tokens on a GPU: a norm read by a matrix of few rows (the mat-vec
 * takes them at any token count) is fused; by a GEMM-sized one of a
 * quantised type, fused below mm_prep_tok (128) tokens, where the f16
 * GEMM normalises x as it converts it, not from there on; by an F32 one
 * (the tiled f32 kernel reads plain x) not. */
static void test_norm_rows_rule(void) {
    /* 32 tokens: more than the GPU row's mm_min_tok, below which every matrix is on the mat-vec */
    static const struct { zn_type t; int rows, n; bool fused; } cases[] = {
        {ZN_TYPE_Q4_K, 16, 32, true},     {ZN_TYPE_Q4_K, 16, 128, true}, {ZN_TYPE_Q4_K, 4096, 32, true},
        {ZN_TYPE_Q4_K, 4096, 128, false}, {ZN_TYPE_F32, 4096, 32, false}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        hand h;
        const int nt = cases[c].n;
        hand_init(&h, nt);
        gguf_tensor *nw = hand_w(&h, ZN_TYPE_F32, 256, 1), *w = hand_w(&h, cases[c].t, 256, cases[c].rows);
        int x = graph_input(&h.g, nt, 256), y = graph_act(&h.g, nt, 256), m = graph_act(&h.g, nt, cases[c].rows);
        int o = graph_act(&h.g, nt, 256);
        zn_node *n = hnode(&h, ZN_OP_RMSNORM, y, x, -1);
        n->w[0] = nw;
        n->norm = (zn_norm_params){.group = 256, .eps = 1e-6f};
        hnode(&h, ZN_OP_MATMUL, m, y, -1)->w[0] = w;
        hnode(&h, ZN_OP_ADD, o, x, x); /* x read after the matmul */
        hand_plan_pol(&h, m, GPU_DEV);
        CHECK_MSG(h.p.skip[0] == cases[c].fused, "%s, %d rows, %d tokens: norm %sfused", zn_type_name(cases[c].t),
                  cases[c].rows, nt, h.p.skip[0] ? "" : "not ");
        CHECK_EQ_INT(h.p.fx[y].mode, cases[c].fused ? VKX_RMSNORM : VKX_PLAIN);
        hand_free(&h);
    }
}

/* A SwiGLU read by two matmuls, or not by the next node, runs on its own. */
static void test_swiglu_not_fused(void) {
    hand h;
    hand_init(&h, 1);
    gguf_tensor *w1 = hand_w(&h, ZN_TYPE_Q4_K, 256, 8), *w2 = hand_w(&h, ZN_TYPE_Q6_K, 256, 8);
    int a = graph_input(&h.g, 1, 256), b = graph_input(&h.g, 1, 256), s = graph_act(&h.g, 1, 256);
    int y1 = graph_act(&h.g, 1, 8), y2 = graph_act(&h.g, 1, 8), o = graph_act(&h.g, 1, 8);
    hnode(&h, ZN_OP_SWIGLU, s, a, b);
    hnode(&h, ZN_OP_MATMUL, y1, s, -1)->w[0] = w1;
    hnode(&h, ZN_OP_MATMUL, y2, s, -1)->w[0] = w2;
    hnode(&h, ZN_OP_ADD, o, y1, y2);
    hand_plan(&h, o);
    CHECK(!h.p.skip[0]);
    hand_free(&h);

    hand_init(&h, 1);
    w1 = hand_w(&h, ZN_TYPE_Q4_K, 256, 8);
    a = graph_input(&h.g, 1, 256), b = graph_input(&h.g, 1, 256), s = graph_act(&h.g, 1, 256);
    int t = graph_act(&h.g, 1, 256);
    y1 = graph_act(&h.g, 1, 8);
    hnode(&h, ZN_OP_SWIGLU, s, a, b);
    hnode(&h, ZN_OP_ADD, t, a, b); /* in between */
    hnode(&h, ZN_OP_MATMUL, y1, s, -1)->w[0] = w1;
    o = graph_act(&h.g, 1, 256);
    hnode(&h, ZN_OP_ADD, o, t, t);
    hand_plan(&h, y1);
    CHECK(!h.p.skip[0]);
    hand_free(&h);
}

/* A residual ADD is folded into the matmul before it only when that ADD is
 * the matmul's single reader and has its shape. */
static void test_res_add_limits(void) {
    hand h;
    hand_init(&h, 1);
    gguf_tensor *w = hand_w(&h, ZN_TYPE_Q4_K, 256, 8);
    int x = graph_input(&h.g, 1, 256), r = graph_input(&h.g, 1, 8), y = graph_act(&h.g, 1, 8);
    int o = graph_act(&h.g, 1, 8), o2 = graph_act(&h.g, 1, 8);
    hnode(&h, ZN_OP_MATMUL, y, x, -1)->w[0] = w;
    hnode(&h, ZN_OP_ADD, o, y, r);
    hnode(&h, ZN_OP_ADD, o2, o, y); /* y read again */
    hand_plan(&h, o2);
    CHECK_EQ_INT(h.p.res_add[0], -1);
    CHECK(!h.p.skip[1]);
    hand_free(&h);

    hand_init(&h, 1);
    w = hand_w(&h, ZN_TYPE_Q4_K, 256, 8);
    x = graph_input(&h.g, 1, 256), r = graph_input(&h.g, 1, 8), y = graph_act(&h.g, 1, 8), o = graph_act(&h.g, 1, 8);
    hnode(&h, ZN_OP_MATMUL, y, x, -1)->w[0] = w;
    hnode(&h, ZN_OP_ADD, o, r, y);
    hand_plan(&h, o);
    CHECK_EQ_INT(h.p.res_add[0], 1);
    CHECK(h.p.skip[1]);
    hand_free(&h);
}

/* The MoE tail's sum is not folded when a node in between writes over the
 * experts' outputs, or reads the sum itself; the gated shared expert still
 * is. */
static void test_moe_tail_limits(void) {
    for (int c = 0; c < 2; c++) {
        hand h;
        hand_init(&h, 1);
        const int dn = graph_input(&h.g, 2, 64), d2 = graph_input(&h.g, 2, 64), lg = graph_input(&h.g, 1, 4);
        const int sh = graph_input(&h.g, 1, 64), gt = graph_input(&h.g, 1, 1), x = graph_input(&h.g, 1, 64);
        const int r = graph_act(&h.g, 1, 4), y = graph_act(&h.g, 1, 64), sg = graph_act(&h.g, 1, 64);
        const int t = graph_act(&h.g, 1, 64), o = graph_act(&h.g, 1, 64), o2 = graph_act(&h.g, 1, 64);
        hnode(&h, ZN_OP_MOE_ROUTE, r, lg, -1)->route = (zn_route_params){.k = 2, .normalise = 1};
        hnode(&h, ZN_OP_MOE_SUM, y, dn, r);
        if (c == 0) hnode(&h, ZN_OP_ADD, dn, d2, d2); /* the experts' outputs written over */
        else hnode(&h, ZN_OP_ADD, o2, y, x);           /* the sum read by another node */
        hnode(&h, ZN_OP_SIGMOID_MUL, sg, sh, gt);
        hnode(&h, ZN_OP_ADD, t, y, sg);
        const int l = h.g.n_nodes;
        hnode(&h, ZN_OP_ADD, o, x, t);
        if (c == 1) hnode(&h, ZN_OP_ADD, o, o, o2);
        hand_plan(&h, o);
        CHECK_EQ_INT(h.p.tail[l].sum, -1);
        CHECK(!h.p.skip[1]);
        CHECK_EQ_INT(h.p.tail[l].gate, l - 2); /* the sum is read where it is */
        CHECK_EQ_INT(h.p.tail[l].mid, l - 1);
        hand_free(&h);
    }
}

/* The experts' down takes the tail of the ADD after it (the integer
 * mat-vec): not when another node runs between them (case 1), nor when the
 * ADD writes over the SwiGLU's input the down reads (case 2); case 0 does. */
static void test_moe_down_tail_limits(void) {
    for (int c = 0; c < 3; c++) {
        hand h;
        hand_init(&h, 1);
        gguf_tensor *wg = hand_w(&h, ZN_TYPE_Q4_K, 256, 256), *wu = hand_w(&h, ZN_TYPE_Q4_K, 256, 256);
        gguf_tensor *wd = hand_w(&h, ZN_TYPE_Q6_K, 256, 256);
        const int x = graph_input(&h.g, 1, 256), lg = graph_input(&h.g, 1, 4), sh = graph_input(&h.g, 1, 256);
        const int gt = graph_input(&h.g, 1, 1), r = graph_act(&h.g, 1, 4), g = graph_act(&h.g, 2, 256);
        const int u = graph_act(&h.g, 2, 256), sw = graph_act(&h.g, 2, 256), dn = graph_act(&h.g, 2, 256);
        const int y = graph_act(&h.g, 1, 256), sg = graph_act(&h.g, 1, 256), t = graph_act(&h.g, 1, 256);
        const int o = c == 2 ? g : graph_act(&h.g, 1, 256), z = graph_act(&h.g, 2, 256);
        hnode(&h, ZN_OP_MOE_ROUTE, r, lg, -1)->route = (zn_route_params){.k = 2, .normalise = 1};
        hnode(&h, ZN_OP_MOE_MATMUL, g, x, r)->w[0] = wg;
        hnode(&h, ZN_OP_MOE_MATMUL, u, x, r)->w[0] = wu;
        hnode(&h, ZN_OP_SWIGLU, sw, g, u);
        const int d = h.g.n_nodes;
        hnode(&h, ZN_OP_MOE_MATMUL, dn, sw, r)->w[0] = wd;
        if (c == 1) hnode(&h, ZN_OP_ADD, z, g, u); /* reads the down's x: the ADD's output cannot take it */
        hnode(&h, ZN_OP_MOE_SUM, y, dn, r);
        hnode(&h, ZN_OP_SIGMOID_MUL, sg, sh, gt);
        hnode(&h, ZN_OP_ADD, t, y, sg);
        const int l = h.g.n_nodes;
        hnode(&h, ZN_OP_ADD, o, x, t);
        hand_plan_pol(&h, o, GPU_INT);
        CHECK_MSG(h.p.tail[l].sum >= 0 && h.p.tail[l].gate >= 0, "case %d: the tail folds into its ADD", c);
        CHECK_MSG(h.p.moe_tail[d] == (c == 0 ? l : -1) && h.p.skip[l] == (c == 0), "case %d: moe_tail %d, ADD skipped %d",
                  c, h.p.moe_tail[d], h.p.skip[l]);
        hand_free(&h);
    }
}

/* The experts' gate and up pick the experts themselves (case 0); not
 * when a node between the routing and them writes over the logits (1),
 * nor when the sum reads the routing first (2). Case 3: up reads another
 * x, so gate alone picks them and up reads the routing. */
static void test_route_limits(void) {
    for (int c = 0; c < 4; c++) {
        hand h;
        hand_init(&h, 1);
        gguf_tensor *wg = hand_w(&h, ZN_TYPE_Q4_K, 256, 64), *wu = hand_w(&h, ZN_TYPE_Q4_K, 256, 64);
        const int x = graph_input(&h.g, 1, 256), x2 = graph_input(&h.g, 1, 256), lg = graph_input(&h.g, 1, 8);
        const int r = graph_act(&h.g, 1, 4), g = graph_act(&h.g, 2, 64), u = graph_act(&h.g, 2, 64);
        const int y = graph_act(&h.g, 1, 64), o = graph_act(&h.g, 2, 64);
        const int i = h.g.n_nodes;
        hnode(&h, ZN_OP_MOE_ROUTE, r, lg, -1)->route = (zn_route_params){.k = 2, .normalise = 1};
        if (c == 1) hnode(&h, ZN_OP_ADD, lg, lg, lg);
        if (c == 2) hnode(&h, ZN_OP_MOE_SUM, y, g, r);
        const int m = h.g.n_nodes;
        hnode(&h, ZN_OP_MOE_MATMUL, g, x, r)->w[0] = wg;
        hnode(&h, ZN_OP_MOE_MATMUL, u, c == 3 ? x2 : x, r)->w[0] = wu;
        hnode(&h, ZN_OP_ADD, o, g, u);
        hand_plan_pol(&h, o, GPU_INT);
        const bool fused = c == 0 || c == 3;
        CHECK_MSG(h.p.skip[i] == fused && h.p.route[m] == (fused ? i : -1) && h.p.route_w[m] == fused &&
                      h.p.route[m + 1] == (c == 0 ? i : -1) && !h.p.route_w[m + 1],
                  "case %d: skipped %d, gate %d (stores %d), up %d", c, h.p.skip[i], h.p.route[m], h.p.route_w[m],
                  h.p.route[m + 1]);
        hand_free(&h);
    }
}

/* A projection computes the conv after it (a group of one here): case 0.
 * Not when another node reads the projection's output (1), in a two-token
 * step (2), nor when the conv writes over the projection's x (3). */
static void test_conv_limits(void) {
    for (int c = 0; c < 4; c++) {
        hand h;
        hand_init(&h, c == 2 ? 2 : 1);
        const int T = c == 2 ? 2 : 1;
        gguf_tensor *wq = hand_w(&h, ZN_TYPE_Q4_K, 256, 64), *cw = hand_w(&h, ZN_TYPE_F32, 4, 64);
        const int x = graph_input(&h.g, T, 256), q = graph_act(&h.g, T, 64), z = graph_act(&h.g, T, 64);
        const int y = c == 3 ? x : graph_act(&h.g, T, 64);
        const int m = h.g.n_nodes;
        hnode(&h, ZN_OP_MATMUL, q, x, -1)->w[0] = wq;
        if (c == 1) hnode(&h, ZN_OP_ADD, z, q, q);
        const int i = h.g.n_nodes;
        hnode(&h, ZN_OP_CONV1D, y, q, -1)->w[0] = cw;
        hand_plan_pol(&h, y, GPU_DEV);
        CHECK_MSG(h.p.conv[m] == (c == 0 ? i : -1) && h.p.skip[i] == (c == 0), "case %d: conv %d, skipped %d", c,
                  h.p.conv[m], h.p.skip[i]);
        hand_free(&h);
    }
}

/* A group ends where the type, the row length or the bias order changes,
 * or a member folds a residual. */
static void test_group_breaks(void) {
    hand h;
    hand_init(&h, 1);
    gguf_tensor *a = hand_w(&h, ZN_TYPE_Q4_K, 256, 8), *b = hand_w(&h, ZN_TYPE_Q4_K, 256, 8);
    gguf_tensor *c = hand_w(&h, ZN_TYPE_Q6_K, 256, 8), *d = hand_w(&h, ZN_TYPE_Q6_K, 256, 8);
    int x = graph_input(&h.g, 1, 256), y[4];
    for (int i = 0; i < 4; i++) y[i] = graph_act(&h.g, 1, 8);
    hnode(&h, ZN_OP_MATMUL, y[0], x, -1)->w[0] = a;
    hnode(&h, ZN_OP_MATMUL, y[1], x, -1)->w[0] = b;
    hnode(&h, ZN_OP_MATMUL, y[2], x, -1)->w[0] = c;
    zn_node *n = hnode(&h, ZN_OP_MATMUL, y[3], x, -1);
    n->w[0] = d;
    n->matmul.bias_first = 1;
    int s1 = graph_act(&h.g, 1, 8), s2 = graph_act(&h.g, 1, 8), s3 = graph_act(&h.g, 1, 8);
    hnode(&h, ZN_OP_ADD, s1, y[0], y[1]);
    hnode(&h, ZN_OP_ADD, s2, y[2], y[3]);
    hnode(&h, ZN_OP_ADD, s3, s1, s2);
    hand_plan(&h, s3);
    CHECK_EQ_INT(h.p.group[0], 2);
    CHECK_EQ_INT(h.p.group[2], 1);
    CHECK_EQ_INT(h.p.group[3], 1);
    CHECK_EQ_INT(h.p.n_groups, 1);
    hand_free(&h);
}

int main(void) {
    for (int i = 0; i < 128; i++) toks[i] = i % 7;
    RUN(test_kernel_choice);
    RUN(test_qwen3_decode);
    RUN(test_qwen3_prefill);
    RUN(test_f32_gemm_no_swiglu);
    RUN(test_no_fusion);
    RUN(test_group_limits);
    RUN(test_moe);
    RUN(test_moe_merged_swiglu);
    RUN(test_moe_tail);
    RUN(test_moe_tail_limits);
    RUN(test_moe_down_tail_limits);
    RUN(test_conv_limits);
    RUN(test_route_limits);
    RUN(test_qwen35);
    RUN(test_norm_not_fused);
    RUN(test_norm_rows_rule);
    RUN(test_swiglu_not_fused);
    RUN(test_res_add_limits);
    RUN(test_group_breaks);
    return harness_report("vk_fuse");
}
