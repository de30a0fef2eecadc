import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAdapterConfig } from './adapter-config.js';
import { HttpBotError } from './errors.js';
import {
  acceptedBody,
  newAcceptedMessageId,
  parseInboundMessage,
  parseInboundRequest,
  preflightInbound,
  type InboundRequestInput,
} from './inbound.js';
import { sign } from './signing.js';

const SECRET = 'example-inbound-secret';
const config = parseAdapterConfig({ inbound_secret: SECRET, callback_url: 'http://cb' });
const BODY_15_1 =
  '{"session_id":"ticket-10293","session_type":"person","sender":{"id":"user-5567","name":"Alice"},"message":[{"type":"Plain","text":"Export keeps failing on the dashboard."}]}';
const NOW = new Date(1767225600_000);

function signed(body: string | Buffer, extra: Record<string, string> = {}, ts = '1767225600'): InboundRequestInput {
  const rawBody = typeof body === 'string' ? Buffer.from(body) : body;
  return {
    subPath: '',
    rawBody,
    headers: { 'x-lb-timestamp': ts, 'x-lb-signature': sign(SECRET, ts, rawBody), ...extra },
    adapterConfig: config,
    now: NOW,
  };
}

test('§15.1 request parses to the normalized message', () => {
  const r = parseInboundRequest(signed(BODY_15_1, { 'x-lb-idempotency-key': '7d3c1f0e-9b2a-4c55-8e61-2f4a9b0c1d23' }));
  assert.deepEqual(r, {
    ok: true,
    kind: 'push',
    idempotencyKey: '7d3c1f0e-9b2a-4c55-8e61-2f4a9b0c1d23',
    message: {
      sessionId: 'ticket-10293',
      launcherType: 'person',
      launcherId: 'ticket-10293',
      senderId: 'ticket-10293',
      senderName: 'Alice',
      messageChain: [{ type: 'Plain', text: 'Export keeps failing on the dashboard.' }],
    },
  });
});

test('header names are case-insensitive, and fetch Headers work too', () => {
  const input = signed(BODY_15_1);
  const h = input.headers as Record<string, string>;
  const upper = { 'X-LB-Timestamp': h['x-lb-timestamp'], 'X-LB-Signature': h['x-lb-signature'] };
  assert.equal(parseInboundRequest({ ...input, headers: upper }).ok, true);
  assert.equal(parseInboundRequest({ ...input, headers: new Headers(upper) }).ok, true);
});

test('checks run in the spec order', () => {
  const big = Buffer.alloc(1_048_577, 0x20);
  // Unknown sub-path beats everything, even an oversize unsigned body.
  assert.deepEqual(parseInboundRequest({ ...signed(big), subPath: 'nope', headers: {} }), {
    ok: false,
    error: HttpBotError.unknownSubPath('nope'),
  });
  // Size beats signature.
  assert.deepEqual(parseInboundRequest({ ...signed(big), headers: {} }), { ok: false, error: HttpBotError.messageTooLarge() });
  // Exactly 1 MiB is not too large (it then fails as JSON: it is all spaces).
  assert.deepEqual(parseInboundRequest(signed(Buffer.alloc(1_048_576, 0x20))), { ok: false, error: HttpBotError.invalidJson() });
  // Signature beats JSON.
  assert.deepEqual(parseInboundRequest({ ...signed('not json'), headers: {} }), {
    ok: false,
    error: HttpBotError.invalidSignature('missing_headers'),
  });
  assert.deepEqual(parseInboundRequest({ ...signed(BODY_15_1), now: new Date(1767225600_000 + 360_000) }), {
    ok: false,
    error: HttpBotError.invalidSignature('expired'),
  });
  assert.deepEqual(parseInboundRequest(signed('')), { ok: false, error: HttpBotError.invalidJson() });
  assert.deepEqual(parseInboundRequest(signed(Buffer.from([0x22, 0xff, 0x22]))), { ok: false, error: HttpBotError.invalidJson() });
  assert.deepEqual(parseInboundRequest(signed('[1]')), { ok: false, error: HttpBotError.notObject() });
  assert.deepEqual(parseInboundRequest(signed('"x"')), { ok: false, error: HttpBotError.notObject() });
  assert.deepEqual(parseInboundRequest(signed('{"session_id":"a"}')), { ok: false, error: HttpBotError.missingFields() });
  assert.deepEqual(parseInboundRequest(signed('{"message":[]}')), { ok: false, error: HttpBotError.missingFields() });
});

test('signature_required false skips verification entirely', () => {
  const open = parseAdapterConfig({ signature_required: false });
  const r = parseInboundRequest({ subPath: 'sync', rawBody: Buffer.from(BODY_15_1), headers: {}, adapterConfig: open, now: NOW });
  assert.equal(r.ok && r.kind, 'sync');
});

test('reset needs only session_id and ignores the idempotency key', () => {
  const body = '{"session_id":"ticket-10293","session_type":"person"}';
  const input = { ...signed(body, { 'x-lb-idempotency-key': 'k' }, '1767225700'), subPath: 'reset', now: new Date(1767225700_000) };
  assert.equal((input.headers as Record<string, string>)['x-lb-signature'], 'sha256=fa828480e14b21fcbbbb6cf899629206b8c6428c77ce8269414d887991618e93');
  assert.deepEqual(parseInboundRequest(input), { ok: true, kind: 'reset', sessionId: 'ticket-10293', launcherType: 'person' });
  assert.deepEqual(parseInboundRequest({ ...signed('{"session_type":"group"}'), subPath: 'reset' }), {
    ok: false,
    error: HttpBotError.sessionIdRequired(),
  });
  assert.deepEqual(parseInboundRequest({ ...signed('{"session_id":5,"session_type":"group"}'), subPath: 'reset' }), {
    ok: true,
    kind: 'reset',
    sessionId: '5',
    launcherType: 'group',
  });
});

test('preflight stops before parsing so the idempotency key is consumed first', () => {
  const pre = preflightInbound(signed('{"session_id":"s","message":"not a list"}', { 'x-lb-idempotency-key': 'key-1' }));
  assert.ok(pre.ok && pre.kind === 'push');
  assert.equal(pre.idempotencyKey, 'key-1');
  const parsed = parseInboundMessage(pre.body, config);
  assert.equal(parsed.ok, false);
  assert.equal(!parsed.ok && parsed.error.status, 400);
  assert.match(!parsed.ok ? (parsed.error.body as { msg: string }).msg : '', /^failed to parse message: /);
  // An empty idempotency header means no key.
  const none = preflightInbound(signed(BODY_15_1, { 'x-lb-idempotency-key': '' }));
  assert.equal(none.ok && none.kind !== 'reset' && none.idempotencyKey, null);
});

const msg = (body: Record<string, unknown>, cfg = config) => {
  const r = parseInboundMessage(body, cfg);
  assert.ok(r.ok, JSON.stringify(r));
  return r.message;
};

test('session_id uses Python str()', () => {
  assert.equal(msg({ session_id: 123, message: [] }).sessionId, '123');
  assert.equal(msg({ session_id: null, message: [] }).sessionId, 'None');
  assert.equal(msg({ session_id: true, message: [] }).sessionId, 'True');
  assert.equal(msg({ session_id: '', message: [] }).sessionId, '');
  assert.equal(msg({ session_id: 1.5, message: [] }).sessionId, '1.5');
});

test('session_type mapping and default_session_type', () => {
  assert.equal(msg({ session_id: 's', message: [], session_type: 'group' }).launcherType, 'group');
  for (const st of ['GROUP', 'private', 'person']) assert.equal(msg({ session_id: 's', message: [], session_type: st }).launcherType, 'person');
  const groupDefault = parseAdapterConfig({ default_session_type: 'group' });
  for (const st of [undefined, null, ''])
    assert.equal(msg({ session_id: 's', message: [], session_type: st }, groupDefault).launcherType, 'group', String(st));
  assert.equal(msg({ session_id: 's', message: [], session_type: 'private' }, groupDefault).launcherType, 'person');
});

test('sender handling for person and group sessions', () => {
  const person = msg({ session_id: 'p1', message: [], sender: { id: 'ignored', name: 'Bob' } });
  assert.equal(person.senderId, 'p1');
  assert.equal(person.senderName, 'Bob');
  assert.equal(person.groupName, undefined);
  assert.equal(msg({ session_id: 'p1', message: [] }).senderName, 'User');
  assert.equal(msg({ session_id: 'p1', message: [], sender: { name: null } }).senderName, 'None');
  assert.equal(msg({ session_id: 'p1', message: [], sender: '' }).senderName, 'User');

  const group = msg({
    session_id: 'room-7',
    session_type: 'group',
    sender: { id: 'user-5567', name: 'Alice', group_name: 'Support Room 7' },
    message: [{ type: 'At', target: 'http_bot' }, { type: 'Plain', text: ' hi' }],
  });
  assert.deepEqual(group, {
    sessionId: 'room-7',
    launcherType: 'group',
    launcherId: 'room-7',
    senderId: 'user-5567',
    senderName: 'Alice',
    groupName: 'Support Room 7',
    messageChain: [
      { type: 'At', target: 'http_bot', display: '' },
      { type: 'Plain', text: ' hi' },
    ],
  });
  const bare = msg({ session_id: 'room-7', session_type: 'group', message: [] });
  assert.equal(bare.senderId, 'room-7');
  assert.equal(bare.groupName, 'room-7');
  assert.equal(msg({ session_id: 'r', session_type: 'group', sender: { id: 77 }, message: [] }).senderId, '77');
});

test('a truthy non-object sender fails like the AttributeError LangBot reports', () => {
  assert.deepEqual(parseInboundMessage({ session_id: 's', message: [], sender: 'bob' }, config), {
    ok: false,
    error: HttpBotError.parseFailed("'str' object has no attribute 'get'"),
  });
  assert.deepEqual(parseInboundMessage({ session_id: 's', message: [], sender: [1] }, config), {
    ok: false,
    error: HttpBotError.parseFailed("'list' object has no attribute 'get'"),
  });
});

test('accepted ids and the 202 body', () => {
  const id = newAcceptedMessageId();
  assert.match(id, /^in_[0-9a-f]{32}$/);
  assert.notEqual(id, newAcceptedMessageId());
  assert.deepEqual(acceptedBody('ticket-10293', id), {
    code: 0,
    msg: 'accepted',
    data: { session_id: 'ticket-10293', accepted_message_id: id, aggregating: true },
  });
});
