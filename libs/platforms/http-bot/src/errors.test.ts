import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpBotError, requestIdFor } from './errors.js';

test('the adapter\'s error envelope, every row of LangBot\'s table', () => {
  const rows: [ReturnType<typeof HttpBotError.messageTooLarge>, number, number, string][] = [
    [HttpBotError.unknownSubPath('foo/bar'), 400, 40001, 'unknown sub-path: foo/bar'],
    [HttpBotError.messageTooLarge(), 413, 41301, 'message too large'],
    [HttpBotError.headersTooLarge(), 431, 43101, 'request headers too large'],
    [HttpBotError.invalidSignature('missing_headers'), 401, 40101, 'invalid signature: missing_headers'],
    [HttpBotError.invalidSignature('bad_timestamp'), 401, 40101, 'invalid signature: bad_timestamp'],
    [HttpBotError.invalidSignature('expired'), 401, 40101, 'invalid signature: expired'],
    [HttpBotError.invalidSignature('signature_mismatch'), 401, 40101, 'invalid signature: signature_mismatch'],
    [HttpBotError.invalidJson(), 400, 40001, 'body is not valid JSON'],
    [HttpBotError.notObject(), 400, 40001, 'body must be a JSON object'],
    [HttpBotError.missingFields(), 400, 40001, 'session_id and message are required'],
    [HttpBotError.sessionIdRequired(), 400, 40001, 'session_id is required'],
    [HttpBotError.idempotencyReplay(), 409, 40901, 'idempotency key already accepted'],
    [HttpBotError.idempotencyCapacity(), 503, 50301, 'idempotency capacity reached; retry later'],
    [HttpBotError.parseFailed('boom'), 400, 40001, 'failed to parse message: boom'],
    [HttpBotError.noListener(), 500, 50001, 'no listener registered for event type'],
    [HttpBotError.misconfigured(), 500, 50002, 'bot is misconfigured; requests are refused until its settings are fixed'],
    [HttpBotError.syncInFlight(), 409, 40901, 'a sync request is already in flight for this session'],
    [HttpBotError.overloaded(), 503, 50301, 'too many inbound messages are already being processed'],
  ];
  for (const [err, status, code, msg] of rows) {
    assert.deepEqual(err, { status, body: { code, msg, data: null } }, msg);
  }
});

test('bodies the web framework answers itself are not envelopes', () => {
  assert.deepEqual(HttpBotError.botNotFound(), { status: 404, body: { error: 'Bot not found' } });
  assert.deepEqual(HttpBotError.botDisabled(), { status: 403, body: { error: 'Bot is disabled' } });
  assert.deepEqual(HttpBotError.adapterUnsupported(), {
    status: 501,
    body: { error: 'Adapter does not support unified webhook' },
  });
  assert.deepEqual(HttpBotError.blockingWorkCapacity('busy'), {
    status: 429,
    body: { code: 'blocking_work_capacity_exceeded', msg: 'busy' },
  });
  assert.deepEqual(HttpBotError.internal('req-1'), {
    status: 500,
    body: { code: 'internal_error', msg: 'Internal server error', request_id: 'req-1' },
    headers: { 'X-Request-Id': 'req-1' },
  });
});

test('X-Request-Id is echoed only when short and clean', () => {
  assert.equal(requestIdFor('abc-123'), 'abc-123');
  assert.equal(requestIdFor('x'.repeat(128)), 'x'.repeat(128));
  const uuid4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  for (const bad of [undefined, '', 'x'.repeat(129), 'a\nb', 'tab\there'])
    assert.match(requestIdFor(bad), uuid4, String(bad));
});
