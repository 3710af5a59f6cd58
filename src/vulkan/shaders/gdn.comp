#version 450
// Gated delta rule (gdn.h gdn_recurrent), decode and prefill alike: rows
// j .. j + RPT - 1 of value head h's state (Dk coefficients each) live in
// the registers of a cluster of LPR lanes, lane l of the cluster holding
// elements l PL .. l PL + PL - 1 of each, for all T tokens in order:
//   S *= exp(g); u = S.k; d = (v - u) beta; S += k d; o = S.q / sqrt(Dk)
// The tokens form a dependent chain whose latency is the two dot products'
// reductions: clusters of 8 lanes need 3 shuffle steps where a whole
// subgroup needs 5, and a subgroup works on SG / LPR clusters at once. The
// rows of a cluster share one head's q and k, so their loads, the L2 norms
// and the gates are paid once per RPT rows, and the RPT chains are
// independent work for the scheduler to interleave. A token's inputs are
// loaded one token ahead so the loads overlap the chain; q and k as vec4s
// where their rows are 16-byte aligned.
// With l2 set, q and k are first scaled by 1/sqrt(sum(x^2) + eps) (graph.h
// ZN_OP_GDN). Gates: with gate_raw set, g and beta are computed here from
// the raw projections (gdn_gates: g = softplus(alpha + dt_bias) a,
// beta = sigmoid(beta_raw)); else read ready-made. seqs set: a batched
// decode step (seqs.glsl: the state in b), one token per sequence, the
// workgroup's z the sequence, q, k, v, g, beta and dst the step's rows.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "seqs.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint SG = 32;   // the subgroup size the pipeline requires
layout(constant_id = 2) const uint DK = 128;
layout(constant_id = 3) const uint LPR = 8;   // lanes per cluster: a power of two dividing SG and DK
layout(constant_id = 4) const uint RPT = 1;   // state rows per cluster (dividing d_v: one head's rows)
layout(local_size_x_id = 0) in;

#define PL (DK / LPR)

layout(push_constant) uniform PC {
    uint64_t q, k, v, g, beta, state, dst;
    uint64_t dt_bias, a;          // used when gate_raw != 0 (then g = alpha, beta = beta_raw)
    uint n_tok, h_k, h_v, d_v;
    uint ld_qk, ld_v, ld_o, ld_g;
    uint gate_raw, l2;
    float eps;
    uint64_t seqs;                // 0: one sequence (the fields above)
} p;

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

float cluster_add(float x) {
    [[unroll]] for (uint o = LPR / 2u; o > 0u; o >>= 1) x += subgroupShuffleXor(x, o);
    return x;
}

// PL floats of a q or k row from element e on into arr (v4: e and the
// address 16-byte aligned). A macro: arrays sized by specialisation
// constants can be neither passed nor assigned.
#define LOAD_PART(arr, base, e, v4)                                                     \
    if (v4 && PL % 4u == 0u) {                                                          \
        [[unroll]] for (uint m = 0; m < PL / 4u; m++) {                                 \
            const vec4 w = F32x4(base + 4ul * (e)).v[m];                                \
            arr[4u * m] = w.x, arr[4u * m + 1u] = w.y;                                  \
            arr[4u * m + 2u] = w.z, arr[4u * m + 3u] = w.w;                             \
        }                                                                               \
    } else {                                                                            \
        [[unroll]] for (uint m = 0; m < PL; m++) arr[m] = F32(base).v[(e) + m];         \
    }

void main() {
    const uint lane = gl_SubgroupInvocationID, li = lane % LPR;
    const uint sg_id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (WG / SG) + gl_SubgroupID;
    const uint n_rows = p.h_v * p.d_v, row_ = (sg_id * (SG / LPR) + lane / LPR) * RPT;
    if (sg_id * (SG / LPR) * RPT >= n_rows) return;    // whole subgroups only: the shuffles need every lane
    const bool live = row_ < n_rows;                    // RPT divides d_v: a cluster's rows are all in or all out
    const uint row = live ? row_ : n_rows - RPT;
    const uint h = row / p.d_v, j = row % p.d_v, hk = h % p.h_k;
    uint64_t state = p.state;
    uint r0 = 0u; // the first row of the inputs and dst
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[gl_WorkGroupID.z];
        state = e.b, r0 = e.row;
    }
    const bool v4 = ((p.q | p.k) & 15ul) == 0ul && p.ld_qk % 4u == 0u;
    float S[RPT][PL];
    [[unroll]] for (uint r = 0; r < RPT; r++)
        [[unroll]] for (uint m = 0; m < PL; m++) S[r][m] = F32(state).v[(row + r) * DK + li * PL + m];
    const float qscale = 1.0 / sqrt(float(DK));
    float dtb = 0.0, ah = 0.0;
    if (p.gate_raw != 0u) {
        dtb = F32(p.dt_bias).v[h];
        ah = F32(p.a).v[h];
    }
    float nk[PL], nq[PL], ck[PL], cq[PL], nv[RPT], cv[RPT], ng = 0.0, nb = 0.0;
    [[unroll]] for (uint m = 0; m < PL; m++) nk[m] = nq[m] = 0.0;
    [[unroll]] for (uint r = 0; r < RPT; r++) nv[r] = 0.0;
    for (uint t = 0; t <= p.n_tok; t++) {
        [[unroll]] for (uint m = 0; m < PL; m++) ck[m] = nk[m], cq[m] = nq[m];
        [[unroll]] for (uint r = 0; r < RPT; r++) cv[r] = nv[r];
        float g = ng, b = nb;
        if (t < p.n_tok) {
            ng = F32(p.g).v[(r0 + t) * p.ld_g + h];
            nb = F32(p.beta).v[(r0 + t) * p.ld_g + h];
            const uint kb = (r0 + t) * p.ld_qk + hk * DK + li * PL;
            LOAD_PART(nk, p.k, kb, v4)
            LOAD_PART(nq, p.q, kb, v4)
            [[unroll]] for (uint r = 0; r < RPT; r++) nv[r] = F32(p.v).v[(r0 + t) * p.ld_v + h * p.d_v + j + r];
        }
        if (t == 0u) continue;   // the first pass only loads token 0
        if (p.gate_raw != 0u) {
            g = softplus(g + dtb) * ah;
            b = sigmoid(b);
        }
        const float eg = exp(g);
        // The chain from one token to the next is S -> u -> d -> S: keep it
        // short. The k norm is applied to the reduced u (u = kn S.k) and
        // to d, so its own reduction runs beside the chain, and the dot
        // products use 4 partial sums instead of one serial FMA chain.
        float kk = 0.0, qq = 0.0;
        [[unroll]] for (uint m = 0; m < PL; m++) {
            kk = fma(ck[m], ck[m], kk);
            qq = fma(cq[m], cq[m], qq);
        }
        vec4 u4[RPT];
        [[unroll]] for (uint r = 0; r < RPT; r++) {
            u4[r] = vec4(0.0);
            [[unroll]] for (uint m = 0; m < PL; m++) {
                S[r][m] *= eg;
                u4[r][m % 4u] = fma(S[r][m], ck[m], u4[r][m % 4u]);
            }
        }
        float kn = 1.0, qn = qscale;
        if (p.l2 != 0u) {
            kn = 1.0 / sqrt(cluster_add(kk) + p.eps);
            qn = qscale / sqrt(cluster_add(qq) + p.eps);
        }
        [[unroll]] for (uint r = 0; r < RPT; r++) {
            const float u = cluster_add((u4[r].x + u4[r].y) + (u4[r].z + u4[r].w)) * kn;
            const float dk = (cv[r] - u) * b * kn;   // d, times the k norm of k d
            vec4 o4 = vec4(0.0);
            [[unroll]] for (uint m = 0; m < PL; m++) {
                S[r][m] = fma(ck[m], dk, S[r][m]);
                o4[m % 4u] = fma(S[r][m], cq[m], o4[m % 4u]);
            }
            const float o = cluster_add((o4.x + o4.y) + (o4.z + o4.w));
            if (live && li == r % LPR) F32(p.dst).v[(r0 + t - 1u) * p.ld_o + h * p.d_v + j + r] = o * qn;
        }
    }
    if (live)
        [[unroll]] for (uint r = 0; r < RPT; r++)
            [[unroll]] for (uint m = 0; m < PL; m++) F32(state).v[(row + r) * DK + li * PL + m] = S[r][m];
}
