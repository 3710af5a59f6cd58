// Decode attention taking in the ropes before it (vk_attn.h vkop_attn.rp):
// the per-head RMS norm and rope of its query rows and of the new key, and
// the new key's and value's store into the cache, so that a decode step's
// attention layer runs in one level fewer. p.q then holds the query rows
// before the norm, p.kraw / p.vraw the token's K and V rows (n_head_kv
// heads each, packed), p.rp the layer's RopeP. The kernels keep the new
// position's K and V in shared memory, rounded to f16 as the cache holds
// them, and use them in place of the cache's row (nobody has written it
// yet); one workgroup per KV head stores that row for later steps. Values
// as rope.comp computes them, but for the order of the norm's sum.
#include "rope.glsl"

struct RopeP {
    uint64_t nwq, nwk, ff; // the norms' weights (0: no norm), the frequency factors (0: none)
    float theta_scale, freq_scale, eps_q, eps_k;
    uint n_rot, mode, secs, pad;
};
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer RopePs { RopeP v[]; };
// the new row's stores (common.glsl's 16- and 8-byte types are readonly)
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer W32x4 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer W32x2 { uvec2 v[]; };

// The query head h of row r before its norm: q_hs / q_rs floats apart
// (0: heads of hd packed in rows of n_head of them).
uint64_t ar_qhead(uint64_t q, uint r, uint h, uint hd, uint n_head, uint q_hs, uint q_rs) {
    const uint hs = q_hs != 0u ? q_hs : hd, rs = q_rs != 0u ? q_rs : n_head * hd;
    return q + 4ul * (uint64_t(r) * rs + uint64_t(h) * hs);
}

// 1 / RMS of the hd floats at src (1 without a norm), by the calling
// subgroup alone (no barrier): each subgroup computes those it needs.
float ar_inv(uint64_t src, uint64_t nw, uint hd, float eps) {
    if (nw == 0) return 1.0;
    float s = 0.0;
    for (uint d = gl_SubgroupInvocationID; d < hd; d += gl_SubgroupSize) {
        const float a = F32(src).v[d];
        s = fma(a, a, s);
    }
    return 1.0 / sqrt(subgroupAdd(s) / float(hd) + eps);
}

// Dim d of the head at src, normed (inv * nw) and rotated at pos: as
// rope.comp writes it. th carries the angle between a thread's dims.
float ar_val(uint64_t src, uint64_t nw, float inv, uint d, float pos, RopeP rp, inout RopeTh th) {
    float a = F32(src).v[d];
    if (nw != 0) a *= inv * F32(nw).v[d];
    if (d >= rp.n_rot) return a;
    const uint half_ = rp.n_rot / 2u;
    const bool first = rp.mode == ROPE_NORM ? d % 2u == 0u : d < half_;
    const uint i = rp.mode == ROPE_NORM ? d / 2u : first ? d : d - half_;
    const uint o = rp.mode == ROPE_NORM ? d ^ 1u : first ? d + half_ : d - half_;
    float b = F32(src).v[o];
    if (nw != 0) b *= inv * F32(nw).v[o];
    const vec2 cs = rope_cs_at(th, i, pos, rp.mode, rp.secs, rp.theta_scale, rp.freq_scale, rp.ff);
    return first ? a * cs.x - b * cs.y : b * cs.y + a * cs.x;
}
