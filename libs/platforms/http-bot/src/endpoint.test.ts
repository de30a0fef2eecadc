import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageComponent } from '@conveyor/contracts';
import { HttpBotEndpoint, type AcceptedHttpBotMessage, type HttpBotPorts, type SyncHold } from './endpoint.js';
import { HttpBotError } from './errors.js';
import { sign } from './verify.js';

const BOT = '7c1e4a52-3b9d-4f0e-a6c8-2d5f1b7e9a30';
const SECRET = 'example-inbound-secret';
const NOW = new Date(1767225600_000);
const BODY = '{"session_id":"ticket-10293","session_type":"person","sender":{"id":"user-5567","name":"Alice"},"message":[{"type":"Plain","text":"Export keeps failing."}]}';

/** Ports that record what the flow did; each behaviour can be replaced. */
function recordingPorts(over: Partial<HttpBotPorts> = {}) {
  const published: AcceptedHttpBotMessage[] = [];
  const resets: string[] = [];
  const holds: Array<{ sessionId: string; waitMs: number; released: number }> = [];
  const ports: HttpBotPorts = {
    publish: async (m) => {
      published.push(m);
      return { duplicate: false };
    },
    resetConversation: async (_bot, launcherType, sessionId) => {
      resets.push(`${launcherType}:${sessionId}`);
      return true;
    },
    holdSync: async (_bot, sessionId, waitMs): Promise<SyncHold> => {
      const hold = { sessionId, waitMs, released: 0 };
      holds.push(hold);
      const parts: MessageComponent[] = [{ type: 'Plain', text: 'the answer' }];
      return { wait: async () => parts, release: async () => void hold.released++ };
    },
    ...over,
  };
  return { ports, published, resets, holds };
}

function logger() {
  const lines: Array<{ level: string; msg: string }> = [];
  return { lines, error: (_o: object, msg: string) => void lines.push({ level: 'error', msg }), warn: (_o: object, msg: string) => void lines.push({ level: 'warn', msg }) };
}

const settings = { inbound_secret: SECRET, callback_url: 'http://cb', callback_timeout: 2 };
function request(subPath: string, body = BODY, headers: Record<string, string> = {}, adapterConfig: unknown = settings) {
  const rawBody = Buffer.from(body);
  const ts = String(NOW.getTime() / 1000);
  return { botId: BOT, adapterConfig, subPath, rawBody, headers: { 'x-lb-timestamp': ts, 'x-lb-signature': sign(SECRET, ts, rawBody), ...headers }, now: NOW };
}

test('a push is published with the caller\'s fields and idempotency key, and answered 202 with its accepted id', async () => {
  const { ports, published } = recordingPorts();
  const endpoint = new HttpBotEndpoint(ports, logger());
  const res = await endpoint.serve(request('', BODY, { 'x-lb-idempotency-key': 'k-1' }));
  assert.equal(res.status, 202);
  assert.equal(published.length, 1);
  const [m] = published;
  assert.deepEqual([m.botId, m.sessionId, m.launcherType, m.senderId, m.senderName, m.idempotencyKey], [BOT, 'ticket-10293', 'person', 'ticket-10293', 'Alice', 'k-1']);
  assert.match(JSON.stringify(res.body), new RegExp(m.acceptedMessageId));
});

test('a bad signature is refused before anything is published', async () => {
  const { ports, published } = recordingPorts();
  const res = await new HttpBotEndpoint(ports, logger()).serve({ ...request(''), headers: { 'x-lb-timestamp': String(NOW.getTime() / 1000), 'x-lb-signature': 'v1=00' } });
  assert.equal(res.status, 401);
  assert.equal(published.length, 0);
});

test('/sync holds the call for the bot\'s callback wait and answers with the session\'s parts', async () => {
  const { ports, published, holds } = recordingPorts();
  const res = await new HttpBotEndpoint(ports, logger()).serve(request('sync'));
  assert.equal(res.status, 200);
  assert.deepEqual([holds.length, holds[0].sessionId, holds[0].waitMs, published.length], [1, 'ticket-10293', 8_000, 1]);
  assert.match(JSON.stringify(res.body), /the answer/);
});

test('/sync while another call waits for the session is 409 and publishes nothing', async () => {
  const { ports, published } = recordingPorts({ holdSync: async () => null });
  const res = await new HttpBotEndpoint(ports, logger()).serve(request('sync'));
  assert.deepEqual(res, HttpBotError.syncInFlight());
  assert.equal(published.length, 0);
});

test('a replayed idempotency key is 409 and releases the /sync hold; a failed publish releases it and propagates', async () => {
  const dup = recordingPorts({ publish: async () => ({ duplicate: true }) });
  assert.deepEqual(await new HttpBotEndpoint(dup.ports, logger()).serve(request('sync', BODY, { 'x-lb-idempotency-key': 'k-2' })), HttpBotError.idempotencyReplay());
  assert.equal(dup.holds[0].released, 1);

  const down = recordingPorts({ publish: async () => { throw new Error('bus down'); } });
  await assert.rejects(new HttpBotEndpoint(down.ports, logger()).serve(request('sync')), /bus down/);
  assert.equal(down.holds[0].released, 1);
});

test('/reset clears the session\'s conversation and says whether there was one', async () => {
  const { ports, resets, published } = recordingPorts();
  const res = await new HttpBotEndpoint(ports, logger()).serve(request('reset', '{"session_id":"ticket-10293","session_type":"person"}'));
  assert.equal(res.status, 200);
  assert.deepEqual(resets, ['person:ticket-10293']);
  assert.equal(published.length, 0);
  assert.match(JSON.stringify(res.body), /"removed":true/);
});

test('settings the schema refuses are 500 misconfigured, logged once per loaded row; unsigned bots are warned about once', async () => {
  const log = logger();
  const endpoint = new HttpBotEndpoint(recordingPorts().ports, log);
  const broken = { callback_timeout: 'soon' };
  assert.deepEqual(await endpoint.serve(request('', BODY, {}, broken)), HttpBotError.misconfigured());
  assert.deepEqual(await endpoint.serve(request('', BODY, {}, broken)), HttpBotError.misconfigured());
  assert.deepEqual(log.lines.map((l) => l.level), ['error']);
  assert.match(log.lines[0].msg, /callback_timeout/);

  const open = { signature_required: false };
  assert.equal((await endpoint.serve({ ...request('', BODY, {}, open), headers: {} })).status, 202);
  assert.equal((await endpoint.serve({ ...request('', BODY, {}, open), headers: {} })).status, 202);
  assert.deepEqual(log.lines.map((l) => l.level), ['error', 'warn']);
});
