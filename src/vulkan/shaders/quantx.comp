#version 450
// Activations for the integer mat-vec (matvec_q.comp): each row of x,
// optionally through the op that produced it (RMS norm with weight, or
// SwiGLU; the mm_push.glsl x modes), quantised to blocks of 32 int8 with
// one f32 scale d = max|v| / 127 and the block's d * sum(q) (ggml's Q8_1).
// Row layout (xq_row_bytes in vk_ops.c): qs [nb][32] | (d, d * sum q) [nb],
// 16-byte aligned. One workgroup per row. In decode this runs before
// every mat-vec, so it is built for latency: 8 consecutive lanes share a
// block, 4 values each (coalesced 16-byte loads, the block's max and sum by
// 3 shuffle steps), and a thread keeps its first KEEP vec4s in registers so
// the RMS norm's second pass does not read x again.
// SK > 0: a row is split into slices of SK vec4s per thread, one workgroup
// each (many workgroups even for one token): every load of the slice's x
// and aux is issued at once, and for the RMS norm each workgroup also sums
// the whole row's squares itself (x is in L2; that costs one more round of
// loads in flight together, not a second dispatch).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;   // a multiple of 8
layout(constant_id = 1) const uint SK = 0;    // vec4s per thread of a workgroup's slice (0: whole rows)
layout(local_size_x_id = 0) in;

#define NV 1
#include "reduce.glsl"

layout(push_constant) uniform PC {
    uint64_t x, aux, q;
    uint ncols, n_rows, n_slots;  // rows are (token, slot) pairs, n_slots per token
    uint x_stride, x_slot_stride; // floats
    uint q_row;                   // bytes per quantised row
    uint flags;                   // bit 1: x (and aux) 16-byte aligned; bits 2-3: x mode (mm_push.glsl)
    float eps;
} p;

#define XM_PLAIN 0u  // the x modes of mm_push.glsl
#define XM_RMSNORM 1u
#define XM_SWIGLU 2u
#define XM_SIGMUL 3u
#define KEEP 16u

layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer QU32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer V2 { vec2 v[]; };

#include "q8x.glsl"

// Quantises vec4 i of the row (x values v) with its block's other 7 lanes.
void put(vec4 v, uint i, uint mode, float inv, uint64_t xo, uint64_t row) {
    const bool live = i < p.ncols / 4u;
    if (live) v = q8_xmode(v, i, mode, inv, xo);
    vec2 ds;
    const uint q = q8_quant(v, ds);
    if (!live) return;
    QU32(row + 4ul * i).v[0] = q;
    if (i % 8u == 0u) V2(row + 32ul * (p.ncols / 32u) + 8ul * (i / 8u)).v[0] = ds;
}

// The RMS norm's 1 / norm of the row at x (the whole workgroup); the
// first KEEP vec4s of each thread end up in kept.
float rms_inv(uint64_t x, uint nv, uint tid, out vec4 kept[KEEP]) {
    float s[1];
    s[0] = 0.0;
    for (uint k = 0; k < KEEP; k++) {
        const uint i = tid + k * WG;
        kept[k] = i < nv ? q8_load4(x, i) : vec4(0.0);
        s[0] += dot(kept[k], kept[k]);
    }
    for (uint i = tid + KEEP * WG; i < nv; i += WG) { // rows longer than the registers hold
        vec4 v = q8_load4(x, i);
        s[0] += dot(v, v);
    }
    wg_sum(s);
    return 1.0 / sqrt(s[0] / float(p.ncols) + p.eps);
}

// SK > 0: slice `part` of row r.
void slice(uint r, uint part, uint mode, uint nv, uint tid) {
    const uint64_t xo = 4ul * (uint64_t(r / p.n_slots) * p.x_stride + uint64_t(r % p.n_slots) * p.x_slot_stride);
    const uint64_t x = p.x + xo, row = p.q + uint64_t(r) * p.q_row, aux = q8_aux(mode, xo);
    vec4 v[SK + 1u], a[SK + 1u];
    for (uint k = 0; k < SK; k++) {
        const uint i = (part * SK + k) * WG + tid;
        v[k] = i < nv ? q8_load4(x, i) : vec4(0.0);
        a[k] = i < nv && mode != XM_PLAIN ? q8_load4(aux, i) : vec4(0.0);
    }
    vec4 kept[KEEP];
    const float inv = mode == XM_RMSNORM ? rms_inv(x, nv, tid, kept) : 1.0;
    for (uint k = 0; k < SK; k++) {
        const uint i = (part * SK + k) * WG + tid;
        vec2 ds;
        const uint q = q8_quant(q8_apply(v[k], a[k], mode, inv), ds);
        if (i >= nv) continue;
        QU32(row + 4ul * i).v[0] = q;
        if (i % 8u == 0u) V2(row + 32ul * (p.ncols / 32u) + 8ul * (i / 8u)).v[0] = ds;
    }
}

void main() {
    const uint mode = (p.flags >> 2) & 3u, nv = p.ncols / 4u, tid = gl_LocalInvocationID.x;
    const uint wid = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (SK > 0u) {
        const uint parts = (nv + SK * WG - 1u) / (SK * WG);
        if (wid < p.n_rows * parts) slice(wid / parts, wid % parts, mode, nv, tid); // uniform per workgroup
        return;
    }
    const uint r = wid;
    if (r >= p.n_rows) return;   // uniform per workgroup
    const uint64_t xo = 4ul * (uint64_t(r / p.n_slots) * p.x_stride + uint64_t(r % p.n_slots) * p.x_slot_stride);
    const uint64_t x = p.x + xo, row = p.q + uint64_t(r) * p.q_row;
    vec4 kept[KEEP];
    float inv = 1.0;
    if (mode == XM_RMSNORM) inv = rms_inv(x, nv, tid, kept);
    else
        for (uint k = 0; k < KEEP; k++) {
            const uint i = tid + k * WG;
            kept[k] = i < nv ? q8_load4(x, i) : vec4(0.0);
        }
    // every lane of a subgroup runs the same number of iterations (the
    // shuffles need all 8 lanes of a block): lanes past the end work on
    // zeros. The first KEEP iterations have a constant bound, so kept[]
    // stays in registers.
    const uint iters = (nv + WG - 1u) / WG;
    for (uint k = 0; k < KEEP; k++) {
        if (k >= iters) break;
        put(kept[k], tid + k * WG, mode, inv, xo, row);
    }
    for (uint k = KEEP; k < iters; k++) {
        const uint i = tid + k * WG;
        put(i < nv ? q8_load4(x, i) : vec4(0.0), i, mode, inv, xo, row);
    }
}
