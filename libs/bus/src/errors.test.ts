import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JetStreamApiError } from '@nats-io/jetstream';
import { TimeoutError } from '@nats-io/transport-node';
import { isBrokerUnavailable, isBusBackpressure, isReplicaPlacementError } from './errors.js';

test('isBusBackpressure: a full stream and an unanswering broker, by code and name, never by message text', () => {
  const full = new JetStreamApiError({ code: 503, err_code: 10077, description: 'maximum messages exceeded' });
  assert.equal(isBusBackpressure(full), true);
  assert.equal(isBusBackpressure(new JetStreamApiError({ code: 503, err_code: 10023, description: 'insufficient resources' })), true);
  assert.equal(isBusBackpressure(new Error('publish failed', { cause: new TimeoutError() })), true, 'follows the cause');
  assert.equal(isBusBackpressure(new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' })), false);
  assert.equal(isBusBackpressure(new Error('timeout: maximum messages exceeded')), false, 'the text alone decides nothing');
  assert.equal(isBusBackpressure(undefined), false);
});

test('isBrokerUnavailable: no answer or no stream leader is worth retrying, a full stream is not', () => {
  assert.equal(isBrokerUnavailable(new TimeoutError()), true);
  const noResponders = Object.assign(new Error('jetstream is not enabled'), { name: 'JetStreamNotEnabled' });
  assert.equal(isBrokerUnavailable(noResponders), true, 'a stream electing its leader has no responder');
  assert.equal(isBrokerUnavailable(new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' })), true);
  assert.equal(isBrokerUnavailable(new JetStreamApiError({ code: 503, err_code: 10077, description: 'maximum messages exceeded' })), false);
  assert.equal(isBusBackpressure(new JetStreamApiError({ code: 503, err_code: 10008, description: 'x' })), true, 'still backpressure once retries are spent');
  assert.equal(isBrokerUnavailable(new Error('JetStream system temporarily unavailable')), false, 'the text alone decides nothing');
});

test('isReplicaPlacementError: too few servers for the replicas, by code', () => {
  assert.equal(isReplicaPlacementError(new JetStreamApiError({ code: 400, err_code: 10005, description: 'no suitable peers for placement' })), true);
  assert.equal(isReplicaPlacementError(new JetStreamApiError({ code: 500, err_code: 10074, description: 'replicas > 1 not supported in non-clustered mode' })), true);
  assert.equal(isReplicaPlacementError(new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' })), false);
});
