#version 450
// Combines the split-K partials of attn.comp / attn_dec.comp: one workgroup
// per (head, row). The splits' weights exp(m_s - M) are computed once, by
// the threads in parallel, into shared memory (SB splits at a time); then
// each thread sums its output dims over the splits, loads that do not wait
// on each other (decode at depth runs 64-256 splits: one after another,
// the max, sum and weight of each were a chain of dependent loads).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64; // a power of two
layout(local_size_x_id = 0) in;

#define MAXD 256u
#define SB 256u
const uint ND = (MAXD + WG - 1u) / WG; // output dims per thread at most

layout(push_constant) uniform PC {
    uint64_t part, dst;
    uint n_head, hd_v, n_split;
} p;

shared float w[SB];
shared float red[WG];

float wg_reduce(float v, bool is_max) {
    const uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] = is_max ? max(red[tid], red[tid + s]) : red[tid] + red[tid + s];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint h = gl_WorkGroupID.x, r = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint rec = p.hd_v + 2u, pb = (r * p.n_head + h) * p.n_split * rec;
    float mx = -1.0 / 0.0;
    for (uint s = tid; s < p.n_split; s += WG) mx = max(mx, F32(p.part).v[pb + s * rec]);
    const float M = wg_reduce(mx, true);
    float ls = 0.0, o[ND];
    for (uint i = 0; i < ND; i++) o[i] = 0.0;
    for (uint s0 = 0; s0 < p.n_split; s0 += SB) {
        const uint nb = min(SB, p.n_split - s0);
        for (uint k = tid; k < nb; k += WG) {
            const uint b = pb + (s0 + k) * rec;
            const float l = F32(p.part).v[b + 1u]; // 0: an empty split, its m -inf
            const float e = l > 0.0 ? exp(F32(p.part).v[b] - M) : 0.0;
            w[k] = e;
            ls += e * l;
        }
        barrier();
        for (uint i = 0; i < ND; i++) {
            const uint d = tid + i * WG;
            if (d < p.hd_v)
                for (uint k = 0; k < nb; k++) o[i] += w[k] * F32(p.part).v[pb + (s0 + k) * rec + 2u + d];
        }
        barrier();
    }
    const float L = wg_reduce(ls, false);
    for (uint i = 0; i < ND; i++) {
        const uint d = tid + i * WG;
        if (d < p.hd_v) F32(p.dst).v[r * p.n_head * p.hd_v + h * p.hd_v + d] = o[i] / L;
    }
}
