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
 * it, or in PREFIX/share/zinc/models for an installed binary; else the copy
 * built into the binary, embedded.h). */
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

/* A regular file, or a file built into the binary (embedded.h). */
bool catalog_model_exists(const char *path);

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

/* What a downloaded file was checked against. */
typedef enum zn_hash_src {
    ZN_HASH_NONE,      /* no hash from anywhere: "unverified" */
    ZN_HASH_CATALOG,   /* the built-in catalog's */
    ZN_HASH_USER,      /* --sha256 */
    ZN_HASH_HUB,       /* the hub's: its file listing, or X-Linked-Etag on the resolve request */
} zn_hash_src;

/* SHA-256 (OpenSSL EVP) of a buffer / a file, as lower-case hex. */
zn_status catalog_sha256_buf(const void *p, size_t n, char hex[ZN_SHA256_HEX], zn_err *err);
zn_status catalog_sha256_file(const char *path, char hex[ZN_SHA256_HEX], zn_err *err);
/* PATH.sha256: "HEX verified SOURCE" (SOURCE a catalog_hash_src_word; older
 * records have none: catalog) or "HEX unverified". read: ZN_ERR_NOT_FOUND
 * when absent; *src NONE for unverified. */
zn_status catalog_hash_record_read(const char *model_path, char hex[ZN_SHA256_HEX], zn_hash_src *src, zn_err *err);
zn_status catalog_hash_record_write(const char *model_path, const char *hex, zn_hash_src src, zn_err *err);
/* A 32-byte digest as lower-case hex. */
void catalog_hex(const unsigned char d[32], char hex[ZN_SHA256_HEX]);
/* True for 64 hex digits (either case). */
bool catalog_is_sha256(const char *s);

/* "the catalog's hash", "--sha256", "the hub's hash", "no hash" */
const char *catalog_hash_src_text(zn_hash_src s);
/* The word kept in NAME.sha256 ("catalog", "sha256-option", "hub", "none") and back. */
const char *catalog_hash_src_word(zn_hash_src s);

/* The free bytes of the filesystem holding dir: statvfs, or a stand-in
 * passed by a test. */
typedef zn_status (*zn_free_space_fn)(void *ud, const char *dir, uint64_t *free_bytes, zn_err *err);

/* A download's inputs. Zero / NULL fields take the defaults of limits.h. */
typedef struct zn_fetch_opts {
    const char *expect;        /* SHA-256 (hex) the file must have, or NULL */
    zn_hash_src expect_src;    /* where expect comes from (CATALOG, USER or HUB) */
    uint64_t expect_size;      /* exact size in bytes when known (a hub listing), else 0 */
    uint64_t size_hint;        /* approximate size: the free-space check before the server says */
    FILE *progress;            /* NULL: silent; a bar on a terminal, plain lines otherwise */
    double deadline_s;         /* the whole download, every attempt (ZN_DL_DEADLINE_S) */
    uint64_t min_rate;         /* bytes/s ... (ZN_DL_MIN_RATE) */
    long min_rate_window_s;    /* ... averaged over this many seconds (ZN_DL_MIN_RATE_WINDOW_S) */
    long connect_s;            /* (ZN_DL_CONNECT_S) */
    zn_free_space_fn free_space; /* NULL: statvfs */
    void *free_space_ud;
} zn_fetch_opts;

typedef struct zn_fetch_result {
    char sha256[ZN_SHA256_HEX]; /* of the installed file, hashed from disk */
    zn_hash_src verified;       /* what it matched; NONE: unverified */
    uint64_t size;
    bool resumed;               /* bytes of an earlier run's .part were kept */
    bool hub_differs;           /* refused: the hub announced another hash than the expected one */
} zn_fetch_result;

/* Downloads url (http or https only, also across redirects) to dest:
 *  - holds a lock on dest for the whole download (a second pull of the
 *    same file refuses at once);
 *  - streams into dest.part, created with O_EXCL|O_NOFOLLOW (an existing
 *    one must be a plain file with one link), resuming one an earlier run
 *    left when the server honours Range and If-Range for the same content;
 *  - checks the free space before writing when the size is known, removes
 *    the part when the disk fills up, gives up under the minimum rate or
 *    past the deadline, keeping the part only when it can be resumed;
 *  - then, before dest exists: the size the server or the hub announced,
 *    the full GGUF validation (header, tensor table, data extents, no bytes
 *    after the data), and the SHA-256 of the bytes on disk against
 *    o->expect, else the hub's X-Linked-Etag; a file that fails any of
 *    them is deleted. The NAME.sha256 record is written, then the part is
 *    renamed into place (never over an existing file). */
zn_status catalog_download(const char *url, const char *dest, const zn_fetch_opts *o, zn_fetch_result *r, zn_err *err);

/* `zinc model pull WHAT`: WHAT is a catalog id or alias, an http(s) URL,
 * hf:ORG/REPO[:QUANT] (the hub's file listing picks the one GGUF of that
 * quantization, Q4_K_M when none is given) or [hf:]ORG/REPO/FILE.gguf. */
typedef struct zn_pull_opts {
    const char *home;          /* the zinc home (catalog_home) */
    const char *hub_url;       /* NULL: ZN_HUB_URL; tests point it at a loopback stand-in */
    const char *sha256;        /* --sha256, or NULL */
    const zn_catalog_entry *catalog; /* NULL: the built-in table */
    size_t n_catalog;
    zn_fetch_opts fetch;       /* limits, progress, hooks (expect* are filled by the pull) */
} zn_pull_opts;

typedef struct zn_pull_result {
    char path[ZN_PATH_MAX];    /* the installed file */
    char url[ZN_PATH_MAX];
    char id[256];              /* what `zinc model use` takes for it */
    const zn_catalog_entry *entry; /* NULL for a URL or hub file */
    bool already;              /* it was installed before: nothing downloaded */
    bool shipped;              /* the demo model: nothing to download */
    zn_fetch_result f;
} zn_pull_result;

#define ZN_HUB_URL "https://huggingface.co"

zn_status catalog_pull(const char *what, const zn_pull_opts *o, zn_pull_result *r, zn_err *err);

/* ORG/REPO/FILE (FILE may have folders) -> hub/ORG/REPO/resolve/main/FILE.
 * ZN_ERR_ARG when a part is empty, "." or "..", or has characters a repo
 * path does not. */
zn_status catalog_hub_url(const char *hub, const char *repo_file, char *out, size_t cap, zn_err *err);

/* The file name a URL's last path component gives ("" on none/unsafe). */
void catalog_url_filename(const char *url, char *out, size_t cap);

#endif
