/* GGUF files built into the zinc binary: today the demo model, so a copied
 * `zinc` with nothing beside it runs and passes `zinc --check`.
 *
 * embedded_data.S pulls the file in with .incbin, page-aligned, into
 * .rodata. The ELF loader maps that segment from the executable file like
 * any mmap: read-only, demand-paged and shared with the page cache, so the
 * weights are used in place from the binary's mapped image and never
 * copied; gguf_open() of the name below reads them there (gguf_open_mem,
 * which does not own the bytes). Tensor offsets are relative to the file's
 * start, and a page-aligned start keeps them aligned as general.alignment
 * (<= 4096 in every GGUF zinc ships) says.
 *
 * The names cannot be files: /proc/self/ has no entry "exe#..." */
#ifndef ZINC_EMBEDDED_H
#define ZINC_EMBEDDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZN_EMBEDDED_PREFIX "/proc/self/exe#"

/* The bytes of an embedded file named ZN_EMBEDDED_PREFIX NAME; false for
 * any other path. */
bool embedded_find(const char *path, const uint8_t **data, size_t *size);
bool embedded_is(const char *path);

#endif
