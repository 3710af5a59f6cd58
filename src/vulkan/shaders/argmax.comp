#version 450
// Greedy sampling on the GPU: dst[r] = index of the largest logit of row r
// (ties: the lowest index), one workgroup per row.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t x, dst;
    uint n_rows, n;
} p;

shared float rv[32];
shared uint ri[32];

void main() {
    const uint r = gl_WorkGroupID.x;
    float bv = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += WG) {
        float v = F32(p.x).v[r * p.n + i];
        if (v > bv || bi == 0xffffffffu) { bv = v; bi = i; }
    }
    float m = subgroupMax(bv);
    uint mi = subgroupMin(bv == m ? bi : 0xffffffffu);
    if (gl_SubgroupInvocationID == 0) { rv[gl_SubgroupID] = m; ri[gl_SubgroupID] = mi; }
    barrier();
    if (gl_LocalInvocationID.x != 0) return;
    m = rv[0]; mi = ri[0];
    for (uint s = 1; s < gl_NumSubgroups; s++)
        if (rv[s] > m || (rv[s] == m && ri[s] < mi)) { m = rv[s]; mi = ri[s]; }
    I32(p.dst).v[r] = int(mi);
}
