import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext } from '@conveyor/platform-kit';
import { WecomAdapter, splitUtf8 } from './adapter.js';

test('a text within the limit is one piece; an empty text none', () => {
  assert.deepEqual(splitUtf8('hello'), ['hello']);
  assert.deepEqual(splitUtf8(''), []);
});

test('pieces stay within the byte limit, never split a character, prefer a line end, and join back to the text', () => {
  const text = `${'中'.repeat(600)}\n${'文'.repeat(700)}😀${'a'.repeat(3000)}`;
  const parts = splitUtf8(text, 2048);
  assert.equal(parts.join(''), text);
  for (const p of parts) assert.ok(Buffer.byteLength(p) <= 2048);
  assert.ok(parts[0]!.endsWith('\n'), 'the first piece ends after the line');
  assert.ok(!parts.some((p) => p.includes('\uFFFD')));
  const emoji = splitUtf8('😀'.repeat(10), 6);
  assert.deepEqual(emoji, Array(10).fill('😀'));
});

test('past the part bound the last piece is cut and says so', () => {
  const parts = splitUtf8('x'.repeat(10_000), 100, 3);
  assert.equal(parts.length, 3);
  assert.ok(parts[2]!.endsWith('… (truncated)'));
  for (const p of parts) assert.ok(Buffer.byteLength(p) <= 100);
});

const BOT = '7c1e4a52-3b9d-4f0e-a6c8-2d5f1b7e9a30';
const route: ReplyRoute = { botId: BOT, adapter: 'wecom', sessionId: 'u1', launcherType: 'person', launcherId: 'u1', senderId: 'u1', replyTo: '1000002:77' };
const configs: BotConfigs = { get: async () => ({
  adapter: 'wecom',
  adapterConfig: { corpid: 'ww1', secret: 's3cr3t', token: 't', EncodingAESKey: 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C', api_base_url: 'http://wecom.test/cgi-bin' },
}) };
function ctx(): DeliveryContext {
  const state = new Map<string, string>();
  return { queryId: 'q', partKey: '1:0:0', chunkOrdinal: 1, sequence: 1, timestamp: new Date(), state: { get: async (k) => state.get(k) ?? null, set: async (k, v) => void state.set(k, v) } };
}
const reply = (text: string) => ({ message: [{ type: 'Plain' as const, text }], isFinal: true, stream: false });

/** A scripted WeCom: `send` answers each message/send call in turn (then errcode 0). */
function stubWecom(send: number[] = []) {
  const calls: string[] = [];
  let tokens = 0;
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    calls.push(url.pathname);
    if (url.pathname.endsWith('/gettoken')) return Response.json({ errcode: 0, errmsg: 'ok', access_token: `tok${++tokens}`, expires_in: 7200 });
    const body = JSON.parse(String(init?.body)) as { agentid: number; touser: string };
    assert.equal(body.agentid, 1000002);
    assert.equal(body.touser, 'u1');
    const errcode = send.shift() ?? 0;
    return Response.json({ errcode, errmsg: errcode ? 'err' : 'ok' });
  };
  return { calls, fetchImpl, tokens: () => tokens };
}

test('the access token is fetched once, reused, and fetched again when WeCom says it expired', async () => {
  const w = stubWecom([0, 42001, 0]);
  const adapter = new WecomAdapter(configs, w.fetchImpl);
  assert.deepEqual(await adapter.deliver(route, reply('a'), ctx()), { delivered: true });
  assert.deepEqual(await adapter.deliver(route, reply('b'), ctx()), { delivered: true });
  assert.equal(w.tokens(), 2);
  assert.deepEqual(w.calls.map((p) => p.split('/').pop()), ['gettoken', 'send', 'send', 'gettoken', 'send']);
});

test('a refused message fails the part with errcode and path, never the token or the secret; a resent part goes on where it stopped', async () => {
  const w = stubWecom([0, 45009]);
  const adapter = new WecomAdapter(configs, w.fetchImpl);
  const c = ctx();
  const long = `${'x'.repeat(2000)}\n${'y'.repeat(100)}`;
  const failed = await adapter.deliver(route, reply(long), c);
  assert.equal(failed.delivered, false);
  if (!failed.delivered) {
    assert.equal(failed.reason, 'wecom: /message/send: errcode 45009 err');
    assert.doesNotMatch(failed.reason, /tok1|s3cr3t/);
  }
  assert.deepEqual(await adapter.deliver(route, reply(long), c), { delivered: true });
  assert.equal(w.calls.filter((p) => p.endsWith('/send')).length, 3, 'the first piece is not sent again');
});

test('a streamed part before the final one sends nothing; a route without an agent is refused', async () => {
  const w = stubWecom();
  const adapter = new WecomAdapter(configs, w.fetchImpl);
  assert.deepEqual(await adapter.deliver(route, { ...reply('partial'), isFinal: false, stream: true }, ctx()), { delivered: true });
  assert.equal(w.calls.length, 0);
  const r = await adapter.deliver({ ...route, replyTo: 'x' }, reply('a'), ctx());
  assert.equal(r.delivered, false);
});
