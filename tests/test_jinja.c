/* Jinja interpreter unit tests. Every row of CASES was checked against
 * Jinja2 3.1 in transformers' configuration (trim_blocks, lstrip_blocks,
 * immutable sandbox): tests/templates/check_jinja_cases.py re-runs them
 * through the reference. Error cases check that a bad template is a zn_err
 * with line:column, never a crash, and that every limit holds. */
#include <stdint.h>

#include <time.h>

#include "harness.h"
#include "jinja.h"

/* Renders tmpl with the variables of the JSON object ctx; returns a
 * malloc'd string, or NULL with err filled. */
static char *render(const char *tmpl, const char *ctx_json, zn_err *err) {
    jinja_template *t = NULL;
    jinja_ctx *ctx = NULL;
    char *out = NULL;
    size_t n;
    if (jinja_parse(tmpl, strlen(tmpl), &t, err) != ZN_OK) return NULL;
    if (jinja_ctx_new(&ctx, err) == ZN_OK) {
        struct tm tm = {0};
        tm.tm_year = 126; tm.tm_mon = 0; tm.tm_mday = 15; tm.tm_hour = 10; tm.tm_min = 30; tm.tm_wday = 4; tm.tm_yday = 14;
        jinja_ctx_set_time(ctx, &tm);
        if (!ctx_json || jinja_set_json(ctx, jinja_ctx_vars(ctx), NULL, ctx_json, strlen(ctx_json), err) == ZN_OK)
            if (jinja_render(t, ctx, &out, &n, err) == ZN_OK && strlen(out) != n) {
                free(out);
                out = NULL;
            }
    }
    jinja_ctx_free(ctx);
    jinja_free(t);
    return out;
}

typedef struct { const char *tmpl, *ctx, *want; } jcase;

/* {template, context (JSON object or NULL), expected output} */
static const jcase CASES[] = {
    /* whitespace control: trim_blocks + lstrip_blocks, -, +, comments */
    {"{% if true %}\nA\n{% endif %}\nB", NULL, "A\nB"},
    {"  {% if true %}\n  x\n  {% endif %}\nend", NULL, "  x\nend"},
    {"a  {%- if true -%}  b  {%- endif -%}  c", NULL, "abc"},
    {"a\n  {%+ if true %}b{% endif %}", NULL, "a\n  b"},
    {"x {# note #}\ny\n  {# indented #}\nz", NULL, "x y\nz"},
    {"{{ 'a' }}\n{{ 'b' -}}\n  {{- 'c' }}", NULL, "a\nbc"},
    {"keep  {{+ 1 }}", NULL, "keep  1"},
    {"{% raw %}{{ not evaluated }}{% endraw %}!", NULL, "{{ not evaluated }}!"},
    {"trailing newline is dropped\n", NULL, "trailing newline is dropped"},
    {"crlf\r\n{% if true %}\r\nin\r\n{% endif %}\r\n", NULL, "crlf\nin\n"},
    {"{%- for i in [1,2] %}\n  {{ i }}\n{%- endfor %}", NULL, "  1  2"},
    /* literals and printing like Python's str() */
    {"{{ 1 }} {{ -2 }} {{ 1.0 }} {{ 2.5e-5 }} {{ 1e16 }} {{ 123456789.125 }} {{ 0.1 + 0.2 }}", NULL,
     "1 -2 1.0 2.5e-05 1e+16 123456789.125 0.30000000000000004"},
    {"{{ none }} {{ true }} {{ False }} {{ [1, 'a', none, 1.5] }} {{ {'k': [true]} }} {{ (1,) }} {{ (1, 'b') }}", NULL,
     "None True False [1, 'a', None, 1.5] {'k': [True]} (1,) (1, 'b')"},
    {"{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'new\\nline', 'tab\\t', '\\x01'] }}", NULL,
     "[\"it's\", 'say \"hi\"', 'both \\' \"', 'new\\nline', 'tab\\t', '\\x01']"},
    {"{{ 'a' 'b' }} {{ \"\\u00e9\\x41\\101\\q\" }}", NULL, "ab \xc3\xa9" "AA\\q"},
    {"{{ undefined_var }}|{{ x.missing }}|{{ x['missing'] }}|{{ none.attr }}", "{\"x\": {}}", "|||"},
    /* arithmetic and operators */
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}",
     NULL, "3 -4 1 2 3.5 2.0 1024 0.5 3.0"},
    {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }} {{ true + 1 }}", NULL, "7 9 4 5 2"},
    {"{{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none ~ u }} {{ 'x' + 'y' }}", NULL,
     "ababab [1, 1] [1, 2] a1None xy"},
    {"{{ 1 < 2 < 3 }} {{ 1 < 2 > 3 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ [1, 2] == [1, 2] }} {{ (1, 2) == [1, 2] }}", NULL,
     "True False True True True False"},
    {"{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in u }}", NULL,
     "True True True True False"},
    {"{{ 0 or 'd' }} {{ 'a' and 'b' }} {{ [] and 1 }} {{ not 0 }} {{ not x is defined }}", NULL, "d b [] True True"},
    {"{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'only' if false }}]", NULL, "yes no []"},
    {"{{ 'x' + u|default('y') }} {{ '-' ~ 5|string ~ '-' }} {{ -3|abs }}", NULL, "xy -5- 3"},
    /* subscripts and slices (code points, not bytes) */
    {"{{ 'hello'[1] }} {{ 'hello'[-1] }} {{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ 'hello'[::2] }} {{ 'h\xc3\xa9llo'[1:3] }}",
     NULL, "e o el olleh hlo \xc3\xa9l"},
    {"{{ [1,2,3,4][1:] }} {{ [1,2,3,4][:-1] }} {{ [1,2,3,4][-2:] }} {{ [1,2,3][::-1] }} {{ [1,2,3][5] }}|", NULL,
     "[2, 3, 4] [1, 2, 3] [3, 4] [3, 2, 1] |"},
    {"{{ d.a }} {{ d['a'] }} {{ d.b.c }} {{ l.0 }} {{ d|length }}", "{\"d\": {\"a\": 1, \"b\": {\"c\": 2}}, \"l\": [9]}",
     "1 1 2 9 2"},
    /* for loops */
    {"{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}"
     "{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %}", NULL,
     "103TrueFalse3b|212FalseFalse3ac|321FalseTrue3b|"},
    {"{% for x in [] %}x{% else %}empty{% endfor %} {% for x in [1,2,3,4] if x is even %}{{ x }}/{{ loop.length }} {% endfor %}",
     NULL, "empty 2/2 4/2 "},
    {"{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }};{% endfor %}{% for k in {'x': 0} %}{{ k }}{% endfor %}", NULL,
     "a=1;b=2;x"},
    {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     NULL, "0134"},
    {"{% for a in [1,2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.depth }} {% endfor %}{{ loop.index }};{% endfor %}", NULL,
     "1x1 1y1 1;2x1 2y1 2;"},
    {"{% for x in [1,2,3] %}{{ loop.cycle('odd', 'even') }} {% endfor %}", NULL, "odd even odd "},
    /* scoping: loop bodies start fresh each iteration; namespace() carries state */
    {"{% set x = 1 %}{% for i in [1,2] %}{% if i == 1 %}{% set x = 5 %}{% endif %}{{ x }}{% endfor %}{{ x }}", NULL, "511"},
    {"{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}"
     "{{ ns.n }} {{ ns.s }}", NULL, "6 0123"},
    {"{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = ('x', 'y') %}{{ t[1] }}", NULL, "12 y"},
    {"{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}] {% set up | upper %}shout{% endset %}{{ up }}", NULL,
     "[inner 2] SHOUT"},
    {"{% if a %}A{% elif b %}B{% elif c %}C{% else %}E{% endif %}", "{\"c\": 1}", "C"},
    /* macros: defaults, keywords, recursion, late-bound globals */
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', punct='?') }}",
     NULL, "Hi Ann! Hi Bo?"},
    {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", NULL, "120"},
    {"{% macro show() %}{{ g }}{% endmacro %}{% set g = 'late' %}{{ show() }} {{ show()|length }}", NULL, "late 4"},
    {"{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m() }} {{ m is callable }}", NULL, "[] True"},
    {"{% filter upper %}shout {{ 'this' }}{% endfilter %}", NULL, "SHOUT THIS"},
    {"{% generation %}gen{% set hidden = 1 %}{% endgeneration %} {{ hidden is defined }}", NULL, "gen False"},
    /* filters */
    {"{{ '  pad  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'abc'|length }}|{{ [1,2]|count }}|{{ {'a':1}|length }}|{{ u|length }}",
     NULL, "pad|hi|3|2|1|0"},
    {"{{ u|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d('zero', boolean=true) }}", NULL,
     "d None d zero"},
    {"{{ [1,'a',none]|join(', ') }} {{ ['a','b']|join }} {{ users|join('/', attribute='name') }}",
     "{\"users\": [{\"name\": \"x\"}, {\"name\": \"y\"}]}", "1, a, None ab x/y"},
    {"{{ [3,1,2]|first }} {{ [3,1,2]|last }} {{ 'abc'|first }} {{ []|first }}| {{ 'ab'|list }} {{ {'k': 1}|list }}", NULL,
     "3 2 a | ['a', 'b'] ['k']"},
    {"{{ 'MiXed'|upper }} {{ 'MiXed'|lower }} {{ 'hello wORLD-x'|title }} {{ 'hello World'|capitalize }}", NULL,
     "MIXED mixed Hello World-X Hello world"},
    {"{{ 'a-b-c'|replace('-', '+') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 42|string ~ '!' }} {{ [1]|string }}", NULL,
     "a+b+c bba 42! [1]"},
    {"{{ '42'|int + 1 }} {{ '3.9'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 4.7|int }} {{ '0x1f'|int(base=16) }} {{ '2.5'|float }}",
     NULL, "43 3 0 7 4 31 2.5"},
    {"{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 5|round }}",
     NULL, "2.0 4.0 2.67 3.0 2.0 5"},
    {"{{ {'b': 1, 'A': 2, 'c': 0}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }}", NULL,
     "[('A', 2), ('b', 1), ('c', 0)] [('a', 2), ('b', 1)]"},
    {"{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [1, 2]|sort(reverse=true) }}",
     NULL, "[1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [2, 1]"},
    {"{{ ['a', 'A', 'b', 'a']|unique|list }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ [1, 2, 3]|sum }} {{ [1, 2]|reverse|list }}",
     NULL, "['a', 'b'] 1 3 6 [2, 1]"},
    {"{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }} "
     "{{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ [1, 2, 3, 4]|select('odd')|list }} "
     "{{ [1, 0, 2]|reject|list }} {{ ['a', 'b']|map('upper')|list }} {{ msgs|selectattr('x')|list }}",
     "{\"msgs\": [{\"role\": \"user\", \"content\": \"u1\"}, {\"role\": \"bot\", \"content\": \"b\"}, {\"role\": \"user\", \"content\": \"u2\"}]}",
     "u1,u2 1 [1, 3] [0] ['A', 'B'] []"},
    {"{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}", NULL,
     "a\n    b\n\n    c|  a\n  b|a\n> \n> b"},
    {"{{ '%s=%d (%.2f) %5s|%-4s|%x %%'|format('k', 42, 3.14159, 'r', 'l', 255) }} {{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }}", NULL,
     "k=42 (3.14)     r|l   |ff % 1-2"},
    {"{{ '<b>'|e }} {{ '<b>'|safe }} {{ ('<b>'|safe + '<i>') }} {{ '<x>' ~ ('<y>'|safe) }}", NULL,
     "&lt;b&gt; <b> <b>&lt;i&gt; <x><y>"},
    {"{{ 'abc'|center(7) }}|{{ 'hello world foo'|wordcount }}|{{ d|attr('a') }}|{{ d|attr('items') is defined }}",
     "{\"d\": {\"a\": 1}}", "  abc  |3||True"},
    /* tojson: transformers' version (no HTML escaping, keeps non-ASCII, indent/separators/sort_keys) */
    {"{{ v|tojson }}", "{\"v\": {\"s\": \"\xc3\xa9 \\\"q\\\" <b> \\n\", \"n\": [1, 2.5, -0.0, 1e100, true, null], \"e\": {}, \"l\": []}}",
     "{\"s\": \"\xc3\xa9 \\\"q\\\" <b> \\n\", \"n\": [1, 2.5, -0.0, 1e+100, true, null], \"e\": {}, \"l\": []}"},
    {"{{ v|tojson(indent=2) }}", "{\"v\": {\"a\": [1, {\"b\": []}], \"c\": \"x\"}}",
     "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": \"x\"\n}"},
    {"{{ v|tojson(separators=(',', ':'), sort_keys=true) }} {{ v|tojson(ensure_ascii=true) }} {{ 'x'|tojson }} {{ none|tojson }}",
     "{\"v\": {\"z\": \"\xc3\xa9\xf0\x9f\x8e\x89\", \"a\": 1}}",
     "{\"a\":1,\"z\":\"\xc3\xa9\xf0\x9f\x8e\x89\"} {\"z\": \"\\u00e9\\ud83c\\udf89\", \"a\": 1} \"x\" null"},
    /* tests */
    {"{{ u is defined }}{{ u is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ true is number }}"
     "{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ false is false }}{{ 1 is true }}",
     NULL, "FalseTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueFalse"},
    {"{{ {} is mapping }}{{ [] is mapping }}{{ [] is iterable }}{{ 'a' is iterable }}{{ 1 is iterable }}{{ u is iterable }}"
     "{{ 'a' is sequence }}{{ {} is sequence }}{{ u is sequence }}{{ [1]|map('string') is sequence }}", NULL,
     "TrueFalseTrueTrueFalseTrueTrueTrueTrueFalse"},
    {"{{ 3 is odd }}{{ 3 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 'ab' is lower }}{{ 'AB' is upper }}"
     "{{ 2 is in [1, 2] }}{{ 1 is eq 1 }}{{ 1 is ne 1 }}{{ 2 is gt 1 }}{{ 1 is le 0 }}{{ false is sameas false }}"
     "{{ 1 is not string }}{{ range is callable }}{{ 'upper' is filter }}{{ 'odd' is test }}", NULL,
     "TrueFalseTrueFalseTrueTrueTrueTrueFalseTrueFalseTrueTrueTrueTrueTrue"},
    /* Unicode case mapping; Python-style odd/even on floats; Markup in containers */
    {"{{ 'héllo wörld'|upper }} {{ 'ÉCOLE'|lower }} {{ 'élan vital'|title }} {{ 'ñandú'.capitalize() }} "
     "{{ 'straße 1st'.title() }} {{ 'ÀB' is upper }} {{ 'да'|upper }} {{ 'Ωμέγα'.lower() }}", NULL,
     "HÉLLO WÖRLD école Élan Vital Ñandú Straße 1St True ДА ωμέγα"},
    {"{{ 2.5 is odd }} {{ 4.0 is even }} {{ ['a'|safe] }} {{ [1, 2, 3]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 0)|list }} {{ u is callable }}",
     NULL, "False True [Markup('a')] [[1, 2], [3]] [[1, 2], [3, 0]] True"},
    /* str / dict / list methods */
    {"{{ 'a,b,,c'.split(',') }} {{ ' x  y '.split() }} {{ 'a b c'.split(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }} "
     "{{ ' x  y '.rsplit(maxsplit=1) }} {{ 'k=v=w'.split('=')[-1] }}", NULL,
     "['a', 'b', '', 'c'] ['x', 'y'] ['a', 'b c'] ['a,b', 'c'] [' x', 'y'] w"},
    {"[{{ '  s  '.strip() }}][{{ '\\n\\ns\\n'.lstrip('\\n') }}][{{ 'xsx'.rstrip('x') }}] {{ 'abc'.startswith('ab') }}"
     "{{ 'abc'.endswith(('x', 'c')) }} {{ 'a.b.c'.replace('.', '/') }} {{ 'ab'.upper() }}{{ 'AB'.lower() }} {{ 'hello world'.title() }}",
     NULL, "[s][s\n][xs] TrueTrue a/b/c ABab Hello World"},
    {"{{ '{} + {} = {total}'.format(1, 2, total=3) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{{}}'.format() }} "
     "{{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'abcabc'.count('bc') }} {{ '-'.join(['a', 'b']) }} {{ '42'.isdigit() }}",
     NULL, "1 + 2 = 3 aba {} 2 5 2 a-b True"},
    {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} "
     "{{ d.items() }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", "{\"d\": {\"a\": 1, \"b\": 2}}",
     "1 None 0 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)] dict_items([('a', 1), ('b', 2)]) a1b2"},
    {"{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }} {{ 'a\\nb\\r\\nc'.splitlines() }}", NULL, "2 1 ['a', 'b', 'c']"},
    /* globals */
    {"{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
     NULL, "[0, 1, 2] [1, 3, 5] [3, 2, 1] {'a': 1, 'b': 'x'} 1"},
    {"{{ strftime_now('%Y-%m-%d %H:%M') }} {{ strftime_now('%d %b %Y') }}", NULL, "2026-01-15 10:30 15 Jan 2026"},
    /* generators behave like Python's: no len(), truthy, not JSON */
    {"{{ [1]|map('string') is iterable }} {{ ([]|select) and 'gen is truthy' }} {{ ([]|select|list) or 'list is falsy' }}",
     NULL, "True gen is truthy list is falsy"},
};

static void test_cases(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        zn_err err = {0};
        char *got = render(CASES[i].tmpl, CASES[i].ctx, &err);
        CHECK_MSG(got && !strcmp(got, CASES[i].want), "case %zu: %s\n    template: %s\n    want: [%s]\n    got:  [%s]", i,
                  got ? "mismatch" : err.msg, CASES[i].tmpl, CASES[i].want, got ? got : "(error)");
        free(got);
    }
}

/* Renders and expects an error whose message contains want (and a line:col). */
static void expect_error(const char *tmpl, const char *ctx, zn_status status, const char *want) {
    zn_err err = {0};
    char *got = render(tmpl, ctx, &err);
    CHECK_MSG(!got, "expected an error for %s, got [%s]", tmpl, got ? got : "");
    free(got);
    if (got) return;
    CHECK_MSG(strstr(err.msg, want) != NULL, "template %s: message [%s] lacks [%s]", tmpl, err.msg, want);
    CHECK_MSG(!strncmp(err.msg, "template:", 9), "message [%s] does not start with template:", err.msg);
    if (status) CHECK_EQ_INT(err.status, status);
}

static void test_syntax_errors(void) {
    expect_error("{% if x %}never closed", NULL, ZN_ERR_FORMAT, "template:1:23: unexpected end of template, expected 'elif'");
    expect_error("line1\n  {{ 1 + }}", NULL, ZN_ERR_FORMAT, "template:2:10:");
    expect_error("{% for %}{% endfor %}", NULL, ZN_ERR_FORMAT, "template:1:");
    expect_error("{% endfor %}", NULL, ZN_ERR_FORMAT, "unknown or unsupported tag 'endfor'");
    expect_error("{% include 'x' %}", NULL, ZN_ERR_FORMAT, "unknown or unsupported tag 'include'");
    expect_error("{{ 'unterminated }}", NULL, ZN_ERR_FORMAT, "unterminated string");
    expect_error("{# comment", NULL, ZN_ERR_FORMAT, "missing end of comment");
    expect_error("{{ x ]}}", NULL, ZN_ERR_FORMAT, "unexpected ']'");
    expect_error("{{ a ! b }}", NULL, ZN_ERR_FORMAT, "unexpected character '!'");
    /* found by fuzz_jinja: the slice was evaluated without its subject (a NULL node) */
    expect_error("{{ s[7, 1:2] }}", "{\"s\": \"abc\"}", ZN_ERR_FORMAT, "a slice cannot be part of a tuple subscript");
    expect_error("{{ s[1:2, 3] }}", "{\"s\": \"abc\"}", ZN_ERR_FORMAT, "a slice cannot be part of a tuple subscript");
    expect_error("{% macro m(a=1, b) %}{% endmacro %}", NULL, ZN_ERR_FORMAT, "non-default argument");
    expect_error("{{ 99999999999999999999 }}", NULL, ZN_ERR_FORMAT, "out of range");
    expect_error("{% set x %}no end", NULL, ZN_ERR_FORMAT, "expected 'endset'");
}

static void test_runtime_errors(void) {
    expect_error("ok\n{{ raise_exception('Roles must alternate') }}", NULL, ZN_ERR_ARG, "template:2:4: Roles must alternate");
    expect_error("{{ x.a.b }}", "{\"x\": {}}", ZN_ERR_FORMAT, "'a' is undefined");
    expect_error("{{ nope() }}", NULL, ZN_ERR_FORMAT, "'nope' is undefined");
    expect_error("{{ u + 1 }}", NULL, ZN_ERR_FORMAT, "'u' is undefined");
    expect_error("{{ 'a' + 1 }}", NULL, ZN_ERR_FORMAT, "unsupported operand");
    expect_error("{{ 1 / 0 }}", NULL, ZN_ERR_FORMAT, "division by zero");
    expect_error("{{ 1 < 'a' }}", NULL, ZN_ERR_FORMAT, "cannot compare");
    expect_error("{{ x|nofilter }}", NULL, ZN_ERR_FORMAT, "no filter named 'nofilter'");
    expect_error("{{ x is notatest }}", NULL, ZN_ERR_FORMAT, "no test named 'notatest'");
    expect_error("{% for x in 5 %}{% endfor %}", NULL, ZN_ERR_FORMAT, "not iterable");
    expect_error("{% set x = 1 %}{% set x.y = 2 %}", NULL, ZN_ERR_FORMAT, "non-namespace");
    expect_error("{{ [1]|map('string')|length }}", NULL, ZN_ERR_FORMAT, "has no len()");
    expect_error("{{ [1]|map('string')|tojson }}", NULL, ZN_ERR_FORMAT, "not JSON serializable");
    expect_error("{{ u|tojson }}", NULL, ZN_ERR_FORMAT, "not JSON serializable");
    expect_error("{{ [].append(1) }}", NULL, ZN_ERR_FORMAT, "not allowed");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", NULL, ZN_ERR_FORMAT, "takes not more than 1");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", NULL, ZN_ERR_FORMAT, "no keyword argument 'b'");
    expect_error("{% set a, b = [1] %}", NULL, ZN_ERR_FORMAT, "not enough values to unpack");
    expect_error("{{ 9223372036854775807 + 1 }}", NULL, ZN_ERR_FORMAT, "integer overflow");
    expect_error("{% break %}", NULL, ZN_ERR_FORMAT, "outside of a loop");
}

/* Untrusted templates: every resource is bounded and reported, not crashed on. */
static void test_limits(void) {
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, ZN_ERR_FORMAT, "recursion too deep");
    expect_error("{{ range(100001)|length }}", NULL, ZN_ERR_FORMAT, "range too big");
    expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% for k in l %}{% endfor %}{% endfor %}{% endfor %}",
                 "{\"l\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}", ZN_ERR_FORMAT, "too many steps");
    expect_error("{% set big = 'x' * 1000000 %}{% for i in range(100000) %}{% if big|length %}{% endif %}{% endfor %}", NULL,
                 ZN_ERR_FORMAT, "too many steps");  /* work on big strings counts */
    expect_error("{% set s = 'x' * 16000000 %}{{ s }}{{ s }}", NULL, ZN_ERR_FORMAT, "output too large");
    expect_error("{{ 'x' * 100000000 }}", NULL, ZN_ERR_FORMAT, "repetition too large");
    /* deep nesting in the source */
    char deep[4096];
    size_t k = 0;
    k += (size_t)snprintf(deep + k, sizeof deep - k, "{{ ");
    for (int i = 0; i < 1000; i++) deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 1000; i++) deep[k++] = ')';
    snprintf(deep + k, sizeof deep - k, " }}");
    expect_error(deep, NULL, ZN_ERR_FORMAT, "nested too deeply");
    char ifs[16384] = "";
    for (int i = 0; i < 300; i++) strcat(ifs, "{% if 1 %}");
    expect_error(ifs, NULL, ZN_ERR_FORMAT, "nested too deeply");
    /* a long elif chain is not nesting */
    char chain[16384] = "{% if x == 0 %}0";
    for (int i = 1; i < 400; i++) snprintf(chain + strlen(chain), sizeof chain - strlen(chain), "{%% elif x == %d %%}%d", i, i);
    strcat(chain, "{% endif %}");
    zn_err err = {0};
    char *got = render(chain, "{\"x\": 399}", &err);
    CHECK_MSG(got && !strcmp(got, "399"), "elif chain: %s", got ? got : err.msg);
    free(got);
}

/* CPU seconds of this process: the box running the tests may be loaded */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sizes a template asks for are bounded and cost budget: printf widths and
 * precisions (ZN_JINJA_MAX_FORMAT_WIDTH; '%999999999d' once took seconds per
 * call), padding and repetition (every byte written counts as work), range()
 * and slice steps near INT64_MAX (signed overflow that bypassed the range
 * limit). Each failure must come fast. Expected values are Python's. */
static void test_untrusted_sizes(void) {
    static const struct { const char *tmpl, *want; } ok[] = {
        {"{{ '%5.2s|' % 'abcdef' }}{{ '%c' % 233 }}{{ '%-6x|' % -255 }}{{ '%08.3f' % 3.14159 }}", "   ab|\xc3\xa9-ff   |0003.142"},
        {"{{ '%+5d|%-5d|%05d' % (3, 4, -5) }} {{ '%.3e %G' % (12345.678, 0.00001) }} {{ '%3c|%-3c|' % ('a', 98) }}",
         "   +3|4    |-0005 1.235e+04 1E-05   a|b  |"},
        {"{{ '%x %X %o' % (-255, 255, -8) }}", "-ff FF -10"},
        {"{{ range(-9223372036854775807 - 1, 9223372036854775807, 9223372036854775807)|list }}",
         "[-9223372036854775808, -1, 9223372036854775806]"},
        {"{{ range(9223372036854775800, 9223372036854775807, 3)|list }} {{ range(5, -9223372036854775807 - 1, -9223372036854775807)|list }}",
         "[9223372036854775800, 9223372036854775803, 9223372036854775806] [5, -9223372036854775802]"},
        {"{{ [1, 2, 3][1::9223372036854775807] }} {{ 'abc'[::-9223372036854775807] }} {{ [1, 2, 3][::-9223372036854775807 - 1] }} "
         "{{ 'h\xc3\xa9llo'[4:0:-4611686018427387904] }}", "[2] c [3] o"},
        {"{{ ('%1024d' % 7)|length }} {{ ('%.1024f' % 1)|length }}", "1024 1026"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        zn_err err = {0};
        char *got = render(ok[i].tmpl, NULL, &err);
        CHECK_MSG(got && !strcmp(got, ok[i].want), "%s\n    want [%s]\n    got  [%s]", ok[i].tmpl, ok[i].want,
                  got ? got : err.msg);
        free(got);
    }
    static const struct { const char *tmpl, *want; } bad[] = {
        {"{% for i in range(100) %}{{ '%999999999d' % 1 }}{% endfor %}", "width beyond the sandbox's limit of"},
        {"{{ '%1025s' % 'x' }}", "width beyond"},
        {"{{ '%.99999999999999999999f' % 1 }}", "precision beyond"},
        {"{{ '%-99999999999999999999999s' % 1 }}", "width beyond"},
        {"{{ range(0, 9223372036854775807, 2)|length }}", "range too big"},
        {"{{ range(9223372036854775807, -9223372036854775807 - 1, -1)|length }}", "range too big"},
        {"{{ range(-9223372036854775807 - 1, 9223372036854775807)|length }}", "range too big"},
        {"{% for i in range(100000) %}{{ 'x'|center(1000) }}{% endfor %}", "output too large"},
        {"{{ 'x'|center(100000000000) }}", "width too large"},
        {"{{ 'a\nb'|indent(1000000000000000) }}", "width too large"},
        {"{{ 'a\nb'|indent(10000000) * 10 }}", "repetition too large"},
        {"{% for i in range(100000) %}{{ ' ' * 1000 }}{% endfor %}", "output too large"},
        /* work that writes nothing out: the step budget (or the memory one) stops it */
        {"{% for i in range(100000) %}{% set s = ',' * 20000 %}{% endfor %}", "too many steps|out of memory"},
        {"{% for i in range(100000) %}{{ ['x'] * 1000 }}{% endfor %}", "too many steps|out of memory"},
        {"{% for i in range(100000) %}{% if ('%1000s' % '')|length %}{% endif %}{% endfor %}{% for i in range(100000) %}"
         "{% if ('%1000s' % '')|length %}{% endif %}{% endfor %}{% for i in range(100000) %}{% if ('%1000s' % '')|length %}"
         "{% endif %}{% endfor %}{% for i in range(100000) %}{% if ('%1000s' % '')|length %}{% endif %}{% endfor %}",
         "too many steps|out of memory"},
        {"{% for i in range(100000) %}{{ [1]|batch(1000, 0)|list|length }}{% endfor %}", "too many steps|out of memory"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double t0 = now_s();
        zn_err err = {0};
        char *got = render(bad[i].tmpl, NULL, &err);
        double dt = now_s() - t0;
        CHECK_MSG(!got, "%s: rendered %zu bytes instead of failing", bad[i].tmpl, got ? strlen(got) : 0);
        free(got);
        bool named = false;
        char alts[128];
        snprintf(alts, sizeof alts, "%s", bad[i].want);
        for (char *w = strtok(alts, "|"); w && !named; w = strtok(NULL, "|")) named = strstr(err.msg, w) != NULL;
        CHECK_MSG(!got && named && !strncmp(err.msg, "template:", 9), "%s: message [%s] lacks [%s]", bad[i].tmpl,
                  err.msg, bad[i].want);
        CHECK_MSG(dt < 10.0, "%s took %.1f s of CPU", bad[i].tmpl, dt); /* generous for ASan (once: minutes) */
        if (getenv("ZN_TEST_VERBOSE")) fprintf(stderr, "    %.2f s CPU: %.60s\n", dt, bad[i].tmpl);
    }
}

/* Garbage in, error (or output) out; ASan/UBSan catch the rest. */
static void test_garbage(void) {
    static const char *const frags[] = {
        "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "if", "for", "x", "in", "endif", "endfor", "(", ")", "[", "]",
        "{", "}", "'s'", "\"", "1", "2.5", "|", "upper", "is", "not", ".", ",", ":", "=", "set", "macro", "endmacro", " ",
        "\n", "~", "+", "*", "**", "//", "loop", "range", "raise_exception", "else", "elif", "none", "\\", "%", "-", "\xff",
    };
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int rendered = 0, errors = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char tmpl[512];
        size_t n = 0;
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        int parts = (int)(seed % 24) + 1;
        for (int p = 0; p < parts; p++) {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
            const char *f = frags[seed % (sizeof frags / sizeof frags[0])];
            size_t l = strlen(f);
            if (n + l + 1 >= sizeof tmpl) break;
            memcpy(tmpl + n, f, l);
            n += l;
        }
        tmpl[n] = 0;
        zn_err err = {0};
        char *got = render(tmpl, "{\"x\": [1, \"a\", {\"k\": null}]}", &err);
        if (got) rendered++;
        else {
            errors++;
            CHECK_MSG(err.msg[0] != 0 && err.status != ZN_OK, "error without message for [%s]", tmpl);
        }
        free(got);
    }
    CHECK(rendered > 100 && errors > 100);
    /* random bytes */
    for (int iter = 0; iter < 500; iter++) {
        char tmpl[256];
        for (size_t i = 0; i < sizeof tmpl; i++) {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
            tmpl[i] = (char)(seed % 8 == 0 ? '{' : seed % 8 == 1 ? '%' : (seed >> 8) & 0xff);
        }
        tmpl[sizeof tmpl - 1] = 0;
        zn_err err = {0};
        free(render(tmpl, NULL, &err));
    }
}

static void test_ctx_api(void) {
    jinja_ctx *ctx;
    zn_err err = {0};
    CHECK_EQ_INT(jinja_ctx_new(&ctx, &err), ZN_OK);
    jinja_obj *vars = jinja_ctx_vars(ctx);
    CHECK_EQ_INT(jinja_set_str(ctx, vars, "s", "hi\0there", 8), ZN_OK);
    CHECK_EQ_INT(jinja_set_int(ctx, vars, "i", -5), ZN_OK);
    CHECK_EQ_INT(jinja_set_bool(ctx, vars, "b", true), ZN_OK);
    CHECK_EQ_INT(jinja_set_none(ctx, vars, "n"), ZN_OK);
    jinja_obj *l = jinja_set_list(ctx, vars, "l");
    CHECK(l != NULL);
    jinja_obj *d = jinja_set_dict(ctx, l, NULL);
    CHECK_EQ_INT(jinja_set_str(ctx, d, "k", "v", 1), ZN_OK);
    CHECK_EQ_INT(jinja_set_json(ctx, l, NULL, "[1, {\"x\": \"\\u00e9\"}]", 20, &err), ZN_OK);
    CHECK_EQ_INT(jinja_set_int(ctx, vars, "i", 7), ZN_OK);  /* overwrite keeps position */
    CHECK_EQ_INT(jinja_len(l), 2);
    size_t n = 0;
    CHECK(jinja_get_str(d, "k", 0, &n) && n == 1);
    CHECK(jinja_get_obj(ctx, l, NULL, 1) != NULL && jinja_get_obj(ctx, l, NULL, 5) == NULL);
    CHECK(jinja_set_json(ctx, vars, "bad", "{\"a\": }", 7, &err) == ZN_ERR_FORMAT && strstr(err.msg, "JSON"));
    CHECK(jinja_set_json(ctx, vars, "bad", "[1] x", 5, &err) == ZN_ERR_FORMAT);
    CHECK(jinja_set_json(ctx, vars, "bad", "\"\\ud800\"", 8, &err) == ZN_ERR_FORMAT);
    jinja_template *t;
    const char *src = "{{ s|length }} {{ i }} {{ b }} {{ n }} {{ l|tojson }} {{ vars_order }}";
    CHECK_EQ_INT(jinja_parse(src, strlen(src), &t, &err), ZN_OK);
    char *out = NULL;
    CHECK_EQ_INT(jinja_render(t, ctx, &out, &n, &err), ZN_OK);
    CHECK_EQ_STR(out, "8 7 True None [{\"k\": \"v\"}, [1, {\"x\": \"\xc3\xa9\"}]] ");
    free(out);
    /* rendering twice gives the same result: the ctx is not changed by a render */
    CHECK_EQ_INT(jinja_render(t, ctx, &out, &n, &err), ZN_OK);
    CHECK_EQ_STR(out, "8 7 True None [{\"k\": \"v\"}, [1, {\"x\": \"\xc3\xa9\"}]] ");
    free(out);
    jinja_free(t);
    jinja_ctx_free(ctx);
}

int main(void) {
    RUN(test_cases);
    RUN(test_syntax_errors);
    RUN(test_untrusted_sizes);
    RUN(test_runtime_errors);
    RUN(test_limits);
    RUN(test_garbage);
    RUN(test_ctx_api);
    return harness_report("jinja");
}
