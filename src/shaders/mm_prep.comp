#version 450
// Operands of mmf.glsl's f16 GEMM, one 32-value step per thread: items
// [0, n_a) dequantise weight rows (dq.glsl, any TYPE) into f16 rows of kp
// at da; items [n_a, n_a + n_b) convert activation rows (f32) into f16 rows
// of kp at db. Steps past ncols are written as zeros, so the GEMM needs no
// bounds in k. With experts, A row R is row R % nrows of expert
// e0 + R / nrows, skipped when the bucket says no token chose that expert.
// Activation row xr is slot xr % xs of token xr / xs.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint TYPE = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t w, x, da, db, bucket;
    uint row_bytes, expert_bytes, nrows, n_a, n_b;
    uint ncols, kp, xs, x_stride, x_slot_stride, e0;
} p;

#include "dq.glsl"

layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer W32x4 { uvec4 v[]; };

// Eight values as f16 at dst (16-byte aligned).
void put8(uint64_t dst, float v0, float v1, float v2, float v3, float v4, float v5, float v6, float v7) {
    W32x4(dst).v[0] = uvec4(packHalf2x16(vec2(v0, v1)), packHalf2x16(vec2(v2, v3)), packHalf2x16(vec2(v4, v5)),
                            packHalf2x16(vec2(v6, v7)));
}

// Element i of a row of an unblocked type (the partial last step of F16/BF16/F32 rows).
float elem(uint64_t row, uint i) {
    if (TYPE == T_F16) return float(F16(row + 2ul * i).v[0]);
    if (TYPE == T_BF16) return bf16_to_f32(uint(U16(row + 2ul * i).v[0]));
    return F32(row + 4ul * i).v[0];
}

void main() {
    const uint g = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    const uint S = p.kp / 32u;
    float v[32];
    if (g < p.n_a) {
        const uint R = g / S, s = g % S, e = R / p.nrows, r = R % p.nrows;
        if (p.bucket != 0 && U32(p.bucket).v[p.e0 + e] == 0u) return;
        const uint64_t row = p.w + uint64_t(e) * p.expert_bytes + uint64_t(r) * p.row_bytes;
        if (32u * (s + 1u) <= p.ncols) dq32(row, s, p.ncols, v);
        else for (uint j = 0; j < 32u; j++) v[j] = 32u * s + j < p.ncols ? elem(row, 32u * s + j) : 0.0;
        const uint L = 32u / RUNS();
        const uint64_t dst = p.da + 2ul * uint64_t(R) * p.kp;
        for (uint rn = 0; rn < RUNS(); rn++)
            for (uint c = 0; c < L; c += 8u) {
                const uint i = L * rn + c;
                put8(dst + 2u * (run_start(s, rn) + c), v[i], v[i + 1u], v[i + 2u], v[i + 3u], v[i + 4u], v[i + 5u],
                     v[i + 6u], v[i + 7u]);
            }
    } else if (g - p.n_a < p.n_b) {
        const uint xr = (g - p.n_a) / S, s = (g - p.n_a) % S;
        const uint64_t src = p.x + 4ul * (uint64_t(xr / p.xs) * p.x_stride + uint64_t(xr % p.xs) * p.x_slot_stride);
        for (uint j = 0; j < 32u; j++) v[j] = 32u * s + j < p.ncols ? F32(src + 4ul * (32u * s + j)).v[0] : 0.0;
        const uint64_t dst = p.db + 2ul * (uint64_t(xr) * p.kp + 32u * s);
        for (uint c = 0; c < 32u; c += 8u)
            put8(dst + 2u * c, v[c], v[c + 1u], v[c + 2u], v[c + 3u], v[c + 4u], v[c + 5u], v[c + 6u], v[c + 7u]);
    }
}
