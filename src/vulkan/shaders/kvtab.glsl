// The paged KV cache (engine/backend.h zn_kv_layout): a sequence's
// positions live in blocks of ZN_KV_BLOCK (limits.h, a define from the
// Makefile), found through its block table: the blocks' device addresses,
// written by the host as the sequence grows (backend_vulkan.c), read here
// at run time, so a recorded step sees blocks taken after it was recorded.
// Row p % ZN_KV_BLOCK of block p / ZN_KV_BLOCK holds position p of every
// attention layer, pos_bytes in all: each layer's K row, then its V row,
// at the byte offsets koff / voff the ops pass per layer. Blocks are not
// adjacent: every key's row is looked up on its own, so a tile of keys may
// span blocks.
#ifndef ZN_KV_BLOCK
#error "ZN_KV_BLOCK (limits.h) is passed by the Makefile: glslc -DZN_KV_BLOCK=..."
#endif

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer KvTab { uint64_t v[]; };

// The address of position pos's row at byte offset off (a layer's K or V row).
uint64_t kv_row(uint64_t tab, uint pos, uint pos_bytes, uint off) {
    return KvTab(tab).v[pos / uint(ZN_KV_BLOCK)] + uint64_t(pos % uint(ZN_KV_BLOCK)) * pos_bytes + off;
}
