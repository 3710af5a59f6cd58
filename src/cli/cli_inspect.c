/* zinc inspect FILE [--json]: what a GGUF file holds, readable (like
 * gguf-dump, with the facts one needs first: architecture, main hparams,
 * tokenizer, sizes) or as one JSON object with the same facts. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"

#define INSPECT_ARR_HEAD 8    /* array elements shown before "..." */
#define INSPECT_STR_SHOWN 72  /* bytes of a string value shown in text mode */

/* Hyperparameters shown up front, as "<arch>.<suffix>". */
static const char *const hparam_keys[] = {
    "context_length", "embedding_length", "block_count", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
    "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "rope.dimension_count",
    "rope.dimension_sections", "rope.freq_base", "expert_count", "expert_used_count", "expert_shared_count",
    "expert_feed_forward_length", "expert_shared_feed_forward_length", "full_attention_interval",
    "ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size", "vocab_size",
};

/* llama.cpp's general.file_type values (LLAMA_FTYPE_*). */
static const char *const ftype_names[] = {
    [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0", [9] = "Q5_1",
    [10] = "Q2_K", [11] = "Q3_K_S", [12] = "Q3_K_M", [13] = "Q3_K_L", [14] = "Q4_K_S", [15] = "Q4_K_M",
    [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K", [19] = "IQ2_XXS", [20] = "IQ2_XS", [21] = "Q2_K_S",
    [22] = "IQ3_XS", [23] = "IQ3_XXS", [24] = "IQ1_S", [25] = "IQ4_NL", [26] = "IQ3_S", [27] = "IQ3_M",
    [28] = "IQ2_S", [29] = "IQ2_M", [30] = "IQ4_XS", [31] = "IQ1_M", [32] = "BF16", [36] = "TQ1_0",
    [37] = "TQ2_0", [38] = "MXFP4_MOE",
};

static const char *ftype_name(int64_t v) {
    if (v >= 0 && v < (int64_t)(sizeof ftype_names / sizeof ftype_names[0]) && ftype_names[v]) return ftype_names[v];
    return "unknown";
}

/* ---- summary numbers ---- */

typedef struct summary {
    uint64_t tensor_bytes, params;
    uint64_t type_count[ZN_TYPE_COUNT], type_bytes[ZN_TYPE_COUNT];
    char arch[64];
    const gguf_arr *tokens;
    const gguf_kv *chat_template;
} summary;

static void summarize(const gguf_ctx *g, summary *s) {
    memset(s, 0, sizeof *s);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        s->tensor_bytes += t->nbytes;
        s->params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        s->type_count[t->type]++;
        s->type_bytes[t->type] += t->nbytes;
    }
    gguf_get_str_or(g, "general.architecture", s->arch, sizeof s->arch, "");
    if (gguf_get_arr(g, "tokenizer.ggml.tokens", &s->tokens, NULL) != ZN_OK) s->tokens = NULL;
    s->chat_template = gguf_find_kv(g, "tokenizer.chat_template");
    if (s->chat_template && s->chat_template->type != GGUF_TYPE_STRING) s->chat_template = NULL;
}

static void human(char *buf, size_t cap, double v, double base, const char *const *units, int n_units) {
    int u = 0;
    while (v >= base && u < n_units - 1) v /= base, u++;
    if (u == 0) snprintf(buf, cap, "%.0f%s%s", v, units[0][0] ? " " : "", units[0]);
    else snprintf(buf, cap, "%.2f %s", v, units[u]);
}

static void human_params(char *buf, size_t cap, uint64_t n) {
    static const char *const u[] = {"", "K", "M", "B", "T"};
    human(buf, cap, (double)n, 1000, u, 5);
}

static void human_bytes(char *buf, size_t cap, uint64_t n) {
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    human(buf, cap, (double)n, 1024, u, 5);
}

/* ---- value printing: text ---- */

/* Length of the valid UTF-8 sequence at p (0 if invalid). */
static size_t utf8_len(const unsigned char *p, uint64_t left) {
    unsigned char c = p[0];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || n > left) return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (size_t i = 1; i < n; i++) cp = cp << 6 | (p[i] & 0x3f);
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0; /* overlong, surrogate */
    return n;
}

/* Writes s escaped for a terminal line: printable text and valid UTF-8 as
 * is, control bytes and invalid UTF-8 as \n, \t or \xNN; at most max bytes. */
static void text_str(FILE *f, gguf_str s, uint64_t max) {
    const unsigned char *p = (const unsigned char *)s.ptr;
    uint64_t n = s.len < max ? s.len : max;
    while (n < s.len && n > 0 && (p[n] & 0xc0) == 0x80) n--; /* don't cut a UTF-8 sequence */
    fputc('"', f);
    for (uint64_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t k = utf8_len(p + i, n - i);
        if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (k == 0 || c < 32 || c == 127) fprintf(f, "\\x%02x", c);
        else fwrite(p + i, 1, k, f);
        i += k ? k : 1;
    }
    fputc('"', f);
    if (n < s.len) fprintf(f, "... (%" PRIu64 " bytes)", s.len);
}

/* A name (key, tensor, architecture, path) for a text column: escaped as
 * text_str does, without quotes, cut after max bytes of input, padded to
 * width bytes of output. */
#define INSPECT_NAME_SHOWN 200
static void text_name(FILE *f, const char *s, size_t len, size_t max, int width) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = len < max ? len : max;
    long o = 0;
    while (n < len && n > 0 && (p[n] & 0xc0) == 0x80) n--;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t k = utf8_len(p + i, n - i);
        if (c == '\n') o += fprintf(f, "\\n");
        else if (c == '\t') o += fprintf(f, "\\t");
        else if (c == '\\') o += fprintf(f, "\\\\");
        else if (k == 0 || c < 32 || c == 127) o += fprintf(f, "\\x%02x", c);
        else o += (long)fwrite(p + i, 1, k, f);
        i += k ? k : 1;
    }
    if (n < len) o += fprintf(f, "...");
    for (; o < width; o++) fputc(' ', f);
}

static void text_float(FILE *f, double v, bool f32) { fprintf(f, "%.*g", f32 ? 7 : 16, v); }
static void json_float(FILE *f, double v, bool f32);

/* Element i of a numeric or bool array as a scalar kv, so that one printer
 * serves scalars and array elements. */
static gguf_kv arr_elem(const gguf_arr *a, uint64_t i) {
    gguf_kv kv = {.type = a->type};
    switch (a->type) {
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64: kv.v.f64 = gguf_arr_float(a, i); break;
    case GGUF_TYPE_BOOL: kv.v.b = gguf_arr_int(a, i) != 0; break;
    case GGUF_TYPE_UINT64: memcpy(&kv.v.u64, (const uint8_t *)a->data + 8 * i, 8); break;
    default: kv.v.i64 = gguf_arr_int(a, i); break; /* exact for every other integer type */
    }
    return kv;
}

static void scalar_out(FILE *f, const gguf_kv *kv, bool json) {
    switch (kv->type) {
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64:
        (json ? json_float : text_float)(f, kv->v.f64, kv->type == GGUF_TYPE_FLOAT32); break;
    case GGUF_TYPE_BOOL: fputs(kv->v.b ? "true" : "false", f); break;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64:
        fprintf(f, "%" PRId64, kv->v.i64); break;
    default: fprintf(f, "%" PRIu64, kv->v.u64); break; /* unsigned integers */
    }
}

static void text_arr(FILE *f, const gguf_arr *a) {
    fputc('[', f);
    uint64_t shown = a->n < INSPECT_ARR_HEAD ? a->n : INSPECT_ARR_HEAD;
    for (uint64_t i = 0; i < shown; i++) {
        if (i) fputs(", ", f);
        if (a->type == GGUF_TYPE_STRING) text_str(f, a->strs[i], INSPECT_STR_SHOWN);
        else if (a->type == GGUF_TYPE_ARRAY) text_arr(f, &a->subs[i]);
        else {
            gguf_kv e = arr_elem(a, i);
            scalar_out(f, &e, false);
        }
    }
    if (shown < a->n) fprintf(f, ", ... (%" PRIu64 " total)", a->n);
    fputc(']', f);
}

static void text_value(FILE *f, const gguf_kv *kv) {
    if (kv->type == GGUF_TYPE_STRING) text_str(f, kv->v.str, INSPECT_STR_SHOWN);
    else if (kv->type == GGUF_TYPE_ARRAY) text_arr(f, &kv->v.arr);
    else scalar_out(f, kv, false);
}

static void type_label(char *buf, size_t cap, const gguf_kv *kv) {
    if (kv->type == GGUF_TYPE_ARRAY)
        snprintf(buf, cap, "arr[%s,%" PRIu64 "]", gguf_type_name(kv->v.arr.type), kv->v.arr.n);
    else
        snprintf(buf, cap, "%s", gguf_type_name(kv->type));
}

static void shape_text(char *buf, size_t cap, const gguf_tensor *t) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

static void print_text(FILE *f, const gguf_ctx *g, const summary *s) {
    char b1[64], b2[64];
    human_bytes(b1, sizeof b1, g->size);
    fputs("file:          ", f), text_name(f, g->path, strlen(g->path), ZN_PATH_MAX, 0), fputc('\n', f);
    fprintf(f, "size:          %s (%" PRIu64 " bytes)\n", b1, g->size);
    fprintf(f, "gguf version:  %" PRIu32 "\n", g->version);
    fprintf(f, "alignment:     %" PRIu64 "\n", g->alignment);
    const char *arch = s->arch[0] ? s->arch : "(none)";
    fputs("architecture:  ", f), text_name(f, arch, strlen(arch), INSPECT_NAME_SHOWN, 0), fputc('\n', f);
    const gguf_kv *kv = gguf_find_kv(g, "general.name");
    if (kv) fputs("name:          ", f), text_value(f, kv), fputc('\n', f);
    int64_t ft = gguf_get_int_or(g, "general.file_type", -1);
    if (ft >= 0) fprintf(f, "file type:     %s (%" PRId64 ")\n", ftype_name(ft), ft);
    human_params(b1, sizeof b1, s->params);
    human_bytes(b2, sizeof b2, s->tensor_bytes);
    fprintf(f, "tensors:       %" PRIu64 ", %s parameters, %s (%" PRIu64 " bytes)\n", g->n_tensors, b1, b2,
            s->tensor_bytes);

    if (s->arch[0]) {
        fputs("\nhyperparameters (", f), text_name(f, s->arch, strlen(s->arch), INSPECT_NAME_SHOWN, 0), fputs(".*):\n", f);
        for (size_t i = 0; i < sizeof hparam_keys / sizeof hparam_keys[0]; i++) {
            char key[160];
            snprintf(key, sizeof key, "%s.%s", s->arch, hparam_keys[i]);
            if ((kv = gguf_find_kv(g, key))) fprintf(f, "  %-34s ", hparam_keys[i]), text_value(f, kv), fputc('\n', f);
        }
    }

    fputs("\ntokenizer:\n", f);
    static const char *const tok_keys[] = {"model", "pre", "bos_token_id", "eos_token_id", "padding_token_id"};
    for (size_t i = 0; i < sizeof tok_keys / sizeof tok_keys[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", tok_keys[i]);
        if ((kv = gguf_find_kv(g, key))) fprintf(f, "  %-14s ", tok_keys[i]), text_value(f, kv), fputc('\n', f);
    }
    if (s->tokens) fprintf(f, "  %-14s %" PRIu64 "\n", "vocab size", s->tokens->n);
    else fprintf(f, "  %-14s (no tokenizer.ggml.tokens)\n", "vocab size");
    if (s->chat_template) fprintf(f, "  %-14s present (%" PRIu64 " bytes)\n", "chat template", s->chat_template->v.str.len);
    else fprintf(f, "  %-14s absent\n", "chat template");

    fprintf(f, "\nmetadata (%" PRIu64 " keys):\n", g->n_kv);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        char label[64];
        type_label(label, sizeof label, &g->kv[i]);
        fputs("  ", f), text_name(f, g->kv[i].key.ptr, g->kv[i].key.len, INSPECT_NAME_SHOWN, 44), fprintf(f, " %-16s ", label);
        text_value(f, &g->kv[i]);
        fputc('\n', f);
    }

    if (g->n_tensors) {
        fputs("\ntensor types:\n", f);
        for (int t = 0; t < ZN_TYPE_COUNT; t++) {
            if (!s->type_count[t]) continue;
            human_bytes(b1, sizeof b1, s->type_bytes[t]);
            fprintf(f, "  %-8s %6" PRIu64 " tensors %12s\n", zn_type_name((uint32_t)t), s->type_count[t], b1);
        }
    }
    fprintf(f, "\ntensors (%" PRIu64 "):\n", g->n_tensors);
    if (g->n_tensors) fprintf(f, "  %5s  %-40s %-8s %-24s %12s %12s\n", "#", "name", "type", "shape", "bytes", "offset");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        char shape[128];
        shape_text(shape, sizeof shape, t);
        fprintf(f, "  %5" PRIu64 "  ", i), text_name(f, t->name, strlen(t->name), INSPECT_NAME_SHOWN, 40);
        fprintf(f, " %-8s %-24s %12" PRIu64 " %12" PRIu64 "\n", zn_type_name(t->type), shape, t->nbytes, t->offset);
    }
    human_params(b1, sizeof b1, s->params);
    human_bytes(b2, sizeof b2, s->tensor_bytes);
    fprintf(f, "\ntotal: %" PRIu64 " tensors, %s (%" PRIu64 " bytes), %s parameters (%" PRIu64 ")\n", g->n_tensors, b2,
            s->tensor_bytes, b1, s->params);
}

/* ---- value printing: JSON ---- */

/* A JSON string; bytes that are not valid UTF-8 become U+FFFD so the output
 * always parses. */
static void json_str(FILE *f, const char *s, uint64_t len) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (uint64_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t n = utf8_len(p + i, len - i);
        if (n == 0) {
            fputs("\\ufffd", f);
            i++;
            continue;
        }
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c < 32 || c == 127) fprintf(f, "\\u%04x", c);
        else fwrite(p + i, 1, n, f);
        i += n;
    }
    fputc('"', f);
}

static void json_cstr(FILE *f, const char *s) { json_str(f, s, strlen(s)); }

/* inf and nan are not JSON numbers: written as the strings "inf", "-inf", "nan". */
static void json_float(FILE *f, double v, bool f32) {
    if (isnan(v)) fputs("\"nan\"", f);
    else if (isinf(v)) fputs(v > 0 ? "\"inf\"" : "\"-inf\"", f);
    else fprintf(f, "%.*g", f32 ? 9 : 17, v);
}

static void json_arr(FILE *f, const gguf_arr *a, uint64_t max) {
    fputc('[', f);
    uint64_t shown = a->n < max ? a->n : max;
    for (uint64_t i = 0; i < shown; i++) {
        if (i) fputc(',', f);
        if (a->type == GGUF_TYPE_STRING) json_str(f, a->strs[i].ptr, a->strs[i].len);
        else if (a->type == GGUF_TYPE_ARRAY) json_arr(f, &a->subs[i], max);
        else {
            gguf_kv e = arr_elem(a, i);
            scalar_out(f, &e, true);
        }
    }
    fputc(']', f);
}

/* Scalars in full; arrays as their first INSPECT_ARR_HEAD elements (the
 * "count" field says how many there are). */
static void json_value(FILE *f, const gguf_kv *kv) {
    if (kv->type == GGUF_TYPE_STRING) json_str(f, kv->v.str.ptr, kv->v.str.len);
    else if (kv->type == GGUF_TYPE_ARRAY) json_arr(f, &kv->v.arr, INSPECT_ARR_HEAD);
    else scalar_out(f, kv, true);
}

static void json_key(FILE *f, bool *first, const char *key) {
    fputs(*first ? "" : ",", f);
    *first = false;
    json_cstr(f, key);
    fputc(':', f);
}

static void print_json(FILE *f, const gguf_ctx *g, const summary *s) {
    char buf[64];
    bool first = true;
    fputc('{', f);
    json_key(f, &first, "file"), json_cstr(f, g->path);
    json_key(f, &first, "size"), fprintf(f, "%" PRIu64, g->size);
    json_key(f, &first, "version"), fprintf(f, "%" PRIu32, g->version);
    json_key(f, &first, "alignment"), fprintf(f, "%" PRIu64, g->alignment);
    json_key(f, &first, "architecture");
    if (s->arch[0]) json_cstr(f, s->arch);
    else fputs("null", f);
    const gguf_kv *kv = gguf_find_kv(g, "general.name");
    json_key(f, &first, "name");
    if (kv && kv->type == GGUF_TYPE_STRING) json_value(f, kv);
    else fputs("null", f);
    int64_t ft = gguf_get_int_or(g, "general.file_type", -1);
    json_key(f, &first, "file_type");
    if (ft >= 0) json_cstr(f, ftype_name(ft));
    else fputs("null", f);

    json_key(f, &first, "hparams");
    fputc('{', f);
    bool hfirst = true;
    for (size_t i = 0; s->arch[0] && i < sizeof hparam_keys / sizeof hparam_keys[0]; i++) {
        char key[160];
        snprintf(key, sizeof key, "%s.%s", s->arch, hparam_keys[i]);
        if ((kv = gguf_find_kv(g, key))) json_key(f, &hfirst, hparam_keys[i]), json_value(f, kv);
    }
    fputc('}', f);

    json_key(f, &first, "tokenizer");
    fputc('{', f);
    bool tfirst = true;
    static const char *const tok_keys[] = {"model", "pre", "bos_token_id", "eos_token_id", "padding_token_id"};
    for (size_t i = 0; i < sizeof tok_keys / sizeof tok_keys[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", tok_keys[i]);
        if ((kv = gguf_find_kv(g, key))) json_key(f, &tfirst, tok_keys[i]), json_value(f, kv);
    }
    json_key(f, &tfirst, "vocab_size");
    if (s->tokens) fprintf(f, "%" PRIu64, s->tokens->n);
    else fputs("null", f);
    fputc('}', f);
    json_key(f, &first, "chat_template");
    fprintf(f, "{\"present\":%s,\"length\":%" PRIu64 "}", s->chat_template ? "true" : "false",
            s->chat_template ? s->chat_template->v.str.len : 0);

    json_key(f, &first, "metadata");
    fputc('[', f);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        kv = &g->kv[i];
        fputs(i ? ",{\"key\":" : "{\"key\":", f);
        json_str(f, kv->key.ptr, kv->key.len);
        fprintf(f, ",\"type\":\"%s\"", gguf_type_name(kv->type));
        if (kv->type == GGUF_TYPE_ARRAY)
            fprintf(f, ",\"elem_type\":\"%s\",\"count\":%" PRIu64, gguf_type_name(kv->v.arr.type), kv->v.arr.n);
        fputs(",\"value\":", f);
        json_value(f, kv);
        fputc('}', f);
    }
    fputc(']', f);

    json_key(f, &first, "tensors");
    fputc('[', f);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_cstr(f, t->name);
        fprintf(f, ",\"type\":\"%s\",\"shape\":[", zn_type_name(t->type));
        for (uint32_t d = 0; d < t->n_dims; d++) fprintf(f, "%s%" PRIu64, d ? "," : "", t->ne[d]);
        fprintf(f, "],\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64 "}", t->nbytes, t->offset);
    }
    fputc(']', f);
    json_key(f, &first, "n_tensors"), fprintf(f, "%" PRIu64, g->n_tensors);
    json_key(f, &first, "tensor_bytes"), fprintf(f, "%" PRIu64, s->tensor_bytes);
    json_key(f, &first, "params"), fprintf(f, "%" PRIu64, s->params);
    human_params(buf, sizeof buf, s->params);
    json_key(f, &first, "params_human"), json_cstr(f, buf);
    fputs("}\n", f);
}

static void usage(FILE *f) {
    fprintf(f, "usage: zinc inspect FILE [--json]\n"
               "  Shows a GGUF file: version, architecture, main hyperparameters, tokenizer, every\n"
               "  metadata key (long arrays abbreviated), every tensor (type, shape, bytes, offset),\n"
               "  total tensor bytes and parameter count. The file is fully validated first.\n"
               "  --json   one JSON object with the same facts (arrays: first %d elements and a count;\n"
               "           inf/nan floats as the strings \"inf\", \"-inf\", \"nan\")\n",
            INSPECT_ARR_HEAD);
}

int cli_inspect(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "zinc: inspect: unknown option '%s' (zinc inspect --help)\n", argv[i]);
            return 2;
        } else if (path) {
            fprintf(stderr, "zinc: inspect: one file at a time (got '%s' and '%s')\n", path, argv[i]);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "zinc: inspect: no file given (usage: zinc inspect FILE [--json])\n");
        return 2;
    }
    gguf_ctx g;
    zn_err err = {0};
    if (gguf_open(&g, path, &err) != ZN_OK) {
        fprintf(stderr, "zinc: inspect: %s\n", err.msg);
        return 1;
    }
    summary s;
    summarize(&g, &s);
    if (json) print_json(stdout, &g, &s);
    else print_text(stdout, &g, &s);
    gguf_close(&g);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "zinc: inspect: cannot write the output\n");
        return 1;
    }
    return 0;
}
