/* Shared by the seed writers of make_seeds (make_seeds.c, seeds_*.c). */
#ifndef ZINC_MAKE_SEEDS_H
#define ZINC_MAKE_SEEDS_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

extern int n_seeds;
/* OUTDIR/NNNN-tag */
void next_path(char *buf, size_t cap, const char *tag);
void write_bytes(const char *tag, const void *p, size_t n);
/* The whole file, NUL-terminated (*n excludes the NUL); NULL on failure. */
uint8_t *slurp(const char *path, size_t *n);
int write_seed(gguf_writer *w, const char *tag, char *path, size_t cap);

int seeds_model(const char *fixture);
/* SHARED_DIR */
int seeds_tokenizer(int n, char **args);
/* files: *.jinja templates, cases.tsv, GGUFs (their chat templates) */
int seeds_jinja(int n, char **args);
/* files: *.golden.json (real logits) */
int seeds_sampler(int n, char **args);

#endif
