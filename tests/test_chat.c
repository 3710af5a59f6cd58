/* Chat templates of real models (Qwen3, Qwen3.5, Llama 3.1/3.2, Mistral,
 * Gemma 2/4, ChatML, Phi-3, Hermes, DeepSeek-R1) rendered by chat_render*
 * and compared byte for byte with what Jinja2 in transformers' setup
 * produces (tests/templates/expected/, written by gen_expected.py from the
 * cases in cases.tsv). Plus the ChatML fallback and the <think> splitter. */
#include "chat.h"
#include "harness.h"

#define TDIR "tests/templates/"


static const struct tm *fixed_now(void) {
    static struct tm tm;  /* 2026-01-15 10:30:00, as gen_expected.py */
    memset(&tm, 0, sizeof tm);
    tm.tm_year = 126; tm.tm_mon = 0; tm.tm_mday = 15; tm.tm_hour = 10; tm.tm_min = 30; tm.tm_wday = 4; tm.tm_yday = 14;
    return &tm;
}

static const char *dash_null(const char *s) { return strcmp(s, "-") ? s : NULL; }

/* One line of cases.tsv: name, template, agp, thinking, bos, eos, messages, tools, extra. */
static void run_case(char *line, int *count) {
    char *col[9];
    int nc = 0;
    for (char *p = line; nc < 9; nc++) {
        col[nc] = p;
        char *tab = strchr(p, '\t');
        if (!tab) { nc++; break; }
        *tab = 0;
        p = tab + 1;
    }
    CHECK_EQ_INT(nc, 9);
    if (nc != 9) return;
    const char *name = col[0];
    char path[512];
    char *tmpl = NULL;
    if (strcmp(col[1], "-")) {
        snprintf(path, sizeof path, TDIR "%s", col[1]);
        tmpl = harness_read_file(path, NULL);
        CHECK_MSG(tmpl != NULL, "%s: cannot read %s", name, path);
        if (!tmpl) return;
    }
    zn_chat_kwargs kw = {0};
    kw.enable_thinking = !strcmp(col[3], "on") ? ZN_THINK_ON : !strcmp(col[3], "off") ? ZN_THINK_OFF : ZN_THINK_UNSET;
    kw.bos_token = dash_null(col[4]);
    kw.eos_token = dash_null(col[5]);
    kw.tools = dash_null(col[7]);
    kw.extra = dash_null(col[8]);
    kw.now = fixed_now();
    char *out = NULL;
    size_t out_len = 0;
    bool fallback = false;
    zn_err err = {0};
    zn_status s = chat_render_json(tmpl, col[6], strlen(col[6]), col[2][0] == '1', &kw, &out, &out_len, &fallback, &err);
    CHECK_MSG(fallback == (tmpl == NULL), "%s: fallback flag %d", name, fallback);
    snprintf(path, sizeof path, TDIR "expected/%s.txt", name);
    size_t want_len = 0;
    char *want = harness_read_file(path, &want_len);
    if (want) {
        CHECK_MSG(s == ZN_OK, "%s: %s", name, err.msg);
        if (s == ZN_OK) {
            CHECK_MSG(out_len == want_len && !memcmp(out, want, want_len), "%s: render differs from %s\n--- got ---\n%s\n--- want ---\n%s",
                      name, path, out, want);
        }
    } else {
        snprintf(path, sizeof path, TDIR "expected/%s.err", name);
        want = harness_read_file(path, NULL);
        CHECK_MSG(want != NULL, "%s: no expected output", name);
        CHECK_MSG(s == ZN_ERR_ARG && want && strstr(err.msg, want), "%s: want error [%s], got status %d [%s]", name,
                  want ? want : "", s, s ? err.msg : out);
    }
    (*count)++;
    free(want);
    free(out);
    free(tmpl);
}

static void test_real_templates(void) {
    size_t n = 0;
    char *tsv = harness_read_file(TDIR "cases.tsv", &n);
    CHECK(tsv != NULL);
    if (!tsv) return;
    int count = 0;
    for (char *line = tsv, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) break;
        *nl = 0;
        run_case(line, &count);
    }
    CHECK_MSG(count >= 40, "only %d cases", count);
    free(tsv);
}

/* The struct API builds the same messages as the JSON one. */
static void test_struct_api(void) {
    static const zn_chat_msg msgs[] = {
        {.role = "system", .content = "You can use tools."},
        {.role = "user", .content = "What's the weather in Paris and in Z\xc3\xbcrich?"},
        {.role = "assistant", .content = "",
         .tool_calls = "[{\"id\": \"call_0001\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                       "\"arguments\": {\"city\": \"Paris\", \"days\": 2}}}, {\"id\": \"call_0002\", \"type\": \"function\", "
                       "\"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Z\xc3\xbcrich\\\", "
                       "\\\"unit\\\": \\\"celsius\\\"}\"}}]"},
        {.role = "tool", .tool_call_id = "call_0001", .name = "get_weather", .content = "{\"temp\": 18, \"sky\": \"cloudy\"}"},
        {.role = "tool", .tool_call_id = "call_0002", .name = "get_weather", .content = "{\"temp\": 12}"},
        {.role = "assistant", .content = "Paris: 18 \xc2\xb0" "C and cloudy; Z\xc3\xbcrich: 12 \xc2\xb0" "C."},
        {.role = "user", .content = "Thanks! Now search for umbrellas."},
    };
    size_t tn;
    char *tmpl = harness_read_file(TDIR "qwen3.jinja", NULL), *want = harness_read_file(TDIR "expected/qwen3_tools.txt", &tn);
    char *tsv = harness_read_file(TDIR "cases.tsv", NULL);
    CHECK(tmpl && want && tsv);
    if (!tmpl || !want || !tsv) { free(tmpl); free(want); free(tsv); return; }
    /* the tools column of the qwen3_tools case */
    char *line = strstr(tsv, "qwen3_tools\t");
    char *tools = NULL;
    if (line) {
        char *p = line;
        for (int i = 0; i < 7 && p; i++) p = strchr(p, '\t') ? strchr(p, '\t') + 1 : NULL;
        char *end = p ? strchr(p, '\t') : NULL;
        if (end) { *end = 0; tools = p; }
    }
    CHECK(tools != NULL);
    zn_chat_kwargs kw = {.tools = tools, .bos_token = "<s>", .eos_token = "</s>", .now = fixed_now()};
    char *out = NULL;
    size_t n = 0;
    zn_err err = {0};
    bool fb = true;
    CHECK_EQ_INT(chat_render(tmpl, msgs, sizeof msgs / sizeof msgs[0], true, &kw, &out, &n, &fb, &err), ZN_OK);
    CHECK(!fb);
    CHECK_MSG(out && n == tn && !memcmp(out, want, tn), "struct API render differs:\n%s", out ? out : err.msg);
    free(out);
    free(tmpl);
    free(want);
    free(tsv);
}

static void test_fallback(void) {
    static const zn_chat_msg msgs[] = {
        {.role = "system", .content = "S"},
        {.role = "user", .content_parts = "[{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"image\"}, {\"type\": \"text\", \"text\": \"b\"}]"},
        {.role = "assistant", .content = NULL},
    };
    char *out = NULL;
    bool fb = false;
    zn_err err = {0};
    CHECK_EQ_INT(chat_render(NULL, msgs, 3, true, NULL, &out, NULL, &fb, &err), ZN_OK);
    CHECK(fb);
    CHECK_EQ_STR(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"
                      "<|im_start|>assistant\n");
    free(out);
    fb = false;
    CHECK_EQ_INT(chat_render("", msgs, 1, false, NULL, &out, NULL, &fb, &err), ZN_OK);
    CHECK(fb);
    CHECK_EQ_STR(out, "<|im_start|>system\nS<|im_end|>\n");
    free(out);
}

static void test_bad_input(void) {
    char *out = (char *)1;
    zn_err err = {0};
    CHECK_EQ_INT(chat_render_json(NULL, "[{\"role\": ", 10, true, NULL, &out, NULL, NULL, &err), ZN_ERR_FORMAT);
    CHECK(out == NULL && strstr(err.msg, "messages"));
    CHECK_EQ_INT(chat_render_json(NULL, "{}", 2, true, NULL, &out, NULL, NULL, &err), ZN_ERR_ARG);
    CHECK_EQ_INT(chat_render_json(NULL, "[1]", 3, true, NULL, &out, NULL, NULL, &err), ZN_ERR_ARG);
    zn_chat_kwargs kw = {.tools = "[{"};
    CHECK_EQ_INT(chat_render_json(NULL, "[]", 2, true, &kw, &out, NULL, NULL, &err), ZN_ERR_FORMAT);
    CHECK(strstr(err.msg, "tools") != NULL);
    CHECK_EQ_INT(chat_render_json("{% if %}", "[]", 2, true, NULL, &out, NULL, NULL, &err), ZN_ERR_FORMAT);
    CHECK(strstr(err.msg, "template:1:") != NULL);
    static const zn_chat_msg norole[] = {{.content = "x"}};
    CHECK_EQ_INT(chat_render(NULL, norole, 1, true, NULL, &out, NULL, NULL, &err), ZN_ERR_ARG);
}

static void check_split(const char *text, bool in_think, const char *want_r, const char *want_a) {
    zn_span r, a;
    chat_split_thinking(text, strlen(text), in_think, &r, &a);
    CHECK_MSG(r.n == strlen(want_r) && !memcmp(r.p, want_r, r.n), "[%s]: reasoning [%.*s], want [%s]", text, (int)r.n, r.p,
              want_r);
    CHECK_MSG(a.n == strlen(want_a) && !memcmp(a.p, want_a, a.n), "[%s]: answer [%.*s], want [%s]", text, (int)a.n, a.p,
              want_a);
}

static void test_thinking(void) {
    check_split("<think>\nstep 1\nstep 2\n</think>\n\nThe answer.", false, "step 1\nstep 2", "The answer.");
    check_split("  <think>r</think>a", false, "r", "a");
    check_split("reasoning...\n</think>\n\nanswer", true, "reasoning...", "answer");
    check_split("just reasoning, cut off", true, "just reasoning, cut off", "");
    check_split("<think>unfinished", false, "unfinished", "");
    check_split("plain answer with </b> tags", false, "", "plain answer with </b> tags");
    check_split("no tags at all", false, "", "no tags at all");
    check_split("<think>\n\n</think>\n\nDirect.", false, "", "Direct.");
    check_split("", true, "", "");
    check_split("Answer mentions <think> later.", false, "", "Answer mentions <think> later.");
    CHECK(chat_prompt_opens_thinking("<|im_start|>assistant\n<think>\n", 30));
    CHECK(!chat_prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n", 41));
    CHECK(!chat_prompt_opens_thinking("<|im_start|>assistant\n", 22));
    /* the Qwen3.5 generation prompt opens the block unless thinking is off */
    size_t n = 0;
    char *on = harness_read_file(TDIR "expected/qwen3.5_simple.txt", &n);
    CHECK(on && chat_prompt_opens_thinking(on, n));
    free(on);
    char *off = harness_read_file(TDIR "expected/qwen3.5_no_think.txt", &n);
    CHECK(off && !chat_prompt_opens_thinking(off, n));
    free(off);
}

int main(void) {
    RUN(test_real_templates);
    RUN(test_struct_api);
    RUN(test_fallback);
    RUN(test_bad_input);
    RUN(test_thinking);
    return harness_report("chat");
}
