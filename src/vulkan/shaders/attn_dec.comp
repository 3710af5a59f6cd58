#version 450
// ZN_OP_ATTN for a few query rows (decode) over the f16 KV cache (paged:
// kvtab.glsl, a lookup per key row), causal,
// grouped-query, head dim HD for K and V. One workgroup per (KV head, key
// split) computes every query row that reads that KV head: the G =
// n_head / n_head_kv heads of the group times the n_tok tokens (at most
// ROWS), so each K and V row is loaded once for all of them (attn.comp
// loads it once per query head). Per tile of TK keys:
//  scores: KL lanes per key, each dotting every KL-th 16-byte piece of the
//    key's row with all ROWS query rows (a key's row is read by consecutive
//    lanes: coalesced), reduced by shuffles;
//  softmax: RL lanes per row update its running max and sum (online);
//  P x V: thread (key group kg, dim group dg) adds its 4 value dims of the
//    keys kg, kg + KG, ... to all rows (8-byte loads, each used ROWS times);
//    the key groups are summed at the end.
// A tile's K and V are loaded into registers all at once, the next tile's
// K as soon as the scores are done and its V after P x V, so loads are in
// flight across the softmax and the barriers rather than one after another.
// Splits (flash-decoding) as in attn.comp: partial records merged by
// attn_merge.comp, an empty one writes l = 0. The keys per split are derived
// here from the position (step block), ceil(keys / n_split), so a recorded
// dispatch holds for any position and the host may pick any split count.
// seqs set: a batched decode step (seqs.glsl), one token per sequence,
// unsplit; the workgroup's z is the sequence, q and dst the step's rows.
// KVQ: a quantized cache (kvq.glsl), each value dequantized as it is loaded
// and kept as f16 in the same registers (as the CPU backend rounds them).
// rp set: one token per sequence, the ropes taken in (attn_rope.glsl); the
// new key's registers are filled from shared memory, those of the first
// tile once it is there.
#include "common.glsl"
#include "kvtab.glsl"
#include "seqs.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint ROWS = 8; // a power of two, at most WG / RL
layout(constant_id = 2) const uint HD = 128; // 64, 128 or 256
layout(constant_id = 3) const uint KVQ = 0;
layout(local_size_x_id = 0) in;

#include "kvq.glsl"
#include "attn_rope.glsl"

#define KL 4u  // lanes per key (scores)
#define RL 8u  // lanes per row (softmax)
const uint TK = 8192u / HD;          // keys per tile: 64 registers of K and V per thread
const uint KPT = TK / (WG / KL);     // keys per thread (scores)
const uint CPL = HD / 8u / KL;       // 16-byte pieces per lane and key
const uint DG = HD / 4u, KG = WG / DG, VPT = TK / KG; // P x V: dim groups, key groups, keys per thread
const uint QS = HD / 4u;             // vec4 per query row

layout(push_constant) uniform PC {
    uint64_t q, tab, dst, part, step; // tab: the KV block table (kvtab.glsl)
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split; // chunk: unused (derived)
    float scale;
    uint koff, voff, pos_bytes; // the layer's K / V rows in a position's row
    uint64_t seqs;       // 0: one sequence (the fields above)
    uint64_t rp, kraw, vraw; // rp 0: q is rotated, K and V are in the cache
    uint q_hs, q_rs;         // rp set: q's head and row strides in floats (0: packed)
} p;

uint64_t tab;    // the block table: p's, or the sequence's
uint row0;       // the first row of q and dst
uint npos;       // rp set: the new key's position, else past every key

shared vec4 qs[ROWS * QS]; // scaled query rows; at the end the output sums
shared float ss[ROWS * TK]; // scores, then probabilities
shared float alph[ROWS];    // this tile's rescale per row
shared float mrow[ROWS], lrow[ROWS];
shared uvec4 kn[HD / 8u]; // rp set: the new key (f16), as load_k holds a row
shared uvec2 vn[HD / 4u]; // and its value, as load_v does
shared float rinv[ROWS + 1u]; // the query rows' and the new key's 1 / RMS

uvec4 kr[KPT][CPL];
uvec2 vr[VPT];

// the table is read for live keys only: past the sequence's end it may
// name no block
void load_k(uint kvh, uint jt, uint nk) {
    const uint tid = gl_LocalInvocationID.x, sub = tid % KL;
    [[unroll]] for (uint i = 0; i < KPT; i++) {
        const uint key = i * (WG / KL) + tid / KL;
        [[unroll]] for (uint c = 0; c < CPL; c++) kr[i][c] = uvec4(0);
        if (key < nk && jt + key == npos) {
            [[unroll]] for (uint c = 0; c < CPL; c++) kr[i][c] = kn[c * KL + sub];
        } else if (key < nk && KVQ != 0u) {
            const uint64_t row = kv_row(tab, jt + key, p.pos_bytes, p.koff);
            [[unroll]] for (uint c = 0; c < CPL; c++) {
                const uint e = kvh * HD + 8u * (c * KL + sub);
                const vec4 a = kvq4(row, e), b = kvq4(row, e + 4u);
                kr[i][c] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
            }
        } else if (key < nk) {
            const uint64_t row = kv_row(tab, jt + key, p.pos_bytes, p.koff) + 2ul * kvh * HD;
            [[unroll]] for (uint c = 0; c < CPL; c++) kr[i][c] = U32x4(row + 16ul * (c * KL + sub)).v[0];
        }
    }
}

// masked keys stay 0: their weight is 0, and a row not written yet may hold NaN
void load_v(uint kvh, uint jt, uint nk) {
    const uint tid = gl_LocalInvocationID.x, kg = tid / DG, dg = tid % DG;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        const uint key = kg + i * KG;
        vr[i] = uvec2(0);
        if (key < nk && jt + key == npos) {
            vr[i] = vn[dg];
        } else if (key < nk && KVQ != 0u) {
            const vec4 v = kvq4(kv_row(tab, jt + key, p.pos_bytes, p.voff), kvh * HD + 4u * dg);
            vr[i] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
        } else if (key < nk) {
            vr[i] = U32x2(kv_row(tab, jt + key, p.pos_bytes, p.voff) + 2ul * (kvh * HD + 4u * dg)).v[0];
        }
    }
}

// rp set (one token): the query rows normed, rotated and scaled into qs;
// the new key (normed, rotated) and value into kn / vn where this
// workgroup's keys hold it (own), and into the cache by this workgroup,
// the only one of its KV head that reads that position. The caller's
// barrier makes them visible.
void rope_in(uint kvh, bool own) {
    const RopeP rp = RopePs(p.rp).v[0];
    const uint tid = gl_LocalInvocationID.x, G = p.n_head / p.n_head_kv;
    const float pos = float(npos);
    const uint64_t kh = p.kraw + 4ul * (row0 * p.n_head_kv + kvh) * HD;
    // rows 0 .. G - 1 the query heads, G the key: a subgroup each
    for (uint r = gl_SubgroupID; r <= G; r += gl_NumSubgroups) {
        const bool k = r == G;
        const float inv = k ? ar_inv(kh, rp.nwk, HD, rp.eps_k)
                            : ar_inv(ar_qhead(p.q, row0, kvh * G + r, HD, p.n_head, p.q_hs, p.q_rs), rp.nwq, HD, rp.eps_q);
        if (subgroupElect()) rinv[r] = inv;
    }
    barrier();
    for (uint i = tid; i < ROWS * QS; i += WG) {
        const uint r = i / QS, c = i % QS;
        vec4 v = vec4(0.0);
        if (r < G) {
            const uint64_t src = ar_qhead(p.q, row0, kvh * G + r, HD, p.n_head, p.q_hs, p.q_rs);
            RopeTh th = ROPE_TH0;
            for (uint e = 0; e < 4u; e++) v[e] = ar_val(src, rp.nwq, rinv[r], 4u * c + e, pos, rp, th);
        }
        qs[i] = v * p.scale;
    }
    if (!own) return;
    const uint64_t kc = kv_row(tab, npos, p.pos_bytes, p.koff) + 2ul * kvh * HD;
    const uint64_t vc = kv_row(tab, npos, p.pos_bytes, p.voff) + 2ul * kvh * HD;
    for (uint i = tid; i < HD / 8u; i += WG) {
        uint w[4];
        RopeTh th = ROPE_TH0;
        for (uint e = 0; e < 4u; e++) {
            const float a0 = ar_val(kh, rp.nwk, rinv[G], 8u * i + 2u * e, pos, rp, th);
            const vec2 a = vec2(a0, ar_val(kh, rp.nwk, rinv[G], 8u * i + 2u * e + 1u, pos, rp, th));
            w[e] = packHalf2x16(a);
        }
        kn[i] = uvec4(w[0], w[1], w[2], w[3]);
        W32x4(kc + 16ul * i).v[0] = kn[i];
    }
    const uint64_t vh = p.vraw + 4ul * (row0 * p.n_head_kv + kvh) * HD;
    for (uint i = tid; i < HD / 4u; i += WG) {
        const vec4 a = F32x4(vh + 16ul * i).v[0];
        vn[i] = uvec2(packHalf2x16(a.xy), packHalf2x16(a.zw));
        W32x2(vc + 8ul * i).v[0] = vn[i];
    }
}

void main() {
    const uint kvh = gl_WorkGroupID.x, sp = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint G = p.n_head / p.n_head_kv, R = G * p.n_tok;
    uint n_past = p.step != 0 ? U32(p.step).v[0] : p.n_past;
    tab = p.tab, row0 = 0u;
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[gl_WorkGroupID.z];
        tab = e.a, row0 = e.row, n_past = e.n_past;
    }
    const uint n_kv = n_past + p.n_tok;
    npos = p.rp != 0 ? n_past : 0xffffffffu;
    const uint chunk = (n_kv + p.n_split - 1u) / p.n_split;
    const uint j0 = sp * chunk, j1 = min(j0 + chunk, n_kv);
    if (j0 < j1) {
        load_k(kvh, j0, min(TK, j1 - j0));
        load_v(kvh, j0, min(TK, j1 - j0));
    }

    // row r: token r / G, head kvh * G + r % G
    if (p.rp != 0) {
        rope_in(kvh, j0 <= npos && npos < j1);
        barrier();
    } else {
        for (uint i = tid; i < ROWS * QS; i += WG) {
            const uint r = i / QS, c = i % QS;
            vec4 v = vec4(0.0);
            if (r < R) {
                const uint b = ((row0 + r / G) * p.n_head + kvh * G + r % G) * HD + 4u * c;
                v = vec4(F32(p.q).v[b], F32(p.q).v[b + 1u], F32(p.q).v[b + 2u], F32(p.q).v[b + 3u]) * p.scale;
            }
            qs[i] = v;
        }
        barrier();
    }
    if (p.rp != 0 && j0 <= npos && npos < j1) { // the first tile's registers of the new key
        [[unroll]] for (uint i = 0; i < KPT; i++)
            if (j0 + i * (WG / KL) + tid / KL == npos)
                [[unroll]] for (uint c = 0; c < CPL; c++) kr[i][c] = kn[c * KL + tid % KL];
        [[unroll]] for (uint i = 0; i < VPT; i++)
            if (j0 + tid / DG + i * KG == npos) vr[i] = vn[tid % DG];
    }

    const uint kg = tid / DG, dg = tid % DG, sub = tid % KL, rr = tid / RL, rl = tid % RL;
    float m = -1.0 / 0.0, l = 0.0; // row rr's running max and sum (softmax lanes)
    vec4 o[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; r++) o[r] = vec4(0.0);

    for (uint jt = j0; jt < j1; jt += TK) {
        const uint nk = min(TK, j1 - jt), nn = jt + TK < j1 ? min(TK, j1 - jt - TK) : 0u;
        float acc[KPT][ROWS];
        [[unroll]] for (uint i = 0; i < KPT; i++)
            [[unroll]] for (uint r = 0; r < ROWS; r++) acc[i][r] = 0.0;
        [[unroll]] for (uint c = 0; c < CPL; c++) {
            const uint q2 = 2u * (c * KL + sub);
            [[unroll]] for (uint r = 0; r < ROWS; r++) {
                const vec4 qa = qs[r * QS + q2], qb = qs[r * QS + q2 + 1u];
                [[unroll]] for (uint i = 0; i < KPT; i++) {
                    const uvec4 w = kr[i][c];
                    acc[i][r] += dot(vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)), qa) +
                                 dot(vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w)), qb);
                }
            }
        }
        if (nn != 0u) load_k(kvh, jt + TK, nn);
        [[unroll]] for (uint i = 0; i < KPT; i++) {
            const uint key = i * (WG / KL) + tid / KL;
            [[unroll]] for (uint r = 0; r < ROWS; r++) {
                float a = acc[i][r];
                a += subgroupShuffleXor(a, 1u);
                a += subgroupShuffleXor(a, 2u);
                const bool ok = key < nk && r < R && jt + key <= n_past + r / G;
                if (r % KL == sub) ss[r * TK + key] = ok ? a : -1.0 / 0.0;
            }
        }
        barrier();
        if (rr < ROWS) { // whole groups of RL lanes: ROWS * RL is a multiple of RL
            float mx = -1.0 / 0.0;
            for (uint k = rl; k < TK; k += RL) mx = max(mx, ss[rr * TK + k]);
            mx = max(mx, subgroupShuffleXor(mx, 1u));
            mx = max(mx, subgroupShuffleXor(mx, 2u));
            mx = max(mx, subgroupShuffleXor(mx, 4u));
            const float mn = max(m, mx);
            const bool none = mn == -1.0 / 0.0; // no key yet (a masked row)
            float s = 0.0;
            for (uint k = rl; k < TK; k += RL) {
                const float e = none ? 0.0 : exp(ss[rr * TK + k] - mn);
                ss[rr * TK + k] = e;
                s += e;
            }
            s += subgroupShuffleXor(s, 1u);
            s += subgroupShuffleXor(s, 2u);
            s += subgroupShuffleXor(s, 4u);
            const float alpha = none ? 1.0 : exp(m - mn);
            l = l * alpha + s;
            m = mn;
            if (rl == 0u) alph[rr] = alpha;
        }
        barrier();
        [[unroll]] for (uint r = 0; r < ROWS; r++) o[r] *= alph[r];
        [[unroll]] for (uint i = 0; i < VPT; i++) {
            const vec4 v = vec4(unpackHalf2x16(vr[i].x), unpackHalf2x16(vr[i].y));
            [[unroll]] for (uint r = 0; r < ROWS; r++) o[r] += ss[r * TK + kg + i * KG] * v;
        }
        if (nn != 0u) load_v(kvh, jt + TK, nn);
        barrier();
    }
    if (rr < ROWS && rl == 0u) { mrow[rr] = m; lrow[rr] = l; }
    [[unroll]] for (uint g = 0; g < KG; g++) { // the key groups' sums, in order
        if (kg == g) {
            [[unroll]] for (uint r = 0; r < ROWS; r++) qs[r * DG + dg] = g == 0u ? o[r] : qs[r * DG + dg] + o[r];
        }
        barrier();
    }
    for (uint i = tid; i < R * DG; i += WG) {
        const uint r = i / DG, d = 4u * (i % DG), t = r / G, h = kvh * G + r % G;
        const vec4 v = qs[i];
        if (p.n_split == 1u) {
            const uint ob = ((row0 + t) * p.n_head + h) * HD + d;
            for (uint c = 0; c < 4u; c++) F32(p.dst).v[ob + c] = v[c] / lrow[r];
        } else {
            // partial record: [m, l, o[HD]] at ((t * n_head + h) * n_split + sp)
            const uint pb = ((t * p.n_head + h) * p.n_split + sp) * (HD + 2u);
            if (d == 0u) { F32(p.part).v[pb] = mrow[r]; F32(p.part).v[pb + 1u] = lrow[r]; }
            for (uint c = 0; c < 4u; c++) F32(p.part).v[pb + 2u + d + c] = v[c];
        }
    }
}
