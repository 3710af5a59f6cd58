#version 450
// ZN_OP_EMBED: dst[r] = dequantised row tokens[r] of the embedding matrix;
// one workgroup per token.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint TYPE = 0;
layout(local_size_x_id = 0) in;

#include "dq.glsl"

layout(push_constant) uniform PC {
    uint64_t w, tokens, dst;
    uint ncols, row_bytes, n_tok;
} p;

void main() {
    const uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (r >= p.n_tok) return;
    const uint64_t row = p.w + uint64_t(I32(p.tokens).v[r]) * p.row_bytes;
    const uint nsteps = (p.ncols + 31u) / 32u;
    for (uint s = gl_LocalInvocationID.x; s < nsteps; s += WG) {
        float v[32];
        dq32(row, s, p.ncols, v);
        const uint L = 32u / RUNS();
        for (uint j = 0; j < 32u; j++) {
            uint i = run_start(s, j / L) + j % L;
            if (i < p.ncols) F32(p.dst).v[r * p.ncols + i] = v[j];
        }
    }
}
