/* Tokenizer tests. The reference is llama.cpp's test-tokenizer-0 data: every
 * ../shared/tokenizers/ggml-vocab/X.gguf.inp case whose X.gguf exists must
 * tokenize (add_special = false, parse_special = false) exactly to the ids in
 * X.gguf.out. Everything else is checked against hand-derived expectations. */
#include <dirent.h>
#include <time.h>

#include "gguf.h"
#include "harness.h"
#include "tokenizer.h"
#include "utf8.h"

#define VOCAB_DIR "tokenizers/ggml-vocab"
#define MAX_IDS 65536

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
    fclose(f);
    if (buf) buf[n] = 0, *len = (size_t)n;
    return buf;
}

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
    size_t ni, no;
    char *inp = read_all(inp_path, &ni), *out = read_all(out_path, &no);
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

int main(void) {
    RUN(test_ggml_vocab_vectors);
    return harness_report("tokenizer");
}
