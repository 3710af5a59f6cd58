// The matmul epilogue (graph.h ZN_OP_MATMUL), shared by the kernels whose
// push-constant block (named p) has the fields y, bias, scale, res, nrows
// and flags (bit 0: bias before scale). An includer may define MM_CONV
// (a compile-time bool) to leave a group's conv out of its code.
#include "seqs.glsl"
#ifndef MM_CONV
#define MM_CONV true
#endif
bool mm_bias_first() { return (p.flags & 1u) != 0u; }

// Bias and scale in either order (expert e's).
float mm_epi(uint row, uint e, float acc) {
    float v = acc;
    if (mm_bias_first() && p.bias != 0) v += F32(p.bias).v[e * p.nrows + row];
    if (p.scale != 0) v *= F32(p.scale).v[e];
    if (!mm_bias_first() && p.bias != 0) v += F32(p.bias).v[e * p.nrows + row];
    return v;
}

// mm_epi, then the residual, stored at y's index yi.
void mm_store(uint yi, uint row, uint e, float acc) {
    float v = mm_epi(row, e, acc);
    if (p.res != 0) v += F32(p.res).v[yi];
    F32(p.y).v[yi] = v;
}

// Grouped matmuls (mat-vec flags bit 4, mmf.glsl's group): the weights of several
// matmuls that read the same x (q/k/v, gate/up) are stacked in one matrix
// and each row's result goes to its own matmul's output, bias and scale
// (struct vkop_group).
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Group {
    uint64_t y[4], bias[4], scale[4];
    uint row_end[4], y_stride[4];
    uint n_seg;
    uint conv_k, conv_seg;       // conv_w != 0: segment conv_seg's rows go through a causal conv
    uint64_t conv_w, conv_state; // of conv_k taps + SiLU first (one token per sequence; vkop_group)
    uint64_t conv_seqs;          // 0, or a batched step's sequence table: token t's state in entry t
};

// Channel c of token t: its causal conv + SiLU of its new input v with the
// token's sequence's rolling state, which then shifts v in: conv1d.comp's
// arithmetic for one token (taps in the same fma order), by the one
// invocation owning (t, c).
float group_conv(Group gb, uint t, uint c, float v) {
    const uint K = gb.conv_k, K1 = K - 1u;
    const uint64_t base = gb.conv_seqs != 0ul ? SeqTab(gb.conv_seqs).v[t].a : gb.conv_state;
    const uint64_t st = base + 4ul * uint64_t(c * K1), w = gb.conv_w + 4ul * uint64_t(c * K);
    float s = 0.0;
    for (uint j = 0; j < K1; j++) s = fma(F32(w).v[j], F32(st).v[j], s);
    s = fma(F32(w).v[K1], v, s);
    for (uint j = 0; j + 1u < K1; j++) F32(st).v[j] = F32(st).v[j + 1u];
    if (K1 > 0u) F32(st).v[K1 - 1u] = v;
    return silu(s);
}

// The segment of row R of the stack, and the segment's first row.
uint group_seg(Group gb, uint R, out uint start) {
    uint s = 0;
    start = 0;
    while (s + 1u < gb.n_seg && R >= gb.row_end[s]) start = gb.row_end[s++];
    return s;
}

void group_store(uint64_t grp, uint t, uint R, float acc) {
    Group gb = Group(grp);
    uint start;
    const uint s = group_seg(gb, R, start), row = R - start;
    float v = acc;
    if (mm_bias_first() && gb.bias[s] != 0) v += F32(gb.bias[s]).v[row];
    if (gb.scale[s] != 0) v *= F32(gb.scale[s]).v[0];
    if (!mm_bias_first() && gb.bias[s] != 0) v += F32(gb.bias[s]).v[row];
    if (MM_CONV && gb.conv_w != 0ul && s == gb.conv_seg) v = group_conv(gb, t, row, v);
    F32(gb.y[s]).v[t * gb.y_stride[s] + row] = v;
}

// A MoE layer's routing computed by its experts' gate / up mat-vec
// (matvec_q.comp, flags bit 5; struct vkop_route): the router's logits
// [t][n_expert], and where (write != 0) its rows go (ZN_OP_MOE_ROUTE's:
// k ids | k weights), renormalised (norm) and scaled (wscale).
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Route {
    uint64_t logits, dst;
    uint n_expert, k, norm, write;
    float wscale;
};

// A MoE layer's tail computed by its experts' down mat-vec (matvec_q.comp
// with KS > 0, struct vkop_tail): the routing (expert ids | weights per
// token), the shared expert's output b and its gate (b 0: none; b_cols 1:
// one gate per token).
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Tail {
    uint64_t route, b, gate;
    uint b_cols;
};
