/* Input layouts of the fuzz targets, shared with make_seeds.c (which writes
 * seeds in these layouts) and the regression replay. */
#ifndef ZINC_FUZZ_H
#define ZINC_FUZZ_H

/* fuzz_sampler: little-endian header
 *   0 temperature f32, 4 top_k i32, 8 top_p f32, 12 min_p f32,
 *   16 repeat_penalty f32, 20 presence f32, 24 frequency f32,
 *   28 penalty_last_n i32, 32 seed u64, 40 n_hist u8, then 3 bytes unused;
 * then n_hist i32 history tokens (any value), then the logits (f32 each;
 * n_vocab = what is left / 4). */
#define FUZZ_SAMPLER_HEADER 44
#define FUZZ_SAMPLER_MAX_VOCAB 16384
#define FUZZ_SAMPLER_MAX_WINDOW 4096

/* fuzz_tokenizer: byte 0 picks the vocabulary (index modulo the count),
 * byte 1 the flags (bit 0 add_special, bit 1 parse_special), the rest is the
 * text. Vocabularies are read from $ZN_SHARED (default ../shared). */
#define FUZZ_TOK_FLAGS_ADD_SPECIAL 1
#define FUZZ_TOK_FLAGS_PARSE_SPECIAL 2
static const char *const fuzz_tok_vocabs[] = {
    "tokenizers/ggml-vocab/ggml-vocab-llama-spm.gguf",   /* SPM, byte fallback */
    "tokenizers/ggml-vocab/ggml-vocab-phi-3.gguf",       /* SPM */
    "tokenizers/ggml-vocab/ggml-vocab-baichuan.gguf",    /* SPM */
    "tokenizers/ggml-vocab/ggml-vocab-bert-bge.gguf",    /* WordPiece */
    "tokenizers/ggml-vocab/ggml-vocab-gpt-2.gguf",       /* BPE pre-tokenizers from here on */
    "tokenizers/ggml-vocab/ggml-vocab-llama-bpe.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-qwen2.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-qwen35.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-deepseek-coder.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-deepseek-llm.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-falcon.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-gpt-neox.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-mpt.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-refact.gguf",
    "tokenizers/ggml-vocab/ggml-vocab-starcoder.gguf",
    "models/tiny/qwen3-dense-q8_0.gguf",                 /* llama.cpp's test tokenizer */
};
#define FUZZ_TOK_N_VOCABS (sizeof fuzz_tok_vocabs / sizeof fuzz_tok_vocabs[0])

/* fuzz_jinja: TEMPLATE, optionally followed by a NUL and a context:
 *   none: the template renders a fixed conversation (chat_render);
 *   '[...': a JSON array of messages (chat_render_json);
 *   anything else: a JSON object of template variables (jinja_render).
 * The byte after the NUL is a flag byte (bit 0 add_generation_prompt,
 * bits 1-2 enable_thinking unset/off/on) before the JSON. */

#endif
