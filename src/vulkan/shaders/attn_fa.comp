#version 450
// ZN_OP_ATTN for prefill (many query rows): flash attention over the f16 KV
// cache, causal, grouped-query. attn.comp gives every query row its own
// workgroup, so each row re-reads all earlier keys and values; here a
// workgroup owns BR = 32 query rows of one head and streams K/V tiles of BC
// keys through shared memory once for all of them, with an online softmax.
// Thread t serves row t / 4 and a quarter of the head dims, interleaved in
// groups of 4 (dims 16 i + 4 (t % 4) + 0..3) so the four threads of a row
// read adjacent 8-byte words of a key; a row's partial dot products meet
// through two shuffles, so all four hold the whole score row and the
// output needs no shared memory. KVQ: the cache in Q8_0 or Q4_0 blocks
// (kvq.glsl), dequantized when staged. The cache is paged (kvtab.glsl): each
// staged key's row is looked up in the block table, so a tile may span
// blocks.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;   // 4 threads x BR rows
layout(constant_id = 1) const uint HD = 128;   // head dim (k and v)
layout(constant_id = 2) const uint BC = 32;    // keys per tile (K + V tiles: 8 * BC * HD bytes)
layout(constant_id = 3) const uint KVQ = 0;
layout(local_size_x_id = 0) in;

#include "kvq.glsl"
#include "kvtab.glsl"

#define BR 32u   // query rows per workgroup (vk_ops.c ATTN_FA_ROWS)
#define PER (HD / 4u)

layout(push_constant) uniform PC {
    uint64_t q, tab, dst, part, step;  // step: vk_ops.h vkop_step (0: n_past below); tab: kvtab.glsl
    uint n_tok, n_past, n_head, n_head_kv, hd_k, hd_v;
    uint chunk, n_split;                   // as attn.comp's (unused here)
    float scale;
    uint koff, voff, pos_bytes;            // the layer's K / V rows in a position's row
} p;

// [key][dim / 4], converted to f32 once when staged (each value is read by
// all 32 rows of the block): K + V tiles of 8 BC HD bytes, 32 KiB
shared vec4 ks[BC * HD / 4u];
shared vec4 vs[BC * HD / 4u];

uint dim_of(uint i, uint part) { return 16u * (i / 4u) + 4u * part + (i % 4u); } // i < PER

void main() {
    const uint h = gl_WorkGroupID.x, r0 = gl_WorkGroupID.y * BR, tid = gl_LocalInvocationID.x;
    const uint rr = tid / 4u, part = tid % 4u, r = r0 + rr;
    const bool live = r < p.n_tok;
    const uint kvh = h / (p.n_head / p.n_head_kv);
    const uint n_past = p.step != 0 ? U32(p.step).v[0] : p.n_past;
    const uint qpos = n_past + r, kv_end = n_past + min(r0 + BR, p.n_tok); // keys the block needs

    float q[PER], o[PER];
    for (uint i = 0; i < PER; i++) {
        q[i] = live ? F32(p.q).v[r * p.n_head * HD + h * HD + dim_of(i, part)] * p.scale : 0.0;
        o[i] = 0.0;
    }
    float m = -1.0 / 0.0, l = 0.0;
    for (uint jt = 0; jt < kv_end; jt += BC) {
        // stage the tile: 8-byte words, keys past the block's last one zeroed
        // (the cache holds garbage there, and 0 * NaN would poison o)
        for (uint w = tid; w < BC * HD / 4u; w += WG) {
            const uint key = jt + w / (HD / 4u), d4 = w % (HD / 4u);
            if (KVQ != 0u) {
                vec4 kq = vec4(0.0), vq = vec4(0.0);
                if (key < kv_end) {
                    kq = kvq4(kv_row(p.tab, key, p.pos_bytes, p.koff), kvh * HD + 4u * d4);
                    vq = kvq4(kv_row(p.tab, key, p.pos_bytes, p.voff), kvh * HD + 4u * d4);
                }
                ks[w] = kq;
                vs[w] = vq;
                continue;
            }
            uvec2 kw = uvec2(0), vw = uvec2(0);
            if (key < kv_end) {
                const uint off = 2u * (kvh * HD + 4u * d4);
                kw = U32x2(kv_row(p.tab, key, p.pos_bytes, p.koff) + off).v[0];
                vw = U32x2(kv_row(p.tab, key, p.pos_bytes, p.voff) + off).v[0];
            }
            ks[w] = vec4(unpackHalf2x16(kw.x), unpackHalf2x16(kw.y));
            vs[w] = vec4(unpackHalf2x16(vw.x), unpackHalf2x16(vw.y));
        }
        barrier();
        float s[BC];
        float mt = -1.0 / 0.0;
        for (uint c = 0; c < BC; c++) {
            float a = 0.0;
            for (uint i = 0; i < PER; i += 4u) {
                const vec4 kv = ks[c * (HD / 4u) + 4u * (i / 4u) + part];
                a += dot(kv, vec4(q[i], q[i + 1u], q[i + 2u], q[i + 3u]));
            }
            a += subgroupShuffleXor(a, 1u);
            a += subgroupShuffleXor(a, 2u);
            s[c] = jt + c <= qpos ? a : -1.0 / 0.0;
            mt = max(mt, s[c]);
        }
        const float mn = max(m, mt), alpha = exp(m - mn);
        l *= alpha;
        for (uint i = 0; i < PER; i++) o[i] *= alpha;
        for (uint c = 0; c < BC; c++) {
            const float e = exp(s[c] - mn);
            l += e;
            for (uint i = 0; i < PER; i += 4u) {
                const vec4 vv = vs[c * (HD / 4u) + 4u * (i / 4u) + part];
                o[i] = fma(e, vv.x, o[i]);
                o[i + 1u] = fma(e, vv.y, o[i + 1u]);
                o[i + 2u] = fma(e, vv.z, o[i + 2u]);
                o[i + 3u] = fma(e, vv.w, o[i + 3u]);
            }
        }
        m = mn;
        barrier();
    }
    if (!live) return;
    const uint ob = r * p.n_head * HD + h * HD;
    for (uint i = 0; i < PER; i++) F32(p.dst).v[ob + dim_of(i, part)] = o[i] / l;
}
