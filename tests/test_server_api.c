/* The Responses and Anthropic Messages APIs without a server: requests
 * translated into chat requests (oai_responses.c, anthropic.c), errors naming
 * the API's own fields, and the response objects and stream events written
 * from a job's pieces (event order, sequence numbers, the stream agreeing
 * with the whole form). */
#include <jansson.h>

#include "anthropic.h"
#include "chat.h"
#include "evbuf.h"
#include "harness.h"
#include "oai.h"
#include "oai_responses.h"
#include "scheduler.h"
#include "textstream.h"

/* ---- helpers ---- */

typedef struct events {
    int n;
    char name[64][64];
    json_t *data[64];
} events;

/* Splits "event: X\ndata: JSON\n\n" events; checks each frame's shape. */
static void events_parse(const zn_evbuf *b, events *ev) {
    ev->n = 0;
    const char *p = b->p, *end = b->p + b->n;
    while (p < end && ev->n < 64) {
        const char *sep = strstr(p, "\n\n");
        CHECK(sep != NULL);
        if (!sep) return;
        CHECK(!strncmp(p, "event: ", 7));
        const char *nl = memchr(p, '\n', (size_t)(sep - p));
        CHECK(nl && !strncmp(nl, "\ndata: ", 7));
        if (!nl) return;
        snprintf(ev->name[ev->n], sizeof ev->name[0], "%.*s", (int)(nl - p - 7), p + 7);
        json_error_t je;
        ev->data[ev->n] = json_loadb(nl + 7, (size_t)(sep - nl - 7), 0, &je);
        CHECK_MSG(json_is_object(ev->data[ev->n]), "event %d: %s", ev->n, je.text);
        /* the data's type is the event's name */
        CHECK_EQ_STR(json_string_value(json_object_get(ev->data[ev->n], "type")), ev->name[ev->n]);
        ev->n++;
        p = sep + 2;
    }
    CHECK(p == end);
}

static void events_free(events *ev) {
    for (int i = 0; i < ev->n; i++) json_decref(ev->data[i]);
    ev->n = 0;
}

static void put(zn_job *j, int ch, const char *s) {
    if (ch == ZN_CH_TOOL_NAME) j->n_calls++;
    CHECK(job_append(j, ch, s, strlen(s)));
}

/* reasoning, text, then a call whose arguments come in three pieces */
static zn_job *sample_job(void) {
    zn_job *j = job_new();
    put(j, ZN_CH_REASONING, "The user wants ");
    put(j, ZN_CH_REASONING, "weather.");
    put(j, ZN_CH_CONTENT, "Let me ");
    put(j, ZN_CH_CONTENT, "check.");
    put(j, ZN_CH_TOOL_NAME, "get_weather");
    put(j, ZN_CH_TOOL_ARGS, "{\"city\": ");
    put(j, ZN_CH_TOOL_ARGS, "\"Paris\"");
    put(j, ZN_CH_TOOL_ARGS, "}");
    j->n_prompt = 11;
    j->n_gen = 20;
    j->n_cached = 3;
    j->finish = "tool_calls";
    j->state = ZN_JOB_DONE;
    return j;
}

static json_t *parse_json(const char *s) { return json_loads(s, 0, NULL); }

/* ---- Responses: requests ---- */

static void test_resp_parse(void) {
    zn_oai_req r;
    zn_oai_error e;
    char *echo;
    const char *b = "{\"model\":\"m\",\"input\":\"hello\",\"max_output_tokens\":7,\"temperature\":0.5,\"top_p\":0.9,\"stream\":true}";
    CHECK(resp_parse(b, strlen(b), &r, &echo, &e));
    CHECK(r.chat && r.stream);
    CHECK_EQ_INT(r.max_tokens, 7);
    CHECK_NEAR(r.sp.temperature, 0.5, 1e-6);
    CHECK_NEAR(r.sp.top_p, 0.9, 1e-6);
    CHECK_EQ_STR(r.model, "m");
    CHECK_EQ_STR(r.messages, "[{\"role\":\"user\",\"content\":\"hello\"}]");
    json_t *ej = parse_json(echo);
    CHECK_EQ_INT(json_integer_value(json_object_get(ej, "max_output_tokens")), 7);
    CHECK(json_is_null(json_object_get(ej, "instructions")));
    json_decref(ej);
    free(echo);
    oai_req_free(&r);

    /* items: instructions first, developer -> system, parts joined, a call round trip */
    b = "{\"instructions\":\"Be brief.\",\"input\":[{\"role\":\"developer\",\"content\":\"dev\"},"
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},{\"type\":\"input_text\",\"text\":\"b\"}]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_1\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"no\",\"annotations\":[]},{\"type\":\"refusal\",\"refusal\":\"sorry\"}]},"
        "{\"type\":\"reasoning\",\"summary\":[]},"
        "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
        "{\"type\":\"function_call\",\"call_id\":\"call_2\",\"name\":\"get_weather\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"sunny\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_2\",\"output\":[{\"type\":\"input_text\",\"text\":\"rain\"}]}],"
        "\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"description\":\"Weather\",\"parameters\":{\"type\":\"object\"}}],"
        "\"tool_choice\":\"auto\",\"parallel_tool_calls\":false,\"text\":{\"format\":{\"type\":\"text\"}},\"store\":false}";
    CHECK(resp_parse(b, strlen(b), &r, &echo, &e));
    CHECK_MSG(r.messages, "%s", e.message);
    json_t *m = parse_json(r.messages);
    CHECK_EQ_INT((int)json_array_size(m), 6);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 0), "content")), "Be brief.");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 1), "role")), "system");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 2), "content")), "a\nb");
    /* the calls join the assistant's text turn before them */
    json_t *asst = json_array_get(m, 3), *calls = json_object_get(asst, "tool_calls");
    CHECK_EQ_STR(json_string_value(json_object_get(asst, "content")), "no\nsorry");
    CHECK_EQ_STR(json_string_value(json_object_get(asst, "role")), "assistant");
    CHECK_EQ_INT((int)json_array_size(calls), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(calls, 0), "id")), "call_1");
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(json_array_get(calls, 0), "function"), "arguments")),
                 "{\"city\":\"Paris\"}");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 4), "role")), "tool");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 4), "tool_call_id")), "call_1");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 5), "content")), "rain");
    json_decref(m);
    /* tools in the chat shape */
    json_t *t = parse_json(r.tools);
    json_t *fn = json_object_get(json_array_get(t, 0), "function");
    CHECK_EQ_STR(json_string_value(json_object_get(fn, "name")), "get_weather");
    CHECK_EQ_STR(json_string_value(json_object_get(fn, "description")), "Weather");
    CHECK(json_is_object(json_object_get(fn, "parameters")));
    json_decref(t);
    CHECK_EQ_INT(r.n_tools, 1);
    CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_AUTO);
    CHECK(!r.parallel_tool_calls);
    ej = parse_json(echo);
    CHECK_EQ_STR(json_string_value(json_object_get(ej, "instructions")), "Be brief.");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(ej, "tools"), 0), "name")), "get_weather");
    CHECK(json_is_null(json_object_get(json_object_get(ej, "reasoning"), "effort")));
    json_decref(ej);
    free(echo);
    oai_req_free(&r);

    /* reasoning.effort is chat's reasoning_effort, and the response repeats it */
    static const struct { const char *effort; int think; long budget; } eff[] = {
        {"\"none\"", ZN_THINK_OFF, -1}, {"\"minimal\"", ZN_THINK_ON, ZN_SRV_THINK_BUDGET_MINIMAL},
        {"\"low\"", ZN_THINK_ON, ZN_SRV_THINK_BUDGET_LOW}, {"\"medium\"", ZN_THINK_ON, ZN_SRV_THINK_BUDGET_MEDIUM},
        {"\"high\"", ZN_THINK_ON, -1}, {"null", ZN_THINK_UNSET, -1},
    };
    for (size_t i = 0; i < sizeof eff / sizeof *eff; i++) {
        char rb[256];
        snprintf(rb, sizeof rb, "{\"input\":\"hi\",\"reasoning\":{\"effort\":%s,\"summary\":\"auto\"}}", eff[i].effort);
        bool ok = resp_parse(rb, strlen(rb), &r, &echo, &e);
        CHECK_MSG(ok, "%s: %s", rb, e.message);
        if (!ok) continue;
        CHECK_MSG(r.think == eff[i].think && r.think_budget == eff[i].budget, "%s: think %d budget %ld", rb, r.think,
                  r.think_budget);
        ej = parse_json(echo);
        json_t *got = json_object_get(json_object_get(ej, "reasoning"), "effort");
        char *gs = json_dumps(got, JSON_ENCODE_ANY);
        CHECK_MSG(gs && !strcmp(gs, eff[i].effort), "%s: echoed effort %s", rb, gs ? gs : "(none)");
        free(gs);
        json_decref(ej);
        free(echo);
        oai_req_free(&r);
    }
}

static void test_resp_parse_errors(void) {
    static const struct { const char *body, *param; } cases[] = {
        {"{}", "input"},
        {"{\"input\":3}", "input"},
        {"{\"input\":\"\"}", "input"},
        {"{\"input\":[]}", "input"},
        {"{\"input\":[3]}", "input[0]"},
        {"{\"input\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "input[0]"},
        {"{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"x\"}]}]}", "input[0].content"},
        {"{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\"}]}]}", "input[0].content"},
        {"{\"input\":[{\"role\":\"user\",\"content\":5}]}", "input[0].content"},
        {"{\"input\":[{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\"}]}", "input[0]"},
        {"{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":{}}]}", "input[0]"},
        {"{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":7}]}", "input[0].output"},
        {"{\"input\":[{\"type\":\"item_reference\",\"id\":\"x\"}]}", "input[0]"},
        {"{\"input\":[{\"type\":\"web_search_call\"}]}", "input[0]"},
        {"{\"input\":\"x\",\"instructions\":5}", "instructions"},
        {"{\"input\":\"x\",\"max_output_tokens\":0}", "max_output_tokens"},
        {"{\"input\":\"x\",\"max_output_tokens\":\"many\"}", "max_output_tokens"},
        {"{\"input\":\"x\",\"temperature\":\"hot\"}", "temperature"},
        {"{\"input\":\"x\",\"top_p\":2}", "top_p"},
        {"{\"input\":\"x\",\"stream\":\"yes\"}", "stream"},
        {"{\"input\":\"x\",\"model\":5}", "model"},
        {"{\"input\":\"x\",\"previous_response_id\":\"resp_1\"}", "previous_response_id"},
        {"{\"input\":\"x\",\"conversation\":\"c\"}", "conversation"},
        {"{\"input\":\"x\",\"background\":true}", "background"},
        {"{\"input\":\"x\",\"top_logprobs\":3}", "top_logprobs"},
        {"{\"input\":\"x\",\"tools\":{}}", "tools"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}]}", "tools[0]"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\"}]}", "tools[0]"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":3}]}", "tools[0]"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"},{\"type\":\"function\",\"name\":\"f\"}]}", "tools[1]"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":\"sometimes\"}", "tool_choice"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":{\"type\":\"web_search\"}}", "tool_choice"},
        {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":{\"type\":\"function\",\"name\":\"g\"}}", "tool_choice"},
        {"{\"input\":\"x\",\"text\":3}", "text"},
        {"{\"input\":\"x\",\"reasoning\":\"high\"}", "reasoning"},
        {"{\"input\":\"x\",\"reasoning\":{\"effort\":\"max\"}}", "reasoning.effort"},
        {"{\"input\":\"x\",\"reasoning\":{\"effort\":2}}", "reasoning.effort"},
        {"{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"xml\"}}}", "text.format"},
        {"{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"schema\":{}}}}", "text.format"},
        {"{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"n\"}}}", "text.format"},
        {"[1]", ""},
        {"{\"input\":", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        zn_oai_req r;
        zn_oai_error e;
        char *echo = NULL;
        bool ok = resp_parse(cases[i].body, strlen(cases[i].body), &r, &echo, &e);
        CHECK_MSG(!ok, "accepted: %s", cases[i].body);
        if (ok) {
            free(echo);
            oai_req_free(&r);
            continue;
        }
        CHECK_EQ_INT(e.status, 400);
        CHECK_MSG(!strcmp(e.param, cases[i].param), "%s: param '%s' (want '%s'): %s", cases[i].body, e.param,
                  cases[i].param, e.message);
        CHECK(e.message[0] && !echo);
    }
}

/* text.format is chat's response_format: whatever chat does with one, the
 * Responses API does with the other (a 400 naming text.format, or the same
 * constrained request once grammars are in). */
static void test_resp_format_like_chat(void) {
    static const char *const fmt[][2] = {
        {"{\"type\":\"json_object\"}", "{\"type\":\"json_object\"}"},
        {"{\"type\":\"json_schema\",\"name\":\"p\",\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}},\"strict\":true}",
         "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\",\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}},\"strict\":true}}"},
        {"{\"type\":\"text\"}", "{\"type\":\"text\"}"},
    };
    for (int i = 0; i < 3; i++) {
        char rb[512], cb[512];
        snprintf(rb, sizeof rb, "{\"input\":\"x\",\"text\":{\"format\":%s}}", fmt[i][0]);
        snprintf(cb, sizeof cb, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":%s}", fmt[i][1]);
        zn_oai_req r, c;
        zn_oai_error e, ce;
        char *echo = NULL;
        bool rok = resp_parse(rb, strlen(rb), &r, &echo, &e), cok = oai_parse(cb, strlen(cb), true, &c, &ce);
        CHECK_MSG(rok == cok, "format %d: responses %d, chat %d", i, rok, cok);
        if (!rok && !cok) {
            CHECK_EQ_INT(e.status, ce.status);
            CHECK_EQ_STR(e.param, "text.format");
            CHECK_EQ_STR(ce.param, "response_format");
            CHECK(strstr(e.message, "text.format") && !strstr(e.message, "response_format"));
        }
        if (rok) {
            free(echo);
            oai_req_free(&r);
        }
        if (cok) oai_req_free(&c);
    }
}

/* ---- Responses: the response and its stream ---- */

static void test_resp_stream(void) {
    zn_job *j = sample_job();
    zn_resp_ctx c;
    resp_ctx_init(&c, "m", "{\"instructions\":null,\"tools\":[]}");
    CHECK(!strncmp(c.id, "resp_", 5));
    zn_resp_stream st;
    resp_stream_init(&st, &c);
    zn_evbuf b = {0};
    CHECK(resp_stream_begin(&st, &b));
    for (int i = 0; i < j->n_pieces; i++) CHECK(resp_stream_piece(&st, j, i, &b));
    CHECK(resp_stream_end(&st, j, &b));
    resp_stream_free(&st);
    events ev;
    events_parse(&b, &ev);
    static const char *const want[] = {
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
        "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
        "response.completed"};
    int nw = (int)(sizeof want / sizeof *want);
    CHECK_EQ_INT(ev.n, nw);
    for (int i = 0; i < ev.n && i < nw; i++) {
        CHECK_MSG(!strcmp(ev.name[i], want[i]), "event %d: %s, want %s", i, ev.name[i], want[i]);
        CHECK_EQ_INT(json_integer_value(json_object_get(ev.data[i], "sequence_number")), i);
    }
    if (ev.n == nw) {
        /* the text deltas add up to the done text */
        char text[64] = "";
        for (int i = 11; i <= 12; i++) strcat(text, json_string_value(json_object_get(ev.data[i], "delta")));
        CHECK_EQ_STR(text, "Let me check.");
        CHECK_EQ_STR(json_string_value(json_object_get(ev.data[13], "text")), "Let me check.");
        CHECK_EQ_INT(json_integer_value(json_object_get(ev.data[11], "output_index")), 1);
        char args[64] = "";
        for (int i = 17; i <= 19; i++) strcat(args, json_string_value(json_object_get(ev.data[i], "delta")));
        CHECK_EQ_STR(args, "{\"city\": \"Paris\"}");
        CHECK_EQ_STR(json_string_value(json_object_get(ev.data[20], "arguments")), args);
        CHECK_EQ_STR(json_string_value(json_object_get(ev.data[20], "name")), "get_weather");
        json_t *added = json_object_get(ev.data[16], "item");
        CHECK_EQ_STR(json_string_value(json_object_get(added, "type")), "function_call");
        CHECK_EQ_STR(json_string_value(json_object_get(added, "status")), "in_progress");
        CHECK_EQ_STR(json_string_value(json_object_get(added, "arguments")), "");
        json_t *created = json_object_get(ev.data[0], "response");
        CHECK_EQ_STR(json_string_value(json_object_get(created, "status")), "in_progress");
        CHECK_EQ_STR(json_string_value(json_object_get(created, "id")), c.id);
        CHECK(json_is_null(json_object_get(created, "usage")));
        /* the completed response is the whole form */
        json_t *done = json_object_get(ev.data[nw - 1], "response");
        json_t *whole = resp_final(&c, j);
        CHECK(json_equal(json_object_get(done, "output"), json_object_get(whole, "output")));
        CHECK_EQ_STR(json_string_value(json_object_get(whole, "status")), "completed");
        CHECK_EQ_STR(json_string_value(json_object_get(whole, "object")), "response");
        json_t *out = json_object_get(whole, "output");
        CHECK_EQ_INT((int)json_array_size(out), 3);
        json_t *msg = json_array_get(out, 1), *call = json_array_get(out, 2);
        CHECK_EQ_STR(json_string_value(json_object_get(msg, "type")), "message");
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(msg, "content"), 0), "type")), "output_text");
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(msg, "content"), 0), "text")), "Let me check.");
        CHECK_EQ_STR(json_string_value(json_object_get(call, "arguments")), "{\"city\": \"Paris\"}");
        CHECK(!strncmp(json_string_value(json_object_get(call, "call_id")), "call_", 5));
        CHECK(strcmp(json_string_value(json_object_get(call, "call_id")), json_string_value(json_object_get(call, "id"))));
        /* the output items' ids are the stream's */
        CHECK_EQ_STR(json_string_value(json_object_get(call, "id")), json_string_value(json_object_get(ev.data[17], "item_id")));
        json_t *u = json_object_get(whole, "usage");
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "input_tokens")), 11);
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "output_tokens")), 20);
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "total_tokens")), 31);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(u, "input_tokens_details"), "cached_tokens")), 3);
        CHECK(json_is_null(json_object_get(whole, "instructions")) && json_is_array(json_object_get(whole, "tools")));
        json_decref(whole);
    }
    events_free(&ev);
    evbuf_free(&b);
    job_unref(j);

    /* cut by max_output_tokens: incomplete; failed: an error event, then response.failed */
    j = job_new();
    put(j, ZN_CH_CONTENT, "Once");
    j->finish = "length";
    j->state = ZN_JOB_DONE;
    resp_stream_init(&st, &c);
    CHECK(resp_stream_begin(&st, &b) && resp_stream_piece(&st, j, 0, &b) && resp_stream_end(&st, j, &b));
    resp_stream_free(&st);
    events_parse(&b, &ev);
    CHECK(ev.n == 9 && !strcmp(ev.name[8], "response.incomplete"));
    if (ev.n == 9) {
        json_t *resp = json_object_get(ev.data[8], "response");
        CHECK_EQ_STR(json_string_value(json_object_get(resp, "status")), "incomplete");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(resp, "incomplete_details"), "reason")), "max_output_tokens");
    }
    events_free(&ev);
    evbuf_free(&b);
    j->failed = true;
    zn_errf(&j->err, ZN_ERR_IO, "the server is stopping");
    resp_stream_init(&st, &c);
    CHECK(resp_stream_begin(&st, &b) && resp_stream_end(&st, j, &b));
    resp_stream_free(&st);
    events_parse(&b, &ev);
    CHECK(ev.n == 4 && !strcmp(ev.name[2], "error") && !strcmp(ev.name[3], "response.failed"));
    if (ev.n == 4) CHECK_EQ_STR(json_string_value(json_object_get(ev.data[2], "message")), "the server is stopping");
    events_free(&ev);
    evbuf_free(&b);
    json_t *f = resp_final(&c, j);
    CHECK_EQ_STR(json_string_value(json_object_get(f, "status")), "failed");
    json_decref(f);
    job_unref(j);
    resp_ctx_free(&c);
}

/* ---- Anthropic ---- */

static void test_anth_parse(void) {
    zn_oai_req r;
    zn_oai_error e;
    const char *b = "{\"model\":\"m\",\"max_tokens\":9,\"system\":[{\"type\":\"text\",\"text\":\"S1\"},{\"type\":\"text\",\"text\":\"S2\"}],"
                    "\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},"
                    "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"x\"},"
                    "{\"type\":\"text\",\"text\":\"Checking.\"},"
                    "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":[{\"type\":\"text\",\"text\":\"sunny\"}]},"
                    "{\"type\":\"text\",\"text\":\"thanks\"}]},"
                    "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"get_weather\",\"input\":{}}]},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_2\",\"content\":\"down\",\"is_error\":true}]}],"
                    "\"tools\":[{\"name\":\"get_weather\",\"description\":\"W\",\"input_schema\":{\"type\":\"object\"}}],"
                    "\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true},"
                    "\"stop_sequences\":[\"END\"],\"temperature\":0.2,\"top_p\":0.5,\"top_k\":7,\"stream\":true,"
                    "\"thinking\":{\"type\":\"disabled\"},\"metadata\":{\"user_id\":\"u\"}}";
    CHECK(anth_parse(b, strlen(b), false, &r, &e));
    CHECK_MSG(r.messages, "%s", e.message);
    CHECK_EQ_INT(r.max_tokens, 9);
    CHECK_EQ_INT(r.sp.top_k, 7);
    CHECK_NEAR(r.sp.temperature, 0.2, 1e-6);
    CHECK(r.stream && !r.parallel_tool_calls);
    CHECK_EQ_INT(r.n_stop, 1);
    CHECK_EQ_STR(r.stop[0], "END");
    CHECK_EQ_INT(r.think, ZN_THINK_OFF);
    CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_AUTO);
    json_t *m = parse_json(r.messages);
    static const char *const roles[] = {"system", "user", "assistant", "tool", "user", "assistant", "tool"};
    CHECK_EQ_INT((int)json_array_size(m), 7);
    for (size_t i = 0; i < 7 && i < json_array_size(m); i++)
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, i), "role")), roles[i]);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 0), "content")), "S1\nS2");
    json_t *a = json_array_get(m, 2);
    CHECK_EQ_STR(json_string_value(json_object_get(a, "content")), "Checking.");
    CHECK_EQ_STR(json_string_value(json_object_get(a, "reasoning_content")), "hm");
    json_t *fn = json_object_get(json_array_get(json_object_get(a, "tool_calls"), 0), "function");
    CHECK_EQ_STR(json_string_value(json_object_get(fn, "arguments")), "{\"city\":\"Paris\"}");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 3), "tool_call_id")), "toolu_1");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 3), "content")), "sunny");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 4), "content")), "thanks");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 5), "content")), "");
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 6), "content")), "Error: down");
    json_decref(m);
    json_t *t = parse_json(r.tools);
    fn = json_object_get(json_array_get(t, 0), "function");
    CHECK_EQ_STR(json_string_value(json_object_get(fn, "name")), "get_weather");
    CHECK(json_is_object(json_object_get(fn, "parameters")));
    json_decref(t);
    oai_req_free(&r);
    /* count_tokens needs no max_tokens */
    b = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    CHECK(anth_parse(b, strlen(b), true, &r, &e));
    oai_req_free(&r);
    CHECK(!anth_parse(b, strlen(b), false, &r, &e));
    CHECK_EQ_STR(e.param, "max_tokens");
    /* tool_choice none: the tools stay out of the prompt */
    b = "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}],\"tool_choice\":{\"type\":\"none\"}}";
    CHECK(anth_parse(b, strlen(b), false, &r, &e));
    CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_NONE);
    CHECK_EQ_INT(r.think_budget, -1);
    oai_req_free(&r);
    /* thinking.budget_tokens is the reasoning's budget; without it, thinking has none */
    b = "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":5}}";
    CHECK(anth_parse(b, strlen(b), false, &r, &e));
    CHECK_EQ_INT(r.think, ZN_THINK_ON);
    CHECK_EQ_INT(r.think_budget, 5);
    oai_req_free(&r);
    b = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048}}";
    CHECK(anth_parse(b, strlen(b), true, &r, &e));  /* count_tokens: no max_tokens to be below */
    CHECK_EQ_INT(r.think_budget, 2048);
    oai_req_free(&r);
    b = "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"thinking\":{\"type\":\"enabled\"}}";
    CHECK(anth_parse(b, strlen(b), false, &r, &e));
    CHECK(r.think == ZN_THINK_ON && r.think_budget == -1);
    oai_req_free(&r);
    b = "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"thinking\":{\"type\":\"disabled\",\"budget_tokens\":5}}";
    CHECK(anth_parse(b, strlen(b), false, &r, &e));
    CHECK(r.think == ZN_THINK_OFF && r.think_budget == -1);
    oai_req_free(&r);
}

static void test_anth_parse_errors(void) {
    static const struct { const char *body, *param; } cases[] = {
        {"{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "model"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":\"5\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":999999999,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":5}", "messages"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[]}", "messages"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}", "messages.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}", "messages.0.content.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}", "messages.0.content.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"f\",\"input\":{}}]}]}", "messages.0.content.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\"}]}]}", "messages.0.content.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"f\",\"input\":[]}]}]}", "messages.0.content.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"system\":5}", "system"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"system\":[{\"type\":\"image\"}]}", "system"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":1.5}", "temperature"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":\"a\"}", "top_p"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":-1}", "top_k"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}", "stream"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop_sequences\":\"END\"}", "stop_sequences"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop_sequences\":[\"\"]}", "stop_sequences"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop_sequences\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}", "stop_sequences"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":{}}", "tools"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"name\":\"f\"}]}", "tools.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]}", "tools.0"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":\"auto\"}", "tool_choice"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"sometimes\"}}", "tool_choice"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"g\"}}", "tool_choice"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":{\"type\":\"maybe\"}}", "thinking"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":5}}", "thinking.budget_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":0}}", "thinking.budget_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":\"2\"}}", "thinking.budget_tokens"},
        {"\"x\"", ""},
        {"{", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        zn_oai_req r;
        zn_oai_error e;
        bool ok = anth_parse(cases[i].body, strlen(cases[i].body), false, &r, &e);
        CHECK_MSG(!ok, "accepted: %s", cases[i].body);
        if (ok) {
            oai_req_free(&r);
            continue;
        }
        CHECK_EQ_INT(e.status, 400);
        CHECK_MSG(!strcmp(e.param, cases[i].param), "%s: param '%s' (want '%s'): %s", cases[i].body, e.param,
                  cases[i].param, e.message);
        json_t *body = anth_error_json(&e);
        CHECK_EQ_STR(json_string_value(json_object_get(body, "type")), "error");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(body, "error"), "type")), "invalid_request_error");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(body, "error"), "message")), e.message);
        json_decref(body);
    }
    /* tool_choice any is chat's "required": the same answer as chat gives it */
    const char *ab = "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                     "\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"any\"}}";
    const char *cb = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":"
                     "{\"name\":\"f\",\"parameters\":{}}}],\"tool_choice\":\"required\"}";
    zn_oai_req r, c;
    zn_oai_error e, ce;
    bool aok = anth_parse(ab, strlen(ab), false, &r, &e), cok = oai_parse(cb, strlen(cb), true, &c, &ce);
    CHECK_EQ_INT(aok, cok);
    if (aok) {
        CHECK_EQ_INT(r.tool_choice, ZN_TOOLS_REQUIRED);
        oai_req_free(&r);
    } else {
        CHECK_EQ_INT(e.status, ce.status);
    }
    if (cok) oai_req_free(&c);
    /* error types by status */
    static const struct { int status; const char *type; } map[] = {
        {401, "authentication_error"}, {404, "not_found_error"}, {429, "rate_limit_error"},
        {500, "api_error"}, {503, "overloaded_error"}, {413, "request_too_large"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        oai_fail(&e, map[i].status, "x", NULL, NULL, "m");
        json_t *body = anth_error_json(&e);
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(body, "error"), "type")), map[i].type);
        json_decref(body);
    }
}

static void test_anth_response(void) {
    zn_job *j = sample_job();
    zn_anth_ctx c;
    anth_ctx_init(&c, "m");
    CHECK(!strncmp(c.id, "msg_", 4));
    json_t *whole = anth_final(&c, j);
    CHECK_EQ_STR(json_string_value(json_object_get(whole, "type")), "message");
    CHECK_EQ_STR(json_string_value(json_object_get(whole, "role")), "assistant");
    CHECK_EQ_STR(json_string_value(json_object_get(whole, "stop_reason")), "tool_use");
    CHECK(json_is_null(json_object_get(whole, "stop_sequence")));
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(whole, "usage"), "input_tokens")), 11);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(whole, "usage"), "output_tokens")), 20);
    json_t *content = json_object_get(whole, "content");
    CHECK_EQ_INT((int)json_array_size(content), 3);
    json_t *th = json_array_get(content, 0), *tx = json_array_get(content, 1), *tu = json_array_get(content, 2);
    CHECK_EQ_STR(json_string_value(json_object_get(th, "type")), "thinking");
    CHECK_EQ_STR(json_string_value(json_object_get(th, "thinking")), "The user wants weather.");
    CHECK_EQ_STR(json_string_value(json_object_get(tx, "text")), "Let me check.");
    CHECK_EQ_STR(json_string_value(json_object_get(tu, "type")), "tool_use");
    CHECK_EQ_STR(json_string_value(json_object_get(tu, "name")), "get_weather");
    CHECK(!strncmp(json_string_value(json_object_get(tu, "id")), "toolu_", 6));
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(tu, "input"), "city")), "Paris");

    zn_anth_stream st;
    anth_stream_init(&st, &c);
    zn_evbuf b = {0};
    CHECK(anth_stream_begin(&st, j, &b));
    for (int i = 0; i < j->n_pieces; i++) CHECK(anth_stream_piece(&st, j, i, &b));
    CHECK(anth_stream_end(&st, j, &b));
    events ev;
    events_parse(&b, &ev);
    static const char *const want[] = {"message_start", "ping", "content_block_start", "content_block_delta",
                                       "content_block_delta", "content_block_stop", "content_block_start",
                                       "content_block_delta", "content_block_delta", "content_block_stop",
                                       "content_block_start", "content_block_delta", "content_block_delta",
                                       "content_block_delta", "content_block_stop", "message_delta", "message_stop"};
    int nw = (int)(sizeof want / sizeof *want);
    CHECK_EQ_INT(ev.n, nw);
    for (int i = 0; i < ev.n && i < nw; i++) CHECK_MSG(!strcmp(ev.name[i], want[i]), "event %d: %s, want %s", i, ev.name[i], want[i]);
    if (ev.n == nw) {
        json_t *msg = json_object_get(ev.data[0], "message");
        CHECK_EQ_STR(json_string_value(json_object_get(msg, "id")), c.id);
        CHECK(json_is_null(json_object_get(msg, "stop_reason")) && json_array_size(json_object_get(msg, "content")) == 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(msg, "usage"), "input_tokens")), 11);
        /* block indexes count up; the tool block starts with its id and name, input {} */
        static const int idx[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2};
        for (int i = 2; i < 15; i++) CHECK_EQ_INT(json_integer_value(json_object_get(ev.data[i], "index")), idx[i - 2]);
        json_t *tb = json_object_get(ev.data[10], "content_block");
        CHECK_EQ_STR(json_string_value(json_object_get(tb, "id")), json_string_value(json_object_get(tu, "id")));
        CHECK_EQ_STR(json_string_value(json_object_get(tb, "name")), "get_weather");
        CHECK(json_is_object(json_object_get(tb, "input")) && !json_object_size(json_object_get(tb, "input")));
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(ev.data[3], "delta"), "type")), "thinking_delta");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(ev.data[7], "delta"), "type")), "text_delta");
        char args[64] = "";
        for (int i = 11; i <= 13; i++) {
            json_t *d = json_object_get(ev.data[i], "delta");
            CHECK_EQ_STR(json_string_value(json_object_get(d, "type")), "input_json_delta");
            strcat(args, json_string_value(json_object_get(d, "partial_json")));
        }
        json_t *in = parse_json(args);
        CHECK(json_equal(in, json_object_get(tu, "input")));
        json_decref(in);
        json_t *md = ev.data[15];
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(md, "delta"), "stop_reason")), "tool_use");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(md, "usage"), "output_tokens")), 20);
    }
    events_free(&ev);
    evbuf_free(&b);
    json_decref(whole);
    job_unref(j);

    /* stop reasons: a stop sequence names itself; length; end of text */
    j = job_new();
    put(j, ZN_CH_CONTENT, "abc");
    j->finish = "stop";
    j->state = ZN_JOB_DONE;
    CHECK_EQ_STR(anth_stop_reason(j), "end_turn");
    j->stop_hit = "END";
    whole = anth_final(&c, j);
    CHECK_EQ_STR(json_string_value(json_object_get(whole, "stop_reason")), "stop_sequence");
    CHECK_EQ_STR(json_string_value(json_object_get(whole, "stop_sequence")), "END");
    json_decref(whole);
    j->finish = "length";
    CHECK_EQ_STR(anth_stop_reason(j), "max_tokens");
    /* a failed stream ends with an error event */
    j->failed = true;
    zn_errf(&j->err, ZN_ERR_NOMEM, "out of memory for the reply");
    anth_stream_init(&st, &c);
    CHECK(anth_stream_begin(&st, j, &b) && anth_stream_end(&st, j, &b));
    events_parse(&b, &ev);
    CHECK(ev.n == 3 && !strcmp(ev.name[2], "error"));
    if (ev.n == 3) CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(ev.data[2], "error"), "type")), "api_error");
    events_free(&ev);
    evbuf_free(&b);
    job_unref(j);
}

/* the stopper says which stop string ended the reply */
static void test_stop_hit(void) {
    const char *stop[] = {"STOP", "END"};
    zn_stopper s;
    stopper_init(&s, stop, 2);
    char out[ZN_STOPPER_CAP];
    size_t n = stopper_push(&s, "abc E", 5, out);
    CHECK(!s.matched && !s.hit);
    n += stopper_push(&s, "ND x", 4, out + n);
    CHECK(s.matched);
    CHECK(s.hit == stop[1]);
    CHECK_EQ_INT((int)n, 4);
}

static void test_evbuf(void) {
    zn_evbuf b = {0};
    CHECK(evbuf_add(&b, "ping", json_pack("{s:s}", "type", "ping")));
    CHECK(!evbuf_add(&b, "bad", NULL));
    CHECK_EQ_INT((int)b.n, (int)strlen("event: ping\ndata: {\"type\":\"ping\"}\n\n"));
    CHECK(!memcmp(b.p, "event: ping\ndata: {\"type\":\"ping\"}\n\n", b.n));
    evbuf_free(&b);
}

int main(void) {
    RUN(test_resp_parse);
    RUN(test_resp_parse_errors);
    RUN(test_resp_format_like_chat);
    RUN(test_resp_stream);
    RUN(test_anth_parse);
    RUN(test_anth_parse_errors);
    RUN(test_anth_response);
    RUN(test_stop_hit);
    RUN(test_evbuf);
    return harness_report("server_api");
}
