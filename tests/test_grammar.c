/* Grammars (src/grammar): GBNF parsing and its errors; matching checked
 * against POSIX regular expressions (libc's regexec, an independent
 * implementation) on random strings for grammars that are regular; UTF-8
 * classes; the "text until a delimiter" rule against a plain search; parser
 * states that outgrow the matcher's tables (compaction); token masks over a
 * real 248k-token vocabulary (Qwen3.5's) equal to checking every token one
 * by one; JSON Schema -> grammar on valid and invalid instances, integer
 * ranges value by value, random sentences that parse as JSON, and the
 * refusal of what it cannot enforce, naming the keyword. */
#include <jansson.h>
#include <regex.h>

#include "gguf.h"
#include "gmatch.h"
#include "grammar.h"
#include "harness.h"
#include "jschema.h"
#include "tokenizer.h"

/* ---- helpers ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* 1: a sentence; 2: a prefix of one; 0: rejected; -1: the grammar did not compile. */
static int gm_run(const zn_grammar *g, const char *s, size_t n) {
    zn_gmatch m;
    zn_err err;
    if (gmatch_init(&m, g, NULL, &err)) return -1;
    int r = !gmatch_accept_bytes(&m, s, n) ? 0 : gmatch_accepting(&m) ? 1 : 2;
    gmatch_free(&m);
    return r;
}

/* The same on a matcher that is reused (gmatch_init allocates its tables: loops of thousands reuse one). */
static int gm_rerun(zn_gmatch *m, const char *s, size_t n) {
    gmatch_reset(m);
    return !gmatch_accept_bytes(m, s, n) ? 0 : gmatch_accepting(m) ? 1 : 2;
}

static int gm_text(const char *gbnf, const char *s) {
    zn_grammar g;
    zn_err err;
    if (grammar_parse(&g, gbnf, strlen(gbnf), NULL, &err)) {
        fprintf(stderr, "    %s\n", err.msg);
        return -1;
    }
    int r = gm_run(&g, s, strlen(s));
    grammar_free(&g);
    return r;
}

/* ---- GBNF ---- */

static void test_gbnf_errors(void) {
    static const struct { const char *g, *want; } bad[] = {
        {"root ::= foo", "'foo' is used but not defined"},
        {"root ::= root \"a\" | \"b\"", "left-recursive"},
        {"root ::= x\nx ::= y? root \"a\"\ny ::= \"b\"", "left-recursive"},
        {"root ::= \"a", "closing '\"'"},
        {"root ::= [a-", "closing ']'"},
        {"root ::= [z-a]", "down to"},
        {"root ::= \"a\"{3,2}", "maximum below its minimum"},
        {"root ::= \"a\"{99999}", "above"},
        {"root ::= \"\\u12\"", "hex digits"},
        {"root ::= \"\\uD800\"", "not a Unicode scalar value"},
        {"root ::= (\"a\"", "without its ')'"},
        {"root ::= \"a\" )", "')' without"},
        {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
        {"start ::= \"a\"", "no rule 'root'"},
        {"root ::= \"a\" @", "unexpected '@'"},
        {"root := \"a\"", "expected '::='"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zn_grammar g;
        zn_err err = {0};
        zn_status st = grammar_parse(&g, bad[i].g, strlen(bad[i].g), NULL, &err);
        CHECK_MSG(st == ZN_ERR_ARG && strstr(err.msg, bad[i].want), "[%s]: status %d, [%s]", bad[i].g, st, err.msg);
        if (!st) grammar_free(&g);
    }
    /* the error names the line */
    zn_grammar g;
    zn_err err = {0};
    const char *t = "root ::= a\n\na ::= \"x\" | [\n";
    CHECK(grammar_parse(&g, t, strlen(t), NULL, &err) == ZN_ERR_ARG && strstr(err.msg, "line 3"));
}

static void test_gbnf_match(void) {
    static const struct { const char *g, *s; int want; } t[] = {
        {"root ::= \"abc\"", "abc", 1}, {"root ::= \"abc\"", "ab", 2}, {"root ::= \"abc\"", "abd", 0},
        {"root ::= \"abc\"", "abcd", 0}, {"root ::= \"a\" | \"bc\"", "bc", 1}, {"root ::= \"a\"*", "", 1},
        {"root ::= \"a\"*", "aaaa", 1}, {"root ::= \"a\"+", "", 2}, {"root ::= (\"ab\")+ \"c\"", "ababc", 1},
        {"root ::= \"x\" [0-9]{2,3} \"y\"", "x12y", 1}, {"root ::= \"x\" [0-9]{2,3} \"y\"", "x1234y", 0},
        {"root ::= \"x\" [0-9]{2,} \"y\"", "x12345y", 1}, {"root ::= \"x\" [0-9]{2} \"y\"", "x1y", 0},
        {"root ::= a b\na ::= \"p\"?\nb ::= \"q\"", "q", 1}, {"root ::= a b\na ::= \"p\"?\nb ::= \"q\"", "pq", 1},
        {"# comment\nroot ::= \"a\" # trailing\n  \"b\"\n", "ab", 1}, {"root ::= [^\"\\\\]*", "a\\", 0},
        {"root ::= \"\\x41\\u00e9\\n\\t\\\\\\\"\"", "A\xc3\xa9\n\t\\\"", 1}, {"root ::= [\\]-]+", "]-]", 1},
        {"root ::= \"(\" root \")\" | \"\"", "((()))", 1}, {"root ::= \"(\" root \")\" | \"\"", "(()", 2},
        {"root ::= . \"!\"", "\xe6\x97\xa5!", 1}, {"root ::= .", "\xff", 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int got = gm_text(t[i].g, t[i].s);
        CHECK_MSG(got == t[i].want, "[%s] on [%s]: %d, want %d", t[i].g, t[i].s, got, t[i].want);
    }
}

static void test_utf8_classes(void) {
    const char *g = "root ::= [^a]+";
    CHECK_EQ_INT(gm_text(g, "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x8e\x89z"), 1); /* é 日 🎉 z */
    CHECK_EQ_INT(gm_text(g, "a"), 0);
    CHECK_EQ_INT(gm_text(g, "\xc3"), 2);                 /* an unfinished sequence may finish */
    CHECK_EQ_INT(gm_text(g, "\xc3z"), 0);                /* but not with ASCII */
    CHECK_EQ_INT(gm_text(g, "\x80"), 0);                 /* a lone continuation byte */
    CHECK_EQ_INT(gm_text(g, "\xed\xa0\x80"), 0);         /* a surrogate */
    CHECK_EQ_INT(gm_text(g, "\xf4\x90\x80\x80"), 0);     /* above U+10FFFF */
    CHECK_EQ_INT(gm_text(g, "\xc0\xaf"), 0);             /* overlong */
    const char *greek = "root ::= [α-ω]+";
    CHECK_EQ_INT(gm_text(greek, "αβγω"), 1);
    CHECK_EQ_INT(gm_text(greek, "αΩ"), 0);
    const char *wide = "root ::= [\\u0100-\\U0001F600]";
    CHECK_EQ_INT(gm_text(wide, "\xc4\x80"), 1);        /* U+0100 */
    CHECK_EQ_INT(gm_text(wide, "\xc3\xbf"), 0);        /* U+00FF */
    CHECK_EQ_INT(gm_text(wide, "\xef\xbf\xbf"), 1);    /* U+FFFF */
    CHECK_EQ_INT(gm_text(wide, "\xf0\x9f\x98\x80"), 1); /* U+1F600 */
    CHECK_EQ_INT(gm_text(wide, "\xf0\x9f\x98\x81"), 0); /* U+1F601 */
    /* every code point of a class from its endpoints' neighbours */
    zn_grammar gg;
    zn_err err;
    const char *r = "root ::= [\\u07FF-\\u0801\\uFFFE-\\U00010001]";
    CHECK(grammar_parse(&gg, r, strlen(r), NULL, &err) == ZN_OK);
    static const uint32_t cps[] = {0x7FE, 0x7FF, 0x800, 0x801, 0x802, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x10001, 0x10002};
    static const int in[] = {0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0};
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        unsigned char b[4];
        uint32_t c = cps[i];
        int n = c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n == 2) b[0] = (unsigned char)(0xC0 | c >> 6), b[1] = (unsigned char)(0x80 | (c & 63));
        else if (n == 3) b[0] = (unsigned char)(0xE0 | c >> 12), b[1] = (unsigned char)(0x80 | ((c >> 6) & 63)), b[2] = (unsigned char)(0x80 | (c & 63));
        else b[0] = (unsigned char)(0xF0 | c >> 18), b[1] = (unsigned char)(0x80 | ((c >> 12) & 63)),
             b[2] = (unsigned char)(0x80 | ((c >> 6) & 63)), b[3] = (unsigned char)(0x80 | (c & 63));
        CHECK_MSG(gm_run(&gg, (char *)b, (size_t)n) == in[i], "U+%04X", c);
    }
    grammar_free(&gg);
}

/* Regular grammars against libc's POSIX regexes on random strings. */
static void test_against_regex(void) {
    static const struct { const char *gbnf, *re, *alpha; } t[] = {
        {"root ::= [a-c]* \"d\" [0-9]{2,3}", "^[a-c]*d[0-9]{2,3}$", "abcd0123"},
        {"root ::= (\"ab\" | \"a\" \"c\"?)+ \"!\"?", "^(ab|ac?)+!?$", "abc!"},
        {"root ::= ([xy] \"z\"{1,2})* \"y\"", "^([xy]z{1,2})*y$", "xyz"},
        {"root ::= \"-\"? ( \"0\" | [1-9] [0-9]* ) ( \".\" [0-9]+ )?", "^-?(0|[1-9][0-9]*)(\\.[0-9]+)?$", "-0129."},
        {"root ::= [^ab]{0,3} \"a\" ( \"b\" | [c-e] )*", "^[^ab]{0,3}a(b|[c-e])*$", "abcdef"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        zn_grammar g;
        zn_err err;
        regex_t re;
        CHECK(grammar_parse(&g, t[i].gbnf, strlen(t[i].gbnf), NULL, &err) == ZN_OK);
        CHECK(regcomp(&re, t[i].re, REG_EXTENDED | REG_NOSUB) == 0);
        zn_gmatch m;
        CHECK(gmatch_init(&m, &g, NULL, &err) == ZN_OK);
        size_t na = strlen(t[i].alpha);
        int bad = 0, yes = 0;
        for (int k = 0; k < 4000 && bad < 3; k++) {
            char s[16];
            int n = (int)(rnd() % 10);
            for (int j = 0; j < n; j++) s[j] = t[i].alpha[rnd() % na];
            s[n] = 0;
            gmatch_reset(&m);
            int got = gmatch_accept_bytes(&m, s, (size_t)n) && gmatch_accepting(&m);
            int want = regexec(&re, s, 0, NULL, 0) == 0;
            yes += want;
            if (got != want) {
                bad++;
                CHECK_MSG(0, "[%s] on [%s]: grammar %d, regex %d", t[i].gbnf, s, got, want);
            }
        }
        CHECK_MSG(yes > 20, "[%s]: only %d random strings matched; the test says little", t[i].re, yes);
        gmatch_free(&m);
        regfree(&re);
        grammar_free(&g);
    }
}

static void test_until(void) {
    static const char *const delims[] = {"</think>", "\n</parameter>", "aab", "abab"};
    for (size_t d = 0; d < 4; d++) {
        zn_gbnf *b;
        zn_err err;
        CHECK(gbnf_new(&b, &err) == ZN_OK);
        CHECK(gbnf_add_until(b, "root", delims[d], &err) == ZN_OK);
        size_t len;
        const char *text = gbnf_text(b, &len);
        zn_grammar g;
        CHECK_MSG(grammar_parse(&g, text, len, NULL, &err) == ZN_OK, "%s\n%s", err.msg, text);
        const char *D = delims[d];
        size_t dn = strlen(D);
        char alpha[32];
        snprintf(alpha, sizeof alpha, "%sx\xc3\xa9", D);  /* the delimiter's bytes, another, a 2-byte character */
        size_t na = strlen(alpha);
        int bad = 0, yes = 0;
        zn_gmatch m;
        CHECK(gmatch_init(&m, &g, NULL, &err) == ZN_OK);
        for (int k = 0; k < 6000 && bad < 3; k++) {
            char s[40];
            int n = (int)(rnd() % 24);
            for (int j = 0; j < n; j++) s[j] = alpha[rnd() % na];
            if (rnd() % 3 == 0 && n + dn < sizeof s) memcpy(s + n, D, dn), n += (int)dn;
            s[n] = 0;
            /* want: valid UTF-8 up to the first occurrence, which ends the string */
            char *at = memmem(s, (size_t)n, D, dn);
            bool utf8 = true;
            for (int j = 0; j < n; j++)
                if ((unsigned char)s[j] == 0xc3) {
                    if (j + 1 >= n || (unsigned char)s[j + 1] != 0xa9) utf8 = false;
                    j++;
                } else if ((unsigned char)s[j] == 0xa9) utf8 = false;
            int want = at && (size_t)(at - s) + dn == (size_t)n && utf8;
            int got = gm_rerun(&m, s, (size_t)n) == 1;
            yes += want;
            if (got != want) {
                bad++;
                CHECK_MSG(0, "until [%s] on [%s]: %d, want %d", D, s, got, want);
            }
        }
        CHECK(yes > 100);
        gmatch_free(&m);
        grammar_free(&g);
        gbnf_free(b);
    }
}

/* More parser states than the tables hold: the matcher compacts and goes on. */
static void test_compaction(void) {
    const char *t = "root ::= \"(\" root \")\" | \"z\"";
    zn_grammar g;
    zn_err err;
    CHECK(grammar_parse(&g, t, strlen(t), NULL, &err) == ZN_OK);
    zn_gmatch m;
    CHECK(gmatch_init(&m, &g, NULL, &err) == ZN_OK);
    const int depth = ZN_GMATCH_MAX_STATES + 3000;
    bool ok = true;
    for (int i = 0; i < depth && ok; i++) ok = gmatch_accept_bytes(&m, "(", 1);
    CHECK(ok);
    CHECK(!gmatch_accept_bytes(&m, ")", 1));
    CHECK(gmatch_accept_bytes(&m, "z", 1));
    for (int i = 0; i < depth && ok; i++) ok = gmatch_accept_bytes(&m, ")", 1) && (i == depth - 1 || !gmatch_accepting(&m));
    CHECK(ok);
    CHECK(gmatch_finished(&m));
    CHECK(!gmatch_accept_bytes(&m, ")", 1));
    CHECK_MSG(m.n_compactions > 0, "no compaction happened");
    gmatch_free(&m);
    grammar_free(&g);
}

/* ---- JSON Schema ---- */

static zn_status schema_grammar(const char *schema, zn_grammar *g, zn_err *err) {
    char *text;
    zn_status st = jschema_to_gbnf(schema, strlen(schema), "schema", &text, err);
    if (st) return st;
    st = grammar_parse(g, text, strlen(text), NULL, err);
    if (st) fprintf(stderr, "    grammar:\n%s\n", text);
    free(text);
    return st;
}

static void check_instances(const char *schema, const char *const *yes, const char *const *no) {
    zn_grammar g;
    zn_err err;
    zn_status st = schema_grammar(schema, &g, &err);
    CHECK_MSG(st == ZN_OK, "%s: %s", schema, err.msg);
    if (st) return;
    for (; yes && *yes; yes++) CHECK_MSG(gm_run(&g, *yes, strlen(*yes)) == 1, "%s should accept %s", schema, *yes);
    for (; no && *no; no++) CHECK_MSG(gm_run(&g, *no, strlen(*no)) != 1, "%s should reject %s", schema, *no);
    grammar_free(&g);
}

static void test_schema_objects(void) {
    const char *s = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":5},"
                    "\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2},"
                    "\"addr\":{\"type\":\"object\",\"properties\":{\"city\":{\"enum\":[\"Oslo\",\"Zürich\"]},"
                    "\"zip\":{\"type\":[\"integer\",\"null\"]}},\"required\":[\"city\",\"zip\"],\"additionalProperties\":false}},"
                    "\"required\":[\"age\",\"name\"],\"additionalProperties\":false}";
    static const char *const yes[] = {
        "{\"name\":\"Ann\",\"age\":30}",
        "{\"name\": \"\", \"age\": -7, \"tags\": [\"a\", \"b\"], \"addr\": {\"city\": \"Zürich\", \"zip\": null}}",
        "{\n  \"name\": \"x\\\"y\",\n  \"age\": 0,\n  \"tags\": []\n}",
        "{\"name\":\"abcde\",\"age\":1,\"addr\":{\"city\":\"Oslo\",\"zip\":150}}",
        NULL};
    static const char *const no[] = {
        "{\"age\":30}",                                    /* a required property missing */
        "{\"name\":\"abcdef\",\"age\":1}",                 /* too long */
        "{\"name\":\"a\",\"age\":1.5}",                    /* not an integer */
        "{\"name\":\"a\",\"age\":01}",                     /* a leading zero */
        "{\"name\":\"a\",\"age\":1,\"tags\":[\"a\",\"b\",\"c\"]}", /* too many items */
        "{\"name\":\"a\",\"age\":1,\"addr\":{\"city\":\"Paris\",\"zip\":1}}",
        "{\"name\":\"a\",\"age\":1,\"extra\":1}",          /* additionalProperties: false */
        "{\"name\":\"a\",\"age\":1,}", "{\"name\":\"a\" \"age\":1}", "{\"name\":\"a\nb\",\"age\":1}",
        NULL};
    check_instances(s, yes, no);
    /* nothing required: any subset, in order, commas right */
    const char *o = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"},\"b\":{\"type\":\"null\"},"
                    "\"c\":{\"const\":{\"k\":[1,2]}}}}";
    static const char *const oy[] = {"{}", "{ }", "{\"a\":true}", "{\"b\":null}", "{\"c\":{\"k\":[1,2]}}",
                                     "{\"a\":false,\"c\":{\"k\":[1,2]}}", "{\"a\":true, \"b\":null, \"c\":{\"k\":[1,2]}}", NULL};
    static const char *const on[] = {"{,\"a\":true}", "{\"b\":null,\"a\":true}", "{\"c\":{\"k\":[1]}}", "{\"a\":true,}",
                                     "{\"d\":1}", NULL};
    check_instances(o, oy, on);
    /* additional properties by schema, and free-form objects */
    static const char *const my[] = {"{}", "{\"x\":1,\"y\":-2}", NULL};
    static const char *const mn[] = {"{\"x\":\"1\"}", NULL};
    check_instances("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", my, mn);
    static const char *const fy[] = {"{}", "{\"k\":[1,{\"z\":null}],\"s\":\"é\"}", NULL};
    static const char *const fn[] = {"[]", "{\"k\":}", NULL};
    check_instances("{\"type\":\"object\"}", fy, fn);
}

static void test_schema_arrays_and_more(void) {
    static const char *const ay[] = {"[1]", "[1, 2,3]", NULL};
    static const char *const an[] = {"[]", "[1,2,3,4]", "[1,]", "[\"1\"]", NULL};
    check_instances("{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":1,\"maxItems\":3}", ay, an);
    static const char *const ty[] = {"[\"a\",1]", "[\"a\", 1, true, false]", NULL};
    static const char *const tn[] = {"[\"a\"]", "[1,\"a\"]", "[\"a\",1,2]", NULL};
    check_instances("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],"
                    "\"items\":{\"type\":\"boolean\"}}", ty, tn);
    static const char *const uy[] = {"\"x\"", "3", "null", "{\"v\":\"x\"}", NULL};
    static const char *const un[] = {"true", "{\"v\":3}", NULL};
    check_instances("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\",\"nullable\":true},"
                    "{\"type\":\"object\",\"properties\":{\"v\":{\"$ref\":\"#/anyOf/0\"}},\"required\":[\"v\"]}]}", uy, un);
    /* recursion through $defs */
    static const char *const ry[] = {"{\"v\":1,\"kids\":[]}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3,\"kids\":[]}]}]}", NULL};
    static const char *const rn[] = {"{\"v\":1,\"kids\":[{\"v\":2}]}", NULL};
    check_instances("{\"$ref\":\"#/$defs/node\",\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{"
                    "\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},"
                    "\"required\":[\"v\",\"kids\"],\"additionalProperties\":false}}}", ry, rn);
    /* allOf of objects merges */
    static const char *const my[] = {"{\"a\":1,\"b\":\"x\"}", NULL};
    static const char *const mn[] = {"{\"a\":1}", "{\"b\":\"x\"}", NULL};
    check_instances("{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
                    "{\"properties\":{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}],\"additionalProperties\":false}", my, mn);
    /* strings: lengths count characters, escapes are one */
    static const char *const sy[] = {"\"ab\"", "\"日本\"", "\"\\n\\u00e9\"", "\"abcd\"", NULL};
    static const char *const sn[] = {"\"a\"", "\"abcde\"", "\"\\x\"", NULL};
    check_instances("{\"type\":\"string\",\"minLength\":2,\"maxLength\":4}", sy, sn);
    static const char *const dy[] = {"\"2026-01-15\"", "\"2026-12-31T23:59:59Z\"", "\"2026-12-31T23:59:59.123+01:00\"", NULL};
    static const char *const dn[] = {"\"2026-13-01\"", "\"2026-01-15T24:00:00Z\"", NULL};
    check_instances("{\"anyOf\":[{\"type\":\"string\",\"format\":\"date\"},{\"type\":\"string\",\"format\":\"date-time\"}]}", dy, dn);
    static const char *const ny[] = {"0", "1.5", "2e-3", "0.0", NULL};
    static const char *const nn[] = {"-1", "-0.5", "1.", NULL};
    check_instances("{\"type\":\"number\",\"minimum\":0}", ny, nn);
}

/* Integer ranges, value by value, against the bounds. */
static void test_schema_integer_ranges(void) {
    static const struct { const char *bounds; long lo, hi; } t[] = {
        {"\"minimum\":-100,\"maximum\":100", -100, 100}, {"\"minimum\":7,\"maximum\":1234", 7, 1234},
        {"\"minimum\":-1234,\"maximum\":-7", -1234, -7}, {"\"exclusiveMinimum\":0,\"exclusiveMaximum\":10", 1, 9},
        {"\"minimum\":0", 0, 100000}, {"\"maximum\":-3", -100000, -3}, {"\"minimum\":1,\"maximum\":1", 1, 1},
        {"\"minimum\":99,\"maximum\":1001", 99, 1001}, {"\"minimum\":0,\"maximum\":9", 0, 9},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char schema[160];
        snprintf(schema, sizeof schema, "{\"type\":\"integer\",%s}", t[i].bounds);
        zn_grammar g;
        zn_err err;
        CHECK_MSG(schema_grammar(schema, &g, &err) == ZN_OK, "%s: %s", schema, err.msg);
        zn_gmatch m;
        CHECK(gmatch_init(&m, &g, NULL, &err) == ZN_OK);
        int bad = 0;
        for (long v = -2000; v <= 2000 && bad < 3; v++) {
            char s[32];
            int n = snprintf(s, sizeof s, "%ld", v);
            gmatch_reset(&m);
            bool got = gmatch_accept_bytes(&m, s, (size_t)n) && gmatch_accepting(&m);
            bool want = v >= t[i].lo && v <= t[i].hi;
            if (got != want) {
                bad++;
                CHECK_MSG(0, "%s on %ld: %d, want %d", schema, v, got, want);
            }
        }
        static const char *const never[] = {"-0", "007", "+1", "1.0", ""};
        for (size_t k = 0; k < 5; k++) {
            gmatch_reset(&m);
            CHECK_MSG(!(gmatch_accept_bytes(&m, never[k], strlen(never[k])) && gmatch_accepting(&m)), "%s took [%s]",
                      schema, never[k]);
        }
        gmatch_free(&m);
        grammar_free(&g);
    }
}

static void test_schema_unsupported(void) {
    static const struct { const char *s, *want; } t[] = {
        {"{\"type\":\"string\",\"pattern\":\"^a+$\"}", "'pattern'"},
        {"{\"not\":{\"type\":\"string\"}}", "'not'"},
        {"{\"type\":\"integer\",\"multipleOf\":3}", "'multipleOf'"},
        {"{\"type\":\"string\",\"format\":\"email\"}", "'email'"},
        {"{\"type\":\"number\",\"maximum\":3.5}", "bounds on a 'number'"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"uniqueItems\":true}}}", "'uniqueItems' is not supported (at #/properties/a)"},
        {"{\"$ref\":\"http://example.com/s.json\"}", "another document"},
        {"{\"$ref\":\"#/$defs/missing\"}", "points at nothing"},
        {"{\"type\":\"strin\"}", "unknown 'type'"},
        {"{\"type\":\"object\",\"patternProperties\":{\"^x\":{}}}", "'patternProperties'"},
        {"{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", "'allOf'"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *text = NULL;
        zn_err err = {0};
        zn_status st = jschema_to_gbnf(t[i].s, strlen(t[i].s), "response_format.json_schema.schema", &text, &err);
        CHECK_MSG(st == ZN_ERR_UNSUPPORTED && strstr(err.msg, t[i].want) &&
                      strstr(err.msg, "response_format.json_schema.schema"),
                  "%s: status %d [%s]", t[i].s, st, err.msg);
        free(text);
    }
    char *text = NULL;
    zn_err err;
    CHECK(jschema_to_gbnf("{\"type\":", 8, "x", &text, &err) == ZN_ERR_ARG);
    /* annotations are fine */
    const char *annotated = "{\"title\":\"T\",\"description\":\"d\",\"type\":\"string\",\"default\":\"x\","
                            "\"examples\":[\"y\"],\"$schema\":\"https://json-schema.org/draft/2020-12/schema\"}";
    CHECK_MSG(jschema_to_gbnf(annotated, strlen(annotated), "x", &text, &err) == ZN_OK, "%s", err.msg);
    free(text);
}

/* Random walks through schema grammars end in JSON that parses and has the required keys. */
static void test_schema_random_sentences(void) {
    const char *s = "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500},"
                    "\"label\":{\"type\":\"string\",\"maxLength\":6},\"score\":{\"type\":\"number\"},"
                    "\"kind\":{\"enum\":[\"a\",\"b\",null,3]},\"pts\":{\"type\":\"array\",\"maxItems\":3,\"items\":"
                    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"]}}},"
                    "\"required\":[\"id\",\"label\",\"pts\"]}";
    zn_grammar g;
    zn_err err;
    CHECK(schema_grammar(s, &g, &err) == ZN_OK);
    zn_gmatch m;
    CHECK(gmatch_init(&m, &g, NULL, &err) == ZN_OK);
    int done = 0;
    for (int k = 0; k < 300; k++) {
        gmatch_reset(&m);
        char out[4096];
        size_t n = 0;
        while (n < sizeof out - 1) {
            if (gmatch_accepting(&m) && (gmatch_finished(&m) || rnd() % 4 == 0)) break;
            unsigned char cand[256];
            int nc = 0;
            for (int b = 0; b < 256; b++) {
                char c = (char)b;
                if (gmatch_bytes_ok(&m, &c, 1)) cand[nc++] = (unsigned char)b;
            }
            if (!nc) break;
            /* closing characters more often, so sentences end */
            unsigned char c = cand[rnd() % nc];
            for (int j = 0; j < nc; j++)
                if ((cand[j] == '"' || cand[j] == ']' || cand[j] == '}') && rnd() % 3 == 0) c = cand[j];
            CHECK(gmatch_accept_bytes(&m, (char *)&c, 1));
            out[n++] = (char)c;
        }
        out[n] = 0;
        if (!gmatch_accepting(&m)) continue;
        done++;
        json_error_t je;
        json_t *j = json_loads(out, 0, &je);
        CHECK_MSG(j && json_is_object(j), "not JSON: %s", out);
        json_t *id = json_object_get(j, "id");
        CHECK_MSG(json_is_integer(id) && json_integer_value(id) >= 1 && json_integer_value(id) <= 500, "%s", out);
        CHECK_MSG(json_is_string(json_object_get(j, "label")) && json_array_size(json_object_get(j, "pts")) <= 3, "%s", out);
        json_decref(j);
    }
    CHECK_MSG(done > 50, "only %d of 300 random walks ended", done);
    gmatch_free(&m);
    grammar_free(&g);
}

/* ---- token masks on a real vocabulary ---- */

static void test_masks_qwen35_vocab(void) {
    gguf_ctx gg;
    zn_err err;
    const char *path = shared_path("tokenizers/ggml-vocab/ggml-vocab-qwen35.gguf");
    if (gguf_open(&gg, path, &err)) SKIP("%s", err.msg);
    zn_tokenizer *tok;
    CHECK(tokenizer_load(&tok, &gg, &err) == ZN_OK);
    double t0 = harness_now();
    zn_vocab_trie vt;
    CHECK(vocab_trie_build(&vt, tok, &err) == ZN_OK);
    double t_trie = harness_now() - t0;
    CHECK(vt.n_vocab == 151936 && vt.n_eog > 0); /* this fixture's vocabulary (Qwen2/3's 151,936 ids) */
    const char *s = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\","
                    "\"minimum\":1,\"maximum\":14},\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\"]}},"
                    "\"required\":[\"city\",\"days\",\"unit\"]}";
    zn_grammar g;
    CHECK(schema_grammar(s, &g, &err) == ZN_OK);
    zn_gmatch m;
    CHECK(gmatch_init(&m, &g, &vt, &err) == ZN_OK);
    static const char *const prefixes[] = {"", "{", "{\"city\": \"Z", "{\"city\": \"Zürich\", \"days\": 1",
                                           "{\"city\": \"Zürich\", \"days\": 12, \"unit\": \"c",
                                           "{\"city\": \"Zürich\", \"days\": 12, \"unit\": \"celsius\"",
                                           "{\"city\": \"Zürich\", \"days\": 12, \"unit\": \"celsius\"}"};
    double t_first = 0, t_cached = 0;
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        gmatch_reset(&m);
        CHECK_MSG(gmatch_accept_bytes(&m, prefixes[p], strlen(prefixes[p])), "%s", prefixes[p]);
        int n_allowed = 0;
        double a = harness_now();
        const uint64_t *mk = gmatch_mask(&m, &n_allowed, &err);
        double b = harness_now();
        CHECK(mk != NULL);
        if (!mk) continue;
        if (p == 2) t_first = b - a;
        int n2;
        double c = harness_now();
        CHECK(gmatch_mask(&m, &n2, &err) == mk && n2 == n_allowed);
        if (p == 2) t_cached = harness_now() - c;
        /* the mask, token by token */
        int count = 0, bad = 0;
        for (int t = 0; t < vt.n_vocab && bad < 3; t++) {
            bool in = (mk[t >> 6] >> (t & 63)) & 1;
            bool ok = gmatch_token_ok(&m, t);
            count += ok;
            if (in != ok) {
                bad++;
                char piece[64];
                size_t k = tokenizer_token_piece(tok, t, true, piece, sizeof piece - 1);
                piece[k] = 0;
                CHECK_MSG(0, "after [%s]: token %d [%s] mask %d, one by one %d", prefixes[p], t, piece, in, ok);
            }
        }
        CHECK_EQ_INT(count, n_allowed);
        CHECK_MSG(n_allowed > 0, "nothing allowed after [%s]", prefixes[p]);
        /* what must and must not be allowed */
        int32_t ids[8];
        size_t ni;
        if (p == 2) { /* inside a string: most of the vocabulary */
            CHECK_MSG(n_allowed > vt.n_vocab / 2, "%d allowed in a string", n_allowed);
            CHECK(tokenizer_encode(tok, "ürich", 6, false, false, ids, 8, &ni, &err) == ZN_OK);
            CHECK(gmatch_token_ok(&m, ids[0]));
        }
        if (p == 3) { /* "days": 1 -> digits 0-4, ',' ; not 5 */
            CHECK(!gmatch_token_ok(&m, tokenizer_find(tok, "5", 1)) && gmatch_token_ok(&m, tokenizer_find(tok, "4", 1)));
            CHECK(gmatch_token_ok(&m, tokenizer_find(tok, ",", 1)));
        }
        bool eog_ok = gmatch_token_ok(&m, vt.eog[0]);
        CHECK_EQ_INT(eog_ok, p == 6);
        if (p == 6) CHECK_EQ_INT(n_allowed, vt.n_eog);
    }
    fprintf(stderr, "    qwen3.5 vocab (%d tokens): trie %d nodes in %.0f ms; mask in a string %.2f ms, cached %.3f ms\n",
            vt.n_vocab, vt.n_nodes, t_trie * 1e3, t_first * 1e3, t_cached * 1e3);
    gmatch_free(&m);
    grammar_free(&g);
    vocab_trie_free(&vt);
    tokenizer_free(tok);
    gguf_close(&gg);
}

int main(void) {
    RUN(test_gbnf_errors);
    RUN(test_gbnf_match);
    RUN(test_utf8_classes);
    RUN(test_against_regex);
    RUN(test_until);
    RUN(test_compaction);
    RUN(test_schema_objects);
    RUN(test_schema_arrays_and_more);
    RUN(test_schema_integer_ranges);
    RUN(test_schema_unsupported);
    RUN(test_schema_random_sentences);
    RUN(test_masks_qwen35_vocab);
    return harness_report("grammar");
}
