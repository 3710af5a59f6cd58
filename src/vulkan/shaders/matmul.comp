#version 450
// Tiled y = W x for prefill (many tokens, dense weights): a 64-row x
// 64-token output tile per workgroup of 256 threads, 4x4 outputs per thread.
// Each k-step of 32: threads 0..63 dequantise one weight row's 32 values
// into shared memory while the others stage the 64 tokens' activations.
// Split-K (SPLIT, vk_gemm.c mt_split): with few tiles (an MoE router of 256
// f32 rows at 512 tokens: 32 workgroups, each 64 serial k-steps of a load,
// two barriers and its products) workgroup z takes k-steps z * ks ..
// (ks = p.ids_stride) and stores its raw tile at p.aux as
// part[z][token][row]; mm_reduce.comp sums those in order and applies the
// epilogue.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint TYPE = 0;
layout(constant_id = 2) const bool SPLIT = false;
layout(local_size_x_id = 0) in;

#include "dq.glsl"
#include "mm_push.glsl"

#define BM 64
#define BN 64
#define BK 32
shared float ws[BK][BM + 1];
shared float xs[BK][BN + 1];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    const uint tr = (tid % 16u) * 4u, tt = (tid / 16u) * 4u; // this thread's 4 rows, 4 tokens
    float acc[4][4];
    for (uint i = 0; i < 4u; i++)
        for (uint j = 0; j < 4u; j++) acc[i][j] = 0.0;

    const uint nsteps = (p.ncols + 31u) / 32u;
    const uint s0 = SPLIT ? gl_WorkGroupID.z * p.ids_stride : 0u, s1 = SPLIT ? min(s0 + p.ids_stride, nsteps) : nsteps;
    for (uint s = s0; s < s1; s++) {
        if (tid < BM) {
            float wv[32];
            uint row = row0 + tid;
            if (row < p.nrows) dq32(p.w + uint64_t(row) * p.row_bytes, s, p.ncols, wv);
            else for (uint j = 0; j < 32u; j++) wv[j] = 0.0;
            for (uint j = 0; j < 32u; j++) ws[j][tid] = wv[j];
        } else {
            const uint L = 32u / RUNS();
            for (uint i = tid - BM; i < BK * BN; i += WG - BM) {
                uint tk = i / BK, k = i % BK, col = run_start(s, k / L) + k % L;
                float v = 0.0;
                if (tok0 + tk < p.n_tok && col < p.ncols) v = F32(p.x).v[(tok0 + tk) * p.x_stride + col];
                xs[k][tk] = v;
            }
        }
        barrier();
        for (uint k = 0; k < BK; k++) {
            vec4 a = vec4(ws[k][tr], ws[k][tr + 1u], ws[k][tr + 2u], ws[k][tr + 3u]);
            vec4 b = vec4(xs[k][tt], xs[k][tt + 1u], xs[k][tt + 2u], xs[k][tt + 3u]);
            for (uint i = 0; i < 4u; i++)
                for (uint j = 0; j < 4u; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier();
    }
    for (uint j = 0; j < 4u; j++) {
        uint t = tok0 + tt + j;
        if (t >= p.n_tok) break;
        for (uint i = 0; i < 4u; i++) {
            uint row = row0 + tr + i;
            if (row >= p.nrows) break;
            if (SPLIT) F32(p.aux).v[(gl_WorkGroupID.z * p.n_tok + t) * p.nrows + row] = acc[i][j];
            else mm_store(t * p.y_stride + row, row, 0u, acc[i][j]);
        }
    }
}
