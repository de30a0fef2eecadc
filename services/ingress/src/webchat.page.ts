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
</style>
</head>
<body>
<header>
  <h1>Conveyor web chat</h1>
  <label for="bot">Bot</label> <select id="bot"></select>
  <button id="reset" class="secondary" type="button">Reset conversation</button>
</header>
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
  const log = $('log'), input = $('input'), send = $('send'), botSel = $('bot');
  const REPLY_TIMEOUT_MS = 120000;
  let source = null, sessionId = null, bubbles = new Map(), pending = new Map();

  function add(cls, text) {
    const el = document.createElement('div');
    el.className = 'msg ' + cls;
    el.textContent = text;
    log.appendChild(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }
  function newSession() {
    sessionId = 'web-' + (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2));
    sessionStorage.setItem('conveyor-session-' + botSel.value, sessionId);
  }
  function connect() {
    if (source) source.close();
    const bot = botSel.value;
    if (!bot) return;
    sessionId = sessionStorage.getItem('conveyor-session-' + bot);
    if (!sessionId) newSession();
    source = new EventSource('/chat/api/bots/' + encodeURIComponent(bot) + '/sessions/' + encodeURIComponent(sessionId) + '/events');
    source.addEventListener('part', (ev) => {
      const part = JSON.parse(ev.data);
      let el = bubbles.get(part.queryId);
      if (!el || (!part.stream && el.dataset.done === '1')) { el = add('bot', ''); bubbles.set(part.queryId, el); }
      // Streamed parts carry the whole text so far: replace, never append.
      el.textContent = part.text;
      el.classList.toggle('streaming', part.stream && !part.isFinal);
      if (part.isFinal) { el.dataset.done = '1'; clearTimeout(pending.get(part.queryId)); pending.delete(part.queryId); }
      log.scrollTop = log.scrollHeight;
    });
    source.onerror = () => { if (source.readyState === EventSource.CLOSED) add('error', 'Lost the connection to the server. Reload the page.'); };
  }
  async function loadBots() {
    const res = await fetch('/chat/api/bots');
    const { bots } = await res.json();
    botSel.innerHTML = '';
    for (const b of bots) {
      const o = document.createElement('option');
      o.value = b.id; o.textContent = b.name + ' (' + b.adapter + ')';
      botSel.appendChild(o);
    }
    if (!bots.length) add('error', 'No enabled bots are configured. Add one to conveyor.yaml and restart.');
    connect();
  }
  $('form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || !botSel.value) return;
    input.value = '';
    add('user', text);
    send.disabled = true;
    try {
      const res = await fetch('/chat/api/bots/' + encodeURIComponent(botSel.value) + '/sessions/' + encodeURIComponent(sessionId) + '/messages', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) { add('error', 'The bot could not take the message: ' + (body.error || ('HTTP ' + res.status))); return; }
      pending.set(body.queryId, setTimeout(() => {
        const el = bubbles.get(body.queryId);
        add('error', el ? 'The bot stopped answering before finishing.' : 'The bot did not answer. It may have failed; check the service logs.');
      }, REPLY_TIMEOUT_MS));
    } catch (err) {
      add('error', 'The bot could not be reached: ' + err.message);
    } finally {
      send.disabled = false;
      input.focus();
    }
  });
  $('reset').addEventListener('click', async () => {
    if (!botSel.value) return;
    const res = await fetch('/chat/api/bots/' + encodeURIComponent(botSel.value) + '/sessions/' + encodeURIComponent(sessionId) + '/reset', { method: 'POST' });
    if (!res.ok) { add('error', 'Reset failed: HTTP ' + res.status); return; }
    newSession();
    connect();
    log.innerHTML = '';
    add('system', 'Conversation reset. The bot has forgotten this chat.');
  });
  botSel.addEventListener('change', () => { log.innerHTML = ''; connect(); });
  loadBots().catch((err) => add('error', 'Could not load the bots: ' + err.message));
})();
</script>
</body>
</html>
`;
