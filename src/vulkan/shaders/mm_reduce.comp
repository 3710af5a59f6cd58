#version 450
// The second half of a split-K GEMM (vk_gemm.c mm_split): the GEMM's
// workgroups each multiplied one k range and stored their partial tile as
// is; this sums an output's partials in split order (the same sum every
// run) and applies the epilogue the GEMM skipped: bias, scale, residual, or
// a group's per-matmul outputs (mm_store.glsl). Partials are
// part[split][token][row], rows of this matmul only.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t part, y, bias, scale, res, group;
    uint nrows, n_tok, nsplit, y_stride, r_base;
    uint flags; // bit 0: bias before scale
} p;

#include "mm_store.glsl"

void main() {
    const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    const uint n_out = p.nrows * p.n_tok;
    if (i >= n_out) return;
    float s = 0.0;
    for (uint z = 0; z < p.nsplit; z++) s += F32(p.part).v[z * n_out + i];
    const uint r = i % p.nrows, n = i / p.nrows;
    if (p.group != 0) group_store(p.group, n, p.r_base + r, s);
    else mm_store(n * p.y_stride + r, r, 0u, s);
}
