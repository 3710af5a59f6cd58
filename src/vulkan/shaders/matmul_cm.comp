#version 450
// Tiled y = W x for prefill on devices with KHR cooperative matrices
// (f16 x f16 -> f32, 16x16x16 per subgroup op). A workgroup of 256 threads
// (8 subgroups of 32) owns a 128-row x 128-token output tile. Per 32-wide
// k-step, threads 0..127 dequantise one weight row each and threads
// 128..255 stage one token's activations, both as f16 in shared memory;
// then subgroup (m, n) of a 4 x 2 grid multiplies its 32 rows by its 64
// tokens: 2 x 4 accumulator tiles. The epilogue (scale, bias, residual)
// goes through a per-subgroup 16 x 16 staging tile.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint TYPE = 0;
layout(local_size_x_id = 0) in;

#include "dq.glsl"
#include "mm_push.glsl"

#define BM 128
#define BN 128
#define BK 32
#define LD (BK + 8)       // padded row stride (f16 elements) against bank conflicts
shared float16_t ws[BM * LD];   // [row][k]
shared float16_t xs[BN * LD];   // [token][k]
shared float st[8 * 256];       // per-subgroup 16 x 16 epilogue tiles

#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>

void main() {
    const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint row0 = gl_WorkGroupID.x * BM, tok0 = gl_WorkGroupID.y * BN;
    const uint sm = sg % 4u, sn = sg / 4u;   // this subgroup's 32 rows and 64 tokens
    CM_C acc[2][4];
    for (uint i = 0; i < 2u; i++)
        for (uint j = 0; j < 4u; j++) acc[i][j] = CM_C(0.0);

    const uint nsteps = (p.ncols + 31u) / 32u;
    for (uint s = 0; s < nsteps; s++) {
        float v[32];
        if (tid < BM) {
            const uint row = row0 + tid;
            if (row < p.nrows) dq32(p.w + uint64_t(row) * p.row_bytes, s, p.ncols, v);
            else for (uint j = 0; j < 32u; j++) v[j] = 0.0;
            for (uint j = 0; j < 32u; j++) ws[tid * LD + j] = float16_t(v[j]);
        } else {
            const uint tk = tid - BM, t = tok0 + tk;
            if (t < p.n_tok) x32(p.x + 4ul * t * p.x_stride, s, p.ncols, mm_x_aligned(), v);
            else for (uint j = 0; j < 32u; j++) v[j] = 0.0;
            for (uint j = 0; j < 32u; j++) xs[tk * LD + j] = float16_t(v[j]);
        }
        barrier();
        for (uint kk = 0; kk < BK; kk += 16u) {
            CM_A a[2];
            CM_B b[4];
            for (uint i = 0; i < 2u; i++)
                coopMatLoad(a[i], ws, (sm * 32u + 16u * i) * LD + kk, LD, gl_CooperativeMatrixLayoutRowMajor);
            for (uint j = 0; j < 4u; j++)
                coopMatLoad(b[j], xs, (sn * 64u + 16u * j) * LD + kk, LD, gl_CooperativeMatrixLayoutColumnMajor);
            for (uint i = 0; i < 2u; i++)
                for (uint j = 0; j < 4u; j++) acc[i][j] = coopMatMulAdd(a[i], b[j], acc[i][j]);
        }
        barrier();
    }
    // epilogue: tile (i, j) holds rows sm*32+16i.., tokens sn*64+16j.., row-major
    for (uint i = 0; i < 2u; i++)
        for (uint j = 0; j < 4u; j++) {
            coopMatStore(acc[i][j], st, sg * 256u, 16, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
                const uint r = row0 + sm * 32u + 16u * i + e % 16u, t = tok0 + sn * 64u + 16u * j + e / 16u;
                if (r < p.nrows && t < p.n_tok) mm_store(t * p.y_stride + r, r, 0u, st[sg * 256u + (e % 16u) * 16u + e / 16u]);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
}
