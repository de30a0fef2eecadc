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
      ['GET', `/api/bots/${sys.botId}/sessions/alice/events`],
      ['POST', `/api/bots/${sys.botId}/sessions/alice/messages`],
      ['POST', `/api/bots/${sys.botId}/sessions/alice/reset`],
    ];
    for (const [method, path] of requests) {
      const res = await fetch(`${chat}${path}`, { method, headers: authorized, ...(method === 'POST' ? { body: '{"text":"hi"}' } : {}) });
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
      ['GET', `/${sys.botId}/sessions/alice/events`],
      ['POST', `/${sys.botId}/sessions/alice/messages`],
      ['POST', `/${sys.botId}/sessions/alice/reset`],
    ];
    const wrongs: [string, Record<string, string>][] = [
      ['no token', {}],
      ['a wrong token', { authorization: `Bearer ${randomBytes(24).toString('base64url')}` }],
      ['the token one character short', { authorization: `Bearer ${token.slice(0, -1)}` }],
      ['the token in another scheme', { authorization: `Basic ${token}` }],
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
    const events = await fetch(`${chatApi()}/${sys.botId}/sessions/alice/events`, { headers: authorized, signal: stream.signal });
    assert.equal(events.status, 200);
    assert.match(events.headers.get('content-type') ?? '', /^text\/event-stream/);
    stream.abort();
  });

  test('a HEAD of the event stream is answered at once with the stream\'s headers and ends', async () => {
    // HEAD is routed to the GET handler; a response that never ends would send no headers at all.
    const res = await fetch(`${chatApi()}/${sys.botId}/sessions/alice/events`, { method: 'HEAD', headers: authorized, signal: AbortSignal.timeout(20_000) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(await res.text(), '');
  });

  test('a message body over 64 KiB is answered 413 with a JSON error, and the session still takes the next message', async () => {
    const url = `${chatApi()}/${sys.botId}/sessions/big-body/messages`;
    const big = await fetch(url, { method: 'POST', headers: { ...authorized, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x'.repeat(70 * 1024) }) });
    assert.equal(big.status, 413);
    assert.match(String(((await big.json()) as { error?: unknown }).error), /64 KiB/);
    const next = await fetch(url, { method: 'POST', headers: { ...authorized, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hello' }) });
    assert.equal(next.status, 202);
  });

  test('a web chat session and an HTTP-bot session of the same id do not share a conversation', async () => {
    sys.llm.setDefault(echoResponder);
    const session = 'alice';
    const aliceSecret = uniqueName('alice-secret-');
    const webText = uniqueName('web-chat-');
    const modelRequestWith = (text: string) => waitUntil(`the model request with ${text}`, () => sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes(text)), 30_000);
    const httpBotFinal = (text: string) => sys.callbacks.waitFor((all) => all.some((c) => c.json?.session_id === session && c.json.is_final && JSON.stringify(c.json.message).includes(text)), 30_000);

    // Alice talks to the bot over its own platform.
    assert.equal((await sys.post({ session_id: session, message: [{ type: 'Plain', text: aliceSecret }] })).status, 202);
    await httpBotFinal(aliceSecret);

    // The web chat, with the same session id: alice's text must not reach the model with it.
    const sent = await fetch(`${chatApi()}/${sys.botId}/sessions/${session}/messages`, { method: 'POST', headers: authorized, body: JSON.stringify({ text: webText }) });
    assert.equal(sent.status, 202);
    const { queryId } = (await sent.json()) as { queryId: string };
    const webRequest = await modelRequestWith(webText);
    assert.ok(!JSON.stringify(webRequest.body.messages).includes(aliceSecret), 'the web chat saw the HTTP-bot conversation');
    const prisma = createPrismaClient(sys.db.url);
    try {
      await waitUntil('the web chat turn to be stored', async () => (await prisma.queryRecord.findUnique({ where: { id: queryId } }))?.status === 'succeeded', 30_000);

      // A web chat reset archives the web chat's conversation only.
      const reset = await fetch(`${chatApi()}/${sys.botId}/sessions/${session}/reset`, { method: 'POST', headers: authorized });
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
    assert.ok(!aliceContext.includes(webText), 'the HTTP-bot conversation saw the web chat');
    await httpBotFinal(followUp);
  });

  test('the token never reaches the ingress logs', async () => {
    // The earlier tests sent it on every kind of request; at debug level each request line was logged.
    const ingress = sys.services.get('ingress');
    await waitUntil('request lines of the web chat API', () => ingress.logs.some((l) => l.includes('/chat/api/bots')));
    assert.deepEqual(ingress.logs.filter((l) => l.includes(token)), [], 'log lines holding the token');
    assert.ok(ingress.logs.some((l) => l.includes('/chat/api/bots') && l.includes('[Redacted]')), 'the authorization header is logged redacted');
  });
});
