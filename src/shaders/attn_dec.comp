#version 450
// ZN_OP_ATTN for a few query rows (decode) over the f16 KV cache, causal,
// grouped-query. One workgroup per (KV head, key split) computes every
// query row that reads that KV head: the G = n_head / n_head_kv heads of
// the group times the n_tok tokens (at most ROWS), so each K and V row is
// loaded once for all of them (attn.comp loads it once per query head).
// Per tile of TK keys:
//  scores: KL lanes per key, each dotting every KL-th 16-byte piece of the
//    key's row with all ROWS query rows (a key's row is read by consecutive
//    lanes: coalesced), reduced by shuffles;
//  softmax: RL lanes per row update its running max and sum (online);
//  P x V: thread (key group kg, dim group dg) adds its 4 value dims of the
//    keys kg, kg + KG, ... to all rows (one 8-byte load per key, used ROWS
//    times); the key groups are summed at the end.
// Splits (flash-decoding) as in attn.comp: partial records merged by
// attn_merge.comp, an empty one writes l = 0. The keys per split are derived
// here from the position (step block), ceil(keys / n_split), so a recorded
// dispatch holds for any position and the host may pick any split count.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ROWS = 8; // a power of two, at most WG / RL
layout(local_size_x_id = 0) in;

#define MAXD 256
#define TK 64u // keys per tile
#define KL 4u  // lanes per key (scores)
#define RL 8u  // lanes per row (softmax)

layout(push_constant) uniform PC {
    uint64_t q, ck, cv, dst, part, step;
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split; // chunk: unused (derived)
    float scale;
} p;

shared vec4 qs[ROWS * MAXD / 4]; // scaled query rows; at the end the output sums
shared float ss[ROWS * TK];      // scores, then probabilities
shared float alph[ROWS];         // this tile's rescale per row
shared float mrow[ROWS], lrow[ROWS];

vec4 h4(uint64_t a) { // 4 halves at an 8-byte aligned address
    uvec2 w = U32x2(a).v[0];
    return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}

void main() {
    const uint kvh = gl_WorkGroupID.x, sp = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint G = p.n_head / p.n_head_kv, R = G * p.n_tok;
    const uint kdim = p.n_head_kv * p.hd_k, vdim = p.n_head_kv * p.hd_v;
    const uint n_past = p.step != 0 ? U32(p.step).v[0] : p.n_past;
    const uint n_kv = n_past + p.n_tok;
    const uint chunk = (n_kv + p.n_split - 1u) / p.n_split;
    const uint j0 = sp * chunk, j1 = min(j0 + chunk, n_kv);
    const uint QS = p.hd_k / 4u; // vec4 per query row

    // row r: token r / G, head kvh * G + r % G
    for (uint i = tid; i < ROWS * QS; i += WG) {
        const uint r = i / QS, c = i % QS;
        vec4 v = vec4(0.0);
        if (r < R) {
            const uint b = ((r / G) * p.n_head + kvh * G + r % G) * p.hd_k + 4u * c;
            v = vec4(F32(p.q).v[b], F32(p.q).v[b + 1u], F32(p.q).v[b + 2u], F32(p.q).v[b + 3u]) * p.scale;
        }
        qs[i] = v;
    }
    barrier();

    const uint DG = p.hd_v / 4u, KG = WG / DG, kg = tid / DG, dg = tid % DG; // hd_v / 4 divides WG
    const uint sub = tid % KL, rr = tid / RL, rl = tid % RL;
    float m = -1.0 / 0.0, l = 0.0; // row rr's running max and sum (softmax lanes)
    vec4 o[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; r++) o[r] = vec4(0.0);

    for (uint jt = j0; jt < j1; jt += TK) {
        const uint nk = min(TK, j1 - jt);
        [[unroll]] for (uint kb = 0; kb < TK; kb += WG / KL) {
            const uint key = kb + tid / KL;
            float acc[ROWS];
            [[unroll]] for (uint r = 0; r < ROWS; r++) acc[r] = 0.0;
            if (key < nk) {
                const uint64_t kr = p.ck + 2ul * (uint64_t(jt + key) * kdim + kvh * p.hd_k);
                for (uint c = sub; c < p.hd_k / 8u; c += KL) {
                    const uvec4 w = U32x4(kr + 16ul * c).v[0];
                    const vec4 k0 = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
                    const vec4 k1 = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
                    [[unroll]] for (uint r = 0; r < ROWS; r++)
                        acc[r] += dot(k0, qs[r * QS + 2u * c]) + dot(k1, qs[r * QS + 2u * c + 1u]);
                }
            }
            [[unroll]] for (uint r = 0; r < ROWS; r++) {
                acc[r] += subgroupShuffleXor(acc[r], 1u);
                acc[r] += subgroupShuffleXor(acc[r], 2u);
            }
            [[unroll]] for (uint r = 0; r < ROWS; r++) {
                if (r % KL != sub) continue;
                const bool ok = key < nk && r < R && jt + key <= n_past + r / G;
                ss[r * TK + key] = ok ? acc[r] : -1.0 / 0.0;
            }
        }
        barrier();
        if (rr < ROWS) { // whole groups of RL lanes: ROWS * RL is a multiple of RL
            float mx = -1.0 / 0.0;
            [[unroll]] for (uint k = rl; k < TK; k += RL) mx = max(mx, ss[rr * TK + k]);
            mx = max(mx, subgroupShuffleXor(mx, 1u));
            mx = max(mx, subgroupShuffleXor(mx, 2u));
            mx = max(mx, subgroupShuffleXor(mx, 4u));
            const float mn = max(m, mx);
            const bool none = mn == -1.0 / 0.0; // no key yet (a masked row)
            float s = 0.0;
            [[unroll]] for (uint k = rl; k < TK; k += RL) {
                const float e = none ? 0.0 : exp(ss[rr * TK + k] - mn);
                ss[rr * TK + k] = e;
                s += e;
            }
            s += subgroupShuffleXor(s, 1u);
            s += subgroupShuffleXor(s, 2u);
            s += subgroupShuffleXor(s, 4u);
            const float alpha = none ? 1.0 : exp(m - mn);
            l = l * alpha + s;
            m = mn;
            if (rl == 0u) alph[rr] = alpha;
        }
        barrier();
        [[unroll]] for (uint r = 0; r < ROWS; r++) o[r] *= alph[r];
        for (uint jj = kg; jj < nk; jj += KG) {
            const vec4 v = h4(p.cv + 2ul * (uint64_t(jt + jj) * vdim + kvh * p.hd_v + 4u * dg));
            [[unroll]] for (uint r = 0; r < ROWS; r++) o[r] += ss[r * TK + jj] * v;
        }
        barrier();
    }
    if (rr < ROWS && rl == 0u) { mrow[rr] = m; lrow[rr] = l; }
    for (uint g = 0; g < KG; g++) { // the key groups' sums, in order
        if (kg == g) {
            [[unroll]] for (uint r = 0; r < ROWS; r++) qs[r * DG + dg] = g == 0u ? o[r] : qs[r * DG + dg] + o[r];
        }
        barrier();
    }
    for (uint i = tid; i < R * DG; i += WG) {
        const uint r = i / DG, d = 4u * (i % DG), t = r / G, h = kvh * G + r % G;
        const vec4 v = qs[i];
        if (p.n_split == 1u) {
            const uint ob = (t * p.n_head + h) * p.hd_v + d;
            for (uint c = 0; c < 4u; c++) F32(p.dst).v[ob + c] = v[c] / lrow[r];
        } else {
            // partial record: [m, l, o[hd_v]] at ((t * n_head + h) * n_split + sp)
            const uint pb = ((t * p.n_head + h) * p.n_split + sp) * (p.hd_v + 2u);
            if (d == 0u) { F32(p.part).v[pb] = mrow[r]; F32(p.part).v[pb + 1u] = lrow[r]; }
            for (uint c = 0; c < 4u; c++) F32(p.part).v[pb + 2u + d + c] = v[c];
        }
    }
}
