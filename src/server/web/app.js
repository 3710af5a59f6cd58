// zinc's chat page. Talks to the server it was served from (OpenAI-style
// /v1/models and streaming /v1/chat/completions); keeps conversations in
// localStorage. Model output is untrusted: it is rendered as markdown with
// raw HTML escaped, then sanitized by DOMPurify, and the page runs under a
// Content-Security-Policy without inline script.
import { Marked } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.mjs';

const KEYS = { convs: 'zinc.conversations', current: 'zinc.current', settings: 'zinc.settings', apiKey: 'zinc.apiKey' };
const DEFAULTS = { system: '', temperature: '', top_p: '', max_tokens: '', thinking: true, theme: 'auto' };
const SAVE_EVERY_MS = 1000;     // how often a streaming reply is written to localStorage
const TITLE_CHARS = 48;

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
};
const uid = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 8);

// ---- markdown ---------------------------------------------------------------
const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
// Raw HTML in a reply (block or inline) is shown as the text it is.
const md = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: (tok) => (tok.block ? `<p class="raw-html">${escapeHtml(tok.text.replace(/\n+$/, ''))}</p>\n` : escapeHtml(tok.text)),
  },
});
const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed', 'dialog'],
  FORBID_ATTR: ['style', 'id', 'name'],
};

function renderMarkdown(target, text) {
  let html;
  try { html = md.parse(text || ''); } catch { html = '<p>' + escapeHtml(text) + '</p>'; }
  target.innerHTML = DOMPurify.sanitize(html, PURIFY);
  for (const a of target.querySelectorAll('a[href]')) { a.target = '_blank'; a.rel = 'noopener noreferrer'; }
  for (const pre of target.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    const lang = code && /language-([\w+#.-]+)/.exec(code.className || '');
    const bar = el('div', 'code-bar');
    bar.append(el('span', 'code-lang', lang ? lang[1] : 'code'));
    const btn = el('button', 'copy-btn', 'Copy');
    btn.type = 'button';
    btn.setAttribute('aria-label', 'Copy code');
    btn.addEventListener('click', () => copyText((code || pre).textContent, btn));
    bar.append(btn);
    const wrap = el('div', 'code-block');
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
}

async function copyText(text, btn) {
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch {
    // plain http on another host is not a secure context: no clipboard API
    const ta = el('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.className = 'offscreen';
    document.body.append(ta);
    ta.select();
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
  }
  if (btn) {
    const was = btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { btn.textContent = was; }, 1500);
  }
}

// ---- storage ----------------------------------------------------------------
function load(key, fallback) {
  try { const v = localStorage.getItem(key); return v == null ? fallback : JSON.parse(v); } catch { return fallback; }
}
let storageError = null;
function store(key, value) {
  try { localStorage.setItem(key, typeof value === 'string' ? value : JSON.stringify(value)); storageError = null; }
  catch (e) { storageError = 'Could not save in this browser: ' + (e.message || e); }
}

let convs = load(KEYS.convs, []);
if (!Array.isArray(convs)) convs = [];
// a reply that was streaming when the page went away ends there
for (const c of convs) for (const m of c.messages || []) if (m.pending) { delete m.pending; m.stopped = true; }
let currentId = localStorage.getItem(KEYS.current);
let settings = { ...DEFAULTS, ...load(KEYS.settings, {}) };
let apiKey = localStorage.getItem(KEYS.apiKey) || '';
let model = null;         // { id, ctx } from /v1/models
let modelError = null;
let gen = null;           // the reply being streamed: { controller, conv, msg }

const saveConvs = () => store(KEYS.convs, convs);
const current = () => convs.find((c) => c.id === currentId) || null;

// ---- server -----------------------------------------------------------------
function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (apiKey) h.Authorization = 'Bearer ' + apiKey;
  return h;
}

async function errorOf(resp) {
  let text = '';
  try { text = await resp.text(); } catch { /* body gone */ }
  let msg = text.slice(0, 500);
  try {
    const j = JSON.parse(text);
    if (j && j.error) msg = typeof j.error === 'string' ? j.error : (j.error.message || JSON.stringify(j.error));
  } catch { /* not JSON */ }
  return `${resp.status} ${resp.statusText || ''}`.trim() + (msg ? ': ' + msg : '');
}

// fetch that asks for the API key when the server answers 401, then retries
async function authFetch(url, opts, why) {
  for (;;) {
    const resp = await fetch(url, { ...opts, headers: headers() });
    if (resp.status !== 401) return resp;
    const key = await askKey(apiKey ? 'The server refused this API key (401). ' + why : 'This server asks for an API key. ' + why);
    if (key == null) return resp;
  }
}

async function loadModel() {
  try {
    const resp = await authFetch('/v1/models', { method: 'GET' }, 'It is needed to list the model.');
    if (!resp.ok) throw new Error(await errorOf(resp));
    const j = await resp.json();
    const m = j && Array.isArray(j.data) && j.data[0];
    if (!m) throw new Error('the server lists no model');
    const ctx = m.context_length ?? m.max_model_len ?? m.n_ctx ?? (m.meta && (m.meta.n_ctx ?? m.meta.n_ctx_train));
    model = { id: String(m.id), ctx: Number.isFinite(+ctx) && +ctx > 0 ? +ctx : null };
    modelError = null;
  } catch (e) {
    model = null;
    modelError = e.message || String(e);
  }
  renderModel();
}

// Server-sent events from a fetch body: yields each event's data.
async function* sseData(resp) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    buf += done ? dec.decode() : dec.decode(value, { stream: true });
    buf = buf.replace(/\r\n/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(l[5] === ' ' ? 6 : 5));
      if (data.length) yield data.join('\n');
    }
    if (done) {
      if (buf.trim()) throw new Error('the stream ended inside an event');
      return;
    }
  }
}

function requestBody(conv, upTo) {
  const messages = [];
  if (settings.system.trim()) messages.push({ role: 'system', content: settings.system });
  for (const m of conv.messages) {
    if (m === upTo) break;
    if (m.role === 'assistant' && !m.content) continue;
    messages.push({ role: m.role, content: m.content });
  }
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  if (model) body.model = model.id;
  const num = (v) => (v === '' || v == null || !Number.isFinite(+v) ? null : +v);
  if (num(settings.temperature) != null) body.temperature = num(settings.temperature);
  if (num(settings.top_p) != null) body.top_p = num(settings.top_p);
  if (num(settings.max_tokens) != null) body.max_tokens = Math.round(num(settings.max_tokens));
  body.chat_template_kwargs = { enable_thinking: !!settings.thinking };
  return body;
}

// Streams a reply into msg (the conversation's last message, an assistant one).
async function generate(conv, msg) {
  if (!model) await loadModel();
  const controller = new AbortController();
  gen = { controller, conv, msg };
  Object.assign(msg, { content: '', reasoning: '', pending: true });
  for (const k of ['error', 'stopped', 'stats', 'finish']) delete msg[k];
  renderBusy();
  renderMessage(msg);
  let tFirst = null, tLast = null, chunks = 0, usage = null, timings = null, lastSave = 0;
  const t0 = performance.now();
  try {
    const resp = await authFetch('/v1/chat/completions', {
      method: 'POST', body: JSON.stringify(requestBody(conv, msg)), signal: controller.signal,
    }, 'It is needed to chat.');
    if (!resp.ok) throw new Error(await errorOf(resp));
    for await (const data of sseData(resp)) {
      // Stop ends the reply where it is: events already read in the same burst are not shown
      if (controller.signal.aborted) throw new DOMException('stopped', 'AbortError');
      if (data === '[DONE]') break;
      let j;
      try { j = JSON.parse(data); } catch { throw new Error('the server sent an event that is not JSON: ' + data.slice(0, 200)); }
      if (j.error) throw new Error(typeof j.error === 'string' ? j.error : (j.error.message || JSON.stringify(j.error)));
      const ch = Array.isArray(j.choices) ? j.choices[0] : null;
      if (ch) {
        const d = ch.delta || {};
        const r = d.reasoning_content ?? d.reasoning;   // the server sends both names; count once
        const now = performance.now();
        const fresh = !msg.content && !msg.reasoning;
        if (typeof r === 'string' && r) { msg.reasoning += r; chunks++; tFirst ??= now; tLast = now; }
        if (typeof d.content === 'string' && d.content) { msg.content += d.content; chunks++; tFirst ??= now; tLast = now; }
        // the first text is painted at once, not at the next frame: a fast reply arriving in one burst
        // would otherwise show nothing until it ended (and offer no moment to stop it)
        if (fresh && (msg.content || msg.reasoning)) renderMessage(msg);
        if (ch.finish_reason) msg.finish = ch.finish_reason;
      }
      if (j.model && !msg.model) msg.model = j.model;
      if (j.usage) usage = j.usage;
      if (j.timings) timings = j.timings;
      scheduleRender(msg);
      if (performance.now() - lastSave > SAVE_EVERY_MS) { lastSave = performance.now(); saveConvs(); }
    }
    if (!msg.finish && !usage) throw new Error('the stream ended before the reply was complete');
  } catch (e) {
    if (e.name === 'AbortError') msg.stopped = true;
    else msg.error = e.message || String(e);
  } finally {
    delete msg.pending;
    const completion = usage ? usage.completion_tokens : chunks;
    const secs = tFirst != null && tLast > tFirst ? (tLast - tFirst) / 1000 : null;
    let tps = timings && Number.isFinite(timings.predicted_per_second) ? timings.predicted_per_second : null;
    if (tps == null && secs && completion > 1) tps = (completion - 1) / secs;
    msg.stats = {
      model: msg.model || (model && model.id) || null,
      prompt: usage ? usage.prompt_tokens : null,
      completion,
      exact: !!usage,
      tps,
      ttft: tFirst != null ? (tFirst - t0) / 1000 : null,
      ctx: model ? model.ctx : null,
    };
    gen = null;
    conv.updated = Date.now();
    saveConvs();
    renderAll();
    if (document.activeElement === document.body || !document.activeElement) $('input').focus();
  }
}

function stop() { if (gen) gen.controller.abort(); }

// ---- actions ----------------------------------------------------------------
function send(text) {
  if (gen || !text.trim()) return;
  let conv = current();
  if (!conv) {
    conv = { id: uid(), title: '', created: Date.now(), updated: Date.now(), messages: [] };
    convs.unshift(conv);
    currentId = conv.id;
    store(KEYS.current, currentId);
  }
  if (!conv.title) conv.title = text.trim().replace(/\s+/g, ' ').slice(0, TITLE_CHARS);
  conv.messages.push({ id: uid(), role: 'user', content: text });
  const msg = { id: uid(), role: 'assistant', content: '' };
  conv.messages.push(msg);
  saveConvs();
  renderAll();
  generate(conv, msg);
}

function regenerate(msg) {
  const conv = current();
  if (gen || !conv || conv.messages[conv.messages.length - 1] !== msg) return;
  generate(conv, msg);
}

function editAndResend(userMsg, text) {
  const conv = current();
  if (gen || !conv || !text.trim()) return;
  const i = conv.messages.indexOf(userMsg);
  if (i < 0) return;
  userMsg.content = text;
  conv.messages.length = i + 1;
  if (i === 0) conv.title = text.trim().replace(/\s+/g, ' ').slice(0, TITLE_CHARS);
  const msg = { id: uid(), role: 'assistant', content: '' };
  conv.messages.push(msg);
  saveConvs();
  renderAll();
  generate(conv, msg);
}

function newChat() {
  if (gen) stop();
  currentId = null;
  store(KEYS.current, '');
  renderAll();
  closeSidebar();
  $('input').focus();
}

function openConv(id) {
  if (gen && gen.conv.id !== id) stop();
  currentId = id;
  store(KEYS.current, id);
  renderAll();
  closeSidebar();
}

function deleteConv(id) {
  if (gen && gen.conv.id === id) stop();
  convs = convs.filter((c) => c.id !== id);
  if (currentId === id) { currentId = null; store(KEYS.current, ''); }
  saveConvs();
  renderAll();
}

// ---- rendering --------------------------------------------------------------
const views = new Map();   // message id -> its element's parts
let renderQueued = new Set();

function scheduleRender(msg) {
  if (renderQueued.has(msg)) return;
  renderQueued.add(msg);
  if (renderQueued.size === 1) requestAnimationFrame(() => {
    const stick = nearBottom();
    for (const m of renderQueued) renderMessage(m);
    renderQueued = new Set();
    if (stick) scrollToBottom();
  });
}

function nearBottom() {
  const box = $('messages');
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}
function scrollToBottom() { const box = $('messages'); box.scrollTop = box.scrollHeight; }

function fmt(n, digits = 1) { return Number.isFinite(n) ? n.toFixed(digits) : '?'; }

function statsText(msg) {
  const s = msg.stats;
  if (!s) return '';
  const parts = [];
  if (s.model) parts.push(s.model);
  if (s.tps != null) parts.push(`${fmt(s.tps)} tok/s`);
  if (s.prompt != null) parts.push(`${s.prompt} prompt + ${s.completion} reply tokens`);
  else if (s.completion) parts.push(`≈${s.completion} reply tokens`);
  if (s.prompt != null) {
    const used = s.prompt + s.completion;
    parts.push(s.ctx ? `context ${used} / ${s.ctx} (${Math.round((100 * used) / s.ctx)}%)` : `context ${used} tokens`);
  }
  if (s.ttft != null) parts.push(`first token ${fmt(s.ttft, 2)} s`);
  if (msg.finish === 'length') parts.push('cut at max tokens');
  return parts.join(' · ');
}

function messageView(msg) {
  let v = views.get(msg.id);
  if (v && v.root.isConnected) return v;
  const root = el('article', 'msg ' + msg.role);
  root.dataset.id = msg.id;
  root.dataset.role = msg.role;
  v = { root };
  if (msg.role === 'assistant') {
    v.reasoning = el('details', 'reasoning');
    v.reasoningSummary = el('summary', null, 'Reasoning');
    v.reasoningBody = el('div', 'md reasoning-body');
    v.reasoning.append(v.reasoningSummary, v.reasoningBody);
    v.body = el('div', 'md content');
  } else {
    v.body = el('div', 'content plain');
  }
  v.error = el('div', 'error');
  v.error.setAttribute('role', 'alert');
  v.status = el('div', 'status muted small');
  v.meta = el('div', 'meta muted small');
  v.actions = el('div', 'msg-actions');
  root.append(...[v.reasoning, v.body, v.error, v.status, v.meta, v.actions].filter(Boolean));
  views.set(msg.id, v);
  return v;
}

function actionButton(label, title, fn) {
  const b = el('button', 'act', label);
  b.type = 'button';
  b.title = title;
  b.addEventListener('click', fn);
  return b;
}

function renderMessage(msg) {
  const v = messageView(msg);
  const streaming = gen && gen.msg === msg;
  v.root.classList.toggle('streaming', !!streaming);
  if (msg.role === 'assistant') {
    const hasR = !!(msg.reasoning && msg.reasoning.length);
    v.reasoning.hidden = !hasR;
    if (hasR) {
      v.reasoningSummary.textContent = streaming && !msg.content ? 'Thinking…' : 'Reasoning';
      renderMarkdown(v.reasoningBody, msg.reasoning);
    }
    renderMarkdown(v.body, msg.content);
    v.body.hidden = !msg.content && !streaming;
  } else if (!v.editing) {
    v.body.textContent = msg.content;
  }
  v.error.hidden = !msg.error;
  v.error.textContent = msg.error ? 'Error: ' + msg.error : '';
  v.status.textContent = streaming ? (msg.content || msg.reasoning ? '' : 'Waiting for the model…') : msg.stopped ? 'Stopped.' : '';
  v.status.hidden = !v.status.textContent;
  v.meta.textContent = streaming ? '' : statsText(msg);
  v.meta.hidden = !v.meta.textContent;
  renderActions(msg, v);
}

function renderActions(msg, v) {
  v.actions.replaceChildren();
  if (gen && gen.msg === msg) return;
  const conv = current();
  const last = conv && conv.messages[conv.messages.length - 1] === msg;
  if (msg.role === 'assistant') {
    if (msg.content) v.actions.append(actionButton('Copy', 'Copy this reply as markdown', (e) => copyText(msg.content, e.currentTarget)));
    if (last) v.actions.append(actionButton('Regenerate', 'Write this reply again', () => regenerate(msg)));
  } else if (!v.editing) {
    v.actions.append(actionButton('Edit', 'Edit this message and send it again (drops the replies after it)', () => startEdit(msg, v)));
  }
  for (const b of v.actions.children) b.disabled = !!gen;
}

function startEdit(msg, v) {
  if (gen) return;
  v.editing = true;
  const ta = el('textarea', 'edit-box');
  ta.value = msg.content;
  ta.setAttribute('aria-label', 'Edit message');
  const done = () => { v.editing = false; renderMessage(msg); };
  const save = actionButton('Send', 'Send the edited message', () => { v.editing = false; editAndResend(msg, ta.value); });
  save.classList.add('primary');
  const cancel = actionButton('Cancel', 'Keep the message as it was', done);
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); save.click(); }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); done(); }
  });
  v.body.replaceChildren(ta);
  v.actions.replaceChildren(save, cancel);
  ta.focus();
  ta.setSelectionRange(ta.value.length, ta.value.length);
}

function renderConversation() {
  const box = $('messages');
  const conv = current();
  box.replaceChildren();
  views.clear();
  if (!conv || !conv.messages.length) {
    const empty = el('div', 'empty');
    empty.append(el('h2', null, 'zinc'), el('p', 'muted', model ? `Chat with ${model.id}, running on this machine.` : 'Chat with the model running on this machine.'));
    box.append(empty);
    return;
  }
  for (const m of conv.messages) { box.append(messageView(m).root); renderMessage(m); }
  scrollToBottom();
}

function renderList() {
  const ul = $('conv-list');
  ul.replaceChildren();
  const sorted = [...convs].sort((a, b) => (b.updated || 0) - (a.updated || 0));
  for (const c of sorted) {
    const li = el('li', c.id === currentId ? 'active' : '');
    const open = el('button', 'conv-open', c.title || 'Untitled');
    open.type = 'button';
    open.title = c.title || 'Untitled';
    if (c.id === currentId) open.setAttribute('aria-current', 'true');
    open.addEventListener('click', () => openConv(c.id));
    const del = el('button', 'conv-del', '×');
    del.type = 'button';
    del.setAttribute('aria-label', 'Delete conversation: ' + (c.title || 'Untitled'));
    del.title = 'Delete';
    // two presses: the first arms it for a few seconds
    del.addEventListener('click', () => {
      if (del.dataset.armed) return deleteConv(c.id);
      del.dataset.armed = '1';
      del.textContent = 'Delete?';
      setTimeout(() => { if (del.isConnected) { delete del.dataset.armed; del.textContent = '×'; } }, 3000);
    });
    li.append(open, del);
    ul.append(li);
  }
  $('conv-empty').hidden = convs.length > 0;
}

function renderModel() {
  const m = $('model');
  m.textContent = model ? model.id : modelError ? 'no model' : '…';
  m.title = model ? `Model: ${model.id}` + (model.ctx ? `, context ${model.ctx} tokens` : '') : modelError || '';
  m.classList.toggle('bad', !model && !!modelError);
}

function renderBusy() {
  const busy = !!gen;
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  for (const b of document.querySelectorAll('.msg-actions button')) b.disabled = busy;
}

function renderAll() {
  const conv = current();
  $('conv-title').textContent = conv ? conv.title || 'Untitled' : 'New chat';
  document.title = conv && conv.title ? `${conv.title} · zinc` : 'zinc chat';
  renderList();
  renderConversation();
  renderBusy();
  if (storageError) showToast(storageError);
}

let toastTimer = null;
function showToast(text) {
  let t = document.querySelector('.toast');
  if (!t) { t = el('div', 'toast'); t.setAttribute('role', 'status'); document.body.append(t); }
  t.textContent = text;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.remove(), 6000);
}

// ---- theme, sidebar, dialogs ------------------------------------------------
const systemDark = matchMedia('(prefers-color-scheme: dark)');
function applyTheme() {
  const dark = settings.theme === 'dark' || (settings.theme === 'auto' && systemDark.matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}
systemDark.addEventListener('change', applyTheme);

function openSidebar() {
  document.body.classList.add('sidebar-open');
  $('scrim').hidden = false;
  $('open-sidebar').setAttribute('aria-expanded', 'true');
  const first = document.querySelector('#sidebar button');
  if (first) first.focus();
}
function closeSidebar() {
  if (!document.body.classList.contains('sidebar-open')) return;
  document.body.classList.remove('sidebar-open');
  $('scrim').hidden = true;
  $('open-sidebar').setAttribute('aria-expanded', 'false');
}

function openSettings() {
  $('set-system').value = settings.system;
  $('set-temperature').value = settings.temperature;
  $('set-top-p').value = settings.top_p;
  $('set-max-tokens').value = settings.max_tokens;
  $('set-thinking').checked = !!settings.thinking;
  $('set-theme').value = settings.theme;
  $('set-key').value = apiKey;
  $('settings').showModal();
}

function saveSettings(e) {
  e.preventDefault();
  settings = {
    ...settings,
    system: $('set-system').value,
    temperature: $('set-temperature').value,
    top_p: $('set-top-p').value,
    max_tokens: $('set-max-tokens').value,
    thinking: $('set-thinking').checked,
    theme: $('set-theme').value,
  };
  store(KEYS.settings, settings);
  const key = $('set-key').value.trim();
  if (key !== apiKey) {
    apiKey = key;
    if (key) store(KEYS.apiKey, key); else localStorage.removeItem(KEYS.apiKey);
    loadModel();
  }
  applyTheme();
  $('settings').close();
}

let keyWaiter = null;
function askKey(why) {
  $('key-why').textContent = why;
  $('key-input').value = '';
  if (!$('keydlg').open) $('keydlg').showModal();
  return new Promise((resolve) => { keyWaiter = resolve; });
}
function answerKey(key) {
  const w = keyWaiter;
  keyWaiter = null;
  if ($('keydlg').open) $('keydlg').close();
  if (key != null) {
    apiKey = key;
    if ($('key-remember').checked) store(KEYS.apiKey, key); else localStorage.removeItem(KEYS.apiKey);
  }
  if (w) w(key);
}

// ---- wiring -----------------------------------------------------------------
function autosize(ta) {
  ta.style.height = 'auto';
  ta.style.height = Math.min(ta.scrollHeight, window.innerHeight * 0.4) + 'px';
}

function init() {
  applyTheme();
  const input = $('input');
  const narrow = matchMedia('(max-width: 760px)');
  const longHint = input.placeholder;
  const placeholder = () => { input.placeholder = narrow.matches ? input.dataset.shortPlaceholder : longHint; };
  narrow.addEventListener('change', placeholder);
  placeholder();
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    if (gen) return;
    const text = input.value;
    if (!text.trim()) return;
    input.value = '';
    autosize(input);
    send(text);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); $('composer').requestSubmit(); }
  });
  input.addEventListener('input', () => autosize(input));
  $('stop').addEventListener('click', () => { stop(); input.focus(); });
  $('new-chat').addEventListener('click', newChat);
  $('open-settings').addEventListener('click', openSettings);
  $('settings-form').addEventListener('submit', saveSettings);
  $('settings-cancel').addEventListener('click', () => $('settings').close());
  $('toggle-theme').addEventListener('click', () => {
    settings.theme = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    store(KEYS.settings, settings);
    applyTheme();
  });
  $('open-sidebar').addEventListener('click', openSidebar);
  $('close-sidebar').addEventListener('click', () => { closeSidebar(); $('open-sidebar').focus(); });
  $('scrim').addEventListener('click', closeSidebar);
  $('key-form').addEventListener('submit', (e) => { e.preventDefault(); const k = $('key-input').value.trim(); if (k) answerKey(k); });
  $('key-cancel').addEventListener('click', () => answerKey(null));
  $('keydlg').addEventListener('cancel', (e) => { e.preventDefault(); answerKey(null); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !document.querySelector('dialog[open]')) {
      if (gen) { e.preventDefault(); stop(); } else closeSidebar();
    }
    if ((e.ctrlKey || e.metaKey) && e.shiftKey && (e.key === 'o' || e.key === 'O')) { e.preventDefault(); newChat(); }
  });
  window.addEventListener('storage', (e) => {
    // another tab changed the list: follow it unless this tab is streaming
    if (e.key === KEYS.convs && !gen) { convs = load(KEYS.convs, []); renderAll(); }
  });
  renderAll();
  loadModel().then(() => { if (!current()) renderConversation(); });
  input.focus();
}

init();
