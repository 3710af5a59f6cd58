// The K/V tile staging and output rows shared by the prefill attention
// kernels (attn_fa_cm.glsl, attn_fa_sg.glsl). The includer declares WG, HD,
// BC, KVQ, LQ, VO, the shared arrays kv and ss, the push constants p and
// FA_UNROLL (the loop attribute of the staging loops, or nothing) first.
// K or V rows jt.. of this KV head, 16 bytes per load, into registers
// (in flight while products run), then into kv at offset o; a quantized
// cache's 8 values dequantized (kvq.glsl) and rounded to f16 there, as the
// CPU backend's attention keeps them. Keys past
// kv_end are zeroed (the cache holds garbage there, and 0 * NaN would
// poison O) and their block table entries not read (there may be no
// block); each key's row is looked up on its own (tiles may span blocks).
const uint NLD = BC * HD / 8u / WG;
uvec4 rk[NLD], rv[NLD];
void fetch(bool is_v, uint jt, uint kv_end, uint kvh) {
    const uint off = is_v ? p.voff : p.koff;
    FA_UNROLL for (uint i = 0; i < NLD; i++) {
        const uint w = gl_LocalInvocationID.x + i * WG, key = w / (HD / 8u), c8 = w % (HD / 8u);
        uvec4 v = uvec4(0);
        if (jt + key < kv_end && KVQ != 0u) {
            const uint64_t row = kv_row(p.tab, jt + key, p.pos_bytes, off);
            const vec4 a = kvq4(row, kvh * HD + 8u * c8), b = kvq4(row, kvh * HD + 8u * c8 + 4u);
            v = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
        } else if (jt + key < kv_end) {
            v = U32x4(kv_row(p.tab, jt + key, p.pos_bytes, off) + 2ul * (kvh * HD + 8u * c8)).v[0];
        }
        if (is_v) rv[i] = v;
        else rk[i] = v;
    }
}
void put(bool is_v) {
    FA_UNROLL for (uint i = 0; i < NLD; i++) {
        const uint w = gl_LocalInvocationID.x + i * WG, key = w / (HD / 8u), c8 = w % (HD / 8u);
        const uvec4 v = is_v ? rv[i] : rk[i];
        FA_UNROLL for (uint c = 0; c < 4u; c++) kv[(is_v ? VO : 0u) + key * LQ + 4u * c8 + c] = unpackFloat2x16(v[c]);
    }
}

// dst row of pair i of this block (i < n_tok * G)
uint out_row(uint pr, uint kvh, uint G) { return (pr / G) * p.n_head + kvh * G + pr % G; }

// A workgroup's block: the BR pairs from p0 of KV head kvh (G query heads
// each; np pairs in all), the longest blocks first; the keys it needs.
struct fa_block { uint G, kvh, np, p0, n_past, kv_end; };
fa_block fa_block_of(uint br) {
    fa_block b;
    b.G = p.n_head / p.n_head_kv, b.kvh = gl_WorkGroupID.y, b.np = p.n_tok * b.G;
    b.p0 = (gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x) * br;
    b.n_past = p.step != 0 ? U32(p.step).v[0] : p.n_past;
    b.kv_end = b.n_past + (min(b.p0 + br, b.np) - 1u) / b.G + 1u;
    return b;
}

// Four scaled Q values of pair pr (zeros past the last pair), head dims 4 c4 ..
vec4 q_at(fa_block b, uint pr, uint c4) {
    if (pr >= b.np) return vec4(0.0);
    return F32x4(p.q + 4ul * (uint64_t(out_row(pr, b.kvh, b.G)) * HD + 4u * c4)).v[0] * p.scale;
}

// The 16x16 tile staged (row-major) at ss[so] into dst: rows p0 + r0 ..
// of the block's pairs (those past np dropped), head dims c0 ..; a
// subgroup's 32 lanes, 8 values each.
void out_tile(uint so, uint lane, uint p0, uint r0, uint c0, uint np, uint kvh, uint G) {
    FA_UNROLL for (uint e = 0; e < 8u; e++) {
        const uint x = lane + 32u * e, pr = p0 + r0 + x / 16u;
        if (pr < np) F32(p.dst).v[out_row(pr, kvh, G) * HD + c0 + x % 16u] = ss[so + x];
    }
}
