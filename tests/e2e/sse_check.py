#!/usr/bin/env python3
"""Checks a raw chat/completions SSE body byte for byte against OpenAI's
framing: every event is exactly 'data: <compact JSON>\\n\\n' (the JSON as
json.dumps(separators=(',', ':')) writes it, keys in OpenAI's order), the
first chat chunk carries only the role, content chunks, one finish chunk with
an empty delta, the usage chunk with choices [] when asked, then
'data: [DONE]\\n\\n' and nothing else; one id on every chunk.
Usage: sse_check.py BODY HEADERS chat|completion usage|nousage [EXPECTED_TEXT_FILE]
Prints problems; exit 0 when there are none."""
import json, re, sys

body = open(sys.argv[1], 'rb').read()
headers = open(sys.argv[2], 'rb').read().decode('latin-1').lower()
chat = sys.argv[3] == 'chat'
usage = sys.argv[4] == 'usage'
expected = open(sys.argv[5], encoding='utf-8').read() if len(sys.argv) > 5 else None
bad = []
if not re.search(r'^http/1\.1 200', headers): bad.append('status is not 200')
if 'content-type: text/event-stream' not in headers: bad.append('content-type is not text/event-stream')
if 'content-length:' in headers: bad.append('a stream has no content-length')
if 'access-control-' in headers: bad.append('CORS headers without --cors')
events = body.split(b'\n\n')
if events[-1] != b'': bad.append('body does not end with a blank line')
events = events[:-1]
if not events or events[-1] != b'data: [DONE]': bad.append('last event is not data: [DONE]')
obj = 'chat.completion.chunk' if chat else 'text_completion'
chunks = []
for ev in events[:-1]:
    if not ev.startswith(b'data: ') or b'\n' in ev:
        bad.append('not a single data line: %r' % ev[:80]); continue
    raw = ev[6:].decode('utf-8')
    j = json.loads(raw)
    if json.dumps(j, separators=(',', ':'), ensure_ascii=False) != raw: bad.append('not compact JSON: ' + raw[:120])
    want = ['id', 'object', 'created', 'model', 'choices'] + (['usage'] if usage else [])
    if list(j.keys()) != want: bad.append('keys %s, want %s' % (list(j.keys()), want))
    chunks.append(j)
if len({c.get('id') for c in chunks}) != 1: bad.append('chunks do not share one id')
if any(c.get('object') != obj for c in chunks): bad.append('object is not ' + obj)
rest = chunks
if chat:
    if not rest or rest[0]['choices'][0]['delta'] != {'role': 'assistant', 'content': ''}:
        bad.append('first chunk is not the role chunk')
    rest = rest[1:]
if usage:
    if not rest or rest[-1]['choices'] != [] or not rest[-1]['usage']: bad.append('no usage chunk with choices []')
    else:
        u = rest[-1]['usage']
        if u['total_tokens'] != u['prompt_tokens'] + u['completion_tokens']: bad.append('usage does not add up')
    if any(c['usage'] is not None for c in rest[:-1]): bad.append('usage not null before the usage chunk')
    rest = rest[:-1]
if not rest: bad.append('no finish chunk')
else:
    fin = rest[-1]['choices'][0]
    if fin['finish_reason'] not in ('stop', 'length'): bad.append('finish_reason %r' % fin['finish_reason'])
    if chat and fin['delta'] != {}: bad.append('finish chunk delta is not {}')
    if not chat and fin['text'] != '': bad.append('finish chunk text is not empty')
text = ''
for c in rest[:-1]:
    ch = c['choices'][0]
    if ch['finish_reason'] is not None: bad.append('finish_reason before the finish chunk')
    if chat:
        if set(ch['delta']) - {'content', 'reasoning_content', 'reasoning'}: bad.append('delta keys %s' % list(ch['delta']))
        text += ch['delta'].get('content', '')
    else:
        text += ch['text']
if expected is not None and text != expected: bad.append('streamed text %r != %r' % (text, expected))
for b in bad: print(b)
sys.exit(1 if bad else 0)
