/* zinc tokenize / zinc detokenize: the model's tokenizer from the command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "file.h"
#include "gguf.h"
#include "tokenizer.h"

static const char tokenize_usage[] =
    "usage: zinc tokenize -m MODEL [--no-bos] [--no-special] TEXT\n"
    "       zinc tokenize -m MODEL [...] -f FILE      (FILE '-' = standard input)\n"
    "Prints the token ids of TEXT as a JSON array.\n"
    "  -m, --model MODEL  GGUF file whose tokenizer is used (the weights are not read)\n"
    "  --no-bos           do not add the BOS/EOS tokens the model asks for (add_bos_token)\n"
    "  --no-special       tokenize control-token text such as <|im_start|> as plain text\n"
    "  -f, --file FILE    read the text from FILE instead of the command line\n";

static const char detokenize_usage[] =
    "usage: zinc detokenize -m MODEL [--no-special] IDS\n"
    "Prints the text of token ids, e.g. IDS = 1,2,3 or '[1, 2, 3]' (as tokenize prints).\n"
    "  -m, --model MODEL  GGUF file whose tokenizer is used\n"
    "  --no-special       leave control tokens (BOS, <|im_end|>, ...) out of the text\n";

typedef struct tok_cli {
    const char *model, *arg, *file;
    bool no_bos, no_special;
} tok_cli;

/* Returns 0 on success, 1 when --help was printed, 2 on a usage error. */
static int parse_args(int argc, char **argv, tok_cli *o, const char *usage, bool allow_file) {
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 1;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) {
            o->model = argv[++i];
        } else if (allow_file && (!strcmp(a, "-f") || !strcmp(a, "--file")) && i + 1 < argc) {
            o->file = argv[++i];
        } else if (allow_file && !strcmp(a, "--no-bos")) {
            o->no_bos = true;
        } else if (!strcmp(a, "--no-special")) {
            o->no_special = true;
        } else if (a[0] == '-' && a[1] && !o->arg && strcmp(a, "--")) {
            fprintf(stderr, "zinc %s: unknown option '%s'\n%s", argv[0], a, usage);
            return 2;
        } else if (!strcmp(a, "--") && i + 1 < argc && !o->arg) {
            o->arg = argv[++i];
        } else if (!o->arg) {
            o->arg = a;
        } else {
            fprintf(stderr, "zinc %s: unexpected argument '%s'\n%s", argv[0], a, usage);
            return 2;
        }
    }
    if (!o->model || (!o->arg == !(allow_file && o->file))) {
        fprintf(stderr, "zinc %s: %s\n%s", argv[0], o->model ? "give the input once" : "-m MODEL is required", usage);
        return 2;
    }
    return 0;
}

static int open_tokenizer(const char *cmd, const char *path, gguf_ctx *g, zn_tokenizer **tok) {
    zn_err err = {0};
    if (gguf_open(g, path, &err)) {
        fprintf(stderr, "zinc %s: %s\n", cmd, err.msg);
        return 1;
    }
    if (tokenizer_load(tok, g, &err)) {
        fprintf(stderr, "zinc %s: %s\n", cmd, err.msg);
        gguf_close(g);
        return 1;
    }
    return 0;
}

int cli_tokenize(int argc, char **argv) {
    tok_cli o;
    int rc = parse_args(argc, argv, &o, tokenize_usage, true);
    if (rc) return rc == 1 ? 0 : rc;
    char *owned = NULL;
    const char *text = o.arg;
    size_t len = text ? strlen(text) : 0;
    if (o.file) {
        zn_err ferr = {0};
        zn_status fs = strcmp(o.file, "-")
                           ? zn_file_read_all(o.file, ZN_MAX_PROMPT_BYTES, &owned, &len, &ferr)
                           : zn_file_read_stream(stdin, "standard input", ZN_MAX_PROMPT_BYTES, &owned, &len, &ferr);
        if (fs) {
            fprintf(stderr, "zinc tokenize: -f: %s\n", ferr.msg);
            return 1;
        }
        text = owned;
    }
    gguf_ctx g;
    zn_tokenizer *tok;
    if (open_tokenizer("tokenize", o.model, &g, &tok)) {
        free(owned);
        return 1;
    }
    size_t cap = 3 * len + 8, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    zn_err err = {0};
    zn_status s = ids ? tokenizer_encode(tok, text, len, !o.no_bos, !o.no_special, ids, cap, &n, &err) : ZN_ERR_NOMEM;
    if (s == ZN_ERR_NOMEM && ids && n > cap) { /* more tokens than the estimate: retry with the count */
        int32_t *p = realloc(ids, n * sizeof *ids);
        if (p) ids = p, cap = n, s = tokenizer_encode(tok, text, len, !o.no_bos, !o.no_special, ids, cap, &n, &err);
    }
    if (s) {
        fprintf(stderr, "zinc tokenize: %s\n", ids ? err.msg : "out of memory");
        rc = 1;
    } else {
        putchar('[');
        for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        puts("]");
    }
    free(ids);
    free(owned);
    tokenizer_free(tok);
    gguf_close(&g);
    return rc;
}

/* "1,2,3", "1 2 3" or "[1, 2, 3]" */
static int parse_ids(const char *s, int32_t **out, size_t *n) {
    size_t cap = strlen(s) / 2 + 1;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return -1;
    *n = 0;
    for (const char *p = s; *p;) {
        if (strchr("[], \t\n", *p)) {
            p++;
            continue;
        }
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) {
            free(ids);
            return -1;
        }
        ids[(*n)++] = (int32_t)v;
        p = end;
    }
    *out = ids;
    return 0;
}

int cli_detokenize(int argc, char **argv) {
    tok_cli o;
    int rc = parse_args(argc, argv, &o, detokenize_usage, false);
    if (rc) return rc == 1 ? 0 : rc;
    int32_t *ids;
    size_t n;
    if (parse_ids(o.arg, &ids, &n)) {
        fprintf(stderr, "zinc detokenize: '%s': not a list of token ids\n%s", o.arg, detokenize_usage);
        return 2;
    }
    gguf_ctx g;
    zn_tokenizer *tok;
    if (open_tokenizer("detokenize", o.model, &g, &tok)) {
        free(ids);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= tokenizer_n_vocab(tok)) {
            fprintf(stderr, "zinc detokenize: token %d is out of range (vocab of %d)\n", ids[i],
                    tokenizer_n_vocab(tok));
            rc = 1;
        }
    size_t len = 0;
    char *text = NULL;
    zn_err err = {0};
    if (!rc) { /* the first call only measures */
        tokenizer_decode(tok, ids, n, !o.no_special, NULL, 0, &len, &err);
        text = malloc(len + 1);
    }
    if (!rc && (!text || tokenizer_decode(tok, ids, n, !o.no_special, text, len, &len, &err))) {
        fprintf(stderr, "zinc detokenize: %s\n", text ? err.msg : "out of memory");
        rc = 1;
    }
    if (!rc) {
        fwrite(text, 1, len, stdout);
        putchar('\n');
    }
    free(text);
    free(ids);
    tokenizer_free(tok);
    gguf_close(&g);
    return rc;
}
