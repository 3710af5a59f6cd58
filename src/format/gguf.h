/* GGUF v2/v3 reader (mmap, validated) and writer.
 *
 * The reader maps the file read-only and validates every count, length,
 * offset and size before anything is trusted. Strings point into the map
 * and are NOT NUL-terminated (use gguf_str). The ctx owns the map and the
 * small index tables; free it with gguf_close(). */
#ifndef ZINC_GGUF_H
#define ZINC_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "status.h"

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3, GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7, GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

const char *gguf_type_name(gguf_type t);

typedef struct gguf_str {
    const char *ptr; /* into the map (or caller memory for the writer) */
    uint64_t len;
} gguf_str;

bool gguf_str_eq(gguf_str s, const char *cstr);

typedef struct gguf_arr gguf_arr;
struct gguf_arr {
    gguf_type type;        /* element type */
    uint64_t n;            /* element count */
    const void *data;      /* packed little-endian scalars (non-string, non-array) */
    const gguf_str *strs;  /* n entries when type == STRING */
    const gguf_arr *subs;  /* n entries when type == ARRAY */
};

typedef struct gguf_kv {
    gguf_str key;
    gguf_type type;
    union {
        uint64_t u64; /* UINT8/16/32/64 */
        int64_t i64;  /* INT8/16/32/64 */
        double f64;   /* FLOAT32/64 */
        bool b;
        gguf_str str;
        gguf_arr arr;
    } v;
} gguf_kv;

typedef struct gguf_tensor {
    char *name;            /* NUL-terminated copy */
    uint32_t n_dims;
    uint64_t ne[ZN_GGUF_MAX_DIMS]; /* ne[0] is the row length; unused dims are 1 */
    zn_type type;
    uint64_t offset;       /* relative to the data section */
    uint64_t nbytes;
    const uint8_t *data;   /* into the map, or a copy when the map's is not ZN_GGUF_DATA_ALIGN-aligned */
} gguf_tensor;

typedef struct gguf_ctx {
    char path[ZN_PATH_MAX];
    uint32_t version;
    uint64_t alignment;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t data_offset;  /* absolute offset of the tensor data section */
    const uint8_t *map;
    uint64_t size;
    void *arena;           /* private: index tables */
} gguf_ctx;

/* Opens and fully validates the file. On failure *g is left closed and err
 * says what is wrong, naming the file and the field or tensor. */
zn_status gguf_open(gguf_ctx *g, const char *path, zn_err *err);
/* Same, over caller-owned memory (used by the fuzzer); buf must outlive g. */
zn_status gguf_open_mem(gguf_ctx *g, const void *buf, size_t size, const char *name, zn_err *err);
void gguf_close(gguf_ctx *g);

/* Metadata lookup: NULL / -1 when absent. */
/* Whether [p, p + n) is tensor memory of g: the map, or the aligned copies
 * of tensors the file left misaligned (checks in tests and fuzzers). */
bool gguf_data_in_bounds(const gguf_ctx *g, const uint8_t *p, uint64_t n);

const gguf_kv *gguf_find_kv(const gguf_ctx *g, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_ctx *g, const char *name);

/* Typed getters. They return ZN_ERR_NOT_FOUND when the key is absent and
 * ZN_ERR_FORMAT (with a message naming the key) when its type does not fit;
 * any integer type converts when the value fits; gguf_get_float also takes
 * integers. FLOAT32 values are held as double (exactly); BOOL is any
 * non-zero byte. */
zn_status gguf_get_int(const gguf_ctx *g, const char *key, int64_t *out, zn_err *err);
zn_status gguf_get_float(const gguf_ctx *g, const char *key, double *out, zn_err *err);
zn_status gguf_get_bool(const gguf_ctx *g, const char *key, bool *out, zn_err *err);
zn_status gguf_get_str(const gguf_ctx *g, const char *key, gguf_str *out, zn_err *err);
zn_status gguf_get_arr(const gguf_ctx *g, const char *key, const gguf_arr **out, zn_err *err);
/* Conveniences: default when absent or mistyped. */
int64_t gguf_get_int_or(const gguf_ctx *g, const char *key, int64_t def);
double gguf_get_float_or(const gguf_ctx *g, const char *key, double def);
bool gguf_get_bool_or(const gguf_ctx *g, const char *key, bool def);
/* Copies a string value into buf (NUL-terminated, truncated); def (or "" if
 * def is NULL) when absent or not a string. Returns buf. */
const char *gguf_get_str_or(const gguf_ctx *g, const char *key, char *buf, size_t cap, const char *def);
/* Element i of a numeric array as int64/double (any numeric element type). */
int64_t gguf_arr_int(const gguf_arr *a, uint64_t i);
double gguf_arr_float(const gguf_arr *a, uint64_t i);

/* ---- writer ---------------------------------------------------------- */

typedef struct gguf_writer gguf_writer;

zn_status gguf_writer_init(gguf_writer **w, uint32_t alignment, zn_err *err);
void gguf_writer_free(gguf_writer *w);
/* Values are copied; a key set twice keeps the last value. */
zn_status gguf_writer_set_int(gguf_writer *w, const char *key, gguf_type t, int64_t v);   /* any integer type */
zn_status gguf_writer_set_uint(gguf_writer *w, const char *key, gguf_type t, uint64_t v);
zn_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
zn_status gguf_writer_set_f64(gguf_writer *w, const char *key, double v);
zn_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
zn_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
zn_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_type elem, const void *data, uint64_t n); /* numeric */
zn_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Copies any kv, nested arrays included, from a reader. */
zn_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv);
/* Adds a tensor. data is NOT copied; it must stay valid until write. */
zn_status gguf_writer_add_tensor(gguf_writer *w, const char *name, zn_type type,
                                 uint32_t n_dims, const uint64_t *ne, const void *data, zn_err *err);
/* Streaming variant for tensors too large to hold in memory: at write
 * time, fill(user, buf, offset, n, err) must put bytes [offset, offset+n)
 * of the tensor in buf. It is called in order with n a whole number of
 * blocks, at most GGUF_FILL_CHUNK bytes; a status other than ZN_OK (with
 * err filled) aborts the write. */
#define GGUF_FILL_CHUNK (4u << 20)
typedef zn_status (*gguf_fill_fn)(void *user, uint8_t *buf, uint64_t offset, size_t n, zn_err *err);
zn_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, zn_type type, uint32_t n_dims,
                                      const uint64_t *ne, gguf_fill_fn fill, void *user, zn_err *err);
zn_status gguf_writer_write(gguf_writer *w, const char *path, zn_err *err);

#endif
