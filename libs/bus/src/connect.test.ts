import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectBus } from './connect.js';
import { memoryLogger, NATS_URL, waitFor } from './test-support.js';

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
