// Push constants shared by matvec.comp and matmul.comp (struct vkop_mm).
layout(push_constant) uniform PC {
    uint64_t w, x, y;
    uint64_t bias;     // 0 or [n_expert][nrows]
    uint64_t scale;    // 0 or f32 [n_expert] (one value when dense)
    uint64_t res;      // 0 or laid out like y
    uint64_t ids;      // 0 or expert indices stored as f32: ids[t * ids_stride + slot]
    uint64_t expert_bytes;
    uint ncols, nrows, row_bytes, n_slots;
    uint x_stride, y_stride, x_slot_stride, y_slot_stride;
    uint n_tok, ids_stride;
    uint bias_first;   // 1: y = (acc + bias) * scale, else acc * scale + bias
    uint x_aligned;    // x rows (and slots) start 16-byte aligned
} p;

// The epilogue (graph.h ZN_OP_MATMUL): bias and scale in either order, then
// the residual, stored at y's index yi.
void mm_store(uint yi, uint row, uint e, float acc) {
    float v = acc;
    if (p.bias_first != 0 && p.bias != 0) v += F32(p.bias).v[e * p.nrows + row];
    if (p.scale != 0) v *= F32(p.scale).v[e];
    if (p.bias_first == 0 && p.bias != 0) v += F32(p.bias).v[e * p.nrows + row];
    if (p.res != 0) v += F32(p.res).v[yi];
    F32(p.y).v[yi] = v;
}
