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
// Grouped MoE (GROUPED, bucket != 0) as in mmf.glsl: workgroup z is expert
// e0 + z of the chunk, its tokens the (token, slot) pairs that chose it,
// which mm_prep.comp laid out as consecutive rows of B from the expert's
// offset on (plain tile loads through a layout of its rows); the results
// are scattered by the pair list (each token's y row staged in shared
// memory per tile). An expert's last tile, when at most half full, runs
// on a BM x BN/2 accumulator: with experts of a few dozen tokens that
// halves the work of most tiles.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint UNR = 1;   // k steps per loop iteration
// The grouped MoE GEMM is its own pipeline: compiled into the dense one,
// its code cost the dense 64 x 64 tile 40 % (registers) on the H200.
layout(constant_id = 5) const bool GROUPED = false;
// AQ: A is the weights themselves (TYPE, GPU row layout, p.row_bytes apart,
// p.expert_bytes between experts) instead of mm_prep.comp's f16 copy: the
// workgroup dequantises each BM x BK tile into shared memory (dq.glsl
// dq8h, 16 bytes a thread), double-buffered so the next tile's loads are in
// flight during this tile's product, and the product reads it from there.
// In the dense token tiles of batched decode (AQS below) B goes through
// shared memory alike, and the next tiles' loads are issued before this
// product while their dequantisation waits until after it: an 8B at 32 /
// 64 sequences 1,309 / 1,879 -> 1,630 / 2,446 tok/s on an H100.
// Batched decode steps (16-64 tokens) are where this pays most: the copy
// cost a write and a read of 2 bytes per weight for a single pass.
layout(constant_id = 6) const bool AQ = false;
layout(constant_id = 7) const uint TYPE = 1;
// Split-K (p.kspl): a pipeline of its own, so that in the others k's bounds
// are 0 and kp, known multiples of 32, and the tile loads stay aligned.
layout(constant_id = 8) const bool SPLIT = false;
// Accumulators of fewer values (fewer 16 x 16 pieces than the workgroup's 8
// warps: ZN_VK_CM2_MIN_ACC) or with rows or tokens off the multiples the
// device check promises (ZN_VK_CM2_GRAIN: half tiles of 16 tokens) left
// outputs unwritten on an H200 and an H100 (vk_gemm.c zn_vk_cm2_cfgs): a
// half tile that would be either is not used.
layout(constant_id = 9) const uint MIN_ACC = 2048;
layout(constant_id = 10) const uint GRAIN = 32;
const uint BNH = BN / 2;
layout(local_size_x_id = 0) in;

// The block of mmf.glsl (struct in vk_ops.c mm_f16), so both kernels take one push.
layout(push_constant) uniform PC {
    uint64_t a;          // f16 [rows][kp]
    uint64_t b;          // f16 [tokens][kp]; grouped: one row per (token, slot) pair, in the bucket's order
    uint64_t y, bias, scale, res;
    uint64_t bucket;     // 0 (dense) or moe_bucket.comp's uint counts[n_expert], offsets[n_expert], pairs[]
    uint64_t group;      // 0 or a Group block (mm_store.glsl): row r of A is row r_base + r of the stack
    uint kp, nrows, n_tok, n_slots;
    uint y_stride, y_slot_stride;
    uint e0, n_expert, r_base;
    uint flags;          // bit 0: bias before scale
    uint row_bytes, expert_bytes, ncols; // AQ: the weights' rows (vk_quant.h), experts, row length
    uint kspl;           // split-K (dense), as in mmf.glsl
} p;

#include "mm_store.glsl"
#include "dq.glsl"

// 16-byte alignment lets the driver use wide loads (rows start at multiples of 64 bytes).
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer H16 { float16_t v[]; };

#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define ACC2 coopmat<float, gl_ScopeWorkgroup, BM, BNH, gl_MatrixUseAccumulator>
#define MAT_A coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define MAT_B coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>
#define MAT_B2 coopmat<float16_t, gl_ScopeWorkgroup, BK, BNH, gl_MatrixUseB>
#define CLAMPED tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define DECL_B(v) MAT_B v    // K_STEP's B operand, full or half width (a type
#define DECL_B2(v) MAT_B2 v  // with commas cannot be a macro argument itself)

uint g_e = 0, g_off = 0, g_cnt;  // grouped: this workgroup's expert, its first pair, its pairs
uint g_yz = 0;                   // split-K: this workgroup's partial tile's offset in y
shared uint ybase[BN];           // grouped: y index of row 0 for each token of the tile

// Stacked matmuls (p.group): the segment holding all of this workgroup's
// rows when one does (t_one), looked up once instead of per element as
// group_store does (the 8B q/k GEMM ran at 103 TFLOP/s in the model, the
// same shape without a group at 130).
bool t_one = false;
uint t_start, t_ystride;
uint64_t t_y, t_bias;
float t_scale = 1.0;

void tile_segment(uint row0) {
    Group gb = Group(p.group);
    uint st1;
    const uint s0 = group_seg(gb, p.r_base + row0, t_start);
    t_one = s0 == group_seg(gb, p.r_base + min(row0 + BM, p.nrows) - 1u, st1);
    t_y = gb.y[s0], t_ystride = gb.y_stride[s0], t_bias = gb.bias[s0];
    if (gb.scale[s0] != 0) t_scale = F32(gb.scale[s0]).v[0];
}

// Element (r, c) of the tile at (row0, tok0): row row0 + r of token tok0 + c.
float store_elem(const in uint r, const in uint c, const in float v, const in uint row0, const in uint tok0) {
    const uint R = row0 + r, n = tok0 + c;
    if (R >= p.nrows || n >= g_cnt) return v;
    if (GROUPED) {
        mm_store(ybase[c] + R, R, g_e, v);
    } else if (p.group != 0 && t_one) { // group_store's arithmetic
        const uint row = p.r_base + R - t_start;
        float x = v;
        if (mm_bias_first() && t_bias != 0) x += F32(t_bias).v[row];
        x *= t_scale;
        if (!mm_bias_first() && t_bias != 0) x += F32(t_bias).v[row];
        F32(t_y).v[n * t_ystride + row] = x;
    } else if (p.group != 0) {
        group_store(p.group, n, p.r_base + R, v);
    } else {
        mm_store(g_yz + n * p.y_stride + R, R, g_e, v);
    }
    return v;
}

// acc += A[row0.., kk..] x B[tokens of the tile, kk..]^T for one k step;
// B is read through a transposing view (its rows are tokens, the matrix
// wants k x tokens).
#define K_STEP(LA, LOAD_B, MB, ACCV, KK)                                                                        \
    {                                                                                                           \
        MAT_A ma;                                                                                               \
        MB(mb);                                                                                                 \
        coopMatLoadTensorNV(ma, H16(abase).v, 0, sliceTensorLayoutNV(LA, row0, BM, KK, BK));                    \
        LOAD_B(KK);                                                                                             \
        ACCV = coopMatMulAdd(ma, mb, ACCV);                                                                     \
    }
// Over this workgroup's k (kb .. ke: all of kp unless split), UNR steps
// per iteration (loads of later steps can be issued before earlier products
// finish), then the rest one at a time.
#define K_LOOP(LA, LOAD_B, MB, ACCV)                                                                            \
    {                                                                                                           \
        uint k = kb;                                                                                            \
        for (; k + UNR * BK <= ke; k += UNR * BK)                                                               \
            [[unroll]] for (uint u = 0; u < UNR; u++) K_STEP(LA, LOAD_B, MB, ACCV, k + u * BK)                  \
        for (; k < ke; k += BK) K_STEP(LA, LOAD_B, MB, ACCV, k)                                                 \
    }
// AQ: the A tiles in shared memory, row-major, LQ 16-byte units a row
// (one of padding against bank conflicts); AU units a thread per tile.
const uint LQ = BK / 8u + 1u, AU = BM * BK / 8u / WG;
shared uvec4 sq[AQ ? 2u * BM * LQ : 1u];
uint64_t aq_row[AQ ? AU : 1u];
dq8raw aq_r[AQ ? AU : 1u];
uint aq_k0; // the k of the tile aq_r holds

void aq_load(uint k0, uint kp) { // this thread's units of the tile at k0: the loads only
    aq_k0 = k0;
    for (uint u = 0; u < AU; u++) {
        const uint k = k0 + 8u * ((gl_LocalInvocationID.x + u * WG) % (BK / 8u));
        if (k < kp) aq_r[u] = dq8h_load(aq_row[u], k, p.ncols);
    }
}
uvec4 aq_v[AQ ? AU : 1u];
void aq_conv(uint kp) { // ... dequantised (zeros past kp)
    for (uint u = 0; u < AU; u++) {
        const uint k = aq_k0 + 8u * ((gl_LocalInvocationID.x + u * WG) % (BK / 8u));
        aq_v[u] = k < kp ? dq8h_conv(aq_r[u], k) : uvec4(0);
    }
}
void aq_fetch(uint k0, uint kp) {
    aq_load(k0, kp);
    aq_conv(kp);
}
void aq_put(uint buf) {
    for (uint u = 0; u < AU; u++) {
        const uint i = gl_LocalInvocationID.x + u * WG;
        sq[(buf * BM + i / (BK / 8u)) * LQ + i % (BK / 8u)] = aq_v[u];
    }
}
// The K loop of AQ: tile kt + 1 fetched while tile kt is multiplied, one
// barrier per tile.
#define AQ_LOOP(LOAD_B, MB, ACCV)                                                                               \
    {                                                                                                           \
        const uint nk = (ke - kb + BK - 1u) / BK;                                                               \
        barrier(); /* the previous token tile is done with sq */                                                \
        aq_fetch(kb, kp);                                                                                       \
        aq_put(0u);                                                                                             \
        barrier();                                                                                              \
        for (uint kt = 0; kt < nk; kt++) {                                                                      \
            const bool more = kt + 1u < nk;                                                                     \
            if (more) aq_fetch(kb + (kt + 1u) * BK, kp);                                                        \
            MAT_A ma;                                                                                           \
            MB(mb);                                                                                             \
            coopMatLoad(ma, sq, (kt & 1u) * BM * LQ, LQ, gl_CooperativeMatrixLayoutRowMajor);                   \
            LOAD_B(kb + kt * BK);                                                                               \
            ACCV = coopMatMulAdd(ma, mb, ACCV);                                                                 \
            if (more) aq_put((kt & 1u) ^ 1u);                                                                   \
            barrier();                                                                                          \
        }                                                                                                       \
    }
// Dense AQ: the B tile (BN tokens x BK, token-major f16 rows of p.b) goes
// through shared memory too, fetched with A's one tile ahead, so neither
// operand's load latency sits between two products (the tensor-layout load
// of B issued at each step left a batched decode step's GEMMs latency-bound).
// Token tiles of up to 64 (the ones batched decode uses): a 256-token tile
// (128 x 256, a sweep config) would want 110 KB of shared memory in all.
const bool AQS = AQ && !GROUPED && BN <= 64u;
const uint BU = (BN * BK / 8u + WG - 1u) / WG;
shared uvec4 sb[AQS ? 2u * BN * LQ : 1u];
uvec4 bq_v[AQS ? BU : 1u];

void bq_fetch(uint tok0, uint k0, uint kp) { // zeros past the tokens and kp
    for (uint u = 0; u < BU; u++) {
        const uint i = gl_LocalInvocationID.x + u * WG, t = tok0 + i / (BK / 8u), k = k0 + 8u * (i % (BK / 8u));
        bq_v[u] = i < BN * BK / 8u && t < p.n_tok && k < kp ? U32x4(p.b + 2ul * (uint64_t(t) * kp + k)).v[0] : uvec4(0);
    }
}
void bq_put(uint buf) {
    for (uint u = 0; u < BU; u++) {
        const uint i = gl_LocalInvocationID.x + u * WG;
        if (i < BN * BK / 8u) sb[(buf * BN + i / (BK / 8u)) * LQ + i % (BK / 8u)] = bq_v[u];
    }
}
#define AQS_LOOP(ACCV)                                                                                          \
    {                                                                                                           \
        const uint nk = (ke - kb + BK - 1u) / BK;                                                               \
        barrier(); /* the previous token tile is done with sq, sb */                                            \
        aq_fetch(kb, kp);                                                                                       \
        bq_fetch(tok0, kb, kp);                                                                                 \
        aq_put(0u);                                                                                             \
        bq_put(0u);                                                                                             \
        barrier();                                                                                              \
        for (uint kt = 0; kt < nk; kt++) {                                                                      \
            const bool more = kt + 1u < nk;                                                                     \
            if (more) { /* loads only: they land while this tile is multiplied */                            \
                aq_load(kb + (kt + 1u) * BK, kp);                                                               \
                bq_fetch(tok0, kb + (kt + 1u) * BK, kp);                                                        \
            }                                                                                                   \
            MAT_A ma;                                                                                           \
            MAT_B mb;                                                                                           \
            coopMatLoad(ma, sq, (kt & 1u) * BM * LQ, LQ, gl_CooperativeMatrixLayoutRowMajor);                   \
            coopMatLoad(mb, sb, (kt & 1u) * BN * LQ, LQ, gl_CooperativeMatrixLayoutColumnMajor);                \
            ACCV = coopMatMulAdd(ma, mb, ACCV);                                                                 \
            if (more) {                                                                                         \
                aq_conv(kp);                                                                                    \
                aq_put((kt & 1u) ^ 1u);                                                                         \
                bq_put((kt & 1u) ^ 1u);                                                                         \
            }                                                                                                   \
            barrier();                                                                                          \
        }                                                                                                       \
    }
#define B_PLAIN(KK) coopMatLoadTensorNV(mb, H16(p.b).v, 0, sliceTensorLayoutNV(lb, tok0, BN, KK, BK), tr)
#define B_CLAMP(KK) coopMatLoadTensorNV(mb, H16(p.b).v, 0, sliceTensorLayoutNV(lbc, tok0, BN, KK, BK), tr)
#define B_GROUP(KK) coopMatLoadTensorNV(mb, H16(p.b).v, g_off * kp, sliceTensorLayoutNV(lg, tok0, BN, KK, BK), tr)
#define B_GROUP2(KK) coopMatLoadTensorNV(mb, H16(p.b).v, g_off * kp, sliceTensorLayoutNV(lg, tok0, BNH, KK, BK), tr)

void main() {
    const uint kp = p.kp & ~31u; // a multiple of 32 (tells the compiler rows stay 64-byte aligned)
    const uint row0 = gl_WorkGroupID.x * BM;
    uint64_t abase = p.a;
    g_cnt = p.n_tok;
    uint kb = 0, ke = kp; // this workgroup's k (split-K: the z-th range, its partial tile at y + g_yz)
    if (SPLIT && !GROUPED) { /* kspl: whole k tiles (vk_gemm.c mm_split), so the masks change nothing */
        kb = (gl_WorkGroupID.z * p.kspl) & ~31u;
        ke = min(kp, kb + (p.kspl & ~31u));
        g_yz = gl_WorkGroupID.z * p.n_tok * p.y_stride;
    }
    if (GROUPED) {
        g_e = p.e0 + gl_WorkGroupID.z;
        g_cnt = U32(p.bucket).v[g_e];
        g_off = U32(p.bucket).v[p.n_expert + g_e];
        abase += AQ ? uint64_t(gl_WorkGroupID.z) * p.expert_bytes : 2ul * gl_WorkGroupID.z * uint64_t(p.nrows) * kp;
    }
    if (AQ) // rows past the end repeat the last one (their results are not stored)
        for (uint u = 0; u < AU; u++)
            aq_row[u] = abase + uint64_t(min(row0 + (gl_LocalInvocationID.x + u * WG) / (BK / 8u), p.nrows - 1u)) * p.row_bytes;
    // plain layouts where the tile lies inside the operands, clamping ones
    // (zeros outside) where it overhangs; lg: the expert's rows of B
    tensorLayoutNV<2> la = createTensorLayoutNV(2), lb = createTensorLayoutNV(2);
    CLAMPED lac = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    CLAMPED lbc = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    CLAMPED lg = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    la = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(la, p.nrows, kp), kp, 1);
    lac = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(lac, p.nrows, kp), kp, 1);
    lb = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(lb, p.n_tok, kp), kp, 1);
    lbc = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(lbc, p.n_tok, kp), kp, 1);
    lg = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(lg, g_cnt, kp), kp, 1);
    tensorViewNV<2, false, 1, 0> tr = createTensorViewNV(2, false, 1, 0);
    const bool a_inside = row0 + BM <= p.nrows && kp % BK == 0u;
    if (!GROUPED && p.group != 0) tile_segment(row0);
    for (uint tile = gl_WorkGroupID.y; tile * BN < g_cnt; tile += gl_NumWorkGroups.y) {
        const uint tok0 = tile * BN;
        if (GROUPED) {
            barrier(); // the previous tile's epilogue is done with ybase
            for (uint i = gl_LocalInvocationID.x; i < BN && tok0 + i < g_cnt; i += WG) {
                const uint pr = U32(p.bucket).v[2u * p.n_expert + g_off + tok0 + i];
                ybase[i] = (pr / p.n_slots) * p.y_stride + (pr % p.n_slots) * p.y_slot_stride;
            }
            barrier();
            if (BM * BNH >= MIN_ACC && BNH % GRAIN == 0u && g_cnt - tok0 <= BNH) {
                ACC2 acc = ACC2(0.0);
                if (AQ) AQ_LOOP(B_GROUP2, DECL_B2, acc)
                else if (a_inside) K_LOOP(la, B_GROUP2, DECL_B2, acc) else K_LOOP(lac, B_GROUP2, DECL_B2, acc)
                coopMatPerElementNV(acc, acc, store_elem, row0, tok0);
            } else {
                ACC acc = ACC(0.0);
                if (AQ) AQ_LOOP(B_GROUP, DECL_B, acc)
                else if (a_inside) K_LOOP(la, B_GROUP, DECL_B, acc) else K_LOOP(lac, B_GROUP, DECL_B, acc)
                coopMatPerElementNV(acc, acc, store_elem, row0, tok0);
            }
        } else {
            ACC acc = ACC(0.0);
            if (AQS) AQS_LOOP(acc)
            else if (AQ) {
                if (tok0 + BN <= p.n_tok && kp % BK == 0u) AQ_LOOP(B_PLAIN, DECL_B, acc) else AQ_LOOP(B_CLAMP, DECL_B, acc)
            } else if (a_inside && tok0 + BN <= p.n_tok) K_LOOP(la, B_PLAIN, DECL_B, acc) else K_LOOP(lac, B_CLAMP, DECL_B, acc)
            coopMatPerElementNV(acc, acc, store_elem, row0, tok0);
        }
    }
}
