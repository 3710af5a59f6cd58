/* The model catalog, the models directory and default-model resolution
 * (catalog.h). Downloads are in catalog_fetch.c. */
#include "catalog.h"
#include "embedded.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sizes of downloads are what the hosting pages show, rounded: they only
 * size the disk-space check before the server says the exact length. No
 * hash is claimed for a file we have not seen: sha256 NULL = the hub's
 * announced hash is used (X-Linked-Etag), else "unverified". The two hashes
 * given (with exact sizes) are the seed's catalog's (zolotukhin/zinc,
 * src/model/catalog.zig: the LFS SHA-256 the hub announced for these files),
 * and others who downloaded the same files record the same ones; should
 * the hub announce another hash (the file was replaced upstream), the pull
 * stops before downloading and says how to take the hub's file instead.
 *
 * Shapes (zn_model_shape) are the released configs as llama.cpp converts
 * them (the same numbers as synth.c's shapes where it has the model);
 * Qwen3.5 keeps full attention in every 4th layer and a Gated DeltaNet
 * state (conv + delta, f32) in the others. Unknown shapes are 0: read from
 * the file once it is installed. */
#define QWEN35_STATE(n_recr, groups, v_heads) \
    ((uint64_t)(n_recr) * (4ull * (2ull * 128 * (groups) + 128ull * (v_heads)) * 3 + 4ull * 128 * (v_heads) * 128))
static const zn_catalog_entry entries[] = {
    {ZN_DEMO_MODEL_ID, {NULL}, "zinc demo (Qwen3.5 hybrid, 8.6M)", "qwen35", "Q8_0", 9295808, NULL,
     ZN_DEMO_MODEL_FILE, NULL, "CC0-1.0",
     "shipped with zinc, works offline; trained on War and Peace and Shakespeare: English-looking prose, nothing more",
     {0}},
    {"qwen3.5-2b", {"qwen35-2b-q4k-m"}, "Qwen3.5 2B", "qwen35", "Q4_K_M", 1280835840ull,
     "https://huggingface.co/unsloth/Qwen3.5-2B-GGUF/resolve/main/Qwen3.5-2B-Q4_K_M.gguf", "Qwen3.5-2B-Q4_K_M.gguf",
     "aaf42c8b7c3cab2bf3d69c355048d4a0ee9973d48f16c731c0520ee914699223", "Apache-2.0", "small hybrid (Gated DeltaNet) chat model",
     {6, 512, 512, QWEN35_STATE(18, 16, 16), 262144}},
    {"qwen3.5-35b-a3b", {"qwen35-35b-a3b-q4k-m"}, "Qwen3.5 35B-A3B (MoE)", "qwen35moe", "Q4_K_M", 22016000000ull,
     "https://huggingface.co/unsloth/Qwen3.5-35B-A3B-GGUF/resolve/main/Qwen3.5-35B-A3B-Q4_K_M.gguf",
     "Qwen3.5-35B-A3B-Q4_K_M.gguf", NULL, "Apache-2.0",
     "hybrid mixture of experts (256 experts, 3B active); needs ~24 GB of RAM or VRAM",
     {10, 512, 512, QWEN35_STATE(30, 16, 32), 262144}},
    {"qwen3.5-35b-a3b-ud", {"qwen35-35b-a3b-ud-q4k-xl", "qwen35-35b-a3b-q4k-xl"}, "Qwen3.5 35B-A3B (MoE, Unsloth Dynamic)",
     "qwen35moe", "UD-Q4_K_XL", 22241950336ull,
     "https://huggingface.co/unsloth/Qwen3.5-35B-A3B-GGUF/resolve/main/Qwen3.5-35B-A3B-UD-Q4_K_XL.gguf",
     "Qwen3.5-35B-A3B-UD-Q4_K_XL.gguf", "1b0ac637dfa092bbba2793977db9485a40c4f8b42df5fe342f0076d61b66ae83", "Apache-2.0",
     "the same model, Unsloth's dynamic 4-bit mix (sensitive tensors kept at higher precision); ~24 GB",
     {10, 512, 512, QWEN35_STATE(30, 16, 32), 262144}},
    {"qwen3.5-9b", {NULL}, "Qwen3.5 9B", "qwen35", "Q4_K_M", 5700000000ull,
     "https://huggingface.co/unsloth/Qwen3.5-9B-GGUF/resolve/main/Qwen3.5-9B-Q4_K_M.gguf", "Qwen3.5-9B-Q4_K_M.gguf",
     NULL, "Apache-2.0", "hybrid (Gated DeltaNet) chat model; needs ~8 GB of RAM or VRAM", {0}},
    {"qwen3-0.6b", {NULL}, "Qwen3 0.6B", "qwen3", "Q8_0", 639000000ull,
     "https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf", "Qwen3-0.6B-Q8_0.gguf", NULL,
     "Apache-2.0", "tiny dense chat model, fast on any CPU", {28, 1024, 1024, 0, 40960}},
    {"qwen3-8b", {NULL}, "Qwen3 8B", "qwen3", "Q4_K_M", 5030000000ull,
     "https://huggingface.co/Qwen/Qwen3-8B-GGUF/resolve/main/Qwen3-8B-Q4_K_M.gguf", "Qwen3-8B-Q4_K_M.gguf", NULL,
     "Apache-2.0", "dense chat model with thinking mode; needs ~7 GB of RAM or VRAM", {36, 1024, 1024, 0, 40960}},
    {"qwen3-30b-a3b", {NULL}, "Qwen3 30B-A3B (MoE)", "qwen3moe", "Q4_K_M", 18600000000ull,
     "https://huggingface.co/Qwen/Qwen3-30B-A3B-GGUF/resolve/main/Qwen3-30B-A3B-Q4_K_M.gguf",
     "Qwen3-30B-A3B-Q4_K_M.gguf", NULL, "Apache-2.0", "mixture of experts, 3B active; needs ~20 GB of RAM or VRAM",
     {48, 512, 512, 0, 40960}},
    {"llama3.2-1b", {NULL}, "Llama 3.2 1B Instruct", "llama", "Q4_K_M", 808000000ull,
     "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf",
     "Llama-3.2-1B-Instruct-Q4_K_M.gguf", NULL, "Llama 3.2 Community License", "small dense chat model",
     {16, 512, 512, 0, 131072}},
    {"llama3.2-3b", {NULL}, "Llama 3.2 3B Instruct", "llama", "Q4_K_M", 2020000000ull,
     "https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-Q4_K_M.gguf",
     "Llama-3.2-3B-Instruct-Q4_K_M.gguf", NULL, "Llama 3.2 Community License", "dense chat model",
     {28, 1024, 1024, 0, 131072}},
};

const zn_catalog_entry *catalog_entries(size_t *n) {
    *n = sizeof entries / sizeof entries[0];
    return entries;
}

const zn_catalog_entry *catalog_find(const char *id) {
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        if (!strcmp(entries[i].id, id)) return &entries[i];
        for (int k = 0; k < ZN_CATALOG_MAX_ALIASES && entries[i].aliases[k]; k++)
            if (!strcmp(entries[i].aliases[k], id)) return &entries[i];
    }
    return NULL;
}

static zn_status join(char *out, size_t cap, zn_err *err, const char *a, const char *b) {
    if ((size_t)snprintf(out, cap, "%s/%s", a, b) >= cap) return zn_errf(err, ZN_ERR_ARG, "path too long: %s/%s", a, b);
    return ZN_OK;
}

zn_status catalog_home(char *out, size_t cap, zn_err *err) {
    const char *v = getenv("ZINC_HOME");
    if (v && *v) {
        if ((size_t)snprintf(out, cap, "%s", v) >= cap) return zn_errf(err, ZN_ERR_ARG, "ZINC_HOME too long: %s", v);
        return ZN_OK;
    }
    v = getenv("XDG_DATA_HOME");
    if (v && *v) return join(out, cap, err, v, "zinc");
    v = getenv("HOME");
    if (v && *v) return join(out, cap, err, v, ".local/share/zinc");
    return zn_errf(err, ZN_ERR_NOT_FOUND, "no models directory: set ZINC_HOME (or XDG_DATA_HOME or HOME)");
}

static zn_status mkdir_one(const char *dir, zn_err *err) {
    if (mkdir(dir, 0755) && errno != EEXIST) return zn_errf(err, ZN_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    return ZN_OK;
}

/* mkdir -p for a home given by the user (its parents may not exist). */
static zn_status mkdir_p(const char *dir, zn_err *err) {
    char buf[ZN_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return zn_errf(err, ZN_ERR_ARG, "path too long: %s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        zn_status s = mkdir_one(buf, err);
        *p = '/';
        if (s) return s;
    }
    return mkdir_one(buf, err);
}

zn_status catalog_models_dir(const char *home, bool mkdirs, char *out, size_t cap, zn_err *err) {
    zn_status s = join(out, cap, err, home, "models");
    if (!s && mkdirs) s = mkdir_p(out, err);
    return s;
}

static bool is_file(const char *p) {
    struct stat st;
    return embedded_is(p) || (stat(p, &st) == 0 && S_ISREG(st.st_mode));
}

bool catalog_model_exists(const char *path) { return is_file(path); }

zn_status catalog_demo_path(const char *exe, char *out, size_t cap, zn_err *err) {
    char dir[ZN_PATH_MAX];
    if (exe) {
        snprintf(dir, sizeof dir, "%s", exe);
    } else {
        ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
        if (n <= 0) return zn_errf(err, ZN_ERR_NOT_FOUND, "demo model: cannot read /proc/self/exe: %s", strerror(errno));
        dir[n] = 0;
    }
    /* The binary sits in the source tree (./zinc, build/zinc, build/tests/x)
     * or in PREFIX/bin: look in models/ and share/zinc/models/ of its folder
     * and of up to three folders above it. */
    static const char *const subdirs[] = {"models", "share/zinc/models"};
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash) break;
        *slash = 0;
        for (size_t k = 0; k < sizeof subdirs / sizeof subdirs[0]; k++) {
            if ((size_t)snprintf(out, cap, "%s/%s/%s", *dir ? dir : "", subdirs[k], ZN_DEMO_MODEL_FILE) >= cap) continue;
            if (is_file(out)) return ZN_OK;
        }
    }
    /* a copied binary with nothing beside it: the copy built into it */
    if ((size_t)snprintf(out, cap, "%s%s", ZN_EMBEDDED_PREFIX, ZN_DEMO_MODEL_FILE) < cap && embedded_is(out)) return ZN_OK;
    return zn_errf(err, ZN_ERR_NOT_FOUND,
                   "the demo model %s is not in models/ or share/zinc/models/ next to %s or up to 3 folders above it",
                   ZN_DEMO_MODEL_FILE, exe ? exe : "the zinc binary");
}

static zn_status active_file(const char *home, char *out, size_t cap, zn_err *err) {
    return join(out, cap, err, home, "active");
}

zn_status catalog_active_get(const char *home, char *out, size_t cap, zn_err *err) {
    char p[ZN_PATH_MAX];
    zn_status s = active_file(home, p, sizeof p, err);
    if (s) return s;
    FILE *f;
    s = zn_file_fopen_regular(p, &f, err);
    if (s == ZN_ERR_NOT_FOUND) return zn_errf(err, ZN_ERR_NOT_FOUND, "no active model (zinc model use ID|PATH)");
    if (s) return s;
    bool got = fgets(out, (int)cap, f) != NULL, rerr = ferror(f);
    fclose(f);
    if (rerr) return zn_errf(err, ZN_ERR_IO, "%s: read error", p);
    if (!got) return zn_errf(err, ZN_ERR_NOT_FOUND, "%s is empty: no active model", p);
    out[strcspn(out, "\r\n")] = 0;
    if (!*out) return zn_errf(err, ZN_ERR_NOT_FOUND, "%s is empty: no active model", p);
    return ZN_OK;
}

/* Writes via a temporary file and rename, so a reader never sees half a line. */
static zn_status write_atomic(const char *path, const char *text, zn_err *err) {
    char tmp[ZN_PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) return zn_errf(err, ZN_ERR_ARG, "path too long: %s", path);
    FILE *f;
    zn_status s = zn_file_create_regular(tmp, O_WRONLY | O_TRUNC, "w", &f, err);
    if (s) return s;
    bool ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path)) {
        zn_errf(err, ZN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return ZN_ERR_IO;
    }
    return ZN_OK;
}

zn_status catalog_active_set(const char *home, const char *path, zn_err *err) {
    char abs[ZN_PATH_MAX], p[ZN_PATH_MAX], line[ZN_PATH_MAX + 2];
    if (embedded_is(path)) snprintf(abs, sizeof abs, "%s", path);
    else if (!realpath(path, abs)) return zn_errf(err, ZN_ERR_NOT_FOUND, "%s: %s", path, strerror(errno));
    zn_status s = mkdir_p(home, err);
    if (!s) s = active_file(home, p, sizeof p, err);
    if (s) return s;
    snprintf(line, sizeof line, "%s\n", abs);
    return write_atomic(p, line, err);
}

zn_status catalog_active_clear(const char *home, zn_err *err) {
    char p[ZN_PATH_MAX];
    zn_status s = active_file(home, p, sizeof p, err);
    if (s) return s;
    if (unlink(p) && errno != ENOENT) return zn_errf(err, ZN_ERR_IO, "%s: cannot remove: %s", p, strerror(errno));
    return ZN_OK;
}

zn_status catalog_locate(const char *home, const char *exe, const char *what, char *out, size_t cap, zn_err *err) {
    if (!strcmp(what, ZN_DEMO_MODEL_ID)) return catalog_demo_path(exe, out, cap, err);
    const zn_catalog_entry *e = catalog_find(what);
    bool bare = !strchr(what, '/') && strcmp(what, ".") && strcmp(what, "..");
    if (e || bare) {
        char dir[ZN_PATH_MAX];
        zn_status s = catalog_models_dir(home, false, dir, sizeof dir, err);
        if (s) return s;
        if (e) return join(out, cap, err, dir, e->file);
        if (join(out, cap, err, dir, what) == ZN_OK && is_file(out)) return ZN_OK;
    }
    if ((size_t)snprintf(out, cap, "%s", what) >= cap) return zn_errf(err, ZN_ERR_ARG, "path too long: %s", what);
    return ZN_OK;
}

zn_status catalog_resolve(const char *home, const char *exe, const char *explicit_path, char *out, size_t cap,
                          zn_model_source *src, char *note, zn_err *err) {
    if (note) *note = 0;
    if (explicit_path) {
        *src = ZN_SRC_EXPLICIT;
        if ((size_t)snprintf(out, cap, "%s", explicit_path) >= cap)
            return zn_errf(err, ZN_ERR_ARG, "path too long: %s", explicit_path);
        return ZN_OK;
    }
    char h[ZN_PATH_MAX];
    zn_err e2 = {0};
    if (!home && catalog_home(h, sizeof h, &e2) == ZN_OK) home = h;
    if (home && catalog_active_get(home, out, cap, &e2) == ZN_OK) {
        if (is_file(out)) {
            *src = ZN_SRC_ACTIVE;
            return ZN_OK;
        }
        if (note)
            snprintf(note, ZN_ERR_MSG_MAX, "the active model %s is missing (zinc model use ID|PATH to change it)", out);
    }
    if (catalog_demo_path(exe, out, cap, &e2) == ZN_OK) {
        *src = ZN_SRC_DEMO;
        return ZN_OK;
    }
    return zn_errf(err, ZN_ERR_NOT_FOUND,
                   "no model: no -m given, no active model, and %s. Run `zinc model list`, then "
                   "`zinc model pull ID` and `zinc model use ID`, or pass -m MODEL.gguf",
                   e2.msg);
}

/* ---- SHA-256 ---- */

void catalog_hex(const unsigned char d[32], char hex[ZN_SHA256_HEX]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = 0;
}

zn_status catalog_sha256_buf(const void *p, size_t n, char hex[ZN_SHA256_HEX], zn_err *err) {
    unsigned char d[32];
    unsigned int dl = 0;
    if (!EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL) || dl != 32) return zn_errf(err, ZN_ERR_IO, "sha256: OpenSSL failed");
    catalog_hex(d, hex);
    return ZN_OK;
}

zn_status catalog_sha256_file(const char *path, char hex[ZN_SHA256_HEX], zn_err *err) {
    int fd;
    zn_status s = zn_file_open_regular(path, &fd, NULL, err);
    if (s) {
        if (err) err->status = ZN_ERR_IO; /* a missing file is an I/O failure here */
        return ZN_ERR_IO;
    }
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL)) s = zn_errf(err, ZN_ERR_IO, "sha256: OpenSSL failed");
    static const size_t chunk = 1 << 16;
    unsigned char *buf = s ? NULL : malloc(chunk);
    if (!s && !buf) s = zn_errf(err, ZN_ERR_NOMEM, "out of memory");
    while (!s) {
        ssize_t k = read(fd, buf, chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) s = zn_errf(err, ZN_ERR_IO, "%s: read: %s", path, strerror(errno));
        if (k <= 0) break;
        if (!EVP_DigestUpdate(c, buf, (size_t)k)) s = zn_errf(err, ZN_ERR_IO, "sha256: OpenSSL failed");
    }
    unsigned char d[32];
    unsigned int dl = 0;
    if (!s && (!EVP_DigestFinal_ex(c, d, &dl) || dl != 32)) s = zn_errf(err, ZN_ERR_IO, "sha256: OpenSSL failed");
    if (!s) catalog_hex(d, hex);
    free(buf);
    EVP_MD_CTX_free(c);
    close(fd);
    return s;
}

bool catalog_is_sha256(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!strchr("0123456789abcdefABCDEF", s[n])) return false;
    return n == 64;
}

const char *catalog_hash_src_text(zn_hash_src s) {
    switch (s) {
    case ZN_HASH_CATALOG: return "the catalog's hash";
    case ZN_HASH_USER: return "--sha256";
    case ZN_HASH_HUB: return "the hub's hash";
    case ZN_HASH_NONE: break;
    }
    return "no hash";
}

const char *catalog_hash_src_word(zn_hash_src s) {
    switch (s) {
    case ZN_HASH_CATALOG: return "catalog";
    case ZN_HASH_USER: return "sha256-option";
    case ZN_HASH_HUB: return "hub";
    case ZN_HASH_NONE: break;
    }
    return "none";
}

zn_status catalog_hash_record_read(const char *model_path, char hex[ZN_SHA256_HEX], zn_hash_src *src, zn_err *err) {
    char p[ZN_PATH_MAX], word[32] = "", from[32] = "";
    if ((size_t)snprintf(p, sizeof p, "%s.sha256", model_path) >= sizeof p)
        return zn_errf(err, ZN_ERR_ARG, "path too long: %s", model_path);
    FILE *f;
    zn_status s = zn_file_fopen_regular(p, &f, err);
    if (s) return s;
    int k = fscanf(f, "%64s %31s %31s", hex, word, from);
    fclose(f);
    bool verified = k >= 2 && !strcmp(word, "verified");
    if (k < 2 || !catalog_is_sha256(hex) || (!verified && strcmp(word, "unverified")) || (!verified && k == 3))
        return zn_errf(err, ZN_ERR_FORMAT, "%s: not \"HEX verified SOURCE\" or \"HEX unverified\"", p);
    *src = ZN_HASH_NONE;
    if (!verified) return ZN_OK;
    *src = ZN_HASH_CATALOG;  /* records before sources were kept */
    if (k == 3) {
        zn_hash_src all[] = {ZN_HASH_CATALOG, ZN_HASH_USER, ZN_HASH_HUB};
        bool known = false;
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (!strcmp(from, catalog_hash_src_word(all[i]))) *src = all[i], known = true;
        if (!known) return zn_errf(err, ZN_ERR_FORMAT, "%s: unknown hash source '%s'", p, from);
    }
    return ZN_OK;
}

zn_status catalog_hash_record_write(const char *model_path, const char *hex, zn_hash_src src, zn_err *err) {
    char p[ZN_PATH_MAX], line[128];
    if ((size_t)snprintf(p, sizeof p, "%s.sha256", model_path) >= sizeof p)
        return zn_errf(err, ZN_ERR_ARG, "path too long: %s", model_path);
    if (src == ZN_HASH_NONE) snprintf(line, sizeof line, "%s unverified\n", hex);
    else snprintf(line, sizeof line, "%s verified %s\n", hex, catalog_hash_src_word(src));
    return write_atomic(p, line, err);
}

void catalog_url_filename(const char *url, char *out, size_t cap) {
    size_t end = strcspn(url, "?#");
    size_t start = end;
    while (start > 0 && url[start - 1] != '/') start--;
    size_t n = end - start;
    *out = 0;
    if (n == 0 || n >= cap || url[start] == '.') return;
    for (size_t i = 0; i < n; i++) {
        char c = url[start + i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("._-+", c);
        if (!ok) return;
    }
    memcpy(out, url + start, n);
    out[n] = 0;
}
