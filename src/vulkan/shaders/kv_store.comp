#version 450
// ZN_OP_KV_STORE: rows of K and V (f32) into the f16 cache at positions
// n_past + r: the rows of one layer in the paged cache (kvtab.glsl: the
// table tab, the layer's offsets koff / voff). n_past comes
// from the step block (vk_ops.h vkop_step) when step is set. KVQ: Q8_0 or
// Q4_0 blocks instead (kvq.glsl), one thread per block, rounded exactly as
// the CPU backend does (kv_type.c backend_kv_put), so both backends hold
// the same bytes (test_vk_layers compares them). seqs set: a batched decode step (seqs.glsl), row r the one token
// of sequence r of the table, at its row of k / v, its position, into its
// cache (its table).
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint KVQ = 0;
layout(local_size_x_id = 0) in;

#include "kvq.glsl"
#include "kvtab.glsl"
#include "seqs.glsl"

layout(buffer_reference, std430, buffer_reference_align = 1) buffer W8 { int8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer WU8 { uint8_t v[]; };

// q3_0r as kv_type.c q3_put: d = sqrt(sum x^2 / 32) (the sum in index
// order, unfused), code = the number of edges below x / d. The rotation
// (kv_rot.comp) ran before.
void put_q3(uint64_t src, uint64_t row, uint n) {
    for (uint b = gl_LocalInvocationID.x; b < n / 32u; b += WG) {
        const uint64_t x = src + 128ul * b;
        precise float ss = 0.0;
        for (uint j = 0; j < 32u; j++) ss += F32(x).v[j] * F32(x).v[j];
        precise float d = sqrt(ss / 32.0);
        precise float id = d != 0.0 ? 1.0 / d : 0.0;
        const uint64_t blk = row + uint64_t(b) * kvq_block();
        F16(blk).v[0] = float16_t(d);
        uint lo[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u), hi[4] = uint[4](0u, 0u, 0u, 0u);
        for (uint j = 0; j < 32u; j++) {
            precise float v = F32(x).v[j] * id;
            uint c = 0u;
            for (uint e = 0; e < 7u; e++) c += v > kvq3_edge[e] ? 1u : 0u;
            lo[j / 4u] |= (c & 3u) << (2u * (j % 4u));
            hi[j / 8u] |= (c >> 2) << (j % 8u);
        }
        for (uint i = 0; i < 8u; i++) WU8(blk).v[2u + i] = uint8_t(lo[i]);
        for (uint i = 0; i < 4u; i++) WU8(blk).v[10u + i] = uint8_t(hi[i]);
    }
}

// Q8_0 as quant.c act_q8_0: d = amax / 127, codes x * 127 / amax to
// nearest even
void put_q8(uint64_t src, uint64_t row, uint n) {
    for (uint b = gl_LocalInvocationID.x; b < n / 32u; b += WG) {
        float amax = 0.0;
        for (uint j = 0; j < 32u; j++) amax = max(amax, abs(F32(src).v[32u * b + j]));
        const uint64_t blk = row + uint64_t(b) * kvq_block();
        F16(blk).v[0] = float16_t(amax / 127.0);
        const float id = amax != 0.0 ? 127.0 / amax : 0.0;
        for (uint j = 0; j < 32u; j++)
            W8(blk).v[2u + j] = int8_t(clamp(int(roundEven(F32(src).v[32u * b + j] * id)), -127, 127));
    }
}

// Q4_0 as quant.c q_q4_0 (ggml's quantize_row_q4_0_ref): the value of
// largest magnitude (the first of equals) keeps its sign and maps to -8,
// d = max / -8, code trunc(x * (1 / d) + 8.5) clamped to 0..15. precise:
// the CPU rounds x * id before adding 8.5, which a compiler that fuses the
// two into an fma would not (lavapipe does not; GPUs may).
void put_q4(uint64_t src, uint64_t row, uint n) {
    for (uint b = gl_LocalInvocationID.x; b < n / 32u; b += WG) {
        const uint64_t x = src + 128ul * b;
        float amax = 0.0, mx = 0.0;
        for (uint j = 0; j < 32u; j++) {
            const float v = F32(x).v[j];
            if (amax < abs(v)) amax = abs(v), mx = v;
        }
        precise float d = mx / -8.0;
        precise float id = d != 0.0 ? 1.0 / d : 0.0;
        const uint64_t blk = row + uint64_t(b) * kvq_block();
        F16(blk).v[0] = float16_t(d);
        for (uint j = 0; j < 16u; j++) {
            precise float a0 = F32(x).v[j] * id + 8.5, a1 = F32(x).v[j + 16u] * id + 8.5;
            W8(blk).v[2u + j] = int8_t(clamp(int(a0), 0, 15) | clamp(int(a1), 0, 15) << 4);
        }
    }
}

layout(push_constant) uniform PC {
    uint64_t k, v, tab, step;
    uint n_tok, kdim, vdim, n_past;
    uint koff, voff, pos_bytes, pad;      // the layer's rows in a position's (kvtab.glsl)
    uint64_t seqs;                        // 0: one sequence (the fields above)
} p;

void main() {
    uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (r >= p.n_tok) return;
    uint pos = (p.step != 0 ? U32(p.step).v[0] : p.n_past) + r;
    uint64_t tab = p.tab;
    if (p.seqs != 0) {
        const SeqEnt e = SeqTab(p.seqs).v[r];
        r = e.row, pos = e.n_past, tab = e.a;
    }
    const uint64_t kr = kv_row(tab, pos, p.pos_bytes, p.koff), vr = kv_row(tab, pos, p.pos_bytes, p.voff);
    if (KVQ == KVQ_Q8_0) {
        put_q8(p.k + 4ul * r * p.kdim, kr, p.kdim);
        put_q8(p.v + 4ul * r * p.vdim, vr, p.vdim);
        return;
    }
    if (KVQ == KVQ_Q4_0) {
        put_q4(p.k + 4ul * r * p.kdim, kr, p.kdim);
        put_q4(p.v + 4ul * r * p.vdim, vr, p.vdim);
        return;
    }
    if (KVQ == KVQ_Q3) {
        put_q3(p.k + 4ul * r * p.kdim, kr, p.kdim);
        put_q3(p.v + 4ul * r * p.vdim, vr, p.vdim);
        return;
    }
    for (uint i = gl_LocalInvocationID.x; i < p.kdim; i += WG) F16(kr).v[i] = float16_t(F32(p.k).v[r * p.kdim + i]);
    for (uint i = gl_LocalInvocationID.x; i < p.vdim; i += WG) F16(vr).v[i] = float16_t(F32(p.v).v[r * p.vdim + i]);
}
