// The openai SDK's Responses API and the @anthropic-ai/sdk Messages API
// against a running zinc serve: whole and streamed, a function tool round
// trip, count_tokens, stop sequences, typed errors.
// Usage: node sdk_api.mjs ORIGIN API_KEY MODEL   (ORIGIN: http://host:port)
// Prints one line per failed check and ends with "sdk_api: N passed, N failed".
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [origin, apiKey, model] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: origin + '/v1', apiKey, maxRetries: 0, timeout: 60000 });
// the Anthropic SDK sends the key as x-api-key
const anthropic = new Anthropic({ baseURL: origin, apiKey, maxRetries: 0, timeout: 60000 });
let passed = 0, failed = 0;
function check(name, cond, detail) {
  if (cond) passed++;
  else { failed++; console.log(`FAIL ${name}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`); }
}
async function rejects(name, fn, cls, test) {
  try { await fn(); check(name, false, 'no error'); }
  catch (e) { check(name, e instanceof cls && (!test || test(e)), [e.constructor.name, e.status, e.error]); }
}

const tools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];

// ---- Responses, whole ----
const r = await openai.responses.create({ model, instructions: 'You tell stories.', input: 'Tell me about the old prince.',
  max_output_tokens: 24, temperature: 0 });
check('responses object', r.object === 'response', r.object);
check('responses id', /^resp_/.test(r.id), r.id);
check('responses status', ['completed', 'incomplete'].includes(r.status), r.status);
check('responses incomplete means max_output_tokens', r.status !== 'incomplete' ||
  (r.incomplete_details.reason === 'max_output_tokens' && r.usage.output_tokens === 24), [r.incomplete_details, r.usage]);
check('responses message item', r.output.length === 1 && r.output[0].type === 'message' && r.output[0].role === 'assistant' &&
  r.output[0].content[0].type === 'output_text', r.output);
check('responses output_text', typeof r.output_text === 'string' && r.output_text.length > 0 &&
  r.output_text === r.output[0].content[0].text, r.output_text);
check('responses usage', r.usage.input_tokens > 0 && r.usage.output_tokens > 0 &&
  r.usage.total_tokens === r.usage.input_tokens + r.usage.output_tokens, r.usage);
check('responses echoes', r.instructions === 'You tell stories.' && r.max_output_tokens === 24 && r.model === model,
  [r.instructions, r.max_output_tokens, r.model]);

// ---- Responses, streamed: the same text, events in order ----
const s = await openai.responses.create({ model, instructions: 'You tell stories.', input: 'Tell me about the old prince.',
  max_output_tokens: 24, temperature: 0, stream: true });
let types = [], seqs = [], text = '', doneText = null, final = null;
for await (const ev of s) {
  types.push(ev.type);
  seqs.push(ev.sequence_number);
  if (ev.type === 'response.output_text.delta') text += ev.delta;
  if (ev.type === 'response.output_text.done') doneText = ev.text;
  if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
}
check('stream first events', types[0] === 'response.created' && types[1] === 'response.in_progress', types.slice(0, 2));
check('stream last event', ['response.completed', 'response.incomplete'].includes(types[types.length - 1]), types.slice(-1));
check('stream sequence numbers', seqs.every((n, i) => n === i), seqs);
const order = ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
  'response.output_text.done', 'response.content_part.done', 'response.output_item.done'];
const firstAt = order.map(t => types.indexOf(t));
check('stream item events in order', firstAt.every((v, i) => v > 1 && (i === 0 || v > firstAt[i - 1])), types);
check('stream text = done text = whole text', text === doneText && text === r.output_text, [text, doneText, r.output_text]);
check('stream final response', final && final.status === r.status && final.usage.output_tokens === r.usage.output_tokens &&
  final.output[0].content[0].text === text, final);

// ---- Responses: a function tool round trip through the template ----
const q = 'What is the weather in Paris?';
const t1 = await openai.responses.create({ model, input: q, tools, max_output_tokens: 8, temperature: 0 });
check('tools accepted', ['completed', 'incomplete'].includes(t1.status), t1.status);
for (const it of t1.output.filter(o => o.type === 'function_call'))
  check('a function_call item is whole', it.name === 'get_weather' && typeof it.call_id === 'string' &&
    typeof it.arguments === 'string', it);
const plain = await openai.responses.create({ model, input: q, max_output_tokens: 1, temperature: 0 });
check('tools reach the prompt', t1.usage.input_tokens > plain.usage.input_tokens, [t1.usage, plain.usage]);
const t2 = await openai.responses.create({ model, tools, max_output_tokens: 4, temperature: 0, input: [
  { role: 'user', content: q },
  { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
  { type: 'function_call_output', call_id: 'call_1', output: 'sunny, 21 C' }] });
check('round trip answered', t2.output.length >= 1, t2.output);
check('round trip prompt holds the call and its output', t2.usage.input_tokens > t1.usage.input_tokens + 5,
  [t2.usage, t1.usage]);
// the SDK's idiom: the previous response's output items sent back as input
const follow = await openai.responses.create({ model, max_output_tokens: 4, temperature: 0, instructions: 'You tell stories.',
  input: [{ role: 'user', content: 'Tell me about the old prince.' }, ...r.output, { role: 'user', content: 'And then?' }] });
check('output items as input', follow.usage.input_tokens > r.usage.input_tokens + r.usage.output_tokens - 2,
  [follow.usage, r.usage]);
const t3 = await openai.responses.create({ model, tools, tool_choice: 'none', input: q, max_output_tokens: 1, temperature: 0 });
check('tool_choice none leaves the tools out', t3.usage.input_tokens === plain.usage.input_tokens, [t3.usage, plain.usage]);
await rejects('responses: a bad item is a 400', () => openai.responses.create({ model, input: [{ type: 'nonsense' }] }),
  OpenAI.BadRequestError, e => e.param === 'input[0]');
await rejects('responses: previous_response_id refused', () => openai.responses.create({ model, input: 'x',
  previous_response_id: 'resp_123' }), OpenAI.BadRequestError, e => e.param === 'previous_response_id');
await rejects('responses: unknown model', () => openai.responses.create({ model: 'nope', input: 'x' }), OpenAI.NotFoundError);

// ---- Anthropic Messages, whole ----
const messages = [{ role: 'user', content: 'Tell me about the old prince.' }];
const m = await anthropic.messages.create({ model, system: 'You tell stories.', messages, max_tokens: 24, temperature: 0 });
check('messages type', m.type === 'message' && m.role === 'assistant' && /^msg_/.test(m.id), [m.type, m.role, m.id]);
check('messages text block', m.content.length === 1 && m.content[0].type === 'text' && m.content[0].text.length > 0, m.content);
check('messages stop_reason', ['end_turn', 'max_tokens'].includes(m.stop_reason) && m.stop_sequence === null,
  [m.stop_reason, m.stop_sequence]);
check('messages max_tokens', m.stop_reason !== 'max_tokens' || m.usage.output_tokens === 24, m.usage);
check('messages usage', m.usage.input_tokens > 0 && m.usage.output_tokens > 0, m.usage);
check('messages model', m.model === model, m.model);

// ---- streamed: raw events, and the SDK's stream helper ----
const ms = await anthropic.messages.create({ model, system: 'You tell stories.', messages, max_tokens: 24, temperature: 0,
  stream: true });
let mtypes = [], mtext = '', stop = null, outTok = null;
for await (const ev of ms) {
  mtypes.push(ev.type);
  if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') mtext += ev.delta.text;
  if (ev.type === 'message_delta') { stop = ev.delta.stop_reason; outTok = ev.usage.output_tokens; }
}
check('messages stream order', mtypes[0] === 'message_start' && /* the SDK drops pings */ !mtypes.includes('ping') &&
  mtypes.indexOf('content_block_start') < mtypes.indexOf('content_block_delta') &&
  mtypes.lastIndexOf('content_block_delta') < mtypes.indexOf('content_block_stop') &&
  mtypes[mtypes.length - 2] === 'message_delta' && mtypes[mtypes.length - 1] === 'message_stop', mtypes);
check('messages stream text = whole text', mtext === m.content[0].text, [mtext, m.content[0].text]);
check('messages stream stop and usage', stop === m.stop_reason && outTok === m.usage.output_tokens, [stop, outTok]);
const helper = anthropic.messages.stream({ model, system: 'You tell stories.', messages, max_tokens: 24, temperature: 0 });
const fm = await helper.finalMessage();
check('stream helper final message', fm.content[0].text === m.content[0].text && fm.stop_reason === m.stop_reason, fm);

// ---- count_tokens: the prompt the whole request had ----
const ct = await anthropic.messages.countTokens({ model, system: 'You tell stories.', messages });
check('count_tokens', ct.input_tokens === m.usage.input_tokens, [ct, m.usage]);

// ---- stop_sequences: ends before the first occurrence, says which ----
const words = m.content[0].text.split(' ');
if (words.length >= 3) {
  const word = ' ' + words[2];
  const cut = m.content[0].text.slice(0, m.content[0].text.indexOf(word));
  const st = await anthropic.messages.create({ model, system: 'You tell stories.', messages, max_tokens: 24, temperature: 0,
    stop_sequences: [word, 'zzzz-never'] });
  check('stop_sequence reason', st.stop_reason === 'stop_sequence' && st.stop_sequence === word, [st.stop_reason, st.stop_sequence]);
  check('stop_sequence text', st.content.length === 0 ? cut === '' : st.content[0].text === cut, [st.content, cut]);
} else check('the story has three words', false, m.content);

// ---- tools: a tool_use / tool_result round trip through the template ----
const atools = [{ name: 'get_weather', description: 'Weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
const a1 = await anthropic.messages.create({ model, tools: atools, max_tokens: 8, temperature: 0,
  messages: [{ role: 'user', content: q }] });
for (const b of a1.content.filter(b => b.type === 'tool_use'))
  check('a tool_use block is whole', b.name === 'get_weather' && typeof b.input === 'object' && /^toolu_/.test(b.id), b);
check('tool_use stop_reason', a1.content.some(b => b.type === 'tool_use') === (a1.stop_reason === 'tool_use'), a1);
const a2 = await anthropic.messages.create({ model, tools: atools, max_tokens: 4, temperature: 0, messages: [
  { role: 'user', content: q },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny, 21 C' }] }] });
check('tool round trip answered', a2.type === 'message' && a2.usage.input_tokens > a1.usage.input_tokens + 5, [a2.usage, a1.usage]);
const ac = await anthropic.messages.countTokens({ model, tools: atools, messages: [{ role: 'user', content: q }] });
check('count_tokens with tools', ac.input_tokens === a1.usage.input_tokens, [ac, a1.usage]);

// ---- errors in Anthropic's shape ----
await rejects('messages: max_tokens required', () => anthropic.messages.create({ model, messages }), Anthropic.BadRequestError,
  e => e.error && e.error.type === 'error' && e.error.error.type === 'invalid_request_error' && /max_tokens/.test(e.error.error.message));
await rejects('messages: image blocks refused', () => anthropic.messages.create({ model, max_tokens: 4, messages: [{ role: 'user',
  content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] }), Anthropic.BadRequestError,
  e => /messages\.0\.content\.0/.test(e.error.error.message));
await rejects('messages: unknown model', () => anthropic.messages.create({ model: 'nope', max_tokens: 4, messages }),
  Anthropic.NotFoundError, e => e.error.error.type === 'not_found_error');
const bad = new Anthropic({ baseURL: origin, apiKey: 'wrong', maxRetries: 0 });
await rejects('messages: a wrong key', () => bad.messages.create({ model, max_tokens: 4, messages }), Anthropic.AuthenticationError);

console.log(`sdk_api: ${passed} passed, ${failed} failed`);
