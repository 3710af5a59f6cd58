/* gguf-edit IN OUT [edits]: the shell tests' fixture maker (tests/gguf_edit.h).
 *   --align N             general.alignment N (1, 2, ...)
 *   --drop KEY            leave a metadata key out
 *   --i32 KEY=V, --u32 KEY=V, --f32 KEY=V, --str KEY=V, --arr-i32 KEY=a,b,c
 *   --fill TENSOR=V       every element of an F32 tensor (V: a number, nan, inf, -inf)
 *   --vocab N             the vocabulary cut or padded to N tokens */
#include <errno.h>

#include "gguf_edit.h"

static int usage(void) {
    fprintf(stderr, "usage: gguf-edit IN OUT [--align N] [--drop KEY] [--i32|--u32|--f32|--str KEY=V] "
                    "[--arr-i32 KEY=a,b,...] [--fill TENSOR=V] [--vocab N]\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    gedit e = {0};
    static int32_t arrs[GEDIT_MAX][64];
    int nd = 0, ns = 0;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) return usage();
        char *eq = strrchr(v, '=');
        if (!strcmp(a, "--align")) e.align = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--drop") && nd < GEDIT_MAX) e.drop_key[nd++] = v;
        else if (!strcmp(a, "--vocab")) e.vocab = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--fill") && eq) {
            *eq = 0;
            e.fill = v;
            e.fill_value = strtof(eq + 1, NULL);
        } else if (ns < GEDIT_MAX && eq && (!strcmp(a, "--i32") || !strcmp(a, "--u32") || !strcmp(a, "--f32") ||
                                            !strcmp(a, "--str") || !strcmp(a, "--arr-i32"))) {
            *eq = 0;
            gedit_set *k = &e.set[ns];
            k->key = v;
            k->kind = a[2] == 'i' ? 'i' : a[2] == 'u' ? 'u' : a[2] == 'f' ? 'f' : a[2] == 's' ? 's' : 'a';
            k->i = strtoll(eq + 1, NULL, 10);
            k->f = strtod(eq + 1, NULL);
            k->s = eq + 1;
            for (char *p = eq + 1; k->kind == 'a' && *p && k->n < 64; p += *p == ',') arrs[ns][k->n++] = (int32_t)strtol(p, &p, 10);
            k->arr = arrs[ns++];
        } else return usage();
    }
    zn_err err = {0};
    if (gedit_write(argv[1], &e, argv[2], &err)) {
        fprintf(stderr, "gguf-edit: %s\n", err.msg);
        return 1;
    }
    return 0;
}
