#version 450
// y = W x (+ bias) (* scale) (+ res) for a few tokens. Every subgroup owns
// NR rows of one (token, expert slot); its lanes stride over the 32-value
// steps of those rows and a subgroup add finishes each dot product, so no
// shared memory or barrier is involved. With ids set, W is [n_expert]
// stacked matrices and slot j of token t uses expert ids[t * ids_stride + j]
// (MoE: only the chosen experts are read). The x mode fuses the producer of
// x: an RMS norm (the mean square is summed alongside the dot products), a
// SwiGLU or a sigmoid gate. Grouped: the weights of several matmuls that read the same x
// (q/k/v, gate/up) are stacked in one matrix and each row's result goes to
// its own matmul's output, bias and scale (struct vkop_group).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint TYPE = 0;
layout(constant_id = 2) const uint NR = 2;
layout(constant_id = 3) const uint SG = 32;
layout(local_size_x_id = 0) in;

#include "dq.glsl"
#include "mm_push.glsl"

void main() {
    const uint r0 = ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (WG / SG) + gl_SubgroupID) * NR;
    if (r0 >= p.nrows) return;
    const uint z = gl_WorkGroupID.z, t = z / p.n_slots, slot = z % p.n_slots, lane = gl_SubgroupInvocationID;
    uint e = 0;
    if (p.ids != 0 && !mm_grouped()) e = uint(F32(p.ids).v[t * p.ids_stride + slot]);
    const uint64_t w = p.w + uint64_t(e) * p.expert_bytes;
    const uint64_t xo = 4ul * (uint64_t(t) * p.x_stride + uint64_t(slot) * p.x_slot_stride);
    const uint xm = mm_xmode();

    float acc[NR];
    for (uint r = 0; r < NR; r++) acc[r] = 0.0;
    float ss = 0.0;
    const uint nsteps = (p.ncols + 31u) / 32u;
    for (uint s = lane; s < nsteps; s += SG) {
        float xv[32];
        x32(p.x + xo, s, p.ncols, mm_x_aligned(), xv);
        if (xm != XM_PLAIN) {
            float av[32];
            x32(p.aux + (xm == XM_SWIGLU || xm == XM_SIGMUL ? xo : 0ul), s, p.ncols, mm_x_aligned(), av);
            for (uint j = 0; j < 32u; j++) {
                ss = fma(xv[j], xv[j], ss);
                xv[j] = xm == XM_SWIGLU ? silu(xv[j]) * av[j] : xm == XM_SIGMUL ? xv[j] * sigmoid(av[j]) : xv[j] * av[j];
            }
        }
        float xs[4] = {0.0, 0.0, 0.0, 0.0};
        const uint L = 32u / RUNS();
        for (uint j = 0; j < 32u; j++) xs[j / L] += xv[j];
        for (uint r = 0; r < NR; r++) {
            if (r0 + r >= p.nrows) break;
            acc[r] += dot32(w + uint64_t(r0 + r) * p.row_bytes, s, p.ncols, xv, xs);
        }
    }
    float norm = 1.0;
    if (xm == XM_RMSNORM) norm = 1.0 / sqrt(subgroupAdd(ss) / float(p.ncols) + p.eps);
    for (uint r = 0; r < NR; r++) acc[r] = subgroupAdd(acc[r]);
    if (lane != 0u) return;
    for (uint r = 0; r < NR && r0 + r < p.nrows; r++) mv_store(t, slot, e, r0 + r, acc[r] * norm);
}
