// The Q8_0 KV cache (--kv-type q8_0, vk_ops.h kvq): a cache row of n values
// is n / 32 blocks of {f16 d; int8 q[32]} (34 bytes, quant.h block_q8_0),
// value = d * q. Row bytes are n / 32 * 34, so rows and blocks are only
// 2-byte aligned: the codes are read a byte at a time.
#define KVQ_BLOCK 34u

uint64_t kvq_row(uint64_t base, uint pos, uint n) { return base + uint64_t(pos) * uint64_t(n / 32u * KVQ_BLOCK); }

// 4 values e .. e+3 (e % 4 == 0) of the row at address row
vec4 kvq4(uint64_t row, uint e) {
    const uint64_t b = row + uint64_t(e / 32u) * KVQ_BLOCK;
    const float d = float(F16(b).v[0]);
    const uint i = 2u + e % 32u;
    return d * vec4(float(I8(b).v[i]), float(I8(b).v[i + 1u]), float(I8(b).v[i + 2u]), float(I8(b).v[i + 3u]));
}
