/* GGUF v2/v3 reader and v3 writer.
 *
 * Reader: the whole file is mapped and walked once with a bounds-checked
 * cursor. Every count is checked against the bytes left in the file before
 * anything is allocated, so a hostile file can make us allocate at most a
 * small multiple of its own size. Metadata values point into the map;
 * index tables (kv array, tensor array, string/array tables, hash tables)
 * live in one arena freed by gguf_close().
 *
 * Writer: each kv is serialized to bytes when it is set, so replacing a key
 * is replacing one buffer and writing is concatenation. */
#include "gguf.h"
#include "embedded.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF is read in place: little-endian hosts only");

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGN 32
#define GGUF_KEY_ALIGN "general.alignment"

/* Smallest encodings, used to bound counts by the bytes left. */
#define MIN_KV_BYTES 13      /* key len u64 + 1 key byte + type u32 */
#define MIN_TENSOR_BYTES 33  /* name len + 1 byte + n_dims + 1 dim + type + offset */
#define MIN_ARRAY_BYTES 12   /* nested array: elem type u32 + count u64 */
#define MIN_STRING_BYTES 8   /* string: len u64 */

static const char *const type_names[GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64",
};
/* Bytes of one scalar; 0 for STRING/ARRAY. */
static const uint8_t type_sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *gguf_type_name(gguf_type t) {
    return (unsigned)t < GGUF_TYPE_COUNT ? type_names[t] : "unknown";
}

bool gguf_str_eq(gguf_str s, const char *cstr) {
    size_t n = strlen(cstr);
    return s.len == n && (n == 0 || memcmp(s.ptr, cstr, n) == 0);
}

static bool type_is_int(gguf_type t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_INT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_INT16 ||
           t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64;
}
static bool type_is_signed(gguf_type t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}
static bool type_is_float(gguf_type t) { return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64; }

/* ---- arena ------------------------------------------------------------ */

typedef struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_blk;

typedef struct arena {
    arena_blk *head;
    size_t block; /* default block size: small files get small blocks */
} arena;

#define ARENA_BLOCK_MIN (4u << 10)
#define ARENA_BLOCK_MAX (256u << 10)

static void *arena_alloc(arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_blk *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > a->block ? n : a->block;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        /* A big one-off allocation goes behind the current block so the
         * current block's free space stays usable. */
        if (a->head && n > a->block) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

static void arena_free(arena *a) {
    for (arena_blk *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}

/* ---- hash index (open addressing over entry indices) ------------------ */

typedef struct index_tab {
    uint32_t *slot; /* entry index + 1; 0 = empty */
    uint64_t mask;
} index_tab;

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static bool index_init(index_tab *t, arena *a, uint64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    t->slot = arena_alloc(a, cap * sizeof *t->slot);
    t->mask = cap - 1;
    return t->slot != NULL;
}

typedef gguf_str (*index_key_fn)(const gguf_ctx *g, uint32_t i);

static gguf_str kv_key(const gguf_ctx *g, uint32_t i) { return g->kv[i].key; }
static gguf_str tensor_key(const gguf_ctx *g, uint32_t i) {
    return (gguf_str){g->tensors[i].name, strlen(g->tensors[i].name)};
}

/* Returns the slot holding key, or the empty slot where it would go. */
static uint32_t *index_slot(const index_tab *t, const gguf_ctx *g, index_key_fn key_of, const char *key, size_t len) {
    uint64_t h = hash_bytes(key, len) & t->mask;
    for (;;) {
        uint32_t *s = &t->slot[h];
        if (*s == 0) return s;
        gguf_str k = key_of(g, *s - 1);
        if (k.len == len && memcmp(k.ptr, key, len) == 0) return s;
        h = (h + 1) & t->mask;
    }
}

typedef struct gguf_priv {
    arena arena;
    bool owns_map;
    index_tab kv_index, tensor_index;
    void *aligned; /* copies of the tensors whose data the file left misaligned */
    uint64_t aligned_bytes;
} gguf_priv;

/* ---- reader cursor ---------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    uint64_t pos, size;
    gguf_ctx *g;
    arena *arena;
    zn_err *err;
    char where[160]; /* "key 'x'" / "tensor 3 'y'": what is being read */
} rd;

static uint64_t rd_left(const rd *r) { return r->size - r->pos; }

/* Copies up to 64 bytes of untrusted text, replacing unprintables. */
static void printable(char *dst, size_t cap, const char *s, uint64_t len) {
    size_t n = len < 64 ? (size_t)len : 64;
    if (n > cap - 4) n = cap - 4;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) dst[j++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    if (len > n) dst[j++] = '.', dst[j++] = '.', dst[j++] = '.';
    dst[j] = 0;
}

static zn_status rd_fail(rd *r, zn_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static zn_status rd_fail(rd *r, zn_status s, const char *fmt, ...) {
    char msg[ZN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return zn_errf(r->err, s, "%s: %s: %s", r->g->path, r->where, msg);
}

static zn_status rd_need(rd *r, uint64_t n, const char *what) {
    if (n > rd_left(r))
        return rd_fail(r, ZN_ERR_FORMAT, "truncated: %s needs %" PRIu64 " bytes at offset %" PRIu64
                       ", only %" PRIu64 " left", what, n, r->pos, rd_left(r));
    return ZN_OK;
}

static zn_status rd_u32(rd *r, uint32_t *v, const char *what) {
    zn_status s = rd_need(r, 4, what);
    if (s) return s;
    memcpy(v, r->p + r->pos, 4);
    r->pos += 4;
    return ZN_OK;
}

static zn_status rd_u64(rd *r, uint64_t *v, const char *what) {
    zn_status s = rd_need(r, 8, what);
    if (s) return s;
    memcpy(v, r->p + r->pos, 8);
    r->pos += 8;
    return ZN_OK;
}

static zn_status rd_str(rd *r, gguf_str *out, uint64_t max, const char *what) {
    uint64_t len;
    zn_status s = rd_u64(r, &len, what);
    if (s) return s;
    if (len > max)
        return rd_fail(r, ZN_ERR_FORMAT, "%s length %" PRIu64 " exceeds the limit %" PRIu64, what, len, max);
    if (len > rd_left(r))
        return rd_fail(r, ZN_ERR_FORMAT, "%s length %" PRIu64 " at offset %" PRIu64 " runs past the end of the file (%" PRIu64
                       " bytes left)", what, len, r->pos, rd_left(r));
    out->ptr = (const char *)r->p + r->pos;
    out->len = len;
    r->pos += len;
    return ZN_OK;
}

static zn_status rd_scalar(rd *r, gguf_type t, gguf_kv *kv) {
    zn_status s = rd_need(r, type_sizes[t], "value");
    if (s) return s;
    const uint8_t *p = r->p + r->pos;
    r->pos += type_sizes[t];
    switch (t) {
    case GGUF_TYPE_UINT8: kv->v.u64 = p[0]; break;
    case GGUF_TYPE_INT8: kv->v.i64 = (int8_t)p[0]; break;
    case GGUF_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); kv->v.u64 = x; } break;
    case GGUF_TYPE_INT16: { int16_t x; memcpy(&x, p, 2); kv->v.i64 = x; } break;
    case GGUF_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); kv->v.u64 = x; } break;
    case GGUF_TYPE_INT32: { int32_t x; memcpy(&x, p, 4); kv->v.i64 = x; } break;
    case GGUF_TYPE_UINT64: memcpy(&kv->v.u64, p, 8); break;
    case GGUF_TYPE_INT64: memcpy(&kv->v.i64, p, 8); break;
    case GGUF_TYPE_FLOAT32: { float x; memcpy(&x, p, 4); kv->v.f64 = x; } break;
    case GGUF_TYPE_FLOAT64: memcpy(&kv->v.f64, p, 8); break;
    case GGUF_TYPE_BOOL: kv->v.b = p[0] != 0; break;
    default: break;
    }
    return ZN_OK;
}

static zn_status rd_type(rd *r, gguf_type *t, const char *what) {
    uint32_t v;
    zn_status s = rd_u32(r, &v, what);
    if (s) return s;
    if (v >= GGUF_TYPE_COUNT) return rd_fail(r, ZN_ERR_FORMAT, "unknown %s %" PRIu32, what, v);
    *t = (gguf_type)v;
    return ZN_OK;
}

/* Reads an array body (element type, count, elements); depth counts this
 * array, 1 for a top-level one. */
static zn_status rd_arr(rd *r, gguf_arr *a, int depth) {
    zn_status s = rd_type(r, &a->type, "array element type");
    if (s) return s;
    if ((s = rd_u64(r, &a->n, "array count"))) return s;
    if (a->type == GGUF_TYPE_ARRAY && depth >= ZN_GGUF_MAX_DEPTH)
        return rd_fail(r, ZN_ERR_FORMAT, "arrays nested deeper than %d levels", ZN_GGUF_MAX_DEPTH);
    if (a->n > ZN_GGUF_MAX_ARRAY)
        return rd_fail(r, ZN_ERR_FORMAT, "array count %" PRIu64 " exceeds the limit %u", a->n, ZN_GGUF_MAX_ARRAY);
    uint64_t elem = a->type == GGUF_TYPE_STRING ? MIN_STRING_BYTES
                  : a->type == GGUF_TYPE_ARRAY ? MIN_ARRAY_BYTES : type_sizes[a->type];
    if (a->n > rd_left(r) / elem)
        return rd_fail(r, ZN_ERR_FORMAT, "array of %" PRIu64 " %s at offset %" PRIu64 " needs at least %" PRIu64
                       " bytes, only %" PRIu64 " left", a->n, gguf_type_name(a->type), r->pos,
                       a->n * elem, rd_left(r));
    if (a->type == GGUF_TYPE_STRING) {
        gguf_str *strs = arena_alloc(r->arena, a->n * sizeof *strs + 1);
        if (!strs) return rd_fail(r, ZN_ERR_NOMEM, "out of memory for %" PRIu64 " strings", a->n);
        for (uint64_t i = 0; i < a->n; i++)
            if ((s = rd_str(r, &strs[i], ZN_GGUF_MAX_STRING, "string element"))) return s;
        a->strs = strs;
    } else if (a->type == GGUF_TYPE_ARRAY) {
        gguf_arr *subs = arena_alloc(r->arena, a->n * sizeof *subs + 1);
        if (!subs) return rd_fail(r, ZN_ERR_NOMEM, "out of memory for %" PRIu64 " arrays", a->n);
        for (uint64_t i = 0; i < a->n; i++)
            if ((s = rd_arr(r, &subs[i], depth + 1))) return s;
        a->subs = subs;
    } else {
        a->data = r->p + r->pos;
        r->pos += a->n * elem;
    }
    return ZN_OK;
}

static void set_where_key(rd *r, uint64_t i, gguf_str key) {
    char k[80];
    printable(k, sizeof k, key.ptr, key.len);
    snprintf(r->where, sizeof r->where, "key %" PRIu64 " '%s'", i, k);
}

static zn_status rd_kvs(rd *r, gguf_priv *pv) {
    gguf_ctx *g = r->g;
    zn_status s;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        snprintf(r->where, sizeof r->where, "key %" PRIu64, i);
        if ((s = rd_str(r, &kv->key, ZN_GGUF_MAX_KEY, "key"))) return s;
        set_where_key(r, i, kv->key);
        if (kv->key.len == 0) return rd_fail(r, ZN_ERR_FORMAT, "empty key");
        uint32_t *slot = index_slot(&pv->kv_index, g, kv_key, kv->key.ptr, kv->key.len);
        if (*slot) return rd_fail(r, ZN_ERR_FORMAT, "duplicate key (first seen as key %u)", *slot - 1);
        *slot = (uint32_t)i + 1;
        if ((s = rd_type(r, &kv->type, "value type"))) return s;
        if (kv->type == GGUF_TYPE_STRING) s = rd_str(r, &kv->v.str, ZN_GGUF_MAX_STRING, "string value");
        else if (kv->type == GGUF_TYPE_ARRAY) s = rd_arr(r, &kv->v.arr, 1);
        else s = rd_scalar(r, kv->type, kv);
        if (s) return s;
    }
    return ZN_OK;
}

static zn_status rd_alignment(rd *r) {
    gguf_ctx *g = r->g;
    g->alignment = GGUF_DEFAULT_ALIGN;
    const gguf_kv *kv = gguf_find_kv(g, GGUF_KEY_ALIGN);
    if (!kv) return ZN_OK;
    snprintf(r->where, sizeof r->where, "key '%s'", GGUF_KEY_ALIGN);
    if (!type_is_int(kv->type))
        return rd_fail(r, ZN_ERR_FORMAT, "must be an integer, is %s", gguf_type_name(kv->type));
    uint64_t a = kv->v.u64;
    if (type_is_signed(kv->type) && kv->v.i64 < 0)
        return rd_fail(r, ZN_ERR_FORMAT, "alignment %" PRId64 " is negative", kv->v.i64);
    if (a == 0 || (a & (a - 1)) != 0 || a > ZN_GGUF_MAX_ALIGN)
        return rd_fail(r, ZN_ERR_FORMAT, "alignment %" PRIu64 " is not a power of two in 1..%d", a, ZN_GGUF_MAX_ALIGN);
    g->alignment = a;
    return ZN_OK;
}

static zn_status rd_tensor_info(rd *r, gguf_priv *pv, uint64_t i) {
    gguf_ctx *g = r->g;
    gguf_tensor *t = &g->tensors[i];
    gguf_str name;
    zn_status s;
    snprintf(r->where, sizeof r->where, "tensor %" PRIu64, i);
    if ((s = rd_str(r, &name, ZN_GGUF_MAX_KEY, "tensor name"))) return s;
    char shown[80];
    printable(shown, sizeof shown, name.ptr, name.len);
    snprintf(r->where, sizeof r->where, "tensor '%s'", shown);
    if (name.len == 0) return rd_fail(r, ZN_ERR_FORMAT, "empty name");
    if (memchr(name.ptr, 0, name.len)) return rd_fail(r, ZN_ERR_FORMAT, "name contains a NUL byte");
    t->name = arena_alloc(r->arena, name.len + 1);
    if (!t->name) return rd_fail(r, ZN_ERR_NOMEM, "out of memory");
    memcpy(t->name, name.ptr, name.len);
    uint32_t *slot = index_slot(&pv->tensor_index, g, tensor_key, name.ptr, name.len);
    if (*slot) return rd_fail(r, ZN_ERR_FORMAT, "duplicate tensor name (first seen as tensor %u)", *slot - 1);
    *slot = (uint32_t)i + 1;

    if ((s = rd_u32(r, &t->n_dims, "n_dims"))) return s;
    if (t->n_dims < 1 || t->n_dims > ZN_GGUF_MAX_DIMS)
        return rd_fail(r, ZN_ERR_FORMAT, "n_dims %" PRIu32 " is not in 1..%d", t->n_dims, ZN_GGUF_MAX_DIMS);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < ZN_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= t->n_dims) continue;
        if ((s = rd_u64(r, &t->ne[d], "dimension"))) return s;
        if (t->ne[d] == 0) return rd_fail(r, ZN_ERR_FORMAT, "dimension %" PRIu32 " is 0", d);
        if (t->ne[d] > (uint64_t)INT64_MAX / nel)
            return rd_fail(r, ZN_ERR_FORMAT, "element count overflows at dimension %" PRIu32 " (%" PRIu64 ")", d, t->ne[d]);
        nel *= t->ne[d];
    }
    uint32_t type_id;
    if ((s = rd_u32(r, &type_id, "type"))) return s;
    const zn_type_info *ti = zn_type_get(type_id);
    if (!ti) return rd_fail(r, ZN_ERR_FORMAT, "unknown type id %" PRIu32, type_id);
    t->type = (zn_type)type_id;
    if (t->ne[0] % ti->blck)
        return rd_fail(r, ZN_ERR_FORMAT, "row length %" PRIu64 " is not a multiple of the %s block size %" PRIu32,
                       t->ne[0], ti->name, ti->blck);
    /* nel <= INT64_MAX and size <= 292 per block cannot overflow u64 */
    t->nbytes = nel / ti->blck * ti->size;
    return rd_u64(r, &t->offset, "offset");
}

typedef struct span { uint64_t off, end; uint32_t idx; } span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static zn_status check_data(rd *r) {
    gguf_ctx *g = r->g;
    snprintf(r->where, sizeof r->where, "data section");
    g->data_offset = (r->pos + g->alignment - 1) / g->alignment * g->alignment;
    if (g->n_tensors == 0) {
        /* vocab-only files may omit the padding after the metadata */
        if (g->data_offset > g->size) g->data_offset = g->size;
        return ZN_OK;
    }
    if (g->data_offset > g->size)
        return rd_fail(r, ZN_ERR_FORMAT, "starts at offset %" PRIu64 ", past the end of the file (%" PRIu64 " bytes)",
                       g->data_offset, g->size);
    uint64_t avail = g->size - g->data_offset;
    span *sp = arena_alloc(r->arena, g->n_tensors * sizeof *sp);
    if (!sp) return rd_fail(r, ZN_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        snprintf(r->where, sizeof r->where, "tensor '%s'", t->name);
        if (t->offset % g->alignment)
            return rd_fail(r, ZN_ERR_FORMAT, "offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                           t->offset, g->alignment);
        if (t->offset > avail || t->nbytes > avail - t->offset)
            return rd_fail(r, ZN_ERR_FORMAT, "data [%" PRIu64 ", +%" PRIu64 ") runs past the end of the data section (%"
                           PRIu64 " bytes)", t->offset, t->nbytes, avail);
        t->data = g->map + g->data_offset + t->offset;
        sp[i] = (span){t->offset, t->offset + t->nbytes, (uint32_t)i};
    }
    qsort(sp, g->n_tensors, sizeof *sp, span_cmp);
    for (uint64_t i = 1; i < g->n_tensors; i++) {
        if (sp[i].off < sp[i - 1].end) {
            snprintf(r->where, sizeof r->where, "tensor '%s'", g->tensors[sp[i].idx].name);
            return rd_fail(r, ZN_ERR_FORMAT, "data at offset %" PRIu64 " overlaps tensor '%s' [%" PRIu64 ", %" PRIu64 ")",
                           sp[i].off, g->tensors[sp[i - 1].idx].name, sp[i - 1].off, sp[i - 1].end);
        }
    }
    return ZN_OK;
}

static zn_status rd_header(rd *r) {
    gguf_ctx *g = r->g;
    zn_status s;
    snprintf(r->where, sizeof r->where, "header");
    if ((s = rd_need(r, 4, "magic"))) return s;
    if (memcmp(r->p, GGUF_MAGIC, 4) != 0) {
        char m[16];
        printable(m, sizeof m, (const char *)r->p, 4);
        return rd_fail(r, ZN_ERR_FORMAT, "bad magic '%s', not a GGUF file", m);
    }
    r->pos = 4;
    if ((s = rd_u32(r, &g->version, "version"))) return s;
    if (g->version == 1)
        return rd_fail(r, ZN_ERR_UNSUPPORTED, "GGUF version 1 is not supported (only v2 and v3); re-convert the model");
    if (g->version != 2 && g->version != 3) {
        if ((g->version & 0xffff) == 0)
            return rd_fail(r, ZN_ERR_UNSUPPORTED, "version %" PRIu32 " looks byte-swapped: big-endian GGUF is not supported",
                           g->version);
        return rd_fail(r, ZN_ERR_UNSUPPORTED, "unsupported GGUF version %" PRIu32 " (only v2 and v3)", g->version);
    }
    if ((s = rd_u64(r, &g->n_tensors, "tensor count"))) return s;
    if ((s = rd_u64(r, &g->n_kv, "kv count"))) return s;
    if (g->n_tensors > ZN_GGUF_MAX_TENSORS)
        return rd_fail(r, ZN_ERR_FORMAT, "tensor count %" PRIu64 " exceeds the limit %d", g->n_tensors, ZN_GGUF_MAX_TENSORS);
    if (g->n_kv > ZN_GGUF_MAX_KV)
        return rd_fail(r, ZN_ERR_FORMAT, "kv count %" PRIu64 " exceeds the limit %d", g->n_kv, ZN_GGUF_MAX_KV);
    if (g->n_kv * MIN_KV_BYTES + g->n_tensors * MIN_TENSOR_BYTES > rd_left(r))
        return rd_fail(r, ZN_ERR_FORMAT, "%" PRIu64 " kvs and %" PRIu64 " tensors cannot fit in the %" PRIu64
                       " bytes left", g->n_kv, g->n_tensors, rd_left(r));
    return ZN_OK;
}

static zn_status parse(gguf_ctx *g, gguf_priv *pv, zn_err *err) {
    rd r = {.p = g->map, .size = g->size, .g = g, .arena = &pv->arena, .err = err};
    zn_status s = rd_header(&r);
    if (s) return s;
    g->kv = arena_alloc(&pv->arena, g->n_kv * sizeof *g->kv + 1);
    g->tensors = arena_alloc(&pv->arena, g->n_tensors * sizeof *g->tensors + 1);
    if (!g->kv || !g->tensors || !index_init(&pv->kv_index, &pv->arena, g->n_kv) ||
        !index_init(&pv->tensor_index, &pv->arena, g->n_tensors))
        return rd_fail(&r, ZN_ERR_NOMEM, "out of memory for the index");
    if ((s = rd_kvs(&r, pv))) return s;
    if ((s = rd_alignment(&r))) return s;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if ((s = rd_tensor_info(&r, pv, i))) return s;
    return check_data(&r);
}

/* general.alignment 1 or 2 is valid GGUF, but the kernels load floats and
 * quant blocks in place: tensors whose data does not start on a
 * ZN_GGUF_DATA_ALIGN boundary in memory are copied to memory that does
 * (files written with the default alignment of 32 need no copy). */
static zn_status realign(gguf_ctx *g, gguf_priv *pv, zn_err *err) {
    const uint64_t A = ZN_GGUF_DATA_ALIGN;
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        if ((uintptr_t)t->data % A) bytes += (t->nbytes + A - 1) / A * A;
    }
    if (!bytes) return ZN_OK;
    if (bytes > SIZE_MAX - A || !(pv->aligned = aligned_alloc(A, (size_t)bytes)))
        return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory for %" PRIu64 " bytes of realigned tensors "
                       "(general.alignment %" PRIu64 ")", g->path, bytes, g->alignment);
    pv->aligned_bytes = bytes;
    uint8_t *p = pv->aligned;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (!((uintptr_t)t->data % A)) continue;
        if (t->nbytes) memcpy(p, t->data, (size_t)t->nbytes);
        t->data = p;
        p += (t->nbytes + A - 1) / A * A;
    }
    return ZN_OK;
}

static zn_status open_common(gguf_ctx *g, const void *buf, size_t size, const char *name, bool owns, zn_err *err) {
    gguf_priv *pv = calloc(1, sizeof *pv);
    if (!pv) {
        if (owns) munmap((void *)buf, size);
        return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory", name);
    }
    pv->owns_map = owns;
    pv->arena.block = size < ARENA_BLOCK_MIN ? ARENA_BLOCK_MIN : size > ARENA_BLOCK_MAX ? ARENA_BLOCK_MAX : size;
    g->arena = pv;
    g->map = buf;
    g->size = size;
    zn_status s = parse(g, pv, err);
    if (!s) s = realign(g, pv, err);
    if (s) gguf_close(g);
    return s;
}

static void ctx_reset(gguf_ctx *g, const char *name) {
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", name ? name : "(memory)");
}

zn_status gguf_open_mem(gguf_ctx *g, const void *buf, size_t size, const char *name, zn_err *err) {
    ctx_reset(g, name);
    static const uint8_t empty[1];
    return open_common(g, size ? buf : empty, size, g->path, false, err);
}

zn_status gguf_open(gguf_ctx *g, const char *path, zn_err *err) {
    ctx_reset(g, path);
    const uint8_t *emb;
    size_t emb_n;
    if (embedded_find(path, &emb, &emb_n)) return open_common(g, emb, emb_n, path, false, err);
    int fd;
    size_t size;
    zn_status s = zn_file_open_regular(path, &fd, &size, err);
    if (s) return s;
    if (size == 0) {
        close(fd);
        return zn_errf(err, ZN_ERR_FORMAT, "%s: header: empty file, not a GGUF file", path);
    }
    void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED) return zn_errf(err, ZN_ERR_IO, "%s: cannot map: %s", path, strerror(e));
    return open_common(g, m, size, path, true, err);
}

void gguf_close(gguf_ctx *g) {
    if (!g) return;
    gguf_priv *pv = g->arena;
    if (pv) {
        if (pv->owns_map && g->map) munmap((void *)g->map, g->size);
        free(pv->aligned);
        arena_free(&pv->arena);
        free(pv);
    }
    char path[ZN_PATH_MAX];
    memcpy(path, g->path, sizeof path);
    ctx_reset(g, path);
}

bool gguf_data_in_bounds(const gguf_ctx *g, const uint8_t *p, uint64_t n) {
    const gguf_priv *pv = g->arena;
    const uint8_t *a = pv ? pv->aligned : NULL;
    if (p >= g->map && p <= g->map + g->size && n <= (uint64_t)(g->map + g->size - p)) return true;
    return a && p >= a && p <= a + pv->aligned_bytes && n <= (uint64_t)(a + pv->aligned_bytes - p);
}

/* ---- lookups and getters ---------------------------------------------- */

const gguf_kv *gguf_find_kv(const gguf_ctx *g, const char *key) {
    const gguf_priv *pv = g->arena;
    if (!pv || !pv->kv_index.slot) return NULL;
    uint32_t *s = index_slot(&pv->kv_index, g, kv_key, key, strlen(key));
    return *s ? &g->kv[*s - 1] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_ctx *g, const char *name) {
    const gguf_priv *pv = g->arena;
    if (!pv || !pv->tensor_index.slot) return NULL;
    uint32_t *s = index_slot(&pv->tensor_index, g, tensor_key, name, strlen(name));
    return *s ? &g->tensors[*s - 1] : NULL;
}

static zn_status find_required(const gguf_ctx *g, const char *key, const gguf_kv **kv, zn_err *err) {
    *kv = gguf_find_kv(g, key);
    if (!*kv) return zn_errf(err, ZN_ERR_NOT_FOUND, "%s: key '%s' not found", g->path, key);
    return ZN_OK;
}

static zn_status type_error(const gguf_ctx *g, const gguf_kv *kv, const char *key, const char *want, zn_err *err) {
    return zn_errf(err, ZN_ERR_FORMAT, "%s: key '%s' is %s, expected %s", g->path, key, gguf_type_name(kv->type), want);
}

zn_status gguf_get_int(const gguf_ctx *g, const char *key, int64_t *out, zn_err *err) {
    const gguf_kv *kv;
    zn_status s = find_required(g, key, &kv, err);
    if (s) return s;
    if (!type_is_int(kv->type)) return type_error(g, kv, key, "an integer", err);
    if (!type_is_signed(kv->type) && kv->v.u64 > (uint64_t)INT64_MAX)
        return zn_errf(err, ZN_ERR_FORMAT, "%s: key '%s': value %" PRIu64 " does not fit in int64", g->path, key, kv->v.u64);
    *out = type_is_signed(kv->type) ? kv->v.i64 : (int64_t)kv->v.u64;
    return ZN_OK;
}

zn_status gguf_get_float(const gguf_ctx *g, const char *key, double *out, zn_err *err) {
    const gguf_kv *kv;
    zn_status s = find_required(g, key, &kv, err);
    if (s) return s;
    if (type_is_float(kv->type)) *out = kv->v.f64;
    else if (type_is_int(kv->type)) *out = type_is_signed(kv->type) ? (double)kv->v.i64 : (double)kv->v.u64;
    else return type_error(g, kv, key, "a number", err);
    return ZN_OK;
}

zn_status gguf_get_bool(const gguf_ctx *g, const char *key, bool *out, zn_err *err) {
    const gguf_kv *kv;
    zn_status s = find_required(g, key, &kv, err);
    if (s) return s;
    if (kv->type != GGUF_TYPE_BOOL) return type_error(g, kv, key, "bool", err);
    *out = kv->v.b;
    return ZN_OK;
}

zn_status gguf_get_str(const gguf_ctx *g, const char *key, gguf_str *out, zn_err *err) {
    const gguf_kv *kv;
    zn_status s = find_required(g, key, &kv, err);
    if (s) return s;
    if (kv->type != GGUF_TYPE_STRING) return type_error(g, kv, key, "a string", err);
    *out = kv->v.str;
    return ZN_OK;
}

zn_status gguf_get_arr(const gguf_ctx *g, const char *key, const gguf_arr **out, zn_err *err) {
    const gguf_kv *kv;
    zn_status s = find_required(g, key, &kv, err);
    if (s) return s;
    if (kv->type != GGUF_TYPE_ARRAY) return type_error(g, kv, key, "an array", err);
    *out = &kv->v.arr;
    return ZN_OK;
}

int64_t gguf_get_int_or(const gguf_ctx *g, const char *key, int64_t def) {
    int64_t v = def;
    return gguf_get_int(g, key, &v, NULL) == ZN_OK ? v : def;
}

double gguf_get_float_or(const gguf_ctx *g, const char *key, double def) {
    double v = def;
    return gguf_get_float(g, key, &v, NULL) == ZN_OK ? v : def;
}

bool gguf_get_bool_or(const gguf_ctx *g, const char *key, bool def) {
    bool v = def;
    return gguf_get_bool(g, key, &v, NULL) == ZN_OK ? v : def;
}

const char *gguf_get_str_or(const gguf_ctx *g, const char *key, char *buf, size_t cap, const char *def) {
    if (cap == 0) return buf;
    gguf_str v;
    if (gguf_get_str(g, key, &v, NULL) != ZN_OK) {
        snprintf(buf, cap, "%s", def ? def : "");
        return buf;
    }
    size_t n = v.len < cap - 1 ? (size_t)v.len : cap - 1;
    memcpy(buf, v.ptr, n);
    buf[n] = 0;
    return buf;
}

int64_t gguf_arr_int(const gguf_arr *a, uint64_t i) {
    if (!a || i >= a->n || !a->data) return 0;
    const uint8_t *p = (const uint8_t *)a->data + i * type_sizes[a->type];
    switch (a->type) {
    case GGUF_TYPE_UINT8: return p[0];
    case GGUF_TYPE_INT8: return (int8_t)p[0];
    case GGUF_TYPE_BOOL: return p[0] != 0;
    case GGUF_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case GGUF_TYPE_INT16: { int16_t x; memcpy(&x, p, 2); return x; }
    case GGUF_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case GGUF_TYPE_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case GGUF_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8); return x > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)x; }
    case GGUF_TYPE_INT64: { int64_t x; memcpy(&x, p, 8); return x; }
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64: {
        double d = gguf_arr_float(a, i);
        /* saturate: casting an out-of-range double is undefined */
        if (!(d == d)) return 0;
        if (d >= 9.2233720368547758e18) return INT64_MAX;
        if (d <= -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)d;
    }
    default: return 0;
    }
}

double gguf_arr_float(const gguf_arr *a, uint64_t i) {
    if (!a || i >= a->n || !a->data) return 0;
    const uint8_t *p = (const uint8_t *)a->data + i * type_sizes[a->type];
    switch (a->type) {
    case GGUF_TYPE_FLOAT32: { float x; memcpy(&x, p, 4); return x; }
    case GGUF_TYPE_FLOAT64: { double x; memcpy(&x, p, 8); return x; }
    case GGUF_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    default: return (double)gguf_arr_int(a, i);
    }
}

/* ---- writer ----------------------------------------------------------- */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} wbuf;

static void wbuf_put(wbuf *b, const void *data, size_t n) {
    if (b->oom || n == 0) return;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) { b->oom = true; return; }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}
static void wbuf_u32(wbuf *b, uint32_t v) { wbuf_put(b, &v, 4); }
static void wbuf_u64(wbuf *b, uint64_t v) { wbuf_put(b, &v, 8); }
static void wbuf_str(wbuf *b, const char *s, uint64_t n) { wbuf_u64(b, n); wbuf_put(b, s, (size_t)n); }

typedef struct wkv {
    char *key;
    wbuf enc; /* the whole serialized kv: key, type, value */
} wkv;

typedef struct wtensor {
    char *name;
    zn_type type;
    uint32_t n_dims;
    uint64_t ne[ZN_GGUF_MAX_DIMS];
    uint64_t nbytes;
    const void *data;
    gguf_fill_fn fill; /* instead of data: produces the bytes at write time */
    void *fill_user;
} wtensor;

struct gguf_writer {
    uint64_t alignment;
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
};

static bool grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, c * elem);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

static bool valid_alignment(uint64_t a) { return a && (a & (a - 1)) == 0 && a <= ZN_GGUF_MAX_ALIGN; }

zn_status gguf_writer_init(gguf_writer **w, uint32_t alignment, zn_err *err) {
    *w = NULL;
    if (alignment == 0) alignment = GGUF_DEFAULT_ALIGN;
    if (!valid_alignment(alignment))
        return zn_errf(err, ZN_ERR_ARG, "gguf writer: alignment %" PRIu32 " is not a power of two in 1..%d",
                       alignment, ZN_GGUF_MAX_ALIGN);
    gguf_writer *nw = calloc(1, sizeof *nw);
    if (!nw) return zn_errf(err, ZN_ERR_NOMEM, "gguf writer: out of memory");
    nw->alignment = alignment;
    if (alignment != GGUF_DEFAULT_ALIGN &&
        gguf_writer_set_uint(nw, GGUF_KEY_ALIGN, GGUF_TYPE_UINT32, alignment) != ZN_OK) {
        gguf_writer_free(nw);
        return zn_errf(err, ZN_ERR_NOMEM, "gguf writer: out of memory");
    }
    *w = nw;
    return ZN_OK;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].enc.p);
    }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w);
}

/* Starts the encoding of key (replacing an earlier value); the caller
 * appends the value and calls kv_end(). */
static wbuf *kv_begin(gguf_writer *w, const char *key, gguf_type t) {
    size_t klen = strlen(key);
    if (klen == 0 || klen > ZN_GGUF_MAX_KEY) return NULL;
    wkv *kv = NULL;
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0) kv = &w->kv[i];
    if (kv) {
        kv->enc.len = 0;
    } else {
        if (!grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) return NULL;
        char *k = malloc(klen + 1);
        if (!k) return NULL;
        memcpy(k, key, klen + 1);
        kv = &w->kv[w->n_kv++];
        *kv = (wkv){.key = k};
    }
    wbuf_str(&kv->enc, key, klen);
    wbuf_u32(&kv->enc, (uint32_t)t);
    return &kv->enc;
}

static zn_status kv_end(wbuf *b) { return b->oom ? ZN_ERR_NOMEM : ZN_OK; }

static zn_status note_alignment(gguf_writer *w, const char *key, bool is_int, uint64_t v) {
    if (strcmp(key, GGUF_KEY_ALIGN) != 0) return ZN_OK;
    if (!is_int || !valid_alignment(v)) return ZN_ERR_ARG;
    w->alignment = v;
    return ZN_OK;
}

/* Integer range of each integer type, to refuse values that would wrap. */
static bool int_fits(gguf_type t, int64_t v) {
    switch (t) {
    case GGUF_TYPE_UINT8: return v >= 0 && v <= UINT8_MAX;
    case GGUF_TYPE_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case GGUF_TYPE_UINT16: return v >= 0 && v <= UINT16_MAX;
    case GGUF_TYPE_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case GGUF_TYPE_UINT32: return v >= 0 && v <= UINT32_MAX;
    case GGUF_TYPE_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case GGUF_TYPE_UINT64: return v >= 0;
    case GGUF_TYPE_INT64: return true;
    default: return false;
    }
}

static zn_status put_int(gguf_writer *w, const char *key, gguf_type t, uint64_t bits) {
    zn_status s = note_alignment(w, key, true, bits);
    if (s) return s;
    wbuf *b = kv_begin(w, key, t);
    if (!b) return ZN_ERR_NOMEM;
    wbuf_put(b, &bits, type_sizes[t]); /* little-endian: the low bytes */
    return kv_end(b);
}

zn_status gguf_writer_set_int(gguf_writer *w, const char *key, gguf_type t, int64_t v) {
    if (!type_is_int(t) || !int_fits(t, v)) return ZN_ERR_ARG;
    if (strcmp(key, GGUF_KEY_ALIGN) == 0 && v < 0) return ZN_ERR_ARG;
    return put_int(w, key, t, (uint64_t)v);
}

zn_status gguf_writer_set_uint(gguf_writer *w, const char *key, gguf_type t, uint64_t v) {
    if (!type_is_int(t)) return ZN_ERR_ARG;
    if (v > (uint64_t)INT64_MAX ? t != GGUF_TYPE_UINT64 : !int_fits(t, (int64_t)v)) return ZN_ERR_ARG;
    return put_int(w, key, t, v);
}

static zn_status put_scalar(gguf_writer *w, const char *key, gguf_type t, const void *v) {
    zn_status s = note_alignment(w, key, false, 0);
    if (s) return s;
    wbuf *b = kv_begin(w, key, t);
    if (!b) return ZN_ERR_NOMEM;
    wbuf_put(b, v, type_sizes[t]);
    return kv_end(b);
}

zn_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v) { return put_scalar(w, key, GGUF_TYPE_FLOAT32, &v); }
zn_status gguf_writer_set_f64(gguf_writer *w, const char *key, double v) { return put_scalar(w, key, GGUF_TYPE_FLOAT64, &v); }
zn_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v) {
    uint8_t b = v;
    return put_scalar(w, key, GGUF_TYPE_BOOL, &b);
}

zn_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    zn_status s = note_alignment(w, key, false, 0);
    if (s) return s;
    wbuf *b = kv_begin(w, key, GGUF_TYPE_STRING);
    if (!b) return ZN_ERR_NOMEM;
    wbuf_str(b, v, strlen(v));
    return kv_end(b);
}

zn_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_type elem, const void *data, uint64_t n) {
    if ((unsigned)elem >= GGUF_TYPE_COUNT || elem == GGUF_TYPE_STRING || elem == GGUF_TYPE_ARRAY) return ZN_ERR_ARG;
    if (n > ZN_GGUF_MAX_ARRAY) return ZN_ERR_ARG;
    zn_status s = note_alignment(w, key, false, 0);
    if (s) return s;
    wbuf *b = kv_begin(w, key, GGUF_TYPE_ARRAY);
    if (!b) return ZN_ERR_NOMEM;
    wbuf_u32(b, (uint32_t)elem);
    wbuf_u64(b, n);
    wbuf_put(b, data, (size_t)(n * type_sizes[elem]));
    return kv_end(b);
}

zn_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    if (n > ZN_GGUF_MAX_ARRAY) return ZN_ERR_ARG;
    zn_status s = note_alignment(w, key, false, 0);
    if (s) return s;
    wbuf *b = kv_begin(w, key, GGUF_TYPE_ARRAY);
    if (!b) return ZN_ERR_NOMEM;
    wbuf_u32(b, GGUF_TYPE_STRING);
    wbuf_u64(b, n);
    for (uint64_t i = 0; i < n; i++) wbuf_str(b, strs[i], strlen(strs[i]));
    return kv_end(b);
}

static void put_arr(wbuf *b, const gguf_arr *a) {
    wbuf_u32(b, (uint32_t)a->type);
    wbuf_u64(b, a->n);
    if (a->type == GGUF_TYPE_STRING)
        for (uint64_t i = 0; i < a->n; i++) wbuf_str(b, a->strs[i].ptr, a->strs[i].len);
    else if (a->type == GGUF_TYPE_ARRAY)
        for (uint64_t i = 0; i < a->n; i++) put_arr(b, &a->subs[i]);
    else
        wbuf_put(b, a->data, (size_t)(a->n * type_sizes[a->type]));
}

zn_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv) {
    if ((unsigned)kv->type >= GGUF_TYPE_COUNT || kv->key.len == 0 || kv->key.len > ZN_GGUF_MAX_KEY ||
        memchr(kv->key.ptr, 0, kv->key.len))
        return ZN_ERR_ARG;
    char key[ZN_GGUF_MAX_KEY + 1];
    memcpy(key, kv->key.ptr, kv->key.len);
    key[kv->key.len] = 0;
    if (type_is_int(kv->type)) return put_int(w, key, kv->type, kv->v.u64);
    switch (kv->type) {
    case GGUF_TYPE_FLOAT32: return gguf_writer_set_f32(w, key, (float)kv->v.f64);
    case GGUF_TYPE_FLOAT64: return gguf_writer_set_f64(w, key, kv->v.f64);
    case GGUF_TYPE_BOOL: return gguf_writer_set_bool(w, key, kv->v.b);
    default: break;
    }
    zn_status s = note_alignment(w, key, false, 0);
    if (s) return s;
    wbuf *b = kv_begin(w, key, kv->type);
    if (!b) return ZN_ERR_NOMEM;
    if (kv->type == GGUF_TYPE_STRING) wbuf_str(b, kv->v.str.ptr, kv->v.str.len);
    else put_arr(b, &kv->v.arr);
    return kv_end(b);
}

zn_status gguf_writer_add_tensor(gguf_writer *w, const char *name, zn_type type,
                                 uint32_t n_dims, const uint64_t *ne, const void *data, zn_err *err) {
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen > ZN_GGUF_MAX_KEY)
        return zn_errf(err, ZN_ERR_ARG, "gguf writer: tensor name of %zu bytes", nlen);
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return zn_errf(err, ZN_ERR_ARG, "gguf writer: tensor '%s': duplicate name", name);
    const zn_type_info *ti = zn_type_get((uint32_t)type);
    if (!ti) return zn_errf(err, ZN_ERR_ARG, "gguf writer: tensor '%s': unknown type id %u", name, (unsigned)type);
    if (n_dims < 1 || n_dims > ZN_GGUF_MAX_DIMS)
        return zn_errf(err, ZN_ERR_ARG, "gguf writer: tensor '%s': n_dims %" PRIu32 " is not in 1..%d", name, n_dims,
                       ZN_GGUF_MAX_DIMS);
    wtensor t = {.type = type, .n_dims = n_dims, .data = data};
    uint64_t nel = 1;
    for (uint32_t d = 0; d < ZN_GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] == 0 || t.ne[d] > (uint64_t)INT64_MAX / nel)
            return zn_errf(err, ZN_ERR_ARG, "gguf writer: tensor '%s': bad dimension %" PRIu32 " (%" PRIu64 ")", name, d,
                           t.ne[d]);
        nel *= t.ne[d];
    }
    if (t.ne[0] % ti->blck)
        return zn_errf(err, ZN_ERR_ARG, "gguf writer: tensor '%s': row length %" PRIu64 " is not a multiple of the %s block"
                       " size %" PRIu32, name, t.ne[0], ti->name, ti->blck);
    t.nbytes = nel / ti->blck * ti->size;
    if (!grow((void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t) || !(t.name = malloc(nlen + 1)))
        return zn_errf(err, ZN_ERR_NOMEM, "gguf writer: out of memory");
    memcpy(t.name, name, nlen + 1);
    w->t[w->n_t++] = t;
    return ZN_OK;
}

zn_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, zn_type type, uint32_t n_dims,
                                      const uint64_t *ne, gguf_fill_fn fill, void *user, zn_err *err) {
    zn_status s = gguf_writer_add_tensor(w, name, type, n_dims, ne, NULL, err);
    if (s != ZN_OK) return s;
    w->t[w->n_t - 1].fill = fill;
    w->t[w->n_t - 1].fill_user = user;
    return ZN_OK;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static bool write_all(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }

static bool write_pad(FILE *f, uint64_t *pos, uint64_t align) {
    static const uint8_t zeros[256];
    uint64_t n = align_up(*pos, align) - *pos;
    *pos += n;
    while (n) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        if (!write_all(f, zeros, k)) return false;
        n -= k;
    }
    return true;
}

/* Streams a fill tensor through a bounded buffer of whole blocks. False
 * when writing failed (errno set) or the fill callback failed (*fst and
 * err set). */
static bool write_filled(FILE *f, const wtensor *t, zn_status *fst, zn_err *err) {
    size_t bsize = zn_type_get((uint32_t)t->type)->size;
    size_t cap = GGUF_FILL_CHUNK / bsize * bsize;
    if (cap == 0) cap = bsize;
    if ((uint64_t)cap > t->nbytes) cap = (size_t)t->nbytes;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) {
        *fst = zn_errf(err, ZN_ERR_NOMEM, "tensor '%s': out of memory", t->name);
        return false;
    }
    bool ok = true;
    for (uint64_t off = 0; ok && off < t->nbytes; off += cap) {
        size_t n = t->nbytes - off < cap ? (size_t)(t->nbytes - off) : cap;
        *fst = t->fill(t->fill_user, buf, off, n, err);
        ok = *fst == ZN_OK && write_all(f, buf, n);
    }
    free(buf);
    return ok;
}

zn_status gguf_writer_write(gguf_writer *w, const char *path, zn_err *err) {
    wbuf meta = {0};
    wbuf_put(&meta, GGUF_MAGIC, 4);
    wbuf_u32(&meta, 3);
    wbuf_u64(&meta, w->n_t);
    wbuf_u64(&meta, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) wbuf_put(&meta, w->kv[i].enc.p, w->kv[i].enc.len);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        wbuf_str(&meta, t->name, strlen(t->name));
        wbuf_u32(&meta, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) wbuf_u64(&meta, t->ne[d]);
        wbuf_u32(&meta, (uint32_t)t->type);
        wbuf_u64(&meta, off);
        off = align_up(off + t->nbytes, w->alignment);
    }
    if (meta.oom) {
        free(meta.p);
        return zn_errf(err, ZN_ERR_NOMEM, "%s: out of memory while encoding", path);
    }
    FILE *f;
    zn_status cs = zn_file_create_regular(path, O_WRONLY | O_TRUNC, "wb", &f, err);
    if (cs) {
        free(meta.p);
        return cs;
    }
    uint64_t pos = meta.len;
    bool ok = write_all(f, meta.p, meta.len) && write_pad(f, &pos, w->alignment);
    free(meta.p);
    zn_status fst = ZN_OK;
    for (size_t i = 0; ok && i < w->n_t; i++) {
        if (w->t[i].fill) {
            ok = write_filled(f, &w->t[i], &fst, err);
        } else {
            ok = write_all(f, w->t[i].data, (size_t)w->t[i].nbytes);
        }
        pos += w->t[i].nbytes;
        /* the last tensor is padded too, as llama.cpp does */
        ok = ok && write_pad(f, &pos, w->alignment);
    }
    int e = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        remove(path);
        if (fst != ZN_OK) return zn_err_prefix(err, "%s", path);
        return zn_errf(err, ZN_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    return ZN_OK;
}
