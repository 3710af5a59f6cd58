/* Every limit zinc enforces, in one place. Checked at compile time where
 * they relate to each other. */
#ifndef ZINC_LIMITS_H
#define ZINC_LIMITS_H

#define ZN_ERR_MSG_MAX        512        /* bytes in one error message */
#define ZN_TUNE_TEXT_MAX      4096       /* bytes of a backend's tuning as "key=value,..." text */
#define ZN_PATH_MAX           4096       /* bytes in a file path */

/* GGUF reader: bounds that keep a hostile file from making us allocate
 * or loop without end. Real models stay far below these. */
#define ZN_GGUF_MAX_KV        65536      /* metadata key/value pairs */
#define ZN_GGUF_MAX_TENSORS   1048576    /* tensor infos */
#define ZN_GGUF_MAX_STRING    (64u << 20) /* bytes in one metadata string */
#define ZN_GGUF_MAX_KEY       65535      /* bytes in a key or tensor name */
#define ZN_GGUF_MAX_ARRAY     (1u << 28) /* elements in one metadata array */
#define ZN_GGUF_MAX_DEPTH     4          /* nesting of arrays of arrays */
#define ZN_GGUF_MAX_DIMS      4          /* dimensions of a tensor */
#define ZN_GGUF_MAX_ALIGN     65536      /* general.alignment upper bound */
#define ZN_GGUF_DATA_ALIGN    32         /* tensor data in memory starts on this boundary (copied when the file's doesn't) */

/* Model / engine */
#define ZN_MAX_LAYERS         512
#define ZN_MAX_EXPERTS        512
#define ZN_MAX_EXPERTS_USED   32
#define ZN_MAX_CTX            (1 << 20)  /* tokens in one sequence */
#define ZN_DEFAULT_CTX        4096
#define ZN_MAX_BATCH          512        /* tokens evaluated in one graph run */
#define ZN_STEP_TOKENS        512        /* token budget of one engine step over all its sequences (decode
                                            tokens plus prompt chunks): what one step may cost the others */
#define ZN_MAX_STEP_SEQS      256        /* sequences in one engine step */
#define ZN_KV_MEM_AUTO        (-1)       /* zinc serve --kv-mem auto (server.h kv_mem) */
#define ZN_KV_MEM_FRACTION    0.85       /* of the device's memory beyond the weights, for --kv-mem auto: the rest
                                            for activations, scratch and the driver */
#define ZN_KV_BLOCK           256        /* positions per block of the paged KV cache (backend.h): a power of two,
                                            the server's checkpoint block, the CPU's dequantised chunk */
#define ZN_MAX_THREADS        256
#define ZN_MAX_DEVICES        16         /* devices a backend lists (zinc --list-devices, --device N) */
#define ZN_MAX_GRAPH_NODES    16384
#define ZN_GRAPH_FOLD         5          /* an activation's memory is reused only this many nodes after its last
                                            reader (graph.c plan_arena), so a backend may fold the next nodes into
                                            one dispatch (Vulkan: a MoE layer's tail, also into the experts' down
                                            that reads the SwiGLU's inputs 5 nodes before the tail's ADD; a matmul,
                                            the SwiGLU of its x and its residual ADD) */
#define ZN_MAX_VOCAB          (1 << 22)
#define ZN_SAMPLER_SCAN       1024       /* candidates the sampler's one-pass top-k keeps at most (top-k plus twice the
                                            penalty window's tokens); more take the copy of the whole vocabulary */
/* Gated DeltaNet shapes both backends run (the loader refuses others): key
 * head dims are powers of two in [MIN, MAX] (the CPU kernel's stack
 * scratch; gdn.comp has a pipeline per power of two and needs a multiple
 * of its 8 lanes); conv kernels up to conv1d.comp's MAXK. */
#define ZN_SSM_MIN_HEAD_DIM   8
#define ZN_SSM_MAX_HEAD_DIM   512
#define ZN_GDN_MAX_CONV       8
#define ZN_VK_MM_SCRATCH      (128u << 20) /* bytes of f16 weights the Vulkan prefill GEMM dequantises at a time */
#define ZN_VK_MM_SCRATCH_MAX  (1024ull << 20) /* ... at most, on devices with much memory */
#define ZN_KV_ROT_MAX_HD      512        /* head dims the rotated KV caches (q4_0r, q3_0r) take at most: kv_rot.comp's
                                            shared memory, the CPU's stack copy of a head */
#define ZN_VK_MM_SPLIT_MAX    16         /* k ranges a split-K Vulkan GEMM takes at most (tuning mm_split_wgs) */
#define ZN_VK_WG_SUBGROUPS    32         /* subgroups in a workgroup of the Vulkan kernels that reduce over it
                                            (reduce.glsl: a shared slot each; the tuning's sizes stop there) */
#define ZN_VK_TAIL_SLOTS      8          /* experts per token whose down mat-vec takes the MoE tail (tuning moe_tail):
                                            a subgroup each in one workgroup, a pipeline each */
#define ZN_VK_TAIL_COLS       8192       /* ... and their x rows' columns together (shared memory) */
#define ZN_VK_MVT_MAX         16         /* tokens one workgroup of the Vulkan integer mat-vec takes (tuning mvt):
                                            its accumulators are registers, rows x tokens of them */

/* Text */
#define ZN_MAX_TOKEN_BYTES    1024       /* bytes in one vocab entry */
#define ZN_MAX_PROMPT_BYTES   (16 << 20)
#define ZN_EVAL_MAX_TOKENS    (8 * ZN_MAX_BATCH) /* ids `zinc eval --tokens` takes */
#define ZN_CHAT_MAX_LINE      ZN_MAX_PROMPT_BYTES /* bytes of one interactive (-i) input line */

/* Chat templates (Jinja) come from untrusted model files: every resource a
 * parse or render may use is bounded. */
#define ZN_JINJA_MAX_SRC      (1 << 20)  /* bytes of template source */
#define ZN_JINJA_MAX_DEPTH    200        /* nesting of blocks/expressions/values */
#define ZN_JINJA_MAX_EVAL     2000       /* nested evaluations incl. macro calls (C stack) */
#define ZN_JINJA_MAX_STEPS    5000000    /* evaluated nodes in one render (real templates: ~1e5) */
#define ZN_JINJA_MAX_MEM      (256 << 20) /* bytes one render may allocate */
#define ZN_JINJA_MAX_OUTPUT   ZN_MAX_PROMPT_BYTES /* bytes of rendered text */
#define ZN_JINJA_MAX_ITEMS    (1 << 22)  /* items in one list or dict */
#define ZN_JINJA_MAX_RANGE    100000     /* items range() makes (Jinja's sandbox limit) */
#define ZN_JINJA_MAX_FORMAT_WIDTH 1024   /* width or precision of one '%...' conversion */

/* Downloads (zinc model pull): a server must deliver at least
 * ZN_DL_MIN_RATE bytes/s averaged over ZN_DL_MIN_RATE_WINDOW_S seconds,
 * and a whole pull (every attempt) ends within ZN_DL_DEADLINE_S (a 24 GB
 * model at 1 MB/s takes 6.7 h). Tests pass smaller values in zn_fetch_opts. */
#define ZN_DL_MIN_RATE        1024       /* bytes per second */
#define ZN_DL_MIN_RATE_WINDOW_S 60       /* seconds the rate is averaged over */
#define ZN_DL_DEADLINE_S      (12 * 3600) /* seconds for the whole pull */
#define ZN_DL_CONNECT_S       30         /* seconds to connect */
#define ZN_DL_MAX_REDIRS      10
#define ZN_DL_DISK_MARGIN     (64ull << 20) /* bytes left free after a download */
#define ZN_HUB_MAX_REPLY      (16u << 20) /* bytes of a hub API reply (a file listing) */

/* Hardware profiles (profile.h): what a model is estimated to need. */
#define ZN_FIT_MEM_PERCENT    90         /* of the device's memory (VRAM, or RAM for the CPU) models may use */
#define ZN_FIT_KV_BYTES       2          /* bytes per KV element: the cache is f16 on both backends */
#define ZN_FIT_ACT_BYTES      (512ull << 20) /* activations and logits of a ZN_MAX_BATCH step (estimate) */
#define ZN_FIT_MIN_CTX        2048       /* a model "fits" with at least this much context */
#define ZN_FIT_CTX_STEP       256        /* the context it would get is rounded down to this */

/* Tool calls and structured output (zinc serve): what a request may ask
 * for and what one generation may hold. */
#define ZN_SRV_MAX_TOOLS        128        /* functions in one request's tools */
#define ZN_SRV_TOOL_NAME_MAX    256        /* bytes of a function or parameter name */
#define ZN_SRV_TOOL_HOLD        (64 << 10) /* bytes of a tool call held before it is known to be one */
#define ZN_SRV_MAX_TOOL_CALLS   16         /* calls a grammar-forced reply may make (parallel_tool_calls) */

/* Grammars (GBNF, compiled from JSON Schema or given) and their matchers:
 * what one request's grammar may hold and what its matcher may cache. */
#define ZN_GRAMMAR_MAX_SRC      (1 << 20)  /* bytes of grammar text */
#define ZN_GRAMMAR_MAX_RULES    (1 << 16)
#define ZN_GRAMMAR_MAX_ELEMS    (1 << 20)  /* elements of all rules, after expanding repetitions */
#define ZN_GRAMMAR_MAX_REPEAT   4096       /* m, n of x{m,n} */
#define ZN_GRAMMAR_MAX_NEST     200        /* nested parentheses (the parser recurses) */
#define ZN_GRAMMAR_MAX_DEPTH    2048       /* expansion recursion of one step (rules opening at one position) */
#define ZN_GMATCH_MAX_NODES     (1 << 18)  /* stack nodes a matcher keeps (then it compacts) */
#define ZN_GMATCH_MAX_STATES    8192       /* parser states with cached transitions (then it compacts) */
#define ZN_GMATCH_MAX_POOL      (1 << 20)  /* stack tops of all states together */
#define ZN_GMATCH_MASK_CACHE    32         /* token masks kept, by state */
#define ZN_GMATCH_SPARES        16         /* finished matchers' tables kept for the next request (~23 MiB each) */

/* HTTP server (zinc serve). A request over a limit gets a 4xx naming it. */
#define ZN_SRV_MAX_BODY         (8u << 20) /* bytes of a request body (413 above) */
#define ZN_SRV_MAX_HEADER       (32u << 10) /* bytes of a request's headers (libmicrohttpd's connection memory) */
#define ZN_SRV_MAX_MESSAGES     1024       /* messages in one chat request */
#define ZN_SRV_MAX_PROMPT_TOKENS ZN_MAX_CTX /* token ids in one /v1/completions prompt array */
#define ZN_SRV_MAX_GEN_TOKENS   ZN_MAX_CTX /* max_tokens / max_completion_tokens (the context bounds it too) */
#define ZN_SRV_DEFAULT_GEN_TOKENS -1       /* no max_tokens: until end of text or a full context */
#define ZN_SRV_MAX_STOP         4          /* stop strings (as OpenAI) */
#define ZN_SRV_MAX_STOP_BYTES   256        /* bytes in one stop string */
#define ZN_SRV_MAX_TOP_LOGPROBS 20         /* top_logprobs (as OpenAI) */
#define ZN_SRV_MAX_CONNECTIONS  256        /* concurrent connections (one thread each) */
#define ZN_SRV_MAX_QUEUE        64         /* requests waiting for a slot (429 beyond) */
#define ZN_SRV_MAX_PARALLEL     64         /* --parallel slots */
#define ZN_SRV_SAMPLE_THREADS   4          /* threads that sample the generating slots' next tokens after a step (the
                                            device idles meanwhile: 32 slots' draws from a 152k vocabulary take ~1 ms on one) */
#define ZN_SRV_IDLE_TIMEOUT_S   30         /* seconds a connection may send nothing */
#define ZN_SRV_READ_TIMEOUT_S   30         /* seconds to receive one request's body */
#define ZN_SRV_DRAIN_S          10         /* seconds in-flight requests get after SIGTERM/SIGINT (--drain-timeout) */
#define ZN_SRV_MAX_DRAIN_S      3600       /* --drain-timeout upper bound */
/* Recurrent-state checkpoints of a hybrid model's slot (scheduler.c slot_ckpt_take). A job asks for
 * ZN_SRV_CKPT_ASKED (the end of its leading system messages, the end of its conversation); besides,
 * every prompt is checkpointed where it crosses a multiple of ZN_SRV_CKPT_BLOCK tokens, so a later
 * prompt that shares any long prefix with it (a raw /v1/completions prompt has no message boundary)
 * resumes from the latest block at or below the common part. The block is the prefill chunk: a prompt
 * prefilled from 0 ends its chunks there anyway, so the checkpoints cost a state copy per chunk and no
 * extra step; smaller blocks would recompute less of a shared prefix but copy more and be thinned out
 * by the same budget. Each checkpoint is one copy of every DeltaNet layer's recurrent + conv state
 * (f32): 438 KiB on the demo model, 62.8 MiB on Qwen3.5-35B-A3B (30 layers), so ZN_SRV_CKPTS bounds
 * the memory: n_slots x ZN_SRV_CKPTS copies (35B-A3B, 32 slots: 11.8 GiB next to 2 GiB of state). */
#define ZN_SRV_CKPT_ASKED       2          /* checkpoints a job asks for: system prompt, conversation end */
#define ZN_SRV_CKPT_BLOCK       256        /* tokens: block checkpoints at every multiple of this in a prompt */
#define ZN_SRV_CKPTS            6          /* checkpoints per slot: the asked ones, the one resumed from, the
                                              rest a ladder of blocks (scheduler.c slot_ckpt_victim) */
#define ZN_SRV_PREFILL_CHUNK    256        /* prompt tokens a slot evaluates per turn (others' decode keeps going) */
#define ZN_SRV_MAX_HOSTS        32         /* --allowed-hosts entries */
#define ZN_SRV_MAX_KEY_BYTES    1024       /* bytes of an API key */
#define ZN_SRV_POLL_MS          20         /* how often a waiting connection checks that its client is still there */
/* reasoning_effort -> the budget of the reasoning inside <think>...</think>, in tokens (with the
 * closing tag, which the server writes itself once the budget is spent); "high" has none beyond
 * max_tokens, "none" turns thinking off */
#define ZN_SRV_THINK_BUDGET_MINIMAL 256
#define ZN_SRV_THINK_BUDGET_LOW     1024
#define ZN_SRV_THINK_BUDGET_MEDIUM  4096
#define ZN_SRV_THINK_CLOSE_TOKENS   16     /* tokens of the text that closes a <think> block (textstream.h) */

/* zinc bench: its warm-up lasts at least this long. A GPU idle for seconds
 * comes back slowly: on an H100 the first ~0.3 s of work after a minute's
 * idle ran decode steps 3.6x slower (7.2 ms against 2.0), whichever
 * process ran it; one 3 s later ran at full speed from its first step
 * (bench/results/2026-12-06-s28.md). */
#define ZN_BENCH_WARM_MS    500
#define ZN_BENCH_WARM_STEPS 512 /* decode steps the warm-up adds at most (their positions: the context holds them) */

_Static_assert(ZN_MAX_BATCH <= ZN_MAX_CTX, "a batch must fit in a context");
_Static_assert(ZN_STEP_TOKENS <= ZN_MAX_BATCH, "a step is one graph run");
_Static_assert((ZN_KV_BLOCK & (ZN_KV_BLOCK - 1)) == 0, "KV blocks are a power of two (shaders shift)");
_Static_assert(ZN_MAX_STEP_SEQS <= ZN_STEP_TOKENS, "every sequence of a step has a token in it");
_Static_assert(ZN_DEFAULT_CTX <= ZN_MAX_CTX, "default context too large");

_Static_assert(ZN_SRV_MAX_HEADER >= 4096, "headers need room");
_Static_assert(ZN_SRV_PREFILL_CHUNK <= ZN_STEP_TOKENS, "a prefill chunk fits in one step");
_Static_assert(ZN_SRV_CKPT_BLOCK % ZN_SRV_PREFILL_CHUNK == 0, "block checkpoints fall where a chunk ends anyway");
_Static_assert(ZN_SRV_CKPTS >= ZN_SRV_CKPT_ASKED + 2, "room for the resumed-from checkpoint and a block one");
_Static_assert(ZN_SRV_MAX_PARALLEL <= ZN_MAX_STEP_SEQS, "every slot's sequence fits in one step");

#endif
