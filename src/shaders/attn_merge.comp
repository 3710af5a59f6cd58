#version 450
// Combines the split-K partials of attn.comp: one workgroup per (head, row).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t part, dst;
    uint n_head, hd_v, n_split;
} p;

void main() {
    const uint h = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
    const uint rec = p.hd_v + 2u, pb = (r * p.n_head + h) * p.n_split * rec;
    float M = -1.0 / 0.0;
    for (uint s = 0; s < p.n_split; s++) M = max(M, F32(p.part).v[pb + s * rec]);
    float L = 0.0;
    for (uint s = 0; s < p.n_split; s++) {
        float l = F32(p.part).v[pb + s * rec + 1u];
        if (l > 0.0) L += l * exp(F32(p.part).v[pb + s * rec] - M);
    }
    for (uint d = gl_LocalInvocationID.x; d < p.hd_v; d += WG) {
        float o = 0.0;
        for (uint s = 0; s < p.n_split; s++) {
            float l = F32(p.part).v[pb + s * rec + 1u];
            if (l > 0.0) o += F32(p.part).v[pb + s * rec + 2u + d] * exp(F32(p.part).v[pb + s * rec] - M);
        }
        F32(p.dst).v[r * p.n_head * p.hd_v + h * p.hd_v + d] = o / L;
    }
}
