#!/usr/bin/python3
"""Checks the expected strings of tests/test_jinja.c (the CASES table)
against Jinja2 in transformers' configuration (see gen_expected.py).
Run: /usr/bin/python3 tests/templates/check_jinja_cases.py  -> exit 1 on a mismatch."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_expected import ENV  # noqa: E402  (same environment and fixed strftime_now)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test_jinja.c")


def c_string(body):
    """Bytes of one C string literal body (escapes resolved)."""
    out, i = bytearray(), 0
    simple = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, "'": 39, '"': 34, "?": 63}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e == "x":
            j = i + 2
            while j < len(body) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16) & 0xFF)
            i = j
        elif e in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        else:
            raise ValueError("escape \\" + e)
    return bytes(out)


def rows():
    src = open(SRC, encoding="utf-8").read()
    table = src[src.index("static const jcase CASES[] = {") + 30:]
    table = table[:table.index("\n};")]
    table = re.sub(r"/\*.*?\*/", "", table, flags=re.S)
    tokens = re.findall(r'"((?:[^"\\]|\\.)*)"|(NULL)|([{},])', table)
    row, cur, out = [], None, []
    for s, null, punct in tokens:
        if punct == "{":
            row, cur = [], None
        elif punct in (",", "}"):
            if cur is not None:
                row.append(cur)
                cur = None
            if punct == "}" and row:
                out.append(row)
                row = []
        elif null:
            cur = None
            row.append(None)
        else:
            cur = (cur or b"") + c_string(s)
    return [[x.decode("utf-8") if x is not None else None for x in r] for r in out]


def main():
    bad = 0
    cases = rows()
    for i, (tmpl, ctx, want) in enumerate(cases):
        try:
            got = ENV.from_string(tmpl).render(**(json.loads(ctx) if ctx else {}))
        except Exception as e:  # noqa: BLE001
            got = "ERROR %s: %s" % (type(e).__name__, e)
        if got != want:
            bad += 1
            print("case %d differs:\n  template: %r\n  jinja2:   %r\n  test:     %r" % (i, tmpl, got, want))
    print("%d cases, %d differ" % (len(cases), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
