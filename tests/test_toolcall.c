/* The streaming tool-call parsers (src/server/toolcall.c) on replies in
 * each format our model families emit. The first recordings of each
 * format are what the models' own chat templates (tests/templates) render
 * for an assistant turn with tool calls, which is the form the models are
 * trained to write; the others are variants seen from real models (key
 * order, missing closing tags, text around the calls, look-alikes that are
 * not calls). Every reply is fed whole, one byte at a time, cut at every
 * byte boundary, and (short ones) cut at every pair of boundaries; every
 * way must give the same content and calls, the markup never in the
 * content, and arguments that are the expected JSON. */
#include <jansson.h>

#include "chat.h"
#include "harness.h"
#include "toolcall.h"

#define TDIR "tests/templates/"

/* ---- collecting what the parser sends ---- */

#define MAX_CALLS 8

typedef struct got {
    char content[8192];
    size_t n_content;
    int n_calls;
    char name[MAX_CALLS][ZN_SRV_TOOL_NAME_MAX + 1];
    char args[MAX_CALLS][4096];
    size_t n_args[MAX_CALLS];
    bool bad;           /* arguments before any name, or overflow */
} got;

static bool sink(void *ctx, int ch, const char *p, size_t n) {
    got *g = ctx;
    if (ch == ZN_CH_CONTENT) {
        if (g->n_content + n >= sizeof g->content) return g->bad = true, true;
        memcpy(g->content + g->n_content, p, n);
        g->n_content += n;
        g->content[g->n_content] = 0;
    } else if (ch == ZN_CH_TOOL_NAME) {
        if (g->n_calls == MAX_CALLS || n > ZN_SRV_TOOL_NAME_MAX) return g->bad = true, true;
        memcpy(g->name[g->n_calls], p, n);
        g->name[g->n_calls][n] = 0;
        g->n_args[g->n_calls] = 0;
        g->args[g->n_calls][0] = 0;
        g->n_calls++;
    } else if (ch == ZN_CH_TOOL_ARGS) {
        if (g->n_calls == 0) return g->bad = true, true;
        int k = g->n_calls - 1;
        if (g->n_args[k] + n >= sizeof g->args[k]) return g->bad = true, true;
        memcpy(g->args[k] + g->n_args[k], p, n);
        g->n_args[k] += n;
        g->args[k][g->n_args[k]] = 0;
    } else {
        g->bad = true;
    }
    return true;
}

static const char TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":{\"type\":\"string\",\"enum\":[\"celsius\","
    "\"fahrenheit\"]},\"days\":{\"type\":\"integer\"}},\"required\":[\"city\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"search\",\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\"},\"filters\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"opts\":{"
    "\"type\":\"object\"},\"note\":{}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},\"mode\":{\"type\":[\"integer\",\"null\"]}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]";

static zn_toolset g_tools;

/* Feeds text cut at the given points (ascending, < n). */
static void run_cuts(int fmt, const char *text, size_t n, const size_t *cuts, int n_cuts, got *g) {
    memset(g, 0, sizeof *g);
    zn_toolparse p;
    zn_err err;
    if (toolparse_init(&p, fmt, &g_tools, &err)) {
        g->bad = true;
        return;
    }
    size_t prev = 0;
    for (int i = 0; i <= n_cuts; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        if (!toolparse_push(&p, text + prev, to - prev, sink, g)) g->bad = true;
        prev = to;
    }
    if (!toolparse_flush(&p, sink, g)) g->bad = true;
    toolparse_free(&p);
}

static bool same(const got *a, const got *b) {
    if (a->bad != b->bad || a->n_content != b->n_content || memcmp(a->content, b->content, a->n_content) ||
        a->n_calls != b->n_calls)
        return false;
    for (int i = 0; i < a->n_calls; i++)
        if (strcmp(a->name[i], b->name[i]) || a->n_args[i] != b->n_args[i] || memcmp(a->args[i], b->args[i], a->n_args[i]))
            return false;
    return true;
}

static void show(const char *what, const got *g) {
    fprintf(stderr, "    %s: content [%s], %d calls%s\n", what, g->content, g->n_calls, g->bad ? " (bad)" : "");
    for (int i = 0; i < g->n_calls; i++) fprintf(stderr, "      %s(%s)\n", g->name[i], g->args[i]);
}

typedef struct want_call {
    const char *name;
    const char *args;  /* JSON, compared as values */
} want_call;

/* Checks the whole reply against the expectation, then every other way of cutting it. */
static void check_reply(const char *label, int fmt, const char *text, const char *content, const want_call *calls,
                        int n_calls) {
    size_t n = strlen(text);
    got whole, g;
    run_cuts(fmt, text, n, NULL, 0, &whole);
    bool ok = !whole.bad && !strcmp(whole.content, content) && whole.n_calls == n_calls;
    for (int i = 0; ok && i < n_calls; i++) {
        json_error_t je;
        json_t *a = json_loads(whole.args[i], 0, &je), *b = json_loads(calls[i].args, 0, &je);
        ok = a && b && json_equal(a, b) && !strcmp(whole.name[i], calls[i].name);
        json_decref(a);
        json_decref(b);
    }
    CHECK_MSG(ok, "%s: whole reply parsed wrong; want content [%s] and %d calls", label, content, n_calls);
    if (!ok) show("got", &whole);
    if (n_calls) {
        CHECK_MSG(!strstr(whole.content, "<tool_call>") && !strstr(whole.content, "</tool_call>") &&
                      !strstr(whole.content, "<function=") && !strstr(whole.content, "<parameter="),
                  "%s: markup in the content [%s]", label, whole.content);
    }
    /* one byte at a time */
    size_t *cuts = malloc(sizeof *cuts * (n + 1));
    for (size_t i = 0; i + 1 < n; i++) cuts[i] = i + 1;
    run_cuts(fmt, text, n, cuts, n > 1 ? (int)n - 1 : 0, &g);
    CHECK_MSG(same(&g, &whole), "%s: byte by byte differs", label);
    if (!same(&g, &whole)) show("byte by byte", &g);
    free(cuts);
    /* every boundary, and every pair of them for short replies */
    int bad = 0;
    for (size_t a = 1; a < n && bad < 3; a++) {
        size_t c1[1] = {a};
        run_cuts(fmt, text, n, c1, 1, &g);
        if (!same(&g, &whole)) {
            bad++;
            CHECK_MSG(0, "%s: cut at %zu differs", label, a);
            show("cut", &g);
        }
        for (size_t b = a + 1; n <= 200 && b < n && bad < 3; b++) {
            size_t c2[2] = {a, b};
            run_cuts(fmt, text, n, c2, 2, &g);
            if (!same(&g, &whole)) {
                bad++;
                CHECK_MSG(0, "%s: cuts at %zu, %zu differ", label, a, b);
                show("cuts", &g);
            }
        }
    }
}

/* ---- recordings from the templates ---- */

/* The assistant turn a template renders for the last message of msgs: what
 * follows the last "<|im_start|>assistant\n" (or Llama's header) up to the
 * end-of-turn marker. */
static char *assistant_turn(const char *tmpl_file, const char *msgs, const char *start, const char *end) {
    char path[256];
    snprintf(path, sizeof path, TDIR "%s", tmpl_file);
    char *tmpl = harness_read_file(path, NULL);
    if (!tmpl) return NULL;
    zn_chat_kwargs kw = {.tools = TOOLS, .bos_token = "", .eos_token = ""};
    char *out = NULL;
    size_t len;
    zn_err err;
    zn_status st = chat_render_json(tmpl, msgs, strlen(msgs), false, &kw, &out, &len, NULL, &err);
    free(tmpl);
    if (st) {
        fprintf(stderr, "    render %s: %s\n", tmpl_file, err.msg);
        return NULL;
    }
    char *s = NULL, *at = out;
    while ((at = strstr(at, start))) s = at, at += strlen(start);
    char *e = s ? strstr(s + strlen(start), end) : NULL;
    char *r = NULL;
    if (e) {
        s += strlen(start);
        /* the reasoning block the Qwen templates put before the last turn is the thinker's business */
        if (!strncmp(s, "<think>", 7) && strstr(s, "</think>")) {
            s = strstr(s, "</think>") + 8;
            while (*s == '\n') s++;
        }
        r = strndup(s, (size_t)(e - s));
    }
    free(out);
    return r;
}

static const char TWO_CALLS[] =
    "[{\"role\":\"user\",\"content\":\"Weather in Paris and Zürich?\"},"
    "{\"role\":\"assistant\",\"content\":\"Let me check both.\",\"tool_calls\":["
    "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": 2}\"}},"
    "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":{\"query\":\"rain \\\"gear\\\" </tool_call>\","
    "\"filters\":[\"a.example\",\"b.example\"],\"opts\":{\"safe\":true,\"n\":3,\"w\":0.5,\"x\":null}}}}]}]";

static const want_call TWO_WANT[] = {
    {"get_weather", "{\"city\":\"Paris\",\"days\":2}"},
    {"search", "{\"query\":\"rain \\\"gear\\\" </tool_call>\",\"filters\":[\"a.example\",\"b.example\"],"
               "\"opts\":{\"safe\":true,\"n\":3,\"w\":0.5,\"x\":null}}"},
};

static void test_qwen3_recorded(void) {
    char *r = assistant_turn("qwen3.jinja", TWO_CALLS, "<|im_start|>assistant\n", "<|im_end|>");
    CHECK(r != NULL);
    if (!r) return;
    CHECK_MSG(strstr(r, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {") != NULL, "rendered: %s", r);
    check_reply("qwen3 template", ZN_TOOLFMT_HERMES, r, "Let me check both.", TWO_WANT, 2);
    free(r);
}

static void test_qwen35_recorded(void) {
    char *r = assistant_turn("qwen3.5.jinja", TWO_CALLS, "<|im_start|>assistant\n", "<|im_end|>");
    CHECK(r != NULL);
    if (!r) return;
    CHECK_MSG(strstr(r, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>") != NULL,
              "rendered: %s", r);
    check_reply("qwen3.5 template", ZN_TOOLFMT_XML, r, "Let me check both.", TWO_WANT, 2);
    free(r);
}

static void test_llama3_recorded(void) {
    static const char one[] =
        "[{\"role\":\"user\",\"content\":\"Weather in Oslo?\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
        "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Oslo\\\", \\\"unit\\\": \\\"celsius\\\"}\"}}]}]";
    static const want_call w[] = {{"get_weather", "{\"city\":\"Oslo\",\"unit\":\"celsius\"}"}};
    static const char *const tmpls[] = {"llama3.1.jinja", "llama3.2.jinja"};
    for (int i = 0; i < 2; i++) {
        char *r = assistant_turn(tmpls[i], one, "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>");
        CHECK_MSG(r != NULL, "%s", tmpls[i]);
        if (!r) continue;
        CHECK_MSG(!strncmp(r, "{\"name\": \"get_weather\", \"parameters\": {", 38), "rendered: %s", r);
        check_reply(tmpls[i], ZN_TOOLFMT_LLAMA3, r, "", w, 1);
        free(r);
    }
}

static void test_formats_of_templates(void) {
    static const struct { const char *file; int fmt; } t[] = {
        {"qwen3.jinja", ZN_TOOLFMT_HERMES}, {"qwen2.5.jinja", ZN_TOOLFMT_HERMES},
        {"hermes2pro-tool-use.jinja", ZN_TOOLFMT_HERMES}, {"qwen3.5.jinja", ZN_TOOLFMT_XML},
        {"llama3.1.jinja", ZN_TOOLFMT_LLAMA3}, {"llama3.2.jinja", ZN_TOOLFMT_LLAMA3},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, TDIR "%s", t[i].file);
        char *s = harness_read_file(path, NULL);
        CHECK_MSG(s && toolcall_format_of(s) == t[i].fmt, "%s: format %d", t[i].file, s ? toolcall_format_of(s) : -1);
        free(s);
    }
    CHECK_EQ_INT(toolcall_format_of(NULL), ZN_TOOLFMT_HERMES);
    CHECK_EQ_INT(toolcall_format_of(chat_chatml_template), ZN_TOOLFMT_HERMES);
}

/* ---- variants ---- */

static void test_hermes_variants(void) {
    static const want_call w1[] = {{"get_weather", "{\"city\":\"Zürich\",\"unit\":\"celsius\"}"}};
    check_reply("arguments first", ZN_TOOLFMT_HERMES,
                "<tool_call>\n{\"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}, \"name\": \"get_weather\"}\n</tool_call>",
                "", w1, 1);
    check_reply("no closing tag", ZN_TOOLFMT_HERMES,
                "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Zürich\",\"unit\":\"celsius\"}}", "", w1, 1);
    check_reply("parameters key, text after", ZN_TOOLFMT_HERMES,
                "Sure.\n\n<tool_call>\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>\nDone.",
                "Sure.\nDone.", w1, 1);
    check_reply("arguments as a string", ZN_TOOLFMT_HERMES,
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Zürich\\\", \\\"unit\\\": \\\"celsius\\\"}\"}\n</tool_call>",
                "", w1, 1);
    static const want_call w2[] = {{"now", "{}"}};
    check_reply("no arguments, extra keys", ZN_TOOLFMT_HERMES,
                "<tool_call>\n{\"id\": \"x\", \"name\": \"now\", \"type\": {\"a\": [1, \"}\"]}}\n</tool_call>", "", w2, 1);
    static const want_call w3[] = {{"search", "{\"query\":\"a}b{c\\\"d\\\\\",\"filters\":[]}"},
                                   {"now", "{}"}, {"search", "{\"query\":\"\\u00e9\"}"}};
    check_reply("three calls, tricky strings", ZN_TOOLFMT_HERMES,
                "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a}b{c\\\"d\\\\\", \"filters\": []}}\n</tool_call>\n"
                "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n\n"
                "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"\\u00e9\"}}</tool_call>\n",
                "", w3, 3);
    /* look-alikes are content */
    check_reply("not JSON after the tag", ZN_TOOLFMT_HERMES, "Use <tool_call> tags like this.",
                "Use <tool_call> tags like this.", NULL, 0);
    check_reply("a partial tag at the end", ZN_TOOLFMT_HERMES, "The tag is <tool_c", "The tag is <tool_c", NULL, 0);
    check_reply("a call that never names its function", ZN_TOOLFMT_HERMES, "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>",
                "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>", NULL, 0);
    check_reply("plain text", ZN_TOOLFMT_HERMES, "It is sunny < 30 °C in <b>Paris</b>.\n",
                "It is sunny < 30 °C in <b>Paris</b>.\n", NULL, 0);
    /* named: a call, though it did not finish (its arguments are closed) */
    check_reply("unfinished call", ZN_TOOLFMT_HERMES, "Checking. <tool_call>\n{\"name\": \"now\", \"argu",
                "Checking.", w2, 1);
}

static void test_xml_variants(void) {
    static const want_call w1[] = {{"write_file", "{\"path\":\"a/b.c\",\"content\":\"int main() {\\n  if (a < b && c > d) return \\\"x\\\";\\n\\n  </param\\n}\",\"mode\":420}"}};
    check_reply("multi-line string value", ZN_TOOLFMT_XML,
                "I will write it.\n\n<tool_call>\n<function=write_file>\n<parameter=path>\na/b.c\n</parameter>\n"
                "<parameter=content>\nint main() {\n  if (a < b && c > d) return \"x\";\n\n  </param\n}\n</parameter>\n"
                "<parameter=mode>\n420\n</parameter>\n</function>\n</tool_call>",
                "I will write it.", w1, 1);
    static const want_call w2[] = {{"search", "{\"query\":\"umbrellas\",\"filters\":[\"a\",\"b\"],\"opts\":{\"n\":1},"
                                              "\"note\":\"just text, not JSON\"}"}};
    check_reply("typed and untyped values", ZN_TOOLFMT_XML,
                "<tool_call>\n<function=search>\n<parameter=query>\numbrellas\n</parameter>\n<parameter=filters>\n[\"a\", \"b\"]\n"
                "</parameter>\n<parameter=opts>\n{\"n\": 1}\n</parameter>\n<parameter=note>\njust text, not JSON\n</parameter>\n"
                "</function>\n</tool_call>",
                "", w2, 1);
    static const want_call w3[] = {{"search", "{\"note\":{\"k\":[1,2]}}"}};
    check_reply("untyped JSON value", ZN_TOOLFMT_XML,
                "<tool_call>\n<function=search>\n<parameter=note>\n{\"k\": [1, 2]}\n</parameter>\n</function>\n</tool_call>", "", w3, 1);
    static const want_call w4[] = {{"now", "{}"}, {"get_weather", "{\"city\":\"Oslo\"}"}};
    check_reply("no parameters; missing </parameter> and </tool_call>", ZN_TOOLFMT_XML,
                "<tool_call>\n<function=now>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</function>",
                "", w4, 2);
    static const want_call w5[] = {{"get_weather", "{\"city\":\"Oslo\",\"days\":3}"}};
    check_reply("bare <function=> (Qwen3-Coder without <tool_call>)", ZN_TOOLFMT_XML,
                "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>",
                "", w5, 1);
    static const want_call w6[] = {{"get_weather", "{\"city\":\"Oslo\"}"}};
    check_reply("JSON inside <tool_call> of an XML model", ZN_TOOLFMT_XML,
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>", "", w6, 1);
    check_reply("an unfinished value is closed", ZN_TOOLFMT_XML,
                "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo", "", w6, 1);
    check_reply("a broken function tag is content", ZN_TOOLFMT_XML, "<tool_call>\n<function=get\nweather>",
                "<tool_call>\n<function=get\nweather>", NULL, 0);
}

static void test_llama3_variants(void) {
    static const want_call w1[] = {{"get_weather", "{\"city\":\"Oslo\"}"}, {"search", "{\"query\":\"x\"}"}};
    check_reply("two calls with ';'", ZN_TOOLFMT_LLAMA3,
                "\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}; {\"name\": \"search\", \"parameters\": {\"query\": \"x\"}}",
                "", w1, 2);
    static const want_call w2[] = {{"get_weather", "{\"city\":\"Oslo\"}"}};
    check_reply("type first", ZN_TOOLFMT_LLAMA3,
                "{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", "", w2, 1);
    check_reply("a JSON answer is content", ZN_TOOLFMT_LLAMA3, "{\"answer\": 42, \"name\": \"x\"}",
                "{\"answer\": 42, \"name\": \"x\"}", NULL, 0);
    check_reply("an unknown function is content", ZN_TOOLFMT_LLAMA3,
                "{\"name\": \"launch\", \"parameters\": {}}", "{\"name\": \"launch\", \"parameters\": {}}", NULL, 0);
    check_reply("text is content", ZN_TOOLFMT_LLAMA3, "It is -3 °C in Oslo. {\"name\": \"get_weather\"}",
                "It is -3 °C in Oslo. {\"name\": \"get_weather\"}", NULL, 0);
}

/* Names must arrive before their arguments, one name piece per call, and the
 * arguments of the XML form stream as the value arrives (not held to its end). */
static void test_streams_incrementally(void) {
    zn_toolparse p;
    zn_err err;
    CHECK(toolparse_init(&p, ZN_TOOLFMT_XML, &g_tools, &err) == ZN_OK);
    got g = {0};
    const char *a = "<tool_call>\n<function=write_file>\n<parameter=content>\nline one\nline";
    CHECK(toolparse_push(&p, a, strlen(a), sink, &g));
    CHECK_EQ_INT(g.n_calls, 1);
    CHECK_EQ_STR(g.name[0], "write_file");
    CHECK_EQ_STR(g.args[0], "{\"content\":\"line one\\nline");
    CHECK(toolparse_push(&p, " two\n</param", 12, sink, &g));
    CHECK_EQ_STR(g.args[0], "{\"content\":\"line one\\nline two");
    CHECK(toolparse_push(&p, "eter>\n</function>", 17, sink, &g));
    CHECK_EQ_STR(g.args[0], "{\"content\":\"line one\\nline two\"}");
    CHECK_EQ_INT(p.n_done, 1);
    CHECK(toolparse_flush(&p, sink, &g));
    CHECK_EQ_INT(g.n_content, 0);
    toolparse_free(&p);

    CHECK(toolparse_init(&p, ZN_TOOLFMT_HERMES, &g_tools, &err) == ZN_OK);
    memset(&g, 0, sizeof g);
    const char *b = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"um";
    CHECK(toolparse_push(&p, b, strlen(b), sink, &g));
    CHECK_EQ_INT(g.n_calls, 1);
    CHECK_EQ_STR(g.args[0], "{\"query\": \"um");
    CHECK_EQ_INT(p.n_done, 0);
    CHECK(toolparse_push(&p, "brellas\"}}", 10, sink, &g));
    CHECK_EQ_STR(g.args[0], "{\"query\": \"umbrellas\"}");
    CHECK_EQ_INT(p.n_done, 1);
    toolparse_free(&p);
}

static void test_toolset(void) {
    CHECK_EQ_INT(g_tools.n, 4);
    CHECK_EQ_INT(toolset_find(&g_tools, "search", 6), 1);
    CHECK_EQ_INT(toolset_find(&g_tools, "searc", 5), -1);
    const zn_tool_def *w = &g_tools.t[2];
    CHECK_EQ_INT(w->n_params, 3);
    CHECK_EQ_INT(w->ptype[0], ZN_PARAM_STRING);
    CHECK_EQ_INT(w->ptype[2], ZN_PARAM_JSON);
    CHECK_EQ_INT(g_tools.t[1].ptype[3], ZN_PARAM_UNKNOWN);
    CHECK_EQ_INT(g_tools.t[0].ptype[1], ZN_PARAM_STRING);
    CHECK_EQ_STR(g_tools.t[3].params_json, "{}");
    zn_toolset bad;
    zn_err err;
    CHECK(toolset_parse(&bad, "[{\"type\":\"function\",\"function\":{}}]", 36, &err) == ZN_ERR_ARG);
    CHECK(toolset_parse(&bad, "{}", 2, &err) == ZN_ERR_ARG);
}

int main(void) {
    zn_err err;
    if (toolset_parse(&g_tools, TOOLS, strlen(TOOLS), &err)) {
        fprintf(stderr, "tools: %s\n", err.msg);
        return 1;
    }
    RUN(test_toolset);
    RUN(test_formats_of_templates);
    RUN(test_qwen3_recorded);
    RUN(test_qwen35_recorded);
    RUN(test_llama3_recorded);
    RUN(test_hermes_variants);
    RUN(test_xml_variants);
    RUN(test_llama3_variants);
    RUN(test_streams_incrementally);
    toolset_free(&g_tools);
    return harness_report("toolcall");
}
