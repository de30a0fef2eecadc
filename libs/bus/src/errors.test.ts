import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JetStreamApiError } from '@nats-io/jetstream';
import { TimeoutError } from '@nats-io/transport-node';
import { isBusBackpressure } from './errors.js';

test('isBusBackpressure: a full stream and an unanswering broker, by code and name, never by message text', () => {
  const full = new JetStreamApiError({ code: 503, err_code: 10077, description: 'maximum messages exceeded' });
  assert.equal(isBusBackpressure(full), true);
  assert.equal(isBusBackpressure(new JetStreamApiError({ code: 503, err_code: 10023, description: 'insufficient resources' })), true);
  assert.equal(isBusBackpressure(new Error('publish failed', { cause: new TimeoutError() })), true, 'follows the cause');
  assert.equal(isBusBackpressure(new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' })), false);
  assert.equal(isBusBackpressure(new Error('timeout: maximum messages exceeded')), false, 'the text alone decides nothing');
  assert.equal(isBusBackpressure(undefined), false);
});
