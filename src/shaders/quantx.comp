#version 450
// Activations for the integer mat-vec (matvec_q.comp): each row of x,
// optionally through the op that produced it (RMS norm with weight, or
// SwiGLU; the mm_push.glsl x modes), quantised to blocks of 32 int8 with
// one f32 scale d = max|v| / 127 and the block's d * sum(q) (ggml's Q8_1).
// Row layout (xq_row_bytes in vk_ops.c): qs [nb][32] | (d, d * sum q) [nb],
// 16-byte aligned. One workgroup per row, one block per thread at a time;
// for the RMS norm a first pass sums the row's squares (the second pass
// re-reads x from cache).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define NV 1
#include "reduce.glsl"

layout(push_constant) uniform PC {
    uint64_t x, aux, q;
    uint ncols, n_rows, n_slots;  // rows are (token, slot) pairs, n_slots per token
    uint x_stride, x_slot_stride; // floats
    uint q_row;                   // bytes per quantised row
    uint flags;                   // bit 1: x rows 16-byte aligned; bits 2-3: x mode (mm_push.glsl)
    float eps;
} p;

#define XM_PLAIN 0u
#define XM_RMSNORM 1u
#define XM_SWIGLU 2u

layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Q32x4 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer V2 { vec2 v[]; };

// The 32 values of block b of the row at x, 16 bytes at a time when x and
// aux rows are aligned (flags bit 1, as mm_fill decides it).
void load32(uint64_t x, uint b, out float v[32]) {
    if ((p.flags & 2u) != 0u) {
        for (uint j = 0; j < 8u; j++) {
            vec4 f = F32x4(x + 128ul * b + 16u * j).v[0];
            for (uint k = 0; k < 4u; k++) v[4u * j + k] = f[k];
        }
    } else {
        for (uint j = 0; j < 32u; j++) v[j] = F32(x).v[32u * b + j];
    }
}

void main() {
    const uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (r >= p.n_rows) return;
    const uint mode = (p.flags >> 2) & 3u, nb = p.ncols / 32u;
    const uint64_t xo = 4ul * (uint64_t(r / p.n_slots) * p.x_stride + uint64_t(r % p.n_slots) * p.x_slot_stride);
    const uint64_t x = p.x + xo, row = p.q + uint64_t(r) * p.q_row;
    float inv = 1.0;
    if (mode == XM_RMSNORM) {
        float s[1];
        s[0] = 0.0;
        for (uint b = gl_LocalInvocationID.x; b < nb; b += WG) {
            float v[32];
            load32(x, b, v);
            for (uint j = 0; j < 32u; j++) s[0] = fma(v[j], v[j], s[0]);
        }
        wg_sum(s);
        inv = 1.0 / sqrt(s[0] / float(p.ncols) + p.eps);
    }
    for (uint b = gl_LocalInvocationID.x; b < nb; b += WG) {
        float v[32];
        load32(x, b, v);
        if (mode != XM_PLAIN) { // the norm weight [ncols], or the "up" rows laid out like x
            float a[32];
            load32(mode == XM_RMSNORM ? p.aux : p.aux + xo, b, a);
            for (uint j = 0; j < 32u; j++) v[j] = mode == XM_RMSNORM ? v[j] * inv * a[j] : silu(v[j]) * a[j];
        }
        float amax = 0.0;
        for (uint j = 0; j < 32u; j++) amax = max(amax, abs(v[j]));
        const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
        uint w[8];
        int sum = 0;
        for (uint j = 0; j < 8u; j++) {
            w[j] = 0u;
            for (uint k = 0; k < 4u; k++) {
                int qv = int(roundEven(v[4u * j + k] * id));
                sum += qv;
                w[j] |= uint(qv & 255) << (8u * k);
            }
        }
        Q32x4(row + 32ul * b).v[0] = uvec4(w[0], w[1], w[2], w[3]);
        Q32x4(row + 32ul * b + 16u).v[0] = uvec4(w[4], w[5], w[6], w[7]);
        V2(row + 32ul * nb + 8ul * b).v[0] = vec2(d, d * float(sum));
    }
}
