#version 450
// Causal depthwise conv1d + SiLU with a rolling state (ssm.h
// ssm_conv1d_silu): one thread per channel walks the T tokens in order.
//   y[t][c] = silu(sum_{j<K} w[c][j] * xin[t + j]),  xin = (state[c], x[.][c])
// and state[c] ends holding the last K-1 entries of xin.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define MAXK 8

layout(push_constant) uniform PC {
    uint64_t x, y, w, state;
    uint n_tok, n_ch, ld, kernel;
} p;

void main() {
    const uint c = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (c >= p.n_ch) return;
    const uint K = p.kernel;
    float win[MAXK], w[MAXK];
    for (uint j = 0; j < MAXK; j++) {
        w[j] = j < K ? F32(p.w).v[c * K + j] : 0.0;
        win[j] = j + 1u < K ? F32(p.state).v[c * (K - 1u) + j] : 0.0;
    }
    for (uint t = 0; t < p.n_tok; t++) {
        win[K - 1u] = F32(p.x).v[t * p.ld + c];
        float s = 0.0;
        for (uint j = 0; j < K; j++) s = fma(w[j], win[j], s);
        F32(p.y).v[t * p.ld + c] = silu(s);
        for (uint j = 0; j + 1u < K; j++) win[j] = win[j + 1u];
    }
    for (uint j = 0; j + 1u < K; j++) F32(p.state).v[c * (K - 1u) + j] = win[j];
}
