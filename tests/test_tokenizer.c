/* Tokenizer tests. The reference is llama.cpp's test-tokenizer-0 data: every
 * ../shared/tokenizers/ggml-vocab/X.gguf.inp case whose X.gguf exists must
 * tokenize (add_special = false, parse_special = false) exactly to the ids in
 * X.gguf.out. Everything else is checked against hand-derived expectations. */
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "gguf.h"
#include "harness.h"
#include "tokenizer.h"
#include "utf8.h"

#define VOCAB_DIR "tokenizers/ggml-vocab"
#define MAX_IDS 65536


typedef struct loaded {
    gguf_ctx g;
    zn_tokenizer *tok;
} loaded;

static bool load(loaded *l, const char *rel) {
    zn_err err = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s", shared_path(rel));
    if (gguf_open(&l->g, path, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return false;
    }
    if (tokenizer_load(&l->tok, &l->g, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        gguf_close(&l->g);
        return false;
    }
    return true;
}

static void unload(loaded *l) {
    tokenizer_free(l->tok);
    gguf_close(&l->g);
}

static size_t enc(const zn_tokenizer *t, const char *s, size_t n, bool add_special, bool parse_special, int32_t *ids) {
    zn_err err = {0};
    size_t k = 0;
    zn_status st = tokenizer_encode(t, s, n, add_special, parse_special, ids, MAX_IDS, &k, &err);
    CHECK_MSG(st == ZN_OK, "%s", err.msg);
    return st == ZN_OK ? k : 0;
}

static void print_escaped(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", stderr);
        else if (c < 0x20) fprintf(stderr, "\\x%02x", c);
        else fputc(c, stderr);
    }
}

static void print_ids(const char *what, const int32_t *v, size_t n) {
    fprintf(stderr, "      %s:", what);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", v[i]);
    fputc('\n', stderr);
}

/* Whether HF's space clean-up could change s (then decode != s by design). */
static bool cleanup_touches(const char *s, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (s[i - 1] == ' ' && strchr("?!.,'", s[i]) && s[i]) return true;
    return false;
}

/* Runs one X.gguf.inp/.out pair; returns the number of cases. */
static int run_vocab(const char *name, int *failed_cases) {
    char rel[512], inp_path[4096], out_path[4096];
    snprintf(rel, sizeof rel, VOCAB_DIR "/%s", name);
    snprintf(inp_path, sizeof inp_path, "%s.inp", shared_path(rel));
    snprintf(out_path, sizeof out_path, "%s.out", shared_path(rel));
    size_t ni = 0, no = 0;
    char *inp = harness_read_file(inp_path, &ni), *out = harness_read_file(out_path, &no);
    loaded l;
    CHECK_MSG(inp && out, "%s: cannot read .inp/.out", name);
    if (!inp || !out || !load(&l, rel)) {
        free(inp), free(out);
        return 0;
    }
    static int32_t ids[MAX_IDS], want[MAX_IDS];
    static char text[1 << 16];
    const char *sep = "\n__ggml_vocab_test__\n";
    size_t sl = strlen(sep), pos = 0;
    char *line = out, *oend = out + no, *save = NULL;
    int cases = 0, bad = 0, bad_rt = 0;
    bool lossless = tokenizer_kind(l.tok) != ZN_TOK_WPM; /* WordPiece lowercases and drops accents */
    while (pos < ni) {
        const char *next = strstr(inp + pos, sep);
        size_t n = next ? (size_t)(next - (inp + pos)) : ni - pos;
        const char *s = inp + pos;
        pos += n + (next ? sl : 0);
        /* the matching .out line: ids separated by spaces (an empty line is an empty case) */
        CHECK_MSG(line < oend, "%s: .out has fewer lines than .inp cases", name);
        if (line >= oend) break;
        char *eol = memchr(line, '\n', (size_t)(oend - line));
        if (eol) *eol = 0;
        size_t nw = 0;
        for (char *tokp = strtok_r(line, " ", &save); tokp; tokp = strtok_r(NULL, " ", &save))
            want[nw++] = (int32_t)strtol(tokp, NULL, 10);
        line = eol ? eol + 1 : oend;
        cases++;
        size_t k = enc(l.tok, s, n, false, false, ids);
        if (k != nw || memcmp(ids, want, k * sizeof *ids)) {
            if (!bad) {
                fprintf(stderr, "    %s: case %d '", name, cases);
                print_escaped(s, n);
                fprintf(stderr, "'\n");
                print_ids("want", want, nw);
                print_ids("got ", ids, k);
            }
            bad++;
            continue;
        }
        if (!lossless) continue;
        /* round trip 1: streaming pieces reproduce the text byte for byte */
        zn_detok d;
        detok_init(&d, l.tok, false, true);
        size_t tn = 0;
        static char chunk[ZN_DETOK_OUT_MAX];
        for (size_t i = 0; i < k && tn + ZN_DETOK_OUT_MAX < sizeof text; i++) {
            size_t c = detok_push(&d, ids[i], chunk);
            memcpy(text + tn, chunk, c), tn += c;
        }
        tn += detok_flush(&d, text + tn);
        bool ok = tn == n && !memcmp(text, s, n);
        /* round trip 2: tokenizer_decode, unless its punctuation clean-up applies */
        size_t dn = 0;
        zn_err err = {0};
        if (ok && !cleanup_touches(s, n)) {
            ok = tokenizer_decode(l.tok, ids, k, false, text, sizeof text, &dn, &err) == ZN_OK && dn == n &&
                 !memcmp(text, s, n);
        }
        if (!ok) {
            if (!bad_rt) {
                fprintf(stderr, "    %s: round trip of case %d '", name, cases);
                print_escaped(s, n);
                fprintf(stderr, "' gave '");
                print_escaped(text, dn ? dn : tn);
                fprintf(stderr, "'\n");
            }
            bad_rt++;
        }
    }
    CHECK_MSG(line >= oend, "%s: .out has more lines than .inp cases", name);
    CHECK_MSG(bad == 0, "%s: %d of %d cases tokenize wrong", name, bad, cases);
    CHECK_MSG(bad_rt == 0, "%s: %d of %d cases do not round-trip", name, bad_rt, cases);
    *failed_cases += bad + bad_rt;
    if (getenv("ZN_TEST_VERBOSE")) fprintf(stderr, "    %s: %d cases, %d wrong\n", name, cases, bad);
    unload(&l);
    free(inp), free(out);
    return cases;
}

/* Every .inp whose vocab exists: all of them, no case skipped. */
static void test_ggml_vocab_vectors(void) {
    DIR *dir = opendir(shared_path(VOCAB_DIR));
    CHECK_MSG(dir, "cannot open %s", shared_path(VOCAB_DIR));
    if (!dir) return;
    int vocabs = 0, cases = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t n = strlen(e->d_name);
        if (n < 9 || strcmp(e->d_name + n - 9, ".gguf.inp")) continue;
        char name[256], rel[512];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->d_name);
        snprintf(rel, sizeof rel, VOCAB_DIR "/%s", name);
        FILE *f = fopen(shared_path(rel), "rb");
        if (!f) continue; /* gemma-4, command-r: test data without a vocab */
        fclose(f);
        cases += run_vocab(name, &failed);
        vocabs++;
    }
    closedir(dir);
    /* qwen35 qwen2 llama-bpe llama-spm gpt-2 phi-3 deepseek-llm deepseek-coder falcon mpt starcoder refact bert-bge */
    CHECK_MSG(vocabs >= 13, "only %d vocabs with test vectors found", vocabs);
    CHECK_MSG(cases >= 13 * 46, "only %d cases found", cases);
    if (getenv("ZN_TEST_VERBOSE")) fprintf(stderr, "    %d vocabs, %d cases, %d failed\n", vocabs, cases, failed);
}

static int32_t id_of(const zn_tokenizer *t, const char *text) { return tokenizer_find(t, text, strlen(text)); }

static bool ids_eq(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && !memcmp(a, b, na * sizeof *a);
}

static void test_special_tokens(void) {
    static int32_t a[MAX_IDS], b[MAX_IDS];
    loaded l;
    if (load(&l, VOCAB_DIR "/ggml-vocab-qwen2.gguf")) {
        const char *s = "<|im_start|>user\nhi<|im_end|>";
        int32_t st = id_of(l.tok, "<|im_start|>"), en = id_of(l.tok, "<|im_end|>");
        CHECK(st >= 0 && en >= 0 && (tokenizer_token_attr(l.tok, st) & ZN_TOKEN_ATTR_CONTROL));
        size_t na = enc(l.tok, s, strlen(s), false, true, a);
        size_t nb = enc(l.tok, "user\nhi", 7, false, false, b);
        CHECK(na == nb + 2 && a[0] == st && a[na - 1] == en && ids_eq(a + 1, na - 2, b, nb));
        na = enc(l.tok, s, strlen(s), false, false, a); /* as plain text */
        for (size_t i = 0; i < na; i++) CHECK(a[i] != st && a[i] != en);
        char text[256];
        size_t n = 0;
        zn_err err = {0};
        CHECK(tokenizer_decode(l.tok, a, na, false, text, sizeof text, &n, &err) == ZN_OK);
        CHECK(n == strlen(s) && !memcmp(text, s, n));
        /* rendered only when asked for */
        int32_t ids[3] = {st, id_of(l.tok, "hi"), en};
        CHECK(tokenizer_decode(l.tok, ids, 3, true, text, sizeof text, &n, &err) == ZN_OK);
        CHECK(n == 24 && !memcmp(text, "<|im_start|>hi<|im_end|>", 24));
        CHECK(tokenizer_decode(l.tok, ids, 3, false, text, sizeof text, &n, &err) == ZN_OK);
        CHECK(n == 2 && !memcmp(text, "hi", 2));
        /* no BOS in Qwen2's metadata */
        CHECK(!tokenizer_add_bos(l.tok));
        CHECK(enc(l.tok, "hi", 2, true, true, a) == 1 && a[0] == id_of(l.tok, "hi"));
        unload(&l);
    }
    if (load(&l, VOCAB_DIR "/ggml-vocab-llama-spm.gguf")) {
        /* after a special token SentencePiece adds its leading space again */
        size_t na = enc(l.tok, "<s>Hello", 8, false, true, a);
        size_t nb = enc(l.tok, "Hello", 5, false, true, b);
        CHECK(na == nb + 1 && a[0] == 1 && ids_eq(a + 1, na - 1, b, nb));
        na = enc(l.tok, "<s>Hello", 8, false, false, a);
        CHECK(na > 1 && a[0] != 1);
        unload(&l);
    }
    if (load(&l, VOCAB_DIR "/ggml-vocab-phi-3.gguf")) {
        /* Phi-3's special tokens eat the spaces after them (rstrip) */
        int32_t user = id_of(l.tok, "<|user|>");
        CHECK(user >= 0 && (tokenizer_token_attr(l.tok, user) & ZN_TOKEN_ATTR_RSTRIP));
        size_t na = enc(l.tok, "<|user|>  \n Hello", 17, false, true, a);
        size_t nb = enc(l.tok, "<|user|>Hello", 13, false, true, b);
        CHECK(na >= 2 && a[0] == user && ids_eq(a, na, b, nb));
        unload(&l);
    }
    if (load(&l, VOCAB_DIR "/ggml-vocab-gpt-neox.gguf")) {
        /* user-defined tokens (runs of spaces) are cut out even with parse_special off, longest first */
        char sp24[25], sp6[7], s[40];
        memset(sp24, ' ', 24), sp24[24] = 0;
        memset(sp6, ' ', 6), sp6[6] = 0;
        snprintf(s, sizeof s, "%s%sx", sp24, sp6);
        int32_t want[3] = {id_of(l.tok, sp24), id_of(l.tok, sp6), id_of(l.tok, "x")};
        CHECK(want[0] >= 0 && want[1] >= 0 && want[2] >= 0);
        size_t na = enc(l.tok, s, 31, false, false, a);
        CHECK(ids_eq(a, na, want, 3));
        unload(&l);
    }
}

static void test_add_special_and_eog(void) {
    static int32_t a[MAX_IDS];
    loaded l;
    if (load(&l, VOCAB_DIR "/ggml-vocab-llama-bpe.gguf")) { /* Llama 3: BOS by pre-tokenizer default */
        CHECK(tokenizer_add_bos(l.tok) && tokenizer_bos(l.tok) == id_of(l.tok, "<|begin_of_text|>"));
        size_t n = enc(l.tok, "Hello", 5, true, true, a);
        CHECK(n == 2 && a[0] == tokenizer_bos(l.tok) && a[1] == id_of(l.tok, "Hello"));
        CHECK(tokenizer_is_eog(l.tok, id_of(l.tok, "<|eot_id|>")));
        CHECK(tokenizer_is_eog(l.tok, id_of(l.tok, "<|end_of_text|>")));
        CHECK(!tokenizer_is_eog(l.tok, id_of(l.tok, "Hello")));
        CHECK(tokenizer_eot(l.tok) == id_of(l.tok, "<|eot_id|>"));
        unload(&l);
    }
    if (load(&l, VOCAB_DIR "/ggml-vocab-qwen35.gguf")) {
        CHECK(tokenizer_eos(l.tok) == id_of(l.tok, "<|endoftext|>"));
        CHECK(tokenizer_eot(l.tok) == id_of(l.tok, "<|im_end|>"));
        CHECK(tokenizer_is_eog(l.tok, id_of(l.tok, "<|im_end|>")) && tokenizer_is_eog(l.tok, tokenizer_eos(l.tok)));
        CHECK(!tokenizer_is_eog(l.tok, id_of(l.tok, "<|im_start|>")) && !tokenizer_is_eog(l.tok, -1));
        /* too small an output buffer: an error that says how many are needed */
        size_t n = 0;
        zn_err err = {0};
        CHECK(tokenizer_encode(l.tok, "a b c d", 7, false, true, a, 2, &n, &err) == ZN_ERR_NOMEM && n == 4);
        unload(&l);
    }
    if (load(&l, VOCAB_DIR "/ggml-vocab-bert-bge.gguf")) { /* WordPiece: [CLS] ... [SEP] */
        size_t n = enc(l.tok, "Hello", 5, true, true, a);
        CHECK(n == 3 && a[0] == id_of(l.tok, "[CLS]") && a[2] == id_of(l.tok, "[SEP]"));
        CHECK(a[1] == id_of(l.tok, "\xe2\x96\x81hello"));
        unload(&l);
    }
}

/* A real Llama 2 vocabulary inside a model file. */
static void test_llama2_model_file(void) {
    static int32_t a[MAX_IDS], b[MAX_IDS];
    loaded l, v;
    if (!load(&l, "models/llama-2-tiny-random.gguf")) return;
    CHECK(tokenizer_kind(l.tok) == ZN_TOK_SPM && tokenizer_n_vocab(l.tok) == 32000);
    /* ids from ggml-vocab-llama-spm.gguf.out for "Hello world", plus BOS */
    int32_t want[3] = {1, 15043, 3186};
    size_t n = enc(l.tok, "Hello world", 11, true, true, a);
    CHECK(ids_eq(a, n, want, 3));
    CHECK(tokenizer_is_eog(l.tok, 2) && !tokenizer_is_eog(l.tok, 1));
    if (load(&v, VOCAB_DIR "/ggml-vocab-llama-spm.gguf")) {
        const char *s = "The quick brown fox — naïve café, 1234 «quotes» \xf0\x9f\xa6\x99\n\ttabs";
        size_t na = enc(l.tok, s, strlen(s), true, true, a), nb = enc(v.tok, s, strlen(s), true, true, b);
        CHECK(na > 10 && ids_eq(a, na, b, nb));
        unload(&v);
    }
    unload(&l);
}

static size_t stream(zn_detok *d, const int32_t *ids, size_t n, char *out, size_t *per_push) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = detok_push(d, ids[i], out + o);
        if (per_push) per_push[i] = k;
        o += k;
    }
    return o;
}

static void test_streaming_detok(void) {
    static char out[8 * ZN_DETOK_OUT_MAX];
    loaded l;
    zn_detok d;
    if (load(&l, VOCAB_DIR "/ggml-vocab-gpt-2.gguf")) {
        /* U+1F999 is 4 bytes; GPT-2 has no token for it, so it spans several */
        const char *s = "a\xf0\x9f\xa6\x99";
        int32_t ids[16];
        size_t per[16];
        size_t n = enc(l.tok, s, 5, false, false, ids);
        CHECK(n >= 3 && ids[0] == id_of(l.tok, "a"));
        detok_init(&d, l.tok, false, true);
        size_t o = stream(&d, ids, n, out, per);
        o += detok_flush(&d, out + o);
        CHECK(o == 5 && !memcmp(out, s, 5));
        CHECK(per[0] == 1);                                      /* "a" at once */
        for (size_t i = 1; i + 1 < n; i++) CHECK(per[i] == 0);   /* held back mid-character */
        CHECK(per[n - 1] == 4);                                  /* the whole character */
        unload(&l);
    }
    if (load(&l, VOCAB_DIR "/ggml-vocab-llama-spm.gguf")) {
        /* byte tokens <0xXX> make arbitrary, also invalid, byte sequences */
#define B(x) (tokenizer_find(l.tok, "<0x" #x ">", 6))
        int32_t a = id_of(l.tok, "a");
        int32_t ids[] = {B(E2), a, B(FF), B(C0), B(80), B(E2), B(82), B(AC), B(F0), B(9F)};
#undef B
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) CHECK(ids[i] >= 0);
        size_t per[16];
        detok_init(&d, l.tok, false, true);
        size_t o = stream(&d, ids, 10, out, per);
        const char *want = "\xef\xbf\xbd" "a" "\xef\xbf\xbd" "\xef\xbf\xbd\xef\xbf\xbd" "\xe2\x82\xac";
        CHECK(o == strlen(want) && !memcmp(out, want, o));
        CHECK(per[0] == 0 && per[1] == 4 && per[2] == 3 && per[5] == 0 && per[6] == 0 && per[7] == 3);
        CHECK(per[8] == 0 && per[9] == 0);
        CHECK(detok_flush(&d, out) == 3 && !memcmp(out, "\xef\xbf\xbd", 3)); /* the unfinished F0 9F */
        CHECK(detok_flush(&d, out) == 0);
        /* tokenizer_decode repairs the same way */
        size_t n = 0;
        zn_err err = {0};
        static char text[256];
        CHECK(tokenizer_decode(l.tok, ids, 10, false, text, sizeof text, &n, &err) == ZN_OK);
        CHECK(n == strlen(want) + 3 && !memcmp(text, want, strlen(want)));
        /* at the start of a text SentencePiece's own leading space is dropped, not later */
        int32_t hello = id_of(l.tok, "\xe2\x96\x81Hello");
        detok_init(&d, l.tok, false, true);
        CHECK(detok_push(&d, hello, out) == 5 && !memcmp(out, "Hello", 5));
        CHECK(detok_push(&d, hello, out) == 6 && !memcmp(out, " Hello", 6));
        detok_init(&d, l.tok, false, false);
        CHECK(detok_push(&d, hello, out) == 6);
        /* as llama.cpp: only the very first token loses its space, so after a
         * (hidden) BOS the space stays; rendered, it reads "<s> Hello" */
        int32_t bos_hello[2] = {1, hello};
        CHECK(tokenizer_decode(l.tok, bos_hello, 2, false, text, sizeof text, &n, &err) == ZN_OK && n == 6 &&
              !memcmp(text, " Hello", 6));
        CHECK(tokenizer_decode(l.tok, bos_hello, 2, true, text, sizeof text, &n, &err) == ZN_OK && n == 9 &&
              !memcmp(text, "<s> Hello", 9));
        unload(&l);
    }
}

static void test_decode_cleanup(void) {
    static int32_t a[MAX_IDS];
    static char text[256];
    loaded l;
    if (!load(&l, VOCAB_DIR "/ggml-vocab-gpt-2.gguf")) return;
    /* GPT-2 asks for HF's clean_up_tokenization_spaces */
    const char *s = "Hello , world ! I 'm sure it 's ' fine ' .";
    const char *want = "Hello, world! I'm sure it's'fine '."; /* " '." is none of the rules */
    size_t n = enc(l.tok, s, strlen(s), false, false, a), len = 0;
    zn_err err = {0};
    CHECK(tokenizer_decode(l.tok, a, n, false, text, sizeof text, &len, &err) == ZN_OK);
    CHECK_MSG(len == strlen(want) && !memcmp(text, want, len), "got '%.*s'", (int)len, text);
    /* the streaming pieces are the raw text */
    zn_detok d;
    detok_init(&d, l.tok, false, true);
    size_t o = stream(&d, a, n, text, NULL);
    CHECK(o == strlen(s) && !memcmp(text, s, o));
    unload(&l);
}

static void test_utf8(void) {
    const struct {
        const char *s;
        int want;
    } cases[] = {
        {"a", 1}, {"\xc3\xa9", 2}, {"\xe2\x82\xac", 3}, {"\xf0\x9f\xa6\x99", 4}, {"\xc3", 0}, {"\xf0\x9f\xa6", 0},
        {"\x80", -1}, {"\xc0\x80", -1}, {"\xc1\xbf", -1}, {"\xe0\x80\x80", -1}, {"\xed\xa0\x80", -1},
        {"\xf4\x90\x80\x80", -1}, {"\xf5\x80", -1}, {"\xff", -1}, {"\xe2\x28\xa1", -1}, {"\xf0\x9f\x28", -2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(utf8_check((const uint8_t *)cases[i].s, strlen(cases[i].s)) == cases[i].want, "case %zu", i);
    char out[64];
    size_t n = utf8_sanitize("a\xff" "b\xe2\x82", 5, out);
    CHECK(n == 8 && !memcmp(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd", 8));
}

static void write_vocab(const char *path, const char *model, const char *pre) {
    zn_err err = {0};
    gguf_writer *w;
    CHECK(gguf_writer_init(&w, 32, &err) == ZN_OK);
    const char *toks[] = {"a", "b", "ab"}, *merges[] = {"a b"};
    gguf_writer_set_str(w, "tokenizer.ggml.model", model);
    if (pre) gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 1);
    CHECK(gguf_writer_write(w, path, &err) == ZN_OK);
    gguf_writer_free(w);
}

static zn_status try_load(const char *path, zn_err *err) {
    gguf_ctx g;
    zn_tokenizer *t = NULL;
    zn_status s = gguf_open(&g, path, err);
    if (s) return s;
    s = tokenizer_load(&t, &g, err);
    if (!s) {
        int32_t ids[4];
        size_t n = 0;
        CHECK(tokenizer_encode(t, "abba", 4, false, false, ids, 4, &n, err) == ZN_OK);
        CHECK(n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0); /* "ab" "b" "a" */
        tokenizer_free(t);
    }
    gguf_close(&g);
    return s;
}

static void test_load_errors(void) {
    char path[] = "/tmp/zinc-tok-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    zn_err err = {0};
    write_vocab(path, "gpt2", "no-such-pre");
    CHECK(try_load(path, &err) == ZN_ERR_UNSUPPORTED && strstr(err.msg, "no-such-pre"));
    write_vocab(path, "t5", NULL);
    CHECK(try_load(path, &err) == ZN_ERR_UNSUPPORTED && strstr(err.msg, "t5"));
    write_vocab(path, "gpt2", "gpt-2"); /* a minimal valid BPE vocab */
    CHECK_MSG(try_load(path, &err) == ZN_OK, "%s", err.msg);
    close(fd);
    unlink(path);
}

/* llama.cpp's dummy tokenizer in the tiny random fixtures */
static void test_dummy_tokenizer(void) {
    loaded l;
    if (!load(&l, "models/tiny/qwen3-dense-f32.gguf")) return;
    CHECK(tokenizer_kind(l.tok) == ZN_TOK_TEST && tokenizer_n_vocab(l.tok) == 128);
    int32_t ids[8];
    size_t n = enc(l.tok, "Hello world", 11, true, true, ids);
    /* 5-byte chunks, h = 31 h + byte, mod 128: "Hello" "_worl" "d" */
    uint64_t h[3] = {0, 0, 0};
    const char *s = "Hello world";
    for (int i = 0; i < 11; i++) h[i / 5] = h[i / 5] * 31 + (uint8_t)s[i];
    CHECK(n == 3 && ids[0] == (int32_t)(h[0] % 128) && ids[1] == (int32_t)(h[1] % 128) && ids[2] == (int32_t)(h[2] % 128));
    char text[16];
    int32_t some[2] = {10, 127};
    size_t len = 0;
    zn_err err = {0};
    CHECK(tokenizer_decode(l.tok, some, 2, false, text, sizeof text, &len, &err) == ZN_OK && len == 3 &&
          !memcmp(text, "a7f", 3));
    unload(&l);
}

static bool valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int k = utf8_check((const uint8_t *)s + i, n - i);
        if (k <= 0) return false;
        i += (size_t)k;
    }
    return true;
}

/* Arbitrary bytes (mostly invalid UTF-8) through every kind of tokenizer:
 * decoding always gives valid UTF-8; SentencePiece's byte fallback keeps
 * every byte, so its round trip is the input with broken sequences replaced.
 * (Without spaces: a broken lead byte can swallow part of the escaped space
 * U+2581, which then comes back as bytes, as in llama.cpp.) */
static void test_random_bytes(void) {
    static char in[4096], text[4 * sizeof in], want[3 * sizeof in];
    static int32_t ids[MAX_IDS];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof in; i++) {
        x = x * 1103515245u + 12345u;
        in[i] = (char)(x >> 23);
    }
    const char *vocabs[] = {VOCAB_DIR "/ggml-vocab-qwen35.gguf", VOCAB_DIR "/ggml-vocab-bert-bge.gguf",
                            VOCAB_DIR "/ggml-vocab-deepseek-llm.gguf", VOCAB_DIR "/ggml-vocab-llama-spm.gguf"};
    for (size_t v = 0; v < sizeof vocabs / sizeof vocabs[0]; v++) {
        loaded l;
        if (!load(&l, vocabs[v])) continue;
        size_t n = enc(l.tok, in, sizeof in, true, true, ids), len = 0;
        zn_err err = {0};
        CHECK(n > 0 && tokenizer_decode(l.tok, ids, n, true, text, sizeof text, &len, &err) == ZN_OK);
        CHECK_MSG(valid_utf8(text, len), "%s", vocabs[v]);
        if (tokenizer_kind(l.tok) == ZN_TOK_SPM) {
            for (size_t i = 0; i < sizeof in; i++)
                if (in[i] == ' ') in[i] = 'x';
            size_t wn = utf8_sanitize(in, sizeof in, want);
            n = enc(l.tok, in, sizeof in, false, false, ids); /* no BOS: see test_streaming_detok */
            CHECK(tokenizer_decode(l.tok, ids, n, false, text, sizeof text, &len, &err) == ZN_OK);
            CHECK(len == wn && !memcmp(text, want, wn));
        }
        unload(&l);
    }
}

/* Invalid and truncated UTF-8 (every non-ASCII byte as a lead byte before
 * spaces, at the end, doubled) through every vocab of every kind: a lead
 * byte before a space once split SentencePiece's 3-byte U+2581 into more
 * characters than the text had bytes and overflowed the symbol buffer (ASan
 * catches a regression). Each result must be in-vocab ids that decode. */
static void test_invalid_utf8_every_vocab(void) {
    static int32_t ids[MAX_IDS];
    static char text[1 << 16];
    DIR *dir = opendir(shared_path(VOCAB_DIR));
    CHECK_MSG(dir, "cannot open %s", shared_path(VOCAB_DIR));
    if (!dir) return;
    static const char *const shapes[] = {"%c ", "%c", " %c", "%c  ", "%c%c ", "a%c b%c", "%c\xe2\x96 ", "%c\n "};
    int vocabs = 0, kinds = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".gguf")) continue;
        char rel[512];
        snprintf(rel, sizeof rel, VOCAB_DIR "/%s", e->d_name);
        loaded l;
        if (!load(&l, rel)) continue;
        vocabs++;
        kinds |= 1 << tokenizer_kind(l.tok);
        for (int b = 0x80; b < 0x100; b++)
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
                char in[16];
                int len = snprintf(in, sizeof in, shapes[k], b, b);
                for (int sp = 0; sp < 2; sp++) {
                    zn_err err = {0};
                    size_t m = 0, tl = 0;
                    zn_status st = tokenizer_encode(l.tok, in, (size_t)len, sp, sp, ids, MAX_IDS, &m, &err);
                    /* WordPiece drops invalid bytes (BERT's cleanup), so it may give nothing */
                    bool some = m > 0 || (tokenizer_kind(l.tok) == ZN_TOK_WPM && !sp);
                    CHECK_MSG(st == ZN_OK && some, "%s: byte 0x%02X shape %zu: %s", e->d_name, b, k, err.msg);
                    for (size_t i = 0; i < m; i++)
                        CHECK_MSG(ids[i] >= 0 && ids[i] < tokenizer_n_vocab(l.tok), "%s: id %d", e->d_name, ids[i]);
                    CHECK(tokenizer_decode(l.tok, ids, m, true, text, sizeof text, &tl, &err) == ZN_OK);
                    CHECK_MSG(valid_utf8(text, tl), "%s: byte 0x%02X", e->d_name, b);
                }
            }
        unload(&l);
    }
    closedir(dir);
    CHECK_MSG(vocabs >= 13, "only %d vocabs found", vocabs);
    CHECK_MSG(kinds == (1 << ZN_TOK_SPM | 1 << ZN_TOK_BPE | 1 << ZN_TOK_WPM), "kinds 0x%x: not SPM, BPE and WPM", kinds);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Load time of the largest vocab, speed and lossless round trip on prose. */
static void test_corpus_round_trip(void) {
    size_t len = 0;
    char *book = harness_read_file(shared_path("corpora/war-and-peace.txt"), &len);
    CHECK(book != NULL);
    if (!book) return;
    if (len > 16384) len = 16384;
    while (len && ((unsigned char)book[len - 1] & 0xC0) == 0x80) len--; /* whole characters */
    if (len) len--;
    static int32_t ids[MAX_IDS];
    static char text[1 << 16];
    const char *vocabs[] = {VOCAB_DIR "/ggml-vocab-qwen35.gguf", VOCAB_DIR "/ggml-vocab-llama-spm.gguf",
                            VOCAB_DIR "/ggml-vocab-llama-bpe.gguf"};
    for (size_t v = 0; v < 3; v++) {
        loaded l;
        double t0 = now_ms();
        if (!load(&l, vocabs[v])) continue;
        double t1 = now_ms();
        size_t n = enc(l.tok, book, len, false, false, ids);
        double t2 = now_ms();
        size_t o = 0;
        zn_err err = {0};
        CHECK(tokenizer_decode(l.tok, ids, n, false, text, sizeof text, &o, &err) == ZN_OK);
        bool same = o == len && !memcmp(text, book, len);
        if (tokenizer_kind(l.tok) == ZN_TOK_BPE && !same) { /* Llama 3 cleans up " ." etc.: compare the stream */
            zn_detok d;
            detok_init(&d, l.tok, false, true);
            o = stream(&d, ids, n, text, NULL);
            same = o == len && !memcmp(text, book, len);
        }
        CHECK_MSG(same, "%s: round trip of %zu bytes differs", vocabs[v], len);
        CHECK_MSG(n > len / 8 && n < len / 2, "%s: %zu tokens for %zu bytes", vocabs[v], n, len);
        if (getenv("ZN_TEST_VERBOSE"))
            fprintf(stderr, "    %s: load %.1f ms, %zu bytes -> %zu tokens in %.2f ms\n", vocabs[v], t1 - t0, len, n,
                    t2 - t1);
        /* generous bounds that still catch quadratic behaviour, even under ASan */
        CHECK_MSG(t1 - t0 < 3000 && t2 - t1 < 1000, "%s: load %.0f ms, encode %.0f ms", vocabs[v], t1 - t0, t2 - t1);
        unload(&l);
    }
    free(book);
}

int main(void) {
    RUN(test_ggml_vocab_vectors);
    RUN(test_special_tokens);
    RUN(test_add_special_and_eog);
    RUN(test_llama2_model_file);
    RUN(test_streaming_detok);
    RUN(test_decode_cleanup);
    RUN(test_utf8);
    RUN(test_load_errors);
    RUN(test_dummy_tokenizer);
    RUN(test_random_bytes);
    RUN(test_invalid_utf8_every_vocab);
    RUN(test_corpus_round_trip);
    return harness_report("tokenizer");
}
