// N streaming clients at once, each equal to its own run alone (temperature 0):
// nothing one request does leaks into another's output.
// Usage: node concurrent.mjs BASE_URL API_KEY MODEL N MAX_TOKENS
import OpenAI from 'openai';

const [base, apiKey, model, nStr, maxStr] = process.argv.slice(2);
const n = Number(nStr), max_tokens = Number(maxStr);
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 300000 });
const subjects = ['the prince', 'the soldier', 'the old count', 'the princess', 'Moscow', 'the war', 'the king',
  'the battle', 'the ballroom', 'the letter', 'the horse', 'the winter', 'the village', 'the emperor', 'the river',
  'the night', 'the road', 'the general', 'the house', 'the bell'];
const prompts = Array.from({ length: n }, (_, i) => `Tell me about ${subjects[i % subjects.length]} (${i}).`);

async function run(i) {
  const s = await client.chat.completions.create({ model, max_tokens, temperature: 0, stream: true,
    messages: [{ role: 'user', content: prompts[i] }], cache_prompt: false });
  let text = '', chunks = 0;
  for await (const ch of s) {
    if (ch.choices.length && ch.choices[0].delta.content) { text += ch.choices[0].delta.content; chunks++; }
  }
  return { text, chunks };
}

const solo = [];
for (let i = 0; i < n; i++) solo.push(await run(i));
const t0 = Date.now();
const together = await Promise.all(prompts.map((_, i) => run(i)));
const secs = (Date.now() - t0) / 1000;
let passed = 0, failed = 0;
for (let i = 0; i < n; i++) {
  if (together[i].text === solo[i].text && solo[i].text.length > 0) passed++;
  else { failed++; console.log(`FAIL client ${i}: ${JSON.stringify(together[i].text)} != ${JSON.stringify(solo[i].text)}`); }
}
const distinct = new Set(solo.map((r) => r.text)).size;
if (distinct > 1) passed++; else { failed++; console.log('FAIL all prompts gave the same text'); }
console.log(`concurrent: ${n} streams at once in ${secs.toFixed(2)} s`);
console.log(`concurrent: ${passed} passed, ${failed} failed`);
