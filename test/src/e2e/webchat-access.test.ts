import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createPrismaClient } from '@conveyor/persistence';
import { echoResponder } from '../fakes/index.js';
import { repoRoot } from '../harness/services.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

/**
 * The web chat is an operator's playground that can drive any bot: off unless switched on, behind a
 * bearer token when on, and its conversations never meet those of the bot's own platform, even for
 * the same session id.
 */
describe('web chat access', () => {
  let sys: TestSystem;
  const token = randomBytes(24).toString('base64url');
  const chatApi = () => `${sys.services.get('ingress').url}/chat/api/bots`;
  const authorized = { authorization: `Bearer ${token}` };
  /** A session key as the page makes one, and the headers of a call in its session. */
  const newKey = () => randomBytes(32).toString('base64url');
  const inSession = (key: string) => ({ ...authorized, 'x-chat-session-key': key });
  const aliceKey = newKey();

  before(async () => {
    // Debug level: every request line is logged with its headers, which must not show the token.
    sys = await startTestSystem({ serviceEnv: { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: token, LOG_LEVEL: 'debug' } });
  });

  after(async () => {
    await sys?.stop();
  });

  test('with the switch off, the default, every /chat route answers 404', async () => {
    // Another ingress replica of the same system, started without the web chat settings.
    const off = await sys.services.start('ingress', { WEBCHAT_ENABLED: undefined, WEBCHAT_TOKEN: undefined }, 'ingress-webchat-off');
    const chat = `${off.url}/chat`;
    const requests: [string, string][] = [
      ['GET', ''],
      ['GET', '/api/bots'],
      ['GET', `/api/bots/${sys.botId}/session/events`],
      ['POST', `/api/bots/${sys.botId}/session/messages`],
      ['POST', `/api/bots/${sys.botId}/session/reset`],
    ];
    for (const [method, path] of requests) {
      const res = await fetch(`${chat}${path}`, { method, headers: inSession(aliceKey), ...(method === 'POST' ? { body: '{"text":"hi"}' } : {}) });
      assert.equal(res.status, 404, `${method} /chat${path}`);
      await res.body?.cancel();
    }
    // The rest of that ingress works as before.
    assert.equal((await fetch(`${off.url}/health/ready`)).status, 200);
  });

  test('switched on without a token, the ingress refuses to start and says why', async () => {
    // The environment is checked before any connection is made, so nothing else is needed.
    const child = spawn(process.execPath, [path.join(repoRoot, 'services/ingress/dist/main.js')], {
      cwd: path.join(repoRoot, 'services/ingress'),
      env: { PATH: process.env.PATH, WEBCHAT_ENABLED: 'true', PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    // Generous: an ingress that ignored the setting would start and never exit.
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const [code] = (await once(child, 'close')) as [number | null];
    clearTimeout(deadline);
    assert.equal(code, 1, output);
    assert.match(output, /WEBCHAT_TOKEN is required when WEBCHAT_ENABLED is true/);
  });

  test('the API answers 401 with a JSON error without the token or with a wrong one; the page itself holds no secret', async () => {
    const page = await fetch(`${sys.services.get('ingress').url}/chat`);
    assert.equal(page.status, 200);
    assert.ok(!(await page.text()).includes(token));
    const requests: [string, string][] = [
      ['GET', ''],
      ['GET', `/${sys.botId}/session/events`],
      ['POST', `/${sys.botId}/session/messages`],
      ['POST', `/${sys.botId}/session/reset`],
    ];
    const session = { 'x-chat-session-key': aliceKey };
    const wrongs: [string, Record<string, string>][] = [
      ['no token', session],
      ['a wrong token', { ...session, authorization: `Bearer ${randomBytes(24).toString('base64url')}` }],
      ['the token one character short', { ...session, authorization: `Bearer ${token.slice(0, -1)}` }],
      ['the token in another scheme', { ...session, authorization: `Basic ${token}` }],
    ];
    for (const [method, path] of requests) {
      for (const [name, headers] of wrongs) {
        const res = await fetch(`${chatApi()}${path}`, { method, headers, ...(method === 'POST' ? { body: '{"text":"hi"}' } : {}) });
        assert.equal(res.status, 401, `${method} ${path}, ${name}`);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${method} ${path}, ${name}`);
        assert.equal(typeof ((await res.json()) as { error?: unknown }).error, 'string', `${method} ${path}, ${name}`);
      }
    }
    const bots = await fetch(chatApi(), { headers: authorized });
    assert.equal(bots.status, 200);
    assert.ok(((await bots.json()) as { bots: { id: string }[] }).bots.some((b) => b.id === sys.botId));
    const stream = new AbortController();
    const events = await fetch(`${chatApi()}/${sys.botId}/session/events`, { headers: inSession(aliceKey), signal: stream.signal });
    assert.equal(events.status, 200);
    assert.match(events.headers.get('content-type') ?? '', /^text\/event-stream/);
    stream.abort();
  });

  test('a HEAD of the event stream is answered at once with the stream\'s headers and ends', async () => {
    // HEAD is routed to the GET handler; a response that never ends would send no headers at all.
    const res = await fetch(`${chatApi()}/${sys.botId}/session/events`, { method: 'HEAD', headers: inSession(aliceKey), signal: AbortSignal.timeout(20_000) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(await res.text(), '');
  });

  test('a message body over 64 KiB is answered 413 with a JSON error, and the session still takes the next message', async () => {
    const url = `${chatApi()}/${sys.botId}/session/messages`;
    const headers = { ...inSession(newKey()), 'content-type': 'application/json' };
    const big = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ text: 'x'.repeat(70 * 1024) }) });
    assert.equal(big.status, 413);
    assert.match(String(((await big.json()) as { error?: unknown }).error), /64 KiB/);
    const next = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ text: 'hello' }) });
    assert.equal(next.status, 202);
  });

  test('a session opens only with its own key: the shared token, the session\'s id or another key read nothing of it', async () => {
    sys.llm.setDefault(echoResponder);
    const ownKey = newKey();
    const secretText = uniqueName('private-');
    const send = (headers: Record<string, string>, text: string) => fetch(`${chatApi()}/${sys.botId}/session/messages`, { method: 'POST', headers, body: JSON.stringify({ text }) });
    const listen = (headers: Record<string, string>) => {
      const abort = new AbortController();
      let text = '';
      const done = fetch(`${chatApi()}/${sys.botId}/session/events`, { headers, signal: abort.signal }).then(async (res) => {
        if (!res.ok || !res.body) return res.status;
        for await (const chunk of res.body) text += Buffer.from(chunk).toString('utf8');
        return res.status;
      }).catch(() => 0);
      return { text: () => text, done, stop: () => abort.abort() };
    };
    const owner = listen(inSession(ownKey));
    const other = listen(inSession(newKey()));
    await waitUntil('both event streams are open', () => owner.text().includes(': connected') && other.text().includes(': connected'), 30_000);

    const sent = await send(inSession(ownKey), secretText);
    assert.equal(sent.status, 202);
    const { sessionId } = (await sent.json()) as { sessionId: string };
    assert.match(sessionId, /^web-[A-Za-z0-9_-]{22}$/);
    assert.ok(!sessionId.includes(ownKey), 'the id shown to others does not hold the key');
    await waitUntil('the owner\'s stream gets the answer', () => owner.text().includes(`Echo: ${secretText}`), 30_000);

    // Without a key, or with the session's id (what the query log shows) where the key goes: 404, nothing opened.
    for (const [name, headers] of [['no key', authorized], ['the session id as the key', inSession(sessionId)], ['the id padded to a key\'s length', inSession(sessionId.padEnd(40, 'x'))]] as const) {
      for (const [method, tail] of [['GET', 'events'], ['POST', 'reset'], ['POST', 'messages']] as const) {
        const res = await fetch(`${chatApi()}/${sys.botId}/session/${tail}`, { method, headers, ...(method === 'POST' ? { body: '{"text":"hi"}' } : {}) });
        if (name === 'the id padded to a key\'s length') {
          // A well-formed key of its own: another, empty session, never the one it imitates.
          assert.notEqual(res.status, 404, `${method} ${tail}, ${name}`);
          if (tail === 'messages') assert.notEqual(((await res.json()) as { sessionId: string }).sessionId, sessionId);
          else if (tail === 'reset') assert.deepEqual(await res.json(), { removed: false });
          else await res.body?.cancel();
        } else {
          assert.equal(res.status, 404, `${method} ${tail}, ${name}`);
          assert.match(String(((await res.json()) as { error?: unknown }).error), /x-chat-session-key/);
        }
      }
    }

    // Another key's reset leaves this conversation alone: the owner's next turn still has its history.
    const followUp = uniqueName('again-');
    assert.equal((await send(inSession(ownKey), followUp)).status, 202);
    const request = await waitUntil('the model request of the follow-up', () => sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes(followUp)), 30_000);
    assert.ok(JSON.stringify(request.body.messages).includes(secretText), 'the owner\'s conversation kept its history');
    await waitUntil('the owner\'s stream gets the second answer', () => owner.text().includes(`Echo: ${followUp}`), 30_000);
    owner.stop();
    other.stop();
    await Promise.all([owner.done, other.done]);
    assert.ok(!other.text().includes(secretText) && !other.text().includes(followUp), `another key's stream saw the chat: ${other.text()}`);
  });

  test('a web chat session and an HTTP-bot session of the same id do not share a conversation', async () => {
    sys.llm.setDefault(echoResponder);
    const key = newKey();
    const webText = uniqueName('web-chat-');
    const aliceSecret = uniqueName('alice-secret-');
    const modelRequestWith = (text: string) => waitUntil(`the model request with ${text}`, () => sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes(text)), 30_000);
    const sendWeb = (text: string) => fetch(`${chatApi()}/${sys.botId}/session/messages`, { method: 'POST', headers: inSession(key), body: JSON.stringify({ text }) });

    // The web chat first: its session id is what the key names.
    const first = await sendWeb(webText);
    assert.equal(first.status, 202);
    const { sessionId: session, queryId } = (await first.json()) as { sessionId: string; queryId: string };
    await modelRequestWith(webText);
    const httpBotFinal = (text: string) => sys.callbacks.waitFor((all) => all.some((c) => c.json?.session_id === session && c.json.is_final && JSON.stringify(c.json.message).includes(text)), 30_000);

    // Alice talks to the bot over its own platform with that same session id: the web chat's text must not reach the model with hers.
    assert.equal((await sys.post({ session_id: session, message: [{ type: 'Plain', text: aliceSecret }] })).status, 202);
    const aliceFirst = await modelRequestWith(aliceSecret);
    assert.ok(!JSON.stringify(aliceFirst.body.messages).includes(webText), 'the HTTP-bot conversation saw the web chat');
    await httpBotFinal(aliceSecret);

    // The web chat again: its own history, not alice's.
    const webAgain = uniqueName('web-again-');
    assert.equal((await sendWeb(webAgain)).status, 202);
    const webRequest = await modelRequestWith(webAgain);
    assert.ok(JSON.stringify(webRequest.body.messages).includes(webText), 'the web chat kept its history');
    assert.ok(!JSON.stringify(webRequest.body.messages).includes(aliceSecret), 'the web chat saw the HTTP-bot conversation');
    const prisma = createPrismaClient(sys.db.url);
    try {
      await waitUntil('the web chat turns to be stored', async () => (await prisma.queryRecord.findUnique({ where: { id: queryId } }))?.status === 'succeeded'
        && (await prisma.queryRecord.count({ where: { botId: sys.botId, launcherId: session, status: 'succeeded' } })) >= 3, 30_000);

      // A web chat reset archives the web chat's conversation only.
      const reset = await fetch(`${chatApi()}/${sys.botId}/session/reset`, { method: 'POST', headers: inSession(key) });
      assert.equal(reset.status, 201);
      assert.deepEqual(await reset.json(), { removed: true });
      const active = await prisma.conversation.findMany({ where: { botId: sys.botId, archivedAt: null } });
      assert.equal(active.filter((c) => c.launcherId === session && c.launcherType === 'person').length, 1, 'the HTTP-bot conversation is still active');
    } finally {
      await prisma.$disconnect();
    }

    // Alice's next message still has her history, and nothing of the web chat's.
    const followUp = uniqueName('alice-again-');
    assert.equal((await sys.post({ session_id: session, message: [{ type: 'Plain', text: followUp }] })).status, 202);
    const aliceRequest = await modelRequestWith(followUp);
    const aliceContext = JSON.stringify(aliceRequest.body.messages);
    assert.ok(aliceContext.includes(aliceSecret), 'the HTTP-bot conversation kept its history');
    assert.ok(!aliceContext.includes(webText) && !aliceContext.includes(webAgain), 'the HTTP-bot conversation saw the web chat');
    await httpBotFinal(followUp);
  });

  test('the token and the session keys never reach the ingress logs', async () => {
    // The earlier tests sent them on every kind of request; at debug level each request line was logged.
    const ingress = sys.services.get('ingress');
    await waitUntil('request lines of the web chat API', () => ingress.logs.some((l) => l.includes('/chat/api/bots')));
    assert.deepEqual(ingress.logs.filter((l) => l.includes(token)), [], 'log lines holding the token');
    assert.deepEqual(ingress.logs.filter((l) => l.includes(aliceKey)), [], 'log lines holding a session key');
    assert.ok(ingress.logs.some((l) => l.includes('/chat/api/bots') && l.includes('[Redacted]')), 'the authorization header is logged redacted');
  });
});
