#version 450
// Buckets the (token, slot) pairs of a MoE routing by expert, for the
// grouped GEMM (mmf.glsl): counts[e], offsets[e] (exclusive prefix sum) and
// pairs[offsets[e] ..] = t * n_slots + j for every pair choosing e (in no
// particular order: each pair's result does not depend on its position).
// One workgroup; expert ids are read as moe_route.comp writes them (f32).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t route, bucket;
    uint n_tok, n_slots, ids_stride, n_expert;
} p;

layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer WU32 { uint v[]; };

#define MAX_EXPERTS 512u   // ZN_MAX_EXPERTS
shared uint cnt[MAX_EXPERTS];

uint expert_of(uint i) { return uint(F32(p.route).v[(i / p.n_slots) * p.ids_stride + i % p.n_slots]); }

void main() {
    const uint tid = gl_LocalInvocationID.x, n = p.n_tok * p.n_slots;
    WU32 out_ = WU32(p.bucket);
    for (uint e = tid; e < p.n_expert; e += WG) cnt[e] = 0u;
    barrier();
    for (uint i = tid; i < n; i += WG) {
        const uint e = expert_of(i);
        if (e < p.n_expert) atomicAdd(cnt[e], 1u);
    }
    barrier();
    if (tid == 0u) {
        uint run = 0u;
        for (uint e = 0; e < p.n_expert; e++) {
            const uint c = cnt[e];
            out_.v[e] = c;
            out_.v[p.n_expert + e] = run;
            cnt[e] = run;
            run += c;
        }
    }
    barrier();
    for (uint i = tid; i < n; i += WG) {
        const uint e = expert_of(i);
        if (e < p.n_expert) out_.v[2u * p.n_expert + atomicAdd(cnt[e], 1u)] = i;
    }
}
