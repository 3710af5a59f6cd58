#version 450
// Normalisations over contiguous groups of `group` elements, one workgroup
// per group (in place allowed: every element is read and written by the
// same thread):
//   mode 0 (RMS):  y = x / sqrt(mean(x^2) + eps) [* w] [* silu(z)]
//   mode 1 (L2):   y = x / sqrt(sum(x^2) + eps)
// w (f32 [group]) and z (laid out like x) are optional (address 0).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define NV 1
#include "reduce.glsl"

layout(push_constant) uniform PC {
    uint64_t x, y, w, z;
    uint group, n_groups, mode;
    float eps;
} p;

void main() {
    const uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (g >= p.n_groups) return;
    const uint base = g * p.group;
    float s[1];
    s[0] = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.group; i += WG) {
        float v = F32(p.x).v[base + i];
        s[0] = fma(v, v, s[0]);
    }
    wg_sum(s);
    const float scale = p.mode == 0u ? 1.0 / sqrt(s[0] / float(p.group) + p.eps) : 1.0 / sqrt(s[0] + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.group; i += WG) {
        float v = F32(p.x).v[base + i] * scale;
        if (p.w != 0) v *= F32(p.w).v[i];
        if (p.z != 0) v *= silu(F32(p.z).v[base + i]);
        F32(p.y).v[base + i] = v;
    }
}
