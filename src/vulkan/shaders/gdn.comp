#version 450
// Gated delta rule (gdn.h gdn_recurrent), decode and prefill alike: rows
// j .. j + RPT - 1 of value head h's state (Dk coefficients each) live in
// the registers of a cluster of LPR lanes, PL = Dk / LPR elements of each
// row per lane (el() says which), for all T tokens in order:
//   S *= exp(g); u = S.k; d = (v - u) beta; S += k d; o = S.q / sqrt(Dk)
// The tokens form a dependent chain whose latency is the two dot products'
// reductions: clusters of 8 lanes need 3 shuffle steps where a whole
// subgroup needs 5, and a subgroup works on SG / LPR clusters at once. The
// rows of a cluster share one head's q and k, so their loads, the L2 norms
// and the gates are paid once per RPT rows, and the RPT chains are
// independent work for the scheduler to interleave.
// Staged (p.stage, where the workgroup's rows are all of one head): the
// workgroup loads TC tokens' q, k, v, g and beta at a time into shared
// memory, the next chunk's global loads in flight while this chunk's
// tokens run, so the chain waits on shared memory, not on global memory's
// latency once per token. Else each cluster loads its own, one token ahead.
// Both ways run the same arithmetic per token (gates(), norms(), token()),
// so a sequence's results do not depend on how its tokens were split into
// steps (a request served alone and among others decodes the same).
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
layout(constant_id = 5) const uint TC = 16;   // staged tokens per chunk
layout(constant_id = 6) const uint VEC = 0;   // the vec4-block lane layout where DK allows
layout(local_size_x_id = 0) in;

#define PL (DK / LPR)
#define D4 (DK / 4u)
const uint RWG = WG / LPR * RPT;              // rows per workgroup
// A lane's elements as vec4 blocks li, li + LPR, ... (8 lanes read 128
// contiguous bytes: coalesced from global memory, one 16-byte load from
// shared) with VEC; else single floats li, li + LPR, ... The layout
// decides which elements a lane sums before the shuffles, hence the last
// bits of every result: the single-float one (the default) is that of the
// kernel before staging, staged or not, so outputs stay what they were.
bool v4_layout() { return VEC != 0u && DK % (4u * LPR) == 0u; } // a function: glslc mis-optimises a
                                                                 // spec-constant bool in a branch
uint el(uint li, uint m) { return v4_layout() ? 4u * (li + LPR * (m / 4u)) + m % 4u : li + LPR * m; }

layout(push_constant) uniform PC {
    uint64_t q, k, v, g, beta, state, dst;
    uint64_t dt_bias, a;          // used when gate_raw != 0 (then g = alpha, beta = beta_raw)
    uint n_tok, h_k, h_v, d_v;
    uint ld_qk, ld_v, ld_o, ld_g;
    uint gate_raw, l2;
    float eps;
    uint stage;                   // staged: d_v a multiple of RWG, q and k rows 16-byte aligned
    uint64_t seqs;                // 0: one sequence (the fields above)
} p;

shared vec4 s_kq[2u * 2u * TC * D4];          // [buffer][k, q][token][DK / 4]
shared float s_v[2u * TC * RWG];              // [buffer][token][row of the workgroup]
shared float s_gb[2u * 2u * TC];              // [buffer][exp(g), beta][token]

// The cluster's state rows and its current token's inputs (arrays sized by
// specialisation constants can be neither passed nor assigned).
float S[RPT][PL], ck[PL], cq[PL], cv[RPT];

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

float cluster_add(float x) {
    [[unroll]] for (uint o = LPR / 2u; o > 0u; o >>= 1) x += subgroupShuffleXor(x, o);
    return x;
}

// g = softplus(alpha + dt_bias) a, beta = sigmoid(beta_raw) from the raw
// projections (gate_raw); returns exp(g).
float gates(float g, inout float b, float dtb, float ah) {
    if (p.gate_raw != 0u) {
        g = softplus(g + dtb) * ah;
        b = sigmoid(b);
    }
    return exp(g);
}

// The scales of k and of q (times 1/sqrt(Dk)) from ck and cq.
void norms(out float kn, out float qn) {
    kn = 1.0, qn = 1.0 / sqrt(float(DK));
    if (p.l2 == 0u) return;
    float kk = 0.0, qq = 0.0;
    [[unroll]] for (uint m = 0; m < PL; m++) {
        kk = fma(ck[m], ck[m], kk);
        qq = fma(cq[m], cq[m], qq);
    }
    kn = 1.0 / sqrt(cluster_add(kk) + p.eps);
    qn /= sqrt(cluster_add(qq) + p.eps);
}

// One token of the chain on S with ck, cq, cv, the decay eg = exp(g), beta
// and the k and q scales; writes its RPT outputs at dst element o0 + r.
void token(float eg, float b, float kn, float qn, bool live, uint li, uint o0) {
    // The chain from one token to the next is S -> u -> d -> S: keep it
    // short. The k norm is applied to the reduced u (u = kn S.k) and to d,
    // and the dot products use 4 partial sums instead of one serial FMA
    // chain.
    vec4 u4[RPT];
    [[unroll]] for (uint r = 0; r < RPT; r++) {
        u4[r] = vec4(0.0);
        [[unroll]] for (uint m = 0; m < PL; m++) {
            S[r][m] *= eg;
            u4[r][m % 4u] = fma(S[r][m], ck[m], u4[r][m % 4u]);
        }
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
        if (live && li == r % LPR) F32(p.dst).v[o0 + r] = o * qn;
    }
}

// Staging: thread tid's share of a chunk, in flight in registers.
const uint NKQ = (2u * TC * D4 + WG - 1u) / WG, NV = (TC * RWG + WG - 1u) / WG, NGB = (2u * TC + WG - 1u) / WG;
vec4 r_kq[NKQ];
float r_v[NV], r_gb[NGB];

// Loads tokens t0 .. t0 + TC - 1 (those before n) of the workgroup's head
// h (key head hk), rows j0 .. j0 + RWG - 1, input rows from r0 on.
void fetch(uint tid, uint t0, uint n, uint r0, uint h, uint hk, uint j0) {
    [[unroll]] for (uint s = 0; s < NKQ; s++) {
        const uint i = tid + s * WG, w = i / (TC * D4), tt = i % (TC * D4) / D4, c = i % D4;
        if (i < 2u * TC * D4 && t0 + tt < n)
            r_kq[s] = F32x4((w == 0u ? p.k : p.q) + 4ul * ((r0 + t0 + tt) * p.ld_qk + hk * DK + 4u * c)).v[0];
    }
    [[unroll]] for (uint s = 0; s < NV; s++) {
        const uint i = tid + s * WG, tt = i / RWG;
        if (i < TC * RWG && t0 + tt < n) r_v[s] = F32(p.v).v[(r0 + t0 + tt) * p.ld_v + h * p.d_v + j0 + i % RWG];
    }
    [[unroll]] for (uint s = 0; s < NGB; s++) {
        const uint i = tid + s * WG, tt = i % TC;
        if (i < 2u * TC && t0 + tt < n) r_gb[s] = F32(i < TC ? p.g : p.beta).v[(r0 + t0 + tt) * p.ld_g + h];
    }
}

// Stores the chunk fetched, with its tokens' gates ready (gates()'s
// arithmetic: a token's results must not depend on how its sequence's
// tokens were split into steps, staged or not).
void put(uint tid, uint buf, float dtb, float ah) {
    [[unroll]] for (uint s = 0; s < NKQ; s++) {
        const uint i = tid + s * WG;
        if (i < 2u * TC * D4) s_kq[buf * 2u * TC * D4 + i] = r_kq[s];
    }
    [[unroll]] for (uint s = 0; s < NV; s++) {
        const uint i = tid + s * WG;
        if (i < TC * RWG) s_v[buf * TC * RWG + i] = r_v[s];
    }
    [[unroll]] for (uint s = 0; s < NGB; s++) {
        const uint i = tid + s * WG;
        float x = r_gb[s], b = 0.0;
        if (i < TC) x = gates(x, b, dtb, ah);
        else if (p.gate_raw != 0u) x = sigmoid(x);
        if (i < 2u * TC) s_gb[buf * 2u * TC + i] = x;
    }
}

void main() {
    const uint lane = gl_SubgroupInvocationID, li = lane % LPR;
    const uint wg_id = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint sg_id = wg_id * (WG / SG) + gl_SubgroupID;
    const uint n_rows = p.h_v * p.d_v, row_ = (sg_id * (SG / LPR) + lane / LPR) * RPT;
    // whole subgroups only: the shuffles need every lane (staged, whole
    // workgroups: RWG divides d_v)
    if (sg_id * (SG / LPR) * RPT >= n_rows) return;
    const bool live = row_ < n_rows;                    // RPT divides d_v: a cluster's rows are all in or all out
    const uint row = live ? row_ : n_rows - RPT;
    const uint h = row / p.d_v, j = row % p.d_v, hk = h % p.h_k;
    uint64_t state = p.state;
    uint r0 = 0u; // the first row of the inputs and dst
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[gl_WorkGroupID.z];
        state = e.b, r0 = e.row;
    }
    [[unroll]] for (uint r = 0; r < RPT; r++)
        [[unroll]] for (uint m = 0; m < PL; m++) S[r][m] = F32(state).v[(row + r) * DK + el(li, m)];
    float dtb = 0.0, ah = 0.0;
    if (p.gate_raw != 0u) {
        dtb = F32(p.dt_bias).v[h];
        ah = F32(p.a).v[h];
    }
    const uint n = p.n_tok, vo = h * p.d_v + j;
    if (p.stage != 0u) {
        const uint tid = gl_LocalInvocationID.x, lr = row % RWG, j0 = j - lr;
        fetch(tid, 0u, n, r0, h, hk, j0);
        put(tid, 0u, dtb, ah);
        barrier();
        for (uint t0 = 0; t0 < n; t0 += TC) {
            const uint buf = (t0 / TC) & 1u;
            const bool more = t0 + TC < n;
            if (more) fetch(tid, t0 + TC, n, r0, h, hk, j0);
            const uint kq = buf * 2u * TC * D4, sv = buf * TC * RWG, gb = buf * 2u * TC;
            for (uint tt = 0; tt < min(TC, n - t0); tt++) {
                if (v4_layout()) {
                    [[unroll]] for (uint m4 = 0; m4 < PL / 4u; m4++) {
                        const vec4 kv = s_kq[kq + tt * D4 + li + LPR * m4], qv = s_kq[kq + (TC + tt) * D4 + li + LPR * m4];
                        [[unroll]] for (uint c = 0; c < 4u; c++) ck[4u * m4 + c] = kv[c], cq[4u * m4 + c] = qv[c];
                    }
                } else {
                    [[unroll]] for (uint m = 0; m < PL; m++) {
                        const uint e = el(li, m);
                        ck[m] = s_kq[kq + tt * D4 + e / 4u][e % 4u], cq[m] = s_kq[kq + (TC + tt) * D4 + e / 4u][e % 4u];
                    }
                }
                [[unroll]] for (uint r = 0; r < RPT; r++) cv[r] = s_v[sv + tt * RWG + lr + r];
                float kn, qn;
                norms(kn, qn);
                token(s_gb[gb + tt], s_gb[gb + TC + tt], kn, qn, live, li, (r0 + t0 + tt) * p.ld_o + vo);
            }
            if (more) put(tid, buf ^ 1u, dtb, ah);
            barrier();
        }
    } else {
        const bool v4 = v4_layout() && ((p.q | p.k) & 15ul) == 0ul && p.ld_qk % 4u == 0u;
        float nk[PL], nq[PL], nv[RPT], ng = 0.0, nb = 0.0;
        [[unroll]] for (uint m = 0; m < PL; m++) nk[m] = nq[m] = 0.0;
        [[unroll]] for (uint r = 0; r < RPT; r++) nv[r] = 0.0;
        for (uint t = 0; t <= n; t++) {
            [[unroll]] for (uint m = 0; m < PL; m++) ck[m] = nk[m], cq[m] = nq[m];
            [[unroll]] for (uint r = 0; r < RPT; r++) cv[r] = nv[r];
            const float g = ng, b = nb;
            if (t < n) { // the next token's inputs, in flight during this one
                ng = F32(p.g).v[(r0 + t) * p.ld_g + h];
                nb = F32(p.beta).v[(r0 + t) * p.ld_g + h];
                const uint kb = (r0 + t) * p.ld_qk + hk * DK;
                if (v4) {
                    [[unroll]] for (uint m4 = 0; m4 < PL / 4u; m4++) {
                        const uint e = kb + 4u * (li + LPR * m4);
                        const vec4 kv = F32x4(p.k + 4ul * e).v[0], qv = F32x4(p.q + 4ul * e).v[0];
                        [[unroll]] for (uint c = 0; c < 4u; c++) nk[4u * m4 + c] = kv[c], nq[4u * m4 + c] = qv[c];
                    }
                } else {
                    [[unroll]] for (uint m = 0; m < PL; m++) nk[m] = F32(p.k).v[kb + el(li, m)], nq[m] = F32(p.q).v[kb + el(li, m)];
                }
                [[unroll]] for (uint r = 0; r < RPT; r++) nv[r] = F32(p.v).v[(r0 + t) * p.ld_v + vo + r];
            }
            if (t > 0u) {
                float kn, qn, bt = b;
                const float eg = gates(g, bt, dtb, ah);
                norms(kn, qn);
                token(eg, bt, kn, qn, live, li, (r0 + t - 1u) * p.ld_o + vo);
            }
        }
    }
    if (live)
        [[unroll]] for (uint r = 0; r < RPT; r++)
            [[unroll]] for (uint m = 0; m < PL; m++) F32(state).v[(row + r) * DK + el(li, m)] = S[r][m];
}
