/* A tiny test harness: one test binary per tests/test_*.c, each test a
 * function; failures print file:line and the values compared. A test that
 * cannot run here (no device, a feature this device lacks) says SKIP with
 * the reason instead of passing after checking nothing. main() ends with
 * harness_report(), which prints "NAME: N passed, N failed, N skipped".
 * Progress on stderr: a test that took a second or more, or the first one
 * to finish 5 s after the last line, prints its name and time (every test
 * with ZN_TEST_VERBOSE), and a test still running after 30 s says so every
 * 30 s (from a watchdog thread), so a long run is visibly alive. */
#ifndef ZINC_TEST_HARNESS_H
#define ZINC_TEST_HARNESS_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int h_passed, h_failed, h_skipped, h_cur_failed, h_cur_skipped;
static const char *h_cur;
static double h_last_note;

static inline double harness_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The watchdog: which test runs since when (0: none). */
static const char *_Atomic h_run_name;
static _Atomic long long h_run_ms;
static inline void *harness_watch(void *arg) {
    (void)arg;
    long long seen = 0, noted = 0;
    for (;;) {
        const struct timespec one = {1, 0};
        nanosleep(&one, NULL);
        const long long t0 = atomic_load(&h_run_ms), el = (long long)(harness_now() * 1000) - t0;
        const char *name = atomic_load(&h_run_name);
        if (!t0 || !name) continue;
        if (t0 != seen) seen = t0, noted = 0;
        if (el >= noted + 30000) {
            noted = el - el % 30000;
            fprintf(stderr, "  .. %s still running (%lld s)\n", name, el / 1000);
        }
    }
    return NULL;
}
static inline void harness_started(const char *fn) {
    static int watching;
    if (!watching) {
        pthread_t t;
        watching = 1;
        if (pthread_create(&t, NULL, harness_watch, NULL) == 0) pthread_detach(t);
    }
    atomic_store(&h_run_name, fn);
    atomic_store(&h_run_ms, (long long)(harness_now() * 1000));
}

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "  %s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, h_cur, #cond); \
    h_cur_failed = 1; } } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) { \
    fprintf(stderr, "  %s:%d: %s: CHECK(%s) failed: ", __FILE__, __LINE__, h_cur, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); h_cur_failed = 1; } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); if (_a != _b) { \
    fprintf(stderr, "  %s:%d: %s: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, h_cur, #a, #b, _a, _b); \
    h_cur_failed = 1; } } while (0)
#define CHECK_EQ_STR(a, b) do { const char *_a = (a), *_b = (b); if (!_a || !_b || strcmp(_a, _b)) { \
    fprintf(stderr, "  %s:%d: %s: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, h_cur, #a, #b, \
            _a ? _a : "(null)", _b ? _b : "(null)"); h_cur_failed = 1; } } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (a), _b = (b), _t = (tol); if (!(fabs(_a - _b) <= _t)) { \
    fprintf(stderr, "  %s:%d: %s: |%s - %s| <= %g failed: %.9g vs %.9g\n", __FILE__, __LINE__, h_cur, #a, #b, _t, _a, _b); \
    h_cur_failed = 1; } } while (0)

/* Inside a test function: this test cannot run here. Prints "SKIP NAME:
 * reason" and returns; RUN counts it skipped (failed, if a check before
 * it failed). Only in functions returning void. */
#define SKIP(...) do { fprintf(stderr, "SKIP %s: ", h_cur); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
    h_cur_skipped = 1; return; } while (0)

static inline void harness_done(const char *fn, double t0) {
    const double now = harness_now(), dt = now - t0;
    atomic_store(&h_run_ms, 0);
    if (h_cur_failed) {
        h_failed++;
        fprintf(stderr, "FAIL %s (%.1f s)\n", fn, dt);
        h_last_note = now;
        return;
    }
    if (h_cur_skipped) h_skipped++;
    else h_passed++;
    if (!h_cur_skipped && (dt >= 1.0 || now - h_last_note >= 5.0 || getenv("ZN_TEST_VERBOSE"))) {
        fprintf(stderr, "ok   %s (%.1f s)\n", fn, dt);
        h_last_note = now;
    }
}

#define RUN(fn) do { h_cur = #fn; h_cur_failed = 0; h_cur_skipped = 0; \
    if (h_last_note == 0) h_last_note = harness_now(); \
    harness_started(#fn); double _t0 = harness_now(); fn(); harness_done(#fn, _t0); } while (0)

/* Outside a test (in main): the whole suite cannot run here (no device);
 * prints "SKIP SUITE: reason" and counts one skipped. */
static inline void harness_skip_suite(const char *suite, const char *why) {
    fprintf(stderr, "SKIP %s: %s\n", suite, why);
    h_skipped++;
}

static inline int harness_report(const char *suite) {
    printf("%s: %d passed, %d failed, %d skipped\n", suite, h_passed, h_failed, h_skipped);
    return h_failed ? 1 : 0;
}

/* The whole file, NUL-terminated (so text can be parsed in place); its
 * length in *n when n is set. NULL when it cannot be opened or read, or
 * memory runs out. The caller frees it. */
static inline char *harness_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) == (size_t)len) {
        buf[len] = 0;
        if (n) *n = (size_t)len;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* Path of a shared asset ("models/tiny/x.gguf"), from $ZN_SHARED or ../shared. */
static inline const char *shared_path(const char *rel) {
    static char buf[4096];
    const char *root = getenv("ZN_SHARED");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : "../shared", rel);
    return buf;
}

#endif
