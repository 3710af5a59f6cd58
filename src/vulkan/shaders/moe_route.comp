#version 450
// ZN_OP_MOE_ROUTE, one workgroup per token: softmax over the router logits,
// top-k by k rounds of workgroup argmax (ties: lower index), optional
// renormalisation and scale. dst[r] = [k indices (as float) | k weights].
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define MAXE 512   // ZN_MAX_EXPERTS
#define PER (MAXE / 64)

layout(push_constant) uniform PC {
    uint64_t logits, dst;
    uint n_tok, n_expert, k, norm;
    float wscale;
} p;

shared float rv[32];
shared uint ri[32];
shared float topw[32];   // ZN_MAX_EXPERTS_USED
shared uint topi[32];

// Workgroup argmax of (v, i): largest v, then smallest i.
void wg_argmax(inout float v, inout uint i) {
    float m = subgroupMax(v);
    uint mi = subgroupMin(v == m ? i : 0xffffffffu);
    if (gl_NumSubgroups > 1) {
        if (gl_SubgroupInvocationID == 0) { rv[gl_SubgroupID] = m; ri[gl_SubgroupID] = mi; }
        barrier();
        m = rv[0]; mi = ri[0];
        for (uint s = 1; s < gl_NumSubgroups; s++)
            if (rv[s] > m || (rv[s] == m && ri[s] < mi)) { m = rv[s]; mi = ri[s]; }
        barrier();
    }
    v = m; i = mi;
}

float wg_sum1(float v) {
    float s = subgroupAdd(v);
    if (gl_NumSubgroups == 1) return s;
    if (gl_SubgroupInvocationID == 0) rv[gl_SubgroupID] = s;
    barrier();
    s = 0.0;
    for (uint g = 0; g < gl_NumSubgroups; g++) s += rv[g];
    barrier();
    return s;
}

void main() {
    const uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    if (r >= p.n_tok) return;
    float v[PER];
    float mx = -1.0 / 0.0;
    for (uint j = 0; j < PER; j++) {
        uint e = tid + j * WG;
        v[j] = e < p.n_expert ? F32(p.logits).v[r * p.n_expert + e] : -1.0 / 0.0;
        mx = max(mx, v[j]);
    }
    uint dummy = 0;
    wg_argmax(mx, dummy);
    float s = 0.0;
    for (uint j = 0; j < PER; j++) {
        uint e = tid + j * WG;
        v[j] = e < p.n_expert ? exp(v[j] - mx) : 0.0;
        s += v[j];
    }
    s = wg_sum1(s);
    // probabilities; -1 marks unavailable slots so they never win
    for (uint j = 0; j < PER; j++) v[j] = tid + j * WG < p.n_expert ? v[j] / s : -1.0;
    for (uint t = 0; t < p.k; t++) {
        float bv = -2.0;
        uint bi = 0xffffffffu;
        for (uint j = 0; j < PER; j++)
            if (v[j] > bv) { bv = v[j]; bi = tid + j * WG; }
        wg_argmax(bv, bi);
        if (tid == 0) { topw[t] = bv; topi[t] = bi; }
        for (uint j = 0; j < PER; j++)
            if (tid + j * WG == bi) v[j] = -1.0;
    }
    barrier();
    if (tid != 0) return;
    float sum = 0.0;
    for (uint t = 0; t < p.k; t++) sum += topw[t];
    for (uint t = 0; t < p.k; t++) {
        float w = topw[t];
        if (p.norm != 0u) w /= max(sum, 6.103515625e-5);
        if (p.wscale != 0.0 && p.wscale != 1.0) w *= p.wscale;
        F32(p.dst).v[r * 2u * p.k + t] = float(topi[t]);
        F32(p.dst).v[r * 2u * p.k + p.k + t] = w;
    }
}
