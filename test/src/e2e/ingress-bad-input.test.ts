import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { connect as connectTcp } from 'node:net';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { LIMITS } from '@conveyor/contracts';
import { createPrismaClient } from '@conveyor/persistence';
import { echoResponder } from '../fakes/index.js';
import { addTelegramBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

const envelope = (code: number, msg: string) => ({ code, msg, data: null });

/**
 * Input the ingress cannot take is answered at once with a 4xx (LangBot's bodies on the HTTP-bot
 * routes), or for Telegram, which retries every non-2xx, acknowledged and dropped with a warning;
 * input it can take after normalising is answered like any other message.
 */
describe('bad input at the ingress', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  const telegramBotId = randomUUID();
  const telegramSecret = uniqueName('webhook-secret');
  const webChatToken = uniqueName('webchat-token-');
  const webChatAuth = { authorization: `Bearer ${webChatToken}` };

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken } });
    nc = await connect({ servers: NATS_URL });
    // Nothing listens at api_base_url: no update of this file may get as far as a reply.
    await addTelegramBot(sys, 'Telegram bot', { token: `1:${uniqueName('token')}`, webhook_secret: telegramSecret, api_base_url: 'http://127.0.0.1:9' }, telegramBotId);
  });

  after(async () => {
    await nc?.close();
    await sys?.stop();
  });

  test('malformed HTTP-bot requests get a 4xx with LangBot\'s body, never a 500', async () => {
    const hi = [{ type: 'Plain', text: 'hi' }];
    let quote: unknown = { type: 'Plain', text: 'innermost' };
    for (let i = 0; i < 1_000; i++) quote = { type: 'Quote', origin: [quote] };
    const syncSession = uniqueName('sync');
    // Within the 1 MiB body bound; the envelope built from it adds routing and so exceeds the bus bound.
    const nearLimit = JSON.stringify({ session_id: syncSession, message: [{ type: 'Plain', text: 'y'.repeat(LIMITS.inboundBodyBytes - 100) }] });
    assert.ok(Buffer.byteLength(nearLimit) <= LIMITS.inboundBodyBytes);
    const deepSessionId = `{"session_id":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;

    const cases: [string, () => Promise<Response>, number, unknown][] = [
      ['1,001-character session_id', () => sys.post({ session_id: 'x'.repeat(1_001), message: hi }), 400, envelope(40001, 'session_id is longer than 256 characters')],
      ['1,001-character sender.name', () => sys.post({ session_id: 's', sender: { name: 'n'.repeat(1_001) }, message: hi }), 400, envelope(40001, 'sender.name is longer than 1000 characters')],
      ['envelope over the bus limit', () => sys.post(null, { rawBody: nearLimit }), 413, envelope(41301, 'message too large')],
      ['envelope over the bus limit, /sync', () => sys.post(null, { rawBody: nearLimit, subPath: 'sync' }), 413, envelope(41301, 'message too large')],
      ['8,000-character idempotency key', () => sys.post({ session_id: 's', message: hi }, { headers: { 'x-lb-idempotency-key': 'k'.repeat(8_000) } }), 400, envelope(40001, 'idempotency key is longer than 256 characters')],
      ['8,000-character idempotency key, no message', () => sys.post({ session_id: 's' }, { headers: { 'x-lb-idempotency-key': 'k'.repeat(8_000) } }), 400, envelope(40001, 'session_id and message are required')],
      ['Quote nested 1,000 deep', () => sys.post({ session_id: 's', message: [quote] }), 400, envelope(40001, 'failed to parse message: message nesting deeper than 32 levels')],
      ['/reset of a session_id nested 10,000 deep', () => sys.post(null, { subPath: 'reset', rawBody: deepSessionId }), 400, envelope(40001, 'session_id: maximum recursion depth exceeded')],
      ['/reset of a session_id with NUL', () => sys.post({ session_id: 'a\u0000b' }, { subPath: 'reset' }), 200, { code: 0, msg: 'reset', data: { session_id: 'ab', removed: false } }],
    ];
    for (const [name, send, status, body] of cases) {
      const res = await send();
      assert.equal(res.status, status, name);
      assert.deepEqual(await res.json(), body, name);
    }

    // The refused /sync gave its session back: the next one is served, not 409.
    sys.llm.setDefault(echoResponder);
    const next = await sys.post({ session_id: syncSession, message: hi }, { subPath: 'sync' });
    assert.equal(next.status, 200);
    assert.equal(((await next.json()) as { data: { message: { text: string }[] } }).data.message.at(-1)?.text, 'Echo: hi');
  });

  test('request headers over Node\'s 16 KiB limit get 431 with LangBot\'s body, and the connection is closed cleanly', async () => {
    const ingress = sys.services.get('ingress');
    const expected = envelope(43101, 'request headers too large');
    // A typical client: the header is refused before any route, with the same envelope as the other rejections.
    const res = await sys.post({ session_id: 's', message: [{ type: 'Plain', text: 'hi' }] }, { headers: { 'x-large': 'h'.repeat(20_000) } });
    assert.equal(res.status, 431);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), expected);

    // On the wire: far past the limit (many TCP segments), the whole answer arrives and the server closes.
    const { port } = new URL(ingress.url);
    const head = `POST /bots/${sys.botId} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n`;
    const raw = await rawExchange(Number(port), `${head}X-Large: ${'h'.repeat(200_000)}\r\n\r\n{}`);
    const [statusAndHeaders, body] = splitResponse(raw);
    assert.match(statusAndHeaders, /^HTTP\/1\.1 431 /, raw.slice(0, 200));
    assert.match(statusAndHeaders, /\r\nconnection: close\r\n/i);
    assert.match(statusAndHeaders, new RegExp(`\\r\\ncontent-length: ${Buffer.byteLength(body)}\\r\\n`, 'i'));
    assert.deepEqual(JSON.parse(body), expected);

    // Other malformed requests keep Node's own answer.
    assert.match(await rawExchange(Number(port), 'NOT HTTP AT ALL\r\n\r\n'), /^HTTP\/1\.1 400 Bad Request\r\n/);
    // And the ingress serves the next request as before.
    assert.equal((await sys.post({ session_id: uniqueName('after-431'), message: [{ type: 'Plain', text: 'hi' }] })).status, 202);
  });

  test('the web chat answers 404 for a bot id that is none or a session key it cannot take, never a 500', async () => {
    const chat = `${sys.services.get('ingress').url}/chat/api/bots`;
    const key = randomBytes(32).toString('base64url');
    const cases: [string, string, Record<string, string>][] = [
      ['/%00/session', 'a NUL bot id', { 'x-chat-session-key': key }],
      [`/${sys.botId}/session`, 'no key', {}],
      [`/${sys.botId}/session`, 'a key with a NUL', { 'x-chat-session-key': `${key.slice(0, 20)}%00${key.slice(20)}` }],
      [`/${sys.botId}/session`, 'a key too short', { 'x-chat-session-key': key.slice(0, 31) }],
      [`/${sys.botId}/session`, 'a key too long', { 'x-chat-session-key': key.repeat(4) }],
      [`/${sys.botId}/session`, 'a key with a dot', { 'x-chat-session-key': `${key}.x` }],
    ];
    for (const [path, name, session] of cases) {
      for (const [method, tail] of [['POST', 'messages'], ['GET', 'events'], ['POST', 'reset']] as const) {
        const headers = { ...webChatAuth, ...session };
        const res = await fetch(`${chat}${path}/${tail}`, method === 'POST' ? { method, headers, body: '{"text":"hi"}' } : { method, headers });
        assert.equal(res.status, 404, `${method} ${tail}, ${name}`);
        assert.match(String(((await res.json()) as { error?: unknown }).error), /^unknown bot, or no session key in x-chat-session-key/, `${method} ${tail}, ${name}`);
      }
    }
  });

  test('Telegram updates that can never be answered get 200 and a warning, and nothing is published', async () => {
    const jsm = await jetstreamManager(nc);
    const lastQuerySeq = async () => (await jsm.streams.info(sys.topology.streams.queries.name)).state.last_seq;
    const publishedBefore = await lastQuerySeq();
    const updateIds = [randomInt(1, 2 ** 31), randomInt(1, 2 ** 31), randomInt(1, 2 ** 31)];
    const message = (updateId: number, fields: Record<string, unknown>) =>
      JSON.stringify({ update_id: updateId, message: { message_id: 1, from: { id: 42, first_name: 'Ann' }, chat: { id: 7, type: 'private' }, date: 1, text: 'hi', ...fields } });
    const updates = [
      // A JSON number, but no Telegram id: those are integers of at most 52 bits.
      `{"update_id":${updateIds[0]},"message":{"message_id":1,"from":{"id":42,"first_name":"Ann"},"chat":{"id":1e308,"type":"private"},"date":1,"text":"hi"}}`,
      message(updateIds[1], { chat: { id: -1007, type: 'supergroup', title: 't'.repeat(1_001) } }),
      message(updateIds[2], { from: { id: 42, first_name: 'n'.repeat(1_001) } }),
    ];
    for (const body of updates) {
      const res = await fetch(`${sys.services.get('ingress').url}/telegram/${telegramBotId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': telegramSecret },
        body,
      });
      assert.equal(res.status, 200, body.slice(0, 200));
      assert.deepEqual(await res.json(), { ok: true });
    }
    const ingressLogs = sys.services.get('ingress').logs;
    for (const updateId of updateIds) {
      await waitUntil(`a warning about update ${updateId}`, () =>
        ingressLogs.some((line) => line.includes('"level":40') && line.includes(`"updateId":${updateId}`) && line.includes('telegram update dropped')),
      );
    }
    assert.equal(await lastQuerySeq(), publishedBefore, 'no query was published');
  });

  test('messages the ingress normalises are answered, each with exactly one final callback', async () => {
    sys.llm.setDefault(echoResponder);
    const tag = uniqueName('n');
    const hello = [{ type: 'Plain', text: 'hello' }];
    const inGroup = (name: string, groupName: unknown) => ({
      session_id: `${tag}-${name}`,
      session_type: 'group',
      sender: { id: 'member-1', name: 'Ann', group_name: groupName },
      // The default group rules answer messages starting with the prefix "ai".
      message: [{ type: 'Plain', text: 'ai hello' }],
    });
    const bodies: Record<string, unknown>[] = [
      { session_id: `${tag}-nul-\u0000session`, message: hello },
      { session_id: `${tag}-nul-text`, message: [{ type: 'Plain', text: 'hel\u0000lo' }] },
      { session_id: `${tag}-surrogate-\ud800`, message: [{ type: 'Plain', text: 'hello \udc00' }] },
      { session_id: `${tag}-name-null`, sender: { name: null }, message: hello },
      { session_id: `${tag}-name-false`, sender: { name: false }, message: hello },
      { session_id: `${tag}-name-array`, sender: { name: ['a', 1] }, message: hello },
      inGroup('group-minus-one', -1),
      inGroup('group-empty-list', []),
      inGroup('group-empty-object', {}),
    ];
    const accepted: { sessionId: string; replyTo: string }[] = [];
    for (const body of bodies) {
      const res = await sys.post(body);
      assert.equal(res.status, 202, JSON.stringify(body));
      const { data } = (await res.json()) as { data: { session_id: string; accepted_message_id: string } };
      accepted.push({ sessionId: data.session_id, replyTo: data.accepted_message_id });
    }
    assert.equal(accepted[0].sessionId, `${tag}-nul-session`);
    assert.equal(accepted[2].sessionId, `${tag}-surrogate-\uFFFD`);

    const finals = (replyTo: string) => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo && c.json?.is_final === true);
    const prisma = createPrismaClient(sys.db.url);
    try {
      for (const { sessionId, replyTo } of accepted) {
        await waitUntil(`a final callback for ${sessionId}`, () => finals(replyTo).length > 0, 30_000);
        // The query's own end: a failed one (retried run after run) could still send more parts.
        const record = await waitUntil(`the query of ${sessionId} to end`, async () => {
          const row = await prisma.queryRecord.findFirst({ where: { botId: sys.botId, launcherId: sessionId } });
          return row && (row.status === 'succeeded' || row.status === 'failed') ? row : undefined;
        }, 30_000);
        assert.equal(record.status, 'succeeded', `${sessionId}: ${record.error}`);
        const [final, ...more] = finals(replyTo);
        assert.equal(more.length, 0, `${sessionId} got ${more.length + 1} final callbacks`);
        const text = final.json.message.map((c: { text?: string }) => c.text ?? '').join('');
        assert.match(text, /^Echo: \s*hello/, sessionId);
      }
    } finally {
      await prisma.$disconnect();
    }
    assert.equal(finals(accepted[1].replyTo)[0].json.message[0].text, 'Echo: hello');
    assert.equal(finals(accepted[2].replyTo)[0].json.message[0].text, 'Echo: hello \uFFFD');
  });

  test('a web chat text with NUL and a lone surrogate is answered, with exactly one final part', async () => {
    sys.llm.setDefault(echoResponder);
    const parts: { replyTo: string; text: string; isFinal: boolean }[] = [];
    // Every web chat part: the session's id is known only once the message is accepted.
    const sub = nc.subscribe(sys.topology.subjects.allWebchatSessions, { callback: (err, msg) => void (err || parts.push(msg.json())) });
    await nc.flush();
    const prisma = createPrismaClient(sys.db.url);
    try {
      const res = await fetch(`${sys.services.get('ingress').url}/chat/api/bots/${sys.botId}/session/messages`, {
        method: 'POST',
        headers: { ...webChatAuth, 'x-chat-session-key': randomBytes(32).toString('base64url') },
        body: JSON.stringify({ text: 'hel\u0000lo \ud800' }),
      });
      assert.equal(res.status, 202);
      const { replyTo, sessionId: session } = (await res.json()) as { replyTo: string; sessionId: string };
      const record = await waitUntil('the web chat query to end', async () => {
        const row = await prisma.queryRecord.findFirst({ where: { botId: sys.botId, launcherId: session } });
        return row && (row.status === 'succeeded' || row.status === 'failed') ? row : undefined;
      }, 30_000);
      assert.equal(record.status, 'succeeded', record.error ?? '');
      const finals = await waitUntil('the final part', () => {
        const found = parts.filter((p) => p.replyTo === replyTo && p.isFinal);
        return found.length > 0 ? found : undefined;
      });
      assert.deepEqual(finals.map((p) => p.text), ['Echo: hello \uFFFD']);
    } finally {
      sub.unsubscribe();
      await prisma.$disconnect();
    }
  });
});

/** Writes `request` on a fresh connection and resolves with everything the server sent once it closed the connection. */
function rawExchange(port: number, request: string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection within ${timeoutMs} ms; received: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    // A reset after the answer arrived (the rest of a refused request still in flight) still counts: what was read is kept.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    socket.write(request);
  });
}

function splitResponse(raw: string): [string, string] {
  const end = raw.indexOf('\r\n\r\n');
  return end < 0 ? [raw, ''] : [raw.slice(0, end + 2), raw.slice(end + 4)];
}
