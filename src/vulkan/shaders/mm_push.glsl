// Push constants shared by matvec.comp, matmul.comp and matmul_cm.comp
// (struct mm_push in vk_ops.c).
layout(push_constant) uniform PC {
    uint64_t w, x, y;
    uint64_t bias;     // 0 or [n_expert][nrows]
    uint64_t scale;    // 0 or f32 [n_expert] (one value when dense)
    uint64_t res;      // 0 or laid out like y
    uint64_t ids;      // 0 or expert indices stored as f32: ids[t * ids_stride + slot];
                       // grouped mat-vec (flags bit 4): the address of its Group block
    uint64_t aux;      // XM_RMSNORM: norm weight [ncols]; XM_SWIGLU: the "up" rows (like x);
                       // XM_SIGMUL: the gate rows (like x); matmul.comp SPLIT: the partials
    uint expert_bytes;
    uint ncols, nrows, row_bytes, n_slots;
    uint x_stride, y_stride, x_slot_stride, y_slot_stride;
    uint n_tok, ids_stride; // matmul.comp SPLIT: ids_stride is the k-steps of a split
    uint flags;        // bit 0: y = (acc + bias) * scale, else acc * scale + bias;
                       // bit 1: x rows (and slots) start 16-byte aligned; bits 2-3: x mode;
                       // bit 4: grouped (matvec.comp); bit 5: ids is a Route block, the
                       // experts picked in the kernel (matvec_q.comp); bits 8-11: log2 of
                       // the row groups per subgroup (matvec_q.comp); bits 12-15: log2 of
                       // the gated norm's group (XM_SWIGLU, matvec_q.comp quantising x in
                       // its workgroups: 0 none)
    float eps;         // XM_RMSNORM, the gated norm
    uint64_t aux_w;    // the gated norm's weight [group]: aux -> aux / rms(its group) * aux_w
} p;

// How the mat-vec kernel reads x (fusing the op that would produce it):
#define XM_PLAIN 0u
#define XM_RMSNORM 1u   // x / sqrt(mean(x^2) + eps) * aux[k]  (then scaled at the end)
#define XM_SWIGLU 2u    // silu(x[k]) * aux[k]
#define XM_SIGMUL 3u    // x[k] * sigmoid(aux[k])

bool mm_grouped() { return (p.flags & 16u) != 0u; }
bool mm_routed() { return (p.flags & 32u) != 0u; }
uint mm_gn_log2() { return (p.flags >> 12) & 15u; }
bool mm_x_aligned() { return (p.flags & 2u) != 0u; }
uint mm_xmode() { return (p.flags >> 2) & 3u; }

#include "mm_store.glsl"

// Row R of token t, expert slot `slot` (expert e): grouped or plain epilogue.
void mv_store(uint t, uint slot, uint e, uint R, float v) {
    if (mm_grouped()) group_store(p.ids, t, R, v);
    else mm_store(t * p.y_stride + slot * p.y_slot_stride + R, R, e, v);
}
