import { test } from 'node:test';
import assert from 'node:assert/strict';
import { natsServers } from './plugin.js';

test('natsUrl takes one server or a cluster\'s nodes comma-separated, and refuses none', () => {
  assert.deepEqual(natsServers('nats://127.0.0.1:4222'), ['nats://127.0.0.1:4222']);
  assert.deepEqual(natsServers(' nats://n1:4222, nats://n2:4222 ,nats://n3:4222'), ['nats://n1:4222', 'nats://n2:4222', 'nats://n3:4222']);
  assert.throws(() => natsServers(' , '), /natsUrl names no server/);
});
