/* The server's pieces without a network: stop strings and the reasoning
 * split over every way a text can arrive in pieces (textstream.c), request
 * parsing and its errors (oai.c), response bodies (oai_resp.c),
 * log-probabilities (scheduler.c) and the metrics text (metrics.c). The
 * end-to-end tests against a running server are tests/test_serve.sh. */
#include <math.h>

#include "chat.h"
#include "harness.h"
#include "metrics.h"
#include "oai.h"
#include "oai_resp.h"
#include "scheduler.h"
#include "textstream.h"

/* ---- stop strings ---- */

/* Feeds text in pieces cut at a and b (a <= b) and returns what came out. */
static size_t stop_run(const char *const *stops, int n, const char *text, size_t a, size_t b, char *got, bool *matched) {
    zn_stopper s;
    stopper_init(&s, stops, n);
    char out[ZN_STOPPER_CAP];
    size_t len = strlen(text), at = 0, cuts[3] = {a, b, len}, prev = 0;
    for (int i = 0; i < 3; i++) {
        size_t k = stopper_push(&s, text + prev, cuts[i] - prev, out);
        memcpy(got + at, out, k);
        at += k;
        prev = cuts[i];
    }
    size_t k = stopper_flush(&s, out);
    memcpy(got + at, out, k);
    at += k;
    got[at] = 0;
    *matched = s.matched;
    return at;
}

/* What a stop-string cut should give: the text before the first match. */
static size_t stop_ref(const char *const *stops, int n, const char *text, bool *matched) {
    size_t best = strlen(text);
    *matched = false;
    for (int i = 0; i < n; i++) {
        const char *m = strstr(text, stops[i]);
        if (m && (size_t)(m - text) <= best) {
            best = (size_t)(m - text);
            *matched = true;
        }
    }
    return best;
}

static void test_stop_every_split(void) {
    static const char *const stops[] = {"STOP", "\n\nUser:", "ab"};
    static const char *const texts[] = {"hello STOP world", "no stop here", "x\n\nUser: hi", "partial ST", "aSTOab",
                                        "\n\nUse", "STOPab", "", "a", "sab", "ST", "\n\nUser:"};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        size_t len = strlen(texts[t]);
        bool mref;
        size_t want = stop_ref(stops, 3, texts[t], &mref);
        for (size_t a = 0; a <= len; a++)
            for (size_t b = a; b <= len; b++) {
                char got[64];
                bool m;
                size_t n = stop_run(stops, 3, texts[t], a, b, got, &m);
                CHECK_MSG(n == want && !memcmp(got, texts[t], want) && m == mref, "'%s' cut at %zu,%zu: got '%s' (%d)",
                          texts[t], a, b, got, m);
            }
    }
}

static void test_stop_none(void) {
    zn_stopper s;
    stopper_init(&s, NULL, 0);
    char out[ZN_STOPPER_CAP];
    CHECK_EQ_INT(stopper_push(&s, "abc", 3, out), 3);
    CHECK(!memcmp(out, "abc", 3));
    CHECK_EQ_INT(stopper_flush(&s, out), 0);
    /* empty stop strings are ignored, not matched everywhere */
    static const char *const e[] = {""};
    stopper_init(&s, e, 1);
    CHECK_EQ_INT(stopper_push(&s, "abc", 3, out), 3);
    CHECK(!s.matched);
}

/* ---- reasoning split ---- */

static void think_run(const char *text, bool in_thinking, size_t a, size_t b, char *r, char *c) {
    zn_thinker t;
    thinker_init(&t, in_thinking, true);
    size_t len = strlen(text), cuts[3] = {a, b, len}, prev = 0, nr = 0, nc = 0;
    zn_think_out o[2];
    for (int i = 0; i <= 3; i++) {
        int k = i < 3 ? thinker_push(&t, text + prev, cuts[i] - prev, o) : thinker_flush(&t, o);
        if (i < 3) prev = cuts[i];
        for (int j = 0; j < k; j++) {
            char *dst = o[j].channel == ZN_CH_REASONING ? r + nr : c + nc;
            memcpy(dst, o[j].p, o[j].n);
            if (o[j].channel == ZN_CH_REASONING) nr += o[j].n;
            else nc += o[j].n;
        }
    }
    r[nr] = 0;
    c[nc] = 0;
}

static void test_think_matches_whole_split(void) {
    static const struct { const char *text; bool in; } cases[] = {
        {"<think>\nI should greet.\n</think>\n\nHello!", false},
        {"  <think>x</think>y", false},
        {"no tags at all", false},
        {"  leading spaces kept", false},
        {"<thi", false},
        {"<think>unclosed  \n", false},
        {"reasoning first</think>\n\nthe answer", true},
        {"\n  spaced  \n</think>  answer  ", true},
        {"only reasoning", true},
        {"", true},
        {"", false},
        {"<think></think>", false},
        {"<think>a</think>b</think>c", false},
        {"x</thin", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *text = cases[i].text;
        size_t len = strlen(text);
        zn_span wr, wa;
        chat_split_thinking(text, len, cases[i].in, &wr, &wa);
        for (size_t a = 0; a <= len; a++)
            for (size_t b = a; b <= len; b++) {
                char r[128], c[128];
                think_run(text, cases[i].in, a, b, r, c);
                CHECK_MSG(strlen(r) == wr.n && !memcmp(r, wr.p, wr.n) && strlen(c) == wa.n && !memcmp(c, wa.p, wa.n),
                          "'%s' (in=%d) cut %zu,%zu: reasoning '%s' answer '%s', want '%.*s' / '%.*s'", text,
                          cases[i].in, a, b, r, c, (int)wr.n, wr.p, (int)wa.n, wa.p);
            }
    }
}

static void test_think_disabled(void) {
    zn_thinker t;
    thinker_init(&t, false, false);
    zn_think_out o[2];
    int k = thinker_push(&t, "<think>x</think>", 16, o);
    CHECK_EQ_INT(k, 1);
    CHECK_EQ_INT(o[0].channel, ZN_CH_CONTENT);
    CHECK_EQ_INT(o[0].n, 16);
    /* a tag later in an answer stays answer */
    thinker_init(&t, false, true);
    char r[64], c[64];
    (void)t;
    think_run("Hi <think>x</think>", false, 2, 9, r, c);
    CHECK_EQ_STR(c, "Hi <think>x</think>");
    CHECK_EQ_STR(r, "");
}

/* reasoning_tokens: every token from the opening tag through the closing
 * one, however the tags are cut into tokens */
static void test_think_count(void) {
    static const struct { bool in, on; const char *toks[8]; int want; } cases[] = {
        {true, true, {"I", " think", "</think>", "\n\nHi", "!"}, 3},
        {false, true, {"<think>", "\n", "hm", "</think>", "ans"}, 4},
        {false, true, {"<th", "ink>", "x", "</th", "ink>", "a"}, 5},
        {false, true, {"\n", "<think>", "r", "</think>", "a"}, 4},
        {false, true, {" ", "Hello", " world"}, 0},
        {false, true, {"<", "b>", "old"}, 0},
        {false, false, {"<think>", "x", "</think>"}, 0},
        {false, true, {"<think>a</think>", "b"}, 1},
        {false, true, {"<think>", "a", "b"}, 3},
        {true, true, {"a", "", "b"}, 3},
        {true, false, {"a", "b"}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zn_think_count c;
        thinkcount_init(&c, cases[i].in, cases[i].on);
        CHECK(thinkcount_in_reasoning(&c) == (cases[i].in && cases[i].on));
        for (int k = 0; k < 8 && cases[i].toks[k]; k++) thinkcount_push(&c, cases[i].toks[k], strlen(cases[i].toks[k]));
        CHECK_MSG(c.n == cases[i].want, "case %zu: %d reasoning tokens, want %d", i, c.n, cases[i].want);
    }
    /* inside the block once it opens, out once it closes */
    zn_think_count c;
    thinkcount_init(&c, false, true);
    thinkcount_push(&c, "<think>", 7);
    CHECK(thinkcount_in_reasoning(&c));
    thinkcount_push(&c, "hm\n</think>", 11);
    CHECK(!thinkcount_in_reasoning(&c));
    thinkcount_push(&c, "<think>", 7);
    CHECK(!thinkcount_in_reasoning(&c));
}

/* ---- request parsing ---- */

static bool parse(const char *body, bool chat, zn_oai_req *r, zn_oai_error *e) {
    return oai_parse(body, strlen(body), chat, r, e);
}

static void expect_400(const char *body, bool chat, const char *param) {
    zn_oai_req r;
    zn_oai_error e;
    bool ok = parse(body, chat, &r, &e);
    CHECK_MSG(!ok, "accepted: %s", body);
    if (ok) {
        oai_req_free(&r);
        return;
    }
    CHECK_EQ_INT(e.status, 400);
    CHECK_EQ_STR(e.type, "invalid_request_error");
    if (param) CHECK_MSG(!strcmp(e.param, param), "%s: param '%s', want '%s' (%s)", body, e.param, param, e.message);
    CHECK(e.message[0]);
}

static void test_parse_chat(void) {
    zn_oai_req r;
    zn_oai_error e;
    CHECK(parse("{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
                "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
                "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hm\"}],"
                "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":5,\"max_completion_tokens\":7,"
                "\"temperature\":0,\"top_p\":0.5,\"top_k\":3,\"min_p\":0.1,\"seed\":42,\"stop\":\"X\",\"logprobs\":true,"
                "\"top_logprobs\":2,\"chat_template_kwargs\":{\"enable_thinking\":false},\"user\":\"ignored\",\"n\":1}",
                true, &r, &e));
    CHECK_EQ_STR(r.model, "m");
    CHECK(r.stream && r.include_usage);
    CHECK_EQ_INT(r.max_tokens, 7);
    CHECK(r.sp.temperature == 0 && r.sp.top_p == 0.5f && r.sp.top_k == 3);
    CHECK(r.seed_given && r.sp.seed == 42);
    CHECK_EQ_INT(r.n_stop, 1);
    CHECK_EQ_STR(r.stop[0], "X");
    CHECK_EQ_INT(r.top_logprobs, 2);
    CHECK_EQ_INT(r.think, ZN_THINK_OFF);
    CHECK_EQ_INT(r.n_messages, 3);
    CHECK_EQ_STR(r.messages, "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"a\\nb\"},"
                             "{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":\"hm\"}]");
    oai_req_free(&r);
    /* what is not implemented yet passes when it asks for nothing */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":"
                "{\"name\":\"f\"}}],\"tool_choice\":\"none\",\"response_format\":{\"type\":\"text\"},\"logit_bias\":{},"
                "\"best_of\":1}", true, &r, &e));
    CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_NONE);
    oai_req_free(&r);
    /* tools: kept as JSON for the template, auto by default; tool messages pass through */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},{\"role\":\"assistant\",\"content\":null,"
                "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"w\",\"arguments\":\"{}\"}}]},"
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny\"}],"
                "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"w\",\"parameters\":{\"type\":\"object\"}}}],"
                "\"parallel_tool_calls\":false}", true, &r, &e));
    CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_AUTO);
    CHECK_EQ_INT(r.n_tools, 1);
    CHECK(!r.parallel_tool_calls);
    CHECK(r.tools && strstr(r.tools, "\"name\":\"w\""));
    CHECK(strstr(r.messages, "\"tool_call_id\":\"c1\"") && strstr(r.messages, "\"tool_calls\":[{"));
    oai_req_free(&r);
    /* response_format: the schema kept as JSON text for the server to compile */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":{\"type\":\"json_object\"}}",
                true, &r, &e));
    CHECK_EQ_INT(r.format, ZN_FORMAT_JSON_OBJECT);
    CHECK(!r.schema);
    oai_req_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":{\"type\":\"json_schema\","
                "\"json_schema\":{\"name\":\"p\",\"strict\":true,\"schema\":{\"type\":\"object\"}}}}", true, &r, &e));
    CHECK_EQ_INT(r.format, ZN_FORMAT_JSON_SCHEMA);
    CHECK_EQ_STR(r.schema, "{\"type\":\"object\"}");
    CHECK_EQ_STR(r.schema_name, "p");
    oai_req_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":"
                "{\"name\":\"f\"}},{\"type\":\"function\",\"function\":{\"name\":\"g\"}}],"
                "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", true, &r, &e));
    CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_NAMED);
    CHECK_EQ_STR(r.tool_name, "g");
    CHECK_EQ_INT(r.format, ZN_FORMAT_TEXT);
    oai_req_free(&r);
    /* defaults */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", true, &r, &e));
    CHECK(!r.model && !r.stream && r.max_tokens == -1 && r.top_logprobs == -1 && r.cache_prompt && !r.seed_given);
    CHECK_EQ_INT(r.think, ZN_THINK_UNSET);
    CHECK_EQ_INT(r.think_budget, -1);
    oai_req_free(&r);
}

/* reasoning_effort and thinking_budget_tokens: thinking on or off, and the budget */
static void test_parse_reasoning(void) {
    static const struct { const char *field; int think; long budget; } ok[] = {
        {"\"reasoning_effort\":\"none\"", ZN_THINK_OFF, -1},
        {"\"reasoning_effort\":\"minimal\"", ZN_THINK_ON, ZN_SRV_THINK_BUDGET_MINIMAL},
        {"\"reasoning_effort\":\"low\"", ZN_THINK_ON, ZN_SRV_THINK_BUDGET_LOW},
        {"\"reasoning_effort\":\"medium\"", ZN_THINK_ON, ZN_SRV_THINK_BUDGET_MEDIUM},
        {"\"reasoning_effort\":\"high\"", ZN_THINK_ON, -1},
        {"\"reasoning_effort\":null", ZN_THINK_UNSET, -1},
        {"\"thinking_budget_tokens\":0", ZN_THINK_ON, 0},
        {"\"thinking_budget_tokens\":77", ZN_THINK_ON, 77},
        /* the explicit budget overrides the effort's */
        {"\"reasoning_effort\":\"high\",\"thinking_budget_tokens\":9", ZN_THINK_ON, 9},
        {"\"reasoning_effort\":\"low\",\"thinking_budget_tokens\":9", ZN_THINK_ON, 9},
        /* agreeing with the template kwargs */
        {"\"reasoning_effort\":\"low\",\"chat_template_kwargs\":{\"enable_thinking\":true}", ZN_THINK_ON,
         ZN_SRV_THINK_BUDGET_LOW},
        {"\"reasoning_effort\":\"none\",\"chat_template_kwargs\":{\"enable_thinking\":false}", ZN_THINK_OFF, -1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char b[512];
        snprintf(b, sizeof b, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],%s}", ok[i].field);
        zn_oai_req r;
        zn_oai_error e;
        bool parsed = parse(b, true, &r, &e);
        CHECK_MSG(parsed, "%s: %s", b, e.message);
        if (!parsed) continue;
        CHECK_MSG(r.think == ok[i].think && r.think_budget == ok[i].budget, "%s: think %d budget %ld", b, r.think,
                  r.think_budget);
        oai_req_free(&r);
    }
    const char *m = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    static const struct { const char *field, *param; } bad[] = {
        {"\"reasoning_effort\":\"extreme\"", "reasoning_effort"},
        {"\"reasoning_effort\":3", "reasoning_effort"},
        {"\"reasoning_effort\":\"\"", "reasoning_effort"},
        {"\"thinking_budget_tokens\":-1", "thinking_budget_tokens"},
        {"\"thinking_budget_tokens\":1.5", "thinking_budget_tokens"},
        {"\"thinking_budget_tokens\":\"9\"", "thinking_budget_tokens"},
        {"\"thinking_budget_tokens\":99999999999", "thinking_budget_tokens"},
        /* on one way, off the other: a 400, not a guess */
        {"\"reasoning_effort\":\"none\",\"thinking_budget_tokens\":5", "thinking_budget_tokens"},
        {"\"reasoning_effort\":\"none\",\"chat_template_kwargs\":{\"enable_thinking\":true}", "reasoning_effort"},
        {"\"reasoning_effort\":\"low\",\"chat_template_kwargs\":{\"enable_thinking\":false}", "reasoning_effort"},
        {"\"thinking_budget_tokens\":5,\"chat_template_kwargs\":{\"enable_thinking\":false}", "thinking_budget_tokens"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char b[512];
        snprintf(b, sizeof b, "{%s,%s}", m, bad[i].field);
        expect_400(b, true, bad[i].param);
    }
    /* completions have no thinking to budget */
    expect_400("{\"prompt\":\"x\",\"reasoning_effort\":\"low\"}", false, "reasoning_effort");
    expect_400("{\"prompt\":\"x\",\"thinking_budget_tokens\":5}", false, "thinking_budget_tokens");
}

static void test_parse_errors(void) {
    const char *m = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    char b[512];
    expect_400("not json", true, NULL);
    expect_400("[1,2]", true, NULL);
    expect_400("{}", true, "messages");
    expect_400("{\"messages\":[]}", true, "messages");
    expect_400("{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", true, "messages[0]");
    expect_400("{\"messages\":[{\"content\":\"x\"}]}", true, "messages[0]");
    expect_400("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}", true,
               "messages[0].content");
    expect_400("{\"messages\":[{\"role\":\"user\",\"content\":5}]}", true, "messages[0].content");
    static const struct { const char *field, *param; } bad[] = {
        {"\"n\":2", "n"}, {"\"max_tokens\":0", "max_tokens"}, {"\"max_tokens\":\"5\"", "max_tokens"},
        {"\"max_completion_tokens\":-1", "max_completion_tokens"}, {"\"temperature\":\"hot\"", "temperature"},
        {"\"temperature\":-1", "temperature"}, {"\"top_p\":2", "top_p"}, {"\"stream\":1", "stream"},
        {"\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop"}, {"\"stop\":[1]", "stop"}, {"\"stop\":\"\"", "stop"},
        {"\"top_logprobs\":3", "top_logprobs"}, {"\"logprobs\":true,\"top_logprobs\":21", "top_logprobs"},
        {"\"seed\":1.5", "seed"}, {"\"model\":7", "model"}, {"\"stream_options\":3", "stream_options"},
        {"\"chat_template_kwargs\":{\"enable_thinking\":\"yes\"}", "chat_template_kwargs"},
        {"\"top_k\":-1", "top_k"}, {"\"presence_penalty\":3", "presence_penalty"},
        {"\"tools\":[{\"type\":\"function\"}]", "tools[0]"}, {"\"tools\":{}", "tools"},
        {"\"tools\":[{\"type\":\"retrieval\",\"function\":{\"name\":\"f\"}}]", "tools[0]"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":3}}]", "tools[0]"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]",
         "tools[1]"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"sometimes\"", "tool_choice"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"function\","
         "\"function\":{\"name\":\"g\"}}", "tool_choice"},
        {"\"tool_choice\":\"required\"", "tool_choice"}, {"\"parallel_tool_calls\":1", "parallel_tool_calls"},
        {"\"response_format\":{\"type\":\"yaml\"}", "response_format"}, {"\"response_format\":\"json\"", "response_format"},
        {"\"response_format\":{\"type\":\"json_schema\"}", "response_format"},
        {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":[]}}", "response_format"},
        {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":5,\"schema\":{}}}", "response_format"},
        {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{},\"strict\":\"yes\"}}", "response_format"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"required\","
         "\"response_format\":{\"type\":\"json_object\"}", "response_format"},
        {"\"logit_bias\":{\"5\":-100}", "logit_bias"}, {"\"best_of\":3", "best_of"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(b, sizeof b, "{%s,%s}", m, bad[i].field);
        expect_400(b, true, bad[i].param);
    }
    /* too many messages */
    size_t cap = (size_t)(ZN_SRV_MAX_MESSAGES + 1) * 40 + 32, at = 0;
    char *big = malloc(cap);
    at += (size_t)snprintf(big + at, cap - at, "{\"messages\":[");
    for (int i = 0; i <= ZN_SRV_MAX_MESSAGES; i++)
        at += (size_t)snprintf(big + at, cap - at, "%s{\"role\":\"user\",\"content\":\"x\"}", i ? "," : "");
    snprintf(big + at, cap - at, "]}");
    expect_400(big, true, "messages");
    free(big);
}

static void test_parse_completions(void) {
    zn_oai_req r;
    zn_oai_error e;
    CHECK(parse("{\"prompt\":\"Once upon\",\"logprobs\":3,\"echo\":false}", false, &r, &e));
    CHECK_EQ_STR(r.prompt, "Once upon");
    CHECK_EQ_INT(r.top_logprobs, 3);
    oai_req_free(&r);
    CHECK(parse("{\"prompt\":[1,2,3]}", false, &r, &e));
    CHECK(r.n_prompt_ids == 3 && r.prompt_ids[2] == 3);
    oai_req_free(&r);
    CHECK(parse("{\"prompt\":[[4,5]]}", false, &r, &e));
    CHECK(r.n_prompt_ids == 2 && r.prompt_ids[0] == 4);
    oai_req_free(&r);
    CHECK(parse("{\"prompt\":[\"one\"]}", false, &r, &e));
    CHECK_EQ_STR(r.prompt, "one");
    oai_req_free(&r);
    expect_400("{\"prompt\":[\"a\",\"b\"]}", false, "prompt");
    expect_400("{\"prompt\":\"\"}", false, "prompt");
    expect_400("{\"prompt\":[-1]}", false, "prompt");
    expect_400("{}", false, "prompt");
    expect_400("{\"prompt\":\"x\",\"logprobs\":true}", false, "logprobs");
}

static void test_parse_tokenize(void) {
    char *c;
    size_t n;
    bool add;
    zn_oai_error e;
    CHECK(oai_parse_tokenize("{\"content\":\"hi\",\"add_special\":true}", 35, &c, &n, &add, &e));
    CHECK(n == 2 && add && !strcmp(c, "hi"));
    free(c);
    CHECK(!oai_parse_tokenize("{\"content\":1}", 13, &c, &n, &add, &e) && e.status == 400);
    int32_t *ids;
    CHECK(oai_parse_detokenize("{\"tokens\":[1,2]}", 16, &ids, &n, &e) && n == 2 && ids[1] == 2);
    free(ids);
    CHECK(!oai_parse_detokenize("{\"tokens\":[\"a\"]}", 16, &ids, &n, &e) && !strcmp(e.param, "tokens"));
}

/* ---- responses ---- */

static void test_error_body(void) {
    zn_oai_error e;
    oai_fail(&e, 400, "invalid_request_error", NULL, "stop", "bad \"stop\"");
    size_t n;
    char *s = oai_dump(oai_error_json(&e), &n);
    CHECK_EQ_STR(s, "{\"error\":{\"message\":\"bad \\\"stop\\\"\",\"type\":\"invalid_request_error\",\"param\":\"stop\","
                    "\"code\":null}}");
    free(s);
    s = oai_sse(json_pack("{s:i}", "a", 1), &n);
    CHECK_EQ_STR(s, "data: {\"a\":1}\n\n");
    CHECK_EQ_INT(n, 15);
    free(s);
}

static void test_chunks(void) {
    zn_oai_ctx c;
    oai_ctx_init(&c, true, "m", NULL);
    CHECK(!strncmp(c.id, "chatcmpl-", 9) && strlen(c.id) == 9 + 24);
    c.created = 7;
    size_t n;
    char *s = oai_dump(oai_chunk(&c, true, ZN_CH_CONTENT, "", 0, NULL, 0, 0, NULL), &n);
    char want[512];
    snprintf(want, sizeof want, "{\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\","
             "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
             "\"finish_reason\":null}]}", c.id);
    CHECK_EQ_STR(s, want);
    free(s);
    s = oai_dump(oai_chunk(&c, false, ZN_CH_REASONING, "hm", 2, NULL, 0, 0, NULL), &n);
    CHECK(strstr(s, "\"delta\":{\"reasoning_content\":\"hm\",\"reasoning\":\"hm\"}"));
    free(s);
    /* invalid UTF-8 is repaired, never dropped or sent raw */
    s = oai_dump(oai_chunk(&c, false, ZN_CH_CONTENT, "a\xff", 2, NULL, 0, 0, "stop"), &n);
    CHECK(s && strstr(s, "\"content\":\"a\xef\xbf\xbd\"") && strstr(s, "\"finish_reason\":\"stop\""));
    free(s);
    c.usage_null = true;
    s = oai_dump(oai_usage_chunk(&c, oai_usage(10, 5, 4, 3)), &n);
    CHECK(strstr(s, "\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15,"
                    "\"prompt_tokens_details\":{\"cached_tokens\":4},"
                    "\"completion_tokens_details\":{\"reasoning_tokens\":3}}"));
    free(s);
}

/* A reply as the scheduler records it: the recorded model output through
 * the tool-call parser into the job's channels (tool_sink's work). */
static bool job_sink(void *ctx, int ch, const char *p, size_t n) {
    zn_job *j = ctx;
    if (ch == ZN_CH_TOOL_NAME) j->n_calls++;
    return job_append(j, ch, p, n);
}

static void test_tool_responses(void) {
    zn_toolset ts;
    zn_err err;
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"
                        "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]";
    CHECK(toolset_parse(&ts, tools, strlen(tools), &err) == ZN_OK);
    zn_toolparse tp;
    CHECK(toolparse_init(&tp, ZN_TOOLFMT_HERMES, &ts, &err) == ZN_OK);
    zn_job *j = job_new();
    const char *reply = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                        "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n"
                        "</tool_call>";
    /* pushed in 3-byte pieces, as tokens come */
    for (size_t i = 0; i < strlen(reply); i += 3)
        CHECK(toolparse_push(&tp, reply + i, strlen(reply) - i < 3 ? strlen(reply) - i : 3, job_sink, j));
    CHECK(toolparse_flush(&tp, job_sink, j));
    CHECK_EQ_INT(j->n_calls, 2);
    j->finish = "tool_calls";
    zn_oai_ctx c;
    oai_ctx_init(&c, true, "m", NULL);
    size_t n;
    char *s = oai_dump(oai_final(&c, j), &n);
    json_error_t je;
    json_t *o = json_loads(s, 0, &je);
    json_t *ch = json_array_get(json_object_get(o, "choices"), 0), *msg = json_object_get(ch, "message");
    CHECK_EQ_STR(json_string_value(json_object_get(ch, "finish_reason")), "tool_calls");
    CHECK_EQ_STR(json_string_value(json_object_get(msg, "content")), "Let me check.");
    json_t *calls = json_object_get(msg, "tool_calls");
    CHECK_EQ_INT((int)json_array_size(calls), 2);
    static const char *const city[] = {"Paris", "Zürich"};
    for (size_t k = 0; k < 2; k++) {
        json_t *call = json_array_get(calls, k), *fn = json_object_get(call, "function");
        CHECK_EQ_STR(json_string_value(json_object_get(call, "type")), "function");
        CHECK(!strncmp(json_string_value(json_object_get(call, "id")), "call_", 5));
        CHECK_EQ_STR(json_string_value(json_object_get(fn, "name")), "get_weather");
        /* arguments are a JSON string holding the object */
        json_t *args = json_loads(json_string_value(json_object_get(fn, "arguments")), 0, &je);
        CHECK_MSG(json_is_object(args) && !strcmp(json_string_value(json_object_get(args, "city")), city[k]), "call %zu: %s",
                  k, json_string_value(json_object_get(fn, "arguments")));
        json_decref(args);
    }
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(calls, 0), "id")),
                 json_string_value(json_object_get(json_array_get(calls, 1), "id"))));
    json_decref(o);
    free(s);
    /* the stream's form: the first chunk of a call has its id, type and name, later ones argument pieces */
    s = oai_dump(oai_tool_chunk(&c, 1, true, "get_weather", 11, NULL, 0, 0), &n);
    o = json_loads(s, 0, &je);
    json_t *d = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "delta");
    json_t *tc = json_array_get(json_object_get(d, "tool_calls"), 0);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(tc, "index")), 1);
    CHECK(!strncmp(json_string_value(json_object_get(tc, "id")), "call_", 5));
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(tc, "function"), "name")), "get_weather");
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(tc, "function"), "arguments")), "");
    CHECK(!json_object_get(d, "content"));
    json_decref(o);
    free(s);
    s = oai_dump(oai_tool_chunk(&c, 1, false, "{\"ci", 4, NULL, 0, 0), &n);
    CHECK(strstr(s, "\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"ci\"}}]}"));
    free(s);
    job_unref(j);
    toolparse_free(&tp);
    toolset_free(&ts);
    /* no calls: content stays a string, no tool_calls */
    j = job_new();
    CHECK(job_append(j, ZN_CH_CONTENT, "hi", 2));
    s = oai_dump(oai_final(&c, j), &n);
    CHECK(strstr(s, "\"content\":\"hi\"") && !strstr(s, "tool_calls"));
    free(s);
    job_unref(j);
}

/* ---- log-probabilities ---- */

static void test_logprobs(void) {
    float l[6] = {1, 3, 2, 3, -1, 0};
    zn_tok_lp lp;
    sched_logprobs(l, 6, 2, 3, &lp);
    double lse = 0;
    for (int i = 0; i < 6; i++) lse += exp(l[i]);
    lse = log(lse);
    CHECK_NEAR(lp.lp, 2 - lse, 1e-5);
    CHECK_EQ_INT(lp.n_top, 3);
    CHECK_EQ_INT(lp.top_id[0], 1);  /* the first of equals first */
    CHECK_EQ_INT(lp.top_id[1], 3);
    CHECK_EQ_INT(lp.top_id[2], 2);
    CHECK_NEAR(lp.top_lp[0], 3 - lse, 1e-5);
    sched_logprobs(l, 6, 0, 0, &lp);
    CHECK_EQ_INT(lp.n_top, 0);
    sched_logprobs(l, 6, 0, 99, &lp);
    CHECK_EQ_INT(lp.n_top, 6);
    CHECK_EQ_INT(lp.top_id[5], 4);
}

/* ---- metrics ---- */

static void test_metrics(void) {
    zn_metrics m;
    metrics_init(&m);
    metrics_request(&m, "/v1/chat/completions", 200);
    metrics_request(&m, "/v1/chat/completions", 200);
    metrics_request(&m, "/health", 503);
    metrics_observe(&m, ZN_HIST_TTFT, 0.003);
    metrics_observe(&m, ZN_HIST_TTFT, 100);
    metrics_tokens(&m, 10, 4, 5);
    metrics_prefix(&m, 7, 3);   /* a hit, 3 of its 7 tokens from another slot */
    metrics_prefix(&m, 0, 0);   /* a miss */
    metrics_prefix(&m, 2, 0);
    zn_metrics_gauges g = {.running = 2, .waiting = 3, .kv_used = 256, .kv_total = 1024, .slots = 4, .steps = 9,
                           .batched_steps = 7, .replayed_steps = 5, .step_s = 12.5, .host_s = 0.25};
    size_t n;
    char *t = metrics_render(&m, &g, &n);
    CHECK(t && strlen(t) == n);
    CHECK(strstr(t, "zinc_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 2\n"));
    CHECK(strstr(t, "zinc_requests_total{route=\"/health\",status=\"503\"} 1\n"));
    CHECK(strstr(t, "zinc_prompt_tokens_total 10\n") && strstr(t, "zinc_prompt_tokens_cached_total 4\n"));
    CHECK(strstr(t, "zinc_prompt_tokens_computed_total 6\n") && strstr(t, "zinc_generation_tokens_total 5\n"));
    CHECK(strstr(t, "zinc_prefix_cache_hits_total 2\n") && strstr(t, "zinc_prefix_cache_misses_total 1\n"));
    CHECK(strstr(t, "zinc_prefix_cache_reused_tokens_total 9\n") && strstr(t, "zinc_prefix_cache_copied_tokens_total 3\n"));
    CHECK(strstr(t, "# TYPE zinc_prefix_cache_hits_total counter\n"));
    CHECK(strstr(t, "zinc_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"));
    CHECK(strstr(t, "zinc_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"));
    CHECK(strstr(t, "zinc_time_to_first_token_seconds_bucket{le=\"300\"} 2\n"));
    CHECK(strstr(t, "zinc_time_to_first_token_seconds_count 2\n"));
    CHECK(strstr(t, "\nvllm:num_requests_running 2\n") && strstr(t, "\nvllm:num_requests_waiting 3\n"));
    CHECK(strstr(t, "\nvllm:kv_cache_usage_perc 0.25\n"));
    CHECK(strstr(t, "# TYPE vllm:kv_cache_usage_perc gauge\n"));
    CHECK(strstr(t, "\nzinc_engine_steps_total 9\n") && strstr(t, "\nzinc_engine_batched_steps_total 7\n"));
    CHECK(strstr(t, "# TYPE zinc_engine_batched_steps_total counter\n"));
    CHECK(strstr(t, "\nzinc_engine_replayed_steps_total 5\n") && strstr(t, "# TYPE zinc_engine_replayed_steps_total counter\n"));
    CHECK(strstr(t, "\nzinc_engine_step_seconds_total 12.500000\n") && strstr(t, "\nzinc_engine_host_seconds_total 0.250000\n"));
    free(t);
    metrics_free(&m);
}

int main(void) {
    RUN(test_stop_every_split);
    RUN(test_stop_none);
    RUN(test_think_matches_whole_split);
    RUN(test_think_disabled);
    RUN(test_think_count);
    RUN(test_parse_reasoning);
    RUN(test_parse_chat);
    RUN(test_parse_errors);
    RUN(test_parse_completions);
    RUN(test_parse_tokenize);
    RUN(test_error_body);
    RUN(test_chunks);
    RUN(test_tool_responses);
    RUN(test_logprobs);
    RUN(test_metrics);
    return harness_report("server");
}
