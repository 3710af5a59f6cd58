// Helpers of the integer-dot kernels (matvec_q.comp, mmi8.comp); the
// includer enables GL_EXT_integer_dot_product.

// The dot product of 16 int8 pairs.
int idot(uvec4 a, uvec4 b) {
    return dotPacked4x8EXT(int(a.x), int(b.x)) + dotPacked4x8EXT(int(a.y), int(b.y)) +
           dotPacked4x8EXT(int(a.z), int(b.z)) + dotPacked4x8EXT(int(a.w), int(b.w));
}

// Scales and mins of sub-blocks 2 pair and 2 pair + 1 of a Q4_K/Q5_K
// super-block (ggml get_scale_min_k4) from its 12 scale bytes as three
// words; without branches (the pairs of a subgroup's lanes differ).
void kscales(uvec3 w, uint pair, out vec2 sc, out vec2 m) {
    const uint sh = 16u * (pair & 1u), a = w.x >> sh, b = w.y >> sh, c = w.z >> sh;
    const bool hi = pair >= 2u;
    const uint s2 = hi ? (c & 0x0f0fu) | ((a >> 2) & 0x3030u) : a & 0x3f3fu;
    const uint m2 = hi ? ((c >> 4) & 0x0f0fu) | ((b >> 2) & 0x3030u) : b & 0x3f3fu;
    sc = vec2(float(s2 & 255u), float((s2 >> 8) & 255u));
    m = vec2(float(m2 & 255u), float((m2 >> 8) & 255u));
}
