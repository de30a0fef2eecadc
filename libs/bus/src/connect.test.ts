import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectBus, natsServers, redactUrl } from './connect.js';
import { memoryLogger, NATS_URL, waitFor } from '@conveyor/test-support';

test('connectBus connects under the service name and logs status changes', async () => {
  const logger = memoryLogger();
  const nc = await connectBus({ url: NATS_URL, name: 'bus-connect-test', logger });
  assert.equal(nc.isClosed(), false);
  // The implementation keeps its options (the interface does not expose them).
  const options = (nc as unknown as { options: { name?: string; maxReconnectAttempts?: number } }).options;
  assert.equal(options.name, 'bus-connect-test');
  assert.equal(options.maxReconnectAttempts, -1, 'reconnects never give up');
  await waitFor(() => logger.lines.some((l) => l.msg === 'nats connected'), 2_000, 'connected log');
  await nc.close();
  await waitFor(() => logger.lines.some((l) => l.msg === 'nats connection closed'), 2_000, 'closed log');
});

test('connectBus fails fast when nothing listens (unless told to wait)', async () => {
  const t0 = Date.now();
  await assert.rejects(connectBus({ url: 'nats://127.0.0.1:1', name: 'nobody' }));
  assert.ok(Date.now() - t0 < 5_000);
});

test('natsServers splits a comma-separated list of cluster nodes and names a bad entry', () => {
  assert.deepEqual(natsServers('nats://n1:4222'), ['nats://n1:4222']);
  assert.deepEqual(natsServers(' nats://n1:4222, tls://n2:4222 ,n3:4222'), ['nats://n1:4222', 'tls://n2:4222', 'n3:4222']);
  assert.throws(() => natsServers(''), /no NATS server given/);
  assert.throws(() => natsServers('nats://n1:4222,'), /server 2 of 2 is empty/);
  assert.throws(() => natsServers('redis://u:pw@n1:6379'), (err: unknown) => err instanceof RangeError && /scheme redis/.test(err.message) && !/pw/.test(err.message));
  assert.equal(redactUrl('nats://a:b@n1:4222,nats://c:d@n2:4222'), 'nats://***@n1:4222,nats://***@n2:4222');
});

test('connectBus connects through a list with a dead server in it', async () => {
  const nc = await connectBus({ url: `nats://127.0.0.1:1,${NATS_URL}`, name: 'bus-connect-list', reconnectWaitMs: 100 });
  assert.equal(nc.isClosed(), false);
  await nc.close();
});
