/* The model catalog: SHA-256 against the FIPS 180-2 vectors, the home and
 * default-model resolution order, active model, locate, hash records, and
 * zinc model use/active/rm in a temporary ZINC_HOME. Downloads are tested
 * against a loopback server in test_catalog.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
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
    bool verified = true;
    const char *h = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    CHECK(catalog_hash_record_read(want, hex, &verified, &err) == ZN_ERR_NOT_FOUND);
    CHECK(catalog_hash_record_write(want, h, false, &err) == ZN_OK);
    CHECK(catalog_hash_record_read(want, hex, &verified, &err) == ZN_OK);
    CHECK_EQ_STR(hex, h);
    CHECK(!verified);
    CHECK(catalog_hash_record_write(want, h, true, &err) == ZN_OK);
    CHECK(catalog_hash_record_read(want, hex, &verified, &err) == ZN_OK && verified);
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

    /* nothing at all */
    CHECK(catalog_resolve(home, exe, NULL, got, sizeof got, &src, note, &err) == ZN_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "zinc model pull") && strstr(err.msg, "-m"));

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
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return harness_report("catalog");
}
