#version 450
// Operands of the f16 GEMMs (mmf.glsl, mmf_cm2.comp), one 32-value step per
// thread: the first wg_a workgroups dequantise weight rows (dq.glsl, any
// TYPE) into f16 rows of kp at da (n_a steps); the others convert
// activation rows (f32) into f16 rows of kp at db (n_b steps). Steps past
// ncols are written as zeros, so the GEMM needs no bounds in k.
// With experts, A row R is row R % nrows of expert e0 + R / nrows, skipped
// when the bucket says no token chose that expert, and B row i is the
// activation row of the i-th (token, slot) pair in the bucket's order, so
// each expert's tokens are consecutive rows (plain tile loads in the GEMM).
// With flags bit 1, the activations are silu(x) * aux (a SwiGLU fused into
// the matmul that reads it; aux laid out like x). With flags bit 2 they are
// x / sqrt(mean(x^2) + eps) * aux (an RMS norm fused in, aux the norm's
// weight of ncols): then each B workgroup converts one whole row, whose sum
// of squares it reduces first (norm_row).
//
// A workgroup's steps are consecutive and start at a multiple of 8 (the
// eight steps of a 256-value super-block cover it whole), so together they
// fill one contiguous stretch of the output: the values go through shared
// memory and out in coalesced 16-byte stores. Written straight from each
// thread (64 bytes in runs per thread) the stores ran at half the speed.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;   // a multiple of 8
layout(constant_id = 1) const uint TYPE = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t w, x, da, db, bucket, aux;
    uint row_bytes, expert_bytes, nrows, n_a, n_b;
    uint ncols, kp, xs, x_stride, x_slot_stride, e0;
    uint wg_a;       // workgroups of A steps (the rest: B steps)
    uint n_expert;   // grouped: the bucket's experts
    uint flags;      // bit 0: x (and aux) rows 16-byte aligned; bit 1: SwiGLU; bit 2: RMS norm
    float eps;       // the RMS norm's
} p;

#include "dq.glsl"
#define NV 1
#include "reduce.glsl"

layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer W32x4 { uvec4 v[]; };

shared uvec4 tile[4u * WG]; // the workgroup's stretch of output, 64 bytes per step

// Eight values as f16 at 16-byte unit u of the stretch.
void put8(uint u, float v0, float v1, float v2, float v3, float v4, float v5, float v6, float v7) {
    tile[u] = uvec4(packHalf2x16(vec2(v0, v1)), packHalf2x16(vec2(v2, v3)), packHalf2x16(vec2(v4, v5)),
                    packHalf2x16(vec2(v6, v7)));
}

// Element i of a row of an unblocked type (the partial last step of F16/BF16/F32 rows).
float elem(uint64_t row, uint i) {
    if (TYPE == T_F16) return float(F16(row + 2ul * i).v[0]);
    if (TYPE == T_BF16) return bf16_to_f32(uint(U16(row + 2ul * i).v[0]));
    return F32(row + 4ul * i).v[0];
}

// The activation row of B row R: its (token, slot) pair's x.
uint64_t x_off(uint R) {
    const uint pr = p.bucket != 0 ? U32(p.bucket).v[2u * p.n_expert + R] : R; // (token, slot) pair
    return 4ul * (uint64_t(pr / p.xs) * p.x_stride + uint64_t(pr % p.xs) * p.x_slot_stride);
}

// 32 values of x from step s of the row at src (zeros past ncols).
void x_step(uint64_t src, uint s, out float v[32]) {
    if ((p.flags & 1u) != 0u && 32u * (s + 1u) <= p.ncols)
        for (uint j = 0; j < 8u; j++) {
            const vec4 f = F32x4(src + 128ul * s + 16u * j).v[0];
            for (uint k = 0; k < 4u; k++) v[4u * j + k] = f[k];
        }
    else
        for (uint j = 0; j < 32u; j++) v[j] = 32u * s + j < p.ncols ? F32(src).v[32u * s + j] : 0.0;
}

// RMS norm mode: B row R, normalised and scaled by the weight, as f16 (the
// workgroup's threads take its steps in turn, reading x twice: the sum of
// squares first, from L1/L2 the second time).
void norm_row(uint R) {
    const uint S = p.kp / 32u, tid = gl_LocalInvocationID.x;
    const uint64_t src = p.x + x_off(R);
    float v[32], ss[1];
    ss[0] = 0.0;
    for (uint s = tid; s < S; s += WG) {
        x_step(src, s, v);
        for (uint j = 0; j < 32u; j++) ss[0] += v[j] * v[j];
    }
    wg_sum(ss);
    const float inv = 1.0 / sqrt(ss[0] / float(p.ncols) + p.eps);
    for (uint s = tid; s < S; s += WG) {
        x_step(src, s, v);
        float w[32];
        x_step(p.aux, s, w); // the weight: a row of ncols, aligned as x is
        for (uint j = 0; j < 32u; j++) v[j] *= inv * w[j];
        const uint64_t o = p.db + 64ul * (uint64_t(R) * S + s);
        for (uint c = 0; c < 4u; c++)
            W32x4(o).v[c] = uvec4(packHalf2x16(vec2(v[8u * c], v[8u * c + 1u])), packHalf2x16(vec2(v[8u * c + 2u], v[8u * c + 3u])),
                                  packHalf2x16(vec2(v[8u * c + 4u], v[8u * c + 5u])), packHalf2x16(vec2(v[8u * c + 6u], v[8u * c + 7u])));
    }
}

void main() {
    const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    const bool is_a = wg < p.wg_a;
    if (!is_a && (p.flags & 4u) != 0u) { // a workgroup per B row (the whole workgroup returns)
        if (wg - p.wg_a < p.n_b / (p.kp / 32u)) norm_row(wg - p.wg_a);
        return;
    }
    const uint g0 = (is_a ? wg : wg - p.wg_a) * WG, n = is_a ? p.n_a : p.n_b;
    if (g0 >= n) return; // the whole workgroup
    const uint g = g0 + tid, S = p.kp / 32u;
    const uint R = g / S, s = g % S;
    float v[32];
    if (is_a && g < n) {
        const uint e = R / p.nrows, r = R % p.nrows;
        const bool used = p.bucket == 0 || U32(p.bucket).v[p.e0 + e] != 0u;
        const uint64_t row = p.w + uint64_t(e) * p.expert_bytes + uint64_t(r) * p.row_bytes;
        if (used && 32u * (s + 1u) <= p.ncols) dq32(row, s, p.ncols, v);
        else for (uint j = 0; j < 32u; j++) v[j] = used && 32u * s + j < p.ncols ? elem(row, 32u * s + j) : 0.0;
        const uint L = 32u / RUNS(), base = (R * S - g0) * 4u; // 16-byte units: this row's start in the stretch
        for (uint rn = 0; rn < RUNS(); rn++)
            for (uint c = 0; c < L; c += 8u) {
                const uint i = L * rn + c;
                put8(base + (run_start(s, rn) + c) / 8u, v[i], v[i + 1u], v[i + 2u], v[i + 3u], v[i + 4u], v[i + 5u],
                     v[i + 6u], v[i + 7u]);
            }
    } else if (g < n) {
        const uint64_t off = x_off(R);
        x_step(p.x + off, s, v);
        if ((p.flags & 2u) != 0u) { // SwiGLU: silu(x) * up, up at the same offset of aux
            float u[32];
            x_step(p.aux + off, s, u);
            for (uint j = 0; j < 32u; j++) v[j] = silu(v[j]) * u[j];
        }
        for (uint c = 0; c < 32u; c += 8u)
            put8(tid * 4u + c / 8u, v[c], v[c + 1u], v[c + 2u], v[c + 3u], v[c + 4u], v[c + 5u], v[c + 6u], v[c + 7u]);
    }
    barrier();
    const uint units = 4u * min(WG, n - g0);
    const uint64_t out_ = (is_a ? p.da : p.db) + 64ul * g0;
    for (uint u = tid; u < units; u += WG) W32x4(out_).v[u] = tile[u];
}
