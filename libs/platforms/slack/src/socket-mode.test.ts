import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSocketModeFrame } from './socket-mode.js';

test('hello and disconnect are read with the disconnect reason', () => {
  assert.deepEqual(parseSocketModeFrame('{"type":"hello","num_connections":1,"debug_info":{"host":"applink-1"},"connection_info":{"app_id":"A1"}}'), { kind: 'hello' });
  assert.deepEqual(parseSocketModeFrame('{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"applink-1"}}'), { kind: 'disconnect', reason: 'refresh_requested' });
  assert.deepEqual(parseSocketModeFrame('{"type":"disconnect","reason":"link_disabled"}'), { kind: 'disconnect', reason: 'link_disabled' });
  assert.deepEqual(parseSocketModeFrame('{"type":"disconnect"}'), { kind: 'disconnect', reason: 'unspecified' });
});

test('an envelope is handed on with its id, payload and redelivery count', () => {
  const frame = parseSocketModeFrame(JSON.stringify({
    envelope_id: 'e-1', type: 'events_api', accepts_response_payload: false, retry_attempt: 1, retry_reason: 'timeout',
    payload: { type: 'event_callback', event_id: 'Ev1', event: { type: 'message' } },
  }));
  assert.equal(frame.kind, 'envelope');
  if (frame.kind !== 'envelope') return;
  assert.equal(frame.envelope.envelope_id, 'e-1');
  assert.equal(frame.envelope.type, 'events_api');
  assert.equal(frame.envelope.retry_attempt, 1);
  assert.deepEqual(frame.envelope.payload, { type: 'event_callback', event_id: 'Ev1', event: { type: 'message' } });
});

test('a frame that is no JSON, no object or no envelope is malformed with the reason, and the envelope id when it has one', () => {
  const cases: [string, RegExp, string?][] = [
    ['{not json', /not JSON/],
    ['[1,2]', /frame/],
    ['{"type":7}', /frame: type/],
    ['{"type":"events_api","payload":{}}', /events_api envelope: envelope_id/],
    ['{"type":"events_api","envelope_id":"e-2","retry_attempt":"one","payload":{}}', /events_api envelope: retry_attempt/, 'e-2'],
  ];
  for (const [text, reason, envelopeId] of cases) {
    const frame = parseSocketModeFrame(text);
    assert.equal(frame.kind, 'malformed', text);
    if (frame.kind !== 'malformed') continue;
    assert.match(frame.reason, reason);
    assert.equal(frame.envelopeId, envelopeId);
  }
});
