import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import pg from 'pg';
import { isDependencyOutage } from './outage.js';

/** Port 1 (tcpmux) has no listener on any machine these tests run on: connections are refused. */
const CLOSED_PORT = 1;

test('a Redis command against a server that is gone is an outage', async () => {
  const redis = new Redis({ port: CLOSED_PORT, maxRetriesPerRequest: 1, retryStrategy: () => 50, lazyConnect: true });
  redis.on('error', () => undefined);
  redis.connect().catch(() => undefined);
  const err = await redis.get('k').catch((e: unknown) => e);
  redis.disconnect();
  assert.equal(isDependencyOutage(err), true, String(err));
});

test('a Postgres connection refused is an outage; a constraint violation is not', async () => {
  const client = new pg.Client({ port: CLOSED_PORT, host: '127.0.0.1' });
  const err = await client.connect().catch((e: unknown) => e);
  assert.equal(isDependencyOutage(err), true, String(err));
  assert.equal(isDependencyOutage(Object.assign(new Error('duplicate key'), { code: '23505' })), false);
  assert.equal(isDependencyOutage(new TypeError('bad input')), false);
  assert.equal(isDependencyOutage(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) })), true);
});
