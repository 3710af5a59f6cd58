#version 450
// ZN_OP_ROPE in place: one workgroup per (token, head), one thread per
// rotated pair. theta_i = p * theta_scale^i by repeated multiplication (as
// ggml does), divided by the frequency factor, times freq_scale.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t x, ff;              // ff: 0 or f32 [n_rot/2]
    uint n_tok, n_heads, head_dim, n_rot, row_stride, mode, n_past;
    uint sec0, sec1, sec2, sec3;
    float theta_scale, freq_scale;
} p;

#define ROPE_NORM 0u
#define ROPE_NEOX 1u
#define ROPE_IMROPE 2u

void main() {
    const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (wg >= p.n_tok * p.n_heads) return;
    const uint r = wg / p.n_heads, h = wg % p.n_heads;
    const uint base = r * p.row_stride + h * p.head_dim, half_ = p.n_rot / 2u;
    for (uint i = gl_LocalInvocationID.x; i < half_; i += WG) {
        float pos = float(p.n_past + r);
        if (p.mode == ROPE_IMROPE) {
            uint s = i % (p.sec0 + p.sec1 + p.sec2 + p.sec3), m = s % 3u;
            bool live = (m == 0u && s < 3u * p.sec0) || (m == 1u && s < 3u * p.sec1) || (m == 2u && s < 3u * p.sec2);
            if (!live) pos = 0.0;
        }
        float th = pos;
        for (uint k = 0; k < i; k++) th *= p.theta_scale;
        if (p.ff != 0) th /= F32(p.ff).v[i];
        th *= p.freq_scale;
        const float c = cos(th), sn = sin(th);
        uint i0 = p.mode == ROPE_NORM ? base + 2u * i : base + i;
        uint i1 = p.mode == ROPE_NORM ? i0 + 1u : i0 + half_;
        float a = F32(p.x).v[i0], b = F32(p.x).v[i1];
        F32(p.x).v[i0] = a * c - b * sn;
        F32(p.x).v[i1] = a * sn + b * c;
    }
}
