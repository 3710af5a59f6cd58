#version 450
// Matmuls of Q4_K weights over a few dozen tokens (batched decode of
// 16-64 sequences): an int8 GEMM on integer dot products. Per K step of
// one super-block (256 values) the workgroup unpacks BM rows of weights
// into int8 quants with each 32-value sub-block's (d * scale, dmin * min)
// and copies BN tokens of x, quantised by quantx.comp (blocks of 32 int8
// with (d, d * sum q)), into shared memory; each thread then owns a TM x TN
// block of outputs (rows tr + 16 i, tokens tt + 16 j) and dots its rows'
// and tokens' quants from shared memory. The weights are read once per BN
// tokens and unpacked once per workgroup, where the f16 GEMM dequantised
// every tile of a 32-token product at a few TFLOP/s and the mat-vec's
// per-lane accumulators of many tokens ran out of registers
// (bench/results/2026-12-05-s23.md).
#extension GL_EXT_integer_dot_product : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256; // 16 x 16 threads
layout(constant_id = 1) const uint BN = 64;  // tokens per workgroup: 16 TN
layout(local_size_x_id = 0) in;

#include "mm_push.glsl"

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer V2 { vec2 v[]; };

#include "intdot.glsl"

const uint BM = 64u, TM = BM / 16u, TN = BN / 16u;
const uint RW = 17u; // uvec4 per row of 256 quants in shared memory: 16, plus one against bank conflicts
const uint RS = 9u;  // vec2 per row of sub-block scales: 8, plus one

shared uvec4 ws[BM * RW];
shared vec2 wsc[BM * RS];
shared uvec4 xs[BN * RW];
shared vec2 xsd[BN * RS];

// float(i) for |i| < 2^22 by an integer add and a float add (i lands in
// the mantissa of 1.5 * 2^23): a conversion instruction issues at a
// quarter of their rate, and there is one per output per sub-block.
float i2f(int i) { return intBitsToFloat(i + 0x4B400000) - 12582912.0; }

void main() {
    const uint tid = gl_LocalInvocationID.x, tr = tid % 16u, tt = tid / 16u;
    const uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    const uint nb = p.ncols / 32u, nsb = p.ncols / 256u;
    const uint64_t xrow = uint64_t((40u * nb + 15u) & ~15u) * p.x_stride; // a token's quantised x (quantx.comp)
    float acc[TM * TN];
    for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    for (uint kb = 0; kb < nsb; kb++) {
        barrier(); // the last step's reads done
        // weights: per row the super-block's 16 bytes of (d, dmin, scales) and 8 x 16 bytes of quants;
        // rows past the end repeat the last one (their outputs are not stored)
        for (uint i = tid; i < BM * 9u; i += WG) {
            const uint r = i / 9u, k = i - r * 9u;
            const uint64_t b = p.w + uint64_t(min(row0 + r, p.nrows - 1u)) * p.row_bytes + 144ul * kb;
            const uvec4 v = U32x4(b + 16u * k).v[0];
            if (k == 0u) {
                const vec2 dm = unpackHalf2x16(v.x);
                for (uint pr = 0; pr < 4u; pr++) {
                    vec2 sc, m;
                    kscales(v.yzw, pr, sc, m);
                    wsc[r * RS + 2u * pr] = vec2(dm.x * sc.x, dm.y * m.x);
                    wsc[r * RS + 2u * pr + 1u] = vec2(dm.x * sc.y, dm.y * m.y);
                }
            } else { // quants of sub-blocks 2 pair (low nibbles) and 2 pair + 1, values 16 h .. 16 h + 15
                const uint q = k - 1u, pr = q >> 1, h = q & 1u;
                ws[r * RW + 4u * pr + h] = v & 0x0f0f0f0fu;
                ws[r * RW + 4u * pr + 2u + h] = (v >> 4) & 0x0f0f0f0fu;
            }
        }
        // x: 256 int8 and 8 (d, d * sum q) per token; tokens past the end repeat the last one
        for (uint i = tid; i < BN * 24u; i += WG) {
            const uint t = i / 24u, k = i - t * 24u;
            const uint64_t xr = p.x + xrow * min(tok0 + t, p.n_tok - 1u);
            if (k < 16u) xs[t * RW + k] = U32x4(xr + 256ul * kb + 16u * k).v[0];
            else xsd[t * RS + k - 16u] = V2(xr + 32ul * nb + 64ul * kb + 8u * (k - 16u)).v[0];
        }
        barrier();
        for (uint b = 0; b < 8u; b++) {
            uvec4 w0[TM], w1[TM];
            vec2 s[TM];
            for (uint i = 0; i < TM; i++) {
                const uint r = tr + 16u * i;
                w0[i] = ws[r * RW + 2u * b];
                w1[i] = ws[r * RW + 2u * b + 1u];
                s[i] = wsc[r * RS + b];
            }
            for (uint j = 0; j < TN; j++) {
                const uint t = tt + 16u * j;
                const uvec4 x0 = xs[t * RW + 2u * b], x1 = xs[t * RW + 2u * b + 1u];
                const vec2 xd = xsd[t * RS + b];
                for (uint i = 0; i < TM; i++)
                    acc[i * TN + j] += s[i].x * xd.x * i2f(idot(w0[i], x0) + idot(w1[i], x1)) - s[i].y * xd.y;
            }
        }
    }
    for (uint i = 0; i < TM; i++)
        for (uint j = 0; j < TN; j++) {
            const uint r = row0 + tr + 16u * i, t = tok0 + tt + 16u * j;
            if (r < p.nrows && t < p.n_tok) mv_store(t, 0u, 0u, r, acc[i * TN + j]);
        }
}
