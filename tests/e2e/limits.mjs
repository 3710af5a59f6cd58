// Over-limit traffic gets a clear status, never a crash: more requests than
// the queue holds (429, x-should-retry: true), more connections than
// ZN_SRV_MAX_CONNECTIONS (503); and a client that disconnects mid-stream
// frees its slot at once (disconnect: N = the most milliseconds allowed).
// Usage: node limits.mjs queue|connections|disconnect PORT KEY N
import net from 'node:net';

const [mode, port, key, nStr] = process.argv.slice(2);
const n = Number(nStr);
const url = `http://127.0.0.1:${port}`;
let passed = 0, failed = 0;
const check = (name, cond, detail) => {
  if (cond) passed++; else { failed++; console.log(`FAIL ${name}: ${JSON.stringify(detail)}`); }
};

if (mode === 'queue') {
  // a long stream holds the only slot; n requests at once overflow the queue behind it
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` };
  const hold = new AbortController();
  const held = await fetch(`${url}/v1/completions`, { method: 'POST', headers, signal: hold.signal,
    body: JSON.stringify({ prompt: 'The old prince', max_tokens: 8000, ignore_eos: true, stream: true }) });
  const reader = held.body.getReader();
  await reader.read();  // it runs
  const body = JSON.stringify({ prompt: 'The', max_tokens: 1, temperature: 0 });
  let refused = 0;
  const all = Array.from({ length: n }, () => fetch(`${url}/v1/completions`, { method: 'POST', headers, body })
    .then(async (r) => {
      const x = { status: r.status, retry: r.headers.get('x-should-retry'), body: await r.json() };
      if (x.status === 429 && ++refused === n - 64) hold.abort();  // the rest are queued: let them run
      return x;
    }));
  const timer = setTimeout(() => hold.abort(), 20000);
  const res = await Promise.all(all);
  clearTimeout(timer);
  hold.abort();
  const over = res.filter((r) => r.status === 429);
  const okays = res.filter((r) => r.status === 200);
  check('some requests are refused with 429', over.length > 0, res.map((r) => r.status));
  check('the queue still took its fill', okays.length > 0, res.map((r) => r.status));
  check('only 200 or 429', over.length + okays.length === n, res.map((r) => r.status));
  check('429 says retry', over.every((r) => r.retry === 'true'), over.map((r) => r.retry));
  check('429 body', over.every((r) => r.body.error && r.body.error.type === 'rate_limit_error'), over[0]?.body);
  console.log(`queue: ${okays.length} served, ${over.length} refused with 429`);
} else if (mode === 'disconnect') {
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` };
  const slots = async () => (await (await fetch(`${url}/slots`, { headers })).json())[0];
  const cut = new AbortController();
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers, signal: cut.signal,
    body: JSON.stringify({ prompt: 'The old prince', max_tokens: 8000, ignore_eos: true, stream: true }) });
  const reader = r.body.getReader();
  for (let i = 0; i < 3; i++) await reader.read();
  const busy = await slots();
  check('the slot is generating', busy.state === 'generating', busy);
  const t0 = Date.now();
  cut.abort();
  let s = busy;
  while (s.state !== 'idle' && Date.now() - t0 < 10000) { await new Promise((q) => setTimeout(q, 5)); s = await slots(); }
  const ms = Date.now() - t0;
  check('the slot is idle again', s.state === 'idle', s);
  check(`freed within ${n} ms`, ms <= n, ms);
  check('it stopped early', s.n_cached < 8000, s);
  console.log(`disconnect: slot free ${ms} ms after the client left (${s.n_cached} tokens held)`);
} else {
  // n idle connections, then one more request
  const socks = await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const s = net.connect(Number(port), '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  })));
  await new Promise((r) => setTimeout(r, 300));
  let status = 0;
  try { status = (await fetch(`${url}/health`)).status; } catch (e) { status = -1; }
  check('over the connection limit: 503', status === 503, status);
  for (const s of socks) s.destroy();
  await new Promise((r) => setTimeout(r, 500));
  status = (await fetch(`${url}/health`)).status;
  check('back to normal after they close', status === 200, status);
}
console.log(`limits: ${passed} passed, ${failed} failed`);
