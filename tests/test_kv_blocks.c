/* kv_blocks.h alone: the pool's counts and the table plans both backends
 * use, without a model or a device. */
#include "harness.h"
#include "kv_blocks.h"

enum { B = ZN_KV_BLOCK };

/* kvb_copy_fn that records its calls and fails from call `fail_at` on. */
typedef struct copies {
    int n, fail_at;
    int32_t from[8], to[8];
    int rows[8];
} copies;
static zn_status record_copy(void *arg, int32_t from, int32_t to, int rows, zn_err *err) {
    copies *c = arg;
    if (c->n < 8) c->from[c->n] = from, c->to[c->n] = to, c->rows[c->n] = rows;
    if (++c->n >= c->fail_at && c->fail_at) return zn_errf(err, ZN_ERR_DEVICE, "copy %d failed", c->n);
    return ZN_OK;
}

static bool all_free(const kvb *p) {
    for (int64_t i = 0; i < p->n_blocks; i++)
        if (p->refs[i]) return false;
    return p->n_free == p->n_blocks;
}

static void test_take_hold_drop(void) {
    kvb p;
    zn_err err = {0};
    CHECK_EQ_INT(kvb_init(&p, 4, &err), ZN_OK);
    CHECK_EQ_INT(kvb_n_free(&p), 4);
    /* the first blocks first */
    CHECK_EQ_INT(kvb_take(&p), 0);
    CHECK_EQ_INT(kvb_take(&p), 1);
    CHECK_EQ_INT(kvb_take(&p), 2);
    CHECK_EQ_INT(kvb_n_free(&p), 1);
    kvb_hold(&p, 1);
    CHECK(kvb_shared(&p, 1) && !kvb_shared(&p, 0));
    kvb_drop(&p, 1);
    CHECK(!kvb_shared(&p, 1));
    CHECK_EQ_INT(kvb_n_free(&p), 1); /* still held once */
    kvb_drop(&p, 1);
    CHECK_EQ_INT(kvb_n_free(&p), 2);
    /* a block let go is the next one taken (top of the stack) */
    CHECK_EQ_INT(kvb_take(&p), 1);
    CHECK_EQ_INT(kvb_take(&p), 3);
    CHECK_EQ_INT(kvb_n_free(&p), 0);
    for (int32_t i = 0; i < 4; i++) kvb_drop(&p, i);
    CHECK(all_free(&p));
    kvb_free(&p);
    CHECK_EQ_INT(kvb_init(&p, 0, &err), ZN_OK); /* no pool */
    CHECK_EQ_INT(kvb_n_free(&p), 0);
    kvb_free(&p);
}

/* A refused reserve changes nothing; one that fits copies only the shared
 * block it writes, only its rows below n_from. */
static void test_reserve(void) {
    kvb p;
    zn_err err = {0};
    copies cp = {0};
    int32_t a[4] = {0}, b[4] = {0};
    int na = 0, nb = 0, part = 0;
    kvb_plan pl;
    CHECK_EQ_INT(kvb_init(&p, 3, &err), ZN_OK);
    CHECK_EQ_INT(kvb_reserve(&p, a, &na, 0, 2 * B, &pl, record_copy, &cp, &err), ZN_OK);
    CHECK(na == 2 && pl.more == 2 && pl.cow == 0 && pl.first == 0 && pl.need == 2);
    CHECK_EQ_INT(kvb_share(&p, b, &nb, a, 2 * B, &part, &err), ZN_OK);
    CHECK(part == -1 && nb == 2 && b[0] == a[0] && b[1] == a[1] && kvb_n_free(&p) == 1);
    /* a's block 1 written and a third block: 2 wanted, 1 free */
    int32_t tab0[4], refs0[3], free0[3];
    memcpy(tab0, a, sizeof a), memcpy(refs0, p.refs, sizeof refs0), memcpy(free0, p.free, sizeof free0);
    zn_status st = kvb_reserve(&p, a, &na, B + 10, 3 * B, &pl, record_copy, &cp, &err);
    CHECK_EQ_INT(st, ZN_ERR_KV_FULL);
    CHECK_MSG(strstr(err.msg, "KV pool full") && strstr(err.msg, "2 more blocks") && strstr(err.msg, "1 to copy"), "%s",
              err.msg);
    CHECK(pl.more == 1 && pl.cow == 1 && pl.first == 1);
    CHECK(na == 2 && !memcmp(tab0, a, sizeof a) && cp.n == 0);
    CHECK(!memcmp(refs0, p.refs, sizeof refs0) && !memcmp(free0, p.free, sizeof free0) && kvb_n_free(&p) == 1);
    /* within the held blocks: block 1 copied (10 rows), block 0 still shared */
    CHECK_EQ_INT(kvb_reserve(&p, a, &na, B + 10, 2 * B, &pl, record_copy, &cp, &err), ZN_OK);
    CHECK(pl.more == 0 && pl.cow == 1 && pl.first == 1 && na == 2);
    CHECK(cp.n == 1 && cp.from[0] == b[1] && cp.to[0] == a[1] && cp.rows[0] == 10 && a[1] != b[1]);
    CHECK(kvb_shared(&p, a[0]) && !kvb_shared(&p, a[1]) && !kvb_shared(&p, b[1]) && kvb_n_free(&p) == 0);
    /* nothing to do: no plan, no change */
    CHECK_EQ_INT(kvb_reserve(&p, a, &na, B + 11, 2 * B, &pl, record_copy, &cp, &err), ZN_OK);
    CHECK(pl.more + pl.cow == 0 && pl.first == pl.need && cp.n == 1);
    kvb_release(&p, a, &na, 0);
    kvb_release(&p, b, &nb, 0);
    CHECK(na == 0 && nb == 0 && all_free(&p));
    kvb_free(&p);
}

/* A failed copy: the table and counts still move, later copies skipped. */
static void test_reserve_copy_fails(void) {
    kvb p;
    zn_err err = {0};
    copies cp = {.fail_at = 1};
    int32_t a[4] = {0}, b[4] = {0};
    int na = 0, nb = 0, part;
    kvb_plan pl;
    CHECK_EQ_INT(kvb_init(&p, 6, &err), ZN_OK);
    CHECK_EQ_INT(kvb_reserve(&p, a, &na, 0, 2 * B, &pl, record_copy, &cp, &err), ZN_OK);
    CHECK_EQ_INT(kvb_share(&p, b, &nb, a, 2 * B, &part, &err), ZN_OK);
    CHECK_EQ_INT(kvb_reserve(&p, a, &na, 5, 3 * B, &pl, record_copy, &cp, &err), ZN_ERR_DEVICE);
    CHECK(pl.cow == 2 && pl.more == 1 && na == 3 && cp.n == 1 && kvb_n_free(&p) == 1);
    CHECK(!kvb_shared(&p, a[0]) && !kvb_shared(&p, a[1]) && a[0] != b[0] && a[1] != b[1]);
    kvb_release(&p, a, &na, 0);
    kvb_release(&p, b, &nb, 0);
    CHECK(all_free(&p));
    kvb_free(&p);
}

/* 600 positions of 256-position blocks: 2 shared, the partial one into a
 * block dst holds alone. */
static void test_share(void) {
    kvb p;
    zn_err err = {0};
    int32_t s[4] = {0}, d[4] = {0};
    int ns = 0, nd = 0, part = 0;
    kvb_plan pl;
    const int n_kv = 2 * B + 88;
    CHECK_EQ_INT(kvb_init(&p, 5, &err), ZN_OK);
    CHECK_EQ_INT(kvb_reserve(&p, s, &ns, 0, n_kv, &pl, record_copy, &(copies){0}, &err), ZN_OK);
    CHECK_EQ_INT(ns, 3);
    CHECK_EQ_INT(kvb_share(&p, d, &nd, s, n_kv, &part, &err), ZN_OK);
    CHECK(part == 2 && nd == 3 && d[0] == s[0] && d[1] == s[1] && d[2] != s[2]);
    CHECK(kvb_shared(&p, s[0]) && kvb_shared(&p, s[1]) && !kvb_shared(&p, s[2]) && !kvb_shared(&p, d[2]));
    CHECK_EQ_INT(kvb_n_free(&p), 1);
    /* again: dst holds its partial block alone, so it keeps it */
    const int32_t d2 = d[2];
    CHECK_EQ_INT(kvb_share(&p, d, &nd, s, n_kv, &part, &err), ZN_OK);
    CHECK(part == 2 && nd == 3 && d[2] == d2 && kvb_n_free(&p) == 1);
    /* a third sequence takes the last block; a fourth finds none: refused, unchanged */
    int32_t e[4] = {0}, f[4] = {-1, -1, -1, -1};
    int ne = 0, nf = 0;
    CHECK_EQ_INT(kvb_share(&p, e, &ne, s, n_kv, &part, &err), ZN_OK);
    CHECK_EQ_INT(kvb_n_free(&p), 0);
    CHECK_EQ_INT(kvb_share(&p, f, &nf, s, n_kv, &part, &err), ZN_ERR_KV_FULL);
    CHECK_MSG(strstr(err.msg, "KV pool full: a block of"), "%s", err.msg);
    CHECK(nf == 0 && f[0] == -1 && p.refs[s[0]] == 3 && kvb_n_free(&p) == 0);
    /* whole blocks only: no block wanted even with none free */
    CHECK_EQ_INT(kvb_share(&p, f, &nf, s, 2 * B, &part, &err), ZN_OK);
    CHECK(part == -1 && nf == 2 && p.refs[s[1]] == 4);
    kvb_release(&p, s, &ns, 0);
    kvb_release(&p, d, &nd, 1);
    CHECK(nd == 1 && p.refs[d[0]] == 3);
    kvb_release(&p, d, &nd, 0);
    kvb_release(&p, e, &ne, 0);
    kvb_release(&p, f, &nf, 0);
    CHECK(all_free(&p));
    kvb_free(&p);
}

int main(void) {
    RUN(test_take_hold_drop);
    RUN(test_reserve);
    RUN(test_reserve_copy_fails);
    RUN(test_share);
    return harness_report("kv_blocks");
}
