#version 450
// Combines the split-K partials of attn.comp / attn_dec.comp: one workgroup
// per (head, row, DS output dims). Decode at depth has 64-256 splits, so the
// work is spread over them: the splits' weights exp(m_s - M) are computed
// once per workgroup, by its threads in parallel, into shared memory (SB
// splits at a time); then WG / DS split groups of DS threads each sum their
// splits' dims (DS consecutive floats of a record: coalesced), loads that
// do not wait on each other; the groups are added at the end.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256; // a power of two, at least DS
layout(local_size_x_id = 0) in;

#define DS 32u  // output dims per workgroup (vk_ops.c ATTN_MERGE_DIMS)
#define SB 256u // split weights in shared memory at a time
const uint SG = WG / DS;

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
    const uint d = gl_WorkGroupID.z * DS + tid % DS, sg = tid / DS;
    const uint rec = p.hd_v + 2u, pb = (r * p.n_head + h) * p.n_split * rec;
    float mx = -1.0 / 0.0;
    for (uint s = tid; s < p.n_split; s += WG) mx = max(mx, F32(p.part).v[pb + s * rec]);
    const float M = wg_reduce(mx, true);
    float ls = 0.0, o = 0.0;
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
        if (d < p.hd_v)
            for (uint k = sg; k < nb; k += SG) o += w[k] * F32(p.part).v[pb + (s0 + k) * rec + 2u + d];
        barrier();
    }
    const float L = wg_reduce(ls, false);
    red[tid] = o;
    barrier();
    if (sg == 0u && d < p.hd_v) {
        for (uint g = 1; g < SG; g++) o += red[g * DS + tid];
        F32(p.dst).v[r * p.n_head * p.hd_v + h * p.hd_v + d] = o / L;
    }
}
