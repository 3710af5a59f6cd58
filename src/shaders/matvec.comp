#version 450
// y = W x (+ bias) (* scale) (+ res) for a few tokens: each workgroup
// computes NR rows for one (token, expert slot); threads stride over 32-value
// steps of the row. With ids set, W is [n_expert] stacked matrices and slot
// j of token t uses expert ids[t][j] (MoE: only the chosen experts are read).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint TYPE = 0;
layout(constant_id = 2) const uint NR = 2;
layout(local_size_x_id = 0) in;

#include "dq.glsl"
#define NV NR
#include "reduce.glsl"

#include "mm_push.glsl"

void main() {
    const uint r0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * NR;
    if (r0 >= p.nrows) return;
    const uint z = gl_WorkGroupID.z, t = z / p.n_slots, slot = z % p.n_slots;
    uint e = 0;
    if (p.ids != 0) e = uint(F32(p.ids).v[t * p.ids_stride + slot]);
    const uint64_t w = p.w + uint64_t(e) * p.expert_bytes;
    const uint64_t x = p.x + 4ul * (uint64_t(t) * p.x_stride + uint64_t(slot) * p.x_slot_stride);

    float acc[NR];
    for (uint r = 0; r < NR; r++) acc[r] = 0.0;
    const uint nsteps = (p.ncols + 31u) / 32u;
    for (uint s = gl_LocalInvocationID.x; s < nsteps; s += WG) {
        float xv[32];
        x32(x, s, p.ncols, p.x_aligned != 0u, xv);
        for (uint r = 0; r < NR; r++) {
            if (r0 + r >= p.nrows) break;
            float wv[32];
            dq32(w + uint64_t(r0 + r) * p.row_bytes, s, p.ncols, wv);
            float a = 0.0;
            for (uint j = 0; j < 32u; j++) a = fma(wv[j], xv[j], a);
            acc[r] += a;
        }
    }
    wg_sum(acc);
    if (gl_LocalInvocationID.x != 0) return;
    const uint yo = t * p.y_stride + slot * p.y_slot_stride;
    for (uint r = 0; r < NR && r0 + r < p.nrows; r++) mm_store(yo + r0 + r, r0 + r, e, acc[r]);
}
