// f16 GEMM for prefill: y[token][row] = sum_k A[row][k] B[token][k] with
// the matmul epilogue, where A (weights) and B (activations) were written
// as f16 rows of kp (a multiple of 32, zero-padded) by mm_prep.comp.
// Included by mmf_cm.comp (CM defined: KHR cooperative matrices, 16x16x16,
// subgroups of 32) and mmf_emu.comp (the same tiling and data movement with
// each 16x16 tile product done in scalar code by a "virtual subgroup" of 32
// threads: devices without cooperative matrices, tests).
//
// A workgroup of WG threads owns a BM-row x BN-token output tile; its
// WG / 32 subgroups form a (BM / WM) x (BN / WN) grid, each holding
// (WM / 16) x (WN / 16) accumulator tiles. K advances 32 at a time through
// two shared buffers: the next k-tile's global loads (16 bytes per thread,
// coalesced) are issued before the current tile is multiplied and stored
// into the other buffer after it, so one barrier per k-tile suffices.
//
// With a group, the rows are the stacked weights of several matmuls of one
// x, each row's result going to its own output (mm_store.glsl).
// Grouped MoE (bucket != 0): workgroup z is expert e0 + z of the chunk
// whose matrices were dequantised one after another into A; its tokens are
// the (token, slot) pairs that chose it (moe_bucket.comp), consecutive rows
// of B (mm_prep.comp gathered them), scattered to y by the pair list. Workgroup y strides over its token
// tiles (an expert may have more pairs than the grid expects).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint WM = 64;
layout(constant_id = 4) const uint WN = 32;
layout(constant_id = 5) const uint NST = 4;   // 16x16 f32 staging tiles for the epilogue (shared memory)
// AQ: A is the weights themselves (TYPE, GPU row layout) and each A tile
// is dequantised as it is loaded (dq.glsl dq8h), so no mm_prep pass writes
// and this kernel re-reads an f16 copy of them.
layout(constant_id = 6) const bool AQ = false;
layout(constant_id = 7) const uint TYPE = 1;
// Split-K (p.kspl): a pipeline of its own (mmf_cm2.comp SPLIT), so that in
// the others k's tiles are 0 .. kp / BK.
layout(constant_id = 8) const bool SPLIT = false;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t a;          // f16 [rows][kp]; grouped: [experts of the chunk][nrows][kp]; AQ: the weights
    uint64_t b;          // f16 [b rows][kp]; grouped: one row per (token, slot) pair, in the bucket's order
    uint64_t y, bias, scale, res;
    uint64_t bucket;     // 0 (dense) or moe_bucket.comp's uint counts[n_expert], offsets[n_expert], pairs[]
    uint64_t group;      // 0 or a Group block (mm_store.glsl): row r of A is row r_base + r of the stack
    uint kp, nrows, n_tok, n_slots;
    uint y_stride, y_slot_stride;
    uint e0, n_expert, r_base;
    uint flags;          // bit 0: bias before scale
    uint row_bytes, expert_bytes, ncols; // AQ: the weights' rows (vk_quant.h), experts, row length
    uint kspl;           // split-K (dense): workgroup z multiplies k z * kspl .. and stores its partial
                         // tile at y + z * n_tok * y_stride for mm_reduce.comp; 0: all of k
} p;

#include "mm_store.glsl"
#include "dq.glsl"

#define BK 32u
#define LDV 20u          // shared row stride in f16vec2 (40 halves: 32 + 8 against bank conflicts)
const uint NSG = WG / 32u, TM = WM / 16u, TN = WN / 16u, GN = BN / WN;
const uint AV = BM * 4u / WG, BV = BN * 4u / WG;   // 16-byte loads per thread per k-tile

shared f16vec2 sa[2u * BM * LDV];
shared f16vec2 sb[2u * BN * LDV];
shared float st[NST * 256u];

#ifdef CM
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#else
// Virtual lane l holds elements l + 32 q (q < 8) of each 16x16 tile, in the
// column-major order the epilogue stages them: row l % 16, column l / 16 + 2 q.
float emu_dot(uint ao, uint bo) { // 16 products of A row (ao) and B row (bo), offsets in f16vec2
    float s = 0.0;
    for (uint k = 0; k < 8u; k++) {
        vec2 x = vec2(sa[ao + k]), w = vec2(sb[bo + k]);
        s = fma(x.x, w.x, fma(x.y, w.y, s));
    }
    return s;
}
#endif

// Orders a subgroup's epilogue staging writes and reads. With a staging
// tile per subgroup (cooperative matrices, NST >= NSG) the subgroup alone
// needs to meet; otherwise subgroups take turns, and the emulation's
// virtual subgroups span hardware ones: the whole workgroup meets.
void stage_sync() {
#ifdef CM
    if (NST >= NSG) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        return;
    }
#endif
    barrier();
}

void store_tile(uint buf, uint i, uvec4 v, bool is_a) { // 16 bytes of row i / 4 of a tile
    const uint o = buf * (is_a ? BM : BN) * LDV + (i / 4u) * LDV + (i % 4u) * 4u;
    for (uint c = 0; c < 4u; c++) {
        if (is_a) sa[o + c] = unpackFloat2x16(v[c]);
        else sb[o + c] = unpackFloat2x16(v[c]);
    }
}

// 16 bytes (8 k values) of thread unit i of A's k-tile kt.
uvec4 a_load(uint64_t a, uint i, uint kt) {
    if (AQ) return dq8h(a, 32u * kt + 8u * (i % 4u), p.ncols);
    return U32x4(a + 64ul * kt).v[0];
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
#ifdef CM
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#else
    const uint sg = tid / 32u, lane = tid % 32u;
#endif
    const uint wr = sg / GN, wc = sg % GN;   // this subgroup's rows wr * WM.., tokens wc * WN..
    const uint row0 = gl_WorkGroupID.x * BM;
    uint e = 0, cnt = p.n_tok, off = 0;
    uint64_t abase = p.a;
    if (p.bucket != 0) {
        e = p.e0 + gl_WorkGroupID.z;
        cnt = U32(p.bucket).v[e];
        off = U32(p.bucket).v[p.n_expert + e];
        abase += AQ ? uint64_t(gl_WorkGroupID.z) * p.expert_bytes : 2ul * gl_WorkGroupID.z * uint64_t(p.nrows) * p.kp;
    }
    // this thread's A rows of the tile (clamped: rows past the end are computed and dropped)
    uint64_t ar[AV];
    for (uint q = 0; q < AV; q++) {
        const uint i = tid + q * WG, r = min(row0 + i / 4u, p.nrows - 1u);
        ar[q] = AQ ? abase + uint64_t(r) * p.row_bytes : abase + 2ul * uint64_t(r) * p.kp + 16u * (i % 4u);
    }
    uint kt0 = 0, nk = p.kp / BK; // this workgroup's k tiles kt0 .. nk - 1
    uint yz = 0;                  // split-K: its partial tile's offset in y
    if (SPLIT && p.bucket == 0) {
        kt0 = gl_WorkGroupID.z * (p.kspl / BK);
        nk = min(nk, kt0 + p.kspl / BK);
        yz = gl_WorkGroupID.z * p.n_tok * p.y_stride;
    }
    for (uint tile = gl_WorkGroupID.y; tile * BN < cnt; tile += gl_NumWorkGroups.y) {
        const uint tok0 = tile * BN;
        uint64_t br[BV];
        for (uint q = 0; q < BV; q++) {
            const uint i = tid + q * WG, n = min(tok0 + i / 4u, cnt - 1u);
            br[q] = p.b + 2ul * uint64_t(off + n) * p.kp + 16u * (i % 4u);
        }
#ifdef CM
        CM_C acc[TM][TN];
        for (uint i = 0; i < TM; i++)
            for (uint j = 0; j < TN; j++) acc[i][j] = CM_C(0.0);
#else
        float acc[TM][TN][8];
        for (uint i = 0; i < TM; i++)
            for (uint j = 0; j < TN; j++)
                for (uint q = 0; q < 8u; q++) acc[i][j][q] = 0.0;
#endif
        uvec4 ra[AV], rb[BV];
        for (uint q = 0; q < AV; q++) ra[q] = a_load(ar[q], tid + q * WG, kt0);
        for (uint q = 0; q < BV; q++) rb[q] = U32x4(br[q] + 64ul * kt0).v[0];
        for (uint q = 0; q < AV; q++) store_tile(0u, tid + q * WG, ra[q], true);
        for (uint q = 0; q < BV; q++) store_tile(0u, tid + q * WG, rb[q], false);
        barrier();
        for (uint kt = kt0; kt < nk; kt++) {
            const uint cur = (kt - kt0) & 1u; // the first tile went to buffer 0
            const bool more = kt + 1u < nk;
            if (more) { // in flight while this k-tile is multiplied
                for (uint q = 0; q < AV; q++) ra[q] = a_load(ar[q], tid + q * WG, kt + 1u);
                for (uint q = 0; q < BV; q++) rb[q] = U32x4(br[q] + 64ul * (kt + 1u)).v[0];
            }
            const uint ao = cur * BM * LDV + wr * WM * LDV, bo = cur * BN * LDV + wc * WN * LDV;
            for (uint kk = 0; kk < 16u; kk += 8u) { // two k16 steps, in f16vec2 units
#ifdef CM
                CM_A fa[TM];
                CM_B fb[TN];
                for (uint i = 0; i < TM; i++)
                    coopMatLoad(fa[i], sa, ao + 16u * i * LDV + kk, LDV, gl_CooperativeMatrixLayoutRowMajor);
                for (uint j = 0; j < TN; j++)
                    coopMatLoad(fb[j], sb, bo + 16u * j * LDV + kk, LDV, gl_CooperativeMatrixLayoutColumnMajor);
                for (uint i = 0; i < TM; i++)
                    for (uint j = 0; j < TN; j++) acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
#else
                for (uint i = 0; i < TM; i++)
                    for (uint j = 0; j < TN; j++)
                        for (uint q = 0; q < 8u; q++)
                            acc[i][j][q] += emu_dot(ao + (16u * i + lane % 16u) * LDV + kk,
                                                    bo + (16u * j + lane / 16u + 2u * q) * LDV + kk);
#endif
            }
            if (more) {
                for (uint q = 0; q < AV; q++) store_tile(cur ^ 1u, tid + q * WG, ra[q], true);
                for (uint q = 0; q < BV; q++) store_tile(cur ^ 1u, tid + q * WG, rb[q], false);
            }
            barrier();
        }
        // epilogue: NST subgroups at a time stage one 16x16 tile (column-major:
        // a lane's neighbours hold the next rows of the same token) and store it
        for (uint i = 0; i < TM; i++)
            for (uint j = 0; j < TN; j++)
                for (uint round = 0; round < NSG; round += NST) {
                    const bool mine = sg >= round && sg < round + NST;
                    const uint so = (sg - round) * 256u;
                    if (mine) {
#ifdef CM
                        coopMatStore(acc[i][j], st, so, 16, gl_CooperativeMatrixLayoutColumnMajor);
#else
                        for (uint q = 0; q < 8u; q++) st[so + lane + 32u * q] = acc[i][j][q];
#endif
                    }
                    stage_sync();
                    if (mine) {
                        for (uint q = 0; q < 8u; q++) {
                            const uint x = lane + 32u * q;
                            const uint r = row0 + wr * WM + 16u * i + x % 16u, n = tok0 + wc * WN + 16u * j + x / 16u;
                            if (r >= p.nrows || n >= cnt) continue;
                            if (p.group != 0) {
                                group_store(p.group, n, p.r_base + r, st[so + x]);
                                continue;
                            }
                            uint yi = yz + n * p.y_stride + r;
                            if (p.bucket != 0) {
                                const uint pr = U32(p.bucket).v[2u * p.n_expert + off + n];
                                yi = (pr / p.n_slots) * p.y_stride + (pr % p.n_slots) * p.y_slot_stride + r;
                            }
                            mm_store(yi, r, e, st[so + x]);
                        }
                    }
                    stage_sync();
                }
    }
}
