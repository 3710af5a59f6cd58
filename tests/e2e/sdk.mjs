// The official openai SDK against a running zinc serve: chat and completions,
// whole and streamed, with usage. Usage: node sdk.mjs BASE_URL API_KEY MODEL
// Prints one line per failed check and ends with "sdk: N passed, N failed".
import OpenAI from 'openai';

const [base, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 60000 });
let passed = 0, failed = 0;
function check(name, cond, detail) {
  if (cond) passed++;
  else { failed++; console.log(`FAIL ${name}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`); }
}

const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about the old prince.' }];

// chat, whole
const c = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
check('chat object', c.object === 'chat.completion', c.object);
check('chat id', /^chatcmpl-/.test(c.id), c.id);
check('chat model', c.model === model, c.model);
check('chat role', c.choices[0].message.role === 'assistant');
check('chat content', typeof c.choices[0].message.content === 'string' && c.choices[0].message.content.length > 0);
check('chat finish', ['stop', 'length'].includes(c.choices[0].finish_reason), c.choices[0].finish_reason);
check('chat usage', c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0 &&
  c.usage.total_tokens === c.usage.prompt_tokens + c.usage.completion_tokens, c.usage);
check('chat length', c.choices[0].finish_reason !== 'length' || c.usage.completion_tokens === 24, c.usage);

// chat, streamed with usage: the same text as the whole response (temperature 0)
const s = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0, stream: true,
  stream_options: { include_usage: true } });
let text = '', ids = new Set(), roles = 0, finish = null, usage = null, chunks = 0;
for await (const ch of s) {
  chunks++;
  ids.add(ch.id);
  if (ch.usage) usage = ch.usage;
  if (!ch.choices.length) continue;
  const d = ch.choices[0].delta;
  if (d.role) roles++;
  if (d.content) text += d.content;
  if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
}
check('stream one id', ids.size === 1, [...ids]);
check('stream one role chunk', roles === 1, roles);
check('stream text = whole text', text === c.choices[0].message.content, [text, c.choices[0].message.content]);
check('stream finish', finish === c.choices[0].finish_reason, finish);
check('stream usage', usage && usage.prompt_tokens === c.usage.prompt_tokens &&
  usage.completion_tokens === c.usage.completion_tokens, usage);
check('stream chunks', chunks >= 3, chunks);

// stream without usage: no usage chunk
const s2 = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, stream: true });
let sawUsage = false;
for await (const ch of s2) if (ch.usage) sawUsage = true;
check('no usage unless asked', !sawUsage);

// completions, whole and streamed
const prompt = 'The old prince looked at his son and said';
const t = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 0 });
check('completion object', t.object === 'text_completion', t.object);
check('completion text', typeof t.choices[0].text === 'string' && t.choices[0].text.length > 0);
check('completion usage', t.usage.prompt_tokens > 0 && t.usage.completion_tokens > 0, t.usage);
const ts = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 0, stream: true,
  stream_options: { include_usage: true } });
let ttext = '', tusage = null;
for await (const ch of ts) {
  if (ch.usage) tusage = ch.usage;
  if (ch.choices.length) ttext += ch.choices[0].text;
}
check('completion stream text', ttext === t.choices[0].text, [ttext, t.choices[0].text]);
check('completion stream usage', tusage && tusage.completion_tokens === t.usage.completion_tokens, tusage);

// models
const list = await client.models.list();
check('models list', list.data.length === 1 && list.data[0].id === model, list.data);
const one = await client.models.retrieve(model);
check('models retrieve', one.id === model, one);

// errors surface as the SDK's typed errors
try {
  await client.chat.completions.create({ model: 'no-such-model', messages });
  check('404 model', false, 'no error');
} catch (e) {
  check('404 model', e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === 'model_not_found', [e.status, e.code]);
}
try {
  await client.chat.completions.create({ model, messages, n: 2 });
  check('400 n', false, 'no error');
} catch (e) {
  check('400 n', e instanceof OpenAI.BadRequestError && e.param === 'n', [e.status, e.param]);
}
const bad = new OpenAI({ baseURL: base, apiKey: apiKey + 'x', maxRetries: 0 });
try {
  await bad.models.list();
  check('401 key', false, 'no error');
} catch (e) {
  check('401 key', e instanceof OpenAI.AuthenticationError, e.status);
}

console.log(`sdk: ${passed} passed, ${failed} failed`);
