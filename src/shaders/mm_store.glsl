// The matmul epilogue (graph.h ZN_OP_MATMUL), shared by the kernels whose
// push-constant block (named p) has the fields y, bias, scale, res, nrows
// and flags (bit 0: bias before scale).
bool mm_bias_first() { return (p.flags & 1u) != 0u; }

// Bias and scale in either order, then the residual, stored at y's index yi.
void mm_store(uint yi, uint row, uint e, float acc) {
    float v = acc;
    if (mm_bias_first() && p.bias != 0) v += F32(p.bias).v[e * p.nrows + row];
    if (p.scale != 0) v *= F32(p.scale).v[e];
    if (!mm_bias_first() && p.bias != 0) v += F32(p.bias).v[e * p.nrows + row];
    if (p.res != 0) v += F32(p.res).v[yi];
    F32(p.y).v[yi] = v;
}
