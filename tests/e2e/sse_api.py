#!/usr/bin/env python3
"""Checks a raw SSE body of /v1/responses or /v1/messages: every event is
exactly 'event: NAME\\ndata: <one-line JSON>\\n\\n' with data.type == NAME, and
the events come in the API's order.
responses: response.created, response.in_progress, then per output item
output_item.added, (content_part.added, deltas, *.done, content_part.done |
function_call_arguments.delta..., .done), output_item.done, and last
response.completed / response.incomplete; sequence_number counts from 0.
messages: message_start, ping, then content_block_start / _delta / _stop with
indexes counting from 0, message_delta, message_stop.
The text deltas must add up to EXPECTED_TEXT_FILE's text when given.
Usage: sse_api.py BODY HEADERS responses|messages [EXPECTED_TEXT_FILE]
Prints problems; exit 0 when there are none."""
import json, re, sys

body = open(sys.argv[1], 'rb').read()
headers = open(sys.argv[2], 'rb').read().decode('latin-1').lower()
kind = sys.argv[3]
expected = open(sys.argv[4], encoding='utf-8').read() if len(sys.argv) > 4 else None
bad = []
if not re.search(r'^http/1\.1 200', headers): bad.append('status is not 200')
if 'content-type: text/event-stream' not in headers: bad.append('content-type is not text/event-stream')
frames = body.split(b'\n\n')
if frames[-1] != b'': bad.append('body does not end with a blank line')
evs = []
for f in frames[:-1]:
    lines = f.split(b'\n')
    if len(lines) != 2 or not lines[0].startswith(b'event: ') or not lines[1].startswith(b'data: '):
        bad.append('not an event line and a data line: %r' % f[:80]); continue
    name = lines[0][7:].decode()
    try: d = json.loads(lines[1][6:])
    except ValueError: bad.append('data is not JSON: %r' % lines[1][:80]); continue
    if d.get('type') != name: bad.append('event %s has data.type %r' % (name, d.get('type')))
    evs.append((name, d))
names = [n for n, _ in evs]
text = ''
if kind == 'responses':
    if names[:2] != ['response.created', 'response.in_progress']: bad.append('starts with %s' % names[:2])
    if not names or names[-1] not in ('response.completed', 'response.incomplete'): bad.append('ends with %s' % names[-1:])
    for i, (_, d) in enumerate(evs):
        if d.get('sequence_number') != i: bad.append('event %d has sequence_number %r' % (i, d.get('sequence_number')))
    rid = evs[0][1]['response']['id'] if evs else None
    if evs and evs[-1][1]['response']['id'] != rid: bad.append('the final response has another id')
    # one item at a time: added ... done, with output_index counting up
    open_item, n_items, done_text = None, 0, None
    for n, d in evs[2:-1]:
        if n == 'response.output_item.added':
            if open_item is not None: bad.append('item added while one is open')
            if d['output_index'] != n_items: bad.append('output_index %d, want %d' % (d['output_index'], n_items))
            open_item = d['item']; n_items += 1
        elif n == 'response.output_item.done':
            if open_item is None or d['item']['id'] != open_item['id']: bad.append('done for an item not open')
            open_item = None
        elif open_item is None:
            bad.append('%s outside an item' % n)
        elif d.get('item_id') != open_item['id']:
            bad.append('%s for item %r inside %r' % (n, d.get('item_id'), open_item['id']))
        if n == 'response.output_text.delta': text += d['delta']
        if n == 'response.output_text.done': done_text = d['text']
    if open_item is not None: bad.append('an item never closed')
    if done_text is not None and done_text != text: bad.append('output_text.done %r != deltas %r' % (done_text, text))
    if evs:
        final = evs[-1][1]['response']
        if len(final['output']) != n_items: bad.append('final output has %d items, stream %d' % (len(final['output']), n_items))
        u = final.get('usage') or {}
        if u.get('total_tokens') != u.get('input_tokens', -1) + u.get('output_tokens', -1): bad.append('usage %r' % u)
elif kind == 'messages':
    if names[:2] != ['message_start', 'ping']: bad.append('starts with %s' % names[:2])
    if names[-2:] != ['message_delta', 'message_stop']: bad.append('ends with %s' % names[-2:])
    idx, opened = -1, False
    for n, d in evs[2:-2]:
        if n == 'content_block_start':
            if opened: bad.append('block started while one is open')
            idx += 1; opened = True
            if d['index'] != idx: bad.append('block index %d, want %d' % (d['index'], idx))
        elif n in ('content_block_delta', 'content_block_stop'):
            if not opened or d['index'] != idx: bad.append('%s for block %r, open %d' % (n, d.get('index'), idx))
            if n == 'content_block_stop': opened = False
            elif d['delta']['type'] == 'text_delta': text += d['delta']['text']
        else:
            bad.append('unexpected %s between blocks' % n)
    if opened: bad.append('a block never stopped')
    if len(evs) >= 2:
        md = evs[-2][1]
        if md['delta'].get('stop_reason') not in ('end_turn', 'max_tokens', 'stop_sequence', 'tool_use'):
            bad.append('stop_reason %r' % md['delta'].get('stop_reason'))
        if not isinstance(md.get('usage', {}).get('output_tokens'), int): bad.append('message_delta without usage.output_tokens')
else:
    bad.append('kind must be responses or messages')
if expected is not None and text != expected: bad.append('streamed text %r != expected %r' % (text, expected))
for b in bad: print(b)
sys.exit(1 if bad else 0)
