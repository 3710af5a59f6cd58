// The sequence table of a batched decode step (vk_ops.h vkop_seq_ent): the
// step's sequences each decode one token, and the kernels with per-sequence
// state run once over all of them instead of once per sequence, each
// sequence's workgroups reading here what one sequence's dispatch takes
// from its push constants: its row in the step's activations, its
// position, and its state for the layer: attention layers its KV block
// table in a (kvtab.glsl; the layer's offsets stay in the push constants),
// recurrent layers its conv state in a and delta state in b.
struct SeqEnt {
    uint64_t a, b;
    uint row, n_past, pad0, pad1;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer SeqTab { SeqEnt v[]; };
