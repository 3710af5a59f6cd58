#!/usr/bin/env python3
"""A reasoning budget on a server whose template opens <think> (the demo
model with Qwen3.5's template): once the reasoning has spent it, the server
closes the block itself and the answer follows, on /v1/chat/completions
(thinking_budget_tokens, reasoning_effort), /v1/responses (reasoning.effort)
and /v1/messages (thinking.budget_tokens), whole and streamed; "none" turns
thinking off. Greedy sampling, so a budgeted reply's reasoning is the start
of the unbudgeted one's.
Usage: think_budget.py PORT BUDGET
Prints problems; exit 0 when there are none."""
import json, sys, urllib.request

port, N = sys.argv[1], int(sys.argv[2])
base = 'http://127.0.0.1:%s' % port
bad = []
Q = 'Tell me about the old prince.'


def post(path, body, stream=False):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(req) as r:
        raw = r.read().decode()
    if not stream:
        return json.loads(raw)
    return [json.loads(l[6:]) for l in raw.split('\n') if l.startswith('data: {')]


def expect(what, cond, detail=''):
    if not cond:
        bad.append('%s: %s' % (what, detail))


# tokens of the closing text ZN_THINK_CLOSE_TEXT
K = len(post('/tokenize', {'content': '\n</think>\n\n'})['tokens'])
chat = {'messages': [{'role': 'user', 'content': Q}], 'max_tokens': 40, 'temperature': 0}

# without a budget the reasoning runs to max_tokens: whatever ends it below is the budget
free = post('/v1/chat/completions', chat)
free_r = free['choices'][0]['message'].get('reasoning_content', '')
expect('unbudgeted reasoning runs past the budget', free['usage']['completion_tokens_details']['reasoning_tokens'] > N + K,
       free['usage'])


def check_reply(what, reasoning, content, n_reasoning, n_completion):
    expect(what + ': reasoning', reasoning and free_r.startswith(reasoning), repr(reasoning))
    expect(what + ': an answer after the reasoning', content.strip(), repr(content))
    expect(what + ': no think tags in the answer', '</think>' not in content and '<think>' not in content, repr(content))
    expect(what + ': no think tags in the reasoning', 'think>' not in reasoning, repr(reasoning))
    expect(what + ': reasoning tokens within budget + closing', N < n_reasoning <= N + K, (n_reasoning, N, K))
    expect(what + ': completion tokens count the closing', n_completion > n_reasoning, (n_completion, n_reasoning))


# chat: whole, with the tokens
d = post('/v1/chat/completions', dict(chat, thinking_budget_tokens=N, logprobs=True))
m, u = d['choices'][0]['message'], d['usage']
rt = u['completion_tokens_details']['reasoning_tokens']
check_reply('chat', m.get('reasoning_content', ''), m['content'], rt, u['completion_tokens'])
toks = [t['token'] for t in d['choices'][0]['logprobs']['content']]
expect('chat: every token in completion_tokens', len(toks) == u['completion_tokens'], (len(toks), u))
expect('chat: the reasoning tokens end with </think>', '</think>' in ''.join(toks[:rt]) and
       '</think>' not in ''.join(toks[:rt - 1]), toks[:rt])
whole_r, whole_c = m.get('reasoning_content', ''), m['content']

# chat: streamed
evs = post('/v1/chat/completions', dict(chat, thinking_budget_tokens=N, stream=True,
                                        stream_options={'include_usage': True}), stream=True)
deltas = [e['choices'][0]['delta'] for e in evs if e['choices']]
sr = ''.join(x.get('reasoning_content', '') for x in deltas)
sc = ''.join(x.get('content', '') or '' for x in deltas)
expect('chat streamed: reasoning = whole', sr == whole_r, (sr, whole_r))
expect('chat streamed: content = whole', sc == whole_c, (sc, whole_c))
first = next((i for i, x in enumerate(deltas) if x.get('content')), len(deltas))
expect('chat streamed: content begins, and no reasoning after it',
       first < len(deltas) and not any(x.get('reasoning_content') for x in deltas[first:]), deltas[-3:])
expect('chat streamed: usage', evs[-1]['usage']['completion_tokens_details']['reasoning_tokens'] == rt, evs[-1])

# chat: under a grammar the closing is accepted and the answer is the JSON
sch = {'type': 'json_schema', 'json_schema': {'name': 'p', 'schema': {
    'type': 'object', 'properties': {'name': {'type': 'string', 'maxLength': 20}, 'age': {'type': 'integer'}},
    'required': ['name', 'age'], 'additionalProperties': False}}}
for stream in (False, True):
    body = dict(chat, max_tokens=200, thinking_budget_tokens=N, response_format=sch, stream=stream)
    if stream:
        ds = [e['choices'][0] for e in post('/v1/chat/completions', body, stream=True) if e['choices']]
        r = ''.join(x['delta'].get('reasoning_content', '') for x in ds)
        c = ''.join(x['delta'].get('content', '') or '' for x in ds)
        fin = ds[-1]['finish_reason']
    else:
        x = post('/v1/chat/completions', body)['choices'][0]
        r, c, fin = x['message'].get('reasoning_content', ''), x['message']['content'], x['finish_reason']
    what = 'chat json_schema%s' % (' streamed' if stream else '')
    expect(what + ': reasoning', r == whole_r, (r, whole_r))
    try:
        v = json.loads(c)
        expect(what + ': the answer follows the schema', set(v) == {'name', 'age'} and fin == 'stop', (c, fin))
    except ValueError:
        bad.append('%s: the answer is not JSON: %r (%s)' % (what, c, fin))

# chat: reasoning_effort levels; "none" turns thinking off
d = post('/v1/chat/completions', dict(chat, reasoning_effort='none'))
expect('effort none: no reasoning', not d['choices'][0]['message'].get('reasoning_content') and
       d['usage']['completion_tokens_details']['reasoning_tokens'] == 0 and d['choices'][0]['message']['content'], d)
d = post('/v1/chat/completions', dict(chat, reasoning_effort='minimal', max_tokens=400))
rt_min = d['usage']['completion_tokens_details']['reasoning_tokens']
expect('effort minimal: its budget', 256 < rt_min <= 256 + K and d['choices'][0]['message']['content'], d['usage'])
d = post('/v1/chat/completions', dict(chat, reasoning_effort='high'))
expect('effort high: no budget below max_tokens', d['choices'][0]['message'] == free['choices'][0]['message'], d)

# responses: effort minimal (the smallest level), whole and streamed, and none
rb = {'input': Q, 'max_output_tokens': 400, 'temperature': 0, 'reasoning': {'effort': 'minimal'}}
d = post('/v1/responses', rb)
items = {o['type']: o for o in d['output']}
rr = ''.join(c['text'] for c in items.get('reasoning', {}).get('content', []))
rc = ''.join(c['text'] for c in items.get('message', {}).get('content', []))
rrt = d['usage']['output_tokens_details']['reasoning_tokens']
expect('responses: reasoning tokens within budget + closing', 256 < rrt <= 256 + K, d['usage'])
expect('responses: reasoning and answer', rr and rc.strip() and 'think>' not in rc and 'think>' not in rr, d['output'])
expect('responses: effort echoed', d.get('reasoning', {}).get('effort') == 'minimal', d.get('reasoning'))
evs = post('/v1/responses', dict(rb, stream=True), stream=True)
sr = ''.join(e['delta'] for e in evs if e['type'] == 'response.reasoning_text.delta')
sc = ''.join(e['delta'] for e in evs if e['type'] == 'response.output_text.delta')
expect('responses streamed = whole', (sr, sc) == (rr, rc), (sr[-40:], sc[:40]))
d = post('/v1/responses', dict(rb, reasoning={'effort': 'none'}))
expect('responses effort none: no reasoning', [o['type'] for o in d['output']] == ['message'] and
       d['usage']['output_tokens_details']['reasoning_tokens'] == 0, d)

# messages: thinking.budget_tokens, whole and streamed, and disabled
model = json.loads(urllib.request.urlopen(base + '/v1/models').read())['data'][0]['id']
mb = {'model': model, 'messages': chat['messages'], 'max_tokens': 40, 'temperature': 0,
      'thinking': {'type': 'enabled', 'budget_tokens': N}}
d = post('/v1/messages', mb)
blocks = {b['type']: b for b in d['content']}
mt, mx = blocks.get('thinking', {}).get('thinking', ''), blocks.get('text', {}).get('text', '')
expect('messages: thinking = chat reasoning', mt == whole_r, (mt, whole_r))
expect('messages: text = chat content', mx == whole_c, (mx, whole_c))
expect('messages: thinking, then an answer', mt and mx.strip() and 'think>' not in mx, d['content'])
evs = post('/v1/messages', dict(mb, stream=True), stream=True)
st = ''.join(e['delta'].get('thinking', '') for e in evs if e['type'] == 'content_block_delta')
sx = ''.join(e['delta'].get('text', '') for e in evs if e['type'] == 'content_block_delta')
expect('messages streamed = whole', (st, sx) == (mt, mx), (st, sx))
d = post('/v1/messages', dict(mb, thinking={'type': 'disabled'}))
expect('messages thinking disabled: no thinking', [b['type'] for b in d['content']] == ['text'], d)

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
