/** The web chat playground, one self-contained page (no build step, no external assets). */
export const WEBCHAT_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conveyor web chat</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1c1e21; }
  header { display: flex; gap: .5rem; align-items: center; padding: .6rem 1rem; background: #1f2937; color: #fff; }
  header h1 { font-size: 1rem; margin: 0 1rem 0 0; }
  main { max-width: 780px; margin: 0 auto; padding: 1rem; display: flex; flex-direction: column; height: calc(100vh - 52px); box-sizing: border-box; }
  #log { flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: .5rem; padding-bottom: 1rem; }
  .msg { max-width: 80%; padding: .5rem .75rem; border-radius: .6rem; white-space: pre-wrap; word-wrap: break-word; }
  .user { align-self: flex-end; background: #2563eb; color: #fff; }
  .bot { align-self: flex-start; background: #fff; border: 1px solid #d0d4da; }
  .bot.streaming::after { content: ' ▍'; color: #6b7280; }
  .system { align-self: center; color: #6b7280; font-size: .85rem; }
  .error { align-self: stretch; background: #fde8e8; border: 1px solid #f5a3a3; color: #8a1c1c; }
  form { display: flex; gap: .5rem; }
  #input { flex: 1; padding: .55rem; border-radius: .4rem; border: 1px solid #c4c8ce; font: inherit; }
  button { padding: .5rem .9rem; border-radius: .4rem; border: 0; background: #2563eb; color: #fff; font: inherit; cursor: pointer; }
  button.secondary { background: #4b5563; }
  button:disabled { opacity: .5; cursor: default; }
  #login { max-width: 780px; margin: 1rem auto; padding: 0 1rem; display: flex; gap: .5rem; align-items: center; }
  #login[hidden] { display: none; }
  #token { flex: 1; padding: .55rem; border-radius: .4rem; border: 1px solid #c4c8ce; font: inherit; }
</style>
</head>
<body>
<header>
  <h1>Conveyor web chat</h1>
  <label for="bot">Bot</label> <select id="bot"></select>
  <button id="reset" class="secondary" type="button">Reset conversation</button>
</header>
<form id="login" hidden>
  <label for="token">Web chat token (the ingress' WEBCHAT_TOKEN)</label>
  <input id="token" type="password" autocomplete="off" required>
  <button type="submit">Open</button>
</form>
<main>
  <div id="log" aria-live="polite"></div>
  <form id="form">
    <input id="input" autocomplete="off" placeholder="Type a message…" maxlength="10000">
    <button id="send" type="submit">Send</button>
  </form>
</main>
<script>
(() => {
  const $ = (id) => document.getElementById(id);
  const log = $('log'), input = $('input'), send = $('send'), botSel = $('bot'), login = $('login');
  const REPLY_TIMEOUT_MS = 120000;
  const TOKEN_KEY = 'conveyor-webchat-token';
  // The API wants the token in the Authorization header, the event stream too: it is read with fetch,
  // since EventSource cannot send headers and a token in the URL would end up in logs and history.
  let stream = null, sessionKey = null, bubbles = new Map(), pending = new Map();

  // A link may carry the token in its fragment (/chat#token=...), which the browser never sends: keep
  // it for this tab and take it out of the address bar.
  const fromLink = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromLink) {
    sessionStorage.setItem(TOKEN_KEY, fromLink);
    history.replaceState(null, '', location.pathname + location.search);
  }

  function add(cls, text) {
    const el = document.createElement('div');
    el.className = 'msg ' + cls;
    el.textContent = text;
    log.appendChild(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }
  class Unauthorized extends Error {}
  function askForToken(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    if (stream) { stream.abort(); stream = null; }
    login.hidden = false;
    if (message) add('error', message);
    $('token').focus();
  }
  async function api(path, init = {}) {
    const headers = { ...init.headers, authorization: 'Bearer ' + sessionStorage.getItem(TOKEN_KEY) };
    if (init.session) headers['x-chat-session-key'] = sessionKey;
    const res = await fetch('/chat/api' + path, { ...init, headers });
    if (res.status === 401) {
      askForToken('The web chat token was not accepted. Enter it again.');
      throw new Unauthorized('unauthorized');
    }
    return res;
  }
  const chatPath = () => '/bots/' + encodeURIComponent(botSel.value) + '/session';
  // The session is the one this key names: 256 random bits, kept for the tab and sent in a header,
  // never in a URL. The server shows only a hash of it, so no one else can open this conversation.
  function newSession() {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    sessionKey = btoa(String.fromCharCode(...bytes)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    sessionStorage.setItem('conveyor-session-key-' + botSel.value, sessionKey);
  }
  function onPart(part) {
    let el = bubbles.get(part.queryId);
    if (!el || (!part.stream && el.dataset.done === '1')) { el = add('bot', ''); bubbles.set(part.queryId, el); }
    // Streamed parts carry the whole text so far: replace, never append.
    el.textContent = part.text;
    el.classList.toggle('streaming', part.stream && !part.isFinal);
    if (part.isFinal) { el.dataset.done = '1'; clearTimeout(pending.get(part.queryId)); pending.delete(part.queryId); }
    log.scrollTop = log.scrollHeight;
  }
  /** Reads the session's server-sent events until aborted, reconnecting after a dropped connection. */
  async function listen(path, abort) {
    let failures = 0;
    while (!abort.signal.aborted) {
      try {
        const res = await api(path + '/events', { signal: abort.signal, session: true, headers: { accept: 'text/event-stream' } });
        if (!res.ok) throw new Error('HTTP ' + res.status);
        failures = 0;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let end;
          while ((end = buf.indexOf('\\n\\n')) >= 0) {
            const lines = buf.slice(0, end).split('\\n');
            buf = buf.slice(end + 2);
            const event = (lines.find((l) => l.startsWith('event:')) || 'event: message').slice(6).trim();
            const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\\n');
            if (event === 'part' && data) onPart(JSON.parse(data));
          }
        }
      } catch (err) {
        if (abort.signal.aborted || err instanceof Unauthorized) return;
        if (++failures === 5) add('error', 'Lost the connection to the server; still trying.');
      }
      if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, Math.min(10000, 500 * 2 ** Math.min(failures, 5))));
    }
  }
  function connect() {
    if (stream) stream.abort();
    stream = null;
    const bot = botSel.value;
    if (!bot) return;
    sessionKey = sessionStorage.getItem('conveyor-session-key-' + bot);
    if (!sessionKey) newSession();
    stream = new AbortController();
    listen(chatPath(), stream);
  }
  async function loadBots() {
    const res = await api('/bots');
    const { bots } = await res.json();
    login.hidden = true;
    botSel.innerHTML = '';
    for (const b of bots) {
      const o = document.createElement('option');
      o.value = b.id; o.textContent = b.name + ' (' + b.adapter + ')';
      botSel.appendChild(o);
    }
    if (!bots.length) add('error', 'No enabled bots are configured. Add one to conveyor.yaml and restart.');
    connect();
  }
  function start() {
    loadBots().catch((err) => { if (!(err instanceof Unauthorized)) add('error', 'Could not load the bots: ' + err.message); });
  }
  login.addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('token').value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    $('token').value = '';
    log.innerHTML = '';
    start();
  });
  $('form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || !botSel.value) return;
    input.value = '';
    add('user', text);
    send.disabled = true;
    try {
      const res = await api(chatPath() + '/messages', {
        method: 'POST', session: true, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) { add('error', 'The bot could not take the message: ' + (body.error || ('HTTP ' + res.status))); return; }
      pending.set(body.queryId, setTimeout(() => {
        const el = bubbles.get(body.queryId);
        add('error', el ? 'The bot stopped answering before finishing.' : 'The bot did not answer. It may have failed; check the service logs.');
      }, REPLY_TIMEOUT_MS));
    } catch (err) {
      if (!(err instanceof Unauthorized)) add('error', 'The bot could not be reached: ' + err.message);
    } finally {
      send.disabled = false;
      input.focus();
    }
  });
  $('reset').addEventListener('click', async () => {
    if (!botSel.value) return;
    try {
      const res = await api(chatPath() + '/reset', { method: 'POST', session: true });
      if (!res.ok) { add('error', 'Reset failed: HTTP ' + res.status); return; }
    } catch (err) {
      if (!(err instanceof Unauthorized)) add('error', 'Reset failed: ' + err.message);
      return;
    }
    newSession();
    connect();
    log.innerHTML = '';
    add('system', 'Conversation reset. The bot has forgotten this chat.');
  });
  botSel.addEventListener('change', () => { log.innerHTML = ''; connect(); });
  if (sessionStorage.getItem(TOKEN_KEY)) start();
  else askForToken();
})();
</script>
</body>
</html>
`;
