#version 450
// The f16 GEMM of mmf.glsl (same operands, push constants and epilogue) on
// NVIDIA's workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2).
// The whole BM x BN output tile is one matrix owned by the workgroup, and the
// operand tiles are loaded straight from global memory through tensor
// layouts: the driver picks the per-warp split, the shared-memory staging
// and its pipelining, which the subgroup-scope kernel (16x16 tiles, our own
// staging) could not make reach more than a fraction of the tensor cores.
//
// A is [rows][kp] and B [tokens][kp] f16, kp a multiple of 32 with zero
// padding (mm_prep.comp). Tiles that overhang the rows, the tokens or kp
// load through clamping layouts (zeros outside); the others through plain
// ones, which need no per-element bounds. The epilogue runs per element of
// the accumulator (coopMatPerElementNV), so bias, scale, residual, the
// stacked matmuls of a group and the bounds go through mm_store.glsl
// exactly as in mmf.glsl.
//
// Dense only: the grouped MoE mode (push constant bucket != 0) stays on
// mmf.glsl, whose gathered B rows a tensor layout cannot express.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(local_size_x_id = 0) in;

// The block of mmf.glsl (struct in vk_ops.c mm_f16), so both kernels take one push.
layout(push_constant) uniform PC {
    uint64_t a;          // f16 [rows][kp]
    uint64_t b;          // f16 [tokens][kp]
    uint64_t y, bias, scale, res;
    uint64_t bucket;     // 0: this kernel is dense only
    uint64_t group;      // 0 or a Group block (mm_store.glsl): row r of A is row r_base + r of the stack
    uint kp, nrows, n_tok, n_slots;
    uint y_stride, y_slot_stride;
    uint b_tok, b_slot;
    uint e0, n_expert, r_base;
    uint flags;          // bit 0: bias before scale
} p;

#include "mm_store.glsl"

// 16-byte alignment lets the driver use wide loads (rows start at multiples of 64 bytes).
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer H16 { float16_t v[]; };

#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define MAT_A coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define MAT_B coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>

// Element (r, c) of the tile at (row0, tok0): row row0 + r of token tok0 + c.
float store_elem(const in uint r, const in uint c, const in float v, const in uint row0, const in uint tok0) {
    const uint R = row0 + r, n = tok0 + c;
    if (R >= p.nrows || n >= p.n_tok) return v;
    if (p.group != 0) group_store(p.group, n, p.r_base + R, v);
    else mm_store(n * p.y_stride + R, R, 0u, v);
    return v;
}

// acc += A[row0.., k..] x B[tok0.., k..]^T over all of kp; B is read through
// a transposing view (its rows are tokens, the matrix wants k x tokens).
#define K_LOOP(LA, LB)                                                                                          \
    for (uint k = 0; k < kp; k += BK) {                                                                         \
        MAT_A ma;                                                                                               \
        MAT_B mb;                                                                                               \
        coopMatLoadTensorNV(ma, H16(p.a).v, 0, sliceTensorLayoutNV(LA, row0, BM, k, BK));                       \
        coopMatLoadTensorNV(mb, H16(p.b).v, 0, sliceTensorLayoutNV(LB, tok0, BN, k, BK), tr);                   \
        acc = coopMatMulAdd(ma, mb, acc);                                                                       \
    }

void main() {
    const uint kp = p.kp & ~31u; // a multiple of 32 (tells the compiler rows stay 64-byte aligned)
    const uint row0 = gl_WorkGroupID.x * BM;
    tensorViewNV<2, false, 1, 0> tr = createTensorViewNV(2, false, 1, 0);
    for (uint tile = gl_WorkGroupID.y; tile * BN < p.n_tok; tile += gl_NumWorkGroups.y) {
        const uint tok0 = tile * BN;
        ACC acc = ACC(0.0);
        if (row0 + BM <= p.nrows && tok0 + BN <= p.n_tok && kp % BK == 0u) {
            tensorLayoutNV<2> la = createTensorLayoutNV(2), lb = createTensorLayoutNV(2);
            la = setTensorLayoutDimensionNV(la, p.nrows, kp);
            la = setTensorLayoutStrideNV(la, kp, 1);
            lb = setTensorLayoutDimensionNV(lb, p.n_tok, kp);
            lb = setTensorLayoutStrideNV(lb, kp, 1);
            K_LOOP(la, lb)
        } else {
            tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la =
                createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
            tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb =
                createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
            la = setTensorLayoutDimensionNV(la, p.nrows, kp);
            la = setTensorLayoutStrideNV(la, kp, 1);
            lb = setTensorLayoutDimensionNV(lb, p.n_tok, kp);
            lb = setTensorLayoutStrideNV(lb, kp, 1);
            K_LOOP(la, lb)
        }
        coopMatPerElementNV(acc, acc, store_elem, row0, tok0);
    }
}
