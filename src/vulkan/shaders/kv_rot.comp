#version 450
// The rotated KV cache (--kv-type q4_0r, backend.h backend_kv_rotate): each
// head of hd values of each row, in place, x <- H D x / sqrt(hd) (forward:
// keys and values before kv_store.comp, queries before the attention) or
// x <- D H x / sqrt(hd) (inverse: the attention output). D: fixed signs, H:
// the Walsh-Hadamard matrix as log2(hd) butterfly stages in shared memory.
// The same float operations in the same order as the CPU's, so the cache
// holds the same bytes. A workgroup per (row, head).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform PC {
    uint64_t x;
    uint rows, heads, hd, stride; // stride: floats between rows
    float scale;                  // 1 / sqrt(hd), computed once on the host
    uint inverse;
} p;

#define MAX_HD 512u // ZN_KV_ROT_MAX_HD
shared float s[MAX_HD];

float kv_sign(uint i) { return (((i * 2654435761u) >> 15) & 1u) != 0u ? -1.0 : 1.0; }

void main() {
    const uint item = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    if (item >= p.rows * p.heads) return; // the whole workgroup
    const uint base = (item / p.heads) * p.stride + (item % p.heads) * p.hd;
    for (uint i = tid; i < p.hd; i += WG) {
        const float v = F32(p.x).v[base + i];
        s[i] = p.inverse != 0u ? v : v * kv_sign(i);
    }
    barrier();
    for (uint len = 1u; len < p.hd; len <<= 1) {
        for (uint q = tid; q < p.hd / 2u; q += WG) {
            const uint j = (q / len) * 2u * len + q % len;
            const float a = s[j], b = s[j + len];
            s[j] = a + b;
            s[j + len] = a - b;
        }
        barrier();
    }
    for (uint i = tid; i < p.hd; i += WG) {
        const float v = s[i] * p.scale;
        F32(p.x).v[base + i] = p.inverse != 0u ? v * kv_sign(i) : v;
    }
}
