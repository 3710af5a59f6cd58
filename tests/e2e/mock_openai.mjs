// A small stand-in for an OpenAI-compatible server, for the browser test's
// cases the demo model cannot be made to produce (a hostile reply, reasoning,
// an error in the middle of a stream, an API key). It serves the UI's files
// from src/server/web/ with the policy zinc sends (WEB_ASSET_CSP, read from
// src/server/web_assets.h), GET /v1/models and streaming
// POST /v1/chat/completions framed as OpenAI frames it: `data: <json>\n\n`,
// a first chunk with delta.role, content chunks, a chunk with finish_reason
// and an empty delta, a usage chunk with choices [] when asked, `data: [DONE]`.
// The reply depends on the last user message:
//   contains "xss"    markdown with <script> and <img onerror> in it
//   contains "think"  reasoning_content chunks, then content
//   contains "slow"   a long reply, one word every 60 ms (for stop)
//   contains "boom"   an in-band error after a few chunks
//   contains "400"    a 400 error before the stream
//   otherwise         "Echo: <message>" with a code block
// GET /mock/state: {"requests", "aborted", "active", "last"} (last: the last
// request body), so a test can see that stopping closed the connection.
// usage: node mock_openai.mjs --port P [--api-key K]; prints "listening P".
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../src/server/web');
const header = fs.readFileSync(path.resolve(here, '../../src/server/web_assets.h'), 'utf8');
function cspFrom(h) {   // the string literals of the macro's continued lines
  const lines = h.slice(h.indexOf('#define WEB_ASSET_CSP')).split('\n');
  let text = '';
  for (const l of lines) { text += l; if (!l.trimEnd().endsWith('\\')) break; }
  return [...text.matchAll(/"([^"]*)"/g)].map((m) => m[1]).join('');
}
const CSP = cspFrom(header);
if (!CSP.includes("script-src 'self'")) throw new Error('mock: cannot read WEB_ASSET_CSP from web_assets.h');

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const port = +opt('--port', 0);
const apiKey = opt('--api-key', null);
const MODEL = 'mock-model';
const CTX = 4096;
const state = { requests: 0, aborted: 0, active: 0, last: null };

const TYPES = { '.html': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml' };

function json(res, status, obj) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(obj));
}
function error(res, status, message, type, code) {
  json(res, status, { error: { message, type, param: null, code: code ?? null } });
}

function replyFor(text) {
  if (/xss/i.test(text)) {
    return { content: 'Here is **bold** text.\n\n<script>window.__xss = 1; document.title = "pwned";</script>\n\n' +
      'An image: <img src=x onerror="window.__xss = 2"> and a [link](javascript:window.__xss=3).\n\n' +
      '```html\n<b>code</b>\n```\n' };
  }
  if (/think/i.test(text)) return { reasoning: 'The user wants a short answer. I will think step by step, then answer.', content: 'The answer is **42**.' };
  if (/slow/i.test(text)) return { content: Array.from({ length: 400 }, (_, i) => `word${i}`).join(' '), delay: 60 };
  if (/boom/i.test(text)) return { content: 'This reply will break', fail: 'the model fell over (mock)' };
  return { content: `Echo: ${text}\n\n\`\`\`js\nconsole.log(${JSON.stringify(text.slice(0, 40))});\n\`\`\`\n` };
}

// the text split into chunks of about a token each (words with their space)
const pieces = (s) => s.match(/\s*\S+|\s+/g) || [];

async function chat(req, res, body) {
  const msgs = Array.isArray(body.messages) ? body.messages : null;
  if (!msgs || !msgs.length) return error(res, 400, "'messages' must be a non-empty array", 'invalid_request_error');
  const lastUser = [...msgs].reverse().find((m) => m.role === 'user');
  const text = lastUser ? String(lastUser.content) : '';
  if (/\b400\b/.test(text)) return error(res, 400, 'mock: this request is refused (400)', 'invalid_request_error');
  const r = replyFor(text);
  const id = 'chatcmpl-mock' + state.requests;
  const created = Math.floor(Date.now() / 1000);
  const promptTokens = msgs.reduce((n, m) => n + pieces(String(m.content)).length + 4, 0);
  const chunk = (delta, finish = null) => ({ id, object: 'chat.completion.chunk', created, model: MODEL,
    system_fingerprint: 'mock', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  if (!body.stream) {
    const message = { role: 'assistant', content: r.content };
    if (r.reasoning) message.reasoning_content = r.reasoning;
    const n = pieces(r.content).length + (r.reasoning ? pieces(r.reasoning).length : 0);
    return json(res, 200, { id, object: 'chat.completion', created, model: MODEL,
      choices: [{ index: 0, message, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: n, total_tokens: promptTokens + n } });
  }
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  state.active++;
  let closed = false;
  res.on('close', () => { if (!res.writableFinished) { closed = true; state.aborted++; } state.active--; });
  const send = (obj) => { if (!closed) res.write(`data: ${JSON.stringify(obj)}\n\n`); };
  const wait = (ms) => new Promise((ok) => setTimeout(ok, ms));
  const delay = r.delay ?? 15;
  let n = 0;
  const max = Number.isInteger(body.max_tokens) ? body.max_tokens : Infinity;
  send(chunk({ role: 'assistant', content: '' }));
  let finish = 'stop';
  if (r.reasoning) {
    for (const p of pieces(r.reasoning)) {
      if (closed) return;
      send(chunk({ reasoning_content: p, reasoning: p }));
      n++;
      await wait(delay);
    }
  }
  let i = 0;
  for (const p of pieces(r.content)) {
    if (closed) return;
    if (n >= max) { finish = 'length'; break; }
    send(chunk({ content: p }));
    n++;
    if (r.fail && ++i === 3) {
      send({ error: { message: r.fail, type: 'server_error', param: null, code: null } });
      return res.end();
    }
    await wait(delay);
  }
  if (closed) return;
  send(chunk({}, finish));
  if (body.stream_options && body.stream_options.include_usage) {
    send({ id, object: 'chat.completion.chunk', created, model: MODEL, system_fingerprint: 'mock', choices: [],
      usage: { prompt_tokens: promptTokens, completion_tokens: n, total_tokens: promptTokens + n } });
  }
  res.write('data: [DONE]\n\n');
  res.end();
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/mock/state') return json(res, 200, state);
  if (url.pathname.startsWith('/v1/')) {
    if (apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
      return error(res, 401, 'missing or wrong API key', 'invalid_request_error', 'invalid_api_key');
    }
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      return json(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model', created: 0, owned_by: 'zinc', context_length: CTX }] });
    }
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') {
      let raw = '';
      req.on('data', (d) => { raw += d; });
      req.on('end', () => {
        state.requests++;
        let body;
        try { body = JSON.parse(raw); } catch { return error(res, 400, 'the body is not JSON', 'invalid_request_error'); }
        state.last = body;
        chat(req, res, body).catch((e) => { if (!res.headersSent) error(res, 500, String(e), 'server_error'); else res.end(); });
      });
      return;
    }
    return error(res, 404, `no route ${req.method} ${url.pathname}`, 'invalid_request_error');
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return error(res, 405, 'method not allowed', 'invalid_request_error');
  const rel = url.pathname === '/' ? '/index.html' : url.pathname;
  const file = path.join(root, rel);
  if (!file.startsWith(root + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    return error(res, 404, 'not found', 'invalid_request_error');
  }
  // compressed, as zinc serves its embedded copy
  const data = zlib.gzipSync(fs.readFileSync(file), { level: 9 });
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Content-Encoding': 'gzip',
    'Content-Length': data.length, 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' });
  res.end(req.method === 'HEAD' ? undefined : data);
});
server.listen(port, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => { server.close(); process.exit(0); });
