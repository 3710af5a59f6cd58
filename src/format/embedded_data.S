/* The files of embedded.h, page-aligned in read-only data. The path is
 * relative to the repository root, where make runs; the Makefile rebuilds
 * this object when the file changes. */
    .section .rodata.zn_embedded,"a",@progbits
    .balign 4096
    .global zn_embedded_demo
    .global zn_embedded_demo_end
zn_embedded_demo:
    .incbin "models/zinc-demo-qwen35.gguf"
zn_embedded_demo_end:
    .section .note.GNU-stack,"",@progbits
