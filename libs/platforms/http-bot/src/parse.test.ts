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
} from './parse.js';
import { sign } from './verify.js';

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

test('the protocol\'s example request parses to the normalized message', () => {
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

test('checks run in LangBot\'s order', () => {
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

test('a bot with no inbound secret verifies nothing: a request signed with the empty key is refused', () => {
  // A config object that bypassed the schema (the schema refuses it; see adapter-config.test.ts).
  const keyless = { ...config, inbound_secret: '' };
  const rawBody = Buffer.from(BODY_15_1);
  const ts = '1767225600';
  const forged = { subPath: '', rawBody, headers: { 'x-lb-timestamp': ts, 'x-lb-signature': sign('', ts, rawBody) }, adapterConfig: keyless, now: NOW };
  assert.deepEqual(parseInboundRequest(forged), { ok: false, error: HttpBotError.invalidSignature('no_secret') });
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
  const groupDefault = parseAdapterConfig({ inbound_secret: SECRET, default_session_type: 'group' });
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

/** A 400 in LangBot's envelope whose text matches `pattern`. */
function assertRejected(r: { ok: boolean; error?: HttpBotError }, pattern: RegExp) {
  assert.equal(r.ok, false, JSON.stringify(r));
  assert.equal(r.error!.status, 400);
  const body = r.error!.body as { code: number; msg: string; data: null };
  assert.equal(body.code, 40001);
  assert.equal(body.data, null);
  assert.match(body.msg, pattern);
}

const bodyOf = (fields: Record<string, unknown>) => JSON.stringify({ message: [{ type: 'Plain', text: 'hi' }], ...fields });

test('ids and names past their bounds get 400 naming the field; at the bound they pass', () => {
  const id = (n: number) => 'i'.repeat(n);
  const name = (n: number) => 'n'.repeat(n);
  const group = { session_id: 'room', session_type: 'group' };
  for (const subPath of ['', 'sync']) {
    const parse = (fields: Record<string, unknown>) => parseInboundRequest({ ...signed(bodyOf(fields)), subPath });
    assertRejected(parse({ session_id: id(257) }), /session_id.*256/);
    assertRejected(parse({ session_id: 's', sender: { name: name(1001) } }), /sender\.name.*1000/);
    assertRejected(parse({ ...group, sender: { id: id(257) } }), /sender\.id.*256/);
    assertRejected(parse({ ...group, sender: { group_name: name(1001) } }), /sender\.group_name.*1000/);
    // A default taken from a long-but-valid session id is within the bound as well.
    const ok = parse({ ...group, session_id: id(256), sender: { id: id(256), name: name(1000), group_name: name(1000) } });
    assert.equal(ok.ok, true, JSON.stringify(ok).slice(0, 200));
  }
  assertRejected(parseInboundRequest({ ...signed(JSON.stringify({ session_id: id(257) })), subPath: 'reset' }), /session_id.*256/);
});

test('an idempotency key longer than 256 characters gets 400 before the key could be consumed', () => {
  const long = 'k'.repeat(8000);
  assertRejected(preflightInbound(signed(BODY_15_1, { 'x-lb-idempotency-key': long })), /idempotency key.*256/i);
  assertRejected(parseInboundRequest(signed(BODY_15_1, { 'x-lb-idempotency-key': long })), /idempotency key.*256/i);
  const atBound = preflightInbound(signed(BODY_15_1, { 'x-lb-idempotency-key': 'k'.repeat(256) }));
  assert.equal(atBound.ok && atBound.kind !== 'reset' && atBound.idempotencyKey, 'k'.repeat(256));
  // Bad bodies keep their own answers.
  assertRejected(preflightInbound(signed('{"session_id":"s"}', { 'x-lb-idempotency-key': long })), /session_id and message are required/);
});

test('a reset whose session_id Python cannot str() gets 400, not an exception', () => {
  const deep = `{"session_id":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
  assertRejected(parseInboundRequest({ ...signed(deep), subPath: 'reset' }), /session_id/);
});

test('NUL is removed and lone surrogates become U+FFFD in ids, names and every text of the chain', () => {
  const raw =
    '{"session_id":"a\\u0000b\\ud800","session_type":"group",' +
    '"sender":{"id":"u\\u00001","name":"Al\\u0000ice\\udc00","group_name":"Room\\u0000 7"},' +
    '"message":[{"type":"Plain","text":"h\\u0000i \\ud83d\\ude00 \\ud83d"},' +
    '{"type":"Quote","origin":[{"type":"Plain","text":"q\\u0000"}]},{"type":"At","target":"x\\u0000","display":"\\udfff"}]}';
  const r = parseInboundRequest(signed(raw));
  assert.ok(r.ok && r.kind !== 'reset', JSON.stringify(r));
  assert.deepEqual(r.message, {
    sessionId: 'ab\uFFFD',
    launcherType: 'group',
    launcherId: 'ab\uFFFD',
    senderId: 'u1',
    senderName: 'Alice\uFFFD',
    groupName: 'Room 7',
    messageChain: [
      { type: 'Plain', text: 'hi 😀 \uFFFD' },
      { type: 'Quote', id: null, group_id: null, sender_id: null, target_id: null, origin: [{ type: 'Plain', text: 'q' }] },
      { type: 'At', target: 'x', display: '\uFFFD' },
    ],
  });
  // A reset finds the session the push went to.
  const reset = parseInboundRequest({ ...signed('{"session_id":"a\\u0000b\\ud800"}'), subPath: 'reset' });
  assert.deepEqual(reset, { ok: true, kind: 'reset', sessionId: 'ab\uFFFD', launcherType: 'person' });
});

test('names of any JSON type become strings as Python str() writes them', () => {
  for (const [value, text] of [[null, 'None'], [false, 'False'], [[], '[]'], [['a', 1], "['a', 1]"], [-1, '-1'], [{}, '{}']] as const) {
    const m = msg({ session_id: 'room', session_type: 'group', sender: { name: value, group_name: value }, message: [] });
    assert.equal(m.senderName, text);
    assert.equal(m.groupName, text);
  }
});
