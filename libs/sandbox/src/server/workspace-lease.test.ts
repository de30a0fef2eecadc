import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redisKeys } from '@conveyor/contracts';
import { useTestRedis, waitFor } from '@conveyor/test-support';
import { WorkspaceBusyError, WorkspaceLeases } from './workspace-lease.js';

const r = useTestRedis();

test('one call at a time per workspace: a second waits for the first to let go', async () => {
  const leases = new WorkspaceLeases(r.redis(), r.prefix, { ttlMs: 5_000, waitMs: 30_000 });
  const order: string[] = [];
  let release!: () => void;
  const first = leases.holding('ws-1', async () => {
    order.push('first in');
    await new Promise<void>((resolve) => (release = resolve));
    order.push('first out');
  });
  await waitFor(() => order.length === 1);
  const second = leases.holding('ws-1', async () => void order.push('second'));
  const other = leases.holding('ws-2', async () => void order.push('other workspace'));
  await other;
  release();
  await Promise.all([first, second]);
  assert.deepEqual(order, ['first in', 'other workspace', 'first out', 'second']);
  assert.equal(await r.redis().exists(redisKeys(r.prefix).sandboxWorkspaceLease('ws-1')), 0, 'released');
});

test('a holder renews its lease past the TTL; a waiter gives up with WorkspaceBusyError', async () => {
  const leases = new WorkspaceLeases(r.redis(), r.prefix, { ttlMs: 1_000, waitMs: 1_500 });
  const impatient = new WorkspaceLeases(r.redis(), r.prefix, { ttlMs: 1_000, waitMs: 300 });
  let release!: () => void;
  const held = leases.holding('ws-3', () => new Promise<void>((resolve) => (release = resolve)));
  await waitFor(async () => (await r.redis().exists(redisKeys(r.prefix).sandboxWorkspaceLease('ws-3'))) === 1);
  await new Promise((resolve) => setTimeout(resolve, 1_600));
  await assert.rejects(impatient.holding('ws-3', async () => 'never'), WorkspaceBusyError);
  release();
  await held;
});

test('a lease of a holder that died expires after its TTL', async () => {
  const key = redisKeys(r.prefix).sandboxWorkspaceLease('ws-4');
  await r.redis().set(key, 'dead-holder', 'PX', 500);
  const leases = new WorkspaceLeases(r.redis(), r.prefix, { ttlMs: 1_000, waitMs: 30_000 });
  assert.equal(await leases.holding('ws-4', async () => 'got it'), 'got it');
});
