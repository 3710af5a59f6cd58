/* demo-pack: builds the demo model's GGUF from export.py's manifest with
 * zinc's own GGUF writer, quantizing the weight matrices.
 *
 *   demo-pack EXPORT_DIR OUT.gguf [f32|f16|q8_0]      (default q8_0)
 *
 * EXPORT_DIR holds manifest.tsv (tab-separated records), tensors.bin (raw
 * f32) and the files the manifest names. Records:
 *   kv <key> <str|str_file|u32|f32|bool|arr_i32|arr_u32|arr_str|arr_str_file> <value>
 *   tensor <name> <ne0,ne1,...> <byte offset in tensors.bin>
 * Two-dimensional tensors whose rows fit the type's block are stored in the
 * chosen type; the rest (norms, conv kernels, gates) stay F32, as
 * llama-quantize does. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

#define PACK_MAX_LINE (1 << 16)
#define PACK_MAX_ITEMS 65536

typedef struct pack {
    const char *dir;
    gguf_writer *w;
    zn_type type;
    uint8_t *f32;       /* tensors.bin */
    size_t f32_size;
    void *bufs[PACK_MAX_ITEMS]; /* memory the writer points into until write */
    size_t n_bufs;
} pack;

static zn_status read_file(const char *path, uint8_t **out, size_t *size, zn_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return zn_errf(err, ZN_ERR_IO, "%s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            uint8_t *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return zn_errf(err, ZN_ERR_IO, "%s: read error", path);
    }
    buf[n] = 0;
    *out = buf;
    *size = n;
    return ZN_OK;
}

static void *keep(pack *p, void *buf) {
    if (buf && p->n_bufs < PACK_MAX_ITEMS) p->bufs[p->n_bufs++] = buf;
    else if (buf) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Splits s in place at sep; returns the count (at most max). A separator
 * at the very end (a file's last newline) opens no extra, empty piece. */
static size_t split(char *s, char sep, char **parts, size_t max) {
    size_t n = 0;
    while (*s && n < max) {
        parts[n++] = s;
        char *e = strchr(s, sep);
        if (!e) break;
        *e = 0;
        s = e + 1;
    }
    return n;
}

static zn_status parse_u64(const char *s, uint64_t *v, const char *what, zn_err *err) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end) return zn_errf(err, ZN_ERR_FORMAT, "%s: bad number '%s'", what, s);
    *v = x;
    return ZN_OK;
}

static zn_status set_str_array(pack *p, const char *key, char *list, char sep, zn_err *err) {
    char **parts = malloc(sizeof(char *) * PACK_MAX_ITEMS * 4);
    if (!parts) return zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    size_t n = split(list, sep, parts, PACK_MAX_ITEMS * 4);
    zn_status s = gguf_writer_set_arr_str(p->w, key, (const char *const *)parts, n);
    free(parts);
    return s ? zn_errf(err, s, "%s: cannot set", key) : ZN_OK;
}

static zn_status set_int_array(pack *p, const char *key, char *list, gguf_type t, zn_err *err) {
    char **parts = malloc(sizeof(char *) * PACK_MAX_ITEMS);
    int32_t *v = malloc(sizeof(int32_t) * PACK_MAX_ITEMS);
    if (!parts || !v) {
        free(parts);
        free(v);
        return zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    }
    size_t n = split(list, ',', parts, PACK_MAX_ITEMS);
    for (size_t i = 0; i < n; i++) {
        char *end;
        long x = strtol(parts[i], &end, 10);
        if (end == parts[i] || *end) {
            zn_errf(err, ZN_ERR_FORMAT, "%s: bad integer '%s'", key, parts[i]);
            free(parts);
            free(v);
            return ZN_ERR_FORMAT;
        }
        v[i] = (int32_t)x;
    }
    zn_status s = gguf_writer_set_arr(p->w, key, t, v, n);
    free(parts);
    free(v);
    return s ? zn_errf(err, s, "%s: cannot set", key) : ZN_OK;
}

static zn_status add_kv(pack *p, char *key, const char *type, char *val, zn_err *err) {
    zn_status s = ZN_OK;
    if (!strcmp(type, "str")) {
        s = gguf_writer_set_str(p->w, key, val);
    } else if (!strcmp(type, "str_file") || !strcmp(type, "arr_str_file")) {
        char path[ZN_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", p->dir, val);
        uint8_t *buf;
        size_t size;
        if ((s = read_file(path, &buf, &size, err))) return s;
        if (type[0] == 's') s = gguf_writer_set_str(p->w, key, (char *)buf);
        else {
            s = set_str_array(p, key, (char *)buf, '\n', err);
            free(buf);
            return s;
        }
        free(buf);
    } else if (!strcmp(type, "u32") || !strcmp(type, "bool")) {
        uint64_t v;
        if ((s = parse_u64(val, &v, key, err))) return s;
        s = type[0] == 'b' ? gguf_writer_set_bool(p->w, key, v != 0)
                           : gguf_writer_set_uint(p->w, key, GGUF_TYPE_UINT32, v);
    } else if (!strcmp(type, "f32")) {
        char *end;
        float v = strtof(val, &end);
        if (end == val || *end) return zn_errf(err, ZN_ERR_FORMAT, "%s: bad float '%s'", key, val);
        s = gguf_writer_set_f32(p->w, key, v);
    } else if (!strcmp(type, "arr_i32") || !strcmp(type, "arr_u32")) {
        return set_int_array(p, key, val, type[4] == 'i' ? GGUF_TYPE_INT32 : GGUF_TYPE_UINT32, err);
    } else if (!strcmp(type, "arr_str")) {
        return set_str_array(p, key, val, ',', err);
    } else {
        return zn_errf(err, ZN_ERR_FORMAT, "%s: unknown value type '%s'", key, type);
    }
    return s ? zn_errf(err, s, "%s: cannot set", key) : ZN_OK;
}

static zn_status add_tensor(pack *p, const char *name, char *shape, const char *offset, zn_err *err) {
    char *dims[ZN_GGUF_MAX_DIMS + 1];
    size_t nd = split(shape, ',', dims, ZN_GGUF_MAX_DIMS + 1);
    if (nd == 0 || nd > ZN_GGUF_MAX_DIMS) return zn_errf(err, ZN_ERR_FORMAT, "%s: bad shape", name);
    uint64_t ne[ZN_GGUF_MAX_DIMS], n = 1, off;
    zn_status s;
    for (size_t i = 0; i < nd; i++) {
        if ((s = parse_u64(dims[i], &ne[i], name, err))) return s;
        if (ne[i] == 0 || ne[i] > (1u << 30) || n * ne[i] > (UINT64_MAX >> 3)) return zn_errf(err, ZN_ERR_FORMAT, "%s: bad dimension", name);
        n *= ne[i];
    }
    if ((s = parse_u64(offset, &off, name, err))) return s;
    if (off % 4 || off > p->f32_size || n * 4 > p->f32_size - off)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: data [%" PRIu64 ", +%" PRIu64 ") outside tensors.bin", name, off, n * 4);
    const float *src = (const float *)(p->f32 + off);

    zn_type t = ZN_TYPE_F32;
    if (nd == 2 && p->type != ZN_TYPE_F32 && zn_row_size(p->type, (int64_t)ne[0]) > 0) t = p->type;
    if (t == ZN_TYPE_F32) return gguf_writer_add_tensor(p->w, name, t, (uint32_t)nd, ne, src, err);

    size_t row = zn_row_size(t, (int64_t)ne[0]);
    uint64_t rows = n / ne[0];
    uint8_t *dst = keep(p, malloc(row * rows));
    if (!dst) return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory", name);
    for (uint64_t r = 0; r < rows; r++) quant_quantize_row(t, src + r * ne[0], dst + r * row, (int64_t)ne[0]);
    return gguf_writer_add_tensor(p->w, name, t, (uint32_t)nd, ne, dst, err);
}

static zn_status run(pack *p, const char *out, zn_err *err) {
    char path[ZN_PATH_MAX];
    snprintf(path, sizeof path, "%s/tensors.bin", p->dir);
    zn_status s = read_file(path, &p->f32, &p->f32_size, err);
    if (s) return s;
    /* tensors.bin was read into a byte buffer; malloc's alignment suits f32. */
    snprintf(path, sizeof path, "%s/manifest.tsv", p->dir);
    uint8_t *man;
    size_t man_size;
    if ((s = read_file(path, &man, &man_size, err))) return s;
    if ((s = gguf_writer_init(&p->w, 32, err))) {
        free(man);
        return s;
    }
    /* general.file_type as llama.cpp numbers it (LLAMA_FTYPE_*). */
    uint32_t ftype = p->type == ZN_TYPE_F32 ? 0 : p->type == ZN_TYPE_F16 ? 1 : 7;
    gguf_writer_set_uint(p->w, "general.file_type", GGUF_TYPE_UINT32, ftype);
    if (p->type != ZN_TYPE_F32 && p->type != ZN_TYPE_F16)
        gguf_writer_set_uint(p->w, "general.quantization_version", GGUF_TYPE_UINT32, 2);

    char **lines = malloc(sizeof(char *) * PACK_MAX_ITEMS);
    size_t nl = lines ? split((char *)man, '\n', lines, PACK_MAX_ITEMS) : 0;
    if (nl == 0 || strcmp(lines[0], "zinc-pack\t1")) {
        free(lines);
        free(man);
        return zn_errf(err, ZN_ERR_FORMAT, "%s: not a zinc-pack 1 manifest", path);
    }
    for (size_t i = 1; i < nl && !s; i++) {
        char *f[5];
        size_t nf = split(lines[i], '\t', f, 5);
        if (nf == 4 && !strcmp(f[0], "kv")) s = add_kv(p, f[1], f[2], f[3], err);
        else if (nf == 4 && !strcmp(f[0], "tensor")) s = add_tensor(p, f[1], f[2], f[3], err);
        else if (nf) s = zn_errf(err, ZN_ERR_FORMAT, "%s:%zu: bad record", path, i + 1);
        if (s) zn_err_prefix(err, "%s:%zu", path, i + 1);
    }
    free(lines);
    free(man);
    if (!s) s = gguf_writer_write(p->w, out, err);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: demo-pack EXPORT_DIR OUT.gguf [f32|f16|q8_0]\n");
        return 2;
    }
    pack p = {.dir = argv[1], .type = ZN_TYPE_Q8_0};
    if (argc == 4) {
        if (!strcmp(argv[3], "f32")) p.type = ZN_TYPE_F32;
        else if (!strcmp(argv[3], "f16")) p.type = ZN_TYPE_F16;
        else if (!strcmp(argv[3], "q8_0")) p.type = ZN_TYPE_Q8_0;
        else {
            fprintf(stderr, "demo-pack: unknown type '%s'\n", argv[3]);
            return 2;
        }
    }
    zn_err err = {0};
    zn_status s = run(&p, argv[2], &err);
    gguf_writer_free(p.w);
    for (size_t i = 0; i < p.n_bufs; i++) free(p.bufs[i]);
    free(p.f32);
    if (s) {
        fprintf(stderr, "demo-pack: %s\n", err.msg);
        return 1;
    }
    return 0;
}
