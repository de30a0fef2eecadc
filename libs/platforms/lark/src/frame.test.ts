import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConnectionDeps, InboundQuery } from '@conveyor/platform-kit';
import { LarkConfigSchema, type LarkConfig } from './config.js';
import { handleLarkEvent, larkConnection } from './connection.js';
import { EVENT_PARTS_TTL_MS, LarkEventAssembler, MAX_EVENT_PARTS, MAX_PENDING_EVENTS, decodeLarkFrame, encodeLarkFrame, frameHeader, larkAckFrame, larkPingFrame, type LarkFrame } from './frame.js';
import { larkInbound } from './platform.js';

const BOT = '00000000-0000-4000-8000-000000000002';
const utf8 = (b: Uint8Array | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');

const eventFrame = (payload: string, headers: Record<string, string> = {}): LarkFrame => ({
  SeqID: Number.MAX_SAFE_INTEGER,
  LogID: 7,
  service: 33,
  method: 1,
  headers: Object.entries({ type: 'event', message_id: 'm1', sum: '1', seq: '0', trace_id: 't1', ...headers }).map(([key, value]) => ({ key, value })),
  payload: new TextEncoder().encode(payload),
});

test('a frame encodes to the pbbp2 wire bytes and decodes back', () => {
  const frame: LarkFrame = { SeqID: 1, LogID: 2, service: 3, method: 1, headers: [{ key: 'type', value: 'event' }], payload: new TextEncoder().encode('{}') };
  // Field by field: 1:varint 1, 2:varint 2, 3:varint 3, 4:varint 1, 5:Header{1:"type",2:"event"} (13 bytes), 8:bytes "{}".
  const wire = Buffer.from('08011002180320012a0d0a0474797065120565766' + '56e7442027b7d', 'hex');
  assert.deepEqual(Buffer.from(encodeLarkFrame(frame)), wire);
  const back = decodeLarkFrame(wire);
  assert.ok(back);
  assert.equal(back.SeqID, 1);
  assert.equal(back.method, 1);
  assert.equal(frameHeader(back, 'type'), 'event');
  assert.equal(utf8(back.payload), '{}');
});

test('ids up to 2^53 survive a round trip; bytes that are no frame decode to null', () => {
  const back = decodeLarkFrame(encodeLarkFrame(eventFrame('x')));
  assert.equal(back?.SeqID, Number.MAX_SAFE_INTEGER);
  assert.equal(decodeLarkFrame(Buffer.from('not a protobuf frame at all')), null);
  // A frame without its required ids.
  assert.equal(decodeLarkFrame(Buffer.from('2a00', 'hex')), null);
});

test('the ack is the event frame with biz_rt and {"code":200}; the ping is a control frame of the service', () => {
  const frame = eventFrame('{"schema":"2.0"}');
  const ack = decodeLarkFrame(encodeLarkFrame(larkAckFrame(frame, 200, 12.4)));
  assert.ok(ack);
  assert.equal(ack.SeqID, frame.SeqID);
  assert.equal(ack.LogID, 7);
  assert.equal(ack.service, 33);
  assert.equal(ack.method, 1);
  assert.equal(frameHeader(ack, 'message_id'), 'm1');
  assert.equal(frameHeader(ack, 'biz_rt'), '12');
  assert.deepEqual(JSON.parse(utf8(ack.payload)), { code: 200 });
  const ping = decodeLarkFrame(encodeLarkFrame(larkPingFrame(33)));
  assert.deepEqual({ method: ping?.method, service: ping?.service, type: ping && frameHeader(ping, 'type') }, { method: 0, service: 33, type: 'ping' });
});

test('an event split in parts is joined in seq order, whatever order the parts come in', () => {
  const assembler = new LarkEventAssembler();
  const body = '{"schema":"2.0","header":{"event_id":"e"},"event":{"text":"你好, long enough to split"}}';
  const bytes = Buffer.from(body, 'utf8');
  // Cut inside a multi-byte character too: parts are bytes, joined before decoding.
  const cuts = [0, 40, 41, bytes.length];
  const parts = cuts.slice(0, -1).map((start, i) => ({ ...eventFrame(''), headers: [{ key: 'type', value: 'event' }, { key: 'message_id', value: 'split' }, { key: 'sum', value: '3' }, { key: 'seq', value: String(i) }], payload: bytes.subarray(start, cuts[i + 1]) }));
  assert.equal(assembler.add(parts[2]!).kind, 'partial');
  assert.equal(assembler.add(parts[0]!).kind, 'partial');
  assert.equal(assembler.size, 1);
  const whole = assembler.add(parts[1]!);
  assert.equal(whole.kind, 'complete');
  if (whole.kind === 'complete') assert.equal(whole.payload.toString('utf8'), body);
  assert.equal(assembler.size, 0);
});

test('bad part headers are refused; incomplete events are bounded and expire', () => {
  let now = 1_000_000;
  const assembler = new LarkEventAssembler(() => now);
  const part = (id: string, sum: string, seq: string) => eventFrame('p', { message_id: id, sum, seq });
  assert.equal(assembler.add(part('a', '2', '2')).kind, 'invalid');
  assert.equal(assembler.add(part('a', '0', '0')).kind, 'invalid');
  assert.equal(assembler.add(part('a', String(MAX_EVENT_PARTS + 1), '0')).kind, 'invalid');
  assert.equal(assembler.add(part('a', 'x', '0')).kind, 'invalid');
  assert.equal(assembler.add(part('b', '2', '0')).kind, 'partial');
  assert.equal(assembler.add(part('b', '3', '1')).kind, 'invalid', 'a part disagreeing about sum');
  for (let i = 0; i < MAX_PENDING_EVENTS; i++) assert.equal(assembler.add(part(`p${i}`, '2', '0')).kind, 'partial');
  assert.equal(assembler.add(part('one-too-many', '2', '0')).kind, 'invalid');
  now += EVENT_PARTS_TTL_MS + 1;
  assert.equal(assembler.add(part('fresh', '2', '0')).kind, 'partial', 'the stale ones expired and made room');
  assert.equal(assembler.size, 1);
});

const message = (eventId: string) => ({
  schema: '2.0',
  header: { event_id: eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', app_id: 'cli_1' },
  event: {
    sender: { sender_id: { open_id: 'ou_u', union_id: 'on_u' }, sender_type: 'user' },
    message: { message_id: 'om_9', chat_id: 'oc_9', chat_type: 'p2p', message_type: 'text', content: JSON.stringify({ text: 'hi there' }) },
  },
});

function deps(config: LarkConfig, publish: (q: InboundQuery) => Promise<void> = async () => {}) {
  const malformed: string[] = [];
  const published: InboundQuery[] = [];
  const d: ConnectionDeps<LarkConfig> = {
    botId: BOT,
    config,
    logger: { info: () => {}, warn: () => {} },
    fence: async () => 1,
    state: () => {
      throw new Error('the long connection keeps no state');
    },
    publish: async (q) => {
      await publish(q);
      published.push(q);
    },
    malformed: (reason) => void malformed.push(reason),
  };
  return { d, malformed, published };
}

test('an event over the long connection becomes the query the webhook makes of it, dedup id the event_id', async () => {
  const config = LarkConfigSchema.parse({ app_id: 'cli_1', app_secret: 's', 'verification-token': 'vt' });
  const { d, published, malformed } = deps(config);
  assert.equal(await handleLarkEvent(d, Buffer.from(JSON.stringify(message('ev_42')))), 200);
  assert.deepEqual(malformed, []);
  assert.equal(published.length, 1);
  assert.equal(published[0]?.dedupId, 'ev_42');
  const webhook = larkInbound.handle(
    { botId: BOT, subPath: '', method: 'POST', query: {}, headers: {}, rawBody: Buffer.from(JSON.stringify({ ...message('ev_42'), header: { ...message('ev_42').header, token: 'vt' } })), now: new Date() },
    { ...config, 'enable-webhook': true },
  );
  assert.equal(webhook.kind, 'publish');
  if (webhook.kind === 'publish') assert.deepEqual(published[0], webhook.queries[0]);
});

test('a malformed event is counted and taken; a failed publish asks Lark to deliver again', async () => {
  const config = LarkConfigSchema.parse({ app_id: 'cli_1', app_secret: 's' });
  const bad = deps(config);
  assert.equal(await handleLarkEvent(bad.d, Buffer.from('{"schema": ')), 200);
  assert.equal(await handleLarkEvent(bad.d, Buffer.from(JSON.stringify({ schema: '2.0', header: { event_type: 'im.message.receive_v1' }, event: {} }))), 200);
  assert.equal(bad.malformed.length, 2);
  assert.match(bad.malformed[1] ?? '', /header\.event_id/);
  const failing = deps(config, async () => {
    throw new Error('broker down');
  });
  assert.equal(await handleLarkEvent(failing.d, Buffer.from(JSON.stringify(message('ev_43')))), 500);
  assert.deepEqual(failing.malformed, []);
});

test('the gateway holds a bot unless it has enable-webhook on, which is off by default as in LangBot', () => {
  const holds = larkConnection.holds;
  assert.ok(holds);
  assert.equal(holds(LarkConfigSchema.parse({ app_id: 'cli_1', app_secret: 's' })), true);
  assert.equal(holds(LarkConfigSchema.parse({ app_id: 'cli_1', app_secret: 's', 'enable-webhook': true })), false);
});
