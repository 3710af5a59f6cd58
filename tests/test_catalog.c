/* The model catalog: SHA-256 against the FIPS 180-2 vectors, the home and
 * default-model resolution order, active model, locate, hash records, and
 * zinc model use/active/rm in a temporary ZINC_HOME. Downloads are tested
 * against a loopback server (tests/catalog/fake_hub.py) in test_fetch.sh;
 * here only a pull whose hash comes from a catalog entry, which needs the
 * catalog passed as data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "embedded.h"
#include "model.h"
#include "cli.h"
#include "harness.h"

#define DEMO "models/" ZN_DEMO_MODEL_FILE

static char tmp[256];

static void path_of(char *out, size_t cap, const char *rel) {
    snprintf(out, cap, "%s/%s", tmp, rel);
}

/* Creates tmp/rel with the given bytes (parents created). */
static void put(const char *rel, const void *data, size_t n) {
    char p[1024], cmd[1200];
    path_of(p, sizeof p, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", p);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_sha256_vectors(void) {
    static const struct { const char *msg, *hex; } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    char hex[ZN_SHA256_HEX];
    zn_err err = {0};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        CHECK(catalog_sha256_buf(v[i].msg, strlen(v[i].msg), hex, &err) == ZN_OK);
        CHECK_EQ_STR(hex, v[i].hex);
    }
    /* one million 'a': in memory, and as a file read in several chunks */
    size_t n = 1000000;
    char *a = malloc(n);
    CHECK(a != NULL);
    if (!a) return;
    memset(a, 'a', n);
    const char *want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    CHECK(catalog_sha256_buf(a, n, hex, &err) == ZN_OK);
    CHECK_EQ_STR(hex, want);
    put("million-a", a, n);
    char p[1024];
    path_of(p, sizeof p, "million-a");
    memset(hex, 0, sizeof hex);
    CHECK(catalog_sha256_file(p, hex, &err) == ZN_OK);
    CHECK_EQ_STR(hex, want);
    free(a);
    CHECK(catalog_sha256_file("/nonexistent/x", hex, &err) == ZN_ERR_IO);
    CHECK(strstr(err.msg, "/nonexistent/x") != NULL);
}

static void test_helpers(void) {
    CHECK(catalog_is_sha256("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
    CHECK(!catalog_is_sha256("ba7816bf"));
    CHECK(!catalog_is_sha256("ga7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    char f[64];
    catalog_url_filename("https://h/x/resolve/main/Qwen3-8B-Q4_K_M.gguf?download=true", f, sizeof f);
    CHECK_EQ_STR(f, "Qwen3-8B-Q4_K_M.gguf");
    catalog_url_filename("https://h/x/", f, sizeof f);
    CHECK_EQ_STR(f, "");
    catalog_url_filename("https://h/..", f, sizeof f);
    CHECK_EQ_STR(f, "");
    catalog_url_filename("https://h/a%2Fb.gguf", f, sizeof f);
    CHECK_EQ_STR(f, "");
}

/* Every entry is complete; hashes, where claimed, are well-formed; only the
 * shipped demo model has no URL. */
static void test_table(void) {
    size_t n;
    const zn_catalog_entry *e = catalog_entries(&n);
    CHECK(n >= 5);
    int demos = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(e[i].id && e[i].name && e[i].arch && e[i].quant && e[i].file && e[i].license && e[i].desc);
        CHECK(e[i].size > 0);
        CHECK(!e[i].sha256 || catalog_is_sha256(e[i].sha256));
        CHECK(catalog_find(e[i].id) == &e[i]);  /* ids are unique */
        if (!e[i].url) demos++;
        else CHECK_MSG(!strncmp(e[i].url, "https://", 8), "%s", e[i].url);
        char f[256];
        if (e[i].url) {
            catalog_url_filename(e[i].url, f, sizeof f);
            CHECK_EQ_STR(f, e[i].file);
        }
    }
    CHECK_EQ_INT(demos, 1);
    CHECK(catalog_find(ZN_DEMO_MODEL_ID) && !catalog_find(ZN_DEMO_MODEL_ID)->url);
    CHECK(catalog_find("no-such-model") == NULL);
    /* aliases name one entry each and never shadow an id */
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < ZN_CATALOG_MAX_ALIASES && e[i].aliases[k]; k++) {
            CHECK_MSG(catalog_find(e[i].aliases[k]) == &e[i], "alias %s", e[i].aliases[k]);
            for (size_t j = 0; j < n; j++) CHECK(strcmp(e[j].id, e[i].aliases[k]));
        }
    /* an entry with a shape has it whole: K and V widths with its layers */
    for (size_t i = 0; i < n; i++) {
        const zn_model_shape *sh = &e[i].shape;
        CHECK_MSG(!sh->n_attn == !sh->kv_k && !sh->kv_k == !sh->kv_v && !sh->n_attn == !sh->ctx_train, "%s", e[i].id);
    }
}

/* The seed's flagship models and its ids for them. */
static void test_seed_models(void) {
    const zn_catalog_entry *two = catalog_find("qwen35-2b-q4k-m");
    CHECK(two && two == catalog_find("qwen3.5-2b"));
    CHECK(two && !strcmp(two->quant, "Q4_K_M") && !strcmp(two->file, "Qwen3.5-2B-Q4_K_M.gguf"));
    /* the two hashes the seed's catalog records, with the files' exact sizes */
    CHECK(two && two->sha256 && !strcmp(two->sha256, "aaf42c8b7c3cab2bf3d69c355048d4a0ee9973d48f16c731c0520ee914699223"));
    CHECK(two && two->size == 1280835840ull);
    const zn_catalog_entry *xl = catalog_find("qwen35-35b-a3b-q4k-xl");
    CHECK(xl && xl->sha256 && !strcmp(xl->sha256, "1b0ac637dfa092bbba2793977db9485a40c4f8b42df5fe342f0076d61b66ae83"));
    CHECK(xl && xl->size == 22241950336ull);
    const zn_catalog_entry *m = catalog_find("qwen35-35b-a3b-q4k-m"), *ud = catalog_find("qwen35-35b-a3b-ud-q4k-xl");
    CHECK(m && ud && m != ud);
    if (!m || !ud) return;
    CHECK_EQ_STR(m->file, "Qwen3.5-35B-A3B-Q4_K_M.gguf");
    CHECK_EQ_STR(ud->file, "Qwen3.5-35B-A3B-UD-Q4_K_XL.gguf");
    CHECK_EQ_STR(m->arch, "qwen35moe");
    CHECK(strstr(m->url, "huggingface.co/unsloth/Qwen3.5-35B-A3B-GGUF/resolve/main/") != NULL);
    CHECK(strstr(ud->url, "huggingface.co/unsloth/Qwen3.5-35B-A3B-GGUF/resolve/main/") != NULL);
    /* 10 of 40 layers keep a KV cache (2 heads x 256): 20 KiB a token at f16 */
    CHECK_EQ_INT(m->shape.n_attn, 10);
    CHECK_EQ_INT(2ull * m->shape.n_attn * (m->shape.kv_k + m->shape.kv_v), 20480);
}

static void test_home(void) {
    char h[1024];
    zn_err err = {0};
    setenv("ZINC_HOME", "/z/home", 1);
    setenv("XDG_DATA_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    CHECK(catalog_home(h, sizeof h, &err) == ZN_OK);
    CHECK_EQ_STR(h, "/z/home");
    unsetenv("ZINC_HOME");
    CHECK(catalog_home(h, sizeof h, &err) == ZN_OK);
    CHECK_EQ_STR(h, "/xdg/zinc");
    setenv("XDG_DATA_HOME", "", 1);
    CHECK(catalog_home(h, sizeof h, &err) == ZN_OK);
    CHECK_EQ_STR(h, "/home/u/.local/share/zinc");
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    CHECK(catalog_home(h, sizeof h, &err) == ZN_ERR_NOT_FOUND);
}

static void test_active_and_locate(void) {
    char home[1024], p[1024], got[1024], want[1024];
    zn_err err = {0};
    path_of(home, sizeof home, "h1/deep/home");  /* parents do not exist yet */
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_ERR_NOT_FOUND);
    put("files/m.gguf", "x", 1);
    path_of(p, sizeof p, "files/../files/m.gguf");
    CHECK(catalog_active_set(home, p, &err) == ZN_OK);
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_OK);
    CHECK(realpath(p, want) != NULL);
    CHECK_EQ_STR(got, want);  /* stored absolute and canonical */
    CHECK(catalog_active_set(home, "/nonexistent.gguf", &err) == ZN_ERR_NOT_FOUND);
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_OK);
    CHECK_EQ_STR(got, want);  /* a failed set leaves it */
    CHECK(catalog_active_clear(home, &err) == ZN_OK);
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_ERR_NOT_FOUND);
    CHECK(catalog_active_clear(home, &err) == ZN_OK);  /* clearing nothing is fine */

    /* id -> models/FILE; an installed bare name -> models/NAME; else a path */
    CHECK(catalog_locate(home, NULL, "qwen3-8b", got, sizeof got, &err) == ZN_OK);
    snprintf(want, sizeof want, "%s/models/%s", home, catalog_find("qwen3-8b")->file);
    CHECK_EQ_STR(got, want);
    put("h1/deep/home/models/mine.gguf", "y", 1);
    CHECK(catalog_locate(home, NULL, "mine.gguf", got, sizeof got, &err) == ZN_OK);
    snprintf(want, sizeof want, "%s/models/mine.gguf", home);
    CHECK_EQ_STR(got, want);
    CHECK(catalog_locate(home, NULL, "other.gguf", got, sizeof got, &err) == ZN_OK);
    CHECK_EQ_STR(got, "other.gguf");
    CHECK(catalog_locate(home, NULL, "dir/x.gguf", got, sizeof got, &err) == ZN_OK);
    CHECK_EQ_STR(got, "dir/x.gguf");
    /* an alias locates its entry's file */
    CHECK(catalog_locate(home, NULL, "qwen35-2b-q4k-m", got, sizeof got, &err) == ZN_OK);
    snprintf(want, sizeof want, "%s/models/Qwen3.5-2B-Q4_K_M.gguf", home);
    CHECK_EQ_STR(got, want);

    char hex[ZN_SHA256_HEX];
    zn_hash_src src = ZN_HASH_USER;
    const char *h = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    CHECK(catalog_hash_record_read(want, hex, &src, &err) == ZN_ERR_NOT_FOUND);
    CHECK(catalog_hash_record_write(want, h, ZN_HASH_NONE, &err) == ZN_OK);
    CHECK(catalog_hash_record_read(want, hex, &src, &err) == ZN_OK);
    CHECK_EQ_STR(hex, h);
    CHECK(src == ZN_HASH_NONE);
    zn_hash_src all[] = {ZN_HASH_CATALOG, ZN_HASH_USER, ZN_HASH_HUB};
    for (size_t i = 0; i < 3; i++) {
        CHECK(catalog_hash_record_write(want, h, all[i], &err) == ZN_OK);
        CHECK(catalog_hash_record_read(want, hex, &src, &err) == ZN_OK && src == all[i]);
    }
    /* a record from before sources were kept; a malformed one */
    char rec[1100];
    snprintf(rec, sizeof rec, "%s.sha256", want);
    FILE *rf = fopen(rec, "w");
    CHECK(rf != NULL);
    if (rf) fprintf(rf, "%s verified\n", h), fclose(rf);
    CHECK(catalog_hash_record_read(want, hex, &src, &err) == ZN_OK && src == ZN_HASH_CATALOG);
    rf = fopen(rec, "w");
    if (rf) fprintf(rf, "%s unverified hub\n", h), fclose(rf);
    CHECK(catalog_hash_record_read(want, hex, &src, &err) == ZN_ERR_FORMAT);
}

/* -m, then the active model (if its file exists), then the demo model found
 * from the executable's folder; else an error that says what to run. */
static void test_resolve_order(void) {
    char home[1024], exe[1024], got[1024], want[1024], note[ZN_ERR_MSG_MAX], act[1024];
    zn_model_source src;
    zn_err err = {0};
    path_of(home, sizeof home, "h2");
    path_of(exe, sizeof exe, "prefix/bin/zinc");
    CHECK(catalog_resolve(home, exe, "x.gguf", got, sizeof got, &src, note, &err) == ZN_OK);
    CHECK_EQ_STR(got, "x.gguf");
    CHECK_EQ_INT(src, ZN_SRC_EXPLICIT);

    /* nothing beside the binary: the demo model built into it */
    CHECK(catalog_resolve(home, exe, NULL, got, sizeof got, &src, note, &err) == ZN_OK);
    CHECK_EQ_STR(got, ZN_EMBEDDED_PREFIX ZN_DEMO_MODEL_FILE);
    CHECK_EQ_INT(src, ZN_SRC_DEMO);

    /* installed layout: PREFIX/share/zinc/models */
    put("prefix/share/zinc/models/" ZN_DEMO_MODEL_FILE, "d", 1);
    path_of(want, sizeof want, "prefix/share/zinc/models/" ZN_DEMO_MODEL_FILE);
    CHECK(catalog_resolve(home, exe, NULL, got, sizeof got, &src, note, &err) == ZN_OK);
    CHECK_EQ_STR(got, want);
    CHECK_EQ_INT(src, ZN_SRC_DEMO);
    CHECK_EQ_STR(note, "");
    /* source-tree layout: build/zinc finds ../models first */
    put("prefix/models/" ZN_DEMO_MODEL_FILE, "d", 1);
    path_of(exe, sizeof exe, "prefix/build/zinc");
    path_of(want, sizeof want, "prefix/models/" ZN_DEMO_MODEL_FILE);
    CHECK(catalog_demo_path(exe, got, sizeof got, &err) == ZN_OK);
    CHECK_EQ_STR(got, want);

    /* an active model wins over the demo model */
    put("active.gguf", "a", 1);
    path_of(act, sizeof act, "active.gguf");
    CHECK(catalog_active_set(home, act, &err) == ZN_OK);
    CHECK(catalog_resolve(home, exe, NULL, got, sizeof got, &src, note, &err) == ZN_OK);
    CHECK_EQ_INT(src, ZN_SRC_ACTIVE);
    CHECK(realpath(act, want) && !strcmp(got, want));
    CHECK(catalog_resolve(home, exe, "y.gguf", got, sizeof got, &src, note, &err) == ZN_OK);
    CHECK_EQ_INT(src, ZN_SRC_EXPLICIT);

    /* an active model whose file is gone: the demo model, with a warning */
    unlink(act);
    CHECK(catalog_resolve(home, exe, NULL, got, sizeof got, &src, note, &err) == ZN_OK);
    CHECK_EQ_INT(src, ZN_SRC_DEMO);
    CHECK(strstr(note, "active.gguf is missing") != NULL);
}

/* zinc model use/active/rm through cli_model(), on a copy of the demo model. */
static void test_cli_use_active_rm(void) {
    char home[1024], m[1024], got[1024], want[1024], cmd[2200];
    zn_err err = {0};
    path_of(home, sizeof home, "h3");
    setenv("ZINC_HOME", home, 1);
    snprintf(m, sizeof m, "%s/models/mine.gguf", home);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/models' && cp '%s' '%s'", home, DEMO, m);
    CHECK(system(cmd) == 0);
    put("h3/models/junk.gguf", "not a gguf", 10);

    char *use_mine[] = {"model", "use", "mine.gguf", NULL};
    char *use_junk[] = {"model", "use", "junk.gguf", NULL};
    char *use_none[] = {"model", "use", "qwen3-8b", NULL};
    char *active[] = {"model", "active", NULL};
    char *rm_mine[] = {"model", "rm", "mine.gguf", NULL};
    char *rm_path[] = {"model", "rm", "/etc/passwd", NULL};
    char *rm_demo[] = {"model", "rm", ZN_DEMO_MODEL_ID, NULL};
    char *list[] = {"model", "list", NULL};

    CHECK_EQ_INT(cli_model(2, active), 1);  /* none yet */
    CHECK_EQ_INT(cli_model(3, use_mine), 0);
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_OK);
    CHECK(realpath(m, want) && !strcmp(got, want));
    CHECK_EQ_INT(cli_model(2, active), 0);
    CHECK_EQ_INT(cli_model(2, list), 0);
    CHECK_EQ_INT(cli_model(3, use_junk), 1);  /* does not load: not made active */
    CHECK_EQ_INT(cli_model(3, use_none), 1);  /* not installed */
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_OK && !strcmp(got, want));
    CHECK_EQ_INT(cli_model(3, rm_path), 2);   /* never deletes outside the models dir */
    CHECK(exists("/etc/passwd"));
    CHECK_EQ_INT(cli_model(3, rm_demo), 1);
    CHECK(exists(DEMO));
    CHECK_EQ_INT(cli_model(3, rm_mine), 0);
    CHECK(!exists(m));
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_ERR_NOT_FOUND);  /* cleared */
    CHECK_EQ_INT(cli_model(3, rm_mine), 1);   /* not installed any more */

    /* the seed's ids: use, --model-id and rm by alias */
    char buf[4096];
    CHECK(cli_resolve_model_id("qwen35-2b-q4k-m", buf) == NULL);  /* not installed */
    CHECK(cli_resolve_model_id("no-such-id", buf) == NULL);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/models/Qwen3.5-2B-Q4_K_M.gguf'", DEMO, home);
    CHECK(system(cmd) == 0);
    snprintf(want, sizeof want, "%s/models/Qwen3.5-2B-Q4_K_M.gguf", home);
    CHECK(cli_resolve_model_id("qwen35-2b-q4k-m", buf) && !strcmp(buf, want));
    CHECK(cli_resolve_model_id("qwen3.5-2b", buf) && !strcmp(buf, want));
    char *use_alias[] = {"model", "use", "qwen35-2b-q4k-m", NULL};
    char *rm_alias[] = {"model", "rm", "qwen35-2b-q4k-m", NULL};
    CHECK_EQ_INT(cli_model(3, use_alias), 0);
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_OK && realpath(want, m) && !strcmp(got, m));
    CHECK_EQ_INT(cli_model(3, rm_alias), 0);
    CHECK(!exists(want));
    CHECK(cli_resolve_model_id(ZN_DEMO_MODEL_ID, buf) != NULL);  /* the shipped one needs no pull */
    unsetenv("ZINC_HOME");
}

/* The built-in demo model: the same bytes as the shipped file, loaded in
 * place: its tensors point into a mapping of the executable itself. */
static void test_embedded_demo(void) {
    const uint8_t *p;
    size_t n;
    CHECK(embedded_find(ZN_EMBEDDED_PREFIX ZN_DEMO_MODEL_FILE, &p, &n));
    CHECK(!embedded_find(ZN_EMBEDDED_PREFIX "other.gguf", &p, &n) && !embedded_is("/proc/self/exe"));
    CHECK(embedded_find(ZN_EMBEDDED_PREFIX ZN_DEMO_MODEL_FILE, &p, &n));
    size_t fn = 0;
    char *file = harness_read_file(DEMO, &fn);
    CHECK(file && fn == n && !memcmp(file, p, n));
    free(file);
    CHECK_EQ_INT((uintptr_t)p % 4096, 0);  /* page-aligned: tensor alignments carry over */
    zn_model m;
    zn_err err = {0};
    CHECK(model_load(&m, ZN_EMBEDDED_PREFIX ZN_DEMO_MODEL_FILE, &err) == ZN_OK);
    if (err.msg[0]) fprintf(stderr, "  %s\n", err.msg);
    CHECK(m.gguf.map == p && m.tok_embd && m.tok_embd->data >= p && m.tok_embd->data < p + n);
    /* which mapping holds it: /proc/self/maps names the executable */
    char exe[1024] = "", line[2048];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) exe[k] = 0;
    bool in_exe = false;
    FILE *maps = fopen("/proc/self/maps", "r");
    uintptr_t a = (uintptr_t)m.tok_embd->data;
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char path[1024] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %1023s", &lo, &hi, path) >= 2 && a >= lo && a < hi)
            in_exe = !strcmp(path, exe);
    }
    if (maps) fclose(maps);
    CHECK_MSG(in_exe, "the weights at %p are not in a mapping of %s", (void *)a, exe);
    model_free(&m);
    /* an active model may be the built-in one */
    char home[1024], got[1024];
    path_of(home, sizeof home, "embhome");
    CHECK(catalog_active_set(home, ZN_EMBEDDED_PREFIX ZN_DEMO_MODEL_FILE, &err) == ZN_OK);
    CHECK(catalog_active_get(home, got, sizeof got, &err) == ZN_OK);
    CHECK_EQ_STR(got, ZN_EMBEDDED_PREFIX ZN_DEMO_MODEL_FILE);
    CHECK(catalog_model_exists(got));
}

typedef struct fake_disk {
    uint64_t free_bytes;
    char dir[1024];
    int calls;
} fake_disk;

static zn_status fake_free(void *ud, const char *dir, uint64_t *free_bytes, zn_err *err) {
    fake_disk *f = ud;
    f->calls++;
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    *free_bytes = f->free_bytes;
    return ZN_OK;
}

/* What catalog_download refuses before any byte is fetched (the loopback
 * server cases are in test_fetch.sh): a size that does not fit the free
 * space the (fake) statvfs reports, a scheme other than http(s), a file
 * another pull holds the lock of. */
static void test_download_refusals(void) {
    char dir[1024], dest[1100], part[1200], lock[1200];
    path_of(dir, sizeof dir, "dl/models");
    snprintf(dest, sizeof dest, "%s/x.gguf", dir);
    snprintf(part, sizeof part, "%s.part", dest);
    snprintf(lock, sizeof lock, "%s/.x.gguf.lock", dir);
    put("dl/models/.keep", "", 0);
    zn_err err = {0};
    zn_fetch_result r;
    fake_disk fd = {.free_bytes = 100u << 20};
    zn_fetch_opts o = {.size_hint = 1000000000ull, .free_space = fake_free, .free_space_ud = &fd};
    /* port 9 (discard) is never reached: the check comes first */
    CHECK(catalog_download("http://127.0.0.1:9/x.gguf", dest, &o, &r, &err) == ZN_ERR_IO);
    CHECK_MSG(strstr(err.msg, "not enough disk space") && strstr(err.msg, "1000.0 MB") && strstr(err.msg, "104.9 MB free"),
              "%s", err.msg);
    CHECK_EQ_INT(fd.calls, 1);
    CHECK_EQ_STR(fd.dir, dir);
    CHECK(!exists(dest) && !exists(part) && !exists(lock));
    /* enough space: the check passes and the (closed) port is what fails */
    fd.free_bytes = 2000000000ull;
    CHECK(catalog_download("http://127.0.0.1:9/x.gguf", dest, &o, &r, &err) == ZN_ERR_IO);
    CHECK_MSG(strstr(err.msg, "nothing saved") != NULL, "%s", err.msg);
    CHECK(!exists(dest) && !exists(part) && !exists(lock));

    const char *bad[] = {"file:///etc/passwd", "ftp://127.0.0.1/x.gguf", "gopher://127.0.0.1/x.gguf", "x.gguf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(catalog_download(bad[i], dest, NULL, &r, &err) == ZN_ERR_ARG);
        CHECK(strstr(err.msg, "only http:// and https://") != NULL);
    }
    CHECK(!exists(dest) && !exists(part));

    /* another pull holds the lock: refused at once, its files untouched */
    int lfd = open(lock, O_RDWR | O_CREAT, 0644);
    CHECK(lfd >= 0 && flock(lfd, LOCK_EX) == 0);
    CHECK(catalog_download("http://127.0.0.1:9/x.gguf", dest, NULL, &r, &err) == ZN_ERR_IO);
    CHECK_MSG(strstr(err.msg, "another zinc is downloading it") != NULL, "%s", err.msg);
    CHECK(exists(lock) && !exists(part));
    if (lfd >= 0) close(lfd);
    unlink(lock);

    /* the hub's resolve URL; paths that could leave the repository are refused */
    char url[512];
    CHECK(catalog_hub_url("http://h:1/", "org/repo/sub/f.gguf", url, sizeof url, &err) == ZN_OK);
    CHECK_EQ_STR(url, "http://h:1/org/repo/resolve/main/sub/f.gguf");
    const char *bad_paths[] = {"org/repo", "org/../f.gguf", "org//f.gguf", "org/repo/f gguf", "/org/repo/f.gguf",
                               "org/repo/f.gguf/", "org/repo/%2e%2e/f.gguf"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++)
        CHECK_MSG(catalog_hub_url("http://h", bad_paths[i], url, sizeof url, &err) == ZN_ERR_ARG, "%s", bad_paths[i]);
}

/* catalog_pull with a catalog passed as data: a catalog hash wins over
 * --sha256's absence, the demo entry downloads nothing, unknown names say
 * what pull takes. */
static void test_pull_resolution(void) {
    char home[1024];
    path_of(home, sizeof home, "pullhome");
    static const zn_catalog_entry cat[] = {
        {"tiny", {"tiny-alias"}, "Tiny", "qwen35", "Q8_0", 1000, "https://huggingface.co/o/r/resolve/main/tiny.gguf",
         "tiny.gguf", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "CC0-1.0", "test", {0}},
    };
    fake_disk fd = {.free_bytes = 0};
    zn_pull_opts o = {.home = home, .hub_url = "http://127.0.0.1:9", .catalog = cat, .n_catalog = 1,
                      .fetch = {.free_space = fake_free, .free_space_ud = &fd}};
    zn_pull_result r;
    zn_err err = {0};
    /* the entry's hub URL moves to --hub-url; the disk check (0 bytes free) stops it there */
    CHECK(catalog_pull("tiny-alias", &o, &r, &err) == ZN_ERR_IO);
    CHECK_EQ_STR(r.url, "http://127.0.0.1:9/o/r/resolve/main/tiny.gguf");
    CHECK(r.entry == &cat[0]);
    CHECK_MSG(strstr(err.msg, "not enough disk space") != NULL, "%s", err.msg);
    CHECK(catalog_pull("nothing-like-this", &o, &r, &err) == ZN_ERR_ARG);
    CHECK(strstr(err.msg, "hf:ORG/REPO") != NULL);
    o.catalog = NULL;
    CHECK(catalog_pull(ZN_DEMO_MODEL_ID, &o, &r, &err) == ZN_OK && r.shipped);
    o.sha256 = "abc";
    CHECK(catalog_pull("tiny", &o, &r, &err) == ZN_ERR_ARG);
}

extern char **environ;

/* A pull of catalog entries that carry a hash, from a loopback stand-in of
 * the hub (fake_hub.py): a file that matches the catalog's hash is verified
 * against it; one that does not is deleted; and when the hub announces
 * another hash than the catalog's (the file was replaced upstream) nothing
 * is saved and the message names the hub's file to pull instead. */
static void test_pull_catalog_hash(void) {
    char www[1024], port_file[1100], log[1100], home[1024], models[1100], cmd[4000];
    path_of(www, sizeof www, "cathub");
    path_of(home, sizeof home, "cathome");
    snprintf(port_file, sizeof port_file, "%s/port", www);
    snprintf(log, sizeof log, "%s/log", www);
    snprintf(models, sizeof models, "%s/models", home);
    snprintf(cmd, sizeof cmd, "for o in nohash good liar; do mkdir -p '%s/hub/'$o/Demo-GGUF && cp " DEMO
             " '%s/hub/'$o/Demo-GGUF/demo.gguf || exit 1; done", www, www);
    CHECK(system(cmd) == 0);
    char sum[ZN_SHA256_HEX];
    zn_err err = {0};
    CHECK(catalog_sha256_file(DEMO, sum, &err) == ZN_OK);

    const char *py = "/usr/bin/python3";
    char *argv[] = {(char *)py, "tests/catalog/fake_hub.py", www, "--port-file", port_file, "--log", log,
                    "--lifetime", "60", NULL};
    pid_t pid = -1;
    CHECK(posix_spawn(&pid, py, NULL, NULL, argv, environ) == 0);
    char port[32] = {0};
    for (int i = 0; i < 200 && !port[0]; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (!fgets(port, sizeof port, f)) port[0] = 0;
            fclose(f);
        }
        if (!port[0]) nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    CHECK_MSG(port[0] != 0, "the loopback hub did not start");
    char hub[64];
    snprintf(hub, sizeof hub, "http://127.0.0.1:%s", port);

    static const char *const empty_sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const zn_catalog_entry cat[] = {
        /* "nohash": the hub announces none, the catalog's is the file's */
        {"cat-right", {NULL}, "Right", "qwen35", "Q8_0", 9295808,
         "https://huggingface.co/nohash/Demo-GGUF/resolve/main/demo.gguf", "right.gguf", sum, "CC0-1.0", "test", {0}},
        /* the catalog's hash is not the file's, and the hub says none */
        {"cat-wrong", {NULL}, "Wrong", "qwen35", "Q8_0", 9295808,
         "https://huggingface.co/nohash/Demo-GGUF/resolve/main/demo.gguf", "wrong.gguf", empty_sha, "CC0-1.0", "test",
         {0}},
        /* the hub announces the file's hash, the catalog another one */
        {"cat-replaced", {NULL}, "Replaced", "qwen35", "Q8_0", 9295808,
         "https://huggingface.co/good/Demo-GGUF/resolve/main/demo.gguf", "replaced.gguf", empty_sha, "CC0-1.0", "test",
         {0}},
        /* the hub ("liar") announces a wrong hash; the catalog's is the file's */
        {"cat-liar", {NULL}, "Liar", "qwen35", "Q8_0", 9295808,
         "https://huggingface.co/liar/Demo-GGUF/resolve/main/demo.gguf", "liar.gguf", sum, "CC0-1.0", "test", {0}},
    };
    zn_pull_opts o = {.home = home, .hub_url = hub, .catalog = cat, .n_catalog = 4};
    zn_pull_result r;
    if (port[0]) {
        zn_status s = catalog_pull("cat-right", &o, &r, &err);
        CHECK_MSG(s == ZN_OK, "%s", err.msg);
        if (s == ZN_OK) {
            CHECK(r.f.verified == ZN_HASH_CATALOG);
            CHECK_EQ_STR(r.f.sha256, sum);
            char on_disk[ZN_SHA256_HEX], rec[ZN_SHA256_HEX];
            zn_hash_src src = ZN_HASH_NONE;
            CHECK(catalog_sha256_file(r.path, on_disk, &err) == ZN_OK);
            CHECK_EQ_STR(on_disk, sum);
            CHECK(catalog_hash_record_read(r.path, rec, &src, &err) == ZN_OK);
            CHECK_EQ_STR(rec, sum);
            CHECK(src == ZN_HASH_CATALOG);
        }
        s = catalog_pull("cat-wrong", &o, &r, &err);
        CHECK(s == ZN_ERR_FORMAT && !r.f.hub_differs);
        CHECK_MSG(strstr(err.msg, "SHA-256 mismatch against the catalog's hash") != NULL, "%s", err.msg);
        for (int k = 0; k < 2; k++) {
            s = catalog_pull(k ? "cat-liar" : "cat-replaced", &o, &r, &err);
            CHECK(s == ZN_ERR_FORMAT && r.f.hub_differs);
            CHECK_MSG(strstr(err.msg, "the hub announces SHA-256") && strstr(err.msg, "but the catalog's hash is") &&
                          strstr(err.msg, "nothing saved"), "%s", err.msg);
            CHECK_MSG(strstr(err.msg, k ? "zinc model pull liar/Demo-GGUF/demo.gguf` takes the hub's file"
                                        : "zinc model pull good/Demo-GGUF/demo.gguf` takes the hub's file"),
                      "%s", err.msg);
        }
        /* only the verified file and its record are in models/ */
        snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'right.gguf right.gguf.sha256 '", models);
        CHECK_MSG(system(cmd) == 0, "models/ holds more than right.gguf and its record");
    }
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/zn-catalog-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_sha256_vectors);
    RUN(test_helpers);
    RUN(test_table);
    RUN(test_seed_models);
    RUN(test_home);
    RUN(test_active_and_locate);
    RUN(test_resolve_order);
    RUN(test_cli_use_active_rm);
    RUN(test_embedded_demo);
    RUN(test_download_refusals);
    RUN(test_pull_resolution);
    RUN(test_pull_catalog_hash);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return harness_report("catalog");
}
