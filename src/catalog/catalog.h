/* The model catalog: a built-in table of models zinc knows, the local models
 * directory, the active model, and which model a command runs when no -m is
 * given.
 *
 * Home: $ZINC_HOME, else $XDG_DATA_HOME/zinc, else ~/.local/share/zinc. It
 * holds models/ (downloaded GGUF files, each with a NAME.sha256 record of its
 * hash and whether that hash was verified) and `active` (one line: the
 * absolute path of the active model).
 *
 * Default model, in order: -m, the active model, the demo model shipped with
 * zinc (models/zinc-demo-qwen35.gguf next to the binary, in a parent folder of
 * it, or in PREFIX/share/zinc/models for an installed binary). */
#ifndef ZINC_CATALOG_H
#define ZINC_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

#define ZN_DEMO_MODEL_FILE "zinc-demo-qwen35.gguf"
#define ZN_DEMO_MODEL_ID   "zinc-demo"
#define ZN_SHA256_HEX      65  /* 64 hex digits + NUL */

/* What a model needs besides its weights, for the memory estimate of a
 * hardware profile (profile.h): per token of context, n_attn layers each
 * keep a K row of kv_k and a V row of kv_v elements; recurrent layers keep
 * state_bytes in all, whatever the context. 0 everywhere: unknown until the
 * file is installed (then read from its metadata). */
typedef struct zn_model_shape {
    uint32_t n_attn, kv_k, kv_v;
    uint64_t state_bytes;
    uint32_t ctx_train;    /* the longest context it was trained for */
} zn_model_shape;

#define ZN_CATALOG_MAX_ALIASES 2

typedef struct zn_catalog_entry {
    const char *id;        /* what `zinc model pull|use|rm` take */
    const char *aliases[ZN_CATALOG_MAX_ALIASES]; /* other names for the same file (NULL-padded) */
    const char *name;      /* display name */
    const char *arch;      /* GGUF general.architecture */
    const char *quant;
    uint64_t size;         /* bytes; approximate for downloads (used for the disk check) */
    const char *url;       /* NULL for the shipped demo model */
    const char *file;      /* file name under models/ (or the shipped file) */
    const char *sha256;    /* lower-case hex, or NULL: unknown, download stays "unverified" */
    const char *license;
    const char *desc;
    zn_model_shape shape;
} zn_catalog_entry;

const zn_catalog_entry *catalog_entries(size_t *n);
/* By id or alias; NULL when unknown. */
const zn_catalog_entry *catalog_find(const char *id);

/* The home directory (not created). ZN_ERR_NOT_FOUND when no variable says. */
zn_status catalog_home(char *out, size_t cap, zn_err *err);
/* home/models, created (with home) when mkdirs. */
zn_status catalog_models_dir(const char *home, bool mkdirs, char *out, size_t cap, zn_err *err);

/* The shipped demo model found from the executable `exe` (NULL: this
 * process's /proc/self/exe). ZN_ERR_NOT_FOUND lists the places looked at. */
zn_status catalog_demo_path(const char *exe, char *out, size_t cap, zn_err *err);

/* Active model: ZN_ERR_NOT_FOUND when none is set. set stores an absolute path. */
zn_status catalog_active_get(const char *home, char *out, size_t cap, zn_err *err);
zn_status catalog_active_set(const char *home, const char *path, zn_err *err);
zn_status catalog_active_clear(const char *home, zn_err *err);

/* Where a model named by an id, an installed file name or a path lives:
 * catalog id -> models/FILE (the demo id -> the shipped file); a bare name
 * of a file in models/ -> that file; anything else is taken as a path. The
 * file need not exist. */
zn_status catalog_locate(const char *home, const char *exe, const char *what, char *out, size_t cap, zn_err *err);

typedef enum zn_model_source { ZN_SRC_EXPLICIT, ZN_SRC_ACTIVE, ZN_SRC_DEMO } zn_model_source;

/* Which model to run: `explicit_path` when non-NULL, else the active model
 * (when its file exists), else the demo model. home/exe NULL: the defaults.
 * `note` (may be NULL, cap ZN_ERR_MSG_MAX) gets a warning when the active
 * model was set but its file is gone. ZN_ERR_NOT_FOUND's message tells the
 * user what to run. */
zn_status catalog_resolve(const char *home, const char *exe, const char *explicit_path, char *out, size_t cap,
                          zn_model_source *src, char *note, zn_err *err);

/* SHA-256 (OpenSSL EVP) of a buffer / a file, as lower-case hex. */
zn_status catalog_sha256_buf(const void *p, size_t n, char hex[ZN_SHA256_HEX], zn_err *err);
zn_status catalog_sha256_file(const char *path, char hex[ZN_SHA256_HEX], zn_err *err);
/* Reads PATH.sha256 ("HEX verified|unverified"): ZN_ERR_NOT_FOUND when absent. */
zn_status catalog_hash_record_read(const char *model_path, char hex[ZN_SHA256_HEX], bool *verified, zn_err *err);
zn_status catalog_hash_record_write(const char *model_path, const char *hex, bool verified, zn_err *err);
/* A 32-byte digest as lower-case hex. */
void catalog_hex(const unsigned char d[32], char hex[ZN_SHA256_HEX]);
/* True for 64 hex digits (either case). */
bool catalog_is_sha256(const char *s);

/* Downloads url to dest: streams into dest.part (resuming one left by an
 * interrupted run when the server honours Range), hashes while streaming,
 * checks free space against the size the server announces (or size_hint),
 * compares with expect (NULL: no known hash) and renames into place only
 * when they agree; a mismatch deletes the .part. Progress goes to `progress`
 * (NULL: silent): a bar when it is a terminal, plain lines otherwise.
 * got_hex receives the computed hash on success and on a mismatch. */
zn_status catalog_download(const char *url, const char *dest, const char *expect, uint64_t size_hint, FILE *progress,
                           char got_hex[ZN_SHA256_HEX], zn_err *err);

/* The file name a URL's last path component gives ("" on none/unsafe). */
void catalog_url_filename(const char *url, char *out, size_t cap);

#endif
