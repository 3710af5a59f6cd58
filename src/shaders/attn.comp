#version 450
// ZN_OP_ATTN over the f16 KV cache, causal, grouped-query. One workgroup per
// (head, query row, key split): WG keys per tile, one thread per key for the
// scores, online softmax across tiles, threads over value dims for the
// output. With n_split > 1 (flash-decoding) each split writes its partial
// (max, sum, unnormalised output) and attn_merge.comp combines them.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;

#define MAXD 256
#define OPT (MAXD / 64)   // output dims per thread (WG >= 64)

layout(push_constant) uniform PC {
    uint64_t q, ck, cv, dst, part;
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split;
    float scale;
} p;

shared float qs[MAXD];
shared float ps[WG];
shared float red[32];

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

void main() {
    const uint h = gl_WorkGroupID.x, r = gl_WorkGroupID.y, sp = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
    const uint kvh = h / (p.n_head / p.n_head_kv);
    const uint kdim = p.n_head_kv * p.hd_k, vdim = p.n_head_kv * p.hd_v;
    const uint end = p.n_past + r + 1u;
    const uint j0 = sp * p.chunk, j1 = min(j0 + p.chunk, end);

    for (uint d = tid; d < p.hd_k; d += WG) qs[d] = F32(p.q).v[r * p.n_head * p.hd_k + h * p.hd_k + d];
    barrier();

    float m = -1.0 / 0.0, l = 0.0;
    float o[OPT];
    for (uint i = 0; i < OPT; i++) o[i] = 0.0;
    for (uint jt = j0; jt < j1; jt += WG) {
        const uint j = jt + tid;
        float s = -1.0 / 0.0;
        if (j < j1) {
            const uint kb = j * kdim + kvh * p.hd_k;
            float a = 0.0;
            for (uint d = 0; d < p.hd_k; d++) a = fma(qs[d], float(F16(p.ck).v[kb + d]), a);
            s = a * p.scale;
        }
        const float mn = max(m, wg_max(s));
        const float e = j < j1 ? exp(s - mn) : 0.0;
        ps[tid] = e;
        const float alpha = exp(m - mn);
        l = l * alpha + wg_add(e);
        for (uint i = 0; i < OPT; i++) o[i] *= alpha;
        m = mn;
        barrier();
        const uint nk = min(WG, j1 - jt);
        for (uint jj = 0; jj < nk; jj++) {
            const float w = ps[jj];
            const uint vb = (jt + jj) * vdim + kvh * p.hd_v;
            for (uint i = 0; i < OPT; i++) {
                uint d = tid + i * WG;
                if (d < p.hd_v) o[i] = fma(w, float(F16(p.cv).v[vb + d]), o[i]);
            }
        }
        barrier();
    }
    if (p.n_split == 1u) {
        for (uint i = 0; i < OPT; i++) {
            uint d = tid + i * WG;
            if (d < p.hd_v) F32(p.dst).v[r * p.n_head * p.hd_v + h * p.hd_v + d] = o[i] / l;
        }
    } else {
        // partial record: [m, l, o[hd_v]] at ((r * n_head + h) * n_split + sp)
        const uint pb = ((r * p.n_head + h) * p.n_split + sp) * (p.hd_v + 2u);
        if (tid == 0) { F32(p.part).v[pb] = m; F32(p.part).v[pb + 1u] = l; }
        for (uint i = 0; i < OPT; i++) {
            uint d = tid + i * WG;
            if (d < p.hd_v) F32(p.part).v[pb + 2u + d] = o[i];
        }
    }
}
