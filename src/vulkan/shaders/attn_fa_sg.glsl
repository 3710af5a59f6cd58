// ZN_OP_ATTN for prefill on 16x16x16 matrix products (f16 in, f32
// accumulate), each subgroup owning 16 whole rows as FlashAttention-2
// splits the work. Included by attn_fa_sg.comp (CM defined: KHR cooperative
// matrices, subgroups of 32) and attn_fa_sge.comp (each tile product in
// scalar code by a "virtual subgroup" of 32 threads: the tests of the
// tiling on devices without cooperative matrices).
//
// attn_fa_cm.glsl spreads one S tile over all its subgroups and meets at a
// workgroup barrier four times a tile: with few rows per workgroup, each
// subgroup does a handful of products between barriers. Here a workgroup of
// NSG subgroups owns BR = 16 NSG rows of the (token, head) pairs that share
// one KV head (pair i = token * G + g, as there). Subgroup s keeps the
// f16 Q of rows 16 s .. in registers and its O in accumulators, and per
// tile of BC keys computes its S rows (KT x HT products), their softmax
// and O = O * alpha + P V (KT x HT products) alone, meeting its subgroup
// only; the workgroup meets twice a tile, to swap in the next K and V
// tiles, which were loaded into registers while this tile's products ran.
// Tiles past a subgroup's last query position are skipped by it.
// Every constant loop of the matrix path carries [[unroll]] and the S tiles
// are KT independent chains: the driver otherwise kept loops over arrays
// of matrices. Together they made an 8B's pp4096 6,867 -> 8,259 tok/s on
// an H100 (bench/results/2026-12-06-s31.md, call 3).
// The first tile holds key 0, which no row masks, so every row's max is
// finite from then on (rows past the last pair see Q = 0 and are dropped).
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "kvtab.glsl"

layout(constant_id = 0) const uint WG = 128;   // NSG subgroups of 32
layout(constant_id = 1) const uint HD = 128;   // head dim (k and v): 64 or 128
layout(constant_id = 2) const uint BC = 32;    // keys per tile (multiple of 32, 2 BC >= BR)
layout(constant_id = 3) const uint KVQ = 0;    // the cache's format (kvq.glsl), 0: f16
layout(local_size_x_id = 0) in;
#include "kvq.glsl"

layout(push_constant) uniform PC {
    uint64_t q, tab, dst, part, step;  // as attn_fa_cm.glsl's
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split;
    float scale;
    uint koff, voff, pos_bytes;
} p;

const uint NSG = WG / 32u, BR = 16u * NSG;
const uint LQ = (HD + 8u) / 2u;   // f16vec2 per Q / K / V row (8 halves of padding against bank conflicts)
const uint LP = (BC + 8u) / 2u;   // f16vec2 per P row
const uint LS = BC + 4u;          // floats per S row
const uint KT = BC / 16u, HT = HD / 16u;
const uint CPT = BC / 2u;         // softmax: two lanes per row, CPT columns each

shared f16vec2 kv[2u * BC * LQ];  // K, then V at VO; first Q on its way to registers
const uint VO = BC * LQ;
shared float ss[NSG * 16u * LS];  // per subgroup: its S rows; at the end its 16x16 staging tile
shared f16vec2 ps[NSG * 16u * LP];
shared float al[BR];              // per row: alpha of this tile; at the end 1 / l

#ifdef CM
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define SG_SYNC() subgroupMemoryBarrierShared(); subgroupBarrier()
#else
// Virtual lane l holds elements (row l % 16, column l / 16 + 2 e), e < 8;
// a virtual subgroup spans several real ones: it meets at workgroup barriers.
#define SG_SYNC() barrier()
#endif

#define FA_UNROLL [[unroll]]
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
    // this subgroup's rows: none past the last pair (idle), else keys up to last
    const bool idle = p0 + 16u * sg >= np;
    const uint last = idle ? 0u : n_past + (min(p0 + 16u * sg + 16u, np) - 1u) / G;

    for (uint w = tid; w < BR * HD / 4u; w += WG) {
        const uint r = w / (HD / 4u), c4 = w % (HD / 4u);
        const vec4 x = q_at(b, p0 + r, c4);
        kv[r * LQ + 2u * c4] = f16vec2(x.xy);
        kv[r * LQ + 2u * c4 + 1u] = f16vec2(x.zw);
    }
#ifdef CM
    for (uint i = tid; i < 256u; i += WG) ss[i] = float(i / 16u);
#endif
    barrier();
#ifdef CM
    CM_C rowm;
    coopMatLoad(rowm, ss, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    CM_A qa[HT];
    [[unroll]] for (uint k = 0; k < HT; k++) coopMatLoad(qa[k], kv, 16u * sg * LQ + 8u * k, LQ, gl_CooperativeMatrixLayoutRowMajor);
#else
    f16vec2 qe[HD / 2u];
    for (uint d = 0; d < HD / 2u; d++) qe[d] = kv[(16u * sg + lane % 16u) * LQ + d];
#endif
    barrier(); // Q and rowm are read: kv and ss are free
    fetch(false, 0u, kv_end, kvh);
    fetch(true, 0u, kv_end, kvh);
    put(false);
    put(true);
    barrier();

    // softmax role: row sr of the subgroup's slice, columns CPT * hf ..
    const uint sr = lane / 2u, hf = lane % 2u, row = 16u * sg + sr, qpos = n_past + (p0 + row) / G;
    const uint sb = sg * 16u * LS, pb = sg * 16u * LP;
    float m = -1.0 / 0.0, l = 0.0;
#ifdef CM
    CM_C o[HT];
    [[unroll]] for (uint j = 0; j < HT; j++) o[j] = CM_C(0.0);
#else
    float o[HT][8];
    for (uint j = 0; j < HT; j++)
        for (uint e = 0; e < 8u; e++) o[j][e] = 0.0;
#endif

    for (uint jt = 0; jt < kv_end; jt += BC) {
        const bool more = jt + BC < kv_end, act = !idle && jt <= last;
        if (more) {
            fetch(false, jt + BC, kv_end, kvh);
            fetch(true, jt + BC, kv_end, kvh);
        }
        if (act) {
#ifdef CM
            {
                CM_C s[KT]; // KT independent chains
                [[unroll]] for (uint kt = 0; kt < KT; kt++) s[kt] = CM_C(0.0);
                [[unroll]] for (uint k = 0; k < HT; k++)
                    [[unroll]] for (uint kt = 0; kt < KT; kt++) {
                        CM_B b;
                        coopMatLoad(b, kv, 16u * kt * LQ + 8u * k, LQ, gl_CooperativeMatrixLayoutColumnMajor);
                        s[kt] = coopMatMulAdd(qa[k], b, s[kt]);
                    }
                [[unroll]] for (uint kt = 0; kt < KT; kt++)
                    coopMatStore(s[kt], ss, sb + 16u * kt, LS, gl_CooperativeMatrixLayoutRowMajor);
            }
#else
            for (uint kt = 0; kt < KT; kt++)
                for (uint e = 0; e < 8u; e++) {
                    const uint col = 16u * kt + lane / 16u + 2u * e, kr = col * LQ;
                    float a = 0.0;
                    for (uint d = 0; d < HD / 2u; d++) {
                        const vec2 x = vec2(qe[d]), y = vec2(kv[kr + d]);
                        a = fma(x.x, y.x, fma(x.y, y.y, a));
                    }
                    ss[sb + (lane % 16u) * LS + col] = a;
                }
#endif
        }
        SG_SYNC();
        if (act) {
            float sv[CPT];
            float mt = -1.0 / 0.0;
            [[unroll]] for (uint i = 0; i < CPT; i++) {
                const uint key = jt + CPT * hf + i;
                sv[i] = key <= qpos && key < kv_end ? ss[sb + sr * LS + CPT * hf + i] : -1.0 / 0.0;
                mt = max(mt, sv[i]);
            }
            mt = max(mt, subgroupShuffleXor(mt, 1u));
            const float mn = max(m, mt), alpha = exp(m - mn);
            float sum = 0.0;
            [[unroll]] for (uint i = 0; i < CPT; i += 2u) {
                // l sums the rounded values the P V product multiplies
                const f16vec2 e = f16vec2(exp(sv[i] - mn), exp(sv[i + 1u] - mn));
                sum += float(e.x) + float(e.y);
                ps[pb + sr * LP + (CPT * hf + i) / 2u] = e;
            }
            sum += subgroupShuffleXor(sum, 1u);
            l = l * alpha + sum;
            m = mn;
            if (hf == 0u) al[row] = alpha;
        }
        SG_SYNC();
        if (act) {
#ifdef CM
            [[unroll]] for (int e = 0; e < rowm.length(); e++) {
                const float a = al[16u * sg + uint(rowm[e])];
                [[unroll]] for (uint j = 0; j < HT; j++) o[j][e] *= a;
            }
            [[unroll]] for (uint k = 0; k < KT; k++) {
                CM_A a;
                coopMatLoad(a, ps, pb + 8u * k, LP, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (uint j = 0; j < HT; j++) {
                    CM_B b;
                    coopMatLoad(b, kv, VO + 16u * k * LQ + 8u * j, LQ, gl_CooperativeMatrixLayoutRowMajor);
                    o[j] = coopMatMulAdd(a, b, o[j]);
                }
            }
#else
            const uint pr = pb + (lane % 16u) * LP;
            const float a = al[16u * sg + lane % 16u];
            for (uint j = 0; j < HT; j++)
                for (uint e = 0; e < 8u; e++) {
                    const uint col = 16u * j + lane / 16u + 2u * e;
                    float acc = o[j][e] * a;
                    for (uint k = 0; k < BC; k++) acc = fma(float(ps[pr + k / 2u][k % 2u]), float(kv[VO + k * LQ + col / 2u][col % 2u]), acc);
                    o[j][e] = acc;
                }
#endif
        }
        if (!more) break;
        barrier(); // every subgroup is done with this tile's K and V
        put(false);
        put(true);
        barrier();
    }
    if (hf == 0u) al[row] = idle ? 0.0 : 1.0 / l;
    SG_SYNC();
    // each subgroup's tiles through its own 16x16 staging tile (row-major)
    [[unroll]] for (uint j = 0; j < HT; j++) {
#ifdef CM
        [[unroll]] for (int e = 0; e < rowm.length(); e++) o[j][e] *= al[16u * sg + uint(rowm[e])];
        coopMatStore(o[j], ss, sb, 16, gl_CooperativeMatrixLayoutRowMajor);
#else
        for (uint e = 0; e < 8u; e++)
            ss[sb + (lane % 16u) * 16u + lane / 16u + 2u * e] = o[j][e] * al[16u * sg + lane % 16u];
#endif
        SG_SYNC();
        out_tile(sb, lane, p0, 16u * sg, 16u * j, np, kvh, G);
        SG_SYNC();
    }
}
