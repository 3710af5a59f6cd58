#version 450
// ZN_OP_ROPE: one workgroup per (token, head), one thread per rotated pair
// (the angle: rope.glsl). Fusions (vk_ops.h
// vkop_rope): the per-head RMS norm that produced x (read src, scale by
// 1/sqrt(mean(x^2) + eps) * nw[d] first), and the KV store that consumes it
// (write the head as f16 into the K cache row n_past + r instead of back to
// x, and copy the token's V row into the V cache: the layer's rows of the
// paged cache, kvtab.glsl). n_past comes from the step
// block (vk_ops.h vkop_step) when step is set, so a recorded decode step can
// be replayed at later positions. seqs set: a batched decode step
// (seqs.glsl), row r the one token of sequence r of the table, at its row
// of x / src / v, its position, into its cache (tab then only says
// whether to store).
#include "common.glsl"
#include "kvtab.glsl"
#include "seqs.glsl"
#include "rope.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define NV 1
#include "reduce.glsl"

layout(push_constant) uniform PC {
    uint64_t x, src, ff, nw, tab, v;      // ff, nw, tab (the KV block table: store K and V), v: 0 = unused
    uint64_t step;                        // 0: n_past below
    uint n_tok, n_heads, head_dim, n_rot, row_stride, mode, n_past;
    uint secs, vdim;                      // secs: the 4 IMRoPE sections, 8 bits each
    float theta_scale, freq_scale, eps;
    uint koff, voff, pos_bytes;           // the layer's K / V rows in a position's row
    uint64_t seqs;                        // 0: one sequence (the fields above)
} p;

uint64_t kc, vc; // the position's K and V rows of the layer (0: not stored)

void put(uint r, uint h, uint d, float val) {
    if (kc != 0) F16(kc).v[h * p.head_dim + d] = float16_t(val);
    else F32(p.x).v[r * p.row_stride + h * p.head_dim + d] = val;
}

void main() {
    const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (wg >= p.n_tok * p.n_heads) return;
    const uint h = wg % p.n_heads, tid = gl_LocalInvocationID.x;
    uint r = wg / p.n_heads, row_pos = (p.step != 0 ? U32(p.step).v[0] : p.n_past) + r;
    uint64_t tab = p.tab;
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[r];
        r = e.row, row_pos = e.n_past;
        if (tab != 0) tab = e.a;
    }
    kc = vc = 0;
    if (tab != 0) kc = kv_row(tab, row_pos, p.pos_bytes, p.koff), vc = kv_row(tab, row_pos, p.pos_bytes, p.voff);
    const uint base = r * p.row_stride + h * p.head_dim, half_ = p.n_rot / 2u;
    float inv[1];
    inv[0] = 0.0;
    if (p.nw != 0) {
        for (uint d = tid; d < p.head_dim; d += WG) {
            float a = F32(p.src).v[base + d];
            inv[0] = fma(a, a, inv[0]);
        }
        wg_sum(inv);
        inv[0] = 1.0 / sqrt(inv[0] / float(p.head_dim) + p.eps);
    }
    for (uint i = tid; i < half_; i += WG) {
        const vec2 cs = rope_cs(i, float(row_pos), p.mode, p.secs, p.theta_scale, p.freq_scale, p.ff);
        const float c = cs.x, sn = cs.y;
        uint d0 = p.mode == ROPE_NORM ? 2u * i : i;
        uint d1 = p.mode == ROPE_NORM ? d0 + 1u : i + half_;
        float a = F32(p.src).v[base + d0], b = F32(p.src).v[base + d1];
        if (p.nw != 0) {
            a *= inv[0] * F32(p.nw).v[d0];
            b *= inv[0] * F32(p.nw).v[d1];
        }
        put(r, h, d0, a * c - b * sn);
        put(r, h, d1, a * sn + b * c);
    }
    // dims past n_rot pass through (they still need the norm / the cache)
    if (p.nw != 0 || kc != 0)
        for (uint d = p.n_rot + tid; d < p.head_dim; d += WG) {
            float a = F32(p.src).v[base + d];
            if (p.nw != 0) a *= inv[0] * F32(p.nw).v[d];
            put(r, h, d, a);
        }
    if (vc != 0) {
        const uint hv = p.vdim / p.n_heads;
        for (uint d = tid; d < hv; d += WG)
            F16(vc).v[h * hv + d] = float16_t(F32(p.v).v[r * p.vdim + h * hv + d]);
    }
}
