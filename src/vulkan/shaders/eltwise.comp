#version 450
// Element-wise ops over dst's n elements (rows of `cols`), chosen by mode:
//   0 ADD          dst = a + b
//   1 SWIGLU       dst = silu(a) * b
//   2 SWIGLU_CAT   a is [rows][2 cols] = [gate | up]: dst = silu(gate) * up
//   3 SIGMOID_MUL  dst = a * sigmoid(b), b [rows][b_cols], b_cols = cols or 1
//   4 MOE_SUM      dst[t][c] = sum_j route[t][k + j] * a[t k + j][c]
//   5 MUL          dst = a * b
//   6 COPY_COLS    dst[r][b w + i] = a[r][b stride + off + i] with a's rows of
//                  b_cols, w = k, stride = aux, off = aux2 (ZN_OP_COPY_COLS)
//   7 MOE_TAIL     dst = res + (s + b * sigmoid(gate)), s MOE_SUM's value
//                  (k = 0: a[i]); without b: dst = res + s (vk_fuse.h
//                  vkfuse_tail). precise: the same roundings as the ops
//                  run one by one, no fused multiply-add
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t a, b, dst, route, gate, res;
    uint n, cols, b_cols, k, mode, aux, aux2;
} p;

float moe_sum(uint r, uint c) {
    float v = 0.0;
    for (uint j = 0; j < p.k; j++)
        v += F32(p.route).v[r * 2u * p.k + p.k + j] * F32(p.a).v[(r * p.k + j) * p.cols + c];
    return v;
}

void main() {
    const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (i >= p.n) return;
    const uint r = i / p.cols, c = i % p.cols;
    float v;
    switch (p.mode) {
    case 0u: v = F32(p.a).v[i] + F32(p.b).v[i]; break;
    case 1u: v = silu(F32(p.a).v[i]) * F32(p.b).v[i]; break;
    case 2u: v = silu(F32(p.a).v[2u * p.cols * r + c]) * F32(p.a).v[2u * p.cols * r + p.cols + c]; break;
    case 3u: v = F32(p.a).v[i] * sigmoid(F32(p.b).v[r * p.b_cols + (p.b_cols == 1u ? 0u : c)]); break;
    case 4u: v = moe_sum(r, c); break;
    case 5u: v = F32(p.a).v[i] * F32(p.b).v[i]; break;
    case 7u: {
        precise float s = p.k > 0u ? moe_sum(r, c) : F32(p.a).v[i];
        if (p.b != 0ul) {
            precise float gated = F32(p.b).v[i] * sigmoid(F32(p.gate).v[r * p.b_cols + (p.b_cols == 1u ? 0u : c)]);
            s = s + gated;
        }
        precise float t = F32(p.res).v[i] + s;
        v = t;
        break;
    }
    default: v = F32(p.a).v[r * p.b_cols + (c / p.k) * p.aux + p.aux2 + c % p.k]; break;
    }
    F32(p.dst).v[i] = v;
}
