#version 450
// ZN_OP_KV_STORE: rows of K and V (f32) into the f16 cache at positions
// n_past + r; the cache is [position][n_head_kv * head_dim]. n_past comes
// from the step block (vk_ops.h vkop_step) when step is set.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t k, v, ck, cv, step;
    uint n_tok, kdim, vdim, n_past;
} p;

void main() {
    const uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (r >= p.n_tok) return;
    const uint pos = (p.step != 0 ? U32(p.step).v[0] : p.n_past) + r;
    for (uint i = gl_LocalInvocationID.x; i < p.kdim; i += WG)
        F16(p.ck).v[pos * p.kdim + i] = float16_t(F32(p.k).v[r * p.kdim + i]);
    for (uint i = gl_LocalInvocationID.x; i < p.vdim; i += WG)
        F16(p.cv).v[pos * p.vdim + i] = float16_t(F32(p.v).v[r * p.vdim + i]);
}
