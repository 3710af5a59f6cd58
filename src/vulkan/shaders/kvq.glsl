// The quantised KV caches (--kv-type, vk_ops.h kvq), as GGUF's blocks of
// 32 values (quant.h); the including shader declares the specialisation
// constant KVQ first (1 Q8_0, 2 Q4_0, 3 q3_0r's blocks; 0, the f16 cache,
// never calls these).
//   Q8_0: {f16 d; int8 q[32]}, 34 bytes, value = d * q
//   Q4_0: {f16 d; uint8 qs[16]}, 18 bytes, value j of the block = d * (q - 8)
//         with q the low nibble of qs[j] for j < 16, the high nibble of
//         qs[j - 16] for the rest
//   q3_0r: {f16 d; uint8 lo[8]; uint8 hi[4]}, 14 bytes, code c of value j:
//         2 bits of lo[j / 4] at 2 (j % 4), bit j % 8 of hi[j / 8]; value
//         d * level[c] (kv_type.c backend_kv_quantize)
// A row of n values is n / 32 blocks, so rows and blocks are only 2-byte
// aligned: the codes are read a byte at a time. Rows are found through the
// block table (kvtab.glsl kv_row).
#define KVQ_Q8_0 1u
#define KVQ_Q4_0 2u
#define KVQ_Q3 3u

uint kvq_block() { return KVQ == KVQ_Q3 ? 14u : KVQ == KVQ_Q4_0 ? 18u : 34u; }

// q3_0r's Lloyd-Max levels for a unit Gaussian and the edges between them
const float kvq3_level[8] = float[8](-2.1520, -1.3440, -0.7560, -0.2451, 0.2451, 0.7560, 1.3440, 2.1520);
const float kvq3_edge[7] = float[7](-1.7480, -1.0500, -0.5006, 0.0, 0.5006, 1.0500, 1.7480);

// 4 values e .. e+3 (e % 4 == 0) of the row at address row
vec4 kvq4(uint64_t row, uint e) {
    const uint64_t b = row + uint64_t(e / 32u) * kvq_block();
    const float d = float(F16(b).v[0]);
    if (KVQ == KVQ_Q3) { // e % 4 == 0: one lo byte, 4 bits of one hi byte
        U8 u = U8(b);
        const uint j = e % 32u, lo = uint(u.v[2u + j / 4u]), hi = uint(u.v[10u + j / 8u]) >> (j % 8u);
        return d * vec4(kvq3_level[(lo & 3u) | ((hi & 1u) << 2)], kvq3_level[((lo >> 2) & 3u) | ((hi & 2u) << 1)],
                        kvq3_level[((lo >> 4) & 3u) | (hi & 4u)], kvq3_level[((lo >> 6) & 3u) | ((hi & 8u) >> 1)]);
    }
    if (KVQ == KVQ_Q4_0) {
        // e % 4 == 0: the 4 values are in one half of the block, one nibble
        // of each of 4 consecutive bytes
        const uint i = 2u + e % 16u, sh = e % 32u < 16u ? 0u : 4u;
        U8 u = U8(b);
        return d * (vec4(float((uint(u.v[i]) >> sh) & 15u), float((uint(u.v[i + 1u]) >> sh) & 15u),
                         float((uint(u.v[i + 2u]) >> sh) & 15u), float((uint(u.v[i + 3u]) >> sh) & 15u)) - 8.0);
    }
    const uint i = 2u + e % 32u;
    return d * vec4(float(I8(b).v[i]), float(I8(b).v[i + 1u]), float(I8(b).v[i + 2u]), float(I8(b).v[i + 3u]));
}
