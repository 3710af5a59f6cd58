#version 450
// ZN_OP_ATTN over the f16 KV cache (paged: kvtab.glsl), causal, grouped-query. One workgroup per
// (head, query row, key split), WG keys per tile with an online softmax
// across tiles. Scores: 8 lanes per key, each dotting hd_k/8 dims with
// 16-byte loads, then a shuffle reduction (coalesced: a key's row is read
// by consecutive lanes). Output: thread (key group kg, dim group dg) sums
// 4 value dims over the keys kg, kg + KG, ...; the key groups are added at
// the end. With n_split > 1 (flash-decoding) each split writes its partial
// (max, sum, unnormalised output) and attn_merge.comp combines them. The
// splits take chunk keys each, the last ones none when the split count
// (a power of two, vk_ops.c) is more than the keys need: such an empty split
// writes l = 0, which the merge skips. So the recorded dispatch holds for
// every position of its split count; n_past comes from the step block
// (vk_ops.h vkop_step) when step is set. chunk 0: ceil(keys / n_split), for
// any split count (the rule of attn_dec.comp, vk_ops.c vkop_attn_splits).
// KVQ: the cache in Q8_0 or Q4_0 blocks (kvq.glsl), dequantized as read.
// seqs set: a batched decode step (seqs.glsl), one token per sequence,
// unsplit; the workgroup's z is the sequence, q and dst are the step's
// whole rows.
// rp set: one token per sequence, the ropes taken in (attn_rope.glsl); of
// a KV head's G query heads the first stores the new key.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint KVQ = 0;
layout(local_size_x_id = 0) in;

#include "kvq.glsl"
#include "kvtab.glsl"
#include "seqs.glsl"
#include "attn_rope.glsl"

#define MAXD 256

layout(push_constant) uniform PC {
    uint64_t q, tab, dst, part, step;     // tab: the KV block table (kvtab.glsl)
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split;                  // chunk: keys per split (0: derived)
    float scale;
    uint koff, voff, pos_bytes;           // the layer's K / V rows in a position's row
    uint64_t seqs;                        // 0: one sequence (the fields above)
    uint64_t rp, kraw, vraw;              // rp 0: q is rotated, K and V are in the cache
    uint q_hs, q_rs;                      // rp set: q's head and row strides in floats (0: packed)
} p;

shared float qs[MAXD];
shared float ps[WG];
shared float red[32];
shared vec4 osum[WG];
shared float kn[MAXD], vn[MAXD]; // rp set: the new key and value (f16 values)

float wg_max(float v) {
    v = subgroupMax(v);
    if (gl_NumSubgroups == 1) return v;
    if (gl_SubgroupInvocationID == 0) red[gl_SubgroupID] = v;
    barrier();
    float m = red[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) m = max(m, red[i]);
    barrier();
    return m;
}

float wg_add(float v) {
    v = subgroupAdd(v);
    if (gl_NumSubgroups == 1) return v;
    if (gl_SubgroupInvocationID == 0) red[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; i++) s += red[i];
    barrier();
    return s;
}

vec4 h4(uint64_t a) { // 4 halves at an 8-byte aligned address
    uvec2 w = U32x2(a).v[0];
    return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}

#define VU 4u // P x V: keys per thread whose values are loaded together

// Value dims 4 dg .. 4 dg + 3 of key j of KV head kvh: the new key's from
// shared memory (npos), else the cache's.
vec4 v_at(uint64_t tab, uint j, uint npos, uint kvh, uint dg) {
    if (j == npos) return vec4(vn[4u * dg], vn[4u * dg + 1u], vn[4u * dg + 2u], vn[4u * dg + 3u]);
    const uint64_t vr = kv_row(tab, j, p.pos_bytes, p.voff);
    return KVQ != 0u ? kvq4(vr, kvh * p.hd_v + 4u * dg) : h4(vr + 2ul * (kvh * p.hd_v + 4u * dg));
}

void main() {
    const uint h = gl_WorkGroupID.x, r = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint kvh = h / (p.n_head / p.n_head_kv);
    uint sp = gl_WorkGroupID.z, qr = r; // qr: the row of q and dst
    uint n_past = p.step != 0 ? U32(p.step).v[0] : p.n_past;
    uint64_t tab = p.tab;
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[gl_WorkGroupID.z];
        sp = 0u, qr = e.row, n_past = e.n_past, tab = e.a;
    }
    const uint end = n_past + r + 1u;
    const uint chunk = p.chunk != 0u ? p.chunk : (n_past + p.n_tok + p.n_split - 1u) / p.n_split;
    const uint j0 = sp * chunk, j1 = min(j0 + chunk, end);

    const uint npos = p.rp != 0 ? n_past + r : 0xffffffffu; // rp set: the new key's position
    const uint64_t qh = ar_qhead(p.q, qr, h, p.hd_k, p.n_head, p.q_hs, p.q_rs);
    if (p.rp != 0) {
        const RopeP rp = RopePs(p.rp).v[0];
        const float pos = float(npos);
        const float qi = ar_inv(qh, rp.nwq, p.hd_k, rp.eps_q);
        RopeTh th = ROPE_TH0;
        for (uint d = tid; d < p.hd_k; d += WG) qs[d] = ar_val(qh, rp.nwq, qi, d, pos, rp, th) * p.scale;
        if (j0 <= npos && npos < j1) { // this workgroup reads the new key
            const uint64_t kh = p.kraw + 4ul * (qr * p.n_head_kv + kvh) * p.hd_k;
            const uint64_t vh = p.vraw + 4ul * (qr * p.n_head_kv + kvh) * p.hd_v;
            const float ki = ar_inv(kh, rp.nwk, p.hd_k, rp.eps_k);
            const bool store = h % (p.n_head / p.n_head_kv) == 0u;
            const uint64_t kc = kv_row(tab, npos, p.pos_bytes, p.koff) + 2ul * kvh * p.hd_k;
            const uint64_t vc = kv_row(tab, npos, p.pos_bytes, p.voff) + 2ul * kvh * p.hd_v;
            for (uint d = tid; d < p.hd_k; d += WG) {
                const float16_t v = float16_t(ar_val(kh, rp.nwk, ki, d, pos, rp, th));
                kn[d] = float(v);
                if (store) F16(kc).v[d] = v;
            }
            for (uint d = tid; d < p.hd_v; d += WG) {
                const float16_t v = float16_t(F32(vh).v[d]);
                vn[d] = float(v);
                if (store) F16(vc).v[d] = v;
            }
        }
    } else {
        for (uint d = tid; d < p.hd_k; d += WG) qs[d] = F32(qh).v[d] * p.scale;
    }
    barrier();

    const uint DG = p.hd_v / 4u, KG = WG / DG, kg = tid / DG, dg = tid % DG; // output split (hd_v % 4 == 0)
    const uint sub = tid % 8u, per = p.hd_k / 8u;                              // score split (hd_k % 32 == 0)
    float m = -1.0 / 0.0, l = 0.0;
    vec4 o = vec4(0.0);
    for (uint jt = j0; jt < j1; jt += WG) {
        const uint nk = min(WG, j1 - jt);
        for (uint kb = 0; kb < WG; kb += WG / 8u) {
            const uint key = kb + tid / 8u;
            float a = 0.0;
            if (key < nk && jt + key == npos) {
                for (uint d = 0; d < per; d += 4u) {
                    const uint qd = sub * per + d;
                    a += dot(vec4(kn[qd], kn[qd + 1u], kn[qd + 2u], kn[qd + 3u]),
                             vec4(qs[qd], qs[qd + 1u], qs[qd + 2u], qs[qd + 3u]));
                }
            } else if (key < nk) {
                // the lane's pieces of the key loaded before the first is
                // used (a bound known here: their loads go out together)
                const uint64_t kq = kv_row(tab, jt + key, p.pos_bytes, p.koff);
                const uint64_t kr = kq + 2ul * (kvh * p.hd_k + sub * per);
                vec4 kv[MAXD / 32u];
                [[unroll]] for (uint i = 0; i < MAXD / 32u; i++)
                    if (4u * i < per) kv[i] = KVQ != 0u ? kvq4(kq, kvh * p.hd_k + sub * per + 4u * i) : h4(kr + 8u * i);
                [[unroll]] for (uint i = 0; i < MAXD / 32u; i++)
                    if (4u * i < per) {
                        const uint qd = sub * per + 4u * i;
                        a += dot(kv[i], vec4(qs[qd], qs[qd + 1u], qs[qd + 2u], qs[qd + 3u]));
                    }
            }
            a += subgroupShuffleXor(a, 1u);
            a += subgroupShuffleXor(a, 2u);
            a += subgroupShuffleXor(a, 4u);
            if (sub == 0u) ps[key] = key < nk ? a : -1.0 / 0.0;
        }
        barrier();
        const float s = ps[tid];
        const float mn = max(m, wg_max(s));
        const float e = tid < nk ? exp(s - mn) : 0.0;
        const float alpha = exp(m - mn);
        l = l * alpha + wg_add(e);
        o *= alpha;
        m = mn;
        ps[tid] = e;
        barrier();
        if (kg < KG) {
            // VU keys' values loaded before any is added (in the same
            // order as one at a time: the same sums), so that a thread's
            // loads are in flight together, not one latency per key
            uint jj = kg;
            for (; jj + (VU - 1u) * KG < nk; jj += VU * KG) {
                vec4 v[VU];
                [[unroll]] for (uint u = 0; u < VU; u++) v[u] = v_at(tab, jt + jj + u * KG, npos, kvh, dg);
                [[unroll]] for (uint u = 0; u < VU; u++) o += ps[jj + u * KG] * v[u];
            }
            for (; jj < nk; jj += KG) o += ps[jj] * v_at(tab, jt + jj, npos, kvh, dg);
        }
        barrier();
    }
    osum[tid] = o;
    barrier();
    if (tid >= DG) return;
    for (uint g = 1; g < KG; g++) o += osum[g * DG + tid];
    const uint d = 4u * tid;
    if (p.n_split == 1u) {
        const uint ob = qr * p.n_head * p.hd_v + h * p.hd_v + d;
        for (uint i = 0; i < 4u; i++) F32(p.dst).v[ob + i] = o[i] / l;
    } else {
        // partial record: [m, l, o[hd_v]] at ((r * n_head + h) * n_split + sp)
        const uint pb = ((r * p.n_head + h) * p.n_split + sp) * (p.hd_v + 2u);
        if (tid == 0) { F32(p.part).v[pb] = m; F32(p.part).v[pb + 1u] = l; }
        for (uint i = 0; i < 4u; i++) F32(p.part).v[pb + 2u + d + i] = o[i];
    }
}
