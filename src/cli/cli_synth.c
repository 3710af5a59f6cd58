/* zinc synth: write a random-weight GGUF with a real model's shape. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "synth.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: zinc synth --like MODEL [--type TYPE] -o FILE [--layers N] [--experts N] [--vocab N] [--seed S]\n"
            "                  [--gate-up]\n"
            "  writes a GGUF with MODEL's tensor names, shapes, metadata and llama-quantize's per-tensor types for\n"
            "  TYPE (default q4_k_m), filled with random weights (~N(0, 0.02)); streamed, any size fits in memory.\n"
            "  --layers/--experts/--vocab shrink the model (0 or absent: the real value).\n"
            "  --gate-up: MoE experts' gate and up as one tensor, ffn_gate_up_exps (llama.cpp's merged layout).\n"
            "  MODEL: %s\n  TYPE:  %s\n",
            synth_model_list(), synth_ftype_list());
}

/* Parses a non-negative integer option value; false on junk. */
static bool parse_num(const char *s, unsigned long long max, unsigned long long *out) {
    if (!s || !*s || *s == '-') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v > max) return false;
    *out = v;
    return true;
}

int cli_synth(int argc, char **argv) {
    synth_opts o = {.seed = 1};
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long n = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--gate-up")) {
            o.gate_up = true;
            continue;
        }
        bool num = !strcmp(a, "--layers") || !strcmp(a, "--experts") || !strcmp(a, "--vocab") || !strcmp(a, "--seed");
        bool str = !strcmp(a, "--like") || !strcmp(a, "--type") || !strcmp(a, "-o");
        if (!num && !str) {
            fprintf(stderr, "zinc synth: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (!v || (num && !parse_num(v, !strcmp(a, "--seed") ? ~0ull : 0x7fffffff, &n))) {
            fprintf(stderr, "zinc synth: %s needs %s\n", a, num ? "a non-negative number" : "a value");
            return 2;
        }
        i++;
        if (!strcmp(a, "--like")) o.like = v;
        else if (!strcmp(a, "--type")) o.ftype = v;
        else if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--layers")) o.n_layer = (int)n;
        else if (!strcmp(a, "--experts")) o.n_expert = (int)n;
        else if (!strcmp(a, "--vocab")) o.n_vocab = (int)n;
        else o.seed = n;
    }
    if (!o.like || !out) {
        fprintf(stderr, "zinc synth: %s is required\n", !o.like ? "--like" : "-o FILE");
        usage(stderr);
        return 2;
    }
    synth_summary sum;
    zn_err err = {0};
    if (synth_write(&o, out, &sum, &err) != ZN_OK) {
        fprintf(stderr, "zinc synth: %s\n", err.msg);
        return 1;
    }
    printf("%s: %llu tensors, %.3f G parameters, %.2f GiB of weights (", out, (unsigned long long)sum.n_tensors,
           (double)sum.n_params / 1e9, (double)sum.data_bytes / (1u << 30));
    const char *sep = "";
    for (int t = 0; t < ZN_TYPE_COUNT; t++)
        if (sum.bytes_by_type[t]) {
            printf("%s%s %.1f%%", sep, zn_type_name((uint32_t)t), 100.0 * (double)sum.bytes_by_type[t] / (double)sum.data_bytes);
            sep = ", ";
        }
    printf(")\n");
    return 0;
}
