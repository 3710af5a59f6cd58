#!/usr/bin/python3
"""Oracle for tests/test_chat.c: renders every case below with Jinja2 set up
the way Hugging Face transformers' apply_chat_template does, and writes

  cases.tsv            one case per line: name, template, add_generation_prompt,
                       enable_thinking, bos, eos, messages JSON, tools JSON, extra JSON
  expected/NAME.txt    the rendered prompt (byte for byte), or
  expected/NAME.err    the error message when the template refuses the input

Run from anywhere with Debian's python3-jinja2 (3.1):
  /usr/bin/python3 tests/templates/gen_expected.py          # regenerate
  /usr/bin/python3 tests/templates/gen_expected.py --check  # compare, exit 1 on a difference

The messages go through the same adjustments chat.c makes before rendering
(content null/absent -> "", tool-call arguments given as JSON text -> object).
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = datetime(2026, 1, 15, 10, 30, 0)  # test_chat.c passes the same time


# ---- the transformers environment (chat_template_utils._compile_jinja_template) ----

class AssistantTracker(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return NOW.strftime(fmt)


ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[AssistantTracker, loopcontrols])
ENV.filters["tojson"] = tojson
ENV.globals["raise_exception"] = raise_exception
ENV.globals["strftime_now"] = strftime_now

CHATML = None  # the fallback template is chat.c's own; its expectation is written out by hand below


def normalize(messages):
    out = []
    for m in messages:
        m = json.loads(json.dumps(m))
        if not isinstance(m.get("content"), (str, list, dict)):
            m["content"] = ""
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str) and fn["arguments"].lstrip().startswith("{"):
                try:
                    fn["arguments"] = json.loads(fn["arguments"])
                except ValueError:
                    pass
        out.append(m)
    return out


def chatml_by_hand(messages, add_generation_prompt):
    s = ""
    for m in messages:
        c = m["content"]
        if not isinstance(c, str):
            c = "".join(p["text"] for p in c if p.get("type") == "text")
        s += "<|im_start|>" + m["role"] + "\n" + c + "<|im_end|>\n"
    if add_generation_prompt:
        s += "<|im_start|>assistant\n"
    return s


# ---- inputs ----

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Zürich"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
            "days": {"type": "integer", "description": "Forecast days"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "filters": {"type": "array", "items": {"type": "string"}, "description": "Site filters"}},
            "required": ["query"]}}},
]

M = {}
M["simple"] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello! What's the capital of France?"},
]
M["user_only"] = [{"role": "user", "content": "Tell me a joke about \"quotes\" & <tags>."}]
M["multi"] = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "2+2 = 4."},
    {"role": "user", "content": "  And 3+3? Reply in français, s'il te plaît — merci ✓  \n"},
]
M["multi_sys"] = [{"role": "system", "content": "Be brief."}] + M["multi"]
M["think_history"] = [
    {"role": "user", "content": "Is 17 prime?"},
    {"role": "assistant", "content": "<think>\n17 has no divisors but 1 and itself.\n</think>\n\nYes, 17 is prime."},
    {"role": "user", "content": "And 21?"},
]
M["reasoning_field"] = [
    {"role": "user", "content": "Is 17 prime?"},
    {"role": "assistant", "content": "Yes.", "reasoning_content": "Check divisors up to 4: none."},
    {"role": "user", "content": "And 21?"},
    {"role": "assistant", "content": "<think>3 * 7 = 21</think>No, 21 = 3 * 7."},
]
M["tool_calls"] = [
    {"role": "system", "content": "You can use tools."},
    {"role": "user", "content": "What's the weather in Paris and in Zürich?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_0001", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}},
        {"id": "call_0002", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\", \"unit\": \"celsius\"}"}}]},
    {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather", "content": "{\"temp\": 18, \"sky\": \"cloudy\"}"},
    {"role": "tool", "tool_call_id": "call_0002", "name": "get_weather", "content": "{\"temp\": 12}"},
    {"role": "assistant", "content": "Paris: 18 °C and cloudy; Zürich: 12 °C."},
    {"role": "user", "content": "Thanks! Now search for umbrellas."},
]
M["tool_call_complex"] = [
    {"role": "user", "content": "Search for rain gear on two sites."},
    {"role": "assistant", "content": "Let me search.", "tool_calls": [
        {"id": "call_0003", "type": "function", "function": {"name": "search", "arguments": {
            "query": "rain gear", "filters": ["a.example", "b.example"], "opts": {"safe": True, "n": 3, "w": 0.5, "x": None}}}}]},
    {"role": "tool", "tool_call_id": "call_0003", "content": "3 results"},
]
M["one_tool_call"] = [
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "abc123XYZ", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "abc123XYZ", "content": "{\"temp\": -3}"},
    {"role": "assistant", "content": "It is -3 °C in Oslo."},
    {"role": "user", "content": "Brr."},
]
M["parts"] = [
    {"role": "system", "content": [{"type": "text", "text": "System in parts."}]},
    {"role": "user", "content": [{"type": "text", "text": "First part. "}, {"type": "text", "text": "Second part."}]},
]
M["unicode"] = [{"role": "user", "content": "日本語のテキスト、emoji 🎉, tab\there, nul-free \\ backslash"}]
M["sys_first_bad"] = [{"role": "user", "content": "hi"}, {"role": "system", "content": "late system"}]
M["no_user"] = [{"role": "system", "content": "only a system message"}]
M["not_alternating"] = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]

# name: (template file or None for the ChatML fallback, messages, add_generation_prompt,
#        enable_thinking (None = not passed), tools, extra kwargs)
CASES = {
    "qwen3_simple": ("qwen3.jinja", "simple", True, None, None, None),
    "qwen3_multi_nogen": ("qwen3.jinja", "multi", False, None, None, None),
    "qwen3_think_history": ("qwen3.jinja", "think_history", True, None, None, None),
    "qwen3_no_think": ("qwen3.jinja", "think_history", True, False, None, None),
    "qwen3_think_on": ("qwen3.jinja", "reasoning_field", False, True, None, None),
    "qwen3_tools": ("qwen3.jinja", "tool_calls", True, None, TOOLS, None),
    "qwen3_tools_no_think": ("qwen3.jinja", "tool_calls", True, False, TOOLS, None),
    "qwen3_tool_complex": ("qwen3.jinja", "tool_call_complex", True, None, TOOLS, None),
    "qwen3_unicode": ("qwen3.jinja", "unicode", True, None, None, None),
    "qwen3.5_simple": ("qwen3.5.jinja", "simple", True, None, None, None),
    "qwen3.5_no_think": ("qwen3.5.jinja", "multi_sys", True, False, None, None),
    "qwen3.5_think_history": ("qwen3.5.jinja", "reasoning_field", True, True, None, None),
    "qwen3.5_tools": ("qwen3.5.jinja", "tool_calls", True, None, TOOLS, None),
    "qwen3.5_tool_complex": ("qwen3.5.jinja", "tool_call_complex", True, False, TOOLS, None),
    "qwen3.5_parts": ("qwen3.5.jinja", "parts", True, None, None, None),
    "qwen3.5_sys_late": ("qwen3.5.jinja", "sys_first_bad", True, None, None, None),
    "qwen3.5_no_user": ("qwen3.5.jinja", "no_user", True, None, None, None),
    "llama3.1_simple": ("llama3.1.jinja", "simple", True, None, None, None),
    "llama3.1_multi": ("llama3.1.jinja", "multi_sys", False, None, None, None),
    "llama3.1_tools": ("llama3.1.jinja", "one_tool_call", True, None, TOOLS, None),
    "llama3.1_tools_sys": ("llama3.1.jinja", "one_tool_call", True, None, TOOLS,
                           {"tools_in_user_message": False, "date_string": "01 Jan 2026"}),
    "llama3.2_simple": ("llama3.2.jinja", "simple", True, None, None, None),
    "llama3.2_tools": ("llama3.2.jinja", "one_tool_call", True, None, TOOLS, None),
    "mistral_nemo_multi": ("mistral-nemo.jinja", "multi_sys", True, None, None, None),
    "mistral_nemo_tools": ("mistral-nemo.jinja", "one_tool_call", True, None, TOOLS, None),
    "mistral_nemo_bad_order": ("mistral-nemo.jinja", "not_alternating", True, None, None, None),
    "mistral_small_simple": ("mistral-small-3.2.jinja", "user_only", True, None, None, None),
    "mistral_small_parts": ("mistral-small-3.2.jinja", "parts", True, None, None, None),
    "mistral_small_tools": ("mistral-small-3.2.jinja", "one_tool_call", True, None, TOOLS, None),
    "gemma2_multi": ("gemma2.jinja", "multi", True, None, None, None),
    "gemma2_system": ("gemma2.jinja", "simple", True, None, None, None),
    "gemma4_simple": ("gemma4.jinja", "simple", True, None, None, None),
    "gemma4_think": ("gemma4.jinja", "think_history", True, True, None, None),
    "gemma4_tools": ("gemma4.jinja", "tool_calls", True, None, TOOLS, None),
    "chatml_qwen2.5_tools": ("qwen2.5.jinja", "tool_calls", True, None, TOOLS, None),
    "chatml_qwen2.5_multi": ("qwen2.5.jinja", "multi", True, None, None, None),
    "chatml_qwen2_gguf": ("qwen2-gguf.jinja", "multi", True, None, None, None),
    "phi3_gguf": ("phi3-gguf.jinja", "multi", False, None, None, None),
    "hermes2pro_tools": ("hermes2pro-tool-use.jinja", "tool_calls", True, None, TOOLS, None),
    "deepseek_r1_think": ("deepseek-r1-distill-qwen.jinja", "think_history", True, None, None, None),
    "fallback_chatml": (None, "multi_sys", True, None, None, None),
    "fallback_chatml_parts": (None, "parts", False, None, None, None),
}
BOS, EOS = "<s>", "</s>"


def render(name):
    tmpl, mset, agp, think, tools, extra = CASES[name]
    messages = normalize(M[mset])
    if tmpl is None:
        return chatml_by_hand(messages, agp), None
    src = open(os.path.join(HERE, tmpl), encoding="utf-8").read()
    kwargs = {"bos_token": BOS, "eos_token": EOS}
    if think is not None:
        kwargs["enable_thinking"] = think
    kwargs.update(extra or {})
    try:
        return ENV.from_string(src).render(messages=messages, tools=tools, documents=None,
                                           add_generation_prompt=agp, **kwargs), None
    except jinja2.exceptions.TemplateError as e:
        return None, str(e)


def tsv_line(name):
    tmpl, mset, agp, think, tools, extra = CASES[name]
    cols = [name, tmpl or "-", "1" if agp else "0", {None: "unset", True: "on", False: "off"}[think], BOS, EOS,
            json.dumps(M[mset], ensure_ascii=False), json.dumps(tools, ensure_ascii=False) if tools else "-",
            json.dumps(extra, ensure_ascii=False) if extra else "-"]
    assert all("\t" not in c and "\n" not in c for c in cols)
    return "\t".join(cols) + "\n"


def main():
    check = "--check" in sys.argv
    files = {"cases.tsv": "".join(tsv_line(n) for n in CASES)}
    for name in CASES:
        text, err = render(name)
        files["expected/%s.%s" % (name, "txt" if err is None else "err")] = text if err is None else err
    bad = 0
    for rel, content in files.items():
        path = os.path.join(HERE, rel)
        if check:
            try:
                same = open(path, encoding="utf-8", newline="").read() == content
            except OSError:
                same = False
            if not same:
                print("differs:", rel)
                bad += 1
        else:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(content)
    print("%d cases, %s" % (len(CASES), "%d differ" % bad if check else "written"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
