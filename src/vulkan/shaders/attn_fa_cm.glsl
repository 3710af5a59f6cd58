// ZN_OP_ATTN for prefill on 16x16x16 matrix products (f16 in, f32
// accumulate): S = Q K^T and O += P V. Included by attn_fa_cm.comp (CM
// defined: KHR cooperative matrices, subgroups of 32) and attn_fa_emu.comp
// (the same tiling and data movement with each tile product done in scalar
// code by a "virtual subgroup" of 32 threads, as mmf.glsl: tests on devices
// without cooperative matrices).
//
// A workgroup (4 subgroups) owns BR rows of the (token, head) pairs that
// share one KV head, pair i = token * G + g for the G = n_head / n_head_kv
// query heads of the group, so each K/V tile staged serves all of them.
// Per tile of BC keys:
//   S:       S tiles (RS x BC/16 of them, RS = BR/16 row slices) spread
//            over the subgroups, stored to shared (f32); with fewer tiles
//            than subgroups, each tile's head dims are split KP ways and
//            the partial sums stored apart;
//   softmax: WG / BR threads per row: S (the sum of its parts), causal
//            mask, online max, P = exp(S - m) as f16 into shared, alpha per
//            row;
//   O:       each subgroup owns NO fixed 16x16 output tiles of one row
//            slice (registers): O = O * alpha + P V.
// K/V tiles are loaded into registers a phase or two ahead, so the loads
// fly while products run. With KV2 (where shared memory allows), K and V
// have a buffer each: V and the next K tile are stored while the softmax
// runs, two barriers per tile. Without, they take turns in one: K in,
// barrier, S, barrier, softmax + V in, barrier, P V, barrier.
// The per-row rescale reaches accumulator elements through a matrix of row
// indices of the same type (element i of every such matrix is the same
// (row, column) in an invocation).
// The first tile holds key 0, which no row masks, so every row's max is
// finite from then on (rows past the last pair see Q = 0 and are dropped).
#include "common.glsl"
#include "kvtab.glsl"

layout(constant_id = 0) const uint WG = 128;   // 4 subgroups of 32
layout(constant_id = 1) const uint HD = 128;   // head dim (k and v)
layout(constant_id = 2) const uint BR = 32;    // pair rows per workgroup (16, 32, 64)
layout(constant_id = 3) const uint BC = 32;    // keys per tile (multiple of 16)
layout(constant_id = 4) const uint SSZ = 1152; // floats of ss: max(KP * BR * LS, 4 * 256) (vk_ops.c fa_ss_floats)
layout(constant_id = 5) const uint KV2 = 0;    // 1: separate K and V buffers
layout(constant_id = 6) const uint KP = 1;     // parts of an S tile's head dims: max(1, 4 / S tiles)
layout(constant_id = 7) const uint KVQ = 0;    // the cache's format (kvq.glsl), 0: f16
layout(local_size_x_id = 0) in;
#include "kvq.glsl"

layout(push_constant) uniform PC {
    uint64_t q, tab, dst, part, step;  // step: vk_ops.h vkop_step (0: n_past below); tab: kvtab.glsl
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split;                   // as attn.comp's (unused here)
    float scale;
    uint koff, voff, pos_bytes;            // the layer's K / V rows in a position's row
} p;

const uint LQ = (HD + 8u) / 2u;   // f16vec2 per Q / K / V row (8 halves of padding against bank conflicts)
const uint LP = (BC + 8u) / 2u;   // f16vec2 per P row
const uint LS = BC + 4u;          // floats per S row
const uint RS = BR / 16u, KT = BC / 16u, HT = HD / 16u;
const uint NST = RS * KT, SPS = (NST * KP + 3u) / 4u; // S tiles, (tile, part) items per subgroup
const uint HTP = HT / KP;                              // k steps of a part
const uint NO = RS * HT / 4u;                      // O tiles per subgroup, all in one row slice
const uint TPR = WG / BR, CPT = BC / TPR;          // softmax threads per row, columns per thread

shared f16vec2 qs[BR * LQ];
shared f16vec2 kv[(1u + KV2) * BC * LQ];   // K, then (KV2) V at VO
const uint VO = KV2 * BC * LQ;
shared float ss[SSZ];       // S (KP parts BR * LS apart); at the end, a 16x16 staging tile per subgroup
shared f16vec2 ps[BR * LP];
shared float al[BR];        // per row: alpha of this tile; at the end 1 / l

#ifdef CM
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#else
// Virtual lane l holds elements (row l % 16, column l / 16 + 2 e), e < 8.
float kv_at(uint base, uint i) { // half i of the f16vec2 row at base
    return float(kv[base + i / 2u][i % 2u]);
}
#endif

#define FA_UNROLL
#include "attn_fa_tile.glsl"

void main() {
    const uint tid = gl_LocalInvocationID.x;
#ifdef CM
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#else
    const uint sg = tid / 32u, lane = tid % 32u;
#endif
    const fa_block b = fa_block_of(BR);
    const uint G = b.G, kvh = b.kvh, np = b.np, p0 = b.p0, n_past = b.n_past, kv_end = b.kv_end;

    for (uint w = tid; w < BR * HD / 4u; w += WG) {
        const uint r = w / (HD / 4u), c4 = w % (HD / 4u);
        const vec4 x = q_at(b, p0 + r, c4);
        qs[r * LQ + 2u * c4] = f16vec2(x.xy);
        qs[r * LQ + 2u * c4 + 1u] = f16vec2(x.zw);
    }
#ifdef CM
    for (uint i = tid; i < 256u; i += WG) ss[i] = float(i / 16u);
    barrier();
    CM_C rowm;
    coopMatLoad(rowm, ss, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
#endif

    // softmax role: row sr, columns CPT * part ..
    const uint sr = tid / TPR, part = tid % TPR, qpos = n_past + (p0 + sr) / G;
    float m = -1.0 / 0.0, l = 0.0;
    // O role: row slice ors, column tiles oct ..
    const uint ors = sg * NO / HT, oct = sg * NO % HT;
#ifdef CM
    CM_C o[NO];
    for (uint j = 0; j < NO; j++) o[j] = CM_C(0.0);
#else
    float o[NO][8];
    for (uint j = 0; j < NO; j++)
        for (uint e = 0; e < 8u; e++) o[j][e] = 0.0;
#endif

    fetch(false, 0u, kv_end, kvh);
    if (KV2 != 0u) {
        put(false);
        fetch(true, 0u, kv_end, kvh);
        barrier();
    }
    for (uint jt = 0; jt < kv_end; jt += BC) {
        const bool more = jt + BC < kv_end;
        if (KV2 != 0u) {
            if (more) fetch(false, jt + BC, kv_end, kvh);
        } else {
            barrier(); // the previous tile's P V is done with kv
            put(false);
            barrier();
            fetch(true, jt, kv_end, kvh);
        }
        for (uint i = 0; i < SPS; i++) {
            const uint u = sg + 4u * i, t = u % NST, kp = u / NST; // tile t, head dims kp * HTP * 16 ..
            if (u >= NST * KP) break;
            const uint rs = t / KT, kt = t % KT, so = kp * BR * LS;
#ifdef CM
            CM_C s = CM_C(0.0);
            for (uint k = kp * HTP; k < (kp + 1u) * HTP; k++) {
                CM_A a;
                CM_B b;
                coopMatLoad(a, qs, 16u * rs * LQ + 8u * k, LQ, gl_CooperativeMatrixLayoutRowMajor);
                coopMatLoad(b, kv, 16u * kt * LQ + 8u * k, LQ, gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(a, b, s);
            }
            coopMatStore(s, ss, so + 16u * rs * LS + 16u * kt, LS, gl_CooperativeMatrixLayoutRowMajor);
#else
            for (uint e = 0; e < 8u; e++) {
                const uint qr = (16u * rs + lane % 16u) * LQ, kr = (16u * kt + lane / 16u + 2u * e) * LQ;
                float a = 0.0;
                for (uint d = 8u * kp * HTP; d < 8u * (kp + 1u) * HTP; d++) {
                    const vec2 x = vec2(qs[qr + d]), y = vec2(kv[kr + d]);
                    a = fma(x.x, y.x, fma(x.y, y.y, a));
                }
                ss[so + (16u * rs + lane % 16u) * LS + 16u * kt + lane / 16u + 2u * e] = a;
            }
#endif
        }
        barrier();
        {
            float sv[CPT];
            float mt = -1.0 / 0.0;
            for (uint i = 0; i < CPT; i++) {
                const uint key = jt + CPT * part + i;
                float a = 0.0;
                for (uint kp = 0; kp < KP; kp++) a += ss[kp * BR * LS + sr * LS + CPT * part + i];
                sv[i] = key <= qpos && key < kv_end ? a : -1.0 / 0.0;
                mt = max(mt, sv[i]);
            }
            for (uint x = 1u; x < TPR; x *= 2u) mt = max(mt, subgroupShuffleXor(mt, x));
            const float mn = max(m, mt), alpha = exp(m - mn);
            float sum = 0.0;
            for (uint i = 0; i < CPT; i += 2u) {
                // l sums the rounded values the P V product multiplies
                const f16vec2 e = f16vec2(exp(sv[i] - mn), exp(sv[i + 1u] - mn));
                sum += float(e.x) + float(e.y);
                ps[sr * LP + (CPT * part + i) / 2u] = e;
            }
            for (uint x = 1u; x < TPR; x *= 2u) sum += subgroupShuffleXor(sum, x);
            l = l * alpha + sum;
            m = mn;
            if (part == 0u) al[sr] = alpha;
        }
        put(true); // the S products are done with kv, the previous P V with V's buffer
        if (KV2 != 0u) {
            if (more) put(false);
        } else if (more) {
            fetch(false, jt + BC, kv_end, kvh);
        }
        barrier();
        if (KV2 != 0u && more) fetch(true, jt + BC, kv_end, kvh);
#ifdef CM
        for (int e = 0; e < rowm.length(); e++) {
            const float a = al[16u * ors + uint(rowm[e])];
            for (uint j = 0; j < NO; j++) o[j][e] *= a;
        }
        for (uint k = 0; k < KT; k++) {
            CM_A a;
            coopMatLoad(a, ps, 16u * ors * LP + 8u * k, LP, gl_CooperativeMatrixLayoutRowMajor);
            for (uint j = 0; j < NO; j++) {
                CM_B b;
                coopMatLoad(b, kv, VO + 16u * k * LQ + 8u * (oct + j), LQ, gl_CooperativeMatrixLayoutRowMajor);
                o[j] = coopMatMulAdd(a, b, o[j]);
            }
        }
#else
        {
            const uint pr = (16u * ors + lane % 16u) * LP;
            const float a = al[16u * ors + lane % 16u];
            for (uint j = 0; j < NO; j++)
                for (uint e = 0; e < 8u; e++) {
                    const uint col = 16u * (oct + j) + lane / 16u + 2u * e;
                    float acc = o[j][e] * a;
                    for (uint k = 0; k < BC; k++) acc = fma(float(ps[pr + k / 2u][k % 2u]), kv_at(VO + k * LQ, col), acc);
                    o[j][e] = acc;
                }
        }
#endif
    }
    barrier();
    if (part == 0u) al[sr] = 1.0 / l;
    barrier();
    // each subgroup's tiles through its own 16x16 staging tile (row-major)
    const uint so = 256u * sg;
    for (uint j = 0; j < NO; j++) {
#ifdef CM
        for (int e = 0; e < rowm.length(); e++) o[j][e] *= al[16u * ors + uint(rowm[e])];
        coopMatStore(o[j], ss, so, 16, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
#else
        for (uint e = 0; e < 8u; e++)
            ss[so + (lane % 16u) * 16u + lane / 16u + 2u * e] = o[j][e] * al[16u * ors + lane % 16u];
        barrier();
#endif
        out_tile(so, lane, p0, 16u * ors, 16u * (oct + j), np, kvh, G);
#ifdef CM
        subgroupMemoryBarrierShared();
        subgroupBarrier();
#else
        barrier();
#endif
    }
}
